// The spectral Ewald plan as a set-points-once object: reuse, concurrent evaluation, the
// coincidence rule modulo the period, empty targets, a relative tolerance whose result is zero
// by symmetry (a single ion, an ionic crystal: Madelung's constant), energy, forces and exclusions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
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
using elliptica::ewald::Result;
using namespace elliptica::testref;

bool has_stage(const Result& r, const std::string& name) {
  for (const auto& s : r.times.stages)
    if (s.first == name) return true;
  return false;
}

TEST(EwaldPlanReuse, SetPointsOnceEvaluateMany) {
  const std::array<double, 3> box{1.0, 1.2, 0.9};
  const std::size_t n = 300;
  const auto x = make_points(Distribution::Uniform, n, box, 3);
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.box = box;
  o.tolerance = 1e-8;
  EwaldPlan plan(o);
  plan.set_points(ConstMatrixView<double>(x, 3));
  RefOptions ro;
  ro.kernel = RefKernel::Stokeslet;
  ro.box = box;
  std::vector<double> first;
  for (int k = 0; k < 3; ++k) {
    const auto f = make_strengths(n, 3, 10 + k, true);
    const Result r = plan.evaluate(ConstMatrixView<double>(f, 3));
    // the parameters are chosen and the caches built on the first call only
    EXPECT_EQ(has_stage(r, "tune"), k == 0);
    EXPECT_EQ(has_stage(r, "set_points"), k == 0);
    const RefResult ref = direct_ewald(ro, x, f);
    EXPECT_LT(rel_rms_err(r.values.values, ref.values), 1e-8) << "evaluation " << k;
    if (k == 0) first = r.values.values;
  }
  // the same strengths again: the same bits (fixed order of every sum)
  const auto f0 = make_strengths(n, 3, 10, true);
  EXPECT_EQ(plan.evaluate(ConstMatrixView<double>(f0, 3)).values.values, first);
}

TEST(EwaldPlanReuse, ConcurrentEvaluationsEqualSerialOnes) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const std::size_t n = 500;
  const auto x = make_points(Distribution::Clustered, n, box, 5);
  const auto nu = make_strengths(n, 3, 6, false);
  for (Kernel k : {Kernel::Laplace, Kernel::StokesCombined}) {
    Options o;
    o.kernel = k;
    o.tolerance = 1e-7;
    o.threads = 2;
    EwaldPlan plan(o);
    if (k == Kernel::Laplace)
      plan.set_points(ConstMatrixView<double>(x, 3));
    else
      plan.set_points(ConstMatrixView<double>(x, 3), std::nullopt, ConstMatrixView<double>(nu, 3));
    const int c = k == Kernel::Laplace ? 1 : 3;
    std::vector<std::vector<double>> f(4), q(4), serial(4), concurrent(4);
    for (int t = 0; t < 4; ++t) {
      f[t] = make_strengths(n, c, 20 + t, true);
      q[t] = make_strengths(n, 3, 30 + t, false);
    }
    auto dens = [&](int t) {
      Densities d{ConstMatrixView<double>(f[t], std::size_t(c)), {}};
      if (k != Kernel::Laplace) d.dipoles = ConstMatrixView<double>(q[t], 3);
      return d;
    };
    plan.tune(dens(0));
    for (int t = 0; t < 4; ++t) serial[t] = plan.evaluate(dens(t)).values.values;
    std::vector<std::thread> th;
    for (int t = 0; t < 4; ++t) th.emplace_back([&, t] { concurrent[t] = plan.evaluate(dens(t)).values.values; });
    for (auto& x : th) x.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(concurrent[t], serial[t]) << to_string(k) << " thread " << t;
  }
}

TEST(EwaldPlanReuse, FirstEvaluateTunesLazilyFromConcurrentCallers) {
  // Several threads call evaluate on an untuned plan: one tunes, all get the same result.
  const std::size_t n = 200;
  const auto x = make_points(Distribution::Uniform, n, {1, 1, 1}, 8);
  const auto q = make_strengths(n, 1, 9, true);
  Options o;
  o.tolerance = 1e-6;
  o.threads = 1;
  EwaldPlan plan(o);
  plan.set_points(ConstMatrixView<double>(x, 3));
  std::vector<std::vector<double>> out(3);
  std::vector<std::thread> th;
  for (int t = 0; t < 3; ++t) th.emplace_back([&, t] { out[t] = plan.evaluate(ConstMatrixView<double>(q, 1)).values.values; });
  for (auto& t : th) t.join();
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(out[0], out[2]);
}

