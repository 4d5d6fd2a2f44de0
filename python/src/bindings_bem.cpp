// nanobind bindings of the BEM module (Burton-Miller Helmholtz BEM plan over the dense or FMM
// operator + block-diagonal preconditioner, mesh readers and generators), registered into elliptica._core by init_bem()
// (called from bindings.cpp after the exception translator is installed).
//
// Thin layer: python/elliptica/_bem.py converts array-likes (vertices float64 (V,3), triangles
// int64 (T,3), directions/points float64 (M,3)) and checks shapes; here the GIL is released while
// computing and results are handed back as NumPy arrays owning the C++ buffers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/bem/acoustic_sweep.hpp"
#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/core/error.hpp"
#include "numpy_util.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

namespace bem = elliptica::bem;
using elliptica::InvalidArgument;
using cplx = std::complex<double>;
using elliptica::pybind::InPts;
using InTri = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using InC = nb::ndarray<const cplx, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::vector<cplx> cvec(const InC& a) { return std::vector<cplx>(a.data(), a.data() + a.shape(0)); }

bem::Medium medium(double c, double rho) {
  bem::Medium m;
  m.sound_speed = c;
  m.density = rho;
  bem::validate(m);
  return m;
}

using elliptica::pybind::points3;
using elliptica::pybind::record_dict;
using elliptica::pybind::vec_to_numpy;

/// midside: (3 T, 3) float64, the midside nodes of triangle i in rows 3i .. 3i+2 (curved 6-node
/// elements, bem::Mesh::midside), or 0 rows for flat triangles.
bem::Mesh make_mesh(const InPts& v, const InTri& t, const InPts* midside = nullptr) {
  bem::Mesh m;
  m.vertices = points3(v, "vertices");
  if (t.shape(1) != 3)
    throw InvalidArgument("triangles must have shape (T, 3), got (" + std::to_string(t.shape(0)) + ", " +
                          std::to_string(t.shape(1)) + ")");
  m.triangles.resize(t.shape(0));
  const auto nv = static_cast<std::int64_t>(m.vertices.size());
  for (std::size_t i = 0; i < m.triangles.size(); ++i)
    for (int c = 0; c < 3; ++c) {
      const std::int64_t x = t.data()[3 * i + c];
      if (x < 0 || x >= nv)
        throw InvalidArgument("triangle " + std::to_string(i) + " has vertex index " + std::to_string(x) +
                              " out of range [0, " + std::to_string(nv) + ")");
      m.triangles[i][c] = static_cast<std::int32_t>(x);
    }
  if (midside && midside->shape(0) > 0) {
    const auto ms = points3(*midside, "midside");
    if (ms.size() != 3 * m.triangles.size())
      throw InvalidArgument("midside must have shape (T, 3, 3) with T = " + std::to_string(m.triangles.size()) +
                            " triangles, got " + std::to_string(ms.size()) + " nodes");
    m.midside.resize(m.triangles.size());
    for (std::size_t i = 0; i < m.triangles.size(); ++i)
      for (std::size_t a = 0; a < 3; ++a) m.midside[i][a] = ms[3 * i + a];
  }
  return m;
}

nb::tuple mesh_to_numpy(const bem::Mesh& m) {
  std::vector<double> v;
  v.reserve(3 * m.vertices.size());
  for (const auto& p : m.vertices) v.insert(v.end(), p.begin(), p.end());
  std::vector<std::int64_t> t;
  t.reserve(3 * m.triangles.size());
  for (const auto& tr : m.triangles) t.insert(t.end(), tr.begin(), tr.end());
  if (!m.curved()) return nb::make_tuple(vec_to_numpy(std::move(v), 3), vec_to_numpy(std::move(t), 3));
  std::vector<double> ms;  // (T, 3, 3): returned as (3T, 3), reshaped by python/elliptica/_bem.py
  ms.reserve(9 * m.midside.size());
  for (const auto& e : m.midside)
    for (const auto& p : e) ms.insert(ms.end(), p.begin(), p.end());
  return nb::make_tuple(vec_to_numpy(std::move(v), 3), vec_to_numpy(std::move(t), 3), vec_to_numpy(std::move(ms), 3));
}

