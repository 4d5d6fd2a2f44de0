/// @file mg_sem_cmd.cpp
/// `elliptica mg sem` (issue 14): the SEM Poisson problem solved with p-multigrid-preconditioned
/// Krylov methods (multigrid::SemPoissonPlan).
///
/// Problem: -Laplace(u) = f on the mesh, u = 0 on its boundary, f = 3 pi^2 sin(pi x) sin(pi y)
/// sin(pi z) at the node coordinates (the seed's section-6 problem), b = B f (GLL mass), x0 = 0.
/// On a mesh of the unit cube (box and Kershaw meshes map the unit cube onto itself) the exact
/// solution is u = sin(pi x) sin(pi y) sin(pi z); --manufactured reports the errors against it
/// at the nodes: max |u_h - u| and the GLL-mass-weighted L2 error sqrt(sum_g B_g (u_h - u)^2)
/// (the discrete L2 norm of the SEM, sum B_g = volume).
#include "mg_sem_cmd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/core/array.hpp"
#include "elliptica/core/constants.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/record.hpp"
#include "elliptica/multigrid/sem_io.hpp"

#ifndef ELLIPTICA_VERSION
#define ELLIPTICA_VERSION "unknown"
#endif
#ifndef ELLIPTICA_GIT_DESCRIBE
#define ELLIPTICA_GIT_DESCRIBE "unknown"
#endif

