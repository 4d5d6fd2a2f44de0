#pragma once
/// @file boomeramg_flags.hpp
/// The `--boomeramg-*` flags shared by `mg solve` (--amg boomeramg, --coarse-solver boomeramg) and
/// `mg sem` (--coarse-solver boomeramg): one struct of values with multigrid::BoomerAmgOptions{}'s
/// defaults, one registration, one check that names the flag of a bad value (exit 2 through
/// InvalidArgument), then the library's own check (multigrid::check_boomeramg_options).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "elliptica/multigrid/boomeramg.hpp"

namespace elliptica::cli {

/// The values of the --boomeramg-* flags (defaults: multigrid::BoomerAmgOptions{}).
struct BoomerAmgFlags {
  std::string relax = multigrid::to_string(multigrid::BoomerAmgOptions{}.relaxation);
  std::string coarsen = multigrid::to_string(multigrid::BoomerAmgOptions{}.coarsening);
  std::string interp = multigrid::to_string(multigrid::BoomerAmgOptions{}.interpolation);
  double strength = multigrid::BoomerAmgOptions{}.strength_threshold;
  int pmax = multigrid::BoomerAmgOptions{}.max_interp_elements;
  int agg_levels = multigrid::BoomerAmgOptions{}.aggressive_levels;
  int max_levels = multigrid::BoomerAmgOptions{}.max_levels;
  int coarse_size = multigrid::BoomerAmgOptions{}.max_coarse_size;
  int sweeps = multigrid::BoomerAmgOptions{}.sweeps;
  int cycles = multigrid::BoomerAmgOptions{}.cycles;
  double tol = multigrid::BoomerAmgOptions{}.tolerance;
  int print_level = multigrid::BoomerAmgOptions{}.print_level;
  std::vector<CLI::Option*> options;  ///< every registered --boomeramg-* flag (set by add_boomeramg_flags)
};

/// What the registration says of hypre's cycle, per subcommand.
struct BoomerAmgFlagTexts {
  std::string sweeps = "relaxation sweeps per level and leg of hypre's cycle";
  std::string cycles = "hypre V-cycles per application (from zero)";
  bool with_tol = true;  ///< register --boomeramg-tol (hypre's cycle as a solve to a tolerance)
};

/// Registers the --boomeramg-* flags on `sc`, bound to `f` (which must outlive parsing).
void add_boomeramg_flags(CLI::App* sc, BoomerAmgFlags& f, const BoomerAmgFlagTexts& texts = {});

/// The BoomerAmgOptions of the flags. Throws InvalidArgument naming the flag of a value out of
/// range (--boomeramg-strength in [0, 1), --boomeramg-pmax >= 0, --boomeramg-agg-levels >= 0,
/// --boomeramg-max-levels >= 2, --boomeramg-coarse-size >= 1, --boomeramg-sweeps in [1, 100],
/// --boomeramg-cycles in [1, 1000], --boomeramg-tol in [0, 1), --boomeramg-print-level in 0..3) or
/// an unknown name (relax, coarsen, interp), then runs multigrid::check_boomeramg_options.
multigrid::BoomerAmgOptions boomeramg_options_from_flags(const BoomerAmgFlags& f);

}  // namespace elliptica::cli
