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

#include <algorithm>
#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/array.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/timer.hpp"
#include "elliptica/ewald/ewald.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using elliptica::Array2D;
using elliptica::ConstMatrixView;
using elliptica::ewald::Kernel;
using elliptica::ewald::ToleranceKind;

/// Input arrays: float64, C-contiguous, on the CPU, any rank (checked below).
using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
/// Output arrays handed to NumPy.
using OutArray = nb::ndarray<nb::numpy, double>;

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
  d["cells"] = nb::make_tuple(p.cells[0], p.cells[1], p.cells[2]);
  d["P"] = p.P;
  d["beta"] = p.beta;
  d["poly_degree"] = p.poly_degree;
  d["eps_abs"] = p.eps_abs;
  d["result_rms"] = p.result_rms;
  d["est_real"] = p.est_real;
  d["est_fourier"] = p.est_fourier;
  d["est_window"] = p.est_window;
  d["est_total"] = p.est_total;
  d["field_eps_abs"] = p.field_eps_abs;
  d["field_rms"] = p.field_rms;
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

/// The views of the arrays of one evaluate/tune call (taken while the GIL is held).
struct Inputs {
  ConstMatrixView<double> src, str;
  std::optional<ConstMatrixView<double>> tgt;
  Inputs(const InArray& sources, const InArray& strengths, const std::optional<InArray>& targets)
      : src(as_view(sources, "sources")), str(as_view(strengths, "strengths")) {
    if (targets) tgt = as_view(*targets, "targets");
  }
};

/// A plan plus the stage times of its last evaluation. The mutex serialises calls from several
/// Python threads on one plan (the C++ plan is not thread-safe and the GIL is released).
struct PyEwaldPlan {
  elliptica::ewald::EwaldPlan plan;
  elliptica::StageTimes last_times;
  std::mutex mutex;

  explicit PyEwaldPlan(const elliptica::ewald::Options& o) : plan(o) {}

  /// (values, field or None, params dict, stage-times dict); the arrays are float64 and own the
  /// C++ buffers. values: (M,) potential (Laplace) or (M, 3) velocity (stokeslet).
  nb::tuple evaluate(const InArray& sources, const InArray& strengths,
                     const std::optional<InArray>& targets) {
    const Inputs in(sources, strengths, targets);
    elliptica::ewald::Result r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      r = in.tgt ? plan.evaluate(in.src, in.str, *in.tgt) : plan.evaluate(in.src, in.str);
      last_times = r.times;
    }
    const bool laplace = plan.options().kernel == Kernel::Laplace;
    nb::object values = to_numpy(std::move(r.values), laplace);
    nb::object field = nb::none();
    if (plan.options().compute_field) field = to_numpy(std::move(r.field), false);
    return nb::make_tuple(values, field, params_to_dict(r.params), times_to_dict(r.times));
  }

  nb::dict tune(const InArray& sources, const InArray& strengths, const std::optional<InArray>& targets) {
    const Inputs in(sources, strengths, targets);
    elliptica::ewald::Params p;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      p = plan.tune(in.src, in.str, in.tgt);
    }
    return params_to_dict(p);
  }

  nb::dict params() {
    elliptica::ewald::Params p;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      p = plan.params();
    }
    return params_to_dict(p);
  }

  nb::dict times() {
    elliptica::StageTimes t;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      t = last_times;
    }
    return times_to_dict(t);
  }

  void retune() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    plan.retune();
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
  { void init_fmm(nb::module_&); init_fmm(m); }  // Helmholtz FMM (bindings_fmm.cpp)

  nb::enum_<Kernel>(m, "Kernel", "Ewald kernel: laplace (1/r, Gaussian units) or stokeslet (Oseen tensor / (8 pi mu)).")
      .value("laplace", Kernel::Laplace)
      .value("stokeslet", Kernel::Stokeslet);
  nb::enum_<ToleranceKind>(m, "ToleranceKind",
                           "How tol is read: relative (RMS error / RMS of the result) or absolute (result units).")
      .value("relative", ToleranceKind::Relative)
      .value("absolute", ToleranceKind::Absolute);

  m.def("strength_components", &elliptica::ewald::strength_components, "kernel"_a,
        "Number of strength components per source: 1 (laplace) or 3 (stokeslet).");

  // The C++ options struct, defaults included: the Python front end (_ewald.py) reads its
  // defaults from a default-constructed EwaldOptions and fills one per plan.
  using elliptica::ewald::Options;
  nb::class_<Options>(m, "EwaldOptions",
                      "Options of an Ewald plan (C++ elliptica::ewald::Options); a default-constructed one "
                      "holds the library's defaults. None: chosen from the tolerance.")
      .def(nb::init<>())
      .def_rw("kernel", &Options::kernel)
      .def_rw("box", &Options::box, "(L1, L2, L3) > 0")
      .def_rw("tolerance", &Options::tolerance, "requested RMS error, 0 < tol < 1")
      .def_rw("tolerance_kind", &Options::tolerance_kind)
      .def_rw("viscosity", &Options::viscosity, "mu > 0 (stokeslet only)")
      .def_rw("compute_field", &Options::compute_field, "Laplace only: also E = -grad phi")
      .def_rw("threads", &Options::threads, "OpenMP threads, 0: all available")
      .def_rw("xi", &Options::xi, nb::for_setter(nb::arg("value").none()))
      .def_rw("rc", &Options::rc, nb::for_setter(nb::arg("value").none()))
      .def_rw("grid", &Options::grid, nb::for_setter(nb::arg("value").none()))
      .def_rw("window_support", &Options::window_support, nb::for_setter(nb::arg("value").none()))
      .def_rw("window_shape", &Options::window_shape, nb::for_setter(nb::arg("value").none()))
      .def_rw("poly_degree", &Options::poly_degree, nb::for_setter(nb::arg("value").none()));

  nb::class_<PyEwaldPlan>(m, "_EwaldPlan")
      .def(nb::init<const Options&>(), "options"_a,
           "Validates the options (InvalidArgumentError); parameters are chosen at the first evaluate.")
      .def("evaluate", &PyEwaldPlan::evaluate, "sources"_a, "strengths"_a, "targets"_a.none(),
           "Returns (values, field or None, params, times); arrays float64. The GIL is released.")
      .def("tune", &PyEwaldPlan::tune, "sources"_a, "strengths"_a, "targets"_a.none())
      .def("retune", &PyEwaldPlan::retune)
      .def_prop_ro("params", &PyEwaldPlan::params)
      .def_prop_ro("last_times", &PyEwaldPlan::times)
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
