/// @file test_bem_loop.cpp
/// Loop subdivision limit surfaces as curved 6-node meshes (bem::loop_subdivision_surface, issue 32):
/// the nodes against an independent textbook Loop subdivision written here (std::map of edges,
/// neighbour sets) and its limit mask; the limit positions are invariant under one more level
/// (corners of level L = corners of level L + 1, midside nodes of level L = the new corners of
/// level L + 1); conformity (bit-identical shared midside nodes, validate_and_orient accepts,
/// orientation kept); the geometry (enclosed volume and area of the level-L meshes) converges
/// faster than the flat meshes through the same corners; the sound-soft far field on the Loop
/// surface of an octahedron converges at O(h^2) with the curved meshes and O(h) with the flat
/// ones; bad input.
/// Cost: about 4.5 s Release (4.4 s of it the BEM case: octahedron levels 2-4, dense, up to 2048
/// curved elements); sanitized builds run the BEM case on levels 1-3 (up to 512 elements).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "bem/quadratic_element.hpp"
#include "bem/quadrature.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/core/error.hpp"

namespace {

using namespace elliptica;
using namespace elliptica::bem;
using cd = std::complex<double>;
using V3 = std::array<double, 3>;

constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;

double dist(const V3& a, const V3& b) { return std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]); }

/// The regular octahedron (vertices +-r e_i), 8 outward triangles, every vertex of valence 4.
Mesh octahedron(double r) {
  Mesh m;
  m.vertices = {{r, 0, 0}, {-r, 0, 0}, {0, r, 0}, {0, -r, 0}, {0, 0, r}, {0, 0, -r}};
  m.triangles = {{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4}, {2, 0, 5}, {1, 2, 5}, {3, 1, 5}, {0, 3, 5}};
  return m;
}

/// The cube [-h, h]^3 as 12 outward triangles (vertex i has coordinate d at +h iff bit d of i);
/// the face diagonals make valences 3 to 6.
Mesh cube(double h) {
  Mesh m;
  for (int i = 0; i < 8; ++i) m.vertices.push_back({i & 1 ? h : -h, i & 2 ? h : -h, i & 4 ? h : -h});
  const int q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (const auto& f : q) {
    m.triangles.push_back({f[0], f[1], f[2]});
    m.triangles.push_back({f[0], f[2], f[3]});
  }
  return m;
}

// ---- an independent textbook Loop subdivision (ordered maps, neighbour sets) -------------------

struct RefLevel {
  std::vector<V3> p;
  std::vector<std::array<std::int32_t, 3>> t;
};

double ref_beta(std::size_t n) {
  const double c = 0.375 + 0.25 * std::cos(2 * std::numbers::pi / double(n));
  return (0.625 - c * c) / double(n);
}

std::vector<std::set<std::int32_t>> neighbours(const RefLevel& L) {
  std::vector<std::set<std::int32_t>> nb(L.p.size());
  for (const auto& t : L.t)
    for (int j = 0; j < 3; ++j) {
      nb[static_cast<std::size_t>(t[j])].insert(t[(j + 1) % 3]);
      nb[static_cast<std::size_t>(t[(j + 1) % 3])].insert(t[j]);
    }
  return nb;
}

/// (1 - n w) p_v + w sum(neighbours) with w = beta(n) (even) or chi(n) = 1 / (3 / (8 beta) + n) (limit)
V3 ref_mask(const RefLevel& L, const std::vector<std::set<std::int32_t>>& nb, std::size_t v, bool limit) {
  const std::size_t n = nb[v].size();
  const double b = ref_beta(n), w = limit ? 1.0 / (3.0 / (8.0 * b) + double(n)) : b;
  V3 r{};
  for (int d = 0; d < 3; ++d) {
    double s = 0;
    for (auto u : nb[v]) s += L.p[static_cast<std::size_t>(u)][d];
    r[d] = (1 - double(n) * w) * L.p[v][d] + w * s;
  }
  return r;
}

