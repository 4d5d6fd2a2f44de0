/// @file ewald_cmd.cpp
/// `elliptica ewald`: reads sources and their densities (charges, forces, or dipoles with
/// normals; or a .gro file), runs an EwaldPlan (set_points, optional set_exclusions, evaluate),
/// writes the result, and optionally the forces (--forces-out) and a JSON summary (--summary), as
/// one set of outputs committed together (each through a temporary created before the
/// computation), and prints the chosen parameters, the error estimate and per-stage timings.
#include "ewald_cmd.hpp"
#include "mpi_env.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/record.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "elliptica/ewald/gro.hpp"

namespace elliptica::cli {
namespace {

namespace fs = std::filesystem;
constexpr int kMaxThreads = 1024;          // the library rejects more, too
constexpr int kMinDegree = 1, kMaxDegree = 30;  // window polynomial degree range of the library

/// %g-style text of a double for messages (never "0.000000" for small values).
std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// True if `a` and `b` name the same file: by device/inode when both exist (this also sees
/// through symbolic and hard links), else by their weakly canonical absolute paths.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  ec.clear();
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  if (ec) return false;
  return ca == cb;
}

std::string shape_str(const Array2D& a) {
  if (a.ndim == 1) return "(" + std::to_string(a.rows) + ",)";
  return "(" + std::to_string(a.rows) + "," + std::to_string(a.cols) + ")";
}

std::array<double, 3> parse_box(const std::string& s) {
  const auto parts = split(s, ',');
  if (parts.size() != 1 && parts.size() != 3)
    throw InvalidArgument("--box: expected L (cube) or L1,L2,L3, got '" + s + "'");
  std::array<double, 3> L{};
  for (int d = 0; d < 3; ++d) L[d] = to_double(parts[parts.size() == 1 ? 0 : d], "--box");
  for (int d = 0; d < 3; ++d)
    if (!(std::isfinite(L[d]) && L[d] > 0))
      throw InvalidArgument("--box: box lengths must be positive and finite, got '" + s + "'");
  return L;
}

std::array<int, 3> parse_grid(const std::string& s) {
  const auto parts = split(s, ',');
  if (parts.size() != 1 && parts.size() != 3)
    throw InvalidArgument("--grid: expected M or M1,M2,M3, got '" + s + "'");
  std::array<int, 3> M{};
  for (int d = 0; d < 3; ++d) M[d] = to_int(parts[parts.size() == 1 ? 0 : d], "--grid");
  for (int d = 0; d < 3; ++d)
    if (M[d] < 1) throw InvalidArgument("--grid: grid sizes must be positive, got '" + s + "'");
  return M;
}

/// "OW=-0.82,HW=0.41" -> {(OW,-0.82),(HW,0.41)}; an atom takes the charge of the longest
/// matching name prefix.
std::vector<std::pair<std::string, double>> parse_charges(const std::string& s) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& item : split(s, ',')) {
    const auto eq = item.find('=');
    if (item.empty() || eq == std::string::npos || eq == 0)
      throw InvalidArgument("--charges: expected NAME=Q[,NAME=Q...], got entry '" + item + "'");
    const std::string name = trim(item.substr(0, eq));
    const double q = to_double(trim(item.substr(eq + 1)), "--charges " + name);
    if (!std::isfinite(q)) throw InvalidArgument("--charges: charge of '" + name + "' is not finite");
    out.emplace_back(name, q);
  }
  if (out.empty()) throw InvalidArgument("--charges: no entries");
  return out;
}

/// An (N,3) array of coordinates with N >= 1 (N == 0 allowed when `allow_empty`: then an empty
/// file, or a header-only or (0,3) one); anything else is an error naming `what`.
void require_points(const Array2D& a, const std::string& what, const std::string& file, bool allow_empty = false) {
  if (a.rows == 0) {
    if (allow_empty && a.ndim == 2 && (a.cols == 3 || a.cols == 0)) return;
    throw InvalidArgument(what + " (" + file + ") contains no points");
  }
  if (a.ndim != 2 || a.cols != 3)
    throw InvalidArgument(what + " (" + file + ") must be an (N,3) array of coordinates, got shape " + shape_str(a));
}

/// An (N,3) array of vectors (dipoles, normals, forces) with one row per source.
void require_vectors(const Array2D& a, const std::string& what, const std::string& file, std::size_t n_sources,
                     const std::string& sources_file) {
  if (a.rows == 0) throw InvalidArgument(what + " (" + file + ") contains no values");
  if (a.ndim != 2 || a.cols != 3)
    throw InvalidArgument(what + " (" + file + ") must be an (N,3) array, got shape " + shape_str(a));
  if (a.rows != n_sources)
    throw InvalidArgument("length mismatch: " + what + " (" + file + ") has " + std::to_string(a.rows) +
                          " rows but sources (" + sources_file + ") has " + std::to_string(n_sources));
  require_finite(a.view(), what + " (" + file + ")");
}

/// (K,2) integer pairs of source indices; an empty file (or (0,2), header-only) is K = 0.
/// Indices must be integers in [0, N) and i != j (checked here to name the file and row; the
/// library checks again).
std::vector<std::array<std::int64_t, 2>> to_pairs(const Array2D& a, const std::string& file, std::size_t n_sources) {
  std::vector<std::array<std::int64_t, 2>> pairs;
  if (a.rows == 0) return pairs;
  if (a.ndim != 2 || a.cols != 2)
    throw InvalidArgument("--exclusions (" + file + ") must be a (K,2) array of source index pairs, got shape " +
                          shape_str(a));
  pairs.reserve(a.rows);
  for (std::size_t r = 0; r < a.rows; ++r) {
    std::array<std::int64_t, 2> p{};
    for (int c = 0; c < 2; ++c) {
      const double v = a.values[2 * r + c];
      if (!(std::isfinite(v) && std::floor(v) == v))
        throw InvalidArgument("--exclusions (" + file + ") row " + std::to_string(r) + ": '" + fmt_g(v) +
                              "' is not an integer index");
      if (v < 0 || v >= static_cast<double>(n_sources))
        throw InvalidArgument("--exclusions (" + file + ") row " + std::to_string(r) + ": index " + fmt_g(v) +
                              " is out of range [0, " + std::to_string(n_sources) + ") of the sources");
      p[c] = static_cast<std::int64_t>(v);
    }
    if (p[0] == p[1])
      throw InvalidArgument("--exclusions (" + file + ") row " + std::to_string(r) + ": pair (" +
                            std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                            ") excludes a source from itself (the self-interaction is always excluded)");
    pairs.push_back(p);
  }
  return pairs;
}

bool ends_with_npy(const std::string& op) {
  if (op.size() < 4) return false;
  std::string s = op.substr(op.size() - 4);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == ".npy";
}

/// JSON number: the shortest of 15..17 significant digits that reads back as the same double;
/// null for NaN/Inf.
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}
template <class T>
std::string jarr3(const std::array<T, 3>& a) {
  std::string s = "[";
  for (int d = 0; d < 3; ++d) {
    if constexpr (std::is_floating_point_v<T>)
      s += jnum(a[d]);
    else
      s += std::to_string(a[d]);
    s += d < 2 ? ", " : "]";
  }
  return s;
}
std::string jstr_or_null(const std::string& s) { return s.empty() ? "null" : json_quote(s); }

bool free_space(const ewald::Options& o) { return !o.periodicity[0] && !o.periodicity[1] && !o.periodicity[2]; }

// The summary's box: null in 0P; in 2P / 1P the periods along the periodic axes, null along the
// free ones (their extent is the points', params.fft_box the grid's)
std::string box_json(const ewald::Options& o) {
  if (free_space(o)) return "null";
  std::string s = "[";
  for (int d = 0; d < 3; ++d) {
    if (d) s += ", ";
    s += o.periodicity[std::size_t(d)] ? jnum(o.box[std::size_t(d)]) : std::string("null");
  }
  return s + "]";
}

