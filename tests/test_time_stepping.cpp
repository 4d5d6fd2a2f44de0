/// @file test_time_stepping.cpp
/// Sequences of solves (issue 13, "time stepping"): several right-hand sides in one call,
/// Fischer's projection onto previous solutions (krylov/projection.hpp) with a Krylov solver and
/// with the SA and geometric multigrid plans on a moving source, and the numeric re-setup
/// (numeric_setup.hpp, MultigridPlan::update_values) for a changed diffusion coefficient. The
/// reference is a sparse direct solve (Eigen's SimplicialLDLT, independent of the library); the
/// accuracy bound of an iterative solution is ||x - x*|| / ||x*|| <= kappa(A) ||b - A x|| / ||b||
/// with kappa(A) of the 5-point Laplacian times the coefficient contrast.
#include <gtest/gtest.h>

#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <cmath>
#include <numeric>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/krylov/projection.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/numeric_setup.hpp"
#include "elliptica/multigrid/plan.hpp"

#include "common/sparse_problems.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// -div(k grad u) on the n x n interior points of [0,1]^2 (h = 1/(n+1)), Dirichlet, 5 points with
/// the harmonic mean of k at the faces; the pattern does not depend on k.
template <class K>
CsrMatrix diffusion2d(int n, K k) {
  const double h = 1.0 / (n + 1);
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  auto id = [n](int i, int j) { return static_cast<std::int64_t>(i + n * j); };
  auto face = [&](double x0, double y0, double x1, double y1) {
    const double a = k(x0, y0), b = k(x1, y1);
    return 2 * a * b / (a + b) / (h * h);
  };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double x = (i + 1) * h, y = (j + 1) * h;
      double d = 0;
      const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
      for (int q = 0; q < 4; ++q) {
        const double w = face(x, y, x + di[q] * h, y + dj[q] * h);
        d += w;
        const int a = i + di[q], b = j + dj[q];
        if (a < 0 || a >= n || b < 0 || b >= n) continue;
        r.push_back(id(i, j)), c.push_back(id(a, b)), v.push_back(-w);
      }
      r.push_back(id(i, j)), c.push_back(id(i, j)), v.push_back(d);
    }
  const auto N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return CsrMatrix::from_triplets(N, N, r, c, v);
}

CsrMatrix laplace2d(int n) {
  return diffusion2d(n, [](double, double) { return 1.0; });
}

/// kappa of the 5-point Laplacian on n x n interior points (h = 1/(n+1)).
double kappa_laplace(int n) {
  const double h = 1.0 / (n + 1);
  return std::pow(std::cos(kPi * h / 2), 2) / std::pow(std::sin(kPi * h / 2), 2);
}

std::vector<double> direct_solve(const CsrMatrix& A, const std::vector<double>& b) {
  std::vector<Eigen::Triplet<double>> t;
  for (std::size_t i = 0; i < A.rows; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p)
      t.emplace_back(static_cast<int>(i), A.col[static_cast<std::size_t>(p)], A.val[static_cast<std::size_t>(p)]);
  Eigen::SparseMatrix<double> M(static_cast<int>(A.rows), static_cast<int>(A.cols));
  M.setFromTriplets(t.begin(), t.end());
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> f(M);
  EXPECT_EQ(f.info(), Eigen::Success);
  Eigen::VectorXd x = f.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), static_cast<int>(b.size())));
  return {x.data(), x.data() + x.size()};
}

double norm(const std::vector<double>& a) { return std::sqrt(std::inner_product(a.begin(), a.end(), a.begin(), 0.0)); }

double rel_residual(const CsrMatrix& A, const std::vector<double>& b, const double* x) {
  std::vector<double> r(b.size());
  A.residual(b.data(), x, r.data());
  return norm(r) / norm(b);
}

double rel_error(const std::vector<double>& x, const std::vector<double>& ref) {
  double e = 0;
  for (std::size_t i = 0; i < x.size(); ++i) e += (x[i] - ref[i]) * (x[i] - ref[i]);
  return std::sqrt(e) / norm(ref);
}

/// A Gaussian source centred at (xc, 0.5) on the n x n interior points.
std::vector<double> source(int n, double xc) {
  const double h = 1.0 / (n + 1);
  std::vector<double> b(static_cast<std::size_t>(n) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double x = (i + 1) * h - xc, y = (j + 1) * h - 0.5;
      b[static_cast<std::size_t>(i + n * j)] = std::exp(-(x * x + y * y) / 0.01);
    }
  return b;
}

