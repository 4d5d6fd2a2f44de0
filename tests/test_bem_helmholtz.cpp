/// @file test_bem_helmholtz.cpp
/// Dense collocation Helmholtz BEM (include/elliptica/bem/helmholtz.hpp) against analytic
/// identities and the independent Mie series in tests/reference/mie.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/bem/mesh.hpp"
#include "bem/quadrature.hpp"
#include "elliptica/core/error.hpp"
#include "reference/mie.hpp"

namespace {

using namespace elliptica;
using namespace elliptica::bem;
using cd = std::complex<double>;
using V3 = std::array<double, 3>;

// The sanitizer build (10-50x slower) runs the convergence studies one refinement coarser
// (icosphere 1 -> 2 instead of 2 -> 3: 1/16 of the dense work). Where an error bound is for the
// finest mesh, it is carried to the coarser one by the measured per-refinement ratio (h halves):
// about 4 for O(h^2) quantities, 2 for O(h) ones; the measured values are quoted at each test.
constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;
constexpr int kFinest = kSanitized ? 2 : 3;  // finest icosphere refinement of the studies below

double rel_l2(const std::vector<cd>& a, const std::vector<cd>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(a[i] - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

double cos_theta(const V3& x, const V3& d) {
  const double r = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  return (x[0] * d[0] + x[1] * d[1] + x[2] * d[2]) / r;
}

// ---------------------------------------------------------------------------------------------
// Quadrature building blocks

TEST(BemHelmholtzQuadrature, AnalyticInverseRMatchesDuffy) {
  // A skewed triangle; x = centroid. Duffy integration of 1/r is exact up to Gauss error
  // (the integrand times the Jacobian is smooth).
  const std::array<V3, 3> T = {V3{0.1, -0.2, 0.3}, V3{1.3, 0.1, 0.2}, V3{0.4, 0.9, -0.1}};
  const V3 x = {(T[0][0] + T[1][0] + T[2][0]) / 3, (T[0][1] + T[1][1] + T[2][1]) / 3, (T[0][2] + T[1][2] + T[2][2]) / 3};
  std::vector<V3> y;
  std::vector<double> w;
  quadrature::duffy_rule(x, T, 20, y, w);
  double num = 0, area = 0;
  for (std::size_t p = 0; p < y.size(); ++p) {
    const double r = std::hypot(x[0] - y[p][0], x[1] - y[p][1], x[2] - y[p][2]);
    num += w[p] / r;
    area += w[p];
  }
  const double ana = quadrature::inv_r_integral(x, T);
  EXPECT_NEAR(ana, num, 1e-10 * std::abs(ana));
  // Duffy weights integrate 1 exactly: the area.
  const V3 u = {T[1][0] - T[0][0], T[1][1] - T[0][1], T[1][2] - T[0][2]};
  const V3 v = {T[2][0] - T[0][0], T[2][1] - T[0][1], T[2][2] - T[0][2]};
  const double A = 0.5 * std::hypot(u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]);
  EXPECT_NEAR(area, A, 1e-13);
}

TEST(BemHelmholtzQuadrature, FinitePartInverseR3OfEquilateralTriangle) {
  // Equilateral triangle of side s, x = centroid: every edge at distance d = s/(2 sqrt 3), t from
  // -s/2 to s/2, R = s/sqrt 3, so [t/R] = sqrt 3 and FP int 1/r^3 = -3 (2 sqrt 3/s) sqrt 3 = -18/s.
  const double s = 0.7;
  const std::array<V3, 3> T = {V3{0, 0, 0}, V3{s, 0, 0}, V3{s / 2, s * std::sqrt(3.0) / 2, 0}};
  const V3 x = {s / 2, s * std::sqrt(3.0) / 6, 0};
  EXPECT_NEAR(quadrature::inv_r3_finite_part(x, T), -18.0 / s, 1e-12);
  // int 1/r: 3 d ln((s/2 + R)/(-s/2 + R)) = 3 d ln((1/2 + 1/sqrt3)/(1/sqrt3 - 1/2))
  const double d = s / (2 * std::sqrt(3.0)), q = 1 / std::sqrt(3.0);
  EXPECT_NEAR(quadrature::inv_r_integral(x, T), 3 * d * std::log((0.5 + q) / (q - 0.5)), 1e-13);
}

TEST(BemHelmholtzQuadrature, GaussLegendreAndTriangleRules) {
  std::vector<double> x, w;
  quadrature::gauss_legendre01(7, x, w);
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m += w[i] * std::pow(x[i], 13);
  EXPECT_NEAR(m, 1.0 / 14, 1e-14);
  // 7-point rule is exact for degree 5 on the reference triangle: int x^a y^b = a! b!/(a+b+2)!
  for (int n : {1, 3, 7}) {
    const auto& r = quadrature::triangle_rule(n);
    const int deg = n == 1 ? 1 : (n == 3 ? 2 : 5);
    for (int a = 0; a <= deg; ++a)
      for (int b = 0; a + b <= deg; ++b) {
        double s = 0;
        for (const auto& p : r) s += 0.5 * p.w * std::pow(p.l1, a) * std::pow(p.l2, b);
        const double exact = std::tgamma(a + 1) * std::tgamma(b + 1) / std::tgamma(a + b + 3);
        EXPECT_NEAR(s, exact, 1e-14) << n << " " << a << " " << b;
      }
  }
  EXPECT_THROW(quadrature::triangle_rule(4), InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Laplace-limit identities (k -> 0)

TEST(BemHelmholtz, LaplaceLimitIdentities) {
  // For G = 1/(4 pi r) and outward n: the double-layer potential of 1 is -1 inside, 0 outside,
  // so K 1 = -1/2 on ANY closed surface, here the polyhedron itself (x = centroid lies on a flat
  // face): the error is quadrature error only. W 1 = d/dn D 1 = 0 likewise. On the sphere S 1 = 1
  // and K' 1 = -1/2: on the inscribed polyhedron these hold only up to the geometric error O(h^2).
  // Measured max|K'1+1/2| (ref 1, 2, 3): 8.4e-2, 4.8e-2, 2.5e-2; max|S1-1|: 2.5e-2, 6.3e-3, 1.6e-3.
  const cd k(1e-6, 0);
  double prev_kp = 1e9, prev_s = 1e9;
  for (int ref = 1; ref <= kFinest; ++ref) {
    const Mesh m = icosphere(ref);
    const DenseOperators ops = assemble_dense(m, k);
    const std::size_t n = m.num_elements();
    const std::vector<cd> one(n, cd(1, 0));
    const auto K1 = ops.K.apply(one), Kp1 = ops.Kp.apply(one), W1 = ops.W.apply(one), S1 = ops.S.apply(one);
    double eK = 0, eKp = 0, eW = 0, eS = 0, wscale = 0;
    for (std::size_t i = 0; i < n; ++i) {
      eK = std::max(eK, std::abs(K1[i] + 0.5));
      eKp = std::max(eKp, std::abs(Kp1[i] + 0.5));
      eW = std::max(eW, std::abs(W1[i]));
      eS = std::max(eS, std::abs(S1[i] - 1.0));
      wscale = std::max(wscale, std::abs(ops.W(i, i)));
    }
    std::printf("[laplace] ref %d N %zu: max|K1+1/2| %.2e  max|W1|/max|W_ii| %.2e  max|K'1+1/2| %.2e  max|S1-1| %.2e  (%.2f s)\n",
                ref, n, eK, eW / wscale, eKp, eS, ops.seconds);
    EXPECT_LT(eK, 2e-5);
    EXPECT_LT(eW / wscale, 1e-4);
    // K' 1: O(h) on flat panels (the neighbouring faces' positions relative to the tangent plane
    // at x are off by O(h^2) at distance O(h) against a 1/r^3 kernel); S 1: O(h^2).
    EXPECT_GT(prev_kp / eKp, 1.7);
    EXPECT_GT(prev_s / eS, 3.5);
    prev_kp = eKp;
    prev_s = eS;
  }
  // Bounds at ref 3; at ref 2 (sanitizer) times 2 (K' 1, O(h)) and 4 (S 1, O(h^2)).
  EXPECT_LT(prev_kp, kSanitized ? 6e-2 : 3e-2);
  EXPECT_LT(prev_s, kSanitized ? 8e-3 : 2e-3);
}

TEST(BemHelmholtz, SingleLayerApproximateReciprocity) {
  // S[i,j] ~ G(x_i, c_j) A_j, so S[i,j] A_i ~ S[j,i] A_j up to O((h/r)^2) (centroid vs mean).
  const Mesh m = icosphere(2);
  const DenseOperators ops = assemble_dense(m, cd(2.0, 0), kSingleLayer);
  const double h = m.max_edge();
  double worst = 0;
  for (std::size_t i = 0; i < m.num_elements(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      const auto ci = m.centroid(i), cj = m.centroid(j);
      const double r = std::hypot(ci[0] - cj[0], ci[1] - cj[1], ci[2] - cj[2]);
      if (r < 3 * h) continue;
      const cd a = ops.S(i, j) * m.area(i), b = ops.S(j, i) * m.area(j);
      worst = std::max(worst, std::abs(a - b) / std::abs(a) / ((h / r) * (h / r)));
    }
  std::printf("[reciprocity] max |S_ij A_i - S_ji A_j| / |S_ij A_i| / (h/r)^2 = %.3e\n", worst);
  EXPECT_LT(worst, 0.05);
}

// ---------------------------------------------------------------------------------------------
// Mie

struct MieCase {
  double ka;
  BoundaryCondition bc;
};

struct MieErrors {
  double surface, far;
  int iterations;
  double seconds;
};

MieErrors run_mie(const Mesh& m, double k, BoundaryCondition bc) {
  HelmholtzBemOptions opt;
  opt.bc = bc;
  const HelmholtzBemDense plan(m, cd(k, 0), opt);
  const V3 d = {0, 0, 1};
  const SurfaceSolution sol = plan.solve_plane_wave(d);
  const testref::MieBC mbc = bc == BoundaryCondition::Neumann ? testref::MieBC::SoundHard : testref::MieBC::SoundSoft;
  std::vector<cd> ref(m.num_elements());
  for (std::size_t i = 0; i < m.num_elements(); ++i) ref[i] = testref::mie_surface(mbc, k, 1.0, cos_theta(m.centroid(i), d));
  const double es = rel_l2(bc == BoundaryCondition::Neumann ? sol.u : sol.dudn, ref);
  std::vector<V3> dirs;
  std::vector<cd> fref;
  for (int t = 0; t <= 36; ++t) {
    const double th = std::numbers::pi * t / 36;
    dirs.push_back({std::sin(th) * std::cos(0.3), std::sin(th) * std::sin(0.3), std::cos(th)});
    fref.push_back(testref::mie_far_field(mbc, k, 1.0, std::cos(th)));
  }
  const double ef = rel_l2(plan.far_field(sol, dirs), fref);
  return {es, ef, sol.iterations, plan.assembly_seconds() + sol.solve_seconds};
}

TEST(BemHelmholtz, MieReferenceOpticalTheorem) {
  // Self-check of the reference: sigma = (4 pi / k) Im u_inf(forward) = int |u_inf|^2 dOmega.
  for (auto bc : {testref::MieBC::SoundSoft, testref::MieBC::SoundHard})
    for (double k : {1.0, 2.0, 5.0}) {
      const int nt = 400;
      double integ = 0;
      for (int t = 0; t < nt; ++t) {  // midpoint rule in theta
        const double th = std::numbers::pi * (t + 0.5) / nt;
        integ += std::norm(testref::mie_far_field(bc, k, 1.0, std::cos(th))) * std::sin(th);
      }
      integ *= 2 * std::numbers::pi * std::numbers::pi / nt;
      const double opt = 4 * std::numbers::pi / k * testref::mie_far_field(bc, k, 1.0, 1.0).imag();
      EXPECT_NEAR(integ, opt, 1e-4 * opt) << k;
    }
  // Surface formula (Wronskian form) vs the direct sum u_inc + u_sc at r = a (sound-hard).
  const double k = 2.0;
  for (double c : {-1.0, -0.3, 0.2, 1.0}) {
    const cd direct = std::exp(cd(0, k * c)) + testref::mie_scattered(testref::MieBC::SoundHard, k, 1.0, 1.0, c);
    EXPECT_NEAR(std::abs(direct - testref::mie_surface(testref::MieBC::SoundHard, k, 1.0, c)), 0.0, 1e-10);
  }
}

TEST(BemHelmholtz, SphereScatteringConvergesToMie) {
  for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
    for (double ka : {1.0, 2.0, 5.0}) {
      MieErrors e[2];
      for (int r = 0; r < 2; ++r) {
        e[r] = run_mie(icosphere(kFinest - 1 + r), ka, bc);
        std::printf("[mie] %s ka %.1f ref %d: surface rel L2 %.3e  far field rel L2 %.3e  GMRES its %d  %.2f s\n",
                    bc == BoundaryCondition::Neumann ? "hard" : "soft", ka, kFinest - 1 + r, e[r].surface, e[r].far,
                    e[r].iterations, e[r].seconds);
      }
      if (bc == BoundaryCondition::Neumann) {
        // Measured (2 -> 3, default coupling: i/2 at ka 1, i/k at ka 2 and 5): surface 8.5e-3 ->
        // 3.0e-3 (ka 1), 1.7e-2 -> 5.5e-3 (ka 2), ratio ~3 (pre-asymptotic: O(h) from 4 -> 5, see
        // docs/bem.md); far field ratio ~3.9 (O(h^2)). (1 -> 2: surface ratio 3.5, 3.6, 4.4 and far
        // field ratio 3.8, 3.8, 4.4 for ka 1, 2, 5.)
        EXPECT_GT(e[0].surface / e[1].surface, 2.5);
        EXPECT_GT(e[0].far / e[1].far, 3.0);
        // ka 5: 5.4e-2 -> 1.6e-2 (far 6.5e-2 -> 1.7e-2); 5120 elements give 6.3e-3 (hand study).
        // Sanitizer (finest ref 2): the ref-3 bounds times the per-refinement ratios 3 (surface)
        // and 4 (far field); measured at ref 2: surface 9.5e-3, 1.7e-2, 5.4e-2, far field 2.0e-2,
        // 3.8e-2, 6.2e-2 (ka 1, 2, 5).
        const double surface_factor = kSanitized ? 3 : 1, far_factor = kSanitized ? 4 : 1;
        EXPECT_LT(e[1].surface, (ka < 3 ? 0.01 : 0.025) * surface_factor);
        EXPECT_LT(e[1].far, (ka < 3 ? 0.015 : 0.025) * far_factor);
      } else {
        // Sound-soft converges at O(h) only (ratio ~1.8): the adjoint double layer K' of flat P0
        // panels is O(h)-consistent (see LaplaceLimitIdentities: K' 1 + 1/2 halves per
        // refinement independently of k; quadrature refinement does not change the error).
        // Measured (default coupling, alpha = i/2 at ka 1): surface 4.0e-2 -> 2.2e-2 (ka 1), 4.6e-2
        // -> 2.5e-2 (ka 2), 4.9e-2 -> 1.9e-2 (ka 5); far field 3.8e-2 -> 1.7e-2, 5.4e-2 -> 2.5e-2,
        // 6.4e-2 -> 2.3e-2. (1 -> 2: surface ratio 1.79, 1.96, 3.9, far field ratio 2.5, 2.5, 3.3
        // for ka 1, 2, 5; at ref 2 surface <= 4.9e-2, far field <= 6.4e-2.)
        // Sanitizer (finest ref 2): the ref-3 bounds times 2 (O(h)).
        const double factor = kSanitized ? 2 : 1;
        EXPECT_GT(e[0].surface / e[1].surface, 1.6);
        EXPECT_GT(e[0].far / e[1].far, 1.7);
        EXPECT_LT(e[1].surface, 0.05 * factor);
        EXPECT_LT(e[1].far, 0.04 * factor);
      }
    }
  }
}

TEST(BemHelmholtz, RobustAtInteriorEigenvalues) {
  // ka = pi (j_0(ka) = 0, interior Dirichlet eigenvalue) and ka = 2.0816 (j_1'(ka) = 0, interior
  // Neumann eigenvalue): the CBIE alone is singular there; Burton-Miller must stay accurate.
  for (double ka : {std::numbers::pi, 2.081575978}) {
    for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
      const MieErrors e = run_mie(icosphere(2), ka, bc);
      std::printf("[mie] %s ka %.4f ref 2 (interior eigenvalue): surface %.3e far %.3e its %d\n",
                  bc == BoundaryCondition::Neumann ? "hard" : "soft", ka, e.surface, e.far, e.iterations);
      EXPECT_LT(e.surface, 0.07);
      EXPECT_LT(e.far, 0.07);
      EXPECT_LT(e.iterations, 40);
    }
  }
}

TEST(BemHelmholtz, ScatteredFieldMatchesMie) {
  const double k = 2.0;
  for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
    HelmholtzBemOptions opt;
    opt.bc = bc;
    const HelmholtzBemDense plan(icosphere(kFinest), cd(k, 0), opt);
    const SurfaceSolution sol = plan.solve_plane_wave({0, 0, 1});
    // points from 0.2 to 3 radii off the surface (the nearest ones use the subdivided rule)
    const std::vector<V3> pts = {{0, 0, 1.2}, {0, 0, -2}, {1.3, 0.4, 0.2}, {0.1, -1.1, -0.9}, {3, 2, 1}, {0.75, 0.75, 0.0}};
    const auto u = plan.scattered_field(sol, pts);
    const auto mbc = bc == BoundaryCondition::Neumann ? testref::MieBC::SoundHard : testref::MieBC::SoundSoft;
    std::vector<cd> ref;
    for (const auto& p : pts) {
      const double r = std::hypot(p[0], p[1], p[2]);
      ref.push_back(testref::mie_scattered(mbc, k, 1.0, r, p[2] / r));
    }
    const double e = rel_l2(u, ref);
    std::printf("[mie] %s ka 2 ref %d: scattered field at %zu exterior points rel L2 %.3e\n",
                bc == BoundaryCondition::Neumann ? "hard" : "soft", kFinest, pts.size(), e);
    // Measured (ref 2 -> 3): hard 3.4e-2 -> 8.6e-3 (O(h^2)), soft 5.7e-2 -> 2.5e-2 (O(h)). Bounds
    // at ref 3; at ref 2 (sanitizer) times 4 (hard) and 2 (soft).
    if (bc == BoundaryCondition::Neumann)
      EXPECT_LT(e, kSanitized ? 4 * 0.015 : 0.015);
    else
      EXPECT_LT(e, kSanitized ? 2 * 0.04 : 0.04);
  }
}

// ---------------------------------------------------------------------------------------------
// Low frequency (helmholtz.hpp, "Low frequency"; docs/bem.md, "Low frequency")

// The icosphere with every vertex moved by a pseudo-random offset in [-0.15 h, 0.15 h]^3 and
// projected back onto the unit sphere (Mie still applies). The icosphere's symmetry makes errors
// in the constant part of u nearly uniform, and a uniform error has no far field (the area-
// weighted normals of a closed surface sum to zero): the jitter makes the sound-hard
// low-frequency tests sensitive to it (before the static correction: far-field relative error
// 7.8 at ka = 1e-8 on 1280 elements, against 7.8e-3 on the plain icosphere).
Mesh jittered_sphere(int ref) {
  Mesh m = icosphere(ref);
  unsigned long long state = 12345;
  auto uniform = [&state] {  // 64-bit LCG (Knuth's MMIX constants), top 53 bits -> [-0.5, 0.5)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
  };
  const double h = m.max_edge();
  for (auto& v : m.vertices) {
    for (double& c : v) c += 0.3 * h * uniform();
    const double r = std::hypot(v[0], v[1], v[2]);
    for (double& c : v) c /= r;
  }
  return m;
}

Mesh union_of(const Mesh& a, const Mesh& b) {
  Mesh m = a;
  const auto off = static_cast<std::int32_t>(a.vertices.size());
  m.vertices.insert(m.vertices.end(), b.vertices.begin(), b.vertices.end());
  for (auto t : b.triangles) m.triangles.push_back({t[0] + off, t[1] + off, t[2] + off});
  return m;
}

struct SphereErrors {
  double surface, far, scattered;
  int iterations;
};

// Plane wave along +z on a sphere mesh (unit radius), default coupling unless alpha is given.
SphereErrors sphere_errors(const Mesh& m, double k, BoundaryCondition bc, double rtol = 1e-5,
                           std::optional<cd> alpha = std::nullopt) {
  HelmholtzBemOptions opt;
  opt.bc = bc;
  opt.gmres.rtol = rtol;
  opt.alpha = alpha;
  const HelmholtzBemDense plan(m, cd(k, 0), opt);
  const V3 d = {0, 0, 1};
  const SurfaceSolution sol = plan.solve_plane_wave(d);
  const auto mbc = bc == BoundaryCondition::Neumann ? testref::MieBC::SoundHard : testref::MieBC::SoundSoft;
  std::vector<cd> ref(m.num_elements());
  for (std::size_t i = 0; i < m.num_elements(); ++i) ref[i] = testref::mie_surface(mbc, k, 1.0, cos_theta(m.centroid(i), d));
  std::vector<V3> dirs;
  std::vector<cd> fref;
  for (int t = 0; t <= 36; ++t) {
    const double th = std::numbers::pi * t / 36;
    dirs.push_back({std::sin(th) * std::cos(0.3), std::sin(th) * std::sin(0.3), std::cos(th)});
    fref.push_back(testref::mie_far_field(mbc, k, 1.0, std::cos(th)));
  }
  const std::vector<V3> pts = {{0, 0, 1.2}, {0, 0, -2}, {1.3, 0.4, 0.2}, {0.1, -1.1, -0.9}, {3, 2, 1}, {0.75, 0.75, 0.0}};
  std::vector<cd> sref;
  for (const auto& p : pts) {
    const double r = std::hypot(p[0], p[1], p[2]);
    sref.push_back(testref::mie_scattered(mbc, k, 1.0, r, p[2] / r));
  }
  return {rel_l2(bc == BoundaryCondition::Neumann ? sol.u : sol.dudn, ref), rel_l2(plan.far_field(sol, dirs), fref),
          rel_l2(plan.scattered_field(sol, pts), sref), sol.iterations};
}

TEST(BemHelmholtz, DefaultCouplingAndBodySize) {
  const Mesh unit = icosphere(2);
  EXPECT_NEAR(body_size(unit), 2.0, 1e-12);  // vertices on the sphere, area centroid at 0
  EXPECT_NEAR(body_size(icosphere(1, 0.5, {3, -1, 2})), 1.0, 1e-12);
  // several bodies: the largest component's size, not the size of the whole configuration
  EXPECT_NEAR(body_size(union_of(icosphere(1), icosphere(1, 0.25, {5, 0, 0}))), 2.0, 1e-12);
  EXPECT_THROW(body_size(Mesh{}), InvalidArgument);
  // alpha = i / max(k, 4 / D), D = 2: i/k from k = 2 up, i/2 below; complex k: by |k|
  const cd i(0, 1);
  for (double k : {2.0, 3.0, 10.0}) EXPECT_LT(std::abs(default_alpha(unit, k) - i / k), 1e-15) << k;
  for (double k : {1.999, 1.0, 0.05, 1e-8, 1e-300}) EXPECT_LT(std::abs(default_alpha(unit, k) - 0.5 * i), 1e-15) << k;
  EXPECT_LT(std::abs(default_alpha(unit, cd(3, 0.5)) - i / cd(3, 0.5)), 1e-15);
  EXPECT_LT(std::abs(default_alpha(unit, cd(0.1, 0.1)) - 0.5 * i), 1e-15);
  EXPECT_THROW(default_alpha(unit, 0.0), InvalidArgument);
  // the plans report what they use (i/k = 20i before the cap)
  EXPECT_LT(std::abs(HelmholtzBemDense(icosphere(1), 0.05).alpha() - 0.5 * i), 1e-12);
  HelmholtzBemOptions o;
  o.alpha = cd(0, 3);
  EXPECT_EQ(HelmholtzBemDense(icosphere(1), 0.05, o).alpha(), cd(0, 3));
}

TEST(BemHelmholtz, SoundSoftAccurateAtLowFrequency) {
  // With alpha = i/k the 1280-element far field was 21% off at ka = 0.1, 39% at 0.05, 90% at 0.01
  // and 100% at 1e-8 (q -> 0). Measured with the default coupling (icosphere 3 / 2): surface
  // 1.15e-2 / 2.3e-2 and far field 1.13e-2 / 2.42e-2 at every ka <= 0.05, i.e. the O(h)
  // discretisation error (ka = 1: 2.2e-2 / 4.0e-2). Bounds: 1.3 x the measured value.
  const double bound = kSanitized ? 0.032 : 0.015;
  const Mesh m = icosphere(kFinest);
  for (double ka : {0.05, 0.01, 1e-8}) {
    const SphereErrors e = sphere_errors(m, ka, BoundaryCondition::Dirichlet);
    std::printf("[low-k] soft ka %.0e ref %d: surface %.3e far %.3e scattered %.3e its %d\n", ka, kFinest, e.surface,
                e.far, e.scattered, e.iterations);
    EXPECT_LT(e.surface, bound) << ka;
    EXPECT_LT(e.far, bound) << ka;
    EXPECT_LT(e.scattered, bound) << ka;
  }
  // k -> 0 (k = 1e-300: the static limit, q = 1, u_inf = -1, u_sc = -1/r): finite, and within
  // the discretisation error of the static values (measured on 1280 elements: |mean q - 1| =
  // 1.6e-3, |u_inf + 1| = 1.1e-2, |u_sc(2) + 1/2| = 5.7e-3)
  const HelmholtzBemDense plan(m, 1e-300, [] {
    HelmholtzBemOptions o;
    o.bc = BoundaryCondition::Dirichlet;
    return o;
  }());
  const SurfaceSolution s = plan.solve_plane_wave({0, 0, 1});
  double mean = 0;
  for (const auto& v : s.dudn) {
    ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
    mean += v.real() / static_cast<double>(s.dudn.size());
  }
  const cd uinf = plan.far_field(s, {{0, 0, 1}})[0];
  const cd usc = plan.scattered_field(s, {{0, 0, 2}})[0];
  std::printf("[low-k] soft k 1e-300 ref %d: mean q %.6f u_inf %.6f%+.6fi u_sc(2) %.6f\n", kFinest, mean, uinf.real(),
              uinf.imag(), usc.real());
  EXPECT_NEAR(mean, 1.0, bound);
  EXPECT_LT(std::abs(uinf + 1.0), bound);
  EXPECT_LT(std::abs(usc + 0.5), bound / 2);
}

TEST(BemHelmholtz, SoundHardAccurateAtVeryLowFrequency) {
  // Before: surface field ~1e-3 instead of 1 at k = 1e-8 (the (i/k) W term decides the constant
  // mode by its quadrature error), 60% far-field error at 1e-5; with the cap alone the far-field
  // relative error of this jittered sphere was 7.8 at ka = 1e-8 (quadrature error of K 1, W 1 on
  // the constant), and GMRES tolerance 1e-3 gave 150% at ka = 1e-4 (the tolerance then applied to u,
  // not to its O(kD) variation). Measured now (jittered icosphere 3 / 2): far field 8.34e-3 /
  // 3.33e-2 and scattered field 9.32e-3 / 3.16e-2 at every ka <= 1e-5, the discretisation error
  // of ka = 0.1 (8.31e-3 / 3.31e-2); tol 1e-3 at ka = 1e-4: 8.42e-3 / 3.33e-2. The surface error is
  // ka x 5.8e-3 / ka x 1.5e-2 (the O(ka) part of u = 1 + O(ka) carries the discretisation error).
  const double far_bound = kSanitized ? 0.043 : 0.011, slope = kSanitized ? 1.5e-2 : 5.8e-3;
  const Mesh m = jittered_sphere(kFinest);
  for (const auto& [ka, rtol] : std::vector<std::pair<double, double>>{{1e-8, 1e-5}, {1e-5, 1e-5}, {1e-4, 1e-3}}) {
    const SphereErrors e = sphere_errors(m, ka, BoundaryCondition::Neumann, rtol);
    std::printf("[low-k] hard (jittered) ka %.0e tol %.0e ref %d: surface %.3e far %.3e scattered %.3e its %d\n", ka,
                rtol, kFinest, e.surface, e.far, e.scattered, e.iterations);
    EXPECT_LT(e.surface, 2 * slope * ka) << ka;
    EXPECT_LT(e.far, far_bound) << ka;
    EXPECT_LT(e.scattered, far_bound) << ka;
  }
}

TEST(BemHelmholtz, SoundHardStaticCorrectionAndDeflationVector) {
  const Mesh m = icosphere(2);
  const std::size_t n = m.num_elements();
  const std::vector<cd> one(n, cd(1, 0));
  {
    // k D = 2e-3 < kStaticCorrectionKD: the matrix maps 1 to 1 exactly (uncorrected: 1 up to the
    // quadrature error, about 1e-5 relative to |alpha W_ii|)
    const HelmholtzBemDense plan(m, 1e-3);
    const auto a1 = plan.matrix().apply(one);
    double dev = 0;
    for (std::size_t i = 0; i < n; ++i) dev = std::max(dev, std::abs(a1[i] - 1.0));
    EXPECT_LT(dev, 1e-12);
    ASSERT_EQ(plan.ones_image().size(), n);
    for (const auto& v : plan.ones_image()) EXPECT_EQ(v, cd(1, 0));
  }
  {
    // above it: no correction, ones_image = A 1
    const HelmholtzBemDense plan(m, 1.0);
    const auto a1 = plan.matrix().apply(one);
    double dev = 0, diff = 0;
    for (std::size_t i = 0; i < n; ++i) {
      dev = std::max(dev, std::abs(a1[i] - 1.0));
      diff = std::max(diff, std::abs(a1[i] - plan.ones_image()[i]));
    }
    EXPECT_GT(dev, 1e-3);  // the dynamic parts of K 1 and W 1
    EXPECT_LT(diff, 1e-13);
    HelmholtzBemOptions soft;
    soft.bc = BoundaryCondition::Dirichlet;
    EXPECT_TRUE(HelmholtzBemDense(m, 1e-3, soft).ones_image().empty());
  }
  {
    // a sphere inside a sphere: the static image of 1 is 2 on the inner surface (D_0 1 = -1 inside
    // the outer one); checked against the uncorrected discrete row sums
    const Mesh nested = union_of(icosphere(2), icosphere(1, 0.4));
    const double k = 1e-4;
    const HelmholtzBemDense plan(nested, k);
    const DenseOperators ops = assemble_dense(nested, k, kDoubleLayer | kHypersingular);
    const cd alpha = plan.alpha();
    for (std::size_t i = 0; i < nested.num_elements(); ++i) {
      const double expected = i < n ? 1.0 : 2.0;
      EXPECT_EQ(plan.ones_image()[i], cd(expected, 0)) << i;
      cd raw = 0.5;
      for (std::size_t j = 0; j < nested.num_elements(); ++j) raw += -ops.K(i, j) - alpha * ops.W(i, j);
      EXPECT_LT(std::abs(raw - expected), 1e-3) << i;
    }
  }
}

TEST(BemHelmholtz, RefusesSoundHardBelowTheLowFrequencyFloor) {
  const Mesh m = icosphere(1);
  for (double k : {1e-300, 1e-20, 4e-11}) {  // k D = 2e-300 .. 8e-11 < 1e-10
    try {
      const HelmholtzBemDense plan(m, k);
      ADD_FAILURE() << "sound-hard k = " << k << " accepted";
    } catch (const InvalidArgument& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("k D"), std::string::npos) << w;
      EXPECT_NE(w.find("1e-10"), std::string::npos) << w;
      EXPECT_NE(w.find("rounding"), std::string::npos) << w;
    }
  }
  EXPECT_NO_THROW(HelmholtzBemDense(m, 6e-11));  // k D = 1.2e-10
  HelmholtzBemOptions soft;
  soft.bc = BoundaryCondition::Dirichlet;
  EXPECT_NO_THROW(HelmholtzBemDense(m, 1e-300, soft));
}

TEST(BemHelmholtz, RefusesGmresToleranceBelowTheFloor) {
  const Mesh m = icosphere(1);
  HelmholtzBemOptions o;
  for (double rtol : {1e-16, 1e-13}) {
    o.gmres.rtol = rtol;
    try {
      const HelmholtzBemDense plan(m, 1.0, o);
      ADD_FAILURE() << "gmres_rtol " << rtol << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("1e-12"), std::string::npos) << e.what();
    }
  }
  o.gmres.rtol = kMinGmresRtol;
  const HelmholtzBemDense plan(m, 1.0, o);
  EXPECT_TRUE(plan.solve_plane_wave({0, 0, 1}).converged);
}

