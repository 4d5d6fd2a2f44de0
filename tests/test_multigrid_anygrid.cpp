// Geometric coarsening for any grid size (coarsening.hpp): vertex- and cell-centred interpolation,
// Galerkin coarse operators, grid-independent convergence for odd and even sizes, cell-centred
// Dirichlet / Neumann and periodic Poisson problems, semi-coarsening on a stretched mesh, and
// the refusal of a one-level hierarchy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/coarsening.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/poisson.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;

namespace {

constexpr double kPi = std::numbers::pi;

GridShape shape2(int nx, int ny) { return GridShape{2, {nx, ny, 0}}; }

std::vector<double> matvec(const CsrMatrix& A, const std::vector<double>& x) {
  std::vector<double> y(A.rows);
  A.multiply(x.data(), y.data());
  return y;
}

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d) / norm2(b);
}

/// PCG with the (2,2) opt4-Jacobi V-cycle to rtol on the plan's hierarchy; returns iterations.
MultigridOptions pcg_options(double rtol, int max_it = 200) {
  MultigridOptions o;
  o.solver.method = SolverMethod::Cg;
  o.solver.krylov.rtol = rtol;
  o.solver.krylov.max_iterations = max_it;
  return o;
}

std::vector<double> coords_vertex(int n, int c) {  // coarse points c (J + 1)
  std::vector<double> X;
  for (int J = 0; J < coarse_count(GridKind::Vertex, n, c); ++J) X.push_back(c * (J + 1.0));
  return X;
}

}  // namespace

// ------------------------------------------------------------------ 1D interpolation

TEST(AnyGrid, VertexInterpolationIsLinearAnySize) {
  // f(x) = x vanishes on the left boundary: P applied to its coarse samples gives f at every fine
  // point up to the last coarse point; beyond it, the interpolation towards the zero boundary.
  for (int c : {2, 8})
    for (int n : {1, 2, 3, 6, 7, 8, 9, 15, 16, 23, 24, 999, 1000}) {
      if (n < c) {
        EXPECT_THROW(interpolation_1d(GridKind::Vertex, n, c), InvalidArgument);
        continue;
      }
      const auto rows = interpolation_1d(GridKind::Vertex, n, c);
      const std::vector<double> X = coords_vertex(n, c);
      const int nc = static_cast<int>(X.size());
      ASSERT_EQ(nc, n / c);
      const double last = X.back(), N = n + 1.0;
      for (int i = 0; i < n; ++i) {
        const double g = i + 1.0;
        double v = 0, wsum = 0;
        for (int t = 0; t < rows[i].count; ++t) {
          ASSERT_GE(rows[i].idx[t], 0);
          ASSERT_LT(rows[i].idx[t], nc);
          v += rows[i].w[t] * X[rows[i].idx[t]];
          wsum += rows[i].w[t];
        }
        if (g >= X.front() && g <= last) {
          EXPECT_NEAR(v, g, 1e-12 * N) << "n " << n << " c " << c << " i " << i;
          EXPECT_NEAR(wsum, 1.0, 1e-14);  // constants too, between interior coarse points
        } else if (g > last) {
          EXPECT_NEAR(v, last * (N - g) / (N - last), 1e-12 * N) << "n " << n << " c " << c << " i " << i;
        } else {
          EXPECT_NEAR(v, g, 1e-12 * N);  // between the boundary 0 (f = 0) and the first coarse point
        }
      }
    }
}

TEST(AnyGrid, VertexSeedWeightsWhereDivisible) {
  // N = 16 intervals, c = 2: every odd fine point gets 1/2, 1/2; even ones 1 (the seed's P).
  const auto rows = interpolation_1d(GridKind::Vertex, 15, 2);
  for (int i = 0; i < 15; ++i) {
    if ((i + 1) % 2 == 0) {
      ASSERT_EQ(rows[i].count, 1);
      EXPECT_EQ(rows[i].w[0], 1.0);
      EXPECT_EQ(rows[i].idx[0], (i + 1) / 2 - 1);
    } else {
      const int expect = (i == 0 || i == 14) ? 1 : 2;
      ASSERT_EQ(rows[i].count, expect);
      for (int t = 0; t < rows[i].count; ++t) EXPECT_EQ(rows[i].w[t], 0.5);
    }
  }
  // n = 16 (N = 17): the last coarse interval [16, 17] has one fine interval and no fine point inside.
  const auto odd = interpolation_1d(GridKind::Vertex, 16, 2);
  ASSERT_EQ(odd[15].count, 1);
  EXPECT_EQ(odd[15].idx[0], 7);
  EXPECT_EQ(odd[15].w[0], 1.0);
}