// ---------------------------------------------------------------------------------------------
// Coincidence modulo the period.

TEST(EwaldCoincidence, DuplicateSourcesAndCopiesOnePeriodAwayAgree) {
  const std::array<double, 3> box{1.0, 1.3, 0.7};
  const std::size_t n = 60;
  auto x = make_points(Distribution::Uniform, n, box, 12);
  auto q = make_strengths(n, 1, 13, true);
  // source 1 duplicates source 0
  for (int a = 0; a < 3; ++a) x[3 + a] = x[a];
  Options o;
  o.box = box;
  o.tolerance = 1e-10;
  EwaldPlan plan(o);
  const Result same = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
  EXPECT_EQ(same.coincident_pairs, 2u);  // (0,1) and (1,0)
  // the reference excludes exactly coincident pairs, too
  RefOptions ro;
  ro.box = box;
  const RefResult ref = direct_ewald(ro, x, q);
  EXPECT_LT(rel_rms_err(same.values.values, ref.values), 1e-10);
  // the copy one period away (in x and z): wrapped, it lands within rounding of source 0
  auto y = x;
  y[3] += box[0];
  y[5] -= 3 * box[2];
  const Result shifted = plan.evaluate(ConstMatrixView<double>(y, 3), ConstMatrixView<double>(q, 1));
  EXPECT_EQ(shifted.coincident_pairs, 2u);
  EXPECT_LT(rel_rms_err(shifted.values.values, same.values.values), 1e-10);
}

TEST(EwaldCoincidence, TargetsOnePeriodAwayFromTheSources) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const std::size_t n = 80;
  const auto x = make_points(Distribution::Uniform, n, box, 14);
  const auto f = make_strengths(n, 3, 15, true);
  std::vector<double> t = x;
  for (std::size_t i = 0; i < n; ++i) t[3 * i + (i % 3)] += (i % 2 ? 1.0 : -2.0) * box[i % 3];
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.tolerance = 1e-9;
  EwaldPlan plan(o);
  const Result self = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(f, 3));
  const Result sep =
      plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(f, 3), ConstMatrixView<double>(t, 3));
  EXPECT_EQ(self.coincident_pairs, 0u);
  EXPECT_EQ(sep.coincident_pairs, n);  // every target coincides with its source: reported
  EXPECT_LT(rel_rms_err(sep.values.values, self.values.values), 2e-9);
}

