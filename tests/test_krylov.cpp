// Tests of the Krylov solvers (GMRES, FGMRES, CG/PCG) against dense LU solves (Eigen) and against
// properties that hold in exact arithmetic and survive rounding with the stated margins:
// - residual bound:    ||x - x*|| / ||x*|| <= kappa(A) ||b - A x|| / ||b||          (x0 = 0)
// - full GMRES terminates after at most deg(minimal polynomial of A w.r.t. r0) <= n steps;
// - GMRES residuals are non-increasing, and full GMRES is never worse than GMRES(m) at equal
//   iteration counts (both iterates lie in x0 + K_k(A, r0), full GMRES minimises over it);
// - CG error is monotone in the A-norm, and ||r_k|| / ||r_0|| <= 2 sqrt(kappa) ((sqrt(kappa) - 1) /
//   (sqrt(kappa) + 1))^k.
// GCC 12 reports false -Wmaybe-uninitialized / -Wuninitialized positives inside Eigen's AVX/AVX-512
// kernels (the self-initialised '__Y = __Y' of _mm512_undefined_pd in <immintrin.h>, GCC bug
// 105593; -Wuninitialized in the -O2 sanitizer build) with -march=native; they are not in our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <gtest/gtest.h>
#include <omp.h>

#include <Eigen/Dense>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace {

namespace kr = elliptica::krylov;
using cplx = std::complex<double>;
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// ---------------------------------------------------------------------------------------------
// Operators and preconditioners used by the tests.

template <class T>
class DenseOperator : public kr::LinearOperator<T> {
 public:
  explicit DenseOperator(Mat<T> a) : a_(std::move(a)) {}
  std::size_t size() const override { return static_cast<std::size_t>(a_.rows()); }
  void apply(const T* x, T* y) const override {
    const auto n = a_.rows();
    Eigen::Map<Vec<T>>(y, n).noalias() = a_ * Eigen::Map<const Vec<T>>(x, n);
  }
  const Mat<T>& matrix() const { return a_; }

 private:
  Mat<T> a_;
};

/// z = Minv r with an explicit matrix Minv.
template <class T>
class DensePreconditioner : public kr::Preconditioner<T> {
 public:
  DensePreconditioner(Mat<T> minv, bool symmetric) : m_(std::move(minv)), sym_(symmetric) {}
  std::size_t size() const override { return static_cast<std::size_t>(m_.rows()); }
  void apply(const T* r, T* z) const override {
    const auto n = m_.rows();
    Eigen::Map<Vec<T>>(z, n).noalias() = m_ * Eigen::Map<const Vec<T>>(r, n);
  }
  bool is_symmetric() const override { return sym_; }

 private:
  Mat<T> m_;
  bool sym_;
};

/// A preconditioner that changes between applications: M1, M2, M1, M2, ...
template <class T>
class AlternatingPreconditioner : public kr::Preconditioner<T> {
 public:
  AlternatingPreconditioner(Mat<T> m1, Mat<T> m2) : m1_(std::move(m1)), m2_(std::move(m2)) {}
  std::size_t size() const override { return static_cast<std::size_t>(m1_.rows()); }
  void apply(const T* r, T* z) const override {
    const auto n = m1_.rows();
    const Mat<T>& m = (calls_++ % 2 == 0) ? m1_ : m2_;
    Eigen::Map<Vec<T>>(z, n).noalias() = m * Eigen::Map<const Vec<T>>(r, n);
  }
  long calls() const { return calls_; }
  bool is_fixed() const override { return false; }

 private:
  Mat<T> m1_, m2_;
  mutable long calls_ = 0;
};

/// D L D with L the 5-point Laplacian (Dirichlet, unit spacing) on an nx x ny grid and D a
/// positive diagonal scaling (identity when empty); ny = 1 gives the 1D Laplacian. Optional shift:
/// D L D - shift I.
class ScaledLaplacian : public kr::LinearOperator<double> {
 public:
  ScaledLaplacian(int nx, int ny, std::vector<double> d = {}, double shift = 0.0)
      : nx_(nx), ny_(ny), d_(std::move(d)), shift_(shift) {
    if (d_.empty()) d_.assign(static_cast<std::size_t>(nx) * ny, 1.0);
  }
  std::size_t size() const override { return static_cast<std::size_t>(nx_) * ny_; }
  void apply(const double* x, double* y) const override {
    for (int j = 0; j < ny_; ++j)
      for (int i = 0; i < nx_; ++i) {
        const int k = i + nx_ * j;
        auto dx = [&](int kk) { return d_[kk] * x[kk]; };
        double s = (ny_ > 1 ? 4.0 : 2.0) * dx(k);
        if (i > 0) s -= dx(k - 1);
        if (i < nx_ - 1) s -= dx(k + 1);
        if (j > 0) s -= dx(k - nx_);
        if (j < ny_ - 1) s -= dx(k + nx_);
        y[k] = d_[k] * s - shift_ * x[k];
      }
  }
  double diagonal(std::size_t k) const { return (ny_ > 1 ? 4.0 : 2.0) * d_[k] * d_[k] - shift_; }

 private:
  int nx_, ny_;
  std::vector<double> d_;
  double shift_;
};

template <class T>
class JacobiPreconditioner : public kr::Preconditioner<T> {
 public:
  explicit JacobiPreconditioner(std::vector<T> inv_diag) : inv_(std::move(inv_diag)) {}
  std::size_t size() const override { return inv_.size(); }
  void apply(const T* r, T* z) const override {
    for (std::size_t i = 0; i < inv_.size(); ++i) z[i] = inv_[i] * r[i];
  }
  bool is_symmetric() const override { return true; }