/// One Loop step with refine()'s children (t0, ab, ca), (t1, bc, ab), (t2, ca, bc), (ab, bc, ca).
RefLevel ref_step(const RefLevel& L) {
  const auto nb = neighbours(L);
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::int32_t>> opposite;
  for (const auto& t : L.t)
    for (int j = 0; j < 3; ++j)
      opposite[std::minmax(t[j], t[(j + 1) % 3])].push_back(t[(j + 2) % 3]);
  RefLevel R;
  for (std::size_t v = 0; v < L.p.size(); ++v) R.p.push_back(ref_mask(L, nb, v, false));
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> index;
  auto odd = [&](std::int32_t a, std::int32_t b) {
    const auto key = std::minmax(a, b);
    if (auto it = index.find(key); it != index.end()) return it->second;
    const auto& cd = opposite.at(key);
    EXPECT_EQ(cd.size(), 2u);
    V3 x{};
    for (int d = 0; d < 3; ++d)
      x[d] = 3.0 / 8 * (L.p[size_t(a)][d] + L.p[size_t(b)][d]) + 1.0 / 8 * (L.p[size_t(cd[0])][d] + L.p[size_t(cd[1])][d]);
    R.p.push_back(x);
    return index[key] = static_cast<std::int32_t>(R.p.size() - 1);
  };
  for (const auto& t : L.t) {
    const auto ab = odd(t[0], t[1]), bc = odd(t[1], t[2]), ca = odd(t[2], t[0]);
    R.t.push_back({t[0], ab, ca});
    R.t.push_back({t[1], bc, ab});
    R.t.push_back({t[2], ca, bc});
    R.t.push_back({ab, bc, ca});
  }
  return R;
}

// ---- geometry ---------------------------------------------------------------------------------

/// Enclosed volume (1/3) sum int y . nJ ds dt: flat by the tetrahedra a . (b x c) / 6; curved by the
/// 7-point degree-5 rule, exact for the degree-4 integrand of the quadratic map.
double volume(const Mesh& m) {
  double v = 0;
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    if (m.curved()) {
      const auto q = detail::quadratic_element(m, e);
      for (const auto& p : quadrature::triangle_rule(7)) {
        V3 y, nj;
        q.eval(p.l0, p.l1, p.l2, y, nj);
        v += p.w * 0.5 * (y[0] * nj[0] + y[1] * nj[1] + y[2] * nj[2]) / 3;
      }
    } else {
      const auto& t = m.triangles[e];
      const V3& a = m.vertices[size_t(t[0])];
      const V3& b = m.vertices[size_t(t[1])];
      const V3& c = m.vertices[size_t(t[2])];
      v += (a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2]) + a[2] * (b[0] * c[1] - b[1] * c[0])) / 6;
    }
  }
  return v;
}

double total_area(const Mesh& m) {
  double a = 0;
  for (std::size_t e = 0; e < m.num_elements(); ++e) a += m.area(e);
  return a;
}

Mesh flat_of(Mesh m) {
  m.midside.clear();
  return m;
}

double order(double coarse, double fine) { return std::log2(coarse / fine); }

}  // namespace

