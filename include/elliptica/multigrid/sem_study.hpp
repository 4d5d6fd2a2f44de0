#pragma once
/// @file sem_study.hpp
/// The seed's section-6 study (seed 003; issue 14) as a library tool: the SEM Poisson problem
/// -Laplace(u) = f, u = 0 on the boundary, f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z) (the BPS5-style
/// right-hand side of nekRS's kershaw example) on the Kershaw meshes kershaw_mesh(n, eps) of the
/// unit cube, order p, solved from x0 = 0 to a relative residual rtol by a Krylov method
/// preconditioned with one pMG V-cycle (pmg.hpp), for every
///   eps x smoother base (jacobi, asm, asm-weighted, ras) x Chebyshev kind (cheb1, cheb1opt,
///   cheb4, opt4) x Chebyshev order k x cycle (symmetric (k, k), one-sided (2k, 0)).
///
/// Conventions
/// - Schedules (seed 003 section 6): Jacobi bases use default_pmg_schedule(p) ((7, 5, 3, 1) for
///   p = 7), Schwarz bases sem_schwarz_schedule(p) ((7, 3, 1)); SemStudyOptions can override both.
/// - One-sided cycle: the seed's (2k, 0) V-cycle (section 2, "fine-to-coarse": pre-smoothing of
///   order 2k, no post-smoothing), which costs what the symmetric (k, k) cycle costs; the seed's
///   "RAS(12) one-sided" is k = 6 here. The column cheb_order is k for both cycles, pre / post the
///   orders actually used.
/// - Krylov method: PCG for symmetric cycles over Jacobi or ASM (weighted ASM) when the coarse
///   solve is symmetric; FGMRES(restart) for RAS (not symmetric) and one-sided cycles.
/// - One hierarchy (spaces, operators, diagonals, transfers, Schwarz operators, coarse set-up;
///   pmg_hierarchy) per (eps, base) is shared by all the runs of that case; each run builds its own
///   VCycle (its Chebyshev bounds: Lanczos / Arnoldi estimates on every level) and Krylov solver.
///   setup_seconds of a run = the hierarchy's set-up + the cycle's, i.e. what SemPoissonPlan would
///   spend for that configuration; its iterations are those of a SemPoissonPlan with the same
///   options (tests/test_sem_study.cpp checks this).
/// - The default solver the best ones are compared with: nekRS's default pressure preconditioner,
///   1st-kind Chebyshev (cheb1) over ASM, order 2, symmetric V-cycle, schedule (7, 3, 1), PCG.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "elliptica/multigrid/pmg.hpp"

