#pragma once
/// @file solve_common.hpp
/// Internal pieces shared by the dense plan (solver.cpp) and HelmholtzBem (plan.cpp): the
/// Burton-Miller right-hand side and the GMRES solve that fills a SurfaceSolution
/// (implemented in solver.cpp).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/core/operator.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem::detail {

/// b = u_inc + alpha du_inc/dn (Neumann) or du_inc/dn + u_inc / alpha (Dirichlet); InvalidArgument
/// when the incident data do not have n values each or are not finite.
std::vector<cplx> burton_miller_rhs(BoundaryCondition bc, cplx alpha, const IncidentField& inc, std::size_t n);

/// GMRES on A x = b, right-preconditioned by M (may be nullptr), with the krylov options g
/// (rtol, restart, max_iterations, threads, progress); the solution goes to u (Neumann) or dudn
/// (Dirichlet), the other is zero; solve_seconds = this call's wall time. With a1 = A 1
/// (non-null, sound-hard), GMRES runs from zero on A w = b - c a1, c = a1^H b / a1^H a1, and
/// x = c + w (helmholtz.hpp, "Low frequency" (2)); otherwise from zero on A x = b. Throws
/// NotConverged (if throw_if_not_converged) naming `what` (e.g. " (preconditioned)"), rtol,
/// iterations and the final residual.
SurfaceSolution gmres_surface_solve(const LinearOperator<cplx>& A, const std::vector<cplx>& b,
                                    const LinearOperator<cplx>* M, BoundaryCondition bc, cplx k,
                                    const krylov::Options& g, bool throw_if_not_converged, const std::string& what,
                                    const std::vector<cplx>* a1 = nullptr);

/// InvalidArgument unless g.rtol is in [kMinGmresRtol, 1), g.restart >= 1 and
/// g.max_iterations >= 1 (messages name the value and, for the floor, why).
void validate_gmres_options(const krylov::Options& g);

/// |k| body_size(mesh), and the InvalidArgument of the sound-hard floor kMinSoundHardKD
/// (helmholtz.hpp, "Low frequency" (3)) when bc is Neumann. Returns |k| D.
double validate_low_frequency(BoundaryCondition bc, const Mesh& mesh, cplx k);

/// options alpha if set (finite and nonzero, else InvalidArgument), default_alpha otherwise.
cplx coupling(const std::optional<cplx>& alpha, const Mesh& mesh, cplx k);

/// True when the sound-hard static correction applies (bc Neumann and kd < kStaticCorrectionKD).
inline bool static_correction_applies(BoundaryCondition bc, double kd) {
  return bc == BoundaryCondition::Neumann && kd < kStaticCorrectionKD;
}

/// The dense Burton-Miller system matrix (file comment of helmholtz.hpp) and, sound-hard, its
/// image of the constant (with the static correction below kStaticCorrectionKD; kd = |k| D).
struct DenseSystem {
  CMatrix A;
  std::vector<cplx> ones_image;  ///< sound-hard: A 1; empty for sound-soft
};
DenseSystem assemble_dense_system(const Mesh& mesh, cplx k, BoundaryCondition bc, cplx alpha,
                                  const QuadratureOptions& q, double kd, int threads,
                                  const std::vector<MirrorImage>* images = nullptr);

/// The static image of the constant 1 under the sound-hard system matrix, per element:
/// 1 + (number of other connected components whose closed surface encloses the element), from
/// K_0 1 = -1/2 on the own surface, D_0 1 = -1 inside and 0 outside another closed surface, W_0 1 = 0.
std::vector<double> static_ones_image(const Mesh& mesh);

}  // namespace elliptica::bem::detail