/// The "params" object of the summary: every field of ewald::Params (the keys of Python's
/// EwaldPlan.params, without "describe").

std::string params_json(const ewald::Params& p, const std::string& ind) {
  std::ostringstream js;
  js << "{\n"
     << ind << "  \"xi\": " << jnum(p.xi) << ",\n"
     << ind << "  \"rc\": " << jnum(p.rc) << ",\n"
     << ind << "  \"grid\": " << jarr3(p.grid) << ",\n"
     << ind << "  \"h\": " << jarr3(p.h) << ",\n"
     << ind << "  \"fft_box\": " << jarr3(p.fft_box) << ",\n"
     << ind << "  \"truncation_radius\": " << jnum(p.truncation_radius) << ",\n"
     << ind << "  \"cells\": " << jarr3(p.cells) << ",\n"
     << ind << "  \"P\": " << p.P << ",\n"
     << ind << "  \"beta\": " << jnum(p.beta) << ",\n"
     << ind << "  \"poly_degree\": " << p.poly_degree << ",\n"
     << ind << "  \"eps_abs\": " << jnum(p.eps_abs) << ",\n"
     << ind << "  \"result_rms\": " << jnum(p.result_rms) << ",\n"
     << ind << "  \"result_scale\": " << jnum(p.result_scale) << ",\n"
     << ind << "  \"est_real\": " << jnum(p.est_real) << ",\n"
     << ind << "  \"est_fourier\": " << jnum(p.est_fourier) << ",\n"
     << ind << "  \"est_window\": " << jnum(p.est_window) << ",\n"
     << ind << "  \"est_total\": " << jnum(p.est_total) << ",\n"
     << ind << "  \"est_relative\": " << jnum(p.est_relative) << ",\n"
     << ind << "  \"field_eps_abs\": " << jnum(p.field_eps_abs) << ",\n"
     << ind << "  \"field_rms\": " << jnum(p.field_rms) << ",\n"
     << ind << "  \"field_scale\": " << jnum(p.field_scale) << ",\n"
     << ind << "  \"field_est_total\": " << jnum(p.field_est_total) << "\n"
     << ind << "}";
  return js.str();
}

std::string times_json(const StageTimes& t, const std::string& ind) {
  std::string s = "{";
  bool first = true;
  for (const auto& [name, sec] : t.stages) {
    s += (first ? "\n" : ",\n") + ind + "  " + json_quote(name) + ": " + jnum(sec);
    first = false;
  }
  s += first ? "}" : "\n" + ind + "}";
  return s;
}

/// io::read_array, with a note on stderr when the first line was taken as a header of column
/// names and skipped (so that a dropped first row never goes unnoticed).
Array2D read_reporting(const std::string& path, const std::string& option, bool quiet) {
  io::ReadInfo info;
  Array2D a = io::read_array(path, &info);
  if (info.header_line > 0 && !quiet) {
    std::string names;
    for (const auto& n : info.column_names) names += (names.empty() ? "" : ", ") + n;
    std::cerr << "elliptica: note: " << option << " " << path << ": line " << info.header_line
              << " taken as a header of column names (" << names << ") and skipped\n";
  }
  return a;
}

void print_times(std::ostream& os, const StageTimes& t) {
  static const char* kMain[] = {"P2P", "P2G", "FFT", "CNV", "IFFT", "G2P"};
  std::vector<std::pair<std::string, double>> rows;
  for (const char* n : kMain) rows.emplace_back(n, t.get(n));
  for (const auto& s : t.stages)
    if (std::find(std::begin(kMain), std::end(kMain), s.first) == std::end(kMain)) rows.push_back(s);
  const double total = t.total();
  char line[128];
  os << "timings:\n";
  std::snprintf(line, sizeof line, "  %-12s %12s %7s\n", "stage", "seconds", "%");
  os << line;
  for (const auto& [name, sec] : rows) {
    std::snprintf(line, sizeof line, "  %-12s %12.6g %7.1f\n", name.c_str(), sec, total > 0 ? 100.0 * sec / total : 0.0);
    os << line;
  }
  std::snprintf(line, sizeof line, "  %-12s %12.6g %7.1f\n", "total", total, total > 0 ? 100.0 : 0.0);
  os << line;
}

}  // namespace

