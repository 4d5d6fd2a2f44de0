/// @file sem_solve.cpp
/// One spectral-element Poisson solve to a relative residual (issue 14, "Performance": our SEM
/// p-multigrid against PETSc GAMG / hypre BoomerAMG on the assembled matrix;
/// bench/sem/solve_peers.py is the driver).
///
/// Problem: -Laplace(u) = f on the mesh (--mesh box:N | box:NX,NY,NZ | kershaw:N,EPS: the unit
/// cube, N^3 elements; Kershaw's map with eps: its 6 layers align with the elements when N is a
/// multiple of 6), homogeneous Dirichlet on the
/// whole boundary, order p (--order), f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), b = (B f) on the
/// free nodes (SemPoissonPlan::load_vector: GLL mass times f at the nodes), zero initial guess.
///
/// Solve (default): SemPoissonPlan with the options below (SemPoissonOptions's defaults where an
/// option is not given), --solves solves from zero on the one plan; prints ONE JSON line:
///   {"mesh", "order", "dofs", "elements", "setup_s", "solve_s" (best of the solves), "solve_s_all",
///    "iterations", "relres" (||b - A x|| / ||b|| recomputed with the matrix-free operator),
///    "converged", "history" (residuals relative to ||b||), "options" ..., "peak_rss_mib"}
/// "setup_s" does not include MPI's start (reported as "mpi_init_s": a tiny BoomerAMG set-up
/// before the plan, as the PETSc peers start MPI before their timers).
/// Options: --schedule 7,5,3,1  --smoother opt4|cheb4|cheb1|cheb1opt  --base jacobi|asm|asm-weighted|ras
///   --pre 2 --post 2 | --level-orders 3,3,3  --krylov cg|fgmres|gmres  --coarse-solver boomeramg|direct
///   --threads 1  --rtol 1e-8  --max-iterations 500  --lambda-safety 1.1  --lambda-iterations 10
///   --lmin-ratio 0.1  --tune-iterations 30 (0: --pre/--post as given)  --boomeramg-cycles 1
///   --boomeramg-threshold 0.25  --solves 1
///
/// --write-petsc PREFIX: also writes, in PETSc's binary format (big-endian; MatLoad / VecLoad),
///   PREFIX.A    the assembled matrix SemLaplacian::assemble() on the free nodes (AIJ, sorted columns)
///   PREFIX.b    the right-hand side b (the same vector as the solve's)
///   PREFIX.x, PREFIX.y, PREFIX.z   the free nodes' coordinates (for a peer that wants them)
/// and adds to the JSON: "assemble_s" (wall time of assemble(), sequential), "nnz", "matrix_mib"
/// (CSR bytes: 12 per entry + 8 per row), "max_row_nnz", "assembled_vs_matrix_free" (relative
/// difference ||A_assembled v - A v|| / ||A v|| on a smooth vector: a check that the peers get the
/// same operator). --no-solve: only that (no plan is built).
///
/// --coarse-operators galerkin (an experiment; default "rediscretised", SemPoissonPlan's): the same
///   p-multigrid, but every level below the finest gets the Galerkin operator A_{j+1} = P_j^T A_j P_j
///   (A_0 = SemLaplacian::assemble(), assembled CSR levels) instead of the SEM operator of its own
///   order and GLL quadrature, and the order-1 level the sparse direct solve; the smoothers (Jacobi
///   from the Galerkin diagonal, or the levels' SemSchwarz of the rediscretised operators) and the
///   Krylov method as in the plan. It measures how much the rediscretised coarse operators cost
///   in iterations on deformed meshes. "setup_s" then includes the assembly.
/// Exit codes (core/error.hpp): 0 done (also when not converged: "converged": false), 2 bad options,
/// 3 I/O, 4 numerical, 6 resources.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "../bench_common.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/vcycle.hpp"
#include "elliptica/multigrid/pmg.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/smoother.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;
using elliptica::bench::now_s;

