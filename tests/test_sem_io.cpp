// Tests of the SEM input / output helpers (sem_io.hpp, issue 14): mesh specifications (box,
// Kershaw, Gmsh file) and their errors; the VTU writer, parsed back here byte by byte (XML
// header, then the appended raw arrays) and compared with the space's coordinates, its
// local-to-global map and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/sem_io.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"

namespace mg = elliptica::multigrid;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("elliptica_test_sem_io_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

struct TempFile {
  std::string path;
  TempFile(const std::string& name, const std::string& text) : path(temp_path(name)) { std::ofstream(path) << text; }
  ~TempFile() { std::filesystem::remove(path); }
};

template <class E, class F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception (expected a message with '" << part << "')";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(SemIo, BoxSpec) {
  const mg::HexMesh m = mg::sem_mesh_from_spec("box:2,3,4");
  EXPECT_EQ(m.num_elements(), 24u);
  EXPECT_EQ(m.num_vertices(), 60u);  // 3 x 4 x 5
  const mg::HexMesh ref = mg::box_mesh(2, 3, 4);
  EXPECT_EQ(m.vertices, ref.vertices);
  EXPECT_EQ(m.elements, ref.elements);
  const mg::HexMesh l = mg::sem_mesh_from_spec("box:2,1,1:2,0.5,3");
  const mg::HexMesh lref = mg::box_mesh(2, 1, 1, {2.0, 0.5, 3.0});
  EXPECT_EQ(l.vertices, lref.vertices);
  // not a spec (leading space): a file name, and no such file
  EXPECT_THROW(mg::sem_mesh_from_spec(" box:2,2,2"), elliptica::IOError);
}

TEST(SemIo, KershawSpec) {
  const mg::HexMesh m = mg::sem_mesh_from_spec("kershaw:6,0.3");
  const mg::HexMesh ref = mg::kershaw_mesh(6, 0.3);
  EXPECT_EQ(m.num_elements(), 216u);
  EXPECT_EQ(m.vertices, ref.vertices);
  EXPECT_EQ(m.elements, ref.elements);
  EXPECT_TRUE(mg::is_generated_mesh_spec("kershaw:6,0.3"));
  EXPECT_TRUE(mg::is_generated_mesh_spec("box:1,1,1"));
  EXPECT_FALSE(mg::is_generated_mesh_spec("mesh.msh"));
}

TEST(SemIo, BadSpecsNameTheSpec) {
  using elliptica::InvalidArgument;
  const std::pair<const char*, const char*> cases[] = {
      {"box:0,2,2", "NX must be in [1, 100000], got 0"},
      {"box:2,-1,2", "NY must be in [1, 100000], got -1"},
      {"box:2,2", "expected box:NX,NY,NZ[:LX,LY,LZ] (3 comma-separated values), got 2"},
      {"box:2,2,2,2", "got 4"},
      {"box:2,2,2x", "NZ '2x' is not an integer"},
      {"box:2,2,2.5", "NZ '2.5' is not an integer"},
      {"box:2,2,2:1,1", "(3 comma-separated values), got 2"},
      {"box:2,2,2:1,1,-1", "LZ must be finite and > 0, got -1"},
      {"box:2,2,2:1,1,inf", "LZ must be finite and > 0"},
      {"box:2,2,2:1,1,1:3", "trailing text"},
      {"box:", "got 0"},
      {"kershaw:6,0", "EPS must be in (0, 1]"},
      {"kershaw:6,1.5", "EPS must be in (0, 1]"},
      {"kershaw:6,nan", "EPS must be in (0, 1]"},
      {"kershaw:6", "expected kershaw:N,EPS (2 comma-separated values), got 1"},
      {"kershaw:a,0.3", "N 'a' is not an integer"},
      {"kershaw:6,0.3,1", "got 3"},
      {"kershaw:6,0.3:1", "trailing text"},
      {"kershaw:0,0.3", "N must be in [1, 100000], got 0"},
  };
  for (const auto& c : cases) {  // no structured binding: clang 14 cannot capture one in a lambda
    const auto& spec = c.first;
    const auto& msg = c.second;
    SCOPED_TRACE(spec);
    expect_error<InvalidArgument>([&] { mg::sem_mesh_from_spec(spec); }, msg);
    expect_error<InvalidArgument>([&] { mg::sem_mesh_from_spec(spec); }, std::string("mesh spec '") + spec + "'");
  }
  expect_error<InvalidArgument>([] { mg::sem_mesh_from_spec(""); }, "mesh spec is empty");
  expect_error<elliptica::IOError>([] { mg::sem_mesh_from_spec(temp_path("missing.msh")); }, "missing.msh");
}