// float32 applies the same rule: its distance test (block-local float32 hi + lo offsets) lists
// pairs up to twice the coincidence distance as close and decides them in float64, so exact
// duplicates, copies one period away and a pair just beyond the coincidence distance come out
// as in float64.
TEST(EwaldCoincidence, SinglePrecisionAppliesTheSameRule) {
  const std::array<double, 3> box{1.0, 1.3, 0.7};
  const double L = 1.3;
  const std::size_t n = 60;
  auto x = make_points(Distribution::Uniform, n, box, 12);
  auto q = make_strengths(n, 1, 13, true);
  for (int a = 0; a < 3; ++a) x[3 + a] = x[a];  // source 1 duplicates source 0
  // source 2 lies 1.5 coincidence distances from source 3: a pair, with charges of 1e-12 so that
  // its terms q / r (~5) do not set the scale of the relative tolerance
  for (int a = 0; a < 3; ++a) x[6 + a] = x[9 + a];
  x[6] += 1.5 * elliptica::ewald::kCoincidenceRelative * L;
  q[4] += q[2] + q[3] - 2e-12;
  q[2] = q[3] = 1e-12;
  auto run = [&](elliptica::ewald::Precision p, const std::vector<double>& pts) {
    Options o;
    o.box = box;
    o.tolerance = p == elliptica::ewald::Precision::Single ? 1e-4 : 1e-10;
    o.precision = p;
    EwaldPlan plan(o);
    return plan.evaluate(ConstMatrixView<double>(pts, 3), ConstMatrixView<double>(q, 1));
  };
  const Result d = run(elliptica::ewald::Precision::Double, x);
  const Result s = run(elliptica::ewald::Precision::Single, x);
  EXPECT_EQ(d.coincident_pairs, 2u);
  EXPECT_EQ(s.coincident_pairs, 2u);
  // the close pair's terms 1e-12 / 1.95e-13 at targets 2 and 3 (float32: in float64 by p2p.cpp)
  const double scale = rms(d.values.values);
  for (std::size_t i : {std::size_t(2), std::size_t(3)}) {
    EXPECT_GT(d.values.values[i], 4.0);
    EXPECT_NEAR(s.values.values[i], d.values.values[i], 1e-4 * scale);
  }
  std::vector<double> ds, ss;
  for (std::size_t i = 0; i < n; ++i)
    if (i != 2 && i != 3) {
      ds.push_back(d.values.values[i]);
      ss.push_back(s.values.values[i]);
    }
  EXPECT_LT(rel_rms_err(ss, ds), 1e-4);
  // the duplicate one period away (x and z): coincident after wrapping, in float32 too
  auto y = x;
  y[3] += box[0];
  y[5] -= 3 * box[2];
  const Result sy = run(elliptica::ewald::Precision::Single, y);
  EXPECT_EQ(sy.coincident_pairs, 2u);
  EXPECT_LT(rel_rms_err(sy.values.values, s.values.values), 1e-6);
  // separate targets one period away from every source (stokeslet: gathered values)
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.tolerance = 1e-4;
  o.precision = elliptica::ewald::Precision::Single;
  EwaldPlan plan(o);
  const std::size_t m = 80;
  const auto z = make_points(Distribution::Uniform, m, {1.0, 1.0, 1.0}, 14);
  const auto f = make_strengths(m, 3, 15, true);
  std::vector<double> t = z;
  for (std::size_t i = 0; i < m; ++i) t[3 * i + (i % 3)] += (i % 2 ? 1.0 : -2.0);
  const Result self = plan.evaluate(ConstMatrixView<double>(z, 3), ConstMatrixView<double>(f, 3));
  const Result sep =
      plan.evaluate(ConstMatrixView<double>(z, 3), ConstMatrixView<double>(f, 3), ConstMatrixView<double>(t, 3));
  EXPECT_EQ(self.coincident_pairs, 0u);
  EXPECT_EQ(sep.coincident_pairs, m);
  EXPECT_LT(rel_rms_err(sep.values.values, self.values.values), 1e-5);
}

