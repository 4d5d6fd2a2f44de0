/// @file acoustic_sweep.cpp
/// AcousticSweep (acoustic_sweep.hpp): the frequency sweep of the acoustic BEM and its run folder.
#include "elliptica/bem/acoustic_sweep.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <numbers>
#include <sstream>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/vtu.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/fmm/octree.hpp"

namespace elliptica::bem {

namespace {

namespace fs = std::filesystem;
using V3 = std::array<double, 3>;
using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kRowColumns = 12;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// FNV-1a, 64 bit, over raw bytes (run.json's digests of the resolved inputs).
struct Fnv {
  std::uint64_t h = 1469598103934665603ULL;
  void bytes(const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 1099511628211ULL;
    }
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    const std::uint64_t n = v.size();
    bytes(&n, sizeof n);
    if (!v.empty()) bytes(v.data(), sizeof(T) * v.size());
  }
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
  }
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string folder_name(std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "f%04zu", i);
  return name;
}

bool finite3(const V3& x) { return std::isfinite(x[0]) && std::isfinite(x[1]) && std::isfinite(x[2]); }

/// Normalised copies of directions (InvalidArgument naming `what` and the index for a zero or
/// non-finite one).
std::vector<V3> normalised(const std::vector<V3>& d, const std::string& what) {
  std::vector<V3> out(d.size());
  for (std::size_t j = 0; j < d.size(); ++j) {
    const double nn = std::hypot(d[j][0], d[j][1], d[j][2]);
    if (!finite3(d[j]) || !(nn > 0) || !std::isfinite(nn))
      throw InvalidArgument("acoustic sweep: " + what + " " + std::to_string(j) + " must be finite and nonzero");
    out[j] = {d[j][0] / nn, d[j][1] / nn, d[j][2] / nn};
  }
  return out;
}

const char* bc_name(BoundaryCondition bc) { return bc == BoundaryCondition::Neumann ? "neumann" : "dirichlet"; }

}  // namespace

struct AcousticSweep::Impl {
  Mesh mesh;            // validated, oriented (the part with symmetry planes)
  Mesh whole;           // the whole body (symmetry planes), else empty
  MeshReport report;
  std::vector<double> freqs;
  AcousticSweepOptions opt;
  HelmholtzBemOptions ho;   // opt.solver with the admittance of opt.impedance
  std::vector<cplx> vn;     // outward normal velocity per element (radiation)
  std::vector<V3> dirs;     // normalised far-field directions
  std::vector<V3> mono;     // normalised monostatic directions
  std::optional<V3> plane;  // normalised plane-wave direction
  std::vector<char> inside;
  double D = 0;
  bool radiation = false, monostatic = false;
  cplx scalar_beta{kNaN, kNaN};  // the admittance of a scalar impedance
  mutable std::mutex tree_mutex;
  mutable std::shared_ptr<const fmm::Octree> tree;  // the first FMM plan's octree (reuse_tree)

  const Mesh& body() const { return ho.symmetry.empty() ? mesh : whole; }
  FrequencyResult solve(std::size_t i) const;
  Record settings() const;
  void write_frequency(const fs::path& out, const FrequencyResult& r) const;
  FrequencyResult read_frequency(const fs::path& out, const double* row, bool keep_surface, bool keep_fields) const;
};

