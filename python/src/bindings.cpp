// nanobind bindings of the elliptica C++ library: module elliptica._core.
//
// Thin layer: the Python package (python/elliptica/) converts array-likes to C-contiguous float64
// arrays and checks shapes; this file passes zero-copy views to the C++ API, releases the GIL
// while computing, hands results back as NumPy arrays that own the C++ buffers, and maps
// elliptica::Error categories to Python exception classes.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/timer.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "elliptica/ewald/ewald_mpi.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using elliptica::Array2D;
using elliptica::ConstMatrixView;
using elliptica::ewald::Kernel;
using elliptica::ewald::Precision;
using elliptica::ewald::ToleranceKind;

/// Input arrays: float64, C-contiguous, on the CPU, any rank (checked below).
using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
/// Output arrays handed to NumPy.
using OutArray = nb::ndarray<nb::numpy, double>;
/// Exclusion pairs: (K, 2) int64, C-contiguous (the Python layer converts).
using PairArray = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// Python exception types, created once at import (module-lifetime references).
PyObject* exc_invalid = nullptr;
PyObject* exc_file = nullptr;
PyObject* exc_numerical = nullptr;
PyObject* exc_not_converged = nullptr;
PyObject* exc_resource = nullptr;

/// View of a rank-1 (N,) or rank-2 (N,C) array as (N, C) rows; rank 1 gives C == 1.
ConstMatrixView<double> as_view(const InArray& a, const char* what) {
  if (a.ndim() == 1) return {a.data(), a.shape(0), 1};
  if (a.ndim() == 2) return {a.data(), a.shape(0), a.shape(1)};
  throw elliptica::InvalidArgument(std::string(what) + " must be a 1-D or 2-D array, got " +
                                   std::to_string(a.ndim()) + " dimensions");
}

/// Moves an Array2D into a NumPy array without copying. flat: return shape (rows,).
nb::object to_numpy(Array2D&& a, bool flat) {
  auto* owner = new std::vector<double>(std::move(a.values));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  const std::size_t shape[2] = {a.rows, a.cols};
  return nb::cast(OutArray(owner->data(), flat ? 1 : 2, shape, cap));
}

nb::dict params_to_dict(const elliptica::ewald::Params& p) {
  nb::dict d;
  d["xi"] = p.xi;
  d["rc"] = p.rc;
  d["grid"] = nb::make_tuple(p.grid[0], p.grid[1], p.grid[2]);
  d["h"] = nb::make_tuple(p.h[0], p.h[1], p.h[2]);
  d["fft_box"] = nb::make_tuple(p.fft_box[0], p.fft_box[1], p.fft_box[2]);
  d["truncation_radius"] = p.truncation_radius;
  d["cells"] = nb::make_tuple(p.cells[0], p.cells[1], p.cells[2]);
  d["P"] = p.P;
  d["beta"] = p.beta;
  d["poly_degree"] = p.poly_degree;
  d["eps_abs"] = p.eps_abs;
  d["result_rms"] = p.result_rms;
  d["result_scale"] = p.result_scale;
  d["est_real"] = p.est_real;
  d["est_fourier"] = p.est_fourier;
  d["est_window"] = p.est_window;
  d["est_total"] = p.est_total;
  d["field_eps_abs"] = p.field_eps_abs;
  d["field_rms"] = p.field_rms;
  d["field_scale"] = p.field_scale;
  d["field_est_total"] = p.field_est_total;
  d["est_relative"] = p.est_relative;
  d["describe"] = p.describe();
  return d;
}

nb::dict times_to_dict(const elliptica::StageTimes& t) {
  nb::dict d;
  for (const auto& [name, seconds] : t.stages) d[nb::str(name.c_str())] = seconds;
  return d;
}

/// The views of the arrays of one one-shot evaluate/tune call (taken while the GIL is held).
struct Inputs {
  ConstMatrixView<double> src, str;
  std::optional<ConstMatrixView<double>> tgt;
  Inputs(const InArray& sources, const InArray& strengths, const std::optional<InArray>& targets)
      : src(as_view(sources, "sources")), str(as_view(strengths, "strengths")) {
    if (targets) tgt = as_view(*targets, "targets");
  }
};

