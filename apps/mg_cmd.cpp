/// @file mg_cmd.cpp
/// `elliptica mg solve` and `elliptica mg study` (issue 3, seed 003 section 3).
///
/// Cost convention (as vcycle.hpp): fine-grid matrix-vector products ("matvecs") count a smoothing
/// of order k as k products and the residual before restriction as one, so one (m,n) cycle costs
/// m + n + 1; the stationary solver adds one per cycle (plus one initially) for its residual check;
/// a Krylov method adds its own applications of A (one per iteration plus residual recomputations).
/// Average rate rho = (||r_N|| / ||r_0||)^(1/N), N the number of iterations (cycles or Krylov steps).
#include "mg_cmd.hpp"

#include "plot_script.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/constants.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/plan.hpp"
#include "elliptica/multigrid/study.hpp"
#include "elliptica/multigrid/vcycle.hpp"

#ifndef ELLIPTICA_SCRIPTS_DIR
#define ELLIPTICA_SCRIPTS_DIR ""
#endif

namespace elliptica::cli {
namespace {

namespace fs = std::filesystem;
namespace mg = elliptica::multigrid;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string fmt_g(double v) { return fmt("%.6g", v); }

mg::Polynomial parse_kind(const std::string& s) {
  try {
    return mg::polynomial_from_string(s);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--smoother: ") + e.what());
  }
}

mg::BaseSmoother parse_base(const std::string& s) {
  try {
    return mg::base_from_string(s);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--base: ") + e.what());
  }
}

/// Validates --threads; the count goes into the plan's options (num_threads clauses), never into
/// the process-wide OpenMP state.
void check_threads(int t) {
  if (t < 0 || t > 1024) throw InvalidArgument("--threads must be in [0,1024] (0: all available), got " + std::to_string(t));
}

/// splitmix64 (Steele, Lea, Flood 2014), for the 3D test problem's fixed random part g.
std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// 3D analogue of the seed's test: u = sin(3 pi x/Lx) sin(4 pi y/Ly) sin(2 pi z/Lz) + g, g uniform
/// in [-1,1) at the interior points (splitmix64, fixed seed), b = A u (7-point stencil).
mg::TestProblem problem_3d(int n, double Lx, double Ly, double Lz, std::uint64_t seed = 20221006) {
  mg::TestProblem tp;
  tp.shape = mg::grid_shape(3, n);
  tp.lengths = {Lx, Ly, Lz};
  tp.A = mg::poisson_fd(tp.shape, tp.lengths);
  const int m = n - 1;
  const double pi = kPi;
  const double hx = Lx / n, hy = Ly / n, hz = Lz / n;
  tp.u.resize(static_cast<std::size_t>(m) * m * m);
  std::uint64_t s = seed;
  for (int k = 0; k < m; ++k)
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) {
        const double x = (i + 1) * hx, y = (j + 1) * hy, z = (k + 1) * hz;
        const double g = 2.0 * static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53 - 1.0;
        tp.u[static_cast<std::size_t>(i) + static_cast<std::size_t>(m) * (j + static_cast<std::size_t>(m) * k)] =
            std::sin(3 * pi * x / Lx) * std::sin(4 * pi * y / Ly) * std::sin(2 * pi * z / Lz) + g;
      }
  tp.b.resize(tp.u.size());
  tp.A.multiply(tp.u.data(), tp.b.data());
  return tp;
}

/// Memory of a generated Poisson problem with its multigrid hierarchy and solver vectors, checked
/// before any of it is allocated (a request the machine cannot hold would otherwise end in the
/// kernel's OOM killer, without a message). Fine level: CSR with 2d+1 entries a row (12 bytes an
/// entry, 8 a row pointer); coarse levels: the Galerkin stencils (3^d entries a row) on at most
/// N / (2^d - 1) rows in all; vectors: u, b, x, r, the smoother's work vectors and a GMRES(20)
/// basis, about 32 per unknown.
void require_problem_memory(int dim, int n, const char* what) {
  const double N = std::pow(double(n - 1), dim);
  const double fine = N * (8.0 + 12.0 * (2 * dim + 1));
  const double coarse = N / (std::pow(2.0, dim) - 1.0) * (8.0 + 12.0 * std::pow(3.0, dim));
  require_memory(fine + coarse + 32.0 * 8.0 * N, what);
}

/// Progress of an iteration on stderr: one line per iteration.
std::function<void(int, double)> progress_printer(bool quiet) {
  if (quiet) return {};
  return [](int it, double rel) { std::fprintf(stderr, "  iter %4d  rel. residual %.3e\n", it, rel); };
}

// ------------------------------------------------------------------------------------------
// mg solve: the Poisson problems
// ------------------------------------------------------------------------------------------

void print_levels(std::ostream& os, const mg::MultigridPlan& plan);
void parse_cycle_order(const std::string& order, mg::VCycleOptions& vo);

/// --grid and --semi-coarsening into the geometric hierarchy's options.
void parse_grid_options(const MgSolveArgs& a, mg::HierarchyOptions& ho) {
  if (a.grid != "vertex" && a.grid != "cell")
    throw InvalidArgument("--grid: expected vertex or cell, got '" + a.grid + "'");
  if (a.semi_coarsening != "off" && a.semi_coarsening != "auto" && a.semi_coarsening != "on")
    throw InvalidArgument("--semi-coarsening: expected off, auto or on, got '" + a.semi_coarsening + "'");
  ho.grid = mg::grid_kind_from_string(a.grid);
  ho.semi_coarsening = mg::semi_coarsening_from_string(a.semi_coarsening);
}

/// The --problem with --grid cell or --bc neumann|periodic: poisson_problem (poisson.hpp) with
/// --n intervals (cells; periodic points) per axis. Singular (no Dirichlet wall): solved with the
/// constant null space; the hierarchy interpolates as on cells (P reproduces constants).
mg::TestProblem generated_problem(const MgSolveArgs& a, int dim, mg::MultigridOptions& mo) {
  if (a.bc != "dirichlet" && a.bc != "neumann" && a.bc != "periodic")
    throw InvalidArgument("--bc: expected dirichlet, neumann or periodic, got '" + a.bc + "'");
  const mg::Boundary bc = mg::boundary_from_string(a.bc);
  if (bc == mg::Boundary::Neumann && mo.hierarchy.grid == mg::GridKind::Vertex)
    throw InvalidArgument("--bc neumann needs --grid cell (Neumann walls are cell-centred here)");
  const mg::GridKind grid = mo.hierarchy.grid;  // of the problem (--grid)
  const int unknowns = grid == mg::GridKind::Vertex && bc == mg::Boundary::Dirichlet ? a.n - 1 : a.n;
  if (bc != mg::Boundary::Dirichlet) {
    mo.constant_null_space = true;
    mo.hierarchy.grid = mg::GridKind::Cell;
  }
  return mg::poisson_problem(dim, unknowns, {a.lx, a.ly, a.lz}, grid, bc);
}

int run_solve_problem(const MgSolveArgs& a) {
  const bool three = a.problem == "poisson3d";
  if (a.problem != "poisson2d" && !three)
    throw InvalidArgument("--problem: expected poisson2d or poisson3d, got '" + a.problem + "'");
  if (a.o_rhs->count() || a.o_out->count() || a.o_projection->count())
    throw InvalidArgument("--rhs/--out/--projection belong to the --matrix mode; the Poisson problems make their own right-hand side");
  for (const CLI::Option* o : {a.o_near_null, a.o_block_size, a.o_strength, a.o_strength_measure, a.o_coarse_size, a.o_amg,
                               a.o_coarse_solver, a.o_boomeramg_cycle})
    if (o->count())
      throw InvalidArgument(o->get_name() + " belongs to the --matrix mode; --problem uses the geometric hierarchy");
  for (const CLI::Option* o : a.boomeramg.options)
    if (o->count())
      throw InvalidArgument(o->get_name() + " belongs to the --matrix mode; --problem uses the geometric hierarchy");
  if (a.n < 2) throw InvalidArgument("--n: need at least 2 intervals per axis, got " + std::to_string(a.n));
  if (three && a.n > 1024) throw InvalidArgument("--n: at most 1024 intervals per axis in 3D, got " + std::to_string(a.n));
  if (!three && a.n > 16384) throw InvalidArgument("--n: at most 16384 intervals per axis in 2D, got " + std::to_string(a.n));
  for (auto [v, nm] : {std::pair{a.lx, "--lx"}, std::pair{a.ly, "--ly"}, std::pair{a.lz, "--lz"}})
    if (!(std::isfinite(v) && v >= 1e-100 && v <= 1e100))
      throw InvalidArgument(std::string(nm) + " must be a length in [1e-100, 1e100], got " + fmt_g(v));
  if (!three && a.o_lz->count()) throw InvalidArgument("--lz applies only to --problem poisson3d");
  if (a.coarsening != 2 && a.coarsening != 8)
    throw InvalidArgument("--coarsening must be 2 or 8, got " + std::to_string(a.coarsening));
  if (!(a.tol > 0 && a.tol < 1)) throw InvalidArgument("--tol must satisfy 0 < tol < 1, got " + fmt_g(a.tol));
  if (!(a.atol >= 0) || !std::isfinite(a.atol)) throw InvalidArgument("--atol must be finite and >= 0, got " + fmt_g(a.atol));
  if (a.max_iter < 1) throw InvalidArgument("--max-iter must be >= 1, got " + std::to_string(a.max_iter));
  if (a.subdomain < 1) throw InvalidArgument("--subdomain must be >= 1");
  if (a.overlap < 0) throw InvalidArgument("--overlap must be >= 0");
  check_threads(a.threads);

  const mg::MultigridOptions defaults{};
  mg::MultigridOptions mo;
  mo.threads = a.threads;
  mo.hierarchy.coarsening = a.coarsening;
  parse_grid_options(a, mo.hierarchy);
  const bool seed_problem = a.grid == "vertex" && a.bc == "dirichlet";
  mg::VCycleOptions& vo = mo.cycle;
  parse_cycle_order(a.order, vo);
  vo.smoother.kind = parse_kind(a.smoother);
  vo.smoother.base = parse_base(a.base);
  vo.smoother.subdomain = a.subdomain;
  vo.smoother.overlap = a.overlap;
  if (a.restart < 1) throw InvalidArgument("--restart must be >= 1, got " + std::to_string(a.restart));
  const std::string kry = a.krylov.empty() ? mg::to_string(defaults.solver.method) : a.krylov;
  // gmres20 / fgmres20: the earlier spellings of GMRES(20) / FGMRES(20) (--restart 20).
  const bool legacy20 = kry == "gmres20" || kry == "fgmres20";
  if (kry != "none" && kry != "gmres" && kry != "fgmres" && kry != "pcg" && !legacy20)
    throw InvalidArgument("--krylov: expected none, gmres, fgmres or pcg (gmres20/fgmres20: GMRES(20)/FGMRES(20)), got '" +
                          kry + "'");
  mo.solver.method = mg::solver_method_from_string(legacy20 ? kry.substr(0, kry.size() - 2) : kry);
  mo.solver.krylov.rtol = a.tol;
  mo.solver.krylov.atol = a.atol;
  mo.solver.krylov.max_iterations = a.max_iter;
  mo.solver.krylov.restart = legacy20 ? 20 : a.restart;
  if (kry == "pcg" && (vo.pre != vo.post || vo.smoother.base == mg::BaseSmoother::RAS))
    throw InvalidArgument("--krylov pcg needs a symmetric V-cycle: equal orders (--order K,K) and base jacobi or asm; got --order " +
                          std::to_string(vo.pre) + "," + std::to_string(vo.post) + " --base " + a.base +
                          " (use gmres or fgmres for one-sided or RAS cycles)");
  if (!a.quiet) {
    if (mo.solver.method == mg::SolverMethod::Stationary)
      mo.solver.krylov.progress = [](int it, double rel) { std::fprintf(stderr, "  cycle %4d  rel. residual %.3e\n", it, rel); };
    else
      mo.solver.krylov.progress = progress_printer(false);
  }

  require_problem_memory(three ? 3 : 2, a.n, three ? "the 3D Poisson problem (--n) with its hierarchy" : "the 2D Poisson problem (--n) with its hierarchy");
  mg::TestProblem tp = !seed_problem ? generated_problem(a, three ? 3 : 2, mo)
                       : three       ? problem_3d(a.n, a.lx, a.ly, a.lz)
                                     : mg::seed_problem_2d(a.n, a.lx, a.ly);
  if (!a.quiet) std::fprintf(stderr, "building hierarchy and smoothers...\n");
  const auto t0 = Clock::now();  // set-up time: hierarchy + smoothers, not the problem generation
  auto make_plan = [&]() -> mg::MultigridPlan {
    try {
      return mg::MultigridPlan(std::move(tp.A), tp.shape, mo);  // tp.A is not used again: no copy
    } catch (const InvalidArgument& e) {  // a one-level hierarchy: say it in this mode's flags
      if (std::string(e.what()).find("one-level") == std::string::npos) throw;
      throw InvalidArgument("--n " + std::to_string(a.n) + " with --coarsening " + std::to_string(a.coarsening) +
                            ": the grid cannot be coarsened once (every axis has fewer unknowns than the coarsening "
                            "factor): a one-level hierarchy is a direct solve, not multigrid; use a larger --n" +
                            std::string(a.coarsening != 2 ? " or --coarsening 2" : ""));
    }
  };
  const mg::MultigridPlan plan = make_plan();
  const mg::Hierarchy* h = &plan.hierarchy();
  const double t_setup = seconds_since(t0);

  const std::size_t N = tp.b.size();
  std::vector<double> x(N, 0.0);
  const auto t1 = Clock::now();
  const mg::SolveResult res = plan.solve(tp.b.data(), x.data());
  const double t_solve = seconds_since(t1);
  const long matvecs = res.matvecs;
  double err2 = 0, u2 = 0, errmax = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const double e = x[i] - tp.u[i];
    err2 += e * e;
    u2 += tp.u[i] * tp.u[i];
    errmax = std::max(errmax, std::abs(e));
  }