TEST(BemLoop, NodesMatchATextbookLoopSubdivision) {
  // every corner is the limit mask applied to the textbook level-L mesh, every midside node the
  // limit mask of the matching odd vertex of level L + 1; the triangles are refine()'s
  for (const Mesh& control : {cube(1.0), octahedron(1.3)}) {
    RefLevel ref{control.vertices, control.triangles};
    for (int L = 0; L <= 3; ++L) {
      const Mesh m = loop_subdivision_surface(control, L);
      const RefLevel next = ref_step(ref);
      const auto nb = neighbours(ref), nb_next = neighbours(next);
      ASSERT_EQ(m.triangles, ref.t) << "level " << L;
      ASSERT_EQ(m.vertices.size(), ref.p.size());
      ASSERT_EQ(m.midside.size(), m.triangles.size());
      double worst = 0;
      for (std::size_t v = 0; v < ref.p.size(); ++v) worst = std::max(worst, dist(m.vertices[v], ref_mask(ref, nb, v, true)));
      for (std::size_t e = 0; e < m.num_elements(); ++e)
        for (std::size_t j = 0; j < 3; ++j) {
          const auto odd = static_cast<std::size_t>(next.t[4 * e + 3][j]);  // child (ab, bc, ca)
          worst = std::max(worst, dist(m.midside[e][j], ref_mask(next, nb_next, odd, true)));
        }
      EXPECT_LT(worst, 1e-14) << "level " << L;  // summation order only (body size ~1)
      if (L == 2) {
        const Mesh r = refine(refine(control));
        EXPECT_EQ(m.triangles, r.triangles);  // refine()'s child order and vertex numbering
      }
      ref = next;
    }
  }
  // the textbook positions of a control vertex approach its limit position geometrically (on the
  // octahedron by the factor 0.141 per level, measured; asserted < 1/2): the limit position is the
  // limit of the subdivision
  const Mesh oct = octahedron(1.0);
  const V3 limit = loop_subdivision_surface(oct, 0).vertices[4];
  RefLevel ref{oct.vertices, oct.triangles};
  double prev = dist(ref.p[4], limit);
  for (int L = 1; L <= 5; ++L) {
    ref = ref_step(ref);
    const double d = dist(ref.p[4], limit);
    std::printf("[textbook] octahedron vertex 4, level %d: distance to the limit position %.3e (ratio %.3f)\n", L, d, d / prev);
    EXPECT_LT(d, 0.5 * prev);
    prev = d;
  }
}

TEST(BemLoop, LimitPositionsAreInvariantUnderSubdivision) {
  // corners of level L = the same vertices' corners at level L + 1 (the limit mask is the left
  // eigenvector of the subdivision matrix), midside node of edge j of element e at level L = the
  // corner of that edge's new vertex at level L + 1 (vertex j of the middle child 4 e + 3), and
  // refine() of level L has the triangles of level L + 1; relative to the body size, rounding only
  Mesh control = cube(0.5);
  control.vertices[6] = {-0.7, 0.6, 0.55};  // not symmetric
  validate_and_orient(control);
  for (int L = 0; L <= 3; ++L) {
    const Mesh a = loop_subdivision_surface(control, L), b = loop_subdivision_surface(control, L + 1);
    ASSERT_EQ(b.num_elements(), 4 * a.num_elements());
    double scale = 0, dc = 0, dm = 0;
    for (const auto& v : a.vertices) scale = std::max({scale, std::abs(v[0]), std::abs(v[1]), std::abs(v[2])});
    for (std::size_t v = 0; v < a.vertices.size(); ++v) dc = std::max(dc, dist(a.vertices[v], b.vertices[v]));
    for (std::size_t e = 0; e < a.num_elements(); ++e)
      for (std::size_t j = 0; j < 3; ++j)
        dm = std::max(dm, dist(a.midside[e][j], b.vertices[static_cast<std::size_t>(b.triangles[4 * e + 3][j])]));
    std::printf("[invariance] level %d -> %d: corners differ by %.1e, midside nodes vs new corners %.1e (scale %.2f)\n", L,
                L + 1, dc, dm, scale);
    EXPECT_LT(dc, 1e-14 * scale);
    EXPECT_LT(dm, 1e-14 * scale);
    const Mesh r = refine(a);
    EXPECT_EQ(r.triangles, b.triangles);
  }
}

