/// @file bem_acoustics_cmd.cpp
/// `elliptica bem --frequency ...`: the acoustic BEM in physical units (include/elliptica/bem/
/// acoustics.hpp): a sweep over frequencies in Hz with a sound speed and density, scattering of a
/// 1 Pa plane wave / point source or radiation by a prescribed normal velocity, optionally on a
/// locally reacting (impedance) surface; levels in dB; field points (microphones or a plane cut).
/// A thin layer over the C++ plan bem::AcousticSweep (acoustic_sweep.hpp), which Python's
/// AcousticBEM.sweep uses too: this file parses the options, reads the input files, asks for the
/// x-z directivity cut, prints progress and runs the plots.
///
/// The run folder (--out; written by AcousticSweep::run):
///   run.json         the settings that define the results (the plan's: digests of the mesh,
///                    frequencies, velocities, impedances, directions and field points, the
///                    medium, the problem, the solver options; and this command's options as
///                    "labels"); --resume continues only a run with the same run.json
///   frequencies.csv  one row per finished frequency: index, frequency_hz, k (1/m), ka (k D / 2,
///                    D = body size), gmres_iterations, setup_seconds, solve_seconds,
///                    field_seconds (far field, power, field points), power_w
///                    (radiated power for radiation, scattered power for scattering; both the
///                    far-field integral 1/(2 rho c) int |p_inf|^2, over the half sphere above a
///                    ground plane), lw_db (sound power level re 1 pW), ts_db (scattering of a plane
///                    wave: target strength 20 log10 |p_inf(-d)| / 1 Pa, dB re 1 m^2; else empty),
///                    max_spl_1m_db (largest SPL at 1 m over the directivity cut)
///   fNNNN/           per frequency NNNN (index in the list): surface.npy (complex128 pressure per
///                    element, Pa), surface.vtu (re, im, abs, spl_db), directivity.csv (angle_deg in
///                    the x-z plane from +z towards +x, x, y, z, re, im of p_inf (Pa m), spl_1m_db,
///                    di_db; empty below a ground plane), field_points.csv (x, y, z, re, im, abs,
///                    spl_db, inside; the total pressure, 0 inside the body or below a ground
///                    plane), field.vtu (grid: point data re, im, abs,
///                    spl_db, inside)
///   With --incident sweep:... / --incident-file (a monostatic sweep at every frequency) each
///   fNNNN/ holds monostatic.csv instead (angle_deg or index, dx, dy, dz, re, im of p_inf(-d),
///   ts_db, gmres_iterations), frequencies.csv's ts_db is the largest TS over the directions, and
///   the plots are sweep.png and monostatic.png (TS against aspect and frequency).
///   summary.json     totals, written at the end
///   sweep.png, directivity.png, fNNNN/field.png   scripts/bem_sweep_plots.py, unless --no-plots
/// Each frequency's files are written as one set when it finishes, and frequencies.csv is then
/// rewritten (atomically); an interrupted run keeps every finished frequency, and --resume
/// computes only the missing ones.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bem_cmd.hpp"
#include "cli_util.hpp"
#include "elliptica/bem/acoustic_sweep.hpp"
#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/bem/vtu.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/record.hpp"
#include "plot_script.hpp"