 private:
  std::vector<T> inv_;
};

// ---------------------------------------------------------------------------------------------
// Random data and helpers.

template <class T>
T random_scalar(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (std::is_same_v<T, double>) {
    return u(rng);
  } else {
    const double re = u(rng);
    return T(re, u(rng));
  }
}

template <class T>
Vec<T> random_vector(int n, std::mt19937_64& rng) {
  Vec<T> v(n);
  for (int i = 0; i < n; ++i) v(i) = random_scalar<T>(rng);
  return v;
}

/// Well-conditioned nonsymmetric matrix (2 I + R / sqrt(n)) times a column scaling 10^U(-1,1)
/// (condition number of order 10^2).
template <class T>
Mat<T> random_nonsymmetric(int n, std::mt19937_64& rng) {
  Mat<T> a(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) a(i, j) = random_scalar<T>(rng) / std::sqrt(double(n));
  a.diagonal().array() += T(2.0);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int j = 0; j < n; ++j) a.col(j) *= std::pow(10.0, u(rng));
  return a;
}

/// 2-norm condition number from the eigenvalues of A^H A (cheap; accurate for the kappa <~ 1e4 used).
template <class T>
double condition_number(const Mat<T>& a) {
  const Mat<T> ata = a.adjoint() * a;
  Eigen::SelfAdjointEigenSolver<Mat<T>> es(ata, Eigen::EigenvaluesOnly);
  const auto& ev = es.eigenvalues();
  return std::sqrt(ev(ev.size() - 1) / ev(0));
}

void expect_non_increasing(const std::vector<double>& h, const std::string& what) {
  for (std::size_t i = 1; i < h.size(); ++i)
    EXPECT_LE(h[i], h[i - 1] * (1 + 1e-12) + 1e-15) << what << ": residual history increases at " << i;
}

/// ||x - x*|| / ||x*|| <= kappa * ||b - A x|| / ||b|| (x0 = 0), plus the LU solution's own error.
template <class T>
void expect_error_bound(const Vec<T>& x, const Vec<T>& xstar, double kappa, double rel_res, const std::string& what) {
  const double err = (x - xstar).norm() / xstar.norm();
  EXPECT_LE(err, kappa * rel_res * (1 + 1e-6) + 1e3 * kappa * 1e-16) << what;
}

template <class T>
double true_relative_residual(const Mat<T>& a, const Vec<T>& x, const Vec<T>& b) {
  return (b - a * x).norm() / b.norm();
}

int cycles(int iterations, int restart) { return (iterations + restart - 1) / restart; }

// ---------------------------------------------------------------------------------------------
// GMRES against dense LU

template <class T>
void gmres_against_lu(int n, int restart, std::uint64_t seed, bool flexible) {
  std::mt19937_64 rng(seed);
  const Mat<T> a = random_nonsymmetric<T>(n, rng);
  const Vec<T> b = random_vector<T>(n, rng);
  const Vec<T> xstar = a.partialPivLu().solve(b);
  const double kappa = condition_number(a);
  DenseOperator<T> op(a);
  kr::Options opt;
  opt.rtol = 1e-9;
  opt.restart = restart;
  opt.max_iterations = 5000;
  int calls = 0;
  opt.progress = [&](int it, double rel) {
    ++calls;
    EXPECT_EQ(it, calls);
    EXPECT_GT(rel, 0.0);
  };
  Vec<T> x = Vec<T>::Zero(n);
  const kr::Result r = flexible ? kr::fgmres<T>(op, b.data(), x.data(), nullptr, opt)
                                : kr::gmres<T>(op, b.data(), x.data(), nullptr, opt);
  const std::string what = std::string(flexible ? "fgmres" : "gmres") + " n=" + std::to_string(n) +
                           " m=" + std::to_string(restart) + " kappa=" + std::to_string(kappa);
  ASSERT_TRUE(r.converged) << what;
  EXPECT_LE(r.final_relative_residual, opt.rtol) << what;
  EXPECT_NEAR(r.final_relative_residual, true_relative_residual(a, x, b), 1e-13) << what;
  EXPECT_EQ(calls, r.iterations);
  ASSERT_EQ(r.residual_history.size(), static_cast<std::size_t>(r.iterations) + 1);
  EXPECT_EQ(r.residual_history[0], 1.0);
  EXPECT_LE(r.residual_history.back(), opt.rtol);
  expect_non_increasing(r.residual_history, what);
  expect_error_bound<T>(x, xstar, kappa, r.final_relative_residual, what);
  // Counters: initial residual + one per iteration + one true residual per cycle.
  EXPECT_EQ(r.operator_applications, r.iterations + 1 + cycles(r.iterations, restart)) << what;
  EXPECT_EQ(r.preconditioner_applications, 0);
}

TEST(GmresDense, RealNonsymmetricMatchesLuRestarted) { gmres_against_lu<double>(150, 20, 11, false); }
TEST(GmresDense, RealNonsymmetricMatchesLuFullRestart) { gmres_against_lu<double>(60, 60, 12, false); }
TEST(GmresDense, ComplexNonsymmetricMatchesLuRestarted) { gmres_against_lu<cplx>(120, 15, 13, false); }
TEST(GmresDense, ComplexNonsymmetricMatchesLuFullRestart) { gmres_against_lu<cplx>(50, 200, 14, false); }
TEST(KrylovFgmresDense, RealNonsymmetricMatchesLu) { gmres_against_lu<double>(100, 10, 15, true); }
TEST(KrylovFgmresDense, ComplexNonsymmetricMatchesLu) { gmres_against_lu<cplx>(80, 25, 16, true); }

