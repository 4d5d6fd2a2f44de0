// nanobind bindings of the krylov + multigrid modules, registered into elliptica._core by
// init_multigrid() (called from bindings.cpp, after the exception translator is installed, so
// elliptica::Error categories map to the same Python exception classes).
//
// Thin layer: python/elliptica/_multigrid.py converts scipy sparse matrices to CSR arrays
// (indptr int64, indices int32 sorted per row, data float64) and checks shapes; here the arrays
// are copied into a CsrMatrix (validated), the GIL is released while computing, and results are
// handed back as NumPy arrays owning the C++ buffers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/krylov/projection.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"
#include "projection_util.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using elliptica::CsrMatrix;
using elliptica::InvalidArgument;
namespace mg = elliptica::multigrid;
namespace kr = elliptica::krylov;

using InVec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using InI64 = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using InI32 = nb::ndarray<const std::int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::object vec_to_numpy(std::vector<T>&& v) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const std::size_t shape[1] = {owner->size()};
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<1>>(owner->data(), 1, shape, cap));
}

/// Copies CSR arrays into a validated CsrMatrix (rows x cols).
CsrMatrix make_csr(const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows, std::size_t cols) {
  if (indptr.shape(0) != rows + 1)
    throw InvalidArgument("CSR indptr has length " + std::to_string(indptr.shape(0)) + ", expected rows + 1 = " +
                          std::to_string(rows + 1));
  if (indices.shape(0) != data.shape(0))
    throw InvalidArgument("CSR indices (" + std::to_string(indices.shape(0)) + ") and data (" +
                          std::to_string(data.shape(0)) + ") differ in length");
  CsrMatrix A;
  A.rows = rows;
  A.cols = cols;
  A.row_ptr.assign(indptr.data(), indptr.data() + indptr.shape(0));
  A.col.assign(indices.data(), indices.data() + indices.shape(0));
  A.val.assign(data.data(), data.data() + data.shape(0));
  for (double v : A.val)
    if (!std::isfinite(v)) throw InvalidArgument("matrix contains NaN or Inf entries");
  A.validate();
  return A;
}

/// Python's words for an unsymmetric matrix under PCG (indices 0-based, as in scipy); called
/// before the C++ solvers, whose own check would suggest "gmres" without the keyword.
void require_symmetric(const elliptica::SymmetryReport& s) {
  if (!s.symmetric)
    throw InvalidArgument("A: " + elliptica::describe_asymmetry(s) +
                          "; krylov='pcg' needs a symmetric positive definite matrix: use krylov='gmres'");
}

nb::tuple csr_to_tuple(CsrMatrix&& A) {
  const std::size_t rows = A.rows, cols = A.cols;
  nb::object indptr = vec_to_numpy(std::move(A.row_ptr));
  nb::object indices = vec_to_numpy(std::move(A.col));
  nb::object data = vec_to_numpy(std::move(A.val));
  return nb::make_tuple(data, indices, indptr, rows, cols);
}

mg::GridShape make_shape(const std::vector<int>& shape) {
  if (shape.empty()) return {};
  if (shape.size() > 3)
    throw InvalidArgument("shape must have 1, 2 or 3 entries (unknowns per axis), got " + std::to_string(shape.size()));
  mg::GridShape g;
  g.dim = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 1) throw InvalidArgument("shape entries must be >= 1, got " + std::to_string(shape[d]));
    g.n[d] = shape[d];
  }
  return g;
}

nb::dict result_to_dict(kr::Result&& r, long matvecs, double rho) {
  nb::dict d;
  d["converged"] = r.converged;
  d["iterations"] = r.iterations;
  d["matvecs"] = matvecs;
  d["operator_applications"] = r.operator_applications;
  d["preconditioner_applications"] = r.preconditioner_applications;
  d["final_relative_residual"] = r.final_relative_residual;
  d["rho"] = rho;
  d["residual_history"] = vec_to_numpy(std::move(r.residual_history));
  return d;
}

mg::SmootherOptions make_smoother_options(const std::string& kind, const std::string& base, double lmin_ratio,
                                          std::optional<double> lambda_max, double lambda_safety,
                                          int lambda_iterations, double omega, int subdomain, int overlap) {
  mg::SmootherOptions o;
  o.kind = mg::polynomial_from_string(kind);
  o.base = mg::base_from_string(base);
  o.lmin_ratio = lmin_ratio;
  o.lambda_max = lambda_max;
  o.lambda_safety = lambda_safety;
  o.lambda_iterations = lambda_iterations;
  o.omega = omega;
  o.subdomain = subdomain;
  o.overlap = overlap;
  return o;
}

