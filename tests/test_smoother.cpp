// Tests of the polynomial smoothers (src/multigrid/smoother.cpp): the smoother's error polynomial on
// eigenvectors of the 1D Laplacian against the closed forms, Lottes' optimal weights, the two-level
// quantity of the 4th kind, the lambda_max estimate, Schwarz base smoothers, symmetry and PCG.
#include <gtest/gtest.h>

// GCC 12 + AVX-512: false -Wmaybe-uninitialized inside its intrinsics headers via Eigen.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "multigrid/smoother_detail.hpp"

namespace mg = elliptica::multigrid;
using elliptica::CsrMatrix;

namespace {

const double kPi = std::acos(-1.0);

CsrMatrix laplace1d(int n) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    r.push_back(i), c.push_back(i), v.push_back(2.0);
    if (i > 0) r.push_back(i), c.push_back(i - 1), v.push_back(-1.0);
    if (i + 1 < n) r.push_back(i), c.push_back(i + 1), v.push_back(-1.0);
  }
  return CsrMatrix::from_triplets(n, n, r, c, v);
}

// 5-point Laplacian on an nx x ny interior grid (x fastest), unit spacing, Dirichlet boundary.
CsrMatrix laplace2d(int nx, int ny) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const std::int64_t p = i + std::int64_t{nx} * j;
      r.push_back(p), c.push_back(p), v.push_back(4.0);
      if (i > 0) r.push_back(p), c.push_back(p - 1), v.push_back(-1.0);
      if (i + 1 < nx) r.push_back(p), c.push_back(p + 1), v.push_back(-1.0);
      if (j > 0) r.push_back(p), c.push_back(p - nx), v.push_back(-1.0);
      if (j + 1 < ny) r.push_back(p), c.push_back(p + nx), v.push_back(-1.0);
    }
  const auto n = static_cast<std::size_t>(nx) * ny;
  return CsrMatrix::from_triplets(n, n, r, c, v);
}

double cheb_T(int k, double x) {
  double t0 = 1.0, t1 = x;
  if (k == 0) return t0;
  for (int i = 1; i < k; ++i) {
    const double t2 = 2.0 * x * t1 - t0;
    t0 = t1;
    t1 = t2;
  }
  return t1;
}

double cheb_W(int k, double x) {  // 4th kind: W_0 = 1, W_1 = 2x + 1
  double w0 = 1.0, w1 = 2.0 * x + 1.0;
  if (k == 0) return w0;
  for (int i = 1; i < k; ++i) {
    const double w2 = 2.0 * x * w1 - w0;
    w0 = w1;
    w1 = w2;
  }
  return w1;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = U(g);
  return v;
}

double a_norm(const CsrMatrix& A, const std::vector<double>& e) {
  std::vector<double> t(e.size());
  A.multiply(e.data(), t.data());
  return std::sqrt(dot(e, t));
}

// Applies the smoother (b = 0) to the j-th eigenvector of the 1D Laplacian (S A = A/2 for Jacobi,
// eigenvalue 1 - cos(j pi/(N+1))); returns the reduction factor and checks the output is parallel.
double eigen_factor(const mg::Smoother& s, int N, int j, int k, double* lambda) {
  std::vector<double> v(N), x(N), b(N, 0.0);
  for (int i = 0; i < N; ++i) v[i] = x[i] = std::sin(j * kPi * (i + 1) / (N + 1));
  *lambda = 1.0 - std::cos(j * kPi / (N + 1));
  s.smooth(b.data(), x.data(), k);
  const double f = dot(x, v) / dot(v, v);
  double perp = 0.0;
  for (int i = 0; i < N; ++i) perp = std::max(perp, std::abs(x[i] - f * v[i]));
  EXPECT_LT(perp, 1e-11) << "smoothed eigenvector is not parallel to the eigenvector";
  return f;
}

