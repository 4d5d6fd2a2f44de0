/// @file bem_acoustics_cmd.cpp
/// `elliptica bem --frequency ...`: the acoustic BEM in physical units (include/elliptica/bem/
/// acoustics.hpp): a sweep over frequencies in Hz with a sound speed and density, scattering of a
/// 1 Pa plane wave / point source or radiation by a prescribed normal velocity, optionally on a
/// locally reacting (impedance) surface; levels in dB; field points (microphones or a plane cut).
/// One plan per frequency (its operator depends on k); the mesh is read, validated and oriented
/// once, and the velocity, impedance and field points are resolved on it once.
///
/// The run folder (--out):
///   run.json         the settings that define the results (mesh, frequencies, medium, problem,
///                    velocity, impedance, incident field, field points, solver options); --resume
///                    continues only a run with the same settings
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

constexpr std::size_t kMaxFrequencies = 100000;
constexpr std::size_t kMaxFieldPoints = 10000000;

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

/// A complex128 ('<c16') .npy file of shape (N,) (as surface.npy and numpy.save write); nullopt
/// for any other .npy (read_array reads the real ones). IOError for a truncated file.
std::optional<std::vector<cplx>> read_npy_complex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  if (!in.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") return std::nullopt;
  std::size_t hl = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) return std::nullopt;
    hl = b[0] | (std::size_t(b[1]) << 8);
  } else {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) return std::nullopt;
    hl = b[0] | (std::size_t(b[1]) << 8) | (std::size_t(b[2]) << 16) | (std::size_t(b[3]) << 24);
  }
  std::string header(hl, ' ');
  if (hl > 65536 || !in.read(header.data(), static_cast<std::streamsize>(hl))) return std::nullopt;
  if (header.find("'<c16'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    return std::nullopt;
  const auto sp = header.find("'shape': (");
  if (sp == std::string::npos) return std::nullopt;
  const std::string shape = header.substr(sp + 10, header.find(')', sp) - sp - 10);
  const auto parts = split(shape, ',');
  if (parts.empty() || parts.size() > 2 || (parts.size() == 2 && !parts[1].empty())) return std::nullopt;
  const std::size_t n = static_cast<std::size_t>(std::stoull(parts[0]));
  std::vector<cplx> v(n);
  if (n > 0 && !in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(16 * n)))
    throw IOError(path + ": truncated complex128 .npy file");
  return v;
}

