#pragma once
/// @file plan.hpp
/// The one solve entry point of the multigrid module: a MultigridPlan owns a hierarchy (by default
/// the geometric FD hierarchy of hierarchy.hpp), a V-cycle over it and the outer iteration
/// (stationary cycling, or CG / GMRES / FGMRES preconditioned by one cycle). The CLI
/// (`elliptica mg solve`), the Python package (elliptica.MultigridPlan) and the study driver
/// (study.hpp) all solve through it, and read their defaults from MultigridOptions{}.
///
/// Cost convention (vcycle.hpp): fine-grid matvecs count a smoothing of order k as k products and
/// the residual before restriction as one, so a cycle costs m + n + 1; the stationary solver adds
/// one per cycle (plus one initially); a Krylov method adds its own applications of A.
/// Threads: MultigridOptions::threads goes to every parallel region of the set-up and the solve
/// through num_threads clauses (core/parallel.hpp); no global OpenMP state is changed.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/krylov/projection.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"

namespace elliptica::multigrid {

/// The outer iteration: Stationary (x <- cycle(x)), or a Krylov method preconditioned by one cycle
/// (Cg needs a symmetric cycle: pre == post, base jacobi or asm; Gmres a fixed one).
enum class SolverMethod { Stationary, Cg, Gmres, Fgmres };
/// "none" or "stationary", "cg" or "pcg", "gmres", "fgmres"; InvalidArgument naming the unknown
/// method otherwise.
SolverMethod solver_method_from_string(const std::string& s);
/// "none", "pcg", "gmres", "fgmres" (the CLI's and Python's spelling).
std::string to_string(SolverMethod m);

/// The coarsest level's solve of the geometric and smoothed-aggregation hierarchies.
enum class CoarseSolver {
  Direct,    ///< exact: banded Cholesky (geometric) or SparseDirect (smoothed aggregation)
  BoomerAmg  ///< BoomerAMG's cycle (BoomerAmgPreconditioner with MultigridOptions::boomeramg: one
             ///< V-cycle by default, or to its tolerance): lets coarsening stop early (a larger
             ///< coarse_size); needs hypre
};
/// "direct" or "boomeramg"; InvalidArgument naming `what` and the value otherwise.
CoarseSolver coarse_solver_from_string(const std::string& s, const std::string& what = "coarse solver");
std::string to_string(CoarseSolver c);

/// krylov::Options with the multigrid defaults: rtol 1e-6, at most 500 iterations, restart 20.
krylov::Options default_krylov_options();

struct OuterSolverOptions {
  SolverMethod method = SolverMethod::Gmres;
  /// rtol, max_iterations (cycles for Stationary; iterations otherwise), restart (GMRES/FGMRES),
  /// progress (called after every cycle / iteration). Its `threads` is replaced by the plan's.
  krylov::Options krylov = default_krylov_options();
};

/// Every option of a plan; MultigridOptions{} holds the library's defaults (the CLI's help and
/// the Python defaults are read from it): coarsening 2, no level cap, banded Cholesky coarse
/// solve, (2,2) cycle with the optimised 4th-kind Chebyshev-Jacobi smoother, GMRES(20) to 1e-6
/// in at most 500 iterations, threads 0 (omp_get_max_threads()).
struct MultigridOptions {
  HierarchyOptions hierarchy;  ///< the geometric hierarchy (MultigridPlan(A, shape, opt))
  AmgOptions amg;              ///< the smoothed-aggregation hierarchy (MultigridPlan::smoothed_aggregation)
  /// BoomerAMG (boomeramg.hpp): the hierarchy of MultigridPlan::boomeramg, hypre's own cycle and
  /// the BoomerAMG coarse solver.
  BoomerAmgOptions boomeramg;
  /// MultigridPlan::boomeramg: our V-cycle (`cycle`) over hypre's levels, or hypre's own cycle.
  BoomerAmgCycle boomeramg_cycle = BoomerAmgCycle::Ours;
  /// The coarsest solve of the geometric and smoothed-aggregation plans (not used by the
  /// constructor over a hierarchy built elsewhere, nor by MultigridPlan::boomeramg, whose coarsest
  /// level is always SparseDirect / hypre's Gaussian elimination).
  CoarseSolver coarse_solver = CoarseSolver::Direct;
  VCycleOptions cycle;
  OuterSolverOptions solver;
  /// The operator is singular with the constant vector as its null space (pure Neumann or
  /// periodic boundaries: the incompressible-flow pressure equation). solve() then projects the
  /// right-hand side onto the range (b - mean(b): the consistent part; what the iteration's
  /// residual refers to) and returns the solution of zero mean; with smoothed aggregation the
  /// coarsest solve keeps the null space (amg.hpp's SparseDirect). false: b is used as given.
  bool constant_null_space = false;
  /// Threads of everything the plan runs (replaces hierarchy.threads, cycle.threads,
  /// cycle.smoother.threads and solver.krylov.threads); 0: omp_get_max_threads() at each call.
  int threads = 0;
};

/// A solve's statistics (krylov::Result) plus the multigrid cost figures.
struct SolveResult : krylov::Result {
  SolverMethod method = SolverMethod::Gmres;
  long matvecs = 0;  ///< fine-grid matvecs by the cost convention above
  double rho = 0;    ///< average rate (final_relative_residual)^(1/iterations); 0 for no iterations
};

/// A solve through a krylov::SolutionProjection (MultigridPlan::solve with a projection): the
/// inner solve's statistics, its residual history rescaled to ||b|| (entry 0 = projected_residual),
/// final_relative_residual = ||b - A x|| / ||b||, one more operator application and matvec (A dx).
struct ProjectedSolveResult : SolveResult {
  double projected_residual = 0;  ///< ||b - A x0|| / ||b|| of the projected initial guess (1: empty basis)
  std::size_t basis_before = 0, basis_after = 0;
  bool restarted = false;         ///< the basis was full and restarted from this solution
};

/// Options of MultigridPlan::update_values; UpdateOptions{} holds the defaults (Python's
/// plan.update reads them).
struct UpdateOptions {
  /// Smoothed aggregation: keep the smoothed prolongators P_j and R_j of the first matrix (as the
  /// geometric hierarchy always does) and recompute only the Galerkin values, the coarsest
  /// factorisation and the smoothers: no Lanczos estimate and no A T product for the prolongator
  /// smoothing. The hierarchy stays a Galerkin one (A_{j+1} = R_j A_j P_j), so the cycle stays
  /// symmetric and convergent, but P no longer follows the new coefficients (slower convergence
  /// after large changes). false: P recomputed from the kept tentative prolongators.
  bool keep_prolongators = false;
};

/// Not thread-safe for concurrent solve() calls on one plan (the cycle's work vectors); each call
/// itself runs in parallel with the plan's threads.
class MultigridPlan {
 public:
  /// Builds the geometric hierarchy of A on `shape` (opt.hierarchy: coarsening, grid kind,
  /// semi-coarsening; with constant_null_space the coarsest solve is SparseDirect instead of the
  /// banded Cholesky), the cycle (opt.cycle) and checks the outer solver options. A hierarchy of
  /// one level (no axis has c unknowns) is refused with an InvalidArgument naming the grid and
  /// suggesting smoothed aggregation, unless opt.hierarchy.max_levels == 1 asks for exactly that.
  /// Throws InvalidArgument for bad options (threads < 0,
  /// rtol outside (0,1), max_iterations < 1, restart < 1, Cg with a non-symmetric cycle, Cg with
  /// a fine-level matrix that is not symmetric by check_symmetry (core/sparse.hpp)), and
  /// what Hierarchy::geometric, Smoother and VCycle throw.
  MultigridPlan(CsrMatrix A, const GridShape& shape, const MultigridOptions& opt = {});
  /// The smoothed-aggregation hierarchy of A (amg.hpp, opt.amg; its threads replaced by
  /// opt.threads) with near-null space B (empty: constants per block unknown) and the plan's cycle
  /// and outer solver over it: the multigrid of a user's matrix without a grid. Throws what
  /// smoothed_aggregation() throws and what the other constructors throw.
  static MultigridPlan smoothed_aggregation(CsrMatrix A, const MultigridOptions& opt = {},
                                            const NearNullSpace& B = {});
  /// BoomerAMG's hierarchy of A (boomeramg.hpp, opt.boomeramg): with opt.boomeramg_cycle Ours,
  /// our cycle (opt.cycle) over hypre's levels (boomeramg_hierarchy()); with Hypre, hypre's own
  /// cycle (BoomerAmgPreconditioner) is the plan's preconditioner, and hierarchy() holds copies
  /// of hypre's levels for inspection (no coarse solver; cycle() then throws). Throws
  /// InvalidArgument when built without hypre, for bad options (named), for Hypre with
  /// constant_null_space (hypre's coarsest Gaussian elimination cannot treat the null space: use
  /// the cycle Ours), and what boomeramg_hierarchy() / BoomerAmgPreconditioner throw.
  static MultigridPlan boomeramg(CsrMatrix A, const MultigridOptions& opt = {});
  /// Over a hierarchy built elsewhere (levels of any kind, any coarse solver); opt.hierarchy is
  /// not used.
  MultigridPlan(std::shared_ptr<const Hierarchy> h, const MultigridOptions& opt = {});