void check_vec(const InVec& v, std::size_t n, const char* what) {
  if (v.shape(0) != n)
    throw InvalidArgument(std::string(what) + " has length " + std::to_string(v.shape(0)) +
                          ", expected the matrix size " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(v.data()[i])) throw InvalidArgument(std::string(what) + " contains NaN or Inf");
}

/// The C++ defaults (multigrid::MultigridOptions{}), which the Python signatures read.
nb::dict multigrid_defaults() {
  const mg::MultigridOptions d{};
  nb::dict o;
  o["coarsening"] = d.hierarchy.coarsening;
  o["max_levels"] = d.hierarchy.max_levels;
  o["grid"] = mg::to_string(d.hierarchy.grid);
  o["semi_coarsening"] = mg::to_string(d.hierarchy.semi_coarsening);
  o["semi_coarsening_threshold"] = d.hierarchy.semi_coarsening_threshold;
  o["order"] = nb::make_tuple(d.cycle.pre, d.cycle.post);
  o["smoother"] = mg::to_string(d.cycle.smoother.kind);
  o["base"] = mg::to_string(d.cycle.smoother.base);
  o["lmin_ratio"] = d.cycle.smoother.lmin_ratio;
  o["lambda_safety"] = d.cycle.smoother.lambda_safety;
  o["lambda_iterations"] = d.cycle.smoother.lambda_iterations;
  o["omega"] = d.cycle.smoother.omega;
  o["subdomain"] = d.cycle.smoother.subdomain;
  o["overlap"] = d.cycle.smoother.overlap;
  o["krylov"] = mg::to_string(d.solver.method);
  o["tol"] = d.solver.krylov.rtol;
  o["maxiter"] = d.solver.krylov.max_iterations;
  o["restart"] = d.solver.krylov.restart;
  o["atol"] = d.solver.krylov.atol;
  o["threads"] = d.threads;
  // MultigridPlan.from_matrix(method="sa") (multigrid::AmgOptions)
  o["strength"] = d.amg.strength_threshold;
  o["strength_measure"] = mg::to_string(d.amg.strength_measure);
  o["strength_classical"] = mg::default_strength_threshold(mg::StrengthMeasure::Classical);
  o["block_size"] = d.amg.block_size;
  o["prolongator_omega"] = d.amg.prolongator_omega;
  o["coarse_size"] = d.amg.coarse_size;
  o["amg_max_levels"] = d.amg.max_levels;
  // elliptica.SolutionProjection (krylov::ProjectionOptions)
  const kr::ProjectionOptions p{};
  o["projection_max_vectors"] = p.max_vectors;
  o["projection_drop_tolerance"] = p.drop_tolerance;
  // MultigridPlan.update (multigrid::UpdateOptions)
  o["keep_prolongators"] = mg::UpdateOptions{}.keep_prolongators;
  // MultigridPlan.from_matrix(method="boomeramg", ...) and coarse_solver= (multigrid::BoomerAmgOptions)
  o["coarse_solver"] = mg::to_string(d.coarse_solver);
  o["boomeramg_cycle"] = mg::to_string(d.boomeramg_cycle);
  const mg::BoomerAmgOptions& bo = d.boomeramg;
  o["boomeramg_relax"] = mg::to_string(bo.relaxation);
  o["boomeramg_coarsen"] = mg::to_string(bo.coarsening);
  o["boomeramg_interp"] = mg::to_string(bo.interpolation);
  o["boomeramg_strength"] = bo.strength_threshold;
  o["boomeramg_pmax"] = bo.max_interp_elements;
  o["boomeramg_agg_levels"] = bo.aggressive_levels;
  o["boomeramg_max_levels"] = bo.max_levels;
  o["boomeramg_coarse_size"] = bo.max_coarse_size;
  o["boomeramg_sweeps"] = bo.sweeps;
  o["boomeramg_cycles"] = bo.cycles;
  o["boomeramg_tol"] = bo.tolerance;
  o["boomeramg_print_level"] = bo.print_level;
  o["have_boomeramg"] = mg::have_boomeramg();
  // elliptica.chebyshev_cg (multigrid::smoother_solve)
  const mg::SmootherSolveOptions c{};
  o["cg_smoother"] = mg::to_string(c.smoother.kind);
  o["cg_base"] = mg::to_string(c.smoother.base);
  o["cg_order"] = c.order;
  o["cg_tol"] = c.solver.krylov.rtol;
  o["cg_maxiter"] = c.solver.krylov.max_iterations;
  o["cg_krylov"] = mg::to_string(c.solver.method);
  o["cg_restart"] = c.solver.krylov.restart;
  return o;
}

