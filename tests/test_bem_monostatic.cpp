// Monostatic sweeps of the Helmholtz BEM plan (HelmholtzBem::solve_monostatic, sweep_directions,
// monostatic_cross_section, target_strength_db in include/elliptica/bem/plan.hpp): many incident
// plane waves with one plan set-up, against separate solves, the Mie series
// (tests/reference/mie.cpp) and the symmetry of the sphere.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/core/error.hpp"
#include "reference/mie.hpp"

using namespace elliptica::bem;
using elliptica::InvalidArgument;
using elliptica::NotConverged;
namespace testref = elliptica::testref;

namespace {
constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;

HelmholtzBemOptions dense_options(BoundaryCondition bc, double rtol = 1e-8) {
  HelmholtzBemOptions o;
  o.op.kind = OperatorKind::Dense;
  o.bc = bc;
  o.gmres.rtol = rtol;
  o.op.fmm.tree.max_leaf = 32;  // a few BD blocks on 320 elements
  return o;
}

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

}  // namespace

TEST(BemMonostatic, ConventionsOfCrossSectionAndTargetStrength) {
  const cplx a(0.3, -0.4);  // |a| = 0.5
  EXPECT_NEAR(monostatic_cross_section(a), 4 * std::numbers::pi * 0.25, 1e-15);
  EXPECT_NEAR(target_strength_db(a), 20 * std::log10(0.5), 1e-13);
  EXPECT_NEAR(target_strength_db(a), 10 * std::log10(monostatic_cross_section(a) / (4 * std::numbers::pi)), 1e-13);
  EXPECT_EQ(target_strength_db(cplx(0, 0)), -std::numeric_limits<double>::infinity());
  EXPECT_NEAR(target_strength_db(cplx(1e-200, 0)), -4000.0, 1e-9);  // no underflow through |a|^2 ... 1e-400
}

TEST(BemMonostatic, SweepDirectionsGeometryAndErrors) {
  std::vector<double> ang;
  const auto t = sweep_directions(SweepAngle::Theta, 0, 180, 5, &ang);
  ASSERT_EQ(t.size(), 5u);
  ASSERT_EQ(ang.size(), 5u);
  const double expect_deg[5] = {0, 45, 90, 135, 180};
  for (int j = 0; j < 5; ++j) {
    EXPECT_DOUBLE_EQ(ang[j], expect_deg[j]);
    EXPECT_NEAR(std::hypot(t[j][0], t[j][1], t[j][2]), 1.0, 1e-15);
    EXPECT_EQ(t[j][1], 0.0);  // x-z plane
  }
  EXPECT_NEAR(t[0][2], 1.0, 1e-15);   // theta 0: +z
  EXPECT_NEAR(t[2][0], 1.0, 1e-15);   // theta 90: +x
  EXPECT_NEAR(t[4][2], -1.0, 1e-15);  // theta 180: -z
  const auto p = sweep_directions(SweepAngle::Phi, 90, 0, 2);
  EXPECT_NEAR(p[0][1], 1.0, 1e-15);  // phi 90: +y
  EXPECT_NEAR(p[1][0], 1.0, 1e-15);  // phi 0: +x
  EXPECT_EQ(p[0][2], 0.0);
  const auto one = sweep_directions(SweepAngle::Theta, 30, 60, 1, &ang);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(ang[0], 30.0);
  EXPECT_THROW(sweep_directions(SweepAngle::Theta, 0, 180, 0), InvalidArgument);
  EXPECT_THROW(sweep_directions(SweepAngle::Theta, 0, 180, -3), InvalidArgument);
  EXPECT_THROW(sweep_directions(SweepAngle::Theta, 0, 180, long(kMaxSweepDirections) + 1), InvalidArgument);
  EXPECT_THROW(sweep_directions(SweepAngle::Phi, std::nan(""), 180, 4), InvalidArgument);
  EXPECT_THROW(sweep_directions(SweepAngle::Phi, 0, std::numeric_limits<double>::infinity(), 4), InvalidArgument);
  EXPECT_EQ(sweep_angle_from_string("theta"), SweepAngle::Theta);
  EXPECT_EQ(sweep_angle_from_string("phi"), SweepAngle::Phi);
  EXPECT_EQ(to_string(SweepAngle::Phi), "phi");
  EXPECT_THROW(sweep_angle_from_string("psi"), InvalidArgument);
}

