// Spectral Ewald in extreme geometries and with extreme inputs, against the independent classical
// Ewald reference: thin slabs and needles (r_c beyond the short side, few Fourier modes along it),
// strengths near the ends of the double range, loose tolerances, and overrides that cannot meet
// the tolerance (which must be refused, not answered badly).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::Result;
using namespace elliptica::testref;

Result eval(EwaldPlan& plan, const std::vector<double>& x, const std::vector<double>& s, int comps) {
  const std::size_t n = x.size() / 3;
  return plan.evaluate(ConstMatrixView<double>(x.data(), n, 3), ConstMatrixView<double>(s.data(), n, comps));
}

double rel_err(const std::vector<double>& a, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    e += (a[i] - ref[i]) * (a[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}

struct GeoCase {
  std::array<double, 3> box;
  Kernel kernel;
  double eps;
};

class EwaldGeometry : public ::testing::TestWithParam<GeoCase> {};

TEST_P(EwaldGeometry, ThinAndLongBoxesMeetTheTolerance) {
  const GeoCase c = GetParam();
  const int comps = c.kernel == Kernel::Stokeslet ? 3 : 1;
  const std::size_t n = 40;
  const auto x = make_points(Distribution::Uniform, n, c.box, 42);
  const auto s = make_strengths(n, comps, 7, false);
  RefOptions ro;
  ro.kernel = c.kernel == Kernel::Stokeslet ? RefKernel::Stokeslet : RefKernel::Laplace;
  ro.box = c.box;
  const auto ref = direct_ewald(ro, x, s);
  Options o;
  o.kernel = c.kernel;
  o.box = c.box;
  o.tolerance = c.eps;
  EwaldPlan plan(o);
  const Result r = eval(plan, x, s, comps);
  const double err = rel_err(r.values.values, ref.values);
  EXPECT_LT(err, c.eps) << r.params.describe();
  // The estimate is an RMS estimate: it must be of the right size, not only below eps.
  EXPECT_GT(r.params.est_relative, err / 5) << r.params.describe();
}

std::string geo_name(const ::testing::TestParamInfo<GeoCase>& i) {
  std::string s = (i.param.kernel == Kernel::Laplace ? "laplace" : "stokeslet");
  for (double L : i.param.box) {
    s += '_';
    s += std::to_string(static_cast<int>(L * 100));
  }
  s += i.param.eps > 1e-6 ? "_eps1em4" : "_eps1em8";
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Boxes, EwaldGeometry,
    ::testing::Values(GeoCase{{20, 20, 0.1}, Kernel::Laplace, 1e-4}, GeoCase{{20, 20, 0.1}, Kernel::Stokeslet, 1e-8},
                      GeoCase{{0.2, 0.2, 30}, Kernel::Laplace, 1e-8}, GeoCase{{0.2, 0.2, 30}, Kernel::Stokeslet, 1e-4},
                      GeoCase{{1, 1, 0.02}, Kernel::Laplace, 1e-8}, GeoCase{{100, 100, 0.1}, Kernel::Laplace, 1e-8},
                      GeoCase{{100, 100, 0.1}, Kernel::Stokeslet, 1e-4}),
    geo_name);

TEST(EwaldExtremeInputs, StrengthsNearTheEndsOfTheDoubleRange) {
  const std::array<double, 3> box{1.0, 1.3, 0.9};
  const std::size_t n = 30;
  const auto x = make_points(Distribution::Uniform, n, box, 3);
  const auto s = make_strengths(n, 1, 4, false);
  Options o;
  o.box = box;
  o.tolerance = 1e-8;
  EwaldPlan base_plan(o);
  const Result base = eval(base_plan, x, s, 1);
  for (double scale : {1e-300, 1e-160, 1e160, 1e300}) {
    std::vector<double> sc(s);
    for (double& v : sc) v *= scale;
    EwaldPlan plan(o);
    const Result r = eval(plan, x, sc, 1);
    std::vector<double> back(r.values.values);
    for (double& v : back) v /= scale;
    EXPECT_LT(rel_err(back, base.values.values), 1e-8) << "scale " << scale;
    EXPECT_EQ(r.params.grid, base.params.grid) << "scale " << scale << ": parameters must not depend on it";
  }
}

TEST(EwaldExtremeInputs, LooseTolerancesAreStillMet) {
  const std::array<double, 3> box{1.0, 2.0, 0.5};
  const std::size_t n = 30;
  const auto x = make_points(Distribution::Uniform, n, box, 5);
  const auto s = make_strengths(n, 1, 6, false);
  RefOptions ro;
  ro.box = box;
  const auto ref = direct_ewald(ro, x, s);
  for (double eps : {0.05, 0.5, 0.99}) {
    Options o;
    o.box = box;
    o.tolerance = eps;
    EwaldPlan plan(o);
    EXPECT_LT(rel_err(eval(plan, x, s, 1).values.values, ref.values), std::min(eps, 1e-2)) << "eps " << eps;
  }
}

TEST(EwaldOverrides, UnreachableToleranceIsRefused) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const std::size_t n = 20;
  const auto x = make_points(Distribution::Uniform, n, box, 8);
  const auto s = make_strengths(n, 1, 9, true);
  auto run = [&](auto set) {
    Options o;
    o.box = box;
    o.tolerance = 1e-10;
    set(o);
    EwaldPlan plan(o);
    eval(plan, x, s, 1);
  };
  EXPECT_THROW(run([](Options& o) { o.xi = 1.0; }), elliptica::NumericalError);
  EXPECT_THROW(run([](Options& o) { o.window_support = 2; }), elliptica::NumericalError);
  EXPECT_THROW(run([](Options& o) { o.poly_degree = 2; }), elliptica::NumericalError);
  EXPECT_THROW(run([](Options& o) { o.grid = std::array<int, 3>{8, 8, 8}; }), elliptica::NumericalError);
  EXPECT_THROW(run([](Options& o) { o.threads = 5000; }), elliptica::InvalidArgument);
  EXPECT_THROW(run([](Options& o) { o.window_shape = 1000.0; }), elliptica::InvalidArgument);
  EXPECT_THROW(run([](Options& o) { o.xi = 1e-300; }), elliptica::InvalidArgument);
}

}  // namespace