/// One solution of a plan: the C++ SurfaceSolution and the solve's timings; `owner` identifies
/// the plan it belongs to (far and scattered fields are evaluated by that plan only).
struct PySolution {
  bem::SurfaceSolution sol;
  bem::HelmholtzBemSolveInfo info;
  const void* owner = nullptr;
};

/// The options of a HelmholtzBEM plan, from Python's keywords (checked there; the C++ plan checks
/// the values again): shared by HelmholtzBEM and AcousticBEM (one conversion).
struct PyBemOptions {
  bem::HelmholtzBemOptions o;
  PyBemOptions(const std::string& bc, std::optional<cplx> alpha, const std::string& precond, int bd_level, int leaf,
               double tol, int restart, int max_iter, const std::string& op, double fmm_tol, long dense_max, int threads,
               double ifmm_eps, int ifmm_sigma, int ifmm_top, int ifmm_bottom, int ifmm_order, int ifmm_depth,
               const InC& admittance, int ground_axis, double ground_height, double ground_reflection,
               const std::vector<std::array<double, 3>>& symmetry) {
    o.admittance = cvec(admittance);
    if (ground_axis >= 0) o.ground = bem::GroundPlane{ground_axis, ground_height, ground_reflection};
    for (const auto& sp : symmetry) o.symmetry.push_back(bem::MirrorPlane{static_cast<int>(sp[0]), sp[1], sp[2]});
    if (bc == "neumann")
      o.bc = bem::BoundaryCondition::Neumann;
    else if (bc == "dirichlet")
      o.bc = bem::BoundaryCondition::Dirichlet;
    else
      throw InvalidArgument("bc must be 'neumann' or 'dirichlet', got '" + bc + "'");
    o.precond.kind = bem::preconditioner_kind_from_string(precond);
    o.op.kind = bem::operator_kind_from_string(op);
    if (bd_level < -1) throw InvalidArgument("bd_level must be >= 0 or None");
    if (leaf < 1) throw InvalidArgument("leaf must be >= 1");
    if (dense_max < 0) throw InvalidArgument("dense_max must be >= 0");
    o.precond.bd_level = bd_level;
    o.op.fmm.tree.max_leaf = leaf;
    o.alpha = alpha;
    o.gmres.rtol = tol;
    o.gmres.restart = restart;
    o.gmres.max_iterations = max_iter;
    o.op.fmm.tolerance = fmm_tol;
    o.op.dense_max_elements = static_cast<std::size_t>(dense_max);
    o.threads = threads;
    o.precond.ifmm.ifmm.epsilon = ifmm_eps;
    o.precond.ifmm.ifmm.sigma = ifmm_sigma;
    o.precond.ifmm.ifmm.top = ifmm_top;
    o.precond.ifmm.ifmm.bottom = ifmm_bottom;
    o.precond.ifmm.order = ifmm_order;
    o.precond.ifmm.depth = ifmm_depth;
  }
};

/// Plan (dense or FMM operator, optional BD preconditioner); no solution state. The mutex
/// serialises calls from several Python threads (the GIL is released during the work).
struct PyHelmholtzBem {
  std::unique_ptr<bem::HelmholtzBem> plan;
  bem::MeshReport report;
  std::mutex mutex;

  PyHelmholtzBem(const InPts& vertices, const InTri& triangles, const InPts& midside, cplx k, const PyBemOptions& opts) {
    bem::Mesh m = make_mesh(vertices, triangles, &midside);
    bem::HelmholtzBemOptions o = opts.o;
    nb::gil_scoped_release release;
    report = bem::validate_and_orient(m, o.symmetry);
    plan = std::make_unique<bem::HelmholtzBem>(std::move(m), k, o);
  }