TEST(AnyGrid, CellInterpolationConstantsAndLinears) {
  for (int c : {2, 8})
    for (int n : {2, 3, 4, 5, 8, 9, 17, 999, 1000}) {
      if (n < c) continue;
      const auto rows = interpolation_1d(GridKind::Cell, n, c);
      const int nc = n / c;
      std::vector<double> X(nc);  // coarse centres
      for (int I = 0; I < nc; ++I) X[I] = 0.5 * (c * I + (I + 1 < nc ? c * (I + 1) : n));
      for (int i = 0; i < n; ++i) {
        const double x = i + 0.5;
        double v = 0, wsum = 0;
        for (int t = 0; t < rows[i].count; ++t) {
          v += rows[i].w[t] * X[rows[i].idx[t]];
          wsum += rows[i].w[t];
        }
        EXPECT_NEAR(wsum, 1.0, 1e-14) << "constants everywhere: n " << n << " i " << i;
        if (x >= X.front() && x <= X.back()) {
          EXPECT_NEAR(v, x, 1e-12 * n) << "n " << n << " c " << c << " i " << i;
        }
      }
    }
  // Uniform pairing: the 3/4, 1/4 weights of cell-centred bilinear interpolation.
  const auto r = interpolation_1d(GridKind::Cell, 8, 2);
  ASSERT_EQ(r[2].count, 2);  // fine cell 2 (centre 2.5): coarse 0 (centre 1) 1/4, coarse 1 (centre 3) 3/4
  EXPECT_DOUBLE_EQ(r[2].w[0], 0.25);
  EXPECT_DOUBLE_EQ(r[2].w[1], 0.75);
  ASSERT_EQ(r[0].count, 1);  // next to the wall: the nearest coarse value
  EXPECT_EQ(r[0].w[0], 1.0);
  EXPECT_EQ(coarse_count(GridKind::Cell, 7, 2), 3);  // the last coarse cell of 3 fine cells
}