mg::SmootherOptions jacobi_opts(mg::Polynomial kind, double lmax) {
  mg::SmootherOptions o;
  o.base = mg::BaseSmoother::Jacobi;
  o.kind = kind;
  o.lambda_max = lmax;
  return o;
}

}  // namespace

TEST(ChebySmoother, FirstKindMatchesClosedForm) {
  const int N = 63;
  const auto A = laplace1d(N);
  const double lmax = 2.0;
  auto o = jacobi_opts(mg::Polynomial::Cheby1, lmax);
  o.lmin_ratio = 0.1;
  mg::Smoother s(A, o);
  const double lmin = 0.1 * lmax, theta = 0.5 * (lmax + lmin), delta = 0.5 * (lmax - lmin);
  for (int k : {1, 2, 3, 5, 8, 13})
    for (int j : {1, 5, 17, 40, 63}) {
      double l = 0;
      const double f = eigen_factor(s, N, j, k, &l);
      const double ref = cheb_T(k, (theta - l) / delta) / cheb_T(k, theta / delta);
      EXPECT_NEAR(f, ref, 1e-11) << "k=" << k << " j=" << j;
    }
}

TEST(ChebySmoother, FirstKindOptimalLminMatchesClosedForm) {
  const int N = 63;
  const auto A = laplace1d(N);
  const double lmax = 2.0;
  mg::Smoother s(A, jacobi_opts(mg::Polynomial::Cheby1Opt, lmax));
  for (int k : {1, 2, 4, 9}) {
    const double lmin = mg::detail::cheby1_opt_lmin_ratio(k) * lmax;
    const double theta = 0.5 * (lmax + lmin), delta = 0.5 * (lmax - lmin);
    for (int j : {1, 20, 63}) {
      double l = 0;
      const double f = eigen_factor(s, N, j, k, &l);
      EXPECT_NEAR(f, cheb_T(k, (theta - l) / delta) / cheb_T(k, theta / delta), 1e-11) << "k=" << k << " j=" << j;
    }
  }
}

TEST(ChebySmoother, FourthKindMatchesClosedForm) {
  const int N = 63;
  const auto A = laplace1d(N);
  const double lmax = 2.0;
  mg::Smoother s(A, jacobi_opts(mg::Polynomial::Cheby4, lmax));
  for (int k : {1, 2, 3, 4, 7, 16, 25})
    for (int j : {1, 5, 17, 40, 63}) {
      double l = 0;
      const double f = eigen_factor(s, N, j, k, &l);
      const double ref = cheb_W(k, 1.0 - 2.0 * l / lmax) / (2.0 * k + 1.0);
      EXPECT_NEAR(f, ref, 1e-11) << "k=" << k << " j=" << j;
    }
}

TEST(ChebySmoother, SimpleMatchesClosedForm) {
  const int N = 63;
  const auto A = laplace1d(N);
  const double lmax = 2.0;
  mg::Smoother s(A, jacobi_opts(mg::Polynomial::Simple, lmax));
  auto o = jacobi_opts(mg::Polynomial::Simple, lmax);
  o.omega = 0.7;
  mg::Smoother s2(A, o);
  for (int k : {1, 2, 5})
    for (int j : {1, 17, 63}) {
      double l = 0;
      const double f1 = eigen_factor(s, N, j, k, &l);
      EXPECT_NEAR(f1, std::pow(1.0 - l / lmax, k), 1e-12);
      const double f2 = eigen_factor(s2, N, j, k, &l);  // x += 0.7 S r, eigenvalue of S A is l
      EXPECT_NEAR(f2, std::pow(1.0 - 0.7 * l, k), 1e-12);
    }
}

