#pragma once
/// @file mg_sem_study_cmd.hpp
/// `elliptica mg sem-study` (issue 14; seed 003 section 6): the SEM p-multigrid study on the
/// Kershaw meshes (multigrid/sem_study.hpp: every smoother kind x base x Chebyshev order x
/// symmetric / one-sided cycle), CSV + best-solver tables + the seed's findings checked + PNG plots
/// (scripts/sem_study_plots.py, matplotlib, run through plot_script.hpp).
#include <string>

#include <CLI/CLI.hpp>

#include "elliptica/multigrid/sem_study.hpp"

namespace elliptica::cli {

/// Raw command-line values of `elliptica mg sem-study` (defaults: multigrid::SemStudyOptions{}).
struct MgSemStudyArgs {
  int n = multigrid::SemStudyOptions{}.n;
  std::string eps;          ///< comma-separated; empty: the library's default list
  int order = multigrid::SemStudyOptions{}.order;
  std::string kinds;        ///< comma-separated; empty: default
  std::string bases;        ///< comma-separated; empty: default
  std::string cheb_orders;  ///< comma-separated; empty: default
  std::string cycles;       ///< comma-separated; empty: default
  double rtol = multigrid::SemStudyOptions{}.rtol;
  int max_iter = multigrid::SemStudyOptions{}.max_iterations;
  int repeats = multigrid::SemStudyOptions{}.repeats;
  int threads = multigrid::SemStudyOptions{}.threads;
  std::string coarse_solver = multigrid::to_string(multigrid::SemStudyOptions{}.coarse);
  std::string out = "sem_study";
  bool quick = false;
  bool no_plots = false;
  std::string plot_script;
  CLI::Option *o_n = nullptr, *o_order = nullptr;
};

/// Registers `sem-study` under `mg`; `args` must outlive parsing.
CLI::App* add_mg_sem_study_command(CLI::App& mg, MgSemStudyArgs& args);

/// Runs it: writes OUT/sem_study.csv (atomically, after the runs) and the plots, prints the
/// report on stdout, progress on stderr. Returns 0; throws InvalidArgument (exit 2) for bad
/// values, IOError (exit 3) for an output folder that cannot be created or written, or a plotting
/// failure (after the CSV is written), ResourceError (exit 6) for a mesh too large.
int run_mg_sem_study(const MgSemStudyArgs& args);

}  // namespace elliptica::cli
