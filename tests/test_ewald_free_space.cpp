// Free-space (0P) spectral Ewald (issue 31): the plan with Options::periodicity = {false, false,
// false} against the direct free-space sums phi(x_m) = sum_n' q_n / |x_m - y_n| and
// u(x_m) = 1/(8 pi mu) sum_n' (I/r + r r^T/r^3) f_n (written out here). The charges and forces
// are not neutral: free space needs no neutrality, and a net charge or force is where the
// error model needs its coherent terms (est_real's tail, est_window's far field).
//
// Also the same plan with two (2P) or one (1P) periodic axes, against the classical 2P Ewald sums
// (tests/common/ewald2p_reference.hpp) and 1P image sums; the stokeslet's pressure; the stresslet
// and stokes-combined in 0P, 2P and 1P (at the end).
//
// The tolerance is the plan's: RMS error / RMS of the result < eps (relative) or RMS error < eps
// (absolute), checked as stated. Cost: about 35 s (Release, 2 cores; the kernel tables and the
// references); the sanitized build runs two tolerances per kernel and fewer points.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"

namespace {

constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;
const std::vector<double> kTolerances = kSanitized ? std::vector<double>{1e-4, 1e-10}
                                                    : std::vector<double>{1e-3, 1e-6, 1e-9, 1e-12};

using elliptica::ConstMatrixView;
using elliptica::InvalidArgument;
using namespace elliptica::ewald;

struct Rng {
  std::uint64_t s;
  double operator()() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) * 0x1p-53;
  }
};

// phi at each target from every source (a source coinciding with the target is left out)
std::vector<double> direct(const std::vector<double>& src, const std::vector<double>& q, const std::vector<double>& trg) {
  const std::size_t ns = q.size(), nt = trg.size() / 3;
  std::vector<double> phi(nt, 0.0);
  for (std::size_t m = 0; m < nt; ++m) {
    double s = 0;
    for (std::size_t n = 0; n < ns; ++n) {
      const double dx = trg[3 * m] - src[3 * n], dy = trg[3 * m + 1] - src[3 * n + 1], dz = trg[3 * m + 2] - src[3 * n + 2];
      const double r2 = dx * dx + dy * dy + dz * dz;
      if (r2 > 0) s += q[n] / std::sqrt(r2);
    }
    phi[m] = s;
  }
  return phi;
}

double rms(const std::vector<double>& a) {
  double s = 0;
  for (double v : a) s += v * v;
  return std::sqrt(s / double(a.size()));
}

double rms_diff(const double* a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < b.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / double(b.size()));
}

ConstMatrixView<double> view(const std::vector<double>& v, std::size_t cols) {
  return ConstMatrixView<double>(v.data(), v.size() / cols, cols);
}

Options free_options(double eps) {
  Options o;
  o.kernel = Kernel::Laplace;
  o.periodicity = {false, false, false};
  o.tolerance = eps;
  o.threads = 2;
  o.fft_planner = FftPlanner::Estimate;
  return o;
}

// Points in a box of sides `ext` at `origin`, `nc` strength components per point in
// [-1, 1] + shift (shift != 0: not neutral).
void cloud(std::size_t n, std::array<double, 3> ext, std::array<double, 3> origin, std::uint64_t seed,
           std::vector<double>& x, std::vector<double>& q, double shift = 0.0, int nc = 1) {
  Rng u{seed};
  x.resize(3 * n);
  q.resize(n * std::size_t(nc));
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) x[3 * i + d] = origin[d] + ext[d] * u();
    for (int c = 0; c < nc; ++c) q[i * std::size_t(nc) + std::size_t(c)] = 2 * u() - 1 + shift;
  }
}

// u at each target from every source, times 8 pi mu (a coinciding source left out)
std::vector<double> direct_stokeslet(const std::vector<double>& src, const std::vector<double>& f,
                                     const std::vector<double>& trg) {
  const std::size_t ns = src.size() / 3, nt = trg.size() / 3;
  std::vector<double> u(3 * nt, 0.0);
  for (std::size_t m = 0; m < nt; ++m)
    for (std::size_t n = 0; n < ns; ++n) {
      double r[3], r2 = 0;
      for (int d = 0; d < 3; ++d) {
        r[d] = trg[3 * m + d] - src[3 * n + d];
        r2 += r[d] * r[d];
      }
      if (r2 == 0) continue;
      const double ir = 1 / std::sqrt(r2), ir3 = ir * ir * ir;
      const double rf = r[0] * f[3 * n] + r[1] * f[3 * n + 1] + r[2] * f[3 * n + 2];
      for (int d = 0; d < 3; ++d) u[3 * m + d] += f[3 * n + d] * ir + r[d] * rf * ir3;
    }
  return u;
}

TEST(FreeSpace, PeriodicityNames) {
  EXPECT_EQ(to_string(Periodicity{true, true, true}), "3P");
  EXPECT_EQ(to_string(Periodicity{false, false, false}), "0P");
  EXPECT_EQ(to_string(Periodicity{true, true, false}), "2P");
  EXPECT_EQ(to_string(Periodicity{false, false, true}), "1P");
  EXPECT_EQ(to_string(Periodicity{true, false, true}), "xz");
  for (const char* s : {"3P", "2P", "1P", "0P", "xz", "y", "none", "xyz"})
    EXPECT_EQ(periodicity_from_string(s), periodicity_from_string(to_string(periodicity_from_string(s)))) << s;
  EXPECT_EQ(periodicity_from_string("xy"), (Periodicity{true, true, false}));
  EXPECT_EQ(periodicity_from_string("none"), (Periodicity{false, false, false}));
  for (const char* s : {"", "4P", "xx", "xyzw", "q", "XY"}) EXPECT_THROW(periodicity_from_string(s), InvalidArgument) << s;
}

// The relative tolerance met at several eps (each a tuned plan), targets = sources, neutral on
// average and with a net charge (measured errors 0.1-0.3 eps).
TEST(FreeSpace, LaplaceMeetsTheToleranceAgainstTheDirectSum) {
  for (double shift : {0.0, 0.4})
  for (double eps : kTolerances) {
    std::vector<double> x, q;
    cloud(1500, {1.0, 1.0, 1.0}, {0.3, -2.0, 5.0}, 11, x, q, shift);
    const std::vector<double> ref = direct(x, q, x);
    EwaldPlan plan(free_options(eps));
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    const double err = rms_diff(r.values.values.data(), ref) / rms(ref);
    const Params& p = r.params;
    std::printf("0P laplace, charge shift %.1f, eps %.0e: relative RMS error %.3g, M %d x %d x %d, P %d, xi %.4g, "
                "rc %.4g, R %.4g\n", shift, eps, err,
                p.grid[0], p.grid[1], p.grid[2], p.P, p.xi, p.rc, p.truncation_radius);
    EXPECT_LT(err, eps) << "eps " << eps;
    // the extended box: at least twice the points' extent per axis, the FFT grid on it
    for (int d = 0; d < 3; ++d) {
      EXPECT_GE(p.fft_box[d], 2.0);
      EXPECT_NEAR(p.fft_box[d], p.grid[d] * p.h[d], 1e-12 * p.fft_box[d]);
    }
  }
}