TEST(BemLoop, ConformingValidAndOriented) {
  const Mesh m = loop_subdivision_surface(cube(1.0), 2);
  ASSERT_EQ(m.num_elements(), 12u * 16u);
  // the two elements of every edge hold bit-identical midside nodes
  std::map<std::pair<std::int32_t, std::int32_t>, V3> seen;
  std::size_t shared = 0;
  for (std::size_t e = 0; e < m.num_elements(); ++e)
    for (std::size_t j = 0; j < 3; ++j) {
      const auto key = std::minmax(m.triangles[e][j], m.triangles[e][(j + 1) % 3]);
      const auto [it, added] = seen.emplace(key, m.midside[e][j]);
      if (!added) {
        ++shared;
        EXPECT_EQ(it->second, m.midside[e][j]) << "edge " << key.first << "-" << key.second;
      }
    }
  EXPECT_EQ(shared, m.num_elements() * 3 / 2);
  Mesh v = m;
  const MeshReport rep = validate_and_orient(v);
  EXPECT_FALSE(rep.flipped);  // outward control, outward result
  EXPECT_EQ(rep.components, 1u);
  EXPECT_EQ(rep.vertices, m.vertices.size());
  EXPECT_EQ(rep.removed_duplicates, 0u);
  EXPECT_GT(volume(m), 0);
  // an inward-oriented control gives the same surface, inward: the opposite volume, and every
  // collocation point the same (the element order is kept, only the vertex numbering differs)
  Mesh in = cube(1.0);
  for (std::size_t e = 0; e < in.num_elements(); ++e) in.flip(e);
  const Mesh mi = loop_subdivision_surface(in, 2);
  EXPECT_NEAR(volume(mi), -volume(m), 1e-13);
  Mesh vi = mi;
  EXPECT_TRUE(validate_and_orient(vi).flipped);
  double worst = 0;
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    double nearest = 1e300;
    for (std::size_t f = 0; f < mi.num_elements(); ++f) nearest = std::min(nearest, dist(m.centroid(e), mi.centroid(f)));
    worst = std::max(worst, nearest);
  }
  EXPECT_LT(worst, 1e-14);
  // control vertices used by no triangle stay where they are, with their indices
  Mesh extra = cube(1.0);
  extra.vertices.push_back({5, 5, 5});
  const Mesh me = loop_subdivision_surface(extra, 1);
  EXPECT_EQ(me.vertices[8], (V3{5, 5, 5}));
  EXPECT_EQ(me.vertices[0], loop_subdivision_surface(cube(1.0), 1).vertices[0]);
}

TEST(BemLoop, GeometryConvergesFasterThanFlat) {
  // enclosed volume and area of the level-L meshes: successive differences of the curved meshes
  // (quadratic interpolation of the limit surface) against the flat meshes through the same
  // corners (the inscribed polyhedron, O(h^2))
  for (const auto& [name, control] : {std::pair{"cube", cube(0.5)}, std::pair{"octahedron", octahedron(1.0)}}) {
    std::vector<double> vc, vf, ac, af;
    for (int L = 0; L <= 5; ++L) {
      const Mesh m = loop_subdivision_surface(control, L);
      vc.push_back(volume(m));
      vf.push_back(volume(flat_of(m)));
      ac.push_back(total_area(m));
      af.push_back(total_area(flat_of(m)));
    }
    for (std::size_t L = 0; L + 2 < vc.size(); ++L) {
      const double ov = order(std::abs(vc[L] - vc[L + 1]), std::abs(vc[L + 1] - vc[L + 2]));
      const double ofv = order(std::abs(vf[L] - vf[L + 1]), std::abs(vf[L + 1] - vf[L + 2]));
      const double oa = order(std::abs(ac[L] - ac[L + 1]), std::abs(ac[L + 1] - ac[L + 2]));
      const double ofa = order(std::abs(af[L] - af[L + 1]), std::abs(af[L + 1] - af[L + 2]));
      std::printf("[geometry %s] levels %zu-%zu-%zu: volume %.10f diff %.2e (order %.2f), flat diff %.2e (order %.2f); "
                  "area diff %.2e (order %.2f), flat %.2e (order %.2f)\n",
                  name, L, L + 1, L + 2, vc[L + 1], std::abs(vc[L + 1] - vc[L + 2]), ov, std::abs(vf[L + 1] - vf[L + 2]), ofv,
                  std::abs(ac[L + 1] - ac[L + 2]), oa, std::abs(af[L + 1] - af[L + 2]), ofa);
      // curved: O(h^4) (the O(h^3) interpolation error of neighbouring elements cancels to leading
      // order; measured 3.5-3.9 from level 0, 3.9-4.1 from level 1), flat: O(h^2) (0.8-2.0)
      EXPECT_GT(ov, L == 0 ? 3.3 : 3.7) << name << " level " << L;
      EXPECT_GT(oa, L == 0 ? 3.3 : 3.7) << name << " level " << L;
      EXPECT_LT(ofv, 2.1) << name << " level " << L;
      EXPECT_LT(ofa, 2.1) << name << " level " << L;
    }
    const std::size_t n = vc.size() - 1;
    EXPECT_GT(order(std::abs(vf[n - 2] - vf[n - 1]), std::abs(vf[n - 1] - vf[n])), 1.9);  // flat is O(h^2)
    EXPECT_LT(std::abs(vc[n - 1] - vc[n]), 1e-2 * std::abs(vf[n - 1] - vf[n]));  // measured 4e-4 (both bodies)
  }
}

