// Bad input to the spectral Ewald plan: every case throws elliptica::InvalidArgument whose
// message names the problem (checked case-insensitively against a few words a user would
// recognise), and nothing else.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// Runs f; expects elliptica::InvalidArgument whose message contains (case-insensitively) at
/// least one word of each group.
void expect_invalid(const std::function<void()>& f, const std::vector<std::vector<std::string>>& groups,
                    const std::string& what) {
  SCOPED_TRACE(what);
  try {
    f();
    ADD_FAILURE() << "no exception thrown";
  } catch (const elliptica::InvalidArgument& e) {
    const std::string msg = lower(e.what());
    EXPECT_EQ(e.category(), elliptica::ErrorCategory::InvalidArgument);
    for (const auto& g : groups) {
      const bool hit = std::any_of(g.begin(), g.end(), [&](const std::string& w) { return msg.find(lower(w)) != std::string::npos; });
      std::string words;
      for (const auto& w : g) words += " '" + w + "'";
      EXPECT_TRUE(hit) << "message \"" << e.what() << "\" contains none of" << words;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type, message: " << e.what();
  }
}

std::vector<double> pts(std::size_t n) {
  std::vector<double> x(3 * n);
  for (std::size_t i = 0; i < 3 * n; ++i) x[i] = std::fmod(0.1234 + 0.618034 * static_cast<double>(i), 1.0);
  return x;
}
std::vector<double> vals(std::size_t n) {
  std::vector<double> q(n);
  for (std::size_t i = 0; i < n; ++i) q[i] = (i % 2 ? 1.0 : -1.0) * (0.5 + 0.01 * static_cast<double>(i));
  return q;
}

Options laplace() {
  Options o;
  o.kernel = Kernel::Laplace;
  o.tolerance = 1e-4;
  return o;
}
Options stokeslet() {
  Options o = laplace();
  o.kernel = Kernel::Stokeslet;
  return o;
}

using V = ConstMatrixView<double>;

// ---- data (evaluate) ----

TEST(EwaldValidation, NonFiniteCoordinates) {
  for (double bad : {kNaN, kInf, -kInf}) {
    auto x = pts(10);
    x[3 * 4 + 1] = bad;
    const auto q = vals(10);
    expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x, 3), V(q, 1)); },
                   {{"nan", "inf", "finite"}, {"source"}}, "non-finite source coordinate");
    const auto y = pts(10);
    expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(y, 3), V(q, 1), V(x, 3)); },
                   {{"nan", "inf", "finite"}, {"target"}}, "non-finite target coordinate");
  }
}

TEST(EwaldValidation, NonFiniteStrengths) {
  const auto x = pts(10);
  auto q = vals(10);
  q[3] = kNaN;
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x, 3), V(q, 1)); },
                 {{"nan", "inf", "finite"}, {"strength", "charge"}}, "NaN charge");
  std::vector<double> f(30, 0.1);
  f[17] = kInf;
  expect_invalid([&] { EwaldPlan(stokeslet()).evaluate(V(x, 3), V(f, 3)); },
                 {{"nan", "inf", "finite"}, {"strength", "force"}}, "Inf force");
}

TEST(EwaldValidation, WrongShapes) {
  const auto q = vals(10);
  const std::vector<double> x2(20, 0.5);
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x2, 2), V(q, 1)); },
                 {{"source"}, {"shape", "column", "(n,3)", "(n, 3)"}}, "(N,2) sources");
  const auto x = pts(10);
  const std::vector<double> q3(30, 0.1);
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x, 3), V(q3, 3)); },
                 {{"strength", "charge"}, {"shape", "column", "component", "(n,1)", "(n,)"}},
                 "(N,3) strengths for laplace");
  expect_invalid([&] { EwaldPlan(stokeslet()).evaluate(V(x, 3), V(q, 1)); },
                 {{"strength", "force"}, {"shape", "column", "component", "(n,3)", "(n, 3)"}},
                 "(N,1) strengths for stokeslet");
  const std::vector<double> t4(40, 0.3);
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x, 3), V(q, 1), V(t4, 4)); },
                 {{"target"}, {"shape", "column", "(n,3)", "(n, 3)"}}, "(N,4) targets");
}

TEST(EwaldValidation, MismatchedLengths) {
  const auto x = pts(10);
  const auto q = vals(9);
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(x, 3), V(q, 1)); },
                 {{"strength", "charge"}, {"match", "rows", "length", "number", "same"}}, "9 charges for 10 sources");
  const std::vector<double> f(33, 0.1);
  expect_invalid([&] { EwaldPlan(stokeslet()).evaluate(V(x, 3), V(f, 3)); },
                 {{"strength", "force"}, {"match", "rows", "length", "number", "same"}}, "11 forces for 10 sources");
}