  /// Solves A x = b with the plan's outer solver; x holds the initial guess on entry and the
  /// result on exit (length size()); with options().constant_null_space, b's consistent part and
  /// the zero-mean solution (see MultigridOptions). Does not throw when not converged (check .converged);
  /// throws InvalidArgument for null vectors, NumericalError when the iteration produces NaN/Inf.
  SolveResult solve(const double* b, double* x) const;
  /// The same with another outer solver for this call (method, tolerances; validated as above,
  /// so Cg on an unsymmetric fine-level matrix is an InvalidArgument before any iteration).
  SolveResult solve(const double* b, double* x, const OuterSolverOptions& solver) const;

  /// k right-hand sides at once: B and X are n x k, column-major (column c is B[c n .. c n + n),
  /// each column contiguous; X holds the initial guesses on entry), one SolveResult per column.
  /// The hierarchy and the cycle are set up once (at construction); the columns are solved one
  /// after the other, each exactly as solve(b, x) (constant_null_space, atol per column). Throws
  /// as solve(b, x) and InvalidArgument for k = 0; when a column throws, the columns before it hold
  /// their solutions.
  std::vector<SolveResult> solve(const double* B, double* X, std::size_t k) const;
  std::vector<SolveResult> solve(const double* B, double* X, std::size_t k, const OuterSolverOptions& solver) const;