/// krylov::SolutionProjection for one plan; plan_updates: the plan's update_count() its basis
/// belongs to (solve_projected empties a stale basis).
struct PyProjection {
  kr::SolutionProjection proj;
  std::size_t plan_updates = 0;
  std::mutex mutex;
  PyProjection(std::size_t n, const kr::ProjectionOptions& o) : proj(n, o) {}
};

/// BoomerAmgOptions from the Python layer's dict (keys as multigrid_defaults()'s boomeramg_*,
/// without the prefix; every key required: _multigrid.py fills them), each checked by its keyword.
mg::BoomerAmgOptions boomeramg_options(const nb::dict& d) {
  auto get = [&](const char* k) -> nb::handle {
    if (!d.contains(k)) throw InvalidArgument(std::string("boomeramg options: missing '") + k + "'");
    return d[k];
  };
  mg::BoomerAmgOptions o;
  o.relaxation = mg::boomeramg_relaxation_from_string(nb::cast<std::string>(get("relax")), "boomeramg_relax");
  o.coarsening = mg::boomeramg_coarsening_from_string(nb::cast<std::string>(get("coarsen")), "boomeramg_coarsen");
  o.interpolation = mg::boomeramg_interpolation_from_string(nb::cast<std::string>(get("interp")), "boomeramg_interp");
  o.strength_threshold = nb::cast<double>(get("strength"));
  o.max_interp_elements = nb::cast<int>(get("pmax"));
  o.aggressive_levels = nb::cast<int>(get("agg_levels"));
  o.max_levels = nb::cast<int>(get("max_levels"));
  o.max_coarse_size = nb::cast<int>(get("coarse_size"));
  o.sweeps = nb::cast<int>(get("sweeps"));
  o.cycles = nb::cast<int>(get("cycles"));
  o.tolerance = nb::cast<double>(get("tol"));
  o.print_level = nb::cast<int>(get("print_level"));
  const std::pair<bool, const char*> checks[] = {
      {o.strength_threshold >= 0 && o.strength_threshold < 1, "boomeramg_strength must be in [0, 1)"},
      {o.max_interp_elements >= 0, "boomeramg_pmax must be >= 0 (0: no truncation)"},
      {o.aggressive_levels >= 0, "boomeramg_agg_levels must be >= 0"},
      {o.max_levels >= 2, "boomeramg_max_levels must be >= 2"},
      {o.max_coarse_size >= 1, "boomeramg_coarse_size must be >= 1"},
      {o.sweeps >= 1, "boomeramg_sweeps must be >= 1"},
      {o.cycles >= 1, "boomeramg_cycles must be >= 1"},
      {o.tolerance >= 0 && o.tolerance < 1, "boomeramg_tol must be in [0, 1) (0: exactly boomeramg_cycles cycles)"},
      {o.print_level >= 0 && o.print_level <= 3, "boomeramg_print_level must be in 0..3"}};
  for (const auto& [ok, what] : checks)
    if (!ok) throw InvalidArgument(what);
  mg::check_boomeramg_options(o, "boomeramg");
  return o;
}

/// The coarse solver of a geometric / SA plan from Python's coarse_solver= and boomeramg options.
void set_coarse_solver(mg::MultigridOptions& o, const std::string& coarse_solver, const std::optional<nb::dict>& b) {
  o.coarse_solver = mg::coarse_solver_from_string(coarse_solver, "coarse_solver");
  if (o.coarse_solver == mg::CoarseSolver::BoomerAmg) {
    if (!b) throw InvalidArgument("coarse_solver='boomeramg' needs the boomeramg options");
    o.boomeramg = boomeramg_options(*b);
  }
}

/// multigrid::MultigridPlan; the mutex serialises calls from several Python threads (the V-cycle's
/// work vectors are shared and the GIL is released).
struct PyMultigridPlan {
  std::unique_ptr<mg::MultigridPlan> plan;
  std::mutex mutex;
  std::optional<elliptica::SymmetryReport> symmetry;  // of the fine matrix, at the first pcg solve (under mutex)