/// max |x_i^T A x_j - delta_ij| over the basis.
double orthonormality_defect(const krylov::SolutionProjection& p, const CsrMatrix& A) {
  double worst = 0;
  std::vector<double> ax(p.size());
  for (std::size_t i = 0; i < p.basis_size(); ++i) {
    A.multiply(p.basis_vector(i).data(), ax.data());
    for (std::size_t j = 0; j < p.basis_size(); ++j) {
      const auto& xj = p.basis_vector(j);
      const double g = std::inner_product(ax.begin(), ax.end(), xj.begin(), 0.0);
      worst = std::max(worst, std::abs(g - (i == j ? 1.0 : 0.0)));
    }
  }
  return worst;
}

// --- Fischer's projection, operator-generic (a plain CG as the inner solver) ---

TEST(SolutionProjection, BasisIsAOrthonormalAndReproducesSolutionsInItsSpan) {
  const int n = 31;
  const CsrMatrix A = laplace2d(n);
  const CsrOperator op(A, 0, true);
  krylov::Options ko;
  ko.rtol = 1e-12;
  ko.max_iterations = 2000;
  const krylov::Cg<double> cg(op, nullptr, ko);
  const auto inner = [&](const double* r, double* dx, double) { return cg.solve(r, dx); };
  krylov::SolutionProjection proj(A.rows, {.max_vectors = 8});
  std::vector<std::vector<double>> bs;
  std::vector<double> x(A.rows);
  for (int t = 0; t < 3; ++t) {
    bs.push_back(source(n, 0.3 + 0.2 * t));
    const auto res = proj.solve(op, bs.back().data(), x.data(), inner);
    EXPECT_EQ(res.basis_before, static_cast<std::size_t>(t));
    EXPECT_TRUE(res.appended);
    EXPECT_LE(rel_residual(A, bs.back(), x.data()), 1e-11);
  }
  EXPECT_EQ(proj.basis_size(), 3u);
  EXPECT_LE(orthonormality_defect(proj, A), 1e-10);
  // b in the span of the previous right-hand sides: x0 = A^{-1} b to the accuracy of the basis
  // (whose vectors solve their systems to rtol 1e-12), so the inner solve has almost nothing to do
  std::vector<double> b(A.rows);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.5 * bs[0][i] - 2.0 * bs[1][i] + bs[2][i];
  std::vector<double> x0(A.rows);
  proj.project(b.data(), x0.data());
  EXPECT_LE(rel_error(x0, direct_solve(A, b)), 1e-9);
  const auto res = proj.solve(op, b.data(), x.data(), inner);
  EXPECT_LE(res.projected_residual, 1e-9);
  EXPECT_FALSE(res.appended);  // nothing new: the direction is dropped (remainder at rounding level)
  EXPECT_EQ(proj.basis_size(), 3u);
}

TEST(SolutionProjection, RestartsFromTheLatestSolutionWhenFull) {
  const int n = 15;
  const CsrMatrix A = laplace2d(n);
  const CsrOperator op(A, 0, true);
  krylov::Options ko;
  ko.rtol = 1e-12;
  const krylov::Cg<double> cg(op, nullptr, ko);
  const auto inner = [&](const double* r, double* dx, double) { return cg.solve(r, dx); };
  krylov::SolutionProjection proj(A.rows, {.max_vectors = 3});
  std::vector<double> x(A.rows);
  for (int t = 0; t < 7; ++t) {
    const std::vector<double> b = source(n, 0.2 + 0.1 * t);
    const auto res = proj.solve(op, b.data(), x.data(), inner);
    EXPECT_EQ(res.restarted, t == 3 || t == 6) << t;
    EXPECT_EQ(res.basis_after, res.restarted ? 1u : std::min<std::size_t>(t % 3 + 1, 3)) << t;
    EXPECT_LE(orthonormality_defect(proj, A), 1e-10) << t;
    if (res.restarted) {  // x_1 = x / ||x||_A
      std::vector<double> ax(A.rows);
      A.multiply(x.data(), ax.data());
      const double xa = std::sqrt(std::inner_product(x.begin(), x.end(), ax.begin(), 0.0));
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(proj.basis_vector(0)[i], x[i] / xa, 1e-12 * norm(x) / xa);
    }
  }
}