namespace elliptica::cli {
namespace {

namespace fs = std::filesystem;
namespace mg = elliptica::multigrid;

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string json_real(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::vector<int> int_list(const std::string& s, const std::string& flag) {
  if (trim(s).empty()) throw InvalidArgument(flag + ": empty list");
  std::vector<int> v;
  for (const std::string& t : split(s, ',')) v.push_back(to_int(t, flag));
  return v;
}

/// Every option into SemPoissonOptions, with messages that name the flags (before the mesh is read).
mg::SemPoissonOptions parse_options(const MgSemArgs& a) {
  mg::SemPoissonOptions o;
  if (a.order < 2 || a.order > mg::kMaxSemOrder)
    throw InvalidArgument("--order must be in [2, " + std::to_string(mg::kMaxSemOrder) + "], got " + std::to_string(a.order));
  o.order = a.order;
  if (!a.schedule.empty()) {
    o.schedule = int_list(a.schedule, "--schedule");
    try {
      mg::check_pmg_schedule(o.schedule);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--schedule: ") + e.what());
    }
    if (o.schedule.front() != a.order)
      throw InvalidArgument("--schedule " + a.schedule + " must start at the discretisation order --order " +
                            std::to_string(a.order) + " (the finest level)");
  }
  const std::vector<int> schedule = o.schedule.empty() ? mg::default_pmg_schedule(a.order) : o.schedule;
  try {
    o.polynomial = mg::polynomial_from_string(a.smoother);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--smoother: expected cheb1, cheb1opt, cheb4 or opt4, got '" + a.smoother + "'");
  }
  try {
    o.base = mg::sem_smoother_base_from_string(a.base);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--base: expected jacobi, asm, asm-weighted or ras, got '" + a.base + "'");
  }
  if (a.krylov != "pcg" && a.krylov != "fgmres" && a.krylov != "gmres")
    throw InvalidArgument("--krylov: expected pcg, fgmres or gmres, got '" + a.krylov + "'");
  o.method = a.krylov == "pcg" ? krylov::Method::Cg : krylov::method_from_string(a.krylov);
  if (a.pre < 0 || a.post < 0 || a.pre + a.post < 1)
    throw InvalidArgument("--pre / --post: smoothing orders must be >= 0 with pre + post >= 1, got " +
                          std::to_string(a.pre) + ", " + std::to_string(a.post));
  o.pre = a.pre;
  o.post = a.post;
  if (a.tune_iterations < 0 || a.tune_iterations > 1000)
    throw InvalidArgument("--tune-iterations must be in [0, 1000] (0: no tuning), got " + std::to_string(a.tune_iterations));
  o.tune_iterations = a.tune_iterations;
  if (!a.order_per_level.empty()) {
    const std::vector<int> k = int_list(a.order_per_level, "--order-per-level");
    const std::size_t smoothed = schedule.size() - 1;
    if (k.size() != 1 && k.size() != smoothed)
      throw InvalidArgument("--order-per-level: give one Chebyshev order for every smoothed level or one per level (" +
                            std::to_string(smoothed) + " for the schedule " + join(schedule) + "), got " +
                            std::to_string(k.size()));
    for (int v : k)
      if (v < 1 || v > 1000) throw InvalidArgument("--order-per-level: orders must be in [1, 1000], got " + std::to_string(v));
    o.level_orders = k.size() == 1 ? std::vector<int>(smoothed, k[0]) : k;
  }
  if (o.method == krylov::Method::Cg && a.pre != a.post)
    throw InvalidArgument("--krylov pcg needs a symmetric V-cycle: --pre " + std::to_string(a.pre) + " and --post " +
                          std::to_string(a.post) + " differ (use --krylov fgmres for one-sided cycles)");
  if (o.method == krylov::Method::Cg && o.base == mg::SemSmootherBase::RAS)
    throw InvalidArgument("--krylov pcg needs a symmetric V-cycle, but --base ras (restricted additive Schwarz) is not "
                          "symmetric: use --krylov fgmres, or --base asm / asm-weighted");
  if (!(a.rtol > 0 && a.rtol < 1)) throw InvalidArgument("--rtol must satisfy 0 < rtol < 1, got " + fmt_g(a.rtol));
  if (!(a.atol >= 0) || !std::isfinite(a.atol)) throw InvalidArgument("--atol must be finite and >= 0, got " + fmt_g(a.atol));
  if (a.max_iter < 1) throw InvalidArgument("--max-iter must be >= 1, got " + std::to_string(a.max_iter));
  if (a.restart < 1) throw InvalidArgument("--restart must be >= 1, got " + std::to_string(a.restart));
  if (!(a.lambda_safety > 0) || !std::isfinite(a.lambda_safety))
    throw InvalidArgument("--lambda-safety must be finite and > 0, got " + fmt_g(a.lambda_safety));
  if (a.lambda_iterations < 1 || a.lambda_iterations > 1000)
    throw InvalidArgument("--lambda-iterations must be in [1, 1000], got " + std::to_string(a.lambda_iterations));
  if (!(a.lmin_ratio > 0 && a.lmin_ratio < 1))
    throw InvalidArgument("--lmin-ratio must be in (0, 1), got " + fmt_g(a.lmin_ratio));
  if (a.threads < 0 || a.threads > 1024)
    throw InvalidArgument("--threads must be in [0,1024] (0: all available), got " + std::to_string(a.threads));
  o.rtol = a.rtol;
  o.atol = a.atol;
  o.max_iterations = a.max_iter;
  o.restart = a.restart;
  o.lambda_safety = a.lambda_safety;
  o.lambda_iterations = a.lambda_iterations;
  o.lmin_ratio = a.lmin_ratio;
  try {
    o.schwarz_precision = mg::schwarz_precision_from_string(a.schwarz_precision);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--schwarz-precision: expected fp64 or fp32, got '" + a.schwarz_precision + "'");
  }
  if (a.schwarz_element_max_order < 0 || a.schwarz_element_max_order > mg::kMaxSemOrder)
    throw InvalidArgument("--schwarz-element-max-order must be in [0, " + std::to_string(mg::kMaxSemOrder) +
                          "] (0: fast diagonalisation on every level), got " + std::to_string(a.schwarz_element_max_order));
  o.schwarz_element_max_order = a.schwarz_element_max_order;
  o.threads = a.threads;
  try {
    o.coarse = mg::pmg_coarse_solver_from_string(a.coarse_solver);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("--coarse-solver: expected boomeramg or direct, got '" + a.coarse_solver + "'");
  }
  if (o.coarse == mg::PmgCoarseSolver::BoomerAmg) {
    if (!mg::have_boomeramg())
      throw InvalidArgument("--coarse-solver boomeramg: elliptica was built without hypre (install libhypre-dev and "
                            "libopenmpi-dev and rebuild); use --coarse-solver direct");
    o.boomeramg = boomeramg_options_from_flags(a.boomeramg);
    if (o.method == krylov::Method::Cg && o.boomeramg.relaxation == mg::BoomerAmgRelaxation::HybridGsForward)
      throw InvalidArgument("--krylov pcg needs a symmetric coarse solve: --boomeramg-relax hybrid-gs is not (use a "
                            "symmetric relaxation, or --krylov fgmres)");
  } else {
    for (const CLI::Option* opt : a.boomeramg.options)
      if (opt->count()) throw InvalidArgument(opt->get_name() + " applies only to --coarse-solver boomeramg");
  }
  return o;
}

double exact_u(double x, double y, double z) {
  return std::sin(kPi * x) * std::sin(kPi * y) * std::sin(kPi * z);
}

}  // namespace

int run_mg_sem(const MgSemArgs& a) {
  if (a.mesh.empty()) throw InvalidArgument("--mesh: empty (expected box:NX,NY,NZ, kershaw:N,EPS or a Gmsh .msh file)");
  if (a.out.empty()) throw InvalidArgument("--out: empty folder name");
  const mg::SemPoissonOptions opt = parse_options(a);

  const auto t_read0 = Clock::now();
  mg::HexMesh mesh = mg::sem_mesh_from_spec(a.mesh);
  const double t_read = seconds_since(t_read0);
  const std::size_t ne = mesh.num_elements();

  RemoveIfEmptyOnFailure out_guard{a.out};
  out_guard.create();
  // One set: temporaries now (an unwritable folder fails before the set-up), renamed together
  // only when all are complete.
  const fs::path out(a.out);
  io::OutputSet outputs;
  io::OutputFile& f_sol = outputs.add((out / "solution.npy").string());
  io::OutputFile& f_nodes = outputs.add((out / "nodes.npy").string());
  io::OutputFile& f_vtu = outputs.add((out / "solution.vtu").string());
  io::OutputFile& f_summary = outputs.add((out / "summary.json").string());

  if (!a.quiet)
    std::fprintf(stderr, "mg sem: %zu elements, order %d: setting up the space, the p-multigrid hierarchy and the smoothers...\n",
                 ne, opt.order);
  const mg::SemPoissonPlan plan(std::move(mesh), opt);
  const mg::SemPoissonOptions& used = plan.options();  // pre / post after the order tuning
  const mg::SemSpace& space = plan.space();
  const std::size_t n = plan.size(), nn = space.num_nodes();
  const mg::Hierarchy& h = plan.hierarchy();
  std::vector<int> schedule, level_sizes;
  for (std::size_t j = 0; j < h.num_levels(); ++j) {
    const auto s = mg::pmg_level_space(h, j);
    schedule.push_back(s ? s->order() : 1);
    level_sizes.push_back(static_cast<int>(h.level(j).A->size()));
  }
  std::vector<int> per_level_pre, per_level_post;
  for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) {
    const int k = opt.level_orders.empty() ? -1 : opt.level_orders[j];
    per_level_pre.push_back(k < 0 ? used.pre : (used.pre > 0 ? k : 0));
    per_level_post.push_back(k < 0 ? used.post : (used.post > 0 ? k : 0));
  }
  if (!a.quiet) std::fprintf(stderr, "mg sem: set-up %.3f s; solving (%zu unknowns)...\n", plan.setup_seconds(), n);