  explicit PyMultigridPlan(std::unique_ptr<mg::MultigridPlan> p) : plan(std::move(p)) {}
  PyMultigridPlan(CsrMatrix A, const std::vector<int>& shape, const mg::MultigridOptions& opt) {
    const mg::GridShape g = make_shape(shape);
    if (g.dim == 0) throw InvalidArgument("shape (unknowns per axis) is required for geometric coarsening");
    plan = std::make_unique<mg::MultigridPlan>(std::move(A), g, opt);
  }

  const mg::Hierarchy& h() const { return plan->hierarchy(); }
  const mg::VCycle& vc() const { return plan->cycle(); }
  std::size_t size() const { return plan->size(); }

  nb::object cycle(const InVec& b, const InVec& x0) {
    check_vec(b, size(), "b");
    check_vec(x0, size(), "x");
    std::vector<double> x(x0.data(), x0.data() + size());
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      vc().cycle(b.data(), x.data());
    }
    return vec_to_numpy(std::move(x));
  }

  nb::object apply(const InVec& r) {
    check_vec(r, size(), "r");
    std::vector<double> z(size());
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      plan->preconditioner().apply(r.data(), z.data());
    }
    return vec_to_numpy(std::move(z));
  }

  /// The outer solver of one solve() call, validated with Python's words.
  mg::OuterSolverOptions outer_options(double tol, int maxiter, const std::string& krylov, int restart, double atol) const {
    mg::OuterSolverOptions so = plan->options().solver;
    try {
      so.method = mg::solver_method_from_string(krylov);
    } catch (const InvalidArgument&) {
      throw InvalidArgument("krylov must be one of 'none', 'gmres', 'fgmres', 'pcg', got '" + krylov + "'");
    }
    if (so.method == mg::SolverMethod::Cg && plan->has_vcycle() && !vc().is_symmetric())
      throw InvalidArgument(
          "krylov='pcg' needs a symmetric V-cycle (pre == post order and base 'jacobi' or 'asm'); "
          "use 'gmres' or 'fgmres'");
    if (so.method == mg::SolverMethod::Cg && !plan->preconditioner().is_symmetric())
      throw InvalidArgument(
          "krylov='pcg' needs a symmetric cycle: hypre's with boomeramg_relax='hybrid-gs' or boomeramg_tol > 0 is not; "
          "use 'gmres' or 'fgmres'");
    if (!(tol > 0 && tol < 1)) throw InvalidArgument("tol must be in (0, 1), got " + std::to_string(tol));
    if (maxiter < 0) throw InvalidArgument("maxiter must be >= 0, got " + std::to_string(maxiter));
    so.krylov.rtol = tol;
    if (!(atol >= 0.0) || !std::isfinite(atol)) throw InvalidArgument("atol must be finite and >= 0, got " + std::to_string(atol));
    so.krylov.atol = atol;
    so.krylov.max_iterations = maxiter;
    so.krylov.restart = restart;
    return so;
  }

  /// Under the mutex: PCG needs a symmetric fine matrix (checked once per matrix).
  void check_pcg(const mg::OuterSolverOptions& so) {
    if (so.method == mg::SolverMethod::Cg && h().level(0).matrix) {
      if (!symmetry) symmetry = elliptica::check_symmetry(*h().level(0).matrix);
      require_symmetric(*symmetry);
    }
  }

  nb::tuple solve(const InVec& b, const InVec& x0, double tol, int maxiter, const std::string& krylov, int restart,
                  double atol) {
    check_vec(b, size(), "b");
    check_vec(x0, size(), "x0");
    const mg::OuterSolverOptions so = outer_options(tol, maxiter, krylov, restart, atol);
    std::vector<double> x(x0.data(), x0.data() + size());
    mg::SolveResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      check_pcg(so);
      r = plan->solve(b.data(), x.data(), so);
    }
    nb::object xo = vec_to_numpy(std::move(x));
    const long mv = r.matvecs;
    const double rho = r.rho;
    return nb::make_tuple(xo, result_to_dict(std::move(r), mv, rho));
  }

  /// k right-hand sides, column-major (n k values, column c at [c n, c n + n)); returns the
  /// solutions in the same layout and one dict per column.
  nb::tuple solve_block(const InVec& B, const InVec& X0, std::size_t k, double tol, int maxiter, const std::string& krylov,
                        int restart, double atol) {
    if (k == 0) throw InvalidArgument("b has no columns (shape (n, 0))");
    check_vec(B, size() * k, "b");
    check_vec(X0, size() * k, "x0");
    const mg::OuterSolverOptions so = outer_options(tol, maxiter, krylov, restart, atol);
    std::vector<double> X(X0.data(), X0.data() + size() * k);
    std::vector<mg::SolveResult> rs;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      check_pcg(so);
      rs = plan->solve(B.data(), X.data(), k, so);
    }
    nb::list infos;
    for (auto& r : rs) {
      const long mv = r.matvecs;
      const double rho = r.rho;
      infos.append(result_to_dict(std::move(r), mv, rho));
    }
    return nb::make_tuple(vec_to_numpy(std::move(X)), infos);
  }

  /// A x = b with the projection's initial guess (MultigridPlan::solve with a SolutionProjection);
  /// a basis built before an update() of the plan is emptied first.
  nb::tuple solve_projected(PyProjection& p, const InVec& b, double tol, int maxiter, const std::string& krylov,
                            int restart, double atol) {
    check_vec(b, size(), "b");
    elliptica::pybind::check_projection_size(p.proj.size(), size());
    const mg::OuterSolverOptions so = outer_options(tol, maxiter, krylov, restart, atol);
    std::vector<double> x(size(), 0.0);
    mg::ProjectedSolveResult r;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      std::lock_guard<std::mutex> lock_p(p.mutex);
      check_pcg(so);
      if (p.plan_updates != plan->update_count()) {  // the operator changed: the basis is stale
        p.proj.clear();
        p.plan_updates = plan->update_count();
      }
      r = plan->solve(b.data(), x.data(), p.proj, so);
    }
    nb::object xo = vec_to_numpy(std::move(x));
    const long mv = r.matvecs;
    const double rho = r.rho;
    const double pr = r.projected_residual;
    const std::size_t before = r.basis_before, after = r.basis_after;
    const bool restarted = r.restarted;
    nb::dict d = result_to_dict(std::move(r), mv, rho);
    d["projected_residual"] = pr;
    d["basis_before"] = before;
    d["basis_after"] = after;
    d["restarted"] = restarted;
    return nb::make_tuple(xo, d);
  }

  /// MultigridPlan::update_values with the CSR arrays of the new matrix.
  void update(const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows, bool keep_prolongators) {
    CsrMatrix A = make_csr(indptr, indices, data, rows, rows);
    mg::UpdateOptions how;
    how.keep_prolongators = keep_prolongators;
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex);
    plan->update_values(A, how);
    symmetry.reset();
  }

  std::vector<double> lambda_max() const {
    std::vector<double> l;
    if (!plan->has_vcycle()) return l;  // hypre's cycle: its relaxation has no such bound here
    for (std::size_t j = 0; j + 1 < h().num_levels(); ++j) l.push_back(vc().smoother(j).lambda_max());
    return l;
  }

  std::vector<std::vector<int>> level_shapes() const {
    std::vector<std::vector<int>> s;
    for (std::size_t j = 0; j < h().num_levels(); ++j) {
      const auto& g = h().level(j).shape;
      s.emplace_back(g.n.begin(), g.n.begin() + g.dim);
    }
    return s;
  }

  std::vector<std::size_t> level_nnz() const {
    std::vector<std::size_t> s;
    for (std::size_t j = 0; j < h().num_levels(); ++j) s.push_back(h().level(j).matrix ? h().level(j).matrix->nnz() : 0);
    return s;
  }
};

}  // namespace