/// Densities of a set_points-then-evaluate call: absent arrays are empty views.
elliptica::ewald::Densities densities(const std::optional<InArray>& strengths, const std::optional<InArray>& dipoles) {
  elliptica::ewald::Densities d;
  if (strengths) d.strengths = as_view(*strengths, "strengths");
  if (dipoles) d.dipoles = as_view(*dipoles, "dipoles");
  return d;
}

/// Moves an Array2D into a NumPy array of shape (rows,) (cols == 0) or (rows, cols), whatever
/// shape the C++ result reports for an empty array. NumericalError if the sizes disagree.
nb::object to_numpy_shaped(Array2D&& a, std::size_t cols, const char* what) {
  const std::size_t c = cols == 0 ? 1 : cols;
  const std::size_t rows = a.values.size() / c;
  if (a.values.size() != rows * c || (a.rows != rows && !a.values.empty()))
    throw elliptica::NumericalError(std::string("internal error: unexpected shape of the ") + what +
                                    " from the Ewald plan");
  a.rows = rows;
  a.cols = c;
  return to_numpy(std::move(a), cols == 0);
}

/// (values, field or None, params dict, stage-times dict, energy or None, forces or None,
/// coincident_pairs, pressure or None, (P2P candidates, pairs, series degree)); the arrays are float64 and own the C++ buffers. values: (M,) potential
/// (Laplace) or (M, 3) velocity (the Stokes kernels); forces (N, 3).
nb::tuple ewald_result_tuple(const elliptica::ewald::Options& o, elliptica::ewald::Result&& r) {
  const bool laplace = o.kernel == Kernel::Laplace;
  nb::object values = o.compute_potential ? to_numpy_shaped(std::move(r.values), laplace ? 0 : 3, "result")
                                          : nb::none();
  nb::object field = nb::none();
  if (o.compute_field) field = to_numpy_shaped(std::move(r.field), 3, "field");
  nb::object energy = nb::none(), forces = nb::none();
  if (o.compute_energy) {
    energy = nb::float_(r.energy);
    forces = to_numpy_shaped(std::move(r.forces), 3, "forces");
  }
  nb::object pressure = nb::none();
  if (o.compute_pressure) pressure = to_numpy_shaped(std::move(r.pressure), 0, "pressure");
  return nb::make_tuple(values, field, params_to_dict(r.params), times_to_dict(r.times), energy, forces,
                        r.coincident_pairs, pressure,
                        nb::make_tuple(r.p2p.candidates, r.p2p.pairs, r.p2p.series_degree, r.p2p.exp_degree,
                                       r.p2p.pair_symmetry));
}


/// A plan plus the stage times of its last evaluation.
///
/// Locking: the C++ EwaldPlan::evaluate(Densities) is const and thread-safe, so evaluate takes
/// `plan_mutex` shared (several Python threads evaluate one plan at once, the GIL released);
/// the calls that change the plan (set_points, set_exclusions, tune, retune, and the one-shot
/// evaluate/tune forms, which set the points) take it exclusively, so that a Python program can
/// never race them against an evaluate (undefined behaviour in C++). `times_mutex` guards
/// last_times, the one state the binding itself writes on evaluate. The GIL is always released
/// before a lock is taken (no lock-order inversion with the GIL).
struct PyEwaldPlan {
  elliptica::ewald::EwaldPlan plan;
  std::shared_mutex plan_mutex;
  std::mutex times_mutex;
  elliptica::StageTimes last_times;

  explicit PyEwaldPlan(const elliptica::ewald::Options& o) : plan(o) {}

  void record_times(const elliptica::StageTimes& t) {
    std::lock_guard<std::mutex> lock(times_mutex);
    last_times = t;
  }

  nb::tuple result_tuple(elliptica::ewald::Result&& r) { return ewald_result_tuple(plan.options(), std::move(r)); }

  void set_points(const InArray& sources, const std::optional<InArray>& targets,
                  const std::optional<InArray>& normals) {
    const ConstMatrixView<double> src = as_view(sources, "sources");
    std::optional<ConstMatrixView<double>> tgt, nrm;
    if (targets) tgt = as_view(*targets, "targets");
    if (normals) nrm = as_view(*normals, "normals");
    nb::gil_scoped_release release;
    std::unique_lock<std::shared_mutex> lock(plan_mutex);
    plan.set_points(src, tgt, nrm);
  }

