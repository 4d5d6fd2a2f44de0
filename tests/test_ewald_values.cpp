// Extreme values through the spectral Ewald plan (issue 9, findings 1 and 2): coordinates from
// denormals to 1e15 box lengths, negative, exact multiples of L, and extreme boxes. Every case
// ends either in a correct result -- bit-for-bit the result for the same points wrapped into the
// box by hand, which is itself checked against the independent direct Ewald sum -- or in an
// elliptica::Error naming the problem; never a crash (these cases overflowed the cell list's heap
// buffer and aborted on std::bad_alloc before).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/internal.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::detail::cell_index;
using elliptica::ewald::detail::wrap_into_box;

constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD != 0;

/// The test's own periodic wrap: the remainder of v / L by fmod (exact in IEEE arithmetic), moved
/// into [0, L); written here from the definition, not taken from the library.
double wrap_by_hand(double v, double L) {
  double r = std::fmod(v, L);
  if (r < 0) r += L;
  if (r >= L) r -= L;
  return r < 0 ? 0.0 : r;
}

/// A coordinate that lands on `target` (in [0, L)) after wrapping, pushed out by up to `reach`
/// box lengths in either direction, or one of the special values (denormals, zeros, exact
/// multiples of L, the neighbours of L). The pushed value is rounded, so its wrapped position is
/// not exactly `target`: the reference is wrap_by_hand of the value actually used.
double extreme_coordinate(std::mt19937_64& g, double target, double L, double reach, bool special) {
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const int kind = special ? static_cast<int>(g() % 8) : 5;
  switch (kind) {
    case 0: return std::numeric_limits<double>::denorm_min() * double(1 + g() % 1000);
    case 1: return -std::numeric_limits<double>::denorm_min() * double(1 + g() % 1000);
    case 2: return (g() % 2 ? 1.0 : -1.0) * L * std::ldexp(1.0, static_cast<int>(g() % 40));  // exact multiples
    case 3: return std::nextafter(L, 0.0);
    case 4: return -0.0;
    default: {
      // log-uniform magnitude of the shift in [1e-3, reach] box lengths, either sign
      const double m = std::pow(10.0, -3.0 + U(g) * (std::log10(reach) + 3.0));
      const double shift = std::floor(m) * L * (g() % 2 ? 1.0 : -1.0);
      return target + shift;
    }
  }
}

std::vector<double> evaluate(const Options& o, const std::vector<double>& x, const std::vector<double>& q) {
  EwaldPlan plan(o);
  const std::size_t n = q.size();
  auto r = plan.evaluate(ConstMatrixView<double>(x.data(), n, 3), ConstMatrixView<double>(q.data(), n, 1));
  return r.values.values;
}

double rel_rms(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    e += (a[i] - b[i]) * (a[i] - b[i]);
    s += b[i] * b[i];
  }
  return std::sqrt(e / s);
}

}  // namespace

TEST(EwaldWrap, StaysInTheBoxForEveryFiniteValue) {
  std::mt19937_64 g(20261201);
  const double boxes[] = {1.86206, 3.0, 1e-5, 7.25e10, 1e-100, 1e100, 0.1};
  for (double L : boxes) {
    for (int i = 0; i < 20000; ++i) {
      // magnitudes from denormals to the top of the double range, both signs
      const double mag = std::ldexp(1.0, static_cast<int>(g() % 2098) - 1074) * (1.0 + double(g() % 1000) / 1000.0);
      const double v = std::isfinite(mag) ? (g() % 2 ? mag : -mag) : 1e308;
      const double w = wrap_into_box(v, L);
      ASSERT_TRUE(w >= 0.0 && w < L) << "v = " << v << ", L = " << L << " -> " << w;
      ASSERT_FALSE(std::signbit(w)) << v;
      // the cell and grid indices derived from it are in range by construction
      for (int n : {1, 2, 7, 1000}) {
        const int c = cell_index(w, n / L, n);
        ASSERT_TRUE(c >= 0 && c < n) << v;
      }
      // where v - w is exactly representable the wrap is a whole number of box lengths
      if (std::abs(v) < 1e6 * L && std::abs(v) > 0) {
        const double k = (v - w) / L;
        ASSERT_NEAR(k, std::round(k), 1e-9 * std::max(1.0, std::abs(k))) << v;
      }
    }
    // the values that broke "v -= L floor(v/L)" (negative or == L after rounding)
    for (double v : {-std::numeric_limits<double>::denorm_min(), -1e-300, std::nextafter(L, 0.0), L, -L, 3 * L,
                     std::nextafter(-L, 0.0), 1e16, -1e17, 1e308, -1e308}) {
      const double w = wrap_into_box(v, L);
      EXPECT_TRUE(w >= 0.0 && w < L) << v << " -> " << w;
    }
  }
}

