/// @file ewald_cmd.cpp
/// `elliptica ewald`: reads sources/strengths (or a .gro file), runs an EwaldPlan, writes the
/// result atomically and prints the chosen parameters, the error estimate and per-stage timings.
#include "ewald_cmd.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
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

/// Rank-1 or (N,1) array -> count of values; anything else is an error naming `what`.
void require_points(const Array2D& a, const std::string& what, const std::string& file) {
  if (a.rows == 0) throw InvalidArgument(what + " (" + file + ") contains no points");
  if (a.ndim != 2 || a.cols != 3)
    throw InvalidArgument(what + " (" + file + ") must be an (N,3) array of coordinates, got shape " + shape_str(a));
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
  std::snprintf(line, sizeof line, "  %-10s %12s %7s\n", "stage", "seconds", "%");
  os << line;
  for (const auto& [name, sec] : rows) {
    std::snprintf(line, sizeof line, "  %-10s %12.6g %7.1f\n", name.c_str(), sec, total > 0 ? 100.0 * sec / total : 0.0);
    os << line;
  }
  std::snprintf(line, sizeof line, "  %-10s %12.6g %7.1f\n", "total", total, total > 0 ? 100.0 : 0.0);
  os << line;
}

}  // namespace

CLI::App* add_ewald_command(CLI::App& app, EwaldArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "ewald",
      "Spectral Ewald summation of triply periodic Laplace (1/r) or Stokes stokeslet sums in a rectangular box.");
  cmd->footer(
      "Inputs: the content decides, not the file name: a file that starts with the NumPy magic string is read\n"
      "  as .npy (float64/float32/int32/int64, C or Fortran order), any other file as a text table\n"
      "  (whitespace and/or comma separated numbers, '#' comments, one optional first line of column names).\n"
      "Output: .npy if --out ends in .npy, else CSV with a '#' header. --out must not be one of the inputs.\n"
      "Without --targets, the sources are the targets and the self-interaction is excluded.\n"
      "Output columns: laplace -> phi (N,), or [phi, Ex, Ey, Ez] (N,4) with --field; stokeslet -> [ux, uy, uz].\n"
      "Units: none are imposed; lengths are in the unit of the inputs (nm for --gro), and\n"
      "  phi = sum q/r (Gaussian units, no 1/(4 pi eps0)), E = -grad phi (charge/length^2),\n"
      "  u = 1/(8 pi mu) sum S(r) f with S = I/r + r r^T/r^3 (force/(viscosity*length)).\n"
      "Conventions: k = 0 mode excluded (tin-foil); a non-neutral Laplace system gets the uniform\n"
      "neutralising background. The tolerance is relative to the RMS of the result unless --abs-tol.\n"
      "--out may be a FIFO or a character device (e.g. /dev/null, /dev/stdout), written through; a symbolic link\n"
      "  is followed; an existing file keeps its permissions.\n"
      "Exit codes: 0 ok, 1 command-line usage, 2 invalid input, 3 file error, 4 numerical failure,\n"
      "  6 out of resources (memory, threads, size limits).");

  cmd->add_option("--kernel", a.kernel, "laplace or stokeslet")
      ->check(CLI::IsMember({"laplace", "stokeslet"}))
      ->capture_default_str();
  a.o_box = cmd->add_option("--box", a.box, "box lengths L1,L2,L3 (or one L for a cube), > 0");
  cmd->add_option("--tol", a.tol, "tolerance 0 < EPS < 1 (relative RMS error unless --abs-tol)")
      ->capture_default_str();
  cmd->add_flag("--abs-tol", a.abs_tol, "EPS is an absolute RMS error in the result's units");
  a.o_sources = cmd->add_option("--sources", a.sources, "source positions, (N,3) array file");
  a.o_strengths = cmd->add_option("--strengths", a.strengths,
                                  "strengths: charges (N,) or (N,1) for laplace, forces (N,3) for stokeslet");
  a.o_targets = cmd->add_option("--targets", a.targets, "target positions, (M,3) array file (default: the sources)");
  a.o_gro = cmd->add_option("--gro", a.gro,
                            "GROMACS .gro file instead of --sources/--strengths/--box: positions (nm) and the "
                            "rectangular box from the file, charges from --charges (laplace only)");
  a.o_charges = cmd->add_option("--charges", a.charges,
                                "with --gro: NAME=Q,NAME=Q,... charge per atom-name prefix (longest prefix "
                                "wins), e.g. OW=-0.82,HW=0.41");
  a.o_viscosity = cmd->add_option("--viscosity", a.viscosity, "viscosity mu > 0 (stokeslet only)")
                      ->capture_default_str();
  cmd->add_flag("--field", a.field, "laplace: also compute the field E = -grad phi; output (N,4)");
  cmd->add_option("--threads", a.threads, "number of threads, 0..1024 (0: all available)")->capture_default_str();
  a.o_xi = cmd->add_option("--xi", a.xi, "override: Ewald splitting parameter xi [1/length]");
  a.o_rc = cmd->add_option("--rc", a.rc, "override: real-space cutoff radius [length]");
  a.o_grid = cmd->add_option("--grid", a.grid, "override: FFT grid, M or M1,M2,M3");
  a.o_P = cmd->add_option("--P", a.P, "override: window support P in grid points");
  a.o_beta = cmd->add_option("--beta", a.beta, "override: Kaiser-Bessel shape parameter beta");
  a.o_degree = cmd->add_option("--degree", a.degree, "override: window polynomial degree nu, in [1,30]");
  cmd->add_option("--out", a.out, "output file (.npy, else CSV); written atomically")->required();
  cmd->add_flag("--quiet,-q", a.quiet, "print nothing on success");

  a.o_gro->excludes(a.o_sources)->excludes(a.o_strengths)->excludes(a.o_box);
  a.o_charges->needs(a.o_gro);
  a.o_gro->needs(a.o_charges);
  return cmd;
}

