// Finite-difference Poisson operators, the geometric hierarchy (interpolation, Galerkin operators,
// operator complexity of seed 003) and the V-cycle as solver and as Krylov preconditioner.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/vcycle.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;

namespace {

constexpr double kPi = std::numbers::pi;

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

std::size_t unknowns(const GridShape& s) {
  std::size_t n = 1;
  for (int d = 0; d < s.dim; ++d) n *= static_cast<std::size_t>(s.n[d]);
  return n;
}

/// Sine mode prod_d sin(k_d pi x_d / L_d) at the unknowns and its exact discrete eigenvalue
/// sum_d 4/h_d^2 sin^2(k_d pi / (2 N_d)).
double sine_mode(const GridShape& s, std::array<double, 3> L, std::array<int, 3> k, std::vector<double>& v) {
  v.assign(unknowns(s), 0.0);
  const int nx = s.n[0], ny = s.dim > 1 ? s.n[1] : 1, nz = s.dim > 2 ? s.n[2] : 1;
  std::size_t p = 0;
  for (int c = 0; c < nz; ++c)
    for (int b = 0; b < ny; ++b)
      for (int a = 0; a < nx; ++a, ++p) {
        const int idx[3] = {a, b, c};
        double f = 1;
        for (int d = 0; d < s.dim; ++d) f *= std::sin(k[d] * kPi * (idx[d] + 1) / (s.n[d] + 1));
        v[p] = f;
      }
  double lam = 0;
  for (int d = 0; d < s.dim; ++d) {
    const double h = L[d] / (s.n[d] + 1), sn = std::sin(k[d] * kPi / (2.0 * (s.n[d] + 1)));
    lam += 4.0 / (h * h) * sn * sn;
  }
  return lam;
}

SmootherOptions cheby4_jacobi() {
  SmootherOptions o;
  o.base = BaseSmoother::Jacobi;
  o.kind = Polynomial::Cheby4;
  return o;
}

}  // namespace

// ------------------------------------------------------------------------ Poisson operators

TEST(Poisson, SineModesAreEigenvectors) {
  const std::vector<std::pair<GridShape, std::array<double, 3>>> cases = {
      {GridShape{1, {15, 0, 0}}, {2.0, 1.0, 1.0}},
      {GridShape{2, {7, 11, 0}}, {1.0, 3.0, 1.0}},
      {GridShape{3, {5, 4, 6}}, {1.0, 0.5, 2.0}}};
  for (const auto& [s, L] : cases) {
    CsrMatrix A = poisson_fd(s, L);
    EXPECT_NO_THROW(A.validate());
    EXPECT_EQ(A.rows, unknowns(s));
    // Symmetric.
    CsrMatrix T = A.transpose();
    EXPECT_EQ(T.col, A.col);
    EXPECT_EQ(T.val, A.val);
    for (std::array<int, 3> k : {std::array<int, 3>{1, 1, 1}, {3, 2, 1}, {s.n[0], 1, 2}}) {
      std::vector<double> v, Av(A.rows);
      const double lam = sine_mode(s, L, k, v);
      A.multiply(v.data(), Av.data());
      double err = 0;
      for (std::size_t i = 0; i < v.size(); ++i) err = std::max(err, std::abs(Av[i] - lam * v[i]));
      EXPECT_LT(err, 1e-12 * lam) << "dim " << s.dim << " mode " << k[0] << "," << k[1] << "," << k[2];
    }
  }
}

TEST(Poisson, StencilSizes) {
  // 2D 5-point: nnz = 5 m^2 - 4 m; 3D 7-point: 7 m^3 - 6 m^2.
  EXPECT_EQ(poisson_fd(grid_shape(2, 128), {1, 1, 1}).nnz(), 5u * 127 * 127 - 4 * 127);
  EXPECT_EQ(poisson_fd(grid_shape(3, 8), {1, 1, 1}).nnz(), 7u * 343 - 6 * 49);
}

