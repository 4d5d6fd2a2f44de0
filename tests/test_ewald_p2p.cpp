// P2P's source runs (per target, the columns of colleague cells and the z-range its sphere of
// radius r_c reaches): the pairs it evaluates are exactly the (target, source image) pairs with
// coincidence <= r < r_c, counted here by brute force over periodic images, for self and separate
// targets, cubic and non-cubic boxes, r_c below and above half a box length (several images of
// one source), float64 and float32 (float64 with pair symmetry: each unordered pair once); every SIMD
// target against the best; pair symmetry (each pair once for both points) against the same plan
// without it.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <array>
#include <cmath>
#include <tuple>

#include "elliptica/ewald/ewald.hpp"
#include "ewald/cpu/p2p_simd.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Densities;
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
  // pair symmetry (the default) with the targets the sources and r_c < min(L)/2: each unordered
  // pair once
  EXPECT_EQ(r.p2p.pair_symmetry, !separate && rc_frac < 0.5 && !single);
  EXPECT_EQ(r.p2p.pair_symmetry ? 2 * r.p2p.pairs : r.p2p.pairs, expected) << "rc " << rc;
  EXPECT_GE(r.p2p.candidates, r.p2p.pairs);
  EXPECT_GT(r.p2p.series_degree, 0);
  EXPECT_GT(r.p2p.exp_degree, 0);
  EXPECT_LE(r.p2p.exp_degree, 16);
}

INSTANTIATE_TEST_SUITE_P(Boxes, P2PRuns,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Values(0.12, 0.6),
                                            ::testing::Bool()));

// Every instruction set the CPU supports (Highway's run-time dispatch: SSE4, AVX2, AVX-512, ...)
// gives the result of the best one to rounding, for every kernel variant (Laplace with and
// without the field, stokeslet with and without the pressure, stresslet, combined) in float64
// and float32, self and separate targets: the SIMD paths differ (compaction, gathers, the
// reciprocal estimates), the pairs and the formulas do not. Each result is also checked against
// the direct Ewald sum at the plan's tolerance, so a target that is wrong everywhere fails too.
struct Variant {
  Kernel k;
  bool second;  // Laplace field / stokeslet pressure
};

class P2PTargets : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};

