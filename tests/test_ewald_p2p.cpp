// P2P's source runs (per target, the columns of colleague cells and the z-range its sphere of
// radius r_c reaches): the pairs it evaluates are exactly the (target, source image) pairs with
// coincidence <= r < r_c, counted here by brute force over periodic images, for self and separate
// targets, cubic and non-cubic boxes, r_c below and above half a box length (several images of
// one source), float64 and float32.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <tuple>

#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::Precision;
using elliptica::ewald::Result;
using namespace elliptica::testref;

// Ordered (target, source image) pairs with coincidence <= |r| < rc, r = t - s + n L.
std::size_t brute_pairs(const std::vector<double>& t, const std::vector<double>& s, const std::array<double, 3>& box,
                        double rc) {
  const double L = std::max({box[0], box[1], box[2]});
  const double co2 = (elliptica::ewald::kCoincidenceRelative * L) * (elliptica::ewald::kCoincidenceRelative * L);
  int K[3];
  for (int d = 0; d < 3; ++d) K[d] = static_cast<int>(std::ceil(rc / box[d])) + 1;
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.size() / 3; ++i)
    for (std::size_t j = 0; j < s.size() / 3; ++j)
      for (int a = -K[0]; a <= K[0]; ++a)
        for (int b = -K[1]; b <= K[1]; ++b)
          for (int c = -K[2]; c <= K[2]; ++c) {
            auto wrap = [&](double v, int d) { return v - box[d] * std::floor(v / box[d]); };
            const double rx = wrap(t[3 * i], 0) - wrap(s[3 * j], 0) + a * box[0];
            const double ry = wrap(t[3 * i + 1], 1) - wrap(s[3 * j + 1], 1) + b * box[1];
            const double rz = wrap(t[3 * i + 2], 2) - wrap(s[3 * j + 2], 2) + c * box[2];
            const double r2 = rx * rx + ry * ry + rz * rz;
            n += r2 < rc * rc && r2 >= co2;
          }
  return n;
}

class P2PRuns : public ::testing::TestWithParam<std::tuple<bool, bool, double, bool>> {};

TEST_P(P2PRuns, EvaluatedPairsAreExactlyThoseWithinRc) {
  const auto [noncubic, separate, rc_frac, single] = GetParam();
  const std::array<double, 3> box = noncubic ? std::array<double, 3>{1.0, 2.3, 0.7} : std::array<double, 3>{1.0, 1.0, 1.0};
  const std::size_t n = 400;
  const auto x = make_points(Distribution::Clustered, n, box, 5);
  const auto y = make_points(Distribution::Uniform, 150, box, 6);
  const auto q = make_strengths(n, 1, 7, true);
  Options o;
  o.kernel = Kernel::Laplace;
  o.box = box;
  o.tolerance = single ? 1e-3 : 1e-6;
  o.precision = single ? Precision::Single : Precision::Double;
  o.rc = rc_frac * std::min({box[0], box[1], box[2]});
  EwaldPlan plan(o);
  if (separate) plan.set_points(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(y, 3));
  else plan.set_points(ConstMatrixView<double>(x, 3));
  const Result r = plan.evaluate(ConstMatrixView<double>(q, 1));
  const double rc = r.params.rc;
  const std::size_t expected = brute_pairs(separate ? y : x, x, box, rc);
  EXPECT_EQ(r.p2p.pairs, expected) << "rc " << rc;
  EXPECT_GE(r.p2p.candidates, r.p2p.pairs);
  EXPECT_GT(r.p2p.series_degree, 0);
}

INSTANTIATE_TEST_SUITE_P(Boxes, P2PRuns,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Values(0.12, 0.6),
                                            ::testing::Bool()));

}  // namespace
