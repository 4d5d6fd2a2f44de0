#pragma once
/// @file boomeramg.hpp
/// hypre's BoomerAMG (classical algebraic multigrid: Ruge-Stueben-type coarsening, Henson & Yang,
/// "BoomerAMG: a parallel algebraic multigrid solver and preconditioner", Appl. Numer. Math. 41,
/// 2002) inside the multigrid module, in three roles:
/// 1. a hierarchy: BoomerAMG's set-up on A, its level matrices A_l and interpolations P_l copied
///    into our Levels (R_l = P_l^T), the coarsest level factorised by SparseDirect (amg.hpp), so
///    that our VCycle runs the seed's Chebyshev smoothers over hypre's coarsening
///    (boomeramg_hierarchy(); MultigridPlan::boomeramg with BoomerAmgCycle::Ours);
/// 2. hypre's own cycle as an operator (BoomerAmgPreconditioner: one or more BoomerAMG V-cycles
///    from a zero guess with hypre's relaxation), a preconditioner of the krylov solvers and a
///    plan's cycle (BoomerAmgCycle::Hypre);
/// 3. the coarse solver of the smoothed-aggregation and geometric hierarchies (the same operator
///    over the coarsest matrix; MultigridOptions::coarse_solver), so that coarsening can stop
///    early.
///
/// hypre is an optional dependency (Debian libhypre-dev, built with MPI): have_boomeramg() says
/// whether this build has it; without it every constructor here throws InvalidArgument("elliptica
/// was built without hypre ..."). Only the option parsing works in both builds.
///
/// MPI: hypre needs an initialised MPI library. The first BoomerAMG object of the process
/// initialises it (MPI_Init_thread, MPI_THREAD_SERIALIZED; a singleton start, no mpirun needed)
/// unless the host program already did (MPI_Initialized), and then registers MPI_Finalize at exit
/// (only when elliptica initialised it). That is the one process-wide effect of this module, and
/// it happens only when BoomerAMG is used (`import elliptica` and the CLI do not touch MPI
/// otherwise). Every hypre object lives on MPI_COMM_SELF: one rank per plan, no communication.
/// hypre keeps global state, so the hypre calls of all BoomerAMG objects of a process take turns
/// (one process-wide lock): plans in several threads are safe, their hypre parts do not overlap.
/// Threads: this hypre build has no OpenMP; its set-up and cycles run on one thread (the
/// `threads` arguments below apply to our own kernels: level operators, copies).
/// Errors of hypre calls become NumericalError naming the hypre function and hypre's own
/// description (HYPRE_DescribeError). hypre's printing is off (print_level 0) unless asked.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/hierarchy.hpp"