TEST(ChebySmoother, OptFourthKindIsTheOptimalPolynomial) {
  // The weighted recurrence must realise p*(l) = prod (1 - l/r_j) (roots of the optimal polynomial)
  // and equal 1 - sum beta_i (p_{i-1} - p_i) in terms of the 4th-kind polynomials.
  const int N = 63;
  const auto A = laplace1d(N);
  const double lmax = 2.0;
  mg::Smoother s(A, jacobi_opts(mg::Polynomial::Cheby4Opt, lmax));
  for (int k : {1, 2, 3, 6, 16, 20}) {
    const auto roots = mg::detail::opt4_roots(k);
    const auto beta = mg::opt4_betas(k);
    for (int j : {1, 9, 30, 63}) {
      double l = 0;
      const double f = eigen_factor(s, N, j, k, &l);
      double p = 1.0;
      for (double r : roots) p *= 1.0 - (l / lmax) / r;
      double q = 1.0;
      for (int i = 1; i <= k; ++i)
        q -= beta[i - 1] * (mg::detail::cheby4_poly(i - 1, l / lmax) - mg::detail::cheby4_poly(i, l / lmax));
      EXPECT_NEAR(f, p, 1e-9) << "k=" << k << " j=" << j;
      EXPECT_NEAR(f, q, 1e-11) << "k=" << k << " j=" << j;
    }
  }
}

TEST(ChebyOpt4, GeneratorReproducesTable) {
  for (int k = 1; k <= 16; ++k) {
    const auto table = mg::opt4_betas(k);
    const auto comp = mg::detail::opt4_betas_computed(k);
    ASSERT_EQ(table.size(), static_cast<std::size_t>(k));
    ASSERT_EQ(comp.size(), static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) EXPECT_NEAR(comp[i], table[i], 1e-10) << "k=" << k << " i=" << i + 1;
  }
  EXPECT_THROW(mg::opt4_betas(0), elliptica::InvalidArgument);
}

TEST(ChebyOpt4, BeyondTableImprovesOnFourthKind) {
  for (int k : {17, 24, 32}) {
    const auto beta = mg::opt4_betas(k);
    ASSERT_EQ(beta.size(), static_cast<std::size_t>(k));
    EXPECT_GT(beta.back(), beta.front());
    const double g4 = mg::detail::two_level_gamma(mg::detail::cheby4_roots(k));
    const double go = mg::detail::two_level_gamma(mg::detail::opt4_roots(k));
    EXPECT_LT(go, g4) << "k=" << k;
    EXPECT_GT(go, 0.5 * g4) << "k=" << k;  // the optimisation gains a modest factor, not more
  }
}

TEST(ChebyTwoLevel, FourthKindGamma) {
  for (int k = 1; k <= 20; ++k) {
    const double g = mg::detail::two_level_gamma(mg::detail::cheby4_roots(k));
    EXPECT_NEAR(g, 3.0 / (4.0 * k * (k + 1.0)), 1e-12 / (k * k)) << "k=" << k;
  }
}

TEST(ChebyTwoLevel, FirstKindOptimalLmin) {
  // k = 1: p = 1 - l/theta, gamma minimal for theta = 2/3, i.e. lmin = 1/3.
  EXPECT_NEAR(mg::detail::cheby1_opt_lmin_ratio(1), 1.0 / 3.0, 1e-8);
  for (int k = 2; k <= 10; ++k) {
    const double r = mg::detail::cheby1_opt_lmin_ratio(k);
    ASSERT_GT(r, 0.0);
    ASSERT_LT(r, 1.0);
    const double g = mg::detail::two_level_gamma(mg::detail::cheby1_roots(k, r));
    EXPECT_LE(g, mg::detail::two_level_gamma(mg::detail::cheby1_roots(k, 0.1)) * (1 + 1e-12));
    EXPECT_LE(g, mg::detail::two_level_gamma(mg::detail::cheby1_roots(k, 1.02 * r)) * (1 + 1e-12));
    EXPECT_LE(g, mg::detail::two_level_gamma(mg::detail::cheby1_roots(k, 0.98 * r)) * (1 + 1e-12));
    // the optimal 4th kind is optimal over all polynomials, so no 1st kind beats it
    EXPECT_GE(g, mg::detail::two_level_gamma(mg::detail::opt4_roots(k)) * (1 - 1e-9));
  }
}