  std::ostream& os = std::cout;
  char buf[256];
  if (three)
    std::snprintf(buf, sizeof buf, "elliptica mg solve: poisson3d, n = %d intervals/axis (%zu unknowns), box %g x %g x %g\n",
                  a.n, N, a.lx, a.ly, a.lz);
  else
    std::snprintf(buf, sizeof buf, "elliptica mg solve: poisson2d, n = %d intervals/axis (%zu unknowns), box %g x %g\n", a.n,
                  N, a.lx, a.ly);
  os << buf;
  if (!seed_problem || a.semi_coarsening != "off")
    os << "grid: " << a.grid << ", boundary " << a.bc << ", hierarchy interpolation " << mg::to_string(mo.hierarchy.grid)
       << ", semi-coarsening " << a.semi_coarsening << (mo.constant_null_space ? ", constant null space" : "") << "\n";
  os << "smoother: " << a.smoother << " (base " << a.base << "), order (" << vo.pre << "," << vo.post
     << "), coarsening " << a.coarsening << ", krylov " << kry << ", tol " << fmt_g(a.tol) << "\n";
  std::snprintf(buf, sizeof buf, "levels: %zu, operator complexity: %.4f, grid complexity: %.4f\n", h->num_levels(),
                h->operator_complexity(), h->grid_complexity());
  os << buf;
  print_levels(os, plan);
  os << "converged: " << (res.converged ? "yes" : "no") << "\n";
  os << "iterations: " << res.iterations << "\n";
  os << "fine-grid matvecs: " << matvecs << "\n";
  std::snprintf(buf, sizeof buf, "rho: %.6f\n", res.rho);
  os << buf;
  std::snprintf(buf, sizeof buf, "final relative residual: %.6e\n", res.final_relative_residual);
  os << buf;
  std::snprintf(buf, sizeof buf, "error vs exact solution: relative 2-norm %.6e, max %.6e\n",
                u2 > 0 ? std::sqrt(err2 / u2) : std::sqrt(err2), errmax);
  os << buf;
  std::snprintf(buf, sizeof buf, "time: setup %.4g s, solve %.4g s\n", t_setup, t_solve);
  os << buf;
  if (!res.converged)
    throw NotConverged("did not reach the relative residual " + fmt_g(a.tol) + " in " + std::to_string(a.max_iter) +
                       " iterations (reached " + fmt("%.3e", res.final_relative_residual) + ")");
  return 0;
}