CLI::App* add_ewald_command(CLI::App& app, EwaldArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "ewald",
      "Spectral Ewald summation of triply periodic Laplace (1/r) or Stokes (stokeslet, stresslet, or both) sums "
      "in a rectangular box.");
  cmd->footer(
      "Inputs: the content decides, not the file name: a file that starts with the NumPy magic string is read\n"
      "  as .npy (float64/float32/int32/int64, C or Fortran order), any other file as a text table\n"
      "  (whitespace and/or comma separated numbers, '#' comments, one optional first line of column names).\n"
      "Densities per kernel: laplace --strengths = charges (N,); stokeslet --strengths = forces (N,3);\n"
      "  stresslet --dipoles q (N,3) and --normals nu (N,3), no --strengths; stokes-combined --strengths =\n"
      "  forces (N,3) plus --dipoles and --normals (velocity of both layers in one pass).\n"
      "Output: .npy if --out ends in .npy, else CSV with a '#' header. No output may be one of the inputs.\n"
      "Without --targets, the sources are the targets and the self-interaction is excluded. A --targets file\n"
      "  with 0 rows gives an empty output (0 rows).\n"
      "Output columns: laplace -> phi (N,), or [phi, Ex, Ey, Ez] (N,4) with --field; stokeslet, stresslet,\n"
      "  stokes-combined -> [ux, uy, uz]; stokeslet with --pressure -> [ux, uy, uz, p] (N,4).\n"
      "--energy (laplace, targets = sources): prints U = 1/2 sum q phi and, with --forces-out FILE, writes the\n"
      "  forces F = q E (N,3) [Fx, Fy, Fz] (.npy or CSV as --out); --exclusions PAIRS ((K,2) integer indices\n"
      "  into the sources) removes the direct interaction of each pair (nearest image) from phi, E, U and F.\n"
      "--summary FILE.json: kernel, sizes, options, every chosen parameter and error estimate, stage times,\n"
      "  peak memory, coincident pairs and the energy (null unless --energy).\n"
      "Units: none are imposed; lengths are in the unit of the inputs (nm for --gro), and\n"
      "  phi = sum q/r (Gaussian units, no 1/(4 pi eps0)), E = -grad phi (charge/length^2), U (charge^2/length),\n"
      "  u = 1/(8 pi mu) sum S(r) f with S = I/r + r r^T/r^3 (force/(viscosity*length)),\n"
      "  stresslet u_j = 1/(8 pi) sum T_jlm(r) q_l nu_m with T = -6 r_j r_l r_m/r^5 (no viscosity factor).\n"
      "Conventions: k = 0 mode excluded (tin-foil; the stresslet's k = 0 term only with --zero-mode); a\n"
      "  non-neutral Laplace system gets the uniform neutralising background. The tolerance is relative to\n"
      "  the RMS of the result unless --abs-tol.\n"
      "Under mpirun -n R (R > 1; MPI builds): the distributed plan (docs/ewald_mpi.md): rank 0 reads the inputs\n"
      "  and writes the outputs, MPI-SORT deals the points to slabs of the box along --slab-axis; results equal\n"
      "  the one-process run's to rounding; --summary adds \"ranks\" and \"mpi\" (per-rank slabs, points, ghost\n"
      "  sources, bytes sent, stage times, the communication model's bytes). Not yet under mpirun: --targets,\n"
      "  --energy, --exclusions, --gro.\n"
      "Outputs (--out, --forces-out, --summary) are written as one set: each to a temporary created before the\n"
      "  computation, renamed into place only when all are complete. --out may be a FIFO or a character device\n"
      "  (e.g. /dev/null, /dev/stdout), written through; a symbolic link is followed; an existing file keeps\n"
      "  its permissions.\n"
      "Exit codes: 0 ok, 1 command-line usage, 2 invalid input, 3 file error, 4 numerical failure,\n"
      "  6 out of resources (memory, threads, size limits).");

  std::vector<std::string> kernels;
  for (ewald::Kernel k : {ewald::Kernel::Laplace, ewald::Kernel::Stokeslet, ewald::Kernel::Stresslet,
                          ewald::Kernel::StokesCombined})
    kernels.push_back(ewald::to_string(k));
  cmd->add_option("--kernel", a.kernel, "laplace, stokeslet, stresslet or stokes-combined")
      ->check(CLI::IsMember(kernels))
      ->capture_default_str();
  a.o_box = cmd->add_option("--box", a.box, "box lengths L1,L2,L3 (or one L for a cube), > 0 (not with --periodicity 0P)");
  a.o_periodicity = cmd->add_option("--periodicity", a.periodicity,
                                    "periodic axes: 3P (all), 0P (free space: no --box, the points' bounding box is the "
                                    "domain), 2P (x, y periodic with --box L1,L2,L3, L3 not used), 1P (z periodic with "
                                    "period L3; L1, L2 not used) or the periodic axes' letters (xz, y, ...); every kernel "
                                    "(docs/ewald.md section 9)")
                        ->check([](const std::string& s) {
                          try {
                            (void)ewald::periodicity_from_string(s);
                          } catch (const std::exception& e) {
                            return std::string(e.what());
                          }
                          return std::string();
                        })
                        ->capture_default_str();
  cmd->add_option("--tol", a.tol, "tolerance 0 < EPS < 1 (relative RMS error unless --abs-tol)")
      ->capture_default_str();
  cmd->add_flag("--abs-tol", a.abs_tol, "EPS is an absolute RMS error in the result's units");
  cmd->add_option("--precision", a.precision,
                  "arithmetic of the stages: single (float32; relative tolerances above the float32 floor "
                  "2^-23 sqrt(log2(M1 M2 M3 N)), about 1e-6, else exit 4) or double")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            try {
              (void)ewald::precision_from_string(s);
              return {};
            } catch (const Error& e) {
              return e.what();
            }
          },
          "single|double", "precision"))
      ->capture_default_str();
  a.o_sources = cmd->add_option("--sources", a.sources, "source positions, (N,3) array file");
  a.o_strengths = cmd->add_option(
      "--strengths", a.strengths,
      "strengths: charges (N,) or (N,1) for laplace, forces (N,3) for stokeslet and stokes-combined "
      "(none for stresslet)");
  a.o_dipoles = cmd->add_option("--dipoles", a.dipoles,
                                "stresslet, stokes-combined: dipole strengths q (N,3) (density times quadrature "
                                "weight)");
  a.o_normals = cmd->add_option("--normals", a.normals,
                                "stresslet, stokes-combined: normals nu (N,3) at the sources (normally unit)");
  a.o_targets = cmd->add_option("--targets", a.targets,
                                "target positions, (M,3) array file (default: the sources; M = 0 gives an empty "
                                "output)");
  a.o_gro = cmd->add_option("--gro", a.gro,
                            "GROMACS .gro file instead of --sources/--strengths/--box: positions (nm) and the "
                            "rectangular box from the file, charges from --charges (laplace only)");
  a.o_charges = cmd->add_option("--charges", a.charges,
                                "with --gro: NAME=Q,NAME=Q,... charge per atom-name prefix (longest prefix "
                                "wins), e.g. OW=-0.82,HW=0.41");
  a.o_viscosity = cmd->add_option("--viscosity", a.viscosity, "viscosity mu > 0 (stokeslet and stokes-combined)")
                      ->capture_default_str();
  a.o_field = cmd->add_flag("--field", a.field, "laplace: also compute the field E = -grad phi; output (N,4)");
  cmd->add_flag("--pressure", a.pressure,
                "stokeslet: also compute the pressure p = 1/(4 pi) sum f.r/|r|^3 (k = 0 excluded); output (N,4)");
  a.o_zero_mode = cmd->add_flag("--zero-mode", a.zero_mode,
                                "stresslet, stokes-combined: add the stresslet's k = 0 term, u += -(1/V) sum (q.nu)(x - y) "
                                "(wrapped coordinates; dropped by default)");
  a.o_energy = cmd->add_flag("--energy", a.energy,
                             "laplace, targets = sources: compute the energy U = 1/2 sum q phi (printed, and in "
                             "--summary) and the forces F = q E (--forces-out)");
  a.o_forces_out = cmd->add_option("--forces-out", a.forces_out,
                                   "with --energy: write the forces F = q E (N,3) here (.npy, else CSV)");
  a.o_exclusions = cmd->add_option("--exclusions", a.exclusions,
                                   "laplace, targets = sources: (K,2) integer array file of source index pairs "
                                   "(0-based) whose direct interaction is removed");
  a.o_summary = cmd->add_option("--summary", a.summary, "write a JSON summary of the run here");
  cmd->add_option("--threads", a.threads, "number of threads, 0..1024 (0: all available)")->capture_default_str();
  cmd->add_option("--fft-planner", a.fft_planner,
                  "how the FFTs are planned: wisdom (FFTW_MEASURE once per machine and grid, kept in the wisdom "
                  "cache; the tuner ranks grids by the measured times), measure (FFTW_MEASURE every time, "
                  "0.2-1 s), estimate (FFTW_ESTIMATE, ~1 ms, up to 2x slower transforms at some sizes)")
      ->check(CLI::IsMember({"wisdom", "measure", "estimate"}))
      ->capture_default_str();
  cmd->add_flag("--no-potential", a.no_potential,
                "laplace with --field or --energy: leave the potential out (the far field transforms and "
                "interpolates E only; the energy's Fourier part by Parseval); output (N,3): E with --field, else the forces F");
  cmd->add_flag("--no-pair-symmetry", a.no_pair_symmetry,
                "P2P: evaluate each pair from both of its points (by default each pair is evaluated once for "
                "both where it applies: double precision, no --targets, rc < min(L)/2); for benchmarks");
  a.o_xi = cmd->add_option("--xi", a.xi, "override: Ewald splitting parameter xi [1/length]");
  a.o_rc = cmd->add_option("--rc", a.rc, "override: real-space cutoff radius [length]");
  a.o_grid = cmd->add_option("--grid", a.grid, "override: FFT grid, M or M1,M2,M3");
  a.o_P = cmd->add_option("--P", a.P, "override: window support P in grid points");
  a.o_beta = cmd->add_option("--beta", a.beta, "override: Kaiser-Bessel shape parameter beta");
  a.o_degree = cmd->add_option("--degree", a.degree, "override: window polynomial degree nu, in [1,30]");
  // --out is required unless the subcommand `calibrate` is given (checked after parsing below)
  a.o_out = cmd->add_option("--out", a.out, "output file (.npy, else CSV); written atomically (required)");
  cmd->add_flag("--quiet,-q", a.quiet, "print nothing on success");
  cmd->add_option("--slab-axis", a.slab_axis,
                  "under mpirun: the axis the slabs of the distributed plan cut (auto: the longest side of the box)")
      ->check(CLI::IsMember({"auto", "x", "y", "z"}))
      ->capture_default_str();

  a.calibrate = cmd->add_subcommand(
      "calibrate",
      "Measures the constants of the cost model that chooses the parameters (one thread, about 2-4 s per precision),\n"
      "writes them to the per-machine cache and prints them.");
  a.calibrate->footer(
      "The cache: $ELLIPTICA_CACHE_DIR/ewald_costs.json, else $XDG_CACHE_HOME/elliptica/ewald_costs.json, else\n"
      "  ~/.cache/elliptica/ewald_costs.json; one entry per CPU model, SIMD target, library version, build and\n"
      "  precision. Plans use it by default (ELLIPTICA_EWALD_COSTS unset or 'auto': read the cache, or measure and\n"
      "  write it); ELLIPTICA_EWALD_COSTS=builtin uses the built-in constants, ELLIPTICA_EWALD_COSTS=FILE a file\n"
      "  written by --output.\n"
      "Output: the constants as JSON (seconds of one core per unit of work; docs/ewald.md, 'Cost model').");
  a.calibrate->add_option("--precision", a.cal_precision, "single, double or both")
      ->check(CLI::IsMember({"single", "double", "both"}))
      ->capture_default_str();
  a.calibrate->add_option("--output", a.cal_output, "also write the constants to this JSON file (atomically)");
  a.calibrate->add_flag("--no-cache", a.cal_no_cache, "measure only: do not write the per-machine cache");
  a.calibrate->add_flag("--quiet,-q", a.cal_quiet, "print nothing on success");
  a.fft_wisdom = cmd->add_subcommand(
      "fft-wisdom",
      "Lists the FFT wisdom cache (FFTW plans measured once per machine, grid, precision, transform counts and\n"
      "threads, with their measured times), or with --rebuild forgets it and measures every problem again.");
  a.fft_wisdom->footer(
      "The cache: ewald_fft_wisdom.json beside the cost model's cache ($ELLIPTICA_CACHE_DIR, else\n"
      "  $XDG_CACHE_HOME/elliptica, else ~/.cache/elliptica). Plans use it by default (--fft-planner wisdom);\n"
      "  ELLIPTICA_EWALD_FFT_WISDOM=memory keeps it in the process only, =off plans with FFTW_ESTIMATE.\n"
      "Output: JSON {cache, entries: [{precision, grid, forward, backward, threads, forward_seconds,\n"
      "  backward_seconds}]}.");
  a.fft_wisdom->add_flag("--rebuild", a.fw_rebuild, "forget the wisdom and measure every cached problem again");
  a.fft_wisdom->add_option("--grid", a.fw_grids,
                           "with --rebuild: also measure this grid, M or M1,M2,M3 (repeatable)");
  a.fft_wisdom->add_option("--precision", a.fw_precision, "precision of the --grid problems: single, double or both")
      ->check(CLI::IsMember({"single", "double", "both"}))
      ->capture_default_str();
  a.fft_wisdom->add_option("--transforms", a.fw_transforms,
                           "FORWARD,BACKWARD transform counts of the --grid problems (laplace 1,1; with the field or "
                           "energy 1,4, without the potential 1,3; stokeslet 3,3; stresslet 6,3; stokes-combined 9,3)")
      ->capture_default_str();
  a.fft_wisdom->add_option("--threads", a.fw_threads, "thread counts of the --grid problems (repeatable)")
      ->capture_default_str();
  a.fft_wisdom->add_flag("--quiet,-q", a.fw_quiet, "print nothing on success");
  cmd->final_callback([&a] {
    if (!a.calibrate->parsed() && !a.fft_wisdom->parsed() && a.o_out->count() == 0) throw CLI::RequiredError("--out");
  });

  a.o_gro->excludes(a.o_sources)->excludes(a.o_strengths)->excludes(a.o_box);
  a.o_charges->needs(a.o_gro);
  a.o_gro->needs(a.o_charges);
  return cmd;
}

