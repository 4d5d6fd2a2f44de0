// MultigridPlan (the one multigrid solve path), nesting of operators (Krylov solver objects as
// preconditioners and as coarse solvers of a V-cycle), matrix-free levels, threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/vcycle.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;

namespace {

double rel_residual(const CsrMatrix& A, const std::vector<double>& x, const std::vector<double>& b) {
  std::vector<double> r(b.size());
  A.residual(b.data(), x.data(), r.data());
  double rr = 0, bb = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    rr += r[i] * r[i];
    bb += b[i] * b[i];
  }
  return std::sqrt(rr / bb);
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(a[i] - b[i]));
    s = std::max(s, std::abs(b[i]));
  }
  return d / s;
}

/// A CSR matrix hidden behind the plain operator interface (what a matrix-free level looks like).
class OpaqueOperator final : public LinearOperator<double> {
 public:
  explicit OpaqueOperator(const CsrMatrix& A) : A_(A) {}
  std::size_t size() const override { return A_.rows; }
  void apply(const double* x, double* y) const override { A_.multiply(x, y); }
  bool is_symmetric() const override { return true; }

 private:
  const CsrMatrix& A_;
};

}  // namespace

TEST(NestedSolvers, FgmresAroundGmresAroundVCycle) {
  TestProblem tp = seed_problem_2d(64, 2.0);
  auto h = std::make_shared<const Hierarchy>(tp.A, tp.shape, 2);
  VCycleOptions vo;
  vo.pre = 4;
  vo.post = 0;
  VCycle vc(h, vo);
  CsrOperator A(tp.A);
  krylov::Options inner_opt;
  inner_opt.rtol = 0.5;
  inner_opt.max_iterations = 2;
  inner_opt.restart = 2;
  krylov::Gmres<double> inner(A, &vc, inner_opt);  // an operator: b -> approximate A^{-1} b
  EXPECT_FALSE(inner.is_fixed());
  krylov::Options outer_opt;
  outer_opt.rtol = 1e-8;
  outer_opt.max_iterations = 50;
  outer_opt.restart = 20;
  // GMRES refuses a preconditioner that is not a fixed map; FGMRES takes it.
  EXPECT_THROW(krylov::Gmres<double>(A, &inner, outer_opt), InvalidArgument);
  krylov::Fgmres<double> outer(A, &inner, outer_opt);
  std::vector<double> x(tp.b.size(), 0.0);
  const krylov::Result r = outer.solve(tp.b.data(), x.data());
  ASSERT_TRUE(r.converged);
  EXPECT_LE(r.iterations, 10);
  EXPECT_LE(rel_residual(tp.A, x, tp.b), 1.0001e-8);
  EXPECT_GT(inner.applications(), 0);
}

