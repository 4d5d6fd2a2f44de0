// dealii_sem_peer solve --mg p: CG + deal.II's matrix-free p-multigrid (MGTransferGlobalCoarsening,
// deal.II >= 9.3) on the Kershaw mesh: levels p, p - 2, ..., 1 on the same mesh (as elliptica's
// default schedule), Chebyshev over the inverse diagonal on each level, Chebyshev coarse solve on
// p = 1. Same problem, JSON fields and exit codes as the geometric solve (solve.cc).
#include <deal.II/base/function.h>
#include <deal.II/base/subscriptor.h>
#include <deal.II/base/multithread_info.h>
#include <deal.II/base/quadrature_lib.h>
#include <deal.II/dofs/dof_handler.h>
#include <deal.II/dofs/dof_tools.h>
#include <deal.II/fe/fe_q.h>
#include <deal.II/fe/mapping_q1.h>
#include <deal.II/grid/tria.h>
#include <deal.II/lac/affine_constraints.h>
#include <deal.II/lac/la_parallel_vector.h>
#include <deal.II/lac/precondition.h>
#include <deal.II/lac/solver_cg.h>
#include <deal.II/lac/solver_control.h>
#include <deal.II/matrix_free/fe_evaluation.h>
#include <deal.II/matrix_free/matrix_free.h>
#include <deal.II/matrix_free/operators.h>
#include <deal.II/multigrid/mg_coarse.h>
#include <deal.II/multigrid/mg_matrix.h>
#include <deal.II/multigrid/mg_smoother.h>
#include <deal.II/multigrid/mg_transfer_global_coarsening.h>
#include <deal.II/multigrid/multigrid.h>
#include <deal.II/numerics/vector_tools.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer.h"

