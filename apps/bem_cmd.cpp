/// @file bem_cmd.cpp
/// `elliptica bem`: Burton-Miller collocation BEM for exterior Helmholtz scattering through the
/// plan of include/elliptica/bem/plan.hpp: dense matrix or FMM-accelerated operator (--operator),
/// GMRES with the block-diagonal octree preconditioner (include/elliptica/bem/block_diagonal.hpp)
/// or none.
///
/// Outputs (all in --out DIR, written as one set only on success: each file goes to a temporary,
/// created before the computation, and the set is renamed into place when all are complete):
///   surface.npy    complex128 (N,): total field u for --bc neumann, du/dn for --bc dirichlet,
///                  per element (element order of the mesh after validation)
///   surface.vtu    VTK XML unstructured grid, cell data re, im, abs of that field and normals
///   far_field.csv  theta, phi, x, y, z, re, im, abs, sigma over N_ff directions (spherical
///                  Fibonacci lattice; theta from +z, phi from +x), u_inf as in helmholtz.hpp,
///                  sigma = 4 pi |u_inf|^2 (bistatic cross-section, length unit^2)
///   residuals.csv  iteration, GMRES relative residual
///   summary.json   operator, preconditioner, sizes, iterations, set-up/solve times, memory
///   bistatic.png   scripts/bem_plots.py (matplotlib), unless --no-plots
/// A monostatic sweep (--incident sweep:ANGLE,FROM,TO,N or --incident-file FILE: many plane-wave
/// directions d, one plan set-up, HelmholtzBem::solve_monostatic) writes instead, as one set:
///   monostatic.csv index, [angle_deg,] dx, dy, dz, re, im (u_inf(-d)), sigma (4 pi |u_inf(-d)|^2),
///                  ts_db (20 log10 |u_inf(-d)|, dB re 1 length unit^2), gmres_iterations,
///                  solve_seconds; one row a direction
///   summary.json   as above, with a "sweep" object (count, total solve time, mean/max iterations)
///   monostatic.png scripts/bem_plots.py: polar plot of TS against the sweep angle (TS against
///                  the row for a file), unless --no-plots
/// and removes the single-incident files of an earlier run in --out (and vice versa), so that the
/// folder holds the files of one run.
#include "bem_cmd.hpp"

#include "plot_script.hpp"


#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <numbers>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/bem/block_diagonal.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/bem/vtu.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/record.hpp"