TEST(SmootherLambda, LanczosEstimateWithinSafety) {
  {
    const int N = 200;
    const auto A = laplace1d(N);
    mg::SmootherOptions o;  // Jacobi, 10 Lanczos steps, safety 1.1
    mg::Smoother s(A, o);
    const double rho = 1.0 - std::cos(N * kPi / (N + 1));  // of D^-1 A = A/2
    EXPECT_GE(s.lambda_max(), rho);
    EXPECT_LE(s.lambda_max(), 1.1 * rho * (1 + 1e-12));
  }
  {
    const int n = 30;
    const auto A = laplace2d(n, n);
    mg::SmootherOptions o;
    mg::Smoother s(A, o);
    const double rho = 0.5 * (2.0 - 2.0 * std::cos(n * kPi / (n + 1)));  // of A/4
    EXPECT_GE(s.lambda_max(), rho);
    EXPECT_LE(s.lambda_max(), 1.1 * rho * (1 + 1e-12));
    o.lambda_max = 3.0;
    EXPECT_EQ(mg::Smoother(A, o).lambda_max(), 3.0);
  }
}

TEST(SmootherSchwarz, ReducesErrorOn2DPoisson) {
  const int n = 24;
  const auto A = laplace2d(n, n);
  const mg::GridShape shape{2, {n, n, 0}};
  const auto e0 = random_vector(A.rows, 7);
  const std::vector<double> b(A.rows, 0.0);
  for (auto base : {mg::BaseSmoother::ASM, mg::BaseSmoother::RAS})
    for (bool geometric : {true, false})
      for (auto kind : {mg::Polynomial::Simple, mg::Polynomial::Cheby1, mg::Polynomial::Cheby4, mg::Polynomial::Cheby4Opt}) {
        mg::SmootherOptions o;
        o.base = base;
        o.kind = kind;
        mg::Smoother s(A, o, geometric ? shape : mg::GridShape{});
        EXPECT_GT(s.lambda_max(), 1.0);  // overlapping subdomains: rho(S A) > 1
        EXPECT_LT(s.lambda_max(), 1.1 * 4.0);
        auto x = e0;  // error = -x since the solution is 0
        const double before = a_norm(A, x);
        s.smooth(b.data(), x.data(), 3);
        const double after = a_norm(A, x);
        EXPECT_LT(after, 0.9 * before) << "base " << static_cast<int>(base) << " kind " << static_cast<int>(kind);
        // high frequencies are damped strongly: the checkerboard mode
        std::vector<double> hf(A.rows);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) hf[i + n * j] = ((i + j) % 2 ? 1.0 : -1.0);
        const double hb = a_norm(A, hf);
        s.smooth(b.data(), hf.data(), 3);
        EXPECT_LT(a_norm(A, hf), 0.3 * hb);
      }
}

TEST(SmootherSchwarz, SymmetryOfThePreconditioner) {
  const int n = 20;
  const auto A = laplace2d(n, n);
  const mg::GridShape shape{2, {n, n, 0}};
  const auto x = random_vector(A.rows, 1), y = random_vector(A.rows, 2);
  std::vector<double> Mx(A.rows), My(A.rows);
  for (auto base : {mg::BaseSmoother::Jacobi, mg::BaseSmoother::ASM, mg::BaseSmoother::RAS})
    for (auto kind : {mg::Polynomial::Simple, mg::Polynomial::Cheby1, mg::Polynomial::Cheby1Opt, mg::Polynomial::Cheby4,
                      mg::Polynomial::Cheby4Opt}) {
      mg::SmootherOptions o;
      o.base = base;
      o.kind = kind;
      mg::Smoother s(A, o, shape);
      mg::SmootherPreconditioner M(s, 4);
      M.apply(x.data(), Mx.data());
      M.apply(y.data(), My.data());
      const double a = dot(y, Mx), b = dot(x, My);
      const double scale = std::sqrt(dot(Mx, Mx) * dot(y, y));
      if (base == mg::BaseSmoother::RAS) {
        EXPECT_FALSE(M.is_symmetric());
        EXPECT_GT(std::abs(a - b), 1e-6 * scale) << "RAS preconditioner unexpectedly symmetric";
      } else {
        EXPECT_TRUE(M.is_symmetric());
        EXPECT_LT(std::abs(a - b), 1e-12 * scale) << "kind " << static_cast<int>(kind);
        EXPECT_GT(dot(x, Mx), 0.0);
      }
    }
}

