// Tests of elliptica::bem meshes: generators, validation / orientation, readers and writer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <omp.h>

#include "bem/mesh_intersect.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/core/error.hpp"

namespace {

using elliptica::InvalidArgument;
using elliptica::IOError;
using namespace elliptica::bem;
namespace fs = std::filesystem;
constexpr double kPi = std::numbers::pi;

const std::string kData = std::string(ELLIPTICA_SOURCE_DIR) + "/tests/data/bem/";

double signed_volume(const Mesh& m) {
  double v = 0;
  for (const auto& t : m.triangles) {
    const auto& a = m.vertices[static_cast<std::size_t>(t[0])];
    const auto& b = m.vertices[static_cast<std::size_t>(t[1])];
    const auto& c = m.vertices[static_cast<std::size_t>(t[2])];
    v += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
          a[2] * (b[0] * c[1] - b[1] * c[0])) / 6.0;
  }
  return v;
}

double total_area(const Mesh& m) {
  double s = 0;
  for (std::size_t e = 0; e < m.num_elements(); ++e) s += m.area(e);
  return s;
}

/// Expects `f` to throw exception type E whose message contains every string in `parts`.
template <class E, class F>
void expect_throw_with(F&& f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class BemMeshFiles : public ::testing::Test {
 public:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("elliptica_bem_mesh_" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = (dir_ / name).string();
    std::ofstream f(p, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  fs::path dir_;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// --- the reference octahedron used by the file tests (node tags non-contiguous) ---
struct TaggedMesh {
  std::vector<std::int64_t> tags;
  std::vector<std::array<double, 3>> xyz;
  std::vector<std::array<std::int64_t, 3>> tris;  // by node tag
};

TaggedMesh octahedron_tagged() {
  TaggedMesh t;
  t.tags = {1000, 7, 101, 3, 55, 42};
  t.xyz = {{0, 0, 1}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}};
  t.tris = {{101, 55, 1000}, {7, 1000, 55}, {101, 1000, 3}, {7, 3, 1000},
            {101, 42, 55},   {7, 55, 42},   {101, 3, 42},   {7, 42, 3}};
  return t;
}

void expect_octahedron(const Mesh& m) {
  ASSERT_EQ(m.num_elements(), 8u);
  ASSERT_EQ(m.vertices.size(), 6u);
  EXPECT_NEAR(signed_volume(m), 4.0 / 3.0, 1e-14);
  for (std::size_t e = 0; e < 8; ++e) {
    const auto n = m.normal(e), c = m.centroid(e);
    EXPECT_GT(n[0] * c[0] + n[1] * c[1] + n[2] * c[2], 0.5) << "element " << e;
  }
  Mesh copy = m;
  const MeshReport r = validate_and_orient(copy);
  EXPECT_FALSE(r.flipped);
  EXPECT_EQ(r.components, 1u);
}

/// Appends binary values, optionally byte-swapped (to emulate a file of the other endianness).
struct Bytes {
  std::string s;
  bool swap = false;
  template <class T>
  void put(T v) {
    std::array<char, sizeof(T)> raw;
    std::memcpy(raw.data(), &v, sizeof(T));
    if (swap) std::reverse(raw.begin(), raw.end());
    s.append(raw.data(), raw.size());
  }
  void size_t_(std::uint64_t v, int dsize) {
    if (dsize == 4) put(static_cast<std::uint32_t>(v));
    else put(v);
  }
  void text(const std::string& t) { s += t; }
};

std::string msh22_binary(const TaggedMesh& t, bool swap) {
  Bytes b;
  b.swap = swap;
  b.text("$MeshFormat\n2.2 1 8\n");
  b.put<std::int32_t>(1);
  b.text("\n$EndMeshFormat\n$Nodes\n" + std::to_string(t.tags.size()) + "\n");
  for (std::size_t i = 0; i < t.tags.size(); ++i) {
    b.put(static_cast<std::int32_t>(t.tags[i]));
    for (double x : t.xyz[i]) b.put(x);
  }
  b.text("\n$EndNodes\n$Elements\n" + std::to_string(t.tris.size() + 2) + "\n");
  // a block of one point element (type 15, 2 tags), then the triangles (type 2, 2 tags)
  b.put<std::int32_t>(15); b.put<std::int32_t>(1); b.put<std::int32_t>(2);
  b.put<std::int32_t>(1); b.put<std::int32_t>(0); b.put<std::int32_t>(1);
  b.put(static_cast<std::int32_t>(t.tags[0]));
  b.put<std::int32_t>(2); b.put(static_cast<std::int32_t>(t.tris.size())); b.put<std::int32_t>(2);
  for (std::size_t e = 0; e < t.tris.size(); ++e) {
    b.put(static_cast<std::int32_t>(e + 2)); b.put<std::int32_t>(1); b.put<std::int32_t>(1);
    for (auto n : t.tris[e]) b.put(static_cast<std::int32_t>(n));
  }
  // a block of one 2-node line (type 1, no tags)
  b.put<std::int32_t>(1); b.put<std::int32_t>(1); b.put<std::int32_t>(0);
  b.put<std::int32_t>(99); b.put(static_cast<std::int32_t>(t.tags[0])); b.put(static_cast<std::int32_t>(t.tags[1]));
  b.text("\n$EndElements\n");
  return b.s;
}

std::string msh41_binary(const TaggedMesh& t, bool swap, int dsize) {
  Bytes b;
  b.swap = swap;
  b.text("$MeshFormat\n4.1 1 " + std::to_string(dsize) + "\n");
  b.put<std::int32_t>(1);
  b.text("\n$EndMeshFormat\n$Entities\n");
  // binary $Entities payload (skipped by the reader): 0 points, 0 curves, 1 surface, 0 volumes
  for (int i = 0; i < 4; ++i) b.size_t_(i == 2 ? 1 : 0, dsize);
  b.put<std::int32_t>(1);
  for (int i = 0; i < 6; ++i) b.put(i < 3 ? -1.0 : 1.0);
  b.size_t_(0, dsize);
  b.size_t_(0, dsize);
  b.text("\n$EndEntities\n$Nodes\n");
  // two blocks: first node alone (dim 0, not parametric), the rest parametric on a surface (dim 2)
  b.size_t_(2, dsize); b.size_t_(t.tags.size(), dsize); b.size_t_(3, dsize); b.size_t_(1000, dsize);
  b.put<std::int32_t>(0); b.put<std::int32_t>(1); b.put<std::int32_t>(0); b.size_t_(1, dsize);
  b.size_t_(static_cast<std::uint64_t>(t.tags[0]), dsize);
  for (double x : t.xyz[0]) b.put(x);
  const std::size_t rest = t.tags.size() - 1;
  b.put<std::int32_t>(2); b.put<std::int32_t>(1); b.put<std::int32_t>(1); b.size_t_(rest, dsize);
  for (std::size_t i = 1; i < t.tags.size(); ++i) b.size_t_(static_cast<std::uint64_t>(t.tags[i]), dsize);
  for (std::size_t i = 1; i < t.tags.size(); ++i) {
    for (double x : t.xyz[i]) b.put(x);
    b.put(0.25); b.put(0.75);  // parametric (u, v)
  }
  b.text("\n$EndNodes\n$Elements\n");
  b.size_t_(2, dsize); b.size_t_(t.tris.size() + 1, dsize); b.size_t_(1, dsize); b.size_t_(t.tris.size() + 1, dsize);
  b.put<std::int32_t>(1); b.put<std::int32_t>(1); b.put<std::int32_t>(1); b.size_t_(1, dsize);  // one line
  b.size_t_(1, dsize); b.size_t_(static_cast<std::uint64_t>(t.tags[0]), dsize); b.size_t_(static_cast<std::uint64_t>(t.tags[1]), dsize);
  b.put<std::int32_t>(2); b.put<std::int32_t>(1); b.put<std::int32_t>(2); b.size_t_(t.tris.size(), dsize);
  for (std::size_t e = 0; e < t.tris.size(); ++e) {
    b.size_t_(e + 2, dsize);
    for (auto n : t.tris[e]) b.size_t_(static_cast<std::uint64_t>(n), dsize);
  }
  b.text("\n$EndElements\n");
  return b.s;
}

std::string stl_binary(const Mesh& m, const std::string& header80) {
  Bytes b;  // STL is little-endian; these tests run on little-endian hosts
  std::string h = header80;
  h.resize(80, ' ');
  b.text(h);
  b.put(static_cast<std::uint32_t>(m.num_elements()));
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    for (double x : m.normal(e)) b.put(static_cast<float>(x));
    for (auto v : m.triangles[e])
      for (double x : m.vertices[static_cast<std::size_t>(v)]) b.put(static_cast<float>(x));
    b.put<std::uint16_t>(0);
  }
  return b.s;
}

Mesh octahedron_mesh() {
  Mesh m;
  m.vertices = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  m.triangles = {{0, 2, 4}, {1, 4, 2}, {0, 4, 3}, {1, 3, 4}, {0, 5, 2}, {1, 2, 5}, {0, 3, 5}, {1, 5, 3}};
  return m;
}

/// Every strict prefix of `bytes` shorter than `keep` must be rejected with IOError.
void expect_prefixes_fail(BemMeshFiles& fx, const std::string& name, const std::string& bytes,
                          std::size_t keep, std::string (BemMeshFiles::*write)(const std::string&, const std::string&)) {
  // every length up to 160 bytes, then a stride (keeps the test fast), then the last 40 lengths
  const std::size_t stride = std::max<std::size_t>(1, keep / 150);
  for (std::size_t len = 0; len < keep; len += (len < 160 || len + 40 >= keep) ? 1 : stride) {
    const std::string p = (fx.*write)(name, bytes.substr(0, len));
    EXPECT_THROW(read_mesh(p), IOError) << name << " truncated to " << len << " of " << bytes.size() << " bytes";
  }
}

}  // namespace

// =============================================================================================
// Generators
// =============================================================================================

TEST(BemMeshGenerators, IcosphereCountsClosedOutward) {
  double prev_vol_err = 0, prev_area_err = 0;
  for (int r = 0; r <= 4; ++r) {
    const double R = 1.5;
    const std::array<double, 3> c = {0.5, -1.0, 2.0};
    Mesh m = icosphere(r, R, c);
    const std::size_t p = std::size_t{1} << (2 * r);
    EXPECT_EQ(m.num_elements(), 20 * p);
    EXPECT_EQ(m.vertices.size(), 10 * p + 2);  // vertices deduplicated on shared edges
    for (const auto& v : m.vertices)
      EXPECT_NEAR(std::hypot(v[0] - c[0], v[1] - c[1], v[2] - c[2]), R, 1e-12);
    for (std::size_t e = 0; e < m.num_elements(); ++e) {
      const auto n = m.normal(e), x = m.centroid(e);
      EXPECT_GT(n[0] * (x[0] - c[0]) + n[1] * (x[1] - c[1]) + n[2] * (x[2] - c[2]), 0.0);
    }
    Mesh copy = m;
    const MeshReport rep = validate_and_orient(copy);  // closed, manifold, consistently oriented
    EXPECT_FALSE(rep.flipped);
    EXPECT_EQ(rep.components, 1u);
    EXPECT_EQ(rep.removed_duplicates, 0u);
    EXPECT_EQ(copy.triangles, m.triangles);
    const double vexact = 4.0 / 3.0 * kPi * R * R * R, aexact = 4 * kPi * R * R;
    const double vol = signed_volume(m);
    EXPECT_GT(vol, 0.0);
    EXPECT_NEAR(rep.volume, vol, 1e-10);
    const double verr = vexact - vol, aerr = aexact - total_area(m);
    EXPECT_GT(verr, 0.0);  // inscribed polyhedron
    EXPECT_GT(aerr, 0.0);
    const double h = m.max_edge();
    EXPECT_LT(verr / vexact, 1.5 * h * h / (R * R));  // O(h^2)
    if (r >= 2) {  // error ratio -> 4 per refinement (h halves); r = 0 -> 1 is pre-asymptotic
      EXPECT_GT(prev_vol_err / verr, 3.5);
      EXPECT_LT(prev_vol_err / verr, 4.5);
      EXPECT_GT(prev_area_err / aerr, 3.5);
      EXPECT_LT(prev_area_err / aerr, 4.5);
    } else if (r == 1) {
      EXPECT_GT(prev_vol_err / verr, 2.5);
    }
    prev_vol_err = verr;
    prev_area_err = aerr;
  }
  EXPECT_NEAR(total_area(icosphere(5, 2.0)), 16 * kPi, 16 * kPi * 1e-3);
}

// Volume error of refinement r of an inscribed sphere/ellipsoid mesh after prev at r - 1: O(h^2),
// so the ratio tends to 4 per refinement (h halves); r = 0 -> 1 is pre-asymptotic.
static void expect_second_order_ratio(int r, double prev, double err) {
  if (r >= 2) {
    EXPECT_GT(prev / err, 3.3) << "refinement " << r;
    EXPECT_LT(prev / err, 4.5) << "refinement " << r;
  } else if (r == 1) {
    EXPECT_GT(prev / err, 2.0) << "refinement " << r;
  }
}

TEST(BemMeshGenerators, OctasphereCountsClosedOutward) {
  double prev = 0;
  for (int r = 0; r <= 4; ++r) {
    Mesh m = octasphere(r, 2.0, {1, 1, 1});
    const std::size_t p = std::size_t{1} << (2 * r);
    EXPECT_EQ(m.num_elements(), 8 * p);
    EXPECT_EQ(m.vertices.size(), 4 * p + 2);
    Mesh copy = m;
    const MeshReport rep = validate_and_orient(copy);
    EXPECT_FALSE(rep.flipped);
    const double vexact = 4.0 / 3.0 * kPi * 8.0;
    EXPECT_GT(rep.volume, 0.0);
    const double err = vexact - rep.volume;
    EXPECT_GT(err, 0.0);
    expect_second_order_ratio(r, prev, err);
    prev = err;
  }
  EXPECT_NEAR(total_area(octasphere(5, 2.0)), 16 * kPi, 16 * kPi * 3e-3);
}

TEST(BemMeshGenerators, EllipsoidVolumeOutward) {
  const std::array<double, 3> ax = {1.0, 2.0, 0.5};
  const double vexact = 4.0 / 3.0 * kPi * ax[0] * ax[1] * ax[2];
  double prev = 0;
  for (int r = 0; r <= 4; ++r) {
    Mesh m = ellipsoid(r, ax, {3, 0, -1});
    EXPECT_EQ(m.num_elements(), 20 * (std::size_t{1} << (2 * r)));
    for (const auto& v : m.vertices) {
      const double q = std::pow((v[0] - 3) / ax[0], 2) + std::pow(v[1] / ax[1], 2) + std::pow((v[2] + 1) / ax[2], 2);
      EXPECT_NEAR(q, 1.0, 1e-12);
    }
    Mesh copy = m;
    const MeshReport rep = validate_and_orient(copy);
    EXPECT_FALSE(rep.flipped);
    const double err = vexact - rep.volume;
    EXPECT_GT(err, 0.0);
    expect_second_order_ratio(r, prev, err);
    prev = err;
  }
  EXPECT_NEAR(signed_volume(ellipsoid(5, ax)), vexact, vexact * 2e-3);
}

TEST(BemMeshGenerators, ArgumentChecks) {
  EXPECT_THROW(icosphere(-1), InvalidArgument);
  EXPECT_THROW(icosphere(11), InvalidArgument);
  EXPECT_THROW(icosphere(1, 0.0), InvalidArgument);
  EXPECT_THROW(icosphere(1, -1.0), InvalidArgument);
  EXPECT_THROW(icosphere(1, std::nan("")), InvalidArgument);
  EXPECT_THROW(octasphere(-1), InvalidArgument);
  EXPECT_THROW(octasphere(1, INFINITY), InvalidArgument);
  EXPECT_THROW(ellipsoid(1, {1, 0, 1}), InvalidArgument);
  EXPECT_THROW(ellipsoid(1, {1, 1, 1}, {0, NAN, 0}), InvalidArgument);
  const Mesh m = icosphere(0);
  EXPECT_THROW(m.area(20), InvalidArgument);
  EXPECT_THROW(m.centroid(99), InvalidArgument);
  EXPECT_THROW(m.normal(20), InvalidArgument);
  EXPECT_EQ(Mesh{}.max_edge(), 0.0);
}

TEST(BemMeshGenerators, GeometryQueries) {
  Mesh m;
  m.vertices = {{0, 0, 0}, {2, 0, 0}, {0, 1, 0}};
  m.triangles = {{0, 1, 2}};
  EXPECT_DOUBLE_EQ(m.area(0), 1.0);
  const auto n = m.normal(0);
  EXPECT_DOUBLE_EQ(n[2], 1.0);
  const auto c = m.centroid(0);
  EXPECT_DOUBLE_EQ(c[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(c[1], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.max_edge(), std::sqrt(5.0));
}

// =============================================================================================
// Resolution
// =============================================================================================

TEST(BemMeshResolution, ElementsPerWavelength) {
  const Mesh m = icosphere(3);
  const double h = m.max_edge();
  EXPECT_DOUBLE_EQ(elements_per_wavelength(m, 1.0), 2 * kPi / h);
  EXPECT_DOUBLE_EQ(elements_per_wavelength(m, {2.0, 0.7}), kPi / h);  // only Re k counts
  EXPECT_TRUE(std::isinf(elements_per_wavelength(m, 0.0)));
  EXPECT_TRUE(mesh_resolution_warning(m, 1.0).empty());
  EXPECT_TRUE(mesh_resolution_warning(m, 0.0).empty());
  const double k3 = 2 * kPi / (3 * h);  // 3 elements per wavelength
  EXPECT_NEAR(elements_per_wavelength(m, k3), 3.0, 1e-12);
  const std::string w = mesh_resolution_warning(m, k3);
  EXPECT_FALSE(w.empty());
  EXPECT_NE(w.find("elements per wavelength"), std::string::npos);
  EXPECT_THROW(elements_per_wavelength(m, {NAN, 0}), InvalidArgument);
  EXPECT_THROW(elements_per_wavelength(Mesh{}, 1.0), InvalidArgument);
}

// =============================================================================================
// Validation
// =============================================================================================

TEST(BemMeshValidate, OpenSurfaceNamesElement) {
  Mesh m = octahedron_mesh();
  m.triangles.pop_back();  // removes {1, 5, 3}; element 3 = {1, 3, 4} is its first neighbour
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); },
                                     {"mesh is not closed: edge (", "of element 3", "has no neighbour"});
}

