/// @file test_bem_radiation.cpp
/// Radiation and impedance problems of the BEM plan (plan.hpp: solve_radiation, admittance) and
/// the physical units of acoustics.hpp, against the independent sphere series of
/// tests/reference/sphere_acoustics.hpp: the pulsating sphere (monopole), the oscillating sphere
/// (dipole), the impedance sphere in a plane wave; the FMM operator against the dense one.
/// Error bounds: P0 collocation on icospheres; the measured errors are quoted at each check
/// (icosphere refinement 2 = 320 and 3 = 1280 elements; the sanitizer build stops at 2).
/// Cost: about 6 s (Release), 40 s sanitized.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <numbers>
#include <vector>

#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/core/error.hpp"
#include "reference/sphere_acoustics.hpp"

namespace {

using namespace elliptica;
using namespace elliptica::bem;
using cd = std::complex<double>;
using V3 = std::array<double, 3>;

constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;
constexpr int kFinest = kSanitized ? 2 : 3;
// The bounds below are for 1280 elements; O(h) doubles them per coarser refinement.
constexpr double kBound = kSanitized ? 2.0 : 1.0;

double rel_l2(const std::vector<cd>& a, const std::vector<cd>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(a[i] - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

double cos_z(const V3& x) { return x[2] / std::hypot(x[0], x[1], x[2]); }

std::vector<V3> meridian(int n = 36) {
  std::vector<V3> d;
  for (int t = 0; t <= n; ++t) {
    const double th = std::numbers::pi * t / n;
    d.push_back({std::sin(th) * std::cos(0.3), std::sin(th) * std::sin(0.3), std::cos(th)});
  }
  return d;
}

const std::vector<V3> kFieldPoints = {{0, 0, 1.3}, {0, 0, -2}, {1.3, 0.4, 0.2}, {0.1, -1.1, -0.9}, {3, 2, 1}};

struct Errors {
  double surface, far, field, power;
};

// A sphere of radius 1 m in air, frequency chosen for ka; radiation by velocity v_n (m/s).
// kind 0: pulsating (v_n = v), 1: oscillating along z (v_n = v cos theta).
Errors radiation_errors(int refinement, double ka, int kind, OperatorKind op = OperatorKind::Dense) {
  const Mesh m = icosphere(refinement);
  const Medium air;
  const double f = ka * air.sound_speed / (2 * std::numbers::pi);
  const double k = wavenumber(f, air);
  HelmholtzBemOptions opt;
  opt.op.kind = op;
  opt.gmres.rtol = 1e-8;
  if (op == OperatorKind::Fmm) {
    opt.op.fmm.tolerance = 1e-7;
    opt.op.fmm.tree.max_leaf = 32;
  }
  const HelmholtzBem plan(m, cd(k, 0), opt);
  const double v = 1e-3;
  std::vector<cd> vn = kind == 0 ? std::vector<cd>(m.num_elements(), cd(v, 0))
                                 : rigid_translation_velocity(m, {cd(0, 0), cd(0, 0), cd(v, 0)});
  const std::vector<cd> g = normal_velocity_data(vn, f, air);
  const SurfaceSolution s = plan.solve_radiation(g);
  const cd g0 = cd(0, 2 * std::numbers::pi * f * air.density * v);  // i omega rho v
  std::vector<cd> ref(m.num_elements()), fref, pref;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const V3 c = m.centroid(e);
    const double r = std::hypot(c[0], c[1], c[2]);  // centroids lie inside the unit sphere
    ref[e] = g0 * (kind == 0 ? testref::pulsating_sphere_field(k, 1.0, 1.0)
                             : testref::oscillating_sphere_field(k, 1.0, 1.0, c[2] / r));
  }
  const auto dirs = meridian();
  for (const auto& d : dirs)
    fref.push_back(g0 * (kind == 0 ? testref::pulsating_sphere_far_field(k, 1.0)
                                   : testref::oscillating_sphere_far_field(k, 1.0, d[2])));
  for (const auto& p : kFieldPoints) {
    const double r = std::hypot(p[0], p[1], p[2]);
    pref.push_back(g0 * (kind == 0 ? testref::pulsating_sphere_field(k, 1.0, r)
                                   : testref::oscillating_sphere_field(k, 1.0, r, p[2] / r)));
  }
  Errors e{};
  e.surface = rel_l2(s.u, ref);
  e.far = rel_l2(plan.far_field(s, dirs), fref);
  e.field = rel_l2(plan.scattered_field(s, kFieldPoints), pref);
  if (kind == 0) {
    // P = 2 pi a^2 rho c v^2 (ka)^2 / (1 + (ka)^2) (sphere_acoustics.hpp)
    const double P = 2 * std::numbers::pi * air.impedance() * v * v * ka * ka / (1 + ka * ka);
    const double Ps = surface_power(m, s, f, air);
    const SphereRule rule = sphere_rule(24);
    const double Pf = far_field_power(plan.far_field(s, rule.directions), rule, air);
    e.power = std::max(std::abs(Ps - P), std::abs(Pf - P)) / P;
  }
  return e;
}

TEST(BemRadiation, PulsatingSphereMatchesAnalytic) {
  for (double ka : {0.5, 2.0}) {
    Errors e[2];
    for (int r = 0; r < 2; ++r) {
      e[r] = radiation_errors(kFinest - 1 + r, ka, 0);
      std::printf("[pulsating] ka %.1f ref %d: surface %.3e far %.3e field %.3e power %.3e\n", ka, kFinest - 1 + r,
                  e[r].surface, e[r].far, e[r].field, e[r].power);
    }
    // O(h) (the K' of flat P0 panels, helmholtz.hpp "Accuracy"): measured surface 9.7e-3 / 1.8e-2,
    // far field and field points 4.2e-3 / 1.0e-2, power 1.7e-2 / 1.6e-2 at 1280 elements (ka 0.5 / 2);
    // ratios per refinement 0.50-0.64 (surface); the far field is pre-asymptotic at ka 2 (9.9e-3 ->
    // 1.0e-2 -> 6.5e-3 over 320 / 1280 / 5120 elements). The sanitizer build's pair (80 -> 320
    // elements) is pre-asymptotic at ka 0.5 (surface 1.54e-2 -> 1.51e-2): bounds only there.
    if (!kSanitized) {
      EXPECT_LT(e[1].surface, 0.75 * e[0].surface) << ka;
    }
    EXPECT_LT(e[1].surface, kBound * 0.03) << ka;
    EXPECT_LT(e[1].far, kBound * 0.03) << ka;
    EXPECT_LT(e[1].field, kBound * 0.03) << ka;
    EXPECT_LT(e[1].power, kBound * 0.03) << ka;
  }
}

TEST(BemRadiation, OscillatingSphereMatchesAnalytic) {
  for (double ka : {0.5, 2.0}) {
    Errors e[2];
    for (int r = 0; r < 2; ++r) {
      e[r] = radiation_errors(kFinest - 1 + r, ka, 1);
      std::printf("[oscillating] ka %.1f ref %d: surface %.3e far %.3e field %.3e\n", ka, kFinest - 1 + r, e[r].surface,
                  e[r].far, e[r].field);
    }
    // measured at 1280 elements: surface 2.5e-2 / 2.3e-2, far field 8.6e-3 / 5.3e-3 (ka 0.5 / 2)
    EXPECT_LT(e[1].surface, 0.75 * e[0].surface) << ka;
    EXPECT_LT(e[1].surface, kBound * 0.04) << ka;
    EXPECT_LT(e[1].far, kBound * 0.02) << ka;
    EXPECT_LT(e[1].field, kBound * 0.02) << ka;
  }
}

struct ImpedanceErrors {
  double surface, far, absorbed;
};

ImpedanceErrors impedance_errors(int refinement, double k, cd beta, OperatorKind op = OperatorKind::Dense) {
  const Mesh m = icosphere(refinement);
  HelmholtzBemOptions opt;
  opt.op.kind = op;
  opt.gmres.rtol = 1e-8;
  opt.admittance = {beta};
  const HelmholtzBem plan(m, cd(k, 0), opt);
  const V3 d = {0, 0, 1};
  const SurfaceSolution s = plan.solve_plane_wave(d);
  std::vector<cd> ref(m.num_elements()), fref;
  for (std::size_t e = 0; e < ref.size(); ++e) ref[e] = testref::impedance_sphere_surface(k, 1.0, beta, cos_z(m.centroid(e)));
  const auto dirs = meridian();
  for (const auto& x : dirs) fref.push_back(testref::impedance_sphere_far_field(k, 1.0, beta, x[2]));
  ImpedanceErrors e{};
  e.surface = rel_l2(s.u, ref);
  e.far = rel_l2(plan.far_field(s, dirs), fref);
  // absorption cross-section from the surface power (rho = c = 1 units: the incident intensity is
  // 1/2) against the series' extinction minus scattering (optical theorem)
  Medium unit;
  unit.sound_speed = 1;
  unit.density = 1;
  const double f = k / (2 * std::numbers::pi);
  const double sigma_abs = -surface_power(m, s, f, unit) / 0.5;
  const SphereRule rule = sphere_rule(24);
  double sigma_sc = 0;
  for (std::size_t j = 0; j < rule.weights.size(); ++j)
    sigma_sc += rule.weights[j] * std::norm(testref::impedance_sphere_far_field(k, 1.0, beta, rule.directions[j][2]));
  const double sigma_ext = 4 * std::numbers::pi / k * testref::impedance_sphere_far_field(k, 1.0, beta, 1.0).imag();
  e.absorbed = (sigma_abs - (sigma_ext - sigma_sc)) / (sigma_ext - sigma_sc);
  return e;
}

TEST(BemRadiation, ImpedanceSphereMatchesSeries) {
  for (double k : {1.0, 3.0})
    for (cd beta : {cd(1, 0), cd(0.4, -0.8)}) {
      ImpedanceErrors e[2];
      for (int r = 0; r < 2; ++r) {
        e[r] = impedance_errors(kFinest - 1 + r, k, beta);
        std::printf("[impedance] k %.1f beta %.1f%+.1fi ref %d: surface %.3e far %.3e absorbed %.3e\n", k, beta.real(),
                    beta.imag(), kFinest - 1 + r, e[r].surface, e[r].far, e[r].absorbed);
      }
      // measured at 1280 elements: surface 9.7e-3 .. 3.2e-2, far 1.2e-2 .. 2.7e-2, absorbed
      // cross-section -2.1e-2 .. -4.3e-2 (relative; O(h) like the rest, ratio about 0.5)
      EXPECT_LT(e[1].surface, 0.75 * e[0].surface);
      EXPECT_LT(e[1].surface, kBound * 0.05);
      EXPECT_LT(e[1].far, kBound * 0.05);
      EXPECT_LT(std::abs(e[1].absorbed), kBound * 0.07);
    }
}



TEST(BemRadiation, FmmOperatorEqualsDense) {
  // Radiation (oscillating sphere) and an impedance sphere on the FMM operator (FMM tolerance
  // 1e-4, GMRES 1e-9, bd) against the dense operator: the same discrete solution.
  // icosphere(3): 23% of the entries near at leaf level 2; the sanitizer build runs icosphere(2),
  // all near (the composite operator's code alone).
  const Mesh m = icosphere(kFinest);
  const double k = 2.0;
  for (bool impedance : {false, true}) {
    SurfaceSolution s[2];
    for (int o = 0; o < 2; ++o) {
      HelmholtzBemOptions opt;
      opt.op.kind = o == 0 ? OperatorKind::Dense : OperatorKind::Fmm;
      opt.op.fmm.tolerance = 1e-4;
      opt.op.fmm.tree.max_leaf = 20;
      opt.gmres.rtol = 1e-9;
      if (impedance) opt.admittance = {cd(0.5, 0.3)};
      const HelmholtzBem plan(m, cd(k, 0), opt);
      EXPECT_EQ(plan.setup().impedance, impedance);
      if (o == 1 && !kSanitized) {  // the FMM does part of the work
        std::printf("[fmm] near entries %zu of %zu, order %d\n", plan.setup().near_entries,
                    m.num_elements() * m.num_elements(), plan.setup().fmm_order);
        EXPECT_LT(plan.setup().near_entries, m.num_elements() * m.num_elements() / 2);
      }
      const auto g = rigid_translation_velocity(m, {cd(0.3, 0), cd(0, 0.2), cd(1, 0)});
      const IncidentField inc = plane_wave(m, cd(k, 0), {1, 0, 1});
      s[o] = plan.solve_radiation(g, impedance ? &inc : nullptr);
      EXPECT_TRUE(plan.setup().companion_built);
      for (std::size_t e = 0; e < g.size(); ++e) {
        const cd expect = g[e] + (impedance ? cd(0, -1) * k * cd(0.5, 0.3) * s[o].u[e] : cd(0, 0));
        ASSERT_NEAR(std::abs(s[o].dudn[e] - expect), 0.0, 1e-12 * (1 + std::abs(expect)));
      }
    }
    const double d = rel_l2(s[1].u, s[0].u);
    std::printf("[fmm vs dense] impedance %d: %.3e\n", int(impedance), d);
    EXPECT_LT(d, 1e-3);  // 10 x the FMM tolerance (a moderate condition number), as in test_bem_fmm
  }
}

TEST(BemRadiation, RigidAdmittanceIsSoundHardAndRadiationIsLinear) {
  const Mesh m = icosphere(2);
  const double k = 1.5;
  HelmholtzBemOptions hard, zero;
  hard.gmres.rtol = zero.gmres.rtol = 1e-10;
  zero.admittance = {cd(0, 0)};
  const HelmholtzBem a(m, cd(k, 0), hard), b(m, cd(k, 0), zero);
  const auto sa = a.solve_plane_wave({0, 1, 0}), sb = b.solve_plane_wave({0, 1, 0});
  EXPECT_LT(rel_l2(sb.u, sa.u), 1e-9);
  // radiation + incidence = radiation alone + scattering alone (one linear system)
  const auto g = rigid_translation_velocity(m, {cd(0, 0), cd(0, 0), cd(2, 1)});
  const IncidentField inc = plane_wave(m, cd(k, 0), {0, 1, 0});
  const auto both = a.solve_radiation(g, &inc), rad = a.solve_radiation(g);
  std::vector<cd> sum(both.u.size());
  for (std::size_t e = 0; e < sum.size(); ++e) sum[e] = rad.u[e] + sa.u[e];
  EXPECT_LT(rel_l2(both.u, sum), 1e-8);
}

TEST(BemRadiation, RefusesBadInput) {
  const Mesh m = icosphere(1);
  const cd k(1, 0);
  HelmholtzBemOptions soft;
  soft.bc = BoundaryCondition::Dirichlet;
  const HelmholtzBem ps(m, k, soft);
  const std::vector<cd> g(m.num_elements(), cd(1, 0));
  EXPECT_THROW(ps.solve_radiation(g), InvalidArgument);  // no Neumann data to prescribe
  const HelmholtzBem ph(m, k);
  EXPECT_THROW(ph.solve_radiation(std::vector<cd>(3, cd(1, 0))), InvalidArgument);
  std::vector<cd> bad = g;
  bad[5] = cd(NAN, 0);
  EXPECT_THROW(ph.solve_radiation(bad), InvalidArgument);
  HelmholtzBemOptions o;
  o.admittance = {cd(-0.1, 0)};  // active surface
  EXPECT_THROW(HelmholtzBem(m, k, o), InvalidArgument);
  o.admittance = {cd(1, 0), cd(1, 0)};  // neither 1 nor N values
  EXPECT_THROW(HelmholtzBem(m, k, o), InvalidArgument);
  o.admittance = {cd(1, 0)};
  o.bc = BoundaryCondition::Dirichlet;
  EXPECT_THROW(HelmholtzBem(m, k, o), InvalidArgument);
  o.bc = BoundaryCondition::Neumann;
  o.precond.kind = PreconditionerKind::Ifmm;
  EXPECT_THROW(HelmholtzBem(m, k, o), InvalidArgument);
  Medium bad_medium;
  bad_medium.sound_speed = 0;
  EXPECT_THROW(wavenumber(100, bad_medium), InvalidArgument);
  EXPECT_THROW(wavenumber(-1, Medium{}), InvalidArgument);
  EXPECT_THROW(admittance_from_impedance(cd(-1, 0), Medium{}), InvalidArgument);
  EXPECT_THROW(admittance_from_impedance(cd(0, 0), Medium{}), InvalidArgument);
  EXPECT_THROW(sphere_rule(0), InvalidArgument);
}

TEST(BemRadiation, AcousticUnits) {
  const Medium air;
  EXPECT_NEAR(wavenumber(343, air), 2 * std::numbers::pi, 1e-14);
  // 1 Pa peak = 0.7071 Pa rms = 90.97 dB re 20 uPa
  EXPECT_NEAR(spl_db(cd(0, 1)), 20 * std::log10(1 / (std::sqrt(2.0) * 20e-6)), 1e-12);
  EXPECT_NEAR(spl_db(cd(0, 1)), 90.969, 1e-3);
  EXPECT_EQ(admittance_from_impedance(cd(air.impedance(), 0), air), cd(1, 0));
  // normal velocity data: i omega rho v
  const auto g = normal_velocity_data({cd(2, 0)}, 100, air);
  EXPECT_NEAR(std::abs(g[0] - cd(0, 2 * std::numbers::pi * 100 * 1.21 * 2)), 0.0, 1e-12);
  // the sphere rule integrates 1 and cos^2 exactly
  const SphereRule r = sphere_rule(6);
  double s0 = 0, s2 = 0;
  for (std::size_t j = 0; j < r.weights.size(); ++j) {
    s0 += r.weights[j];
    s2 += r.weights[j] * r.directions[j][2] * r.directions[j][2];
  }
  EXPECT_NEAR(s0, 4 * std::numbers::pi, 1e-12);
  EXPECT_NEAR(s2, 4 * std::numbers::pi / 3, 1e-12);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Ground plane (half-space Green's function, method of images)

namespace {

Mesh translated(Mesh m, V3 c) {
  for (auto& v : m.vertices)
    for (int d = 0; d < 3; ++d) v[d] += c[d];
  return m;
}

// the body and its mirror image in the plane z = 0 (mirrored vertices, reversed orientation)
Mesh with_mirror_image(const Mesh& m) {
  Mesh u = m;
  const auto off = static_cast<std::int32_t>(m.vertices.size());
  for (auto v : m.vertices) u.vertices.push_back({v[0], v[1], -v[2]});
  for (auto t : m.triangles) u.triangles.push_back({t[0] + off, t[2] + off, t[1] + off});
  return u;
}

}  // namespace

TEST(BemGroundPlane, EqualsTheBodyWithItsMirrorImage) {
  // Half-space operator (image kernels) against the free-space BEM of the body and its mirror
  // image with the reflected incident field: the same discrete problem, so equal to the GMRES
  // tolerance. Rigid (+1) and pressure-release (-1) planes, scattering and radiation.
  const Mesh body = translated(icosphere(2, 0.5), {0.1, 0.0, 0.8});
  const Mesh both = with_mirror_image(body);
  const std::size_t n = body.num_elements();
  const double k = 2.0;
  const V3 d = {std::sin(0.5), 0.0, -std::cos(0.5)};  // downward, towards the plane
  const std::vector<V3> pts = {{0.2, 0.3, 1.6}, {-1.0, 0.5, 0.3}, {2.0, -1.0, 0.05}};
  for (double refl : {1.0, -1.0}) {
    HelmholtzBemOptions half, full;
    half.gmres.rtol = full.gmres.rtol = 1e-11;
    half.ground = GroundPlane{2, 0.0, refl};
    const HelmholtzBem ph(body, cd(k, 0), half), pf(both, cd(k, 0), full);
    // scattering: the plan adds the reflected wave itself
    const auto sh = ph.solve_plane_wave(d);
    IncidentField inc = plane_wave(both, cd(k, 0), d);
    const IncidentField r = plane_wave(both, cd(k, 0), {d[0], d[1], -d[2]});
    for (std::size_t e = 0; e < inc.u.size(); ++e) {
      inc.u[e] += refl * r.u[e];
      inc.dudn[e] += refl * r.dudn[e];
    }
    const auto sf = pf.solve(inc);
    const std::vector<cd> top(sf.u.begin(), sf.u.begin() + static_cast<std::ptrdiff_t>(n));
    const double es = rel_l2(sh.u, top);
    const double ef = rel_l2(ph.scattered_field(sh, pts), pf.scattered_field(sf, pts));
    const std::vector<V3> up = {{0, 0, 1}, {0.6, 0, 0.8}, {0, -0.6, 0.8}};
    const double eff = rel_l2(ph.far_field(sh, up), pf.far_field(sf, up));
    // radiation: the image body vibrates with the mirrored velocity (rigid: the same normal
    // velocity; pressure release: opposite)
    const auto g = rigid_translation_velocity(body, {cd(0.2, 0), cd(0, 0), cd(1, 0.5)});
    std::vector<cd> gg(2 * n);
    const auto gm = rigid_translation_velocity(both, {cd(0.2, 0), cd(0, 0), cd(-1, -0.5)});
    for (std::size_t e = 0; e < n; ++e) {
      gg[e] = g[e];
      gg[n + e] = refl * gm[n + e];
    }
    const auto rh = ph.solve_radiation(g), rf = pf.solve_radiation(gg);
    const std::vector<cd> rtop(rf.u.begin(), rf.u.begin() + static_cast<std::ptrdiff_t>(n));
    const double er = rel_l2(rh.u, rtop);
    const double erf = rel_l2(ph.scattered_field(rh, pts), pf.scattered_field(rf, pts));
    std::printf("[ground %+.0f] scattering: surface %.2e field %.2e far %.2e; radiation: surface %.2e field %.2e\n",
                refl, es, ef, eff, er, erf);
    // surface and far field to the GMRES tolerance (measured 1e-12); the exterior field to the
    // quadrature error of the representation formula, whose constant-density split differs
    // between the two (measured up to 1.7e-8, pressure release)
    EXPECT_LT(es, 1e-8);
    EXPECT_LT(eff, 1e-8);
    EXPECT_LT(er, 1e-8);
    EXPECT_LT(ef, 1e-6);
    EXPECT_LT(erf, 1e-6);
  }
}

TEST(BemGroundPlane, SmallPulsatingSphereIsAMonopoleAndItsImage) {
  // A pulsating sphere of radius a = 0.05 at height h = 0.5 above a rigid plane z = z0 = -0.25 (off
  // the origin: the image map is affine), k = 2, ka = 0.1: the field is the free-space monopole
  // A e^{ikr}/r and its image A e^{ikr'}/r' (same sign, rigid), up to the sphere's scattering of
  // the image field, O((ka)^2 a / 2h) ~ 5e-4, and the O(h) BEM error (320 elements: 1.5e-2 for
  // the free sphere at ka 0.5).
  const double a = 0.05, h = 0.5, k = 2.0, z0 = -0.25;
  const double zc = z0 + h, zi = z0 - h;  // the sphere's centre and its image
  const Mesh body = translated(icosphere(2, a), {0, 0, zc});
  HelmholtzBemOptions o;
  o.gmres.rtol = 1e-10;
  o.ground = GroundPlane{2, z0, 1.0};
  const HelmholtzBem plan(body, cd(k, 0), o);
  const std::vector<cd> g(body.num_elements(), cd(1, 0));
  const auto s = plan.solve_radiation(g);
  const cd A = testref::pulsating_sphere_far_field(k, a);
  auto pair = [&](const V3& p) {
    const double r1 = std::hypot(p[0], p[1], p[2] - zc), r2 = std::hypot(p[0], p[1], p[2] - zi);
    return A * (std::exp(cd(0, k * r1)) / r1 + std::exp(cd(0, k * r2)) / r2);
  };
  const std::vector<V3> pts = {{0.0, 0.0, 1.5}, {1.0, 0.0, 0.2}, {0.7, 0.7, z0 + 0.01}, {-2.0, 1.0, 1.0}};
  std::vector<cd> ref;
  for (const auto& p : pts) ref.push_back(pair(p));
  const double e = rel_l2(plan.scattered_field(s, pts), ref);
  // the far field of the pair: A (e^{-ik xhat.c} + e^{-ik xhat.c'})
  const std::vector<V3> dirs = {{0, 0, 1}, {0.6, 0, 0.8}, {0.98, 0, 0.2}};
  std::vector<cd> fref;
  for (const auto& d : dirs) fref.push_back(A * (std::exp(cd(0, -k * d[2] * zc)) + std::exp(cd(0, -k * d[2] * zi))));
  const double ef = rel_l2(plan.far_field(s, dirs), fref);
  std::printf("[ground monopole] field %.3e far field %.3e\n", e, ef);
  EXPECT_LT(e, 0.04);
  EXPECT_LT(ef, 0.04);
  // pressure release: the image in antiphase, p -> 0 on the plane
  HelmholtzBemOptions soft = o;
  soft.ground->reflection = -1;
  const HelmholtzBem ps(body, cd(k, 0), soft);
  const auto ss = ps.solve_radiation(g);
  const cd p0 = ps.scattered_field(ss, {{0.7, 0.7, z0 + 1e-6}})[0];
  EXPECT_LT(std::abs(p0), 1e-4 * std::abs(ref[2]));
  // a microphone on the plane itself: twice the free field (rigid), zero (pressure release)
  const V3 mic = {0.7, 0.7, z0};
  EXPECT_LT(std::abs(plan.scattered_field(s, {mic})[0] - pair(mic)), 0.04 * std::abs(pair(mic)));
  EXPECT_EQ(ps.scattered_field(ss, {mic})[0], cd(0, 0));
}

TEST(BemGroundPlane, RefusesBadInput) {
  const Mesh body = translated(icosphere(1, 0.5), {0, 0, 0.3});  // crosses z = 0
  HelmholtzBemOptions o;
  o.ground = GroundPlane{2, 0.0, 1.0};
  EXPECT_THROW(HelmholtzBem(body, cd(1, 0), o), InvalidArgument);
  const Mesh above = translated(icosphere(1, 0.5), {0, 0, 1});
  o.ground->reflection = 0.5;
  EXPECT_THROW(HelmholtzBem(above, cd(1, 0), o), InvalidArgument);
  o.ground->reflection = 1;
  o.ground->axis = 3;
  EXPECT_THROW(HelmholtzBem(above, cd(1, 0), o), InvalidArgument);
  o.ground->axis = 2;
  o.op.kind = OperatorKind::Fmm;
  o.precond.kind = PreconditionerKind::Ifmm;  // the IFMM does not take images
  EXPECT_THROW(HelmholtzBem(above, cd(1, 0), o), InvalidArgument);
  o.precond.kind = PreconditionerKind::BlockDiagonal;
  o.op.kind = OperatorKind::Auto;
  const HelmholtzBem plan(above, cd(1, 0), o);
  EXPECT_EQ(plan.setup().op, OperatorKind::Dense);
  const auto s = plan.solve_plane_wave({0, 0, -1});
  EXPECT_THROW(plan.scattered_field(s, {{0, 0, -1}}), InvalidArgument);  // below the plane
  EXPECT_THROW(plan.point_source({0, 0, -2}), InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Symmetry planes (the same images, the mesh cut by the planes)

namespace {

// the triangles of m with every vertex on the kept side (x[axis] >= 0 for each axis)
Mesh cut(const Mesh& m, std::vector<int> axes) {
  Mesh h;
  h.vertices = m.vertices;
  for (const auto& t : m.triangles) {
    bool keep = true;
    for (int a : axes)
      for (auto v : t) keep = keep && m.vertices[static_cast<std::size_t>(v)][static_cast<std::size_t>(a)] >= 0;
    if (keep) h.triangles.push_back(t);
  }
  return h;
}

// solution of the whole body at the elements of the part (matched by centroid)
std::vector<cd> on_part(const Mesh& whole, const std::vector<cd>& u, const Mesh& part) {
  std::vector<cd> out;
  for (std::size_t e = 0; e < part.num_elements(); ++e) {
    const V3 c = part.centroid(e);
    for (std::size_t f = 0; f < whole.num_elements(); ++f) {
      const V3 d = whole.centroid(f);
      if (std::hypot(c[0] - d[0], c[1] - d[1], c[2] - d[2]) < 1e-12) {
        out.push_back(u[f]);
        break;
      }
    }
  }
  return out;
}

}  // namespace

TEST(BemGroundPlane, PlaneWaveAboveAPlaneOffTheOrigin) {
  // A ground at z = H != 0: the reflected incident wave is u_inc(R x), R x = (x, y, 2H - z), which
  // carries the phase e^{2ik H d_z} (a first version mirrored only the direction, right for H = 0
  // alone). Against the free-space BEM of the body and its mirror image in z = H, with the incident
  // data u_inc(x) + r u_inc(R x) and its gradient written here.
  const double H = -0.3, k = 2.0;
  const Mesh body = translated(icosphere(2, 0.5), {0.1, 0.0, 0.5});
  Mesh both = body;
  const auto off = static_cast<std::int32_t>(body.vertices.size());
  for (auto v : body.vertices) both.vertices.push_back({v[0], v[1], 2 * H - v[2]});
  for (auto t : body.triangles) both.triangles.push_back({t[0] + off, t[2] + off, t[1] + off});
  const std::size_t n = body.num_elements();
  const V3 d = {std::sin(0.5), 0.0, -std::cos(0.5)};
  for (double refl : {1.0, -1.0}) {
    HelmholtzBemOptions half, full;
    half.gmres.rtol = full.gmres.rtol = 1e-11;
    half.ground = GroundPlane{2, H, refl};
    const HelmholtzBem ph(body, cd(k, 0), half), pf(both, cd(k, 0), full);
    IncidentField inc;
    for (std::size_t e = 0; e < both.num_elements(); ++e) {
      const V3 x = both.centroid(e), nn = both.normal(e);
      const cd a = std::exp(cd(0, k) * (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]));
      const cd b = refl * std::exp(cd(0, k) * (d[0] * x[0] + d[1] * x[1] + d[2] * (2 * H - x[2])));
      inc.u.push_back(a + b);
      inc.dudn.push_back(cd(0, k) * (a * (d[0] * nn[0] + d[1] * nn[1] + d[2] * nn[2]) +
                                     b * (d[0] * nn[0] + d[1] * nn[1] - d[2] * nn[2])));
    }
    const auto sh = ph.solve_plane_wave(d), sf = pf.solve(inc);
    const std::vector<cd> top(sf.u.begin(), sf.u.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<V3> up = {{0, 0, 1}, {0.6, 0, 0.8}, {0, -0.6, 0.8}};
    const double es = rel_l2(sh.u, top), eff = rel_l2(ph.far_field(sh, up), pf.far_field(sf, up));
    std::printf("[ground z = %.1f, %+.0f] plane wave: surface %.2e far %.2e\n", H, refl, es, eff);
    EXPECT_LT(es, 1e-8);
    EXPECT_LT(eff, 1e-8);
  }
}

TEST(BemGround, IncidentFieldAtPoints) {
  // plane_wave_at / point_source_at: at the collocation points they equal the plan's surface data
  // (plane_wave().u, point_source().u, with the reflection), and off the body the closed forms
  const Mesh m = icosphere(1, 0.5, {0, 0, 1.2});
  HelmholtzBemOptions o;
  o.ground = GroundPlane{2, 0.1, -1.0};
  const cd k(2.5, 0.1);
  const HelmholtzBem plan(m, k, o);
  std::vector<V3> c;
  for (std::size_t e = 0; e < m.num_elements(); ++e) c.push_back(m.centroid(e));
  const V3 d = {0.3, 0.2, -0.9}, x0 = {1.5, 0.2, 0.9};
  EXPECT_LT(rel_l2(plan.plane_wave_at(d, c), plan.plane_wave(d).u), 1e-14);
  EXPECT_LT(rel_l2(plan.point_source_at(x0, c, cd(2, 1)), plan.point_source(x0, cd(2, 1)).u), 1e-14);
  const V3 x = {-0.7, 2.0, 0.4};
  const double nd = std::hypot(d[0], d[1], d[2]);
  const cd ik = cd(0, 1) * k;
  // the image wave is u_inc(R x), R x = (x, y, 0.2 - z): it cancels the incident wave on z = 0.1
  const cd pw = std::exp(ik * (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]) / nd) -
                std::exp(ik * (d[0] * x[0] + d[1] * x[1] + d[2] * (0.2 - x[2])) / nd);
  const V3 on = {0.4, -0.3, 0.1};
  EXPECT_LT(std::abs(plan.plane_wave_at(d, {on})[0]), 1e-15);
  EXPECT_LT(std::abs(plan.plane_wave_at(d, {x})[0] - pw), 1e-14);
  const double r1 = std::hypot(x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]);
  const double r2 = std::hypot(x[0] - x0[0], x[1] - x0[1], x[2] - (0.2 - x0[2]));
  const cd ps = (std::exp(ik * r1) / r1 - std::exp(ik * r2) / r2) / (4 * std::numbers::pi);
  EXPECT_LT(std::abs(plan.point_source_at(x0, {x})[0] - ps), 1e-15);
  EXPECT_THROW(plan.plane_wave_at({0, 0, 0}, {x}), InvalidArgument);
  EXPECT_THROW(plan.point_source_at(x0, {x0}), InvalidArgument);
  EXPECT_THROW(plan.point_source_at(x0, {{0, std::nan(""), 0}}), InvalidArgument);
}

TEST(BemSymmetry, HalfAndQuarterModelsEqualTheWholeBody) {
  // An octasphere (its equators are edges of the mesh) of radius 0.7, cut by z = 0 and y = 0:
  // the half / quarter model with images equals the whole body's solution on its elements, for
  // symmetric (+1) and antisymmetric (-1) data, with the dense operator (GMRES 1e-11). k D = 2.8 <
  // 4: the default coupling depends on the body size D, which must be the whole body's.
  const Mesh whole = octasphere(2, 0.7);
  const double k = 2.0;
  HelmholtzBemOptions wo;
  wo.gmres.rtol = 1e-11;
  const HelmholtzBem pw(whole, cd(k, 0), wo);
  const std::vector<V3> pts = {{0.3, 0.4, 1.5}, {-1.2, 0.8, 0.3}, {2.0, 1.0, 0.5}};
  const std::vector<V3> dirs = {{0, 0, 1}, {0.6, 0.48, 0.64}, {1, 0, 0}};
  struct Case {
    std::vector<MirrorPlane> planes;
    std::array<cd, 3> U;  // rigid-body velocity of the radiation case
    bool scatter;         // plane wave along x (symmetric in y and z)
  };
  const std::vector<Case> cases = {
      {{MirrorPlane{2, 0.0, 1.0}}, {cd(1, 0), cd(0, 0), cd(0, 0)}, true},
      {{MirrorPlane{2, 0.0, -1.0}}, {cd(0, 0), cd(0, 0), cd(1, 0.5)}, false},
      {{MirrorPlane{2, 0.0, 1.0}, MirrorPlane{1, 0.0, 1.0}}, {cd(1, 0), cd(0, 0), cd(0, 0)}, true},
      {{MirrorPlane{2, 0.0, 1.0}, MirrorPlane{1, 0.0, -1.0}}, {cd(0, 0), cd(1, 0), cd(0, 0)}, false},
  };
  for (const auto& c : cases) {
    std::vector<int> axes;
    for (const auto& p : c.planes) axes.push_back(p.axis);
    Mesh part = cut(whole, axes);
    const MeshReport rep = validate_and_orient(part, c.planes);
    EXPECT_EQ(rep.elements, part.num_elements());
    EXPECT_EQ(part.num_elements() << c.planes.size(), whole.num_elements());
    HelmholtzBemOptions o = wo;
    o.symmetry = c.planes;
    const HelmholtzBem pp(part, cd(k, 0), o);
    EXPECT_EQ(pp.alpha(), pw.alpha());  // the coupling of the whole body
    const auto gw = rigid_translation_velocity(whole, c.U);
    const auto gp = rigid_translation_velocity(part, c.U);
    const auto rw = pw.solve_radiation(gw), rp = pp.solve_radiation(gp);
    double e = rel_l2(rp.u, on_part(whole, rw.u, part));
    double ef = rel_l2(pp.scattered_field(rp, pts), pw.scattered_field(rw, pts));
    double eff = rel_l2(pp.far_field(rp, dirs), pw.far_field(rw, dirs));
    std::printf("[symmetry %zu planes, r %+.0f] radiation: surface %.2e field %.2e far %.2e\n", c.planes.size(),
                c.planes.back().reflection, e, ef, eff);
    EXPECT_LT(e, 1e-8);
    EXPECT_LT(ef, 1e-6);  // the representation's quadrature (see the ground-plane test)
    EXPECT_LT(eff, 1e-8);
    if (c.scatter) {
      const auto sw = pw.solve_plane_wave({1, 0, 0}), sp = pp.solve_plane_wave({1, 0, 0});
      e = rel_l2(sp.u, on_part(whole, sw.u, part));
      ef = rel_l2(pp.scattered_field(sp, pts), pw.scattered_field(sw, pts));
      std::printf("[symmetry %zu planes] scattering: surface %.2e field %.2e\n", c.planes.size(), e, ef);
      EXPECT_LT(e, 1e-8);
      EXPECT_LT(ef, 1e-6);
      EXPECT_THROW(pp.solve_plane_wave({0, 0, 1}), InvalidArgument);  // not symmetric
    } else {
      EXPECT_THROW(pp.solve_plane_wave({1, 0, 0}), InvalidArgument);  // antisymmetric: no incident field
    }
    EXPECT_THROW(pp.scattered_field(rp, {{0.1, 0.1, -0.1}}), InvalidArgument);  // inside the whole body
  }
}

TEST(BemSymmetry, GroundPlaneWithASymmetryPlane) {
  // a body above a rigid ground z = 0, symmetric about x = 0: the half model with both planes
  // equals the whole body above the ground
  const Mesh whole = translated(octasphere(2, 0.5), {0, 0, 0.9});
  Mesh part = cut(translated(octasphere(2, 0.5), {0, 0, 0.9}), {0});
  validate_and_orient(part, {MirrorPlane{0, 0.0, 1.0}});
  HelmholtzBemOptions wo;
  wo.gmres.rtol = 1e-11;
  wo.ground = GroundPlane{2, 0.0, 1.0};
  HelmholtzBemOptions po = wo;
  po.symmetry = {MirrorPlane{0, 0.0, 1.0}};
  const double k = 2.5;
  const HelmholtzBem pw(whole, cd(k, 0), wo), pp(part, cd(k, 0), po);
  const V3 d = {0, 0.6, -0.8};  // no x component: symmetric about x = 0
  const auto sw = pw.solve_plane_wave(d), sp = pp.solve_plane_wave(d);
  const double e = rel_l2(sp.u, on_part(whole, sw.u, part));
  const std::vector<V3> pts = {{0.3, 0.4, 1.8}, {-1.0, 0.2, 0.3}};
  const double ef = rel_l2(pp.scattered_field(sp, pts), pw.scattered_field(sw, pts));
  std::printf("[ground + symmetry] surface %.2e field %.2e\n", e, ef);
  EXPECT_LT(e, 1e-8);
  EXPECT_LT(ef, 1e-6);
}

TEST(BemSymmetry, RefusesBadInput) {
  const Mesh whole = octasphere(1, 0.5);
  Mesh part = cut(whole, {2});
  HelmholtzBemOptions o;
  o.symmetry = {MirrorPlane{2, 0.1, 1.0}};  // vertices below the plane
  EXPECT_THROW(HelmholtzBem(part, cd(1, 0), o), InvalidArgument);
  o.symmetry = {MirrorPlane{2, 0.0, 1.0}, MirrorPlane{2, 0.0, 1.0}};  // same axis twice
  EXPECT_THROW(HelmholtzBem(part, cd(1, 0), o), InvalidArgument);
  o.symmetry = {MirrorPlane{2, 0.0, 1.0}};
  o.op.kind = OperatorKind::Fmm;
  o.precond.kind = PreconditionerKind::Ifmm;  // the IFMM does not take images
  EXPECT_THROW(HelmholtzBem(part, cd(1, 0), o), InvalidArgument);
  // a cut that does not lie on the plane: the whole body is not closed
  Mesh shifted = translated(part, {0, 0, 0.05});
  EXPECT_THROW(validate_and_orient(shifted, {MirrorPlane{2, 0.0, 1.0}}), InvalidArgument);
  // a cut within 1e-6 of the longest edge (file rounding) is put on the plane
  Mesh rounded = translated(part, {0, 0, 1e-9});
  EXPECT_NO_THROW(validate_and_orient(rounded, {MirrorPlane{2, 0.0, 1.0}}));
  double zmin = 1;
  for (const auto& t : rounded.triangles)
    for (auto v : t) zmin = std::min(zmin, rounded.vertices[static_cast<std::size_t>(v)][2]);
  EXPECT_EQ(zmin, 0.0);
}

namespace {
/// Largest |entry difference| / largest |entry| between the FMM operator's entries() and the dense
/// plan's matrix over three rows (first, middle, last) and all columns; the diagonal skipped when
/// skip_diagonal.
double entries_against_dense(const HelmholtzBemFmmOperator& op, const HelmholtzBem& dense, bool skip_diagonal) {
  const std::size_t n = op.size();
  const std::vector<std::int64_t> rows = {0, static_cast<std::int64_t>(n / 2), static_cast<std::int64_t>(n - 1)};
  std::vector<std::int64_t> cols(n);
  for (std::size_t j = 0; j < n; ++j) cols[j] = static_cast<std::int64_t>(j);
  std::vector<cd> e(rows.size() * n);
  op.entries(rows, cols, e.data());
  double diff = 0, norm = 0;
  for (std::size_t a = 0; a < rows.size(); ++a)
    for (std::size_t j = 0; j < n; ++j) {
      if (skip_diagonal && static_cast<std::int64_t>(j) == rows[a]) continue;
      const cd ref = (*dense.dense_matrix())(static_cast<std::size_t>(rows[a]), j);
      diff = std::max(diff, std::abs(e[a * n + j] - ref));
      norm = std::max(norm, std::abs(ref));
    }
  return diff / norm;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// The FMM operator of the image Green's function (FmmOperatorOptions::planes): its entries are the
// dense operator's with images (the same quadrature: to rounding), its matvec agrees to the FMM
// tolerance, and so do the solutions. Rigid and pressure-release ground, sound-hard and
// sound-soft, and a half model (symmetry plane) over a ground plane: factors +1 and -1, one and
// three images.
TEST(BemFmmImages, EqualsTheDenseOperatorWithImages) {
  // 320 and 256 elements (640 and 1024 with the images), leaves of at most 16: most pairs far
  const Mesh sphere = translated(icosphere(2, 0.5), {0.1, 0.0, 0.7});
  const Mesh half = cut(translated(octasphere(3, 0.5), {0.0, 0.0, 0.7}), {1});
  struct Case {
    const char* name;
    const Mesh* mesh;
    std::vector<MirrorPlane> symmetry;
    double reflection;
    BoundaryCondition bc;
  };
  const std::vector<Case> cases = {
      {"rigid ground, sound-hard", &sphere, {}, 1.0, BoundaryCondition::Neumann},
      {"soft ground, sound-soft", &sphere, {}, -1.0, BoundaryCondition::Dirichlet},
      {"half model (y = 0, symmetric) over soft ground", &half, {MirrorPlane{1, 0.0, 1.0}}, -1.0,
       BoundaryCondition::Neumann},
  };
  const double k = 3.0;
  for (const auto& c : cases) {
    Mesh m = *c.mesh;
    if (!c.symmetry.empty()) validate_and_orient(m, c.symmetry);
    HelmholtzBemOptions o;
    o.ground = GroundPlane{2, 0.0, c.reflection};
    o.symmetry = c.symmetry;
    o.bc = c.bc;
    // the sanitized build (about 20x slower) with a lower FMM order
    const double fmm_tol = kSanitized ? 1e-3 : 1e-5;
    o.gmres.rtol = fmm_tol * 1e-4;
    o.op.fmm.tolerance = fmm_tol;
    o.op.fmm.tree.max_leaf = 16;
    o.op.kind = OperatorKind::Dense;
    const HelmholtzBem dense(m, cd(k, 0), o);
    o.op.kind = OperatorKind::Fmm;
    const HelmholtzBem fmm(m, cd(k, 0), o);
    ASSERT_EQ(fmm.setup().op, OperatorKind::Fmm) << c.name;
    const auto* op = dynamic_cast<const HelmholtzBemFmmOperator*>(&fmm.system_operator());
    ASSERT_NE(op, nullptr);
    const std::size_t n = m.num_elements();
    const std::size_t copies = 2 * (c.symmetry.empty() ? 1 : 2);  // the body and its images
    EXPECT_LT(fmm.setup().near_entries, copies * n * n / 2) << c.name;  // the FMM does part of the work
    // entries of a few rows, all columns (near ones stored, far ones computed): the dense
    // matrix's, to rounding
    const double entries = entries_against_dense(*op, dense, false);
    EXPECT_LT(entries, 1e-11) << c.name;
    // the matvec, to the FMM tolerance
    std::vector<cd> x(n), y_d(n), y_f(n);
    for (std::size_t j = 0; j < n; ++j) x[j] = cd(std::cos(0.7 * double(j)), std::sin(0.3 * double(j)));
    dense.system_operator().apply(x.data(), y_d.data());
    op->apply(x.data(), y_f.data());
    const double dmv = rel_l2(y_f, y_d);
    EXPECT_LT(dmv, 2 * fmm_tol) << c.name;
    // the solutions (10 x the tolerance for a moderate condition number, as in FmmOperatorEqualsDense)
    const auto sd = dense.solve_plane_wave({0.6, 0.0, -0.8}), sf = fmm.solve_plane_wave({0.6, 0.0, -0.8});
    const double ds = c.bc == BoundaryCondition::Neumann ? rel_l2(sf.u, sd.u) : rel_l2(sf.dudn, sd.dudn);
    std::printf("[fmm images] %s: %zu elements, near %zu, entries %.1e, matvec %.1e, solution %.1e; set-up dense %.2f s, "
                "fmm %.2f s (FMM %.2f s, BD %.2f s)\n", c.name, n, fmm.setup().near_entries, entries, dmv, ds,
                dense.setup().operator_seconds, fmm.setup().operator_seconds, fmm.setup().fmm_seconds,
                fmm.setup().precond_seconds);
    EXPECT_LT(ds, 10 * fmm_tol) << c.name;
  }
}

// Below kStaticCorrectionKD the sound-hard operators get the static correction of their diagonal
// (helmholtz.hpp, "Low frequency" (1)): on the FMM operator with images as on the dense one, decided
// from the whole body's size; switched off with an antisymmetric plane (the folded image of 1 is
// not the static identity's there). Entries of the FMM operator against the dense matrix, to
// rounding, and the antisymmetric half model against the whole body with odd radiation data.
TEST(BemFmmImages, LowFrequencyCorrectionAsTheDenseOperator) {
  const Mesh whole = translated(octasphere(3, 0.5), {0.0, 0.0, 0.7});
  const Mesh half0 = cut(whole, {1});
  const double k = 0.01 / 1.0;  // k D = 0.01 for the whole body (D = 1.0)
  for (double refl : {1.0, -1.0}) {
    Mesh half = half0;
    const std::vector<MirrorPlane> sym = {MirrorPlane{1, 0.0, refl}};
    validate_and_orient(half, sym);
    HelmholtzBemOptions o;
    o.symmetry = sym;
    o.gmres.rtol = 1e-10;
    o.op.fmm.tolerance = kSanitized ? 1e-3 : 1e-6;
    o.op.fmm.tree.max_leaf = 16;
    o.op.kind = OperatorKind::Dense;
    const HelmholtzBem dense(half, cd(k, 0), o);
    o.op.kind = OperatorKind::Fmm;
    const HelmholtzBem fmm(half, cd(k, 0), o);
    const auto* op = dynamic_cast<const HelmholtzBemFmmOperator*>(&fmm.system_operator());
    ASSERT_NE(op, nullptr);
    const std::size_t n = half.num_elements();
    // the off-diagonal entries are the same quadrature; the diagonal too when there is no
    // correction (antisymmetric). With it, each operator maps 1 exactly to 1 (its own A 1, FMM
    // error included, is what the diagonal absorbs).
    EXPECT_LT(entries_against_dense(*op, dense, refl > 0), 1e-11) << "reflection " << refl;
    const std::vector<cd> ones(n, cd(1, 0));
    std::vector<cd> a1_d(n), a1_f(n);
    dense.system_operator().apply(ones.data(), a1_d.data());
    op->apply(ones.data(), a1_f.data());
    double dev_d = 0, dev_f = 0;
    for (std::size_t i = 0; i < n; ++i) {
      dev_d = std::max(dev_d, std::abs(a1_d[i] - 1.0));
      dev_f = std::max(dev_f, std::abs(a1_f[i] - 1.0));
    }
    if (refl > 0) {
      EXPECT_LT(dev_d, 1e-12);
      EXPECT_LT(dev_f, 1e-12);
    } else {  // not corrected: A 1 is not the static identity's 1 (the mirror's -1 changes K 1)
      EXPECT_GT(dev_d, 1e-3);
      EXPECT_GT(dev_f, 1e-3);
    }
    if (refl < 0) {
      // odd radiation data (rigid translation along y): the half model equals the whole body,
      // whose solution is odd, on the half's elements (the correction changes neither here: a
      // constant is even)
      HelmholtzBemOptions w;
      w.gmres.rtol = 1e-10;
      w.op.kind = OperatorKind::Dense;
      const HelmholtzBem pw(whole, cd(k, 0), w);
      const std::array<cd, 3> U = {cd(0, 0), cd(1, 0), cd(0, 0)};
      const auto gw = rigid_translation_velocity(whole, U), gh = rigid_translation_velocity(dense.mesh(), U);
      const auto sw = pw.solve_radiation(gw), sh = dense.solve_radiation(gh);
      const V3 x{0.3, 1.2, 0.9};
      const cd uw = pw.scattered_field(sw, {x})[0], uh = dense.scattered_field(sh, {x})[0];
      std::printf("[low kD antisymmetric] half %.6e%+.6ei, whole %.6e%+.6ei\n", uh.real(), uh.imag(), uw.real(), uw.imag());
      EXPECT_LT(std::abs(uh - uw), 1e-3 * std::abs(uw));
    }
  }
}