// ------------------------------------------------------------------------------------------
// mg solve --matrix: polynomial-smoother preconditioned Krylov on a user's matrix
// ------------------------------------------------------------------------------------------

/// The hierarchy levels of a plan as the table of `mg solve` (unknowns, nonzeros, lambda_max).
void print_levels(std::ostream& os, const mg::MultigridPlan& plan) {
  const mg::Hierarchy& h = plan.hierarchy();
  char buf[160];
  const bool ours = plan.has_vcycle();
  const bool amg_coarse = dynamic_cast<const mg::BoomerAmgPreconditioner*>(h.coarse_solver()) != nullptr;
  os << (ours ? "  level   unknowns        nnz   lambda_max(SA)\n" : "  level   unknowns        nnz   (hypre's cycle)\n");
  for (std::size_t j = 0; j < h.num_levels(); ++j) {
    const auto& L = h.level(j);
    const std::size_t nnz = L.matrix ? L.matrix->nnz() : 0;
    if (!ours)
      std::snprintf(buf, sizeof buf, "  %5zu %10zu %10zu\n", j, L.rows(), nnz);
    else if (j + 1 < h.num_levels())
      std::snprintf(buf, sizeof buf, "  %5zu %10zu %10zu   %.6g\n", j, L.rows(), nnz, plan.cycle().smoother(j).lambda_max());
    else
      std::snprintf(buf, sizeof buf, "  %5zu %10zu %10zu   %s\n", j, L.rows(), nnz,
                    amg_coarse ? "(BoomerAMG coarse solve)" : "(exact solve)");
    os << buf;
  }
}

/// The (M,N) cycle orders of --order (default: the library's).
void parse_cycle_order(const std::string& order, mg::VCycleOptions& vo) {
  const mg::MultigridOptions defaults{};
  const std::string ord =
      order.empty() ? std::to_string(defaults.cycle.pre) + "," + std::to_string(defaults.cycle.post) : order;
  const auto parts = split(ord, ',');
  if (parts.size() != 2) throw InvalidArgument("--order: expected M,N (pre- and post-smoothing orders), got '" + ord + "'");
  vo.pre = to_int(parts[0], "--order");
  vo.post = to_int(parts[1], "--order");
  if (vo.pre < 0 || vo.post < 0 || vo.pre + vo.post < 1 || vo.pre > 200 || vo.post > 200)
    throw InvalidArgument("--order: need 0 <= M, N <= 200 and M + N >= 1, got '" + ord + "'");
}

/// --near-null FILE: n x k values (rows: unknowns, columns: vectors) as a column-major NearNullSpace.
mg::NearNullSpace read_near_null(const std::string& path, std::size_t n) {
  const Array2D v = io::read_array(path);
  if (v.rows != n || v.cols < 1)
    throw InvalidArgument("--near-null " + path + ": expected " + std::to_string(n) + " rows (one per unknown) and k >= 1 columns, got " +
                          std::to_string(v.rows) + " x " + std::to_string(v.cols));
  require_finite(v.view(), "--near-null (" + path + ")");
  mg::NearNullSpace B;
  B.k = v.cols;
  B.B.resize(n * B.k);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < B.k; ++c) B.B[i + n * c] = v.values[i * v.cols + c];
  return B;
}

/// The right-hand sides of --rhs as k contiguous columns (column c at [c n, c n + n)).
std::vector<double> columns_of(const Array2D& b) {
  std::vector<double> B(b.rows * b.cols);
  for (std::size_t i = 0; i < b.rows; ++i)
    for (std::size_t c = 0; c < b.cols; ++c) B[i + b.rows * c] = b.values[i * b.cols + c];
  return B;
}

/// The end of `mg solve --matrix`: NotConverged (exit 5) or NumericalError (a non-finite entry)
/// with nothing written, else the solutions written atomically to --out with the shape of --rhs
/// ((n,) for a vector, (n, k) for k columns; X holds the k columns contiguously); returns 0.
int write_solutions(const MgSolveArgs& a, const std::vector<const krylov::Result*>& res, const std::vector<double>& X,
                    std::size_t n, int ndim, io::OutputFile& out_file) {
  const std::size_t k = res.size();
  std::vector<std::size_t> failed;
  for (std::size_t c = 0; c < k; ++c)
    if (!res[c]->converged) failed.push_back(c);
  if (!failed.empty()) {
    // every column that failed, by its 1-based index with the residual it reached (the first 10)
    std::string which, reached;
    for (std::size_t q = 0; q < failed.size() && q < 10; ++q) {
      which += (q ? ", " : "") + std::to_string(failed[q] + 1);
      reached += (q ? ", " : "") + fmt("%.3e", res[failed[q]]->final_relative_residual);
    }
    if (failed.size() > 10) {
      which += ", ... (" + std::to_string(failed.size()) + " in all)";
      reached += ", ...";
    }
    throw NotConverged((k > 1 ? (failed.size() > 1 ? "columns " : "column ") + which + " of " + std::to_string(k) +
                                    " (1-based) "
                              : std::string()) +
                       "did not reach the relative residual " + fmt_g(a.tol) + " in " + std::to_string(a.max_iter) +
                       " iterations (reached " + reached + "); nothing was written");
  }
  for (double v : X)
    if (!std::isfinite(v)) throw NumericalError("non-finite value in the solution; nothing was written");
  Array2D xo(n, k, ndim);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t c = 0; c < k; ++c) xo.values[i * k + c] = X[i + n * c];
  io::write_array(out_file, xo);
  out_file.commit();
  std::cout << "wrote " << a.out << ": shape (" << n << (ndim == 1 ? "," : ", " + std::to_string(k)) << ")\n";
  return 0;
}

/// One value per right-hand side, separated by spaces (the summary lines of a k-column --rhs).
template <class F>
std::string per_column(std::size_t k, F f) {
  std::string s;
  for (std::size_t c = 0; c < k; ++c) s += (c ? " " : "") + f(c);
  return s;
}


int run_matrix_multigrid_impl(const MgSolveArgs& a, CsrMatrix A, const Array2D& b, io::OutputFile& out_file,
                              double t_read);

/// mg solve --matrix with a hierarchy (--amg sa, geometric or boomeramg): MultigridPlan over the
/// matrix. A numerical failure (a breakdown, an indefinite coarsest operator) without
/// --null-space constant says that a singular pure-Neumann / periodic matrix needs it.
int run_matrix_multigrid(const MgSolveArgs& a, CsrMatrix A, const Array2D& b, io::OutputFile& out_file, double t_read) {
  try {
    return run_matrix_multigrid_impl(a, std::move(A), b, out_file, t_read);
  } catch (const NumericalError& e) {
    if (a.o_null_space->count()) throw;
    throw NumericalError(std::string(e.what()) +
                         " (if the matrix is singular with the constants as its null space, as a pure-Neumann or "
                         "periodic pressure equation, add --null-space constant)");
  }
}