AcousticSweep::AcousticSweep(Mesh mesh, std::vector<double> frequencies_hz, AcousticSweepOptions opt)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.freqs = std::move(frequencies_hz);
  if (I.freqs.empty()) throw InvalidArgument("acoustic sweep: no frequencies");
  if (I.freqs.size() > kMaxSweepFrequencies)
    throw InvalidArgument("acoustic sweep: at most " + std::to_string(kMaxSweepFrequencies) + " frequencies, got " +
                          std::to_string(I.freqs.size()));
  for (std::size_t i = 0; i < I.freqs.size(); ++i)
    if (!(std::isfinite(I.freqs[i]) && I.freqs[i] > 0))
      throw InvalidArgument("acoustic sweep: frequency " + std::to_string(i) + " must be finite and > 0 Hz, got " +
                            num(I.freqs[i]));
  validate(opt.medium);
  if (!opt.solver.admittance.empty())
    throw InvalidArgument("acoustic sweep: give the surface's impedance (Pa s/m), not solver.admittance");
  I.radiation = !opt.velocity.empty();
  I.monostatic = !opt.monostatic.empty();
  const bool neumann = opt.solver.bc == BoundaryCondition::Neumann;
  if (I.radiation && !neumann)
    throw InvalidArgument("acoustic sweep: radiation prescribes the normal velocity: use bc Neumann");
  if (opt.plane_wave && opt.point_source)
    throw InvalidArgument("acoustic sweep: give a plane wave or a point source, not both");
  if (I.monostatic && (I.radiation || opt.plane_wave || opt.point_source))
    throw InvalidArgument("acoustic sweep: a monostatic sweep is scattering of its own plane waves: no velocity, "
                          "plane wave or point source with it");
  if (I.monostatic && !opt.field_points.empty())
    throw InvalidArgument("acoustic sweep: field points take one incident field, not a monostatic sweep of directions");
  if (!I.radiation && !I.monostatic && !opt.plane_wave && !opt.point_source)
    throw InvalidArgument("acoustic sweep: nothing to solve: give a velocity (radiation), a plane wave, a point source "
                          "or monostatic directions (scattering)");
  if (!opt.impedance.empty()) {
    if (!neumann) throw InvalidArgument("acoustic sweep: an impedance describes a locally reacting surface: use bc Neumann");
    if (opt.solver.precond.kind == PreconditionerKind::Ifmm)
      throw InvalidArgument("acoustic sweep: an impedance surface does not work with the IFMM preconditioner: use bd or none");
  }
  if (!opt.monostatic_angles_deg.empty() && opt.monostatic_angles_deg.size() != opt.monostatic.size())
    throw InvalidArgument("acoustic sweep: monostatic_angles_deg needs one label per monostatic direction");
  if (!opt.direction_angles_deg.empty() && opt.direction_angles_deg.size() != opt.directions.size())
    throw InvalidArgument("acoustic sweep: direction_angles_deg needs one label per direction");
  I.dirs = normalised(opt.directions, "direction");
  I.mono = normalised(opt.monostatic, "monostatic direction");
  if (opt.plane_wave) I.plane = normalised({*opt.plane_wave}, "plane wave direction")[0];
  if (opt.point_source && !finite3(*opt.point_source))
    throw InvalidArgument("acoustic sweep: the point source location must be finite");
  if (opt.field_points.size() > kMaxFieldPoints)
    throw InvalidArgument("acoustic sweep: at most " + std::to_string(kMaxFieldPoints) + " field points, got " +
                          std::to_string(opt.field_points.size()));
  for (std::size_t j = 0; j < opt.field_points.size(); ++j)
    if (!finite3(opt.field_points[j]))
      throw InvalidArgument("acoustic sweep: field point " + std::to_string(j) + " is not finite");
  if ((opt.grid_na == 0) != (opt.grid_nb == 0) ||
      (opt.grid_na > 0 && (opt.grid_na < 2 || opt.grid_nb < 2 || opt.grid_na * opt.grid_nb != opt.field_points.size())))
    throw InvalidArgument("acoustic sweep: a grid of field points needs grid_na, grid_nb >= 2 and grid_na x grid_nb "
                          "points (or both 0: a list)");

  // the mesh, and everything resolved on it
  I.report = validate_and_orient(mesh, opt.solver.symmetry);
  I.mesh = std::move(mesh);
  if (!opt.solver.symmetry.empty()) I.whole = whole_body(I.mesh, opt.solver.symmetry);
  const std::size_t n = I.mesh.num_elements();
  I.D = bem::body_size(I.body());
  I.ho = opt.solver;
  if (!opt.impedance.empty()) {
    if (opt.impedance.size() != 1 && opt.impedance.size() != n)
      throw InvalidArgument("acoustic sweep: impedance needs 1 value or one per element (" + std::to_string(n) + "), got " +
                            std::to_string(opt.impedance.size()));
    I.ho.admittance.resize(opt.impedance.size());
    for (std::size_t e = 0; e < opt.impedance.size(); ++e) {
      try {
        I.ho.admittance[e] = admittance_from_impedance(opt.impedance[e], opt.medium);
      } catch (const InvalidArgument& err) {
        throw InvalidArgument("acoustic sweep: impedance" +
                              (opt.impedance.size() == 1 ? std::string() : " of element " + std::to_string(e)) + ": " +
                              err.what());
      }
    }
    if (opt.impedance.size() == 1) I.scalar_beta = I.ho.admittance[0];
  }
  if (I.radiation) {
    if (opt.velocity.size() != 1 && opt.velocity.size() != n)
      throw InvalidArgument("acoustic sweep: velocity needs 1 value or one per element (" + std::to_string(n) + "), got " +
                            std::to_string(opt.velocity.size()));
    I.vn = opt.velocity.size() == 1 ? std::vector<cplx>(n, opt.velocity[0]) : opt.velocity;
    for (std::size_t e = 0; e < n; ++e)
      if (!std::isfinite(I.vn[e].real()) || !std::isfinite(I.vn[e].imag()))
        throw InvalidArgument("acoustic sweep: velocity of element " + std::to_string(e) + " is not finite");
  }
  // the plan options at both ends of the sweep, before anything is computed: the k-dependent
  // rules are monotone in k (the low-frequency floor at the lowest, the resolution at the highest)
  HelmholtzBem::validate(I.mesh, wavenumber(*std::min_element(I.freqs.begin(), I.freqs.end()), opt.medium), I.ho);
  HelmholtzBem::validate(I.mesh, wavenumber(*std::max_element(I.freqs.begin(), I.freqs.end()), opt.medium), I.ho);
  // incident fields with the symmetry of the symmetry planes (else the first frequency's plan would
  // refuse them after its set-up)
  if (I.plane) check_symmetric_incidence(I.ho.symmetry, *I.plane, false);
  if (opt.point_source) check_symmetric_incidence(I.ho.symmetry, *opt.point_source, true);
  for (const auto& d : I.mono) check_symmetric_incidence(I.ho.symmetry, d, false);
  const auto& g = I.ho.ground;
  if (opt.point_source) {
    if (locate_point(I.body(), *opt.point_source) != PointLocation::kOutside)
      throw InvalidArgument("acoustic sweep: the point source lies inside the body or on its surface");
    if (g && !((*opt.point_source)[static_cast<std::size_t>(g->axis)] >= g->height))
      throw InvalidArgument("acoustic sweep: the point source lies below the ground plane");
  }
  I.inside.resize(opt.field_points.size());
  for (std::size_t j = 0; j < opt.field_points.size(); ++j) {
    const V3& x = opt.field_points[j];
    I.inside[j] = locate_point(I.body(), x) != PointLocation::kOutside ||
                  (g && !(x[static_cast<std::size_t>(g->axis)] >= g->height));
  }
  I.opt = std::move(opt);
}