namespace {

/// box:N, box:NX,NY,NZ, kershaw:N,EPS.
HexMesh make_mesh(const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) throw InvalidArgument("--mesh must be box:N, box:NX,NY,NZ or kershaw:N,EPS, got '" + spec + "'");
  const std::string kind = spec.substr(0, colon);
  const std::vector<std::string> f = text::split(spec.substr(colon + 1), ',');
  if (kind == "box" && f.size() == 1) {
    const int n = text::to_int(f[0], "--mesh box:N");
    return box_mesh(n, n, n);
  }
  if (kind == "box" && f.size() == 3)
    return box_mesh(text::to_int(f[0], "--mesh box NX"), text::to_int(f[1], "--mesh box NY"), text::to_int(f[2], "--mesh box NZ"));
  if (kind == "kershaw" && f.size() == 2)
    return kershaw_mesh(text::to_int(f[0], "--mesh kershaw N"), text::to_double(f[1], "--mesh kershaw EPS"));
  throw InvalidArgument("--mesh must be box:N, box:NX,NY,NZ or kershaw:N,EPS, got '" + spec + "'");
}

void put_be32(std::ofstream& o, std::int32_t v) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  if constexpr (std::endian::native == std::endian::little) u = __builtin_bswap32(u);
  o.write(reinterpret_cast<const char*>(&u), 4);
}

void put_be64(std::ofstream& o, const double* v, std::size_t n) {
  std::vector<std::uint64_t> buf(std::min<std::size_t>(n, 1 << 16));
  for (std::size_t i = 0; i < n; i += buf.size()) {
    const std::size_t m = std::min(buf.size(), n - i);
    for (std::size_t k = 0; k < m; ++k) {
      std::uint64_t u = std::bit_cast<std::uint64_t>(v[i + k]);
      if constexpr (std::endian::native == std::endian::little) u = __builtin_bswap64(u);
      buf[k] = u;
    }
    o.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(m * 8));
  }
}

/// Files are written as PATH.part and renamed to PATH when complete (nothing half-written).
std::ofstream open_out(const std::string& path) {
  std::ofstream o(path + ".part", std::ios::binary | std::ios::trunc);
  if (!o) throw IOError("cannot write '" + path + "'");
  return o;
}

void close_out(std::ofstream& o, const std::string& path) {
  o.close();
  if (!o) {
    std::remove((path + ".part").c_str());
    throw IOError("writing '" + path + "' failed");
  }
  if (std::rename((path + ".part").c_str(), path.c_str()) != 0) throw IOError("cannot rename '" + path + ".part' to '" + path + "'");
}

/// PETSc binary Vec: VEC_FILE_CLASSID 1211214, n, n doubles (all big-endian).
void write_petsc_vec(const std::string& path, const std::vector<double>& v) {
  std::ofstream o = open_out(path);
  put_be32(o, 1211214);
  put_be32(o, std::int32_t(v.size()));
  put_be64(o, v.data(), v.size());
  close_out(o, path);
}

/// PETSc binary Mat (AIJ): MAT_FILE_CLASSID 1211216, rows, cols, nnz, row lengths, column
/// indices, values (all big-endian, 32-bit indices).
void write_petsc_mat(const std::string& path, const CsrMatrix& A) {
  if (A.nnz() > std::size_t(INT32_MAX)) throw ResourceError("the matrix has more than 2^31 - 1 entries (PETSc binary, 32-bit)");
  std::ofstream o = open_out(path);
  put_be32(o, 1211216);
  put_be32(o, std::int32_t(A.rows));
  put_be32(o, std::int32_t(A.cols));
  put_be32(o, std::int32_t(A.nnz()));
  for (std::size_t i = 0; i < A.rows; ++i) put_be32(o, std::int32_t(A.row_ptr[i + 1] - A.row_ptr[i]));
  {
    std::vector<std::uint32_t> buf;
    buf.reserve(A.col.size());
    for (std::int32_t c : A.col) {
      std::uint32_t u = std::bit_cast<std::uint32_t>(c);
      if constexpr (std::endian::native == std::endian::little) u = __builtin_bswap32(u);
      buf.push_back(u);
    }
    o.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size() * 4));
  }
  put_be64(o, A.val.data(), A.val.size());
  close_out(o, path);
}

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_num(v[i]);
  return s + "]";
}

