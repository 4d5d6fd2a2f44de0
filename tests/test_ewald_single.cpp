// Single-precision (float32) spectral Ewald plans: every kernel against the independent
// classical Ewald sum and against the float64 path, at tolerances down to the documented float32
// floor (single_precision_floor), and the refusal below it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::Densities;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::Precision;
using elliptica::ewald::Result;
using namespace elliptica::testref;

struct Data {
  std::array<double, 3> box{1.0, 1.3, 0.8};
  std::vector<double> x, t, f, q1, d, nu, ref;
};

// ref: the classical Ewald sum (reference/direct_ewald), n sources, 37 separate targets.
const Data& data(Kernel k, Distribution dist) {
  static std::map<std::pair<int, int>, Data> cache;
  const auto key = std::make_pair(static_cast<int>(k), static_cast<int>(dist));
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Data D;
  const std::size_t n = 220;
  D.x = make_points(dist, n, D.box, 40 + key.first);
  D.t = make_points(dist, 37, D.box, 50 + key.first);
  D.f = make_strengths(n, 3, 41, true);
  D.q1 = make_strengths(n, 1, 42, true);
  D.d = make_strengths(n, 3, 43, false);
  D.nu = make_strengths(n, 3, 44, false);
  RefOptions ro;
  ro.box = D.box;
  std::vector<double> s;
  switch (k) {
    case Kernel::Laplace: ro.kernel = RefKernel::Laplace; s = D.q1; break;
    case Kernel::Stokeslet: ro.kernel = RefKernel::Stokeslet; s = D.f; break;
    case Kernel::Stresslet:
      ro.kernel = RefKernel::Stresslet;
      for (std::size_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) s.push_back(D.d[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(D.nu[3 * i + a]);
      }
      break;
    case Kernel::StokesCombined:
      ro.kernel = RefKernel::StokesCombined;
      for (std::size_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) s.push_back(D.f[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(D.d[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(D.nu[3 * i + a]);
      }
      break;
  }
  D.ref = direct_ewald(ro, D.x, s, &D.t).values;
  return cache.emplace(key, std::move(D)).first->second;
}

// same: the parameters of another plan (xi, r_c, grid, window), so that the two precisions are
// compared at equal parameters whatever the cost model's constants choose.
Result run(Kernel k, const Data& D, double eps, Precision p, const elliptica::ewald::Params* same = nullptr) {
  Options o;
  o.kernel = k;
  o.box = D.box;
  o.tolerance = eps;
  o.precision = p;
  if (same) {
    o.xi = same->xi;
    o.rc = same->rc;
    o.grid = same->grid;
    o.window_support = same->P;
    o.window_shape = same->beta;
    o.poly_degree = same->poly_degree;
  }
  EwaldPlan plan(o);
  const bool dl = elliptica::ewald::has_double_layer(k);
  plan.set_points(ConstMatrixView<double>(D.x, 3), ConstMatrixView<double>(D.t, 3),
                  dl ? std::optional<ConstMatrixView<double>>(ConstMatrixView<double>(D.nu, 3)) : std::nullopt);
  Densities d;
  if (k == Kernel::Laplace) d.strengths = ConstMatrixView<double>(D.q1, 1);
  if (k == Kernel::Stokeslet || k == Kernel::StokesCombined) d.strengths = ConstMatrixView<double>(D.f, 3);
  if (dl) d.dipoles = ConstMatrixView<double>(D.d, 3);
  return plan.evaluate(d);
}

using Case = std::tuple<Kernel, Distribution, double>;
class EwaldSingle : public ::testing::TestWithParam<Case> {};

TEST_P(EwaldSingle, Float32MeetsTheTolerance) {
  const auto& [k, dist, eps] = GetParam();
  const Data& D = data(k, dist);
  const Result r32 = run(k, D, eps, Precision::Single);
  const Result r64 = run(k, D, eps, Precision::Double, &r32.params);
  const double e32 = rel_rms_err(r32.values.values, D.ref), e64 = rel_rms_err(r64.values.values, D.ref);
  EXPECT_LT(e32, eps) << "float32: measured " << e32 << " (float64: " << e64 << ")";
  EXPECT_LT(e64, eps) << "float64 at the float32 plan's parameters";
  // same parameters in both precisions; the difference is float32 rounding plus at most the
  // two truncation errors, which are identical: so far below eps
  EXPECT_LT(rel_rms_err(r32.values.values, r64.values.values), std::max(0.5 * eps, 1e-6));
}

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  const auto& [k, dist, eps] = i.param;
  std::string kn = to_string(k);
  for (char& c : kn)
    if (c == '-') c = '_';
  return kn + "_" + to_string(dist) + "_eps1em" + std::to_string(static_cast<int>(std::lround(-std::log10(eps))));
}

INSTANTIATE_TEST_SUITE_P(Matrix, EwaldSingle,
                         ::testing::Combine(::testing::Values(Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet,
                                                              Kernel::StokesCombined),
                                            ::testing::Values(Distribution::Uniform, Distribution::Clustered),
                                            ::testing::Values(1e-2, 1e-4, 1e-6)),
                         case_name);

TEST(EwaldSingleFloor, FormulaAndRefusalBelowIt) {
  const double u = std::ldexp(1.0, -24);
  EXPECT_NEAR(elliptica::ewald::single_precision_floor({64, 64, 64}, 16384), 2 * u * std::sqrt(18.0 + 14.0), 1e-20);
  const Data& D = data(Kernel::Stresslet, Distribution::Uniform);
  // just above the floor of the grid this tolerance needs: accepted, and met
  const Result ok = run(Kernel::Stresslet, D, 7e-7, Precision::Single);
  const double fl = elliptica::ewald::single_precision_floor(ok.params.grid, D.x.size());
  ASSERT_LT(fl, 7e-7);
  EXPECT_LT(rel_rms_err(ok.values.values, D.ref), 7e-7);
  // below it: refused with a message naming single precision and the floor
  try {
    run(Kernel::Stresslet, D, 2e-7, Precision::Single);
    ADD_FAILURE() << "no exception below the float32 floor";
  } catch (const elliptica::NumericalError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("single precision"), std::string::npos) << m;
    EXPECT_NE(m.find("double"), std::string::npos) << m;
  }
  // the float64 path accepts it
  EXPECT_LT(rel_rms_err(run(Kernel::Stresslet, D, 2e-7, Precision::Double).values.values, D.ref), 2e-7);
}

TEST(EwaldSingleFloor, PrecisionNames) {
  using elliptica::ewald::precision_from_string;
  EXPECT_EQ(precision_from_string("single"), Precision::Single);
  EXPECT_EQ(precision_from_string("float32"), Precision::Single);
  EXPECT_EQ(precision_from_string("double"), Precision::Double);
  EXPECT_THROW(precision_from_string("half"), elliptica::InvalidArgument);
}

}  // namespace

namespace {

// Targets = sources in float32 (the padding and out-of-range lanes of the SIMD P2P once
// overflowed in the stresslet's xi^2 r^2 and gave NaN, only with targets = sources).
TEST(EwaldSingleSelf, EveryKernelTargetsAreSources) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const std::size_t n = 1000;
  const auto x = make_points(Distribution::Uniform, n, box, 1);
  const auto f = make_strengths(n, 3, 2, true), q1 = make_strengths(n, 1, 3, true);
  const auto d = make_strengths(n, 3, 4, false), nu = make_strengths(n, 3, 5, false);
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet, Kernel::StokesCombined}) {
    const bool dl = elliptica::ewald::has_double_layer(k);
    Densities dens;
    if (k == Kernel::Laplace) dens.strengths = ConstMatrixView<double>(q1, 1);
    if (k == Kernel::Stokeslet || k == Kernel::StokesCombined) dens.strengths = ConstMatrixView<double>(f, 3);
    if (dl) dens.dipoles = ConstMatrixView<double>(d, 3);
    std::vector<double> out[2];
    for (int prec = 0; prec < 2; ++prec) {
      Options o;
      o.kernel = k;
      o.box = box;
      o.tolerance = prec == 0 ? 1e-10 : 1e-4;
      o.precision = prec == 0 ? Precision::Double : Precision::Single;
      EwaldPlan plan(o);
      plan.set_points(ConstMatrixView<double>(x, 3), std::nullopt,
                      dl ? std::optional<ConstMatrixView<double>>(ConstMatrixView<double>(nu, 3)) : std::nullopt);
      out[prec] = plan.evaluate(dens).values.values;
    }
    EXPECT_LT(rel_rms_err(out[1], out[0]), 1e-4) << to_string(k);
  }
}

}  // namespace
