// Mesh specifications and VTU output of the SEM solver (sem_io.hpp).
#include "elliptica/multigrid/sem_io.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::multigrid {

namespace {

constexpr int kMaxSpecCount = 100000;

std::string quoted(const std::string& spec) { return "mesh spec '" + text::printable(spec, 80) + "'"; }

/// The comma-separated values of one part of a spec: exactly `count` of them.
std::vector<std::string> values(const std::string& spec, std::string_view part, std::size_t count,
                                const char* form) {
  std::vector<std::string> v = text::split(part, ',');
  if (v.size() != count)
    throw InvalidArgument(quoted(spec) + ": expected " + form + " (" + std::to_string(count) + " comma-separated values), got " +
                          std::to_string(v.size()) + " in '" + text::printable(part, 60) + "'");
  return v;
}

int count_value(const std::string& spec, const std::string& tok, const char* what) {
  std::int64_t n = 0;
  if (!text::parse_int(tok, n))
    throw InvalidArgument(quoted(spec) + ": " + what + " '" + text::printable(tok) + "' is not an integer");
  if (n < 1 || n > kMaxSpecCount)
    throw InvalidArgument(quoted(spec) + ": " + what + " must be in [1, " + std::to_string(kMaxSpecCount) + "], got " +
                          std::to_string(n));
  return static_cast<int>(n);
}

double real_value(const std::string& spec, const std::string& tok, const char* what) {
  double v = 0;
  if (!text::parse_double(tok, v))
    throw InvalidArgument(quoted(spec) + ": " + what + " '" + text::printable(tok) + "' is not a number");
  return v;
}

HexMesh box_from_spec(const std::string& spec, std::string_view rest) {
  const std::size_t colon = rest.find(':');
  const std::string_view counts = rest.substr(0, colon);
  const std::vector<std::string> n = values(spec, counts, 3, "box:NX,NY,NZ[:LX,LY,LZ]");
  const char* names[3] = {"NX", "NY", "NZ"};
  std::array<int, 3> ne{};
  for (int d = 0; d < 3; ++d) ne[d] = count_value(spec, n[d], names[d]);
  std::array<double, 3> L{1.0, 1.0, 1.0};
  if (colon != std::string_view::npos) {
    const std::string_view lengths = rest.substr(colon + 1);
    if (lengths.find(':') != std::string_view::npos)
      throw InvalidArgument(quoted(spec) + ": trailing text after the lengths (expected box:NX,NY,NZ[:LX,LY,LZ])");
    const std::vector<std::string> l = values(spec, lengths, 3, "box:NX,NY,NZ:LX,LY,LZ");
    const char* lnames[3] = {"LX", "LY", "LZ"};
    for (int d = 0; d < 3; ++d) {
      L[d] = real_value(spec, l[d], lnames[d]);
      if (!(std::isfinite(L[d]) && L[d] > 0))
        throw InvalidArgument(quoted(spec) + ": " + lnames[d] + " must be finite and > 0, got " + l[d]);
    }
  }
  return box_mesh(ne[0], ne[1], ne[2], L);
}

HexMesh kershaw_from_spec(const std::string& spec, std::string_view rest) {
  if (rest.find(':') != std::string_view::npos)
    throw InvalidArgument(quoted(spec) + ": trailing text (expected kershaw:N,EPS)");
  const std::vector<std::string> v = values(spec, rest, 2, "kershaw:N,EPS");
  const int n = count_value(spec, v[0], "N");
  const double eps = real_value(spec, v[1], "EPS");
  if (!(eps > 0.0 && eps <= 1.0))
    throw InvalidArgument(quoted(spec) + ": EPS must be in (0, 1] (1: the uniform box), got " + v[1]);
  return kershaw_mesh(n, eps);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

bool is_generated_mesh_spec(const std::string& spec) { return starts_with(spec, "box:") || starts_with(spec, "kershaw:"); }

HexMesh sem_mesh_from_spec(const std::string& spec) {
  if (spec.empty())
    throw InvalidArgument("mesh spec is empty (expected box:NX,NY,NZ, kershaw:N,EPS or a Gmsh .msh file)");
  if (starts_with(spec, "box:")) return box_from_spec(spec, std::string_view(spec).substr(4));
  if (starts_with(spec, "kershaw:")) return kershaw_from_spec(spec, std::string_view(spec).substr(8));
  return read_gmsh_hex(spec);
}

// ------------------------------------------------------------------------------------------------
// VTU

namespace {

template <class T>
void put(std::string& buf, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (checked below)
  buf.append(b, sizeof(T));
}

bool little_endian() {
  const std::uint16_t one = 1;
  unsigned char c = 0;
  std::memcpy(&c, &one, 1);
  return c == 1;
}

}  // namespace

void write_sem_vtu(io::OutputFile& out, const SemSpace& space, const double* u_nodes) {
  if (!u_nodes) throw InvalidArgument("write_sem_vtu: null field");
  if (!little_endian()) throw InvalidArgument("write_sem_vtu: big-endian hosts are not supported");
  const int p = space.order();
  const std::size_t N = static_cast<std::size_t>(p) + 1;
  const std::size_t ne = space.num_elements();
  const std::size_t nn = space.num_nodes();
  const std::size_t cells = ne * static_cast<std::size_t>(p) * p * p;
  const std::uint64_t b_points = 24ull * nn, b_conn = 64ull * cells, b_off = 8ull * cells, b_types = cells,
                      b_u = 8ull * nn;
  // Offsets of the arrays inside the appended section: each is an 8-byte size, then the bytes.
  const std::uint64_t o_points = 0, o_conn = o_points + 8 + b_points, o_off = o_conn + 8 + b_conn,
                      o_types = o_off + 8 + b_off, o_u = o_types + 8 + b_types;
  std::string head;
  head += "<?xml version=\"1.0\"?>\n";
  head += "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n";
  head += "  <UnstructuredGrid>\n";
  head += "    <Piece NumberOfPoints=\"" + std::to_string(nn) + "\" NumberOfCells=\"" + std::to_string(cells) + "\">\n";
  head += "      <PointData Scalars=\"u\">\n";
  head += "        <DataArray type=\"Float64\" Name=\"u\" NumberOfComponents=\"1\" format=\"appended\" offset=\"" +
          std::to_string(o_u) + "\"/>\n";
  head += "      </PointData>\n";
  head += "      <Points>\n";
  head += "        <DataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\" format=\"appended\" offset=\"" +
          std::to_string(o_points) + "\"/>\n";
  head += "      </Points>\n";
  head += "      <Cells>\n";
  head += "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"" + std::to_string(o_conn) +
          "\"/>\n";
  head += "        <DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"" + std::to_string(o_off) +
          "\"/>\n";
  head += "        <DataArray type=\"UInt8\" Name=\"types\" format=\"appended\" offset=\"" + std::to_string(o_types) +
          "\"/>\n";
  head += "      </Cells>\n";
  head += "    </Piece>\n";
  head += "  </UnstructuredGrid>\n";
  head += "  <AppendedData encoding=\"raw\">\n   _";
  out.write(head);

  std::string buf;
  buf.reserve(1 << 20);
  auto flush = [&](bool force) {
    if (force || buf.size() >= (1u << 20)) {
      out.write(buf);
      buf.clear();
    }
  };
  // Points
  put<std::uint64_t>(buf, b_points);
  const std::vector<double>& xyz = space.coordinates();
  for (std::size_t i = 0; i < 3 * nn; ++i) {
    put<double>(buf, xyz[i]);
    flush(false);
  }
  // connectivity
  put<std::uint64_t>(buf, b_conn);
  const auto& l2g = space.local_to_global();
  static constexpr int corner[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                                       {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
  const std::size_t N3 = N * N * N;
  for (std::size_t e = 0; e < ne; ++e) {
    const std::int32_t* g = l2g.data() + e * N3;
    for (int k = 0; k < p; ++k)
      for (int j = 0; j < p; ++j)
        for (int i = 0; i < p; ++i) {
          for (const auto& c : corner) {
            const std::size_t q = static_cast<std::size_t>(i + c[0]) + N * (static_cast<std::size_t>(j + c[1]) +
                                                                             N * static_cast<std::size_t>(k + c[2]));
            put<std::int64_t>(buf, g[q]);
          }
          flush(false);
        }
  }
  // offsets
  put<std::uint64_t>(buf, b_off);
  for (std::size_t c = 1; c <= cells; ++c) {
    put<std::int64_t>(buf, static_cast<std::int64_t>(8 * c));
    flush(false);
  }
  // types
  put<std::uint64_t>(buf, b_types);
  buf.append(cells, static_cast<char>(12));  // VTK_HEXAHEDRON
  flush(false);
  // u
  put<std::uint64_t>(buf, b_u);
  for (std::size_t i = 0; i < nn; ++i) {
    put<double>(buf, u_nodes[i]);
    flush(false);
  }
  buf += "\n  </AppendedData>\n</VTKFile>\n";
  flush(true);
}

void write_sem_vtu(const std::string& path, const SemSpace& space, const double* u_nodes) {
  io::OutputFile f(path);
  write_sem_vtu(f, space, u_nodes);
  f.commit();
}

}  // namespace elliptica::multigrid