std::string json_ints(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bench::Args args(argc, argv,
                     {"mesh", "order", "schedule", "smoother", "base", "pre", "post", "level-orders", "krylov",
                      "coarse-solver", "threads", "rtol", "max-iterations", "lambda-safety", "lambda-iterations",
                      "lmin-ratio", "tune-iterations", "boomeramg-cycles", "boomeramg-threshold", "solves", "write-petsc",
                      "coarse-operators"},
                     {"no-solve"});
    const std::string smoother = args.str("smoother", "opt4");
    const std::string mesh_spec = args.str("mesh", "kershaw:6,0.3");
    SemPoissonOptions o;
    o.order = int(args.integer("order", o.order));
    if (args.has("schedule")) o.schedule = args.int_list("schedule", "");
    o.polynomial = polynomial_from_string(smoother);
    if (args.has("base")) o.base = sem_smoother_base_from_string(args.str("base", ""));
    o.pre = int(args.integer("pre", o.pre));
    o.post = int(args.integer("post", o.post));
    if (args.has("level-orders")) o.level_orders = args.int_list("level-orders", "");
    if (args.has("krylov")) o.method = krylov::method_from_string(args.str("krylov", ""));
    if (args.has("coarse-solver")) o.coarse = pmg_coarse_solver_from_string(args.str("coarse-solver", ""));
    o.threads = int(args.integer("threads", 1));
    o.rtol = args.num("rtol", o.rtol);
    o.max_iterations = int(args.integer("max-iterations", o.max_iterations));
    o.lambda_safety = args.num("lambda-safety", o.lambda_safety);
    o.lambda_iterations = int(args.integer("lambda-iterations", o.lambda_iterations));
    o.lmin_ratio = args.num("lmin-ratio", o.lmin_ratio);
    o.tune_iterations = int(args.integer("tune-iterations", o.tune_iterations));
    o.boomeramg.cycles = int(args.integer("boomeramg-cycles", o.boomeramg.cycles));
    o.boomeramg.strength_threshold = args.num("boomeramg-threshold", o.boomeramg.strength_threshold);
    const int solves = int(args.integer("solves", 1));
    if (solves < 1) throw InvalidArgument("--solves must be >= 1");
    const bool do_solve = !args.has("no-solve");
    const std::string prefix = args.str("write-petsc", "");
    const std::string coarse_ops = args.str("coarse-operators", "rediscretised");
    if (coarse_ops != "rediscretised" && coarse_ops != "galerkin")
      throw InvalidArgument("--coarse-operators must be rediscretised or galerkin, got '" + coarse_ops + "'");
    if (!do_solve && prefix.empty()) throw InvalidArgument("--no-solve without --write-petsc does nothing");

    const HexMesh mesh = make_mesh(mesh_spec);
    const double pi = std::numbers::pi;
    auto f = [pi](double x, double y, double z) { return 3 * pi * pi * std::sin(pi * x) * std::sin(pi * y) * std::sin(pi * z); };

    std::ostringstream js;
    js << "{\"mesh\":\"" << mesh_spec << "\",\"order\":" << o.order << ",\"elements\":" << mesh.num_elements();

    // The first BoomerAMG object of a process initialises MPI (boomeramg.hpp; ~0.3-0.4 s here): done
    // before the timed set-up, as petsc4py's peers initialise PETSc / MPI before theirs.
    double mpi_init_s = 0;
    if (do_solve && o.coarse == PmgCoarseSolver::BoomerAmg && have_boomeramg()) {
      std::vector<std::int64_t> r, c;
      std::vector<double> v;
      for (int i = 0; i < 64; ++i) {
        r.push_back(i), c.push_back(i), v.push_back(2.0);
        if (i > 0) r.push_back(i), c.push_back(i - 1), v.push_back(-1.0);
        if (i < 63) r.push_back(i), c.push_back(i + 1), v.push_back(-1.0);
      }
      const double t0 = now_s();
      BoomerAmgPreconditioner warm(CsrMatrix::from_triplets(64, 64, r, c, v));
      mpi_init_s = now_s() - t0;
    }
    js << ",\"mpi_init_s\":" << json_num(mpi_init_s);

    std::vector<double> b;
    std::shared_ptr<const SemSpace> space;
    std::unique_ptr<SemPoissonPlan> plan;
    if (do_solve && coarse_ops == "galerkin") {
      const double t0 = now_s();
      auto fine = std::make_shared<const SemSpace>(mesh, o.order, o.threads);
      PMultigridOptions po;
      po.schedule = o.schedule;
      po.coarse = PmgCoarseSolver::Direct;
      po.threads = o.threads;
      if (o.base == SemSmootherBase::ASM) po.schwarz = SchwarzKind::ASM;
      if (o.base == SemSmootherBase::ASMWeighted) po.schwarz = SchwarzKind::ASMWeighted;
      if (o.base == SemSmootherBase::RAS) po.schwarz = SchwarzKind::RAS;
      const Hierarchy h = pmg_hierarchy(fine, po);
      std::vector<Level> lv;
      CsrMatrix Aj = SemLaplacian(fine, o.threads).assemble();
      std::vector<int> sched;
      for (std::size_t j = 0; j < h.num_levels(); ++j) {
        Level l = h.level(j);
        auto sp = pmg_level_space(h, j);
        sched.push_back(sp ? sp->order() : 1);
        if (j > 0) {
          // The level's transfer is matrix-free (PmgTransfer); the Galerkin product needs P as a matrix.
          const auto coarse_space = sp ? sp : std::make_shared<const SemSpace>(mesh, 1, o.threads);
          Aj = galerkin(Aj, pmg_prolongation(*coarse_space, *pmg_level_space(h, j - 1), o.threads));
          Level m = Level::from_matrix(Aj, GridShape{}, o.threads);
          l.A = m.A;
          l.diagonal = m.diagonal;
          l.matrix = m.matrix;
          l.jacobi_lambda = 0;
        }
        lv.push_back(std::move(l));
      }
      auto coarse = std::make_shared<const SparseDirect>(*lv.back().matrix);
      VCycle cycle(Hierarchy(std::move(lv), coarse), sem_vcycle_options(o));
      const SemLaplacian A(fine, o.threads);
      const double setup_s = now_s() - t0;
      const std::vector<double> B = fine->mass();
      const std::vector<double>& X = fine->coordinates();
      b.resize(fine->num_free());
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = B[i] * f(X[3 * i], X[3 * i + 1], X[3 * i + 2]);
      krylov::Options k;
      k.rtol = o.rtol;
      k.max_iterations = o.max_iterations;
      k.restart = o.restart;
      k.threads = o.threads;
      std::vector<double> x(b.size(), 0.0), r(b.size());
      const double t1 = now_s();
      const krylov::Result res = krylov::make_solver<double>(o.method, A, &cycle, k)->solve(b.data(), x.data());
      const double solve_s = now_s() - t1;
      A.apply(x.data(), r.data());
      for (std::size_t i = 0; i < r.size(); ++i) r[i] = b[i] - r[i];
      js << ",\"coarse_operators\":\"galerkin\",\"dofs\":" << b.size() << ",\"setup_s\":" << json_num(setup_s)
         << ",\"solve_s\":" << json_num(solve_s) << ",\"iterations\":" << res.iterations
         << ",\"relres\":" << json_num(norm2(r) / norm2(b)) << ",\"converged\":" << (res.converged ? "true" : "false")
         << ",\"schedule\":" << json_ints(sched) << ",\"smoother\":\"" << smoother << "\",\"base\":\""
         << to_string(o.base) << "\",\"krylov\":\"" << krylov::to_string(o.method)
         << "\",\"history\":" << json_list(res.residual_history) << ",\"peak_rss_mib\":" << json_num(bench::peak_rss_mib()) << "}";
      std::printf("%s\n", js.str().c_str());
      return 0;
    }
    if (do_solve) {
      plan = std::make_unique<SemPoissonPlan>(mesh, o);
      b = plan->load_vector(f);
      const std::size_t n = plan->size();
      std::vector<double> x(n), best_x;
      double best = 1e300;
      std::vector<double> all;
      SemSolveResult res;
      for (int s = 0; s < solves; ++s) {
        std::fill(x.begin(), x.end(), 0.0);
        res = plan->solve(b.data(), x.data());
        all.push_back(res.solve_seconds);
        best = std::min(best, res.solve_seconds);
      }
      std::vector<double> r(n);
      plan->op().apply(x.data(), r.data());
      for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
      const double relres = norm2(r) / norm2(b);
      std::vector<int> sched;
      for (std::size_t j = 0; j < plan->hierarchy().num_levels(); ++j) {
        auto sp = pmg_level_space(plan->hierarchy(), j);
        sched.push_back(sp ? sp->order() : 1);
      }
      js << ",\"dofs\":" << n << ",\"setup_s\":" << json_num(plan->setup_seconds()) << ",\"solve_s\":" << json_num(best)
         << ",\"solve_s_all\":" << json_list(all) << ",\"iterations\":" << res.iterations
         << ",\"relres\":" << json_num(relres) << ",\"converged\":" << (res.converged ? "true" : "false")
         << ",\"schedule\":" << json_ints(sched) << ",\"smoother\":\"" << smoother
         << "\",\"base\":\"" << to_string(o.base) << "\",\"pre\":" << plan->options().pre << ",\"post\":" << plan->options().post
         << ",\"level_orders\":" << json_ints(o.level_orders) << ",\"krylov\":\"" << krylov::to_string(o.method)
         << "\",\"coarse\":\"" << to_string(o.coarse) << "\",\"threads\":" << o.threads
         << ",\"rtol\":" << json_num(o.rtol) << ",\"history\":" << json_list(res.residual_history);
      space = plan->op().space_ptr();
    } else {
      space = std::make_shared<const SemSpace>(mesh, o.order, o.threads);
      // b as SemPoissonPlan::load_vector: (B f) on the free nodes
      const std::vector<double> B = space->mass();
      const std::vector<double>& X = space->coordinates();
      b.resize(space->num_free());
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = B[i] * f(X[3 * i], X[3 * i + 1], X[3 * i + 2]);
      js << ",\"dofs\":" << space->num_free();
    }

    if (!prefix.empty()) {
      SemLaplacian L(space, o.threads);
      const double t0 = now_s();
      const CsrMatrix A = L.assemble();
      const double assemble_s = now_s() - t0;
      std::int64_t max_row = 0;
      for (std::size_t i = 0; i < A.rows; ++i) max_row = std::max(max_row, A.row_ptr[i + 1] - A.row_ptr[i]);
      // the peers' operator is ours: compare on a smooth vector
      const std::size_t n = A.rows;
      std::vector<double> v(n), y1(n), y2(n);
      const std::vector<double>& X = space->coordinates();
      for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(3 * X[3 * i]) * std::cos(2 * X[3 * i + 1]) + X[3 * i + 2];
      L.apply(v.data(), y1.data());
      A.multiply(v.data(), y2.data(), o.threads);
      for (std::size_t i = 0; i < n; ++i) y2[i] -= y1[i];
      write_petsc_mat(prefix + ".A", A);
      write_petsc_vec(prefix + ".b", b);
      const char* axis[3] = {".x", ".y", ".z"};
      for (int d = 0; d < 3; ++d) {
        std::vector<double> c(n);
        for (std::size_t i = 0; i < n; ++i) c[i] = X[3 * i + d];
        write_petsc_vec(prefix + axis[d], c);
      }
      js << ",\"assemble_s\":" << json_num(assemble_s) << ",\"nnz\":" << A.nnz() << ",\"max_row_nnz\":" << max_row
         << ",\"matrix_mib\":" << json_num((12.0 * double(A.nnz()) + 8.0 * double(n + 1)) / 1048576.0)
         << ",\"assembled_vs_matrix_free\":" << json_num(norm2(y2) / norm2(y1));
    }
    js << ",\"peak_rss_mib\":" << json_num(bench::peak_rss_mib()) << "}";
    std::printf("%s\n", js.str().c_str());
    return 0;
  } catch (const Error& e) {  // elliptica's categories: 2 input, 3 I/O, 4 numerical, 6 resources
    std::fprintf(stderr, "sem_solve: %s\n", e.what());
    return exit_code(e.category());
  } catch (const std::invalid_argument& e) {  // bench::Args
    std::fprintf(stderr, "sem_solve: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sem_solve: out of memory\n");
    return 6;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sem_solve: %s\n", e.what());
    return 4;
  }
}