  if (a.manufactured) {  // before the solve: the exact solution must vanish on the mesh's boundary
    const auto& c = space.coordinates();
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t g = n; g < nn; ++g) {
      const double u = std::abs(exact_u(c[3 * g], c[3 * g + 1], c[3 * g + 2]));
      if (u > worst) worst = u, at = g;
    }
    if (worst > 1e-10)
      throw InvalidArgument("--manufactured: u = sin(pi x) sin(pi y) sin(pi z) is not 0 on the boundary of this mesh (" +
                            fmt_g(worst) + " at the boundary node (" + fmt_g(c[3 * at]) + ", " + fmt_g(c[3 * at + 1]) +
                            ", " + fmt_g(c[3 * at + 2]) + ")): it is the exact solution only on a mesh of the unit cube");
  }
  const std::vector<double> b =
      plan.load_vector([](double x, double y, double z) { return 3 * kPi * kPi * exact_u(x, y, z); });
  std::vector<double> x(n, 0.0);
  const mg::SemSolveResult res = plan.solve(b.data(), x.data());

  // errors against u = sin sin sin (--manufactured): at all nodes, weighted by the GLL mass
  double err_max = 0, err_l2 = 0, u_l2 = 0;
  if (a.manufactured) {
    const std::vector<double> B = space.mass();
    const auto& c = space.coordinates();
    for (std::size_t g = 0; g < nn; ++g) {
      const double ue = exact_u(c[3 * g], c[3 * g + 1], c[3 * g + 2]);
      const double e = (g < n ? x[g] : 0.0) - ue;
      err_max = std::max(err_max, std::abs(e));
      err_l2 += B[g] * e * e;
      u_l2 += B[g] * ue * ue;
    }
    err_l2 = std::sqrt(err_l2);
    u_l2 = std::sqrt(u_l2);
  }

