// dealii_sem_peer: deal.II 9.4 peer of elliptica's SEM benchmarks (issue 14).
//   dealii_sem_peer operator --mesh box|kershaw --n N --p P --threads T [--quadrature gauss|gll|both]
//                            [--eps 0.3] [--seconds 0.3] [--repeats 3]
//     Laplacian vmult throughput (MatrixFree + FEEvaluation<3,p,p+1>, step-37 style cell loop,
//     homogeneous Dirichlet by AffineConstraints), one JSON line per quadrature:
//     {mode, mesh, p, n, dofs, dofs_total, threads, quadrature, seconds_per_apply, dofs_per_s, energy}
//     dofs = unconstrained DOFs (= (n p - 1)^3, elliptica's free nodes); energy = u^T A u for the
//     interpolant of u = sin(pi x) sin(pi y) sin(pi z) (-> 3 pi^2 / 8 = 3.7011: a check).
//   dealii_sem_peer solve --coarse 6 --refinements 1 --eps 0.3 --p 7 --threads T [--degree 5]
//                         [--rtol 1e-8] [--max-iterations 500] [--mg h|p] [--repeats 2]
//     CG preconditioned by deal.II's matrix-free geometric multigrid (MGTransferMatrixFree,
//     Chebyshev over the inverse diagonal, Chebyshev coarse solve) on the Kershaw mesh of coarse^3
//     cells refined globally, f = 3 pi^2 sin sin sin; one JSON line
//     {mode, p, n, eps, dofs, threads, setup_s, solve_s, iterations, relres, err_max}.
//     --mg p: p-multigrid instead (MGTransferGlobalCoarsening, polynomial transfer): levels
//     p, p - 2, ..., 1 on the 12^3 mesh, the same smoothers, Chebyshev coarse solve on p = 1 (pmg.cc).
// Exit codes: 0 ok, 2 usage, 4 numerical failure, 5 not converged.
#include <deal.II/base/mpi.h>
#include <deal.II/grid/grid_generator.h>
#include <deal.II/grid/grid_tools.h>

#include <algorithm>
#include <cmath>

#include <cstdio>
#include <exception>
#include <string>

#include "peer.h"

namespace peer {

dealii::Point<3> kershaw_map(double eps, const dealii::Point<3>& p) {
  auto right = [eps](double t) { return t <= 0.5 ? (2.0 - eps) * t : 1.0 + eps * (t - 1.0); };
  auto left = [&right](double t) { return 1.0 - right(1.0 - t); };
  auto step = [](double a, double b, double s) { return a + (b - a) * std::min(1.0, std::max(0.0, s)); };
  double s = 6.0 * p[0];
  const double r = std::round(s);
  if (std::abs(s - r) <= 1e-12) s = r;
  const int layer = int(std::floor(s));
  const double lambda = s - layer;
  auto F = [&](double t) {
    if (layer <= 0) return left(t);
    if (layer == 1 || layer == 4) return step(left(t), right(t), lambda);
    if (layer == 2) return step(right(t), left(t), lambda / 2.0);
    if (layer == 3) return step(right(t), left(t), (1.0 + lambda) / 2.0);
    return right(t);
  };
  return dealii::Point<3>(p[0], F(p[1]), F(p[2]));
}

void make_mesh(dealii::Triangulation<3>& tria, int n, double eps) {
  dealii::GridGenerator::subdivided_hyper_cube(tria, unsigned(n), 0.0, 1.0);
  if (eps > 0) dealii::GridTools::transform([eps](const dealii::Point<3>& p) { return kershaw_map(eps, p); }, tria);
}

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument("expected --key value, got '" + k + "'");
    kv_[k.substr(2)] = argv[i + 1];
  }
}
std::string Args::str(const std::string& k, const std::string& def) const {
  auto it = kv_.find(k);
  return it == kv_.end() ? def : it->second;
}
double Args::num(const std::string& k, double def) const {
  auto it = kv_.find(k);
  return it == kv_.end() ? def : std::stod(it->second);
}
int Args::integer(const std::string& k, int def) const {
  auto it = kv_.find(k);
  return it == kv_.end() ? def : std::stoi(it->second);
}

}  // namespace peer

int main(int argc, char** argv) {
  if (argc < 2 || (std::string(argv[1]) != "operator" && std::string(argv[1]) != "solve")) {
    std::fprintf(stderr, "usage: dealii_sem_peer operator|solve --key value ... (see main.cc)\n");
    return 2;
  }
  int threads = 1;
  try {
    threads = peer::Args(argc, argv, 2).integer("threads", 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dealii_sem_peer: %s\n", e.what());
    return 2;
  }
  if (threads < 1) {
    std::fprintf(stderr, "dealii_sem_peer: --threads must be >= 1\n");
    return 2;
  }
  // Sets MultithreadInfo::set_thread_limit(threads) before TBB starts (MatrixFree's task loops).
  dealii::Utilities::MPI::MPI_InitFinalize mpi(argc, argv, unsigned(threads));
  try {
    const peer::Args a(argc, argv, 2);
    if (std::string(argv[1]) == "operator") return peer::run_operator(a);
    const std::string mg = a.str("mg", "h");
    if (mg != "h" && mg != "p") throw std::invalid_argument("--mg must be h or p");
    return mg == "h" ? peer::run_solve(a) : peer::run_solve_pmg(a);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "dealii_sem_peer: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dealii_sem_peer: %s\n", e.what());
    return 4;
  }
}