TEST(AnyGrid, CellDirichletWalls) {
  // Detected from the operator: Dirichlet walls add to the face rows' diagonals.
  const GridShape s{2, {6, 5, 0}};
  using B = Boundary;
  const auto wd = dirichlet_walls(poisson_fd(s, {1, 1, 1}, GridKind::Cell, {B::Dirichlet, B::Dirichlet, B::Dirichlet}), s);
  EXPECT_TRUE(wd[0][0] && wd[0][1] && wd[1][0] && wd[1][1]);
  const auto wm = dirichlet_walls(poisson_fd(s, {1, 1, 1}, GridKind::Cell, {B::Neumann, B::Dirichlet, B::Dirichlet}), s);
  EXPECT_TRUE(!wm[0][0] && !wm[0][1] && wm[1][0] && wm[1][1]);
  const auto wp = dirichlet_walls(poisson_fd(s, {1, 1, 1}, GridKind::Cell, {B::Periodic, B::Neumann, B::Neumann}), s);
  EXPECT_TRUE(!wp[0][0] && !wp[0][1] && !wp[1][0] && !wp[1][1]);
  // The first fine cell (centre 0.5) between the wall (0) and the coarse centre 1: weight 1/2;
  // the last coarse cell of 3 fine cells (n = 7): its outer fine cell (centre 6.5) gets
  // (7 - 6.5) / (7 - 5.5) = 1/3.
  const auto r = interpolation_1d(GridKind::Cell, uniform_coordinates(GridKind::Cell, 7), 2, {true, true});
  ASSERT_EQ(r[0].count, 1);
  EXPECT_DOUBLE_EQ(r[0].w[0], 0.5);
  ASSERT_EQ(r[6].count, 1);
  EXPECT_EQ(r[6].idx[0], 2);
  EXPECT_DOUBLE_EQ(r[6].w[0], 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(r[5].w[0], 1.0);  // the middle of the 3-cell coarse cell: its centre
}

TEST(AnyGrid, PeriodicAxesAndSeamInterpolation) {
  const GridShape s{2, {8, 6, 0}};
  using B = Boundary;
  const auto p = periodic_axes(poisson_fd(s, {1, 1, 1}, GridKind::Cell, {B::Periodic, B::Neumann, B::Neumann}), s);
  EXPECT_TRUE(p[0] && !p[1]);
  const auto q = periodic_axes(poisson_fd(s, {1, 1, 1}, GridKind::Cell, {B::Dirichlet, B::Periodic, B::Neumann}), s);
  EXPECT_TRUE(!q[0] && q[1]);
  // n = 8 cells, pairs: coarse centres 1, 3, 5, 7 (period 8). Fine cell 0 (centre 0.5) lies
  // between the last centre 7 - 8 = -1 and 1: weights 3/4 (coarse 0), 1/4 (coarse 3).
  const auto r = interpolation_1d(GridKind::Cell, uniform_coordinates(GridKind::Cell, 8), 2, {false, false}, true);
  ASSERT_EQ(r[0].count, 2);
  EXPECT_EQ(r[0].idx[0], 0);
  EXPECT_EQ(r[0].idx[1], 3);
  EXPECT_DOUBLE_EQ(r[0].w[0], 0.75);
  EXPECT_DOUBLE_EQ(r[0].w[1], 0.25);
  ASSERT_EQ(r[7].count, 2);  // centre 7.5 between 7 and 9 (= 1 + 8)
  EXPECT_DOUBLE_EQ(r[7].w[0], 0.25);
  EXPECT_DOUBLE_EQ(r[7].w[1], 0.75);
  for (const auto& row : r) EXPECT_DOUBLE_EQ(row.w[0] + row.w[1], 1.0);
}

TEST(AnyGrid, NonUniformCoordinates) {
  // Coarse coordinates of n = 6 (N = 7 intervals; points 0..7): 0, 2, 4, 6, 7; the next level
  // interpolates the point at 6 between 4 and the boundary 7 with weight (7 - 6) / (7 - 4) = 1/3.
  const std::vector<double> x0 = uniform_coordinates(GridKind::Vertex, 6);
  const std::vector<double> x1 = coarse_coordinates(GridKind::Vertex, x0, 2);
  EXPECT_EQ(x1, (std::vector<double>{0, 2, 4, 6, 7}));
  const auto r = interpolation_1d(GridKind::Vertex, x1, 2);  // 3 unknowns (2, 4, 6) -> 1 (4)
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0].w[0], 0.5);  // point 2: between 0 and 4
  EXPECT_DOUBLE_EQ(r[2].w[0], 1.0 / 3.0);
  EXPECT_EQ(coarse_coordinates(GridKind::Cell, uniform_coordinates(GridKind::Cell, 7), 2),
            (std::vector<double>{0, 2, 4, 7}));
  EXPECT_THROW(interpolation_1d(GridKind::Vertex, std::vector<double>{0, 2, 1, 3}, 2), InvalidArgument);
}

// ------------------------------------------------------------------ Galerkin coarse operators

TEST(AnyGrid, GalerkinOperatorsSymmetricAndNullSpaceKept) {
  struct Case {
    GridShape s;
    GridKind g;
    Boundary bc;
  };
  const std::vector<Case> cases = {{shape2(37, 50), GridKind::Vertex, Boundary::Dirichlet},
                                   {shape2(37, 50), GridKind::Cell, Boundary::Dirichlet},
                                   {shape2(37, 50), GridKind::Cell, Boundary::Neumann},
                                   {shape2(36, 51), GridKind::Cell, Boundary::Periodic},
                                   {GridShape{3, {9, 10, 11}}, GridKind::Cell, Boundary::Neumann}};
  for (const auto& cs : cases) {
    HierarchyOptions ho;
    ho.grid = cs.g;
    ho.coarse = cs.bc == Boundary::Dirichlet ? CoarseSolverKind::BandedCholesky : CoarseSolverKind::SparseDirect;
    CsrMatrix A = poisson_fd(cs.s, {1.0, 1.3, 0.7}, cs.g, {cs.bc, cs.bc, cs.bc});
    const Hierarchy h = Hierarchy::geometric(A, cs.s, ho);
    ASSERT_GE(h.num_levels(), 3u);
    for (std::size_t j = 0; j < h.num_levels(); ++j) {
      const CsrMatrix& Aj = *h.level(j).matrix;
      const SymmetryReport sym = check_symmetry(Aj);
      EXPECT_TRUE(sym.symmetric) << "level " << j << ": " << describe_asymmetry(sym);
      if (cs.bc != Boundary::Dirichlet && Aj.rows > 1) {  // A_j 1 = 0: the null space survives coarsening
        double amax = 0;
        for (double v : Aj.val) amax = std::max(amax, std::abs(v));
        const auto r = matvec(Aj, std::vector<double>(Aj.rows, 1.0));
        for (double v : r) EXPECT_LE(std::abs(v), 1e-11 * amax) << "level " << j;
      }
    }
  }
}