  nb::dict setup_dict() const {
    const auto& su = plan->setup();
    nb::dict d;
    d["operator"] = bem::to_string(su.op);
    d["precond"] = bem::to_string(su.precond);
    d["elements"] = su.elements;
    d["operator_seconds"] = su.operator_seconds;
    d["fmm_seconds"] = su.fmm_seconds;
    d["precond_setup_seconds"] = su.precond_seconds;
    d["operator_bytes"] = su.operator_bytes;
    d["precond_bytes"] = su.precond_bytes;
    d["fmm_order"] = su.fmm_order;
    d["fmm_max_rank"] = su.fmm_max_rank;
    d["fmm_tolerance"] = su.fmm_tolerance;
    d["near_entries"] = su.near_entries;
    d["leaf_level"] = su.leaf_level;
    d["impedance"] = su.impedance;
    d["companion_built"] = su.companion_built;
    d["companion_seconds"] = su.companion_seconds;
    if (su.precond == bem::PreconditionerKind::BlockDiagonal) {
      d["bd_level"] = su.bd_level;
      d["bd_blocks"] = su.bd_blocks;
      d["bd_largest_block"] = su.bd_largest_block;
    }
    if (su.precond == bem::PreconditionerKind::Ifmm) d["ifmm"] = record_dict(bem::ifmm_record(su));
    return d;
  }

  PySolution solve(std::array<double, 3> v, bool point) {
    PySolution r;
    r.owner = this;
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    const auto inc = point ? plan->point_source(v) : plan->plane_wave(v);  // + the reflection of a ground plane
    r.sol = plan->solve(inc, {}, &r.info);
    return r;
  }

  /// HelmholtzBem::solve_radiation with the prescribed du/dn source g and an optional incident
  /// field (kind 0: none, 1: plane wave of direction v, 2: point source at v).
  PySolution solve_radiation(const InC& g, std::array<double, 3> v, int kind) {
    PySolution r;
    r.owner = this;
    std::vector<cplx> gv = cvec(g);
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    bem::IncidentField inc;
    if (kind == 1) inc = plan->plane_wave(v);
    if (kind == 2) inc = plan->point_source(v);
    r.sol = plan->solve_radiation(gv, kind ? &inc : nullptr, {}, &r.info);
    return r;
  }

  double surface_power(const PySolution& s, double f, double c, double rho) {
    return bem::surface_power(plan->mesh(), check(s), f, medium(c, rho));
  }

  const bem::SurfaceSolution& check(const PySolution& s) const {
    if (s.owner != this) throw InvalidArgument("the solution belongs to another HelmholtzBEM plan");
    return s.sol;
  }

  nb::object far_field(const PySolution& s, const InPts& dirs) {
    const auto& sol = check(s);
    auto d = points3(dirs, "directions");
    for (std::size_t i = 0; i < d.size(); ++i)
      if (d[i][0] == 0 && d[i][1] == 0 && d[i][2] == 0)
        throw InvalidArgument("directions: row " + std::to_string(i) + " is the zero vector");
    std::vector<cplx> r;
    {
      nb::gil_scoped_release release;
      r = plan->far_field(sol, d);
    }
    return vec_to_numpy(std::move(r));
  }

