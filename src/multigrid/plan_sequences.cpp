/// @file plan_sequences.cpp
/// MultigridPlan for sequences of solves (time stepping): several right-hand sides in one call,
/// Fischer's projection onto previous solutions as the initial guess, numeric re-setup for new
/// values on the same pattern (plan.hpp, numeric_setup.hpp, krylov/projection.hpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/numeric_setup.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "plan_detail.hpp"

namespace elliptica::multigrid {

std::vector<SolveResult> MultigridPlan::solve(const double* B, double* X, std::size_t k) const {
  return solve(B, X, k, opt_.solver);
}

std::vector<SolveResult> MultigridPlan::solve(const double* B, double* X, std::size_t k,
                                              const OuterSolverOptions& solver) const {
  if (!B || !X) throw InvalidArgument("MultigridPlan::solve: null block of right-hand sides");
  if (k == 0) throw InvalidArgument("MultigridPlan::solve: no right-hand sides (k = 0)");
  check_solver(solver);
  const std::size_t n = size();
  std::vector<SolveResult> out;
  out.reserve(k);
  for (std::size_t c = 0; c < k; ++c) out.push_back(solve(B + c * n, X + c * n, solver));
  return out;
}

ProjectedSolveResult MultigridPlan::solve(const double* b, double* x, krylov::SolutionProjection& proj) const {
  return solve(b, x, proj, opt_.solver);
}

ProjectedSolveResult MultigridPlan::solve(const double* b, double* x, krylov::SolutionProjection& proj,
                                          const OuterSolverOptions& solver) const {
  if (!b || !x) throw InvalidArgument("MultigridPlan::solve: null vector");
  const std::size_t n = size();
  if (proj.size() != n)
    throw InvalidArgument("MultigridPlan::solve: the projection has " + std::to_string(proj.size()) +
                          " unknowns, the plan " + std::to_string(n));
  check_solver(solver);
  if (const double s = detail::rhs_scale(b, n); s > 0.0) {  // see MultigridPlan::solve
    OuterSolverOptions scaled = solver;
    scaled.krylov.atol = solver.krylov.atol / s;
    return detail::solve_scaled(b, x, n, s, [&](const double* bs, double* xs) { return solve(bs, xs, proj, scaled); });
  }
  std::vector<double> bp;
  if (opt_.constant_null_space) b = detail::consistent_rhs(b, n, bp);  // so that ||b|| is that of what is solved
  SolveResult inner_result;
  const auto inner = [&](const double* r, double* dx, double b_norm) -> krylov::Result {
    OuterSolverOptions s = solver;
    s.krylov.atol = std::max(s.krylov.atol, s.krylov.rtol * b_norm);
    inner_result = solve(r, dx, s);
    return inner_result;
  };
  const krylov::ProjectedResult pr = proj.solve(op(), b, x, inner);
  ProjectedSolveResult out;
  static_cast<SolveResult&>(out) = inner_result;
  const double scale = pr.projected_residual;  // ||r0|| / ||b||
  for (double& h : out.residual_history) h *= scale;
  out.final_relative_residual = pr.final_residual;
  out.operator_applications += 1;  // w = A dx
  out.matvecs += 1;
  out.projected_residual = pr.projected_residual;
  out.basis_before = pr.basis_before;
  out.basis_after = pr.basis_after;
  out.restarted = pr.restarted;
  return out;
}

void MultigridPlan::update_values(const CsrMatrix& A_new, const UpdateOptions& how) {
  if (hypre_cycle_)
    throw InvalidArgument(
        "MultigridPlan::update_values: the plan runs hypre's own cycle, whose levels live in hypre and cannot be "
        "refreshed in place; build a new plan (or use our cycle over BoomerAMG's levels)");
  std::shared_ptr<const Hierarchy> h;
  const bool resmooth = sa_pattern_ && !how.keep_prolongators;
  if (resmooth)
    h = std::make_shared<const Hierarchy>(multigrid::update_values(*h_, *sa_pattern_, A_new, opt_.amg));
  else
    h = std::make_shared<const Hierarchy>(multigrid::update_values(*h_, A_new, opt_.threads));
  auto cycle = std::make_unique<VCycle>(h, opt_.cycle);
  // nothing above changed the plan; from here nothing throws
  h_ = std::move(h);
  cycle_ = std::move(cycle);
  precond_ = cycle_.get();
  // smoothed aggregation's update (with P recomputed) refused an unsymmetric A_new already;
  // otherwise PCG checks anew
  if (resmooth)
    symmetry_ = SymmetryReport{};
  else
    symmetry_.reset();
  ++updates_;
}

}  // namespace elliptica::multigrid
