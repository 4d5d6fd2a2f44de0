/// @file mesh.cpp
/// Mesh geometry queries and sphere / ellipsoid generators.
#include "elliptica/bem/mesh.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <numbers>
#include <sstream>
#include <cmath>
#include <cstdint>
#include <string>
#include <limits>
#include <unordered_map>

#include "bem/mesh_intersect.hpp"
#include "bem/quadratic_element.hpp"
#include "bem/quadrature.hpp"
#include "elliptica/core/error.hpp"

namespace elliptica::bem {

namespace {

using Vec3 = std::array<double, 3>;

Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
double norm(const Vec3& a) { return std::sqrt(dot(a, a)); }

void check_element(const Mesh& m, std::size_t e, const char* fn) {
  if (!m.midside.empty() && m.midside.size() != m.triangles.size())
    throw InvalidArgument(std::string("Mesh::") + fn + ": midside has " + std::to_string(m.midside.size()) +
                          " entries for " + std::to_string(m.triangles.size()) +
                          " triangles (it must be empty or have one per triangle)");
  if (e >= m.triangles.size())
    throw InvalidArgument(std::string("Mesh::") + fn + ": element index " + std::to_string(e) +
                          " out of range (mesh has " + std::to_string(m.triangles.size()) +
                          " elements)");
  for (int j = 0; j < 3; ++j) {
    const auto v = m.triangles[e][j];
    if (v < 0 || static_cast<std::size_t>(v) >= m.vertices.size())
      throw InvalidArgument(std::string("Mesh::") + fn + ": element " + std::to_string(e) +
                            " has vertex index " + std::to_string(v) + " out of range (mesh has " +
                            std::to_string(m.vertices.size()) + " vertices)");
  }
}

Vec3 normalized(const Vec3& v) {
  const double n = norm(v);
  return {v[0] / n, v[1] / n, v[2] / n};
}

/// The key of the undirected edge (a, b): both indices in one 64-bit word, the lower first.
std::uint64_t edge_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(std::min(a, b)) << 32) | static_cast<std::uint64_t>(std::max(a, b));
}

/// "(a,b)": an edge in error messages.
std::string edge_str(std::int32_t a, std::int32_t b) {
  std::string s = "(";  // appended piecewise: GCC 12 warns (-Wrestrict, falsely) on "(" + std::string
  s += std::to_string(a);
  s += ',';
  s += std::to_string(b);
  s += ')';
  return s;
}

}  // namespace

Mesh refine(const Mesh& m);  // below

namespace {

/// Unit-sphere polyhedron refined `refinements` times: refine() (every triangle split in four
/// through its edge midpoints, shared midpoints created once per edge, orientation kept), the new
/// vertices projected to the unit sphere.
Mesh refine_on_unit_sphere(Mesh m, int refinements) {
  for (int r = 0; r < refinements; ++r) {
    const std::size_t old = m.vertices.size();
    m = refine(m);
    for (std::size_t v = old; v < m.vertices.size(); ++v) m.vertices[v] = normalized(m.vertices[v]);
  }
  return m;
}

/// Faces of a convex polyhedron inscribed in the unit sphere whose faces are the vertex triples at
/// mutual distance `edge` (all edges equal), each oriented outward (normal . centroid > 0).
void build_regular_faces(Mesh& m, double edge) {
  const std::size_t n = m.vertices.size();
  auto is_edge = [&](std::size_t i, std::size_t j) {
    return std::abs(norm(sub(m.vertices[i], m.vertices[j])) - edge) < 1e-9 * edge;
  };
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      if (!is_edge(i, j)) continue;
      for (std::size_t k = j + 1; k < n; ++k) {
        if (!is_edge(i, k) || !is_edge(j, k)) continue;
        std::array<std::int32_t, 3> t = {static_cast<std::int32_t>(i), static_cast<std::int32_t>(j),
                                         static_cast<std::int32_t>(k)};
        const Vec3 nrm = cross(sub(m.vertices[j], m.vertices[i]), sub(m.vertices[k], m.vertices[i]));
        const Vec3 c = {m.vertices[i][0] + m.vertices[j][0] + m.vertices[k][0],
                        m.vertices[i][1] + m.vertices[j][1] + m.vertices[k][1],
                        m.vertices[i][2] + m.vertices[j][2] + m.vertices[k][2]};
        if (dot(nrm, c) < 0) std::swap(t[1], t[2]);
        m.triangles.push_back(t);
      }
    }
}

void check_sphere_args(const char* fn, int refinements, double radius, const Vec3& center) {
  if (refinements < 0 || refinements > 10)
    throw InvalidArgument(std::string(fn) + ": refinements must be in [0, 10], got " +
                          std::to_string(refinements));
  if (!std::isfinite(radius) || !(radius > 0))
    throw InvalidArgument(std::string(fn) + ": radius must be finite and > 0, got " +
                          std::to_string(radius));
  for (double c : center)
    if (!std::isfinite(c)) throw InvalidArgument(std::string(fn) + ": center must be finite");
}

Mesh unit_icosphere(int refinements) {
  Mesh m;
  const double phi = (1.0 + std::sqrt(5.0)) / 2.0;
  // The 12 icosahedron vertices are the cyclic permutations of (0, +-1, +-phi).
  for (double s1 : {-1.0, 1.0})
    for (double s2 : {-1.0, 1.0}) {
      m.vertices.push_back(normalized({0.0, s1, s2 * phi}));
      m.vertices.push_back(normalized({s1, s2 * phi, 0.0}));
      m.vertices.push_back(normalized({s2 * phi, 0.0, s1}));
    }
  // Edge length of the unit-circumradius icosahedron: 2 / sqrt(phi^2 + 1) (the distance between
  // (0, 1, phi) and (0, -1, phi) after normalisation).
  build_regular_faces(m, 2.0 / std::sqrt(phi * phi + 1.0));
  return refine_on_unit_sphere(std::move(m), refinements);
}

void place(Mesh& m, const Vec3& scale, const Vec3& center) {
  for (auto& v : m.vertices)
    for (int d = 0; d < 3; ++d) v[d] = v[d] * scale[d] + center[d];
  for (auto& ms : m.midside)
    for (auto& v : ms)
      for (int d = 0; d < 3; ++d) v[d] = v[d] * scale[d] + center[d];
}

/// Midside nodes of a unit-sphere polyhedron: the edge midpoints projected onto the sphere.
void add_midside_on_unit_sphere(Mesh& m) {
  m.midside.resize(m.triangles.size());
  for (std::size_t e = 0; e < m.triangles.size(); ++e)
    for (int a = 0; a < 3; ++a) {
      const Vec3& p = m.vertices[static_cast<std::size_t>(m.triangles[e][a])];
      const Vec3& q = m.vertices[static_cast<std::size_t>(m.triangles[e][(a + 1) % 3])];
      m.midside[e][a] = normalized({p[0] + q[0], p[1] + q[1], p[2] + q[2]});
    }
}