TEST_P(P2PTargets, EveryInstructionSetAgrees) {
  const Variant variants[] = {{Kernel::Laplace, false},   {Kernel::Laplace, true},   {Kernel::Stokeslet, false},
                              {Kernel::Stokeslet, true},  {Kernel::Stresslet, false}, {Kernel::StokesCombined, false}};
  // std::get, not a structured binding: clang 14 cannot capture bindings in the lambda below
  const int vi = std::get<0>(GetParam());
  const bool single = std::get<1>(GetParam()), separate = std::get<2>(GetParam());
  const Variant v = variants[vi];
  const std::array<double, 3> box{1.0, 1.3, 0.8};
  const std::size_t n = 300;
  const auto x = make_points(Distribution::Clustered, n, box, 11);
  const auto y = make_points(Distribution::Uniform, 40, box, 12);
  const auto q1 = make_strengths(n, 1, 13, true), f = make_strengths(n, 3, 14, true);
  const auto d = make_strengths(n, 3, 15, false), nu = make_strengths(n, 3, 16, false);
  const bool dl = elliptica::ewald::has_double_layer(v.k);
  const double eps = single ? 1e-4 : 1e-9;
  auto run = [&]() {
    Options o;
    o.kernel = v.k;
    o.box = box;
    o.tolerance = eps;
    o.precision = single ? Precision::Single : Precision::Double;
    o.compute_field = v.second && v.k == Kernel::Laplace;
    o.compute_pressure = v.second && v.k == Kernel::Stokeslet;
    o.rc = 0.3;  // fixed: the same pairs for every instruction set
    EwaldPlan plan(o);
    const auto nuv = dl ? std::optional<ConstMatrixView<double>>(ConstMatrixView<double>(nu, 3)) : std::nullopt;
    if (separate) plan.set_points(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(y, 3), nuv);
    else plan.set_points(ConstMatrixView<double>(x, 3), std::nullopt, nuv);
    Densities dens;
    if (v.k == Kernel::Laplace) dens.strengths = ConstMatrixView<double>(q1, 1);
    if (v.k == Kernel::Stokeslet || v.k == Kernel::StokesCombined) dens.strengths = ConstMatrixView<double>(f, 3);
    if (dl) dens.dipoles = ConstMatrixView<double>(d, 3);
    const Result r = plan.evaluate(dens);
    return std::make_pair(r.values.values, std::string(elliptica::ewald::detail::simd_target()));
  };
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  const auto best = run();
  int tried = 0;
  for (int64_t t : targets) {
    hwy::SetSupportedTargetsForTest(t);
    const auto r = run();
    hwy::SetSupportedTargetsForTest(0);
    ++tried;
    ASSERT_EQ(r.first.size(), best.first.size());
    EXPECT_LT(rel_rms_err(r.first, best.first), single ? 1e-5 : 1e-13) << r.second << " vs " << best.second;
  }
  EXPECT_GE(tried, 1);
  // against the classical Ewald sum (the potential / velocity columns)
  RefOptions ro;
  ro.box = box;
  std::vector<double> s;
  switch (v.k) {
    case Kernel::Laplace: ro.kernel = RefKernel::Laplace; s = q1; break;
    case Kernel::Stokeslet: ro.kernel = RefKernel::Stokeslet; s = f; break;
    case Kernel::Stresslet:
      ro.kernel = RefKernel::Stresslet;
      for (std::size_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) s.push_back(d[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(nu[3 * i + a]);
      }
      break;
    case Kernel::StokesCombined:
      ro.kernel = RefKernel::StokesCombined;
      for (std::size_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a) s.push_back(f[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(d[3 * i + a]);
        for (int a = 0; a < 3; ++a) s.push_back(nu[3 * i + a]);
      }
      break;
  }
  const std::vector<double> ref = direct_ewald(ro, x, s, separate ? &y : nullptr).values;
  const int cols = v.k == Kernel::Laplace ? 1 : 3, stride = static_cast<int>(best.first.size() / (ref.size() / cols));
  std::vector<double> got;
  for (std::size_t i = 0; i < ref.size() / cols; ++i)
    for (int c = 0; c < cols; ++c) got.push_back(best.first[i * stride + c]);
  EXPECT_LT(rel_rms_err(got, ref), eps);
}

INSTANTIATE_TEST_SUITE_P(Variants, P2PTargets,
                         ::testing::Combine(::testing::Range(0, 6), ::testing::Bool(), ::testing::Bool()));

// Pair symmetry (Options::pair_symmetry, Newton's third law): in float64, with the targets the
// sources and r_c < min(L)/2, P2P evaluates each pair once for both points, for every kernel
// variant (float32 sums one-sided: the option changes nothing there). Against the same plan
// without it (same parameters): the values (and the field or pressure) agree to rounding, exactly half the pairs
// are evaluated, the coincident pairs (points given twice) are the same; two evaluations on 2
// threads give the same bits; with r_c >= min(L)/2 (several images of a source within r_c) or
// separate targets nothing changes. The brute-force pair count of P2PRuns checks the number of
// pairs independently, P2PTargets (which runs with pair symmetry) the values against the direct sum.
class P2PSymmetry : public ::testing::TestWithParam<std::tuple<int, bool, int>> {};

TEST_P(P2PSymmetry, EachPairOnceSameValues) {
  const Variant variants[] = {{Kernel::Laplace, false},   {Kernel::Laplace, true},   {Kernel::Stokeslet, false},
                              {Kernel::Stokeslet, true},  {Kernel::Stresslet, false}, {Kernel::StokesCombined, false}};
  const int vi = std::get<0>(GetParam());
  const Variant v = variants[vi];
  const bool single = std::get<1>(GetParam());
  const int threads = std::get<2>(GetParam());
  const bool noncubic = (vi + threads) % 2 == 1;
  const std::array<double, 3> box = noncubic ? std::array<double, 3>{1.0, 1.4, 0.7} : std::array<double, 3>{1.0, 1.0, 1.0};
  const std::size_t n0 = 500;
  auto x = make_points(Distribution::Clustered, n0, box, 21);
  for (std::size_t i = 0; i < 5; ++i)  // 5 points given twice: coincident pairs
    for (int a = 0; a < 3; ++a) x.push_back(x[3 * (7 * i) + a]);
  const std::size_t n = x.size() / 3;
  const auto q1 = make_strengths(n, 1, 26, true);
  const auto f = make_strengths(n, 3, 22, true), d = make_strengths(n, 3, 23, false), nu = make_strengths(n, 3, 24, false);
  const auto y = make_points(Distribution::Uniform, 60, box, 25);
  const bool dl = elliptica::ewald::has_double_layer(v.k);
  auto run = [&](bool sym, double rc_frac, bool separate) {
    Options o;
    o.kernel = v.k;
    o.box = box;
    o.tolerance = 1e-4;
    o.precision = single ? Precision::Single : Precision::Double;
    o.compute_field = v.second && v.k == Kernel::Laplace;
    o.compute_pressure = v.second && v.k == Kernel::Stokeslet;
    o.threads = threads;
    o.pair_symmetry = sym;
    o.rc = rc_frac * std::min({box[0], box[1], box[2]});
    // fixed parameters: the same pairs and far field with and without symmetry
    o.xi = 3.5 / (0.3 * std::min({box[0], box[1], box[2]}));
    o.grid = std::array<int, 3>{64, 64, 64};
    o.window_support = 8;
    EwaldPlan plan(o);
    const auto nuv = dl ? std::optional<ConstMatrixView<double>>(ConstMatrixView<double>(nu, 3)) : std::nullopt;
    if (separate) plan.set_points(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(y, 3), nuv);
    else plan.set_points(ConstMatrixView<double>(x, 3), std::nullopt, nuv);
    Densities dens;
    if (v.k == Kernel::Laplace) dens.strengths = ConstMatrixView<double>(q1, 1);
    else if (v.k != Kernel::Stresslet) dens.strengths = ConstMatrixView<double>(f, 3);
    if (dl) dens.dipoles = ConstMatrixView<double>(d, 3);
    Result r = plan.evaluate(dens);
    const Result again = plan.evaluate(dens);
    EXPECT_EQ(again.values.values, r.values.values) << "a second evaluation differs (sym " << sym << ")";
    EXPECT_EQ(again.field.values, r.field.values);
    return r;
  };
  // the values and the field (Laplace) or pressure (stokeslet) side by side
  auto all = [](const Result& r) {
    std::vector<double> a = r.values.values;
    a.insert(a.end(), r.field.values.begin(), r.field.values.end());
    a.insert(a.end(), r.pressure.values.begin(), r.pressure.values.end());
    return a;
  };
  auto max_rel_diff = [&](const Result& a, const Result& b) {
    const std::vector<double> va = all(a), vb = all(b);
    EXPECT_EQ(va.size(), vb.size());
    double m = 0, s = 0;
    for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) {
      m = std::max(m, std::abs(va[i] - vb[i]));
      s = std::max(s, std::abs(vb[i]));
    }
    return m / s;
  };
  if (single) {  // float32 sums one-sided: the option changes nothing
    const Result a = run(true, 0.3, false), b = run(false, 0.3, false);
    EXPECT_FALSE(a.p2p.pair_symmetry);
    EXPECT_EQ(a.p2p.pairs, b.p2p.pairs);
    EXPECT_EQ(all(a), all(b));
    return;
  }
  {  // r_c < min(L)/2: each pair once
    const Result a = run(true, 0.3, false), b = run(false, 0.3, false);
    EXPECT_TRUE(a.p2p.pair_symmetry);
    EXPECT_FALSE(b.p2p.pair_symmetry);
    EXPECT_LT(max_rel_diff(a, b), 1e-13);
    EXPECT_EQ(2 * a.p2p.pairs, b.p2p.pairs);
    EXPECT_GT(a.p2p.pairs, 0u);
    EXPECT_EQ(a.coincident_pairs, b.coincident_pairs);
    EXPECT_EQ(a.coincident_pairs, 10u);  // 5 points twice: (i, j) and (j, i)
    EXPECT_LT(a.p2p.candidates, b.p2p.candidates);  // each run starts at the target's index
  }
  {  // r_c >= min(L)/2 or separate targets: no symmetry, the same pairs
    const Result a = run(true, 0.6, false), b = run(false, 0.6, false);
    EXPECT_FALSE(a.p2p.pair_symmetry);
    EXPECT_EQ(a.p2p.pairs, b.p2p.pairs);
    EXPECT_EQ(all(a), all(b));
    const Result c = run(true, 0.3, true), e = run(false, 0.3, true);
    EXPECT_FALSE(c.p2p.pair_symmetry);
    EXPECT_EQ(c.p2p.pairs, e.p2p.pairs);
    EXPECT_EQ(all(c), all(e));
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, P2PSymmetry,
                         ::testing::Combine(::testing::Range(0, 6), ::testing::Bool(), ::testing::Values(1, 2)));

}  // namespace