TEST(NestedSolvers, VCycleWithCgCoarseSolve) {
  TestProblem tp = seed_problem_2d(64, 1.0);
  HierarchyOptions ho;
  ho.max_levels = 3;  // 64 -> 32 -> 16 intervals: the coarsest level has 15 x 15 unknowns
  ho.coarse = CoarseSolverKind::None;
  Hierarchy hh = Hierarchy::geometric(tp.A, tp.shape, ho);
  ASSERT_EQ(hh.num_levels(), 3u);
  EXPECT_EQ(hh.coarse_solver(), nullptr);
  EXPECT_THROW(VCycle(Hierarchy::geometric(tp.A, tp.shape, ho), VCycleOptions{}), InvalidArgument);
  const Level& coarsest = hh.level(2);
  EXPECT_EQ(coarsest.rows(), 225u);
  krylov::Options co;
  co.rtol = 1e-12;
  co.max_iterations = 500;
  hh.set_coarse_solver(std::make_shared<const krylov::Cg<double>>(*coarsest.A, nullptr, co));
  auto h = std::make_shared<const Hierarchy>(std::move(hh));

  VCycleOptions vo;  // (2,2) opt4-Jacobi
  VCycle vc(h, vo);
  EXPECT_FALSE(vc.is_fixed());  // an inner CG is not a fixed map
  // The same cycle with the exact coarse solve, for comparison.
  auto hx = std::make_shared<const Hierarchy>(tp.A, tp.shape, 2, 3);
  VCycle vx(hx, vo);
  EXPECT_TRUE(vx.is_fixed());

  std::vector<double> x(tp.b.size(), 0.0), xr(tp.b.size(), 0.0);
  const auto r = vc.solve(tp.b.data(), x.data(), 1e-8, 100);
  const auto rr = vx.solve(tp.b.data(), xr.data(), 1e-8, 100);
  ASSERT_TRUE(r.converged);
  ASSERT_TRUE(rr.converged);
  EXPECT_LE(std::abs(r.iterations - rr.iterations), 1);

  // As a preconditioner: FGMRES; the plan refuses GMRES for it and takes FGMRES.
  MultigridOptions mo;
  mo.solver.method = SolverMethod::Gmres;
  EXPECT_THROW(MultigridPlan(h, mo), InvalidArgument);
  mo.solver.method = SolverMethod::Fgmres;
  mo.solver.krylov.rtol = 1e-8;
  MultigridPlan plan(h, mo);
  std::fill(x.begin(), x.end(), 0.0);
  const SolveResult s = plan.solve(tp.b.data(), x.data());
  ASSERT_TRUE(s.converged);
  EXPECT_LE(s.iterations, 12);
  EXPECT_LE(rel_residual(tp.A, x, tp.b), 1.0001e-8);
}

TEST(MultigridPlan, ThreadsAreLocal) {
  const int before = omp_get_max_threads();
  TestProblem tp = seed_problem_2d(192, 4.0);  // 36481 unknowns: above the parallel thresholds
  std::vector<std::vector<double>> xs;
  std::vector<int> its;
  for (int t : {1, 2}) {
    MultigridOptions mo;
    mo.threads = t;
    mo.solver.method = SolverMethod::Cg;
    mo.solver.krylov.rtol = 1e-8;
    MultigridPlan plan(tp.A, tp.shape, mo);
    EXPECT_EQ(omp_get_max_threads(), before);
    std::vector<double> x(tp.b.size(), 0.0);
    const SolveResult r = plan.solve(tp.b.data(), x.data());
    EXPECT_EQ(omp_get_max_threads(), before);
    ASSERT_TRUE(r.converged);
    EXPECT_EQ(plan.options().cycle.threads, t);
    EXPECT_EQ(plan.options().solver.krylov.threads, t);
    xs.push_back(x);
    its.push_back(r.iterations);
  }
  EXPECT_EQ(its[0], its[1]);
  EXPECT_LE(max_rel_diff(xs[1], xs[0]), 1e-10);
  MultigridOptions bad;
  bad.threads = -1;
  EXPECT_THROW(MultigridPlan(tp.A, tp.shape, bad), InvalidArgument);
}