TEST(SmootherPreconditioner, Cheby4JacobiAcceleratesCG) {
  const int n = 48;
  const auto A = laplace2d(n, n);
  const elliptica::CsrOperator op(A);
  const auto b = random_vector(A.rows, 3);
  elliptica::krylov::Options ko;
  ko.rtol = 1e-8;
  ko.max_iterations = 2000;
  std::vector<double> x0(A.rows, 0.0), x1(A.rows, 0.0);
  const auto plain = elliptica::krylov::cg<double>(op, b.data(), x0.data(), nullptr, ko);
  mg::SmootherOptions o;
  o.kind = mg::Polynomial::Cheby4;
  mg::Smoother s(A, o);
  mg::SmootherPreconditioner M(s, 4);
  const auto pcg = elliptica::krylov::cg<double>(op, b.data(), x1.data(), &M, ko);
  ASSERT_TRUE(plain.converged);
  ASSERT_TRUE(pcg.converged);
  std::printf("CG %d iterations, PCG(Cheby4-Jacobi, k=4) %d iterations\n", plain.iterations, pcg.iterations);
  EXPECT_LT(pcg.iterations, plain.iterations / 2) << "plain " << plain.iterations << " pcg " << pcg.iterations;
  std::vector<double> r(A.rows);
  A.multiply(x1.data(), r.data());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] -= b[i];
  EXPECT_LT(std::sqrt(dot(r, r) / dot(b, b)), 1e-7);
}

TEST(SmootherErrors, BadInput) {
  const auto A = laplace1d(10);
  mg::SmootherOptions o;
  mg::Smoother s(A, o);
  std::vector<double> b(10, 1.0), x(10, 0.0);
  EXPECT_THROW(s.smooth(b.data(), x.data(), 0), elliptica::InvalidArgument);
  o.base = mg::BaseSmoother::ASM;
  EXPECT_THROW(mg::Smoother(A, o, mg::GridShape{2, {3, 3, 0}}), elliptica::InvalidArgument);
  o.subdomain = 0;
  EXPECT_THROW(mg::Smoother(A, o), elliptica::InvalidArgument);
  const auto R = CsrMatrix::from_triplets(2, 3, {0}, {0}, {1.0});
  EXPECT_THROW(mg::Smoother(R, mg::SmootherOptions{}), elliptica::InvalidArgument);
  mg::SmootherOptions z;
  z.lambda_iterations = 0;
  EXPECT_THROW(mg::Smoother(A, z), elliptica::InvalidArgument);
}