  std::ostream& os = std::cout;
  char buf[256];
  os << "elliptica mg sem: mesh " << a.mesh << ", " << ne << " elements, order " << opt.order << ", " << n
     << " unknowns (" << nn << " nodes)\n";
  os << "schedule: " << join(schedule) << " (level sizes " << join(level_sizes) << "), coarse solver "
     << mg::to_string(opt.coarse) << "\n";
  os << "smoother: " << a.smoother << " over " << mg::to_string(opt.base)
     << (opt.base == mg::SemSmootherBase::Jacobi
             ? std::string()
             : " (" + mg::to_string(opt.schwarz_precision) +
                   (opt.schwarz_element_max_order > 0
                        ? "; element local solves at orders <= " + std::to_string(opt.schwarz_element_max_order) + ", fdm above"
                        : std::string()) +
                   ")")
     << ", orders (pre/post per level) "
     << join(per_level_pre) << " / " << join(per_level_post) << ", krylov " << a.krylov << ", rtol " << fmt_g(opt.rtol)
     << "\n";
  if (!plan.tuning().empty()) {
    os << "chebyshev order tuning (order " << schedule[schedule.size() - 2] << " sub-problem, target "
       << opt.tune_iterations << " iterations):";
    double tsec = 0;
    for (const mg::SemOrderTrial& t : plan.tuning()) {
      os << " order " << t.order << " " << t.iterations << (t.converged ? "" : "+") << " it;";
      tsec += t.seconds;
    }
    std::snprintf(buf, sizeof buf, " %.3g s; chose order %d\n", tsec, used.pre);
    os << buf;
  }
  os << "converged: " << (res.converged ? "yes" : "no") << "\n";
  os << "iterations: " << res.iterations << "\n";
  std::snprintf(buf, sizeof buf, "final relative residual: %.3e\n", res.final_relative_residual);
  os << buf;
  std::snprintf(buf, sizeof buf, "time: mesh %.4g s, setup %.4g s, solve %.4g s\n", t_read, plan.setup_seconds(),
                res.solve_seconds);
  os << buf;
  if (a.manufactured) {
    std::snprintf(buf, sizeof buf, "error max: %.6e\nerror L2: %.6e (relative %.6e)\n", err_max, err_l2,
                  u_l2 > 0 ? err_l2 / u_l2 : 0.0);
    os << buf;
  }
  if (!res.converged)
    throw NotConverged("did not reach the relative residual " + fmt_g(opt.rtol) + " in " + std::to_string(opt.max_iterations) +
                       " iterations (reached " + fmt_g(res.final_relative_residual) + "); nothing written");