/// One complex value per element from a file: N rows of re, or re,im (.npy or text), or a
/// complex128 .npy of N values.
std::vector<cplx> read_element_values(const std::string& path, std::size_t n, const std::string& what) {
  if (auto c = read_npy_complex(path)) {
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
  std::vector<char> inside;    ///< 1 where the point is inside the body or on its surface
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

/// FNV-1a (64 bit) of a file's bytes, as 16 hex digits ("" when spec is not a file): run.json
/// records it for each input file, so that --resume refuses a file whose content changed.
std::string file_digest(const std::string& spec) {
  std::error_code ec;
  if (spec.empty() || !fs::is_regular_file(spec, ec)) return "";
  std::ifstream in(spec, std::ios::binary);
  std::uint64_t h = 1469598103934665603ULL;
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ULL;
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
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

/// The rows of frequencies.csv of an earlier run (resume), by frequency index.
constexpr int kRowColumns = 12;
const char* kRowHeader =
    "index,frequency_hz,k,ka,gmres_iterations,setup_seconds,solve_seconds,field_seconds,power_w,lw_db,ts_db,"
    "max_spl_1m_db";

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
  const bem::MeshReport rep = bem::validate_and_orient(mesh, ho.symmetry);  // the whole body with --symmetry
  const bem::Mesh whole = ho.symmetry.empty() ? bem::Mesh{} : bem::whole_body(mesh, ho.symmetry);
  const bem::Mesh& body = ho.symmetry.empty() ? mesh : whole;
  const std::size_t n = mesh.num_elements();
  const double D = bem::body_size(body);
  const double kmin = bem::wavenumber(freqs.front(), medium), kmax = bem::wavenumber(*std::max_element(freqs.begin(), freqs.end()), medium);
  os << "mesh: " << desc << "\n  elements " << rep.elements << ", components " << rep.components << ", volume " << rep.volume
     << " m^3, body size " << D << " m, max edge " << rep.max_edge << " m\n"
     << "medium: c = " << medium.sound_speed << " m/s, rho = " << medium.density << " kg/m^3 (rho c = " << medium.impedance()
     << " Pa s/m)\n"
     << "sweep: " << freqs.size() << " frequencies, " << freqs.front() << " .. " << freqs.back() << " Hz (k D = " << kmin * D
     << " .. " << kmax * D << "), elements per wavelength at the highest " << bem::elements_per_wavelength(mesh, kmax) << "\n";
  const std::string warn = bem::mesh_resolution_warning(mesh, kmax);
  if (!warn.empty()) std::cerr << "elliptica: warning: at " << *std::max_element(freqs.begin(), freqs.end()) << " Hz: " << warn << "\n";
  if (impedance && !impedance_file) {
    ho.admittance = {beta};
    os << "impedance: Z = " << a.impedance << " Pa s/m, normalised admittance rho c / Z = " << beta << "\n";
  } else if (impedance) {  // one impedance per element (Pa s/m)
    const std::vector<cplx> z = read_element_values(a.impedance, n, "--impedance");
    ho.admittance.resize(n);
    for (std::size_t e = 0; e < n; ++e) {
      try {
        ho.admittance[e] = bem::admittance_from_impedance(z[e], medium);
      } catch (const InvalidArgument& err) {
        throw InvalidArgument("--impedance " + a.impedance + ", element " + std::to_string(e) + ": " + err.what());
      }
    }
    os << "impedance: per element from " << a.impedance << "\n";
  }
  // the plan's own checks at both ends of the sweep (the low-frequency floor, the resolution)
  for (double f : freqs) bem::HelmholtzBem::validate(mesh, bem::wavenumber(f, medium), ho);
  std::vector<cplx> vn;
  if (radiation) vn = resolve_velocity(a.velocity, mesh);
  if (incident_on && point) {
    if (bem::locate_point(body, dir) != bem::PointLocation::kOutside)
      throw InvalidArgument("--incident point: the source lies inside the body or on its surface");
  }
  if (incident_on && point && ho.ground &&
      !(dir[static_cast<std::size_t>(ho.ground->axis)] >= ho.ground->height))
    throw InvalidArgument("--incident point: the source lies below the ground plane");
  fp.inside.resize(fp.points.size());
  std::size_t n_inside = 0;
  for (std::size_t i = 0; i < fp.points.size(); ++i) {
    fp.inside[i] = bem::locate_point(body, fp.points[i]) != bem::PointLocation::kOutside ||
                   (ho.ground && !(fp.points[i][static_cast<std::size_t>(ho.ground->axis)] >= ho.ground->height));
    n_inside += fp.inside[i];
  }
  if (!fp.points.empty())
    os << "field points: " << fp.points.size() << (fp.na ? " (grid " + fp.plane + ")" : "") << ", " << n_inside
       << " inside the body, on its surface" << (ho.ground ? " or below the ground plane" : "")
       << " (reported as 0, inside = 1)\n";

  // ---- run folder -------------------------------------------------------------------------------
  Record run;
  run.set("mesh", a.mesh).set("curve", a.curve ? a.crease : 0.0);
  if (a.loop >= 0) run.set("loop", static_cast<long long>(a.loop));  // only then: earlier run.json files stay valid
  run.set("elements", static_cast<long long>(n))
      .set("frequency", a.frequency)
      .set("frequencies", static_cast<long long>(freqs.size()))
      .set("sound_speed", medium.sound_speed)
      .set("density", medium.density)
      .set("problem", a.problem)
      .set("velocity", a.velocity)
      .set("impedance", a.impedance)
      .set("bc", std::string(ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet"))
      .set("incident", monostatic ? sweep.description : incident_on ? a.incident : std::string())
      .set("directions", static_cast<long long>(sweep.directions.size()))
      .set("field_points", a.field_points)
      .set("grid_plane", fp.plane)
      .set("grid_na", static_cast<long long>(fp.na))
      .set("grid_nb", static_cast<long long>(fp.nb))
      .set("tol", ho.gmres.rtol)
      .set("operator", bem::to_string(ho.op.kind))
      .set("precond", bem::to_string(ho.precond.kind))
      .set("fmm_tol", ho.op.fmm.tolerance)
      .set("alpha", a.alpha)
      .set("restart", ho.gmres.restart)
      .set("max_iter", ho.gmres.max_iterations)
      .set("leaf", ho.op.fmm.tree.max_leaf)
      .set("bd_level", ho.precond.bd_level)
      .set("dense_max", static_cast<long long>(ho.op.dense_max_elements))
      .set("mesh_digest", file_digest(a.mesh))
      .set("velocity_digest", file_digest(a.velocity))
      .set("impedance_digest", file_digest(a.impedance))
      .set("field_points_digest", file_digest(a.field_points))
      .set("ground", a.ground)
      .set("symmetry", [&] {
        std::string t;
        for (const auto& sp : a.symmetry) t += (t.empty() ? "" : ";") + sp;
        return t;
      }());
  const std::string run_text = to_json(run) + "\n";
  const fs::path out(a.out);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw IOError(a.out + ": --out exists and is not a folder");
  const bool had_run = fs::exists(out / "run.json", ec);
  std::vector<std::array<double, kRowColumns>> rows(freqs.size());
  std::vector<char> done(freqs.size(), 0);
  if (had_run && !a.resume)
    throw InvalidArgument(a.out + " holds a frequency sweep (run.json): pass --resume to continue it, or choose another --out");
  if (a.resume && had_run) {
    std::ifstream in(out / "run.json");
    std::stringstream old;
    old << in.rdbuf();
    if (old.str() != run_text)
      throw InvalidArgument("--resume: the sweep in " + a.out +
                            " was run with other settings (run.json differs); use another --out or the same options");
    if (fs::exists(out / "frequencies.csv", ec)) {
      const Array2D t = io::read_array((out / "frequencies.csv").string());
      const std::size_t cols = t.ndim == 1 ? 1 : t.cols;
      if (t.rows > 0 && cols != kRowColumns) throw IOError(a.out + "/frequencies.csv: unexpected columns; cannot resume");
      for (std::size_t r = 0; r < t.rows; ++r) {
        const double idx = t.values[r * cols];
        if (!(idx >= 0 && idx < double(freqs.size()))) continue;
        const auto i = static_cast<std::size_t>(idx);
        char name[32];
        std::snprintf(name, sizeof name, "f%04zu", i);
        if (!fs::exists(out / name / (monostatic ? "monostatic.csv" : "surface.npy"), ec)) continue;  // lost: again
        std::copy(t.values.begin() + static_cast<std::ptrdiff_t>(r * cols),
                  t.values.begin() + static_cast<std::ptrdiff_t>((r + 1) * cols), rows[i].begin());
        done[i] = 1;
      }
    }
  }
  const bool created = !fs::exists(out, ec);
  fs::create_directories(out, ec);
  if (ec) throw IOError(a.out + ": cannot create the output folder (" + ec.message() + ")");
  if (!had_run) io::write_text_atomic((out / "run.json").string(), run_text);
  // a run that fails before its first frequency is finished leaves nothing behind (not even
  // run.json, which would make the next attempt ask for --resume)
  struct FirstFrequencyGuard {
    fs::path out;
    bool armed, created;
    ~FirstFrequencyGuard() {
      if (!armed) return;
      std::error_code e;
      fs::remove(out / "run.json", e);
      if (created) fs::remove(out, e);  // only if empty
    }
  } guard{out, !had_run, created};
  const std::size_t n_done = static_cast<std::size_t>(std::count(done.begin(), done.end(), 1));
  if (n_done > 0) os << "resume: " << n_done << " of " << freqs.size() << " frequencies already done in " << a.out << "\n";

  auto write_rows = [&] {
    std::size_t m = 0;
    for (char d : done) m += d;
    Array2D t(m, kRowColumns);
    std::size_t r = 0;
    for (std::size_t i = 0; i < freqs.size(); ++i)
      if (done[i]) std::copy(rows[i].begin(), rows[i].end(), t.values.begin() + static_cast<std::ptrdiff_t>(r++ * kRowColumns));
    io::write_csv((out / "frequencies.csv").string(), t, kRowHeader);
  };

  // ---- the sweep ----------------------------------------------------------------------------------
  std::vector<double> angles;
  const std::vector<V3> cut = directivity_cut(angles);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto t_sweep = Clock::now();
  double setup_total = 0, solve_total = 0;
  int it_max = 0;
  for (std::size_t i = 0; i < freqs.size(); ++i) {
    if (done[i]) continue;
    const double f = freqs[i];
    const double k = bem::wavenumber(f, medium);
    const auto t0 = Clock::now();
    bem::HelmholtzBemOptions hf = ho;
    if (!quiet && n > 2000) hf.progress = setup_progress();
    const bem::HelmholtzBem plan(mesh, k, hf);
    const double setup_plan_s = seconds_since(t0);
    if (monostatic) {
      // TS against the aspect at this frequency: one set-up, one GMRES per direction
      const std::vector<bem::MonostaticResult> res = plan.solve_monostatic(sweep.directions);
      const double setup_s = setup_plan_s;
      double solve_s = 0;
      int its = 0;
      const bool angles = !sweep.angles_deg.empty();
      const std::size_t cols = 8;
      Array2D m(res.size(), cols);
      double ts_max = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < res.size(); ++j) {
        const auto& r = res[j];
        solve_s += r.solve_seconds;
        its = std::max(its, r.iterations);
        ts_max = std::max(ts_max, r.ts_db);
        const double row[cols] = {angles ? sweep.angles_deg[j] : double(j), r.direction[0], r.direction[1], r.direction[2],
                                  r.u_inf.real(), r.u_inf.imag(), r.ts_db, double(r.iterations)};
        std::copy(row, row + cols, m.values.begin() + static_cast<std::ptrdiff_t>(cols * j));
      }
      setup_total += setup_s;
      solve_total += solve_s;
      it_max = std::max(it_max, its);
      char name[32];
      std::snprintf(name, sizeof name, "f%04zu", i);
      const fs::path dir_i = out / name;
      fs::create_directories(dir_i, ec);
      if (ec) throw IOError(dir_i.string() + ": cannot create (" + ec.message() + ")");
      io::write_csv((dir_i / "monostatic.csv").string(), m,
                    std::string(angles ? "angle_deg" : "index") + ",dx,dy,dz,re,im,ts_db,gmres_iterations");
      rows[i] = {double(i), f, k, k * D / 2, double(its), setup_s, solve_s, 0.0, nan, nan, ts_max, nan};
      done[i] = 1;
      write_rows();
      guard.armed = false;
      if (!quiet)
        std::fprintf(stderr, "bem: frequency %zu/%zu: %.6g Hz (k D = %.4g): set-up %.2f s, %zu directions %.2f s, "
                     "at most %d GMRES iterations, TS max %.2f dB\n",
                     i + 1, freqs.size(), f, k * D, setup_s, res.size(), solve_s, its, ts_max);
      continue;
    }
    bem::SurfaceSolution sol;
    bem::IncidentField inc;
    if (incident_on)  // 1 Pa plane wave, or 1 Pa at 1 m from the point source; + reflection (ground)
      inc = point ? plan.point_source(dir, 4 * std::numbers::pi) : plan.plane_wave(dir);
    if (radiation)
      sol = plan.solve_radiation(bem::normal_velocity_data(vn, f, medium), incident_on ? &inc : nullptr);
    else
      sol = plan.solve(inc);
    // the radiation companion operator is built at the first solve_radiation: set-up, not GMRES
    const double setup_s = setup_plan_s + plan.setup().companion_seconds * (plan.setup().impedance ? 0 : 1);
    const double solve_s = sol.solve_seconds;
    const auto t_field = Clock::now();
    setup_total += setup_s;
    solve_total += solve_s;
    it_max = std::max(it_max, sol.iterations);
    // far field: directivity cut and the power, 1/(2 rho c) int |p_inf|^2 over the sphere (the
    // half sphere above a ground plane; the rule exact for degree < 2 n_theta). The far-field
    // route also for radiation: the surface integral 1/2 Re int p conj(v) loses accuracy as
    // ka -> 0 (its O(h) error relative to a power ~ (ka)^2), the far field does not.
    const std::vector<cplx> pcut = plan.far_field(sol, cut);
    const int nth = std::clamp(static_cast<int>(std::ceil(k * D / 2)) + 12, 12, 200);
    const bem::SphereRule rule =
        ho.ground ? bem::hemisphere_rule(nth, ho.ground->axis) : bem::sphere_rule(nth);
    const std::vector<cplx> pinf = plan.far_field(sol, rule.directions);
    const double power = bem::far_field_power(pinf, rule, medium);
    double ts = nan;
    if (!radiation && incident_on && !point) ts = 20 * std::log10(std::abs(plan.far_field(sol, {{-dir[0], -dir[1], -dir[2]}})[0]));
    // the mean of |p_inf|^2 over the (half) sphere, for the directivity index: 2 rho c P / area
    const double mean2 = 2 * medium.impedance() * power / ((ho.ground ? 2 : 4) * std::numbers::pi);
    double max_spl = -std::numeric_limits<double>::infinity();
    Array2D dcsv(cut.size(), 8);
    for (std::size_t j = 0; j < cut.size(); ++j) {
      const bool below = ho.ground && cut[j][static_cast<std::size_t>(ho.ground->axis)] < 0;
      const double spl = below ? nan : bem::spl_db(pcut[j]);  // |p| at 1 m = |p_inf| / 1 m
      if (!below) max_spl = std::max(max_spl, spl);
      const double di = mean2 > 0 && !below ? 10 * std::log10(std::norm(pcut[j]) / mean2) : nan;
      const double row[8] = {angles[j], cut[j][0], cut[j][1], cut[j][2], pcut[j].real(), pcut[j].imag(), spl, di};
      std::copy(row, row + 8, dcsv.values.begin() + static_cast<std::ptrdiff_t>(8 * j));
    }
    // field points: total pressure (scattered + incident; radiated for radiation)
    std::vector<cplx> pf(fp.points.size());
    if (!fp.points.empty()) {
      std::vector<V3> outside;
      std::vector<std::size_t> where;
      for (std::size_t j = 0; j < fp.points.size(); ++j)
        if (!fp.inside[j]) {
          outside.push_back(fp.points[j]);
          where.push_back(j);
        }
      if (!outside.empty()) {
        const std::vector<cplx> ps = plan.scattered_field(sol, outside);
        // the incident field (and its reflection in the ground plane); 4 pi G: 1 Pa at 1 m
        std::vector<cplx> pi(outside.size());
        if (incident_on)
          pi = point ? plan.point_source_at(dir, outside, 4 * std::numbers::pi) : plan.plane_wave_at(dir, outside);
        for (std::size_t j = 0; j < outside.size(); ++j) pf[where[j]] = ps[j] + pi[j];
      }
    }
    const double field_s = seconds_since(t_field);
    // ---- this frequency's files, as one set -----------------------------------------------------
    char name[32];
    std::snprintf(name, sizeof name, "f%04zu", i);
    const fs::path dir_i = out / name;
    fs::create_directories(dir_i, ec);
    if (ec) throw IOError(dir_i.string() + ": cannot create (" + ec.message() + ")");
    io::OutputSet files;
    io::OutputFile& f_np = files.add((dir_i / "surface.npy").string());
    io::OutputFile& f_vtu = files.add((dir_i / "surface.vtu").string());
    io::OutputFile& f_dir = files.add((dir_i / "directivity.csv").string());
    bem::write_npy_complex(f_np, ho.bc == bem::BoundaryCondition::Neumann ? sol.u : sol.dudn);
    {
      const std::vector<cplx>& p = ho.bc == bem::BoundaryCondition::Neumann ? sol.u : sol.dudn;
      bem::CellField re{"re", 1, {}}, im{"im", 1, {}}, ab{"abs", 1, {}}, spl{"spl_db", 1, {}};
      for (const cplx& v : p) {
        re.values.push_back(v.real());
        im.values.push_back(v.imag());
        ab.values.push_back(std::abs(v));
        spl.values.push_back(ho.bc == bem::BoundaryCondition::Neumann ? std::max(bem::spl_db(v), -1000.0) : 0.0);
      }
      bem::write_vtu(f_vtu, plan.mesh(), {re, im, ab, spl});
    }
    io::write_csv(f_dir, dcsv, "angle_deg,x,y,z,re,im,spl_1m_db,di_db");
    if (!fp.points.empty()) {
      io::OutputFile& f_fp = files.add((dir_i / "field_points.csv").string());
      Array2D t(fp.points.size(), 8);
      bem::CellField re{"re", 1, {}}, im{"im", 1, {}}, ab{"abs", 1, {}}, spl{"spl_db", 1, {}}, ins{"inside", 1, {}};
      for (std::size_t j = 0; j < fp.points.size(); ++j) {
        const cplx p = pf[j];
        // inside: NaN in the CSV (0 dB is a level); 0 in the VTU (masked by its inside field)
        const double s = fp.inside[j] ? 0.0 : std::max(bem::spl_db(p), -1000.0);
        const double row[8] = {fp.points[j][0], fp.points[j][1], fp.points[j][2], p.real(), p.imag(), std::abs(p),
                               fp.inside[j] ? nan : s, double(fp.inside[j])};
        std::copy(row, row + 8, t.values.begin() + static_cast<std::ptrdiff_t>(8 * j));
        re.values.push_back(p.real());
        im.values.push_back(p.imag());
        ab.values.push_back(std::abs(p));
        spl.values.push_back(s);
        ins.values.push_back(double(fp.inside[j]));
      }
      io::write_csv(f_fp, t, "x,y,z,re,im,abs,spl_db,inside");
      if (fp.na) {
        io::OutputFile& f_gv = files.add((dir_i / "field.vtu").string());
        bem::write_vtu_grid(f_gv, fp.na, fp.nb, fp.points, {re, im, ab, spl, ins});
      }
    }
    files.commit();
    rows[i] = {double(i), f, k, k * D / 2, double(sol.iterations), setup_s, solve_s, field_s, power,
               power > 0 ? 10 * std::log10(power / 1e-12) : nan, ts, max_spl};
    done[i] = 1;
    write_rows();
    guard.armed = false;
    if (!quiet)
      std::fprintf(stderr, "bem: frequency %zu/%zu: %.6g Hz (k D = %.4g): set-up %.2f s, %d GMRES iterations %.2f s, %s %.4g W (%.2f dB re 1 pW)%s\n",
                   i + 1, freqs.size(), f, k * D, setup_s, sol.iterations, solve_s, radiation ? "radiated" : "scattered",
                   power, power > 0 ? 10 * std::log10(power / 1e-12) : nan,
                   std::isnan(ts) ? "" : (", TS " + num(ts) + " dB").c_str());
  }
  const double sweep_s = seconds_since(t_sweep);

  // ---- summary ------------------------------------------------------------------------------------
  {
    Record s;
    s.set("run", run)
        .set("frequencies_computed", static_cast<long long>(freqs.size() - n_done))
        .set("frequencies_resumed", static_cast<long long>(n_done))
        .set("body_size_m", D)
        .set("setup_seconds", setup_total)
        .set("solve_seconds", solve_total)
        .set("sweep_seconds", sweep_s)
        .set("max_gmres_iterations", it_max)
        // the normalised admittance of a scalar --impedance (null: rigid, or one per element)
        .set("impedance_admittance_re", impedance && !impedance_file ? beta.real() : nan)
        .set("impedance_admittance_im", impedance && !impedance_file ? beta.imag() : nan);
    io::write_text_atomic((out / "summary.json").string(), to_json(s) + "\n");
  }
  os << "sweep: " << freqs.size() - n_done << " frequencies computed in " << sweep_s << " s (set-up " << setup_total
     << " s, GMRES " << solve_total << " s, at most " << it_max << " iterations)\n"
     << "written: " << (out / "frequencies.csv").string() << ", f0000.." << " per-frequency folders, summary.json\n";
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
