// check_symmetry (core/sparse.hpp) and its callers: smoother_solve and MultigridPlan refuse PCG
// on an unsymmetric matrix before any iteration, and the breakdowns of CG and of the smoother's
// Lanczos estimate name the asymmetry instead of "not positive definite" (issue 13, bad input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/smoother.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;

namespace {

/// Tridiagonal n x n matrix with `lower`, `diag`, `upper` on its three diagonals.
CsrMatrix tridiag(std::size_t n, double lower, double diag, double upper) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) {
    const auto ii = static_cast<std::int64_t>(i);
    if (i > 0) r.push_back(ii), c.push_back(ii - 1), v.push_back(lower);
    r.push_back(ii), c.push_back(ii), v.push_back(diag);
    if (i + 1 < n) r.push_back(ii), c.push_back(ii + 1), v.push_back(upper);
  }
  return CsrMatrix::from_triplets(n, n, r, c, v);
}

CsrMatrix from_dense(const std::vector<std::vector<double>>& D, bool keep_zeros = false) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  for (std::size_t i = 0; i < D.size(); ++i)
    for (std::size_t j = 0; j < D[i].size(); ++j)
      if (D[i][j] != 0.0 || keep_zeros) r.push_back(std::int64_t(i)), c.push_back(std::int64_t(j)), v.push_back(D[i][j]);
  return CsrMatrix::from_triplets(D.size(), D.empty() ? 0 : D[0].size(), r, c, v);
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST(CheckSymmetry, SymmetricMatricesPass) {
  const CsrMatrix A = poisson_fd(grid_shape(2, 16), {1.0, 3.0, 1.0});
  const SymmetryReport r = check_symmetry(A);
  EXPECT_TRUE(r.symmetric);
  EXPECT_TRUE(r.structurally_symmetric);
  EXPECT_EQ(r.deviation, 0.0);
  // An empty-pattern and a diagonal matrix are symmetric too.
  EXPECT_TRUE(check_symmetry(from_dense({{0, 0}, {0, 0}})).symmetric);
  EXPECT_TRUE(check_symmetry(from_dense({{2, 0}, {0, -3}})).symmetric);
}

TEST(CheckSymmetry, NumericalAsymmetryNamesTheWorstPair) {
  // The matrix of the issue: diags([-1, 2.5, -0.3], [-1, 0, 1]); every pair deviates by 0.7 / 2.5,
  // the first one (row 0) is reported.
  const SymmetryReport r = check_symmetry(tridiag(50, -1.0, 2.5, -0.3));
  EXPECT_FALSE(r.symmetric);
  EXPECT_TRUE(r.structurally_symmetric);
  EXPECT_EQ(r.row, 0u);
  EXPECT_EQ(r.col, 1u);
  EXPECT_EQ(r.a_ij, -0.3);
  EXPECT_EQ(r.a_ji, -1.0);
  EXPECT_NEAR(r.deviation, 0.7 / 2.5, 1e-15);
  // The largest relative deviation wins, wherever it is.
  CsrMatrix B = tridiag(6, -1.0, 2.0, -1.0);
  for (std::int64_t p = B.row_ptr[3]; p < B.row_ptr[4]; ++p)
    if (B.col[p] == 4) B.val[p] = -1.5;  // (3, 4) = -1.5, (4, 3) = -1
  const SymmetryReport rb = check_symmetry(B);
  EXPECT_FALSE(rb.symmetric);
  EXPECT_EQ(rb.row, 3u);
  EXPECT_EQ(rb.col, 4u);
  EXPECT_EQ(rb.a_ij, -1.5);
  EXPECT_EQ(rb.a_ji, -1.0);
}

TEST(CheckSymmetry, StructuralAsymmetry) {
  // (0, 2) stored, (2, 0) not: structurally and numerically unsymmetric; a_ji counts 0.
  const SymmetryReport r = check_symmetry(from_dense({{4, 0, 1}, {0, 4, 0}, {0, 0, 4}}));
  EXPECT_FALSE(r.structurally_symmetric);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.row, 0u);
  EXPECT_EQ(r.col, 2u);
  EXPECT_EQ(r.a_ij, 1.0);
  EXPECT_EQ(r.a_ji, 0.0);
  // An explicitly stored zero without its transpose: the pattern differs, the values do not.
  const SymmetryReport z = check_symmetry(from_dense({{4, 0, 0}, {0, 4, 0}, {0, 0, 4}}, true));
  EXPECT_TRUE(z.structurally_symmetric);  // all 9 entries stored
  const CsrMatrix Z = CsrMatrix::from_triplets(2, 2, {0, 0, 1}, {0, 1, 1}, {4.0, 0.0, 4.0});
  const SymmetryReport zr = check_symmetry(Z);
  EXPECT_FALSE(zr.structurally_symmetric);
  EXPECT_TRUE(zr.symmetric);
  // A row of zeros against a nonzero transpose entry: the scale is 0, the deviation infinite.
  const SymmetryReport inf = check_symmetry(CsrMatrix::from_triplets(2, 2, {0, 1}, {1, 1}, {0.0, 1.0}));
  EXPECT_TRUE(inf.symmetric);  // (0,1) = 0 stored, (1,0) missing = 0
  const SymmetryReport inf2 = check_symmetry(CsrMatrix::from_triplets(2, 2, {0, 0}, {0, 1}, {0.0, 1.0}));
  EXPECT_FALSE(inf2.symmetric);
  EXPECT_TRUE(std::isinf(inf2.deviation));
}