  // ---- outputs --------------------------------------------------------------------------------
  std::vector<double> u(nn, 0.0);
  std::copy(x.begin(), x.end(), u.begin());
  {
    Array2D U(nn, 1);
    U.values = u;
    U.ndim = 1;
    io::write_npy(f_sol, U);
    Array2D X(nn, 3);
    X.values = space.coordinates();
    io::write_npy(f_nodes, X);
  }
  mg::write_sem_vtu(f_vtu, space, u.data());
  {
    std::ostringstream js;
    js << "{\n  \"mesh\": " << json_quote(a.mesh) << ",\n  \"elements\": " << ne << ",\n  \"order\": " << opt.order
       << ",\n  \"unknowns\": " << n << ",\n  \"nodes\": " << nn << ",\n  \"schedule\": " << json_ints(schedule)
       << ",\n  \"level_sizes\": " << json_ints(level_sizes) << ",\n  \"smoother\": " << json_quote(a.smoother)
       << ",\n  \"base\": " << json_quote(mg::to_string(opt.base))
       << ",\n  \"schwarz_precision\": " << json_quote(mg::to_string(opt.schwarz_precision))
       << ",\n  \"schwarz_element_max_order\": " << opt.schwarz_element_max_order << ",\n  \"pre\": " << used.pre
       << ",\n  \"post\": " << used.post << ",\n  \"tune_iterations\": " << opt.tune_iterations << ",\n  \"tuning\": [";
    for (std::size_t i = 0; i < plan.tuning().size(); ++i) {
      const mg::SemOrderTrial& t = plan.tuning()[i];
      js << (i ? ", " : "") << "{\"order\": " << t.order << ", \"iterations\": " << t.iterations
         << ", \"converged\": " << (t.converged ? "true" : "false") << ", \"seconds\": " << json_real(t.seconds) << "}";
    }
    js << "],\n  \"requested_pre\": " << opt.pre << ",\n  \"requested_post\": " << opt.post << ",\n  \"order_per_level\": " << json_ints(opt.level_orders)
       << ",\n  \"level_pre\": " << json_ints(per_level_pre) << ",\n  \"level_post\": " << json_ints(per_level_post)
       << ",\n  \"krylov\": " << json_quote(a.krylov) << ",\n  \"rtol\": " << json_real(opt.rtol)
       << ",\n  \"atol\": " << json_real(opt.atol) << ",\n  \"max_iter\": " << opt.max_iterations
       << ",\n  \"coarse_solver\": " << json_quote(mg::to_string(opt.coarse));
    if (opt.coarse == mg::PmgCoarseSolver::BoomerAmg)
      js << ",\n  \"boomeramg\": {\"relax\": " << json_quote(mg::to_string(opt.boomeramg.relaxation))
         << ", \"coarsen\": " << json_quote(mg::to_string(opt.boomeramg.coarsening))
         << ", \"interp\": " << json_quote(mg::to_string(opt.boomeramg.interpolation))
         << ", \"strength\": " << json_real(opt.boomeramg.strength_threshold)
         << ", \"pmax\": " << opt.boomeramg.max_interp_elements << ", \"cycles\": " << opt.boomeramg.cycles << "}";
    js << ",\n  \"threads\": " << opt.threads << ",\n  \"threads_used\": " << resolve_threads(opt.threads)
       << ",\n  \"iterations\": " << res.iterations
       << ",\n  \"converged\": " << (res.converged ? "true" : "false")
       << ",\n  \"final_relative_residual\": " << json_real(res.final_relative_residual)
       << ",\n  \"residual_history\": [";
    for (std::size_t i = 0; i < res.residual_history.size(); ++i)
      js << (i ? ", " : "") << json_real(res.residual_history[i]);
    js << "],\n  \"mesh_seconds\": " << json_real(t_read) << ",\n  \"setup_seconds\": " << json_real(plan.setup_seconds())
       << ",\n  \"solve_seconds\": " << json_real(res.solve_seconds);
    if (a.manufactured)
      js << ",\n  \"error_max\": " << json_real(err_max) << ",\n  \"error_l2\": " << json_real(err_l2)
         << ",\n  \"error_l2_relative\": " << json_real(u_l2 > 0 ? err_l2 / u_l2 : 0.0);
    js << ",\n  \"rhs\": \"f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z)\""
       << ",\n  \"version\": " << json_quote(ELLIPTICA_VERSION) << ",\n  \"git\": " << json_quote(ELLIPTICA_GIT_DESCRIBE)
       << "\n}\n";
    f_summary.write(js.str());
  }
  outputs.commit();
  out_guard.done = true;
  os << "written: " << (out / "solution.npy").string() << ", nodes.npy, solution.vtu, summary.json\n";
  return 0;
}