TEST(MultigridPlan, EqualsTheHandAssembledPath) {
  TestProblem tp = seed_problem_2d(64, 2.0);
  struct Config {
    int pre, post, c;
    Polynomial kind;
    SolverMethod method;
  };
  for (const Config& cf : {Config{4, 0, 2, Polynomial::Cheby4Opt, SolverMethod::Gmres},
                           Config{2, 2, 2, Polynomial::Cheby4, SolverMethod::Cg},
                           Config{3, 1, 8, Polynomial::Cheby1Opt, SolverMethod::Fgmres},
                           Config{2, 2, 2, Polynomial::Cheby4Opt, SolverMethod::Stationary}}) {
    MultigridOptions mo;
    mo.hierarchy.coarsening = cf.c;
    mo.cycle.pre = cf.pre;
    mo.cycle.post = cf.post;
    mo.cycle.smoother.kind = cf.kind;
    mo.solver.method = cf.method;
    mo.solver.krylov.rtol = 1e-8;
    mo.solver.krylov.restart = 20;
    mo.solver.krylov.max_iterations = 200;
    MultigridPlan plan(tp.A, tp.shape, mo);
    std::vector<double> x(tp.b.size(), 0.0);
    const SolveResult r = plan.solve(tp.b.data(), x.data());
    ASSERT_TRUE(r.converged);

    // The hand-assembled path of the earlier CLI and Python bindings.
    auto h = std::make_shared<const Hierarchy>(tp.A, tp.shape, cf.c);
    VCycle vc(h, mo.cycle);
    CsrOperator op(tp.A);
    krylov::Options ko;
    ko.rtol = 1e-8;
    ko.restart = 20;
    ko.max_iterations = 200;
    std::vector<double> y(tp.b.size(), 0.0);
    krylov::Result ref;
    long matvecs = 0;
    if (cf.method == SolverMethod::Stationary) {
      ref = vc.solve(tp.b.data(), y.data(), ko.rtol, ko.max_iterations);
      matvecs = ref.operator_applications;
    } else {
      if (cf.method == SolverMethod::Gmres) ref = krylov::gmres<double>(op, tp.b.data(), y.data(), &vc, ko);
      if (cf.method == SolverMethod::Fgmres) ref = krylov::fgmres<double>(op, tp.b.data(), y.data(), &vc, ko);
      if (cf.method == SolverMethod::Cg) ref = krylov::cg<double>(op, tp.b.data(), y.data(), &vc, ko);
      matvecs = ref.operator_applications + ref.preconditioner_applications * vc.matvecs_per_cycle();
    }
    EXPECT_EQ(r.iterations, ref.iterations) << to_string(cf.method);
    EXPECT_EQ(r.matvecs, matvecs) << to_string(cf.method);
    EXPECT_EQ(r.converged, ref.converged);
    EXPECT_NEAR(r.final_relative_residual, ref.final_relative_residual, 1e-12);
    EXPECT_LE(max_rel_diff(x, y), 1e-12) << to_string(cf.method);
    // rho is the plan's final residual to the power 1 / iterations; against the hand path's it
    // may differ as the final residuals do (above: 1e-12): d rho = rho d r / (its r). The two paths
    // sum in different orders (fused plan kernels, the vector width of the machine), so they
    // agree to rounding, not bit for bit.
    EXPECT_NEAR(r.rho, std::pow(r.final_relative_residual, 1.0 / r.iterations), 1e-14);
    EXPECT_NEAR(r.rho, std::pow(ref.final_relative_residual, 1.0 / ref.iterations),
                r.rho * 1e-12 / (ref.final_relative_residual * ref.iterations) + 1e-14);
  }
}

TEST(MultigridPlan, DefaultsAndOptionChecks) {
  const MultigridOptions d{};
  EXPECT_EQ(d.hierarchy.coarsening, 2);
  EXPECT_EQ(d.cycle.pre, 2);
  EXPECT_EQ(d.cycle.post, 2);
  EXPECT_EQ(d.solver.method, SolverMethod::Gmres);
  EXPECT_EQ(d.solver.krylov.restart, 20);
  EXPECT_EQ(solver_method_from_string("pcg"), SolverMethod::Cg);
  EXPECT_EQ(solver_method_from_string("none"), SolverMethod::Stationary);
  EXPECT_THROW(solver_method_from_string("bicg"), InvalidArgument);
  TestProblem tp = seed_problem_2d(16, 1.0);
  MultigridOptions mo;
  mo.cycle.pre = 4;
  mo.cycle.post = 0;
  mo.solver.method = SolverMethod::Cg;  // not a symmetric cycle
  EXPECT_THROW(MultigridPlan(tp.A, tp.shape, mo), InvalidArgument);
  mo.solver.method = SolverMethod::Gmres;
  mo.solver.krylov.rtol = 2.0;
  EXPECT_THROW(MultigridPlan(tp.A, tp.shape, mo), InvalidArgument);
}