AcousticSweep::~AcousticSweep() = default;
AcousticSweep::AcousticSweep(AcousticSweep&&) noexcept = default;

const std::vector<double>& AcousticSweep::frequencies() const { return impl_->freqs; }
const Mesh& AcousticSweep::mesh() const { return impl_->mesh; }
const MeshReport& AcousticSweep::report() const { return impl_->report; }
double AcousticSweep::body_size() const { return impl_->D; }
const std::vector<char>& AcousticSweep::inside() const { return impl_->inside; }
const AcousticSweepOptions& AcousticSweep::options() const { return impl_->opt; }
std::string AcousticSweep::resolution_warning() const {
  const double fmax = *std::max_element(impl_->freqs.begin(), impl_->freqs.end());
  return mesh_resolution_warning(impl_->mesh, wavenumber(fmax, impl_->opt.medium));
}
Record AcousticSweep::settings() const { return impl_->settings(); }
FrequencyResult AcousticSweep::solve(std::size_t i) const {
  if (i >= impl_->freqs.size())
    throw InvalidArgument("acoustic sweep: frequency index " + std::to_string(i) + " out of range (" +
                          std::to_string(impl_->freqs.size()) + " frequencies)");
  return impl_->solve(i);
}

Record AcousticSweep::Impl::settings() const {
  Fnv mesh_d;
  for (const auto& v : mesh.vertices) mesh_d.bytes(v.data(), sizeof v);
  for (const auto& t : mesh.triangles) mesh_d.bytes(t.data(), sizeof t);
  for (const auto& m : mesh.midside) mesh_d.bytes(m.data(), sizeof m);
  auto digest = [](const auto& v) {
    Fnv h;
    h.vec(v);
    return h.hex();
  };
  std::string incident;
  if (plane) incident = "plane:" + num((*plane)[0]) + "," + num((*plane)[1]) + "," + num((*plane)[2]);
  if (opt.point_source)
    incident = "point:" + num((*opt.point_source)[0]) + "," + num((*opt.point_source)[1]) + "," + num((*opt.point_source)[2]);
  std::string symmetry;
  const char* axes[3] = {"x", "y", "z"};
  for (const auto& p : ho.symmetry) {
    if (!symmetry.empty()) symmetry += ';';
    symmetry += axes[p.axis];
    symmetry += '=';
    symmetry += num(p.height);
    symmetry += p.reflection < 0 ? ",antisymmetric" : ",symmetric";
  }
  std::string ground;
  if (ho.ground)
    ground = std::string(axes[ho.ground->axis]) + "=" + num(ho.ground->height) + ",reflection=" + num(ho.ground->reflection);
  Record r;
  r.set("elements", static_cast<long long>(mesh.num_elements()))
      .set("curved", mesh.curved())
      .set("mesh_digest", mesh_d.hex())
      .set("frequencies", static_cast<long long>(freqs.size()))
      .set("frequency_min_hz", *std::min_element(freqs.begin(), freqs.end()))
      .set("frequency_max_hz", *std::max_element(freqs.begin(), freqs.end()))
      .set("frequencies_digest", digest(freqs))
      .set("sound_speed", opt.medium.sound_speed)
      .set("density", opt.medium.density)
      .set("problem", std::string(radiation ? "radiation" : "scattering"))
      .set("bc", std::string(bc_name(ho.bc)))
      .set("velocity_digest", radiation ? digest(vn) : std::string())
      .set("impedance_digest", opt.impedance.empty() ? std::string() : digest(opt.impedance))
      .set("incident", monostatic ? "monostatic" : incident)
      .set("monostatic", static_cast<long long>(mono.size()))
      .set("monostatic_digest", mono.empty() ? std::string() : digest(mono))
      .set("directions", static_cast<long long>(dirs.size()))
      .set("directions_digest", dirs.empty() ? std::string() : digest(dirs))
      .set("field_points", static_cast<long long>(opt.field_points.size()))
      .set("field_points_digest", opt.field_points.empty() ? std::string() : digest(opt.field_points))
      .set("grid_na", static_cast<long long>(opt.grid_na))
      .set("grid_nb", static_cast<long long>(opt.grid_nb))
      .set("tol", ho.gmres.rtol)
      .set("operator", to_string(ho.op.kind))
      .set("precond", to_string(ho.precond.kind))
      .set("fmm_tol", ho.op.fmm.tolerance)
      .set("fmm_order", ho.op.fmm.order)
      .set("compress_m2l", ho.op.fmm.compress_m2l)
      .set("alpha", ho.alpha ? num(ho.alpha->real()) + "," + num(ho.alpha->imag()) : std::string("auto"))
      .set("restart", ho.gmres.restart)
      .set("max_iter", ho.gmres.max_iterations)
      .set("leaf", ho.op.fmm.tree.max_leaf)
      .set("bd_level", ho.precond.bd_level)
      .set("dense_max", static_cast<long long>(ho.op.dense_max_elements))
      .set("ground", ground)
      .set("symmetry", symmetry);
  return r;
}