// Options::fft_planner: FFTW_MEASURE (on scratch arrays, at set_points) and the wisdom planner
// (here ELLIPTICA_EWALD_FFT_WISDOM=off from ctest: as FFTW_ESTIMATE) give the same parameters and
// sums as FFTW_ESTIMATE to rounding, in both precisions (test_ewald_fft_wisdom covers the cache).
TEST(EwaldFftPlanner, SameResultsAsEstimate) {
  using elliptica::ewald::FftPlanner;
  const std::size_t n = 400;
  const auto x = make_points(Distribution::Uniform, n, {1.0, 1.2, 0.9}, 21);
  const auto f = make_strengths(n, 3, 22, true);
  for (auto prec : {elliptica::ewald::Precision::Double, elliptica::ewald::Precision::Single}) {
    const bool single = prec == elliptica::ewald::Precision::Single;
    Result r[3];
    const FftPlanner planners[3] = {FftPlanner::Estimate, FftPlanner::Measure, FftPlanner::Wisdom};
    for (int m = 0; m < 3; ++m) {
      Options o;
      o.kernel = Kernel::Stokeslet;
      o.box = {1.0, 1.2, 0.9};
      o.tolerance = single ? 1e-4 : 1e-9;
      o.precision = prec;
      o.threads = 1;
      o.fft_planner = planners[m];
      EwaldPlan plan(o);
      r[m] = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(f, 3));
    }
    for (int m = 1; m < 3; ++m) {
      EXPECT_EQ(r[0].params.grid, r[m].params.grid);
      EXPECT_LT(rel_rms_err(r[m].values.values, r[0].values.values), single ? 1e-5 : 1e-13);
    }
  }
  // the cache off (ctest's ELLIPTICA_EWALD_FFT_WISDOM=off): the wisdom planner's tuner chooses
  // exactly what the estimate planner's does (no measured times, no extra candidate grids)
  {
    const std::array<double, 3> box{1.0, 1.3, 0.8};
    const auto y = make_points(Distribution::Uniform, 50, box, 23);
    const auto q = make_strengths(50, 1, 24, true);
    std::array<int, 3> grids[2];
    for (int m = 0; m < 2; ++m) {
      Options o;
      o.box = box;
      o.tolerance = 1e-8;
      o.compute_field = true;
      o.threads = 1;
      o.fft_planner = m ? FftPlanner::Wisdom : FftPlanner::Estimate;
      EwaldPlan plan(o);
      grids[m] = plan.evaluate(ConstMatrixView<double>(y, 3), ConstMatrixView<double>(q, 1)).params.grid;
    }
    EXPECT_EQ(grids[0], grids[1]);
  }
  EXPECT_EQ(elliptica::ewald::to_string(FftPlanner::Wisdom), "wisdom");
  EXPECT_EQ(elliptica::ewald::fft_planner_from_string("measure"), FftPlanner::Measure);
  EXPECT_THROW(elliptica::ewald::fft_planner_from_string("patient"), elliptica::InvalidArgument);
  EXPECT_EQ(Options{}.fft_planner, FftPlanner::Wisdom);
}

TEST(EwaldEmptyTargets, EveryKernelReturnsAnEmptyResult) {
  const std::size_t n = 20;
  const auto x = make_points(Distribution::Uniform, n, {1, 1, 1}, 16);
  const auto q3 = make_strengths(n, 3, 17, false);
  const auto q1 = make_strengths(n, 1, 18, false);
  std::vector<double> none;
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet, Kernel::StokesCombined}) {
    Options o;
    o.kernel = k;
    EwaldPlan plan(o);
    const bool dl = elliptica::ewald::has_double_layer(k);
    plan.set_points(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(none.data(), 0, 3),
                    dl ? std::optional<ConstMatrixView<double>>(ConstMatrixView<double>(q3, 3)) : std::nullopt);
    Densities d;
    if (k == Kernel::Laplace) d.strengths = ConstMatrixView<double>(q1, 1);
    if (k == Kernel::Stokeslet || k == Kernel::StokesCombined) d.strengths = ConstMatrixView<double>(q3, 3);
    if (dl) d.dipoles = ConstMatrixView<double>(q3, 3);
    const Result r = plan.evaluate(d);
    EXPECT_EQ(r.values.rows, 0u) << to_string(k);
    EXPECT_EQ(r.values.cols, std::size_t(elliptica::ewald::value_components(k))) << to_string(k);
  }
}

// ---------------------------------------------------------------------------------------------
// A relative tolerance when the result is zero or tiny by symmetry.

TEST(EwaldRelativeScale, SingleIonFieldIsZeroBySymmetry) {
  // The reproducer: the pilot measures the field's RMS as round-off; the tolerance must use a
  // scale that cannot collapse (a unit charge at the mean spacing, here the box length).
  const std::vector<double> x{0.31, 0.22, 0.17}, q{1.0};
  Options o;
  o.tolerance = 1e-8;
  o.compute_field = true;
  EwaldPlan plan(o);
  const Result r = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
  RefOptions ro;
  ro.field = true;
  const RefResult ref = direct_ewald(ro, x, q);
  // potential: the self-image sum plus the background, -2.837297479... (Nijboer-De Wette)
  EXPECT_LT(std::abs(r.values.values[0] - ref.values[0]), 1e-8 * std::abs(ref.values[0]));
  EXPECT_NEAR(ref.values[0], -2.8372974794806, 1e-9);
  for (int a = 0; a < 3; ++a) EXPECT_LT(std::abs(r.field.values[a]), 1e-8);  // scale 1/a^2 = 1
  EXPECT_GE(r.params.field_scale, 0.99);
  EXPECT_LE(std::max({r.params.grid[0], r.params.grid[1], r.params.grid[2]}), 64) << "grid chosen for a round-off target";
}