TEST(BemLoop, ApproximatesTheControlMeshToSecondOrder) {
  // the Loop surface does not pass through the control vertices: on icospheres (control vertices
  // on the unit sphere) it lies inside by O(h^2), about h^2 / 4 at a regular vertex (1/2 v + 1/12
  // of its 6 neighbours, at angle ~h: 1 - h^2 / 4); measured max 1 - |x| over the corners
  // 8.9e-2 / 2.4e-2 / 6.6e-3 / 1.7e-3 for 80-5120 control triangles (max edge h = 0.62 / 0.33 /
  // 0.17 / 0.083; h^2 / 4 = 9.6e-2 / 2.6e-2 / 6.8e-3 / 1.7e-3), the midside nodes as much
  double prev = 0;
  for (int r = 1; r <= 4; ++r) {
    const Mesh control = icosphere(r);
    const Mesh m = loop_subdivision_surface(control, 0);
    double corner = 0, mid = 0;
    for (const auto& v : m.vertices) corner = std::max(corner, 1 - std::hypot(v[0], v[1], v[2]));
    for (const auto& ms : m.midside)
      for (const auto& v : ms) mid = std::max(mid, 1 - std::hypot(v[0], v[1], v[2]));
    std::printf("[shrink] icosphere(%d) control, max edge %.3f: corners inside the sphere by up to %.2e (h^2/4 = %.2e), "
                "midside nodes %.2e\n",
                r, control.max_edge(), corner, control.max_edge() * control.max_edge() / 4, mid);
    EXPECT_LT(corner, 0.3 * control.max_edge() * control.max_edge());
    EXPECT_GT(corner, 0.1 * control.max_edge() * control.max_edge());
    if (r > 1) {
      EXPECT_GT(prev / corner, 3.5);  // O(h^2)
    }
    prev = corner;
  }
}