CLI::App* add_mg_sem_command(CLI::App& mgcmd, MgSemArgs& s) {
  CLI::App* sc = mgcmd.add_subcommand(
      "sem", "Solve the spectral-element Poisson problem -Laplace(u) = f, u = 0 on the boundary, on a hexahedral mesh with "
             "p-multigrid-preconditioned PCG / FGMRES (seed 003, sections 4-6).");
  sc->footer(
      "Meshes: box:NX,NY,NZ (unit cube; box:NX,NY,NZ:LX,LY,LZ for other lengths), kershaw:N,EPS (the Kershaw map of the\n"
      "  unit cube, EPS in (0,1]; exact for N a multiple of 6), or a Gmsh .msh file (ASCII 2.2 / 4.1, order-1 hexahedra).\n"
      "Right-hand side f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z) at the nodes, b = B f (GLL mass), x0 = 0. --manufactured:\n"
      "  max and GLL-mass-weighted L2 errors against u = sin(pi x) sin(pi y) sin(pi z) (meshes of the unit cube only).\n"
      "Schedule: orders finest first, strictly decreasing, starting at --order and ending at 1 (default p, p-2, ..., 1).\n"
      "--order-per-level K or K1,K2,...: the Chebyshev order of every smoothed level, replacing --pre/--post there\n"
      "  (a level pre-smooths when --pre > 0 and post-smooths when --post > 0; --post 0: one-sided cycle).\n"
      "--tune-iterations T (default 30): with --pre == --post and no --order-per-level, the set-up raises the\n"
      "  Chebyshev order from --pre until the sub-problem of the last smoothed level (orders q, 1) needs at most T\n"
      "  iterations from a random right-hand side (at most order 12); --tune-iterations 0 keeps --pre/--post.\n"
      "--schwarz-element-max-order Q (default 0): the Schwarz levels of order <= Q solve their local problems exactly\n"
      "  on the elements' own nodes (dense inverses, (p+1)^6 values an element: exact on sheared elements, where the\n"
      "  fast diagonalisation's box is not; pays at low order or where the inverses fit in cache).\n"
      "pcg needs a symmetric cycle: --pre == --post, base jacobi, asm or asm-weighted, a symmetric BoomerAMG relaxation.\n"
      "Writes OUT/solution.npy (all nodes: free first, then boundary = 0), OUT/nodes.npy (coordinates, (nodes, 3)),\n"
      "  OUT/solution.vtu (VTK: each element as p^3 hexahedra, point data u) and OUT/summary.json, all or nothing.\n"
      "Exit codes: 0 ok, 1 usage, 2 invalid input (options, mesh spec, non-hex mesh, inverted element), 3 file error\n"
      "  (missing / malformed mesh file, unwritable --out), 4 numerical (hypre failing, breakdown), 5 not converged,\n"
      "  6 out of resources.");
  sc->add_option("--mesh", s.mesh, "box:NX,NY,NZ[:LX,LY,LZ] | kershaw:N,EPS | FILE.msh")->required();
  sc->add_option("--order", s.order, "polynomial order p in [2, " + std::to_string(mg::kMaxSemOrder) + "]")
      ->capture_default_str();
  sc->add_option("--schedule", s.schedule, "p-multigrid orders finest first, e.g. 7,5,3,1 (default p, p-2, ..., 1)");
  sc->add_option("--smoother", s.smoother, "Chebyshev kind: cheb1|cheb1opt|cheb4|opt4")->capture_default_str();
  sc->add_option("--base", s.base, "jacobi|asm|asm-weighted|ras: what the Chebyshev polynomial runs over")
      ->capture_default_str();
  sc->add_option("--order-per-level", s.order_per_level,
                 "K or K1,K2,...: Chebyshev order per smoothed level (finest first; replaces --pre/--post)");
  s.o_pre = sc->add_option("--pre", s.pre, "pre-smoothing Chebyshev order (>= 0)")->capture_default_str();
  s.o_post = sc->add_option("--post", s.post, "post-smoothing Chebyshev order (>= 0; 0: one-sided cycle)")
                 ->capture_default_str();
  sc->add_option("--tune-iterations", s.tune_iterations,
                 "0: keep --pre/--post; else raise them at set-up until the last smoothed level's sub-problem "
                 "needs at most this many iterations (in [1, 1000])")
      ->capture_default_str();
  sc->add_option("--krylov", s.krylov, "pcg|fgmres|gmres (pcg needs a symmetric cycle)")->capture_default_str();
  sc->add_option("--rtol,--tol", s.rtol, "stop at ||b - A x|| <= rtol ||b||")->capture_default_str();
  sc->add_option("--atol", s.atol, "... or at ||b - A x|| <= atol")->capture_default_str();
  sc->add_option("--max-iter", s.max_iter, "Krylov iteration cap")->capture_default_str();
  sc->add_option("--restart", s.restart, "(F)GMRES restart length")->capture_default_str();
  sc->add_option("--lambda-safety", s.lambda_safety, "lambda_max = this x the Lanczos estimate of rho(M^-1 A)")
      ->capture_default_str();
  sc->add_option("--lambda-iterations", s.lambda_iterations, "Lanczos steps of that estimate")->capture_default_str();
  sc->add_option("--lmin-ratio", s.lmin_ratio, "cheb1: lambda_min / lambda_max, in (0, 1)")->capture_default_str();
  sc->add_option("--schwarz-precision", s.schwarz_precision,
                 "fp64|fp32: arithmetic of the Schwarz local solves (--base asm|asm-weighted|ras)")
      ->capture_default_str();
  sc->add_option("--schwarz-element-max-order", s.schwarz_element_max_order,
                 "Schwarz bases: levels of order <= this solve the local problems exactly on the elements' own "
                 "nodes (dense, exact on sheared elements), the others by fast diagonalisation; 0: fdm everywhere")
      ->capture_default_str();
  sc->add_option("--coarse-solver", s.coarse_solver,
                 "boomeramg|direct: the order-1 solve (one BoomerAMG V-cycle, or sparse LDL^T)")
      ->capture_default_str();
  add_boomeramg_flags(sc, s.boomeramg,
                      {"relaxation sweeps per level and leg", "BoomerAMG V-cycles per coarse solve", /*with_tol=*/false});
  sc->add_option("--threads", s.threads, "OpenMP threads (0: all available)")->capture_default_str();
  sc->add_option("--out", s.out, "output folder (created)")->required();
  sc->add_flag("--manufactured", s.manufactured, "report the errors against u = sin(pi x) sin(pi y) sin(pi z)");
  sc->add_flag("--quiet,-q", s.quiet, "no progress on stderr");
  return sc;
}

}  // namespace elliptica::cli