FrequencyResult AcousticSweep::Impl::solve(std::size_t i) const {
  FrequencyResult r;
  r.index = i;
  r.frequency_hz = freqs[i];
  const double k = wavenumber(freqs[i], opt.medium);
  r.k = k;
  r.ka = k * D / 2;
  const auto t0 = Clock::now();
  HelmholtzBemOptions hf = ho;
  bool had_tree = false;
  if (opt.reuse_tree) {
    std::lock_guard<std::mutex> lock(tree_mutex);
    hf.op.fmm.prebuilt_tree = tree;
    had_tree = tree != nullptr;
  }
  const HelmholtzBem plan(mesh, k, hf);
  if (opt.reuse_tree && !had_tree) {
    std::lock_guard<std::mutex> lock(tree_mutex);
    if (!tree) tree = plan.fmm_tree();
  }
  const double setup_plan_s = seconds_since(t0);
  if (monostatic) {
    // TS against the aspect at this frequency: one set-up, one GMRES per direction
    r.monostatic = plan.solve_monostatic(mono);
    r.setup_seconds = setup_plan_s;
    r.ts_db = -std::numeric_limits<double>::infinity();
    for (auto& m : r.monostatic) {
      r.solve_seconds += m.solve_seconds;
      r.iterations = std::max(r.iterations, m.iterations);
      r.ts_db = std::max(r.ts_db, m.ts_db);
      m.solution = SurfaceSolution{};
    }
    r.power_w = r.lw_db = r.max_spl_1m_db = kNaN;
    return r;
  }
  IncidentField inc;
  const bool incident_on = plane || opt.point_source;
  // 1 Pa plane wave, or 1 Pa at 1 m from the point source (4 pi G); + the ground's reflection
  if (incident_on) inc = plane ? plan.plane_wave(*plane) : plan.point_source(*opt.point_source, 4 * std::numbers::pi);
  const SurfaceSolution sol = radiation ? plan.solve_radiation(normal_velocity_data(vn, freqs[i], opt.medium),
                                                               incident_on ? &inc : nullptr)
                                        : plan.solve(inc);
  // the radiation companion operator is built at the first solve_radiation: set-up, not GMRES
  r.setup_seconds = setup_plan_s + plan.setup().companion_seconds * (plan.setup().impedance ? 0 : 1);
  r.solve_seconds = sol.solve_seconds;
  r.iterations = sol.iterations;
  const auto t_field = Clock::now();
  // power from the far field, 1/(2 rho c) int |p_inf|^2 (the half sphere above a ground plane):
  // the surface integral 1/2 Re int p conj(v) loses accuracy as ka -> 0 (its O(h) error relative
  // to a power ~ (ka)^2), the far field does not
  const int nth = std::clamp(static_cast<int>(std::ceil(r.ka)) + 12, 12, 200);
  const SphereRule rule = ho.ground ? hemisphere_rule(nth, ho.ground->axis) : sphere_rule(nth);
  r.power_w = far_field_power(plan.far_field(sol, rule.directions), rule, opt.medium);
  r.lw_db = r.power_w > 0 ? 10 * std::log10(r.power_w / 1e-12) : kNaN;
  r.ts_db = kNaN;
  if (!radiation && plane) r.ts_db = 20 * std::log10(std::abs(plan.far_field(sol, {{-(*plane)[0], -(*plane)[1], -(*plane)[2]}})[0]));
  r.max_spl_1m_db = kNaN;
  if (!dirs.empty()) {
    r.p_inf = plan.far_field(sol, dirs);
    double mx = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < dirs.size(); ++j)
      if (!(ho.ground && dirs[j][static_cast<std::size_t>(ho.ground->axis)] < 0)) mx = std::max(mx, spl_db(r.p_inf[j]));
    if (std::isfinite(mx)) r.max_spl_1m_db = mx;
  }
  // field points: total pressure (scattered + incident; the radiated one for radiation)
  r.field.assign(opt.field_points.size(), cplx(0));
  std::vector<V3> outside;
  std::vector<std::size_t> where;
  for (std::size_t j = 0; j < opt.field_points.size(); ++j)
    if (!inside[j]) {
      outside.push_back(opt.field_points[j]);
      where.push_back(j);
    }
  if (!outside.empty()) {
    const std::vector<cplx> ps = plan.scattered_field(sol, outside);
    std::vector<cplx> pi(outside.size());
    if (incident_on)
      pi = plane ? plan.plane_wave_at(*plane, outside) : plan.point_source_at(*opt.point_source, outside, 4 * std::numbers::pi);
    for (std::size_t j = 0; j < outside.size(); ++j) r.field[where[j]] = ps[j] + pi[j];
  }
  r.field_seconds = seconds_since(t_field);
  r.surface = ho.bc == BoundaryCondition::Neumann ? sol.u : sol.dudn;
  return r;
}