TEST(CheckSymmetry, ToleranceIsRelativeToTheRowsAndScaleInvariant) {
  // Rounding-level differences pass at rtol 1e-12, a 1e-9 relative difference does not.
  CsrMatrix A = tridiag(20, -1.0, 2.0, -1.0);
  auto set = [](CsrMatrix& M, std::size_t i, std::int32_t j, double v) {
    for (std::int64_t p = M.row_ptr[i]; p < M.row_ptr[i + 1]; ++p)
      if (M.col[p] == j) M.val[p] = v;
  };
  set(A, 5, 6, -1.0 * (1 + 4 * std::numeric_limits<double>::epsilon()));
  EXPECT_TRUE(check_symmetry(A).symmetric);
  EXPECT_GT(check_symmetry(A).deviation, 0.0);
  set(A, 5, 6, -1.0 * (1 + 1e-9));
  EXPECT_FALSE(check_symmetry(A).symmetric);
  EXPECT_TRUE(check_symmetry(A, 1e-8).symmetric);
  // D A D with D from 1e-6 to 1e6: still symmetric (exactly: D_i a_ij D_j is computed alike).
  const std::size_t n = 13;
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = std::pow(10.0, -6.0 + double(i));
  CsrMatrix S = tridiag(n, -1.0, 2.0, -1.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t p = S.row_ptr[i]; p < S.row_ptr[i + 1]; ++p) S.val[p] = d[i] * S.val[p] * d[S.col[p]];
  EXPECT_TRUE(check_symmetry(S).symmetric);
  // A 1e-8 relative asymmetry in the smallest rows (|a| ~ 1e-12 against max |a| ~ 1e12): a bound
  // on max |a| would not see it, the row-scaled bound does.
  set(S, 0, 1, S.val[1] * (1 + 1e-8));
  const SymmetryReport r = check_symmetry(S);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.row, 0u);
  EXPECT_EQ(r.col, 1u);
  // Uniform scaling does not change the verdict.
  for (double& v : S.val) v *= 1e200;
  EXPECT_FALSE(check_symmetry(S).symmetric);
}

TEST(CheckSymmetry, BadArgumentsAndMessage) {
  EXPECT_THROW(check_symmetry(CsrMatrix::from_triplets(2, 3, {0}, {2}, {1.0})), InvalidArgument);
  const CsrMatrix A = tridiag(4, -1.0, 2.5, -0.3);
  EXPECT_THROW(check_symmetry(A, -1.0), InvalidArgument);
  EXPECT_THROW(check_symmetry(A, std::nan("")), InvalidArgument);
  const SymmetryReport r = check_symmetry(A);
  EXPECT_EQ(describe_asymmetry(r), "the matrix is not symmetric (a_ij = -0.3, a_ji = -1 at row 0, column 1, 0-based)");
  EXPECT_EQ(describe_asymmetry(r, 1), "the matrix is not symmetric (a_ij = -0.3, a_ji = -1 at row 1, column 2, 1-based)");
}

TEST(CheckSymmetry, SmootherSolveRefusesPcgBeforeIterating) {
  const std::size_t n = 50;
  const CsrMatrix A = tridiag(n, -1.0, 2.5, -0.3);
  const std::vector<double> b(n, 1.0);
  std::vector<double> x(n, 0.0);
  SmootherSolveOptions so;  // PCG by default
  int calls = 0;
  so.solver.krylov.progress = [&](int, double) { ++calls; };
  try {
    smoother_solve(A, b.data(), x.data(), so);
    FAIL() << "PCG on an unsymmetric matrix did not throw";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "not symmetric (a_ij = -0.3, a_ji = -1 at row 0, column 1, 0-based)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "use gmres")) << e.what();
  }
  EXPECT_EQ(calls, 0);
  for (double v : x) EXPECT_EQ(v, 0.0);
  // GMRES solves it.
  so.solver.method = SolverMethod::Gmres;
  so.solver.krylov.rtol = 1e-10;
  const SmootherSolveResult r = smoother_solve(A, b.data(), x.data(), so);
  EXPECT_TRUE(r.converged);
  std::vector<double> res(n);
  A.residual(b.data(), x.data(), res.data());
  double rr = 0;
  for (double v : res) rr += v * v;
  EXPECT_LE(std::sqrt(rr / double(n)), 1e-9);
}

