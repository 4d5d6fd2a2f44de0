// nanobind bindings of the spectral-element Poisson solver (multigrid::SemPoissonPlan, pmg.hpp;
// mesh specs sem_io.hpp), registered into elliptica._core by init_sem() (called from
// bindings.cpp after the exception translator is installed).
//
// Thin layer: python/elliptica/_sem.py checks keyword types and array shapes; here the options
// dict becomes a SemPoissonOptions (the library checks the ranges), the GIL is released while
// setting up and solving, and results come back as NumPy arrays owning the C++ buffers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/krylov/projection.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/pmg.hpp"
#include "elliptica/multigrid/sem_io.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "numpy_util.hpp"
#include "projection_util.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using elliptica::InvalidArgument;
using elliptica::pybind::vec_to_numpy;
namespace mg = elliptica::multigrid;
namespace kr = elliptica::krylov;

using InVec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using InI64 = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::string krylov_name(kr::Method m) { return m == kr::Method::Cg ? "pcg" : kr::to_string(m); }

/// The C++ defaults (SemPoissonOptions{}), which the Python signature reads.
nb::dict sem_defaults() {
  const mg::SemPoissonOptions d{};
  nb::dict o;
  o["order"] = d.order;
  o["pre"] = d.pre;
  o["post"] = d.post;
  o["smoother"] = mg::to_string(d.polynomial);
  o["base"] = mg::to_string(d.base);
  o["lambda_safety"] = d.lambda_safety;
  o["lambda_iterations"] = d.lambda_iterations;
  o["lmin_ratio"] = d.lmin_ratio;
  o["schwarz_precision"] = mg::to_string(d.schwarz_precision);
  o["schwarz_element_max_order"] = d.schwarz_element_max_order;
  o["coarse_solver"] = mg::to_string(d.coarse);
  o["krylov"] = krylov_name(d.method);
  o["rtol"] = d.rtol;
  o["atol"] = d.atol;
  o["maxiter"] = d.max_iterations;
  o["restart"] = d.restart;
  o["threads"] = d.threads;
  o["tune_iterations"] = d.tune_iterations;
  o["max_tuned_order"] = mg::kMaxTunedChebyshevOrder;
  o["max_order"] = mg::kMaxSemOrder;
  return o;
}

template <class T>
T get(const nb::dict& d, const char* k) {
  if (!d.contains(k)) throw InvalidArgument(std::string("SemPoissonPlan options: missing '") + k + "'");
  return nb::cast<T>(d[k]);
}

/// SemPoissonOptions from _sem.py's dict (every key present; types checked there).
mg::SemPoissonOptions sem_options(const nb::dict& d) {
  mg::SemPoissonOptions o;
  o.order = get<int>(d, "order");
  o.schedule = get<std::vector<int>>(d, "schedule");
  o.pre = get<int>(d, "pre");
  o.post = get<int>(d, "post");
  o.level_orders = get<std::vector<int>>(d, "level_orders");
  o.polynomial = mg::polynomial_from_string(get<std::string>(d, "smoother"));
  o.base = mg::sem_smoother_base_from_string(get<std::string>(d, "base"));
  o.lambda_safety = get<double>(d, "lambda_safety");
  o.lambda_iterations = get<int>(d, "lambda_iterations");
  o.lmin_ratio = get<double>(d, "lmin_ratio");
  o.schwarz_precision = mg::schwarz_precision_from_string(get<std::string>(d, "schwarz_precision"));
  o.schwarz_element_max_order = get<int>(d, "schwarz_element_max_order");
  o.coarse = mg::pmg_coarse_solver_from_string(get<std::string>(d, "coarse_solver"));
  const std::string k = get<std::string>(d, "krylov");
  o.method = k == "pcg" ? kr::Method::Cg : kr::method_from_string(k);
  o.rtol = get<double>(d, "rtol");
  o.atol = get<double>(d, "atol");
  o.max_iterations = get<int>(d, "maxiter");
  o.restart = get<int>(d, "restart");
  o.threads = get<int>(d, "threads");
  o.tune_iterations = get<int>(d, "tune_iterations");
  if (d.contains("boomeramg") && !d["boomeramg"].is_none()) {
    const nb::dict b = nb::cast<nb::dict>(d["boomeramg"]);
    mg::BoomerAmgOptions& bo = o.boomeramg;
    bo.relaxation = mg::boomeramg_relaxation_from_string(get<std::string>(b, "relax"), "boomeramg_relax");
    bo.coarsening = mg::boomeramg_coarsening_from_string(get<std::string>(b, "coarsen"), "boomeramg_coarsen");
    bo.interpolation = mg::boomeramg_interpolation_from_string(get<std::string>(b, "interp"), "boomeramg_interp");
    bo.strength_threshold = get<double>(b, "strength");
    bo.max_interp_elements = get<int>(b, "pmax");
    bo.aggressive_levels = get<int>(b, "agg_levels");
    bo.max_levels = get<int>(b, "max_levels");
    bo.max_coarse_size = get<int>(b, "coarse_size");
    bo.sweeps = get<int>(b, "sweeps");
    bo.cycles = get<int>(b, "cycles");
    bo.print_level = get<int>(b, "print_level");
    mg::check_boomeramg_options(bo, "boomeramg");
  }
  return o;
}