int run_matrix_multigrid_impl(const MgSolveArgs& a, CsrMatrix A, const Array2D& b, io::OutputFile& out_file,
                              double t_read) {
  mg::MultigridOptions mo;
  mo.threads = a.threads;
  if (a.null_space != "none" && a.null_space != "constant")
    throw InvalidArgument("--null-space: expected none or constant, got '" + a.null_space + "'");
  mo.constant_null_space = a.null_space == "constant";
  parse_cycle_order(a.order, mo.cycle);
  mo.cycle.smoother.kind = parse_kind(a.smoother);
  mo.cycle.smoother.base = parse_base(a.base);
  mo.cycle.smoother.subdomain = a.subdomain;
  mo.cycle.smoother.overlap = a.overlap;
  const bool boomer = a.amg == "boomeramg";
  mo.coarse_solver = mg::coarse_solver_from_string(a.coarse_solver, "--coarse-solver");
  mo.boomeramg_cycle = mg::boomeramg_cycle_from_string(a.boomeramg_cycle, "--boomeramg-cycle");
  const bool hypre_cycle = boomer && mo.boomeramg_cycle == mg::BoomerAmgCycle::Hypre;
  if (boomer || mo.coarse_solver == mg::CoarseSolver::BoomerAmg) {
    mo.boomeramg = boomeramg_options_from_flags(a.boomeramg);
    if (!mg::have_boomeramg())
      throw InvalidArgument(std::string(boomer ? "--amg boomeramg" : "--coarse-solver boomeramg") +
                            ": elliptica was built without hypre (install libhypre-dev and libopenmpi-dev, e.g. "
                            "scripts/install-deps.sh, and rebuild); use --amg sa");
  }
  if (hypre_cycle && mo.constant_null_space)
    throw InvalidArgument("--null-space constant needs --boomeramg-cycle ours (hypre's coarsest Gaussian elimination cannot "
                          "treat the null space)");
  if (mo.coarse_solver == mg::CoarseSolver::BoomerAmg && mo.constant_null_space)
    throw InvalidArgument("--null-space constant needs --coarse-solver direct (the BoomerAMG coarse solver cannot treat the "
                          "null space)");
  const std::string kry = a.krylov.empty() ? "pcg" : a.krylov;
  const bool legacy20 = kry == "gmres20" || kry == "fgmres20";
  if (kry != "none" && kry != "gmres" && kry != "fgmres" && kry != "pcg" && !legacy20)
    throw InvalidArgument("--krylov: expected pcg, gmres, fgmres or none, got '" + kry + "'");
  mo.solver.method = mg::solver_method_from_string(legacy20 ? kry.substr(0, kry.size() - 2) : kry);
  if (hypre_cycle && kry == "pcg" && mo.boomeramg.relaxation == mg::BoomerAmgRelaxation::HybridGsForward)
    throw InvalidArgument("--krylov pcg needs a symmetric cycle: --boomeramg-relax hybrid-gs is not (use a symmetric relaxation, "
                          "or --krylov gmres)");
  if (hypre_cycle && kry == "pcg" && mo.boomeramg.tolerance > 0)
    throw InvalidArgument("--krylov pcg needs a fixed cycle: --boomeramg-tol > 0 makes hypre's cycle a solve to a tolerance "
                          "(use --krylov fgmres)");
  if (mo.coarse_solver == mg::CoarseSolver::BoomerAmg && kry == "pcg" &&
      mo.boomeramg.relaxation == mg::BoomerAmgRelaxation::HybridGsForward)
    throw InvalidArgument("--krylov pcg needs a symmetric coarse solve: --boomeramg-relax hybrid-gs is not (use a symmetric "
                          "relaxation, or --krylov gmres)");
  if (!hypre_cycle && kry == "pcg" && (mo.cycle.pre != mo.cycle.post || mo.cycle.smoother.base == mg::BaseSmoother::RAS))
    throw InvalidArgument("--krylov pcg needs a symmetric V-cycle: equal orders (--order K,K) and base jacobi or asm; got --order " +
                          std::to_string(mo.cycle.pre) + "," + std::to_string(mo.cycle.post) + " --base " + a.base +
                          " (use --krylov gmres or fgmres for one-sided or RAS cycles)");
  mo.solver.krylov.rtol = a.tol;
  mo.solver.krylov.atol = a.atol;
  mo.solver.krylov.max_iterations = a.max_iter;
  mo.solver.krylov.restart = legacy20 ? 20 : a.restart;
  if (!a.quiet) {
    if (mo.solver.method == mg::SolverMethod::Stationary)
      mo.solver.krylov.progress = [](int it, double rel) { std::fprintf(stderr, "  cycle %4d  rel. residual %.3e\n", it, rel); };
    else
      mo.solver.krylov.progress = progress_printer(false);
  }
  const std::size_t N = A.rows, nnz = A.nnz();
  std::string what;
  if (!a.quiet)
    std::fprintf(stderr, "building the %s hierarchy and smoothers...\n",
                 a.amg == "sa" ? "smoothed-aggregation" : boomer ? "BoomerAMG" : "geometric");
  const auto t0 = Clock::now();
  std::unique_ptr<mg::MultigridPlan> plan;
  if (a.amg == "geometric") {
    if (a.coarsening != 2 && a.coarsening != 8)
      throw InvalidArgument("--coarsening must be 2 or 8, got " + std::to_string(a.coarsening));
    const auto parts = split(a.shape, ',');
    if (parts.empty() || parts.size() > 3) throw InvalidArgument("--shape: expected NX,NY[,NZ] (unknowns per axis), got '" + a.shape + "'");
    mg::GridShape g;
    g.dim = static_cast<int>(parts.size());
    std::size_t prod = 1;
    for (std::size_t d = 0; d < parts.size(); ++d) {
      g.n[d] = to_int(parts[d], "--shape");
      if (g.n[d] < 1) throw InvalidArgument("--shape: entries must be >= 1, got '" + a.shape + "'");
      prod *= static_cast<std::size_t>(g.n[d]);
    }
    if (prod != N)
      throw InvalidArgument("--shape " + a.shape + " has " + std::to_string(prod) + " unknowns but the matrix has " + std::to_string(N) +
                            " rows");
    mo.hierarchy.coarsening = a.coarsening;
    parse_grid_options(a, mo.hierarchy);
    try {
      plan = std::make_unique<mg::MultigridPlan>(std::move(A), g, mo);
    } catch (const InvalidArgument& e) {  // MultigridPlan refuses a one-level hierarchy: say it in flags
      if (std::string(e.what()).find("one-level") == std::string::npos) throw;
      throw InvalidArgument("--amg geometric: the grid --shape " + a.shape + " cannot be coarsened by --coarsening " +
                            std::to_string(a.coarsening) + " (every axis has fewer unknowns than that): a one-level "
                            "hierarchy is a direct solve, not multigrid; use --amg sa" +
                            std::string(a.coarsening != 2 ? " or --coarsening 2" : ""));
    }
    what = std::string(mo.constant_null_space ? "constant null space (rhs projected, zero-mean solution), " : "") +
           "geometric, coarsening " + std::to_string(a.coarsening) + ", shape " + a.shape + ", grid " + a.grid +
           ", semi-coarsening " + a.semi_coarsening;
  } else if (boomer) {
    plan = std::make_unique<mg::MultigridPlan>(mg::MultigridPlan::boomeramg(std::move(A), mo));
    const mg::BoomerAmgOptions& bo = mo.boomeramg;
    what = std::string(mo.constant_null_space ? "constant null space (rhs projected, zero-mean solution), " : "") +
           "BoomerAMG (hypre), coarsening " + mg::to_string(bo.coarsening) + ", interpolation " +
           mg::to_string(bo.interpolation) + ", strength " + fmt_g(bo.strength_threshold) + ", P max " +
           std::to_string(bo.max_interp_elements) + "; cycle " +
           (hypre_cycle ? "hypre's (relaxation " + mg::to_string(bo.relaxation) + ", " + std::to_string(bo.sweeps) +
                              " sweep(s), " + std::to_string(bo.cycles) + " cycle(s))"
                        : std::string("ours"));
  } else {
    if (a.block_size < 1) throw InvalidArgument("--block-size must be >= 1, got " + std::to_string(a.block_size));
    {  // the sign of the diagonal says more than the size check below: name it first
      const std::vector<double> d = A.diagonal();
      for (std::size_t i = 0; i < N; ++i)
        if (d[i] < 0)
          throw InvalidArgument("the matrix has a negative diagonal entry (row " + std::to_string(i + 1) + ", 1-based: " + fmt_g(d[i]) +
                                "), so it is not symmetric positive definite (for a negative definite system A x = b, "
                                "solve -A x = -b)");
    }
    if (a.coarse_size < 1) throw InvalidArgument("--coarse-size must be >= 1, got " + std::to_string(a.coarse_size));
    if (a.strength_measure != "symmetric" && a.strength_measure != "classical")
      throw InvalidArgument("--strength-measure: expected symmetric or classical, got '" + a.strength_measure + "'");
    const mg::StrengthMeasure measure = mg::strength_measure_from_string(a.strength_measure);
    const double strength = a.o_strength->count() ? a.strength : mg::default_strength_threshold(measure);
    if (!(strength >= 0.0 && strength < 1.0))
      throw InvalidArgument("--strength must be in [0, 1), got " + fmt_g(strength));
    if (N <= static_cast<std::size_t>(a.coarse_size))
      throw InvalidArgument("--amg sa: the matrix has " + std::to_string(N) + " unknowns, not more than --coarse-size " +
                            std::to_string(a.coarse_size) +
                            ": the hierarchy would have one level (a direct solve, not multigrid); use --amg none "
                            "(a polynomial-smoother preconditioner) or a smaller --coarse-size");
    mo.amg.block_size = a.block_size;
    mo.amg.strength_threshold = strength;
    mo.amg.strength_measure = measure;
    mo.amg.coarse_size = static_cast<std::size_t>(a.coarse_size);
    const mg::NearNullSpace B = a.near_null.empty() ? mg::NearNullSpace{} : read_near_null(a.near_null, N);
    plan = std::make_unique<mg::MultigridPlan>(mg::MultigridPlan::smoothed_aggregation(std::move(A), mo, B));
    what = std::string(mo.constant_null_space ? "constant null space (rhs projected, zero-mean solution), " : "") +
           "smoothed aggregation, strength " + fmt_g(strength) + " (" + a.strength_measure + "), block size " + std::to_string(a.block_size) +
           ", near-null vectors " + (B.k ? std::to_string(B.k) + " (" + a.near_null + ")" : "constants");
  }
  if (mo.coarse_solver == mg::CoarseSolver::BoomerAmg)
    what += "; coarse solve: BoomerAMG (relaxation " + mg::to_string(mo.boomeramg.relaxation) + ", " +
            std::to_string(mo.boomeramg.cycles) + " cycle(s))";
  const double t_setup = seconds_since(t0);
  const std::size_t k = b.cols;  // right-hand sides: solved one after the other with the one set-up
  const std::vector<double> B = columns_of(b);
  std::vector<double> X(N * k, 0.0);
  std::vector<mg::SolveResult> res;
  std::vector<double> projected;  // ||b - A x0|| / ||b|| per column (--projection)
  const auto t1 = Clock::now();
  if (a.projection > 0) {  // the columns as a sequence, each from the projection onto the previous solutions
    krylov::ProjectionOptions po;
    po.max_vectors = static_cast<std::size_t>(a.projection);
    po.threads = a.threads;
    krylov::SolutionProjection proj(N, po);
    for (std::size_t c = 0; c < k; ++c) {
      const mg::ProjectedSolveResult r = plan->solve(B.data() + c * N, X.data() + c * N, proj);
      projected.push_back(r.projected_residual);
      res.push_back(r);
    }
  } else {
    res = plan->solve(B.data(), X.data(), k);
  }
  const double t_solve = seconds_since(t1);

  const mg::Hierarchy& h = plan->hierarchy();
  char buf[256];
  std::ostream& os = std::cout;
  os << "elliptica mg solve: matrix " << a.matrix << " (" << N << " x " << N << ", " << nnz << " nonzeros)\n";
  os << "hierarchy: " << what << "\n";
  if (hypre_cycle)
    os << "smoother: hypre's " << mg::to_string(mo.boomeramg.relaxation) << ", krylov " << kry << ", tol " << fmt_g(a.tol) << "\n";
  else
    os << "smoother: " << a.smoother << " (base " << a.base << "), order (" << mo.cycle.pre << "," << mo.cycle.post
       << "), krylov " << kry << ", tol " << fmt_g(a.tol) << "\n";
  std::snprintf(buf, sizeof buf, "levels: %zu, operator complexity: %.4f, grid complexity: %.4f\n", h.num_levels(),
                h.operator_complexity(), h.grid_complexity());
  os << buf;
  print_levels(os, *plan);
  if (k > 1) os << "right-hand sides: " << k << " (columns of " << a.rhs << ", one set-up; one value per column below)\n";
  if (a.projection > 0) {
    os << "projection: Fischer, up to " << a.projection
       << " previous solutions; residuals relative to ||b||, stopping at tol ||b||\n";
    os << "projected residual: " << per_column(k, [&](std::size_t c) { return fmt("%.3e", projected[c]); }) << "\n";
  }
  os << "converged: " << per_column(k, [&](std::size_t c) { return std::string(res[c].converged ? "yes" : "no"); }) << "\n";
  os << "iterations: " << per_column(k, [&](std::size_t c) { return std::to_string(res[c].iterations); }) << "\n";
  os << "fine-grid matvecs: " << per_column(k, [&](std::size_t c) { return std::to_string(res[c].matvecs); }) << "\n";
  os << "rho: " << per_column(k, [&](std::size_t c) { return fmt("%.6f", res[c].rho); }) << "\n";
  os << "final relative residual: "
     << per_column(k, [&](std::size_t c) { return fmt("%.6e", res[c].final_relative_residual); }) << "\n";
  std::snprintf(buf, sizeof buf, "time: read %.4g s, setup %.4g s, solve %.4g s\n", t_read, t_setup, t_solve);
  os << buf;
  std::vector<const krylov::Result*> rp;
  for (const auto& r : res) rp.push_back(&r);
  return write_solutions(a, rp, X, N, b.ndim, out_file);
}