// ------------------------------------------------------------------ grid independence

TEST(AnyGrid, IterationsGridIndependent2D) {
  // -Laplace on the unit square, vertex-centred Dirichlet, n unknowns per axis whatever its parity.
  std::vector<int> its;
  // sanitized builds: up to 512^2 (the 1000^2 solves took 100 s under TSan)
  const std::vector<int> sizes = ELLIPTICA_SANITIZED_BUILD ? std::vector<int>{127, 128, 255, 256, 511, 512}
                                                           : std::vector<int>{127, 128, 255, 256, 999, 1000};
  for (int n : sizes) {
    const GridShape s = shape2(n, n);
    CsrMatrix A = poisson_fd(s, {1, 1, 1});
    std::vector<double> b(A.rows), x(A.rows, 0.0);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::sin(0.37 * static_cast<double>(i)) + 0.5;
    const MultigridPlan plan(std::move(A), s, pcg_options(1e-8));
    const SolveResult r = plan.solve(b.data(), x.data());
    std::printf("[ vertex n=%d: %zu levels, %d PCG iterations ]\n", n, plan.hierarchy().num_levels(), r.iterations);
    EXPECT_TRUE(r.converged) << n;
    EXPECT_GE(plan.hierarchy().num_levels(), 7u) << n;
    its.push_back(r.iterations);
  }
  const auto [lo, hi] = std::minmax_element(its.begin(), its.end());
  EXPECT_LE(*hi, 12);
  EXPECT_LE(*hi - *lo, 2);
}

TEST(AnyGrid, IterationsGridIndependent3D) {
  std::vector<int> its;
  for (int n : {31, 32, 47, 48}) {
    const GridShape s{3, {n, n, n}};
    CsrMatrix A = poisson_fd(s, {1, 1, 1});
    std::vector<double> b(A.rows, 1.0), x(A.rows, 0.0);
    const MultigridPlan plan(std::move(A), s, pcg_options(1e-8));
    const SolveResult r = plan.solve(b.data(), x.data());
    std::printf("[ vertex 3D n=%d: %zu levels, %d PCG iterations ]\n", n, plan.hierarchy().num_levels(), r.iterations);
    EXPECT_TRUE(r.converged);
    its.push_back(r.iterations);
  }
  const auto [lo, hi] = std::minmax_element(its.begin(), its.end());
  EXPECT_LE(*hi, 12);
  EXPECT_LE(*hi - *lo, 2);
}

TEST(AnyGrid, MatchesSparseDirectSolve) {
  for (GridKind g : {GridKind::Vertex, GridKind::Cell}) {
    const GridShape s = shape2(37, 44);
    const CsrMatrix A = poisson_fd(s, {1.0, 1.2, 1.0}, g, {Boundary::Dirichlet, Boundary::Dirichlet, Boundary::Dirichlet});
    std::vector<double> b(A.rows), x(A.rows, 0.0), xd(A.rows);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(1.7 * static_cast<double>(i));
    SparseDirect(A).apply(b.data(), xd.data());
    MultigridOptions o = pcg_options(1e-12);
    o.hierarchy.grid = g;
    const MultigridPlan plan(A, s, o);
    ASSERT_TRUE(plan.solve(b.data(), x.data()).converged);
    // ||x - x*|| / ||x*|| <= cond(A) rtol ~ 1e3 x 1e-12
    EXPECT_LE(rel_diff(x, xd), 1e-8) << to_string(g);
  }
}

// ------------------------------------------------------------------ cell-centred and periodic problems

