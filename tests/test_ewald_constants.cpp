// Known lattice constants, xi-independence, plan reuse, linearity, wrapping, thread-count
// independence and the sanity of the reported parameters of the spectral Ewald plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/internal.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::Params;
using elliptica::ewald::Result;
using elliptica::ewald::ToleranceKind;
using namespace elliptica::testref;

constexpr double kMadelungNaCl = 1.747564594633182190636;
constexpr double kCubeSelf = -2.8372974794806;  // 14 digits known

std::string params_str(const Params& p) {
  std::ostringstream s;
  s.precision(6);
  s << "xi=" << p.xi << " rc=" << p.rc << " M=" << p.grid[0] << "x" << p.grid[1] << "x" << p.grid[2]
    << " P=" << p.P << " beta=" << p.beta << " nu=" << p.poly_degree << " eps_abs=" << p.eps_abs
    << " result_rms=" << p.result_rms << " est(R,F,W,tot)=" << p.est_real << "," << p.est_fourier << ","
    << p.est_window << "," << p.est_total;
  return s.str();
}

Result eval(EwaldPlan& plan, const std::vector<double>& x, const std::vector<double>& s, int comps,
            const std::vector<double>* t = nullptr) {
  ConstMatrixView<double> xv(x, 3), sv(s, static_cast<std::size_t>(comps));
  if (t) return plan.evaluate(xv, sv, ConstMatrixView<double>(*t, 3));
  return plan.evaluate(xv, sv);
}

// ---------------------------------------------------------------------------------------------
// Madelung constant of rock salt from the 8-ion conventional cell (a = 1, d = 0.5):
// M = -phi_i q_i d for every ion.

TEST(EwaldConstants, MadelungRockSalt) {
  const std::vector<double> x = {0, 0, 0, 0, .5, .5, .5, 0, .5, .5, .5, 0,   // Na+
                                 .5, .5, .5, .5, 0, 0, 0, .5, 0, 0, 0, .5};  // Cl-
  const std::vector<double> q = {1, 1, 1, 1, -1, -1, -1, -1};
  Options o;
  o.tolerance = 1e-12;
  EwaldPlan plan(o);
  const Result r = eval(plan, x, q, 1);
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(-r.values.values[i] * q[i] * 0.5, kMadelungNaCl, 1e-10)
        << "ion " << i << "\n  " << params_str(r.params);
}

// A single unit charge in a cube of side L, neutralising background, self excluded.
class EwaldSingleCharge : public ::testing::TestWithParam<std::tuple<double, ToleranceKind>> {};

TEST_P(EwaldSingleCharge, PotentialAtCharge) {
  const auto [L, kind] = GetParam();
  Options o;
  o.box = {L, L, L};
  o.tolerance = 1e-12;
  o.tolerance_kind = kind;
  EwaldPlan plan(o);
  const Result r = eval(plan, {0.37 * L, 0.81 * L, 0.05 * L}, {1.0}, 1);
  const double expected = kCubeSelf / L;
  EXPECT_NEAR(r.values.values[0] / expected, 1.0, 1e-10)
      << "phi = " << r.values.values[0] << " expected " << expected << "\n  " << params_str(r.params);
}

INSTANTIATE_TEST_SUITE_P(Cases, EwaldSingleCharge,
                         ::testing::Combine(::testing::Values(1.0, 2.5),
                                            ::testing::Values(ToleranceKind::Relative, ToleranceKind::Absolute)),
                         [](const auto& i) {
                           const double L = std::get<0>(i.param);
                           return std::string(L == 1.0 ? "L1" : "L2p5") +
                                  (std::get<1>(i.param) == ToleranceKind::Relative ? "_relative" : "_absolute");
                         });

// Hasimoto (1959): a single point force in a cube; u at the source = kCubeSelf f / (6 pi mu L).
class EwaldHasimoto : public ::testing::TestWithParam<std::tuple<double, double>> {};