TEST(SolutionProjection, AddedSolutionsAreReproducedAndAFailingInnerSolveLeavesTheBasis) {
  const int n = 31;
  const CsrMatrix A = laplace2d(n);
  const CsrOperator op(A, 0, true);
  krylov::SolutionProjection proj(A.rows, {.max_vectors = 4});
  const std::vector<double> b0 = source(n, 0.3), b1 = source(n, 0.6);
  const std::vector<double> x0 = direct_solve(A, b0), x1 = direct_solve(A, b1);
  EXPECT_TRUE(proj.add(op, x0.data()));
  EXPECT_TRUE(proj.add(op, x1.data()));
  EXPECT_FALSE(proj.add(op, x0.data()));  // already in the span
  EXPECT_EQ(proj.basis_size(), 2u);
  EXPECT_LE(orthonormality_defect(proj, A), 1e-12);
  std::vector<double> y(A.rows);
  proj.project(b1.data(), y.data());  // A^{-1} b1 lies in the span: reproduced
  EXPECT_LE(rel_error(y, x1), 1e-10);
  const auto failing = [](const double*, double*, double) -> krylov::Result {
    throw NumericalError("inner solve failed");
  };
  const std::vector<double> b2 = source(n, 0.45);
  EXPECT_THROW(proj.solve(op, b2.data(), y.data(), failing), NumericalError);
  EXPECT_EQ(proj.basis_size(), 2u);
  EXPECT_LE(orthonormality_defect(proj, A), 1e-12);
}

TEST(SolutionProjection, RefusesBadInput) {
  EXPECT_THROW(krylov::SolutionProjection(0), InvalidArgument);
  EXPECT_THROW(krylov::SolutionProjection(5, {.max_vectors = 0}), InvalidArgument);
  EXPECT_THROW(krylov::SolutionProjection(1000, {.max_vectors = std::size_t{1} << 60}), ResourceError);
  EXPECT_THROW(krylov::SolutionProjection(5, {.drop_tolerance = 0.0}), InvalidArgument);
  EXPECT_THROW(krylov::SolutionProjection(5, {.threads = -1}), InvalidArgument);
  const CsrMatrix A = laplace2d(3);
  const CsrOperator op(A, 0, true);
  krylov::SolutionProjection proj(4);
  std::vector<double> b(9, 1.0), x(9);
  const auto inner = [](const double*, double*, double) { return krylov::Result{}; };
  EXPECT_THROW(proj.solve(op, b.data(), x.data(), inner), InvalidArgument);  // size 9 vs 4
  krylov::SolutionProjection p9(9);
  b[2] = NAN;
  EXPECT_THROW(p9.solve(op, b.data(), x.data(), inner), InvalidArgument);
  EXPECT_EQ(p9.basis_size(), 0u);
}

// --- the plans: a moving source through the SA and the geometric hierarchy ---

struct SequenceStats {
  int iterations = 0;
  int later_iterations = 0;  ///< of the solves after the first two (the basis has a span then)
  double worst_residual = 0, worst_error = 0;
};

SequenceStats run_sequence(const MultigridPlan& plan, const CsrMatrix& A, int n, krylov::SolutionProjection* proj) {
  SequenceStats s;
  for (int t = 0; t < 16; ++t) {
    const std::vector<double> b = source(n, 0.3 + 0.005 * t);
    std::vector<double> x(A.rows, 0.0);
    int it = 0;
    if (proj) {
      const ProjectedSolveResult r = plan.solve(b.data(), x.data(), *proj);
      EXPECT_TRUE(r.converged);
      EXPECT_NEAR(r.residual_history.front(), r.projected_residual, 1e-15);
      it = r.iterations;
    } else {
      const SolveResult r = plan.solve(b.data(), x.data());
      EXPECT_TRUE(r.converged);
      it = r.iterations;
    }
    s.iterations += it;
    if (t >= 2) s.later_iterations += it;
    s.worst_residual = std::max(s.worst_residual, rel_residual(A, b, x.data()));
    s.worst_error = std::max(s.worst_error, rel_error(x, direct_solve(A, b)));
  }
  return s;
}