TEST(AnyGrid, CellCentredManufacturedSecondOrder) {
  // -Laplace u = f on the unit square, cell-centred, u = cos(pi x) cos(pi y) (Neumann: zero-mean
  // solution via the constant null space) and u = sin(pi x) sin(pi y) (Dirichlet): the discrete
  // solution's max error is O(h^2), so it drops by ~4 per halving of h (>= 3.5 asked).
  for (Boundary bc : {Boundary::Neumann, Boundary::Dirichlet}) {
    double prev = 0;
    std::vector<int> its;
    for (int n : {31, 63, 127, 255}) {
      const GridShape s = shape2(n, n);
      CsrMatrix A = poisson_fd(s, {1, 1, 1}, GridKind::Cell, {bc, bc, bc});
      std::vector<double> b(A.rows), ue(A.rows), x(A.rows, 0.0);
      const double h = 1.0 / n;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const double xx = (i + 0.5) * h, yy = (j + 0.5) * h;
          const double u = bc == Boundary::Neumann ? std::cos(kPi * xx) * std::cos(kPi * yy)
                                                   : std::sin(kPi * xx) * std::sin(kPi * yy);
          ue[i + static_cast<std::size_t>(n) * j] = u;
          b[i + static_cast<std::size_t>(n) * j] = 2 * kPi * kPi * u;
        }
      MultigridOptions o = pcg_options(1e-10);
      o.hierarchy.grid = GridKind::Cell;
      o.constant_null_space = bc == Boundary::Neumann;
      const MultigridPlan plan(std::move(A), s, o);
      const SolveResult r = plan.solve(b.data(), x.data());
      ASSERT_TRUE(r.converged) << n;
      its.push_back(r.iterations);
      if (bc == Boundary::Neumann) {  // compare zero-mean functions
        double m = 0;
        for (double v : ue) m += v;
        m /= static_cast<double>(ue.size());
        for (double& v : ue) v -= m;
      }
      double err = 0;
      for (std::size_t i = 0; i < x.size(); ++i) err = std::max(err, std::abs(x[i] - ue[i]));
      std::printf("[ cell %s n=%d: %d PCG iterations, max error %.3e ]\n", to_string(bc).c_str(), n, r.iterations, err);
      if (prev > 0) {
        EXPECT_GE(prev / err, 3.5) << to_string(bc) << " n " << n;
      }
      prev = err;
    }
    const auto [lo, hi] = std::minmax_element(its.begin(), its.end());
    EXPECT_LE(*hi, 15);
    EXPECT_LE(*hi - *lo, 3);
  }
}

TEST(AnyGrid, CellCentredIterationsOddEven) {
  std::vector<int> its;
  for (int n : {127, 128, 255, 256}) {
    const GridShape s = shape2(n, n);
    const TestProblem tp = poisson_problem(2, n, {1, 1, 1}, GridKind::Cell, Boundary::Neumann);
    MultigridOptions o = pcg_options(1e-8);
    o.hierarchy.grid = GridKind::Cell;
    o.constant_null_space = true;
    const MultigridPlan plan(tp.A, s, o);
    std::vector<double> x(tp.b.size(), 0.0);
    const SolveResult r = plan.solve(tp.b.data(), x.data());
    ASSERT_TRUE(r.converged);
    its.push_back(r.iterations);
    EXPECT_LE(rel_diff(x, tp.u), 1e-5);  // the zero-mean exact discrete solution
  }
  const auto [lo, hi] = std::minmax_element(its.begin(), its.end());
  EXPECT_LE(*hi, 15);
  EXPECT_LE(*hi - *lo, 2);
}

TEST(AnyGrid, PeriodicProblems) {
  // Vertex- and cell-centred periodic Poisson (the same matrix; points shifted by h/2), solved on
  // the cell-kind hierarchy (its P reproduces constants) with the constant null space; 2D odd /
  // even sizes and a 3D case.
  for (GridKind g : {GridKind::Vertex, GridKind::Cell})
    for (int n : {100, 101}) {
      const TestProblem tp = poisson_problem(2, n, {1.0, 2.0, 1.0}, g, Boundary::Periodic);
      double mean = 0;
      for (double v : tp.u) mean += v;
      EXPECT_NEAR(mean / static_cast<double>(tp.u.size()), 0.0, 1e-12);
      MultigridOptions o = pcg_options(1e-10);
      o.hierarchy.grid = GridKind::Cell;
      o.constant_null_space = true;
      const MultigridPlan plan(tp.A, tp.shape, o);
      std::vector<double> x(tp.b.size(), 0.0);
      const SolveResult r = plan.solve(tp.b.data(), x.data());
      std::printf("[ periodic %s n=%d: %d PCG iterations ]\n", to_string(g).c_str(), n, r.iterations);
      ASSERT_TRUE(r.converged);
      EXPECT_LE(r.iterations, 14);
      EXPECT_LE(rel_diff(x, tp.u), 1e-7);
    }
  const TestProblem tp = poisson_problem(3, 25, {1, 1, 1}, GridKind::Cell, Boundary::Periodic);
  MultigridOptions o = pcg_options(1e-10);
  o.hierarchy.grid = GridKind::Cell;
  o.constant_null_space = true;
  const MultigridPlan plan(tp.A, tp.shape, o);
  std::vector<double> x(tp.b.size(), 0.0);
  ASSERT_TRUE(plan.solve(tp.b.data(), x.data()).converged);
  EXPECT_LE(rel_diff(x, tp.u), 1e-7);
}

