/// @file test_boomeramg.cpp
/// hypre's BoomerAMG in the multigrid module (multigrid/boomeramg.hpp): the hierarchy copied from
/// hypre is Galerkin on every level; solves of 2D Poisson, an anisotropic and a coefficient-jump
/// problem against a sparse direct solve (error bound kappa x relative residual); iteration
/// counts independent of the grid (100^2 vs 400^2) with our cycle over hypre's levels and with
/// hypre's own cycle; hypre's cycle as a PCG preconditioner (symmetric, fixed); BoomerAMG as the
/// coarse solver of the smoothed-aggregation and geometric hierarchies; bad options refused by
/// name; the message of a build without hypre. Every test that needs hypre skips without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "common/sparse_problems.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;
using namespace elliptica::testing;

#include "common/mpi_lsan.hpp"

namespace {

#define REQUIRE_HYPRE() \
  if (!have_boomeramg()) GTEST_SKIP() << "elliptica was built without hypre (ELLIPTICA_HYPRE=OFF or libhypre-dev missing)"


/// -div(k grad u) on the n x n interior grid of [0,1]^2 (h = 1/(n+1), Dirichlet), 5-point finite
/// volumes with harmonic-mean face coefficients, k = kin in [1/4, 3/4]^2 and 1 elsewhere.
CsrMatrix jump2d(int n, double kin) {
  const double h = 1.0 / (n + 1);
  auto k = [&](int i, int j) {  // cell (i, j) centred at ((i+1) h, (j+1) h), boundary cells included
    const double x = (i + 1) * h, y = (j + 1) * h;
    return (x >= 0.25 && x <= 0.75 && y >= 0.25 && y <= 0.75) ? kin : 1.0;
  };
  auto face = [&](int i, int j, int a, int b) { return 2.0 / (1.0 / k(i, j) + 1.0 / k(a, b)); };
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  auto id = [n](int i, int j) { return static_cast<std::int64_t>(i + n * j); };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double d = 0.0;
      const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
      for (int q = 0; q < 4; ++q) {
        const int a = i + di[q], b = j + dj[q];
        const double w = face(i, j, a, b) / (h * h);
        d += w;
        if (a < 0 || a >= n || b < 0 || b >= n) continue;
        r.push_back(id(i, j)), c.push_back(id(a, b)), v.push_back(-w);
      }
      r.push_back(id(i, j)), c.push_back(id(i, j)), v.push_back(d);
    }
  const auto N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return CsrMatrix::from_triplets(N, N, r, c, v);
}



double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double rel_residual(const CsrMatrix& A, const std::vector<double>& b, const std::vector<double>& x) {
  std::vector<double> r(A.rows);
  A.residual(b.data(), x.data(), r.data(), 1);
  return norm(r) / norm(b);
}

double rel_error(const std::vector<double>& x, const std::vector<double>& ref) {
  std::vector<double> e(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) e[i] = x[i] - ref[i];
  return norm(e) / norm(ref);
}

MultigridOptions pcg_options(BoomerAmgCycle cycle, double rtol = 1e-8) {
  MultigridOptions o;
  o.threads = 1;
  o.boomeramg_cycle = cycle;
  o.solver.method = SolverMethod::Cg;
  o.solver.krylov.rtol = rtol;
  o.solver.krylov.max_iterations = 300;
  return o;
}

/// max |C_ij - D_ij| over the union of the patterns (dense scatter of D's rows; small matrices).
double max_abs_difference(const CsrMatrix& C, const CsrMatrix& D) {
  EXPECT_EQ(C.rows, D.rows);
  EXPECT_EQ(C.cols, D.cols);
  std::vector<double> row(D.cols, 0.0);
  double m = 0.0;
  for (std::size_t i = 0; i < C.rows; ++i) {
    for (auto k = D.row_ptr[i]; k < D.row_ptr[i + 1]; ++k) row[D.col[k]] += D.val[k];
    for (auto k = C.row_ptr[i]; k < C.row_ptr[i + 1]; ++k) row[C.col[k]] -= C.val[k];
    for (auto k = D.row_ptr[i]; k < D.row_ptr[i + 1]; ++k) m = std::max(m, std::abs(row[D.col[k]])), row[D.col[k]] = 0;
    for (auto k = C.row_ptr[i]; k < C.row_ptr[i + 1]; ++k) m = std::max(m, std::abs(row[C.col[k]])), row[C.col[k]] = 0;
  }
  return m;
}