namespace elliptica::cli::bem_detail {

namespace {

namespace fs = std::filesystem;
using cplx = std::complex<double>;
using V3 = std::array<double, 3>;

using bem::kMaxFieldPoints;
constexpr std::size_t kMaxFrequencies = bem::kMaxSweepFrequencies;

std::string num(double v) {
  std::ostringstream o;
  o.precision(10);
  o << v;
  return o.str();
}

/// F | F1,F2,... | FROM:TO:STEP (both ends included when TO lies on the grid, to 1e-9 STEP).
std::vector<double> parse_frequencies(const std::string& spec) {
  std::vector<double> f;
  if (spec.find(':') != std::string::npos) {
    const auto p = split(spec, ':');
    if (p.size() != 3) throw InvalidArgument("--frequency FROM:TO:STEP: expected 3 values, got '" + spec + "'");
    const double a = to_double(p[0], "--frequency FROM"), b = to_double(p[1], "--frequency TO"),
                 s = to_double(p[2], "--frequency STEP");
    if (!(std::isfinite(a) && std::isfinite(b) && std::isfinite(s) && a > 0 && b >= a && s > 0))
      throw InvalidArgument("--frequency FROM:TO:STEP needs 0 < FROM <= TO and STEP > 0 (Hz), got '" + spec + "'");
    const double count = std::floor((b - a) / s + 1e-9) + 1;
    if (count > double(kMaxFrequencies))
      throw InvalidArgument("--frequency: at most " + std::to_string(kMaxFrequencies) + " frequencies, got " + num(count));
    for (long i = 0; i < static_cast<long>(count); ++i) {
      // rounded to 12 significant digits, so that 0.1 steps give 0.3 Hz, not 0.30000000000000004
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.12g", a + double(i) * s);
      f.push_back(std::strtod(buf, nullptr));
    }
  } else {
    for (const auto& t : split(spec, ',')) {
      const double v = to_double(t, "--frequency");
      if (!(std::isfinite(v) && v > 0)) throw InvalidArgument("--frequency: values must be finite and > 0 Hz, got '" + t + "'");
      f.push_back(v);
    }
    if (f.size() > kMaxFrequencies)
      throw InvalidArgument("--frequency: at most " + std::to_string(kMaxFrequencies) + " frequencies");
  }
  if (f.empty()) throw InvalidArgument("--frequency: no frequencies in '" + spec + "'");
  return f;
}

cplx parse_complex(const std::string& s, const std::string& what) {
  const auto p = split(s, ',');
  if (p.empty() || p.size() > 2) throw InvalidArgument(what + " must be RE or RE,IM, got '" + s + "'");
  const cplx z(to_double(p[0], what), p.size() == 2 ? to_double(p[1], what) : 0.0);
  if (!std::isfinite(z.real()) || !std::isfinite(z.imag())) throw InvalidArgument(what + " must be finite, got '" + s + "'");
  return z;
}

/// One complex value per element from a file: N rows of re, or re,im (.npy or text), or a
/// complex128 .npy of N values.
std::vector<cplx> read_element_values(const std::string& path, std::size_t n, const std::string& what) {
  if (auto c = bem::read_npy_complex(path)) {
    if (c->size() != n)
      throw InvalidArgument(what + " " + path + ": expected " + std::to_string(n) + " values (one per element), got " +
                            std::to_string(c->size()));
    for (std::size_t e = 0; e < n; ++e)
      if (!std::isfinite((*c)[e].real()) || !std::isfinite((*c)[e].imag()))
        throw InvalidArgument(what + " " + path + ": value of element " + std::to_string(e) + " is not finite");
    return *c;
  }
  const Array2D d = io::read_array(path);
  const std::size_t cols = d.ndim == 1 ? 1 : d.cols;
  if (d.rows != n || cols < 1 || cols > 2)
    throw InvalidArgument(what + " " + path + ": expected " + std::to_string(n) +
                          " rows (one per element) of re or re,im, got shape (" + std::to_string(d.rows) + "," +
                          std::to_string(cols) + ")");
  std::vector<cplx> v(n);
  for (std::size_t e = 0; e < n; ++e) {
    v[e] = cplx(d.values[e * cols], cols == 2 ? d.values[e * cols + 1] : 0.0);
    if (!std::isfinite(v[e].real()) || !std::isfinite(v[e].imag()))
      throw InvalidArgument(what + " " + path + ": value of element " + std::to_string(e) + " is not finite");
  }
  return v;
}

/// The outward normal velocity per element (m/s) of --velocity.
std::vector<cplx> resolve_velocity(const std::string& spec, const bem::Mesh& mesh) {
  const std::size_t n = mesh.num_elements();
  if (spec.rfind("uniform:", 0) == 0) return std::vector<cplx>(n, parse_complex(spec.substr(8), "--velocity uniform:V[,VIM]"));
  if (spec.rfind("translate:", 0) == 0) {
    const auto p = split(spec.substr(10), ',');
    if (p.size() != 3) throw InvalidArgument("--velocity translate:UX,UY,UZ: expected 3 values, got '" + spec + "'");
    std::array<cplx, 3> U{};
    for (int i = 0; i < 3; ++i) U[i] = to_double(p[i], "--velocity translate");
    return bem::rigid_translation_velocity(mesh, U);
  }
  std::error_code ec;
  if (!fs::exists(spec, ec))
    throw IOError(spec + ": --velocity file not found (or use uniform:V or translate:UX,UY,UZ)");
  return read_element_values(spec, n, "--velocity");
}

/// Field points of --field-points: a file of (M,3) points or a plane grid.
struct FieldPoints {
  std::vector<V3> points;
  std::size_t na = 0, nb = 0;  ///< grid dimensions (0 for a file)
  std::string plane;           ///< "xy" / "xz" / "yz" for a grid
};

FieldPoints parse_field_points(const std::string& spec) {
  FieldPoints fp;
  if (spec.empty()) return fp;
  if (spec.rfind("grid:", 0) == 0) {
    const std::string body = spec.substr(5);
    const auto eq = body.find('=');
    if (eq == std::string::npos) throw InvalidArgument("--field-points grid:PLANE=C,A0,A1,NA,B0,B1,NB: no '=' in '" + spec + "'");
    fp.plane = trim(body.substr(0, eq));
    if (fp.plane != "xy" && fp.plane != "xz" && fp.plane != "yz")
      throw InvalidArgument("--field-points grid: PLANE must be xy, xz or yz, got '" + fp.plane + "'");
    const auto p = split(body.substr(eq + 1), ',');
    if (p.size() != 7) throw InvalidArgument("--field-points grid:PLANE=C,A0,A1,NA,B0,B1,NB: expected 7 values, got '" + spec + "'");
    const double c = to_double(p[0], "--field-points grid C"), a0 = to_double(p[1], "--field-points grid A0"),
                 a1 = to_double(p[2], "--field-points grid A1"), b0 = to_double(p[4], "--field-points grid B0"),
                 b1 = to_double(p[5], "--field-points grid B1");
    const int na = to_int(p[3], "--field-points grid NA"), nb = to_int(p[6], "--field-points grid NB");
    for (double v : {c, a0, a1, b0, b1})
      if (!std::isfinite(v)) throw InvalidArgument("--field-points grid: coordinates must be finite");
    if (na < 1 || nb < 1 || na * nb < 2 || double(na) * double(nb) > double(kMaxFieldPoints))
      throw InvalidArgument("--field-points grid: NA and NB must be >= 1 with 2 <= NA x NB <= " + std::to_string(kMaxFieldPoints));
    if ((na > 1 && !(a1 > a0)) || (nb > 1 && !(b1 > b0)))
      throw InvalidArgument("--field-points grid: need A1 > A0 (when NA > 1) and B1 > B0 (when NB > 1)");
    // NA = 1 or NB = 1: a line of microphones at A0 (B0), written as CSV only (no VTU / PNG map)
    fp.na = na > 1 && nb > 1 ? static_cast<std::size_t>(na) : 0;
    fp.nb = na > 1 && nb > 1 ? static_cast<std::size_t>(nb) : 0;
    const int ia = fp.plane == "yz" ? 1 : 0, ib = fp.plane == "xy" ? 1 : 2, ic = 3 - ia - ib;
    for (int i = 0; i < na; ++i)
      for (int j = 0; j < nb; ++j) {
        V3 x{};
        x[ia] = na > 1 ? a0 + (a1 - a0) * i / (na - 1) : a0;
        x[ib] = nb > 1 ? b0 + (b1 - b0) * j / (nb - 1) : b0;
        x[ic] = c;
        fp.points.push_back(x);
      }
    return fp;
  }
  std::error_code ec;
  if (!fs::exists(spec, ec)) throw IOError(spec + ": --field-points file not found (or use grid:PLANE=C,A0,A1,NA,B0,B1,NB)");
  const Array2D d = io::read_array(spec);
  if (d.ndim != 2 || d.cols != 3 || d.rows == 0 || d.rows > kMaxFieldPoints)
    throw InvalidArgument("--field-points " + spec + ": expected an (M,3) array of points, 1 <= M <= " +
                          std::to_string(kMaxFieldPoints));
  for (std::size_t i = 0; i < d.rows; ++i) {
    const V3 x{d.values[3 * i], d.values[3 * i + 1], d.values[3 * i + 2]};
    if (!std::isfinite(x[0]) || !std::isfinite(x[1]) || !std::isfinite(x[2]))
      throw InvalidArgument("--field-points " + spec + ": point " + std::to_string(i) + " is not finite");
    fp.points.push_back(x);
  }
  return fp;
}

/// The polar cut of the directivity: the x-z plane, angle t from +z towards +x, 1 degree steps.
std::vector<V3> directivity_cut(std::vector<double>& angles) {
  std::vector<V3> d;
  for (int i = 0; i < 360; ++i) {
    const double t = i * std::numbers::pi / 180;
    d.push_back({std::sin(t), 0.0, std::cos(t)});
    angles.push_back(i);
  }
  return d;
}

}  // namespace

int run_acoustics(const BemArgs& a, bem::HelmholtzBemOptions ho, const std::string& script,
                  const AcousticDirections& sweep) {
  // ---- arguments -----------------------------------------------------------------------------
  const std::vector<double> freqs = parse_frequencies(a.frequency);
  bem::Medium medium;
  medium.sound_speed = a.sound_speed;
  medium.density = a.density;
  bem::validate(medium);
  if (a.problem != "scattering" && a.problem != "radiation")
    throw InvalidArgument("--problem must be scattering or radiation, got '" + a.problem + "'");
  const bool radiation = a.problem == "radiation";
  if (radiation && a.velocity.empty())
    throw InvalidArgument("--problem radiation needs --velocity (uniform:V, translate:UX,UY,UZ or a file)");
  if (!radiation && !a.velocity.empty()) throw InvalidArgument("--velocity is for --problem radiation");
  if (radiation && ho.bc != bem::BoundaryCondition::Neumann)
    throw InvalidArgument("--problem radiation prescribes the normal velocity: use --bc neumann (the default)");
  cplx beta{};
  bool impedance = false;
  std::error_code ec_imp;
  const bool impedance_file = !a.impedance.empty() && fs::exists(a.impedance, ec_imp);
  if (!a.impedance.empty()) {
    if (ho.bc != bem::BoundaryCondition::Neumann)
      throw InvalidArgument("--impedance describes a locally reacting surface: use --bc neumann (the default)");
    if (!impedance_file) beta = bem::admittance_from_impedance(parse_complex(a.impedance, "--impedance"), medium);
    impedance = true;
    if (ho.precond.kind == bem::PreconditionerKind::Ifmm)
      throw InvalidArgument("--impedance does not work with --precond ifmm: use bd or none");
  }
  // incident field (scattering): plane:dx,dy,dz or point:x,y,z, 1 Pa amplitude; or a monostatic
  // sweep of plane waves at each frequency
  const bool monostatic = !sweep.directions.empty();
  if (monostatic && radiation) throw InvalidArgument("--incident sweep / --incident-file are for --problem scattering");
  if (monostatic && !a.field_points.empty())
    throw InvalidArgument("--field-points takes one incident field, not a sweep of directions");
  // radiation takes an incident field too when --incident is given (radiation + scattering)
  const bool incident_on = !monostatic && (!radiation || a.incident_given);
  const bool point = a.incident.rfind("point:", 0) == 0;
  V3 dir{0, 0, 1};
  if (incident_on) {
    if (a.incident.rfind("plane:", 0) != 0 && !point)
      throw InvalidArgument("--incident must be plane:dx,dy,dz or point:x,y,z with --frequency, got '" + a.incident + "'");
    const auto p = split(a.incident.substr(6), ',');
    if (p.size() != 3) throw InvalidArgument("--incident: expected 3 values, got '" + a.incident + "'");
    for (int i = 0; i < 3; ++i) {
      dir[i] = to_double(p[i], "--incident");
      if (!std::isfinite(dir[i])) throw InvalidArgument("--incident: values must be finite");
    }
    const double nn = std::hypot(dir[0], dir[1], dir[2]);
    if (!point) {
      if (!(nn > 0)) throw InvalidArgument("--incident: direction must be nonzero");
      for (double& c : dir) c /= nn;
    }
  }
  FieldPoints fp = parse_field_points(a.field_points);
  const bool quiet = a.quiet;
  std::ostream& os = std::cout;

  // ---- mesh and everything resolved on it, before any output ------------------------------------
  std::string desc;
  bem::Mesh mesh = load_mesh(a, desc);
  bem::AcousticSweepOptions so;
  so.medium = medium;
  so.solver = ho;
  if (impedance && !impedance_file) {
    so.impedance = {parse_complex(a.impedance, "--impedance")};
  } else if (impedance) {  // one impedance per element (Pa s/m); the element count of the mesh as read
    so.impedance = read_element_values(a.impedance, mesh.num_elements(), "--impedance");
  }
  // translate:UX,UY,UZ needs the outward normals: orient first (the plan validates again, at no
  // change)
  bem::validate_and_orient(mesh, ho.symmetry);
  if (radiation) so.velocity = resolve_velocity(a.velocity, mesh);
  if (incident_on) (point ? so.point_source : so.plane_wave) = dir;
  if (monostatic) {
    so.monostatic = sweep.directions;
    so.monostatic_angles_deg = sweep.angles_deg;
  } else {
    so.directions = directivity_cut(so.direction_angles_deg);
  }
  so.field_points = fp.points;
  so.grid_na = fp.na;
  so.grid_nb = fp.nb;
  if (!quiet && mesh.num_elements() > 2000) so.solver.progress = setup_progress();  // each frequency's set-up
  const bem::AcousticSweep plan(std::move(mesh), freqs, std::move(so));
  const bem::MeshReport& rep = plan.report();
  const double D = plan.body_size();
  const double fmax = *std::max_element(freqs.begin(), freqs.end());
  const double kmin = bem::wavenumber(*std::min_element(freqs.begin(), freqs.end()), medium), kmax = bem::wavenumber(fmax, medium);
  os << "mesh: " << desc << "\n  elements " << rep.elements << ", components " << rep.components << ", volume " << rep.volume
     << " m^3, body size " << D << " m, max edge " << rep.max_edge << " m\n"
     << "medium: c = " << medium.sound_speed << " m/s, rho = " << medium.density << " kg/m^3 (rho c = " << medium.impedance()
     << " Pa s/m)\n"
     << "sweep: " << freqs.size() << " frequencies, " << freqs.front() << " .. " << freqs.back() << " Hz (k D = " << kmin * D
     << " .. " << kmax * D << "), elements per wavelength at the highest " << bem::elements_per_wavelength(plan.mesh(), kmax) << "\n";
  const std::string warn = plan.resolution_warning();
  if (!warn.empty()) std::cerr << "elliptica: warning: at " << fmax << " Hz: " << warn << "\n";
  if (impedance && !impedance_file) {
    os << "impedance: Z = " << a.impedance << " Pa s/m, normalised admittance rho c / Z = " << beta << "\n";
  } else if (impedance) {
    os << "impedance: per element from " << a.impedance << "\n";
  }
  if (!fp.points.empty()) {
    const auto& ins = plan.inside();
    const auto n_inside = static_cast<std::size_t>(std::count(ins.begin(), ins.end(), 1));
    os << "field points: " << fp.points.size() << (fp.na ? " (grid " + fp.plane + ")" : "") << ", " << n_inside
       << " inside the body, on its surface" << (ho.ground ? " or below the ground plane" : "")
       << " (reported as 0, inside = 1)\n";
  }

  // ---- the sweep, in its run folder -------------------------------------------------------------
  // run.json: the plan's settings (data digests, medium, solver) and these labels of the command
  bem::SweepRunOptions ro;
  ro.folder = a.out;
  ro.resume = a.resume;
  ro.keep_fields = false;  // in the files; a large grid over many frequencies would not fit
  ro.labels.set("mesh", a.mesh)
      .set("curve", a.curve ? a.crease : 0.0)
      .set("loop", static_cast<long long>(a.loop))
      .set("frequency", a.frequency)
      .set("velocity", a.velocity)
      .set("impedance", a.impedance)
      .set("incident", monostatic ? sweep.description : incident_on ? a.incident : std::string())
      .set("field_points", a.field_points)
      .set("grid_plane", fp.plane)
      .set("ground", a.ground)
      .set("symmetry", [&] {
        std::string t;
        for (const auto& sp : a.symmetry) t += (t.empty() ? "" : ";") + sp;
        return t;
      }());
  ro.log = [&os](const std::string& line) { os << line << "\n"; };
  ro.progress = [&](const bem::FrequencyResult& r, std::size_t, std::size_t total) {
    if (quiet) return;
    if (monostatic) {
      std::fprintf(stderr, "bem: frequency %zu/%zu: %.6g Hz (k D = %.4g): set-up %.2f s, %zu directions %.2f s, "
                   "at most %d GMRES iterations, TS max %.2f dB\n",
                   r.index + 1, total, r.frequency_hz, 2 * r.ka, r.setup_seconds, r.monostatic.size(), r.solve_seconds,
                   r.iterations, r.ts_db);
      return;
    }
    std::fprintf(stderr, "bem: frequency %zu/%zu: %.6g Hz (k D = %.4g): set-up %.2f s, %d GMRES iterations %.2f s, %s %.4g W (%.2f dB re 1 pW)%s\n",
                 r.index + 1, total, r.frequency_hz, 2 * r.ka, r.setup_seconds, r.iterations, r.solve_seconds,
                 radiation ? "radiated" : "scattered", r.power_w, r.lw_db,
                 std::isnan(r.ts_db) ? "" : (", TS " + num(r.ts_db) + " dB").c_str());
  };
  const bem::SweepSummary sum = plan.run(ro);
  os << "sweep: " << sum.computed << " frequencies computed in " << sum.sweep_seconds << " s (set-up " << sum.setup_seconds
     << " s, GMRES " << sum.solve_seconds << " s, at most " << sum.max_iterations << " iterations)\n"
     << "written: " << (fs::path(a.out) / "frequencies.csv").string() << ", f0000.." << " per-frequency folders, summary.json\n";
  os.flush();
  if (!script.empty()) {
    const std::vector<std::string> args{a.out};
    if (!quiet) std::fprintf(stderr, "plotting: %s\n", plot_command_line(script, args).c_str());
    run_plot_script(script, args, "the data files were written; rerun the script or use --no-plots");
    os << "plots written to " << a.out << " (sweep.png, " << (monostatic ? "monostatic.png" : "directivity.png")
       << (fp.na ? ", fNNNN/field.png" : "") << ")\n";
  }
  return 0;
}

}  // namespace elliptica::cli::bem_detail