void init_multigrid(nb::module_& m) {
  m.def(
      "_poisson_fd",
      [](int dim, int intervals, std::array<double, 3> lengths, const std::string& grid, const std::string& bc) {
        const mg::GridKind g = mg::grid_kind_from_string(grid);
        const mg::Boundary b = mg::boundary_from_string(bc);
        CsrMatrix A;
        {
          nb::gil_scoped_release release;
          if (g == mg::GridKind::Vertex && b == mg::Boundary::Dirichlet) {
            A = mg::poisson_fd(mg::grid_shape(dim, intervals), lengths);
          } else {  // cells, or periodic points: one unknown per interval
            if (dim < 1 || dim > 3) throw InvalidArgument("dimension must be 1, 2 or 3, got " + std::to_string(dim));
            mg::GridShape s;
            s.dim = dim;
            for (int d = 0; d < dim; ++d) s.n[d] = intervals;
            A = mg::poisson_fd(s, lengths, g, {b, b, b});
          }
        }
        return csr_to_tuple(std::move(A));
      },
      "dim"_a, "intervals"_a, "lengths"_a, "grid"_a = "vertex", "bc"_a = "dirichlet",
      "(data, indices, indptr, rows, cols) of the FD / FV -Laplacian (poisson.hpp).");

  m.def(
      "_seed_problem_2d",
      [](int n, double lx, double ly) {
        mg::TestProblem p;
        {
          nb::gil_scoped_release release;
          p = mg::seed_problem_2d(n, lx, ly);
        }
        nb::tuple A = csr_to_tuple(std::move(p.A));
        nb::object u = vec_to_numpy(std::move(p.u));
        nb::object b = vec_to_numpy(std::move(p.b));
        return nb::make_tuple(A, u, b);
      },
      "n"_a, "lx"_a, "ly"_a, "((data, indices, indptr, rows, cols), u, b) of the seed's 2D test.");

  m.def(
      "_opt4_betas", [](int k) { return vec_to_numpy(mg::opt4_betas(k)); }, "k"_a,
      "Optimised 4th-kind Chebyshev weights beta_1..beta_k.");

  m.def(
      "_chebyshev_cg",
      [](const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows, const InVec& b,
         const InVec& x0, int order, double tol, int maxiter, const std::string& kind, const std::string& base,
         double lmin_ratio, std::optional<double> lambda_max, double lambda_safety, int lambda_iterations,
         double omega, int subdomain, int overlap, int threads, const std::string& krylov, int restart) {
        if (threads < 0) throw InvalidArgument("threads must be >= 0, got " + std::to_string(threads));
        if (krylov != "pcg" && krylov != "gmres" && krylov != "fgmres")
          throw InvalidArgument("krylov must be one of 'pcg', 'gmres', 'fgmres', got '" + krylov + "'");
        if (restart < 1) throw InvalidArgument("restart must be >= 1, got " + std::to_string(restart));
        if (order < 1) throw InvalidArgument("order must be >= 1, got " + std::to_string(order));
        if (!(tol > 0 && tol < 1)) throw InvalidArgument("tol must be in (0, 1), got " + std::to_string(tol));
        if (maxiter < 0) throw InvalidArgument("maxiter must be >= 0, got " + std::to_string(maxiter));
        const auto so = make_smoother_options(kind, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations,
                                              omega, subdomain, overlap);
        CsrMatrix A = make_csr(indptr, indices, data, rows, rows);
        check_vec(b, rows, "b");
        check_vec(x0, rows, "x0");
        mg::SmootherSolveOptions sso;
        sso.smoother = so;
        sso.order = order;
        sso.threads = threads;
        sso.solver.method = mg::solver_method_from_string(krylov);
        sso.solver.krylov.rtol = tol;
        sso.solver.krylov.max_iterations = maxiter;
        sso.solver.krylov.restart = restart;
        std::vector<double> x(x0.data(), x0.data() + rows);
        mg::SmootherSolveResult r;
        {
          nb::gil_scoped_release release;
          if (sso.solver.method == mg::SolverMethod::Cg) require_symmetric(elliptica::check_symmetry(A));
          r = mg::smoother_solve(A, b.data(), x.data(), sso);
        }
        nb::object xo = vec_to_numpy(std::move(x));
        const long mv = r.matvecs;
        const double rho = r.rho, lmax = r.lambda_max;
        nb::dict d = result_to_dict(std::move(r), mv, rho);
        d["lambda_max"] = lmax;
        return nb::make_tuple(xo, d);
      },
      "indptr"_a, "indices"_a, "data"_a, "rows"_a, "b"_a, "x0"_a, "order"_a, "tol"_a, "maxiter"_a, "kind"_a,
      "base"_a, "lmin_ratio"_a, "lambda_max"_a.none(), "lambda_safety"_a, "lambda_iterations"_a, "omega"_a,
      "subdomain"_a, "overlap"_a, "threads"_a = 0, "krylov"_a = "pcg", "restart"_a = 20);

  m.def("_multigrid_defaults", &multigrid_defaults, "The C++ defaults of a multigrid plan (MultigridOptions{}).");

  elliptica::pybind::bind_projection<PyProjection>(m, "_SolutionProjection");

  nb::class_<PyMultigridPlan>(m, "_MultigridPlan")
      .def(
          "__init__",
          [](PyMultigridPlan* self, const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows,
             const std::vector<int>& shape, int coarsening, int max_levels, int pre, int post,
             const std::string& kind, const std::string& base, double lmin_ratio, std::optional<double> lambda_max,
             double lambda_safety, int lambda_iterations, double omega, int subdomain, int overlap, int threads,
             const std::string& coarse_solver, const std::optional<nb::dict>& boomeramg, const std::string& grid,
             const std::string& semi_coarsening, bool constant_null_space) {
            mg::MultigridOptions o;
            set_coarse_solver(o, coarse_solver, boomeramg);
            o.hierarchy.coarsening = coarsening;
            o.hierarchy.max_levels = max_levels;
            o.hierarchy.grid = mg::grid_kind_from_string(grid);
            o.hierarchy.semi_coarsening = mg::semi_coarsening_from_string(semi_coarsening);
            o.constant_null_space = constant_null_space;
            o.cycle.pre = pre;
            o.cycle.post = post;
            o.cycle.smoother = make_smoother_options(kind, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations,
                                                     omega, subdomain, overlap);
            o.threads = threads;  // the outer solver is chosen per solve() call
            o.solver.method = mg::SolverMethod::Fgmres;  // any cycle: Python picks the outer solver per solve() call
            CsrMatrix A = make_csr(indptr, indices, data, rows, rows);
            nb::gil_scoped_release release;
            new (self) PyMultigridPlan(std::move(A), shape, o);
          },
          "indptr"_a, "indices"_a, "data"_a, "rows"_a, "shape"_a, "coarsening"_a, "max_levels"_a, "pre"_a,
          "post"_a, "kind"_a, "base"_a, "lmin_ratio"_a, "lambda_max"_a.none(), "lambda_safety"_a,
          "lambda_iterations"_a, "omega"_a, "subdomain"_a, "overlap"_a, "threads"_a = 0, "coarse_solver"_a = "direct",
          "boomeramg"_a.none() = nb::none(), "grid"_a = "vertex", "semi_coarsening"_a = "off",
          "constant_null_space"_a = false)
      .def_static(
          "_smoothed_aggregation",
          [](const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows, const InVec& near_null,
             std::size_t k, int block_size, double strength, double prolongator_omega, std::size_t coarse_size,
             int max_levels, int pre, int post, const std::string& kind, const std::string& base, double lmin_ratio,
             std::optional<double> lambda_max, double lambda_safety, int lambda_iterations, double omega,
             int subdomain, int overlap, int threads, bool constant_null_space, const std::string& strength_measure,
             const std::string& coarse_solver, const std::optional<nb::dict>& boomeramg) {
            mg::MultigridOptions o;
            o.amg.strength_measure = mg::strength_measure_from_string(strength_measure);
            set_coarse_solver(o, coarse_solver, boomeramg);
            o.constant_null_space = constant_null_space;
            o.cycle.pre = pre;
            o.cycle.post = post;
            o.cycle.smoother = make_smoother_options(kind, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations,
                                                     omega, subdomain, overlap);
            o.amg.block_size = block_size;
            o.amg.strength_threshold = strength;
            o.amg.prolongator_omega = prolongator_omega;
            o.amg.coarse_size = coarse_size;
            o.amg.max_levels = max_levels;
            o.threads = threads;
            o.solver.method = mg::SolverMethod::Fgmres;  // any cycle: Python picks the outer solver per solve() call
            mg::NearNullSpace B;
            B.k = k;
            B.B.assign(near_null.data(), near_null.data() + near_null.shape(0));
            CsrMatrix A = make_csr(indptr, indices, data, rows, rows);
            nb::gil_scoped_release release;
            return new PyMultigridPlan(
                std::make_unique<mg::MultigridPlan>(mg::MultigridPlan::smoothed_aggregation(std::move(A), o, B)));
          },
          "indptr"_a, "indices"_a, "data"_a, "rows"_a, "near_null"_a, "k"_a, "block_size"_a, "strength"_a,
          "prolongator_omega"_a, "coarse_size"_a, "max_levels"_a, "pre"_a, "post"_a, "kind"_a, "base"_a,
          "lmin_ratio"_a, "lambda_max"_a.none(), "lambda_safety"_a, "lambda_iterations"_a, "omega"_a, "subdomain"_a,
          "overlap"_a, "threads"_a = 0, "constant_null_space"_a = false, "strength_measure"_a = "symmetric",
          "coarse_solver"_a = "direct", "boomeramg"_a.none() = nb::none(), nb::rv_policy::take_ownership)
      .def_static(
          "_boomeramg",
          [](const InI64& indptr, const InI32& indices, const InVec& data, std::size_t rows, const nb::dict& boomeramg,
             const std::string& cycle, int pre, int post, const std::string& kind, const std::string& base,
             double lmin_ratio, std::optional<double> lambda_max, double lambda_safety, int lambda_iterations,
             double omega, int subdomain, int overlap, int threads, bool constant_null_space) {
            mg::MultigridOptions o;
            o.boomeramg = boomeramg_options(boomeramg);
            o.boomeramg_cycle = mg::boomeramg_cycle_from_string(cycle, "boomeramg_cycle");
            o.constant_null_space = constant_null_space;
            o.cycle.pre = pre;
            o.cycle.post = post;
            o.cycle.smoother = make_smoother_options(kind, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations,
                                                     omega, subdomain, overlap);
            o.threads = threads;
            o.solver.method = mg::SolverMethod::Fgmres;  // any cycle: Python picks the outer solver per solve() call
            CsrMatrix A = make_csr(indptr, indices, data, rows, rows);
            nb::gil_scoped_release release;
            return new PyMultigridPlan(std::make_unique<mg::MultigridPlan>(mg::MultigridPlan::boomeramg(std::move(A), o)));
          },
          "indptr"_a, "indices"_a, "data"_a, "rows"_a, "boomeramg"_a, "cycle"_a, "pre"_a, "post"_a, "kind"_a, "base"_a,
          "lmin_ratio"_a, "lambda_max"_a.none(), "lambda_safety"_a, "lambda_iterations"_a, "omega"_a, "subdomain"_a,
          "overlap"_a, "threads"_a = 0, "constant_null_space"_a = false, nb::rv_policy::take_ownership)
      .def_static(
          "_rigid_body_modes",
          [](const InVec& coords, int dim) {
            mg::NearNullSpace B = mg::rigid_body_modes(std::vector<double>(coords.data(), coords.data() + coords.shape(0)), dim);
            return nb::make_tuple(vec_to_numpy(std::move(B.B)), B.k);
          },
          "coords"_a, "dim"_a)
      .def("cycle", &PyMultigridPlan::cycle, "b"_a, "x"_a)
      .def("apply", &PyMultigridPlan::apply, "r"_a)
      .def("solve", &PyMultigridPlan::solve, "b"_a, "x0"_a, "tol"_a, "maxiter"_a, "krylov"_a, "restart"_a,
           "atol"_a = 0.0)
      .def("solve_block", &PyMultigridPlan::solve_block, "b"_a, "x0"_a, "k"_a, "tol"_a, "maxiter"_a, "krylov"_a,
           "restart"_a, "atol"_a)
      .def("solve_projected", &PyMultigridPlan::solve_projected, "projection"_a, "b"_a, "tol"_a, "maxiter"_a,
           "krylov"_a, "restart"_a, "atol"_a)
      .def("update", &PyMultigridPlan::update, "indptr"_a, "indices"_a, "data"_a, "rows"_a, "keep_prolongators"_a)
      .def_prop_ro("update_count", [](const PyMultigridPlan& p) { return p.plan->update_count(); })
      .def_prop_ro("size", &PyMultigridPlan::size)
      .def_prop_ro("levels", [](const PyMultigridPlan& p) { return p.h().num_levels(); })
      .def_prop_ro("operator_complexity", [](const PyMultigridPlan& p) { return p.h().operator_complexity(); })
      .def_prop_ro("grid_complexity", [](const PyMultigridPlan& p) { return p.h().grid_complexity(); })
      .def_prop_ro("lambda_max", &PyMultigridPlan::lambda_max)
      .def_prop_ro("level_shapes", &PyMultigridPlan::level_shapes)
      .def_prop_ro("level_nnz", &PyMultigridPlan::level_nnz)
      .def_prop_ro("is_symmetric", [](const PyMultigridPlan& p) { return p.plan->preconditioner().is_symmetric(); })
      .def_prop_ro("has_vcycle", [](const PyMultigridPlan& p) { return p.plan->has_vcycle(); })
      .def_prop_ro("matvecs_per_cycle", [](const PyMultigridPlan& p) { return p.plan->matvecs_per_cycle(); });
}