TEST(SemIo, GmshFileSpec) {
  // 2 x 1 x 1 unit hexahedra, Gmsh corner order (bottom face counter-clockwise, then the top).
  std::string s = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n12\n";
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 3; ++i)
        s += std::to_string(1 + i + 3 * j + 6 * k) + " " + std::to_string(i) + " " + std::to_string(j) + " " +
             std::to_string(k) + "\n";
  auto t = [](int i, int j, int k) { return std::to_string(1 + i + 3 * j + 6 * k); };
  s += "$EndNodes\n$Elements\n2\n";
  for (int e = 0; e < 2; ++e)
    s += std::to_string(e + 1) + " 5 2 1 1 " + t(e, 0, 0) + " " + t(e + 1, 0, 0) + " " + t(e + 1, 1, 0) + " " + t(e, 1, 0) +
         " " + t(e, 0, 1) + " " + t(e + 1, 0, 1) + " " + t(e + 1, 1, 1) + " " + t(e, 1, 1) + "\n";
  s += "$EndElements\n";
  TempFile f("two.msh", s);
  const mg::HexMesh m = mg::sem_mesh_from_spec(f.path);
  EXPECT_EQ(m.num_elements(), 2u);
  EXPECT_EQ(m.num_vertices(), 12u);
  const mg::HexMesh ref = mg::read_gmsh_hex(f.path);
  EXPECT_EQ(m.elements, ref.elements);
}

namespace {

/// A parsed VTU file of write_sem_vtu: the XML attributes we need and the appended arrays.
struct Vtu {
  std::string xml;
  std::size_t points = 0, cells = 0;
  std::vector<double> xyz, u;
  std::vector<std::int64_t> conn, offsets;
  std::vector<std::uint8_t> types;
};

std::size_t attr(const std::string& xml, const std::string& name, std::size_t from = 0) {
  const std::size_t at = xml.find(name + "=\"", from);
  if (at == std::string::npos) throw std::runtime_error("no attribute " + name);
  return std::stoull(xml.substr(at + name.size() + 2));
}

std::size_t array_offset(const std::string& xml, const std::string& array_name) {
  const std::size_t at = xml.find("Name=\"" + array_name + "\"");
  if (at == std::string::npos) throw std::runtime_error("no array " + array_name);
  return attr(xml, "offset", at);
}

template <class T>
std::vector<T> block(const std::string& data, std::size_t offset) {
  std::uint64_t bytes = 0;
  std::memcpy(&bytes, data.data() + offset, 8);
  EXPECT_EQ(bytes % sizeof(T), 0u);
  std::vector<T> v(bytes / sizeof(T));
  std::memcpy(v.data(), data.data() + offset + 8, bytes);
  return v;
}

Vtu read_vtu(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Vtu v;
  const std::string marker = "<AppendedData encoding=\"raw\">";
  const std::size_t m = s.find(marker);
  EXPECT_NE(m, std::string::npos);
  const std::size_t underscore = s.find('_', m + marker.size());
  v.xml = s.substr(0, m);
  const std::string data = s.substr(underscore + 1);
  EXPECT_NE(v.xml.find("type=\"UnstructuredGrid\""), std::string::npos);
  EXPECT_NE(v.xml.find("header_type=\"UInt64\""), std::string::npos);
  EXPECT_NE(v.xml.find("byte_order=\"LittleEndian\""), std::string::npos);
  v.points = attr(v.xml, "NumberOfPoints");
  v.cells = attr(v.xml, "NumberOfCells");
  v.xyz = block<double>(data, array_offset(v.xml, "Points"));
  v.conn = block<std::int64_t>(data, array_offset(v.xml, "connectivity"));
  v.offsets = block<std::int64_t>(data, array_offset(v.xml, "offsets"));
  v.types = block<std::uint8_t>(data, array_offset(v.xml, "types"));
  v.u = block<double>(data, array_offset(v.xml, "u"));
  EXPECT_NE(s.rfind("</AppendedData>\n</VTKFile>\n"), std::string::npos);
  return v;
}

}  // namespace

