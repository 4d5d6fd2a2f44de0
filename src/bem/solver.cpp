/// @file solver.cpp
/// Burton-Miller plan for the dense collocation BEM (see include/elliptica/bem/helmholtz.hpp for
/// the derivation of the systems from the exterior traces of Green's representation formula):
///   Neumann:   A = 1/2 I - K - alpha W,   b = u_inc + alpha du_inc/dn,   unknown u (total)
///   Dirichlet: A = 1/2 I + K' + beta S,   b = du_inc/dn + beta u_inc,    unknown q = du/dn (total)
///   with beta = 1/alpha; solved by GMRES(m) (krylov module); solve() is
///   solve_with_preconditioner (block_diagonal.hpp) without a preconditioner.
#include <chrono>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "elliptica/bem/block_diagonal.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "solve_common.hpp"
#include "validate.hpp"

namespace elliptica::bem {

IncidentField plane_wave(const Mesh& mesh, cplx k, std::array<double, 3> d) {
  detail::validate_k(k);
  detail::validate_mesh(mesh);
  const double nd = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  if (!(nd > 0) || !std::isfinite(nd)) throw InvalidArgument("bem: plane-wave direction must be finite and nonzero");
  for (double& c : d) c /= nd;
  IncidentField f;
  const std::size_t n = mesh.num_elements();
  f.u.resize(n);
  f.dudn.resize(n);
  const cplx ik = cplx(0, 1) * k;
  for (std::size_t e = 0; e < n; ++e) {
    const auto x = mesh.centroid(e);
    const auto nn = mesh.normal(e);
    f.u[e] = std::exp(ik * (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]));
    f.dudn[e] = ik * (d[0] * nn[0] + d[1] * nn[1] + d[2] * nn[2]) * f.u[e];
  }
  return f;
}

HelmholtzBemDense::HelmholtzBemDense(Mesh mesh, cplx k, HelmholtzOptions opt)
    : mesh_(std::move(mesh)), k_(k), opt_(std::move(opt)) {
  const auto t0 = std::chrono::steady_clock::now();
  detail::validate_k(k_);
  detail::validate_mesh(mesh_);
  detail::validate_quadrature(opt_.quadrature);
  if (!(opt_.gmres_rtol > 0 && opt_.gmres_rtol < 1)) throw InvalidArgument("bem: gmres_rtol must be in (0, 1)");
  if (opt_.gmres_restart < 1) throw InvalidArgument("bem: gmres_restart must be >= 1");
  if (opt_.gmres_max_iterations < 1) throw InvalidArgument("bem: gmres_max_iterations must be >= 1");
  alpha_ = opt_.alpha ? *opt_.alpha : cplx(0, 1) / k_;
  if (!std::isfinite(alpha_.real()) || !std::isfinite(alpha_.imag()) || alpha_ == cplx(0, 0))
    throw InvalidArgument("bem: Burton-Miller alpha must be finite and nonzero");
  const std::size_t n = mesh_.num_elements();
  if (opt_.bc == BoundaryCondition::Neumann) {
    DenseOperators ops = assemble_dense(mesh_, k_, kDoubleLayer | kHypersingular, opt_.quadrature);
    A_ = std::move(ops.K);
    for (std::size_t p = 0; p < A_.data.size(); ++p) A_.data[p] = -A_.data[p] - alpha_ * ops.W.data[p];
  } else {
    DenseOperators ops = assemble_dense(mesh_, k_, kSingleLayer | kAdjointDoubleLayer, opt_.quadrature);
    const cplx beta = 1.0 / alpha_;
    A_ = std::move(ops.Kp);
    for (std::size_t p = 0; p < A_.data.size(); ++p) A_.data[p] += beta * ops.S.data[p];
  }
  for (std::size_t i = 0; i < n; ++i) A_(i, i) += 0.5;
  assembly_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace detail {

std::vector<cplx> burton_miller_rhs(BoundaryCondition bc, cplx alpha, const IncidentField& inc, std::size_t n) {
  if (inc.u.size() != n || inc.dudn.size() != n)
    throw InvalidArgument("bem: incident field has " + std::to_string(inc.u.size()) + "/" +
                          std::to_string(inc.dudn.size()) + " values, mesh has " + std::to_string(n) + " elements");
  std::vector<cplx> b(n);
  if (bc == BoundaryCondition::Neumann) {
    for (std::size_t i = 0; i < n; ++i) b[i] = inc.u[i] + alpha * inc.dudn[i];
  } else {
    const cplx beta = 1.0 / alpha;
    for (std::size_t i = 0; i < n; ++i) b[i] = inc.dudn[i] + beta * inc.u[i];
  }
  for (const auto& v : b)
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) throw InvalidArgument("bem: incident field is not finite");
  return b;
}

SurfaceSolution gmres_surface_solve(const krylov::LinearOperator<cplx>& A, const std::vector<cplx>& b,
                                    const krylov::Preconditioner<cplx>* M, BoundaryCondition bc, cplx k,
                                    const GmresSettings& g, const std::function<void(int, double)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = b.size();
  if (A.size() != n)
    throw InvalidArgument("bem: operator size " + std::to_string(A.size()) + " != system size " + std::to_string(n));
  if (M && M->size() != n)
    throw InvalidArgument("bem: preconditioner size " + std::to_string(M->size()) + " != system size " +
                          std::to_string(n));
  std::vector<cplx> x(n, cplx{});
  krylov::Options ko;
  ko.rtol = g.rtol;
  ko.restart = g.restart;
  ko.max_iterations = g.max_iterations;
  ko.progress = progress;
  const krylov::Result r = krylov::gmres<cplx>(A, b.data(), x.data(), M, ko);
  SurfaceSolution s;
  s.bc = bc;
  s.k = k;
  s.converged = r.converged;
  s.iterations = r.iterations;
  s.residual_history = r.residual_history;
  s.final_relative_residual = r.final_relative_residual;
  if (bc == BoundaryCondition::Neumann) {
    s.u = std::move(x);
    s.dudn.assign(n, cplx{});
  } else {
    s.dudn = std::move(x);
    s.u.assign(n, cplx{});
  }
  s.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.converged && g.throw_if_not_converged) {
    std::ostringstream os;
    os << "bem: GMRES" << g.what << " did not reach rtol " << g.rtol << " in " << r.iterations
       << " iterations (relative residual " << r.final_relative_residual << ")";
    throw NotConverged(os.str());
  }
  return s;
}

}  // namespace detail

std::vector<cplx> HelmholtzBemDense::rhs(const IncidentField& inc) const {
  return detail::burton_miller_rhs(opt_.bc, alpha_, inc, mesh_.num_elements());
}

SurfaceSolution HelmholtzBemDense::solve(const IncidentField& inc) const {
  return solve_with_preconditioner(*this, inc, nullptr);
}

SurfaceSolution solve_with_preconditioner(const HelmholtzBemDense& plan, const IncidentField& inc,
                                          const krylov::Preconditioner<cplx>* M,
                                          const std::function<void(int, double)>& progress) {
  const HelmholtzOptions& opt = plan.options();
  const DenseMatrixOperator A(plan.matrix());
  detail::GmresSettings g;
  g.rtol = opt.gmres_rtol;
  g.restart = opt.gmres_restart;
  g.max_iterations = opt.gmres_max_iterations;
  g.throw_if_not_converged = opt.throw_if_not_converged;
  g.what = M ? " (preconditioned)" : "";
  return detail::gmres_surface_solve(A, plan.rhs(inc), M, opt.bc, plan.k(), g, progress);
}

}  // namespace elliptica::bem