// The sweep is a loop of solve_plane_wave + far_field(-d) over one plan: the same computation,
// so the results agree to rounding (bound: far below the GMRES tolerance 1e-8).
TEST(BemMonostatic, SweepEqualsSeparateSolves) {
  const double k = 2.0;
  const std::vector<std::array<double, 3>> dirs = {{0, 0, 1}, {1, 2, -0.5}, {-3, 0, 0}, {0.2, -0.7, 0.1}};
  for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
    const HelmholtzBem plan(icosphere(2), k, dense_options(bc));
    MonostaticOptions mo;
    mo.keep_solutions = true;
    std::vector<std::size_t> seen;
    mo.progress = [&seen, &dirs](std::size_t j, std::size_t m, const MonostaticResult& r) {
      EXPECT_EQ(m, dirs.size());
      EXPECT_TRUE(r.converged);
      seen.push_back(j);
    };
    const auto res = plan.solve_monostatic(dirs, mo);
    ASSERT_EQ(res.size(), dirs.size());
    EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3}));
    for (std::size_t j = 0; j < dirs.size(); ++j) {
      const auto& d = dirs[j];
      const double nn = std::hypot(d[0], d[1], d[2]);
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(res[j].direction[c], d[c] / nn, 1e-15);
      const SurfaceSolution s = plan.solve_plane_wave(d);
      const cplx ref = plan.far_field(s, {{-d[0], -d[1], -d[2]}})[0];
      EXPECT_LE(std::abs(res[j].u_inf - ref), 1e-10 * std::abs(ref)) << "direction " << j;
      EXPECT_EQ(res[j].iterations, s.iterations);
      EXPECT_TRUE(res[j].converged);
      EXPECT_LE(res[j].final_relative_residual, 1e-8);
      EXPECT_GE(res[j].solve_seconds, 0.0);
      EXPECT_GT(res[j].info.matvecs, 0);
      EXPECT_NEAR(res[j].sigma, 4 * std::numbers::pi * std::norm(res[j].u_inf), 1e-14 * res[j].sigma);
      EXPECT_NEAR(res[j].ts_db, 20 * std::log10(std::abs(res[j].u_inf)), 1e-12);
      const auto& got = bc == BoundaryCondition::Neumann ? res[j].solution.u : res[j].solution.dudn;
      const auto& want = bc == BoundaryCondition::Neumann ? s.u : s.dudn;
      ASSERT_EQ(got.size(), want.size());
      double err = 0, nrm = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        err = std::max(err, std::abs(got[i] - want[i]));
        nrm = std::max(nrm, std::abs(want[i]));
      }
      EXPECT_LE(err, 1e-10 * nrm);
    }
    // without keep_solutions the surface fields are dropped, the rest stays
    const auto lean = plan.solve_monostatic(dirs);
    for (std::size_t j = 0; j < dirs.size(); ++j) {
      EXPECT_TRUE(lean[j].solution.u.empty() && lean[j].solution.dudn.empty());
      EXPECT_LE(std::abs(lean[j].u_inf - res[j].u_inf), 1e-12 * std::abs(res[j].u_inf));
      EXPECT_EQ(lean[j].iterations, res[j].iterations);
    }
  }
}

// Small ka (Rayleigh regime): the backscatter of the unit sphere against the Mie series
// (u_inf at cos(angle between d and xhat) = -1). The BEM far field on 1280 elements is accurate to
// about 1% (O(h^2) for sound-hard, O(h) for sound-soft; tests/test_bem_helmholtz.cpp, docs/bem.md).
// Sound-hard at ka = 0.3 is deep in the Rayleigh regime: sigma = 4 pi (ka)^4 a^2 (1/3 + 1/2)^2
// (rigid sphere, u_inf(pi) = (5/6) k^2 a^3 to leading order); sound-soft tends to -a.
TEST(BemMonostatic, SphereBackscatterMatchesMieAtSmallKa) {
  const std::vector<std::array<double, 3>> dirs = {{0, 0, 1}, {1, 0, 0}, {0.3, -0.5, 0.8}};
  for (double ka : {0.3, 1.0}) {
    for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
      const HelmholtzBem plan(icosphere(kSanitized ? 2 : 3), ka, dense_options(bc, 1e-7));
      const auto res = plan.solve_monostatic(dirs);
      const auto mbc = bc == BoundaryCondition::Neumann ? testref::MieBC::SoundHard : testref::MieBC::SoundSoft;
      const cplx mie = testref::mie_far_field(mbc, ka, 1.0, -1.0);
      // measured on 1280 elements: hard 7.3e-3 (ka 0.3), 3.2e-3 (ka 1); soft 9.4e-3, 2.1e-2
      const double bound = (bc == BoundaryCondition::Neumann ? 0.015 : 0.035) * (kSanitized ? 4 : 1);
      for (std::size_t j = 0; j < dirs.size(); ++j) {
        const double e = std::abs(res[j].u_inf - mie) / std::abs(mie);
        std::printf("[monostatic] %s ka %.1f direction %zu: |u_inf - Mie| / |Mie| = %.2e, TS %.3f dB (Mie %.3f)\n",
                    bc == BoundaryCondition::Neumann ? "hard" : "soft", ka, j, e, res[j].ts_db, target_strength_db(mie));
        EXPECT_LT(e, bound);
        EXPECT_NEAR(res[j].ts_db, target_strength_db(mie), 20 * std::log10(1 + bound));
      }
      if (bc == BoundaryCondition::Neumann && ka == 0.3) {
        // the Rayleigh limit itself (next order: relative (ka)^2)
        const double rayleigh = 4 * std::numbers::pi * std::pow(ka, 4) * std::pow(5.0 / 6.0, 2);
        EXPECT_NEAR(res[0].sigma / rayleigh, 1.0, 0.25);
      }
    }
  }
}

