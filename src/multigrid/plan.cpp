/// @file plan.cpp
/// MultigridPlan: hierarchy + V-cycle + outer iteration, the one multigrid solve path.
#include "elliptica/multigrid/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "plan_detail.hpp"

namespace elliptica::multigrid {

SolverMethod solver_method_from_string(const std::string& s) {
  if (s == "none" || s == "stationary") return SolverMethod::Stationary;
  if (s == "cg" || s == "pcg") return SolverMethod::Cg;
  if (s == "gmres") return SolverMethod::Gmres;
  if (s == "fgmres") return SolverMethod::Fgmres;
  throw InvalidArgument("unknown multigrid solver '" + s + "' (expected none, pcg, gmres or fgmres)");
}

std::string to_string(SolverMethod m) {
  switch (m) {
    case SolverMethod::Stationary: return "none";
    case SolverMethod::Cg: return "pcg";
    case SolverMethod::Gmres: return "gmres";
    case SolverMethod::Fgmres: return "fgmres";
  }
  return "?";
}

CoarseSolver coarse_solver_from_string(const std::string& s, const std::string& what) {
  if (s == "direct") return CoarseSolver::Direct;
  if (s == "boomeramg") return CoarseSolver::BoomerAmg;
  throw InvalidArgument(what + ": unknown coarse solver '" + s + "' (expected direct or boomeramg)");
}

std::string to_string(CoarseSolver c) { return c == CoarseSolver::Direct ? "direct" : "boomeramg"; }

namespace {
void check_threads(int threads) {
  if (threads < 0) throw InvalidArgument("MultigridPlan: threads must be >= 0, got " + std::to_string(threads));
}

/// The BoomerAMG coarse solver on the hierarchy's coarsest level (its matrix).
void set_boomeramg_coarse_solver(Hierarchy& h, const MultigridOptions& opt) {
  if (opt.constant_null_space)
    throw InvalidArgument(
        "MultigridPlan: the BoomerAMG coarse solver cannot treat the constant null space (hypre's coarsest Gaussian "
        "elimination of a singular matrix); use the direct coarse solver");
  const CsrMatrix* Ac = h.level(h.num_levels() - 1).matrix.get();
  if (Ac == nullptr) throw InvalidArgument("MultigridPlan: the BoomerAMG coarse solver needs the coarsest level's matrix");
  h.set_coarse_solver(std::make_shared<const BoomerAmgPreconditioner>(*Ac, opt.boomeramg));
}
}  // namespace

krylov::Options default_krylov_options() {
  krylov::Options o;
  o.rtol = 1e-6;
  o.max_iterations = 500;
  o.restart = 20;
  return o;
}

namespace {
/// The stationary iteration x <- x + M (b - A x) of a preconditioner M (hypre's cycle) with the
/// stopping rule and the statistics of VCycle::solve: iterations = applications of M,
/// residual_history relative (entry 0 is 1), operator_applications = residuals (one per
/// iteration plus the initial one). NumericalError when the residual becomes non-finite.
krylov::Result stationary_solve(const LinearOperator<double>& A, const LinearOperator<double>& M, const double* b,
                                double* x, const krylov::Options& ko) {
  const std::size_t n = A.size();
  std::vector<double> r(n), z(n);
  auto residual = [&]() {
    A.apply(x, r.data());
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      r[i] = b[i] - r[i];
      s += r[i] * r[i];
    }
    return std::sqrt(s);
  };
  krylov::Result res;
  const double r0 = residual();
  res.operator_applications = 1;
  if (!std::isfinite(r0)) throw NumericalError("MultigridPlan: the initial residual is not finite");
  res.residual_history.push_back(1.0);
  if (r0 == 0.0 || r0 <= ko.atol) {
    res.converged = true;
    res.final_relative_residual = r0 == 0.0 ? 0.0 : 1.0;
    return res;
  }
  const double target = std::max(ko.rtol, ko.atol / r0);
  double rel = 1.0;
  for (int it = 0; it < ko.max_iterations; ++it) {
    M.apply(r.data(), z.data());
    for (std::size_t i = 0; i < n; ++i) x[i] += z[i];
    rel = residual() / r0;
    ++res.iterations;
    ++res.preconditioner_applications;
    ++res.operator_applications;
    if (!std::isfinite(rel))
      throw NumericalError("MultigridPlan: residual became non-finite at cycle " + std::to_string(it + 1));
    res.residual_history.push_back(rel);
    if (ko.progress) ko.progress(it + 1, rel);
    if (rel <= target) {
      res.converged = true;
      break;
    }
  }
  res.final_relative_residual = rel;
  return res;
}
}  // namespace