TEST(GmresDense, NoRestartCountsIterationsPlusTwo) {
  std::mt19937_64 rng(21);
  const int n = 80;
  DenseOperator<double> op(random_nonsymmetric<double>(n, rng));
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.restart = n;
  Vec<double> x = Vec<double>::Zero(n);
  const auto r = kr::gmres<double>(op, b.data(), x.data(), nullptr, opt);
  ASSERT_TRUE(r.converged);
  ASSERT_LT(r.iterations, opt.restart);
  EXPECT_EQ(r.operator_applications, r.iterations + 2);
  EXPECT_EQ(r.preconditioner_applications, 0);
}

// Cyclic shift S e_i = e_{i+1 mod n}, b = e_1: the GMRES residual stays 1 for n - 1 steps and drops
// to 0 at step n (the minimal polynomial has degree n), the classic worst case.
TEST(GmresDense, CyclicShiftTerminatesAtExactlyN) {
  const int n = 40;
  Mat<double> s = Mat<double>::Zero(n, n);
  for (int i = 0; i < n; ++i) s((i + 1) % n, i) = 1.0;
  DenseOperator<double> op(s);
  Vec<double> b = Vec<double>::Zero(n);
  b(0) = 1.0;
  kr::Options opt;
  opt.rtol = 1e-12;
  opt.restart = n;
  opt.max_iterations = 3 * n;
  Vec<double> x = Vec<double>::Zero(n);
  const auto r = kr::gmres<double>(op, b.data(), x.data(), nullptr, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, n);
  for (int i = 1; i < n; ++i) EXPECT_NEAR(r.residual_history[i], 1.0, 1e-12) << i;
  EXPECT_LE(r.residual_history[n], 1e-12);
  Vec<double> xstar = Vec<double>::Zero(n);
  xstar(n - 1) = 1.0;
  EXPECT_LE((x - xstar).norm(), 1e-12);

  // GMRES(m) with m < n stagnates completely on this problem: every cycle restarts from r0.
  opt.restart = n / 2;
  opt.max_iterations = 2 * n;
  x.setZero();
  const auto rr = kr::gmres<double>(op, b.data(), x.data(), nullptr, opt);
  EXPECT_FALSE(rr.converged);
  EXPECT_EQ(rr.iterations, 2 * n);
  EXPECT_NEAR(rr.final_relative_residual, 1.0, 1e-12);
}

// Nonnormal upper triangular matrix with n distinct eigenvalues: full GMRES terminates within n
// steps (plus a small margin for rounding), and is never worse than GMRES(m) at equal iteration
// counts.
TEST(GmresDense, FullGmresAtMostNIterationsAndBeatsRestarted) {
  const int n = 60;
  std::mt19937_64 rng(31);
  Mat<double> a = Mat<double>::Zero(n, n);
  for (int j = 0; j < n; ++j) {
    a(j, j) = 1.0 + j;
    for (int i = 0; i < j; ++i) a(i, j) = 3.0 * random_scalar<double>(rng);
  }
  DenseOperator<double> op(a);
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-11;
  opt.restart = n + 10;
  opt.max_iterations = 10 * n;
  Vec<double> x = Vec<double>::Zero(n);
  const auto full = kr::gmres<double>(op, b.data(), x.data(), nullptr, opt);
  ASSERT_TRUE(full.converged);
  EXPECT_LE(full.iterations, n + 2);
  expect_non_increasing(full.residual_history, "full gmres");
  const Vec<double> xstar = a.partialPivLu().solve(b);
  expect_error_bound<double>(x, xstar, condition_number(a), full.final_relative_residual, "full gmres");

  opt.restart = 10;
  Vec<double> xr = Vec<double>::Zero(n);
  const auto restarted = kr::gmres<double>(op, b.data(), xr.data(), nullptr, opt);
  EXPECT_GT(restarted.iterations, full.iterations);
  expect_non_increasing(restarted.residual_history, "gmres(10)");
  const std::size_t common = std::min(full.residual_history.size(), restarted.residual_history.size());
  for (std::size_t k = 0; k < common; ++k)
    EXPECT_LE(full.residual_history[k], restarted.residual_history[k] * (1 + 1e-8) + 1e-14) << k;
}

// Three distinct eigenvalues: the Krylov space has dimension 3, so GMRES stops (Arnoldi breakdown or
// tolerance) after exactly 3 iterations.
TEST(GmresDense, ThreeDistinctEigenvaluesThreeIterations) {
  const int n = 30;
  std::mt19937_64 rng(41);
  Mat<cplx> a = Mat<cplx>::Zero(n, n);
  const cplx eig[3] = {cplx(1, 1), cplx(2, -0.5), cplx(-1.5, 0.3)};
  for (int i = 0; i < n; ++i) a(i, i) = eig[i % 3];
  // Similarity with a random well-conditioned matrix keeps the spectrum, destroys normality.
  const Mat<cplx> s = random_nonsymmetric<cplx>(n, rng);
  a = s * a * s.inverse();
  DenseOperator<cplx> op(a);
  const Vec<cplx> b = random_vector<cplx>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.restart = n;
  Vec<cplx> x = Vec<cplx>::Zero(n);
  const auto r = kr::gmres<cplx>(op, b.data(), x.data(), nullptr, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 3);
  const Vec<cplx> xstar = a.partialPivLu().solve(b);
  EXPECT_LE((x - xstar).norm() / xstar.norm(), 1e-8);
}