  /// HelmholtzBem::solve_monostatic over (M,3) directions: a dict of arrays (GIL released, the
  /// plan's mutex held for the whole sweep); "surface" (M, N) complex128 when keep_surface.
  nb::dict monostatic(const InPts& dirs, bool keep_surface) {
    auto d = points3(dirs, "directions");
    std::vector<bem::MonostaticResult> res;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      bem::MonostaticOptions mo;
      mo.keep_solutions = keep_surface;
      res = plan->solve_monostatic(d, mo);
    }
    const std::size_t m = res.size();
    std::vector<double> unit, sigma(m), ts(m), resid(m), secs(m);
    std::vector<cplx> u(m), surface;
    std::vector<std::int64_t> its(m);
    std::vector<std::uint8_t> conv(m);  // bool in _bem.py
    unit.reserve(3 * m);
    for (std::size_t j = 0; j < m; ++j) {
      const auto& r = res[j];
      unit.insert(unit.end(), r.direction.begin(), r.direction.end());
      u[j] = r.u_inf;
      sigma[j] = r.sigma;
      ts[j] = r.ts_db;
      its[j] = r.iterations;
      resid[j] = r.final_relative_residual;
      secs[j] = r.solve_seconds;
      conv[j] = r.converged ? 1 : 0;
      if (keep_surface) {
        const auto& f = r.solution.bc == bem::BoundaryCondition::Neumann ? r.solution.u : r.solution.dudn;
        surface.insert(surface.end(), f.begin(), f.end());
      }
    }
    nb::dict out;
    out["directions"] = vec_to_numpy(std::move(unit), 3);
    out["u_inf"] = vec_to_numpy(std::move(u));
    out["sigma"] = vec_to_numpy(std::move(sigma));
    out["ts_db"] = vec_to_numpy(std::move(ts));
    out["iterations"] = vec_to_numpy(std::move(its));
    out["final_relative_residual"] = vec_to_numpy(std::move(resid));
    out["solve_seconds"] = vec_to_numpy(std::move(secs));
    out["converged"] = vec_to_numpy(std::move(conv));
    if (keep_surface) out["surface"] = vec_to_numpy(std::move(surface), plan->mesh().num_elements());
    return out;
  }

  nb::object scattered_field(const PySolution& s, const InPts& pts) {
    const auto& sol = check(s);
    auto p = points3(pts, "points");
    std::vector<cplx> r;
    {
      nb::gil_scoped_release release;
      r = plan->scattered_field(sol, p);
    }
    return vec_to_numpy(std::move(r));
  }

  /// The incident field at points: the plane wave (point = false, v the direction) or the point
  /// source of the given amplitude at v, with its ground-plane reflection (HelmholtzBem::*_at).
  nb::object incident_at(const std::array<double, 3>& v, bool point, cplx amplitude, const InPts& pts) {
    auto p = points3(pts, "points");
    std::vector<cplx> r;
    {
      nb::gil_scoped_release release;
      r = point ? plan->point_source_at(v, p, amplitude) : plan->plane_wave_at(v, p);
    }
    return vec_to_numpy(std::move(r));
  }

  nb::object element_data(int what) {
    const auto& m = plan->mesh();
    std::vector<double> v;
    v.reserve(3 * m.num_elements());
    for (std::size_t e = 0; e < m.num_elements(); ++e) {
      if (what == 2) {
        v.push_back(m.area(e));
        continue;
      }
      const auto x = what == 0 ? m.centroid(e) : m.normal(e);
      v.insert(v.end(), x.begin(), x.end());
    }
    return vec_to_numpy(std::move(v), what == 2 ? 0 : 3);
  }

  nb::dict report_dict() const {
    nb::dict d;
    d["elements"] = report.elements;
    d["vertices"] = report.vertices;
    d["min_area"] = report.min_area;
    d["max_edge"] = report.max_edge;
    d["flipped_elements"] = report.flipped_elements;
    d["removed_duplicates"] = report.removed_duplicates;
    d["removed_unused"] = report.removed_unused;
    d["components"] = report.components;
    d["volume"] = report.volume;
    d["elements_per_wavelength"] = bem::elements_per_wavelength(plan->mesh(), plan->k());
    d["resolution_warning"] = bem::mesh_resolution_warning(plan->mesh(), plan->k());
    return d;
  }
};

}  // namespace