int run_ewald(const EwaldArgs& a) {
  const auto t_start = Clock::now();
  // ---- options that need no files ------------------------------------------------------
  ewald::Options opt;
  opt.kernel = ewald::kernel_from_string(a.kernel);
  const bool laplace = opt.kernel == ewald::Kernel::Laplace;
  const bool use_gro = a.o_gro->count() > 0;
  if (!use_gro) {
    if (a.o_sources->count() == 0) throw InvalidArgument("--sources is required (or give --gro)");
    if (a.o_strengths->count() == 0) throw InvalidArgument("--strengths is required (or give --gro)");
    if (a.o_box->count() == 0) throw InvalidArgument("--box is required (or give --gro)");
    opt.box = parse_box(a.box);
  } else if (!laplace) {
    throw InvalidArgument("--gro provides charges, so it needs --kernel laplace");
  }
  if (!(a.tol > 0 && a.tol < 1))
    throw InvalidArgument("--tol: the tolerance must satisfy 0 < EPS < 1, got " + fmt_g(a.tol));
  opt.tolerance = a.tol;
  opt.tolerance_kind = a.abs_tol ? ewald::ToleranceKind::Absolute : ewald::ToleranceKind::Relative;
  if (a.o_viscosity->count()) {
    if (laplace) throw InvalidArgument("--viscosity applies only to --kernel stokeslet");
    if (!(std::isfinite(a.viscosity) && a.viscosity > 0))
      throw InvalidArgument("--viscosity must be positive and finite");
  }
  opt.viscosity = a.viscosity;
  if (a.field && !laplace) throw InvalidArgument("--field applies only to --kernel laplace");
  opt.compute_field = a.field;
  if (a.threads < 0 || a.threads > kMaxThreads)
    throw InvalidArgument("--threads must be in [0," + std::to_string(kMaxThreads) + "] (0: all available), got " +
                          std::to_string(a.threads));
  opt.threads = a.threads;
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

  // ---- output path: fail before the work, not after -------------------------------------
  if (a.out.empty()) throw InvalidArgument("--out: empty file name");
  {
    // Never overwrite an input with the result.
    const std::pair<const CLI::Option*, const std::string*> inputs[] = {
        {a.o_sources, &a.sources}, {a.o_strengths, &a.strengths}, {a.o_targets, &a.targets}, {a.o_gro, &a.gro}};
    for (const auto& [opt_ptr, path] : inputs)
      if (opt_ptr->count() && !path->empty() && same_file(a.out, *path))
        throw InvalidArgument("--out '" + a.out + "' is the same file as " + opt_ptr->get_name() + " '" + *path +
                              "'; refusing to overwrite an input");
  }
  // The temporary file is created now: an unwritable destination fails before the computation.
  io::OutputFile out_file(a.out);

  // ---- inputs ------------------------------------------------------------------------------
  const auto t_read = Clock::now();
  Array2D src, str, tgt;
  std::string src_name = a.sources, str_name = a.strengths;
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
    str = read_reporting(a.strengths, "--strengths", a.quiet);
  }
  require_points(src, "sources", src_name);
  require_finite(src.view(), "sources (" + src_name + ")");
  const std::size_t N = src.rows;
  const int ncomp = ewald::strength_components(opt.kernel);
  if (str.rows == 0) throw InvalidArgument("strengths (" + str_name + ") contains no values");
  if (laplace) {
    if (str.cols != 1)
      throw InvalidArgument("strengths (" + str_name + ") for laplace must be charges of shape (N,) or (N,1), got " +
                            shape_str(str));
  } else if (str.ndim != 2 || str.cols != static_cast<std::size_t>(ncomp)) {
    throw InvalidArgument("strengths (" + str_name + ") for stokeslet must be forces of shape (N,3), got " +
                          shape_str(str));
  }
  if (str.rows != N)
    throw InvalidArgument("length mismatch: strengths (" + str_name + ") has " + std::to_string(str.rows) +
                          " rows but sources (" + src_name + ") has " + std::to_string(N));
  require_finite(str.view(), "strengths (" + str_name + ")");
  const bool have_targets = a.o_targets->count() > 0;
  if (have_targets) {
    tgt = read_reporting(a.targets, "--targets", a.quiet);
    require_points(tgt, "targets", a.targets);
    require_finite(tgt.view(), "targets (" + a.targets + ")");
  }
  const double t_read_s = seconds_since(t_read);

  // ---- evaluation --------------------------------------------------------------------------
  ewald::EwaldPlan plan(opt);
  const ConstMatrixView<double> sv(src.values.data(), N, 3);
  const ConstMatrixView<double> qv(str.values.data(), N, static_cast<std::size_t>(ncomp));
  ewald::Result res = have_targets ? plan.evaluate(sv, qv, ConstMatrixView<double>(tgt.values.data(), tgt.rows, 3))
                                   : plan.evaluate(sv, qv);
  const std::size_t M = have_targets ? tgt.rows : N;

  // ---- output --------------------------------------------------------------------------------
  Array2D out;
  std::string header;
  if (laplace && a.field) {
    if (res.values.rows != M || res.field.rows != M || res.field.cols != 3)
      throw NumericalError("internal error: unexpected result shape from the Ewald plan");
    out = Array2D(M, 4, 2);
    for (std::size_t i = 0; i < M; ++i) {
      out.values[4 * i] = res.values.values[i * res.values.cols];
      for (int d = 0; d < 3; ++d) out.values[4 * i + 1 + d] = res.field.values[3 * i + d];
    }
    header = "phi,Ex,Ey,Ez";
  } else if (laplace) {
    if (res.values.rows != M || res.values.values.size() != M)
      throw NumericalError("internal error: unexpected result shape from the Ewald plan");
    out = Array2D(M, 1, 1);
    out.values = res.values.values;
    header = "phi";
  } else {
    if (res.values.rows != M || res.values.cols != 3)
      throw NumericalError("internal error: unexpected result shape from the Ewald plan");
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
  const auto t_write = Clock::now();
  const std::string& op = a.out;
  const bool npy = op.size() >= 4 && [&] {
    std::string s = op.substr(op.size() - 4);
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s == ".npy";
  }();
  if (npy)
    io::write_npy(out_file, out);
  else
    io::write_csv(out_file, out, "# " + header);
  out_file.commit();
  const double t_write_s = seconds_since(t_write);

  if (!a.quiet) {
    std::ostream& os = std::cout;
    const ewald::Params& p = res.params;
    char buf[256];
    os << "elliptica ewald: kernel " << ewald::to_string(opt.kernel) << ", " << N << " sources, ";
    if (have_targets)
      os << M << " targets\n";
    else
      os << "targets = sources (self-interaction excluded)\n";
    std::snprintf(buf, sizeof buf, "box: %.10g x %.10g x %.10g%s\n", opt.box[0], opt.box[1], opt.box[2],
                  use_gro ? " (from the .gro file, nm)" : "");
    os << buf;
    if (laplace) {
      double qtot = 0;
      for (double q : str.values) qtot += q;
      std::snprintf(buf, sizeof buf, "net charge: %.6g\n", qtot);
      os << buf;
    } else {
      std::snprintf(buf, sizeof buf, "viscosity: %.10g\n", opt.viscosity);
      os << buf;
    }
    std::snprintf(buf, sizeof buf, "tolerance: %.3g (%s)\n", opt.tolerance,
                  a.abs_tol ? "absolute RMS error" : "relative to the RMS of the result");
    os << buf;
    os << "parameters:\n" << p.describe();
    if (!p.describe().empty() && p.describe().back() != '\n') os << '\n';
    print_times(os, res.times);
    std::snprintf(buf, sizeof buf, "read input: %.6g s, write output: %.6g s, wall total: %.6g s\n", t_read_s,
                  t_write_s, seconds_since(t_start));
    os << buf;
    os << "wrote " << op << ": shape " << shape_str(out) << " [" << header << "]" << (npy ? " (.npy)" : " (CSV)")
       << "\n";
  }
  return 0;
}

}  // namespace elliptica::cli