// The stokeslet likewise (6 tables), with a net force, viscosity 0.7 and an elongated cloud.
TEST(FreeSpace, StokesletMeetsTheToleranceAgainstTheDirectSum) {
  std::vector<double> x, f;
  cloud(1000, {1.0, 0.8, 1.6}, {-3.0, 0.0, 1.0}, 13, x, f, 0.3, 3);
  std::vector<double> ref = direct_stokeslet(x, f, x);
  const double mu = 0.7;
  for (double& v : ref) v /= 8 * std::acos(-1.0) * mu;
  for (double eps : kTolerances) {
    Options o = free_options(eps);
    o.kernel = Kernel::Stokeslet;
    o.viscosity = mu;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(f, 3));
    const double err = rms_diff(r.values.values.data(), ref) / rms(ref);
    std::printf("0P stokeslet eps %.0e: relative RMS error %.3g, M %d x %d x %d, P %d\n", eps, err, r.params.grid[0],
                r.params.grid[1], r.params.grid[2], r.params.P);
    EXPECT_LT(err, eps) << "eps " << eps;
  }
}

// The stokeslet's pressure p = 1/(4 pi) sum_n' f_n . r / r^3 (a net force), with the velocity.
TEST(FreeSpace, StokesletPressureAgainstTheDirectSum) {
  std::vector<double> x, f;
  cloud(kSanitized ? 250 : 500, {1.0, 0.7, 1.2}, {0.0, 0.0, 0.0}, 23, x, f, 0.2, 3);
  const std::size_t n = x.size() / 3;
  std::vector<double> pref(n, 0.0);
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t k = 0; k < n; ++k) {
      if (k == m) continue;
      double r[3], r2 = 0, rf = 0;
      for (int d = 0; d < 3; ++d) {
        r[d] = x[3 * m + d] - x[3 * k + d];
        r2 += r[d] * r[d];
        rf += r[d] * f[3 * k + d];
      }
      pref[m] += rf / (r2 * std::sqrt(r2)) / (4 * M_PI);
    }
  std::vector<double> uref = direct_stokeslet(x, f, x);
  const double mu = 1.3;
  for (double& v : uref) v /= 8 * M_PI * mu;
  for (double eps : kSanitized ? std::vector<double>{1e-5} : std::vector<double>{1e-5, 1e-11}) {  // (the tables cost)
    Options o = free_options(eps);
    o.kernel = Kernel::Stokeslet;
    o.viscosity = mu;
    o.compute_pressure = true;
    const Result r = EwaldPlan(o).evaluate(view(x, 3), view(f, 3));
    const double eu = rms_diff(r.values.values.data(), uref) / rms(uref);
    const double ep = rms_diff(r.pressure.values.data(), pref) / rms(pref);
    std::printf("0P stokeslet with the pressure eps %.0e: velocity error %.3g, pressure error %.3g\n", eps, eu, ep);
    EXPECT_LT(eu, eps) << "eps " << eps;
    EXPECT_LT(ep, eps) << "eps " << eps;
  }
}

// The field E = -grad phi (3 odd tables), the energy U = 1/2 sum q phi and the forces q E, with
// and without the potential (the energy's far part by Parseval), against the direct sums; the
// field's relative tolerance is against its own RMS.
TEST(FreeSpace, LaplaceFieldEnergyAndForces) {
  std::vector<double> x, q;
  cloud(kSanitized ? 300 : 900, {1.0, 1.2, 0.7}, {2.0, 2.0, 2.0}, 17, x, q, 0.3);
  const std::size_t n = q.size();
  std::vector<double> phi(n, 0.0), E(3 * n, 0.0);
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t k = 0; k < n; ++k) {
      if (k == m) continue;
      double r[3], r2 = 0;
      for (int d = 0; d < 3; ++d) {
        r[d] = x[3 * m + d] - x[3 * k + d];
        r2 += r[d] * r[d];
      }
      const double ir = 1 / std::sqrt(r2);
      phi[m] += q[k] * ir;
      for (int d = 0; d < 3; ++d) E[3 * m + d] += q[k] * r[d] * ir * ir * ir;
    }
  double U = 0;
  for (std::size_t m = 0; m < n; ++m) U += 0.5 * q[m] * phi[m];
  for (double eps : kTolerances) {
    for (bool potential : {true, false}) {
      Options o = free_options(eps);
      o.compute_field = true;
      o.compute_energy = true;
      o.compute_potential = potential;
      EwaldPlan plan(o);
      const Result r = plan.evaluate(view(x, 3), view(q, 1));
      const double ef = rms_diff(r.field.values.data(), E) / rms(E);
      std::printf("0P laplace field eps %.0e (potential %d): field error %.3g, energy error %.3g\n", eps, int(potential),
                  ef, std::abs(r.energy - U) / std::abs(U));
      EXPECT_LT(ef, eps);
      if (potential) {
        EXPECT_LT(rms_diff(r.values.values.data(), phi) / rms(phi), eps);
      }
      // U = 1/2 sum q phi: its error is at most the potential's RMS error times sum |q| / 2
      double qabs = 0;
      for (double v : q) qabs += std::abs(v);
      EXPECT_LT(std::abs(r.energy - U), 0.5 * qabs * eps * rms(phi));
      for (std::size_t m = 0; m < n; ++m)
        for (int d = 0; d < 3; ++d)
          ASSERT_NEAR(r.forces.values[3 * m + d], q[m] * r.field.values[3 * m + d], 1e-12 * std::abs(r.forces.values[3 * m + d]) + 1e-300);
    }
  }
}

// The axes' order does not matter: the points and strengths with their coordinates cycled give the
// same result, cycled, to rounding (the stokeslet's off-diagonal and the field's tables are odd
// along an axis: their Nyquist samples stand for +k and -k; one sign made them differ by 4e-10
// at eps 1e-6)
TEST(FreeSpace, AxesCycledGiveTheSameResult) {
  std::vector<double> x, f;
  cloud(kSanitized ? 60 : 300, {0.8, 0.6, 1.1}, {0.0, 0.0, 0.0}, 19, x, f, 0.3, 3);
  std::vector<double> xc(x.size()), fc(f.size()), q(f.size() / 3);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = f[3 * i];
    for (int d = 0; d < 3; ++d) {
      xc[3 * i + std::size_t((d + 1) % 3)] = x[3 * i + std::size_t(d)];
      fc[3 * i + std::size_t((d + 1) % 3)] = f[3 * i + std::size_t(d)];
    }
  }
  auto back = [](const std::vector<double>& v) {
    std::vector<double> b(v.size());
    for (std::size_t i = 0; i < v.size() / 3; ++i)
      for (int d = 0; d < 3; ++d) b[3 * i + std::size_t(d)] = v[3 * i + std::size_t((d + 1) % 3)];
    return b;
  };
  Options o = free_options(kSanitized ? 1e-3 : 1e-6);
  o.kernel = Kernel::Stokeslet;
  const std::vector<double> u = EwaldPlan(o).evaluate(view(x, 3), view(f, 3)).values.values;
  const std::vector<double> uc = EwaldPlan(o).evaluate(view(xc, 3), view(fc, 3)).values.values;
  EXPECT_LT(rms_diff(back(uc).data(), u) / rms(u), 1e-13);
  o = free_options(kSanitized ? 1e-3 : 1e-6);
  o.compute_field = true;
  const std::vector<double> E = EwaldPlan(o).evaluate(view(x, 3), view(q, 1)).field.values;
  const std::vector<double> Ec = EwaldPlan(o).evaluate(view(xc, 3), view(q, 1)).field.values;
  EXPECT_LT(rms_diff(back(Ec).data(), E) / rms(E), 1e-13);
}