/// krylov::SolutionProjection of one SEM plan (elliptica.SolutionProjection(sem_plan)).
struct PySemProjection {
  kr::SolutionProjection proj;
  std::mutex mutex;
  PySemProjection(std::size_t n, const kr::ProjectionOptions& o) : proj(n, o) {}
};

nb::dict result_dict(mg::SemSolveResult&& r, bool projected) {
  nb::dict d;
  d["converged"] = r.converged;
  d["iterations"] = r.iterations;
  d["operator_applications"] = r.operator_applications;
  d["preconditioner_applications"] = r.preconditioner_applications;
  d["final_relative_residual"] = r.final_relative_residual;
  d["solve_seconds"] = r.solve_seconds;
  const int it = r.iterations;
  const double last = r.residual_history.empty() ? 1.0 : r.residual_history.back();
  d["rho"] = it > 0 && last > 0 ? std::pow(last / r.residual_history.front(), 1.0 / it) : 0.0;
  if (projected) {
    d["projected_residual"] = r.projected_residual;
    d["basis_before"] = r.basis_before;
    d["basis_after"] = r.basis_after;
  }
  d["residual_history"] = vec_to_numpy(std::move(r.residual_history));
  return d;
}

/// SemPoissonPlan; the mutex serialises solves from several Python threads (the cycle's work
/// vectors are shared and the GIL is released).
struct PySemPlan {
  std::unique_ptr<mg::SemPoissonPlan> plan;
  std::mutex mutex;

  PySemPlan(mg::HexMesh mesh, const mg::SemPoissonOptions& o) {
    plan = std::make_unique<mg::SemPoissonPlan>(std::move(mesh), o);
  }

  std::size_t size() const { return plan->size(); }

  void check_vec(const InVec& v, const char* what) const {
    if (v.shape(0) != size())
      throw InvalidArgument(std::string(what) + " has length " + std::to_string(v.shape(0)) + ", expected the plan size " +
                            std::to_string(size()));
    for (std::size_t i = 0; i < size(); ++i)
      if (!std::isfinite(v.data()[i])) throw InvalidArgument(std::string(what) + " contains NaN or Inf");
  }

  nb::tuple solve(const InVec& b, const InVec& x0) {
    check_vec(b, "b");
    check_vec(x0, "x0");
    std::vector<double> x(x0.data(), x0.data() + size());
    mg::SemSolveResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      r = plan->solve(b.data(), x.data());
    }
    nb::object xo = vec_to_numpy(std::move(x));
    return nb::make_tuple(xo, result_dict(std::move(r), false));
  }

  nb::tuple solve_projected(PySemProjection& p, const InVec& b) {
    check_vec(b, "b");
    elliptica::pybind::check_projection_size(p.proj.size(), size());
    std::vector<double> x(size(), 0.0);
    mg::SemSolveResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      std::lock_guard<std::mutex> lock_p(p.mutex);
      r = plan->solve(b.data(), x.data(), p.proj);
    }
    nb::object xo = vec_to_numpy(std::move(x));
    return nb::make_tuple(xo, result_dict(std::move(r), true));
  }

  nb::object apply(const InVec& x) {
    check_vec(x, "x");
    std::vector<double> y(size());
    {
      nb::gil_scoped_release release;
      plan->op().apply(x.data(), y.data());  // const and reentrant (sem_operator.hpp)
    }
    return vec_to_numpy(std::move(y));
  }

  nb::tuple assemble() const {
    elliptica::CsrMatrix A;
    {
      nb::gil_scoped_release release;
      A = plan->op().assemble();
    }
    const std::size_t rows = A.rows, cols = A.cols;
    nb::object indptr = vec_to_numpy(std::move(A.row_ptr));
    nb::object indices = vec_to_numpy(std::move(A.col));
    nb::object data = vec_to_numpy(std::move(A.val));
    return nb::make_tuple(data, indices, indptr, rows, cols);
  }

  std::vector<int> orders() const {
    std::vector<int> o;
    const mg::Hierarchy& h = plan->hierarchy();
    for (std::size_t j = 0; j < h.num_levels(); ++j) {
      const auto s = mg::pmg_level_space(h, j);
      o.push_back(s ? s->order() : 1);
    }
    return o;
  }

  std::vector<std::size_t> level_sizes() const {
    std::vector<std::size_t> o;
    const mg::Hierarchy& h = plan->hierarchy();
    for (std::size_t j = 0; j < h.num_levels(); ++j) o.push_back(h.level(j).A->size());
    return o;
  }

  std::vector<double> lambda_max() const {
    std::vector<double> l;
    const mg::Hierarchy& h = plan->hierarchy();
    for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) l.push_back(plan->cycle().smoother(j).lambda_max());
    return l;
  }
};