/// Frequency r's folder fNNNN/, written as one set (core/output.hpp): nothing of it replaced
/// unless all of it is written.
void AcousticSweep::Impl::write_frequency(const fs::path& out, const FrequencyResult& r) const {
  const fs::path dir = out / folder_name(r.index);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError(dir.string() + ": cannot create (" + ec.message() + ")");
  if (monostatic) {
    const bool angles = !opt.monostatic_angles_deg.empty();
    Array2D m(r.monostatic.size(), 8);
    for (std::size_t j = 0; j < r.monostatic.size(); ++j) {
      const auto& x = r.monostatic[j];
      const double row[8] = {angles ? opt.monostatic_angles_deg[j] : double(j), x.direction[0], x.direction[1], x.direction[2],
                             x.u_inf.real(), x.u_inf.imag(), x.ts_db, double(x.iterations)};
      std::copy(row, row + 8, m.values.begin() + static_cast<std::ptrdiff_t>(8 * j));
    }
    io::write_csv((dir / "monostatic.csv").string(), m,
                  std::string(angles ? "angle_deg" : "index") + ",dx,dy,dz,re,im,ts_db,gmres_iterations");
    return;
  }
  io::OutputSet files;
  bool neumann = ho.bc == BoundaryCondition::Neumann;
  write_npy_complex(files.add((dir / "surface.npy").string()), r.surface);
  {
    CellField re{"re", 1, {}}, im{"im", 1, {}}, ab{"abs", 1, {}}, spl{"spl_db", 1, {}};
    for (const cplx& v : r.surface) {
      re.values.push_back(v.real());
      im.values.push_back(v.imag());
      ab.values.push_back(std::abs(v));
      spl.values.push_back(neumann ? std::max(spl_db(v), -1000.0) : 0.0);
    }
    write_vtu(files.add((dir / "surface.vtu").string()), mesh, {re, im, ab, spl});
  }
  if (!dirs.empty()) {
    // the mean of |p_inf|^2 over the (half) sphere, for the directivity index: 2 rho c P / area
    const double mean2 = 2 * opt.medium.impedance() * r.power_w / ((ho.ground ? 2 : 4) * std::numbers::pi);
    const bool angles = !opt.direction_angles_deg.empty();
    Array2D t(dirs.size(), 8);
    for (std::size_t j = 0; j < dirs.size(); ++j) {
      const bool below = ho.ground && dirs[j][static_cast<std::size_t>(ho.ground->axis)] < 0;
      const cplx p = r.p_inf[j];
      const double di = mean2 > 0 && !below ? 10 * std::log10(std::norm(p) / mean2) : kNaN;
      const double row[8] = {angles ? opt.direction_angles_deg[j] : double(j), dirs[j][0], dirs[j][1], dirs[j][2],
                             p.real(), p.imag(), below ? kNaN : spl_db(p), di};
      std::copy(row, row + 8, t.values.begin() + static_cast<std::ptrdiff_t>(8 * j));
    }
    io::write_csv(files.add((dir / "directivity.csv").string()), t,
                  std::string(angles ? "angle_deg" : "index") + ",x,y,z,re,im,spl_1m_db,di_db");
  }
  const auto& fp = opt.field_points;
  if (!fp.empty()) {
    Array2D t(fp.size(), 8);
    CellField re{"re", 1, {}}, im{"im", 1, {}}, ab{"abs", 1, {}}, spl{"spl_db", 1, {}}, ins{"inside", 1, {}};
    for (std::size_t j = 0; j < fp.size(); ++j) {
      const cplx p = r.field[j];
      // inside: NaN in the CSV (0 dB is a level); 0 in the VTU (masked by its inside field)
      const double s = inside[j] ? 0.0 : std::max(spl_db(p), -1000.0);
      const double row[8] = {fp[j][0], fp[j][1], fp[j][2], p.real(), p.imag(), std::abs(p), inside[j] ? kNaN : s,
                             double(inside[j])};
      std::copy(row, row + 8, t.values.begin() + static_cast<std::ptrdiff_t>(8 * j));
      re.values.push_back(p.real());
      im.values.push_back(p.imag());
      ab.values.push_back(std::abs(p));
      spl.values.push_back(s);
      ins.values.push_back(double(inside[j]));
    }
    io::write_csv(files.add((dir / "field_points.csv").string()), t, "x,y,z,re,im,abs,spl_db,inside");
    if (opt.grid_na > 0)
      write_vtu_grid(files.add((dir / "field.vtu").string()), opt.grid_na, opt.grid_nb, fp, {re, im, ab, spl, ins});
  }
  files.commit();
}