  void set_exclusions(const PairArray& pairs) {
    if (pairs.shape(1) != 2)
      throw elliptica::InvalidArgument("exclusions must have shape (K, 2), got (" + std::to_string(pairs.shape(0)) +
                                       ", " + std::to_string(pairs.shape(1)) + ")");
    std::vector<std::array<std::int64_t, 2>> p(pairs.shape(0));
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = {pairs.data()[2 * k], pairs.data()[2 * k + 1]};
    nb::gil_scoped_release release;
    std::unique_lock<std::shared_mutex> lock(plan_mutex);
    plan.set_exclusions(p);
  }

  /// After set_points: evaluate(Densities). Concurrent calls run at once (shared lock).
  nb::tuple evaluate(const std::optional<InArray>& strengths, const std::optional<InArray>& dipoles) {
    const elliptica::ewald::Densities d = densities(strengths, dipoles);
    elliptica::ewald::Result r;
    {
      nb::gil_scoped_release release;
      {
        std::shared_lock<std::shared_mutex> lock(plan_mutex);
        r = plan.evaluate(d);
      }
      record_times(r.times);
    }
    return result_tuple(std::move(r));
  }

  /// One-shot form (Laplace, stokeslet): set_points then evaluate, under the exclusive lock.
  nb::tuple evaluate_oneshot(const InArray& sources, const InArray& strengths, const std::optional<InArray>& targets) {
    const Inputs in(sources, strengths, targets);
    elliptica::ewald::Result r;
    {
      nb::gil_scoped_release release;
      {
        std::unique_lock<std::shared_mutex> lock(plan_mutex);
        r = in.tgt ? plan.evaluate(in.src, in.str, *in.tgt) : plan.evaluate(in.src, in.str);
      }
      record_times(r.times);
    }
    return result_tuple(std::move(r));
  }

  nb::dict tune(const std::optional<InArray>& strengths, const std::optional<InArray>& dipoles) {
    const elliptica::ewald::Densities d = densities(strengths, dipoles);
    elliptica::ewald::Params p;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::shared_mutex> lock(plan_mutex);
      p = plan.tune(d);
    }
    return params_to_dict(p);
  }

  nb::dict tune_oneshot(const InArray& sources, const InArray& strengths, const std::optional<InArray>& targets) {
    const Inputs in(sources, strengths, targets);
    elliptica::ewald::Params p;
    {
      nb::gil_scoped_release release;
      std::unique_lock<std::shared_mutex> lock(plan_mutex);
      p = plan.tune(in.src, in.str, in.tgt);
    }
    return params_to_dict(p);
  }

  nb::dict params() {
    elliptica::ewald::Params p;
    {
      nb::gil_scoped_release release;
      std::shared_lock<std::shared_mutex> lock(plan_mutex);
      p = plan.params();
    }
    return params_to_dict(p);
  }

  nb::dict times() {
    elliptica::StageTimes t;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(times_mutex);
      t = last_times;
    }
    return times_to_dict(t);
  }

  void retune() {
    nb::gil_scoped_release release;
    std::unique_lock<std::shared_mutex> lock(plan_mutex);
    plan.retune();
  }
};