TEST(AnyGrid, PoissonGenerator) {
  // Cell-centred 1D rows by hand: h = 1/4, w = 16.
  const GridShape s1{1, {4, 0, 0}};
  auto dense = [](const CsrMatrix& A) {
    std::vector<double> D(A.rows * A.cols, 0.0);
    for (std::size_t i = 0; i < A.rows; ++i)
      for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) D[i * A.cols + A.col[p]] += A.val[p];
    return D;
  };
  const auto Dn = dense(poisson_fd(s1, {1, 1, 1}, GridKind::Cell, {Boundary::Neumann, Boundary::Neumann, Boundary::Neumann}));
  const std::vector<double> en = {16, -16, 0, 0, -16, 32, -16, 0, 0, -16, 32, -16, 0, 0, -16, 16};
  for (std::size_t i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(Dn[i], en[i]);
  const auto Dd = dense(poisson_fd(s1, {1, 1, 1}, GridKind::Cell, {Boundary::Dirichlet, Boundary::Dirichlet, Boundary::Dirichlet}));
  EXPECT_DOUBLE_EQ(Dd[0], 48.0);  // 3 / h^2 next to a wall (ghost -u_0)
  EXPECT_DOUBLE_EQ(Dd[5], 32.0);
  const auto Dp = dense(poisson_fd(s1, {1, 1, 1}, GridKind::Cell, {Boundary::Periodic, Boundary::Periodic, Boundary::Periodic}));
  EXPECT_DOUBLE_EQ(Dp[0], 32.0);
  EXPECT_DOUBLE_EQ(Dp[3], -16.0);  // wrapped neighbour
  EXPECT_DOUBLE_EQ(Dp[12], -16.0);
  // A periodic axis of 2 unknowns: both faces couple the same pair (summed); vertex Dirichlet is
  // the seed's operator; Neumann needs cells.
  const auto D2 = dense(poisson_fd(GridShape{1, {2, 0, 0}}, {1, 1, 1}, GridKind::Vertex,
                                   {Boundary::Periodic, Boundary::Periodic, Boundary::Periodic}));
  EXPECT_DOUBLE_EQ(D2[0], 8.0);
  EXPECT_DOUBLE_EQ(D2[1], -8.0);
  const GridShape s = shape2(7, 5);
  const CsrMatrix a = poisson_fd(s, {1, 2, 1});
  const CsrMatrix b = poisson_fd(s, {1, 2, 1}, GridKind::Vertex, {Boundary::Dirichlet, Boundary::Dirichlet, Boundary::Dirichlet});
  EXPECT_EQ(a.val, b.val);
  EXPECT_THROW(poisson_fd(s, {1, 1, 1}, GridKind::Vertex, {Boundary::Neumann, Boundary::Neumann, Boundary::Neumann}),
               InvalidArgument);
  EXPECT_THROW(boundary_from_string("robin"), InvalidArgument);
  EXPECT_THROW(grid_kind_from_string("edge"), InvalidArgument);
  EXPECT_THROW(semi_coarsening_from_string("yes"), InvalidArgument);
  // Singular problems: b = A u is consistent (sums to zero) and u has zero mean.
  const TestProblem tp = poisson_problem(2, 9, {1, 1, 1}, GridKind::Cell, Boundary::Neumann);
  double sb = 0, su = 0;
  for (std::size_t i = 0; i < tp.b.size(); ++i) {
    sb += tp.b[i];
    su += tp.u[i];
  }
  EXPECT_NEAR(sb, 0.0, 1e-9 * norm2(tp.b));
  EXPECT_NEAR(su, 0.0, 1e-12);
}

// ------------------------------------------------------------------ semi-coarsening