TEST_P(EwaldHasimoto, VelocityAtSource) {
  const auto [L, mu] = GetParam();
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.box = {L, L, L};
  o.viscosity = mu;
  o.tolerance = 1e-12;
  EwaldPlan plan(o);
  const std::vector<double> f = {0.3, -0.5, 0.7};
  const Result r = eval(plan, {0.2 * L, 0.6 * L, 0.93 * L}, f, 3);
  double e2 = 0, n2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double ex = kCubeSelf * f[a] / (6 * M_PI * mu * L);
    e2 += (r.values.values[a] - ex) * (r.values.values[a] - ex);
    n2 += ex * ex;
  }
  EXPECT_LT(std::sqrt(e2 / n2), 1e-9) << "u = (" << r.values.values[0] << ", " << r.values.values[1] << ", "
                                       << r.values.values[2] << ")\n  " << params_str(r.params);
}

INSTANTIATE_TEST_SUITE_P(Cases, EwaldHasimoto,
                         ::testing::Combine(::testing::Values(1.0, 3.0), ::testing::Values(1.0, 0.37)),
                         [](const auto& i) {
                           return std::string(std::get<0>(i.param) == 1.0 ? "L1" : "L3") +
                                  (std::get<1>(i.param) == 1.0 ? "_mu1" : "_mu0p37");
                         });

// ---------------------------------------------------------------------------------------------
// xi-independence: with xi overridden (r_c and the grid chosen by the plan for that xi) the
// results agree. Each result is within eps of the reference (relative RMS), hence two of them
// are within 2 eps of each other; both are checked. xi is only increased from the automatic
// value (r_c then shrinks, so the plan's r_c <= min(L)/3 limit never binds); smaller xi is
// tested separately below.

struct XiCase {
  Kernel kernel;
  bool neutral;
  double eps;
};

class EwaldXiIndependence : public ::testing::TestWithParam<XiCase> {};

TEST_P(EwaldXiIndependence, ResultDoesNotDependOnXi) {
  const XiCase c = GetParam();
  const std::array<double, 3> box{1.0, 1.7, 0.8};
  const int comps = c.kernel == Kernel::Stokeslet ? 3 : 1;
  const auto x = make_points(Distribution::Uniform, 120, box, 501);
  const auto s = make_strengths(120, comps, 502, c.neutral);
  RefOptions ro;
  ro.kernel = c.kernel == Kernel::Stokeslet ? RefKernel::Stokeslet : RefKernel::Laplace;
  ro.box = box;
  const auto ref = direct_ewald(ro, x, s);

  Options o;
  o.kernel = c.kernel;
  o.box = box;
  o.tolerance = c.eps;
  EwaldPlan auto_plan(o);
  const Result r0 = eval(auto_plan, x, s, comps);
  const double xi0 = r0.params.xi;
  ASSERT_GT(xi0, 0);
  std::vector<Result> rs;
  for (double f : {1.0, 1.5, 2.0}) {
    Options ox = o;
    ox.xi = xi0 * f;
    EwaldPlan plan(ox);
    rs.push_back(eval(plan, x, s, comps));
    const Result& r = rs.back();
    EXPECT_DOUBLE_EQ(r.params.xi, xi0 * f);
    const double err = rel_rms_err(r.values.values, ref.values);
    EXPECT_LT(err, c.eps) << "xi = " << xi0 * f << ": error vs reference " << err << "\n  " << params_str(r.params);
  }
  for (std::size_t i = 0; i < rs.size(); ++i)
    for (std::size_t j = i + 1; j < rs.size(); ++j) {
      const double d = rms_diff(rs[i].values.values, rs[j].values.values) / rms(ref.values);
      EXPECT_LT(d, 2 * c.eps) << "xi " << rs[i].params.xi << " vs " << rs[j].params.xi << ": relative difference "
                              << d;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EwaldXiIndependence,
    ::testing::Values(XiCase{Kernel::Laplace, true, 1e-6}, XiCase{Kernel::Laplace, true, 1e-10},
                      XiCase{Kernel::Laplace, false, 1e-6}, XiCase{Kernel::Laplace, false, 1e-10},
                      XiCase{Kernel::Stokeslet, false, 1e-6}, XiCase{Kernel::Stokeslet, false, 1e-10}),
    [](const ::testing::TestParamInfo<XiCase>& i) {
      return to_string(i.param.kernel) + (i.param.neutral ? "_neutral" : "_net") +
             (i.param.eps == 1e-6 ? "_eps1em6" : "_eps1em10");
    });

// A small xi override needs a large r_c (the plan allows r_c <= min(L)). Per ewald.hpp, with
// overrides "the estimates tell what the overrides give": the plan may refuse (NumericalError),
// meet the tolerance, or report an estimate above eps_abs; in the last case the estimate must be
// honest (measured error within 3x of it), otherwise the tolerance must be met.
TEST(EwaldXiOverride, TooSmallXiIsReportedHonestly) {
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const std::array<double, 3> box{1.0, 1.7, 0.8};
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Uniform, 120, box, 551);
    const auto s = make_strengths(120, comps, 552, true);
    RefOptions ro;
    ro.kernel = k == Kernel::Stokeslet ? RefKernel::Stokeslet : RefKernel::Laplace;
    ro.box = box;
    const auto ref = direct_ewald(ro, x, s);
    const double eps = 1e-8;
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = eps;
    o.xi = 5.0;  // erfc(xi r_c) ~ eps needs r_c ~ 0.8 = min(L)
    EwaldPlan plan(o);
    try {
      const Result r = eval(plan, x, s, comps);
      const double err = rel_rms_err(r.values.values, ref.values);
      const double err_abs = err * r.params.result_rms;
      if (r.params.est_total <= r.params.eps_abs) {
        EXPECT_LT(err, eps) << to_string(k) << ": measured " << err << "\n  " << params_str(r.params);
      } else {
        EXPECT_LT(err_abs, 3 * r.params.est_total)
            << to_string(k) << ": tolerance not met and the estimate is optimistic; measured abs " << err_abs
            << "\n  " << params_str(r.params);
      }
    } catch (const elliptica::NumericalError& e) {
      SUCCEED() << e.what();
    }
  }
}