int run_solve_matrix(const MgSolveArgs& a) {
  if (a.amg != "sa" && a.amg != "geometric" && a.amg != "boomeramg" && a.amg != "none")
    throw InvalidArgument("--amg: expected sa, boomeramg, geometric or none, got '" + a.amg + "'");
  const bool hierarchy = a.amg != "none";
  for (const CLI::Option* o : {a.o_problem, a.o_n, a.o_lx, a.o_ly, a.o_lz})
    if (o->count()) throw InvalidArgument(o->get_name() + " does not apply with --matrix (it belongs to --problem)");
  for (const CLI::Option* o : {a.o_coarsening, a.o_shape, a.o_grid, a.o_semi_coarsening})
    if (o->count() && a.amg != "geometric") throw InvalidArgument(o->get_name() + " applies only to --amg geometric");
  if (a.o_bc->count()) throw InvalidArgument("--bc does not apply with --matrix (it belongs to --problem)");
  if (a.amg == "geometric" && !a.o_shape->count())
    throw InvalidArgument("--amg geometric needs --shape NX,NY[,NZ] (unknowns per axis of the matrix's grid)");
  for (const CLI::Option* o : {a.o_near_null, a.o_block_size, a.o_strength, a.o_strength_measure, a.o_coarse_size})
    if (o->count() && a.amg != "sa") throw InvalidArgument(o->get_name() + " applies only to --amg sa");
  if (a.o_null_space->count() && a.amg == "none")
    throw InvalidArgument("--null-space applies only to --amg sa, geometric or boomeramg");
  if (a.o_boomeramg_cycle->count() && a.amg != "boomeramg")
    throw InvalidArgument("--boomeramg-cycle applies only to --amg boomeramg");
  if (a.o_coarse_solver->count() && a.amg != "sa" && a.amg != "geometric")
    throw InvalidArgument("--coarse-solver applies only to --amg sa or geometric (BoomerAMG's hierarchy has its own coarsest solve)");
  for (const CLI::Option* o : a.boomeramg.options)
    if (o->count() && a.amg != "boomeramg" && a.coarse_solver != "boomeramg")
      throw InvalidArgument(o->get_name() + " applies only to --amg boomeramg or --coarse-solver boomeramg");
  if (!a.o_rhs->count()) throw InvalidArgument("--matrix needs --rhs b.npy");
  if (!a.o_out->count()) throw InvalidArgument("--matrix needs --out x.npy");
  if (!(a.tol > 0 && a.tol < 1)) throw InvalidArgument("--tol must satisfy 0 < tol < 1, got " + fmt_g(a.tol));
  if (!(a.atol >= 0) || !std::isfinite(a.atol)) throw InvalidArgument("--atol must be finite and >= 0, got " + fmt_g(a.atol));
  if (a.max_iter < 1) throw InvalidArgument("--max-iter must be >= 1, got " + std::to_string(a.max_iter));
  check_threads(a.threads);
  if (a.restart < 1) throw InvalidArgument("--restart must be >= 1, got " + std::to_string(a.restart));
  if (a.o_projection->count()) {
    if (!hierarchy) throw InvalidArgument("--projection applies with a hierarchy (--amg sa, geometric or boomeramg), not --amg none");
    if (a.projection < 1 || a.projection > 1000)
      throw InvalidArgument("--projection: need 1 <= L <= 1000 previous solutions, got " + std::to_string(a.projection));
  }
  const mg::SmootherSolveOptions ssd{};
  int order = ssd.order;
  if (!a.order.empty() && !hierarchy) {
    const auto parts = split(a.order, ',');
    if (parts.size() != 1) throw InvalidArgument("--order: with --matrix give one smoother order K, got '" + a.order + "'");
    order = to_int(parts[0], "--order");
    if (order < 1 || order > 200) throw InvalidArgument("--order: need 1 <= K <= 200, got " + std::to_string(order));
  }
  mg::SmootherOptions so;
  so.kind = parse_kind(a.smoother);
  so.base = parse_base(a.base);
  so.subdomain = a.subdomain;
  so.overlap = a.overlap;
  so.threads = a.threads;
  const std::string kry = a.krylov.empty() ? mg::to_string(ssd.solver.method) : a.krylov;
  if (!hierarchy && kry != "gmres20" && kry != "fgmres20" && kry != "pcg" && kry != "gmres" && kry != "fgmres")
    throw InvalidArgument("--krylov with --matrix: expected pcg, gmres or fgmres (gmres20/fgmres20: restart 20), got '" + kry + "'");
  if (kry == "pcg" && so.base == mg::BaseSmoother::RAS)
    throw InvalidArgument("--krylov pcg needs a symmetric preconditioner; RAS is not (use --base jacobi|asm, or --krylov gmres)");
  if (a.out.empty()) throw InvalidArgument("--out: empty file name");
  for (const std::string* in : {&a.matrix, &a.rhs}) {
    std::error_code ec;
    if (fs::exists(a.out, ec) && fs::exists(*in, ec) && fs::equivalent(a.out, *in, ec))
      throw InvalidArgument("--out '" + a.out + "' is the same file as the input '" + *in + "'; refusing to overwrite it");
  }
  // The temporary output file is created now: an unwritable destination fails before the work.
  io::OutputFile out_file(a.out);

  const auto t0 = Clock::now();
  // Declared sizes first (banner and size line only), checked against the right-hand side before
  // the body is read and anything of the matrix's size is allocated.
  const io::MatrixMarketInfo mi = io::read_matrix_market_info(a.matrix);
  if (mi.rows != mi.cols)
    throw InvalidArgument(a.matrix + ": the matrix must be square, got " + std::to_string(mi.rows) + " x " + std::to_string(mi.cols));
  if (mi.rows == 0) throw InvalidArgument(a.matrix + ": the matrix is empty");
  // A nonsingular square matrix has an entry in every row: a coordinate file needs at least
  // `rows` entry lines, or ceil(rows / 2) in symmetric storage (an entry (i, j) stands for two
  // rows). Fewer means a size line inconsistent with the body (say 10^9 rows over a 3-line body):
  // a file error, reported before the right-hand side is compared with the declared rows.
  const std::size_t min_entries = mi.symmetric ? (mi.rows + 1) / 2 : mi.rows;
  if (!mi.array && mi.entries < min_entries)
    throw IOError(a.matrix + ": the size line declares " + std::to_string(mi.rows) + " rows but only " +
                  std::to_string(mi.entries) + " entries" + (mi.symmetric ? " in symmetric storage" : "") +
                  ", too few to give every row an entry (at least " + std::to_string(min_entries) +
                  " needed), so the file cannot hold a nonsingular square system: a wrong size line, an incomplete body "
                  "or a singular matrix");
  io::ReadInfo rinfo;
  Array2D b = io::read_array(a.rhs, &rinfo);
  if (rinfo.header_line > 0 && !a.quiet)
    std::fprintf(stderr, "elliptica: note: --rhs %s: line %zu taken as a header of column names and skipped\n", a.rhs.c_str(),
                 rinfo.header_line);
  if (b.rows == 0)
    throw IOError("--rhs " + a.rhs + ": no numbers in the file: it is neither a .npy file (those start with the magic "
                  "string \\x93NUMPY) nor a text table of numbers" +
                  (rinfo.header_line > 0 ? " (its only line was taken as a header of column names)" : std::string()));
  if (b.cols < 1 || b.rows != mi.rows)
    throw InvalidArgument("length mismatch: --rhs " + a.rhs + " has " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
                          " values but the matrix " + a.matrix + " has " + std::to_string(mi.rows) +
                          " rows (need a vector of that length, or an (n, k) array of k right-hand sides)");
  require_finite(b.view(), "rhs (" + a.rhs + ")");
  CsrMatrix A = io::read_matrix_market(a.matrix);
  if (A.rows != mi.rows || A.cols != mi.cols)
    throw IOError(a.matrix + ": the file changed while it was read");
  for (double v : A.val)
    if (!std::isfinite(v)) throw InvalidArgument(a.matrix + ": the matrix has a non-finite entry");
  for (std::size_t i = 0; i < A.rows; ++i)
    if (A.row_ptr[i + 1] == A.row_ptr[i])
      throw InvalidArgument(a.matrix + ": row " + std::to_string(i + 1) + " has no entries, so the matrix is singular");
  // PCG on an unsymmetric matrix diverges or breaks down: refuse before any set-up or iteration,
  // with every --amg (the check of smoother_solve and MultigridPlan, here with 1-based indices
  // and the CLI's remedy).
  if (kry == "pcg") {
    const SymmetryReport sym = check_symmetry(A);
    if (!sym.symmetric)
      throw InvalidArgument(a.matrix + ": " + describe_asymmetry(sym, 1) +
                            "; PCG needs a symmetric positive definite matrix: use --krylov gmres" +
                            (a.amg == "sa" ? " with --amg none, geometric or boomeramg (smoothed aggregation needs a symmetric "
                                             "matrix too)"
                                           : ""));
  }
  const double t_read = seconds_since(t0);
  if (hierarchy) return run_matrix_multigrid(a, std::move(A), b, out_file, t_read);

  mg::SmootherSolveOptions sso;
  sso.smoother = so;
  sso.order = order;
  sso.threads = a.threads;
  sso.solver.method = kry == "pcg" ? mg::SolverMethod::Cg
                      : kry.rfind("fgmres", 0) == 0 ? mg::SolverMethod::Fgmres
                                                    : mg::SolverMethod::Gmres;
  sso.solver.krylov.rtol = a.tol;
  sso.solver.krylov.atol = a.atol;
  sso.solver.krylov.max_iterations = a.max_iter;
  sso.solver.krylov.restart = kry == "gmres20" || kry == "fgmres20" ? 20 : a.restart;
  sso.solver.krylov.progress = progress_printer(a.quiet);
  const std::size_t k = b.cols, N = A.rows;  // one smoother_solve (with its set-up) per column
  const std::vector<double> B = columns_of(b);
  std::vector<double> X(N * k, 0.0);
  std::vector<mg::SmootherSolveResult> all;
  const auto t1 = Clock::now();
  for (std::size_t c = 0; c < k; ++c) all.push_back(mg::smoother_solve(A, B.data() + c * N, X.data() + c * N, sso));
  double setup_seconds = 0;
  for (const auto& r : all) setup_seconds += r.setup_seconds;
  const mg::SmootherSolveResult& res = all.front();
  const double t_setup = t_read + setup_seconds;  // reading + the smoother's set-up, as before
  const double t_solve = seconds_since(t1) - setup_seconds;

  char buf[256];
  std::ostream& os = std::cout;
  os << "elliptica mg solve: matrix " << a.matrix << " (" << A.rows << " x " << A.cols << ", " << A.nnz() << " nonzeros)\n";
  os << "preconditioner: " << a.smoother << " (base " << a.base << ") of order " << order << ", lambda_max(SA) "
     << fmt_g(res.lambda_max) << "; krylov " << kry << ", tol " << fmt_g(a.tol) << "\n";
  if (k > 1) os << "right-hand sides: " << k << " (columns of " << a.rhs << "; one value per column below)\n";
  os << "converged: " << per_column(k, [&](std::size_t c) { return std::string(all[c].converged ? "yes" : "no"); }) << "\n";
  os << "iterations: " << per_column(k, [&](std::size_t c) { return std::to_string(all[c].iterations); }) << "\n";
  os << "matvecs: " << per_column(k, [&](std::size_t c) { return std::to_string(all[c].matvecs); });
  if (k == 1) os << " (" << res.operator_applications << " by the Krylov method, " << order << " per preconditioner application)";
  os << "\n";
  os << "rho: " << per_column(k, [&](std::size_t c) { return fmt("%.6f", all[c].rho); }) << "\n";
  os << "final relative residual: "
     << per_column(k, [&](std::size_t c) { return fmt("%.6e", all[c].final_relative_residual); }) << "\n";
  std::snprintf(buf, sizeof buf, "time: setup %.4g s, solve %.4g s\n", t_setup, t_solve);
  os << buf;
  std::vector<const krylov::Result*> rp;
  for (const auto& r : all) rp.push_back(&r);
  return write_solutions(a, rp, X, N, b.ndim, out_file);
}