template <class T>
void perfect_preconditioner(bool flexible) {
  const int n = 70;
  std::mt19937_64 rng(51);
  const Mat<T> a = random_nonsymmetric<T>(n, rng);
  const Vec<T> b = random_vector<T>(n, rng);
  const Mat<T> ainv = a.partialPivLu().inverse();
  DenseOperator<T> op(a);
  DensePreconditioner<T> m(ainv, false);
  kr::Options opt;
  opt.rtol = 1e-10;
  Vec<T> x = Vec<T>::Zero(n);
  const auto r = flexible ? kr::fgmres<T>(op, b.data(), x.data(), &m, opt)
                          : kr::gmres<T>(op, b.data(), x.data(), &m, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 1);
  EXPECT_EQ(r.operator_applications, 3);
  EXPECT_EQ(r.preconditioner_applications, flexible ? 1 : 2);
  const Vec<T> xstar = a.partialPivLu().solve(b);
  EXPECT_LE((x - xstar).norm() / xstar.norm(), condition_number(a) * 1e-13);
}

TEST(GmresPreconditioned, PerfectPreconditionerOneIterationReal) { perfect_preconditioner<double>(false); }
TEST(GmresPreconditioned, PerfectPreconditionerOneIterationComplex) { perfect_preconditioner<cplx>(false); }
TEST(KrylovFgmresPreconditioned, PerfectPreconditionerOneIterationReal) { perfect_preconditioner<double>(true); }
TEST(KrylovFgmresPreconditioned, PerfectPreconditionerOneIterationComplex) { perfect_preconditioner<cplx>(true); }

// With a fixed preconditioner GMRES and FGMRES build the same Krylov space with the same operations;
// their residual histories agree (to rounding, which enters through the x update at restarts).
template <class T>
void gmres_equals_fgmres_fixed_m(std::uint64_t seed) {
  const int n = 90;
  std::mt19937_64 rng(seed);
  const Mat<T> a = random_nonsymmetric<T>(n, rng);
  const Vec<T> b = random_vector<T>(n, rng);
  std::vector<T> inv_diag(n);
  for (int i = 0; i < n; ++i) inv_diag[i] = T(1) / a(i, i);
  JacobiPreconditioner<T> m(inv_diag);
  DenseOperator<T> op(a);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.restart = 8;
  Vec<T> xg = Vec<T>::Zero(n), xf = Vec<T>::Zero(n), x0 = Vec<T>::Zero(n);
  const auto g = kr::gmres<T>(op, b.data(), xg.data(), &m, opt);
  const auto f = kr::fgmres<T>(op, b.data(), xf.data(), &m, opt);
  const auto plain = kr::gmres<T>(op, b.data(), x0.data(), nullptr, opt);
  ASSERT_TRUE(g.converged);
  ASSERT_TRUE(f.converged);
  ASSERT_TRUE(plain.converged);
  // Right Jacobi undoes the column scaling: far fewer iterations than unpreconditioned.
  EXPECT_LT(2 * g.iterations, plain.iterations);
  ASSERT_EQ(g.iterations, f.iterations);
  for (std::size_t k = 0; k < g.residual_history.size(); ++k)
    EXPECT_NEAR(g.residual_history[k], f.residual_history[k], 1e-9 * g.residual_history[k] + 1e-14) << k;
  EXPECT_EQ(g.preconditioner_applications, g.iterations + cycles(g.iterations, opt.restart));
  EXPECT_EQ(f.preconditioner_applications, f.iterations);
  EXPECT_EQ(g.operator_applications, f.operator_applications);
  EXPECT_LE((xg - xf).norm() / xg.norm(), condition_number(a) * 2 * opt.rtol);
}

TEST(KrylovFgmresFixedPreconditioner, MatchesGmresReal) { gmres_equals_fgmres_fixed_m<double>(61); }
TEST(KrylovFgmresFixedPreconditioner, MatchesGmresComplex) { gmres_equals_fgmres_fixed_m<cplx>(62); }