// Overrides that make every part more accurate than needed keep the tolerance (the pilot
// evaluation and the choice of the polynomial degree must cope with them).
TEST(EwaldOverrides, GenerousOverridesStillMeetTolerance) {
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const std::array<double, 3> box{1.0, 1.0, 1.0};
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Uniform, 100, box, 561);
    const auto s = make_strengths(100, comps, 562, true);
    const auto t = make_points(Distribution::Uniform, 30, box, 563);
    RefOptions ro;
    ro.kernel = k == Kernel::Stokeslet ? RefKernel::Stokeslet : RefKernel::Laplace;
    const auto ref = direct_ewald(ro, x, s, &t);
    const double eps = 1e-9;
    Options o;
    o.kernel = k;
    o.tolerance = eps;
    EwaldPlan auto_plan(o);
    const Params pa = eval(auto_plan, x, s, comps, &t).params;
    o.xi = pa.xi;
    o.rc = pa.rc;
    o.grid = std::array<int, 3>{2 * pa.grid[0], 2 * pa.grid[1], 2 * pa.grid[2]};
    o.window_support = 24;
    EwaldPlan plan(o);
    const Result r = eval(plan, x, s, comps, &t);
    const double err = rel_rms_err(r.values.values, ref.values);
    EXPECT_LT(err, eps) << to_string(k) << ": measured " << err << "\n  " << params_str(r.params);
    EXPECT_NEAR(r.params.result_rms / (rms(ref.values) * std::sqrt(double(comps))), 1.0, 0.1)
        << to_string(k) << ": pilot RMS";
  }
}

// ---------------------------------------------------------------------------------------------
// Plan reuse and linearity.