void check_projection_saves(const MultigridPlan& plan, const CsrMatrix& A, int n) {
  const double rtol = plan.options().solver.krylov.rtol;
  const SequenceStats plain = run_sequence(plan, A, n, nullptr);
  krylov::SolutionProjection proj(A.rows, {.max_vectors = 8});
  const SequenceStats projected = run_sequence(plan, A, n, &proj);
  std::printf("iterations over 16 steps: %d without, %d with projection (after step 2: %d vs %d)\n",
              plain.iterations, projected.iterations, plain.later_iterations, projected.later_iterations);
  // the same stopping rule ||b - A x|| <= rtol ||b|| for both, so the same accuracy bound
  EXPECT_LE(plain.worst_residual, rtol * (1 + 1e-6));
  EXPECT_LE(projected.worst_residual, rtol * (1 + 1e-6));
  EXPECT_LE(projected.worst_error, kappa_laplace(n) * rtol);
  EXPECT_LE(plain.worst_error, kappa_laplace(n) * rtol);
  // the source moves by 0.005 per step: the projected guess leaves a small residual, and the
  // solves after the first ones need clearly fewer iterations
  EXPECT_LE(projected.later_iterations * 10, plain.later_iterations * 7);
  EXPECT_LE(orthonormality_defect(proj, A), 1e-8);
  EXPECT_EQ(proj.basis_size(), 8u);  // 16 solves, L = 8: restarted at the 9th, full again
}

MultigridOptions pcg_options() {
  MultigridOptions o;
  o.solver.method = SolverMethod::Cg;
  o.solver.krylov.rtol = 1e-8;
  o.threads = 2;
  return o;
}

TEST(PlanProjection, FewerIterationsSameAccuracySmoothedAggregation) {
  const int n = 63;
  const CsrMatrix A = laplace2d(n);
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, pcg_options());
  check_projection_saves(plan, A, n);
}

TEST(PlanProjection, FewerIterationsSameAccuracyGeometric) {
  const int n = 63;
  const CsrMatrix A = laplace2d(n);
  GridShape s;
  s.dim = 2;
  s.n = {n, n, 1};
  const MultigridPlan plan(A, s, pcg_options());
  check_projection_saves(plan, A, n);
}

TEST(PlanProjection, PureNeumannWithTheConstantNullSpace) {
  // graph Laplacian of the n x n grid (singular, constants in the null space); sources with a
  // nonzero mean: the plan solves for their consistent part, the basis holds zero-mean solutions
  const int n = 48;
  const std::size_t N = static_cast<std::size_t>(n) * n;
  const CsrMatrix A = elliptica::testing::neumann2d(n);
  MultigridOptions o = pcg_options();
  o.constant_null_space = true;
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, o);
  krylov::SolutionProjection proj(N, {.max_vectors = 8});
  int plain = 0, projected = 0;
  for (int t = 0; t < 12; ++t) {
    std::vector<double> b = source(n, 0.3 + 0.005 * t);
    std::vector<double> x(N, 0.0), y(N, 0.0);
    const SolveResult r0 = plan.solve(b.data(), x.data());
    const ProjectedSolveResult r1 = plan.solve(b.data(), y.data(), proj);
    ASSERT_TRUE(r0.converged && r1.converged);
    if (t >= 2) plain += r0.iterations, projected += r1.iterations;
    const double bm = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(N);
    for (double& e : b) e -= bm;  // the consistent part
    double ym = 0;
    for (double e : y) ym += e / static_cast<double>(N);
    EXPECT_NEAR(ym, 0.0, 1e-12);
    EXPECT_LE(rel_residual(A, b, y.data()), 1e-8 * (1 + 1e-6));
    EXPECT_LE(rel_residual(A, b, x.data()), 1e-8 * (1 + 1e-6));
  }
  std::printf("pure Neumann, iterations after step 2: %d without, %d with projection\n", plain, projected);
  EXPECT_LE(projected * 10, plain * 7);
  EXPECT_LE(orthonormality_defect(proj, A), 1e-8);
}

TEST(PlanProjection, SizeMismatchRefused) {
  const CsrMatrix A = laplace2d(31);
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, pcg_options());
  krylov::SolutionProjection proj(10);
  std::vector<double> b(A.rows, 1.0), x(A.rows);
  EXPECT_THROW(plan.solve(b.data(), x.data(), proj), InvalidArgument);
}

// --- several right-hand sides in one call ---