/// A finished frequency read back from its row of frequencies.csv and its folder (resume).
/// IOError for files that do not fit this sweep.
FrequencyResult AcousticSweep::Impl::read_frequency(const fs::path& out, const double* row, bool keep_surface,
                                                    bool keep_fields) const {
  FrequencyResult r;
  r.index = static_cast<std::size_t>(row[0]);
  r.frequency_hz = row[1];
  r.k = row[2];
  r.ka = row[3];
  r.iterations = static_cast<int>(row[4]);
  r.setup_seconds = row[5];
  r.solve_seconds = row[6];
  r.field_seconds = row[7];
  r.power_w = row[8];
  r.lw_db = row[9];
  r.ts_db = row[10];
  r.max_spl_1m_db = row[11];
  r.resumed = true;
  const fs::path dir = out / folder_name(r.index);
  auto table = [&](const char* name, std::size_t rows) {
    const Array2D t = io::read_array((dir / name).string());
    if (t.rows != rows || t.ndim != 2 || t.cols != 8)
      throw IOError((dir / name).string() + ": expected " + std::to_string(rows) + " rows of 8 columns; cannot resume");
    return t;
  };
  if (monostatic) {
    const Array2D t = table("monostatic.csv", mono.size());
    r.monostatic.resize(mono.size());
    for (std::size_t j = 0; j < mono.size(); ++j) {
      auto& m = r.monostatic[j];
      const double* v = &t.values[8 * j];
      m.direction = {v[1], v[2], v[3]};
      m.u_inf = cplx(v[4], v[5]);
      m.sigma = 4 * std::numbers::pi * std::norm(m.u_inf);
      m.ts_db = v[6];
      m.iterations = static_cast<int>(v[7]);
      m.converged = true;
    }
    return r;
  }
  if (!keep_fields) return r;
  if (!dirs.empty()) {
    const Array2D t = table("directivity.csv", dirs.size());
    for (std::size_t j = 0; j < dirs.size(); ++j) r.p_inf.emplace_back(t.values[8 * j + 4], t.values[8 * j + 5]);
  }
  if (!opt.field_points.empty()) {
    const Array2D t = table("field_points.csv", opt.field_points.size());
    for (std::size_t j = 0; j < opt.field_points.size(); ++j) r.field.emplace_back(t.values[8 * j + 3], t.values[8 * j + 4]);
  }
  if (keep_surface) {
    auto s = read_npy_complex((dir / "surface.npy").string());
    if (!s || s->size() != mesh.num_elements())
      throw IOError((dir / "surface.npy").string() + ": not a complex128 array of " + std::to_string(mesh.num_elements()) +
                    " values; cannot resume");
    r.surface = std::move(*s);
  }
  return r;
}