namespace elliptica::multigrid {

/// The schedule of Schwarz-smoothed pMG (seed 003 section 6, nekRS): (p, p / 2, 1), the middle
/// order dropped when it is not strictly between 1 and p ((7, 3, 1); (4, 2, 1); (3, 1); (2, 1)).
/// InvalidArgument for p outside [2, kMaxSemOrder].
std::vector<int> sem_schwarz_schedule(int p);

/// Options of run_sem_study; SemStudyOptions{} holds the defaults (the CLI's `mg sem-study`).
struct SemStudyOptions {
  /// Elements per axis of the Kershaw mesh, in [2, 64]; the map is reproduced exactly for
  /// multiples of 6. The default 6 (68,921 unknowns at p = 7; 24,389 at p = 5) is the smallest
  /// exact Kershaw mesh: the full default study (432 solves) is tens of minutes on this 2-core
  /// machine at p = 7, about 15 at p = 5 with max_iterations 100 (docs/multigrid.md,
  /// bench/results/sem_study_issue14/).
  int n = 6;
  std::vector<double> eps{1.0, 0.3, 0.05};  ///< Kershaw parameters, each in (0, 1]
  int order = 7;                             ///< p, in [2, kMaxSemOrder]
  /// Chebyshev kinds: cheb1 (1st kind, lambda_min = lmin_ratio lambda_max), cheb1opt (1st kind,
  /// optimised lambda_min), cheb4, opt4 (smoother.hpp); "simple" is accepted too.
  std::vector<std::string> kinds{"cheb1", "cheb1opt", "cheb4", "opt4"};
  /// each jacobi|asm|asm-weighted|ras; the Schwarz local solves in a default plan's precision (fp32)
  std::vector<std::string> bases{"jacobi", "asm", "ras"};
  std::vector<int> cheb_orders{1, 2, 3, 4, 5, 6};          ///< k, each in [1, 30]
  std::vector<std::string> cycles{"symmetric", "one-sided"};  ///< (k, k) and / or (2k, 0)
  std::vector<int> jacobi_schedule;   ///< empty: default_pmg_schedule(order)
  std::vector<int> schwarz_schedule;  ///< empty: sem_schwarz_schedule(order)
  double rtol = 1e-8;                 ///< relative residual reduction, in (0, 1)
  int max_iterations = 200;           ///< Krylov iterations per solve, >= 1 (not converged: recorded)
  int restart = 30;                   ///< FGMRES restart length, >= 1
  int repeats = 1;                    ///< solves per configuration, the fastest kept, in [1, 100]
  int threads = 0;                    ///< threads of every kernel (0: omp_get_max_threads()), in [0, 1024]
  PmgCoarseSolver coarse = default_pmg_coarse_solver();  ///< order-1 solve
};

/// One configuration's solve. failure: the error text when its set-up or its solve threw
/// (iterations etc. then hold what was known, converged false).
struct SemStudyRun {
  double eps = 0;
  std::string kind, base, schedule, cycle;  ///< schedule as "7,3,1"; cycle "symmetric" / "one-sided"
  int cheb_order = 0;                       ///< k
  int pre = 0, post = 0;                    ///< the cycle's orders: (k, k) or (2k, 0)
  std::string krylov;                       ///< "pcg" or "fgmres"
  int iterations = 0;
  bool converged = false;
  double final_rel = std::numeric_limits<double>::quiet_NaN();  ///< ||r|| / ||r0|| at the end
  double setup_seconds = 0;           ///< hierarchy + cycle set-up (a SemPoissonPlan's)
  double cycle_setup_seconds = 0;     ///< the cycle alone (Chebyshev bound estimates)
  double solve_seconds = 0;           ///< the Krylov solve (fastest of `repeats`)
  double seconds_per_iteration = std::numeric_limits<double>::quiet_NaN();
  std::string failure;
};

/// One (eps, base) hierarchy.
struct SemStudyCase {
  double eps = 0;
  std::string base, schedule;
  std::size_t unknowns = 0;       ///< free nodes of the order-p space
  double setup_seconds = 0;       ///< pmg_hierarchy's wall time
  std::string failure;            ///< its error text when the hierarchy could not be built
};

struct SemStudyResult {
  SemStudyOptions options;
  std::vector<SemStudyCase> cases;
  std::vector<SemStudyRun> runs;
  double seconds = 0;  ///< wall time of the study
};

/// Throws InvalidArgument naming the option as the CLI spells it (--n, --eps, --order, --kinds,
/// --bases, --cheb-orders, --cycles, --rtol, --max-iter, --restart, --repeats, --threads, and the
/// schedules) when it is out of range or a list is empty.
void validate_sem_study_options(const SemStudyOptions& opt);

/// Number of solves run_sem_study makes: eps x bases x kinds x cheb_orders x cycles.
std::size_t sem_study_size(const SemStudyOptions& opt);

/// Runs the study (file docstring). Throws InvalidArgument for bad options (before any work),
/// ResourceError when a mesh, space or hierarchy needs more memory than allowed (the study is too
/// large); other errors of one eps's mesh or space (e.g. an eps so small that element
/// faces coincide), of one case's hierarchy or of one run are recorded (SemStudyCase::failure,
/// SemStudyRun::failure: the text, the other fields what was known), not thrown.
/// `log` (may be empty) receives one progress line at a time (no newline): one per case, one per
/// run with its result and "runs done / total".
SemStudyResult run_sem_study(const SemStudyOptions& opt, const std::function<void(const std::string&)>& log = {});

/// The CSV (header + one line per run): eps,kind,base,schedule,cheb_order,cycle,pre,post,krylov,
/// iterations,converged,final_rel_residual,setup_s,cycle_setup_s,solve_s,time_per_iteration_s,
/// unknowns,elements_per_axis,order,failure (failure quoted).
std::string sem_study_csv(const SemStudyResult& r);

/// The text report: configuration, hierarchies, per eps the best solver by solve time and by
/// iterations, the best per base and per cycle, the default (cheb1 ASM k = 2 symmetric) and the
/// seed's best configurations with their time relative to the best, and the seed's findings
/// checked (HOLDS / DIFFERS with the numbers); csv_path is named as where every run is.
void write_sem_study_report(std::ostream& os, const SemStudyResult& r, const std::string& csv_path);

}  // namespace elliptica::multigrid