// FGMRES with a preconditioner that alternates between two different approximate inverses converges
// to the LU solution, and its least-squares residual is the true residual.
template <class T>
void fgmres_varying_preconditioner(std::uint64_t seed) {
  const int n = 100;
  std::mt19937_64 rng(seed);
  const Mat<T> a = random_nonsymmetric<T>(n, rng);
  const Vec<T> b = random_vector<T>(n, rng);
  Mat<T> pert(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) pert(i, j) = random_scalar<T>(rng) / std::sqrt(double(n));
  const Mat<T> m1 = (a + 0.5 * pert * a.diagonal().asDiagonal()).partialPivLu().inverse();
  const Mat<T> m2 = a.diagonal().cwiseInverse().asDiagonal();
  AlternatingPreconditioner<T> m(m1, m2);
  DenseOperator<T> op(a);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.restart = 10;
  Vec<T> x = Vec<T>::Zero(n);
  const auto r = kr::fgmres<T>(op, b.data(), x.data(), &m, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_EQ(r.preconditioner_applications, r.iterations);
  EXPECT_EQ(m.calls(), r.preconditioner_applications);
  EXPECT_GE(r.iterations, 2);  // both preconditioners were used
  expect_non_increasing(r.residual_history, "fgmres varying M");
  EXPECT_NEAR(r.final_relative_residual, r.residual_history.back(), 1e-12);
  EXPECT_NEAR(r.final_relative_residual, true_relative_residual(a, x, b), 1e-13);
  const Vec<T> xstar = a.partialPivLu().solve(b);
  expect_error_bound<T>(x, xstar, condition_number(a), r.final_relative_residual, "fgmres varying M");
}

TEST(KrylovFgmresVarying, AlternatingPreconditionerReal) { fgmres_varying_preconditioner<double>(71); }
TEST(KrylovFgmresVarying, AlternatingPreconditionerComplex) { fgmres_varying_preconditioner<cplx>(72); }

// ---------------------------------------------------------------------------------------------
// CG / PCG

double laplacian_kappa_2d(int n) {
  const double t = std::numbers::pi / (2.0 * (n + 1));
  const double smin = std::sin(t), smax = std::sin(n * t);
  return (smax * smax) / (smin * smin);
}

/// CG on the 2D Laplacian (nx x nx) with a random solution; returns the iteration count after
/// checking convergence, the sqrt(kappa) bound, the counters and the error bound.
int cg_laplacian_iterations(int nx) {
  ScaledLaplacian op(nx, nx);
  const int n = nx * nx;
  std::mt19937_64 rng(81 + nx);
  const Vec<double> u = random_vector<double>(n, rng);
  Vec<double> b(n);
  op.apply(u.data(), b.data());
  kr::Options opt;
  opt.rtol = 1e-8;
  opt.max_iterations = 2000;
  Vec<double> x = Vec<double>::Zero(n);
  const auto r = kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
  EXPECT_TRUE(r.converged);
  const double kappa = laplacian_kappa_2d(nx);
  const double sk = std::sqrt(kappa);
  const double bound = std::log(2 * sk / opt.rtol) / std::log((sk + 1) / (sk - 1));
  EXPECT_LE(r.iterations, bound) << "nx=" << nx << " kappa=" << kappa;
  // A random right-hand side excites the whole spectrum: the bound is attained up to a modest
  // factor (about 0.4 here; a method that "converges" much faster is solving something else).
  EXPECT_GE(r.iterations, 0.25 * bound) << "nx=" << nx << " kappa=" << kappa;
  EXPECT_EQ(r.operator_applications, r.iterations + 2);
  EXPECT_EQ(r.preconditioner_applications, 0);
  EXPECT_LE(r.final_relative_residual, opt.rtol);
  EXPECT_LE((x - u).norm() / u.norm(), kappa * r.final_relative_residual * (1 + 1e-6));
  return r.iterations;
}

TEST(CgLaplacian, IterationsScaleLikeSqrtKappa) {
  // sqrt(kappa) ~ 2 (nx + 1) / pi: doubling nx about doubles the iteration count.
  const int it20 = cg_laplacian_iterations(20);
  const int it40 = cg_laplacian_iterations(40);
  const double ratio = double(it40) / it20;
  EXPECT_GT(ratio, 1.6) << it20 << " -> " << it40;
  EXPECT_LT(ratio, 2.5) << it20 << " -> " << it40;
}

TEST(CgLaplacian, ErrorMonotoneInANorm) {
  const int n = 100;
  ScaledLaplacian op(n, 1);
  std::mt19937_64 rng(82);
  const Vec<double> u = random_vector<double>(n, rng);
  Vec<double> b(n);
  op.apply(u.data(), b.data());
  auto a_norm_error = [&](const Vec<double>& x) {
    const Vec<double> e = x - u;
    Vec<double> ae(n);
    op.apply(e.data(), ae.data());
    return std::sqrt(e.dot(ae));
  };
  kr::Options opt;
  opt.rtol = 1e-12;
  opt.max_iterations = 1000;
  Vec<double> xfull = Vec<double>::Zero(n);
  const auto full = kr::cg<double>(op, b.data(), xfull.data(), nullptr, opt);
  ASSERT_TRUE(full.converged);
  double prev = a_norm_error(Vec<double>::Zero(n));
  for (int k = 1; k <= 40; ++k) {
    opt.max_iterations = k;
    Vec<double> x = Vec<double>::Zero(n);
    const auto r = kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
    ASSERT_FALSE(r.converged);
    ASSERT_EQ(r.iterations, k);
    EXPECT_EQ(r.operator_applications, k + 2);
    // Same iterates as the long run: the truncated runs' final residuals are its history.
    EXPECT_NEAR(r.final_relative_residual, full.residual_history[k], 1e-10);
    const double e = a_norm_error(x);
    EXPECT_LT(e, prev) << "A-norm error increased at iteration " << k;
    prev = e;
  }
}

TEST(CgLaplacian, JacobiOnBadlyScaledMatrixNeedsFarFewerIterations) {
  const int nx = 20, n = nx * nx;
  std::mt19937_64 rng(83);
  std::uniform_real_distribution<double> ud(-2.0, 2.0);
  std::vector<double> d(n);
  for (auto& v : d) v = std::pow(10.0, ud(rng));
  ScaledLaplacian op(nx, nx, d);
  std::vector<double> inv_diag(n);
  for (int i = 0; i < n; ++i) inv_diag[i] = 1.0 / op.diagonal(i);
  JacobiPreconditioner<double> m(inv_diag);
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-8;
  opt.max_iterations = 20000;
  Vec<double> xc = Vec<double>::Zero(n), xp = Vec<double>::Zero(n);
  const auto c = kr::cg<double>(op, b.data(), xc.data(), nullptr, opt);
  const auto p = kr::cg<double>(op, b.data(), xp.data(), &m, opt);
  ASSERT_TRUE(p.converged);
  EXPECT_LT(10 * p.iterations, c.iterations) << "cg " << c.iterations << " pcg " << p.iterations;
  // D^-1 (D L D) D^-1 = L: PCG converges like CG on the unscaled Laplacian.
  const double sk = std::sqrt(laplacian_kappa_2d(nx));
  EXPECT_LE(p.iterations, std::log(2 * sk * 1e4 / opt.rtol) / std::log((sk + 1) / (sk - 1)));
  EXPECT_EQ(p.operator_applications, p.iterations + 2);
  EXPECT_EQ(p.preconditioner_applications, p.iterations);
  EXPECT_LE(p.final_relative_residual, opt.rtol);
}

template <class T>
Mat<T> random_hpd(int n, std::mt19937_64& rng) {
  Mat<T> g(n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) g(i, j) = random_scalar<T>(rng);
  Mat<T> a = g.adjoint() * g / double(n);
  a.diagonal().array() += T(0.05);
  return a;
}

template <class T>
void cg_against_lu(bool jacobi) {
  const int n = 80;
  std::mt19937_64 rng(91);
  const Mat<T> a = random_hpd<T>(n, rng);
  const Vec<T> b = random_vector<T>(n, rng);
  DenseOperator<T> op(a);
  std::vector<T> inv_diag(n);
  for (int i = 0; i < n; ++i) inv_diag[i] = T(1) / a(i, i);
  JacobiPreconditioner<T> m(inv_diag);
  kr::Options opt;
  opt.rtol = 1e-10;
  Vec<T> x = Vec<T>::Zero(n);
  const auto r = kr::cg<T>(op, b.data(), x.data(), jacobi ? &m : nullptr, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_LE(r.final_relative_residual, opt.rtol);
  EXPECT_NEAR(r.final_relative_residual, true_relative_residual(a, x, b), 1e-13);
  const Vec<T> xstar = a.ldlt().solve(b);
  expect_error_bound<T>(x, xstar, condition_number(a), r.final_relative_residual, "cg vs LDLT");
}

TEST(CgDense, RealSpdMatchesDirectSolve) { cg_against_lu<double>(false); }
TEST(CgDense, ComplexHpdMatchesDirectSolve) { cg_against_lu<cplx>(false); }
TEST(CgDense, ComplexHpdJacobiMatchesDirectSolve) { cg_against_lu<cplx>(true); }

TEST(CgDense, ThreeDistinctEigenvaluesAtMostThreeIterations) {
  const int n = 45;
  std::mt19937_64 rng(92);
  Mat<double> q = random_nonsymmetric<double>(n, rng).householderQr().householderQ();
  Vec<double> ev(n);
  for (int i = 0; i < n; ++i) ev(i) = 1.0 + 4.0 * (i % 3);
  const Mat<double> a = q * ev.asDiagonal() * q.transpose();
  DenseOperator<double> op(a);
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-10;
  Vec<double> x = Vec<double>::Zero(n);
  const auto r = kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
  ASSERT_TRUE(r.converged);
  EXPECT_LE(r.iterations, 3);
}

TEST(CgBreakdown, IndefiniteMatrixThrowsNumericalError) {
  // 1D Laplacian shifted so that its three smallest eigenvalues are negative.
  const int n = 60;
  const double t = std::numbers::pi / (2.0 * (n + 1));
  const double lam4 = 4 * std::sin(4 * t) * std::sin(4 * t), lam3 = 4 * std::sin(3 * t) * std::sin(3 * t);
  ScaledLaplacian op(n, 1, {}, 0.5 * (lam3 + lam4));
  std::mt19937_64 rng(93);
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-10;
  Vec<double> x = Vec<double>::Zero(n);
  try {
    kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
    FAIL() << "CG on an indefinite matrix did not throw";
  } catch (const elliptica::NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("positive definite"), std::string::npos) << e.what();
    EXPECT_EQ(e.category(), elliptica::ErrorCategory::Numerical);
  }
  // Negative definite: breakdown at the first iteration.
  ScaledLaplacian neg(n, 1, {}, 10.0);
  x.setZero();
  EXPECT_THROW(kr::cg<double>(neg, b.data(), x.data(), nullptr, opt), elliptica::NumericalError);
  // Indefinite preconditioner claiming to be symmetric: r^H M^{-1} r < 0.
  ScaledLaplacian lap(n, 1);
  JacobiPreconditioner<double> negm(std::vector<double>(n, -1.0));
  x.setZero();
  EXPECT_THROW(kr::cg<double>(lap, b.data(), x.data(), &negm, opt), elliptica::NumericalError);
}

// ---------------------------------------------------------------------------------------------
// Options, validation, edge cases

TEST(KrylovValidation, BadOptionsAndSizesThrow) {
  const int n = 10;
  ScaledLaplacian op(n, 1);
  std::vector<double> b(n, 1.0), x(n, 0.0);
  JacobiPreconditioner<double> m_small(std::vector<double>(n - 1, 0.5));
  DensePreconditioner<double> m_nonsym(Mat<double>::Identity(n, n), false);
  using Solver = kr::Result (*)(const kr::LinearOperator<double>&, const double*, double*,
                                const kr::Preconditioner<double>*, const kr::Options&);
  const Solver solvers[3] = {&kr::gmres<double>, &kr::fgmres<double>, &kr::cg<double>};
  for (int s = 0; s < 3; ++s) {
    SCOPED_TRACE(s);
    const Solver solve = solvers[s];
    for (double rtol : {0.0, 1.0, 1.5, -1e-3, std::nan("")}) {
      kr::Options opt;
      opt.rtol = rtol;
      EXPECT_THROW(solve(op, b.data(), x.data(), nullptr, opt), elliptica::InvalidArgument) << rtol;
    }
    kr::Options opt;
    opt.max_iterations = 0;
    EXPECT_THROW(solve(op, b.data(), x.data(), nullptr, opt), elliptica::InvalidArgument);
    opt = kr::Options{};
    EXPECT_THROW(solve(op, b.data(), x.data(), &m_small, opt), elliptica::InvalidArgument);
    std::vector<double> bad = b;
    bad[3] = std::nan("");
    EXPECT_THROW(solve(op, bad.data(), x.data(), nullptr, opt), elliptica::InvalidArgument);
    bad = x;
    bad[5] = INFINITY;
    EXPECT_THROW(solve(op, b.data(), bad.data(), nullptr, opt), elliptica::InvalidArgument);
    EXPECT_THROW(solve(op, nullptr, x.data(), nullptr, opt), elliptica::InvalidArgument);
  }
  kr::Options opt;
  opt.restart = 0;
  EXPECT_THROW(kr::gmres<double>(op, b.data(), x.data(), nullptr, opt), elliptica::InvalidArgument);
  EXPECT_THROW(kr::fgmres<double>(op, b.data(), x.data(), nullptr, opt), elliptica::InvalidArgument);
  opt = kr::Options{};
  try {
    kr::cg<double>(op, b.data(), x.data(), &m_nonsym, opt);
    FAIL() << "PCG accepted a non-symmetric preconditioner";
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("symmetric preconditioner"), std::string::npos) << e.what();
  }
  // x was never touched by the failing calls.
  for (double v : x) EXPECT_EQ(v, 0.0);
}