void check_order(const char* fn, int order) {
  if (order != 1 && order != 2)
    throw InvalidArgument(std::string(fn) + ": order must be 1 (flat triangles) or 2 (curved 6-node triangles), got " +
                          std::to_string(order));
}

}  // namespace

std::array<double, 3> Mesh::centroid(std::size_t e) const {
  check_element(*this, e, "centroid");
  if (curved()) {
    constexpr double l = detail::kCollocationL;
    return detail::quadratic_element(*this, e).point(l, l, l);
  }
  const auto& t = triangles[e];
  const Vec3& a = vertices[static_cast<std::size_t>(t[0])];
  const Vec3& b = vertices[static_cast<std::size_t>(t[1])];
  const Vec3& c = vertices[static_cast<std::size_t>(t[2])];
  return {(a[0] + b[0] + c[0]) / 3.0, (a[1] + b[1] + c[1]) / 3.0, (a[2] + b[2] + c[2]) / 3.0};
}

std::array<double, 3> Mesh::normal(std::size_t e) const {
  check_element(*this, e, "normal");
  const auto& t = triangles[e];
  const Vec3& a = vertices[static_cast<std::size_t>(t[0])];
  Vec3 n = cross(sub(vertices[static_cast<std::size_t>(t[1])], a), sub(vertices[static_cast<std::size_t>(t[2])], a));
  if (curved() && norm(n) > 0) {
    constexpr double l = detail::kCollocationL;
    Vec3 y;
    detail::quadratic_element(*this, e).eval(l, l, l, y, n);
  }
  const double len = norm(n);
  if (!(len > 0))
    throw InvalidArgument("Mesh::normal: element " + std::to_string(e) +
                          " is degenerate (zero area), its normal is undefined");
  return {n[0] / len, n[1] / len, n[2] / len};
}

double Mesh::area(std::size_t e) const {
  check_element(*this, e, "area");
  if (curved()) {
    // conical product rule: s = u, t = v (1 - u), ds dt = (1 - u) du dv
    static const auto gl = [] {
      std::pair<std::vector<double>, std::vector<double>> r;
      quadrature::gauss_legendre01(12, r.first, r.second);
      return r;
    }();
    const auto q = detail::quadratic_element(*this, e);
    double A = 0;
    Vec3 y, nj;
    for (std::size_t i = 0; i < gl.first.size(); ++i)
      for (std::size_t j = 0; j < gl.first.size(); ++j) {
        const double s = gl.first[i], t = gl.first[j] * (1 - s);
        q.eval(1 - s - t, s, t, y, nj);
        A += gl.second[i] * gl.second[j] * (1 - s) * norm(nj);
      }
    return A;
  }
  const auto& t = triangles[e];
  const Vec3& a = vertices[static_cast<std::size_t>(t[0])];
  return 0.5 * norm(cross(sub(vertices[static_cast<std::size_t>(t[1])], a),
                          sub(vertices[static_cast<std::size_t>(t[2])], a)));
}

void Mesh::flip(std::size_t e) {
  std::swap(triangles[e][1], triangles[e][2]);
  if (e < midside.size()) std::swap(midside[e][0], midside[e][2]);
}

double Mesh::max_edge() const {
  double h = 0.0;
  for (std::size_t e = 0; e < triangles.size(); ++e) {
    check_element(*this, e, "max_edge");
    const auto& t = triangles[e];
    for (int j = 0; j < 3; ++j) {
      const Vec3& p = vertices[static_cast<std::size_t>(t[j])];
      const Vec3& q = vertices[static_cast<std::size_t>(t[(j + 1) % 3])];
      h = std::max(h, norm(sub(p, q)));
    }
  }
  return h;
}

Mesh icosphere(int refinements, double radius, std::array<double, 3> center, int order) {
  check_sphere_args("icosphere", refinements, radius, center);
  check_order("icosphere", order);
  Mesh m = unit_icosphere(refinements);
  if (order == 2) add_midside_on_unit_sphere(m);
  place(m, {radius, radius, radius}, center);
  return m;
}

Mesh octasphere(int refinements, double radius, std::array<double, 3> center, int order) {
  check_sphere_args("octasphere", refinements, radius, center);
  check_order("octasphere", order);
  Mesh m;
  for (int d = 0; d < 3; ++d)
    for (double s : {1.0, -1.0}) {
      Vec3 v = {0.0, 0.0, 0.0};
      v[d] = s;
      m.vertices.push_back(v);
    }
  build_regular_faces(m, std::sqrt(2.0));
  m = refine_on_unit_sphere(std::move(m), refinements);
  if (order == 2) add_midside_on_unit_sphere(m);
  place(m, {radius, radius, radius}, center);
  return m;
}

Mesh ellipsoid(int refinements, std::array<double, 3> semi_axes, std::array<double, 3> center, int order) {
  check_sphere_args("ellipsoid", refinements, 1.0, center);
  check_order("ellipsoid", order);
  for (double a : semi_axes)
    if (!std::isfinite(a) || !(a > 0))
      throw InvalidArgument("ellipsoid: semi-axes must be finite and > 0, got " +
                            std::to_string(a));
  Mesh m = unit_icosphere(refinements);
  if (order == 2) add_midside_on_unit_sphere(m);
  // A diagonal scaling with positive factors has positive determinant: orientation is kept.
  place(m, semi_axes, center);
  return m;
}

