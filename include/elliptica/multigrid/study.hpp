#pragma once
/// @file study.hpp
/// The seed's section-3 multigrid study (seed 003) as a library tool: on the 2D FD Poisson test
/// problem (seed_problem_2d, Ly = 1) for every Lx, coarsening factor, smoother kind and split
/// (m, n) with m + n = 2k, k = 1..kmax, one stationary solve and one GMRES(restart) solve to
/// rtol from x0 = 0, both through MultigridPlan (base Jacobi). run_study returns the rows;
/// study_csv / write_study_report format them (the CLI's `elliptica mg study` writes and prints
/// them); the CLI (apps/plot_script.hpp) draws the PNG plots from the CSV with scripts/mg_study_plots.py.
#include <functional>
#include <cstddef>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

namespace elliptica::multigrid {

struct StudyOptions {
  int n = 128;                                    ///< intervals per axis, in [4, 4096]
  std::vector<double> lx{1, 8, 64, 128};          ///< domain lengths in x (Ly = 1)
  std::vector<int> coarsening{2, 8};              ///< each 2 or 8
  std::vector<std::string> smoothers{"simple", "cheb1", "cheb1opt", "cheb4", "opt4"};
  int kmax = 10;                                  ///< in [1, 50]
  int solver_max_iter = 200;                      ///< cycle cap of the stationary solves
  int gmres_max_iter = 1000;                      ///< iteration cap of the GMRES solves
  double rtol = 1e-6;
  int restart = 20;
  int threads = 0;                                ///< the plans' threads (0: omp_get_max_threads())
};

/// One solve. mode "solver" (stationary) or "gmres"; failure: the error text when the set-up or
/// the solve threw (the other fields then hold what was known).
struct StudyRun {
  double lx = 0;
  int c = 0;
  std::string mode;
  std::string kind;
  int m = 0, n = 0, k = 0;
  int iterations = 0;
  long matvecs = 0;
  double rho = std::numeric_limits<double>::quiet_NaN(), final_rel = std::numeric_limits<double>::quiet_NaN();
  bool converged = false;
  std::string failure;
};

/// One (Lx, coarsening) hierarchy.
struct StudyCase {
  double lx;
  int c;
  std::size_t levels;
  double opc;  ///< operator complexity
};

struct StudyResult {
  StudyOptions options;
  std::vector<StudyCase> cases;
  std::vector<StudyRun> runs;
  double seconds = 0;  ///< wall time of the runs
};

/// Throws InvalidArgument on options out of range (names the option as the CLI spells it);
/// errors of individual runs are recorded in StudyRun::failure. `log` (may be empty) receives one
/// progress line at a time (no newline).
StudyResult run_study(const StudyOptions& opt, const std::function<void(const std::string&)>& log = {});
/// Validates the options as run_study does (before any work).
void validate_study_options(const StudyOptions& opt);

/// The CSV (header + one line per run): lx,coarsening,mode,smoother,m,n,k,iterations,matvecs,rho,
/// final_rel_residual,converged,levels,op_complexity,grid_n.
std::string study_csv(const StudyResult& r);

/// The text report: configuration, hierarchies, best configuration per case (the seed's Table 1)
/// and PASS/DIFFERS for the seed's three findings; csv_path is named as where every run is.
void write_study_report(std::ostream& os, const StudyResult& r, const std::string& csv_path);

}  // namespace elliptica::multigrid