namespace elliptica::multigrid {

/// Coarse/fine splitting of BoomerAMG (HYPRE_BoomerAMGSetCoarsenType).
enum class BoomerAmgCoarsening {
  Hmis,    ///< 10: HMIS (De Sterck, Yang, Heys 2006): one-pass Ruge-Stueben then PMIS; hypre's default
  Pmis,    ///< 8: PMIS (parallel modified independent set): lower complexity, may converge slower
  Falgout  ///< 6: Falgout (Ruge-Stueben then CLJP): classical, higher complexity
};
/// Interpolation (HYPRE_BoomerAMGSetInterpType).
enum class BoomerAmgInterpolation {
  ExtendedI,  ///< 6: extended+i (De Sterck et al. 2008), hypre's default, for HMIS/PMIS
  Classical,  ///< 0: classical modified (Ruge-Stueben 1987), for Falgout coarsening
  Direct,     ///< 3: direct (with separation of weights)
  Standard,   ///< 8: standard
  Extended    ///< 14: extended
};
/// Relaxation of hypre's own cycle (HYPRE_BoomerAMGSetRelaxType; the coarsest level is solved by
/// Gaussian elimination, relax type 9).
enum class BoomerAmgRelaxation {
  L1Jacobi,            ///< 18: l1-scaled Jacobi (Baker, Falgout, Kolev, Yang 2011): symmetric
  Chebyshev,           ///< 16: Chebyshev polynomial in D^-1 A (hypre's order 2): symmetric
  HybridSymmetricGs,   ///< 6: hybrid symmetric Gauss-Seidel (SSOR, omega 1): symmetric
  L1SymmetricGs,       ///< 8: l1-scaled hybrid symmetric Gauss-Seidel: symmetric
  HybridGsForward      ///< 3: hybrid Gauss-Seidel, forward on both legs: NOT symmetric (GMRES only)
};

/// Which cycle a plan over BoomerAMG runs (MultigridPlan::boomeramg).
enum class BoomerAmgCycle {
  Ours,  ///< our VCycle (MultigridOptions::cycle: the seed's Chebyshev smoothers) over hypre's levels
  Hypre  ///< hypre's own V-cycle with BoomerAmgOptions::relaxation (BoomerAmgPreconditioner)
};

/// BoomerAMG's options; BoomerAmgOptions{} holds the library's defaults (the CLI's and Python's
/// defaults are read from it): the coarse-solve settings of nekRS's BoomerAMG (HMIS, ext+i,
/// theta 0.25, at most 4 interpolation entries per row, Chebyshev relaxation, one V-cycle), which
/// are also hypre's recommended settings for 2D problems.
struct BoomerAmgOptions {
  BoomerAmgCoarsening coarsening = BoomerAmgCoarsening::Hmis;              ///< C/F splitting
  BoomerAmgInterpolation interpolation = BoomerAmgInterpolation::ExtendedI;  ///< interpolation operator
  /// Strength threshold in [0, 1): j strongly influences i when -a_ij >= theta max_k(-a_ik)
  /// (Ruge-Stueben). 0.25 suits 2D; hypre's advice for 3D is 0.5.
  double strength_threshold = 0.25;
  /// Interpolation truncation: at most this many entries per row of P (>= 0; 0: no truncation).
  int max_interp_elements = 4;
  /// Levels (from the finest) coarsened aggressively (multipass / two-stage; >= 0; 0: none).
  int aggressive_levels = 0;
  /// Cap on the number of levels (>= 2).
  int max_levels = 25;
  /// Stop coarsening at this many unknowns (>= 1; hypre's default 9).
  int max_coarse_size = 9;
  /// Relaxation of hypre's own cycle (not used by our cycle over hypre's levels).
  BoomerAmgRelaxation relaxation = BoomerAmgRelaxation::Chebyshev;
  /// Relaxation sweeps per level and leg of hypre's cycle (>= 1).
  int sweeps = 1;
  /// V-cycles per application of BoomerAmgPreconditioner (>= 1; from a zero guess).
  int cycles = 1;
  /// When > 0 (< 1): cycle until ||b - A x|| <= tolerance ||b|| or `cycles` cycles (a solve to a
  /// tolerance: no longer a fixed linear map, needs FGMRES around it); 0: exactly `cycles` cycles.
  double tolerance = 0.0;
  /// hypre's print level (0: silent; 1: set-up statistics; 3: also the cycles' residuals).
  int print_level = 0;
};

/// Whether this build has hypre (ELLIPTICA_HAVE_HYPRE at configure time).
bool have_boomeramg();

/// Parsing of the CLI's / Python's spellings (throw InvalidArgument naming the value and the
/// accepted ones, with `what` as the option's name): "hmis", "pmis", "falgout"; "ext+i",
/// "classical", "direct", "standard", "extended"; "l1-jacobi", "chebyshev", "hybrid-sgs",
/// "l1-sgs", "hybrid-gs"; "ours", "hypre".
BoomerAmgCoarsening boomeramg_coarsening_from_string(const std::string& s, const std::string& what = "coarsening");
BoomerAmgInterpolation boomeramg_interpolation_from_string(const std::string& s,
                                                           const std::string& what = "interpolation");
BoomerAmgRelaxation boomeramg_relaxation_from_string(const std::string& s, const std::string& what = "relaxation");
BoomerAmgCycle boomeramg_cycle_from_string(const std::string& s, const std::string& what = "cycle");
std::string to_string(BoomerAmgCoarsening c);
std::string to_string(BoomerAmgInterpolation i);
std::string to_string(BoomerAmgRelaxation r);
std::string to_string(BoomerAmgCycle c);

/// Throws InvalidArgument naming the first option out of its range (prefix `where`).
void check_boomeramg_options(const BoomerAmgOptions& opt, const std::string& where = "BoomerAMG");

/// BoomerAMG's set-up on a square CSR matrix A (n x n, n < 2^31; symmetric positive definite for
/// the symmetric relaxations; hypre's classical AMG assumes an M-matrix-like sign pattern) and
/// its V-cycle as an operator: apply(b, x) runs opt.cycles V-cycles (or until opt.tolerance) on
/// A x = b from x = 0. is_symmetric(): the relaxation is symmetric and the cycles are a fixed map;
/// is_fixed(): tolerance == 0. Not thread-safe for concurrent apply() on one object (hypre's work
/// vectors). Also the source of the hierarchy (levels(), boomeramg_hierarchy()).
/// Throws InvalidArgument for bad options, a non-square or empty matrix, n >= 2^31 or a
/// non-finite entry, and when built without hypre; NumericalError when a hypre call fails (the
/// call and hypre's description).
class BoomerAmgPreconditioner final : public LinearOperator<double> {
 public:
  explicit BoomerAmgPreconditioner(const CsrMatrix& A, const BoomerAmgOptions& opt = {});
  ~BoomerAmgPreconditioner() override;
  BoomerAmgPreconditioner(const BoomerAmgPreconditioner&) = delete;
  BoomerAmgPreconditioner& operator=(const BoomerAmgPreconditioner&) = delete;

  std::size_t size() const override { return n_; }
  void apply(const double* b, double* x) const override;
  bool is_symmetric() const override;
  bool is_fixed() const override { return opt_.tolerance == 0.0; }
  const BoomerAmgOptions& options() const { return opt_; }
  /// Number of levels of hypre's hierarchy (the finest included).
  int num_levels() const;
  /// Cycles the last apply() ran (opt.cycles, or fewer with a tolerance).
  int last_cycles() const;

  /// hypre's hierarchy as our levels, finest first: level 0 is A itself; A_l (l >= 1) and P_l
  /// copied from hypre (column indices sorted within rows), R_l = P_l^T, diagonals, no grid
  /// shape; operators with `threads` threads. No coarse solver attached.
  std::vector<Level> levels(const CsrMatrix& A, int threads = 0) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::size_t n_ = 0;
  BoomerAmgOptions opt_;
};

/// Our hierarchy over BoomerAMG's coarsening of A (role 1): the levels of
/// BoomerAmgPreconditioner::levels, the coarsest factorised by SparseDirect (amg.hpp), the hypre
/// objects freed before it returns. Throws what BoomerAmgPreconditioner and SparseDirect throw,
/// and InvalidArgument when hypre makes a single level (no strong couplings, e.g. a diagonal
/// matrix: a direct solve, not multigrid; the message says so). hypre coarsens the finest level
/// at least once whatever its size.
Hierarchy boomeramg_hierarchy(const CsrMatrix& A, const BoomerAmgOptions& opt = {}, int threads = 0);

}  // namespace elliptica::multigrid