TEST(PlanBlockSolve, EachColumnAsASingleSolveAndAsTheDirectSolve) {
  const int n = 63;
  const CsrMatrix A = laplace2d(n);
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, pcg_options());
  const std::size_t N = A.rows, k = 3;
  std::vector<double> B(N * k), X(N * k, 0.0);
  for (std::size_t c = 0; c < k; ++c) {
    const auto b = source(n, 0.2 + 0.3 * static_cast<double>(c));
    std::copy(b.begin(), b.end(), B.begin() + static_cast<std::ptrdiff_t>(c * N));
  }
  const auto res = plan.solve(B.data(), X.data(), k);
  ASSERT_EQ(res.size(), k);
  for (std::size_t c = 0; c < k; ++c) {
    const std::vector<double> b(B.begin() + static_cast<std::ptrdiff_t>(c * N), B.begin() + static_cast<std::ptrdiff_t>((c + 1) * N));
    const std::vector<double> x(X.begin() + static_cast<std::ptrdiff_t>(c * N), X.begin() + static_cast<std::ptrdiff_t>((c + 1) * N));
    std::vector<double> x1(N, 0.0);
    const SolveResult r1 = plan.solve(b.data(), x1.data());
    EXPECT_EQ(res[c].iterations, r1.iterations);
    EXPECT_EQ(x, x1);  // the same computation
    EXPECT_TRUE(res[c].converged);
    EXPECT_LE(rel_error(x, direct_solve(A, b)), kappa_laplace(n) * 1e-8);
  }
  EXPECT_THROW(plan.solve(B.data(), X.data(), 0), InvalidArgument);
}

TEST(PlanBlockSolve, ConstantNullSpaceAndAtolPerColumn) {
  // pure Neumann (graph Laplacian): singular with the constants as null space
  const int n = 40;
  const std::size_t N = static_cast<std::size_t>(n) * n;
  const CsrMatrix A = elliptica::testing::neumann2d(n);
  MultigridOptions o = pcg_options();
  o.constant_null_space = true;
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, o);
  // column 0: inconsistent (a constant added); column 1: zero (below any atol: 0 iterations)
  std::vector<double> B(2 * N, 0.0), X(2 * N, 0.0);
  for (std::size_t i = 0; i < N; ++i) B[i] = std::sin(0.1 * static_cast<double>(i)) + 3.0;
  OuterSolverOptions so = o.solver;
  so.krylov.atol = 1e-10;
  const auto res = plan.solve(B.data(), X.data(), 2, so);
  EXPECT_TRUE(res[0].converged);
  EXPECT_TRUE(res[1].converged);
  EXPECT_EQ(res[1].iterations, 0);
  double mean = 0;
  for (std::size_t i = 0; i < N; ++i) mean += X[i] / static_cast<double>(N);
  EXPECT_NEAR(mean, 0.0, 1e-12);
  // the residual of the consistent part
  std::vector<double> bc(B.begin(), B.begin() + static_cast<std::ptrdiff_t>(N)), rr(N);
  const double bm = std::accumulate(bc.begin(), bc.end(), 0.0) / static_cast<double>(N);
  for (double& x : bc) x -= bm;
  A.residual(bc.data(), X.data(), rr.data());
  EXPECT_LE(norm(rr), 1e-8 * norm(bc) * (1 + 1e-6));
  for (std::size_t i = N; i < 2 * N; ++i) EXPECT_EQ(X[i], 0.0);
}

// --- numeric re-setup ---

/// k = 1 with a region [0.25, 0.5]^2 scaled by `s`.
CsrMatrix scaled_region(int n, double s) {
  return diffusion2d(n, [s](double x, double y) { return x >= 0.25 && x <= 0.5 && y >= 0.25 && y <= 0.5 ? s : 1.0; });
}

double max_abs_diff(const CsrMatrix& a, const CsrMatrix& b) {
  EXPECT_TRUE(same_pattern(a, b));
  double d = 0;
  for (std::size_t q = 0; q < a.nnz(); ++q) d = std::max(d, std::abs(a.val[q] - b.val[q]));
  return d;
}

double max_abs(const CsrMatrix& a) {
  double d = 0;
  for (double v : a.val) d = std::max(d, std::abs(v));
  return d;
}