TEST(KrylovEdgeCases, ZeroInitialResidualReturnsImmediately) {
  const int n = 12;
  ScaledLaplacian op(n, 1);
  std::vector<double> b(n, 0.0);
  for (int s = 0; s < 3; ++s) {
    std::vector<double> x(n, 0.0);
    kr::Options opt;
    int calls = 0;
    opt.progress = [&](int, double) { ++calls; };
    const auto r = s == 0   ? kr::gmres<double>(op, b.data(), x.data(), nullptr, opt)
                   : s == 1 ? kr::fgmres<double>(op, b.data(), x.data(), nullptr, opt)
                            : kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
    EXPECT_TRUE(r.converged) << s;
    EXPECT_EQ(r.iterations, 0) << s;
    EXPECT_EQ(r.operator_applications, 1) << s;
    EXPECT_EQ(r.final_relative_residual, 0.0) << s;
    ASSERT_EQ(r.residual_history.size(), 1u) << s;
    EXPECT_EQ(calls, 0);
    for (double v : x) EXPECT_EQ(v, 0.0);
  }
}

TEST(KrylovEdgeCases, IterationCapStopsUnconverged) {
  const int n = 200;
  ScaledLaplacian op(n, 1);
  std::mt19937_64 rng(101);
  const Vec<double> b = random_vector<double>(n, rng);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.max_iterations = 7;
  opt.restart = 5;
  std::vector<double> hist;
  opt.progress = [&](int, double rel) { hist.push_back(rel); };
  Vec<double> x = Vec<double>::Zero(n);
  const auto g = kr::gmres<double>(op, b.data(), x.data(), nullptr, opt);
  EXPECT_FALSE(g.converged);
  EXPECT_EQ(g.iterations, 7);
  ASSERT_EQ(g.residual_history.size(), 8u);
  ASSERT_EQ(hist.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(hist[i], g.residual_history[i + 1]);
  EXPECT_EQ(g.operator_applications, 7 + 1 + 2);  // two cycles (5 + 2)
  EXPECT_NEAR(g.final_relative_residual, g.residual_history.back(), 1e-12);
  x.setZero();
  const auto c = kr::cg<double>(op, b.data(), x.data(), nullptr, opt);
  EXPECT_FALSE(c.converged);
  EXPECT_EQ(c.iterations, 7);
  EXPECT_EQ(c.operator_applications, 9);
  EXPECT_EQ(c.residual_history.size(), 8u);
}

// ---------------------------------------------------------------------------------------------
// Solver objects (operators themselves: nesting without special-case code)

// A Gmres/Fgmres/Cg object gives exactly what the free function gives (same arithmetic).
TEST(KrylovSolverObjects, EqualTheFreeFunctions) {
  const int n = 120;
  std::mt19937_64 rng(201);
  const Mat<double> a = random_nonsymmetric<double>(n, rng);
  const Vec<double> b = random_vector<double>(n, rng);
  DenseOperator<double> op(a);
  DensePreconditioner<double> m(a.diagonal().cwiseInverse().asDiagonal(), false);
  kr::Options opt;
  opt.rtol = 1e-10;
  opt.restart = 20;
  for (kr::Method meth : {kr::Method::Gmres, kr::Method::Fgmres}) {
    Vec<double> x1 = Vec<double>::Zero(n), x2 = Vec<double>::Zero(n);
    const auto r1 = meth == kr::Method::Gmres ? kr::gmres<double>(op, b.data(), x1.data(), &m, opt)
                                              : kr::fgmres<double>(op, b.data(), x1.data(), &m, opt);
    const auto solver = kr::make_solver<double>(meth, op, &m, opt);
    EXPECT_EQ(solver->method(), meth);
    const auto r2 = solver->solve(b.data(), x2.data());
    EXPECT_TRUE(r1.converged);
    EXPECT_EQ(r1.iterations, r2.iterations) << kr::to_string(meth);
    EXPECT_EQ(r1.residual_history, r2.residual_history);
    for (int i = 0; i < n; ++i) EXPECT_EQ(x1[i], x2[i]);
    // As an operator: apply = solve from zero.
    Vec<double> x3 = Vec<double>::Constant(n, 7.0);
    solver->apply(b.data(), x3.data());
    for (int i = 0; i < n; ++i) EXPECT_EQ(x3[i], x1[i]);
    EXPECT_EQ(solver->applications(), 1);
    EXPECT_EQ(solver->total_iterations(), r1.iterations);
    EXPECT_FALSE(solver->is_fixed());
  }
  ScaledLaplacian lap(30, 20);
  const Vec<double> bl = random_vector<double>(600, rng);
  Vec<double> y1 = Vec<double>::Zero(600), y2 = Vec<double>::Zero(600);
  const auto c1 = kr::cg<double>(lap, bl.data(), y1.data(), nullptr, opt);
  const kr::Cg<double> cg(lap, nullptr, opt);
  const auto c2 = cg.solve(bl.data(), y2.data());
  EXPECT_EQ(c1.iterations, c2.iterations);
  for (int i = 0; i < 600; ++i) EXPECT_EQ(y1[i], y2[i]);
}

// FGMRES preconditioned by an inner GMRES (a nonlinear map of its input) converges to the LU
// solution; GMRES and CG refuse that preconditioner at construction.
TEST(KrylovSolverObjects, FgmresAroundInnerGmresConverges) {
  const int n = 150;
  std::mt19937_64 rng(202);
  const Mat<double> a = random_nonsymmetric<double>(n, rng);
  const Vec<double> b = random_vector<double>(n, rng);
  DenseOperator<double> op(a);
  kr::Options inner_opt;
  inner_opt.rtol = 1e-2;
  inner_opt.max_iterations = 5;
  inner_opt.restart = 5;
  const kr::Gmres<double> inner(op, nullptr, inner_opt);
  kr::Options outer_opt;
  outer_opt.rtol = 1e-11;
  outer_opt.restart = 30;
  const kr::Fgmres<double> outer(op, &inner, outer_opt);
  Vec<double> x = Vec<double>::Zero(n);
  const auto r = outer.solve(b.data(), x.data());
  ASSERT_TRUE(r.converged);
  EXPECT_EQ(inner.applications(), r.preconditioner_applications);
  EXPECT_LE(inner.total_iterations(), 5 * inner.applications());
  const Vec<double> xstar = a.partialPivLu().solve(b);
  expect_error_bound<double>(x, xstar, condition_number(a), r.final_relative_residual, "fgmres(gmres)");
  // Unpreconditioned GMRES(30) needs more outer iterations than FGMRES around 5 inner steps.
  Vec<double> x0 = Vec<double>::Zero(n);
  const auto plain = kr::gmres<double>(op, b.data(), x0.data(), nullptr, outer_opt);
  EXPECT_LT(r.iterations, plain.iterations);
  try {
    kr::Gmres<double> bad(op, &inner, outer_opt);
    FAIL() << "GMRES accepted a non-fixed preconditioner";
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("FGMRES"), std::string::npos) << e.what();
  }
  Vec<double> x1 = Vec<double>::Zero(n);
  EXPECT_THROW(kr::gmres<double>(op, b.data(), x1.data(), &inner, outer_opt), elliptica::InvalidArgument);
}