namespace peer {
namespace {

using namespace dealii;
using Vec = LinearAlgebra::distributed::Vector<double>;
using BaseOp = MatrixFreeOperators::Base<3, Vec>;

/// A level operator of any order (the levels' LaplaceOperator<3, q> differ in type): forwards to
/// MatrixFreeOperators::Base's virtual interface.
struct LevelOp : public Subscriptor {
  using value_type = double;
  using size_type = types::global_dof_index;
  std::shared_ptr<BaseOp> op;
  void vmult(Vec& d, const Vec& s) const { op->vmult(d, s); }
  void Tvmult(Vec& d, const Vec& s) const { op->Tvmult(d, s); }
  void vmult_add(Vec& d, const Vec& s) const { op->vmult_add(d, s); }
  void Tvmult_add(Vec& d, const Vec& s) const { op->Tvmult_add(d, s); }
  size_type m() const { return op->m(); }
  size_type n() const { return op->n(); }
  double el(size_type i, size_type j) const { return op->el(i, j); }
  void initialize_dof_vector(Vec& v) const { op->initialize_dof_vector(v); }
};

template <int q>
std::shared_ptr<BaseOp> make_op(std::shared_ptr<const MatrixFree<3, double>> mf) {
  auto op = std::make_shared<MatrixFreeOperators::LaplaceOperator<3, q, q + 1, 1, Vec>>();
  op->initialize(mf);
  op->compute_diagonal();
  return op;
}

std::shared_ptr<BaseOp> make_op(int q, std::shared_ptr<const MatrixFree<3, double>> mf) {
  switch (q) {
    case 1: return make_op<1>(mf);
    case 3: return make_op<3>(mf);
    case 5: return make_op<5>(mf);
    case 7: return make_op<7>(mf);
    default: throw std::invalid_argument("solve --mg p: level order " + std::to_string(q) + " not compiled (1, 3, 5, 7)");
  }
}

template <int p>
void rhs(const MatrixFree<3, double>& mf, Vec& b) {
  FEEvaluation<3, p, p + 1, 1, double> phi(mf);
  for (unsigned int c = 0; c < mf.n_cell_batches(); ++c) {
    phi.reinit(c);
    for (unsigned int q = 0; q < phi.n_q_points; ++q) {
      const Point<3, VectorizedArray<double>> xq = phi.quadrature_point(q);
      VectorizedArray<double> f;
      for (unsigned int v = 0; v < VectorizedArray<double>::size(); ++v)
        f[v] = 3.0 * M_PI * M_PI * std::sin(M_PI * xq[0][v]) * std::sin(M_PI * xq[1][v]) * std::sin(M_PI * xq[2][v]);
      phi.submit_value(f, q);
    }
    phi.integrate_scatter(EvaluationFlags::values, b);
  }
  b.compress(VectorOperation::add);
}

class SinSinSin : public Function<3> {
 public:
  double value(const Point<3>& x, unsigned int = 0) const override {
    return std::sin(M_PI * x[0]) * std::sin(M_PI * x[1]) * std::sin(M_PI * x[2]);
  }
};

}  // namespace

int run_solve_pmg(const Args& a) {
  const int p = a.integer("p", 7);
  if (p != 3 && p != 7) throw std::invalid_argument("solve --mg p: --p must be 3 or 7 (the orders compiled)");
  const int coarse_n = a.integer("coarse", 6), refinements = a.integer("refinements", 1);
  const int threads = a.integer("threads", 1), degree = a.integer("degree", 5), maxit = a.integer("max-iterations", 500);
  const double eps = a.num("eps", 0.3), rtol = a.num("rtol", 1e-8), range = a.num("smoothing-range", 15.0);
  if (coarse_n < 1 || refinements < 0 || degree < 1 || maxit < 1) throw std::invalid_argument("bad --coarse/--refinements/--degree/--max-iterations");
  if (!(eps > 0 && eps <= 1)) throw std::invalid_argument("--eps must be in (0, 1]");
  if (!(rtol > 0 && rtol < 1)) throw std::invalid_argument("--rtol must be in (0, 1)");
  Triangulation<3> tria;
  make_mesh(tria, coarse_n, eps);
  tria.refine_global(unsigned(refinements));
  const int n = coarse_n << refinements;

  const double t0 = now_s();
  std::vector<int> orders;  // coarsest first: 1, 3, ..., p
  for (int q = p; q > 1; q -= 2) orders.insert(orders.begin(), q);
  orders.insert(orders.begin(), 1);
  const unsigned int nl = unsigned(orders.size());
  const MappingQ1<3> mapping;
  MGLevelObject<DoFHandler<3>> dofs(0, nl - 1);
  MGLevelObject<AffineConstraints<double>> cons(0, nl - 1);
  MGLevelObject<std::shared_ptr<MatrixFree<3, double>>> mfs(0, nl - 1);
  MGLevelObject<LevelOp> ops(0, nl - 1);
  using AD = typename MatrixFree<3, double>::AdditionalData;
  for (unsigned int l = 0; l < nl; ++l) {
    dofs[l].reinit(tria);
    dofs[l].distribute_dofs(FE_Q<3>(unsigned(orders[l])));
    VectorTools::interpolate_boundary_values(mapping, dofs[l], 0, Functions::ZeroFunction<3>(), cons[l]);
    cons[l].close();
    AD ad;
    ad.tasks_parallel_scheme = AD::partition_partition;
    ad.mapping_update_flags = update_gradients | update_JxW_values | update_quadrature_points;
    mfs[l] = std::make_shared<MatrixFree<3, double>>();
    mfs[l]->reinit(mapping, dofs[l], cons[l], QGauss<1>(unsigned(orders[l]) + 1), ad);
    ops[l].op = make_op(orders[l], mfs[l]);
  }
  MGLevelObject<MGTwoLevelTransfer<3, Vec>> two(0, nl - 1);
  for (unsigned int l = 1; l < nl; ++l) two[l].reinit_polynomial_transfer(dofs[l], dofs[l - 1], cons[l], cons[l - 1]);
  MGTransferGlobalCoarsening<3, Vec> transfer(two, [&](const unsigned int l, Vec& v) { ops[l].initialize_dof_vector(v); });

  using Smoother = PreconditionChebyshev<LevelOp, Vec>;
  MGLevelObject<typename Smoother::AdditionalData> sd(0, nl - 1);
  for (unsigned int l = 0; l < nl; ++l) {
    if (l > 0) {
      sd[l].smoothing_range = range;
      sd[l].degree = unsigned(degree);
      sd[l].eig_cg_n_iterations = 10;
    } else {
      sd[0].smoothing_range = 1e-3;
      sd[0].degree = numbers::invalid_unsigned_int;
      sd[0].eig_cg_n_iterations = unsigned(ops[0].m());
    }
    sd[l].preconditioner = ops[l].op->get_matrix_diagonal_inverse();
  }
  MGSmootherPrecondition<LevelOp, Smoother, Vec> smoother;
  smoother.initialize(ops, sd);
  MGCoarseGridApplySmoother<Vec> coarse;
  coarse.initialize(smoother);
  mg::Matrix<Vec> mgm(ops);
  Multigrid<Vec> mg(mgm, coarse, transfer, smoother, smoother);
  PreconditionMG<3, Vec, MGTransferGlobalCoarsening<3, Vec>> pre(dofs[nl - 1], mg, transfer);

  const LevelOp& A = ops[nl - 1];
  Vec x, b, r;
  A.initialize_dof_vector(x);
  A.initialize_dof_vector(b);
  A.initialize_dof_vector(r);
  if (p == 3)
    rhs<3>(*mfs[nl - 1], b);
  else
    rhs<7>(*mfs[nl - 1], b);
  pre.vmult(r, b);  // lazy Chebyshev eigenvalue estimates: set-up
  const double setup_s = now_s() - t0;

  double solve_s = 1e300;
  unsigned int its = 0;
  bool converged = true;
  for (int rep = 0; rep < a.integer("repeats", 2); ++rep) {
    x = 0.0;
    SolverControl control(unsigned(maxit), rtol * b.l2_norm(), false, false);
    SolverCG<Vec> cg(control);
    const double t1 = now_s();
    try {
      cg.solve(A, x, b, pre);
    } catch (const SolverControl::NoConvergence&) {
      converged = false;
    }
    solve_s = std::min(solve_s, now_s() - t1);
    its = control.last_step();
  }
  A.vmult(r, x);
  r.sadd(-1.0, 1.0, b);
  const double relres = r.l2_norm() / b.l2_norm();
  Vec u;
  A.initialize_dof_vector(u);
  VectorTools::interpolate(mapping, dofs[nl - 1], SinSinSin(), u);
  u -= x;
  std::string sched;
  for (unsigned int l = nl; l-- > 0;) sched += std::to_string(orders[l]) + (l ? "," : "");
  const double free = double(dofs[nl - 1].n_dofs() - cons[nl - 1].n_constraints());
  std::printf(
      "{\"mode\": \"solve\", \"mg\": \"p\", \"mesh\": \"kershaw\", \"p\": %d, \"n\": %d, \"eps\": %g, \"dofs\": %.0f, "
      "\"threads\": %d, \"tbb_threads\": %u, \"levels\": %u, \"schedule\": \"%s\", \"chebyshev_degree\": %d, "
      "\"setup_s\": %.6e, \"solve_s\": %.6e, \"iterations\": %u, \"relres\": %.3e, \"converged\": %s, "
      "\"err_max\": %.3e}\n",
      p, n, eps, free, threads, MultithreadInfo::n_threads(), nl, sched.c_str(), degree, setup_s, solve_s, its, relres,
      converged ? "true" : "false", u.linfty_norm());
  return converged ? 0 : 5;
}

}  // namespace peer