void check_update(MultigridPlan& plan, const MultigridPlan& fresh, const CsrMatrix& A1, int n, double contrast) {
  // the levels' matrices are the Galerkin products on the (kept or recomputed) transfer operators
  const Hierarchy& h = plan.hierarchy();
  ASSERT_EQ(h.num_levels(), plan.hierarchy().num_levels());
  EXPECT_EQ(max_abs_diff(*h.level(0).matrix, A1), 0.0);
  for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) {
    const CsrMatrix G = triple_product(h.level(j).R, *h.level(j).matrix, h.level(j).P);
    const CsrMatrix& Ac = *h.level(j + 1).matrix;
    // rows of Ac that are a unit diagonal (decoupled coarse unknowns of SA) have no product entries
    double d = 0;
    for (std::size_t i = 0; i < Ac.rows; ++i) {
      std::vector<double> row(Ac.cols, 0.0);
      for (std::int64_t p = G.row_ptr[i]; p < G.row_ptr[i + 1]; ++p) row[G.col[p]] = G.val[p];
      for (std::int64_t p = Ac.row_ptr[i]; p < Ac.row_ptr[i + 1]; ++p) d = std::max(d, std::abs(row[Ac.col[p]] - Ac.val[p]));
    }
    EXPECT_LE(d, 1e-12 * max_abs(Ac)) << "level " << j + 1;
  }
  // solves A1 as well as a plan set up from scratch on A1
  const std::vector<double> b = source(n, 0.4);
  std::vector<double> x(A1.rows, 0.0), xf(A1.rows, 0.0);
  const SolveResult r = plan.solve(b.data(), x.data());
  const SolveResult rf = fresh.solve(b.data(), xf.data());
  std::printf("iterations after update_values %d, fresh set-up %d\n", r.iterations, rf.iterations);
  EXPECT_TRUE(r.converged);
  EXPECT_LE(r.iterations, rf.iterations + 2);
  EXPECT_LE(rel_residual(A1, b, x.data()), 1e-8 * (1 + 1e-6));
  EXPECT_LE(rel_error(x, direct_solve(A1, b)), contrast * kappa_laplace(n) * 1e-8);
}

TEST(UpdateValues, SmoothedAggregationMatchesAFreshSetUp) {
  const int n = 63;
  const CsrMatrix A0 = scaled_region(n, 1.0), A1 = scaled_region(n, 100.0);
  MultigridPlan plan = MultigridPlan::smoothed_aggregation(A0, pcg_options());
  const MultigridPlan fresh = MultigridPlan::smoothed_aggregation(A1, pcg_options());
  const std::size_t levels = plan.hierarchy().num_levels();
  std::vector<CsrMatrix> T;  // the prolongators before: the pattern of the kept aggregation
  plan.update_values(A1);
  EXPECT_EQ(plan.update_count(), 1u);
  EXPECT_EQ(plan.hierarchy().num_levels(), levels);
  check_update(plan, fresh, A1, n, 100.0);
  // and back: the hierarchy of A0 again, value for value
  const MultigridPlan p0 = MultigridPlan::smoothed_aggregation(A0, pcg_options());
  plan.update_values(A0);
  for (std::size_t j = 0; j < levels; ++j)
    EXPECT_LE(max_abs_diff(*plan.hierarchy().level(j).matrix, *p0.hierarchy().level(j).matrix),
              1e-12 * max_abs(*p0.hierarchy().level(j).matrix));
}

TEST(UpdateValues, SmoothedAggregationKeepingTheProlongators) {
  const int n = 63;
  const CsrMatrix A0 = scaled_region(n, 1.0), A1 = scaled_region(n, 100.0);
  MultigridPlan plan = MultigridPlan::smoothed_aggregation(A0, pcg_options());
  std::vector<CsrMatrix> P0;
  for (std::size_t j = 0; j + 1 < plan.hierarchy().num_levels(); ++j) P0.push_back(plan.hierarchy().level(j).P);
  plan.update_values(A1, {.keep_prolongators = true});
  for (std::size_t j = 0; j < P0.size(); ++j) {  // P kept value for value
    EXPECT_TRUE(same_pattern(plan.hierarchy().level(j).P, P0[j]));
    EXPECT_EQ(plan.hierarchy().level(j).P.val, P0[j].val);
  }
  // still the Galerkin hierarchy of A1 (check_update compares the levels with R A P), solving it
  // to the same accuracy; the iteration count is reported (P follows A0's coefficients)
  const std::vector<double> b = source(n, 0.4);
  std::vector<double> x(A1.rows, 0.0);
  const SolveResult r = plan.solve(b.data(), x.data());
  std::printf("P kept: %d iterations\n", r.iterations);
  EXPECT_TRUE(r.converged);
  EXPECT_LE(rel_residual(A1, b, x.data()), 1e-8 * (1 + 1e-6));
  EXPECT_LE(rel_error(x, direct_solve(A1, b)), 100 * kappa_laplace(n) * 1e-8);
  const Hierarchy& h = plan.hierarchy();
  for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) {
    const CsrMatrix G = triple_product(h.level(j).R, *h.level(j).matrix, h.level(j).P);
    EXPECT_LE(max_abs_diff(G, *h.level(j + 1).matrix), 1e-12 * max_abs(G)) << "level " << j + 1;
  }
}