TEST(EwaldRelativeScale, RockSaltMadelungConstant) {
  // NaCl: a 4 x 4 x 4 simple cubic lattice of alternating unit charges, spacing d = 1/4 in the
  // unit box. phi at every ion is -q M / d with Madelung's constant M = 1.747564594633182
  // (Madelung 1918; value as in Borwein, Glasser, McPhedran, Wan & Zucker, Lattice Sums Then and
  // Now, 2013); the field vanishes by symmetry.
  const double M = 1.747564594633182, d = 0.25;
  std::vector<double> x, q;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) {
        x.insert(x.end(), {(i + 0.5) * d, (j + 0.5) * d, (k + 0.5) * d});
        q.push_back((i + j + k) % 2 ? -1.0 : 1.0);
      }
  for (double eps : {1e-4, 1e-8, 1e-12}) {
    Options o;
    o.tolerance = eps;
    o.compute_field = true;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
    double e2 = 0, f2 = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      e2 += std::pow(r.values.values[i] - (-q[i] * M / d), 2);
      for (int a = 0; a < 3; ++a) f2 += std::pow(r.field.values[3 * i + a], 2);
    }
    const double n = double(q.size());
    EXPECT_LT(std::sqrt(e2 / n) / (M / d), eps) << "potential, eps " << eps;
    EXPECT_LT(std::sqrt(f2 / n), eps * r.params.field_scale) << "field, eps " << eps;
  }
}

// ---------------------------------------------------------------------------------------------
// Energy, forces and exclusions (Laplace).

/// The nearest periodic image of x_i - x_j in a box (the image an exclusion removes); r2 its square.
std::array<double, 3> nearest_image(const std::vector<double>& x, std::int64_t i, std::int64_t j,
                                    const std::array<double, 3>& box, double& r2) {
  std::array<double, 3> r;
  r2 = 0;
  for (int a = 0; a < 3; ++a) {
    r[a] = x[3 * i + a] - x[3 * j + a];
    r[a] -= box[a] * std::round(r[a] / box[a]);
    r2 += r[a] * r[a];
  }
  return r;
}