TEST(EwaldPlanReuse, SamePlanTwiceGivesIdenticalResults) {
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const std::array<double, 3> box{1.0, 1.7, 0.8};
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Clustered, 100, box, 601);
    const auto s = make_strengths(100, comps, 602, true);
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = 1e-8;
    EwaldPlan plan(o);
    const Result a = eval(plan, x, s, comps);
    const Result b = eval(plan, x, s, comps);
    EXPECT_EQ(a.values.values, b.values.values) << to_string(k);
    EXPECT_EQ(a.params.grid, b.params.grid);
    EXPECT_EQ(a.params.xi, b.params.xi);
  }
}

TEST(EwaldPlanReuse, LinearInStrengths) {
  const double eps = 1e-9;
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const std::array<double, 3> box{1.0, 1.7, 0.8};
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Uniform, 110, box, 611);
    const auto s1 = make_strengths(110, comps, 612, true);
    const auto s2 = make_strengths(110, comps, 613, true);
    const double a = 0.8, b = -0.6;
    std::vector<double> s12(s1.size());
    for (std::size_t i = 0; i < s1.size(); ++i) s12[i] = a * s1[i] + b * s2[i];
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = eps;
    EwaldPlan plan(o);
    const Result r1 = eval(plan, x, s1, comps);
    const Result r2 = eval(plan, x, s2, comps);
    const Result r12 = eval(plan, x, s12, comps);
    std::vector<double> lin(r1.values.values.size());
    for (std::size_t i = 0; i < lin.size(); ++i) lin[i] = a * r1.values.values[i] + b * r2.values.values[i];
    // Each is within eps (relative) of the exact value; the exact map is linear.
    const double scale = std::abs(a) * rms(r1.values.values) + std::abs(b) * rms(r2.values.values);
    const double d = rms_diff(r12.values.values, lin) / scale;
    EXPECT_LT(d, 2 * eps) << to_string(k) << ": u(a f1 + b f2) vs a u(f1) + b u(f2), relative difference " << d;
  }
}

// ---------------------------------------------------------------------------------------------
// Wrapping: moving points by whole periods changes nothing.

TEST(EwaldWrapping, ShiftByWholePeriodsExactBox) {
  // Dyadic box and positions on a 2^-20 grid: the shifts and the wrapping are exact in floating
  // point, so the result must agree to rounding.
  const std::array<double, 3> box{1.0, 1.5, 0.75};
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    auto x = make_points(Distribution::Uniform, 90, box, 701);
    for (double& v : x) v = std::ldexp(std::round(std::ldexp(v, 20)), -20);
    const auto s = make_strengths(90, comps, 702, true);
    auto xs = x;
    for (std::size_t i = 0; i < 90; ++i)
      for (int a = 0; a < 3; ++a) xs[3 * i + a] += box[a] * static_cast<double>(static_cast<int>((i + a) % 6) - 2);
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = 1e-10;
    EwaldPlan p1(o);
    const Result a = eval(p1, x, s, comps);
    const Result b = eval(p1, xs, s, comps);
    EXPECT_LT(rel_rms_err(b.values.values, a.values.values), 1e-13) << to_string(k);
  }
}

TEST(EwaldWrapping, ShiftByWholePeriodsGeneralBoxAndTargets) {
  // Non-dyadic box: x + n L - n L differs from x by a few ulps of n L, which moves the result by
  // ~1e-16 |n L| |grad u| / |u|: 1e-13 relative is ample for these point sets.
  const std::array<double, 3> box{1.0, 1.7, 0.8};
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Uniform, 90, box, 711);
    const auto t = make_points(Distribution::Uniform, 30, box, 713);
    const auto s = make_strengths(90, comps, 712, true);
    auto xs = x, ts = t;
    for (std::size_t i = 0; i < 90; ++i)
      for (int a = 0; a < 3; ++a) xs[3 * i + a] += box[a] * static_cast<double>(static_cast<int>((i + a) % 5) - 2);
    for (std::size_t i = 0; i < 30; ++i)
      for (int a = 0; a < 3; ++a) ts[3 * i + a] -= box[a] * static_cast<double>(static_cast<int>((i + 2 * a) % 4) - 1);
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = 1e-10;
    // One plan per pair, so both evaluations use the same parameters (a fresh plan would tune on
    // the shifted input, and its relative tolerance moves xi continuously with the pilot's RMS).
    EwaldPlan p1(o), p3(o);
    const Result a = eval(p1, x, s, comps);
    const Result b = eval(p1, xs, s, comps);
    EXPECT_LT(rel_rms_err(b.values.values, a.values.values), 1e-13) << to_string(k) << " self";
    const Result c = eval(p3, x, s, comps, &t);
    const Result d = eval(p3, xs, s, comps, &ts);
    EXPECT_LT(rel_rms_err(d.values.values, c.values.values), 1e-13) << to_string(k) << " targets";
  }
}