SweepSummary AcousticSweep::run(const SweepRunOptions& ro) const {
  const auto& I = *impl_;
  const std::size_t F = I.freqs.size();
  SweepSummary S;
  S.results.resize(F);
  std::vector<char> done(F, 0);
  const auto t_sweep = Clock::now();
  // what the results keep for every frequency, before the sweep starts
  {
    const double per = double(ro.keep_fields ? I.dirs.size() + I.opt.field_points.size() + I.mono.size() : 0) +
                       double(ro.keep_surface ? I.mesh.num_elements() : 0);
    require_memory(16.0 * per * double(F), "acoustic sweep: the fields kept for " + std::to_string(F) + " frequencies");
  }
  auto account = [&](FrequencyResult& r, std::size_t finished) {
    S.setup_seconds += r.setup_seconds;
    S.solve_seconds += r.solve_seconds;
    S.max_iterations = std::max(S.max_iterations, r.iterations);
    ++S.computed;
    if (ro.progress) ro.progress(r, finished, F);
    if (!ro.keep_surface) std::vector<cplx>().swap(r.surface);
    if (!ro.keep_fields) {
      std::vector<cplx>().swap(r.p_inf);
      std::vector<cplx>().swap(r.field);
    }
  };
  if (ro.folder.empty()) {
    for (std::size_t i = 0; i < F; ++i) {
      S.results[i] = I.solve(i);
      account(S.results[i], i + 1);
    }
    S.sweep_seconds = seconds_since(t_sweep);
    return S;
  }

  // ---- the run folder ---------------------------------------------------------------------------
  Record run = I.settings();
  run.set("labels", ro.labels);
  const std::string run_text = to_json(run) + "\n";
  const fs::path out(ro.folder);
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw IOError(ro.folder + ": the run folder exists and is not a folder");
  const bool had_run = fs::exists(out / "run.json", ec);
  std::vector<std::array<double, kRowColumns>> rows(F);
  if (had_run && !ro.resume)
    throw InvalidArgument(ro.folder + " holds a frequency sweep (run.json): resume it (CLI --resume, Python resume=True), or choose "
                          "another folder");
  if (ro.resume && had_run) {
    if (io::read_file((out / "run.json").string()) != run_text)
      throw InvalidArgument("resume: the sweep in " + ro.folder +
                            " was run with other settings (run.json differs); use another folder or the same settings");
    if (fs::exists(out / "frequencies.csv", ec)) {
      const Array2D t = io::read_array((out / "frequencies.csv").string());
      const std::size_t cols = t.ndim == 1 ? 1 : t.cols;
      if (t.rows > 0 && cols != kRowColumns) throw IOError(ro.folder + "/frequencies.csv: unexpected columns; cannot resume");
      for (std::size_t r = 0; r < t.rows; ++r) {
        const double* row = &t.values[r * cols];
        if (!(row[0] >= 0 && row[0] < double(F)) || row[0] != std::floor(row[0])) continue;
        const auto i = static_cast<std::size_t>(row[0]);
        if (!fs::exists(out / folder_name(i) / (I.monostatic ? "monostatic.csv" : "surface.npy"), ec)) continue;  // lost: again
        S.results[i] = I.read_frequency(out, row, ro.keep_surface, ro.keep_fields);
        std::copy(row, row + kRowColumns, rows[i].begin());
        done[i] = 1;
      }
    }
  }
  const bool created = !fs::exists(out, ec);
  fs::create_directories(out, ec);
  if (ec) throw IOError(ro.folder + ": cannot create the run folder (" + ec.message() + ")");
  if (!had_run) io::write_text_atomic((out / "run.json").string(), run_text);
  // a run that fails before its first frequency is finished leaves nothing behind (not even
  // run.json, which would make the next attempt ask for a resume)
  struct FirstFrequencyGuard {
    fs::path out;
    bool armed, created;
    ~FirstFrequencyGuard() {
      if (!armed) return;
      std::error_code e;
      fs::remove(out / "run.json", e);
      fs::remove(out / folder_name(0), e);  // only if empty (its files are written as one set)
      if (created) fs::remove(out, e);      // only if empty
    }
  } guard{out, !had_run, created};
  S.resumed = static_cast<std::size_t>(std::count(done.begin(), done.end(), 1));
  if (S.resumed > 0 && ro.log)
    ro.log("resume: " + std::to_string(S.resumed) + " of " + std::to_string(F) + " frequencies already done in " + ro.folder);
  auto write_rows = [&] {
    const auto m = static_cast<std::size_t>(std::count(done.begin(), done.end(), 1));
    Array2D t(m, kRowColumns);
    std::size_t k = 0;
    for (std::size_t i = 0; i < F; ++i)
      if (done[i]) std::copy(rows[i].begin(), rows[i].end(), t.values.begin() + static_cast<std::ptrdiff_t>(k++ * kRowColumns));
    io::write_csv((out / "frequencies.csv").string(), t, kFrequencyRowHeader);
  };
  std::size_t finished = S.resumed;
  for (std::size_t i = 0; i < F; ++i) {
    if (done[i]) continue;
    FrequencyResult& r = S.results[i];
    r = I.solve(i);
    I.write_frequency(out, r);
    rows[i] = {double(i), r.frequency_hz, r.k, r.ka, double(r.iterations), r.setup_seconds, r.solve_seconds,
               r.field_seconds, r.power_w, r.lw_db, r.ts_db, r.max_spl_1m_db};
    done[i] = 1;
    write_rows();
    guard.armed = false;
    account(r, ++finished);
  }
  S.sweep_seconds = seconds_since(t_sweep);
  Record s;
  s.set("run", run)
      .set("frequencies_computed", static_cast<long long>(S.computed))
      .set("frequencies_resumed", static_cast<long long>(S.resumed))
      .set("body_size_m", I.D)
      .set("setup_seconds", S.setup_seconds)
      .set("solve_seconds", S.solve_seconds)
      .set("sweep_seconds", S.sweep_seconds)
      .set("max_gmres_iterations", S.max_iterations)
      // the normalised admittance of a scalar impedance (null: rigid, or one per element)
      .set("impedance_admittance_re", I.scalar_beta.real())
      .set("impedance_admittance_im", I.scalar_beta.imag());
  io::write_text_atomic((out / "summary.json").string(), to_json(s) + "\n");
  return S;
}

}  // namespace elliptica::bem