Mesh curve_by_vertex_normals(const Mesh& m, double crease_degrees) {
  if (m.curved()) throw InvalidArgument("curve_by_vertex_normals: the mesh is already curved");
  if (m.triangles.empty()) throw InvalidArgument("curve_by_vertex_normals: the mesh has no triangles");
  if (!(crease_degrees > 0 && crease_degrees <= 180))
    throw InvalidArgument("curve_by_vertex_normals: crease_degrees must be in (0, 180], got " + std::to_string(crease_degrees));
  const std::size_t ne = m.triangles.size(), nv = m.vertices.size();
  const double cos_crease = std::cos(crease_degrees * std::numbers::pi / 180);
  std::vector<Vec3> fn(ne), vn(nv, Vec3{0, 0, 0});
  for (std::size_t e = 0; e < ne; ++e) {
    check_element(m, e, "curve_by_vertex_normals");
    fn[e] = m.normal(e);  // throws on a zero-area triangle
    const auto& t = m.triangles[e];
    for (int a = 0; a < 3; ++a) {  // angle weights (Thurmer & Wuthrich)
      const Vec3& p = m.vertices[static_cast<std::size_t>(t[a])];
      const Vec3 u = sub(m.vertices[static_cast<std::size_t>(t[(a + 1) % 3])], p);
      const Vec3 w = sub(m.vertices[static_cast<std::size_t>(t[(a + 2) % 3])], p);
      const double ang = std::atan2(norm(cross(u, w)), dot(u, w));
      for (int d = 0; d < 3; ++d) vn[static_cast<std::size_t>(t[a])][d] += ang * fn[e][d];
    }
  }
  for (auto& n : vn) {
    const double l = norm(n);
    if (l > 0) n = {n[0] / l, n[1] / l, n[2] / l};
  }
  // sharp vertices: an adjacent face's normal more than the crease angle from the vertex normal
  std::vector<char> sharp(nv, 0);
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> edge_faces;
  const auto key = edge_key;
  for (std::size_t e = 0; e < ne; ++e)
    for (int a = 0; a < 3; ++a) {
      const auto v = static_cast<std::size_t>(m.triangles[e][a]);
      if (dot(fn[e], vn[v]) < cos_crease) sharp[v] = 1;
      edge_faces[key(m.triangles[e][a], m.triangles[e][(a + 1) % 3])].push_back(e);
    }
  Mesh c = m;
  c.midside.resize(ne);
  for (std::size_t e = 0; e < ne; ++e)
    for (int a = 0; a < 3; ++a) {
      const auto ia = m.triangles[e][a], ib = m.triangles[e][(a + 1) % 3];
      const Vec3& pa = m.vertices[static_cast<std::size_t>(ia)];
      const Vec3& pb = m.vertices[static_cast<std::size_t>(ib)];
      Vec3 mid = {0.5 * (pa[0] + pb[0]), 0.5 * (pa[1] + pb[1]), 0.5 * (pa[2] + pb[2])};
      bool straight = sharp[static_cast<std::size_t>(ia)] || sharp[static_cast<std::size_t>(ib)];
      for (std::size_t f : edge_faces[key(ia, ib)]) straight = straight || dot(fn[e], fn[f]) < cos_crease;
      if (!straight) {
        const Vec3& na = vn[static_cast<std::size_t>(ia)];
        const Vec3& nb = vn[static_cast<std::size_t>(ib)];
        const double wab = dot(sub(pb, pa), na), wba = dot(sub(pa, pb), nb);
        for (int d = 0; d < 3; ++d) mid[d] -= (wab * na[d] + wba * nb[d]) / 8;
      }
      c.midside[e][a] = mid;
    }
  return c;
}