double max_abs(const CsrMatrix& A) {
  double m = 0;
  for (double v : A.val) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace

TEST(BoomerAmgOptions, ParsingAndRangesNamed) {
  EXPECT_EQ(boomeramg_coarsening_from_string("pmis"), BoomerAmgCoarsening::Pmis);
  EXPECT_EQ(boomeramg_interpolation_from_string("classical"), BoomerAmgInterpolation::Classical);
  EXPECT_EQ(boomeramg_relaxation_from_string("l1-jacobi"), BoomerAmgRelaxation::L1Jacobi);
  EXPECT_EQ(boomeramg_cycle_from_string("hypre"), BoomerAmgCycle::Hypre);
  EXPECT_EQ(coarse_solver_from_string("boomeramg"), CoarseSolver::BoomerAmg);
  for (auto r : {BoomerAmgRelaxation::L1Jacobi, BoomerAmgRelaxation::Chebyshev, BoomerAmgRelaxation::HybridSymmetricGs,
                 BoomerAmgRelaxation::L1SymmetricGs, BoomerAmgRelaxation::HybridGsForward})
    EXPECT_EQ(boomeramg_relaxation_from_string(to_string(r)), r);
  try {
    boomeramg_relaxation_from_string("sor", "--boomeramg-relax");
    FAIL() << "an unknown relaxation was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--boomeramg-relax"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'sor'"), std::string::npos) << e.what();
  }
  const BoomerAmgOptions d;
  EXPECT_NO_THROW(check_boomeramg_options(d));
  auto refused = [](BoomerAmgOptions o, const std::string& name) {
    try {
      check_boomeramg_options(o);
      ADD_FAILURE() << name << ": accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  BoomerAmgOptions o = d;
  o.strength_threshold = 1.0;
  refused(o, "strength threshold");
  o = d, o.max_levels = 1;
  refused(o, "max levels");
  o = d, o.max_coarse_size = 0;
  refused(o, "max coarse size");
  o = d, o.sweeps = 0;
  refused(o, "sweeps");
  o = d, o.cycles = 0;
  refused(o, "cycles");
  o = d, o.tolerance = -1e-3;
  refused(o, "tolerance");
  o = d, o.max_interp_elements = -1;
  refused(o, "max interpolation elements");
  o = d, o.aggressive_levels = -2;
  refused(o, "aggressive coarsening levels");
}

TEST(BoomerAmgBuild, WithoutHypreEveryRequestSaysSo) {
  if (have_boomeramg()) GTEST_SKIP() << "this build has hypre (the message is checked in a build without it)";
  const CsrMatrix A = poisson2d(20, 20);
  for (int what = 0; what < 3; ++what) {
    try {
      if (what == 0) BoomerAmgPreconditioner M(A);
      if (what == 1) (void)boomeramg_hierarchy(A);
      if (what == 2) (void)MultigridPlan::boomeramg(A);
      FAIL() << "BoomerAMG without hypre did not throw";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("built without hypre"), std::string::npos) << e.what();
    }
  }
}

TEST(BoomerAmgHierarchy, LevelsAreGalerkinOnEveryLevel) {
  REQUIRE_HYPRE();
  for (auto coarsening : {BoomerAmgCoarsening::Hmis, BoomerAmgCoarsening::Pmis, BoomerAmgCoarsening::Falgout}) {
    BoomerAmgOptions o;
    o.coarsening = coarsening;
    if (coarsening == BoomerAmgCoarsening::Falgout) o.interpolation = BoomerAmgInterpolation::Classical;
    const CsrMatrix A = jump2d(45, 100.0);
    const Hierarchy h = boomeramg_hierarchy(A, o, 1);
    ASSERT_GE(h.num_levels(), 3u) << to_string(coarsening);
    EXPECT_LE(h.level(h.num_levels() - 1).rows(), 9u);
    EXPECT_EQ(max_abs_difference(*h.level(0).matrix, A), 0.0);
    for (std::size_t l = 0; l + 1 < h.num_levels(); ++l) {
      const Level& f = h.level(l);
      const CsrMatrix& Ac = *h.level(l + 1).matrix;
      ASSERT_EQ(f.P.rows, f.rows());
      ASSERT_EQ(f.P.cols, Ac.rows);
      EXPECT_EQ(max_abs_difference(f.R, f.P.transpose()), 0.0);
      // at most max_interp_elements entries per row of P
      for (std::size_t i = 0; i < f.P.rows; ++i) EXPECT_LE(f.P.row_ptr[i + 1] - f.P.row_ptr[i], 4);
      // A_{l+1} = P^T A_l P up to the rounding of the products (entries summed in another order)
      const CsrMatrix G = triple_product(f.R, *f.matrix, f.P, 1);
      const double scale = max_abs(Ac);
      EXPECT_LE(max_abs_difference(G, Ac), 1e-12 * scale) << to_string(coarsening) << ", level " << l + 1;
      EXPECT_GT(Ac.rows, 0u);
      EXPECT_LT(Ac.rows, f.rows());
    }
  }
}

TEST(BoomerAmgHierarchy, SolvesMatchADirectSolve) {
  REQUIRE_HYPRE();
  // ||x - x*|| / ||x*|| <= kappa(A) ||b - A x|| / ||b||; kappa bounds: 5-point Poisson on the
  // (n+1)-interval grid: lambda_max / lambda_min <= 8 / (2 pi^2 h^2) (h = 1 / (n+1)); the jump
  // problem: times the coefficient contrast; the anisotropic one (unit spacing):
  // 4 (1 + eps) / ((1 + eps) 4 sin^2(pi / (2 (n+1)))) <= (n+1)^2 / 2 (sin x >= 2x/pi).
  struct Case {
    const char* name;
    CsrMatrix A;
    double kappa;
  };
  const int n = 63;
  const double h = 1.0 / (n + 1), kp = 8.0 / (2 * M_PI * M_PI * h * h);
  std::vector<Case> cases;
  cases.push_back({"poisson", poisson2d(n, n), kp});
  cases.push_back({"jump 1e4", jump2d(n, 1e4), kp * 1e4});
  cases.push_back({"anisotropic 1e-3", anisotropic2d(n, 1e-3), (n + 1.0) * (n + 1.0) / 2.0});
  const double rtol = 1e-11;
  for (const Case& c : cases) {
    const std::vector<double> b = random_vector(c.A.rows, 7);
    std::vector<double> xd(c.A.rows);
    SparseDirect(c.A).apply(b.data(), xd.data());
    for (auto cyc : {BoomerAmgCycle::Ours, BoomerAmgCycle::Hypre}) {
      const MultigridPlan plan = MultigridPlan::boomeramg(c.A, pcg_options(cyc, rtol));
      std::vector<double> x(c.A.rows, 0.0);
      const SolveResult r = plan.solve(b.data(), x.data());
      ASSERT_TRUE(r.converged) << c.name << ", cycle " << to_string(cyc);
      const double res = rel_residual(c.A, b, x);
      EXPECT_LE(res, 1.01 * rtol);
      EXPECT_LE(rel_error(x, xd), c.kappa * res) << c.name << ", cycle " << to_string(cyc);
      std::printf("[ info ] %s, cycle %s: %d PCG iterations, error %.2e (bound %.2e)\n", c.name,
                  to_string(cyc).c_str(), r.iterations, rel_error(x, xd), c.kappa * res);
    }
  }
}

TEST(BoomerAmgHierarchy, IterationsIndependentOfTheGrid) {
  REQUIRE_HYPRE();
  const int nmax = ELLIPTICA_SANITIZED_BUILD ? 200 : 400;
  for (auto cyc : {BoomerAmgCycle::Ours, BoomerAmgCycle::Hypre}) {
    std::vector<int> its;
    for (int n : {100, nmax}) {
      const CsrMatrix A = poisson2d(n, n);
      const MultigridPlan plan = MultigridPlan::boomeramg(A, pcg_options(cyc));
      const std::vector<double> u = random_vector(A.rows, 3);
      std::vector<double> b(A.rows), x(A.rows, 0.0);
      A.multiply(u.data(), b.data(), 1);
      const SolveResult r = plan.solve(b.data(), x.data());
      ASSERT_TRUE(r.converged);
      EXPECT_LE(rel_residual(A, b, x), 1.01e-8);
      its.push_back(r.iterations);
    }
    std::printf("[ info ] BoomerAMG, cycle %s, PCG iterations to 1e-8: %d (100^2), %d (%d^2)\n", to_string(cyc).c_str(),
                its[0], its[1], nmax);
    EXPECT_LE(its[0], 20) << to_string(cyc);
    EXPECT_LE(its[1], its[0] + 3) << "iterations grew with the grid, cycle " << to_string(cyc);
  }
}

TEST(BoomerAmgPreconditioner, SymmetricFixedAndAPcgPreconditioner) {
  REQUIRE_HYPRE();
  const CsrMatrix A = poisson2d(60, 53);
  const std::size_t n = A.rows;
  const std::vector<double> u = random_vector(n, 11), v = random_vector(n, 12);
  for (auto relax : {BoomerAmgRelaxation::L1Jacobi, BoomerAmgRelaxation::Chebyshev,
                     BoomerAmgRelaxation::HybridSymmetricGs, BoomerAmgRelaxation::L1SymmetricGs,
                     BoomerAmgRelaxation::HybridGsForward}) {
    BoomerAmgOptions o;
    o.relaxation = relax;
    const BoomerAmgPreconditioner M(A, o);
    EXPECT_GE(M.num_levels(), 3);
    std::vector<double> Mu(n), Mv(n), Mu2(n);
    M.apply(u.data(), Mu.data());
    M.apply(v.data(), Mv.data());
    M.apply(u.data(), Mu2.data());
    EXPECT_EQ(Mu, Mu2) << "not a fixed map: " << to_string(relax);
    EXPECT_EQ(M.last_cycles(), 1);
    double vMu = 0, uMv = 0;
    for (std::size_t i = 0; i < n; ++i) vMu += v[i] * Mu[i], uMv += u[i] * Mv[i];
    const double asym = std::abs(vMu - uMv) / (norm(u) * norm(Mv));
    if (M.is_symmetric()) {
      EXPECT_LE(asym, 1e-12) << to_string(relax);
      krylov::Options ko;
      ko.rtol = 1e-10;
      ko.max_iterations = 100;
      ko.threads = 1;
      const CsrOperator op(A, 1, true);
      std::vector<double> b(n), x(n, 0.0);
      A.multiply(u.data(), b.data(), 1);
      const krylov::Result r = krylov::make_solver<double>(krylov::Method::Cg, op, &M, ko)->solve(b.data(), x.data());
      EXPECT_TRUE(r.converged) << to_string(relax);
      EXPECT_LE(r.iterations, 25) << to_string(relax);
      EXPECT_LE(rel_residual(A, b, x), 1.01e-10);
    } else {
      EXPECT_EQ(relax, BoomerAmgRelaxation::HybridGsForward);
      EXPECT_GT(asym, 1e-6) << "forward Gauss-Seidel on both legs should not be symmetric";
    }
  }
  // a tolerance makes it a solver: not fixed, runs until the tolerance
  BoomerAmgOptions o;
  o.cycles = 50;
  o.tolerance = 1e-8;
  const BoomerAmgPreconditioner S(A, o);
  EXPECT_FALSE(S.is_fixed());
  EXPECT_FALSE(S.is_symmetric());
  std::vector<double> b(n), x(n);
  A.multiply(u.data(), b.data(), 1);
  S.apply(b.data(), x.data());
  EXPECT_LE(rel_residual(A, b, x), 1e-8);
  EXPECT_GT(S.last_cycles(), 1);
  EXPECT_LT(S.last_cycles(), 50);
}

TEST(BoomerAmgCoarseSolver, SmoothedAggregationAndGeometricStopEarly) {
  REQUIRE_HYPRE();
  const CsrMatrix A = poisson2d(150, 143);
  const std::vector<double> u = random_vector(A.rows, 5);
  std::vector<double> b(A.rows);
  A.multiply(u.data(), b.data(), 1);
  std::vector<int> its;
  for (auto cs : {CoarseSolver::Direct, CoarseSolver::BoomerAmg}) {
    MultigridOptions o = pcg_options(BoomerAmgCycle::Ours);
    o.amg.coarse_size = 3000;  // stops after one or two coarsenings
    o.coarse_solver = cs;
    const MultigridPlan plan = MultigridPlan::smoothed_aggregation(A, o);
    const Hierarchy& h = plan.hierarchy();
    ASSERT_GE(h.num_levels(), 2u);
    EXPECT_GT(h.level(h.num_levels() - 1).rows(), 300u);
    const bool is_amg = dynamic_cast<const BoomerAmgPreconditioner*>(h.coarse_solver()) != nullptr;
    EXPECT_EQ(is_amg, cs == CoarseSolver::BoomerAmg);
    std::vector<double> x(A.rows, 0.0);
    const SolveResult r = plan.solve(b.data(), x.data());
    ASSERT_TRUE(r.converged);
    EXPECT_LE(rel_residual(A, b, x), 1.01e-8);
    EXPECT_LE(rel_error(x, u), 8.0 / (2 * M_PI * M_PI) * 151.0 * 151.0 * 1.01e-8);
    its.push_back(r.iterations);
  }
  std::printf("[ info ] SA (coarse size 3000) + PCG iterations: %d (direct coarse solve), %d (BoomerAMG V-cycle)\n",
              its[0], its[1]);
  EXPECT_LE(its[1], its[0] + 5);

  // the geometric hierarchy stopped at 3 levels (31^2 coarse unknowns), BoomerAMG below it
  const int N = 128;
  GridShape s;
  s.dim = 2;
  s.n = {N - 1, N - 1, 1};
  const CsrMatrix G = poisson_fd(s, {1.0, 1.0, 1.0});
  MultigridOptions o = pcg_options(BoomerAmgCycle::Ours);
  o.hierarchy.max_levels = 3;
  o.coarse_solver = CoarseSolver::BoomerAmg;
  const MultigridPlan plan(G, s, o);
  EXPECT_EQ(plan.hierarchy().level(2).rows(), 31u * 31u);
  std::vector<double> bg(G.rows), xg(G.rows, 0.0);
  const std::vector<double> ug = random_vector(G.rows, 9);
  G.multiply(ug.data(), bg.data(), 1);
  const SolveResult r = plan.solve(bg.data(), xg.data());
  ASSERT_TRUE(r.converged);
  EXPECT_LE(r.iterations, 15);
  EXPECT_LE(rel_residual(G, bg, xg), 1.01e-8);
}

TEST(BoomerAmgPlan, RefusesWhatItCannotDo) {
  REQUIRE_HYPRE();
  const CsrMatrix A = poisson2d(30, 30);
  // hypre's cycle with forward Gauss-Seidel is not symmetric: PCG refused before any iteration
  MultigridOptions o = pcg_options(BoomerAmgCycle::Hypre);
  o.boomeramg.relaxation = BoomerAmgRelaxation::HybridGsForward;
  try {
    (void)MultigridPlan::boomeramg(A, o);
    FAIL() << "PCG with a non-symmetric hypre cycle was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("gmres"), std::string::npos) << e.what();
  }
  o.solver.method = SolverMethod::Gmres;
  EXPECT_NO_THROW((void)MultigridPlan::boomeramg(A, o));
  // the same relaxation in the BoomerAMG coarse solver of a PCG plan
  MultigridOptions c = pcg_options(BoomerAmgCycle::Ours);
  c.coarse_solver = CoarseSolver::BoomerAmg;
  c.boomeramg.relaxation = BoomerAmgRelaxation::HybridGsForward;
  EXPECT_THROW((void)MultigridPlan::smoothed_aggregation(A, c), InvalidArgument);
  // the constant null space with hypre's cycle / coarse solver
  o = pcg_options(BoomerAmgCycle::Hypre);
  o.constant_null_space = true;
  EXPECT_THROW((void)MultigridPlan::boomeramg(A, o), InvalidArgument);
  c = pcg_options(BoomerAmgCycle::Ours);
  c.coarse_solver = CoarseSolver::BoomerAmg;
  c.constant_null_space = true;
  EXPECT_THROW((void)MultigridPlan::smoothed_aggregation(A, c), InvalidArgument);
  // a matrix BoomerAMG does not coarsen (at most max_coarse_size unknowns): not multigrid
  // (hypre coarsens the finest level at least once whatever its size; a diagonal matrix has no
  // strong couplings, so no coarse level)
  std::vector<std::int64_t> idx(50);
  for (int i = 0; i < 50; ++i) idx[i] = i;
  const CsrMatrix S = CsrMatrix::from_triplets(50, 50, idx, idx, std::vector<double>(50, 2.0));
  for (auto cyc : {BoomerAmgCycle::Ours, BoomerAmgCycle::Hypre}) {
    try {
      (void)MultigridPlan::boomeramg(S, pcg_options(cyc));
      FAIL() << "a one-level BoomerAMG hierarchy was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("one level"), std::string::npos) << e.what();
    }
  }
  // the one-level diagnosis names the cause: no negative off-diagonal entry (|A|, positive
  // definite but not an M-matrix: classical strength finds nothing), a non-positive diagonal
  CsrMatrix Abs = A;
  for (double& v : Abs.val) v = std::abs(v);
  for (auto cyc : {BoomerAmgCycle::Ours, BoomerAmgCycle::Hypre}) {
    try {
      (void)MultigridPlan::boomeramg(Abs, pcg_options(cyc));
      FAIL() << "a one-level BoomerAMG hierarchy of |A| was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("no negative off-diagonal entry"), std::string::npos) << e.what();
    }
  }
  std::vector<double> neg(50, 2.0);
  neg[7] = -2.0;
  const CsrMatrix N = CsrMatrix::from_triplets(50, 50, idx, idx, neg);
  try {
    (void)MultigridPlan::boomeramg(N, pcg_options(BoomerAmgCycle::Ours));
    FAIL() << "a one-level BoomerAMG hierarchy with a negative diagonal was accepted";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("not positive definite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 7"), std::string::npos) << e.what();
  }
  // bad options by name, a non-square matrix
  o = pcg_options(BoomerAmgCycle::Ours);
  o.boomeramg.strength_threshold = -0.1;
  try {
    (void)MultigridPlan::boomeramg(A, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("strength threshold"), std::string::npos) << e.what();
  }
  CsrMatrix R = CsrMatrix::from_triplets(2, 3, {0, 1}, {0, 1}, {1.0, 1.0});
  EXPECT_THROW(BoomerAmgPreconditioner{R}, InvalidArgument);
  // hypre's cycle: cycle() refused, the preconditioner and its cost there
  const MultigridPlan p = MultigridPlan::boomeramg(A, pcg_options(BoomerAmgCycle::Hypre));
  EXPECT_FALSE(p.has_vcycle());
  EXPECT_THROW((void)p.cycle(), InvalidArgument);
  EXPECT_EQ(p.matvecs_per_cycle(), 5);  // Chebyshev (2) x 1 sweep x 2 legs + 1
  EXPECT_GE(p.hierarchy().num_levels(), 3u);
}

TEST(BoomerAmgPlan, StationaryHypreCycleAndThreads) {
  REQUIRE_HYPRE();
  const CsrMatrix A = poisson2d(80, 71);
  const std::vector<double> u = random_vector(A.rows, 4);
  std::vector<double> b(A.rows);
  A.multiply(u.data(), b.data(), 1);
  for (auto cyc : {BoomerAmgCycle::Ours, BoomerAmgCycle::Hypre}) {
    MultigridOptions o = pcg_options(cyc);
    o.solver.method = SolverMethod::Stationary;
    o.solver.krylov.max_iterations = 100;
    std::vector<double> x(A.rows, 0.0);
    const SolveResult r = MultigridPlan::boomeramg(A, o).solve(b.data(), x.data());
    ASSERT_TRUE(r.converged) << to_string(cyc);
    EXPECT_LE(rel_residual(A, b, x), 1.01e-8);
    EXPECT_EQ(r.residual_history.size(), static_cast<std::size_t>(r.iterations) + 1);
    EXPECT_LT(r.rho, 0.5) << to_string(cyc);
    // threads = 2 gives the same iterates as 1 (hypre is sequential; our kernels are per row)
    o.threads = 2;
    std::vector<double> x2(A.rows, 0.0);
    const SolveResult r2 = MultigridPlan::boomeramg(A, o).solve(b.data(), x2.data());
    EXPECT_EQ(r2.iterations, r.iterations);
    EXPECT_LE(rel_error(x2, x), 1e-12);
  }
}