TEST(BemMeshValidate, FlippedTriangleIsFixed) {
  const Mesh ref = icosphere(2);
  for (std::size_t e : {std::size_t{0}, std::size_t{17}, ref.num_elements() - 1}) {
    Mesh m = ref;
    std::swap(m.triangles[e][1], m.triangles[e][2]);
    const MeshReport rep = validate_and_orient(m);
    EXPECT_TRUE(rep.flipped);
    EXPECT_EQ(rep.flipped_elements, 1u);
    EXPECT_EQ(m.triangles, ref.triangles) << "flipped element " << e;
    EXPECT_EQ(rep.elements, ref.num_elements());
    EXPECT_EQ(rep.vertices, ref.vertices.size());
  }
}

TEST(BemMeshValidate, InwardMeshIsFlippedOutward) {
  const Mesh ref = ellipsoid(2, {1, 2, 3}, {5, 5, 5});
  Mesh m = ref;
  for (auto& t : m.triangles) std::swap(t[0], t[1]);
  EXPECT_LT(signed_volume(m), 0.0);
  const MeshReport rep = validate_and_orient(m);
  EXPECT_TRUE(rep.flipped);
  EXPECT_EQ(rep.flipped_elements, ref.num_elements());
  EXPECT_GT(signed_volume(m), 0.0);
  EXPECT_NEAR(rep.volume, signed_volume(ref), 1e-10);
  EXPECT_GT(rep.min_area, 0.0);
  EXPECT_DOUBLE_EQ(rep.max_edge, ref.max_edge());
}