TEST(Poisson, ManufacturedSolutionConvergesAtSecondOrder) {
  // -Laplace u = f with u = sin(pi x / Lx) sin(2 pi y / Ly) on [0,2] x [0,1]: max error O(h^2).
  const double Lx = 2.0, Ly = 1.0;
  std::vector<double> errs;
  for (int n : {16, 32, 64}) {
    const GridShape s = grid_shape(2, n);
    CsrMatrix A = poisson_fd(s, {Lx, Ly, 1});
    const int m = n - 1;
    std::vector<double> f(A.rows), ue(A.rows), x(A.rows, 0.0);
    const double c = kPi * kPi * (1 / (Lx * Lx) + 4 / (Ly * Ly));
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) {
        const double xx = (i + 1) * Lx / n, yy = (j + 1) * Ly / n;
        ue[i + m * j] = std::sin(kPi * xx / Lx) * std::sin(2 * kPi * yy / Ly);
        f[i + m * j] = c * ue[i + m * j];
      }
    CsrOperator op(A);
    krylov::Options o;
    o.rtol = 1e-12;
    o.max_iterations = 2000;
    auto r = krylov::cg<double>(op, f.data(), x.data(), nullptr, o);
    ASSERT_TRUE(r.converged);
    double e = 0;
    for (std::size_t i = 0; i < x.size(); ++i) e = std::max(e, std::abs(x[i] - ue[i]));
    errs.push_back(e);
  }
  for (std::size_t i = 1; i < errs.size(); ++i) {
    const double ratio = errs[i - 1] / errs[i];
    EXPECT_GT(ratio, 3.8) << "error ratio " << ratio;
    EXPECT_LT(ratio, 4.2) << "error ratio " << ratio;
  }
}

