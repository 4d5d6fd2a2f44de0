// The constant-coefficient stencil form of CSR matrices (core/stencil.hpp): detection, refusal of
// matrices without one, and every kernel that uses it against the same matrix without it (the
// CSR arrays alone). A row summed from the stencil adds the same products in the same order as
// its CSR row, so the results agree to the last bits (compared here to 1e-15 relative, which
// leaves room for a compiler that contracts one loop into FMAs and not the other).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/core/stencil.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/numeric_setup.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"

#include "common/sparse_problems.hpp"

using elliptica::CsrMatrix;
using elliptica::StencilForm;
using elliptica::testing::random_vector;
using namespace elliptica::multigrid;

namespace {

GridShape grid(int dim, int nx, int ny = 1, int nz = 1) {
  GridShape s;
  s.dim = dim;
  s.n = {nx, ny, nz};
  return s;
}

CsrMatrix without_stencil(CsrMatrix A) {
  A.stencil.reset();
  return A;
}

/// max_i |a_i - b_i| / max_i |b_i|.
double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    m = std::max(m, std::abs(b[i]));
  }
  return m > 0 ? d / m : d;
}

/// multiply, residual and multiply_add of A (with its stencil) against the CSR arrays alone.
void expect_kernels_match(const CsrMatrix& A, int threads) {
  ASSERT_NE(A.stencil, nullptr);
  const CsrMatrix C = without_stencil(A);
  const auto x = random_vector(A.cols, 7), b = random_vector(A.rows, 8);
  std::vector<double> y1(A.rows), y2(A.rows);
  A.multiply(x.data(), y1.data(), threads);
  C.multiply(x.data(), y2.data(), threads);
  EXPECT_LE(rel_diff(y1, y2), 1e-15) << "multiply, threads " << threads;
  A.residual(b.data(), x.data(), y1.data(), threads);
  C.residual(b.data(), x.data(), y2.data(), threads);
  EXPECT_LE(rel_diff(y1, y2), 1e-15) << "residual, threads " << threads;
  y1 = b;
  y2 = b;
  A.multiply_add(x.data(), y1.data(), -0.5, threads);
  C.multiply_add(x.data(), y2.data(), -0.5, threads);
  EXPECT_LE(rel_diff(y1, y2), 1e-15) << "multiply_add, threads " << threads;
}

}  // namespace

TEST(Stencil, FivePointLaplacianIsDetected) {
  const GridShape s = grid(2, 40, 30);
  CsrMatrix A = poisson_fd(s, {1.0, 1.0, 1.0});
  const auto S = elliptica::detect_stencil(A, 2, s.n);
  ASSERT_NE(S, nullptr);
  EXPECT_EQ(S->offset, (std::vector<std::int64_t>{-40, -1, 0, 1, 40}));
  const double hx = 1.0 / 41, hy = 1.0 / 31;
  ASSERT_EQ(S->coef.size(), 5u);
  EXPECT_DOUBLE_EQ(S->coef[2], 2 / (hx * hx) + 2 / (hy * hy));
  EXPECT_DOUBLE_EQ(S->coef[1], -1 / (hx * hx));
  EXPECT_DOUBLE_EQ(S->coef[0], -1 / (hy * hy));
  EXPECT_EQ(S->reach, (std::array<int, 3>{1, 1, 0}));
  EXPECT_EQ(S->interior_rows, 38u * 28u);
  EXPECT_TRUE(elliptica::attach_stencil(A, 2, s.n));
  EXPECT_TRUE(elliptica::stencil_matches(A));
}

TEST(Stencil, KernelsAgreeWithCsrOnEveryGridAndBoundary) {
  struct Case {
    GridShape shape;
    GridKind grid;
    Boundary bc;
  };
  const std::vector<Case> cases = {
      {grid(1, 50001), GridKind::Vertex, Boundary::Dirichlet},           // one line, split over threads
      {grid(2, 301, 257), GridKind::Vertex, Boundary::Dirichlet},        // odd sizes, > kParallelMinRows
      {grid(2, 7, 400), GridKind::Vertex, Boundary::Dirichlet},          // short lines
      {grid(2, 200, 150), GridKind::Cell, Boundary::Neumann},            // other diagonal on the walls
      {grid(2, 160, 140), GridKind::Cell, Boundary::Periodic},           // wrapped rows
      {grid(3, 31, 29, 27), GridKind::Vertex, Boundary::Dirichlet},      // 7 points
      {grid(3, 24, 20, 50), GridKind::Cell, Boundary::Periodic},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "dim " << c.shape.dim << " n " << c.shape.n[0] << "x" << c.shape.n[1] << "x"
                                    << c.shape.n[2] << " " << to_string(c.grid) << " " << to_string(c.bc));
    CsrMatrix A = poisson_fd(c.shape, {1.0, 2.0, 0.5}, c.grid, {c.bc, c.bc, c.bc});
    ASSERT_TRUE(elliptica::attach_stencil(A, c.shape.dim, c.shape.n));
    for (int t : {1, 2, 3}) expect_kernels_match(A, t);
  }
}