/// The distributed plan (issue 30): every call is collective over the MPI communicator (given as
/// its Fortran handle: mpi4py's comm.py2f()); the GIL is released during the calls, so other
/// Python threads run while a rank waits for the others.
struct PyDistributedEwaldPlan {
  elliptica::ewald::Options opts;
  elliptica::ewald::DistributedEwaldPlan plan;
  PyDistributedEwaldPlan(const elliptica::ewald::Options& o, int fortran_comm, int slab_axis, const std::string& exchange)
      : opts(o), plan(o, elliptica::ewald::MpiComm{fortran_comm}, dist_options(slab_axis, exchange)) {}
  static elliptica::ewald::DistributedOptions dist_options(int slab_axis, const std::string& exchange) {
    elliptica::ewald::DistributedOptions d;
    d.slab_axis = slab_axis;
    if (exchange == "auto") d.exchange = elliptica::ewald::ExchangeMode::Auto;
    else if (exchange == "all-to-all") d.exchange = elliptica::ewald::ExchangeMode::AllToAll;
    else if (exchange == "neighbour") d.exchange = elliptica::ewald::ExchangeMode::Neighbour;
    else throw elliptica::InvalidArgument("exchange must be 'auto', 'all-to-all' or 'neighbour', got '" + exchange + "'");
    return d;
  }
  void set_points(const InArray& sources, const std::optional<InArray>& normals) {
    const ConstMatrixView<double> src = as_view(sources, "sources");
    std::optional<ConstMatrixView<double>> nrm;
    if (normals) nrm = as_view(*normals, "normals");
    nb::gil_scoped_release release;
    plan.set_points(src, nrm);
  }
  nb::tuple evaluate(const std::optional<InArray>& strengths, const std::optional<InArray>& dipoles) {
    const elliptica::ewald::Densities d = densities(strengths, dipoles);
    elliptica::ewald::Result r;
    {
      nb::gil_scoped_release release;
      r = plan.evaluate(d);
    }
    return ewald_result_tuple(opts, std::move(r));
  }
  nb::dict stats() {
    const elliptica::ewald::DistributedStats s = plan.stats();
    nb::dict d;
    d["ranks"] = s.ranks;
    d["rank"] = s.rank;
    d["points"] = s.owned;
    d["ghost_sources"] = s.ghosts;
    d["slab_axis"] = s.slab_axis;
    d["plane_start"] = s.plane_start;
    d["planes"] = s.planes;
    d["slab"] = nb::make_tuple(s.slab_lo, s.slab_hi);
    nb::dict nbr;
    nbr["sort"] = s.neighbour_sort;
    nbr["ghost_source"] = s.neighbour_ghost_source;
    nbr["ghost_grid"] = s.neighbour_ghost_grid;
    d["neighbour_only"] = nbr;
    d["p2p_pair_symmetry"] = s.pair_symmetry;
    nb::dict b;
    b["sort"] = s.bytes_sort;
    b["ghost_source"] = s.bytes_ghost_source;
    b["ghost_grid"] = s.bytes_ghost_grid;
    d["bytes_sent"] = b;
    d["times"] = times_to_dict(s.times);
    return d;
  }
};