TEST(Poisson, SeedProblemAndBadInput) {
  TestProblem tp = seed_problem_2d(16, 8.0);
  EXPECT_EQ(tp.A.rows, 225u);
  std::vector<double> Au(tp.A.rows);
  tp.A.multiply(tp.u.data(), Au.data());
  EXPECT_EQ(Au, tp.b);
  // Same g every time.
  TestProblem tp2 = seed_problem_2d(16, 8.0);
  EXPECT_EQ(tp.u, tp2.u);
  // u - smooth part is bounded by 1 (g uniform in [-1, 1)).
  double gmax = 0;
  for (int j = 0; j < 15; ++j)
    for (int i = 0; i < 15; ++i) {
      const double x = (i + 1) * 8.0 / 16, y = (j + 1) / 16.0;
      const double g = tp.u[i + 15 * j] - std::sin(3 * kPi * x / 8.0) * std::sin(4 * kPi * y);
      gmax = std::max(gmax, std::abs(g));
      EXPECT_LE(std::abs(g), 1.0);
    }
  EXPECT_GT(gmax, 0.5);
  EXPECT_THROW(poisson_fd(GridShape{4, {2, 2, 2}}, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(poisson_fd(GridShape{2, {2, 0, 0}}, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(poisson_fd(GridShape{2, {2, 2, 0}}, {1, -1, 1}), InvalidArgument);
  EXPECT_THROW(grid_shape(2, 1), InvalidArgument);
}

// ------------------------------------------------------------------------ hierarchy

TEST(Hierarchy, InterpolationIsExactForPiecewiseLinearTents) {
  // prod_d min(x_d, L - x_d) is piecewise (multi)linear with kinks at coarse points: interpolated exactly.
  for (int c : {2, 8}) {
    for (int dim : {1, 2, 3}) {
      const int N = dim == 3 ? 2 * c : 4 * c;
      const GridShape fine = grid_shape(dim, N);
      const GridShape coarse = grid_shape(dim, N / c);
      CsrMatrix P = prolongation(fine, c);
      EXPECT_NO_THROW(P.validate());
      ASSERT_EQ(P.rows, unknowns(fine));
      ASSERT_EQ(P.cols, unknowns(coarse));
      auto tent = [&](const GridShape& s, int Nint) {
        std::vector<double> v(unknowns(s));
        const int nx = s.n[0], ny = dim > 1 ? s.n[1] : 1;
        for (std::size_t p = 0; p < v.size(); ++p) {
          const int idx[3] = {static_cast<int>(p % nx), static_cast<int>((p / nx) % ny), static_cast<int>(p / (nx * ny))};
          double f = 1;
          for (int d = 0; d < dim; ++d) {
            const double x = (idx[d] + 1.0) / Nint;
            f *= std::min(x, 1.0 - x);
          }
          v[p] = f;
        }
        return v;
      };
      const auto vc = tent(coarse, N / c), vf = tent(fine, N);
      std::vector<double> Pv(P.rows);
      P.multiply(vc.data(), Pv.data());
      for (std::size_t i = 0; i < Pv.size(); ++i) EXPECT_NEAR(Pv[i], vf[i], 1e-14) << "c " << c << " dim " << dim;
    }
  }
  EXPECT_THROW(prolongation(grid_shape(2, 12), 8), InvalidArgument);
}

TEST(Hierarchy, GalerkinOperatorOf1DLaplacian) {
  // With R = P^T and linear interpolation, P^T A_h P = 2 A_2h for the 1D Laplacian.
  const GridShape s = grid_shape(1, 16);
  Hierarchy h(poisson_fd(s, {1, 1, 1}), s, 2);
  ASSERT_EQ(h.num_levels(), 4u);  // 16, 8, 4, 2 intervals
  for (std::size_t j = 1; j < h.num_levels(); ++j) {
    const CsrMatrix& Ac = *h.level(j).matrix;
    CsrMatrix ref = poisson_fd(h.level(j).shape, {1, 1, 1});
    ASSERT_EQ(Ac.rows, ref.rows);
    ASSERT_EQ(Ac.col, ref.col);
    const double scale = std::pow(2.0, static_cast<double>(j));
    for (std::size_t p = 0; p < ref.nnz(); ++p) EXPECT_NEAR(Ac.val[p], scale * ref.val[p], 1e-9 * std::abs(ref.val[p]));
  }
}

TEST(Hierarchy, SeedOperatorComplexity) {
  // Seed 003, section 3: 2D, n = 128: 7 levels and 1.568 for n_c = n/2, 3 levels and 1.023 for
  // n_c = n/8 (operator complexity = sum_j nnz(A_j) / nnz(A_0), coarsening to one unknown).
  const GridShape s = grid_shape(2, 128);
  for (double Lx : {1.0, 64.0}) {
    Hierarchy h2(poisson_fd(s, {Lx, 1, 1}), s, 2);
    Hierarchy h8(poisson_fd(s, {Lx, 1, 1}), s, 8);
    EXPECT_EQ(h2.num_levels(), 7u);
    EXPECT_EQ(h8.num_levels(), 3u);
    EXPECT_EQ(h2.level(6).rows(), 1u);
    EXPECT_EQ(h8.level(2).rows(), 1u);
    EXPECT_EQ(h8.level(1).shape.n[0], 15);
    char buf[2][16];
    std::snprintf(buf[0], sizeof buf[0], "%.3f", h2.operator_complexity());
    std::snprintf(buf[1], sizeof buf[1], "%.3f", h8.operator_complexity());
    EXPECT_EQ(std::string(buf[0]), "1.568") << h2.operator_complexity();
    EXPECT_EQ(std::string(buf[1]), "1.023") << h8.operator_complexity();
    // Coarse operators are 9-point: nnz = (3 m - 2)^2 on an m x m grid.
    EXPECT_EQ(h2.level(1).matrix->nnz(), 187u * 187u);
    EXPECT_EQ(h8.level(1).matrix->nnz(), 43u * 43u);
    if (Lx == 1.0) {
      std::printf("[ operator complexity n=128: c=2 %.4f (%zu levels), c=8 %.4f (%zu levels) ]\n",
                  h2.operator_complexity(), h2.num_levels(), h8.operator_complexity(), h8.num_levels());
    }
  }
}

TEST(Hierarchy, CoarseSolveAndBadInput) {
  // 24 -> 12 -> 6 -> 3 intervals (23, 11, 5, 2 unknowns), then 2 -> 1 unknown (any-size
  // coarsening: the last coarse interval has one fine interval); capped at 2 levels: 11 x 11
  const GridShape s = grid_shape(2, 24);
  CsrMatrix A = poisson_fd(s, {3, 1, 1});
  EXPECT_EQ(Hierarchy(A, s, 2).num_levels(), 5u);
  EXPECT_EQ(Hierarchy(A, s, 8).num_levels(), 2u);  // 24 -> 3 intervals
  Hierarchy h(A, s, 2, 2);
  ASSERT_EQ(h.num_levels(), 2u);
  const CsrMatrix& Ac = *h.level(1).matrix;
  ASSERT_EQ(Ac.rows, 121u);
  std::vector<double> b(121), x(121), Ax(121);
  for (std::size_t i = 0; i < 121; ++i) b[i] = std::sin(1.0 + i);
  h.coarse_solve(b.data(), x.data());
  Ac.multiply(x.data(), Ax.data());
  for (std::size_t i = 0; i < 121; ++i) EXPECT_NEAR(Ax[i], b[i], 1e-10 * norm2(b));
  Hierarchy capped(A, s, 2, 1);
  EXPECT_EQ(capped.num_levels(), 1u);
  EXPECT_THROW(Hierarchy(A, s, 3), InvalidArgument);
  EXPECT_THROW(Hierarchy(A, grid_shape(2, 10), 2), InvalidArgument);
}

// ------------------------------------------------------------------------ V-cycle

TEST(VCycle, TwoTwoChebyshevCycleIsGridIndependent) {
  // Error reduction per (2,2) cycle with 4th-kind Chebyshev-Jacobi on the seed problem, Lx = 1:
  // textbook multigrid (rho well below 0.2), independent of n.
  std::vector<double> rates;
  for (int n : {32, 64, 128}) {
    TestProblem tp = seed_problem_2d(n, 1.0);
    VCycleOptions o;
    o.pre = o.post = 2;
    o.smoother = cheby4_jacobi();
    VCycle mg(Hierarchy(tp.A, tp.shape, 2), o);
    std::vector<double> x(tp.A.rows, 0.0), e(tp.A.rows);
    const int cycles = 6;
    double e0 = norm2(tp.u), ek = e0;
    for (int c = 0; c < cycles; ++c) mg.cycle(tp.b.data(), x.data());
    for (std::size_t i = 0; i < x.size(); ++i) e[i] = x[i] - tp.u[i];
    ek = norm2(e);
    const double rho = std::pow(ek / e0, 1.0 / cycles);
    rates.push_back(rho);
    EXPECT_LT(rho, 0.2) << "n = " << n;
  }
  const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
  EXPECT_LT(*hi - *lo, 0.05) << "rates " << rates[0] << " " << rates[1] << " " << rates[2];
  std::printf("[ (2,2) Cheby4-Jacobi error rate per cycle, n = 32/64/128: %.3f %.3f %.3f ]\n", rates[0], rates[1],
              rates[2]);
}

TEST(VCycle, StationarySolverCountsWork) {
  TestProblem tp = seed_problem_2d(64, 1.0);
  VCycleOptions o;
  o.pre = 3;
  o.post = 1;
  o.smoother = cheby4_jacobi();
  VCycle mg(Hierarchy(tp.A, tp.shape, 2), o);
  std::vector<double> x(tp.A.rows, 0.0);
  auto r = mg.solve(tp.b.data(), x.data(), 1e-6, 50);
  ASSERT_TRUE(r.converged);
  EXPECT_LT(r.iterations, 15);
  EXPECT_EQ(r.residual_history.size(), static_cast<std::size_t>(r.iterations) + 1);
  EXPECT_LE(r.final_relative_residual, 1e-6);
  EXPECT_EQ(r.operator_applications, 1 + r.iterations * (3 + 1 + 1 + 1));
  EXPECT_EQ(r.preconditioner_applications, r.iterations);
  EXPECT_FALSE(mg.is_symmetric());
  // Independent check of the returned residual.
  std::vector<double> Ax(x.size()), res(x.size());
  tp.A.multiply(x.data(), Ax.data());
  for (std::size_t i = 0; i < x.size(); ++i) res[i] = tp.b[i] - Ax[i];
  EXPECT_NEAR(norm2(res) / norm2(tp.b), r.final_relative_residual, 1e-12);
  VCycleOptions none;
  none.pre = none.post = 0;
  none.smoother = cheby4_jacobi();
  EXPECT_THROW(VCycle(Hierarchy(tp.A, tp.shape, 2), none), InvalidArgument);
}

TEST(VCycle, PreconditionsGmresAndPcg) {
  TestProblem tp = seed_problem_2d(64, 1.0);
  CsrOperator op(tp.A);
  krylov::Options ko;
  ko.rtol = 1e-6;
  ko.restart = 20;
  ko.max_iterations = 3000;

  std::vector<double> x(tp.A.rows, 0.0);
  auto plain_cg = krylov::cg<double>(op, tp.b.data(), x.data(), nullptr, ko);
  ASSERT_TRUE(plain_cg.converged);

  // Symmetric (2,2) cycle in PCG.
  VCycleOptions sym;
  sym.pre = sym.post = 2;
  sym.smoother = cheby4_jacobi();
  auto h = std::make_shared<const Hierarchy>(tp.A, tp.shape, 2);
  VCycle mgs(h, sym);
  EXPECT_TRUE(mgs.is_symmetric());
  std::fill(x.begin(), x.end(), 0.0);
  auto pcg = krylov::cg<double>(op, tp.b.data(), x.data(), &mgs, ko);
  ASSERT_TRUE(pcg.converged);
  EXPECT_LE(pcg.iterations, 8);
  EXPECT_LT(10 * pcg.iterations, plain_cg.iterations);

  // One-sided (4,0) cycle in GMRES(20), against unpreconditioned GMRES(20).
  VCycleOptions one;
  one.pre = 4;
  one.post = 0;
  one.smoother = cheby4_jacobi();
  VCycle mg1(h, one);
  EXPECT_FALSE(mg1.is_symmetric());
  std::fill(x.begin(), x.end(), 0.0);
  auto pg = krylov::gmres<double>(op, tp.b.data(), x.data(), &mg1, ko);
  ASSERT_TRUE(pg.converged);
  EXPECT_LE(pg.iterations, 10);
  std::fill(x.begin(), x.end(), 0.0);
  ko.max_iterations = 1000;
  auto g = krylov::gmres<double>(op, tp.b.data(), x.data(), nullptr, ko);
  EXPECT_TRUE(!g.converged || g.iterations > 10 * pg.iterations);
  std::printf("[ n=64 Lx=1: CG %d, MG(2,2)-PCG %d, MG(4,0)-GMRES(20) %d, GMRES(20) %d%s ]\n", plain_cg.iterations,
              pcg.iterations, pg.iterations, g.iterations, g.converged ? "" : " (not converged)");

  // Aggressive coarsening with a one-sided higher-order cycle, as FGMRES/GMRES preconditioner.
  VCycleOptions agg;
  agg.pre = 8;
  agg.post = 0;
  agg.smoother.kind = Polynomial::Cheby4Opt;
  VCycle mg8(Hierarchy(tp.A, tp.shape, 8), agg);
  ASSERT_EQ(mg8.hierarchy().num_levels(), 2u);  // 64 -> 8 intervals (8 / 8 = 1 < 2: stop, 7 x 7 exact)
  std::fill(x.begin(), x.end(), 0.0);
  ko.max_iterations = 200;
  auto p8 = krylov::gmres<double>(op, tp.b.data(), x.data(), &mg8, ko);
  ASSERT_TRUE(p8.converged);
  EXPECT_LE(p8.iterations, 25);
}

TEST(VCycle, ThreeDimensionalPoisson) {
  const GridShape s = grid_shape(3, 16);
  CsrMatrix A = poisson_fd(s, {1, 1, 1});
  VCycleOptions o;
  o.pre = o.post = 2;
  o.smoother = cheby4_jacobi();
  VCycle mg(Hierarchy(A, s, 2), o);
  EXPECT_EQ(mg.hierarchy().num_levels(), 4u);
  std::vector<double> u(A.rows), b(A.rows), x(A.rows, 0.0);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::sin(0.37 * i) + 0.5;
  A.multiply(u.data(), b.data());
  auto r = mg.solve(b.data(), x.data(), 1e-8, 40);
  ASSERT_TRUE(r.converged);
  const double rho = std::pow(r.final_relative_residual, 1.0 / r.iterations);
  EXPECT_LT(rho, 0.3);
}

TEST(VCycle, SplitSymmetryAndAspectRatio) {
  // E(n,m) is the A-adjoint of E(m,n): the same spectrum, so rho(m,n) ~ rho(n,m) (seed 003, sec. 3).
  TestProblem tp = seed_problem_2d(64, 8.0);
  auto h = std::make_shared<const Hierarchy>(tp.A, tp.shape, 2);
  auto rate = [&](int m, int n) {
    VCycleOptions o;
    o.pre = m;
    o.post = n;
    o.smoother.kind = Polynomial::Cheby4Opt;
    VCycle mg(h, o);
    std::vector<double> x(tp.A.rows, 0.0);
    auto r = mg.solve(tp.b.data(), x.data(), 1e-6, 500);
    EXPECT_TRUE(r.converged) << m << "," << n;
    return std::pow(r.final_relative_residual, 1.0 / r.iterations);
  };
  const double r31 = rate(3, 1), r13 = rate(1, 3), r40 = rate(4, 0), r04 = rate(0, 4);
  std::printf("[ Lx=8 n=64 opt4: rho(3,1) %.3f rho(1,3) %.3f rho(4,0) %.3f rho(0,4) %.3f ]\n", r31, r13, r40, r04);
  EXPECT_NEAR(r31 / r13, 1.0, 0.15);
  EXPECT_NEAR(r40 / r04, 1.0, 0.15);
  EXPECT_LT(r31, 0.95);

  // RAS-based cycles are never symmetric.
  VCycleOptions ras;
  ras.pre = ras.post = 1;
  ras.smoother.base = BaseSmoother::RAS;
  EXPECT_FALSE(VCycle(h, ras).is_symmetric());
}

TEST(VCycle, AggressiveCoarseningOnSeedGrid) {
  // n = 128, c = 8 (3 levels), Lx = 8: one-sided optimised 4th-kind (12,0) cycle in GMRES(20).
  TestProblem tp = seed_problem_2d(128, 8.0);
  VCycleOptions o;
  o.pre = 12;
  o.post = 0;
  o.smoother.kind = Polynomial::Cheby4Opt;
  VCycle mg(Hierarchy(tp.A, tp.shape, 8), o);
  ASSERT_EQ(mg.hierarchy().num_levels(), 3u);
  CsrOperator op(tp.A);
  krylov::Options ko;
  ko.rtol = 1e-6;
  ko.restart = 20;
  ko.max_iterations = 200;
  std::vector<double> x(tp.A.rows, 0.0);
  auto r = krylov::gmres<double>(op, tp.b.data(), x.data(), &mg, ko);
  ASSERT_TRUE(r.converged);
  EXPECT_LE(r.iterations, 40);
  std::printf("[ n=128 Lx=8 c=8 opt4 (12,0) GMRES(20): %d iterations ]\n", r.iterations);
}

// apply() runs the cycle from zero without the initial residuals (and without zeroing z first);
// it must equal cycle() from x = 0 for symmetric and one-sided splits and both coarsenings.
TEST(VCycle, ApplyFromZeroMatchesCycle) {
  TestProblem tp = seed_problem_2d(64, 8.0);
  for (int c : {2, 8})
    for (auto split : {std::pair{2, 2}, std::pair{4, 0}, std::pair{0, 3}}) {
      VCycleOptions o;
      o.pre = split.first;
      o.post = split.second;
      o.smoother = cheby4_jacobi();
      o.smoother.kind = Polynomial::Cheby4Opt;
      VCycle mg(Hierarchy(tp.A, tp.shape, c), o);
      std::vector<double> x(tp.A.rows, 0.0), z(tp.A.rows, -7.0);
      mg.cycle(tp.b.data(), x.data());
      mg.apply(tp.b.data(), z.data());
      const double nx = norm2(x);
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(z[i], x[i], 1e-12 * nx) << c << " " << split.first;
    }
}

TEST(PoissonInput, LengthsWhoseStencilOverflowsAreRefused) {
  // Issue 9, finding 10: `mg --lx 1e308` used to end as "gmres: right-hand side contains NaN".
  for (double L : {1e308, 1e200, 1e-200}) {
    try {
      seed_problem_2d(16, L, 1.0);
      ADD_FAILURE() << "no error for L = " << L;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("1/h^2"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(seed_problem_2d(16, 1e100, 1.0));
  EXPECT_NO_THROW(seed_problem_2d(16, 1e-100, 1.0));
}