// ---------------------------------------------------------------------------------------------
// Reported parameters and threads.

struct ParamCase {
  Kernel kernel;
  ToleranceKind kind;
  double eps;
};

class EwaldParams : public ::testing::TestWithParam<ParamCase> {};

TEST_P(EwaldParams, ReportedParametersAreConsistent) {
  const ParamCase c = GetParam();
  const std::array<double, 3> box{1.0, 1.7, 0.8};
  const int comps = c.kernel == Kernel::Stokeslet ? 3 : 1;
  const auto x = make_points(Distribution::Uniform, 130, box, 801);
  const auto s = make_strengths(130, comps, 802, true);
  Options o;
  o.kernel = c.kernel;
  o.box = box;
  o.tolerance = c.eps;
  o.tolerance_kind = c.kind;
  EwaldPlan plan(o);
  EXPECT_EQ(plan.params().xi, 0.0) << "params before the first evaluation should be zero";
  const Result r = eval(plan, x, s, comps);
  const Params& p = r.params;
  SCOPED_TRACE(params_str(p));
  EXPECT_EQ(plan.params().grid, p.grid);
  EXPECT_GT(p.xi, 0);
  EXPECT_GT(p.rc, 0);
  // r_c may exceed a short box side (P2P then visits several images along it), not the longest
  EXPECT_LE(p.rc, *std::max_element(box.begin(), box.end()) * (1 + 1e-12));
  for (int a = 0; a < 3; ++a) {
    EXPECT_GE(p.grid[a], 4);
    EXPECT_GE(p.grid[a], p.P);
    EXPECT_NEAR(p.h[a], box[a] / p.grid[a], 1e-14 * box[a]);
    EXPECT_GE(p.cells[a], 1);
    if (p.cells[a] > 1) {  // one cell along an axis shorter than the width: images are visited instead
      const double per_rc = a == 2 ? elliptica::ewald::detail::kCellsPerRcZ
                                   : elliptica::ewald::detail::cells_per_rc_xy(o.precision);
      EXPECT_GE(box[a] / p.cells[a], p.rc / per_rc * (1 - 1e-12)) << "cell width below rc / " << per_rc << " on axis " << a;
    }
  }
  EXPECT_GE(p.P, 2);
  EXPECT_LE(p.P, 32);
  EXPECT_GT(p.beta, 0);
  EXPECT_GE(p.poly_degree, 1);
  EXPECT_GE(p.est_real, 0);
  EXPECT_GE(p.est_fourier, 0);
  EXPECT_GE(p.est_window, 0);
  EXPECT_NEAR(p.est_total,
              std::sqrt(p.est_real * p.est_real + p.est_fourier * p.est_fourier + p.est_window * p.est_window),
              1e-12 * p.est_total);
  EXPECT_LE(p.est_total, p.eps_abs);
  if (c.kind == ToleranceKind::Absolute) {
    EXPECT_DOUBLE_EQ(p.eps_abs, c.eps);
  } else {
    EXPECT_GT(p.result_rms, 0);
    EXPECT_NEAR(p.eps_abs, c.eps * p.result_rms, 1e-12 * p.eps_abs);
    EXPECT_NEAR(p.est_relative, p.est_total / p.result_rms, 1e-12 * p.est_relative);
    // the pilot's RMS is a low-accuracy estimate of the true RMS of the result
    // (RMS over the targets of |u|: for the stokeslet sqrt(3) times the per-component RMS)
    EXPECT_NEAR(p.result_rms / (rms(r.values.values) * std::sqrt(static_cast<double>(r.values.cols))), 1.0, 0.1);
  }
  EXPECT_FALSE(p.describe().empty());
}