TEST(EwaldEnergy, EnergyForcesAndExclusions) {
  const std::array<double, 3> box{1.1, 0.9, 1.0};
  const std::size_t n = 120;
  const auto x = make_points(Distribution::Uniform, n, box, 21);
  const auto q = make_strengths(n, 1, 22, true);
  Options o;
  o.box = box;
  o.tolerance = 1e-10;
  o.compute_energy = true;
  o.tolerance_kind = elliptica::ewald::ToleranceKind::Absolute;  // the same parameters in both runs
  EwaldPlan plan(o);
  plan.set_points(ConstMatrixView<double>(x, 3));
  const Result r0 = plan.evaluate(ConstMatrixView<double>(q, 1));
  RefOptions ro;
  ro.box = box;
  ro.field = true;
  const RefResult ref = direct_ewald(ro, x, q);
  double U = 0;
  std::vector<double> F(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    U += 0.5 * q[i] * ref.values[i];
    for (int a = 0; a < 3; ++a) F[3 * i + a] = q[i] * ref.field[3 * i + a];
  }
  EXPECT_NEAR(r0.energy, U, 1e-9 * std::abs(U));
  ASSERT_EQ(r0.forces.rows, n);
  EXPECT_LT(rms_diff(r0.forces.values, F), 1e-9);
  EXPECT_TRUE(r0.field.values.empty());  // not asked for
  // exclusions: pairs (0,1), (2,5), (7,3); the nearest image of each pair is removed
  const std::vector<std::array<std::int64_t, 2>> ex{{0, 1}, {2, 5}, {7, 3}};
  plan.set_exclusions(ex);
  const Result r1 = plan.evaluate(ConstMatrixView<double>(q, 1));
  std::vector<double> dphi(n, 0.0), dF(3 * n, 0.0);
  double dU = 0;
  for (const auto& [i, j] : ex) {
    double r2 = 0;
    const std::array<double, 3> r = nearest_image(x, i, j, box, r2);
    const double rr = std::sqrt(r2);
    dphi[i] -= q[j] / rr;
    dphi[j] -= q[i] / rr;
    dU -= q[i] * q[j] / rr;
    for (int a = 0; a < 3; ++a) {
      dF[3 * i + a] -= q[i] * q[j] * r[a] / (rr * rr * rr);
      dF[3 * j + a] += q[i] * q[j] * r[a] / (rr * rr * rr);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NEAR(r1.values.values[i] - r0.values.values[i], dphi[i], 1e-11) << "potential at " << i;
    for (int a = 0; a < 3; ++a)
      EXPECT_NEAR(r1.forces.values[3 * i + a] - r0.forces.values[3 * i + a], dF[3 * i + a], 1e-10) << "force " << i;
  }
  EXPECT_NEAR(r1.energy - r0.energy, dU, 1e-10);
  EXPECT_TRUE(has_stage(r1, "exclusions"));
  // bad exclusions
  EXPECT_THROW(plan.set_exclusions({{0, 0}}), elliptica::InvalidArgument);
  EXPECT_THROW(plan.set_exclusions({{0, std::int64_t(n)}}), elliptica::InvalidArgument);
  EXPECT_THROW(plan.set_exclusions({{-1, 2}}), elliptica::InvalidArgument);
}

// compute_potential = false: the far-field potential is left out and the energy's Fourier part
// is summed by Parseval in CNV. The energy equals the full path's to rounding (same parameters:
// an absolute tolerance), the forces too, and both meet the tolerance against the independent
// direct Ewald sum, with and without exclusions, in both precisions and on 1 and 2 threads.
TEST(EwaldEnergy, ParsevalEnergyWithoutThePotential) {
  const std::array<double, 3> box{1.1, 0.9, 1.0};
  const std::size_t n = 150;
  const auto x = make_points(Distribution::Uniform, n, box, 31);
  const auto q = make_strengths(n, 1, 32, true);
  RefOptions ro;
  ro.box = box;
  ro.field = true;
  const RefResult ref = direct_ewald(ro, x, q);
  double Uref = 0, Fscale = 0;
  std::vector<double> Fref(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    Uref += 0.5 * q[i] * ref.values[i];
    for (int a = 0; a < 3; ++a) {
      Fref[3 * i + a] = q[i] * ref.field[3 * i + a];
      Fscale += Fref[3 * i + a] * Fref[3 * i + a];
    }
  }
  Fscale = std::sqrt(Fscale / n);
  const std::vector<std::array<std::int64_t, 2>> ex{{0, 1}, {4, 9}};
  for (auto prec : {elliptica::ewald::Precision::Double, elliptica::ewald::Precision::Single})
    for (double eps : {1e-4, 1e-9})
      for (int threads : {1, 2}) {
        const bool single = prec == elliptica::ewald::Precision::Single;
        if (single && eps < 1e-5) continue;
        Result r[2];
        for (int pot = 0; pot < 2; ++pot) {
          Options o;
          o.box = box;
          o.tolerance = eps;
          o.tolerance_kind = elliptica::ewald::ToleranceKind::Absolute;  // the same parameters in both runs
          o.compute_energy = true;
          o.compute_potential = pot == 1;
          o.precision = prec;
          o.threads = threads;
          EwaldPlan plan(o);
          plan.set_points(ConstMatrixView<double>(x, 3));
          r[pot] = plan.evaluate(ConstMatrixView<double>(q, 1));
          if (pot == 0) {
            EXPECT_EQ(r[0].values.rows, 0u);  // the potential is left out
            EXPECT_EQ(r[0].values.values.size(), 0u);
            // exclusions: the same change of the energy on both paths
            plan.set_exclusions(ex);
            const Result e = plan.evaluate(ConstMatrixView<double>(q, 1));
            double dU = 0;
            for (const auto& [i, j] : ex) {
              double r2 = 0;
              nearest_image(x, i, j, box, r2);
              dU -= q[i] * q[j] / std::sqrt(r2);
            }
            EXPECT_NEAR(e.energy - r[0].energy, dU, (single ? 1e-5 : 1e-11) * std::abs(dU));
          }
        }
        const std::string what = std::string(single ? "single" : "double") + " eps " + std::to_string(eps) +
                                 " threads " + std::to_string(threads);
        ASSERT_EQ(r[0].params.grid, r[1].params.grid) << what;
        // Parseval = the full path to rounding (the window error cancels between the two)
        EXPECT_NEAR(r[0].energy, r[1].energy, (single ? 2e-6 : 1e-12) * std::abs(r[1].energy)) << what;
        EXPECT_LT(rms_diff(r[0].forces.values, r[1].forces.values), (single ? 2e-6 : 1e-12) * Fscale) << what;
        // against the direct sum: the absolute RMS tolerance of the potential, times N for U
        EXPECT_NEAR(r[0].energy, Uref, 0.5 * eps * std::sqrt(double(n)) * std::sqrt(double(n))) << what;
        EXPECT_LT(rms_diff(r[0].forces.values, Fref), 10 * eps) << what;
      }
}

TEST(EwaldEnergy, PotentialLeftOutOnlyWhereSomethingRemains) {
  Options o;
  o.compute_potential = false;
  EXPECT_THROW(EwaldPlan{o}, elliptica::InvalidArgument);  // laplace without field or energy
  o.compute_field = true;
  EXPECT_NO_THROW(EwaldPlan{o});
  o.kernel = Kernel::Stokeslet;
  o.compute_field = false;
  EXPECT_THROW(EwaldPlan{o}, elliptica::InvalidArgument);
  // the field alone without the potential: E as with the potential
  const std::size_t n = 60;
  const auto x = make_points(Distribution::Uniform, n, {1, 1, 1}, 41);
  const auto q = make_strengths(n, 1, 42, true);
  Result r[2];
  for (int pot = 0; pot < 2; ++pot) {
    Options f;
    f.compute_field = true;
    f.compute_potential = pot == 1;
    f.tolerance = 1e-8;
    f.tolerance_kind = elliptica::ewald::ToleranceKind::Absolute;
    EwaldPlan plan(f);
    r[pot] = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
  }
  EXPECT_TRUE(r[0].values.values.empty());
  EXPECT_TRUE(std::isnan(r[0].energy));
  EXPECT_LT(rms_diff(r[0].field.values, r[1].field.values), 1e-12);
}

TEST(EwaldEnergy, RefusedWhereUndefined) {
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.compute_energy = true;
  EXPECT_THROW(EwaldPlan{o}, elliptica::InvalidArgument);
  Options l;
  l.compute_energy = true;
  EwaldPlan plan(l);
  const auto x = make_points(Distribution::Uniform, 10, {1, 1, 1}, 1);
  const auto q = make_strengths(10, 1, 2, true);
  plan.set_points(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(x, 3));
  EXPECT_THROW(plan.evaluate(ConstMatrixView<double>(q, 1)), elliptica::InvalidArgument);
  EXPECT_THROW(plan.set_exclusions({{0, 1}}), elliptica::InvalidArgument);
}

}  // namespace


namespace {

// An override pair far beyond what the tuner picks (xi r_c = 45): the erfc series of P2P stays
// finite and accurate (exp(x^2) erfc(x) by its asymptotic series beyond x = 25).
TEST(EwaldOverrides, LargeXiTimesCutoff) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const auto x = make_points(Distribution::Uniform, 90, box, 31);
  const auto q = make_strengths(90, 1, 32, true);
  Options o;
  o.box = box;
  o.tolerance = 1e-8;
  o.xi = 50.0;
  o.rc = 0.9;
  o.grid = std::array<int, 3>{200, 200, 200};
  o.window_support = 12;
  EwaldPlan plan(o);
  const Result r = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
  RefOptions ro;
  const RefResult ref = direct_ewald(ro, x, q);
  EXPECT_LT(rel_rms_err(r.values.values, ref.values), 1e-8);
}

}  // namespace