PyObject* new_exception(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  const std::string qualified = std::string("elliptica.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!t) throw nb::python_error();
  m.attr(name) = nb::handle(t);  // the module holds a reference; `t` keeps the one we own
  return t;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "elliptica C++ core (nanobind). Use the `elliptica` package, not this module.";

  exc_invalid = new_exception(m, "InvalidArgumentError", PyExc_ValueError,
                              "Bad input: wrong shapes or lengths, NaN/Inf, out-of-range parameters.");
  exc_file = new_exception(m, "FileError", PyExc_OSError,
                           "Unreadable, truncated or malformed file, or a failed write.");
  exc_numerical = new_exception(m, "NumericalError", PyExc_RuntimeError,
                                "Numerical breakdown, e.g. no parameters meet the requested tolerance.");
  exc_not_converged = new_exception(m, "NotConvergedError", PyExc_RuntimeError,
                                    "An iterative method stopped before reaching its tolerance.");
  exc_resource = new_exception(m, "ResourceError", PyExc_MemoryError,
                               "The request needs more memory or threads than there are, or than a "
                               "documented size limit of the library allows (checked before allocating).");

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const elliptica::Error& e) {
      PyObject* type = exc_numerical;
      switch (e.category()) {
        case elliptica::ErrorCategory::InvalidArgument: type = exc_invalid; break;
        case elliptica::ErrorCategory::IO: type = exc_file; break;
        case elliptica::ErrorCategory::Numerical: type = exc_numerical; break;
        case elliptica::ErrorCategory::NotConverged: type = exc_not_converged; break;
        case elliptica::ErrorCategory::Resource: type = exc_resource; break;
      }
      PyErr_SetString(type, e.what());
    }
  });

  { void init_multigrid(nb::module_&); init_multigrid(m); }  // krylov + multigrid (bindings_mg.cpp)
  { void init_bem(nb::module_&); init_bem(m); }  // Helmholtz BEM (bindings_bem.cpp)
  { void init_sem(nb::module_&); init_sem(m); }  // spectral-element Poisson, p-multigrid (bindings_sem.cpp)
  { void init_fmm(nb::module_&); init_fmm(m); }  // Helmholtz FMM (bindings_fmm.cpp)

  nb::enum_<Kernel>(m, "Kernel",
                    "Ewald kernel: laplace (1/r, Gaussian units), stokeslet (Oseen tensor / (8 pi mu)), stresslet "
                    "(double layer, T_jlm = -6 r_j r_l r_m / r^5, / (8 pi)) or stokes_combined (stokeslet + stresslet "
                    "in one pass; C++ name 'stokes-combined').")
      .value("laplace", Kernel::Laplace)
      .value("stokeslet", Kernel::Stokeslet)
      .value("stresslet", Kernel::Stresslet)
      .value("stokes_combined", Kernel::StokesCombined);
  nb::enum_<ToleranceKind>(m, "ToleranceKind",
                           "How tol is read: relative (RMS error / RMS of the result) or absolute (result units).")
      .value("relative", ToleranceKind::Relative)
      .value("absolute", ToleranceKind::Absolute);
  nb::enum_<Precision>(m, "Precision",
                       "Arithmetic of the stages: single (float32) or double (float64); results are float64.")
      .value("single", Precision::Single)
      .value("double", Precision::Double);

  using elliptica::ewald::FftPlanner;
  nb::enum_<FftPlanner>(m, "FftPlanner",
                        "How the FFTs are planned: wisdom (default; FFTW_MEASURE once per machine and grid, cached), "
                        "measure (FFTW_MEASURE every time), estimate (FFTW_ESTIMATE).")
      .value("estimate", FftPlanner::Estimate)
      .value("measure", FftPlanner::Measure)
      .value("wisdom", FftPlanner::Wisdom);
  m.def("fft_planner_from_string", &elliptica::ewald::fft_planner_from_string, "name"_a,
        "Parses 'estimate', 'measure', 'wisdom' (InvalidArgumentError otherwise).");
  m.def("fft_planner_name", [](FftPlanner p) { return elliptica::ewald::to_string(p); }, "planner"_a);
  m.def("ewald_fft_wisdom_file", &elliptica::ewald::fft_wisdom_file,
        "The per-machine FFT wisdom cache file ('' if no location is known).");
  auto timings_to_list = [](const std::vector<elliptica::ewald::FftTiming>& es) {
    nb::list l;
    for (const auto& e : es) {
      nb::dict d;
      d["precision"] = elliptica::ewald::to_string(e.precision);
      d["grid"] = nb::make_tuple(e.grid[0], e.grid[1], e.grid[2]);
      d["forward"] = e.forward;
      d["backward"] = e.backward;
      d["threads"] = e.threads;
      d["forward_seconds"] = e.forward_seconds;
      d["backward_seconds"] = e.backward_seconds;
      l.append(d);
    }
    return l;
  };
  m.def(
      "ewald_fft_wisdom_entries",
      [timings_to_list]() {
        std::vector<elliptica::ewald::FftTiming> es;
        {
          nb::gil_scoped_release release;
          es = elliptica::ewald::fft_wisdom_entries();
        }
        return timings_to_list(es);
      },
      "The FFT problems of the wisdom cache known to this process (list of dicts).");
  m.def(
      "ewald_rebuild_fft_wisdom",
      [timings_to_list](const std::vector<std::tuple<Precision, std::array<int, 3>, int, int, int>>& problems) {
        std::vector<elliptica::ewald::FftTiming> in, out;
        for (const auto& [p, g, f, b, t] : problems) {
          elliptica::ewald::FftTiming x;
          x.precision = p;
          x.grid = g;
          x.forward = f;
          x.backward = b;
          x.threads = t;
          in.push_back(x);
        }
        {
          nb::gil_scoped_release release;
          out = elliptica::ewald::rebuild_fft_wisdom(in);
        }
        return timings_to_list(out);
      },
      "problems"_a, "Forgets the FFT wisdom and measures every known problem and these (precision, grid, "
                    "forward, backward, threads) again; returns the entries.");

  m.def("strength_components", &elliptica::ewald::strength_components, "kernel"_a,
        "Number of strength components per source: 1 (laplace), 3 (stokeslet, stokes_combined), 0 (stresslet).");
  m.def("has_double_layer", &elliptica::ewald::has_double_layer, "kernel"_a,
        "True for the kernels with dipoles and normals (stresslet, stokes_combined).");
  m.def("value_components", &elliptica::ewald::value_components, "kernel"_a,
        "Components of the result per target: 1 (laplace potential), 3 (velocities).");
  m.def("kernel_from_string", &elliptica::ewald::kernel_from_string, "name"_a,
        "Parses 'laplace', 'stokeslet', 'stresslet', 'stokes-combined' (InvalidArgumentError otherwise).");
  m.def("kernel_name", [](Kernel k) { return elliptica::ewald::to_string(k); }, "kernel"_a);
  m.def("precision_from_string", &elliptica::ewald::precision_from_string, "name"_a,
        "Parses 'single'/'float32' or 'double'/'float64' (InvalidArgumentError otherwise).");
  m.def("precision_name", [](Precision p) { return elliptica::ewald::to_string(p); }, "precision"_a);
  m.def("periodicity_from_string", &elliptica::ewald::periodicity_from_string, "name"_a,
        "Parses 3P, 2P, 1P, 0P or the periodic axes' letters into (x, y, z) periodic flags.");
  m.def("periodicity_name", [](const elliptica::ewald::Periodicity& p) { return elliptica::ewald::to_string(p); },
        "periodicity"_a, "3P, 2P, 1P, 0P or the periodic axes' letters.");
  m.def(
      "single_precision_floor",
      [](const std::array<int, 3>& grid, std::size_t n_points) {
        return elliptica::ewald::single_precision_floor(grid, n_points);
      },
      "grid"_a, "n_points"_a,
      "Smallest relative tolerance a single-precision plan accepts with FFT grid (M1, M2, M3) and N points.");

  // Cost model of the parameter choice (ewald.hpp: CostConstants); _ewald.py turns the JSON into dicts.
  m.def(
      "ewald_calibrate_json",
      [](Precision p, bool write_cache) {
        elliptica::ewald::CostConstants c;
        {
          nb::gil_scoped_release release;
          c = elliptica::ewald::calibrate_costs(p, write_cache);
        }
        return elliptica::ewald::cost_constants_json(c);
      },
      "precision"_a, "write_cache"_a,
      "Measures the cost model's constants now (C++ ewald::calibrate_costs); their JSON object.");
  m.def(
      "ewald_cost_constants_json",
      [](Precision p) {
        elliptica::ewald::CostConstants c;
        {
          nb::gil_scoped_release release;
          c = elliptica::ewald::cost_constants(p);
        }
        return elliptica::ewald::cost_constants_json(c);
      },
      "precision"_a, "The cost model's constants this process uses (C++ ewald::cost_constants); their JSON object.");
  m.def("ewald_cost_cache_file", &elliptica::ewald::cost_cache_file,
        "The per-machine cache file of the cost model's constants ('' if no location is known).");

  // The C++ options struct, defaults included: the Python front end (_ewald.py) reads its
  // defaults from a default-constructed EwaldOptions and fills one per plan.
  using elliptica::ewald::Options;
  nb::class_<Options>(m, "EwaldOptions",
                      "Options of an Ewald plan (C++ elliptica::ewald::Options); a default-constructed one "
                      "holds the library's defaults. None: chosen from the tolerance.")
      .def(nb::init<>())
      .def_rw("kernel", &Options::kernel)
      .def_rw("box", &Options::box, "(L1, L2, L3) > 0")
      .def_rw("periodicity", &Options::periodicity, "periodic axes (x, y, z): all (3P) or none (0P)")
      .def_rw("tolerance", &Options::tolerance, "requested RMS error, 0 < tol < 1")
      .def_rw("tolerance_kind", &Options::tolerance_kind)
      .def_rw("viscosity", &Options::viscosity, "mu > 0 (stokeslet and the single layer of stokes_combined)")
      .def_rw("compute_field", &Options::compute_field, "Laplace only: also E = -grad phi")
      .def_rw("compute_pressure", &Options::compute_pressure, "stokeslet only: also the pressure")
      .def_rw("stresslet_zero_mode", &Options::stresslet_zero_mode,
              "stresslet / stokes_combined: add the k = 0 term (default off)")
      .def_rw("precision", &Options::precision, "single or double arithmetic of the stages")
      .def_rw("compute_energy", &Options::compute_energy,
              "Laplace, targets = sources: also the energy U = 1/2 sum q phi and the forces F = q E")
      .def_rw("threads", &Options::threads, "OpenMP threads, 0: all available")
      .def_rw("fft_planner", &Options::fft_planner,
              "how the FFTs are planned: wisdom (default; measured once per machine and grid), measure, estimate")
      .def_rw("compute_potential", &Options::compute_potential,
              "Laplace with the field or energy: False leaves the potential out (energy's Fourier part by Parseval)")
      .def_rw("pair_symmetry", &Options::pair_symmetry,
              "P2P evaluates each pair once for both points where it applies (double, targets = sources, rc < min(L)/2)")
      .def_rw("xi", &Options::xi, nb::for_setter(nb::arg("value").none()))
      .def_rw("rc", &Options::rc, nb::for_setter(nb::arg("value").none()))
      .def_rw("grid", &Options::grid, nb::for_setter(nb::arg("value").none()))
      .def_rw("window_support", &Options::window_support, nb::for_setter(nb::arg("value").none()))
      .def_rw("window_shape", &Options::window_shape, nb::for_setter(nb::arg("value").none()))
      .def_rw("poly_degree", &Options::poly_degree, nb::for_setter(nb::arg("value").none()));

  m.def("mpi_available", &elliptica::ewald::mpi_available,
        "Whether this build has the distributed Ewald plan (MPI and FFTW-MPI found at build time).");
  nb::class_<PyDistributedEwaldPlan>(m, "_DistributedEwaldPlan")
      .def(nb::init<const Options&, int, int, const std::string&>(), "options"_a, "fortran_comm"_a, "slab_axis"_a,
           "exchange"_a,
           "Collective over the communicator (its Fortran handle).")
      .def("set_points", &PyDistributedEwaldPlan::set_points, "sources"_a, "normals"_a.none())
      .def("evaluate", &PyDistributedEwaldPlan::evaluate, "strengths"_a.none(), "dipoles"_a.none())
      .def("stats", &PyDistributedEwaldPlan::stats)
      .def_prop_ro("params", [](PyDistributedEwaldPlan& p) { return params_to_dict(p.plan.params()); });
  nb::class_<PyEwaldPlan>(m, "_EwaldPlan")
      .def(nb::init<const Options&>(), "options"_a,
           "Validates the options (InvalidArgumentError); parameters are chosen at the first evaluate.")
      .def("set_points", &PyEwaldPlan::set_points, "sources"_a, "targets"_a.none(), "normals"_a.none(),
           "Sets the geometry (copied and wrapped). The GIL is released.")
      .def("set_exclusions", &PyEwaldPlan::set_exclusions, "pairs"_a, "(K, 2) int64 source index pairs.")
      .def("evaluate", &PyEwaldPlan::evaluate, "strengths"_a.none(), "dipoles"_a.none(),
           "After set_points: (values, field|None, params, times, energy|None, forces|None, coincident_pairs). "
           "The GIL is released; concurrent calls on one plan run at once.")
      .def("evaluate_oneshot", &PyEwaldPlan::evaluate_oneshot, "sources"_a, "strengths"_a, "targets"_a.none(),
           "Laplace/stokeslet: set_points then evaluate (one exclusive step); returns as evaluate.")
      .def("tune", &PyEwaldPlan::tune, "strengths"_a.none(), "dipoles"_a.none())
      .def("tune_oneshot", &PyEwaldPlan::tune_oneshot, "sources"_a, "strengths"_a, "targets"_a.none())
      .def("retune", &PyEwaldPlan::retune)
      .def_prop_ro("params", &PyEwaldPlan::params)
      .def_prop_ro("last_times", &PyEwaldPlan::times)
      .def_prop_ro("options", [](PyEwaldPlan& s) { return s.plan.options(); })
      .def_prop_ro("kernel", [](PyEwaldPlan& s) { return s.plan.options().kernel; })
      .def_prop_ro("field", [](PyEwaldPlan& s) { return s.plan.options().compute_field; });

  m.def(
      "read_array",
      [](const std::string& path) {
        Array2D a;
        {
          nb::gil_scoped_release release;
          a = elliptica::io::read_array(path);
        }
        const bool flat = a.ndim == 1;
        return to_numpy(std::move(a), flat);
      },
      "path"_a);

  m.def(
      "write_array",
      [](const std::string& path, const InArray& a) {
        if (a.ndim() != 1 && a.ndim() != 2)
          throw elliptica::InvalidArgument("write_array: array must be 1-D or 2-D, got " +
                                           std::to_string(a.ndim()) + " dimensions");
        const std::size_t rows = a.shape(0);
        const std::size_t cols = a.ndim() == 2 ? a.shape(1) : 1;
        Array2D out(rows, cols, static_cast<int>(a.ndim()));
        std::copy(a.data(), a.data() + rows * cols, out.values.begin());
        nb::gil_scoped_release release;
        elliptica::io::write_array(path, out);
      },
      "path"_a, "array"_a);
}