// ------------------------------------------------------------------------------------------
// mg study
// ------------------------------------------------------------------------------------------

int run_study(const MgStudyArgs& a) {
  mg::StudyOptions so;
  so.n = a.n;
  so.kmax = a.kmax;
  std::string lxs = a.lx;
  if (a.quick) {
    if (!a.o_n->count()) so.n = 32;
    if (!a.o_lx->count()) lxs = "1,64";
    if (!a.o_kmax->count()) so.kmax = 4;
  }
  so.solver_max_iter = a.solver_max_iter;
  so.gmres_max_iter = a.gmres_max_iter;
  so.threads = a.threads;
  so.lx.clear();
  for (const auto& t : split(lxs, ',')) {
    const double v = to_double(t, "--lx");
    if (!(std::isfinite(v) && v >= 1e-100 && v <= 1e100)) throw InvalidArgument("--lx: lengths must lie in [1e-100, 1e100], got '" + t + "'");
    so.lx.push_back(v);
  }
  so.coarsening.clear();
  for (const auto& t : split(a.coarsening, ',')) {
    const int c = to_int(t, "--coarsening");
    if (c != 2 && c != 8) throw InvalidArgument("--coarsening: values must be 2 or 8, got " + t);
    so.coarsening.push_back(c);
  }
  so.smoothers.clear();
  for (const auto& t : split(a.smoothers, ',')) {
    parse_kind(t);
    so.smoothers.push_back(t);
  }
  mg::validate_study_options(so);
  require_problem_memory(2, so.n, "the study's 2D Poisson problem (--n) with its hierarchy");
  // Output folder: create it (parents must exist or are created), fail before the work.
  create_output_folder(a.out);
  const std::string csv_path = (fs::path(a.out) / "study.csv").string();
  // study.csv's temporary is created now: an unwritable folder fails before the runs.
  io::OutputFile csv_file(csv_path);
  const std::string script = a.no_plots ? std::string() : find_plot_script("mg_study_plots.py", a.plot_script);

  const int per_case = static_cast<int>(so.smoothers.size()) * so.kmax * (so.kmax + 2);  // sum_k (2k+1) splits
  std::fprintf(stderr, "mg study: n = %d, Lx = %s, coarsening = %s, k = 1..%d, %zu smoothers: %d runs x 2 modes per case\n",
               so.n, lxs.c_str(), a.coarsening.c_str(), so.kmax, so.smoothers.size(), per_case);
  const mg::StudyResult R = mg::run_study(so, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  csv_file.write(mg::study_csv(R));
  csv_file.commit();
  mg::write_study_report(std::cout, R, csv_path);
  if (!a.no_plots) {
    const std::vector<std::string> args{csv_path, a.out};
    std::fprintf(stderr, "plotting: %s\n", plot_command_line(script, args).c_str());
    run_plot_script(script, args, "study.csv was written; rerun the script or use --no-plots");
    std::cout << "plots written to " << a.out << "\n";
  }
  return 0;
}

}  // namespace