TEST(BemLoop, BadInput) {
  auto expect_message = [](const Mesh& m, int levels, const std::string& what) {
    try {
      loop_subdivision_surface(m, levels);
      ADD_FAILURE() << "accepted; expected: " << what;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  Mesh tri;
  tri.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  tri.triangles = {{0, 1, 2}};
  expect_message(tri, 1, "not closed: edge (0,1) of element 0 has no neighbour");
  Mesh open = cube(1.0);
  open.triangles.erase(open.triangles.begin() + 2, open.triangles.begin() + 4);  // the face z = +1
  expect_message(open, 1, "not closed: edge (5,4) of element");
  Mesh fin = cube(1.0);  // a fin on the edge (0, 2): three elements
  fin.vertices.push_back({-3, 0, -3});
  fin.triangles.push_back({0, 2, 8});
  expect_message(fin, 1, "non-manifold edge (0,2) of element 0 is shared by 3 elements (0, 9, 12)");
  Mesh flipped = cube(1.0);
  flipped.flip(5);
  expect_message(flipped, 1, "not consistently oriented");
  // two octahedra tip to tip share vertex 0 (validate_and_orient accepts it: no common area)
  Mesh tips = octahedron(1.0);
  const Mesh o2 = octahedron(1.0);
  for (std::size_t v : {0, 2, 3, 4, 5}) tips.vertices.push_back({o2.vertices[v][0] + 2, o2.vertices[v][1], o2.vertices[v][2]});
  for (auto t : o2.triangles) {  // vertex 1 of the second, (-1, 0, 0) + (2, 0, 0), is vertex 0
    for (auto& i : t) i = i == 1 ? 0 : i == 0 ? 6 : i + 5;
    tips.triangles.push_back(t);
  }
  Mesh tips_checked = tips;
  EXPECT_NO_THROW(validate_and_orient(tips_checked));
  expect_message(tips, 1, "vertex 0 is not a manifold vertex");
  expect_message(loop_subdivision_surface(cube(1.0), 0), 1, "curved");
  expect_message(cube(1.0), -1, "levels must be in [0, 8], got -1");
  expect_message(cube(1.0), 9, "levels must be in [0, 8], got 9");
  expect_message(icosphere(5), 8, "20480 triangles at 8 levels would give 1342177280 elements");
  expect_message(Mesh{}, 1, "no triangles");
  Mesh bad_index = cube(1.0);
  bad_index.triangles[3][1] = 99;
  EXPECT_THROW(loop_subdivision_surface(bad_index, 1), InvalidArgument);
  Mesh nan = cube(1.0);
  nan.vertices[2][1] = std::nan("");
  expect_message(nan, 1, "vertex 2 has a non-finite coordinate");
}

TEST(BemLoop, SoundSoftFarFieldConvergesAtSecondOrder) {
  // Sound-soft scattering by the Loop surface of an octahedron (vertices +-1; the limit surface
  // is a rounded body of radius 0.44 (vertex directions) to 0.58, so ka ~ 0.6 at k = 1.2), dense
  // operator, levels 2-4 (128, 512, 2048 elements; sanitized 1-3): the observed order of the far
  // field from successive differences, curved 6-node elements against the flat triangles through
  // the same corners. Measured (Release): curved differences 9.21e-4, 1.67e-4 (order 2.46; levels
  // 1-3: 3.13), flat 3.34e-2, 1.24e-2 (order 1.42)
  const int first = kSanitized ? 1 : 2;
  const Mesh control = octahedron(1.0);
  std::vector<V3> dirs;
  for (int t = 0; t <= 12; ++t) {
    const double th = std::numbers::pi * t / 12;
    dirs.push_back({std::sin(th) * std::cos(0.4), std::sin(th) * std::sin(0.4), std::cos(th)});
  }
  auto far = [&](const Mesh& m) {
    HelmholtzBemOptions o;
    o.bc = BoundaryCondition::Dirichlet;
    o.gmres.rtol = 1e-11;
    o.op.kind = OperatorKind::Dense;
    const HelmholtzBem plan(m, cd(1.2, 0), o);
    return plan.far_field(plan.solve(plan.plane_wave({0.36, 0.48, 0.8})), dirs);
  };
  auto rel = [](const std::vector<cd>& a, const std::vector<cd>& b) {
    double n = 0, d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      n += std::norm(a[i] - b[i]);
      d += std::norm(b[i]);
    }
    return std::sqrt(n / d);
  };
  std::vector<std::vector<cd>> fc, ff;
  for (int L = first; L <= first + 2; ++L) {
    const Mesh m = loop_subdivision_surface(control, L);
    fc.push_back(far(m));
    ff.push_back(far(flat_of(m)));
  }
  const double dc0 = rel(fc[0], fc[1]), dc1 = rel(fc[1], fc[2]), df0 = rel(ff[0], ff[1]), df1 = rel(ff[1], ff[2]);
  std::printf("[bem] levels %d-%d-%d: curved far-field differences %.3e, %.3e (order %.2f); flat %.3e, %.3e (order %.2f)\n",
              first, first + 1, first + 2, dc0, dc1, order(dc0, dc1), df0, df1, order(df0, df1));
  EXPECT_GE(order(dc0, dc1), 1.5);
  // the flat meshes' O(h^2) geometry error still shows at the coarse levels 1-3 (order 1.58
  // there, 1.19 at 0-2), so their O(h) is asserted on the Release levels only
  if (!kSanitized) {
    EXPECT_LT(order(df0, df1), 1.5);
  }
  EXPECT_LT(dc1, 0.1 * df1);
}