namespace {

/// `elliptica ewald calibrate`: measures the cost model's constants, writes the cache (unless
/// --no-cache) and --output, prints them as JSON.
/// The "mpi" object of the summary under mpirun: per rank its slab, points, ghosts, bytes sent
/// and stage times; the communication model's bytes per rank for the grid exchanges and the
/// distributed transforms (docs/ewald_mpi.md), beside the measured ones.
std::string mpi_json(const std::vector<ewald::DistributedStats>& ranks, const ewald::Params& p, const ewald::Options& opt,
                     std::size_t n_points, const std::string& ind) {
  const double R = double(ranks.size()), T = opt.precision == ewald::Precision::Single ? 4.0 : 8.0;
  int ng = 1, no = 1;
  switch (opt.kernel) {
    case ewald::Kernel::Laplace: ng = 1; no = opt.compute_field ? 4 : 1; break;
    case ewald::Kernel::Stokeslet: ng = 3; no = opt.compute_pressure ? 4 : 3; break;
    case ewald::Kernel::Stresslet: ng = 6; no = 3; break;
    case ewald::Kernel::StokesCombined: ng = 9; no = 3; break;
  }
  // the plan's axes: the slab axis a first, then a + 1, a + 2 (a cyclic permutation)
  const int a = ranks.empty() ? 0 : ranks[0].slab_axis;
  const double M0 = p.grid[std::size_t(a)], M1 = p.grid[std::size_t((a + 1) % 3)], M2 = p.grid[std::size_t((a + 2) % 3)];
  const double plane = M1 * M2 * T, nc = std::floor(M2 / 2) + 1;
  const double transform = (1 - 1 / R) * (M0 / R) * M1 * nc * 2 * T;
  static const char* axes[] = {"x", "y", "z"};
  std::ostringstream js;
  js << "{\"ranks\": " << ranks.size() << ", \"slab_axis\": \"" << axes[a] << "\", \"points\": " << n_points << ",\n"
     << ind << "  \"transforms\": {\"r2c\": " << ng << ", \"c2r\": " << no << "},\n"
     << ind << "  \"model_bytes_per_rank\": {\"ghost_grid_fold\": " << jnum(p.P * plane * ng)
     << ", \"ghost_grid_refresh\": " << jnum(p.P * plane * no) << ", \"fft\": " << jnum(ng * transform)
     << ", \"ifft\": " << jnum(no * transform) << "},\n"
     << ind << "  \"per_rank\": [";
  // FFTW-MPI's transposed spectrum: blocks of ceil(M1 / R) rows of axis 1
  const double b1 = std::ceil(M1 / R);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const ewald::DistributedStats& r = ranks[k];
    const double n1 = std::clamp(M1 - double(r.rank) * b1, 0.0, b1), n0 = r.planes;
    // the transposes' model for this rank: everything it holds but the block it keeps
    const double fft = ng * n0 * (M1 - n1) * nc * 2 * T, ifft = no * n1 * (M0 - n0) * nc * 2 * T;
    js << (k ? ",\n" : "\n") << ind << "    {\"rank\": " << r.rank << ", \"plane_start\": " << r.plane_start
       << ", \"planes\": " << r.planes << ", \"slab\": [" << jnum(r.slab_lo) << ", " << jnum(r.slab_hi)
       << "], \"points\": " << r.owned << ", \"ghost_sources\": " << r.ghosts
       << ", \"bytes_sent\": {\"sort\": " << r.bytes_sort << ", \"ghost_source\": " << r.bytes_ghost_source
       << ", \"ghost_grid\": " << r.bytes_ghost_grid << "}, \"model_bytes\": {\"fft\": " << jnum(fft)
       << ", \"ifft\": " << jnum(ifft) << "}, \"neighbour_only\": {\"sort\": " << (r.neighbour_sort ? "true" : "false")
       << ", \"ghost_source\": " << (r.neighbour_ghost_source ? "true" : "false")
       << ", \"ghost_grid\": " << (r.neighbour_ghost_grid ? "true" : "false")
       << "}, \"p2p_pair_symmetry\": " << (r.pair_symmetry ? "true" : "false")
       << ", \"times\": " << times_json(r.times, ind + "    ") << "}";
  }
  js << "]}";
  return js.str();
}

int run_calibrate(const EwaldArgs& a) {
  std::vector<ewald::Precision> precisions;
  if (a.cal_precision != "single") precisions.push_back(ewald::Precision::Double);
  if (a.cal_precision != "double") precisions.push_back(ewald::Precision::Single);
  std::optional<io::OutputFile> out_file;  // created before the measurement: a bad name fails at once
  if (!a.cal_output.empty()) out_file.emplace(a.cal_output);
  std::vector<ewald::CostConstants> all;
  for (ewald::Precision p : precisions) all.push_back(ewald::calibrate_costs(p, !a.cal_no_cache));
  if (out_file) {
    out_file->write(ewald::cost_constants_file_json(all));
    out_file->commit();
  }
  if (!a.cal_quiet) {
    std::ostream& os = std::cout;
    os << "{\n  \"cache\": " << jstr_or_null(ewald::cost_cache_file()) << ",\n  \"entries\": [";
    for (std::size_t i = 0; i < all.size(); ++i) os << (i ? ",\n    " : "\n    ") << ewald::cost_constants_json(all[i], 4);
    os << "\n  ]\n}\n";
  }
  return 0;
}

