#pragma once
/// @file ewald_cmd.hpp
/// The `elliptica ewald` subcommand: spectral Ewald summation of Laplace, stokeslet, stresslet or
/// combined Stokes (stokeslet + stresslet) sums in a triply periodic rectangular box, from array
/// files (or a GROMACS .gro file) to an array file, with an optional JSON summary and (Laplace)
/// the electrostatic energy and forces.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "elliptica/ewald/ewald.hpp"

namespace elliptica::cli {

/// Raw command-line values of `elliptica ewald`; interpreted and validated by run_ewald. The
/// defaults are read from a default-constructed ewald::Options (never re-declared here), so the
/// CLI, the Python package and the C++ library agree.
struct EwaldArgs {
  std::string kernel = ewald::to_string(ewald::Options{}.kernel);
  std::string periodicity = ewald::to_string(ewald::Options{}.periodicity);
  CLI::Option* o_periodicity = nullptr;
  std::string box;  ///< "L" or "L1,L2,L3"
  double tol = ewald::Options{}.tolerance;
  bool abs_tol = false;  ///< flag: ToleranceKind::Absolute instead of the default kind
  std::string sources, strengths, targets;
  std::string dipoles, normals;  ///< stresslet / stokes-combined: q (N,3) and nu (N,3)
  std::string gro, charges;
  double viscosity = ewald::Options{}.viscosity;
  bool field = ewald::Options{}.compute_field;
  bool pressure = ewald::Options{}.compute_pressure;
  bool zero_mode = ewald::Options{}.stresslet_zero_mode;
  std::string precision = ewald::to_string(ewald::Options{}.precision);
  bool energy = ewald::Options{}.compute_energy;
  std::string exclusions;  ///< (K,2) integer pairs (Laplace, targets = sources)
  std::string forces_out;  ///< with --energy: the forces F = q E (N,3)
  std::string summary;     ///< JSON summary of the run
  int threads = ewald::Options{}.threads;
  std::string fft_planner = ewald::to_string(ewald::Options{}.fft_planner);  ///< estimate, measure or wisdom
  bool no_potential = !ewald::Options{}.compute_potential;  ///< flag: leave the potential out (laplace, --field/--energy)
  bool no_pair_symmetry = !ewald::Options{}.pair_symmetry;  ///< flag: P2P without pair symmetry (benchmarks)
  double xi = 0, rc = 0, beta = 0;
  std::string grid;
  int P = 0, degree = 0;
  std::string out;
  bool quiet = false;
  std::string slab_axis = "auto";  ///< under mpirun: auto (the longest side), x, y or z

  // `elliptica ewald calibrate`: measures the cost model's constants (ewald::calibrate_costs)
  CLI::App* calibrate = nullptr;
  std::string cal_precision = "both";  ///< single, double or both
  std::string cal_output;              ///< also write the constants to this JSON file
  bool cal_no_cache = false;           ///< do not write the per-machine cache
  bool cal_quiet = false;

  // `elliptica ewald fft-wisdom`: lists (or with --rebuild measures again) the FFT wisdom cache
  CLI::App* fft_wisdom = nullptr;
  bool fw_rebuild = false;
  std::vector<std::string> fw_grids;    ///< with --rebuild: also these problems, "M" or "M1,M2,M3"
  std::string fw_precision = "both";    ///< single, double or both (for --grid)
  std::string fw_transforms = "1,4";    ///< forward,backward transform counts (for --grid)
  std::vector<int> fw_threads{1};       ///< thread counts (for --grid)
  bool fw_quiet = false;

  // Options, to ask whether a value was given on the command line.
  CLI::Option *o_viscosity = nullptr, *o_xi = nullptr, *o_rc = nullptr, *o_grid = nullptr, *o_P = nullptr,
              *o_beta = nullptr, *o_degree = nullptr, *o_box = nullptr, *o_sources = nullptr,
              *o_strengths = nullptr, *o_targets = nullptr, *o_gro = nullptr, *o_charges = nullptr,
              *o_dipoles = nullptr, *o_normals = nullptr, *o_exclusions = nullptr, *o_forces_out = nullptr,
              *o_summary = nullptr, *o_energy = nullptr, *o_zero_mode = nullptr, *o_field = nullptr,
              *o_out = nullptr;
};

/// Registers the `ewald` subcommand on `app`, storing values into `args` (which must outlive parsing).
CLI::App* add_ewald_command(CLI::App& app, EwaldArgs& args);

/// Runs the subcommand (or `ewald calibrate` when that was given). Returns 0 on success; throws elliptica::Error (InvalidArgument, IOError,
/// NumericalError, ResourceError) on bad input or failure, in which case no output file (--out,
/// --forces-out, --summary) has been written and existing files there are unchanged.
int run_ewald(const EwaldArgs& args);

}  // namespace elliptica::cli