TEST(BemMeshValidate, ComponentsOrientedSeparately) {
  Mesh a = icosphere(1, 1.0, {-3, 0, 0});
  const Mesh b = octasphere(1, 0.5, {3, 0, 0});
  const auto off = static_cast<std::int32_t>(a.vertices.size());
  a.vertices.insert(a.vertices.end(), b.vertices.begin(), b.vertices.end());
  for (auto t : b.triangles) a.triangles.push_back({t[0] + off, t[2] + off, t[1] + off});  // inward
  const MeshReport rep = validate_and_orient(a);
  EXPECT_EQ(rep.components, 2u);
  EXPECT_EQ(rep.flipped_elements, b.num_elements());
  EXPECT_NEAR(rep.volume, signed_volume(icosphere(1)) + signed_volume(b) - 0.0, 1e-9 + std::abs(signed_volume(b)) * 0);
}

TEST(BemMeshValidate, MergesDuplicateVerticesAndDropsUnused) {
  const Mesh ref = icosphere(1);
  Mesh m;  // triangle soup: every triangle has its own three vertices, plus an unused vertex
  for (const auto& t : ref.triangles) {
    const auto base = static_cast<std::int32_t>(m.vertices.size());
    for (auto v : t) m.vertices.push_back(ref.vertices[static_cast<std::size_t>(v)]);
    m.triangles.push_back({base, base + 1, base + 2});
  }
  m.vertices.push_back({9, 9, 9});
  const MeshReport rep = validate_and_orient(m);
  EXPECT_EQ(rep.vertices, ref.vertices.size());
  EXPECT_EQ(rep.removed_duplicates, 3 * ref.num_elements() - ref.vertices.size());
  EXPECT_EQ(rep.removed_unused, 1u);
  EXPECT_FALSE(rep.flipped);
  EXPECT_NEAR(rep.volume, signed_volume(ref), 1e-12);
}

TEST(BemMeshValidate, DegenerateRepeatedIndex) {
  Mesh m = octahedron_mesh();
  m.triangles[5] = {1, 2, 2};
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"element 5", "degenerate"});
}

TEST(BemMeshValidate, DegenerateZeroArea) {
  Mesh m = icosphere(1);
  const auto t = m.triangles[7];
  const auto& a = m.vertices[static_cast<std::size_t>(t[0])];
  const auto& b = m.vertices[static_cast<std::size_t>(t[1])];
  m.vertices[static_cast<std::size_t>(t[2])] = {(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2};
  // the first element whose three vertices are collinear is element 7
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"element 7 ", "degenerate"});
}

TEST(BemMeshValidate, DuplicateTrianglesNameBoth) {
  Mesh m = octahedron_mesh();
  m.triangles.push_back({m.triangles[2][1], m.triangles[2][0], m.triangles[2][2]});
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"elements 2 and 8", "duplicate"});
}

TEST(BemMeshValidate, NonManifoldEdge) {
  // two tetrahedra sharing the edge (0, 1): that edge belongs to four triangles
  Mesh m;
  m.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, -1, 0}, {0, 0, -1}};
  m.triangles = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3},
                 {0, 4, 1}, {0, 1, 5}, {0, 5, 4}, {1, 4, 5}};
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); },
                                     {"non-manifold edge (1,0)", "of element 0", "shared by 4 elements (0, 1, 4, 5)"});
}

TEST(BemMeshValidate, IndexOutOfRange) {
  Mesh m = octahedron_mesh();
  m.triangles[4][1] = 6;
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"element 4", "out of range"});
  m.triangles[4][1] = -1;
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"element 4", "out of range"});
}