INSTANTIATE_TEST_SUITE_P(Cases, EwaldParams,
                         ::testing::Values(ParamCase{Kernel::Laplace, ToleranceKind::Relative, 1e-4},
                                           ParamCase{Kernel::Laplace, ToleranceKind::Relative, 1e-11},
                                           ParamCase{Kernel::Laplace, ToleranceKind::Absolute, 1e-7},
                                           ParamCase{Kernel::Stokeslet, ToleranceKind::Relative, 1e-4},
                                           ParamCase{Kernel::Stokeslet, ToleranceKind::Relative, 1e-11},
                                           ParamCase{Kernel::Stokeslet, ToleranceKind::Absolute, 1e-7}),
                         [](const ::testing::TestParamInfo<ParamCase>& i) {
                           std::ostringstream s;
                           s << to_string(i.param.kernel)
                             << (i.param.kind == ToleranceKind::Relative ? "_relative_" : "_absolute_") << "eps1em"
                             << std::lround(-std::log10(i.param.eps));
                           return s.str();
                         });

TEST(EwaldThreads, OneAndTwoThreadsAgree) {
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet}) {
    const std::array<double, 3> box{1.0, 1.7, 0.8};
    const int comps = k == Kernel::Stokeslet ? 3 : 1;
    const auto x = make_points(Distribution::Clustered, 150, box, 901);
    const auto s = make_strengths(150, comps, 902, true);
    const auto t = make_points(Distribution::Uniform, 40, box, 903);
    Options o;
    o.kernel = k;
    o.box = box;
    o.tolerance = 1e-10;
    o.compute_field = k == Kernel::Laplace;
    o.threads = 1;
    EwaldPlan p1(o);
    o.threads = 2;
    EwaldPlan p2(o);
    const Result a = eval(p1, x, s, comps), b = eval(p2, x, s, comps);
    EXPECT_EQ(a.params.grid, b.params.grid);
    EXPECT_LT(rel_rms_err(b.values.values, a.values.values), 1e-13) << to_string(k);
    if (o.compute_field) {
      EXPECT_LT(rel_rms_err(b.field.values, a.field.values), 1e-13);
    }
    const Result c = eval(p1, x, s, comps, &t), d = eval(p2, x, s, comps, &t);
    EXPECT_LT(rel_rms_err(d.values.values, c.values.values), 1e-13) << to_string(k) << " targets";
  }
}

// Explicit overrides are used as given.
TEST(EwaldOverrides, OverridesAreUsedAndStillAccurate) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const auto x = make_points(Distribution::Uniform, 100, box, 951);
  const auto q = make_strengths(100, 1, 952, true);
  RefOptions ro;
  const auto ref = direct_ewald(ro, x, q);
  Options o;
  o.tolerance = 1e-3;  // what these overrides can reach (a tighter one is refused, see test_ewald_geometry)
  o.xi = 8.0;
  o.rc = 0.33;
  o.grid = std::array<int, 3>{48, 48, 48};
  o.window_support = 10;
  EwaldPlan plan(o);
  const Result r = eval(plan, x, q, 1);
  EXPECT_EQ(r.params.xi, 8.0);
  EXPECT_EQ(r.params.rc, 0.33);
  EXPECT_EQ(r.params.grid, (std::array<int, 3>{48, 48, 48}));
  EXPECT_EQ(r.params.P, 10);
  // erfc(8 * 0.33) ~ 1e-4 relative truncation of the real-space part at worst; the other parts
  // are far more accurate with this grid: the error is governed by r_c.
  const double err = rel_rms_err(r.values.values, ref.values);
  EXPECT_LT(err, 1e-3) << params_str(r.params);
  EXPECT_GT(r.params.est_real, 0);
}

}  // namespace