// ---------------------------------------------------------------------------------------------
// Bad input

TEST(BemHelmholtz, RejectsBadInput) {
  const Mesh m = icosphere(1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto expect_invalid = [&](cd k, const char* word) {
    try {
      (void)assemble_dense(m, k);
      ADD_FAILURE() << "no throw for k = " << k;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
    EXPECT_THROW(HelmholtzBemDense(m, k), InvalidArgument);
  };
  expect_invalid(cd(nan, 0), "finite");
  expect_invalid(cd(1, nan), "finite");
  expect_invalid(cd(-1, 0), "Re k");
  expect_invalid(cd(0, 0), "nonzero");
  expect_invalid(cd(1, -0.5), "Im k");
  try {
    (void)assemble_dense(Mesh{}, cd(1, 0));
    ADD_FAILURE() << "no throw for an empty mesh";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW(HelmholtzBemDense(Mesh{}, cd(1, 0)), InvalidArgument);
  HelmholtzBemOptions bad;
  bad.alpha = cd(0, 0);
  EXPECT_THROW(HelmholtzBemDense(m, cd(1, 0), bad), InvalidArgument);
  QuadratureOptions q;
  q.far_points = 5;
  EXPECT_THROW(assemble_dense(m, cd(1, 0), kAllOperators, q), InvalidArgument);
  EXPECT_THROW(plane_wave(m, cd(1, 0), {0, 0, 0}), InvalidArgument);
  const HelmholtzBemDense plan(m, cd(1, 0));
  IncidentField wrong;
  wrong.u.assign(3, cd(1, 0));
  wrong.dudn.assign(3, cd(0, 0));
  EXPECT_THROW(plan.solve(wrong), InvalidArgument);
}

}  // namespace
