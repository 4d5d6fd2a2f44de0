// dealii_sem_peer solve: CG + deal.II's matrix-free geometric multigrid on a Kershaw mesh (main.cc).
#include <deal.II/base/function.h>
#include <deal.II/base/index_set.h>
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
#include <deal.II/multigrid/mg_constrained_dofs.h>
#include <deal.II/multigrid/mg_matrix.h>
#include <deal.II/multigrid/mg_smoother.h>
#include <deal.II/multigrid/mg_tools.h>
#include <deal.II/multigrid/mg_transfer_matrix_free.h>
#include <deal.II/multigrid/multigrid.h>
#include <deal.II/numerics/vector_tools.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "peer.h"

namespace peer {
namespace {

using namespace dealii;
using Vec = LinearAlgebra::distributed::Vector<double>;

class SinSinSin : public Function<3> {
 public:
  double value(const Point<3>& x, unsigned int = 0) const override {
    return std::sin(M_PI * x[0]) * std::sin(M_PI * x[1]) * std::sin(M_PI * x[2]);
  }
};

template <int p>
int run(const Args& a) {
  using Op = MatrixFreeOperators::LaplaceOperator<3, p, p + 1, 1, Vec>;
  using Smoother = PreconditionChebyshev<Op, Vec>;  // Chebyshev over the inverse diagonal
  const int coarse_n = a.integer("coarse", 6), refinements = a.integer("refinements", 1);
  const int threads = a.integer("threads", 1), degree = a.integer("degree", 5), maxit = a.integer("max-iterations", 500);
  const double eps = a.num("eps", 0.3), rtol = a.num("rtol", 1e-8), range = a.num("smoothing-range", 15.0);
  if (coarse_n < 1 || refinements < 0 || degree < 1 || maxit < 1) throw std::invalid_argument("bad --coarse/--refinements/--degree/--max-iterations");
  if (!(eps > 0 && eps <= 1)) throw std::invalid_argument("--eps must be in (0, 1]");
  if (!(rtol > 0 && rtol < 1)) throw std::invalid_argument("--rtol must be in (0, 1)");

  // The Kershaw map is trilinear on each cell of a 6^3 grid: global refinement (flat manifold,
  // new vertices at the trilinear map's midpoints) reproduces it exactly on every level.
  Triangulation<3> tria(Triangulation<3>::limit_level_difference_at_vertices);
  make_mesh(tria, coarse_n, eps);
  tria.refine_global(unsigned(refinements));
  const int n = coarse_n << refinements;

  const double t0 = now_s();
  const FE_Q<3> fe(p);  // GLL support points
  const MappingQ1<3> mapping;
  DoFHandler<3> dof(tria);
  dof.distribute_dofs(fe);
  dof.distribute_mg_dofs();
  AffineConstraints<double> cons;
  VectorTools::interpolate_boundary_values(mapping, dof, 0, Functions::ZeroFunction<3>(), cons);
  cons.close();
  using AD = typename MatrixFree<3, double>::AdditionalData;
  AD ad;
  ad.tasks_parallel_scheme = AD::partition_partition;
  ad.mapping_update_flags = update_gradients | update_JxW_values | update_quadrature_points;
  auto mf = std::make_shared<MatrixFree<3, double>>();
  mf->reinit(mapping, dof, cons, QGauss<1>(p + 1), ad);
  Op A;
  A.initialize(mf);

  const unsigned int nlev = tria.n_global_levels();
  MGConstrainedDoFs mgc;
  mgc.initialize(dof);
  mgc.make_zero_boundary_constraints(dof, {types::boundary_id(0)});
  MGLevelObject<Op> ops(0, nlev - 1);
  for (unsigned int l = 0; l < nlev; ++l) {
    IndexSet relevant;
    DoFTools::extract_locally_relevant_level_dofs(dof, l, relevant);
    AffineConstraints<double> lc;
    lc.reinit(relevant);
    lc.add_lines(mgc.get_boundary_indices(l));
    lc.close();
    AD lad;
    lad.tasks_parallel_scheme = AD::partition_partition;
    lad.mapping_update_flags = update_gradients | update_JxW_values;
    lad.mg_level = l;
    auto lmf = std::make_shared<MatrixFree<3, double>>();
    lmf->reinit(mapping, dof, lc, QGauss<1>(p + 1), lad);
    ops[l].initialize(lmf, mgc, l);
    ops[l].compute_diagonal();
  }
  MGTransferMatrixFree<3, double> transfer(mgc);
  transfer.build(dof);
  MGLevelObject<typename Smoother::AdditionalData> sd(0, nlev - 1);
  for (unsigned int l = 0; l < nlev; ++l) {
    if (l > 0) {
      sd[l].smoothing_range = range;
      sd[l].degree = unsigned(degree);
      sd[l].eig_cg_n_iterations = 10;
    } else {  // coarse solve: Chebyshev to a 1e-3 reduction (degree chosen from the estimate)
      sd[0].smoothing_range = 1e-3;
      sd[0].degree = numbers::invalid_unsigned_int;
      sd[0].eig_cg_n_iterations = unsigned(ops[0].m());
    }
    sd[l].preconditioner = ops[l].get_matrix_diagonal_inverse();
  }
  MGSmootherPrecondition<Op, Smoother, Vec> smoother;
  smoother.initialize(ops, sd);
  MGCoarseGridApplySmoother<Vec> coarse;
  coarse.initialize(smoother);
  mg::Matrix<Vec> mgm(ops);
  Multigrid<Vec> mg(mgm, coarse, transfer, smoother, smoother);
  PreconditionMG<3, Vec, MGTransferMatrixFree<3, double>> pre(dof, mg, transfer);

  Vec x, b, r;
  mf->initialize_dof_vector(x);
  mf->initialize_dof_vector(b);
  mf->initialize_dof_vector(r);
  {  // b = int f phi, f = 3 pi^2 sin sin sin (Gauss quadrature)
    FEEvaluation<3, p, p + 1, 1, double> phi(*mf);
    for (unsigned int c = 0; c < mf->n_cell_batches(); ++c) {
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
  pre.vmult(r, b);  // the Chebyshev eigenvalue estimates (lazy in deal.II) belong to the set-up
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
  mf->initialize_dof_vector(u);
  VectorTools::interpolate(mapping, dof, SinSinSin(), u);
  u -= x;
  std::printf(
      "{\"mode\": \"solve\", \"mesh\": \"kershaw\", \"p\": %d, \"n\": %d, \"eps\": %g, \"dofs\": %.0f, "
      "\"threads\": %d, \"tbb_threads\": %u, \"levels\": %u, \"chebyshev_degree\": %d, \"setup_s\": %.6e, "
      "\"solve_s\": %.6e, \"iterations\": %u, \"relres\": %.3e, \"converged\": %s, \"err_max\": %.3e}\n",
      p, n, eps, double(dof.n_dofs() - cons.n_constraints()), threads, MultithreadInfo::n_threads(), nlev, degree,
      setup_s, solve_s, its, relres, converged ? "true" : "false", u.linfty_norm());
  return converged ? 0 : 5;
}

}  // namespace

int run_solve(const Args& a) {
  switch (a.integer("p", 7)) {
    case 3: return run<3>(a);
    case 7: return run<7>(a);
    default: throw std::invalid_argument("solve: --p must be 3 or 7 (the orders compiled)");
  }
}

}  // namespace peer