Mesh refine(const Mesh& m) {
  const std::size_t ne = m.triangles.size();
  for (std::size_t e = 0; e < ne; ++e) check_element(m, e, "refine");
  Mesh r;
  r.vertices = m.vertices;
  std::unordered_map<std::uint64_t, std::int32_t> edge_vertex;
  edge_vertex.reserve(2 * ne);
  auto new_vertex = [&](std::size_t e, int a) -> std::int32_t {
    const auto ia = m.triangles[e][a], ib = m.triangles[e][(a + 1) % 3];
    const std::uint64_t k = edge_key(ia, ib);
    const auto it = edge_vertex.find(k);
    if (it != edge_vertex.end()) return it->second;
    if (r.vertices.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument("refine: the refined mesh would have more than 2^31 - 1 vertices");
    const Vec3& pa = m.vertices[static_cast<std::size_t>(ia)];
    const Vec3& pb = m.vertices[static_cast<std::size_t>(ib)];
    // the quadratic edge curve at its middle is the midside node itself
    r.vertices.push_back(m.curved() ? m.midside[e][a] : Vec3{0.5 * (pa[0] + pb[0]), 0.5 * (pa[1] + pb[1]), 0.5 * (pa[2] + pb[2])});
    const auto idx = static_cast<std::int32_t>(r.vertices.size() - 1);
    edge_vertex.emplace(k, idx);
    return idx;
  };
  r.triangles.reserve(4 * ne);
  std::unordered_map<std::uint64_t, std::array<Vec3, 2>> edge_nodes;  // curved: nodes at 1/4, 3/4 of each edge
  if (m.curved()) r.midside.reserve(4 * ne);
  for (std::size_t e = 0; e < ne; ++e) {
    const auto& t = m.triangles[e];
    const std::int32_t ab = new_vertex(e, 0), bc = new_vertex(e, 1), ca = new_vertex(e, 2);
    r.triangles.push_back({t[0], ab, ca});
    r.triangles.push_back({t[1], bc, ab});
    r.triangles.push_back({t[2], ca, bc});
    r.triangles.push_back({ab, bc, ca});
    if (!m.curved()) continue;
    const auto E = detail::quadratic_element(m, e);
    // the points of parent edge a at tau = 1/4 or 3/4 (from corner a): computed once per edge
    // (from its lower vertex index) and shared, so that its two elements get bit-identical nodes
    auto on_edge = [&](int a, double tau) {
      const auto ia = t[a], ib = t[(a + 1) % 3];
      const bool fwd = ia < ib;
      const std::uint64_t k = edge_key(ia, ib);
      auto it = edge_nodes.find(k);
      if (it == edge_nodes.end()) {
        const Vec3& p = E.X[static_cast<std::size_t>(fwd ? a : (a + 1) % 3)];
        const Vec3& q = E.X[static_cast<std::size_t>(fwd ? (a + 1) % 3 : a)];
        const Vec3& mm = E.X[static_cast<std::size_t>(3 + a)];
        std::array<Vec3, 2> y;
        for (int j = 0; j < 2; ++j) {
          const double u = j == 0 ? 0.25 : 0.75;  // from p
          const double np = (1 - u) * (1 - 2 * u), nm = 4 * u * (1 - u), nq = u * (2 * u - 1);
          for (int d = 0; d < 3; ++d) y[static_cast<std::size_t>(j)][d] = np * p[d] + nm * mm[d] + nq * q[d];
        }
        it = edge_nodes.emplace(k, y).first;
      }
      const double u = fwd ? tau : 1 - tau;
      return it->second[u < 0.5 ? 0 : 1];
    };
    auto inner = [&](double l0, double l1, double l2) { return E.point(l0, l1, l2); };
    r.midside.push_back({on_edge(0, 0.25), inner(0.5, 0.25, 0.25), on_edge(2, 0.75)});
    r.midside.push_back({on_edge(1, 0.25), inner(0.25, 0.5, 0.25), on_edge(0, 0.75)});
    r.midside.push_back({on_edge(2, 0.25), inner(0.25, 0.25, 0.5), on_edge(1, 0.75)});
    r.midside.push_back({inner(0.25, 0.5, 0.25), inner(0.25, 0.25, 0.5), inner(0.5, 0.25, 0.25)});
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Loop subdivision limit surface
// ---------------------------------------------------------------------------------------------

namespace {

/// Output size limit of loop_subdivision_surface() (elements; about 130 bytes each).
constexpr std::uint64_t kLoopMaxElements = 50'000'000;
static_assert(3 * kLoopMaxElements < std::numeric_limits<std::uint32_t>::max(),
              "half-edge ids of the finest level must fit in 32 bits");

/// One level of Loop subdivision: positions, triangles and, per half-edge h = 3 e + j (the edge
/// t[e][j] -> t[e][(j+1)%3]), the opposite half-edge twin[h] of the neighbouring triangle.
struct LoopLevel {
  std::vector<Vec3> p;
  std::vector<std::array<std::int32_t, 3>> t;
  std::vector<std::uint32_t> twin;
};

/// Loop's even-vertex weight beta(n) and the limit weight chi(n) = 1 / (3 / (8 beta) + n) per
/// valence n (index n of the tables; n = 0, an unused vertex, keeps its position).
struct LoopWeights {
  std::vector<double> beta, chi;
  explicit LoopWeights(std::size_t max_valence) : beta(max_valence + 1, 0.0), chi(max_valence + 1, 0.0) {
    for (std::size_t n = 1; n <= max_valence; ++n) {
      const double dn = static_cast<double>(n);
      const double c = 3.0 / 8.0 + 0.25 * std::cos(2 * std::numbers::pi / dn);
      beta[n] = (5.0 / 8.0 - c * c) / dn;
      chi[n] = 1.0 / (3.0 / (8.0 * beta[n]) + dn);
    }
  }
};

/// (1 - n w) v + w s: the even and the limit masks (s: the sum of the n neighbours).
Vec3 ring_mask(const Vec3& v, const Vec3& s, std::int32_t n, double w) {
  const double c = 1.0 - static_cast<double>(n) * w;
  return {c * v[0] + w * s[0], c * v[1] + w * s[1], c * v[2] + w * s[2]};
}

/// Valence and neighbour sum of every vertex: on a closed, consistently oriented surface every
/// neighbour b of a is met exactly once as a directed edge a -> b.
void loop_rings(const LoopLevel& L, std::vector<std::int32_t>& n, std::vector<Vec3>& s) {
  n.assign(L.p.size(), 0);
  s.assign(L.p.size(), Vec3{0, 0, 0});
  for (const auto& t : L.t)
    for (int j = 0; j < 3; ++j) {
      const auto a = static_cast<std::size_t>(t[j]);
      const Vec3& b = L.p[static_cast<std::size_t>(t[(j + 1) % 3])];
      ++n[a];
      for (int d = 0; d < 3; ++d) s[a][d] += b[d];
    }
}

/// The odd vertex of the edge of half-edge h: 3/8 (a + b) + 1/8 (c + d), evaluated from the lower
/// of h and its twin, so that both half-edges give bit-identical points.
Vec3 loop_odd(const LoopLevel& L, std::uint32_t h) {
  h = std::min(h, L.twin[h]);
  const std::uint32_t g = L.twin[h];
  const auto& te = L.t[h / 3];
  const std::uint32_t j = h % 3;
  const Vec3& a = L.p[static_cast<std::size_t>(te[j])];
  const Vec3& b = L.p[static_cast<std::size_t>(te[(j + 1) % 3])];
  const Vec3& c = L.p[static_cast<std::size_t>(te[(j + 2) % 3])];
  const Vec3& d = L.p[static_cast<std::size_t>(L.t[g / 3][(g % 3 + 2) % 3])];
  Vec3 r;
  for (int k = 0; k < 3; ++k) r[k] = 0.375 * (a[k] + b[k]) + 0.125 * (c[k] + d[k]);
  return r;
}

/// One Loop step: the topology of refine() (children (t0, ab, ca), (t1, bc, ab), (t2, ca, bc),
/// (ab, bc, ca); new vertices numbered in the order of their edges' first half-edges) with Loop's
/// positions; the children's twins follow from the parents' (no search).
LoopLevel loop_step(const LoopLevel& L, const std::vector<std::int32_t>& n, const std::vector<Vec3>& s,
                    const LoopWeights& w) {
  const std::size_t nv = L.p.size(), nt = L.t.size();
  std::vector<std::int32_t> odd(3 * nt);
  std::int32_t next = static_cast<std::int32_t>(nv);
  for (std::uint32_t h = 0; h < 3 * nt; ++h) odd[h] = L.twin[h] > h ? next++ : odd[L.twin[h]];
  LoopLevel R;
  R.p.resize(static_cast<std::size_t>(next));
  for (std::size_t v = 0; v < nv; ++v)
    R.p[v] = n[v] > 0 ? ring_mask(L.p[v], s[v], n[v], w.beta[static_cast<std::size_t>(n[v])]) : L.p[v];
  for (std::uint32_t h = 0; h < 3 * nt; ++h)
    if (L.twin[h] > h) R.p[static_cast<std::size_t>(odd[h])] = loop_odd(L, h);
  R.t.resize(4 * nt);
  R.twin.resize(12 * nt);
  auto child_half = [](std::size_t e, std::uint32_t c, std::uint32_t k) {
    return static_cast<std::uint32_t>(3 * (4 * e + c) + k);
  };
  for (std::size_t e = 0; e < nt; ++e) {
    const auto& t = L.t[e];
    const std::int32_t x = odd[3 * e], y = odd[3 * e + 1], z = odd[3 * e + 2];
    R.t[4 * e] = {t[0], x, z};
    R.t[4 * e + 1] = {t[1], y, x};
    R.t[4 * e + 2] = {t[2], z, y};
    R.t[4 * e + 3] = {x, y, z};
    for (std::uint32_t j = 0; j < 3; ++j) {
      // inner edges: edge 1 of corner child j against edge (j + 2) % 3 of the middle child
      R.twin[child_half(e, j, 1)] = child_half(e, 3, (j + 2) % 3);
      R.twin[child_half(e, 3, (j + 2) % 3)] = child_half(e, j, 1);
      // the halves of parent edge j (twin: edge k of element f, traversed the other way):
      // t_j -> mid is edge 0 of child j, its twin mid -> t_j edge 2 of f's child (k + 1) % 3;
      // mid -> t_{j+1} is edge 2 of child (j + 1) % 3, its twin edge 0 of f's child k
      const std::uint32_t g = L.twin[3 * e + j], k = g % 3;
      const std::size_t f = g / 3;
      R.twin[child_half(e, j, 0)] = child_half(f, (k + 1) % 3, 2);
      R.twin[child_half(e, (j + 1) % 3, 2)] = child_half(f, k, 0);
    }
  }
  return R;
}

/// The control mesh as level 0 with its twins, checked: closed, edge-manifold, consistently
/// oriented, every vertex one fan of at least 3 triangles.
LoopLevel loop_control(const Mesh& m) {
  const char* fn = "loop_subdivision_surface: ";
  const std::size_t ne = m.triangles.size(), nv = m.vertices.size();
  for (std::size_t e = 0; e < ne; ++e) {
    check_element(m, e, "loop_subdivision_surface");
    const auto& t = m.triangles[e];
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
      throw InvalidArgument(std::string(fn) + "element " + std::to_string(e) + " has a repeated vertex index (" +
                            std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " + std::to_string(t[2]) + ")");
  }
  for (std::size_t v = 0; v < nv; ++v)
    for (double x : m.vertices[v])
      if (!std::isfinite(x))
        throw InvalidArgument(std::string(fn) + "vertex " + std::to_string(v) + " has a non-finite coordinate");
  LoopLevel L;
  L.p = m.vertices;
  L.t = m.triangles;
  L.twin.resize(3 * ne);
  // the 3 ne half-edges sorted by undirected edge (then by id): each edge must hold exactly two,
  // in opposite directions
  std::vector<std::pair<std::uint64_t, std::uint32_t>> recs(3 * ne);
  for (std::uint32_t h = 0; h < 3 * ne; ++h) recs[h] = {edge_key(L.t[h / 3][h % 3], L.t[h / 3][(h % 3 + 1) % 3]), h};
  std::sort(recs.begin(), recs.end());
  auto from = [&](std::uint32_t h) { return L.t[h / 3][h % 3]; };
  auto to = [&](std::uint32_t h) { return L.t[h / 3][(h % 3 + 1) % 3]; };
  for (std::size_t i = 0; i < recs.size();) {
    std::size_t k = i;
    while (k < recs.size() && recs[k].first == recs[i].first) ++k;
    const std::uint32_t h = recs[i].second;
    const std::string edge = "edge " + edge_str(from(h), to(h)) + " of element " + std::to_string(h / 3);
    if (k - i == 1)
      throw InvalidArgument(std::string(fn) + "the mesh is not closed: " + edge +
                            " has no neighbour (Loop subdivision needs a closed surface)");
    if (k - i > 2) {
      std::string list;
      for (std::size_t r = i; r < k; ++r) list += (list.empty() ? "" : ", ") + std::to_string(recs[r].second / 3);
      throw InvalidArgument(std::string(fn) + "non-manifold " + edge + " is shared by " + std::to_string(k - i) +
                            " elements (" + list + ")");
    }
    const std::uint32_t g = recs[i + 1].second;
    if (from(h) == from(g))
      throw InvalidArgument(std::string(fn) + "the mesh is not consistently oriented: " + edge +
                            " is traversed in the same direction by element " + std::to_string(g / 3) +
                            " (orient it with validate_and_orient() first)");
    L.twin[h] = g;
    L.twin[g] = h;
    i = k;
  }
  recs = {};
  // vertex fans: the outgoing half-edges of v are one cycle of h -> twin(previous half-edge of h)
  std::vector<std::int32_t> corners(nv, 0);
  std::vector<std::uint32_t> first(nv, 0);
  for (std::uint32_t h = 3 * static_cast<std::uint32_t>(ne); h-- > 0;) {
    const auto v = static_cast<std::size_t>(from(h));
    ++corners[v];
    first[v] = h;
  }
  for (std::size_t v = 0; v < nv; ++v) {
    if (corners[v] == 0) continue;
    std::int32_t fan = 0;
    std::uint32_t h = first[v];
    do {
      ++fan;
      h = L.twin[3 * (h / 3) + (h % 3 + 2) % 3];
    } while (h != first[v]);
    if (fan != corners[v])
      throw InvalidArgument(std::string(fn) + "vertex " + std::to_string(v) + " is not a manifold vertex: its " +
                            std::to_string(corners[v]) + " elements form more than one fan (surfaces touching at a "
                            "point); Loop subdivision needs a 2-manifold surface");
    if (fan < 3)
      throw InvalidArgument(std::string(fn) + "vertex " + std::to_string(v) + " has only " + std::to_string(fan) +
                            " elements (two triangles on the same vertices)");
  }
  return L;
}

}  // namespace

Mesh loop_subdivision_surface(const Mesh& control, int levels) {
  const char* fn = "loop_subdivision_surface: ";
  if (control.curved())
    throw InvalidArgument(std::string(fn) + "the control mesh is curved (6-node elements); it must be flat");
  if (control.triangles.empty()) throw InvalidArgument(std::string(fn) + "the control mesh has no triangles");
  if (levels < 0 || levels > 8)
    throw InvalidArgument(std::string(fn) + "levels must be in [0, 8], got " + std::to_string(levels));
  // sizes of the result before anything is allocated: T_{l+1} = 4 T_l, V_{l+1} = V_l + E_l,
  // E_{l+1} = 2 E_l + 3 T_l (E_0 = 3 T / 2 on a closed surface)
  {
    std::uint64_t t = control.triangles.size(), v = control.vertices.size(), e = 3 * t / 2;
    for (int l = 0; l < levels; ++l) {
      v += e;
      e = 2 * e + 3 * t;
      t *= 4;
    }
    if (t > kLoopMaxElements)
      throw InvalidArgument(std::string(fn) + std::to_string(control.triangles.size()) + " triangles at " +
                            std::to_string(levels) + " levels would give " + std::to_string(t) +
                            " elements, more than the limit of " + std::to_string(kLoopMaxElements) +
                            " (about 130 bytes each); use fewer levels");
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument(std::string(fn) + "the result would have more than 2^31 - 1 vertices");
  }
  LoopLevel L = loop_control(control);
  std::vector<std::int32_t> n;
  std::vector<Vec3> s;
  loop_rings(L, n, s);
  const LoopWeights w(static_cast<std::size_t>(std::max(6, *std::max_element(n.begin(), n.end()))));
  for (int l = 0; l < levels; ++l) {
    L = loop_step(L, n, s, w);
    loop_rings(L, n, s);
  }
  // corners: limit positions of the level-`levels` vertices
  Mesh out;
  out.vertices.resize(L.p.size());
  for (std::size_t v = 0; v < L.p.size(); ++v)
    out.vertices[v] = n[v] > 0 ? ring_mask(L.p[v], s[v], n[v], w.chi[static_cast<std::size_t>(n[v])]) : L.p[v];
  // midside nodes: the limit position of the edge's odd vertex one step further, which is
  // regular (valence 6); its neighbours there are the even updates of the edge's ends and the
  // odd vertices of the other two edges of both its triangles
  const std::size_t nt = L.t.size();
  out.midside.resize(nt);
  const double chi6 = w.chi[6];
  for (std::uint32_t h = 0; h < 3 * nt; ++h) {
    const std::uint32_t g = L.twin[h];
    if (g < h) continue;
    const std::uint32_t e = h / 3, j = h % 3, f = g / 3, k = g % 3;
    const auto a = static_cast<std::size_t>(L.t[e][j]), b = static_cast<std::size_t>(L.t[e][(j + 1) % 3]);
    const std::array<Vec3, 6> ring = {ring_mask(L.p[a], s[a], n[a], w.beta[static_cast<std::size_t>(n[a])]),
                                      ring_mask(L.p[b], s[b], n[b], w.beta[static_cast<std::size_t>(n[b])]),
                                      loop_odd(L, 3 * e + (j + 1) % 3), loop_odd(L, 3 * e + (j + 2) % 3),
                                      loop_odd(L, 3 * f + (k + 1) % 3), loop_odd(L, 3 * f + (k + 2) % 3)};
    Vec3 sum = {0, 0, 0};
    for (const auto& r : ring)
      for (int d = 0; d < 3; ++d) sum[d] += r[d];
    const Vec3 mid = ring_mask(loop_odd(L, h), sum, 6, chi6);
    out.midside[e][j] = mid;
    out.midside[f][k] = mid;
  }
  out.triangles = std::move(L.t);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

namespace {

struct CoordKey {
  std::array<std::uint64_t, 3> bits;
  bool operator<(const CoordKey& o) const { return bits < o.bits; }
};

CoordKey coord_key(const Vec3& v) {
  CoordKey k{};
  for (int d = 0; d < 3; ++d) {
    const double x = v[d] + 0.0;  // -0.0 -> +0.0
    std::memcpy(&k.bits[d], &x, sizeof x);
  }
  return k;
}

}  // namespace

MeshReport validate_and_orient(Mesh& m) {
  MeshReport rep;
  const std::size_t ne = m.triangles.size();
  if (ne == 0) throw InvalidArgument("validate_and_orient: mesh has no elements");
  const std::size_t nv0 = m.vertices.size();
  for (std::size_t v = 0; v < nv0; ++v)
    for (double x : m.vertices[v])
      if (!std::isfinite(x))
        throw InvalidArgument("validate_and_orient: vertex " + std::to_string(v) +
                              " has a non-finite coordinate");
  for (std::size_t e = 0; e < ne; ++e) {
    const auto& t = m.triangles[e];
    for (int j = 0; j < 3; ++j)
      if (t[j] < 0 || static_cast<std::size_t>(t[j]) >= nv0)
        throw InvalidArgument("validate_and_orient: element " + std::to_string(e) +
                              " has vertex index " + std::to_string(t[j]) +
                              " out of range [0, " + std::to_string(nv0) + ")");
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
      throw InvalidArgument("validate_and_orient: element " + std::to_string(e) +
                            " is degenerate: repeated vertex index (" + std::to_string(t[0]) + ", " +
                            std::to_string(t[1]) + ", " + std::to_string(t[2]) + ")");
  }
  if (m.curved()) {
    if (m.midside.size() != ne)
      throw InvalidArgument("validate_and_orient: midside has " + std::to_string(m.midside.size()) + " entries for " +
                            std::to_string(ne) + " triangles (it must be empty or have one per triangle)");
    for (std::size_t e = 0; e < ne; ++e) {
      for (const auto& v : m.midside[e])
        for (double x : v)
          if (!std::isfinite(x))
            throw InvalidArgument("validate_and_orient: element " + std::to_string(e) +
                                  " has a non-finite midside node coordinate");
      // the quadratic map must not fold: its normal agrees with the chord triangle's at the
      // corners, the edge midpoints and the centroid (a midside node pulled far off its edge
      // inverts the element near a corner)
      const auto& t = m.triangles[e];
      const Vec3& a = m.vertices[static_cast<std::size_t>(t[0])];
      const Vec3 nf = cross(sub(m.vertices[static_cast<std::size_t>(t[1])], a), sub(m.vertices[static_cast<std::size_t>(t[2])], a));
      const auto q = detail::quadratic_element(m, e);
      static constexpr double pts[7][3] = {{1, 0, 0},     {0, 1, 0},     {0, 0, 1},          {0.5, 0.5, 0},
                                           {0, 0.5, 0.5}, {0.5, 0, 0.5}, {1. / 3, 1. / 3, 1. / 3}};
      for (const auto& l : pts) {
        Vec3 y, nj;
        q.eval(l[0], l[1], l[2], y, nj);
        if (!(dot(nj, nf) > 0))
          throw InvalidArgument("validate_and_orient: curved element " + std::to_string(e) +
                                " is folded (its quadratic map inverts: a midside node lies too far from its edge)");
      }
    }
  }

  // (1) merge bit-identical vertices, drop unused ones.
  {
    // canon[v]: the lowest-numbered vertex with the same coordinates (sorted keys, O(n log n))
    std::vector<std::pair<CoordKey, std::int32_t>> keys(nv0);
    for (std::size_t v = 0; v < nv0; ++v) keys[v] = {coord_key(m.vertices[v]), static_cast<std::int32_t>(v)};
    std::sort(keys.begin(), keys.end(), [](const auto& x, const auto& y) {
      return x.first.bits != y.first.bits ? x.first.bits < y.first.bits : x.second < y.second;
    });
    std::vector<std::int32_t> canon(nv0);
    for (std::size_t i = 0, g = 0; i < nv0; ++i) {
      if (keys[i].first.bits != keys[g].first.bits) g = i;
      canon[static_cast<std::size_t>(keys[i].second)] = keys[g].second;
      if (g != i) ++rep.removed_duplicates;
    }
    std::vector<char> used(nv0, 0);
    for (const auto& t : m.triangles)
      for (auto v : t) used[static_cast<std::size_t>(canon[static_cast<std::size_t>(v)])] = 1;
    std::vector<std::int32_t> newidx(nv0, -1);
    std::vector<Vec3> verts;
    verts.reserve(nv0);
    for (std::size_t v = 0; v < nv0; ++v) {
      if (canon[v] != static_cast<std::int32_t>(v)) continue;
      if (!used[v]) {
        ++rep.removed_unused;
        continue;
      }
      newidx[v] = static_cast<std::int32_t>(verts.size());
      verts.push_back(m.vertices[v]);
    }
    if (verts.size() != nv0) {
      for (auto& t : m.triangles)
        for (auto& v : t)
          v = newidx[static_cast<std::size_t>(canon[static_cast<std::size_t>(v)])];
      m.vertices = std::move(verts);
    }
  }
  rep.elements = ne;
  rep.vertices = m.vertices.size();

  // (2) per-element checks.
  double amax = 0;  // largest |coordinate|
  for (const auto& p : m.vertices)
    for (double x : p) amax = std::max(amax, std::abs(x));
  rep.min_area = std::numeric_limits<double>::infinity();
  for (std::size_t e = 0; e < ne; ++e) {
    const auto& t = m.triangles[e];
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2])
      throw InvalidArgument("validate_and_orient: element " + std::to_string(e) +
                            " is degenerate: two of its vertices have identical coordinates");
    double h = 0.0;
    for (int j = 0; j < 3; ++j)
      h = std::max(h, norm(sub(m.vertices[static_cast<std::size_t>(t[j])],
                               m.vertices[static_cast<std::size_t>(t[(j + 1) % 3])])));
    const double a = m.area(e);
    if (!(a > 1e-10 * h * h))
      throw InvalidArgument("validate_and_orient: element " + std::to_string(e) +
                            " is degenerate: area " + std::to_string(a) +
                            " is near zero relative to its longest edge " + std::to_string(h));
    if (h < detail::kMinRelativeElementSize * amax) {
      std::ostringstream os;
      os << "validate_and_orient: element " << e << " is too small for the mesh: its longest edge " << h
         << " is below 2^-150 (7e-46) times the largest coordinate magnitude " << amax
         << ", beyond what the self-intersection test resolves";
      throw InvalidArgument(os.str());
    }
    rep.min_area = std::min(rep.min_area, a);
    rep.max_edge = std::max(rep.max_edge, h);
  }

  // duplicate triangles (same vertex set): sorted vertex triples, O(n log n); reported as the
  // pair (earliest, second) of the group whose second element comes first
  {
    std::vector<std::pair<std::array<std::int32_t, 3>, std::size_t>> keys(ne);
    for (std::size_t e = 0; e < ne; ++e) {
      keys[e] = {m.triangles[e], e};
      std::sort(keys[e].first.begin(), keys[e].first.end());
    }
    std::sort(keys.begin(), keys.end());
    std::size_t first = ne, second = ne;
    for (std::size_t i = 1; i < ne; ++i)
      if (keys[i].first == keys[i - 1].first && (i < 2 || keys[i - 2].first != keys[i].first) &&
          keys[i].second < second) {
        first = keys[i - 1].second;
        second = keys[i].second;
      }
    if (second < ne)
      throw InvalidArgument("validate_and_orient: elements " + std::to_string(first) + " and " +
                            std::to_string(second) + " are duplicates (same vertex set)");
  }

  // edge adjacency: the 3 ne (undirected edge, element, local edge) records sorted by edge, so
  // that the elements on one edge are consecutive and in ascending order
  const auto ekey = edge_key;
  struct EdgeRecord {
    std::uint64_t key;
    std::uint32_t element;
    std::uint32_t local;
  };
  std::vector<EdgeRecord> recs(3 * ne);
  for (std::size_t e = 0; e < ne; ++e)
    for (int j = 0; j < 3; ++j)
      recs[3 * e + static_cast<std::size_t>(j)] = {ekey(m.triangles[e][j], m.triangles[e][(j + 1) % 3]),
                                                   static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(j)};
  std::sort(recs.begin(), recs.end(), [](const EdgeRecord& x, const EdgeRecord& y) {
    return x.key != y.key ? x.key < y.key : x.element < y.element;
  });
  // per (element, local edge): where its group of records starts, its size, the edge key and
  // the neighbour across it (when the group has two records)
  std::vector<std::uint32_t> group_start(3 * ne), group_size(3 * ne), neighbour(3 * ne);
  std::vector<std::uint64_t> local_key(3 * ne);
  for (std::size_t i = 0; i < recs.size();) {
    std::size_t k = i;
    while (k < recs.size() && recs[k].key == recs[i].key) ++k;
    for (std::size_t r = i; r < k; ++r) {
      const std::size_t slot = 3 * static_cast<std::size_t>(recs[r].element) + recs[r].local;
      group_start[slot] = static_cast<std::uint32_t>(i);
      group_size[slot] = static_cast<std::uint32_t>(k - i);
      local_key[slot] = recs[r].key;
      neighbour[slot] = k - i == 2 ? recs[r == i ? i + 1 : i].element : recs[r].element;
    }
    i = k;
  }
  for (std::size_t e = 0; e < ne; ++e)
    for (int j = 0; j < 3; ++j) {
      const auto a = m.triangles[e][j], b = m.triangles[e][(j + 1) % 3];
      const std::size_t slot = 3 * e + static_cast<std::size_t>(j);
      if (group_size[slot] > 2) {
        std::string list;
        for (std::size_t r = group_start[slot]; r < group_start[slot] + group_size[slot]; ++r)
          list += (list.empty() ? "" : ", ") + std::to_string(recs[r].element);
        throw InvalidArgument("validate_and_orient: non-manifold edge " + edge_str(a, b) +
                              " of element " + std::to_string(e) + " is shared by " +
                              std::to_string(group_size[slot]) + " elements (" + list + ")");
      }
      if (group_size[slot] < 2)
        throw InvalidArgument("validate_and_orient: mesh is not closed: edge " + edge_str(a, b) +
                              " of element " + std::to_string(e) + " has no neighbour");
    }
  recs = {};
  // the element across edge (a, b) of element e (local edge numbers change when e is flipped)
  auto across = [&](std::size_t e, std::int32_t a, std::int32_t b) -> std::size_t {
    const std::uint64_t key = ekey(a, b);
    for (std::size_t j = 0; j < 3; ++j)
      if (local_key[3 * e + j] == key) return neighbour[3 * e + j];
    return e;  // not reached: (a, b) is an edge of e
  };

  // (3) orientation propagation. For a shared edge, consistent orientation means the two
  // triangles traverse it in opposite directions.
  auto has_directed = [&](std::size_t f, std::int32_t a, std::int32_t b) {
    const auto& t = m.triangles[f];
    for (int j = 0; j < 3; ++j)
      if (t[j] == a && t[(j + 1) % 3] == b) return true;
    return false;
  };
  std::vector<int> comp(ne, -1);
  std::vector<char> flipped(ne, 0);
  std::vector<std::vector<std::size_t>> components;
  for (std::size_t seed = 0; seed < ne; ++seed) {
    if (comp[seed] >= 0) continue;
    const int c = static_cast<int>(components.size());
    components.emplace_back();
    std::deque<std::size_t> queue{seed};
    comp[seed] = c;
    while (!queue.empty()) {
      const std::size_t e = queue.front();
      queue.pop_front();
      components.back().push_back(e);
      for (int j = 0; j < 3; ++j) {
        const auto a = m.triangles[e][j], b = m.triangles[e][(j + 1) % 3];
        const std::size_t f = across(e, a, b);
        if (f == e) continue;
        const bool consistent = has_directed(f, b, a);
        if (comp[f] < 0) {
          comp[f] = c;
          if (!consistent) {
            m.flip(f);
            flipped[f] ^= 1;
          }
          queue.push_back(f);
        } else if (!consistent) {
          throw InvalidArgument("validate_and_orient: surface is not orientable: element " +
                                std::to_string(f) + " cannot be oriented consistently with " +
                                "element " + std::to_string(e) + " across edge " +
                                edge_str(a, b));
        }
      }
    }
  }

  // (4) outward orientation per component from its signed volume.
  rep.components = components.size();
  for (const auto& elems : components) {
    // Origin: the centre of the component's bounding box, which does not depend on the element
    // or vertex numbering and keeps |v - o| <= half the box diagonal (the rounding of the signed
    // volume is ~ eps x elements x diagonal^3; an origin at a far vertex would make it depend on
    // which vertex comes first).
    Vec3 lo = m.vertices[static_cast<std::size_t>(m.triangles[elems.front()][0])], hi = lo;
    for (auto e : elems)
      for (auto vi : m.triangles[e])
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], m.vertices[static_cast<std::size_t>(vi)][d]);
          hi[d] = std::max(hi[d], m.vertices[static_cast<std::size_t>(vi)][d]);
        }
    const Vec3 o{0.5 * lo[0] + 0.5 * hi[0], 0.5 * lo[1] + 0.5 * hi[1], 0.5 * lo[2] + 0.5 * hi[2]};
    double vol = 0.0, area = 0.0;
    for (auto e : elems) {
      const auto& t = m.triangles[e];
      const Vec3 a = sub(m.vertices[static_cast<std::size_t>(t[0])], o);
      const Vec3 b = sub(m.vertices[static_cast<std::size_t>(t[1])], o);
      const Vec3 cc = sub(m.vertices[static_cast<std::size_t>(t[2])], o);
      vol += dot(a, cross(b, cc)) / 6.0;
      area += m.area(e);
    }
    if (!(std::abs(vol) > 1e-12 * area * std::sqrt(area)))
      throw InvalidArgument("validate_and_orient: the closed surface containing element " +
                            std::to_string(elems.front()) + " encloses zero volume");
    if (vol < 0) {
      for (auto e : elems) {
        m.flip(e);
        flipped[e] ^= 1;
      }
      vol = -vol;
    }
    rep.volume += vol;
  }

  // (5) no two elements may meet except along the edges and vertices they share.
  if (const auto hit = detail::find_intersecting_elements(m)) {
    const std::size_t e = hit->first, f = hit->second;
    const auto& te = m.triangles[e];
    const auto& tf = m.triangles[f];
    std::vector<std::int32_t> common;
    for (auto a : te)
      if (std::find(tf.begin(), tf.end(), a) != tf.end()) common.push_back(a);
    const std::string pair = "elements " + std::to_string(e) + " and " + std::to_string(f);
    std::string what;
    if (common.size() == 2)
      what = pair + " fold onto each other across their shared edge " + edge_str(common[0], common[1]) +
             " (coplanar, on the same side of it)";
    else if (common.size() == 1)
      what = pair + " overlap beyond their shared vertex " + std::to_string(common[0]);
    else
      what = pair + " intersect (cross or touch)";
    if (comp[e] != comp[f])
      throw InvalidArgument("validate_and_orient: two closed surfaces intersect: " + what + "; element " +
                            std::to_string(e) + " belongs to the surface of component " +
                            std::to_string(comp[e]) + ", element " + std::to_string(f) + " to component " +
                            std::to_string(comp[f]) + " (the bodies must be disjoint)");
    throw InvalidArgument("validate_and_orient: the surface intersects itself: " + what +
                          " (component " + std::to_string(comp[e]) +
                          "); a closed surface must not cross or touch itself");
  }

  // (6) no closed surface may lie inside another.
  if (const auto nest = detail::find_nested_components(m, components)) {
    const std::size_t in = nest->first, out = nest->second;
    throw InvalidArgument(
        "validate_and_orient: nested surfaces: component " + std::to_string(in) +
        " (the closed surface containing element " + std::to_string(components[in].front()) +
        ") lies inside component " + std::to_string(out) + " (the closed surface containing element " +
        std::to_string(components[out].front()) +
        "); a hollow body or a body inside another is not supported: the BEM here is for exterior "
        "scattering by solid bodies, whose surfaces must each lie outside all the others");
  }

  for (auto f : flipped) rep.flipped_elements += static_cast<std::size_t>(f);
  rep.flipped = rep.flipped_elements > 0;
  return rep;
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