TEST(CheckSymmetry, MultigridPlanRefusesPcgOnAnUnsymmetricMatrix) {
  // 3 unknowns, 2 levels: the coarse operator (1 x 1) is symmetric, the fine one is not.
  const CsrMatrix A = tridiag(3, -1.0, 2.5, -0.3);
  const GridShape shape = grid_shape(1, 4);
  ASSERT_EQ(shape.n[0], 3);
  MultigridOptions cg;
  cg.solver.method = SolverMethod::Cg;
  try {
    MultigridPlan p(A, shape, cg);
    FAIL() << "a PCG plan over an unsymmetric matrix was built";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "not symmetric")) << e.what();
    EXPECT_TRUE(contains(e.what(), "gmres")) << e.what();
  }
  const MultigridPlan plan(A, shape);  // GMRES by default
  ASSERT_EQ(plan.hierarchy().num_levels(), 2u);
  const std::vector<double> b(3, 1.0);
  std::vector<double> x(3, 0.0);
  EXPECT_THROW(plan.solve(b.data(), x.data(), cg.solver), InvalidArgument);
  for (double v : x) EXPECT_EQ(v, 0.0);
  EXPECT_TRUE(plan.solve(b.data(), x.data()).converged);
  // A symmetric matrix still runs under PCG.
  const MultigridPlan spd(tridiag(3, -1.0, 2.5, -1.0), shape, cg);
  std::fill(x.begin(), x.end(), 0.0);
  EXPECT_TRUE(spd.solve(b.data(), x.data()).converged);
}

TEST(CheckSymmetry, CgBreakdownOnAnUnsymmetricCsrMatrixSaysSo) {
  // Symmetric part [[1, 2], [2, 1]] is indefinite: p^T A p = -2 for p = r = b = (1, -1).
  const std::vector<double> b{1.0, -1.0};
  krylov::Options ko;
  std::vector<double> x(2, 0.0);
  const CsrMatrix U = from_dense({{1, 4}, {0, 1}});
  const CsrOperator u(U);
  try {
    krylov::cg<double>(u, b.data(), x.data(), nullptr, ko);
    FAIL() << "CG did not break down";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "not symmetric (a_ij = 4, a_ji = 0 at row 0, column 1, 0-based)")) << e.what();
    EXPECT_TRUE(contains(e.what(), "use gmres")) << e.what();
    EXPECT_FALSE(contains(e.what(), "Hermitian")) << e.what();
  }
  // The symmetric indefinite matrix with the same p^T A p: still "not positive definite".
  const CsrMatrix S = from_dense({{1, 2}, {2, 1}});
  const CsrOperator s(S);
  std::fill(x.begin(), x.end(), 0.0);
  try {
    krylov::cg<double>(s, b.data(), x.data(), nullptr, ko);
    FAIL() << "CG did not break down";
  } catch (const NumericalError& e) {
    EXPECT_TRUE(contains(e.what(), "not Hermitian positive definite")) << e.what();
  }
}

TEST(CheckSymmetry, SmootherEstimateBreakdownNamesTheAsymmetry) {
  // Upper bidiagonal, diagonal 1, superdiagonal 4: the symmetric part is indefinite, so the
  // Lanczos estimate meets p^T A p <= 0; the message names the asymmetry.
  const CsrMatrix A = tridiag(40, 0.0, 1.0, 4.0);
  SmootherOptions so;
  so.lambda_iterations = 30;
  try {
    Smoother S(A, so);
    FAIL() << "the lambda_max estimate did not break down";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(contains(e.what(), "lambda_max estimate: the matrix is not symmetric")) << e.what();
    EXPECT_TRUE(contains(e.what(), "a_ij = 4, a_ji = 0")) << e.what();
  }
  // Its symmetric counterpart (superdiagonal and subdiagonal 2, also indefinite): NumericalError.
  const CsrMatrix B = tridiag(40, 2.0, 1.0, 2.0);
  EXPECT_THROW(Smoother(B, so), NumericalError);
}