  /// A x = b with the initial guess of Fischer's projection onto previous solutions
  /// (krylov/projection.hpp): x0 from proj's basis, the plan's solver on A dx = b - A x0 from zero
  /// stopping at ||b - A x|| <= max(rtol ||b||, atol) (the rule of a solve from x = 0, so the
  /// projection saves iterations), x = x0 + dx appended to the basis. x: out only (its value on
  /// entry is not used). constant_null_space: b's consistent part, zero-mean solutions in the basis.
  /// proj must have been used with this plan's operator only (call proj.clear() after
  /// update_values: update_count() tells). Cost: the inner solve + 1 matvec + O(l) vector operations.
  /// Throws as solve(b, x) and InvalidArgument when proj.size() != size().
  ProjectedSolveResult solve(const double* b, double* x, krylov::SolutionProjection& proj) const;
  ProjectedSolveResult solve(const double* b, double* x, krylov::SolutionProjection& proj,
                             const OuterSolverOptions& solver) const;

  /// Numeric re-setup for a matrix with the fine level's sparsity pattern and new values
  /// (numeric_setup.hpp): smoothed aggregation keeps its strength graphs, aggregates and tentative
  /// prolongators and recomputes the smoothed prolongators, the Galerkin values (R (A P) into the
  /// kept patterns) and the coarsest LDL^T (kept ordering); the geometric hierarchy (and one built
  /// elsewhere with CSR levels) keeps every P and recomputes the Galerkin values and the coarsest
  /// factorisation; how.keep_prolongators keeps SA's P too. The V-cycle's smoothers (Lanczos
  /// estimates, local factorisations) are set up again with the plan's options. Strong guarantee:
  /// on an exception the plan is unchanged. Throws InvalidArgument for a matrix of another size or
  /// pattern (the message says so: that needs a new plan), non-finite values, and as the set-up
  /// would (smoothed aggregation with P recomputed: a non-symmetric matrix, a non-positive
  /// diagonal); NumericalError for a coarsest operator that is not symmetric positive
  /// (semi-)definite (with P kept, this is where an unsymmetric A_new is found, or else by PCG's
  /// check at the next solve).
  void update_values(const CsrMatrix& A_new, const UpdateOptions& how = {});
  /// How many times update_values() succeeded (a projection basis built before is stale).
  std::size_t update_count() const { return updates_; }