/// bem::AcousticSweep (acoustic_sweep.hpp) for AcousticBEM.sweep: constructed with every input
/// resolved (GIL released), run() returns a dict of arrays over the frequencies.
struct PyAcousticSweep {
  std::unique_ptr<bem::AcousticSweep> plan;

  PyAcousticSweep(const InPts& vertices, const InTri& triangles, const InPts& midside, const std::vector<double>& freqs,
                  double sound_speed, double density, const PyBemOptions& opts, const InC& impedance, const InC& velocity,
                  int incident_kind, std::array<double, 3> incident, const InPts& monostatic, const InPts& directions,
                  const InPts& field_points, bool reuse_tree) {
    bem::Mesh m = make_mesh(vertices, triangles, &midside);
    bem::AcousticSweepOptions o;
    o.medium = medium(sound_speed, density);
    o.solver = opts.o;
    o.impedance = cvec(impedance);
    o.velocity = cvec(velocity);
    if (incident_kind == 1) o.plane_wave = incident;
    if (incident_kind == 2) o.point_source = incident;
    o.monostatic = points3(monostatic, "monostatic");
    o.directions = points3(directions, "directions");
    o.field_points = points3(field_points, "field_points");
    o.reuse_tree = reuse_tree;
    nb::gil_scoped_release release;
    plan = std::make_unique<bem::AcousticSweep>(std::move(m), freqs, std::move(o));
  }

  nb::dict run(const std::string& folder, bool resume, bool keep_surface, nb::object progress) {
    bem::SweepRunOptions ro;
    ro.folder = folder;
    ro.resume = resume;
    ro.keep_surface = keep_surface;
    if (!progress.is_none())
      ro.progress = [progress](const bem::FrequencyResult& r, std::size_t, std::size_t total) {
        nb::gil_scoped_acquire acquire;
        nb::dict row;
        row["frequency"] = r.frequency_hz;
        row["k"] = r.k;
        row["iterations"] = r.iterations;
        row["setup_seconds"] = r.setup_seconds;
        row["solve_seconds"] = r.solve_seconds;
        row["power_w"] = r.power_w;
        row["ts_db"] = r.ts_db;
        progress(r.index, total, r.frequency_hz, row);
      };
    bem::SweepSummary S;
    {
      nb::gil_scoped_release release;
      S = plan->run(ro);
    }
    const auto& R = S.results;
    const std::size_t F = R.size();
    auto column = [&](auto get) {
      std::vector<double> v(F);
      for (std::size_t i = 0; i < F; ++i) v[i] = get(R[i]);
      return vec_to_numpy(std::move(v));
    };
    nb::dict d;
    d["frequency"] = column([](const auto& r) { return r.frequency_hz; });
    d["k"] = column([](const auto& r) { return r.k; });
    d["ka"] = column([](const auto& r) { return r.ka; });
    {
      std::vector<std::int64_t> it(F);
      std::vector<std::uint8_t> res(F);
      for (std::size_t i = 0; i < F; ++i) {
        it[i] = R[i].iterations;
        res[i] = R[i].resumed;
      }
      d["iterations"] = vec_to_numpy(std::move(it));
      d["resumed"] = vec_to_numpy(std::move(res));
    }
    d["setup_seconds"] = column([](const auto& r) { return r.setup_seconds; });
    d["solve_seconds"] = column([](const auto& r) { return r.solve_seconds; });
    d["field_seconds"] = column([](const auto& r) { return r.field_seconds; });
    d["power_w"] = column([](const auto& r) { return r.power_w; });
    d["lw_db"] = column([](const auto& r) { return r.lw_db; });
    d["ts_db"] = column([](const auto& r) { return r.ts_db; });
    d["max_spl_1m_db"] = column([](const auto& r) { return r.max_spl_1m_db; });
    auto matrix = [&](const char* name, auto get, std::size_t cols) {
      if (cols == 0) return;
      std::vector<cplx> v;
      v.reserve(F * cols);
      for (const auto& r : R) {
        const std::vector<cplx> row = get(r);
        if (row.size() != cols) throw InvalidArgument(std::string("acoustic sweep: inconsistent ") + name + " rows");
        v.insert(v.end(), row.begin(), row.end());
      }
      d[name] = vec_to_numpy(std::move(v), cols);
    };
    const auto& o = plan->options();
    matrix("p_inf", [](const auto& r) { return r.p_inf; }, o.directions.size());
    matrix("field", [](const auto& r) { return r.field; }, o.field_points.size());
    if (keep_surface) matrix("surface", [](const auto& r) { return r.surface; }, plan->mesh().num_elements());
    if (!o.monostatic.empty()) {
      matrix("backscatter", [](const auto& r) {
        std::vector<cplx> u;
        for (const auto& m : r.monostatic) u.push_back(m.u_inf);
        return u;
      }, o.monostatic.size());
      std::vector<double> ts;
      for (const auto& r : R)
        for (const auto& m : r.monostatic) ts.push_back(m.ts_db);
      d["monostatic_ts_db"] = vec_to_numpy(std::move(ts), o.monostatic.size());
    }
    d["computed"] = S.computed;
    d["resumed_count"] = S.resumed;
    d["sweep_seconds"] = S.sweep_seconds;
    return d;
  }
};