TEST(EwaldValidation, NoPoints) {
  const std::vector<double> none;
  expect_invalid([&] { EwaldPlan(laplace()).evaluate(V(none.data(), 0, 3), V(none.data(), 0, 1)); },
                 {{"empty", "no ", "zero", "at least", "0 "}}, "zero sources");
  const auto x = pts(10);
  const auto q = vals(10);
  // Zero targets are not an error: the result is empty (nothing is tuned or allocated).
  const auto r = EwaldPlan(laplace()).evaluate(V(x, 3), V(q, 1), V(none.data(), 0, 3));
  EXPECT_EQ(r.values.rows, 0u);
  EXPECT_EQ(r.values.cols, 1u);
}

// ---- options (constructor) ----

TEST(EwaldValidation, BadBox) {
  for (double bad : {0.0, -1.0, kNaN, kInf}) {
    for (int axis = 0; axis < 3; ++axis) {
      Options o = laplace();
      o.box[axis] = bad;
      expect_invalid([&] { EwaldPlan p(o); }, {{"box"}}, "box component " + std::to_string(bad));
    }
  }
}

TEST(EwaldValidation, BadTolerance) {
  for (double bad : {0.0, -1e-6, 1.0, 2.0, kNaN}) {
    Options o = laplace();
    o.tolerance = bad;
    expect_invalid([&] { EwaldPlan p(o); }, {{"tolerance", "eps"}}, "tolerance " + std::to_string(bad));
  }
}

TEST(EwaldValidation, BadViscosity) {
  for (double bad : {0.0, -2.0, kNaN}) {
    Options o = stokeslet();
    o.viscosity = bad;
    expect_invalid([&] { EwaldPlan p(o); }, {{"viscosity", "mu"}}, "viscosity " + std::to_string(bad));
  }
}

TEST(EwaldValidation, FieldWithStokeslet) {
  Options o = stokeslet();
  o.compute_field = true;
  expect_invalid([&] { EwaldPlan p(o); }, {{"field"}}, "field with stokeslet");
}

TEST(EwaldValidation, BadOverrides) {
  for (double bad : {0.0, -3.0, kNaN}) {
    Options o = laplace();
    o.xi = bad;
    expect_invalid([&] { EwaldPlan p(o); }, {{"xi"}}, "xi " + std::to_string(bad));
  }
  for (double bad : {0.0, -0.1, 1.2, kNaN}) {  // 1.2 > min(L) = 1
    Options o = laplace();
    o.rc = bad;
    expect_invalid([&] { EwaldPlan p(o); }, {{"rc", "r_c", "cutoff"}}, "rc " + std::to_string(bad));
  }
  for (int bad : {0, 1, 33}) {
    Options o = laplace();
    o.window_support = bad;
    expect_invalid([&] { EwaldPlan p(o); }, {{"window", "support", "p "}}, "P " + std::to_string(bad));
  }
  {
    Options o = laplace();
    o.grid = std::array<int, 3>{16, 3, 16};
    expect_invalid([&] { EwaldPlan p(o); }, {{"grid"}}, "grid 3");
  }
  {
    Options o = laplace();
    o.grid = std::array<int, 3>{8, 8, 8};
    o.window_support = 12;
    expect_invalid([&] { EwaldPlan p(o); }, {{"window", "support", "grid", "p "}}, "P > M");
  }
}

// A valid plan still evaluates after a rejected call (the error left nothing half-done).
TEST(EwaldValidation, PlanUsableAfterRejectedCall) {
  EwaldPlan plan(laplace());
  auto x = pts(10);
  const auto q = vals(10);
  auto bad = x;
  bad[0] = kNaN;
  EXPECT_THROW(plan.evaluate(V(bad, 3), V(q, 1)), elliptica::InvalidArgument);
  const auto r = plan.evaluate(V(x, 3), V(q, 1));
  EXPECT_EQ(r.values.rows, 10u);
  for (double v : r.values.values) EXPECT_TRUE(std::isfinite(v));
}

TEST(EwaldValidation, KernelFromString) {
  EXPECT_EQ(elliptica::ewald::kernel_from_string("laplace"), Kernel::Laplace);
  EXPECT_EQ(elliptica::ewald::kernel_from_string("stokeslet"), Kernel::Stokeslet);
  EXPECT_EQ(elliptica::ewald::kernel_from_string("stresslet"), Kernel::Stresslet);
  EXPECT_EQ(elliptica::ewald::kernel_from_string("stokes-combined"), Kernel::StokesCombined);
  expect_invalid([] { elliptica::ewald::kernel_from_string("rotlet"); }, {{"kernel", "rotlet"}, {"stresslet"}},
                 "unknown kernel");
}

}  // namespace