TEST(AnyGrid, SemiCoarseningStretchedMesh) {
  // hy = 0.01 hx (Lx = 1, Ly = 0.01 on an n x n grid): the y coupling is 1e4 x the x coupling.
  // Auto coarsens y only until the couplings meet (Ruge-Stueben theta 0.25), then both; full
  // coarsening leaves errors oscillating in x (the weak axis) that the point smoother does not
  // reduce and the coarse grid cannot represent (Trottenberg et al. 2001, section 5.1).
  std::vector<int> its_auto;
  // sanitized builds: up to 128^2 (full coarsening needs ~300 iterations at 255^2)
  const std::vector<int> sizes = ELLIPTICA_SANITIZED_BUILD ? std::vector<int>{63, 127, 128}
                                                           : std::vector<int>{63, 127, 128, 255};
  for (int n : sizes) {
    const GridShape s = shape2(n, n);
    const CsrMatrix A = poisson_fd(s, {1.0, 0.01, 1.0});
    std::vector<double> b(A.rows);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::sin(0.91 * static_cast<double>(i)) + 0.25;
    MultigridOptions o = pcg_options(1e-8, 300);
    o.hierarchy.semi_coarsening = SemiCoarsening::Auto;
    const MultigridPlan semi(A, s, o);
    std::vector<double> x(A.rows, 0.0);
    const SolveResult r = semi.solve(b.data(), x.data());
    ASSERT_TRUE(r.converged) << n;
    EXPECT_LE(rel_diff(matvec(A, x), b), 1e-7);
    its_auto.push_back(r.iterations);
    // The first level coarsens y only (x kept).
    EXPECT_EQ(semi.hierarchy().level(1).shape.n[0], n);
    EXPECT_EQ(semi.hierarchy().level(1).shape.n[1], n / 2);
    o.hierarchy.semi_coarsening = SemiCoarsening::Off;
    const MultigridPlan full(A, s, o);
    std::vector<double> y(A.rows, 0.0);
    const SolveResult rf = full.solve(b.data(), y.data());
    std::printf("[ stretched n=%d: semi-coarsening %zu levels %d PCG iterations; full coarsening %d%s ]\n", n,
                semi.hierarchy().num_levels(), r.iterations, rf.iterations, rf.converged ? "" : " (not converged)");
    EXPECT_GE(rf.iterations, 3 * r.iterations) << n;
  }
  const auto [lo, hi] = std::minmax_element(its_auto.begin(), its_auto.end());
  EXPECT_LE(*hi, 15);
  EXPECT_LE(*hi - *lo, 3);
  // 3D, hz = 0.01 hx: z coarsened first, then all three.
  const GridShape s3{3, {31, 31, 31}};
  const CsrMatrix A3 = poisson_fd(s3, {1.0, 1.0, 0.01});
  std::vector<double> b3(A3.rows, 1.0);
  MultigridOptions o3 = pcg_options(1e-8, 300);
  o3.hierarchy.semi_coarsening = SemiCoarsening::Auto;
  const MultigridPlan semi3(A3, s3, o3);
  EXPECT_EQ(semi3.hierarchy().level(1).shape.n, (std::array<int, 3>{31, 31, 15}));
  std::vector<double> x3(A3.rows, 0.0);
  const SolveResult r3 = semi3.solve(b3.data(), x3.data());
  o3.hierarchy.semi_coarsening = SemiCoarsening::Off;
  std::vector<double> y3(A3.rows, 0.0);
  const SolveResult f3 = MultigridPlan(A3, s3, o3).solve(b3.data(), y3.data());
  std::printf("[ stretched 3D n=31: semi-coarsening %d PCG iterations, full %d ]\n", r3.iterations, f3.iterations);
  EXPECT_TRUE(r3.converged);
  EXPECT_LE(r3.iterations, 10);
  EXPECT_GE(f3.iterations, 3 * r3.iterations);
}

