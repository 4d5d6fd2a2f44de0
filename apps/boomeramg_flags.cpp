/// @file boomeramg_flags.cpp
/// The --boomeramg-* flags of `mg solve` and `mg sem` (boomeramg_flags.hpp).
#include "boomeramg_flags.hpp"

#include <cstdio>

#include "elliptica/core/error.hpp"

namespace elliptica::cli {
namespace {
std::string fmt_g(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}
}  // namespace

void add_boomeramg_flags(CLI::App* sc, BoomerAmgFlags& f, const BoomerAmgFlagTexts& texts) {
  f.options = {
      sc->add_option("--boomeramg-relax", f.relax,
                     "l1-jacobi|chebyshev|hybrid-sgs|l1-sgs|hybrid-gs: relaxation of hypre's cycle (hybrid-gs is not "
                     "symmetric: no pcg)")
          ->capture_default_str(),
      sc->add_option("--boomeramg-coarsen", f.coarsen, "hmis|pmis|falgout: BoomerAMG's C/F splitting")
          ->capture_default_str(),
      sc->add_option("--boomeramg-interp", f.interp, "ext+i|classical|direct|standard|extended: BoomerAMG's interpolation")
          ->capture_default_str(),
      sc->add_option("--boomeramg-strength", f.strength,
                     "strength threshold in [0,1) (0.25 for 2D; hypre advises 0.5 for 3D)")
          ->capture_default_str(),
      sc->add_option("--boomeramg-pmax", f.pmax, "at most this many entries per row of P (0: no truncation)")
          ->capture_default_str(),
      sc->add_option("--boomeramg-agg-levels", f.agg_levels, "levels coarsened aggressively (0: none)")
          ->capture_default_str(),
      sc->add_option("--boomeramg-max-levels", f.max_levels, "cap on BoomerAMG's levels (>= 2)")->capture_default_str(),
      sc->add_option("--boomeramg-coarse-size", f.coarse_size, "BoomerAMG stops coarsening at this many unknowns")
          ->capture_default_str(),
      sc->add_option("--boomeramg-sweeps", f.sweeps, texts.sweeps)->capture_default_str(),
      sc->add_option("--boomeramg-cycles", f.cycles, texts.cycles)->capture_default_str()};
  if (texts.with_tol)
    f.options.push_back(
        sc->add_option("--boomeramg-tol", f.tol,
                       "> 0: hypre cycles until this relative residual (at most --boomeramg-cycles; not a fixed map: fgmres)")
            ->capture_default_str());
  f.options.push_back(
      sc->add_option("--boomeramg-print-level", f.print_level, "hypre's own printing on stdout (0: none; 1: set-up)")
          ->capture_default_str());
}

multigrid::BoomerAmgOptions boomeramg_options_from_flags(const BoomerAmgFlags& f) {
  namespace mg = elliptica::multigrid;
  mg::BoomerAmgOptions o;
  o.relaxation = mg::boomeramg_relaxation_from_string(f.relax, "--boomeramg-relax");
  o.coarsening = mg::boomeramg_coarsening_from_string(f.coarsen, "--boomeramg-coarsen");
  o.interpolation = mg::boomeramg_interpolation_from_string(f.interp, "--boomeramg-interp");
  if (!(f.strength >= 0 && f.strength < 1))
    throw InvalidArgument("--boomeramg-strength must be in [0, 1), got " + fmt_g(f.strength));
  if (f.pmax < 0) throw InvalidArgument("--boomeramg-pmax must be >= 0 (0: no truncation), got " + std::to_string(f.pmax));
  if (f.agg_levels < 0)
    throw InvalidArgument("--boomeramg-agg-levels must be >= 0, got " + std::to_string(f.agg_levels));
  if (f.max_levels < 2)
    throw InvalidArgument("--boomeramg-max-levels must be >= 2, got " + std::to_string(f.max_levels));
  if (f.coarse_size < 1)
    throw InvalidArgument("--boomeramg-coarse-size must be >= 1, got " + std::to_string(f.coarse_size));
  if (f.sweeps < 1 || f.sweeps > 100)
    throw InvalidArgument("--boomeramg-sweeps must be in [1, 100], got " + std::to_string(f.sweeps));
  if (f.cycles < 1 || f.cycles > 1000)
    throw InvalidArgument("--boomeramg-cycles must be in [1, 1000], got " + std::to_string(f.cycles));
  if (!(f.tol >= 0 && f.tol < 1))
    throw InvalidArgument("--boomeramg-tol must be in [0, 1) (0: exactly --boomeramg-cycles cycles), got " + fmt_g(f.tol));
  if (f.print_level < 0 || f.print_level > 3)
    throw InvalidArgument("--boomeramg-print-level must be in 0..3, got " + std::to_string(f.print_level));
  o.strength_threshold = f.strength;
  o.max_interp_elements = f.pmax;
  o.aggressive_levels = f.agg_levels;
  o.max_levels = f.max_levels;
  o.max_coarse_size = f.coarse_size;
  o.sweeps = f.sweeps;
  o.cycles = f.cycles;
  o.tolerance = f.tol;
  o.print_level = f.print_level;
  mg::check_boomeramg_options(o, "--boomeramg-*");
  return o;
}

}  // namespace elliptica::cli
