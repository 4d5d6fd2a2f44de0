#pragma once
/// @file solve_common.hpp
/// Internal pieces shared by the dense plan (solver.cpp) and HelmholtzBem (plan.cpp): the
/// Burton-Miller right-hand side and the GMRES solve that fills a SurfaceSolution
/// (implemented in solver.cpp).
#include <functional>
#include <string>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem::detail {

/// b = u_inc + alpha du_inc/dn (Neumann) or du_inc/dn + u_inc / alpha (Dirichlet); InvalidArgument
/// when the incident data do not have n values each or are not finite.
std::vector<cplx> burton_miller_rhs(BoundaryCondition bc, cplx alpha, const IncidentField& inc, std::size_t n);

struct GmresSettings {
  double rtol = 1e-5;
  int restart = 50;
  int max_iterations = 1000;
  bool throw_if_not_converged = true;
  std::string what;  ///< inserted into the NotConverged message, e.g. " (preconditioned)"
};

/// GMRES from zero on A x = b, right-preconditioned by M (may be nullptr); the solution goes to u
/// (Neumann) or dudn (Dirichlet), the other is zero; solve_seconds = this call's wall time. Throws
/// NotConverged (if asked) naming rtol, iterations and the final residual.
SurfaceSolution gmres_surface_solve(const krylov::LinearOperator<cplx>& A, const std::vector<cplx>& b,
                                    const krylov::Preconditioner<cplx>* M, BoundaryCondition bc, cplx k,
                                    const GmresSettings& g, const std::function<void(int, double)>& progress);

}  // namespace elliptica::bem::detail