TEST(Stencil, GalerkinCoarseOperatorsHaveNineAndTwentySevenPointStencils) {
  for (int dim : {2, 3}) {
    const GridShape s = dim == 2 ? grid(2, 255, 127) : grid(3, 31, 31, 63);
    HierarchyOptions ho;
    ho.threads = 2;
    const Hierarchy h = Hierarchy::geometric(poisson_fd(s, {1.0, 1.0, 1.0}), s, ho);
    ASSERT_GE(h.num_levels(), 3u);
    const CsrMatrix& A1 = *h.level(1).matrix;
    ASSERT_NE(A1.stencil, nullptr) << "dim " << dim;
    EXPECT_EQ(A1.stencil->offset.size(), dim == 2 ? 9u : 27u);
    for (std::size_t j = 0; j < h.num_levels(); ++j) EXPECT_TRUE(elliptica::stencil_matches(*h.level(j).matrix));
    for (int t : {1, 2}) expect_kernels_match(A1, t);
  }
}

TEST(Stencil, MatricesWithoutAConstantStencilAreLeftAlone) {
  const GridShape s = grid(2, 30, 30);
  const CsrMatrix A = poisson_fd(s, {1.0, 1.0, 1.0});
  // one interior value changed
  CsrMatrix B = A;
  B.val[B.row_ptr[15 * 30 + 15] + 2] *= 1.0 + 1e-15;
  EXPECT_EQ(elliptica::detect_stencil(B, 2, s.n), nullptr);
  // one interior entry dropped (a variable pattern)
  CsrMatrix C = A;
  {
    const std::int64_t row = 10 * 30 + 20, p = C.row_ptr[row];
    C.col.erase(C.col.begin() + p);
    C.val.erase(C.val.begin() + p);
    for (std::size_t i = row + 1; i < C.row_ptr.size(); ++i) --C.row_ptr[i];
  }
  EXPECT_EQ(elliptica::detect_stencil(C, 2, s.n), nullptr);
  // the wrong grid (rows do not match, or the offsets reach too far)
  EXPECT_EQ(elliptica::detect_stencil(A, 2, {30, 31, 1}), nullptr);
  EXPECT_EQ(elliptica::detect_stencil(A, 1, {900, 1, 1}), nullptr);
  // too small to pay: interior rows under half
  CsrMatrix D = poisson_fd(grid(2, 4, 4), {1.0, 1.0, 1.0});
  EXPECT_NE(elliptica::detect_stencil(D, 2, {4, 4, 1}), nullptr);
  EXPECT_FALSE(elliptica::attach_stencil(D, 2, {4, 4, 1}));
  EXPECT_EQ(D.stencil, nullptr);
  // a grid without interior rows
  EXPECT_EQ(elliptica::detect_stencil(poisson_fd(grid(2, 2, 9), {1.0, 1.0, 1.0}), 2, {2, 9, 1}), nullptr);
  EXPECT_THROW(elliptica::detect_stencil(A, 4, s.n), elliptica::InvalidArgument);
  EXPECT_THROW(elliptica::detect_stencil(A, 2, {0, 30, 1}), elliptica::InvalidArgument);
}

TEST(Stencil, StencilMatchesSeesValuesChangedAfterAttaching) {
  const GridShape s = grid(2, 30, 30);
  CsrMatrix A = poisson_fd(s, {1.0, 1.0, 1.0});
  ASSERT_TRUE(elliptica::attach_stencil(A, 2, s.n));
  EXPECT_TRUE(elliptica::stencil_matches(A));
  A.val[A.row_ptr[400]] = 7.0;
  EXPECT_FALSE(elliptica::stencil_matches(A));
  EXPECT_TRUE(elliptica::stencil_matches(without_stencil(A)));
}