double elements_per_wavelength(const Mesh& m, std::complex<double> k) {
  if (!std::isfinite(k.real()) || !std::isfinite(k.imag()))
    throw InvalidArgument("elements_per_wavelength: wavenumber k must be finite");
  if (m.triangles.empty())
    throw InvalidArgument("elements_per_wavelength: mesh has no elements");
  const double h = m.max_edge();
  if (!(h > 0)) throw InvalidArgument("elements_per_wavelength: mesh has zero max edge");
  const double kr = std::abs(k.real());
  if (kr == 0.0) return std::numeric_limits<double>::infinity();
  return (2.0 * std::numbers::pi / kr) / h;
}

std::string mesh_resolution_warning(const Mesh& m, std::complex<double> k) {
  const double epw = elements_per_wavelength(m, k);
  if (epw >= 6.0) return {};
  std::ostringstream os;
  os << "mesh under-resolved: " << epw << " elements per wavelength (max edge " << m.max_edge()
     << ", wavelength " << 2.0 * std::numbers::pi / std::abs(k.real())
     << "); at least 6 are recommended for piecewise-constant elements";
  return os.str();
}

double winding_number(const Mesh& m, const std::array<double, 3>& x) {
  double omega = 0;
  for (const auto& t : m.triangles) {
    std::array<std::array<double, 3>, 3> r{};
    double len[3];
    for (int a = 0; a < 3; ++a) {
      for (int d = 0; d < 3; ++d) r[a][d] = m.vertices[static_cast<std::size_t>(t[a])][d] - x[d];
      len[a] = std::sqrt(r[a][0] * r[a][0] + r[a][1] * r[a][1] + r[a][2] * r[a][2]);
    }
    const double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) -
                       r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                       r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
    auto dot = [&r](int a, int b) { return r[a][0] * r[b][0] + r[a][1] * r[b][1] + r[a][2] * r[b][2]; };
    const double den = len[0] * len[1] * len[2] + dot(0, 1) * len[2] + dot(0, 2) * len[1] + dot(1, 2) * len[0];
    omega += 2 * std::atan2(det, den);
  }
  return omega / (4 * std::numbers::pi);
}