TEST(SmootherSchwarz, ThreeDimensionalBoxes) {
  // 7-point Laplacian on 10^3 interior points: ASM/RAS boxes of 4^3 (+1 overlap) and index blocks.
  const int n = 10;
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  auto id = [n](int i, int j, int k) { return i + std::int64_t{n} * (j + std::int64_t{n} * k); };
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const auto p = id(i, j, k);
        r.push_back(p), c.push_back(p), v.push_back(6.0);
        const int nb[6][3] = {{i - 1, j, k}, {i + 1, j, k}, {i, j - 1, k}, {i, j + 1, k}, {i, j, k - 1}, {i, j, k + 1}};
        for (const auto& q : nb)
          if (q[0] >= 0 && q[0] < n && q[1] >= 0 && q[1] < n && q[2] >= 0 && q[2] < n)
            r.push_back(p), c.push_back(id(q[0], q[1], q[2])), v.push_back(-1.0);
      }
  const std::size_t N = static_cast<std::size_t>(n) * n * n;
  const auto A = CsrMatrix::from_triplets(N, N, r, c, v);
  const auto e0 = random_vector(N, 11);
  const std::vector<double> b(N, 0.0);
  for (auto base : {mg::BaseSmoother::ASM, mg::BaseSmoother::RAS}) {
    mg::SmootherOptions o;
    o.base = base;
    o.kind = mg::Polynomial::Cheby4Opt;
    mg::Smoother s(A, o, mg::GridShape{3, {n, n, n}});
    auto x = e0;
    const double before = a_norm(A, x);
    s.smooth(b.data(), x.data(), 2);
    EXPECT_LT(a_norm(A, x), 0.7 * before);
  }
  mg::SmootherOptions o;
  o.base = mg::BaseSmoother::ASM;
  EXPECT_THROW(mg::Smoother(A, o, mg::GridShape{3, {n, n, n + 1}}), elliptica::InvalidArgument);
}

// Checks x = S b of ASM/RAS (Simple smoother, omega = 1, one step from x = 0) against the definition
// S_ASM b = sum_i R_i^T A_i^-1 R_i b, S_RAS b = sum_i R0_i^T A_i^-1 R_i b (owned part only), for a
// variable-coefficient 5-point matrix on an nx x ny grid with boxes of s points + overlap ov.
void check_schwarz_definition(int nx, int ny, int s, int ov) {
  const auto L = laplace2d(nx, ny);
  const std::size_t N = L.rows;
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  std::mt19937 g(5);
  std::uniform_real_distribution<double> U(0.0, 2.0);
  for (std::size_t i = 0; i < N; ++i)
    for (auto e = L.row_ptr[i]; e < L.row_ptr[i + 1]; ++e) {
      r.push_back(static_cast<std::int64_t>(i));
      c.push_back(L.col[e]);
      v.push_back(L.val[e] + (L.col[e] == static_cast<std::int32_t>(i) ? U(g) : 0.0));
    }
  const auto A = CsrMatrix::from_triplets(N, N, r, c, v);
  const auto b = random_vector(N, 9);
  Eigen::VectorXd asm_ref = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(N)), ras_ref = asm_ref;
  std::vector<int> pos(N, -1);
  for (int by = 0; by * s < ny; ++by)
    for (int bx = 0; bx * s < nx; ++bx) {
      std::vector<int> idx, own;
      for (int y = std::max(0, by * s - ov); y < std::min(ny, (by + 1) * s + ov); ++y)
        for (int x = std::max(0, bx * s - ov); x < std::min(nx, (bx + 1) * s + ov); ++x) {
          idx.push_back(x + nx * y);
          own.push_back(x >= bx * s && x < (bx + 1) * s && y >= by * s && y < (by + 1) * s);
        }
      const auto m = static_cast<Eigen::Index>(idx.size());
      for (Eigen::Index i = 0; i < m; ++i) pos[idx[i]] = static_cast<int>(i);
      Eigen::MatrixXd Aq = Eigen::MatrixXd::Zero(m, m);
      Eigen::VectorXd bq(m);
      for (Eigen::Index i = 0; i < m; ++i) {
        bq[i] = b[idx[i]];
        for (auto e = A.row_ptr[idx[i]]; e < A.row_ptr[idx[i] + 1]; ++e)
          if (pos[A.col[e]] >= 0) Aq(i, pos[A.col[e]]) = A.val[e];
      }
      for (Eigen::Index i = 0; i < m; ++i) pos[idx[i]] = -1;
      const Eigen::VectorXd zq = Aq.lu().solve(bq);
      for (Eigen::Index i = 0; i < m; ++i) {
        asm_ref[idx[i]] += zq[i];
        if (own[i]) ras_ref[idx[i]] = zq[i];
      }
    }
  for (auto base : {mg::BaseSmoother::ASM, mg::BaseSmoother::RAS}) {
    mg::SmootherOptions o;
    o.base = base;
    o.kind = mg::Polynomial::Simple;
    o.omega = 1.0;
    o.lambda_max = 1.0;
    o.subdomain = s;
    o.overlap = ov;
    mg::Smoother sm(A, o, mg::GridShape{2, {nx, ny, 0}});
    std::vector<double> x(N, 0.0);
    sm.smooth(b.data(), x.data(), 1);  // x = S b
    const auto& ref = base == mg::BaseSmoother::ASM ? asm_ref : ras_ref;
    double err = 0.0;
    for (std::size_t i = 0; i < N; ++i) err = std::max(err, std::abs(x[i] - ref[static_cast<Eigen::Index>(i)]));
    EXPECT_LT(err, 1e-12) << "base " << static_cast<int>(base) << " grid " << nx << "x" << ny << " s=" << s << " ov=" << ov;
  }
}