TEST(Stencil, SmootherAndLambdaEstimateAgreeWithCsr) {
  const GridShape s = grid(2, 211, 199);
  CsrMatrix A = poisson_fd(s, {1.0, 1.0, 1.0});
  ASSERT_TRUE(elliptica::attach_stencil(A, 2, s.n));
  const CsrMatrix C = without_stencil(A);
  const auto b = random_vector(A.rows, 3);
  for (Polynomial kind : {Polynomial::Cheby4, Polynomial::Cheby4Opt, Polynomial::Cheby1}) {
    for (int t : {1, 2}) {
      SmootherOptions so;
      so.kind = kind;
      so.threads = t;
      const Smoother sa(A, so, s), sc(C, so, s);
      EXPECT_NEAR(sa.lambda_max(), sc.lambda_max(), 1e-14 * sc.lambda_max());
      for (int k : {1, 2, 3}) {
        std::vector<double> xa(A.rows, 0.0), xc(A.rows, 0.0);
        sa.smooth(b.data(), xa.data(), k, true);  // from zero: the fused first sweep
        sc.smooth(b.data(), xc.data(), k, true);
        EXPECT_LE(rel_diff(xa, xc), 1e-13) << "k " << k << " threads " << t;
        sa.smooth(b.data(), xa.data(), k, false);
        sc.smooth(b.data(), xc.data(), k, false);
        EXPECT_LE(rel_diff(xa, xc), 1e-13) << "k " << k << " threads " << t;
      }
    }
  }
}

TEST(Stencil, VCycleAgreesWithTheSameHierarchyWithoutStencils) {
  const GridShape s = grid(3, 47, 47, 47);
  HierarchyOptions ho;
  ho.threads = 2;
  auto h = std::make_shared<const Hierarchy>(Hierarchy::geometric(poisson_fd(s, {1.0, 1.0, 1.0}), s, ho));
  std::size_t with = 0;
  std::vector<Level> plain;
  for (std::size_t j = 0; j < h->num_levels(); ++j) {
    const Level& l = h->level(j);
    with += l.matrix->stencil != nullptr;
    Level p = Level::from_matrix(without_stencil(*l.matrix), GridShape{}, 2);
    p.P = l.P;
    p.R = l.R;
    p.shape = l.shape;  // the smoothers see the same shape; the matrix has no stencil
    ASSERT_EQ(p.matrix->stencil, nullptr);
    plain.push_back(std::move(p));
  }
  EXPECT_GE(with, 2u);
  auto coarse = std::make_shared<const BandedCholesky>(*plain.back().matrix);
  auto hp = std::make_shared<const Hierarchy>(std::move(plain), coarse, 2);
  VCycleOptions vo;
  vo.threads = 2;
  vo.smoother.kind = Polynomial::Cheby4Opt;
  const VCycle va(h, vo), vp(hp, vo);
  const auto b = random_vector(h->level(0).rows(), 11);
  std::vector<double> xa(b.size(), 0.0), xp(b.size(), 0.0);
  for (int c = 0; c < 3; ++c) {
    va.cycle(b.data(), xa.data());
    vp.cycle(b.data(), xp.data());
  }
  EXPECT_LE(rel_diff(xa, xp), 1e-12);
}

TEST(Stencil, UpdatedValuesGetAFreshStencil) {
  const GridShape s = grid(2, 127, 127);
  HierarchyOptions ho;
  ho.threads = 1;
  const Hierarchy h = Hierarchy::geometric(poisson_fd(s, {1.0, 1.0, 1.0}), s, ho);
  CsrMatrix A2 = poisson_fd(s, {1.0, 1.0, 1.0});
  for (auto& v : A2.val) v *= 3.0;
  const Hierarchy h2 = update_values(h, A2, 1);
  for (std::size_t j = 0; j < h2.num_levels(); ++j) {
    const CsrMatrix& M = *h2.level(j).matrix;
    EXPECT_TRUE(elliptica::stencil_matches(M)) << "level " << j;
    if (M.stencil != nullptr && h.level(j).matrix->stencil != nullptr) {
      EXPECT_DOUBLE_EQ(M.stencil->coef[0], 3.0 * h.level(j).matrix->stencil->coef[0]) << "level " << j;
    }
  }
  ASSERT_NE(h2.level(1).matrix->stencil, nullptr);
}