double distance_to_surface(const Mesh& m, const std::array<double, 3>& p) {
  using V = std::array<double, 3>;
  auto sub = [](const V& a, const V& b) { return V{a[0] - b[0], a[1] - b[1], a[2] - b[2]}; };
  auto dot = [](const V& a, const V& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : m.triangles) {
    const V& a = m.vertices[static_cast<std::size_t>(t[0])];
    const V& b = m.vertices[static_cast<std::size_t>(t[1])];
    const V& c = m.vertices[static_cast<std::size_t>(t[2])];
    // closest point q = a + v (b - a) + w (c - a) by the Voronoi regions of the triangle
    const V ab = sub(b, a), ac = sub(c, a), ap = sub(p, a);
    const double d1 = dot(ab, ap), d2 = dot(ac, ap);
    double v = 0, w = 0;
    if (d1 <= 0 && d2 <= 0) {
      // vertex a
    } else {
      const V bp = sub(p, b);
      const double d3 = dot(ab, bp), d4 = dot(ac, bp);
      const V cp = sub(p, c);
      const double d5 = dot(ab, cp), d6 = dot(ac, cp);
      const double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
      if (d3 >= 0 && d4 <= d3) {
        v = 1;  // vertex b
      } else if (d6 >= 0 && d5 <= d6) {
        w = 1;  // vertex c
      } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        v = d1 / (d1 - d3);  // edge ab
      } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        w = d2 / (d2 - d6);  // edge ac
      } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6));  // edge bc
        v = 1 - w;
      } else {
        const double den = 1.0 / (va + vb + vc);  // interior
        v = vb * den;
        w = vc * den;
      }
    }
    const V q{a[0] + v * ab[0] + w * ac[0], a[1] + v * ab[1] + w * ac[1], a[2] + v * ab[2] + w * ac[2]};
    const V d = sub(p, q);
    best = std::min(best, std::sqrt(dot(d, d)));
  }
  return best;
}

PointLocation locate_point(const Mesh& m, const std::array<double, 3>& x) {
  if (distance_to_surface(m, x) <= 1e-6 * m.max_edge()) return PointLocation::kOnSurface;
  return winding_number(m, x) > 0.5 ? PointLocation::kInside : PointLocation::kOutside;
}

}  // namespace elliptica::bem