namespace elliptica::cli {

namespace {

namespace fs = std::filesystem;
using cplx = std::complex<double>;

}  // namespace

namespace bem_detail {

bem::Mesh load_mesh(const std::string& spec, std::string& description) {
  if (spec.empty()) throw InvalidArgument("--mesh: empty value");
  auto ref_of = [](const std::string& t) {
    const int r = to_int(t, "--mesh refinements");
    if (r < 0 || r > 7) throw InvalidArgument("--mesh: refinements must be in [0, 7], got " + t);
    return r;
  };
  // a trailing ",curved" asks for curved 6-node elements (order 2)
  auto order_of = [&](std::vector<std::string>& p, std::size_t n) {
    if (p.size() == n + 1 && trim(p.back()) == "curved") {
      p.pop_back();
      return 2;
    }
    if (p.size() == n + 1) throw InvalidArgument("--mesh: the optional last value must be 'curved', got '" + p.back() + "'");
    return 1;
  };
  for (const char* kind : {"sphere:", "octasphere:"}) {
    const std::string pre = kind;
    if (spec.rfind(pre, 0) != 0) continue;
    auto p = split(spec.substr(pre.size()), ',');
    const int order = order_of(p, 2);
    if (p.size() != 2) throw InvalidArgument("--mesh " + pre + "R,REF[,curved]: expected 2 values, got '" + spec + "'");
    const double r = to_double(p[0], "--mesh sphere radius");
    if (!(std::isfinite(r) && r > 0)) throw InvalidArgument("--mesh " + pre + " radius must be finite and > 0, got " + p[0]);
    const bool ico = pre == "sphere:";
    description = std::string(ico ? "icosphere" : "octasphere") + " radius " + p[0] + ", " + p[1] + " refinements" +
                  (order == 2 ? ", curved 6-node elements" : "");
    return ico ? bem::icosphere(ref_of(p[1]), r, {0, 0, 0}, order) : bem::octasphere(ref_of(p[1]), r, {0, 0, 0}, order);
  }
  if (spec.rfind("ellipsoid:", 0) == 0) {
    auto p = split(spec.substr(10), ',');
    const int order = order_of(p, 4);
    if (p.size() != 4) throw InvalidArgument("--mesh ellipsoid:A,B,C,REF[,curved]: expected 4 values, got '" + spec + "'");
    std::array<double, 3> ax{};
    for (int i = 0; i < 3; ++i) {
      ax[i] = to_double(p[i], "--mesh ellipsoid semi-axis");
      if (!(std::isfinite(ax[i]) && ax[i] > 0))
        throw InvalidArgument("--mesh ellipsoid: semi-axes must be finite and > 0, got " + p[i]);
    }
    description = "ellipsoid semi-axes " + p[0] + ", " + p[1] + ", " + p[2] + ", " + p[3] + " refinements" +
                  (order == 2 ? ", curved 6-node elements" : "");
    return bem::ellipsoid(ref_of(p[3]), ax, {0, 0, 0}, order);
  }
  std::error_code ec;
  if (!fs::exists(spec, ec)) throw IOError(spec + ": mesh file not found");
  if (fs::is_directory(spec, ec)) throw IOError(spec + ": is a folder, not a mesh file");
  description = "file " + spec;
  return bem::read_mesh(spec);
}

bem::Mesh load_mesh(const BemArgs& a, std::string& description) {
  if (a.loop != -1) {  // -1: not given
    if (a.curve)
      throw InvalidArgument("--loop and --curve exclude each other: --loop puts the curved elements on the Loop limit "
                            "surface of the mesh, --curve on the vertex-normal surface through its vertices");
    if (!a.symmetry.empty())
      throw InvalidArgument("--loop with --symmetry: the Loop surface of a part is not the whole body's near its cut (the "
                            "subdivision rules reach across it); subdivide the whole body, or give a curved (6-node) .msh part");
    if (a.loop < 0 || a.loop > 8) throw InvalidArgument("--loop: levels must be in [0, 8], got " + std::to_string(a.loop));
    if (a.crease != 45.0) throw InvalidArgument("--crease applies with --curve only");
    bem::Mesh m = load_mesh(a.mesh, description);
    if (m.curved()) throw InvalidArgument("--loop: the mesh already has curved 6-node elements (it must be a flat control mesh)");
    bem::validate_and_orient(m);  // closed, consistently oriented outward: what the subdivision needs
    description += ", Loop subdivision limit surface at " + std::to_string(a.loop) + (a.loop == 1 ? " level" : " levels") +
                   " (curved 6-node elements, " + std::to_string(m.num_elements()) + " x 4^" + std::to_string(a.loop) + ")";
    return bem::loop_subdivision_surface(m, a.loop);
  }
  if (!a.curve) {
    if (a.crease != 45.0) throw InvalidArgument("--crease applies with --curve only");
    return load_mesh(a.mesh, description);
  }
  if (!a.symmetry.empty())
    throw InvalidArgument("--curve with --symmetry: the vertex normals of a part are wrong on its cut; curve the whole "
                          "body, or give a curved (6-node) .msh part");
  if (!(a.crease > 0 && a.crease <= 180)) throw InvalidArgument("--crease must be in (0, 180] degrees");
  bem::Mesh m = load_mesh(a.mesh, description);
  if (m.curved()) throw InvalidArgument("--curve: the mesh already has curved 6-node elements");
  bem::validate_and_orient(m);  // consistent outward orientation, which the vertex normals need
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", a.crease);
  description += std::string(", curved by its vertex normals (crease ") + buf + " deg)";
  return bem::curve_by_vertex_normals(m, a.crease);
}

namespace {
/// OPTION AXIS=H[,PLUS|MINUS] -> a mirror plane (reflection +1 for PLUS, the default, -1 for MINUS).
bem::MirrorPlane parse_mirror_plane(const std::string& spec, const std::string& option, const std::string& plus,
                                    const std::string& minus) {
  const std::string form = option + " must be AXIS=H[," + plus + "|" + minus + "] (e.g. z=0), got '" + spec + "'";
  const auto eq = spec.find('=');
  if (eq == std::string::npos) throw InvalidArgument(form);
  const std::string ax = trim(spec.substr(0, eq));
  bem::MirrorPlane m;
  if (ax == "x") m.axis = 0;
  else if (ax == "y") m.axis = 1;
  else if (ax == "z") m.axis = 2;
  else throw InvalidArgument(option + ": AXIS must be x, y or z, got '" + ax + "'");
  const auto p = split(spec.substr(eq + 1), ',');
  if (p.empty() || p.size() > 2) throw InvalidArgument(form);
  m.height = to_double(p[0], option + " position");
  if (!std::isfinite(m.height)) throw InvalidArgument(option + ": the position must be finite");
  if (p.size() == 2) {
    if (p[1] == plus) m.reflection = 1;
    else if (p[1] == minus) m.reflection = -1;
    else throw InvalidArgument(option + ": the kind must be " + plus + " or " + minus + ", got '" + p[1] + "'");
  }
  return m;
}
}  // namespace

bem::GroundPlane parse_ground(const std::string& spec) { return parse_mirror_plane(spec, "--ground", "rigid", "soft"); }

bem::MirrorPlane parse_symmetry(const std::string& spec) {
  return parse_mirror_plane(spec, "--symmetry", "symmetric", "antisymmetric");
}

std::function<void(const std::string&, double)> setup_progress() {
  auto last = std::make_shared<std::pair<std::string, int>>("", -1);
  return [last](const std::string& stage, double f) {
    const int pct = static_cast<int>(f * 100);
    if (stage != last->first || pct / 10 != last->second / 10) {
      std::fprintf(stderr, "bem: set-up: %s %3d%%\n", stage.c_str(), pct);
      *last = {stage, pct};
    }
  };
}

}  // namespace bem_detail

namespace {

using bem_detail::load_mesh;
using bem_detail::setup_progress;

std::vector<std::array<double, 3>> fibonacci_directions(int n) {
  std::vector<std::array<double, 3>> d(static_cast<std::size_t>(n));
  const double golden = std::numbers::pi * (3.0 - std::sqrt(5.0));
  for (int i = 0; i < n; ++i) {
    const double z = 1.0 - 2.0 * (i + 0.5) / n;
    const double r = std::sqrt(std::max(0.0, 1.0 - z * z));
    const double ph = golden * i;
    d[static_cast<std::size_t>(i)] = {r * std::cos(ph), r * std::sin(ph), z};
  }
  return d;
}

/// The incident directions of a monostatic sweep (--incident sweep:... or --incident-file).
struct IncidentSweep {
  bool active = false;
  std::vector<std::array<double, 3>> directions;  ///< as given (normalised by the plan)
  std::vector<double> angles_deg;                 ///< sweep: the angle of each direction; file: empty
  std::string angle;                              ///< "theta" / "phi"; empty for a file
  std::string description;                        ///< for summary.json and the messages
};

/// --incident sweep:ANGLE,FROM,TO,N (bem::sweep_directions: ANGLE theta = polar angle of d from +z
/// in the x-z plane, phi = azimuth of d from +x in the x-y plane; degrees, both ends included) or
/// --incident-file FILE ((M,3) .npy or text, io::read_array). Everything checked here, before the
/// set-up: InvalidArgument for a bad spec, a wrong shape, a zero or non-finite row; IOError for an
/// unreadable file.
IncidentSweep parse_incident_sweep(const BemArgs& a) {
  IncidentSweep sw;
  if (!a.incident_file.empty()) {
    sw.active = true;
    io::ReadInfo info;
    const Array2D d = io::read_array(a.incident_file, &info);
    if (info.header_line > 0 && !a.quiet) {
      std::string names;
      for (const auto& n : info.column_names) names += (names.empty() ? "" : ", ") + n;
      std::cerr << "elliptica: note: --incident-file " << a.incident_file << ": line " << info.header_line
                << " taken as a header of column names (" << names << ") and skipped\n";
    }
    if (d.ndim != 2 || d.cols != 3)
      throw InvalidArgument("--incident-file " + a.incident_file + ": expected an (M,3) array of directions, got shape (" +
                            std::to_string(d.rows) + (d.ndim == 1 ? ",)" : "," + std::to_string(d.cols) + ")"));
    if (d.rows == 0) throw InvalidArgument("--incident-file " + a.incident_file + ": no directions");
    if (d.rows > bem::kMaxSweepDirections)
      throw InvalidArgument("--incident-file " + a.incident_file + ": at most " + std::to_string(bem::kMaxSweepDirections) +
                            " directions, got " + std::to_string(d.rows));
    sw.directions.resize(d.rows);
    for (std::size_t i = 0; i < d.rows; ++i) {
      const double* r = &d.values[3 * i];
      if (!std::isfinite(r[0]) || !std::isfinite(r[1]) || !std::isfinite(r[2]))
        throw InvalidArgument("--incident-file " + a.incident_file + ": direction " + std::to_string(i) + " is not finite");
      if (!(std::hypot(r[0], r[1], r[2]) > 0))
        throw InvalidArgument("--incident-file " + a.incident_file + ": direction " + std::to_string(i) +
                              " is the zero vector");
      sw.directions[i] = {r[0], r[1], r[2]};
    }
    sw.description = "file:" + a.incident_file;
    return sw;
  }
  if (a.incident.rfind("sweep:", 0) != 0) return sw;
  sw.active = true;
  const auto p = split(a.incident.substr(6), ',');
  if (p.size() != 4)
    throw InvalidArgument("--incident sweep:ANGLE,FROM,TO,N: expected 4 values, got '" + a.incident + "'");
  if (p[0] != "theta" && p[0] != "phi")
    throw InvalidArgument("--incident sweep: ANGLE must be theta (x-z plane, from +z) or phi (x-y plane, from +x), got '" +
                          p[0] + "'");
  const double from = to_double(p[1], "--incident sweep FROM");
  const double to = to_double(p[2], "--incident sweep TO");
  if (!std::isfinite(from) || !std::isfinite(to))
    throw InvalidArgument("--incident sweep: FROM and TO must be finite angles in degrees, got '" + a.incident + "'");
  const int n = to_int(p[3], "--incident sweep N");
  if (n < 1 || static_cast<std::size_t>(n) > bem::kMaxSweepDirections)
    throw InvalidArgument("--incident sweep: N must be in [1, " + std::to_string(bem::kMaxSweepDirections) + "], got " + p[3]);
  sw.angle = p[0];
  sw.directions = bem::sweep_directions(bem::sweep_angle_from_string(p[0]), from, to, n, &sw.angles_deg);
  sw.description = a.incident;
  return sw;
}

/// The monostatic sweep of run_bem: one plan set-up, solve_monostatic over the directions, then
/// monostatic.csv + summary.json as one set (file comment) and monostatic.png. Called with the
/// validated mesh, options and sweep, after the output folder exists.

// The operator the plan will choose (HelmholtzBem: Auto is dense up to dense_max_elements unless
// the IFMM, which needs the FMM operator, is asked for).
bool uses_dense_operator(const bem::HelmholtzBemOptions& ho, std::size_t n) {
  return ho.op.kind == bem::OperatorKind::Dense ||
         (ho.op.kind == bem::OperatorKind::Auto && n <= ho.op.dense_max_elements &&
          ho.precond.kind != bem::PreconditionerKind::Ifmm);
}

// The "ifmm" object of summary.json (empty unless the IFMM preconditioner was used).
std::string ifmm_json(const bem::HelmholtzBemSetup& su) {
  if (su.precond != bem::PreconditionerKind::Ifmm) return "";
  return ",\n  \"ifmm\": " + to_json(bem::ifmm_record(su), 2);
}

// One line per IFMM level for the console.
void print_ifmm(std::ostream& os, const bem::HelmholtzBemSetup& su) {
  if (su.precond != bem::PreconditionerKind::Ifmm) return;
  const auto& r = su.ifmm;
  const double mib = 1.0 / (1024.0 * 1024.0);
  os << "ifmm: " << r.name << ", epsilon " << r.epsilon << ", Chebyshev order " << r.order << ", tree depth " << su.ifmm_depth
     << (su.ifmm_reuses_matvec_fmm ? " (the matvec FMM's operators)" : "") << ": " << r.seconds << " s, factors "
     << double(r.bytes) * mib << " MiB, peak " << double(r.peak_bytes) * mib << " MiB, dense level 2: " << r.top_size
     << " unknowns (" << r.top_seconds << " s)\n";
  for (const auto& l : r.levels)
    os << "  level " << l.level << ": " << l.boxes << " boxes, " << l.colours << " colours"
       << (l.node_parallel ? " (node-parallel)" : "") << ", " << l.unknowns << " unknowns, rank max " << l.max_rank
       << " mean " << l.mean_rank << ", " << l.seconds << " s, " << double(l.bytes) * mib << " MiB\n";
}

int run_bem_sweep(const BemArgs& a, bem::Mesh mesh, cplx k, bem::HelmholtzBemOptions ho, const IncidentSweep& sw,
                  int threads, const std::string& script) {
  const fs::path out(a.out);
  io::OutputSet outputs;  // temporaries now: an unwritable folder fails before the set-up
  io::OutputFile& f_mono = outputs.add((out / "monostatic.csv").string());
  io::OutputFile& f_summary = outputs.add((out / "summary.json").string());
  const std::size_t n = mesh.num_elements(), m = sw.directions.size();
  // set-up messages as for a single incident field (run_bem)
  if (!a.quiet) {
    const bool dense = uses_dense_operator(ho, n);
    std::fprintf(stderr, "bem: monostatic sweep of %zu directions, one set-up: %s for %zu elements (%s, %d threads)...\n", m,
                 dense ? "assembling the dense Burton-Miller matrix" : "setting up the FMM Burton-Miller operator", n,
                 ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet", threads);
    ho.progress = setup_progress();
  }
  const auto t_setup = Clock::now();
  const bem::HelmholtzBem plan(std::move(mesh), k, ho);
  const double setup_seconds = seconds_since(t_setup);
  const bem::HelmholtzBemSetup& su = plan.setup();
  if (!a.quiet) std::fprintf(stderr, "bem: set-up done in %.2f s\n", setup_seconds);

  bem::MonostaticOptions mo;
  if (!a.quiet)
    mo.progress = [&sw](std::size_t j, std::size_t count, const bem::MonostaticResult& r) {
      std::string where;
      if (!sw.angles_deg.empty()) {
        char b[64];
        std::snprintf(b, sizeof b, " (%s %.6g deg)", sw.angle.c_str(), sw.angles_deg[j]);
        where = b;
      }
      std::fprintf(stderr, "bem: direction %zu/%zu%s: %d GMRES iterations, %.3f s, TS %.3f dB\n", j + 1, count,
                   where.c_str(), r.iterations, r.solve_seconds, r.ts_db);
    };
  const auto t_solve = Clock::now();
  const std::vector<bem::MonostaticResult> res = plan.solve_monostatic(sw.directions, mo);
  const double sweep_seconds = seconds_since(t_solve);
  double total_solve = 0, mean_it = 0, gmres_s = 0, matvec_s = 0, precond_s = 0;
  long matvecs = 0, precond_apps = 0;
  int max_it = 0;
  for (const auto& r : res) {
    total_solve += r.solve_seconds;
    mean_it += r.iterations;
    max_it = std::max(max_it, r.iterations);
    gmres_s += r.info.gmres_seconds;
    matvecs += r.info.matvecs;
    matvec_s += r.info.matvec_seconds;
    precond_apps += r.info.precond_applications;
    precond_s += r.info.precond_apply_seconds;
  }
  mean_it /= double(m);

  std::ostream& os = std::cout;
  const double mib = 1.0 / (1024.0 * 1024.0);
  print_ifmm(os, su);
  os << "operator: " << bem::to_string(su.op) << ", " << su.operator_bytes * mib << " MiB; precond "
     << bem::to_string(su.precond) << ", " << su.precond_bytes * mib << " MiB; alpha = " << plan.alpha() << "\n"
     << "sweep: " << m << " directions (" << sw.description << "), GMRES(" << ho.gmres.restart << ") rtol "
     << ho.gmres.rtol << ": iterations mean " << mean_it << ", max " << max_it << "\n"
     << "  times: set-up " << setup_seconds << " s (operator " << su.operator_seconds << " s, preconditioner "
     << su.precond_seconds << " s), solves " << total_solve << " s in all (" << total_solve / double(m)
     << " s per direction), sweep " << sweep_seconds << " s\n";

  // ---- outputs ---------------------------------------------------------------------------------
  const bool angles = !sw.angles_deg.empty();
  const std::size_t cols = angles ? 11 : 10;
  Array2D t(m, cols);
  for (std::size_t j = 0; j < m; ++j) {
    const auto& r = res[j];
    std::vector<double> row{double(j)};
    if (angles) row.push_back(sw.angles_deg[j]);
    row.insert(row.end(), {r.direction[0], r.direction[1], r.direction[2], r.u_inf.real(), r.u_inf.imag(), r.sigma,
                           r.ts_db, double(r.iterations), r.solve_seconds});
    std::copy(row.begin(), row.end(), t.values.begin() + static_cast<std::ptrdiff_t>(j * cols));
  }
  io::write_csv(f_mono, t,
                std::string("index,") + (angles ? "angle_deg," : "") +
                    "dx,dy,dz,re,im,sigma,ts_db,gmres_iterations,solve_seconds");
  {
    std::ostringstream js;
    js.precision(10);
    js << "{\n  \"mesh\": " << json_quote(a.mesh) << ",\n  \"incident\": " << json_quote(sw.description)
       << ",\n  \"alpha_re\": " << plan.alpha().real() << ",\n  \"alpha_im\": " << plan.alpha().imag()
       << ",\n  \"tol\": " << ho.gmres.rtol << ",\n  \"restart\": " << ho.gmres.restart << ",\n  \"elements\": " << n
       << ",\n  \"k\": " << k.real() << ",\n  \"k_im\": " << k.imag() << ",\n  \"bc\": \"" << (ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet")
       << "\",\n  \"operator\": \"" << bem::to_string(su.op) << "\",\n  \"precond\": \"" << bem::to_string(su.precond)
       << "\",\n  \"fmm_tolerance\": " << su.fmm_tolerance << ",\n  \"fmm_order\": " << su.fmm_order
       << ",\n  \"near_entries\": " << su.near_entries << ",\n  \"leaf_level\": " << su.leaf_level
       << ",\n  \"bd_level\": " << su.bd_level << ",\n  \"bd_blocks\": " << su.bd_blocks
       << ",\n  \"setup_seconds\": " << setup_seconds << ",\n  \"operator_seconds\": " << su.operator_seconds
       << ",\n  \"fmm_seconds\": " << su.fmm_seconds << ",\n  \"precond_seconds\": " << su.precond_seconds
       << ",\n  \"operator_bytes\": " << su.operator_bytes << ",\n  \"precond_bytes\": " << su.precond_bytes
       << ifmm_json(su) << ",\n  \"threads\": " << threads << ",\n  \"sweep\": {\n    \"count\": " << m
       << ",\n    \"source\": \"" << (angles ? "sweep" : "file") << "\"";
    if (angles)
      js << ",\n    \"angle\": \"" << sw.angle << "\",\n    \"from_deg\": " << sw.angles_deg.front()
         << ",\n    \"to_deg\": " << sw.angles_deg.back();
    js << ",\n    \"total_solve_seconds\": " << total_solve << ",\n    \"sweep_seconds\": " << sweep_seconds
       << ",\n    \"mean_iterations\": " << mean_it << ",\n    \"max_iterations\": " << max_it
       << ",\n    \"gmres_seconds\": " << gmres_s << ",\n    \"matvecs\": " << matvecs
       << ",\n    \"matvec_seconds\": " << matvec_s << ",\n    \"precond_applications\": " << precond_apps
       << ",\n    \"precond_apply_seconds\": " << precond_s << "\n  }\n}\n";
    f_summary.write(js.str());
  }
  outputs.commit();
  {
    // the files of an earlier single-incident run, and a plot that would no longer match the data
    std::error_code ec;
    for (const char* f : {"surface.npy", "surface.vtu", "far_field.csv", "residuals.csv", "bistatic.png", "monostatic.png"})
      fs::remove(out / f, ec);
  }
  os << "written: " << (out / "monostatic.csv").string() << " (" << m << " directions), summary.json\n";
  os.flush();
  if (!a.no_plots) {
    const std::vector<std::string> args{(out / "monostatic.csv").string(), a.out};
    if (!a.quiet) std::fprintf(stderr, "plotting: %s\n", plot_command_line(script, args).c_str());
    run_plot_script(script, args, "the data files were written; rerun the script or use --no-plots");
    os << "plot written to " << (out / "monostatic.png").string() << "\n";
  }
  return 0;
}

}  // namespace

int run_bem(const BemArgs& a) {
  // ---- arguments (all checked before any work) ---------------------------------------------
  const bool acoustic = !a.frequency.empty();
  if (acoustic && !a.k.empty())
    throw InvalidArgument("--k and --frequency exclude each other: give the wavenumber, or frequencies in Hz with "
                          "--sound-speed");
  if (!acoustic && a.k.empty()) throw InvalidArgument("give --k (wavenumber, 1/length unit) or --frequency (Hz)");
  if (!acoustic) {
    const char* only = !a.velocity.empty()        ? "--velocity"
                       : !a.impedance.empty()     ? "--impedance"
                       : !a.field_points.empty()  ? "--field-points"
                       : a.resume                 ? "--resume"
                       : a.problem != "scattering" ? "--problem"
                                                   : nullptr;
    if (only)
      throw InvalidArgument(std::string(only) +
                            " works in physical units: give --frequency (Hz) with --sound-speed and --density");
  }
  cplx k{};
  if (!acoustic) {
    // --k RE or RE,IM: a complex wavenumber (Im k >= 0: a lossy medium, waves decaying outward)
    const auto kp = split(a.k, ',');
    if (kp.size() < 1 || kp.size() > 2) throw InvalidArgument("--k must be RE or RE,IM, got '" + a.k + "'");
    k = cplx(to_double(kp[0], "--k"), kp.size() == 2 ? to_double(kp[1], "--k imaginary part") : 0.0);
    if (!std::isfinite(k.real()) || !std::isfinite(k.imag()) || !(k.real() > 0) || k.imag() < 0)
      throw InvalidArgument("--k must be finite with Re k > 0 and Im k >= 0 (outgoing, decaying waves), got " + a.k);
  }
  bem::HelmholtzBemOptions ho;
  if (a.bc == "neumann" || a.bc == "hard")
    ho.bc = bem::BoundaryCondition::Neumann;
  else if (a.bc == "dirichlet" || a.bc == "soft")
    ho.bc = bem::BoundaryCondition::Dirichlet;
  else
    throw InvalidArgument("--bc must be neumann or dirichlet, got '" + a.bc + "'");
  std::array<double, 3> dir{0, 0, 1};  // plane wave direction, or the point-source position
  bool point = false;
  const IncidentSweep sweep = parse_incident_sweep(a);  // --incident sweep:... / --incident-file
  if (!sweep.active) {
    point = a.incident.rfind("point:", 0) == 0;
    if (a.incident.rfind("plane:", 0) != 0 && !point)
      throw InvalidArgument("--incident must be plane:dx,dy,dz, point:x,y,z or sweep:ANGLE,FROM,TO,N, got '" + a.incident + "'");
    const auto p = split(a.incident.substr(6), ',');
    if (p.size() != 3)
      throw InvalidArgument("--incident " + a.incident.substr(0, 6) + "x,y,z: expected 3 values, got '" + a.incident + "'");
    double nn = 0;
    for (int i = 0; i < 3; ++i) {
      dir[i] = to_double(p[i], "--incident");
      if (!std::isfinite(dir[i])) throw InvalidArgument("--incident: values must be finite, got '" + a.incident + "'");
      nn += dir[i] * dir[i];
    }
    nn = std::sqrt(nn);
    if (!point) {
      if (!std::isfinite(nn) || !(nn > 0)) throw InvalidArgument("--incident: direction must be finite and nonzero");
      for (double& c : dir) c /= nn;
    }
  }
  if (a.precond != "none" && a.precond != "bd" && a.precond != "ifmm")
    throw InvalidArgument("--precond must be none, bd or ifmm, got '" + a.precond + "'");
  ho.precond.kind = bem::preconditioner_kind_from_string(a.precond);
  ho.precond.ifmm.ifmm.epsilon = a.ifmm_eps;
  ho.precond.ifmm.ifmm.sigma = a.ifmm_sigma;
  ho.precond.ifmm.ifmm.top = a.ifmm_top;
  ho.precond.ifmm.ifmm.bottom = a.ifmm_bottom;
  ho.precond.ifmm.order = a.ifmm_order;
  ho.precond.ifmm.depth = a.ifmm_depth;
  if (ho.precond.kind == bem::PreconditionerKind::Ifmm) {
    if (a.op == "dense") throw InvalidArgument("--precond ifmm is built on the FMM operator: use --operator fmm or auto");
    bem::validate(ho.precond.ifmm);  // the ranges of the --ifmm-* options, before any set-up
  }
  if (a.op != "auto" && a.op != "dense" && a.op != "fmm")
    throw InvalidArgument("--operator must be auto, dense or fmm, got '" + a.op + "'");
  ho.op.kind = bem::operator_kind_from_string(a.op);
  if (a.bd_level < -1) throw InvalidArgument("--bd-level must be >= 0 (or -1: leaf level), got " + std::to_string(a.bd_level));
  if (a.bd_leaf < 1) throw InvalidArgument("--leaf must be >= 1, got " + std::to_string(a.bd_leaf));
  ho.precond.bd_level = a.bd_level;
  ho.op.fmm.tree.max_leaf = a.bd_leaf;
  auto g = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  if (!(a.tol > 0 && a.tol < 1)) throw InvalidArgument("--tol must be in (0, 1), got " + g(a.tol));
  if (a.fmm_tol != 0 && !(a.fmm_tol > 1e-14 && a.fmm_tol < 0.5))
    throw InvalidArgument("--fmm-tol must be in (1e-14, 0.5) or 0 (automatic), got " + g(a.fmm_tol));
  if (a.dense_max < 0) throw InvalidArgument("--dense-max must be >= 0");
  if (a.restart < 1) throw InvalidArgument("--restart must be >= 1");
  if (a.max_iter < 1) throw InvalidArgument("--max-iter must be >= 1");
  ho.gmres.rtol = a.tol;
  ho.op.fmm.tolerance = a.fmm_tol;
  ho.op.dense_max_elements = static_cast<std::size_t>(a.dense_max);
  ho.gmres.restart = a.restart;
  ho.gmres.max_iterations = a.max_iter;
  if (!a.alpha.empty()) {
    const auto p = split(a.alpha, ',');
    if (p.size() < 1 || p.size() > 2) throw InvalidArgument("--alpha must be RE or RE,IM, got '" + a.alpha + "'");
    const cplx al(to_double(p[0], "--alpha"), p.size() == 2 ? to_double(p[1], "--alpha") : 0.0);
    if (!std::isfinite(al.real()) || !std::isfinite(al.imag()) || al == cplx(0, 0))
      throw InvalidArgument("--alpha must be finite and nonzero, got '" + a.alpha + "'");
    ho.alpha = al;
    if (al.imag() == 0)
      std::cerr << "elliptica: warning: --alpha " << a.alpha
                << " has no imaginary part: the Burton-Miller system then keeps the interior resonances "
                   "(omit --alpha for the default i / max(k, 4/D), D = body size)\n";
  }
  if (a.far_field_points < 1 || a.far_field_points > 10000000)
    throw InvalidArgument("--far-field-points must be in [1, 1e7], got " + std::to_string(a.far_field_points));
  if (a.threads < 0 || a.threads > 1024)
    throw InvalidArgument("--threads must be in [0,1024] (0: all available), got " + std::to_string(a.threads));
  ho.threads = a.threads;  // the plan's local num_threads clauses; no global OpenMP state
  const int threads = resolve_threads(a.threads);
  if (a.out.empty()) throw InvalidArgument("--out: empty folder name");
  std::string script;
  if (!a.no_plots) script = find_plot_script(acoustic ? "bem_sweep_plots.py" : "bem_plots.py", a.plot_script);

  if (!a.ground.empty()) ho.ground = bem_detail::parse_ground(a.ground);
  for (const auto& sp : a.symmetry) ho.symmetry.push_back(bem_detail::parse_symmetry(sp));
  if ((ho.ground || !ho.symmetry.empty()) && ho.precond.kind == bem::PreconditionerKind::Ifmm)
    throw InvalidArgument("--ground and --symmetry do not work with --precond ifmm: use --precond bd or none");
  if (acoustic) {
    bem_detail::AcousticDirections ad;
    if (sweep.active) {
      ad.directions = sweep.directions;
      ad.angles_deg = sweep.angles_deg;
      ad.description = sweep.description;
    }
    return bem_detail::run_acoustics(a, ho, script, ad);
  }

  // ---- mesh ---------------------------------------------------------------------------------
  std::string desc;
  bem::Mesh mesh = load_mesh(a, desc);
  const bem::MeshReport rep = bem::validate_and_orient(mesh, ho.symmetry);  // the whole body with --symmetry
  const double epw = bem::elements_per_wavelength(mesh, k);
  std::ostream& os = std::cout;
  os << "mesh: " << desc << "\n"
     << "  elements " << rep.elements << ", vertices " << rep.vertices << ", components " << rep.components
     << ", volume " << rep.volume << "\n"
     << "  min area " << rep.min_area << ", max edge " << rep.max_edge << ", flipped " << rep.flipped_elements
     << ", merged duplicate vertices " << rep.removed_duplicates << ", removed unused " << rep.removed_unused << "\n"
     << "  k = " << (k.imag() == 0 ? std::to_string(k.real()) : "(" + std::to_string(k.real()) + ", " + std::to_string(k.imag()) + ")")
     << ", wavelength " << 2 * std::numbers::pi / k.real() << ", elements per wavelength " << epw << "\n";
  const std::string warn = bem::mesh_resolution_warning(mesh, k);
  if (!warn.empty()) std::cerr << "elliptica: warning: " << warn << "\n";

  // every argument check of the plan now, before the output folder and the set-up
  bem::HelmholtzBem::validate(mesh, k, ho);
  // incident data now: a point source inside the body is refused before the expensive part
  const bem::IncidentField inc =
      sweep.active ? bem::IncidentField{} : point ? bem::point_source(mesh, k, dir) : bem::plane_wave(mesh, k, dir);

  // ---- output folder (before the expensive part; removed again if this run fails and leaves it
  // empty) ---------------------------------------------------------------------------------------
  RemoveIfEmptyOnFailure out_guard{a.out};
  out_guard.create();
  if (sweep.active) {  // many plane waves, one set-up: monostatic.csv instead of the single-incident files
    const int rc = run_bem_sweep(a, std::move(mesh), k, ho, sweep, threads, script);
    out_guard.done = true;
    return rc;
  }
  // The output files are one set: their temporaries are created now (an unwritable folder fails
  // before the set-up and solve), written after the solve, and renamed into place together only
  // when all of them are complete, so a failed write (disk full) leaves the previous run's set as
  // it was, and a signal leaves no temporary behind.
  const fs::path out(a.out);
  io::OutputSet outputs;
  io::OutputFile& f_surface = outputs.add((out / "surface.npy").string());
  io::OutputFile& f_vtu = outputs.add((out / "surface.vtu").string());
  io::OutputFile& f_far = outputs.add((out / "far_field.csv").string());
  io::OutputFile& f_res = outputs.add((out / "residuals.csv").string());
  io::OutputFile& f_summary = outputs.add((out / "summary.json").string());

  // ---- set-up (operator + preconditioner) + solve ------------------------------------------------
  const std::size_t n = mesh.num_elements();
  if (!a.quiet) {
    const bool dense = uses_dense_operator(ho, n);
    if (dense)
      std::fprintf(stderr, "bem: assembling the dense %zu x %zu Burton-Miller matrix (%s, %.1f MiB, %d threads)...\n", n, n,
                   ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet",
                   16.0 * double(n) * double(n) / (1024.0 * 1024.0), threads);
    else
      std::fprintf(stderr, "bem: setting up the FMM Burton-Miller operator for %zu elements (%s, %d threads)...\n", n,
                   ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet", threads);
    ho.progress = setup_progress();
  }
  const auto t_setup = Clock::now();
  bem::HelmholtzBem plan(std::move(mesh), k, ho);
  const double setup_seconds = seconds_since(t_setup);
  const bem::HelmholtzBemSetup& su = plan.setup();
  if (!a.quiet) std::fprintf(stderr, "bem: set-up done in %.2f s\n", setup_seconds);
  std::function<void(int, double)> progress;
  if (!a.quiet)
    progress = [](int it, double r) {
      if (it % 10 == 0) std::fprintf(stderr, "bem: GMRES iteration %d, relative residual %.3e\n", it, r);
    };
  bem::HelmholtzBemSolveInfo info;
  // with a ground plane the plan adds the reflected wave / the image source
  const bem::SurfaceSolution sol =
      plan.solve(ho.ground ? (point ? plan.point_source(dir) : plan.plane_wave(dir)) : inc, progress, &info);
  const double mib = 1.0 / (1024.0 * 1024.0);
  os << "operator: " << bem::to_string(su.op);
  if (su.op == bem::OperatorKind::Fmm)
    os << " (tolerance " << su.fmm_tolerance << ", Chebyshev order p = " << su.fmm_order << ", max M2L rank "
       << su.fmm_max_rank << ", leaf level " << su.leaf_level << ", near-field entries " << su.near_entries << ")";
  os << ", " << su.operator_bytes * mib << " MiB\n";
  print_ifmm(os, su);
  os << "solve: precond " << bem::to_string(su.precond);
  if (su.precond == bem::PreconditionerKind::BlockDiagonal)
    os << " (level " << su.bd_level << " of leaf level " << su.leaf_level << ", " << su.bd_blocks << " blocks, largest "
       << su.bd_largest_block << ", " << su.precond_bytes * mib << " MiB)";
  os << "\n  alpha = " << plan.alpha() << ", GMRES(" << ho.gmres.restart << ") rtol " << ho.gmres.rtol << ": "
     << sol.iterations << " iterations, final relative residual " << sol.final_relative_residual << "\n"
     << "  times: operator set-up " << su.operator_seconds << " s";
  if (su.op == bem::OperatorKind::Fmm) os << " (FMM " << su.fmm_seconds << " s)";
  os << ", preconditioner set-up " << su.precond_seconds << " s, GMRES " << info.gmres_seconds << " s ("
     << info.matvecs << " matvecs " << info.matvec_seconds << " s, preconditioner applications "
     << info.precond_applications << " " << info.precond_apply_seconds << " s)\n";

  // ---- far field -------------------------------------------------------------------------------
  const auto t_ff = Clock::now();
  const auto dirs = fibonacci_directions(a.far_field_points);
  const std::vector<cplx> uinf = plan.far_field(sol, dirs);
  Array2D ff(dirs.size(), 9);
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const auto& d = dirs[i];
    double ph = std::atan2(d[1], d[0]);
    if (ph < 0) ph += 2 * std::numbers::pi;
    const double row[9] = {std::acos(std::clamp(d[2], -1.0, 1.0)), ph, d[0], d[1], d[2], uinf[i].real(), uinf[i].imag(),
                           std::abs(uinf[i]), 4 * std::numbers::pi * std::norm(uinf[i])};
    for (int c = 0; c < 9; ++c) ff.values[i * 9 + static_cast<std::size_t>(c)] = row[c];
  }
  const double ff_seconds = seconds_since(t_ff);

  // ---- outputs ---------------------------------------------------------------------------------
  const std::vector<cplx>& field = ho.bc == bem::BoundaryCondition::Neumann ? sol.u : sol.dudn;
  const std::size_t n_el = field.size();
  bem::write_npy_complex(f_surface, field);
  {
    bem::CellField re{"re", 1, {}}, im{"im", 1, {}}, ab{"abs", 1, {}}, nr{"normal", 3, {}};
    for (std::size_t e = 0; e < n_el; ++e) {
      re.values.push_back(field[e].real());
      im.values.push_back(field[e].imag());
      ab.values.push_back(std::abs(field[e]));
      const auto nn = plan.mesh().normal(e);
      nr.values.insert(nr.values.end(), nn.begin(), nn.end());
    }
    bem::write_vtu(f_vtu, plan.mesh(), {re, im, ab, nr});
  }
  io::write_csv(f_far, ff, "theta,phi,x,y,z,re,im,abs,sigma");
  {
    Array2D rh(sol.residual_history.size(), 2);
    for (std::size_t i = 0; i < sol.residual_history.size(); ++i) {
      rh.values[2 * i] = double(i);
      rh.values[2 * i + 1] = sol.residual_history[i];
    }
    io::write_csv(f_res, rh, "iteration,relative_residual");
  }
  {
    std::ostringstream js;
    js.precision(10);
    js << "{\n  \"mesh\": " << json_quote(a.mesh) << ",\n  \"incident\": " << json_quote(a.incident)
       << ",\n  \"alpha_re\": " << plan.alpha().real() << ",\n  \"alpha_im\": " << plan.alpha().imag()
       << ",\n  \"tol\": " << ho.gmres.rtol << ",\n  \"restart\": " << ho.gmres.restart
       << ",\n  \"elements\": " << n << ",\n  \"k\": " << k.real() << ",\n  \"k_im\": " << k.imag() << ",\n  \"bc\": \""
       << (ho.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet") << "\",\n  \"operator\": \""
       << bem::to_string(su.op) << "\",\n  \"precond\": \"" << bem::to_string(su.precond)
       << "\",\n  \"fmm_tolerance\": " << su.fmm_tolerance << ",\n  \"fmm_order\": " << su.fmm_order
       << ",\n  \"near_entries\": " << su.near_entries << ",\n  \"leaf_level\": " << su.leaf_level
       << ",\n  \"bd_level\": " << su.bd_level << ",\n  \"bd_blocks\": " << su.bd_blocks
       << ",\n  \"iterations\": " << sol.iterations << ",\n  \"final_relative_residual\": "
       << sol.final_relative_residual << ",\n  \"setup_seconds\": " << setup_seconds
       << ",\n  \"operator_seconds\": " << su.operator_seconds << ",\n  \"fmm_seconds\": " << su.fmm_seconds
       << ",\n  \"precond_seconds\": " << su.precond_seconds << ",\n  \"gmres_seconds\": " << info.gmres_seconds
       << ",\n  \"matvecs\": " << info.matvecs << ",\n  \"matvec_seconds\": " << info.matvec_seconds
       << ",\n  \"far_field_seconds\": " << ff_seconds << ",\n  \"operator_bytes\": " << su.operator_bytes
       << ",\n  \"precond_bytes\": " << su.precond_bytes << ifmm_json(su) << ",\n  \"threads\": " << threads << "\n}\n";
    f_summary.write(js.str());
  }
  outputs.commit();
  {
    // A plot of a previous run would no longer match the data: remove it (it is drawn anew below).
    std::error_code ec;
    fs::remove(out / "bistatic.png", ec);
    fs::remove(out / "monostatic.csv", ec);  // of an earlier sweep (--incident sweep:/--incident-file)
    fs::remove(out / "monostatic.png", ec);
  }
  os << "far field: " << dirs.size() << " directions in " << ff_seconds << " s\n"
     << "written: " << (out / "surface.npy").string() << " (complex128, "
     << (ho.bc == bem::BoundaryCondition::Neumann ? "total field u" : "du/dn") << "), surface.vtu, far_field.csv, "
     << "residuals.csv, summary.json\n";
  os.flush();
  out_guard.done = true;
  if (!a.no_plots) {
    char d[128];
    std::array<double, 3> pd = dir;  // plot against the propagation direction (source -> origin)
    if (point) {
      const double nn = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
      pd = nn > 0 ? std::array<double, 3>{-dir[0] / nn, -dir[1] / nn, -dir[2] / nn} : std::array<double, 3>{0, 0, 1};
    }
    std::snprintf(d, sizeof d, "%.17g,%.17g,%.17g", pd[0], pd[1], pd[2]);
    const std::vector<std::string> args{(out / "far_field.csv").string(), a.out,
                                        std::string("--incident=") + d};  // "=": values may start with "-"
    if (!a.quiet) std::fprintf(stderr, "plotting: %s\n", plot_command_line(script, args).c_str());
    run_plot_script(script, args, "the data files were written; rerun the script or use --no-plots");
    os << "plot written to " << (out / "bistatic.png").string() << "\n";
  }
  return 0;
}

CLI::App* add_bem_command(CLI::App& app, BemArgs& g) {
  CLI::App* c = app.add_subcommand(
      "bem", "Exterior Helmholtz scattering of a plane wave or a point source by a closed surface: Burton-Miller collocation BEM "
             "(P0 elements), dense or FMM-accelerated, GMRES with a block-diagonal octree preconditioner; seed 001.");
  c->footer(
      "Conventions: e^{-i omega t}, G = e^{ikr}/(4 pi r), outward normals, incident u = e^{ik d.x} (plane) or G(x, x0) (point); far field "
      "u_sc ~ e^{ik|x|}/|x| u_inf(xhat), sigma = 4 pi |u_inf|^2.\n"
      "Outputs in --out: surface.npy (complex128: total u for neumann, du/dn for dirichlet), surface.vtu, "
      "far_field.csv (theta,phi,x,y,z,re,im,abs,sigma; Fibonacci directions), residuals.csv, summary.json, "
      "bistatic.png; the data files are written as one set (all or none replaced).\n"
      "Sweeps (--incident sweep:..., --incident-file): monostatic.csv (index,[angle_deg,]dx,dy,dz,re,im,sigma,ts_db,"
      "gmres_iterations,solve_seconds; re/im of the backscatter u_inf(-d), sigma = 4 pi |u_inf(-d)|^2, target "
      "strength ts_db = 10 log10(sigma/(4 pi)) = 20 log10 |u_inf(-d)| dB re 1 length unit^2), summary.json "
      "(with \"sweep\"), monostatic.png (polar TS plot) instead of the single-incident files.\n"
      "Physical units (--frequency, Hz; m, Pa, dB): a run folder with run.json, frequencies.csv (frequency_hz, k, "
      "ka, iterations, times, power_w, lw_db, ts_db, max_spl_1m_db), fNNNN/ per frequency (surface.npy/.vtu, "
      "directivity.csv, field_points.csv, field.vtu), summary.json, sweep.png, directivity.png, fNNNN/field.png; "
      "--resume continues it (docs/bem.md, \"Radiation, impedance surfaces and physical units\").\n"
      "Exit codes: 0 ok, 1 usage, 2 invalid input, 3 file error, 4 numerical failure, 5 GMRES not converged, "
      "6 out of resources.");
  c->add_option("--mesh", g.mesh, "FILE (.msh/.obj/.stl; .msh 6-node triangles are curved) | sphere:R,REF (icosphere, "
                "20*4^REF elements) | octasphere:R,REF (8*4^REF) | ellipsoid:A,B,C,REF; a trailing ,curved gives curved "
                "6-node elements (O(h^2) far fields)")->required();
  c->add_flag("--curve", g.curve, "curve a flat mesh (STL / OBJ / OFF / 3-node .msh) by its vertex normals: curved 6-node "
                                  "elements on the smooth surface through its vertices (docs/bem.md, \"Curved elements\")");
  c->add_option("--crease", g.crease, "with --curve: edges whose faces meet at more than DEG degrees stay straight")
      ->check(CLI::Range(1e-9, 180.0));
  c->add_option("--loop", g.loop, "replace a flat closed mesh (the control mesh) by its Loop subdivision limit surface at N "
                "levels (0-8): curved 6-node elements, T*4^N, all on one smooth surface (docs/bem.md, \"Curved elements\")")
      ->check(CLI::Range(0, 8));
  // exactly one of --k (dimensionless) and --frequency (physical units): a usage error otherwise
  CLI::Option_group* wave = c->add_option_group("wavenumber", "--k or --frequency (exactly one)");
  wave->add_option("--k", g.k, "wavenumber RE[,IM] (Re k > 0, Im k >= 0; 1/length unit); or --frequency");
  wave->add_option("--frequency", g.frequency,
                "frequency sweep in physical units (Hz; lengths in m, pressure in Pa): F | F1,F2,... | FROM:TO:STEP; "
                "one folder per frequency in --out, frequencies.csv, sweep plots; resumable (--resume)");
  wave->require_option(1);
  c->add_option("--sound-speed", g.sound_speed, "--frequency: sound speed c of the fluid (m/s)")->capture_default_str();
  c->add_option("--density", g.density, "--frequency: density rho of the fluid (kg/m^3)")->capture_default_str();
  c->add_option("--problem", g.problem,
                "--frequency: scattering (of --incident, 1 Pa amplitude) | radiation (of the surface velocity --velocity)")
      ->capture_default_str();
  c->add_option("--velocity", g.velocity,
                "--problem radiation: outward normal velocity (m/s, peak): uniform:V[,VIM] (pulsating body) | "
                "translate:UX,UY,UZ (rigid body oscillating with velocity U) | FILE (.npy or text, N values re or N x 2 "
                "re,im, one per element in mesh order)");
  c->add_option("--impedance", g.impedance,
                "--frequency: locally reacting surface of specific acoustic impedance Z = RE[,IM] Pa s/m (p / v into the "
                "surface; rho c is the characteristic impedance), or FILE of one Z per element (re or re,im), bc neumann");
  c->add_option("--field-points", g.field_points,
                "--frequency: pressure and SPL at FILE ((M,3) points, .npy or text: microphones) or on a plane cut "
                "grid:PLANE=C,A0,A1,NA,B0,B1,NB (PLANE xy|xz|yz at the third coordinate C; NA x NB points; field.vtu, "
                "field.png; NA or NB = 1: a line of points, CSV only)");
  c->add_option("--ground", g.ground,
                "a plane bounding the fluid half-space AXIS > H, the body above it: AXIS=H[,rigid|soft] (rigid ground "
                "or pressure-release surface; method of images, dense operator); e.g. z=0");
  c->add_option("--symmetry", g.symmetry,
                "a symmetry plane of the body, repeatable (at most 3 with --ground, distinct axes): AXIS=H[,symmetric|"
                "antisymmetric]; the mesh is the part with AXIS >= H, its cut edges exactly on the plane (method of "
                "images, dense operator); e.g. --symmetry z=0 --symmetry y=0 for a quarter model");
  c->add_flag("--resume", g.resume, "--frequency: continue the sweep in --out (same settings), skipping finished frequencies");
  c->add_option("--bc", g.bc, "neumann (sound-hard) | dirichlet (sound-soft)")->capture_default_str();
  CLI::Option* incident = c->add_option("--incident", g.incident,
                "plane:dx,dy,dz (plane wave e^{ik d.x}, propagation direction) | point:x,y,z (point source "
                "e^{ik|x-x0|}/(4 pi |x-x0|) at x0, outside the body) | sweep:ANGLE,FROM,TO,N (monostatic sweep: N "
                "plane waves, one set-up; ANGLE theta: d = (sin t, 0, cos t), polar angle t of the propagation "
                "direction from +z in the x-z plane; phi: d = (cos t, sin t, 0), azimuth from +x in the x-y plane; "
                "t from FROM to TO degrees, both included; writes monostatic.csv/png)")
      ->capture_default_str()
      ->each([&g](const std::string&) { g.incident_given = true; });
  c->add_option("--incident-file", g.incident_file,
                "monostatic sweep over the propagation directions of FILE: (M,3) array, .npy or text (one direction "
                "a row, any length); excludes --incident")
      ->excludes(incident);
  c->add_option("--operator", g.op, "auto (dense up to --dense-max elements, else FMM) | dense | fmm")->capture_default_str();
  c->add_option("--dense-max", g.dense_max, "--operator auto: largest element count assembled densely")->capture_default_str();
  c->add_option("--fmm-tol", g.fmm_tol, "FMM relative accuracy (0: min(--tol, 1e-3))")->capture_default_str();
  c->add_option("--precond", g.precond,
                "none | bd (block-diagonal over octree boxes) | ifmm (inverse FMM, an approximate direct solver; FMM operator)")
      ->capture_default_str();
  c->add_option("--ifmm-eps", g.ifmm_eps, "IFMM relative compression tolerance epsilon, in (0, 1)")->capture_default_str();
  c->add_option("--ifmm-sigma", g.ifmm_sigma, "IFMM colouring separation: 3 or 6 (nIFMM, node-parallel), 0 (sequential, mIFMM)")
      ->capture_default_str();
  c->add_option("--ifmm-top", g.ifmm_top, "IFMM top level tau of the node-parallel levels (>= 2; 0: 3)")->capture_default_str();
  c->add_option("--ifmm-bottom", g.ifmm_bottom, "IFMM bottom level l (>= 3; -1: the leaf level of its tree)")->capture_default_str();
  c->add_option("--ifmm-order", g.ifmm_order, "Chebyshev order of the IFMM's operators (0: from epsilon, at most 7)")
      ->capture_default_str();
  c->add_option("--ifmm-depth", g.ifmm_depth, "leaf level of the IFMM's octree (-1: the FMM's, at least 3)")->capture_default_str();
  c->add_option("--bd-level", g.bd_level, "octree level l_BD of the BD blocks (-1: leaf level)")->capture_default_str();
  c->add_option("--leaf,--bd-leaf", g.bd_leaf, "max elements per octree leaf (mu) of the FMM and BD tree")->capture_default_str();
  c->add_option("--tol", g.tol,
                std::string("GMRES relative residual tolerance (>= ") + [] {
                  std::ostringstream o;
                  o << bem::kMinGmresRtol;
                  return o.str();
                }() + ")")
      ->capture_default_str();
  c->add_option("--restart", g.restart, "GMRES restart length")->capture_default_str();
  c->add_option("--max-iter", g.max_iter, "GMRES iteration cap (exit 5 when reached)")->capture_default_str();
  c->add_option("--alpha", g.alpha, "Burton-Miller coupling RE[,IM] (default i / max(k, 4/D), D = body size; docs/bem.md)");
  c->add_option("--threads", g.threads, "OpenMP threads (0: all available)")->capture_default_str();
  c->add_option("--far-field-points", g.far_field_points, "number of far-field directions")->capture_default_str();
  c->add_option("--out", g.out, "output folder (created)")->required();
  c->add_flag("--no-plots", g.no_plots, "skip bistatic.png (monostatic.png for a sweep)");
  c->add_option("--plot-script", g.plot_script, "path of bem_plots.py (default: found next to the sources)");
  c->add_flag("--quiet,-q", g.quiet, "no progress on stderr");
  return c;
}

}  // namespace elliptica::cli