TEST(SemIo, VtuRoundTrip) {
  for (const char* spec : {"box:2,1,1", "kershaw:2,0.5"}) {
    for (int p : {2, 3}) {
      SCOPED_TRACE(std::string(spec) + " p = " + std::to_string(p));
      const mg::SemSpace S(mg::sem_mesh_from_spec(spec), p, 1);
      const std::size_t nn = S.num_nodes(), ne = S.num_elements(), N = p + 1;
      std::vector<double> u(nn);
      for (std::size_t g = 0; g < nn; ++g) u[g] = g < S.num_free() ? 1.0 + 0.5 * double(g) : 0.0;
      const std::string path = temp_path("field.vtu");
      mg::write_sem_vtu(path, S, u.data());
      const Vtu v = read_vtu(path);
      std::filesystem::remove(path);
      const std::size_t cells = ne * p * p * p;
      ASSERT_EQ(v.points, nn);
      ASSERT_EQ(v.cells, cells);
      ASSERT_EQ(v.xyz.size(), 3 * nn);
      EXPECT_EQ(v.xyz, S.coordinates());
      EXPECT_EQ(v.u, u);
      ASSERT_EQ(v.conn.size(), 8 * cells);
      ASSERT_EQ(v.offsets.size(), cells);
      ASSERT_EQ(v.types.size(), cells);
      for (std::size_t c = 0; c < cells; ++c) {
        EXPECT_EQ(v.offsets[c], std::int64_t(8 * (c + 1)));
        EXPECT_EQ(v.types[c], 12);
      }
      // Every sub-cell: its corners are the element's local nodes (i + a, j + b, k + c) in VTK
      // order, and it is positively oriented in VTK's convention (corner 1 - 0, 3 - 0, 4 - 0 a
      // right-handed frame); the sub-cells of an element tile it (volumes sum to its volume, up to
      // the trilinear map's curvature on the Kershaw mesh).
      const int corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
      const auto& l2g = S.local_to_global();
      std::size_t c = 0;
      for (std::size_t e = 0; e < ne; ++e)
        for (int k = 0; k < p; ++k)
          for (int j = 0; j < p; ++j)
            for (int i = 0; i < p; ++i, ++c) {
              for (int q = 0; q < 8; ++q) {
                const std::size_t loc = (i + corner[q][0]) + N * ((j + corner[q][1]) + N * (k + corner[q][2]));
                EXPECT_EQ(v.conn[8 * c + q], l2g[e * N * N * N + loc]);
              }
              auto X = [&](int q) { return &v.xyz[3 * v.conn[8 * c + q]]; };
              double a[3], b[3], d[3];
              for (int r = 0; r < 3; ++r) a[r] = X(1)[r] - X(0)[r], b[r] = X(3)[r] - X(0)[r], d[r] = X(4)[r] - X(0)[r];
              const double det = a[0] * (b[1] * d[2] - b[2] * d[1]) - a[1] * (b[0] * d[2] - b[2] * d[0]) +
                                 a[2] * (b[0] * d[1] - b[1] * d[0]);
              EXPECT_GT(det, 0.0) << "cell " << c;
            }
    }
  }
}

TEST(SemIo, VtuRefusesNullField) {
  const mg::SemSpace S(mg::box_mesh(1, 1, 1), 2, 1);
  expect_error<elliptica::InvalidArgument>([&] { mg::write_sem_vtu(temp_path("x.vtu"), S, nullptr); }, "null field");
  EXPECT_FALSE(std::filesystem::exists(temp_path("x.vtu")));
}