TEST(AnyGrid, SemiCoarseningStretchedPressure) {
  // The pressure equation on a stretched cell-centred mesh (Neumann walls, hy = 0.01 hx): singular
  // levels of every shape semi-coarsening makes (down to n x 1), with the constant null space.
  std::vector<int> its;
  for (int n : {64, 127, 256}) {
    const TestProblem tp = poisson_problem(2, n, {1.0, 0.01, 1.0}, GridKind::Cell, Boundary::Neumann);
    MultigridOptions o = pcg_options(1e-8, 300);
    o.hierarchy.grid = GridKind::Cell;
    o.hierarchy.semi_coarsening = SemiCoarsening::Auto;
    o.constant_null_space = true;
    const MultigridPlan plan(tp.A, tp.shape, o);
    std::vector<double> x(tp.b.size(), 0.0);
    const SolveResult r = plan.solve(tp.b.data(), x.data());
    std::printf("[ stretched cell Neumann n=%d: %zu levels, %d PCG iterations ]\n", n, plan.hierarchy().num_levels(),
                r.iterations);
    ASSERT_TRUE(r.converged) << n;
    EXPECT_LE(rel_diff(x, tp.u), 1e-4);
    its.push_back(r.iterations);
  }
  const auto [lo, hi] = std::minmax_element(its.begin(), its.end());
  EXPECT_LE(*hi, 15);
  EXPECT_LE(*hi - *lo, 3);
}

TEST(AnyGrid, AxisCouplingsAndFactors) {
  const GridShape s = shape2(20, 30);
  const auto c = axis_couplings(poisson_fd(s, {2.0, 0.3, 1.0}), s);
  // 5-point: c_d ~ 1/h_d^2 (rows at the boundary lose a neighbour: factor (n-1)/n).
  EXPECT_NEAR(c[0], (19.0 / 20.0) / std::pow(2.0 / 21, 2), 1e-9 * c[0]);
  EXPECT_NEAR(c[1], (29.0 / 30.0) / std::pow(0.3 / 31, 2), 1e-9 * c[1]);
  EXPECT_EQ(c[2], 0.0);
  EXPECT_EQ((coarsening_factors(s, GridKind::Vertex, 2, SemiCoarsening::Auto, c, 0.25)), (std::array<int, 3>{1, 2, 1}));
  EXPECT_EQ((coarsening_factors(s, GridKind::Vertex, 2, SemiCoarsening::Off, c, 0.25)), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ((coarsening_factors(s, GridKind::Vertex, 2, SemiCoarsening::On, {1, 1, 0}, 0.25)), (std::array<int, 3>{2, 1, 1}));
  EXPECT_EQ((coarsening_factors(s, GridKind::Vertex, 2, SemiCoarsening::Auto, {1, 0.3, 0}, 0.25)), (std::array<int, 3>{2, 2, 1}));
  // An exhausted axis (1 unknown) is never coarsened; the others continue.
  EXPECT_EQ((coarsening_factors(shape2(1, 9), GridKind::Vertex, 2, SemiCoarsening::Off, {1, 1, 0}, 0.25)),
            (std::array<int, 3>{1, 2, 1}));
  // Periodic wrap-around entries count as offset 1.
  const GridShape p = shape2(8, 8);
  const auto cp = axis_couplings(poisson_fd(p, {1, 1, 1}, GridKind::Cell, {Boundary::Periodic, Boundary::Periodic, Boundary::Periodic}), p);
  EXPECT_NEAR(cp[0], 64.0, 1e-12);
  EXPECT_NEAR(cp[1], 64.0, 1e-12);
}

// ------------------------------------------------------------------ too few levels

TEST(AnyGrid, OneLevelRefused) {
  const GridShape s = shape2(5, 7);
  const CsrMatrix A = poisson_fd(s, {1, 1, 1});
  MultigridOptions o;
  o.hierarchy.coarsening = 8;  // every axis below 8 unknowns: one level
  try {
    const MultigridPlan plan(A, s, o);
    FAIL() << "a one-level hierarchy was accepted";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("5x7"), std::string::npos) << m;
    EXPECT_NE(m.find("smoothed aggregation"), std::string::npos) << m;
  }
  o.hierarchy.max_levels = 1;  // asked for by name: allowed
  EXPECT_EQ(MultigridPlan(A, s, o).hierarchy().num_levels(), 1u);
  o.hierarchy.coarsening = 2;
  o.hierarchy.max_levels = 0;
  EXPECT_EQ(MultigridPlan(A, s, o).hierarchy().num_levels(), 3u);  // 5x7 -> 2x3 -> 1x1
  EXPECT_THROW(MultigridPlan(poisson_fd(GridShape{1, {1, 0, 0}}, {1, 1, 1}), GridShape{1, {1, 0, 0}}), InvalidArgument);
  HierarchyOptions ho;
  ho.semi_coarsening_threshold = 0.0;
  EXPECT_THROW(Hierarchy::geometric(A, s, ho), InvalidArgument);
}