/// `elliptica ewald fft-wisdom`: prints the wisdom cache's problems; with --rebuild forgets the
/// wisdom and measures every problem again (and the --grid ones).
int run_fft_wisdom(const EwaldArgs& a) {
  if (!a.fw_rebuild && !a.fw_grids.empty()) throw InvalidArgument("fft-wisdom: --grid needs --rebuild");
  std::vector<ewald::FftTiming> extra;
  if (!a.fw_grids.empty()) {
    std::vector<ewald::Precision> precs;
    if (a.fw_precision != "single") precs.push_back(ewald::Precision::Double);
    if (a.fw_precision != "double") precs.push_back(ewald::Precision::Single);
    int fwd = 0, bwd = 0;
    {
      const auto comma = a.fw_transforms.find(',');
      try {
        if (comma == std::string::npos) throw std::invalid_argument("");
        std::size_t e1 = 0, e2 = 0;
        fwd = std::stoi(a.fw_transforms.substr(0, comma), &e1);
        bwd = std::stoi(a.fw_transforms.substr(comma + 1), &e2);
        if (e1 != comma || e2 != a.fw_transforms.size() - comma - 1) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw InvalidArgument("fft-wisdom --transforms: expected FORWARD,BACKWARD (two integers), got '" +
                              a.fw_transforms + "'");
      }
    }
    for (const std::string& g : a.fw_grids)
      for (ewald::Precision p : precs)
        for (int t : a.fw_threads) {
          ewald::FftTiming f;
          f.precision = p;
          f.grid = parse_grid(g);
          f.forward = fwd;
          f.backward = bwd;
          f.threads = t;
          extra.push_back(f);
        }
  }
  const std::vector<ewald::FftTiming> entries = a.fw_rebuild ? ewald::rebuild_fft_wisdom(extra)
                                                             : ewald::fft_wisdom_entries();
  if (!a.fw_quiet) {
    std::ostream& os = std::cout;
    os << "{\n  \"cache\": " << jstr_or_null(ewald::fft_wisdom_file()) << ",\n  \"entries\": [";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const ewald::FftTiming& e = entries[i];
      os << (i ? ",\n    " : "\n    ") << "{\"precision\": " << json_quote(ewald::to_string(e.precision))
         << ", \"grid\": [" << e.grid[0] << ", " << e.grid[1] << ", " << e.grid[2] << "], \"forward\": " << e.forward
         << ", \"backward\": " << e.backward << ", \"threads\": " << e.threads
         << ", \"forward_seconds\": " << jnum(e.forward_seconds) << ", \"backward_seconds\": " << jnum(e.backward_seconds)
         << "}";
    }
    os << (entries.empty() ? "]\n}\n" : "\n  ]\n}\n");
  }
  return 0;
}

}  // namespace