  std::size_t size() const { return precond_->size(); }
  const Hierarchy& hierarchy() const { return *h_; }
  std::shared_ptr<const Hierarchy> shared_hierarchy() const { return h_; }
  /// Whether the plan runs our V-cycle (false: hypre's own cycle, MultigridPlan::boomeramg).
  bool has_vcycle() const { return cycle_ != nullptr; }
  /// The V-cycle (an operator: usable as a preconditioner elsewhere). InvalidArgument when the
  /// plan runs hypre's cycle (has_vcycle() false).
  const VCycle& cycle() const;
  /// The plan's cycle as an operator: the V-cycle, or hypre's cycle.
  const LinearOperator<double>& preconditioner() const { return *precond_; }
  /// Fine-grid matvecs per cycle (VCycle::matvecs_per_cycle; for hypre's cycle the same count
  /// over its relaxation: (2 per Chebyshev sweep, 1 otherwise) x sweeps x 2 legs + 1, times its
  /// cycles).
  long matvecs_per_cycle() const;
  /// The fine-level operator A_0.
  const LinearOperator<double>& op() const { return *h_->level(0).A; }
  const MultigridOptions& options() const { return opt_; }

 private:
  /// Over a hierarchy whose fine-level matrix's symmetry is already known (`known`: its
  /// check_symmetry report), so PCG does not check it again.
  MultigridPlan(std::shared_ptr<const Hierarchy> h, const MultigridOptions& opt, SymmetryReport known);
  MultigridPlan(std::shared_ptr<const Hierarchy> h, std::shared_ptr<const BoomerAmgPreconditioner> hypre_cycle,
                const MultigridOptions& opt);
  void init(const MultigridOptions& opt);
  static void require_multilevel(const Hierarchy& h, const GridShape& shape, const HierarchyOptions& ho);
  void check_solver(const OuterSolverOptions& s) const;
  /// InvalidArgument when the fine-level CSR matrix (if any) is not symmetric (check_symmetry,
  /// computed at the first call that needs it and kept).
  void require_symmetric_matrix() const;
  std::shared_ptr<const Hierarchy> h_;
  std::unique_ptr<VCycle> cycle_;  ///< null when the plan runs hypre's cycle
  std::shared_ptr<const BoomerAmgPreconditioner> hypre_cycle_;
  const LinearOperator<double>* precond_ = nullptr;  ///< cycle_ or hypre_cycle_
  MultigridOptions opt_;
  mutable std::optional<SymmetryReport> symmetry_;  ///< of the fine-level matrix, once PCG asked for it
  /// smoothed aggregation's pattern decisions, kept for update_values (null for other hierarchies)
  std::shared_ptr<const AggregationPattern> sa_pattern_;
  std::size_t updates_ = 0;
};

/// A polynomial-smoother preconditioned Krylov solve without a hierarchy (the CLI's `mg solve
/// --matrix` mode and Python's elliptica.chebyshev_cg): one preconditioner application is one
/// smoothing of order `order` from zero (SmootherPreconditioner), so it costs `order` matvecs.
/// Defaults: the smoother of SmootherOptions{} (opt4-Jacobi), order 4, PCG with
/// default_krylov_options().
struct SmootherSolveOptions {
  SmootherOptions smoother;  ///< its threads is replaced by `threads`
  int order = 4;             ///< >= 1
  OuterSolverOptions solver{SolverMethod::Cg, default_krylov_options()};
  int threads = 0;           ///< 0: omp_get_max_threads() at each call
};

struct SmootherSolveResult : SolveResult {
  double lambda_max = 0;     ///< the smoother's (safety-scaled) bound on rho(S A)
  double setup_seconds = 0;  ///< wall time of the smoother's set-up (lambda_max estimate, local factorisations)
};

/// Solves A x = b (A square SPD CSR; x: initial guess in, solution out). matvecs =
/// operator_applications + order x preconditioner_applications. Throws InvalidArgument on
/// order < 1, threads < 0, a Stationary method, PCG with a non-symmetric smoother (base RAS),
/// PCG with a matrix that is not square or not symmetric (check_symmetry of core/sparse.hpp, rtol
/// 1e-12, checked before the smoother's set-up; the message names the worst pair, 0-based, and
/// suggests gmres), bad Krylov options, and what Smoother and the Krylov solvers throw.
SmootherSolveResult smoother_solve(const CsrMatrix& A, const double* b, double* x, const SmootherSolveOptions& opt);

}  // namespace elliptica::multigrid