TEST(MultigridPlan, MatrixFreeLevelsGiveTheSameCycle) {
  // Levels whose operators are opaque (no CSR behind them): the Jacobi-Chebyshev smoothers run on
  // apply() + the diagonal, the residuals on apply(); the cycle equals the CSR one to rounding.
  TestProblem tp = seed_problem_2d(32, 1.0);
  auto hc = std::make_shared<const Hierarchy>(tp.A, tp.shape, 2);
  std::vector<Level> levels;
  std::vector<std::unique_ptr<OpaqueOperator>> keep;
  for (std::size_t j = 0; j < hc->num_levels(); ++j) {
    const Level& src = hc->level(j);
    Level l;
    l.A = std::make_shared<const OpaqueOperator>(*src.matrix);
    l.diagonal = src.diagonal;
    l.P = src.P;
    l.R = src.R;
    l.shape = src.shape;
    levels.push_back(std::move(l));
  }
  auto coarse = std::make_shared<const BandedCholesky>(*hc->level(hc->num_levels() - 1).matrix);
  auto hm = std::make_shared<const Hierarchy>(std::move(levels), coarse);
  EXPECT_EQ(hm->operator_complexity(), 0.0);  // no matrices to count
  VCycleOptions vo;
  vo.pre = 3;
  vo.post = 1;
  VCycle a(hc, vo), b(hm, vo);
  std::vector<double> xa(tp.b.size(), 0.0), xb(tp.b.size(), 0.0);
  for (int it = 0; it < 3; ++it) {
    a.cycle(tp.b.data(), xa.data());
    b.cycle(tp.b.data(), xb.data());
  }
  EXPECT_LE(max_rel_diff(xb, xa), 1e-12);
  // ASM needs the matrix.
  vo.smoother.base = BaseSmoother::ASM;
  EXPECT_THROW(VCycle(hm, vo), InvalidArgument);
  // Level validation.
  std::vector<Level> bad;
  bad.push_back(Level{});
  EXPECT_THROW(Hierarchy(std::move(bad), nullptr), InvalidArgument);
}

TEST(MultigridPlan, SmootherSolveEqualsTheHandAssembledPath) {
  TestProblem tp = seed_problem_2d(48, 3.0);
  SmootherSolveOptions so;
  so.smoother.kind = Polynomial::Cheby4;
  so.order = 3;
  so.solver.krylov.rtol = 1e-9;
  so.solver.krylov.max_iterations = 1000;
  std::vector<double> x(tp.b.size(), 0.0), y(tp.b.size(), 0.0);
  const SmootherSolveResult r = smoother_solve(tp.A, tp.b.data(), x.data(), so);
  ASSERT_TRUE(r.converged);
  Smoother S(tp.A, so.smoother);
  SmootherPreconditioner M(S, 3);
  CsrOperator op(tp.A);
  krylov::Options ko;
  ko.rtol = 1e-9;
  ko.max_iterations = 1000;
  const krylov::Result ref = krylov::cg<double>(op, tp.b.data(), y.data(), &M, ko);
  EXPECT_EQ(r.iterations, ref.iterations);
  EXPECT_EQ(r.matvecs, ref.operator_applications + 3 * ref.preconditioner_applications);
  EXPECT_EQ(r.lambda_max, S.lambda_max());
  EXPECT_LE(max_rel_diff(x, y), 1e-12);
  so.smoother.base = BaseSmoother::RAS;
  EXPECT_THROW(smoother_solve(tp.A, tp.b.data(), x.data(), so), InvalidArgument);
  so.smoother.base = BaseSmoother::Jacobi;
  so.order = 0;
  EXPECT_THROW(smoother_solve(tp.A, tp.b.data(), x.data(), so), InvalidArgument);
}