TEST(UpdateValues, GeometricKeepsPAndMatchesAFreshSetUp) {
  const int n = 63;
  const CsrMatrix A0 = scaled_region(n, 1.0), A1 = scaled_region(n, 100.0);
  GridShape s;
  s.dim = 2;
  s.n = {n, n, 1};
  MultigridPlan plan(A0, s, pcg_options());
  const MultigridPlan fresh(A1, s, pcg_options());
  plan.update_values(A1);
  // P does not depend on A: every level equals the fresh set-up's
  for (std::size_t j = 0; j < plan.hierarchy().num_levels(); ++j)
    EXPECT_LE(max_abs_diff(*plan.hierarchy().level(j).matrix, *fresh.hierarchy().level(j).matrix),
              1e-12 * max_abs(*fresh.hierarchy().level(j).matrix));
  check_update(plan, fresh, A1, n, 100.0);
}

TEST(UpdateValues, PureNeumannKeepsTheNullSpaceThroughTheUpdate) {
  // weighted graph Laplacian of the n x n grid, edge weight s inside [0.25, 0.5]^2 (both ends
  // there), 1 elsewhere: singular with the constants as null space for every s, the same pattern
  const int n = 48;
  auto laplacian = [n](double s) {
    std::vector<std::int64_t> r, c;
    std::vector<double> v;
    auto inside = [n](int i, int j) {
      const double x = (i + 0.5) / n, y = (j + 0.5) / n;
      return x >= 0.25 && x <= 0.5 && y >= 0.25 && y <= 0.5;
    };
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double d = 0;
        const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
        for (int q = 0; q < 4; ++q) {
          const int a = i + di[q], b = j + dj[q];
          if (a < 0 || a >= n || b < 0 || b >= n) continue;
          const double w = inside(i, j) && inside(a, b) ? s : 1.0;
          r.push_back(i + n * j), c.push_back(a + n * b), v.push_back(-w), d += w;
        }
        r.push_back(i + n * j), c.push_back(i + n * j), v.push_back(d);
      }
    const std::size_t N = static_cast<std::size_t>(n) * n;
    return CsrMatrix::from_triplets(N, N, r, c, v);
  };
  const CsrMatrix A0 = laplacian(1.0), A1 = laplacian(50.0);
  MultigridOptions o = pcg_options();
  o.constant_null_space = true;
  MultigridPlan plan = MultigridPlan::smoothed_aggregation(A0, o);
  const MultigridPlan fresh = MultigridPlan::smoothed_aggregation(A1, o);
  plan.update_values(A1);
  const auto* sd = dynamic_cast<const SparseDirect*>(plan.hierarchy().coarse_solver());
  ASSERT_NE(sd, nullptr);
  EXPECT_EQ(sd->null_pivots(), 1u);  // the constant survives the re-factorisation with the kept ordering
  std::vector<double> b = source(n, 0.4);
  std::vector<double> x(A1.rows, 0.0), xf(A1.rows, 0.0);
  const SolveResult r = plan.solve(b.data(), x.data());
  const SolveResult rf = fresh.solve(b.data(), xf.data());
  std::printf("pure Neumann: iterations after update_values %d, fresh set-up %d\n", r.iterations, rf.iterations);
  EXPECT_TRUE(r.converged);
  EXPECT_LE(r.iterations, rf.iterations + 2);
  const double bm = std::accumulate(b.begin(), b.end(), 0.0) / static_cast<double>(b.size());
  for (double& e : b) e -= bm;
  EXPECT_LE(rel_residual(A1, b, x.data()), 1e-8 * (1 + 1e-6));
  // the same zero-mean solution as the fresh plan's, to the two solves' accuracy: 2 kappa 1e-8 with
  // kappa on the range <= (w_max / w_min) kappa(grid Laplacian) (L <= L_w <= 50 L as quadratic
  // forms), kappa(grid Laplacian) <= 8 / (4 sin^2(pi / (2 n))) (its smallest nonzero eigenvalue)
  const double kappa_neumann = 8.0 / (4.0 * std::pow(std::sin(kPi / (2.0 * n)), 2));
  double d = 0, nx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d += (x[i] - xf[i]) * (x[i] - xf[i]), nx += xf[i] * xf[i];
  EXPECT_LE(std::sqrt(d / nx), 2 * 50 * kappa_neumann * 1e-8);
}

