#pragma once
/// @file ewald_cmd.hpp
/// The `elliptica ewald` subcommand: spectral Ewald summation of Laplace or stokeslet sums in a
/// triply periodic rectangular box, from array files (or a GROMACS .gro file) to an array file.
#include <string>

#include <CLI/CLI.hpp>

namespace elliptica::cli {

/// Raw command-line values of `elliptica ewald`; interpreted and validated by run_ewald.
struct EwaldArgs {
  std::string kernel = "laplace";
  std::string box;  ///< "L" or "L1,L2,L3"
  double tol = 1e-6;
  bool abs_tol = false;
  std::string sources, strengths, targets;
  std::string gro, charges;
  double viscosity = 1.0;
  bool field = false;
  int threads = 0;
  double xi = 0, rc = 0, beta = 0;
  std::string grid;
  int P = 0, degree = 0;
  std::string out;
  bool quiet = false;

  // Options, to ask whether a value was given on the command line.
  CLI::Option *o_viscosity = nullptr, *o_xi = nullptr, *o_rc = nullptr, *o_grid = nullptr, *o_P = nullptr,
              *o_beta = nullptr, *o_degree = nullptr, *o_box = nullptr, *o_sources = nullptr,
              *o_strengths = nullptr, *o_targets = nullptr, *o_gro = nullptr, *o_charges = nullptr;
};

/// Registers the `ewald` subcommand on `app`, storing values into `args` (which must outlive parsing).
CLI::App* add_ewald_command(CLI::App& app, EwaldArgs& args);

/// Runs the subcommand. Returns 0 on success; throws elliptica::Error (InvalidArgument, IOError,
/// NumericalError) on bad input or failure, in which case no output file has been written and an
/// existing file at --out is unchanged.
int run_ewald(const EwaldArgs& args);

}  // namespace elliptica::cli