void init_bem(nb::module_& m) {
  m.def(
      "bem_read_mesh",
      [](const std::string& path) {
        bem::Mesh mesh;
        {
          nb::gil_scoped_release release;
          mesh = bem::read_mesh(path);
        }
        return mesh_to_numpy(mesh);
      },
      "path"_a);
  m.def(
      "bem_icosphere",
      [](int refinements, double radius, int order) {
        return mesh_to_numpy(bem::icosphere(refinements, radius, {0, 0, 0}, order));
      },
      "refinements"_a, "radius"_a, "order"_a);
  m.def(
      "bem_octasphere",
      [](int refinements, double radius, int order) {
        return mesh_to_numpy(bem::octasphere(refinements, radius, {0, 0, 0}, order));
      },
      "refinements"_a, "radius"_a, "order"_a);

  m.def(
      "bem_curve",
      [](const InPts& v, const InTri& t, double crease) {
        bem::Mesh mesh = make_mesh(v, t);
        bem::validate_and_orient(mesh);
        return mesh_to_numpy(bem::curve_by_vertex_normals(mesh, crease));
      },
      "vertices"_a, "triangles"_a, "crease_degrees"_a);
  m.def(
      "bem_loop",
      [](const InPts& v, const InTri& t, int levels) {
        bem::Mesh mesh = make_mesh(v, t);
        {
          nb::gil_scoped_release release;
          bem::validate_and_orient(mesh);
          mesh = bem::loop_subdivision_surface(mesh, levels);
        }
        return mesh_to_numpy(mesh);
      },
      "vertices"_a, "triangles"_a, "levels"_a);
  m.def(
      "bem_refine",
      [](const InPts& v, const InTri& t, const InPts& midside) { return mesh_to_numpy(bem::refine(make_mesh(v, t, &midside))); },
      "vertices"_a, "triangles"_a, "midside"_a);

  // the C++ defaults of HelmholtzBemOptions (Python has no literals of its own)
  m.def("bem_defaults", [] {
    const bem::HelmholtzBemOptions o;
    nb::dict d;
    d["bc"] = std::string(o.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet");
    d["precond"] = bem::to_string(o.precond.kind);
    d["operator"] = bem::to_string(o.op.kind);
    d["dense_max"] = o.op.dense_max_elements;
    d["fmm_tol"] = o.op.fmm.tolerance;
    d["bd_level"] = o.precond.bd_level;  // -1: the leaf level (None in Python)
    d["leaf"] = o.op.fmm.tree.max_leaf;
    d["tol"] = o.gmres.rtol;
    d["restart"] = o.gmres.restart;
    d["max_iter"] = o.gmres.max_iterations;
    d["threads"] = o.threads;
    d["min_tol"] = bem::kMinGmresRtol;
    d["ifmm_eps"] = o.precond.ifmm.ifmm.epsilon;
    d["ifmm_sigma"] = o.precond.ifmm.ifmm.sigma;
    d["ifmm_top"] = o.precond.ifmm.ifmm.top;
    d["ifmm_bottom"] = o.precond.ifmm.ifmm.bottom;
    d["ifmm_order"] = o.precond.ifmm.order;
    d["ifmm_depth"] = o.precond.ifmm.depth;
    return d;
  });
  m.def("medium_defaults", [] {
    const bem::Medium md;
    nb::dict d;
    d["sound_speed"] = md.sound_speed;
    d["density"] = md.density;
    d["reference_pressure"] = bem::kReferencePressureAir;
    return d;
  });
  m.def("acoustic_wavenumber", [](double f, double c, double rho) { return bem::wavenumber(f, medium(c, rho)); },
        "frequency"_a, "sound_speed"_a, "density"_a);
  m.def("normal_velocity_data",
        [](const InC& v, double f, double c, double rho) {
          return vec_to_numpy(bem::normal_velocity_data(cvec(v), f, medium(c, rho)));
        },
        "velocity"_a, "frequency"_a, "sound_speed"_a, "density"_a);
  m.def("admittance_from_impedance",
        [](cplx Z, double c, double rho) { return bem::admittance_from_impedance(Z, medium(c, rho)); }, "impedance"_a,
        "sound_speed"_a, "density"_a);
  m.def("sphere_rule", [](int n, int axis) {
    const bem::SphereRule r = axis < 0 ? bem::sphere_rule(n) : bem::hemisphere_rule(n, axis);
    std::vector<double> d;
    for (const auto& x : r.directions) d.insert(d.end(), x.begin(), x.end());
    return nb::make_tuple(vec_to_numpy(std::move(d), 3), vec_to_numpy(std::vector<double>(r.weights)));
  }, "n_theta"_a, "axis"_a);

  nb::class_<PySolution>(m, "_BemSolution")
      .def_prop_ro("surface",
                   [](const PySolution& s) {
                     return vec_to_numpy(std::vector<cplx>(s.sol.bc == bem::BoundaryCondition::Neumann ? s.sol.u : s.sol.dudn));
                   })
      .def_prop_ro("bc", [](const PySolution& s) {
        return std::string(s.sol.bc == bem::BoundaryCondition::Neumann ? "neumann" : "dirichlet");
      })
      .def_prop_ro("u", [](const PySolution& s) { return vec_to_numpy(std::vector<cplx>(s.sol.u)); })
      .def_prop_ro("dudn", [](const PySolution& s) { return vec_to_numpy(std::vector<cplx>(s.sol.dudn)); })
      .def_prop_ro("k", [](const PySolution& s) { return s.sol.k; })
      .def_prop_ro("info", [](const PySolution& s) {
        nb::dict d;
        d["iterations"] = s.sol.iterations;
        d["converged"] = s.sol.converged;
        d["residual_history"] = vec_to_numpy(std::vector<double>(s.sol.residual_history));
        d["final_relative_residual"] = s.sol.final_relative_residual;
        d["solve_seconds"] = s.sol.solve_seconds;
        d["matvecs"] = s.info.matvecs;
        d["matvec_seconds"] = s.info.matvec_seconds;
        d["precond_applications"] = s.info.precond_applications;
        d["precond_apply_seconds"] = s.info.precond_apply_seconds;
        return d;
      });

  nb::class_<PyBemOptions>(m, "_BemOptions")
      .def(nb::init<const std::string&, std::optional<cplx>, const std::string&, int, int, double, int, int, const std::string&,
                    double, long, int, double, int, int, int, int, int, const InC&, int, double, double,
                    const std::vector<std::array<double, 3>>&>(),
           "bc"_a, "alpha"_a.none(), "precond"_a, "bd_level"_a, "leaf"_a, "tol"_a, "restart"_a, "max_iter"_a, "operator"_a,
           "fmm_tol"_a, "dense_max"_a, "threads"_a, "ifmm_eps"_a, "ifmm_sigma"_a, "ifmm_top"_a, "ifmm_bottom"_a,
           "ifmm_order"_a, "ifmm_depth"_a, "admittance"_a, "ground_axis"_a, "ground_height"_a, "ground_reflection"_a,
           "symmetry"_a);

  nb::class_<PyAcousticSweep>(m, "_AcousticSweep")
      .def(nb::init<const InPts&, const InTri&, const InPts&, const std::vector<double>&, double, double, const PyBemOptions&,
                    const InC&, const InC&, int, std::array<double, 3>, const InPts&, const InPts&, const InPts&, bool>(),
           "vertices"_a, "triangles"_a, "midside"_a, "frequencies"_a, "sound_speed"_a, "density"_a, "options"_a,
           "impedance"_a, "velocity"_a, "incident_kind"_a, "incident"_a, "monostatic"_a, "directions"_a, "field_points"_a,
           "reuse_tree"_a)
      .def("run", &PyAcousticSweep::run, "folder"_a, "resume"_a, "keep_surface"_a, "progress"_a.none())
      .def_prop_ro("body_size", [](PyAcousticSweep& s) { return s.plan->body_size(); })
      .def_prop_ro("settings", [](PyAcousticSweep& s) { return record_dict(s.plan->settings()); })
      .def_prop_ro("resolution_warning", [](PyAcousticSweep& s) { return s.plan->resolution_warning(); });

  nb::class_<PyHelmholtzBem>(m, "_HelmholtzBEM")
      .def(nb::init<const InPts&, const InTri&, const InPts&, cplx, const PyBemOptions&>(), "vertices"_a, "triangles"_a,
           "midside"_a, "k"_a, "options"_a)
      .def("solve", &PyHelmholtzBem::solve, "v"_a, "point"_a)
      .def("solve_radiation", &PyHelmholtzBem::solve_radiation, "g"_a, "v"_a, "kind"_a)
      .def("surface_power", &PyHelmholtzBem::surface_power, "solution"_a, "frequency"_a, "sound_speed"_a, "density"_a)
      .def("far_field", &PyHelmholtzBem::far_field, "solution"_a, "directions"_a)
      .def("scattered_field", &PyHelmholtzBem::scattered_field, "solution"_a, "points"_a)
      .def("incident_at", &PyHelmholtzBem::incident_at, "v"_a, "point"_a, "amplitude"_a, "points"_a)
      .def("monostatic", &PyHelmholtzBem::monostatic, "directions"_a, "keep_surface"_a)
      .def_prop_ro("vertices", [](PyHelmholtzBem& s) { return nb::object(mesh_to_numpy(s.plan->mesh())[0]); })
      .def_prop_ro("triangles", [](PyHelmholtzBem& s) { return nb::object(mesh_to_numpy(s.plan->mesh())[1]); })
      .def_prop_ro("centroids", [](PyHelmholtzBem& s) { return s.element_data(0); })
      .def_prop_ro("normals", [](PyHelmholtzBem& s) { return s.element_data(1); })
      .def_prop_ro("areas", [](PyHelmholtzBem& s) { return s.element_data(2); })
      .def_prop_ro("report", &PyHelmholtzBem::report_dict)
      .def_prop_ro("setup", &PyHelmholtzBem::setup_dict)
      .def_prop_ro("k", [](PyHelmholtzBem& s) { return s.plan->k(); })
      .def_prop_ro("alpha", [](PyHelmholtzBem& s) { return s.plan->alpha(); });
}