TEST(UpdateValues, OtherPatternOrSizeRefusedAndPlanUnchanged) {
  const int n = 31;
  const CsrMatrix A0 = laplace2d(n);
  GridShape s;
  s.dim = 2;
  s.n = {n, n, 1};
  MultigridPlan sa = MultigridPlan::smoothed_aggregation(A0, pcg_options());
  MultigridPlan geo(A0, s, pcg_options());
  // one more entry (a symmetric pair) in the pattern
  CsrMatrix extra;
  {
    std::vector<std::int64_t> r, c;
    std::vector<double> v;
    for (std::size_t i = 0; i < A0.rows; ++i)
      for (std::int64_t p = A0.row_ptr[i]; p < A0.row_ptr[i + 1]; ++p)
        r.push_back(static_cast<std::int64_t>(i)), c.push_back(A0.col[p]), v.push_back(A0.val[p]);
    r.push_back(0), c.push_back(40), v.push_back(-0.1);
    r.push_back(40), c.push_back(0), v.push_back(-0.1);
    extra = CsrMatrix::from_triplets(A0.rows, A0.cols, r, c, v);
  }
  const CsrMatrix smaller = laplace2d(n - 2);
  for (MultigridPlan* p : {&sa, &geo}) {
    try {
      p->update_values(extra);
      ADD_FAILURE() << "a different pattern was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("different sparsity pattern"), std::string::npos) << e.what();
    }
    EXPECT_THROW(p->update_values(smaller), InvalidArgument);
    EXPECT_EQ(p->update_count(), 0u);
  }
  // a matrix whose coarsest Galerkin operator is not positive definite: NumericalError, plan kept
  CsrMatrix neg = A0;
  for (double& v : neg.val) v = -v;
  EXPECT_THROW(geo.update_values(neg), NumericalError);
  EXPECT_THROW(sa.update_values(neg), InvalidArgument);  // SA refuses the negative diagonal first
  // unsymmetric values on the same pattern: refused with P recomputed (InvalidArgument) and with
  // P kept (the coarsest factorisation's symmetry check), the plan unchanged
  CsrMatrix asym = A0;
  asym.val[1] *= 1.5;
  EXPECT_THROW(sa.update_values(asym), InvalidArgument);
  EXPECT_THROW(sa.update_values(asym, {.keep_prolongators = true}), NumericalError);
  EXPECT_EQ(sa.update_count(), 0u);
  const std::vector<double> b = source(n, 0.5);
  for (MultigridPlan* p : {&sa, &geo}) {
    std::vector<double> x(A0.rows, 0.0);
    EXPECT_TRUE(p->solve(b.data(), x.data()).converged);
    EXPECT_LE(rel_residual(A0, b, x.data()), 1e-8 * (1 + 1e-6));
  }
}

TEST(UpdateValues, GalerkinValuesIntoAPatternAndItsLimits) {
  const CsrMatrix A = laplace2d(31);
  const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, pcg_options());
  const Level& f = plan.hierarchy().level(0);
  CsrMatrix C = *plan.hierarchy().level(1).matrix;
  const CsrMatrix ref = triple_product(f.R, A, f.P);
  for (double& v : C.val) v = 7.0;  // overwritten
  ASSERT_TRUE(galerkin_values(f.R, A, f.P, C));
  EXPECT_LE(max_abs_diff(C, ref), 1e-13 * max_abs(ref));
  // a pattern missing an entry of the product: refused
  CsrMatrix D = C;
  D.col.erase(D.col.begin() + 1);
  D.val.erase(D.val.begin() + 1);
  for (std::size_t i = 1; i < D.row_ptr.size(); ++i) D.row_ptr[i] -= 1;
  EXPECT_FALSE(galerkin_values(f.R, A, f.P, D));
  CsrMatrix wrong = C;
  wrong.rows = 3;
  EXPECT_THROW(galerkin_values(f.R, A, f.P, wrong), InvalidArgument);
}

TEST(UpdateValues, SparseDirectWithAKeptOrderingSolvesTheNewMatrix) {
  const CsrMatrix A0 = scaled_region(20, 1.0), A1 = scaled_region(20, 50.0);
  const SparseDirect d0(A0);
  const SparseDirect d1(A1, d0);
  const std::vector<double> b = source(20, 0.5);
  std::vector<double> x(A1.rows);
  d1.apply(b.data(), x.data());
  EXPECT_LE(rel_error(x, direct_solve(A1, b)), 1e-12 * 50 * kappa_laplace(20));
  EXPECT_THROW(SparseDirect(laplace2d(19), d0), InvalidArgument);
}

}  // namespace