// Absolute tolerance, separate targets around and inside the sources (a box twice as large),
// a flat source layer (one side 1/20 of the others: the short axis gets its own extent).
TEST(FreeSpace, SeparateTargetsFlatSourcesAbsoluteTolerance) {
  std::vector<double> x, q, t, qt;
  cloud(1200, {2.0, 1.5, 0.1}, {-1.0, 0.0, 0.0}, 5, x, q);
  cloud(700, {4.0, 3.0, 2.0}, {-2.0, -0.75, -1.0}, 6, t, qt);
  const std::vector<double> ref = direct(x, q, t);
  for (double eps : {1e-4, 1e-8}) {
    Options o = free_options(eps);
    o.tolerance_kind = ToleranceKind::Absolute;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1), view(t, 3));
    const double err = rms_diff(r.values.values.data(), ref);
    std::printf("0P separate targets, absolute eps %.0e: RMS error %.3g (RMS phi %.3g), M %d x %d x %d\n", eps, err,
                rms(ref), r.params.grid[0], r.params.grid[1], r.params.grid[2]);
    EXPECT_LT(err, eps);
  }
}

// The sum does not depend on where the points are: a translation by 1e3 and a scaling of all
// lengths by 2^40 (phi scales as 1 / length) give the same values; the plan is reused for moved
// points (a new grid when the extent grows), with the direct sum each time.
TEST(FreeSpace, TranslationScalingAndMovedPoints) {
  std::vector<double> x, q;
  cloud(800, {1.0, 0.7, 1.3}, {0.0, 0.0, 0.0}, 21, x, q);
  const std::vector<double> ref = direct(x, q, x);
  const double eps = 1e-8;
  EwaldPlan plan(free_options(eps));
  const Result r0 = plan.evaluate(view(x, 3), view(q, 1));
  EXPECT_LT(rms_diff(r0.values.values.data(), ref) / rms(ref), eps);
  std::vector<double> xs = x, xl = x;
  for (double& v : xs) v += 1e3;
  for (double& v : xl) v *= 0x1p40;
  const Result r1 = plan.evaluate(view(xs, 3), view(q, 1));
  EXPECT_LT(rms_diff(r1.values.values.data(), r0.values.values) / rms(ref), 1e-11);
  EXPECT_EQ(r1.params.grid, r0.params.grid);  // same extent: the tuned plan kept
  for (const auto& st : r1.times.stages) EXPECT_NE(st.first, "tune");
  EwaldPlan large(free_options(eps));
  const Result r2 = large.evaluate(view(xl, 3), view(q, 1));
  std::vector<double> scaled(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) scaled[i] = ref[i] * 0x1p-40;
  EXPECT_LT(rms_diff(r2.values.values.data(), scaled) / rms(scaled), eps);
  // the points spread over twice the extent: the extended box no longer holds them, a new grid
  std::vector<double> xw = x;
  for (double& v : xw) v *= 2;
  const std::vector<double> refw = direct(xw, q, xw);
  const Result r3 = plan.evaluate(view(xw, 3), view(q, 1));
  EXPECT_LT(rms_diff(r3.values.values.data(), refw) / rms(refw), eps);
  EXPECT_GT(r3.params.fft_box[0], 1.9 * r0.params.fft_box[0]);
}

// A single charge and a pair: phi = q / r exactly (no images, no background), a point alone
// has phi = 0.
TEST(FreeSpace, OneAndTwoCharges) {
  const std::vector<double> x1{0.1, 0.2, 0.3}, q1{2.0};
  const std::vector<double> t{0.1, 0.2, 0.3, 1.1, 0.2, 0.3, 0.1, -2.8, 4.3};
  EwaldPlan plan(free_options(1e-10));
  const Result r = plan.evaluate(view(x1, 3), view(q1, 1), view(t, 3));
  std::printf("one charge: M %d x %d x %d P %d xi %.4g rc %.4g, times: tune %.3f set_points %.3f\n", r.params.grid[0], r.params.grid[1], r.params.grid[2], r.params.P, r.params.xi, r.params.rc, r.times.get("tune"), r.times.get("set_points"));
  EXPECT_NEAR(r.values.values[0], 0.0, 1e-9);
  EXPECT_NEAR(r.values.values[1], 2.0, 2e-9);
  EXPECT_NEAR(r.values.values[2], 2.0 / 5.0, 2e-9);
  const std::vector<double> x2{0, 0, 0, 0, 0, 0.5}, q2{1.0, -3.0};
  EwaldPlan pair(free_options(1e-10));
  const Result r2 = pair.evaluate(view(x2, 3), view(q2, 1));
  EXPECT_NEAR(r2.values.values[0], -6.0, 1e-8);
  EXPECT_NEAR(r2.values.values[1], 2.0, 1e-8);
}

