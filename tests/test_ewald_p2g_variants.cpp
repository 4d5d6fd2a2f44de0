// The two implementations of P2G/G2P (Options::p2g_variant): the baseline (input order, window
// on the fly, periodic wrap in the loops, atomic scatter) and the default cell-ordered stages
// (cached window, slabs owned by threads, padded grid) give the same result to round-off, for
// every kernel, 1 and 2 threads, float64 and float32, a non-cubic box with points on and near
// its faces, targets = sources and separate targets; and both meet the tolerance against the
// independent classical Ewald sum (tests/reference/direct_ewald.*).
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

namespace {

using elliptica::ConstMatrixView;
using elliptica::ewald::Densities;
using elliptica::ewald::EwaldPlan;
using elliptica::ewald::Kernel;
using elliptica::ewald::Options;
using elliptica::ewald::P2GVariant;
using elliptica::ewald::Precision;
using elliptica::ewald::Result;
using namespace elliptica::testref;

const std::array<double, 3> kBox{1.0, 1.3, 0.8};

/// Uniform points, a quarter of them moved onto or next to a face of the box (0, a rounding step
/// inside L, a rounding step below 0, exactly L: the last two wrap).
std::vector<double> face_points(std::size_t n, std::uint64_t seed) {
  std::vector<double> x = make_points(Distribution::Uniform, n, kBox, seed);
  const double offs[] = {0.0, 1e-13, -1e-17, 1.0};  // fractions of L (1.0: on the upper face)
  for (std::size_t i = 0; i < n; i += 4) {
    const int a = static_cast<int>((i / 4) % 3);
    const double f = offs[(i / 12) % 4];
    x[3 * i + a] = f == 1.0 ? kBox[a] : (f >= 0 ? f * kBox[a] : f);
    if (i % 8 == 4) x[3 * i + a] = std::nextafter(kBox[a], 0.0);  // just below the upper face
  }
  return x;
}

struct Problem {
  std::vector<double> src, trg, q, f, dip, nu;
  std::vector<double> ref;
};

RefKernel ref_kernel(Kernel k) {
  switch (k) {
    case Kernel::Laplace: return RefKernel::Laplace;
    case Kernel::Stokeslet: return RefKernel::Stokeslet;
    case Kernel::Stresslet: return RefKernel::Stresslet;
    default: return RefKernel::StokesCombined;
  }
}

Problem make_problem(Kernel k, bool separate) {
  Problem p;
  const std::size_t n = ELLIPTICA_SANITIZED_BUILD ? 50 : 100;
  const std::uint64_t seed = 900 + 10 * static_cast<std::uint64_t>(k) + (separate ? 1 : 0);
  p.src = face_points(n, seed);
  if (separate) p.trg = face_points(61, seed + 5);
  p.q = make_strengths(n, 1, seed + 1, false);
  p.f = make_strengths(n, 3, seed + 2, false);
  p.dip = make_strengths(n, 3, seed + 3, false);
  p.nu = make_strengths(n, 3, seed + 4, false);
  RefOptions ro;
  ro.kernel = ref_kernel(k);
  ro.box = kBox;
  std::vector<double> s;
  for (std::size_t i = 0; i < n; ++i) {
    if (k == Kernel::Laplace) s.push_back(p.q[i]);
    if (k == Kernel::Stokeslet || k == Kernel::StokesCombined)
      for (int a = 0; a < 3; ++a) s.push_back(p.f[3 * i + a]);
    if (k == Kernel::Stresslet || k == Kernel::StokesCombined) {
      for (int a = 0; a < 3; ++a) s.push_back(p.dip[3 * i + a]);
      for (int a = 0; a < 3; ++a) s.push_back(p.nu[3 * i + a]);
    }
  }
  p.ref = direct_ewald(ro, p.src, s, separate ? &p.trg : nullptr).values;
  return p;
}

/// One problem (and its reference) per kernel and target set, shared by both precisions.
const Problem& problem(Kernel k, bool separate) {
  static std::map<std::pair<int, bool>, Problem> cache;
  const std::pair<int, bool> key{static_cast<int>(k), separate};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache.emplace(key, make_problem(k, separate)).first->second;
}

Result run(const Problem& pb, Options o) {
  o.box = kBox;
  EwaldPlan plan(o);
  const bool dl = o.kernel == Kernel::Stresslet || o.kernel == Kernel::StokesCombined;
  std::optional<ConstMatrixView<double>> trg, nu;
  if (!pb.trg.empty()) trg = ConstMatrixView<double>(pb.trg, 3);
  if (dl) nu = ConstMatrixView<double>(pb.nu, 3);
  plan.set_points(ConstMatrixView<double>(pb.src, 3), trg, nu);
  Densities d;
  if (o.kernel == Kernel::Laplace) d.strengths = ConstMatrixView<double>(pb.q, 1);
  if (o.kernel == Kernel::Stokeslet || o.kernel == Kernel::StokesCombined) d.strengths = ConstMatrixView<double>(pb.f, 3);
  if (dl) d.dipoles = ConstMatrixView<double>(pb.dip, 3);
  return plan.evaluate(d);
}

using Case = std::tuple<Kernel, Precision, bool>;

// The built-in cost model (no per-machine measurement; the parameters are fixed below anyway).
const int kCostsBuiltin = setenv("ELLIPTICA_EWALD_COSTS", "builtin", 1);

class P2GVariants : public ::testing::TestWithParam<Case> {};

TEST_P(P2GVariants, BaselineAndCellOrderedAgree) {
  const auto& [kernel, precision, separate] = GetParam();
  const Problem& pb = problem(kernel, separate);
  const bool single = precision == Precision::Single;
  const double eps = single ? 1e-4 : 1e-6;        // the plan's promise vs the reference
  const double same = single ? 1e-5 : 1e-12;      // the two variants (round-off)
  Options o;
  o.kernel = kernel;
  o.precision = precision;
  o.tolerance = eps;
  ASSERT_EQ(o.p2g_variant, P2GVariant::CellOrdered);  // the default
  // Fixed parameters (no tuning: fast, and the same for every run), within eps for every kernel.
  o.xi = 5.5;
  o.rc = 0.75;
  o.grid = std::array<int, 3>{18, 24, 16};
  o.window_support = 8;
  o.poly_degree = 10;
  std::vector<double> base;
  for (P2GVariant v : {P2GVariant::CellOrdered, P2GVariant::Baseline})
    for (int threads : {1, 2}) {
      o.p2g_variant = v;
      o.threads = threads;
      const Result r = run(pb, o);
      const std::string what = std::string(v == P2GVariant::Baseline ? "baseline" : "cell-ordered") + ", " +
                               std::to_string(threads) + " thread(s), M = " + std::to_string(r.params.grid[0]) + "x" +
                               std::to_string(r.params.grid[1]) + "x" + std::to_string(r.params.grid[2]) +
                               ", P = " + std::to_string(r.params.P);
      ASSERT_EQ(r.values.values.size(), pb.ref.size()) << what;
      if (base.empty())
        base = r.values.values;
      else
        EXPECT_LT(rel_rms_err(r.values.values, base), same) << what;
      EXPECT_LT(rel_rms_err(r.values.values, pb.ref), eps) << what;
    }
}

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  const auto& [k, prec, separate] = i.param;
  std::string n = elliptica::ewald::to_string(k);
  for (char& c : n)
    if (c == '-') c = '_';
  return n + (prec == Precision::Single ? "_float" : "_double") + (separate ? "_targets" : "_self");
}

INSTANTIATE_TEST_SUITE_P(Kernels, P2GVariants,
                         ::testing::Combine(::testing::Values(Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet,
                                                              Kernel::StokesCombined),
                                            ::testing::Values(Precision::Double, Precision::Single),
                                            ::testing::Bool()),
                         case_name);

}  // namespace