TEST(SmootherSchwarz, MatchesDefinition) {
  check_schwarz_definition(7, 5, 3, 1);
  check_schwarz_definition(9, 8, 2, 1);      // s <= 2 overlap: serial ASM path
  check_schwarz_definition(161, 150, 4, 1);  // > 20000 unknowns: the threaded (coloured) paths
  check_schwarz_definition(150, 161, 5, 2);
}

// smooth(b, x, k, x_is_zero = true) skips the initial residual; it must give what the plain call
// gives from x = 0, for every kind and base, whatever x held on entry.
TEST(SmootherZeroGuess, MatchesTheGeneralPath) {
  const CsrMatrix A = laplace2d(12, 12);
  mg::GridShape shape;
  shape.dim = 2;
  shape.n = {12, 12, 1};
  std::mt19937 g(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> b(A.rows);
  for (auto& e : b) e = u(g);
  for (auto base : {mg::BaseSmoother::Jacobi, mg::BaseSmoother::ASM, mg::BaseSmoother::RAS})
    for (auto kind : {mg::Polynomial::Simple, mg::Polynomial::Cheby1, mg::Polynomial::Cheby1Opt,
                      mg::Polynomial::Cheby4, mg::Polynomial::Cheby4Opt}) {
      mg::SmootherOptions opt;
      opt.base = base;
      opt.kind = kind;
      const mg::Smoother S(A, opt, shape);
      for (int k : {1, 2, 5}) {
        std::vector<double> x0(A.rows, 0.0), xz(A.rows, 123.0);  // garbage: must be ignored
        S.smooth(b.data(), x0.data(), k);
        S.smooth(b.data(), xz.data(), k, true);
        for (std::size_t i = 0; i < A.rows; ++i) ASSERT_NEAR(xz[i], x0[i], 1e-13 * (1 + std::abs(x0[i])));
      }
    }
}

TEST(SmootherInput, NegativeDefiniteMatrixIsNamedAsSuch) {
  // Issue 9, finding 10: a negative definite matrix used to end as "lambda_max estimate failed
  // (zero start vector)".
  const int n = 10;
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    r.push_back(i), c.push_back(i), v.push_back(-2.0);
    if (i > 0) r.push_back(i), c.push_back(i - 1), v.push_back(1.0);
    if (i + 1 < n) r.push_back(i), c.push_back(i + 1), v.push_back(1.0);
  }
  const CsrMatrix A = CsrMatrix::from_triplets(n, n, r, c, v);
  for (auto base : {mg::BaseSmoother::Jacobi, mg::BaseSmoother::ASM, mg::BaseSmoother::RAS}) {
    mg::SmootherOptions o;
    o.base = base;
    o.subdomain = 3;
    try {
      mg::Smoother S(A, o);
      ADD_FAILURE() << "no error";
    } catch (const elliptica::InvalidArgument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("negative diagonal"), std::string::npos) << m;
      EXPECT_NE(m.find("row 0, 0-based"), std::string::npos) << m;
    }
  }
}