TEST(EwaldWrap, CoordinatesFarOutsideAreRefusedNotWrappedWrongly) {
  // Finding 1's reproducer: one coordinate of 1e308 (then 1e16..1e18) in the water box, whose
  // length is not a power of two. This used to write out of the cell list's bounds.
  const double L = 1.86206;
  std::vector<double> x = elliptica::testref::make_points(elliptica::testref::Distribution::Uniform, 40, {L, L, L}, 5);
  std::vector<double> q = elliptica::testref::make_strengths(40, 1, 6, true);
  Options o;
  o.box = {L, L, L};
  o.tolerance = 1e-6;
  o.threads = 1;
  for (double big : {1e308, 1e18, 1e17, 1e16, -3e15}) {
    auto y = x;
    y[3 * 11 + 1] = big;
    try {
      evaluate(o, y, q);
      ADD_FAILURE() << "no error for a coordinate of " << big;
    } catch (const elliptica::InvalidArgument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("point 11"), std::string::npos) << m;
      EXPECT_NE(m.find("box lengths"), std::string::npos) << m;
    }
  }
  // up to 1e15 box lengths the points wrap exactly: same result as the hand-wrapped points
  for (double big : {1e14, -1e12, 5e9}) {
    auto y = x, w = x;
    y[3 * 11 + 1] = big;
    w[3 * 11 + 1] = wrap_by_hand(big, L);
    const auto a = evaluate(o, y, q), b = evaluate(o, w, q);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "big = " << big << ", target " << i;
  }
}

TEST(EwaldValueFuzz, ExtremeCoordinatesGiveTheWrappedResult) {
  // Random trials: each coordinate of each point is either a special value or a point of the box
  // pushed out by up to 1e14 box lengths. The result must equal, bit for bit, the result for the
  // hand-wrapped points, and that must match the direct Ewald sum at the tolerance.
  std::mt19937_64 g(91);
  const int trials = kSanitized ? 3 : 12;
  for (int t = 0; t < trials; ++t) {
    // box lengths from 2^-30 to 2^30 (times a non-power-of-two factor), aspect ratios up to 10
    const double L0 = std::ldexp(1.0, static_cast<int>(g() % 60) - 30) * 1.37;
    const std::array<double, 3> L{L0, L0 * (0.3 + 3.0 * double(g() % 1000) / 1000.0),
                                  L0 * (0.3 + 3.0 * double(g() % 1000) / 1000.0)};
    const std::size_t n = 24 + g() % 24;
    const auto base = elliptica::testref::make_points(elliptica::testref::Distribution::Uniform, n, L, 100 + t);
    const auto q = elliptica::testref::make_strengths(n, 1, 200 + t, true);
    std::vector<double> x(3 * n), w(3 * n);
    for (std::size_t i = 0; i < n; ++i)
      for (int d = 0, sd = static_cast<int>(g() % 3); d < 3; ++d) {
        // one coordinate per point may take a special value (the other two keep the points apart)
        x[3 * i + d] = extreme_coordinate(g, base[3 * i + d], L[d], 1e14, d == sd);
        w[3 * i + d] = wrap_by_hand(x[3 * i + d], L[d]);
        ASSERT_TRUE(w[3 * i + d] >= 0 && w[3 * i + d] < L[d]);
      }
    Options o;
    o.box = L;
    o.tolerance = 1e-7;
    o.threads = 1 + static_cast<int>(g() % 2);
    SCOPED_TRACE("trial " + std::to_string(t) + ", box " + std::to_string(L[0]) + " x " + std::to_string(L[1]) +
                 " x " + std::to_string(L[2]));
    const auto a = evaluate(o, x, q), b = evaluate(o, w, q);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << "target " << i;
    elliptica::testref::RefOptions ro;
    ro.box = L;
    const auto ref = elliptica::testref::direct_ewald(ro, w, q);
    // the plan's error estimate holds the RMS error below the tolerance; measured 0.1-0.7 eps
    EXPECT_LT(rel_rms(b, ref.values), 1e-7);
  }
}