MultigridPlan::MultigridPlan(CsrMatrix A, const GridShape& shape, const MultigridOptions& opt) {
  check_threads(opt.threads);
  HierarchyOptions ho = opt.hierarchy;
  ho.threads = opt.threads;
  // A singular (constant null space) coarsest operator: the LDL^T that keeps the null space.
  if (opt.constant_null_space && ho.coarse == CoarseSolverKind::BandedCholesky) ho.coarse = CoarseSolverKind::SparseDirect;
  const bool hypre_coarse = opt.coarse_solver == CoarseSolver::BoomerAmg;
  if (hypre_coarse) {
    check_boomeramg_options(opt.boomeramg, "MultigridPlan: BoomerAMG coarse solver");
    ho.coarse = CoarseSolverKind::None;
  }
  Hierarchy h = Hierarchy::geometric(std::move(A), shape, ho);
  if (hypre_coarse) set_boomeramg_coarse_solver(h, opt);
  h_ = std::make_shared<const Hierarchy>(std::move(h));
  require_multilevel(*h_, shape, ho);
  init(opt);
}

void MultigridPlan::require_multilevel(const Hierarchy& h, const GridShape& shape, const HierarchyOptions& ho) {
  if (h.num_levels() >= 2 || ho.max_levels == 1) return;  // max_levels 1: a direct solve asked for by name
  std::string g;
  for (int d = 0; d < shape.dim; ++d) {
    if (d > 0) g += 'x';
    g += std::to_string(shape.n[d]);
  }
  throw InvalidArgument("MultigridPlan: the " + to_string(ho.grid) + "-centred grid " + g +
                        " cannot be coarsened by " + std::to_string(ho.coarsening) + " (every axis has fewer than " +
                        std::to_string(ho.coarsening) +
                        " unknowns): a one-level hierarchy is a direct solve, not multigrid; use smoothed aggregation "
                        "(MultigridPlan::smoothed_aggregation, CLI --amg sa, Python method='sa') or a smaller coarsening");
}

MultigridPlan MultigridPlan::smoothed_aggregation(CsrMatrix A, const MultigridOptions& opt, const NearNullSpace& B) {
  check_threads(opt.threads);
  AmgOptions ao = opt.amg;
  ao.threads = opt.threads;
  const bool hypre_coarse = opt.coarse_solver == CoarseSolver::BoomerAmg;
  if (hypre_coarse) {
    check_boomeramg_options(opt.boomeramg, "MultigridPlan: BoomerAMG coarse solver");
    ao.coarse_direct = false;
  }
  auto pattern = std::make_shared<AggregationPattern>();  // kept for update_values
  Hierarchy h = multigrid::smoothed_aggregation(std::move(A), ao, B, pattern.get());
  if (hypre_coarse) set_boomeramg_coarse_solver(h, opt);
  // smoothed_aggregation() refuses A unless check_symmetry passes: PCG need not check it again
  MultigridPlan plan(std::make_shared<const Hierarchy>(std::move(h)), opt, SymmetryReport{});
  plan.sa_pattern_ = std::move(pattern);
  return plan;
}

MultigridPlan MultigridPlan::boomeramg(CsrMatrix A, const MultigridOptions& opt) {
  check_threads(opt.threads);
  check_boomeramg_options(opt.boomeramg, "MultigridPlan: BoomerAMG");
  if (opt.boomeramg_cycle == BoomerAmgCycle::Ours)
    return MultigridPlan(std::make_shared<const Hierarchy>(boomeramg_hierarchy(A, opt.boomeramg, opt.threads)), opt);
  if (opt.constant_null_space)
    throw InvalidArgument(
        "MultigridPlan: hypre's own cycle cannot treat the constant null space (its coarsest Gaussian elimination of "
        "a singular matrix); use our cycle over BoomerAMG's levels");
  auto amg = std::make_shared<const BoomerAmgPreconditioner>(A, opt.boomeramg);
  std::vector<Level> levels = amg->levels(A, opt.threads);
  if (levels.size() < 2) detail::throw_one_level_boomeramg(A, "MultigridPlan: BoomerAMG");
  auto h = std::make_shared<const Hierarchy>(std::move(levels), nullptr, 0);
  return MultigridPlan(std::move(h), std::move(amg), opt);
}

MultigridPlan::MultigridPlan(std::shared_ptr<const Hierarchy> h,
                             std::shared_ptr<const BoomerAmgPreconditioner> hypre_cycle, const MultigridOptions& opt)
    : h_(std::move(h)), hypre_cycle_(std::move(hypre_cycle)) {
  init(opt);
}

MultigridPlan::MultigridPlan(std::shared_ptr<const Hierarchy> h, const MultigridOptions& opt) : h_(std::move(h)) {
  if (!h_) throw InvalidArgument("MultigridPlan: null hierarchy");
  init(opt);
}