// A sphere scatters the same way for every incident direction: the TS of a sweep is flat up to
// the discretisation error of the icosphere (which is not exactly symmetric). ka = 2, 320 and
// 1280 elements: the spread must shrink with refinement and stay below 0.1 dB.
TEST(BemMonostatic, SphereTargetStrengthIndependentOfAngle) {
  const double k = 2.0;
  double spread[2] = {0, 0};
  for (int r = 0; r < (kSanitized ? 1 : 2); ++r) {
    const HelmholtzBem plan(icosphere(2 + r), k, dense_options(BoundaryCondition::Neumann, 1e-7));
    auto dirs = sweep_directions(SweepAngle::Theta, 0, 180, 7);
    const auto phi = sweep_directions(SweepAngle::Phi, 10, 350, 5);
    dirs.insert(dirs.end(), phi.begin(), phi.end());
    const auto res = plan.solve_monostatic(dirs);
    double lo = 1e300, hi = -1e300;
    for (const auto& x : res) {
      lo = std::min(lo, x.ts_db);
      hi = std::max(hi, x.ts_db);
    }
    spread[r] = hi - lo;
    const double mie = target_strength_db(testref::mie_far_field(testref::MieBC::SoundHard, k, 1.0, -1.0));
    std::printf("[monostatic] sphere ka 2, %zu elements: TS in [%.4f, %.4f] dB, spread %.2e dB (Mie %.4f dB)\n",
                plan.mesh().num_elements(), lo, hi, spread[r], mie);
    EXPECT_LT(spread[r], r == 0 ? 0.1 : 0.04);  // measured: 0.034 dB and 0.014 dB
  }
  if (!kSanitized) {
    EXPECT_LT(spread[1], spread[0]);
  }
}

TEST(BemMonostatic, RejectsBadDirectionsBeforeSolving) {
  const HelmholtzBem plan(icosphere(1), 1.0, dense_options(BoundaryCondition::Neumann));
  int calls = 0;
  MonostaticOptions mo;
  mo.progress = [&calls](std::size_t, std::size_t, const MonostaticResult&) { ++calls; };
  EXPECT_NE(message_of([&] { (void)plan.solve_monostatic({}, mo); }).find("no directions"), std::string::npos);
  EXPECT_NE(message_of([&] { (void)plan.solve_monostatic({{0, 0, 1}, {1, 0, 0}, {0, 0, 0}}, mo); }).find("direction 2 "),
            std::string::npos);
  EXPECT_NE(message_of([&] { (void)plan.solve_monostatic({{0, std::nan(""), 1}}, mo); }).find("direction 0 is not finite"),
            std::string::npos);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(message_of([&] { (void)plan.solve_monostatic({{1, 0, 0}, {inf, 0, 0}}, mo); }).find("direction 1"),
            std::string::npos);
  EXPECT_EQ(calls, 0);  // nothing was solved
  // huge but finite components are normalised without overflow
  const auto r = plan.solve_monostatic({{1e300, 0, 1e300}});
  EXPECT_NEAR(r[0].direction[0], std::sqrt(0.5), 1e-15);
}

TEST(BemMonostatic, NotConvergedNamesTheDirection) {
  auto o = dense_options(BoundaryCondition::Neumann, 1e-10);
  o.precond.kind = PreconditionerKind::None;
  o.gmres.max_iterations = 2;
  const HelmholtzBem plan(icosphere(2), 2.0, o);
  try {
    (void)plan.solve_monostatic({{0, 0, 1}, {1, 0, 0}});
    FAIL() << "expected NotConverged";
  } catch (const NotConverged& e) {
    EXPECT_NE(std::string(e.what()).find("direction 0 of 2"), std::string::npos) << e.what();
  }
  o.throw_if_not_converged = false;
  const HelmholtzBem lax(icosphere(2), 2.0, o);
  const auto r = lax.solve_monostatic({{0, 0, 1}, {1, 0, 0}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].converged);
  EXPECT_FALSE(r[1].converged);
  EXPECT_EQ(r[1].iterations, 2);
}