TEST(KrylovSolverObjects, ConstructorChecks) {
  ScaledLaplacian lap(10, 10);
  DensePreconditioner<double> unsym(Mat<double>::Identity(100, 100), false);
  DensePreconditioner<double> wrong_size(Mat<double>::Identity(99, 99), true);
  EXPECT_THROW(kr::Cg<double>(lap, &unsym, {}), elliptica::InvalidArgument);
  EXPECT_THROW(kr::Gmres<double>(lap, &wrong_size, {}), elliptica::InvalidArgument);
  kr::Options bad;
  bad.rtol = 0;
  EXPECT_THROW(kr::Fgmres<double>(lap, nullptr, bad), elliptica::InvalidArgument);
  bad = {};
  bad.threads = -1;
  EXPECT_THROW(kr::Cg<double>(lap, nullptr, bad), elliptica::InvalidArgument);
  bad = {};
  bad.restart = 0;
  EXPECT_THROW(kr::Gmres<double>(lap, nullptr, bad), elliptica::InvalidArgument);
  EXPECT_EQ(kr::method_from_string("fgmres"), kr::Method::Fgmres);
  EXPECT_EQ(kr::to_string(kr::method_from_string("cg")), "cg");
  EXPECT_THROW(kr::method_from_string("gmres20"), elliptica::InvalidArgument);
}

// The threads option reaches the vector kernels through num_threads clauses: the process-wide
// OpenMP setting is unchanged after a solve, and 1 or 2 threads give the same answer up to the
// rounding of the reductions.
TEST(KrylovSolverObjects, ThreadsOptionLeavesProcessSettingAlone) {
  const int nx = 220, ny = 200;  // 44000 unknowns: above kParallelMinVector
  ScaledLaplacian lap(nx, ny);
  std::mt19937_64 rng(203);
  const Vec<double> b = random_vector<double>(nx * ny, rng);
  const int before = omp_get_max_threads();
  std::vector<Vec<double>> xs;
  std::vector<int> its;
  for (int t : {1, 2}) {
    kr::Options opt;
    opt.rtol = 1e-8;
    opt.threads = t;
    const kr::Cg<double> cg(lap, nullptr, opt);
    Vec<double> x = Vec<double>::Zero(nx * ny);
    const auto r = cg.solve(b.data(), x.data());
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(omp_get_max_threads(), before);
    xs.push_back(x);
    its.push_back(r.iterations);
  }
  EXPECT_NEAR(its[0], its[1], 2);
  EXPECT_LT((xs[0] - xs[1]).norm(), 1e-6 * xs[0].norm());
}

}  // namespace