CLI::App* add_mg_command(CLI::App& app, MgArgs& g) {
  g.cmd = app.add_subcommand("mg", "Geometric multigrid with polynomial (Chebyshev) smoothers; seed 003.");
  g.cmd->require_subcommand(1);
  auto& s = g.solve;
  CLI::App* sc = g.solve_cmd = g.cmd->add_subcommand(
      "solve", "Solve a finite-difference Poisson problem with a multigrid V-cycle (solver or Krylov preconditioner), or "
               "an SPD Matrix Market system with a polynomial-smoother preconditioned Krylov method.");
  sc->footer(
      "Problems: poisson2d/3d: -Laplacian (5/7-point) on [0,Lx]x[0,Ly](x[0,Lz]), zero Dirichlet boundary, n intervals per axis;\n"
      "  exact u = sin(3 pi x/Lx) sin(4 pi y/Ly) [* sin(2 pi z/Lz) in 3D] + g (fixed random g), b = A u, x0 = 0.\n"
      "  --grid cell / --bc neumann|periodic: the finite-volume (cell-centred) or periodic Laplacian, n cells (points) per axis,\n"
      "  exact u = prod cos/sin + g (zero mean when singular: solved with the constant null space on cell interpolation).\n"
      "Geometric hierarchies coarsen any grid size (n -> floor(n/c) per axis); a grid that cannot be coarsened at all is\n"
      "  refused (a one-level hierarchy is a direct solve, not multigrid). Stretched meshes: --semi-coarsening auto.\n"
      "--order M,N: pre/post smoothing orders (N = 0: one-sided cycle). pcg only for symmetric cycles (M == N, base jacobi|asm).\n"
      "--matrix A.mtx --rhs b.npy --out x.npy: a V-cycle over the --amg hierarchy (default sa) as a --krylov preconditioner\n"
      "  (default pcg); --amg none: the smoother of order --order K (default 4) alone as the preconditioner.\n"
      "  --rhs B.npy of shape (n, k): k right-hand sides with one set-up, --out (n, k); --projection L: the columns as\n"
      "  time steps, each from Fischer's projection onto up to L previous solutions (docs/multigrid.md).\n"
      "--amg boomeramg: hypre's BoomerAMG levels with our cycle (--boomeramg-cycle ours) or hypre's own (hypre); needs a\n"
      "  build with hypre (MPI is initialised on first use, one rank, MPI_COMM_SELF).\n"
      "Matvecs: a smoothing of order k counts k, each cycle m + n + 1, plus the solver's own products.\n"
      "rho = (||r_N||/||r_0||)^(1/N). Exit codes: 0 ok, 1 usage, 2 invalid input, 3 file error, 4 numerical, 5 not converged,\n"
      "6 out of resources.");
  s.o_problem = sc->add_option("--problem", s.problem, "poisson2d or poisson3d")->capture_default_str();
  s.o_n = sc->add_option("--n", s.n, "intervals (cells) per axis")->capture_default_str();
  s.o_lx = sc->add_option("--lx", s.lx, "domain length in x")->capture_default_str();
  s.o_ly = sc->add_option("--ly", s.ly, "domain length in y")->capture_default_str();
  s.o_lz = sc->add_option("--lz", s.lz, "domain length in z (3D)")->capture_default_str();
  sc->add_option("--smoother", s.smoother, "simple|cheb1|cheb1opt|cheb4|opt4")->capture_default_str();
  sc->add_option("--base", s.base, "jacobi|asm|ras")->capture_default_str();
  sc->add_option("--subdomain", s.subdomain, "ASM/RAS subdomain edge in grid points")->capture_default_str();
  sc->add_option("--overlap", s.overlap, "ASM/RAS overlap in grid points")->capture_default_str();
  const mg::MultigridOptions mgd{};
  sc->add_option("--order", s.order, "M,N pre/post orders (default " + std::to_string(mgd.cycle.pre) + "," +
                                         std::to_string(mgd.cycle.post) + "); with --matrix: K (default 4)");
  s.o_coarsening = sc->add_option("--coarsening", s.coarsening, "2 (n_c = n/2) or 8 (n_c = n/8)")->capture_default_str();
  sc->add_option("--krylov", s.krylov, "none|gmres|fgmres|pcg (gmres20/fgmres20: restart 20; default " +
                                           mg::to_string(mgd.solver.method) + "; pcg with --matrix)");
  sc->add_option("--restart", s.restart, "GMRES/FGMRES restart length")->capture_default_str();
  sc->add_option("--tol", s.tol, "relative residual reduction")->capture_default_str();
  sc->add_option("--atol", s.atol, "absolute residual norm: stop at ||r|| <= max(tol ||r0||, atol) (a warm start below it "
                                   "stops at once)")->capture_default_str();
  sc->add_option("--max-iter", s.max_iter, "iteration cap (cycles or Krylov iterations)")->capture_default_str();
  sc->add_option("--threads", s.threads, "OpenMP threads (0: all available)")->capture_default_str();
  s.o_matrix = sc->add_option("--matrix", s.matrix, "SPD matrix, Matrix Market (.mtx)");
  const mg::AmgOptions amgd{};
  s.o_amg = sc->add_option("--amg", s.amg,
                           "with --matrix: sa (smoothed aggregation), boomeramg (hypre's BoomerAMG; --boomeramg-*), geometric "
                           "(needs --shape) or none (no hierarchy)")
                ->capture_default_str();
  s.o_null_space = sc->add_option("--null-space", s.null_space,
                                  "constant: a singular pure-Neumann / periodic matrix (rhs projected, zero-mean solution; --amg sa, "
                                  "geometric, or boomeramg with our cycle)")
                       ->capture_default_str();
  s.o_shape = sc->add_option("--shape", s.shape, "NX,NY[,NZ]: unknowns per axis of the matrix's grid (--amg geometric)");
  s.o_grid = sc->add_option("--grid", s.grid,
                            "vertex|cell: unknowns at interior grid points or at cell centres (--amg geometric; with "
                            "--problem: the generated grid); periodic / pure-Neumann matrices: cell")
                 ->capture_default_str();
  s.o_semi_coarsening =
      sc->add_option("--semi-coarsening", s.semi_coarsening,
                     "off|auto|on: coarsen every axis, only the strongly coupled ones (coupling >= 0.25 x the largest; "
                     "stretched meshes), or only the strongest (geometric hierarchies)")
          ->capture_default_str();
  s.o_bc = sc->add_option("--bc", s.bc,
                          "dirichlet|neumann|periodic: boundary of the --problem (neumann needs --grid cell; neumann and "
                          "periodic are singular: solved with the constant null space)")
               ->capture_default_str();
  s.o_near_null = sc->add_option("--near-null", s.near_null,
                                 "n x k near-null-space vectors, .npy or text (--amg sa; default: constants per block unknown)");
  s.o_block_size = sc->add_option("--block-size", s.block_size, "unknowns per node, interleaved (--amg sa; 2/3 for elasticity)")
                       ->capture_default_str();
  s.o_strength = sc->add_option("--strength", s.strength,
                                "strength-of-connection threshold theta in [0,1) (--amg sa; default " +
                                    fmt_g(mg::default_strength_threshold(mg::StrengthMeasure::Symmetric)) + " symmetric, " +
                                    fmt_g(mg::default_strength_threshold(mg::StrengthMeasure::Classical)) + " classical)");
  s.o_strength_measure =
      sc->add_option("--strength-measure", s.strength_measure,
                     "symmetric: |a_ij| >= theta sqrt(|a_ii a_jj|), theta halved per level (Vanek et al.); classical: "
                     "|a_ij| >= theta max_k |a_ik| (Ruge-Stueben; rotated anisotropy) (--amg sa)")
          ->capture_default_str();
  s.o_coarse_size = sc->add_option("--coarse-size", s.coarse_size,
                                   "coarsen until at most this many unknowns, then factorise (--amg sa; default " +
                                       std::to_string(amgd.coarse_size) + ")");
  s.o_coarse_solver = sc->add_option("--coarse-solver", s.coarse_solver,
                                     "direct|boomeramg: the coarsest solve of --amg sa / geometric (boomeramg: BoomerAMG "
                                     "cycle(s), so that a larger --coarse-size stops coarsening early)")
                          ->capture_default_str();
  s.o_boomeramg_cycle = sc->add_option("--boomeramg-cycle", s.boomeramg_cycle,
                                       "ours|hypre (--amg boomeramg): our V-cycle (--smoother, --order) over hypre's levels, "
                                       "or hypre's own cycle (--boomeramg-relax)")
                            ->capture_default_str();
  add_boomeramg_flags(sc, s.boomeramg);
  s.o_rhs = sc->add_option("--rhs", s.rhs,
                           "right-hand side (.npy or text), with --matrix: a vector (n,), or an (n, k) array of k "
                           "right-hand sides solved one after the other with one set-up (--out gets the same shape; "
                           "the summary lists one value per column)");
  s.o_out = sc->add_option("--out", s.out, "solution file (.npy, else CSV), with --matrix; written atomically");
  s.o_projection = sc->add_option(
      "--projection", s.projection,
      "L: the columns of --rhs as a sequence (time steps), each started from Fischer's projection onto up to L previous "
      "solutions (e.g. " + std::to_string(krylov::ProjectionOptions{}.max_vectors) +
          "; --amg sa|geometric|boomeramg; stops at tol ||b||)");
  sc->add_flag("--quiet,-q", s.quiet, "no progress on stderr");

  auto& t = g.study;
  CLI::App* st = g.study_cmd = g.cmd->add_subcommand(
      "study", "The seed's section-3 study: every smoother kind and split (m,n), m+n=2k, as solver and GMRES(20) preconditioner.");
  st->footer(
      "Writes OUT/study.csv and PNG plots (scripts/mg_study_plots.py, matplotlib), prints the best configuration per case\n"
      "and PASS/DIFFERS for the seed's findings. --quick: n = 32, Lx = 1,64, kmax = 4 (unless given).\n"
      "Exit codes: 0 ok, 1 usage, 2 invalid input, 3 file error, 6 out of resources.");
  t.o_n = st->add_option("--n", t.n, "intervals per axis")->capture_default_str();
  t.o_lx = st->add_option("--lx", t.lx, "comma-separated Lx values (Ly = 1)")->capture_default_str();
  st->add_option("--coarsening", t.coarsening, "comma-separated coarsening factors (2, 8)")->capture_default_str();
  st->add_option("--smoothers", t.smoothers, "comma-separated smoother kinds")->capture_default_str();
  t.o_kmax = st->add_option("--kmax", t.kmax, "largest k (m + n = 2k)")->capture_default_str();
  st->add_option("--solver-max-iter", t.solver_max_iter, "cycle cap of the stationary solver")->capture_default_str();
  st->add_option("--gmres-max-iter", t.gmres_max_iter, "iteration cap of GMRES(20)")->capture_default_str();
  st->add_option("--out", t.out, "output folder (created)")->capture_default_str();
  st->add_flag("--quick", t.quick, "small study: n = 32, Lx = 1,64, kmax = 4");
  st->add_flag("--no-plots", t.no_plots, "skip the PNG plots");
  st->add_option("--plot-script", t.plot_script, "path of mg_study_plots.py (default: found next to the sources)");
  st->add_option("--threads", t.threads, "OpenMP threads (0: all available)")->capture_default_str();
  g.sem_cmd = add_mg_sem_command(*g.cmd, g.sem);
  g.sem_study_cmd = add_mg_sem_study_command(*g.cmd, g.sem_study);
  return g.cmd;
}

int run_mg(const MgArgs& g) {
  if (g.solve_cmd->parsed()) {
    if (g.solve.o_matrix->count()) return run_solve_matrix(g.solve);
    return run_solve_problem(g.solve);
  }
  if (g.study_cmd->parsed()) return run_study(g.study);
  if (g.sem_cmd->parsed()) return run_mg_sem(g.sem);
  if (g.sem_study_cmd && g.sem_study_cmd->parsed()) return run_mg_sem_study(g.sem_study);
  throw InvalidArgument("mg: no subcommand given (solve or study)");
}

}  // namespace elliptica::cli