TEST(EwaldValueFuzz, ExtremeBoxesGiveAResultOrAClearError) {
  // Box lengths from 1e-100 to 1e100 and aspect ratios up to 1e12: either a result that matches
  // the direct sum, or an elliptica::Error (InvalidArgument, ResourceError, NumericalError) whose
  // message names the cause. Elongated boxes used to end in std::bad_alloc escaping an OpenMP
  // region (abort) after growing the P2P image lists without bound.
  const std::vector<std::array<double, 3>> boxes = {
      {1e-100, 1e-100, 1e-100}, {1e100, 1e100, 1e100}, {1e-60, 2e-60, 3e-60}, {1e8, 1, 1},
      {1e12, 1, 1},             {1, 1, 1e-12},         {1e3, 1e3, 1},         {3, 1, 300}};
  std::size_t results = 0, errors = 0;
  for (const auto& L : boxes) {
    SCOPED_TRACE("box " + std::to_string(L[0]) + " x " + std::to_string(L[1]) + " x " + std::to_string(L[2]));
    const std::size_t n = 30;
    const auto x = elliptica::testref::make_points(elliptica::testref::Distribution::Uniform, n, L, 7);
    const auto q = elliptica::testref::make_strengths(n, 1, 8, true);
    Options o;
    o.box = L;
    o.tolerance = 1e-5;
    o.threads = 2;
    try {
      const auto r = evaluate(o, x, q);
      ++results;
      for (double v : r) ASSERT_TRUE(std::isfinite(v));
      const double Lmax = std::max({L[0], L[1], L[2]}), Lmin = std::min({L[0], L[1], L[2]});
      if (Lmax / Lmin < 1e3) {  // the direct reference sums too many images beyond that
        // The reference at unit scale: phi(s x; s L) = phi(x; L) / s, s a power of two (exact).
        const double sc = std::ldexp(1.0, std::ilogb(Lmax));
        elliptica::testref::RefOptions ro;
        ro.box = {L[0] / sc, L[1] / sc, L[2] / sc};
        std::vector<double> xs(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) xs[i] = x[i] / sc;
        auto ref = elliptica::testref::direct_ewald(ro, xs, q).values;
        for (double& v : ref) v /= sc;
        EXPECT_LT(rel_rms(r, ref), 1e-5);
      }
    } catch (const elliptica::Error& e) {
      ++errors;
      const std::string m = e.what();
      EXPECT_FALSE(m.empty());
      EXPECT_TRUE(e.category() == elliptica::ErrorCategory::Resource ||
                  e.category() == elliptica::ErrorCategory::InvalidArgument ||
                  e.category() == elliptica::ErrorCategory::Numerical)
          << m;
      if (L[0] / L[1] >= 1e8) {
        EXPECT_EQ(e.category(), elliptica::ErrorCategory::Resource) << m;
        EXPECT_NE(m.find("aspect ratio"), std::string::npos) << m;
      }
    }
  }
  EXPECT_GT(results, 3u);  // the cubic and moderate boxes work
  EXPECT_GT(errors, 0u);   // the 1e8 and 1e12 needles cannot fit the limits
}

TEST(EwaldResourceLimits, GridOverrideAboveTheCapIsAnInvalidArgument) {
  // `--grid 1024` used to end as exit 4 (numerical failure) for what is a bad argument.
  Options o;
  o.box = {1.86206, 1.86206, 1.86206};
  o.grid = std::array<int, 3>{1024, 1024, 1024};
  const auto x = elliptica::testref::make_points(elliptica::testref::Distribution::Uniform, 20, o.box, 3);
  const auto q = elliptica::testref::make_strengths(20, 1, 4, true);
  try {
    evaluate(o, x, q);
    ADD_FAILURE() << "no error";
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("grid override"), std::string::npos) << e.what();
  }
}