MultigridPlan::MultigridPlan(std::shared_ptr<const Hierarchy> h, const MultigridOptions& opt, SymmetryReport known)
    : h_(std::move(h)), symmetry_(known) {
  if (!h_) throw InvalidArgument("MultigridPlan: null hierarchy");
  init(opt);
}

void MultigridPlan::init(const MultigridOptions& opt) {
  check_threads(opt.threads);
  opt_ = opt;
  opt_.hierarchy.threads = opt.threads;
  opt_.amg.threads = opt.threads;
  opt_.cycle.threads = opt.threads;
  opt_.cycle.smoother.threads = opt.threads;
  opt_.solver.krylov.threads = opt.threads;
  if (hypre_cycle_) {
    precond_ = hypre_cycle_.get();
  } else {
    cycle_ = std::make_unique<VCycle>(h_, opt_.cycle);
    precond_ = cycle_.get();
  }
  check_solver(opt_.solver);
}

const VCycle& MultigridPlan::cycle() const {
  if (!cycle_)
    throw InvalidArgument("MultigridPlan: this plan runs hypre's own BoomerAMG cycle, not our V-cycle");
  return *cycle_;
}

long MultigridPlan::matvecs_per_cycle() const {
  if (cycle_) return cycle_->matvecs_per_cycle();
  const BoomerAmgOptions& o = hypre_cycle_->options();
  const long per_sweep = o.relaxation == BoomerAmgRelaxation::Chebyshev ? 2 : 1;
  return (per_sweep * o.sweeps * 2 + 1) * o.cycles;
}

void MultigridPlan::check_solver(const OuterSolverOptions& s) const {
  const krylov::Options& k = s.krylov;
  if (!(k.rtol > 0 && k.rtol < 1)) throw InvalidArgument("MultigridPlan: rtol must be in (0, 1), got " + text::shortest(k.rtol));
  if (!(k.atol >= 0.0) || !std::isfinite(k.atol))
    throw InvalidArgument("MultigridPlan: atol must be finite and >= 0, got " + text::shortest(k.atol));
  if (k.max_iterations < 0)
    throw InvalidArgument("MultigridPlan: max_iterations must be >= 0, got " + std::to_string(k.max_iterations));
  if (s.method != SolverMethod::Stationary && k.max_iterations < 1)
    throw InvalidArgument("MultigridPlan: max_iterations must be >= 1 for a Krylov method, got " +
                          std::to_string(k.max_iterations));
  if ((s.method == SolverMethod::Gmres || s.method == SolverMethod::Fgmres) && k.restart < 1)
    throw InvalidArgument("MultigridPlan: restart must be >= 1, got " + std::to_string(k.restart));
  if (s.method == SolverMethod::Cg && hypre_cycle_ && !hypre_cycle_->is_symmetric())
    throw InvalidArgument(
        "MultigridPlan: pcg needs a symmetric cycle: hypre's cycle with relaxation hybrid-gs (or a tolerance) is not; "
        "use gmres or fgmres");
  if (s.method == SolverMethod::Cg && cycle_ && !cycle_->is_symmetric())
    throw InvalidArgument(
        "MultigridPlan: pcg needs a symmetric V-cycle (pre == post order and base jacobi or asm); use gmres or fgmres");
  if (s.method == SolverMethod::Cg && cycle_) {
    const auto* hc = dynamic_cast<const BoomerAmgPreconditioner*>(h_->coarse_solver());
    if (hc != nullptr && !hc->is_symmetric())
      throw InvalidArgument(
          "MultigridPlan: pcg needs a symmetric coarse solve: the BoomerAMG coarse solver with relaxation hybrid-gs (or "
          "a tolerance) is not; use gmres or fgmres");
  }
  if (s.method == SolverMethod::Cg) require_symmetric_matrix();
  if (s.method == SolverMethod::Gmres && !precond_->is_fixed())
    throw InvalidArgument("MultigridPlan: the cycle is not a fixed map (its coarse solver is iterative); use fgmres");
}

void MultigridPlan::require_symmetric_matrix() const {
  const CsrMatrix* A = h_->level(0).matrix.get();
  if (A == nullptr) return;  // a matrix-free fine level: nothing to check
  if (!symmetry_) symmetry_ = check_symmetry(*A);
  if (!symmetry_->symmetric)
    throw InvalidArgument("MultigridPlan: " + describe_asymmetry(*symmetry_) +
                          "; PCG needs a symmetric positive definite matrix: use gmres or fgmres");
}

SolveResult MultigridPlan::solve(const double* b, double* x) const { return solve(b, x, opt_.solver); }


