#pragma once
/// @file bem_cmd.hpp
/// The `elliptica bem` subcommand (seed 001): exterior Helmholtz scattering by a closed
/// triangulated surface with the Burton-Miller collocation BEM (dense or FMM operator), GMRES with an optional
/// block-diagonal (octree) preconditioner; writes the surface field (.npy, .vtu), the far field
/// (CSV) and a bistatic cross-section plot (PNG).
#include <string>

#include <CLI/CLI.hpp>

namespace elliptica::cli {

/// Raw command-line values of `elliptica bem`; interpreted and validated by run_bem.
struct BemArgs {
  std::string mesh;
  std::string k;
  std::string bc = "neumann";
  std::string incident = "plane:0,0,1";
  std::string precond = "bd";
  std::string op = "auto";
  int dense_max = 4000;
  double fmm_tol = 0;
  int bd_level = -1;
  int bd_leaf = 64;
  double tol = 1e-5;
  int restart = 200;
  int max_iter = 1000;
  std::string alpha;
  int threads = 0;
  int far_field_points = 400;
  std::string out;
  bool no_plots = false;
  std::string plot_script;
  bool quiet = false;
};

/// Registers `bem` on `app`; `args` must outlive parsing.
CLI::App* add_bem_command(CLI::App& app, BemArgs& args);

/// Runs `elliptica bem`. Returns 0 on success; throws elliptica::Error on bad input
/// (InvalidArgument, exit 2), file problems (IOError, exit 3), numerical failure (exit 4) or no
/// convergence (NotConverged, exit 5). Output files are written atomically, only on success.
int run_bem(const BemArgs& args);

}  // namespace elliptica::cli