TEST(BemMeshValidate, NonOrientable) {
  // 6-vertex triangulation of the real projective plane (each of the 15 vertex pairs is an edge of
  // exactly two triangles): closed and manifold, but not orientable.
  Mesh m;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 6; ++i) m.vertices.push_back({u(gen), u(gen), u(gen)});
  m.triangles = {{0, 1, 2}, {0, 2, 3}, {0, 3, 4}, {0, 4, 5}, {0, 5, 1},
                 {1, 2, 4}, {2, 3, 5}, {3, 4, 1}, {4, 5, 2}, {5, 1, 3}};
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"not orientable", "element"});
}

TEST(BemMeshValidate, EmptyAndNonFinite) {
  Mesh m;
  EXPECT_THROW(validate_and_orient(m), InvalidArgument);
  m = octahedron_mesh();
  m.vertices[3][1] = NAN;
  expect_throw_with<InvalidArgument>([&] { validate_and_orient(m); }, {"vertex 3"});
}

// =============================================================================================
// Self-intersection and nesting (validate_and_orient steps 5 and 6)
// =============================================================================================

namespace {

using elliptica::bem::detail::orient2d;
using elliptica::bem::detail::orient3d;
using elliptica::bem::detail::triangles_intersect;
using V3 = std::array<double, 3>;

/// a and b in one mesh (b's vertices appended, its indices shifted).
Mesh join(Mesh a, const Mesh& b) {
  const auto off = static_cast<std::int32_t>(a.vertices.size());
  a.vertices.insert(a.vertices.end(), b.vertices.begin(), b.vertices.end());
  for (auto t : b.triangles) a.triangles.push_back({t[0] + off, t[1] + off, t[2] + off});
  return a;
}

Mesh shifted(Mesh m, const V3& d, double scale = 1.0) {
  for (auto& v : m.vertices)
    for (int k = 0; k < 3; ++k) v[k] = v[k] * scale + d[k];
  return m;
}

/// Axis-aligned box [lo, hi] as 12 outward triangles.
Mesh box_mesh(const V3& lo, const V3& hi) {
  Mesh m;
  for (int i = 0; i < 8; ++i) m.vertices.push_back({i & 1 ? hi[0] : lo[0], i & 2 ? hi[1] : lo[1], i & 4 ? hi[2] : lo[2]});
  m.triangles = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                 {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
  return m;
}

/// The two element numbers of an "elements E and F" phrase in msg.
std::pair<std::size_t, std::size_t> named_elements(const std::string& msg) {
  const std::size_t at = msg.find("elements ");
  std::size_t e = 0, f = 0;
  if (at == std::string::npos || std::sscanf(msg.c_str() + at, "elements %zu and %zu", &e, &f) != 2)
    ADD_FAILURE() << "no 'elements E and F' in: " << msg;
  return {e, f};
}

std::string validation_error(Mesh m) {
  try {
    validate_and_orient(m);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

/// Triangle pair predicate on explicit points: t1 = vertices (0, 1, 2), t2 = the given indices.
bool pair_hits(const std::vector<V3>& v, std::array<std::int32_t, 3> t2) {
  return triangles_intersect(v, {0, 1, 2}, t2);
}

/// Exact orientation of points on the grid 2^-40 Z^3 (|coordinate| < 1) in 128-bit integers
/// (|differences| < 2^41, so the six triple products stay below 2^127).
int orient3d_grid(const V3& a, const V3& b, const V3& c, const V3& d) {
  using I = __int128;
  auto g = [](double x) { return static_cast<I>(std::ldexp(x, 40)); };
  I r[3][3];
  const V3* p[3] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) r[i][k] = g((*p[i])[k]) - g(d[k]);
  const I det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
  return det > 0 ? 1 : (det < 0 ? -1 : 0);
}

}  // namespace

TEST(BemMeshIntersect, Orient3dExactOnNearlyCoplanarPoints) {
  // d = a + s (b - a) + t (c - a) rounded to the grid: nearly or exactly coplanar, where the
  // floating-point determinant alone cannot decide the sign; checked against integer arithmetic.
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<std::int64_t> u(-(std::int64_t{1} << 38), std::int64_t{1} << 38);
  auto grid = [&] { return std::ldexp(static_cast<double>(u(gen)), -40); };
  std::uniform_real_distribution<double> w(-1.0, 2.0);
  int zeros = 0, mismatches = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const V3 a{grid(), grid(), grid()}, b{grid(), grid(), grid()}, c{grid(), grid(), grid()};
    const double s = w(gen) / 4, t = w(gen) / 4;
    V3 d;
    for (int k = 0; k < 3; ++k) d[k] = std::ldexp(std::round(std::ldexp(a[k] + s * (b[k] - a[k]) + t * (c[k] - a[k]), 40)), -40);
    if (trial % 3 == 0) d = {2 * b[0] - a[0], 2 * b[1] - a[1], 2 * b[2] - a[2]};  // on the line ab
    const int ref = orient3d_grid(a, b, c, d);
    zeros += ref == 0;
    mismatches += orient3d(a, b, c, d) != ref;
    mismatches += orient3d(b, c, a, d) != ref;  // even permutation: same sign
    mismatches += orient3d(b, a, c, d) != -ref;  // odd permutation: opposite sign
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(zeros, 100);  // the exact path was exercised on exactly coplanar points
  // still exact on coordinates down to the multiples of 2^-252 that predicate_coordinates() keeps
  // (the same points scaled by 2^-190: orient3d is homogeneous)
  std::mt19937_64 gen2(8);
  mismatches = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    V3 p[4];
    for (auto& q : p)
      for (double& x : q) x = std::ldexp(static_cast<double>(u(gen2)), -40);
    if (trial % 2 == 0)
      for (int k = 0; k < 3; ++k) p[3][k] = 2 * p[1][k] - p[0][k];
    const int ref = orient3d_grid(p[0], p[1], p[2], p[3]);
    for (auto& q : p)
      for (double& x : q) x = std::ldexp(x, -190);
    mismatches += orient3d(p[0], p[1], p[2], p[3]) != ref;
  }
  EXPECT_EQ(mismatches, 0);
  // 2-D: collinear points with non-representable products, and the smallest perturbations
  const std::array<double, 2> p{0.1, 0.1}, q{0.3, 0.3}, r{0.7, 0.7};
  EXPECT_EQ(orient2d(p, q, r), 0);
  EXPECT_EQ(orient2d(p, q, {0.7, std::nextafter(0.7, 1.0)}), 1);
  EXPECT_EQ(orient2d(p, q, {0.7, std::nextafter(0.7, 0.0)}), -1);
  EXPECT_EQ(orient3d({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.3, 0.3, 1e-300}), -1);  // d above the ccw plane
  EXPECT_EQ(orient3d({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.3, 0.3, 0}), 0);
}

TEST(BemMeshIntersect, PairsWithoutSharedVertices) {
  std::vector<V3> v = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  auto with = [&](std::vector<V3> t2) {
    std::vector<V3> w = v;
    w.insert(w.end(), t2.begin(), t2.end());
    return pair_hits(w, {3, 4, 5});
  };
  EXPECT_TRUE(with({{0.2, 0.2, -1}, {0.2, 0.2, 1}, {0.3, 0.25, 1}}));       // pierces the interior
  EXPECT_FALSE(with({{0.2, 0.2, 1e-12}, {0.2, 0.2, 1}, {0.3, 0.25, 1}}));   // just above
  EXPECT_TRUE(with({{0.2, 0.2, 0}, {0.3, 0.3, 1}, {0.1, 0.4, 1}}));         // touches at a point
  EXPECT_TRUE(with({{0.5, 0, 0}, {0.5, 0.5, 1}, {0.5, -0.5, 1}}));          // touches an edge
  EXPECT_TRUE(with({{0.5, -0.5, 0}, {0.5, 0.5, 0}, {0.5, 0, 1}}));          // an edge lies across it
  EXPECT_FALSE(with({{0.5, -0.5, 1e-9}, {0.5, 0.5, 1e-9}, {0.5, 0, 1}}));
  EXPECT_FALSE(with({{2, 2, -1}, {2, 2, 1}, {2.1, 2, 1}}));                 // crosses the plane outside
  EXPECT_TRUE(with({{-1, -1, 0}, {3, 0, 0}, {0, 3, 0}}));                   // coplanar, contains it
  EXPECT_TRUE(with({{0.1, 0.1, 0}, {0.2, 0.1, 0}, {0.1, 0.2, 0}}));         // coplanar, inside it
  EXPECT_TRUE(with({{0.25, 0.25, 0}, {2, 0.25, 0}, {0.25, 2, 0}}));         // coplanar, overlapping
  EXPECT_TRUE(with({{0.5, 0.5, 0}, {2, 0.5, 0}, {0.5, 2, 0}}));             // coplanar, touching
  EXPECT_FALSE(with({{0.6, 0.6, 0}, {2, 0.6, 0}, {0.6, 2, 0}}));            // coplanar, apart
  EXPECT_TRUE(with({{1, 0, 0.5}, {1, 0, -0.5}, {2, 0, 0}}));                // through a vertex
}

TEST(BemMeshIntersect, PairsSharingAVertexOrAnEdge) {
  // t1 = (A, B, C) in z = 0 with A = 0: wedge between +x and +y
  std::vector<V3> v = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 0}, {0, 0, 0}};
  auto vertex_pair = [&](const V3& d, const V3& e) {
    v[3] = d;
    v[4] = e;
    return pair_hits(v, {0, 3, 4});
  };
  EXPECT_FALSE(vertex_pair({-1, 0, 0}, {0, -1, 0}));          // coplanar fan, opposite wedge
  EXPECT_FALSE(vertex_pair({-1, 0.1, 0}, {-0.1, 1, 0}));      // coplanar, next wedge, apart
  EXPECT_TRUE(vertex_pair({1, 1, 0}, {-1, 2, 0}));            // coplanar, overlapping wedges
  EXPECT_TRUE(vertex_pair({0, 2, 0}, {-1, 0, 0}));            // coplanar, edges along one ray
  EXPECT_TRUE(vertex_pair({0.2, 0.2, 1}, {0.2, 0.2, -1}));    // passes through t1 beyond A
  EXPECT_FALSE(vertex_pair({-0.2, -0.2, 1}, {-0.2, -0.2, -1}));  // crosses the plane outside the wedge
  EXPECT_FALSE(vertex_pair({0.3, 0.3, 1}, {0.5, -0.5, 1}));   // above, touching at A only
  EXPECT_TRUE(vertex_pair({0.3, 0.3, 0}, {0.3, 0.3, 1}));     // an edge lies on t1
  EXPECT_FALSE(vertex_pair({0.3, 0.3, 1e-15}, {0.3, 0.3, 1}));
  EXPECT_TRUE(vertex_pair({1, 0, 1}, {1, 0, -1}));            // crosses t1's edge AB
  EXPECT_FALSE(vertex_pair({1, -1e-12, 1}, {1, -1e-12, -1}));
  // shared edge AB: t2 = (A, B, D)
  auto edge_pair = [&](const V3& d) {
    v[3] = d;
    return pair_hits(v, {0, 1, 3});
  };
  EXPECT_FALSE(edge_pair({0.5, -0.5, 0}));   // coplanar, other side: a flat neighbour
  EXPECT_TRUE(edge_pair({0.5, 0.5, 0}));     // coplanar, same side: folded onto t1
  EXPECT_FALSE(edge_pair({0.5, 0.5, 1e-17}));  // a sharp fold that does not overlap
  EXPECT_FALSE(edge_pair({0.5, 0.5, 1}));
}