int run_ewald(const EwaldArgs& a) {
  if (a.calibrate && a.calibrate->parsed()) return run_calibrate(a);
  if (a.fft_wisdom && a.fft_wisdom->parsed()) return run_fft_wisdom(a);
  const auto t_start = Clock::now();
  // ---- options that need no files ------------------------------------------------------
  ewald::Options opt;
  opt.kernel = ewald::kernel_from_string(a.kernel);
  const std::string kname = ewald::to_string(opt.kernel);
  const bool laplace = opt.kernel == ewald::Kernel::Laplace;
  const bool double_layer = ewald::has_double_layer(opt.kernel);
  const int ncomp = ewald::strength_components(opt.kernel);
  const bool viscous = opt.kernel == ewald::Kernel::Stokeslet || opt.kernel == ewald::Kernel::StokesCombined;
  const bool use_gro = a.o_gro->count() > 0;
  const bool have_targets = a.o_targets->count() > 0;
  if (!use_gro) {
    if (a.o_sources->count() == 0) throw InvalidArgument("--sources is required (or give --gro)");
    if (ncomp > 0 && a.o_strengths->count() == 0)
      throw InvalidArgument(std::string("--strengths is required") + (laplace ? " (or give --gro)" : "") +
                            " for --kernel " + kname + (laplace ? " (charges)" : " (forces (N,3))"));
    opt.periodicity = ewald::periodicity_from_string(a.periodicity);
    if (free_space(opt)) {
      if (a.o_box->count())
        throw InvalidArgument("--box does not apply to --periodicity 0P (free space: the points' bounding box is the domain)");
    } else {
      if (a.o_box->count() == 0) throw InvalidArgument("--box is required (or give --gro)");
      opt.box = parse_box(a.box);
    }
  } else if (ewald::periodicity_from_string(a.periodicity) != ewald::Options{}.periodicity) {
    throw InvalidArgument("--gro gives a periodic box: it takes no --periodicity other than 3P");
  } else if (!laplace) {
    throw InvalidArgument("--gro provides charges, so it needs --kernel laplace");
  }
  if (ncomp == 0 && a.o_strengths->count())
    throw InvalidArgument("--strengths does not apply to --kernel " + kname +
                          " (a double layer has no single-layer strengths: give --dipoles and --normals)");
  if (double_layer) {
    if (a.o_dipoles->count() == 0 || a.o_normals->count() == 0)
      throw InvalidArgument(std::string("--kernel ") + kname + " needs --dipoles (N,3) and --normals (N,3)" +
                            (a.o_dipoles->count() ? " (--normals missing)" : a.o_normals->count() ? " (--dipoles missing)" : ""));
  } else {
    for (const CLI::Option* o : {a.o_dipoles, a.o_normals})
      if (o->count())
        throw InvalidArgument(o->get_name() + " applies only to --kernel stresslet or stokes-combined, not " + kname);
  }
  if (!(a.tol > 0 && a.tol < 1))
    throw InvalidArgument("--tol: the tolerance must satisfy 0 < EPS < 1, got " + fmt_g(a.tol));
  opt.tolerance = a.tol;
  opt.tolerance_kind = a.abs_tol ? ewald::ToleranceKind::Absolute : ewald::Options{}.tolerance_kind;
  opt.precision = ewald::precision_from_string(a.precision);
  if (a.o_viscosity->count()) {
    if (!viscous) throw InvalidArgument("--viscosity applies only to --kernel stokeslet or stokes-combined");
    if (!(std::isfinite(a.viscosity) && a.viscosity > 0))
      throw InvalidArgument("--viscosity must be positive and finite");
  }
  opt.viscosity = a.viscosity;
  if (a.field && !laplace) throw InvalidArgument("--field applies only to --kernel laplace");
  opt.compute_field = a.field;
  if (a.pressure && opt.kernel != ewald::Kernel::Stokeslet)
    throw InvalidArgument("--pressure applies only to --kernel stokeslet");
  opt.compute_pressure = a.pressure;
  if (a.zero_mode && !double_layer)
    throw InvalidArgument("--zero-mode (the stresslet's k = 0 term) applies only to --kernel stresslet or "
                          "stokes-combined");
  opt.stresslet_zero_mode = a.zero_mode;
  if (a.energy && !laplace) throw InvalidArgument("--energy applies only to --kernel laplace");
  if (a.energy && have_targets)
    throw InvalidArgument("--energy needs the targets to be the sources: leave out --targets");
  opt.compute_energy = a.energy;
  if (a.o_forces_out->count() && !a.energy)
    throw InvalidArgument("--forces-out needs --energy (the forces F = q E are computed with the energy)");
  const bool have_exclusions = a.o_exclusions->count() > 0;
  if (have_exclusions && !laplace) throw InvalidArgument("--exclusions applies only to --kernel laplace");
  if (have_exclusions && have_targets)
    throw InvalidArgument("--exclusions needs the targets to be the sources: leave out --targets");
  if (a.threads < 0 || a.threads > kMaxThreads)
    throw InvalidArgument("--threads must be in [0," + std::to_string(kMaxThreads) + "] (0: all available), got " +
                          std::to_string(a.threads));
  opt.threads = a.threads;
  opt.fft_planner = ewald::fft_planner_from_string(a.fft_planner);
  if (a.no_potential && !(laplace && (a.field || a.energy)))
    throw InvalidArgument("--no-potential applies only to --kernel laplace with --field or --energy (otherwise "
                          "nothing is left to compute)");
  opt.compute_potential = !a.no_potential;
  opt.pair_symmetry = !a.no_pair_symmetry;
  if (a.o_xi->count()) {
    if (!(std::isfinite(a.xi) && a.xi > 0)) throw InvalidArgument("--xi must be positive and finite");
    opt.xi = a.xi;
  }
  if (a.o_rc->count()) {
    if (!(std::isfinite(a.rc) && a.rc > 0)) throw InvalidArgument("--rc must be positive and finite");
    opt.rc = a.rc;
  }
  if (a.o_grid->count()) opt.grid = parse_grid(a.grid);
  if (a.o_P->count()) opt.window_support = a.P;
  if (a.o_beta->count()) {
    if (!(std::isfinite(a.beta) && a.beta > 0)) throw InvalidArgument("--beta must be positive and finite");
    opt.window_shape = a.beta;
  }
  if (a.o_degree->count()) {
    if (a.degree < kMinDegree || a.degree > kMaxDegree)
      throw InvalidArgument("--degree must be in [" + std::to_string(kMinDegree) + "," + std::to_string(kMaxDegree) +
                            "], got " + std::to_string(a.degree));
    opt.poly_degree = a.degree;
  }
  // The plan validates the options as a whole (ranges of the overrides, the precision) before
  // any file is read or created.
  ewald::EwaldPlan plan(opt);
  // under mpirun with several ranks: the distributed plan (issue 30); rank 0 reads the inputs and
  // writes the outputs, the points reach their slabs by MPI-SORT
  const bool dist = mpi_size() > 1, root = mpi_rank() == 0;
  if (dist) {
    const char* unsupported = have_targets ? "--targets" : a.energy ? "--energy" : have_exclusions ? "--exclusions"
                              : use_gro ? "--gro" : nullptr;
    if (unsupported)
      throw InvalidArgument(std::string(unsupported) + " is not supported under mpirun yet (the distributed plan: "
                            "targets = sources, no energy, no exclusions" +
                            (use_gro ? std::string("; give --sources and --strengths instead of --gro)") : std::string(")")));
  }

  // ---- output paths: fail before the work, not after -------------------------------------
  if (a.out.empty()) throw InvalidArgument("--out: empty file name");
  if (a.o_forces_out->count() && a.forces_out.empty()) throw InvalidArgument("--forces-out: empty file name");
  if (a.o_summary->count() && a.summary.empty()) throw InvalidArgument("--summary: empty file name");
  {
    const std::pair<const CLI::Option*, const std::string*> inputs[] = {
        {a.o_sources, &a.sources}, {a.o_strengths, &a.strengths}, {a.o_targets, &a.targets},
        {a.o_gro, &a.gro},         {a.o_dipoles, &a.dipoles},     {a.o_normals, &a.normals},
        {a.o_exclusions, &a.exclusions}};
    std::vector<std::pair<std::string, const std::string*>> outputs{{"--out", &a.out}};
    if (a.o_forces_out->count()) outputs.emplace_back("--forces-out", &a.forces_out);
    if (a.o_summary->count()) outputs.emplace_back("--summary", &a.summary);
    for (const auto& [oname, opath] : outputs) {
      // Never overwrite an input with a result.
      for (const auto& [opt_ptr, path] : inputs)
        if (opt_ptr->count() && !path->empty() && same_file(*opath, *path))
          throw InvalidArgument(oname + " '" + *opath + "' is the same file as " + opt_ptr->get_name() + " '" +
                                *path + "'; refusing to overwrite an input");
    }
    for (std::size_t i = 0; i < outputs.size(); ++i)
      for (std::size_t j = i + 1; j < outputs.size(); ++j)
        if (same_file(*outputs[i].second, *outputs[j].second))
          throw InvalidArgument(outputs[i].first + " and " + outputs[j].first + " name the same file '" +
                                *outputs[j].second + "'");
  }
  // The temporary files are created now: an unwritable destination fails before the computation.
  // The outputs are committed together at the end (none is renamed into place unless all are written).
  io::OutputSet outputs;
  io::OutputFile* out_file = root ? &outputs.add(a.out) : nullptr;
  io::OutputFile* forces_file = root && a.o_forces_out->count() ? &outputs.add(a.forces_out) : nullptr;
  io::OutputFile* summary_file = root && a.o_summary->count() ? &outputs.add(a.summary) : nullptr;

  // ---- inputs ------------------------------------------------------------------------------
  const auto t_read = Clock::now();
  Array2D src, str, tgt, dip, nrm;
  std::string src_name = a.sources, str_name = a.strengths;
  std::size_t N = 0;
  std::vector<std::array<std::int64_t, 2>> pairs;
  auto read_inputs = [&] {
  if (use_gro) {
    ewald::GroFile g = ewald::read_gro(a.gro);
    src = std::move(g.positions);
    src_name = str_name = a.gro;
    if (src.rows == 0) throw InvalidArgument(a.gro + ": contains no atoms");
    for (int d = 0; d < 3; ++d)
      if (!(std::isfinite(g.box[d]) && g.box[d] > 0))
        throw InvalidArgument(a.gro + ": box lengths must be positive (the file's box line gives " +
                              fmt_g(g.box[0]) + " " + fmt_g(g.box[1]) + " " + fmt_g(g.box[2]) + ")");
    opt.box = {g.box[0], g.box[1], g.box[2]};
    plan = ewald::EwaldPlan(opt);
    const auto table = parse_charges(a.charges);
    str = Array2D(src.rows, 1, 1);
    for (std::size_t i = 0; i < src.rows; ++i) {
      const std::string& name = g.atom_names[i];
      std::size_t best = 0;
      bool found = false;
      for (const auto& [prefix, q] : table)
        if (name.compare(0, prefix.size(), prefix) == 0 && (!found || prefix.size() > best)) {
          best = prefix.size();
          str.values[i] = q;
          found = true;
        }
      if (!found)
        throw InvalidArgument(a.gro + ": atom " + std::to_string(i + 1) + " '" + name + "' (residue " +
                              g.residue_names[i] + ") matches no --charges entry");
    }
  } else {
    src = read_reporting(a.sources, "--sources", a.quiet);
    if (ncomp > 0) str = read_reporting(a.strengths, "--strengths", a.quiet);
  }
  require_points(src, "sources", src_name);
  require_finite(src.view(), "sources (" + src_name + ")");
  N = src.rows;
  if (ncomp > 0) {
    if (str.rows == 0) throw InvalidArgument("strengths (" + str_name + ") contains no values");
    if (laplace) {
      if (str.cols != 1)
        throw InvalidArgument("strengths (" + str_name + ") for laplace must be charges of shape (N,) or (N,1), got " +
                              shape_str(str));
    } else if (str.ndim != 2 || str.cols != static_cast<std::size_t>(ncomp)) {
      throw InvalidArgument("strengths (" + str_name + ") for " + kname + " must be forces of shape (N,3), got " +
                            shape_str(str));
    }
    if (str.rows != N)
      throw InvalidArgument("length mismatch: strengths (" + str_name + ") has " + std::to_string(str.rows) +
                            " rows but sources (" + src_name + ") has " + std::to_string(N));
    require_finite(str.view(), "strengths (" + str_name + ")");
  }
  if (double_layer) {
    dip = read_reporting(a.dipoles, "--dipoles", a.quiet);
    require_vectors(dip, "dipoles", a.dipoles, N, src_name);
    nrm = read_reporting(a.normals, "--normals", a.quiet);
    require_vectors(nrm, "normals", a.normals, N, src_name);
  }
  if (have_targets) {
    tgt = read_reporting(a.targets, "--targets", a.quiet);
    require_points(tgt, "targets", a.targets, /*allow_empty=*/true);
    if (tgt.rows > 0) require_finite(tgt.view(), "targets (" + a.targets + ")");
  }
  if (have_exclusions) pairs = to_pairs(read_reporting(a.exclusions, "--exclusions", a.quiet), a.exclusions, N);
  };
  if (!dist) {
    read_inputs();
  } else {  // rank 0 reads; its error (if any) ends every rank with the same message and code
    std::exception_ptr e;
    if (root) try {
        read_inputs();
      } catch (...) {
        e = std::current_exception();
      }
    mpi_agree(e);
  }
  const double t_read_s = seconds_since(t_read);

  // ---- evaluation --------------------------------------------------------------------------
  const std::size_t M = have_targets ? tgt.rows : N;
  const ConstMatrixView<double> sv(src.values.data(), N, 3);
  std::optional<ConstMatrixView<double>> tv, nv;
  if (have_targets) tv = ConstMatrixView<double>(tgt.values.data(), M, 3);
  if (double_layer) nv = ConstMatrixView<double>(nrm.values.data(), N, 3);
  ewald::Densities dens;
  if (ncomp > 0) dens.strengths = ConstMatrixView<double>(str.values.data(), N, static_cast<std::size_t>(ncomp));
  if (double_layer) dens.dipoles = ConstMatrixView<double>(dip.values.data(), N, 3);
  ewald::Result res;
  std::vector<ewald::DistributedStats> per_rank;
  if (dist) {
    ewald::DistributedOptions dopt;
    dopt.slab_axis = a.slab_axis == "auto" ? -1 : a.slab_axis[0] - 'x';
    ewald::DistributedEwaldPlan dplan(opt, mpi_world(), dopt);
    dplan.set_points(sv, nv);
    res = dplan.evaluate(dens);
    per_rank = mpi_gather_stats(dplan.stats());
    if (!root) return 0;  // rank 0 holds every point's result and writes the outputs
  } else {
    plan.set_points(sv, tv, nv);
    if (have_exclusions) plan.set_exclusions(pairs);
    res = plan.evaluate(dens);
  }

  // ---- output --------------------------------------------------------------------------------
  const std::size_t vcomp = static_cast<std::size_t>(ewald::value_components(opt.kernel));
  auto check_shape = [](const Array2D& r, std::size_t rows, std::size_t cols, const char* what) {
    if (r.rows != rows || r.values.size() != rows * cols)
      throw NumericalError(std::string("internal error: unexpected shape of the ") + what + " from the Ewald plan");
  };
  if (opt.compute_potential) check_shape(res.values, M, vcomp, "result");
  Array2D out;
  std::string header;
  if (laplace && !opt.compute_potential) {
    // no potential: the field E with --field, else (--energy) the forces F = q E
    const Array2D& e = a.field ? res.field : res.forces;
    check_shape(e, M, 3, a.field ? "field" : "forces");
    out = Array2D(M, 3, 2);
    out.values = e.values;
    header = a.field ? "Ex,Ey,Ez" : "Fx,Fy,Fz";
  } else if (laplace && a.field) {
    check_shape(res.field, M, 3, "field");
    out = Array2D(M, 4, 2);
    for (std::size_t i = 0; i < M; ++i) {
      out.values[4 * i] = res.values.values[i];
      for (int d = 0; d < 3; ++d) out.values[4 * i + 1 + d] = res.field.values[3 * i + d];
    }
    header = "phi,Ex,Ey,Ez";
  } else if (laplace) {
    out = Array2D(M, 1, 1);
    out.values = res.values.values;
    header = "phi";
  } else if (a.pressure) {
    check_shape(res.pressure, M, 1, "pressure");
    out = Array2D(M, 4, 2);
    for (std::size_t i = 0; i < M; ++i) {
      for (int d = 0; d < 3; ++d) out.values[4 * i + d] = res.values.values[3 * i + d];
      out.values[4 * i + 3] = res.pressure.values[i];
    }
    header = "ux,uy,uz,p";
  } else {
    out = Array2D(M, 3, 2);
    out.values = res.values.values;
    header = "ux,uy,uz";
  }
  // Safety net: the plan itself throws NumericalError on a non-finite result.
  for (std::size_t k = 0; k < out.values.size(); ++k)
    if (!std::isfinite(out.values[k]))
      throw NumericalError("numerical breakdown: non-finite value (" + fmt_g(out.values[k]) + ") in the result at row " +
                           std::to_string(k / out.cols) + ", column " + std::to_string(k % out.cols) +
                           "; nothing was written");
  Array2D forces;
  if (a.energy) {
    if (!std::isfinite(res.energy))
      throw NumericalError("numerical breakdown: the energy is not finite (" + fmt_g(res.energy) +
                           "); nothing was written");
    check_shape(res.forces, N, 3, "forces");
    forces = Array2D(N, 3, 2);
    forces.values = res.forces.values;
    for (double v : forces.values)
      if (!std::isfinite(v)) throw NumericalError("numerical breakdown: non-finite forces; nothing was written");
  }
  const auto t_write = Clock::now();
  const bool npy = ends_with_npy(a.out);
  if (npy)
    io::write_npy(*out_file, out);
  else
    io::write_csv(*out_file, out, "# " + header);
  if (forces_file) {
    if (ends_with_npy(a.forces_out))
      io::write_npy(*forces_file, forces);
    else
      io::write_csv(*forces_file, forces, "# Fx,Fy,Fz");
  }
  const ewald::Params& p = res.params;
  const std::uint64_t peak_bytes = peak_memory_bytes();
  if (summary_file) {
    std::ostringstream js;
    js << "{\n"
       << "  \"kernel\": " << json_quote(kname) << ",\n"
       << "  \"n_sources\": " << N << ",\n"
       << "  \"n_targets\": " << M << ",\n"
       << "  \"targets_are_sources\": " << (have_targets ? "false" : "true") << ",\n"
       << "  \"periodicity\": " << json_quote(ewald::to_string(opt.periodicity)) << ",\n"
       << "  \"periodic_axes\": [" << (opt.periodicity[0] ? "true" : "false") << ", "
       << (opt.periodicity[1] ? "true" : "false") << ", " << (opt.periodicity[2] ? "true" : "false") << "],\n"
       << "  \"box\": " << box_json(opt) << ",\n"
       << "  \"tolerance\": " << jnum(opt.tolerance) << ",\n"
       << "  \"tolerance_kind\": "
       << (opt.tolerance_kind == ewald::ToleranceKind::Absolute ? "\"absolute\"" : "\"relative\"") << ",\n"
       << "  \"precision\": " << json_quote(ewald::to_string(opt.precision)) << ",\n"
       << "  \"single_precision_floor\": "
       << (opt.precision == ewald::Precision::Single ? jnum(ewald::single_precision_floor(p.grid, std::max(N, M)))
                                                     : std::string("null"))
       << ",\n"
       << "  \"viscosity\": " << (viscous ? jnum(opt.viscosity) : "null") << ",\n"
       << "  \"field\": " << (opt.compute_field ? "true" : "false") << ",\n"
       << "  \"zero_mode\": " << (opt.stresslet_zero_mode ? "true" : "false") << ",\n"
       << "  \"threads\": " << opt.threads << ",\n"
       << "  \"fft_planner\": " << json_quote(ewald::to_string(opt.fft_planner)) << ",\n"
       << "  \"potential\": " << (opt.compute_potential ? "true" : "false") << ",\n"
       << "  \"exclusions\": " << pairs.size() << ",\n"
       << "  \"params\": " << params_json(p, "  ") << ",\n"
       << "  \"times\": " << times_json(res.times, "  ") << ",\n"
       << "  \"read_seconds\": " << jnum(t_read_s) << ",\n"
       << "  \"wall_seconds\": " << jnum(seconds_since(t_start)) << ",\n"
       << "  \"peak_memory_bytes\": " << peak_bytes << ",\n"
       << "  \"coincident_pairs\": " << res.coincident_pairs << ",\n"
       << "  \"p2p\": " << (dist ? std::string("null") : std::string("{")) ;
    if (!dist)
      js << "\"candidates\": " << res.p2p.candidates << ", \"pairs\": " << res.p2p.pairs
       << ", \"series_degree\": " << res.p2p.series_degree << ", \"exp_degree\": " << res.p2p.exp_degree
       << ", \"pair_symmetry\": " << (res.p2p.pair_symmetry ? "true" : "false") << "}";
    js << ",\n"
       << "  \"cost_model\": " << ewald::cost_constants_json(ewald::cost_constants(opt.precision), 2) << ",\n"
       << "  \"energy\": " << (a.energy ? jnum(res.energy) : "null") << ",\n"
       << "  \"inputs\": {\"sources\": " << jstr_or_null(use_gro ? std::string() : a.sources)
       << ", \"strengths\": " << jstr_or_null(use_gro ? std::string() : a.strengths)
       << ", \"targets\": " << jstr_or_null(a.targets) << ", \"dipoles\": " << jstr_or_null(a.dipoles)
       << ", \"normals\": " << jstr_or_null(a.normals) << ", \"exclusions\": " << jstr_or_null(a.exclusions)
       << ", \"gro\": " << jstr_or_null(a.gro) << "},\n"
       << "  \"outputs\": {\"values\": " << json_quote(a.out) << ", \"columns\": " << json_quote(header)
       << ", \"forces\": " << jstr_or_null(a.forces_out) << "},\n"
       << "  \"ranks\": " << mpi_size() << ",\n"
       << "  \"mpi\": " << (dist ? mpi_json(per_rank, p, opt, N, "  ") : std::string("null")) << "\n"
       << "}\n";
    summary_file->write(js.str());
  }
  outputs.commit();
  const double t_write_s = seconds_since(t_write);

  if (!a.quiet) {
    std::ostream& os = std::cout;
    char buf[256];
    os << "elliptica ewald: kernel " << kname << ", " << N << " sources, ";
    if (have_targets)
      os << M << " targets\n";
    else
      os << "targets = sources (self-interaction excluded)\n";
    if (free_space(opt))
      std::snprintf(buf, sizeof buf, "free space (0P): extended FFT box %.6g x %.6g x %.6g (the points' bounding box "
                    "twice and the window), Green's function truncated at R = %.6g\n", res.params.fft_box[0],
                    res.params.fft_box[1], res.params.fft_box[2], res.params.truncation_radius);
    else if (opt.periodicity[0] && opt.periodicity[1] && opt.periodicity[2])
      std::snprintf(buf, sizeof buf, "box: %.10g x %.10g x %.10g%s (periodicity %s)\n", opt.box[0], opt.box[1], opt.box[2],
                    use_gro ? " (from the .gro file, nm)" : "", ewald::to_string(opt.periodicity).c_str());
    else {
      // 2P / 1P: the periods along the periodic axes; the free axes span the points' extent
      std::string per;
      for (int d = 0; d < 3; ++d)
        if (opt.periodicity[std::size_t(d)]) {
          char one[64];
          std::snprintf(one, sizeof one, "%s%c = %.10g", per.empty() ? "" : ", ", "xyz"[d], opt.box[std::size_t(d)]);
          per += one;
        }
      std::snprintf(buf, sizeof buf, "periodicity %s: periods %s; free axes: extended FFT box %.6g x %.6g x %.6g, "
                    "Green's function truncated at R = %.6g\n", ewald::to_string(opt.periodicity).c_str(), per.c_str(),
                    res.params.fft_box[0], res.params.fft_box[1], res.params.fft_box[2], res.params.truncation_radius);
    }
    os << buf;
    if (laplace) {
      double qtot = 0;
      for (double q : str.values) qtot += q;
      std::snprintf(buf, sizeof buf, "net charge: %.6g\n", qtot);
      os << buf;
    }
    if (viscous) {
      std::snprintf(buf, sizeof buf, "viscosity: %.10g\n", opt.viscosity);
      os << buf;
    }
    if (double_layer) os << "stresslet k = 0 term: " << (opt.stresslet_zero_mode ? "included" : "dropped") << "\n";
    if (have_exclusions) os << "excluded pairs: " << pairs.size() << "\n";
    std::snprintf(buf, sizeof buf, "tolerance: %.3g (%s), precision: %s\n", opt.tolerance,
                  opt.tolerance_kind == ewald::ToleranceKind::Absolute ? "absolute RMS error"
                                                                       : "relative to the RMS of the result",
                  ewald::to_string(opt.precision).c_str());
    os << buf;
    os << "parameters:\n" << p.describe();
    if (!p.describe().empty() && p.describe().back() != '\n') os << '\n';
    {
      const ewald::CostConstants cc = ewald::cost_constants(opt.precision);
      if (cc.source == "builtin" && !cc.file.empty())  // ELLIPTICA_EWALD_COSTS=FILE without a current entry
        os << "cost model: builtin constants: " << cc.file << " has no entry of this cost model (revision "
           << ewald::cost_model_revision() << ") for " << ewald::to_string(opt.precision)
           << " precision (rewrite it with elliptica ewald calibrate --output FILE)\n";
      else
        os << "cost model: " << cc.source << " constants" << (cc.file.empty() ? "" : " (" + cc.file + ")")
           << " (elliptica ewald calibrate remeasures them)\n";
    }
    print_times(os, res.times);
    if (dist) {
      os << "ranks: " << per_rank.size() << " (distributed plan: slabs along " << "xyz"[per_rank[0].slab_axis] << ")\n";
      for (const ewald::DistributedStats& r : per_rank) {
        std::snprintf(buf, sizeof buf, "  rank %d: planes [%d, %d), %zu points, %zu ghost sources, sent %.3g MB (sort %.3g, ghost sources %.3g, ghost planes %.3g)\n",
                      r.rank, r.plane_start, r.plane_start + r.planes, r.owned, r.ghosts,
                      1e-6 * double(r.bytes_sort + r.bytes_ghost_source + r.bytes_ghost_grid), 1e-6 * double(r.bytes_sort),
                      1e-6 * double(r.bytes_ghost_source), 1e-6 * double(r.bytes_ghost_grid));
        os << buf;
      }
    }
    if (res.coincident_pairs > 0)
      os << "coincident (target, source) pairs (singular term excluded): " << res.coincident_pairs << "\n";
    if (a.energy) {
      std::snprintf(buf, sizeof buf, "energy: U = %.17g (charge^2/length, Gaussian units)\n", res.energy);
      os << buf;
    }
    std::snprintf(buf, sizeof buf, "read input: %.6g s, write output: %.6g s, wall total: %.6g s, peak memory: %.1f MiB\n",
                  t_read_s, t_write_s, seconds_since(t_start), static_cast<double>(peak_bytes) / (1024.0 * 1024.0));
    os << buf;
    os << "wrote " << a.out << ": shape " << shape_str(out) << " [" << header << "]" << (npy ? " (.npy)" : " (CSV)")
       << "\n";
    if (forces_file)
      os << "wrote " << a.forces_out << ": shape " << shape_str(forces) << " [Fx,Fy,Fz]"
         << (ends_with_npy(a.forces_out) ? " (.npy)" : " (CSV)") << "\n";
    if (summary_file) os << "wrote " << a.summary << " (JSON summary)\n";
  }
  return 0;
}

}  // namespace elliptica::cli