mg::HexMesh mesh_from_arrays(const InVec& vertices, const InI64& elements) {
  if (vertices.shape(0) % 3 != 0) throw InvalidArgument("vertices: expected (nv, 3) coordinates");
  if (elements.shape(0) % 8 != 0) throw InvalidArgument("elements: expected (ne, 8) vertex indices");
  mg::HexMesh m;
  m.vertices.assign(vertices.data(), vertices.data() + vertices.shape(0));
  m.elements.assign(elements.data(), elements.data() + elements.shape(0));
  return m;
}

}  // namespace

void init_sem(nb::module_& m) {
  m.def("_sem_defaults", &sem_defaults);

  elliptica::pybind::bind_projection<PySemProjection>(m, "_SemProjection");

  nb::class_<PySemPlan>(m, "_SemPoissonPlan")
      .def_static(
          "_from_spec",
          [](const std::string& spec, const nb::dict& opts) {
            const mg::SemPoissonOptions o = sem_options(opts);
            nb::gil_scoped_release release;
            return new PySemPlan(mg::sem_mesh_from_spec(spec), o);
          },
          "spec"_a, "options"_a, nb::rv_policy::take_ownership)
      .def_static(
          "_from_arrays",
          [](const InVec& vertices, const InI64& elements, const nb::dict& opts) {
            const mg::SemPoissonOptions o = sem_options(opts);
            mg::HexMesh mesh = mesh_from_arrays(vertices, elements);
            nb::gil_scoped_release release;
            return new PySemPlan(std::move(mesh), o);
          },
          "vertices"_a, "elements"_a, "options"_a, nb::rv_policy::take_ownership)
      .def("solve", &PySemPlan::solve, "b"_a, "x0"_a)
      .def("solve_projected", &PySemPlan::solve_projected, "projection"_a, "b"_a)
      .def("apply", &PySemPlan::apply, "x"_a)
      .def("assemble", &PySemPlan::assemble)
      .def_prop_ro("size", &PySemPlan::size)
      .def_prop_ro("num_nodes", [](const PySemPlan& p) { return p.plan->space().num_nodes(); })
      .def_prop_ro("num_elements", [](const PySemPlan& p) { return p.plan->space().num_elements(); })
      .def_prop_ro("order", [](const PySemPlan& p) { return p.plan->space().order(); })
      .def_prop_ro("setup_seconds", [](const PySemPlan& p) { return p.plan->setup_seconds(); })
      .def_prop_ro("pre", [](const PySemPlan& p) { return p.plan->options().pre; })
      .def_prop_ro("post", [](const PySemPlan& p) { return p.plan->options().post; })
      .def_prop_ro("tuning",
                   [](const PySemPlan& p) {
                     nb::list l;
                     for (const mg::SemOrderTrial& t : p.plan->tuning()) {
                       nb::dict d;
                       d["order"] = t.order;
                       d["iterations"] = t.iterations;
                       d["converged"] = t.converged;
                       d["seconds"] = t.seconds;
                       l.append(d);
                     }
                     return l;
                   })
      .def_prop_ro("orders", &PySemPlan::orders)
      .def_prop_ro("level_sizes", &PySemPlan::level_sizes)
      .def_prop_ro("lambda_max", &PySemPlan::lambda_max)
      .def("coordinates",
           [](const PySemPlan& p) {
             std::vector<double> c = p.plan->space().coordinates();
             return vec_to_numpy(std::move(c), 3);
           })
      .def("mass",
           [](const PySemPlan& p) {
             std::vector<double> b = p.plan->space().mass();
             return vec_to_numpy(std::move(b));
           })
      .def("mesh", [](const PySemPlan& p) {
        const mg::HexMesh& mm = p.plan->space().mesh();
        std::vector<double> v = mm.vertices;
        std::vector<std::int64_t> e = mm.elements;
        return nb::make_tuple(vec_to_numpy(std::move(v), 3), vec_to_numpy(std::move(e), 8));
      });
}
