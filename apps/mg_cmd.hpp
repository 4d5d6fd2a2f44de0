#pragma once
/// @file mg_cmd.hpp
/// The `elliptica mg` subcommand (issue 3, seed 003):
///   `mg solve`  geometric multigrid (polynomial smoothers, (m,n) V-cycle) on the finite-difference
///               Poisson test problems, as a stationary solver or as a GMRES/FGMRES/PCG
///               preconditioner, through multigrid::MultigridPlan (plan.hpp; its defaults are the
///               CLI's); or a user's SPD .mtx matrix with a smoothed-aggregation (default) or
///               geometric (--shape) hierarchy, hypre's BoomerAMG (--amg boomeramg: our cycle over
///               its levels or hypre's own cycle), or a polynomial smoother alone (--amg none);
///   `mg study`  the seed's section-3 study (multigrid/study.hpp: every smoother kind, every split
///               m + n = 2k), CSV + table of best configurations + checks of the seed's qualitative
///               findings + PNG plots (the study module runs the plotting script);
///   `mg sem-study` the seed's section-6 SEM p-multigrid study (mg_sem_study_cmd.hpp).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "boomeramg_flags.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/study.hpp"
#include "mg_sem_cmd.hpp"
#include "mg_sem_study_cmd.hpp"

namespace elliptica::cli {

/// Raw command-line values of `elliptica mg solve`; interpreted and validated by run_mg_solve.
struct MgSolveArgs {
  std::string problem = "poisson2d";
  int n = 64;
  double lx = 1, ly = 1, lz = 1;
  // Defaults: the library's (multigrid::MultigridOptions{}), so C++, CLI and Python agree.
  std::string smoother = "opt4";
  std::string base = "jacobi";
  std::string order;     ///< "M,N" (problems; default MultigridOptions{}.cycle) or "K" (--matrix; default 4)
  int coarsening = multigrid::MultigridOptions{}.hierarchy.coarsening;
  std::string krylov;    ///< none|gmres|fgmres|pcg (gmres20/fgmres20 accepted); default the library's, pcg (--matrix)
  int restart = multigrid::MultigridOptions{}.solver.krylov.restart;
  double tol = multigrid::MultigridOptions{}.solver.krylov.rtol;
  double atol = multigrid::MultigridOptions{}.solver.krylov.atol;
  int max_iter = multigrid::MultigridOptions{}.solver.krylov.max_iterations;
  int threads = 0;
  int subdomain = multigrid::MultigridOptions{}.cycle.smoother.subdomain, overlap = multigrid::MultigridOptions{}.cycle.smoother.overlap;
  std::string matrix, rhs, out;
  /// --matrix mode: the hierarchy: "sa" (smoothed aggregation, the default), "geometric" (needs
  /// --shape), "none" (a polynomial smoother of order K as the preconditioner, no hierarchy).
  std::string amg = "sa";
  std::string shape;      ///< "NX,NY[,NZ]" (--amg geometric)
  std::string null_space = "none";  ///< "constant": pure Neumann / periodic (MultigridOptions::constant_null_space)
  std::string near_null;  ///< .npy / text file of n x k near-null-space vectors (--amg sa)
  int block_size = multigrid::AmgOptions{}.block_size;
  double strength = multigrid::AmgOptions{}.strength_threshold;  ///< used when --strength is given
  std::string strength_measure = multigrid::to_string(multigrid::AmgOptions{}.strength_measure);
  long long coarse_size = static_cast<long long>(multigrid::AmgOptions{}.coarse_size);  ///< signed: -5 is refused, not wrapped
  /// --projection L: the columns of --rhs as a sequence, each started from Fischer's projection onto
  /// up to L previous solutions (krylov::SolutionProjection); 0: off.
  long long projection = 0;
  /// --coarse-solver: "direct" or "boomeramg" (--amg sa / geometric; MultigridOptions::coarse_solver).
  std::string coarse_solver = multigrid::to_string(multigrid::MultigridOptions{}.coarse_solver);
  // BoomerAMG (--amg boomeramg, --coarse-solver boomeramg): multigrid::BoomerAmgOptions{}'s defaults.
  std::string boomeramg_cycle = multigrid::to_string(multigrid::MultigridOptions{}.boomeramg_cycle);
  BoomerAmgFlags boomeramg;  ///< --boomeramg-* but --boomeramg-cycle (boomeramg_flags.hpp)
  bool quiet = false;
  CLI::Option* o_projection = nullptr;
  // Geometric hierarchies of any grid (coarsening.hpp); --bc: the boundary of the --problem.
  std::string grid = multigrid::to_string(multigrid::MultigridOptions{}.hierarchy.grid);
  std::string semi_coarsening = multigrid::to_string(multigrid::MultigridOptions{}.hierarchy.semi_coarsening);
  std::string bc = "dirichlet";
  CLI::Option *o_grid = nullptr, *o_semi_coarsening = nullptr, *o_bc = nullptr;
  CLI::Option *o_matrix = nullptr, *o_problem = nullptr, *o_n = nullptr, *o_lx = nullptr, *o_ly = nullptr,
              *o_lz = nullptr, *o_coarsening = nullptr, *o_rhs = nullptr, *o_out = nullptr, *o_shape = nullptr,
              *o_near_null = nullptr, *o_block_size = nullptr, *o_strength = nullptr, *o_strength_measure = nullptr,
              *o_coarse_size = nullptr, *o_amg = nullptr, *o_null_space = nullptr, *o_coarse_solver = nullptr,
              *o_boomeramg_cycle = nullptr;
};

/// Raw command-line values of `elliptica mg study`.
struct MgStudyArgs {
  int n = multigrid::StudyOptions{}.n;
  std::string lx = "1,8,64,128";
  std::string coarsening = "2,8";
  std::string smoothers = "simple,cheb1,cheb1opt,cheb4,opt4";
  int kmax = multigrid::StudyOptions{}.kmax;
  int solver_max_iter = multigrid::StudyOptions{}.solver_max_iter;
  int gmres_max_iter = multigrid::StudyOptions{}.gmres_max_iter;
  std::string out = "mg_study";
  bool quick = false;
  bool no_plots = false;
  std::string plot_script;
  int threads = 0;
  CLI::Option *o_n = nullptr, *o_lx = nullptr, *o_kmax = nullptr;
};

struct MgArgs {
  MgSolveArgs solve;
  MgStudyArgs study;
  MgSemArgs sem;  ///< `mg sem` (mg_sem_cmd.hpp)
  CLI::App *cmd = nullptr, *solve_cmd = nullptr, *study_cmd = nullptr, *sem_cmd = nullptr;
  MgSemStudyArgs sem_study;               ///< `mg sem-study` (mg_sem_study_cmd.hpp)
  CLI::App* sem_study_cmd = nullptr;
};

/// Registers `mg` with its subcommands `solve` and `study` on `app`; `args` must outlive parsing.
CLI::App* add_mg_command(CLI::App& app, MgArgs& args);

/// Runs whichever `mg` subcommand was parsed. Returns the exit code (0 success); throws
/// elliptica::Error on bad input (InvalidArgument, exit 2), file problems (IOError, exit 3),
/// numerical failure (exit 4) or no convergence (NotConverged, exit 5). Output files are written
/// atomically and only on success.
int run_mg(const MgArgs& args);

}  // namespace elliptica::cli