SolveResult MultigridPlan::solve(const double* b, double* x, const OuterSolverOptions& solver) const {
  if (!b || !x) throw InvalidArgument("MultigridPlan::solve: null vector");
  check_solver(solver);
  if (const double s = detail::rhs_scale(b, size()); s > 0.0) {
    OuterSolverOptions scaled = solver;
    scaled.krylov.atol = solver.krylov.atol / s;
    return detail::solve_scaled(b, x, size(), s, [&](const double* bs, double* xs) { return solve(bs, xs, scaled); });
  }
  krylov::Options ko = solver.krylov;
  ko.threads = opt_.threads;
  const std::size_t n = size();
  std::vector<double> bp;
  if (opt_.constant_null_space) b = detail::consistent_rhs(b, n, bp);  // b - mean(b) 1
  SolveResult out;
  out.method = solver.method;
  if (solver.method == SolverMethod::Stationary && cycle_) {
    static_cast<krylov::Result&>(out) = cycle_->solve(b, x, ko.rtol, ko.atol, ko.max_iterations, ko.progress);
    out.matvecs = out.operator_applications;
  } else if (solver.method == SolverMethod::Stationary) {
    static_cast<krylov::Result&>(out) = stationary_solve(op(), *precond_, b, x, ko);
    out.matvecs = out.operator_applications + out.preconditioner_applications * matvecs_per_cycle();
  } else {
    const krylov::Method m = solver.method == SolverMethod::Cg      ? krylov::Method::Cg
                             : solver.method == SolverMethod::Gmres ? krylov::Method::Gmres
                                                                    : krylov::Method::Fgmres;
    const auto s = krylov::make_solver<double>(m, op(), precond_, ko);
    static_cast<krylov::Result&>(out) = s->solve(b, x);
    out.matvecs = out.operator_applications + out.preconditioner_applications * matvecs_per_cycle();
  }
  if (opt_.constant_null_space) {  // the solution of zero mean
    double mean = 0.0;
    for (std::size_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) x[i] -= mean;
  }
  const double f = out.final_relative_residual;
  out.rho = out.iterations > 0 && f > 0 ? std::pow(f, 1.0 / out.iterations) : 0.0;
  return out;
}

SmootherSolveResult smoother_solve(const CsrMatrix& A, const double* b, double* x, const SmootherSolveOptions& opt) {
  if (!b || !x) throw InvalidArgument("smoother_solve: null vector");
  if (const double s = A.rows == A.cols ? detail::rhs_scale(b, A.rows) : 0.0; s > 0.0) {  // see MultigridPlan::solve
    SmootherSolveOptions scaled = opt;
    scaled.solver.krylov.atol = opt.solver.krylov.atol / s;
    return detail::solve_scaled(b, x, A.rows, s,
                        [&](const double* bs, double* xs) { return smoother_solve(A, bs, xs, scaled); });
  }
  if (opt.order < 1) throw InvalidArgument("order must be >= 1, got " + std::to_string(opt.order));
  if (opt.threads < 0) throw InvalidArgument("threads must be >= 0, got " + std::to_string(opt.threads));
  if (opt.solver.method == SolverMethod::Stationary)
    throw InvalidArgument("smoother_solve: needs a Krylov method (pcg, gmres or fgmres)");
  // Before the smoother's set-up, whose Lanczos estimate of lambda_max would otherwise report an
  // unsymmetric matrix as indefinite, and before CG would diverge on it.
  if (opt.solver.method == SolverMethod::Cg) {
    if (A.rows != A.cols)
      throw InvalidArgument("smoother_solve: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                            std::to_string(A.cols));
    const SymmetryReport sym = check_symmetry(A);
    if (!sym.symmetric)
      throw InvalidArgument(describe_asymmetry(sym) + "; PCG needs a symmetric positive definite matrix: use gmres or fgmres");
  }
  SmootherOptions so = opt.smoother;
  so.threads = opt.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const Smoother S(A, so);
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SmootherPreconditioner M(S, opt.order);
  if (opt.solver.method == SolverMethod::Cg && !M.is_symmetric())
    throw InvalidArgument("this smoother is not symmetric (base 'ras'): it cannot precondition CG; use gmres or fgmres");
  const CsrOperator op(A, opt.threads, true);
  krylov::Options ko = opt.solver.krylov;
  ko.threads = opt.threads;
  const krylov::Method m = opt.solver.method == SolverMethod::Cg      ? krylov::Method::Cg
                           : opt.solver.method == SolverMethod::Gmres ? krylov::Method::Gmres
                                                                      : krylov::Method::Fgmres;
  SmootherSolveResult out;
  static_cast<krylov::Result&>(out) = krylov::make_solver<double>(m, op, &M, ko)->solve(b, x);
  out.method = opt.solver.method;
  out.matvecs = out.operator_applications + out.preconditioner_applications * opt.order;
  const double f = out.final_relative_residual;
  out.rho = out.iterations > 0 && f > 0 ? std::pow(f, 1.0 / out.iterations) : 0.0;
  out.lambda_max = S.lambda_max();
  out.setup_seconds = setup;
  return out;
}

}  // namespace elliptica::multigrid