TEST(BemMeshValidate, TwoOverlappingSpheresNamed) {
  const Mesh a = icosphere(3);
  const std::string msg = validation_error(join(a, icosphere(3, 1.0, {1, 0.1, 0})));
  EXPECT_NE(msg.find("two closed surfaces intersect"), std::string::npos) << msg;
  EXPECT_NE(msg.find("component 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("component 1"), std::string::npos) << msg;
  const auto [e, f] = named_elements(msg);
  EXPECT_LT(e, a.num_elements());
  EXPECT_GE(f, a.num_elements());
  // the same at other scales (the predicates work on power-of-two scaled coordinates); the
  // search alone also at scales where products of coordinates would overflow or underflow
  for (double s : {1e-30, 1e30}) {
    const std::string m2 = validation_error(join(shifted(a, {0, 0, 0}, s), icosphere(3, s, {s, 0.1 * s, 0})));
    EXPECT_NE(m2.find("two closed surfaces intersect"), std::string::npos) << "scale " << s << ": " << m2;
  }
  for (double s : {1e-300, 1e300}) {
    const Mesh both = join(shifted(a, {0, 0, 0}, s), icosphere(3, s, {s, 0.1 * s, 0}));
    const auto hit = elliptica::bem::detail::find_intersecting_elements(both);
    ASSERT_TRUE(hit.has_value()) << "scale " << s;
    EXPECT_LT(hit->first, a.num_elements());
    EXPECT_GE(hit->second, a.num_elements());
    EXPECT_FALSE(elliptica::bem::detail::find_intersecting_elements(
                     join(shifted(a, {0, 0, 0}, s), icosphere(3, s, {2.01 * s, 0, 0})))
                     .has_value())
        << "scale " << s;
  }
}

TEST(BemMeshValidate, VertexPushedThroughTheOppositeSide) {
  Mesh m = icosphere(3);
  const V3 p = m.vertices[0];
  m.vertices[0] = {-1.3 * p[0], -1.3 * p[1], -1.3 * p[2]};
  const std::string msg = validation_error(m);
  EXPECT_NE(msg.find("the surface intersects itself"), std::string::npos) << msg;
  const auto [e, f] = named_elements(msg);
  auto uses0 = [&](std::size_t el) {
    const auto& t = m.triangles[el];
    return t[0] == 0 || t[1] == 0 || t[2] == 0;
  };
  EXPECT_TRUE(uses0(e) || uses0(f)) << msg;  // one of the stretched elements is named
  // pushed in but not through: a dent, accepted
  Mesh dent = icosphere(3);
  dent.vertices[0] = {0.5 * p[0], 0.5 * p[1], 0.5 * p[2]};
  EXPECT_EQ(validation_error(dent), "");
}

TEST(BemMeshValidate, OctahedronApexPushedThrough) {
  // apex (0, 0, 1) moved down: to z = 0 the body is a square pyramid, to z = -0.5 the upper faces
  // fold into the lower pyramid, to z = -1.5 they enclose it (a cup-shaped solid): none of these
  // surfaces crosses itself. Moved to (1.5, 1.5, -1.2) the face (-x, -y, apex) passes through the
  // face (+x, B, +y) (B = (0, 0, -1)): edge (+x, B) meets it at (0.538, 0, -0.462).
  Mesh m = octahedron_mesh();
  for (double z : {0.0, -0.5, -1.5}) {
    m.vertices[4] = {0, 0, z};
    EXPECT_EQ(validation_error(m), "") << "apex at z = " << z;
  }
  m.vertices[4] = {1.5, 1.5, -1.2};
  const std::string msg = validation_error(m);
  EXPECT_NE(msg.find("the surface intersects itself: elements 3 and 4 intersect"), std::string::npos) << msg;
}

TEST(BemMeshValidate, SphereInsideSphereRefused) {
  const Mesh outer = icosphere(3, 2.0), inner = icosphere(2, 1.0, {0.3, 0, 0});
  std::string msg = validation_error(join(outer, inner));
  for (const char* part : {"nested surfaces", "component 1 (the closed surface containing element 1280)",
                           "lies inside component 0 (the closed surface containing element 0)",
                           "exterior scattering by solid bodies"})
    EXPECT_NE(msg.find(part), std::string::npos) << msg << "\nmissing: " << part;
  msg = validation_error(join(inner, outer));  // listed the other way round
  EXPECT_NE(msg.find("component 0 (the closed surface containing element 0) lies inside component 1 "
                     "(the closed surface containing element 320)"),
            std::string::npos)
      << msg;
  // a body inside the cavity of a hollow body, among others that are apart
  Mesh many = join(join(box_mesh({5, 5, 5}, {6, 6, 6}), outer), box_mesh({-0.5, -0.5, -0.5}, {0.5, 0.5, 0.5}));
  many = join(many, icosphere(1, 0.5, {-5, 0, 0}));
  msg = validation_error(many);
  EXPECT_NE(msg.find("component 2 (the closed surface containing element 1292) lies inside component 1"),
            std::string::npos)
      << msg;
  // the nesting search alone at scales where the solid angles would overflow or underflow
  std::vector<std::vector<std::size_t>> comps(2);
  for (std::size_t e = 0; e < outer.num_elements() + inner.num_elements(); ++e)
    comps[e < outer.num_elements() ? 0 : 1].push_back(e);
  for (double s : {1e-300, 1.0, 1e300}) {
    const auto nest = elliptica::bem::detail::find_nested_components(
        join(shifted(outer, {0, 0, 0}, s), shifted(inner, {0, 0, 0}, s)), comps);
    ASSERT_TRUE(nest.has_value()) << "scale " << s;
    EXPECT_EQ(nest->first, 1u);
    EXPECT_EQ(nest->second, 0u);
    EXPECT_FALSE(elliptica::bem::detail::find_nested_components(
                     join(shifted(outer, {0, 0, 0}, s), shifted(inner, {3.5 * s, 0, 0}, s)), comps)
                     .has_value())
        << "scale " << s;
  }
}

TEST(BemMeshValidate, DisjointAndTouchingAtASharedVertexAccepted) {
  Mesh m = join(icosphere(3), icosphere(3, 1.0, {2.001, 0, 0}));
  MeshReport rep = validate_and_orient(m);
  EXPECT_EQ(rep.components, 2u);
  // 50 spheres on a line, each box inside none of the others
  Mesh row = icosphere(1);
  for (int i = 1; i < 50; ++i) row = join(row, icosphere(1, 1.0, {2.5 * i, 0.1 * (i % 3), 0}));
  EXPECT_EQ(validate_and_orient(row).components, 50u);
  // two octahedra tip to tip: they share the vertex (1, 0, 0) (merged) and nothing else
  Mesh tips = join(octahedron_mesh(), shifted(octahedron_mesh(), {2, 0, 0}));
  rep = validate_and_orient(tips);
  EXPECT_EQ(rep.components, 2u);
  EXPECT_EQ(rep.removed_duplicates, 1u);
  // two boxes sharing an edge segment (no common vertex): they touch, refused
  const std::string msg = validation_error(join(box_mesh({0, 0, 0}, {1, 1, 1}), box_mesh({1, 1, 0.5}, {2, 2, 1.5})));
  EXPECT_NE(msg.find("two closed surfaces intersect"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cross or touch"), std::string::npos) << msg;
  // two boxes face to face, offset so that no vertex is shared: coplanar overlap, refused
  const std::string face = validation_error(join(box_mesh({0, 0, 0}, {1, 1, 1}), box_mesh({1, 0.5, 0.25}, {2, 1.5, 1.25})));
  EXPECT_NE(face.find("two closed surfaces intersect"), std::string::npos) << face;
  // the same boxes a hair apart: accepted
  Mesh apart = join(box_mesh({0, 0, 0}, {1, 1, 1}), box_mesh({1 + 1e-12, 0.5, 0.25}, {2, 1.5, 1.25}));
  EXPECT_EQ(validate_and_orient(apart).components, 2u);
}

TEST(BemMeshValidate, FlatAndSharpNeighboursAccepted) {
  // coplanar neighbours: a box whose faces are split into 4 triangles around their centres
  Mesh cube = box_mesh({0, 0, 0}, {1, 1, 1});
  cube.triangles.clear();
  const int quads[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& q : quads) {
    V3 c{0, 0, 0};
    for (int i : q)
      for (int k = 0; k < 3; ++k) c[k] += cube.vertices[static_cast<std::size_t>(i)][k] / 4;
    cube.vertices.push_back(c);
    const auto ci = static_cast<std::int32_t>(cube.vertices.size() - 1);
    for (int i = 0; i < 4; ++i) cube.triangles.push_back({q[i], q[(i + 1) % 4], ci});
  }
  ASSERT_EQ(cube.triangles.size(), 24u);
  MeshReport rep = validate_and_orient(cube);
  EXPECT_NEAR(rep.volume, 1.0, 1e-14);
  // the fan-triangulated quads of the test data and a very flat tetrahedron (dihedral angles
  // of a few 1e-6 rad between neighbours that do not overlap)
  Mesh fans = read_mesh(kData + "cube_quads.obj");
  EXPECT_NO_THROW(validate_and_orient(fans));
  Mesh flat;
  flat.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.3, 0.3, 3e-6}};
  flat.triangles = {{0, 2, 1}, {0, 1, 3}, {1, 2, 3}, {2, 0, 3}};
  EXPECT_NO_THROW(validate_and_orient(flat));
  // a thin needle: an ellipsoid with aspect ratio 1000
  Mesh needle = ellipsoid(3, {1000, 1, 1});
  EXPECT_NO_THROW(validate_and_orient(needle));
}

TEST(BemMeshValidate, LargeIcosphereAccepted) {
  // sanitizer builds run 10-50x slower: icosphere(5) there, icosphere(7) (327680 elements) here
  const int r = ELLIPTICA_SANITIZED_BUILD ? 5 : 7;
  Mesh m = icosphere(r, 3.0, {1, 2, 3});
  const MeshReport rep = validate_and_orient(m);
  EXPECT_EQ(rep.elements, 20u << (2 * r));
  EXPECT_EQ(rep.components, 1u);
  EXPECT_FALSE(rep.flipped);
  // and with one vertex pushed through the far side it is refused
  const V3 p = m.vertices[100], c{1, 2, 3};
  for (int k = 0; k < 3; ++k) m.vertices[100][k] = c[k] - 1.05 * (p[k] - c[k]);  // beyond the antipode
  EXPECT_NE(validation_error(m).find("the surface intersects itself"), std::string::npos);
}

TEST(BemMeshValidate, TinyCoordinatesDoNotUnderflowThePredicates) {
  // Regression (fuzz/corpus/mesh_validate/regress-tiny-coordinate): an icosahedron with one
  // vertex at z = 6.9e9 and one coordinate of 3.9e-299. Scaled by 2^-33, that coordinate became
  // subnormal and the products of the exact predicates underflowed: the all-pairs test reported
  // elements 0 and 5 as intersecting although their boxes are apart. predicate_coordinates() sets
  // such coordinates to 0.
  Mesh m;
  const double p = (1 + std::sqrt(5.0)) / 2;
  m.vertices = {{0, -1, -p}, {0, -1, 0.62420254124994745}, {0, 1, -p}, {0, 1, 6949403065.4972305},
                {-1, -0.007297007768554277, 0}, {-1, p, 0}, {1, -p, 0}, {1, p, 0},
                {3.8657337733169241e-299, -7.1875, -7.3125}, {p, 0, -1}, {-p, 0, 1}, {p, 0, 1}};
  m.triangles = {{0, 2, 8}, {0, 2, 9}, {0, 4, 6}, {0, 4, 8},  {0, 6, 9},  {1, 3, 10}, {1, 3, 11},
                 {1, 4, 6}, {1, 4, 10}, {1, 6, 11}, {2, 5, 7}, {2, 5, 8}, {2, 7, 9}, {3, 5, 7},
                 {3, 5, 10}, {3, 7, 11}, {4, 8, 10}, {5, 8, 10}, {6, 9, 11}, {7, 9, 11}};
  ASSERT_EQ(validation_error(m), "");
  const auto v = elliptica::bem::detail::predicate_coordinates(m);
  EXPECT_EQ(v[8][0], 0.0);
  for (std::size_t e = 0; e < m.num_elements(); ++e)
    for (std::size_t f = e + 1; f < m.num_elements(); ++f) {
      EXPECT_FALSE(triangles_intersect(v, m.triangles[e], m.triangles[f])) << e << ", " << f;
      EXPECT_FALSE(triangles_intersect(v, m.triangles[f], m.triangles[e])) << f << ", " << e;
    }
  // elements far below the size of the mesh are refused rather than decided wrongly
  const Mesh big = shifted(octahedron_mesh(), {4, 0, 0});
  const std::string msg = validation_error(join(big, shifted(octahedron_mesh(), {0, 0, 0}, 1e-50)));
  EXPECT_NE(msg.find("element 8 is too small for the mesh"), std::string::npos) << msg;
  EXPECT_EQ(validation_error(join(big, shifted(octahedron_mesh(), {0, 0, 0}, 1e-40))), "");
}

TEST(BemMeshValidate, IntersectionSearchIsDeterministicAcrossThreads) {
  // many intersecting pairs: the named pair must not depend on the thread count
  Mesh m = icosphere(4);
  for (int i = 1; i < 6; ++i) m = join(m, icosphere(4, 1.0, {0.3 * i, 0, 0}));
  const std::string ref = validation_error(m);
  ASSERT_NE(ref, "");
  const int saved = omp_get_max_threads();
  for (int t : {1, 2, 3}) {
    omp_set_num_threads(t);
    EXPECT_EQ(validation_error(m), ref) << t << " threads";
  }
  omp_set_num_threads(saved);
}

// =============================================================================================
// Files
// =============================================================================================

TEST_F(BemMeshFiles, ObjRoundTrip) {
  const Mesh m = ellipsoid(2, {1.1, 0.3, 2.7}, {0.1, 1e-7, -3});
  const std::string p = (dir_ / "sub.obj").string();
  write_mesh_obj(m, p);
  const Mesh r = read_mesh(p);
  EXPECT_EQ(r.triangles, m.triangles);
  EXPECT_EQ(r.vertices, m.vertices);  // bit-identical: shortest round-trip decimal output
  // no temporary files left behind
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u);
  write_mesh_obj(icosphere(0), p);  // overwrite
  EXPECT_EQ(read_mesh(p).num_elements(), 20u);
  EXPECT_THROW(write_mesh_obj(m, (dir_ / "no_such_dir" / "x.obj").string()), IOError);
}

TEST_F(BemMeshFiles, ObjQuadsSlashesNegativeIndices) {
  Mesh m = read_mesh(kData + "cube_quads.obj");
  EXPECT_EQ(m.num_elements(), 12u);
  EXPECT_EQ(m.vertices.size(), 8u);
  const MeshReport rep = validate_and_orient(m);
  EXPECT_FALSE(rep.flipped);
  EXPECT_NEAR(rep.volume, 1.0, 1e-14);
  EXPECT_NEAR(total_area(m), 6.0, 1e-14);
}

TEST_F(BemMeshFiles, ObjMalformed) {
  const std::string good = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
  EXPECT_EQ(read_mesh(write("ok.obj", good)).num_elements(), 1u);
  expect_throw_with<IOError>([&] { read_mesh(write("a.obj", "v 0 0 0\nv 1 0\n")); }, {"a.obj:2", "v x y z"});
  expect_throw_with<IOError>([&] { read_mesh(write("b.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n")); }, {"b.obj:4", "at least 3"});
  expect_throw_with<IOError>([&] { read_mesh(write("c.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n")); }, {"c.obj:4", "out of range"});
  expect_throw_with<IOError>([&] { read_mesh(write("d.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 -4\n")); }, {"d.obj:4", "out of range"});
  expect_throw_with<IOError>([&] { read_mesh(write("e.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n")); }, {"e.obj:4"});
  expect_throw_with<IOError>([&] { read_mesh(write("f.obj", "v 0 0 x\n")); }, {"f.obj:1"});
  // truncated files
  expect_throw_with<IOError>([&] { read_mesh(write("t1.obj", good.substr(0, good.size() - 3))); }, {"t1.obj:4"});
  expect_throw_with<IOError>([&] { read_mesh(write("t2.obj", good.substr(0, 13))); }, {"t2.obj:2"});
  // no faces
  EXPECT_THROW(read_mesh(write("g.obj", "v 0 0 0\n")), InvalidArgument);
  EXPECT_THROW(read_mesh(write("h.obj", "")), IOError);  // empty file
}

TEST_F(BemMeshFiles, OffCubeAndMalformed) {
  // plain OFF as CGAL writes it: header, counts, comments, quads (fan-triangulated), colours
  const std::string cube =
      "OFF\n# a unit cube\n8 6 12\n0 0 0\n1 0 0\n0 1 0\n1 1 0\n0 0 1\n1 0 1\n0 1 1\n1 1 1\n"
      "4 0 2 3 1\n4 4 5 7 6 255 0 0\n4 0 1 5 4\n4 2 6 7 3\n4 0 4 6 2\n4 1 3 7 5\n";
  Mesh m = read_mesh(write("cube.off", cube));
  EXPECT_EQ(m.num_elements(), 12u);
  const MeshReport rep = validate_and_orient(m);
  EXPECT_NEAR(rep.volume, 1.0, 1e-14);
  EXPECT_NEAR(total_area(m), 6.0, 1e-14);
  EXPECT_EQ(read_mesh(write("same_line.off", "OFF 3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")).num_elements(), 1u);
  expect_throw_with<IOError>([&] { read_mesh(write("a.off", "COFF\n3 1 0\n")); }, {"a.off:1", "'OFF'"});
  expect_throw_with<IOError>([&] { read_mesh(write("b.off", "OFF\n3 1 0\n0 0 0\n1 0\n")); }, {"b.off:4", "x y z"});
  expect_throw_with<IOError>([&] { read_mesh(write("c.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n")); },
                             {"c.off:6", "not in [0, 3)"});
  expect_throw_with<IOError>([&] { read_mesh(write("d.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1\n")); },
                             {"d.off:6", "lists only 2"});
  expect_throw_with<IOError>([&] { read_mesh(write("e.off", "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")); },
                             {"end of file", "face 1 of 2"});
  expect_throw_with<IOError>([&] { read_mesh(write("f.off", "OFF\n-3 1 0\n")); }, {"f.off:2", "counts"});
}

TEST_F(BemMeshFiles, DispatchErrors) {
  EXPECT_THROW(read_mesh(write("x.ply", "ply\n")), InvalidArgument);
  EXPECT_THROW(read_mesh(dir_.string()), IOError);  // a folder, not a file
  EXPECT_THROW(read_mesh(write("empty.obj", "")), IOError);
  EXPECT_THROW(read_mesh(write("empty.stl", "")), IOError);
  EXPECT_THROW(read_mesh(write("noext", "v 0 0 0\n")), InvalidArgument);
  EXPECT_THROW(read_mesh((dir_ / "missing.obj").string()), IOError);
  // the extension is case-insensitive
  EXPECT_EQ(read_mesh(write("UPPER.OBJ", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")).num_elements(), 1u);
}

TEST_F(BemMeshFiles, Gmsh22Ascii) {
  expect_octahedron(read_mesh(kData + "octahedron_v22.msh"));
}

TEST_F(BemMeshFiles, Gmsh41Ascii) {
  expect_octahedron(read_mesh(kData + "octahedron_v41.msh"));
}

TEST_F(BemMeshFiles, Gmsh22AsciiTruncatedAndMalformed) {
  const std::string good = slurp(kData + "octahedron_v22.msh");
  ASSERT_GT(good.size(), 100u);
  expect_prefixes_fail(*this, "t.msh", good, good.size() - 1, &BemMeshFiles::write);
  auto bad = [&](const std::string& from, const std::string& to, std::vector<std::string> parts) {
    std::string s = good;
    const auto at = s.find(from);
    ASSERT_NE(at, std::string::npos);
    s.replace(at, from.size(), to);
    expect_throw_with<IOError>([&] { read_mesh(write("bad.msh", s)); }, parts);
  };
  bad("2.2 0 8", "3.0 0 8", {"bad.msh:2", "unsupported MSH version"});
  bad("7 -1 0 0", "7 -1 0 zero", {"bad.msh:11", "x y z"});
  bad("42 0 0 -1", "1000 0 0 -1", {"line 15", "duplicate node tag 1000"});
  bad("8 2 2 1 1 7 55 42", "8 2 2 1 1 7 55 43", {"line 26", "undefined node tag 43"});
  bad("8 2 2 1 1 7 55 42", "8 2 2 1 1 7 55", {"bad.msh:26", "3 node tags"});
  bad("$EndElements", "$EndElement", {"bad.msh:30", "$EndElements"});
}

TEST_F(BemMeshFiles, Gmsh41AsciiTruncatedAndMalformed) {
  const std::string good = slurp(kData + "octahedron_v41.msh");
  expect_prefixes_fail(*this, "t.msh", good, good.size() - 1, &BemMeshFiles::write);
  std::string s = good;
  s.replace(s.find("3 6 3 1000"), 10, "3 7 3 1000");
  expect_throw_with<IOError>([&] { read_mesh(write("bad.msh", s)); }, {"bad.msh:", "nodes"});
}

TEST_F(BemMeshFiles, Gmsh22Binary) {
  const TaggedMesh t = octahedron_tagged();
  for (bool swap : {false, true}) {
    const std::string bytes = msh22_binary(t, swap);
    expect_octahedron(read_mesh(write("b22.msh", bytes)));
    expect_prefixes_fail(*this, "b22t.msh", bytes, bytes.size() - 1, &BemMeshFiles::write);
  }
  // a bad endianness marker names its byte offset (right after "$MeshFormat\n2.2 1 8\n")
  std::string s = msh22_binary(t, false);
  s[20] = 7;
  expect_throw_with<IOError>([&] { read_mesh(write("m.msh", s)); }, {"m.msh: byte 20", "endianness"});
  // unsupported data-size for 2.2
  s = msh22_binary(t, false);
  s.replace(s.find("2.2 1 8"), 7, "2.2 1 4");
  expect_throw_with<IOError>([&] { read_mesh(write("m.msh", s)); }, {"m.msh:2", "data-size"});
}

TEST_F(BemMeshFiles, Gmsh41Binary) {
  const TaggedMesh t = octahedron_tagged();
  for (int dsize : {8, 4})
    for (bool swap : {false, true}) {
      const std::string bytes = msh41_binary(t, swap, dsize);
      expect_octahedron(read_mesh(write("b41.msh", bytes)));
      expect_prefixes_fail(*this, "b41t.msh", bytes, bytes.size() - 1, &BemMeshFiles::write);
    }
  // an absurd node count in a binary header is reported as truncation, not attempted
  {
    std::string s = msh41_binary(t, false, 8);
    const std::size_t at = s.find("$Nodes\n") + 7 + 8;  // numNodes
    const std::uint64_t huge = 0x7fffffffffffffffull;
    std::memcpy(&s[at], &huge, 8);
    EXPECT_THROW(read_mesh(write("huge.msh", s)), IOError);
    s = msh41_binary(t, false, 8);
    const std::size_t blk = s.find("$Nodes\n") + 7 + 32 + 12;  // numNodesInBlock of block 1
    std::memcpy(&s[blk], &huge, 8);
    std::memcpy(&s[at], &huge, 8);
    EXPECT_THROW(read_mesh(write("huge.msh", s)), IOError);
  }
  // a truncated node block names the byte offset and what was expected
  const std::string bytes = msh41_binary(t, false, 8);
  const std::size_t cut = bytes.find("$Nodes\n") + 7 + 32 + 24;  // inside the first node block
  expect_throw_with<IOError>([&] { read_mesh(write("tr.msh", bytes.substr(0, cut))); }, {"tr.msh: byte", "truncated"});
}

TEST_F(BemMeshFiles, StlAscii) {
  const Mesh m = read_mesh(kData + "octahedron_ascii.stl");
  EXPECT_EQ(m.vertices.size(), 6u);  // 24 facet vertices merged to 6
  expect_octahedron(m);
  const std::string good = slurp(kData + "octahedron_ascii.stl");
  const std::size_t keep = good.rfind("endsolid") + 8;
  expect_prefixes_fail(*this, "t.stl", good, keep, &BemMeshFiles::write);
  std::string s = good;
  s.replace(s.find("vertex 0 1 0"), 12, "vertex 0 one 0");
  expect_throw_with<IOError>([&] { read_mesh(write("bad.stl", s)); }, {"bad.stl:5", "vertex coordinate"});
  s = good;
  s.replace(s.find("endloop"), 7, "endlop");
  expect_throw_with<IOError>([&] { read_mesh(write("bad.stl", s)); }, {"bad.stl:7", "'endloop'"});
  EXPECT_THROW(read_mesh(write("empty.stl", "solid nothing\nendsolid nothing\n")), InvalidArgument);
  // upper-case keywords, a quad facet, two solids in one file
  const std::string two =
      "SOLID a\nFACET NORMAL 0 0 1\nOUTER LOOP\nVERTEX 0 0 0\nVERTEX 1 0 0\nVERTEX 1 1 0\nVERTEX 0 1 0\n"
      "ENDLOOP\nENDFACET\nENDSOLID a\nsolid b\nfacet normal 0 0 1\nouter loop\nvertex 0 0 1\n"
      "vertex 1 0 1\nvertex 0 1 1\nendloop\nendfacet\nendsolid\n";
  const Mesh q = read_mesh(write("two.stl", two));
  EXPECT_EQ(q.num_elements(), 3u);
  EXPECT_EQ(q.vertices.size(), 7u);
}

TEST_F(BemMeshFiles, StlBinary) {
  const Mesh ref = icosphere(0, 1.0);
  // a binary file whose header starts with "solid" must still be read as binary
  for (const std::string header : {"binary stl written by the test", "solid but actually binary"}) {
    const std::string bytes = stl_binary(ref, header);
    ASSERT_EQ(bytes.size(), 84u + 50u * ref.num_elements());
    Mesh m = read_mesh(write("b.stl", bytes));
    EXPECT_EQ(m.num_elements(), ref.num_elements());
    EXPECT_EQ(m.vertices.size(), ref.vertices.size());  // coincident vertices merged
    const MeshReport rep = validate_and_orient(m);
    EXPECT_FALSE(rep.flipped);
    EXPECT_NEAR(rep.volume, signed_volume(ref), 1e-5);  // float precision
    expect_prefixes_fail(*this, "bt.stl", bytes, bytes.size(), &BemMeshFiles::write);
    // one byte too many is also a size mismatch
    expect_throw_with<IOError>([&] { read_mesh(write("bx.stl", bytes + "x")); }, {"bx.stl", "84 + 50"});
  }
}

TEST_F(BemMeshFiles, CorruptedBytesGiveLibraryErrorsOnly) {
  // Random byte corruption of every format: the reader either succeeds or throws an
  // elliptica::Error (IOError / InvalidArgument) -- never crashes, never std::bad_alloc etc.
  const TaggedMesh t = octahedron_tagged();
  const std::vector<std::pair<std::string, std::string>> files = {
      {"a.msh", slurp(kData + "octahedron_v22.msh")},
      {"b.msh", slurp(kData + "octahedron_v41.msh")},
      {"c.msh", msh22_binary(t, false)},
      {"d.msh", msh41_binary(t, false, 8)},
      {"e.msh", msh41_binary(t, true, 4)},
      {"f.stl", slurp(kData + "octahedron_ascii.stl")},
      {"g.stl", stl_binary(octahedron_mesh(), "solid header")},
      {"h.obj", slurp(kData + "cube_quads.obj")}};
  std::mt19937 gen(12345);
  for (const auto& [name, good] : files) {
    ASSERT_FALSE(good.empty()) << name;
    std::uniform_int_distribution<std::size_t> pos(0, good.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int trial = 0; trial < 60; ++trial) {
      std::string s = good;
      const int flips = 1 + trial % 4;
      for (int k = 0; k < flips; ++k) s[pos(gen)] = static_cast<char>(byte(gen));
      const std::string p = write(name, s);
      try {
        const Mesh m = read_mesh(p);
        EXPECT_FALSE(m.triangles.empty());
      } catch (const elliptica::Error&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << " trial " << trial << ": non-library exception " << e.what();
      }
    }
  }
}