TEST(FreeSpace, UnsupportedCombinationsAreRefused) {
  auto msg = [](const Options& o) {
    try {
      EwaldPlan p(o);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Options o = free_options(1e-6);
  o.periodicity = {false, false, true};
  o.kernel = Kernel::Stresslet;
  o.stresslet_zero_mode = true;
  EXPECT_NE(msg(o).find("the k = 0 term (stresslet_zero_mode) is a 3P term; with periodicity 1P"), std::string::npos)
      << msg(o);
  o.periodicity = {true, true, false};
  o.kernel = Kernel::StokesCombined;
  EXPECT_NE(msg(o).find("with periodicity 2P"), std::string::npos) << msg(o);
  o = free_options(1e-6);
  o.grid = std::array<int, 3>{32, 32, 32};
  EXPECT_NE(msg(o).find("grid override"), std::string::npos);
  o = free_options(1e-6);
  o.xi = -1.0;
  EXPECT_NE(msg(o).find("xi override"), std::string::npos);
}

// Overrides of xi, r_c and P are honoured (the grid follows); the result still meets the target.
TEST(FreeSpace, Overrides) {
  std::vector<double> x, q;
  cloud(600, {1.0, 1.0, 1.0}, {0, 0, 0}, 31, x, q);
  const std::vector<double> ref = direct(x, q, x);
  Options o = free_options(1e-7);
  o.xi = 12.0;
  o.rc = 0.35;
  o.window_support = 14;
  EwaldPlan plan(o);
  const Result r = plan.evaluate(view(x, 3), view(q, 1));
  EXPECT_DOUBLE_EQ(r.params.xi, 12.0);
  EXPECT_DOUBLE_EQ(r.params.rc, 0.35);
  EXPECT_EQ(r.params.P, 14);
  EXPECT_LT(rms_diff(r.values.values.data(), ref) / rms(ref), 1e-7);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 2P (x and y periodic, z free; laplace): against the classical 2P Ewald sum evaluated directly
// (tests/common/ewald2p_reference.hpp: xi 6, 2-D images |p| <= 2, modes |k_i L_i / 2 pi| <= 20,
// converged to ~1e-15), and the square lattice's Madelung constant.
#include "common/ewald2p_reference.hpp"

namespace {

Options two_p_options(double eps, double Lx, double Ly) {
  Options o = free_options(eps);
  o.periodicity = {true, true, false};
  o.box = {Lx, Ly, 1.0};  // box[2] is not used in 2P
  return o;
}

TEST(DoublyPeriodic, LaplaceMeetsTheToleranceAgainstThe2PEwaldSum) {
  const double Lx = 1.0, Ly = 1.3;
  for (double dz : {0.8, 0.1}) {
    std::vector<double> x, q;
    cloud(kSanitized ? 120 : 250, {Lx, Ly, dz}, {0.0, 0.0, -0.3}, 41, x, q);
    double sum = 0;
    for (double v : q) sum += v;
    for (double& v : q) v -= sum / double(q.size());  // neutral
    const std::vector<double> ref = elliptica::test::ewald2p_laplace(x, q, Lx, Ly, 6.0, 2, 20);
    for (double eps : kTolerances) {
      EwaldPlan plan(two_p_options(eps, Lx, Ly));
      const Result r = plan.evaluate(view(x, 3), view(q, 1));
      const double err = rms_diff(r.values.values.data(), ref) / rms(ref);
      std::printf("2P laplace, thickness %.1f, eps %.0e: relative RMS error %.3g (est %.3g: R %.2g F %.2g W %.2g, xi %.3g rc %.3g), M %d x %d x %d, P %d\n", dz, eps, err, r.params.est_relative, r.params.est_real, r.params.est_fourier, r.params.est_window, r.params.xi, r.params.rc,
                  r.params.grid[0], r.params.grid[1], r.params.grid[2], r.params.P);
      EXPECT_LT(err, eps) << "thickness " << dz << " eps " << eps;
    }
  }
}

// Rock-salt (100) monolayer: charges +-1 on a square lattice of spacing a; the potential at an
// ion from all the others is -M2 q / a, M2 = 1.6155426267128247 (Zucker 1974; tested in
// test_ewald_truncated_green.cpp against the reference too). The points lie in one plane.
TEST(DoublyPeriodic, SquareLatticeMadelungConstant) {
  const double a = 0.37, M2 = 1.6155426267128247;
  const std::vector<double> x{0, 0, 0, a, 0, 0, 0, a, 0, a, a, 0};
  const std::vector<double> q{1, -1, -1, 1};
  for (double eps : {1e-6, 1e-11}) {
    Options o = two_p_options(eps, 2 * a, 2 * a);
    o.tolerance_kind = ToleranceKind::Absolute;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(r.values.values[std::size_t(i)], -M2 * q[std::size_t(i)] / a, eps) << i;
  }
}

// A net charge: the 2P sum is defined with the k_par = 0 term -2 pi |z| / A per charge (no
// neutrality needed); the result does not depend on xi (two overrides) and equals the reference.
TEST(DoublyPeriodic, NetChargeIsXiIndependent) {
  const double Lx = 0.9, Ly = 1.1;
  std::vector<double> x, q;
  cloud(150, {Lx, Ly, 0.5}, {0.0, 0.0, 0.0}, 43, x, q, 0.4);
  const std::vector<double> ref = elliptica::test::ewald2p_laplace(x, q, Lx, Ly, 6.0, 2, 20);
  const std::vector<double> ref2 = elliptica::test::ewald2p_laplace(x, q, Lx, Ly, 4.5, 3, 20);
  EXPECT_LT(rms_diff(ref.data(), ref2) / rms(ref), 1e-12);  // the reference itself
  for (double xi : {10.0, 14.0}) {  // r_c is capped at half the extent: xi r_c >= 5
    Options o = two_p_options(1e-10, Lx, Ly);
    o.xi = xi;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    EXPECT_LT(rms_diff(r.values.values.data(), ref) / rms(ref), 1e-10) << "xi " << xi;
  }
}

// The field, energy and forces in 2P (a net charge: the sheet's field 2 pi Q erf(xi z) / A is
// part of it), against the 2P Ewald sum's field term by term (ewald2p_laplace_field); the
// reference's own xi-independence checked first.
TEST(DoublyPeriodic, FieldEnergyAndForcesAgainstThe2PEwaldSum) {
  const double Lx = 1.1, Ly = 0.9;
  std::vector<double> x, q;
  cloud(kSanitized ? 100 : 200, {Lx, Ly, 0.6}, {0.0, 0.0, 0.0}, 47, x, q, 0.3);
  const std::vector<double> phi = elliptica::test::ewald2p_laplace(x, q, Lx, Ly, 6.0, 2, 20);
  const std::vector<double> E = elliptica::test::ewald2p_laplace_field(x, q, Lx, Ly, 6.0, 2, 20);
  const std::vector<double> E2 = elliptica::test::ewald2p_laplace_field(x, q, Lx, Ly, 4.5, 3, 20);
  EXPECT_LT(rms_diff(E2.data(), E) / rms(E), 1e-12);
  double U = 0, qabs = 0;
  for (std::size_t m = 0; m < q.size(); ++m) {
    U += 0.5 * q[m] * phi[m];
    qabs += std::abs(q[m]);
  }
  for (double eps : kTolerances) {
    Options o = two_p_options(eps, Lx, Ly);
    o.compute_field = true;
    o.compute_energy = true;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    const double ef = rms_diff(r.field.values.data(), E) / rms(E), ep = rms_diff(r.values.values.data(), phi) / rms(phi);
    std::printf("2P laplace field eps %.0e: field error %.3g, potential error %.3g, energy error %.3g\n", eps, ef, ep,
                std::abs(r.energy - U) / std::abs(U));
    EXPECT_LT(ef, eps);
    EXPECT_LT(ep, eps);
    EXPECT_LT(std::abs(r.energy - U), 0.5 * qabs * eps * rms(phi));
    for (std::size_t m = 0; m < q.size(); ++m)
      for (int d = 0; d < 3; ++d)
        ASSERT_NEAR(r.forces.values[3 * m + d], q[m] * r.field.values[3 * m + d], 1e-12 * std::abs(r.forces.values[3 * m + d]) + 1e-300);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1P (z periodic, x and y free; laplace): against the image sum over p = -P..P (symmetric, so
// that a neutral cell's dipole terms cancel pairwise; the tail ~ 1/P^2 removed by Richardson
// extrapolation from P and 2P), and the 1-D rock-salt chain's Madelung constant 2 ln 2.
namespace {

Options one_p_options(double eps, double Lz) {
  Options o = free_options(eps);
  o.periodicity = {false, false, true};
  o.box = {1.0, 1.0, Lz};  // box[0], box[1] are not used in 1P
  return o;
}

// An image sum over |p| <= P whose remainder falls as 1/P^2: (4 S(2P) - S(P)) / 3
template <class Partial>
std::vector<double> richardson(const Partial& partial, int P) {
  const std::vector<double> a = partial(P), b = partial(2 * P);
  std::vector<double> v(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) v[i] = (4 * b[i] - a[i]) / 3;
  return v;
}

std::vector<double> image_sum_1p(const std::vector<double>& x, const std::vector<double>& q, double Lz, int P) {
  auto partial = [&](int pmax) {
    const std::size_t n = q.size();
    std::vector<double> phi(n, 0.0);
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t j = 0; j < n; ++j) {
        const double dx = x[3 * m] - x[3 * j], dy = x[3 * m + 1] - x[3 * j + 1], dz = x[3 * m + 2] - x[3 * j + 2];
        const double r2p = dx * dx + dy * dy;
        double s = 0;
        for (int p = pmax; p >= 1; --p) {  // farthest first
          const double a = dz + p * Lz, b = dz - p * Lz;
          s += 1 / std::sqrt(r2p + a * a) + 1 / std::sqrt(r2p + b * b);
        }
        if (j != m) s += 1 / std::sqrt(r2p + dz * dz);
        phi[m] += q[j] * s;
      }
    return phi;
  };
  return richardson(partial, P);
}

// The field of the same image sum (converges without neutrality: each image's field ~ 1/p^2, the
// tail ~ 1/P^2 per pair, removed by the same extrapolation)
std::vector<double> image_field_1p(const std::vector<double>& x, const std::vector<double>& q, double Lz, int P) {
  auto partial = [&](int pmax) {
    const std::size_t n = q.size();
    std::vector<double> E(3 * n, 0.0);
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t j = 0; j < n; ++j) {
        const double dx = x[3 * m] - x[3 * j], dy = x[3 * m + 1] - x[3 * j + 1], dz = x[3 * m + 2] - x[3 * j + 2];
        const double r2p = dx * dx + dy * dy;
        double g[3] = {0, 0, 0};
        for (int p = -pmax; p <= pmax; ++p) {
          if (j == m && p == 0) continue;
          const double z = dz + p * Lz, r2 = r2p + z * z, ir3 = 1 / (r2 * std::sqrt(r2));
          g[0] += dx * ir3;
          g[1] += dy * ir3;
          g[2] += z * ir3;
        }
        for (int d = 0; d < 3; ++d) E[3 * m + std::size_t(d)] += q[j] * g[d];
      }
    return E;
  };
  return richardson(partial, P);
}

TEST(SinglyPeriodic, FieldWithNetChargeAgainstTheImageSum) {
  const double Lz = 0.8;
  std::vector<double> x, q;
  cloud(40, {0.7, 0.9, Lz}, {0.0, 0.0, 0.0}, 57, x, q, 0.4);
  const std::vector<double> E = image_field_1p(x, q, Lz, 20000);
  for (double eps : kTolerances) {
    Options o = one_p_options(eps, Lz);
    o.compute_field = true;
    o.compute_potential = false;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    const double err = rms_diff(r.field.values.data(), E) / rms(E);
    std::printf("1P laplace field (net charge) eps %.0e: relative RMS error %.3g\n", eps, err);
    EXPECT_LT(err, eps) << "eps " << eps;
  }
}

TEST(SinglyPeriodic, LaplaceMeetsTheToleranceAgainstTheImageSum) {
  const double Lz = 1.2;
  std::vector<double> x, q;
  cloud(40, {1.0, 0.7, Lz}, {0.0, 0.0, 0.0}, 51, x, q);
  double sum = 0;
  for (double v : q) sum += v;
  for (double& v : q) v -= sum / double(q.size());  // neutral
  const std::vector<double> ref = image_sum_1p(x, q, Lz, 20000);
  for (double eps : kTolerances) {
    EwaldPlan plan(one_p_options(eps, Lz));
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    const double err = rms_diff(r.values.values.data(), ref) / rms(ref);
    std::printf("1P laplace eps %.0e: relative RMS error %.3g, M %d x %d x %d, P %d\n", eps, err, r.params.grid[0],
                r.params.grid[1], r.params.grid[2], r.params.P);
    EXPECT_LT(err, eps) << "eps " << eps;
  }
}

// Charges +-1 alternating along a line at spacing a: the potential at an ion from all the others
// is -2 ln 2 q / a.
TEST(SinglyPeriodic, ChainMadelungConstant) {
  const double a = 0.6;
  const std::vector<double> x{0.2, -0.1, 0.0, 0.2, -0.1, a};
  const std::vector<double> q{1, -1};
  for (double eps : {1e-6, 1e-11}) {
    Options o = one_p_options(eps, 2 * a);
    o.tolerance_kind = ToleranceKind::Absolute;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(x, 3), view(q, 1));
    for (int i = 0; i < 2; ++i)
      EXPECT_NEAR(r.values.values[std::size_t(i)], -2 * std::log(2.0) * q[std::size_t(i)] / a, eps) << i;
  }
}

// A net charge: the k_z = 0 term -2 ln(rho) / L per charge (in the caller's length unit); the
// result does not depend on xi, and scaling every length by s gives phi / s - 2 Q ln(s) / (s L)
// (computed in units of a power of two: the plan's shift of the log's origin is undone).
TEST(SinglyPeriodic, NetChargeXiIndependenceAndUnits) {
  const double Lz = 0.9;
  std::vector<double> x, q;
  cloud(100, {0.6, 0.5, Lz}, {0.0, 0.0, 0.0}, 53, x, q, 0.5);
  double Q = 0;
  for (double v : q) Q += v;
  std::vector<double> phi[2];
  for (int i = 0; i < 2; ++i) {
    Options o = one_p_options(1e-11, Lz);
    o.xi = i == 0 ? 11.0 : 15.0;  // r_c is capped at half the extent: xi r_c >= 5
    EwaldPlan plan(o);
    phi[i] = plan.evaluate(view(x, 3), view(q, 1)).values.values;
  }
  EXPECT_LT(rms_diff(phi[1].data(), phi[0]) / rms(phi[0]), 1e-10);
  const double s = 0x1p30;
  std::vector<double> xs = x;
  for (double& v : xs) v *= s;
  EwaldPlan plan(one_p_options(1e-11, Lz * s));
  const std::vector<double> big = plan.evaluate(view(xs, 3), view(q, 1)).values.values;
  std::vector<double> want(phi[0].size());
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = phi[0][i] / s - 2 * Q * std::log(s) / (s * Lz);
  EXPECT_LT(rms_diff(big.data(), want) / rms(want), 1e-10);
}

// ---------------------------------------------------------------------------------------------
// The conventions of a net charge or force in 1P, checked in absolute terms: the image sum over
// |p| <= P with the line integral's divergent part removed, (2 / L) ln(2 (P + 1/2) L) per unit
// charge (laplace), times (I + e_z e_z^T) per unit force (stokeslet: the stokeslet's line
// integral over |z| < Z is 2 ln(2Z / rho) I_perp + 2 rho^ rho^^T across and 4 ln(2Z / rho) - 2
// along the line), extrapolated from P and 2P (the remainder ~ 1/P^2: the midpoint rule's end
// corrections). What is left is the documented k_z = 0 term: -2 ln(rho) / L (laplace);
// -2 ln(rho) I_perp + 2 rho^ rho^^T and -4 ln(rho) - 2 along the line, over L (stokeslet).
std::vector<double> image_sum_1p_log_removed(const std::vector<double>& x, const std::vector<double>& s, double Lz,
                                             int P, bool stokes) {
  const std::size_t n = x.size() / 3, nc = stokes ? 3 : 1;
  auto partial = [&](int pmax) {
    std::vector<double> v(n * nc, 0.0);
    const double divergent = 2 / Lz * std::log(2 * (pmax + 0.5) * Lz);
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t j = 0; j < n; ++j) {
        const double dx = x[3 * m] - x[3 * j], dy = x[3 * m + 1] - x[3 * j + 1], dz = x[3 * m + 2] - x[3 * j + 2];
        const double r2p = dx * dx + dy * dy;
        double acc[7] = {0, 0, 0, 0, 0, 0, 0};  // 1/r, then r r^T / r^3 (xx, xy, xz, yy, yz, zz)
        for (int pp = pmax; pp >= 0; --pp)  // farthest first
          for (int sg = (pp == 0 ? 1 : -1); sg <= 1; sg += 2) {
            const double z = dz + sg * pp * Lz, r2 = r2p + z * z;
            if (r2 == 0) continue;
            const double ir = 1 / std::sqrt(r2), ir3 = ir * ir * ir;
            acc[0] += ir;
            if (stokes) {
              acc[1] += dx * dx * ir3;
              acc[2] += dx * dy * ir3;
              acc[3] += dx * z * ir3;
              acc[4] += dy * dy * ir3;
              acc[5] += dy * z * ir3;
              acc[6] += z * z * ir3;
            }
          }
        if (!stokes) {
          v[m] += s[j] * (acc[0] - divergent);
          continue;
        }
        const double* f = &s[3 * j];
        const double S[3][3] = {
            {acc[0] + acc[1], acc[2], acc[3]}, {acc[2], acc[0] + acc[4], acc[5]}, {acc[3], acc[5], acc[0] + acc[6]}};
        for (int r = 0; r < 3; ++r) {
          double t = 0;
          for (int c = 0; c < 3; ++c) t += S[r][c] * f[c];
          v[m * 3 + std::size_t(r)] += t - divergent * (r == 2 ? 2.0 : 1.0) * f[r];
        }
      }
    return v;
  };
  return richardson(partial, P);
}

TEST(SinglyPeriodic, NetChargeConventionAgainstTheImageSum) {
  const double Lz = 0.9;
  std::vector<double> x, q;
  cloud(30, {0.6, 0.5, Lz}, {0.0, 0.0, 0.0}, 61, x, q, 0.5);
  const std::vector<double> ref = image_sum_1p_log_removed(x, q, Lz, 20000, false);
  Options o = one_p_options(1e-10, Lz);
  EwaldPlan plan(o);
  const Result r = plan.evaluate(view(x, 3), view(q, 1));
  const double err = rms_diff(r.values.values.data(), ref) / rms(ref);
  std::printf("1P laplace, net charge, against the image sum with the log removed: %.3g\n", err);
  EXPECT_LT(err, 1e-10);
}

// ---------------------------------------------------------------------------------------------
// The stokeslet in 2P (against the 2P Ewald sum, ewald2p_stokeslet) and in 1P (against the image
// sum with the log removed); both with a net force (no force balance needed: the sheet's shear
// flow -4 pi |z| (I - e_z e_z^T) / A, the line's 2-D flow) and viscosity 0.7.
// (x, y, z) -> (y, z, x) per row of 3 values, and back
std::vector<double> cycled(const std::vector<double>& v, bool back = false) {
  std::vector<double> c(v.size());
  for (std::size_t i = 0; i < v.size() / 3; ++i)
    for (int d = 0; d < 3; ++d) {
      const std::size_t a = 3 * i + std::size_t(d), b = 3 * i + std::size_t((d + 1) % 3);
      (back ? c[a] : c[b]) = back ? v[b] : v[a];
    }
  return c;
}

// The pressure 1/(4 pi) sum f . r / r^3 = 1/(4 pi) sum_a E_a[f_a]: the Laplace field of the force
// components as charges, from field_of(charges) -> E (3 per point)
template <class FieldOf>
std::vector<double> pressure_from_fields(const std::vector<double>& f, const FieldOf& field_of) {
  std::vector<double> p(f.size() / 3, 0.0);
  for (int a = 0; a < 3; ++a) {
    std::vector<double> qa(p.size());
    for (std::size_t i = 0; i < qa.size(); ++i) qa[i] = f[3 * i + std::size_t(a)];
    const std::vector<double> E = field_of(qa);
    for (std::size_t i = 0; i < qa.size(); ++i) p[i] += E[3 * i + std::size_t(a)] / (4 * M_PI);
  }
  return p;
}

// The stokeslet plan `o` (its tolerance replaced) at every tolerance: the velocity alone, then
// with the pressure, against uref / pref; then at eps 1e-10 with the axes cycled (periodicity
// and box cycled too): the reference, and the same result as the uncycled plan to rounding (a
// Nyquist sample taken with one sign made them differ by 2e-10)
void check_stokeslet(const char* label, Options o, const std::vector<double>& x, const std::vector<double>& f,
                     const std::vector<double>& uref, const std::vector<double>& pref) {
  for (bool pressure : {false, true})
    for (double eps : kSanitized ? std::vector<double>{1e-4} : kTolerances) {  // (sanitized: 1e-10 below)
      o.tolerance = eps;
      o.compute_pressure = pressure;
      const Result r = EwaldPlan(o).evaluate(view(x, 3), view(f, 3));
      const double eu = rms_diff(r.values.values.data(), uref) / rms(uref);
      const double ep = pressure ? rms_diff(r.pressure.values.data(), pref) / rms(pref) : 0.0;
      std::printf("%s stokeslet eps %.0e (pressure %d): velocity error %.3g (est %.3g), pressure error %.3g, M %d x %d "
                  "x %d, P %d\n", label, eps, int(pressure), eu, r.params.est_relative, ep, r.params.grid[0],
                  r.params.grid[1], r.params.grid[2], r.params.P);
      EXPECT_LT(eu, eps) << label << " eps " << eps;
      EXPECT_LT(ep, eps) << label << " eps " << eps;
    }
  o.tolerance = 1e-10;
  o.compute_pressure = false;
  const std::vector<double> same = EwaldPlan(o).evaluate(view(x, 3), view(f, 3)).values.values;
  Options oc = o;
  for (int d = 0; d < 3; ++d) {
    oc.periodicity[std::size_t((d + 1) % 3)] = o.periodicity[std::size_t(d)];
    oc.box[std::size_t((d + 1) % 3)] = o.box[std::size_t(d)];
  }
  const std::vector<double> back =
      cycled(EwaldPlan(oc).evaluate(view(cycled(x), 3), view(cycled(f), 3)).values.values, true);
  EXPECT_LT(rms_diff(back.data(), uref) / rms(uref), 1e-10) << label << " cycled";
  EXPECT_LT(rms_diff(back.data(), same) / rms(same), 1e-13) << label << " cycled";
}

TEST(DoublyPeriodic, StokesletAgainstThe2PEwaldSum) {
  const double Lx = 1.0, Ly = 1.3, mu = 0.7;
  std::vector<double> x, f;
  cloud(kSanitized ? 12 : 24, {Lx, Ly, 0.5}, {0.0, 0.0, 0.2}, 67, x, f, 0.2, 3);
  std::vector<double> ref = elliptica::test::ewald2p_stokeslet(x, f, Lx, Ly, 4.0, 2, 12);
  const std::vector<double> ref2 = elliptica::test::ewald2p_stokeslet(x, f, Lx, Ly, 5.0, 2, 15);
  EXPECT_LT(rms_diff(ref2.data(), ref) / rms(ref), 1e-12);  // the reference itself
  for (double& v : ref) v /= 8 * M_PI * mu;
  // (the 2P field's k_par = 0 term, the sheet's 2 pi erf(xi z) / A, is the normal force sheet's
  // pressure jump)
  const std::vector<double> pref = pressure_from_fields(
      f, [&](const std::vector<double>& q) { return elliptica::test::ewald2p_laplace_field(x, q, Lx, Ly, 6.0, 2, 20); });
  Options o = two_p_options(1e-6, Lx, Ly);
  o.kernel = Kernel::Stokeslet;
  o.viscosity = mu;
  check_stokeslet("2P", o, x, f, ref, pref);  // cycled: periodic along y and z
}

TEST(SinglyPeriodic, StokesletAgainstTheImageSum) {
  const double Lz = 1.1, mu = 0.7;
  std::vector<double> x, f;
  cloud(kSanitized ? 15 : 30, {0.8, 0.6, Lz}, {0.0, 0.0, 0.0}, 71, x, f, 0.3, 3);
  std::vector<double> ref = image_sum_1p_log_removed(x, f, Lz, 20000, true);
  for (double& v : ref) v /= 8 * M_PI * mu;
  const std::vector<double> pref =
      pressure_from_fields(f, [&](const std::vector<double>& q) { return image_field_1p(x, q, Lz, 20000); });
  Options o = one_p_options(1e-6, Lz);
  o.kernel = Kernel::Stokeslet;
  o.viscosity = mu;
  check_stokeslet("1P", o, x, f, ref, pref);  // cycled: periodic along x
  // every length times s = 2^30: u / s plus the log's unit, (1 / (8 pi mu s L)) (-2 ln s F_perp, -4 ln s F_z)
  {
    const double sc = 0x1p30;
    std::vector<double> xs = x;
    for (double& v : xs) v *= sc;
    Options o = one_p_options(1e-10, Lz * sc);
    o.kernel = Kernel::Stokeslet;
    o.viscosity = mu;
    EwaldPlan plan(o);
    const Result r = plan.evaluate(view(xs, 3), view(f, 3));
    double F[3] = {0, 0, 0};
    for (std::size_t i = 0; i < f.size() / 3; ++i)
      for (int d = 0; d < 3; ++d) F[d] += f[3 * i + std::size_t(d)];
    std::vector<double> want(ref.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const int d = int(i % 3);
      want[i] = ref[i] / sc + (d == 2 ? -4.0 : -2.0) * std::log(sc) * F[d] / (8 * M_PI * mu * sc * Lz);
    }
    EXPECT_LT(rms_diff(r.values.values.data(), want) / rms(want), 1e-10);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The stresslet (double layer) with free axes: 0P against the direct sum, 2P against the 2P Ewald
// sum (ewald2p_stresslet), 1P against the image sum (absolutely convergent: T ~ 1/r^2; the pair
// +-p's remainder ~ 1/p^3, the tail ~ 1/P^2, removed by Richardson); stokes-combined against the
// single and double layers' references together. The dipoles' sum q.nu is not zero (shift).
namespace {

// 8 pi u at each target: sum_n' -6 r (r.q_n)(r.nu_n) / r^5 (a coinciding source left out);
// with P > 0 also the sources' images at p `period` (|p| <= P), the two at |p| = P with weight
// 1/2 (the trapezoidal end correction: the remainder is then c / P^2 + O(1 / P^4), the odd
// kernel's image pairs falling as 1/p^3, and one Richardson step leaves O(1 / P^4))
std::vector<double> direct_stresslet(const std::vector<double>& src, const std::vector<double>& q,
                                     const std::vector<double>& nu, const std::vector<double>& trg, int P = 0,
                                     std::array<double, 3> period = {0, 0, 0}) {
  const std::size_t ns = src.size() / 3, nt = trg.size() / 3;
  std::vector<double> u(3 * nt, 0.0);
  for (std::size_t m = 0; m < nt; ++m)
    for (std::size_t n = 0; n < ns; ++n)
      for (int p = P; p >= -P; --p) {  // (the image pairs +-p from the farthest: its tail ~ 1/P^2)
        double r[3], r2 = 0;
        for (int d = 0; d < 3; ++d) {
          r[d] = trg[3 * m + d] - src[3 * n + d] + p * period[std::size_t(d)];
          r2 += r[d] * r[d];
        }
        if (r2 == 0) continue;
        const double ir2 = 1 / r2, ir5 = (P > 0 && (p == P || p == -P) ? 0.5 : 1.0) * ir2 * ir2 / std::sqrt(r2);
        const double rq = r[0] * q[3 * n] + r[1] * q[3 * n + 1] + r[2] * q[3 * n + 2];
        const double rn = r[0] * nu[3 * n] + r[1] * nu[3 * n + 1] + r[2] * nu[3 * n + 2];
        for (int d = 0; d < 3; ++d) u[3 * m + d] += -6 * r[d] * rq * rn * ir5;
      }
  return u;
}

Densities double_layer(const std::vector<double>& q, const std::vector<double>* f = nullptr) {
  Densities d;
  d.dipoles = view(q, 3);
  if (f) d.strengths = view(*f, 3);
  return d;
}

// stresslet (or stokes-combined with forces f and viscosity mu) plan `o` at x with dipoles q and
// normals nu, against uref (u, not 8 pi u) at every tolerance; returns the last result
Result check_double_layer(const char* label, Options o, const std::vector<double>& x, const std::vector<double>& q,
                          const std::vector<double>& nu, const std::vector<double>& uref,
                          const std::vector<double>& tolerances, const std::vector<double>* f = nullptr) {
  Result r;
  for (double eps : tolerances) {
    o.tolerance = eps;
    EwaldPlan plan(o);
    plan.set_points(view(x, 3), std::nullopt, view(nu, 3));
    r = plan.evaluate(double_layer(q, f));
    const double err = rms_diff(r.values.values.data(), uref) / rms(uref);
    std::printf("%s %s eps %.0e: relative RMS error %.3g (est %.3g), M %d x %d x %d, P %d\n", label,
                to_string(o.kernel).c_str(), eps, err, r.params.est_relative, r.params.grid[0], r.params.grid[1],
                r.params.grid[2], r.params.P);
    EXPECT_LT(err, eps) << label << " eps " << eps;
  }
  return r;
}

// random dipoles q in [-1, 1]^3 + shift and unit normals
void dipoles_and_normals(std::size_t n, std::uint64_t seed, std::vector<double>& q, std::vector<double>& nu,
                         double shift = 0.3) {
  Rng u{seed};
  q.resize(3 * n);
  nu.resize(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0;
    for (int d = 0; d < 3; ++d) {
      q[3 * i + d] = 2 * u() - 1 + shift;
      nu[3 * i + d] = 2 * u() - 1 + 0.5 * shift;
      s += nu[3 * i + d] * nu[3 * i + d];
    }
    for (int d = 0; d < 3; ++d) nu[3 * i + d] /= std::sqrt(s);
  }
}

TEST(FreeSpace, StressletAndCombinedAgainstTheDirectSum) {
  std::vector<double> x, dummy, q, nu, f;
  const std::size_t n = kSanitized ? 250 : 700;
  cloud(n, {1.0, 0.7, 1.3}, {2.0, -1.0, 0.5}, 81, x, dummy);
  dipoles_and_normals(n, 82, q, nu);
  std::vector<double> ref = direct_stresslet(x, q, nu, x);
  for (double& v : ref) v /= 8 * M_PI;
  Options o = free_options(1e-6);
  o.kernel = Kernel::Stresslet;
  check_double_layer("0P", o, x, q, nu, ref, kTolerances);
  // stokes-combined: the stokeslet of f / mu plus the stresslet (the forces drawn apart from x)
  std::vector<double> other;
  cloud(n, {1.0, 1.0, 1.0}, {0, 0, 0}, 87, other, f, 0.2, 3);
  const double mu = 0.6;
  std::vector<double> uc = direct_stokeslet(x, f, x);
  for (std::size_t i = 0; i < uc.size(); ++i) uc[i] = uc[i] / (8 * M_PI * mu) + ref[i];
  o.kernel = Kernel::StokesCombined;
  o.viscosity = mu;
  check_double_layer("0P", o, x, q, nu, uc, kSanitized ? std::vector<double>{1e-4} : std::vector<double>{1e-5, 1e-11}, &f);
}

TEST(DoublyPeriodic, StressletAgainstThe2PEwaldSum) {
  const double Lx = 1.0, Ly = 1.3;
  std::vector<double> x, dummy, q, nu;
  const std::size_t n = kSanitized ? 12 : 24;
  cloud(n, {Lx, Ly, 0.5}, {0.0, 0.0, 0.2}, 83, x, dummy);
  dipoles_and_normals(n, 84, q, nu);
  std::vector<double> ref = elliptica::test::ewald2p_stresslet(x, q, nu, Lx, Ly, 4.0, 2, 12);
  const std::vector<double> ref2 = elliptica::test::ewald2p_stresslet(x, q, nu, Lx, Ly, 5.0, 2, 15);
  EXPECT_LT(rms_diff(ref2.data(), ref) / rms(ref), 1e-12);  // the reference itself (xi-independent)
  for (double& v : ref) v /= 8 * M_PI;
  Options o = two_p_options(1e-6, Lx, Ly);
  o.kernel = Kernel::Stresslet;
  const std::vector<double> same =
      check_double_layer("2P", o, x, q, nu, ref, kSanitized ? std::vector<double>{1e-4, 1e-10} : kTolerances)
          .values.values;
  // the axes cycled (x, y, z) -> (y, z, x): periodic along y and z; the same result to rounding
  Options oc = o;
  oc.tolerance = kSanitized ? 1e-10 : 1e-12;
  for (int d = 0; d < 3; ++d) {
    oc.periodicity[std::size_t((d + 1) % 3)] = o.periodicity[std::size_t(d)];
    oc.box[std::size_t((d + 1) % 3)] = o.box[std::size_t(d)];
  }
  EwaldPlan plan(oc);
  plan.set_points(view(cycled(x), 3), std::nullopt, view(cycled(nu), 3));
  const std::vector<double> back = cycled(plan.evaluate(double_layer(cycled(q))).values.values, true);
  EXPECT_LT(rms_diff(back.data(), ref) / rms(ref), oc.tolerance) << "cycled";
  EXPECT_LT(rms_diff(back.data(), same) / rms(same), 1e-13) << "cycled";
}

TEST(SinglyPeriodic, StressletAndCombinedAgainstTheImageSum) {
  const double Lz = 1.1, mu = 0.7;
  std::vector<double> x, f, q, nu;
  const std::size_t n = kSanitized ? 15 : 30;
  cloud(n, {0.8, 0.6, Lz}, {0.0, 0.0, 0.0}, 85, x, f, 0.3, 3);
  dipoles_and_normals(n, 86, q, nu);
  auto partial = [&](int P) { return direct_stresslet(x, q, nu, x, P, {0, 0, Lz}); };
  std::vector<double> ref = richardson(partial, 1000);
  const std::vector<double> ref2 = richardson(partial, 2000);
  EXPECT_LT(rms_diff(ref2.data(), ref) / rms(ref), 1e-13);  // the reference itself
  for (double& v : ref) v /= 8 * M_PI;
  Options o = one_p_options(1e-6, Lz);
  o.kernel = Kernel::Stresslet;
  check_double_layer("1P", o, x, q, nu, ref, kSanitized ? std::vector<double>{1e-4, 1e-10} : kTolerances);
  // stokes-combined: the stokeslet's image sum with the log removed (its convention's constants)
  std::vector<double> uc = image_sum_1p_log_removed(x, f, Lz, 20000, true);
  for (std::size_t i = 0; i < uc.size(); ++i) uc[i] = uc[i] / (8 * M_PI * mu) + ref[i];
  o.kernel = Kernel::StokesCombined;
  o.viscosity = mu;
  check_double_layer("1P", o, x, q, nu, uc, kSanitized ? std::vector<double>{1e-4} : std::vector<double>{1e-5, 1e-11}, &f);
}

}  // namespace
