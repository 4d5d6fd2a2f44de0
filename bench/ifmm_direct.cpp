// IFMM as a direct solver (docs/ifmm.md): on the Chebyshev FMM operator of a sphere mesh, factorise
// with a small epsilon on the matvec FMM's own operators and report ||A M b - b|| / ||b|| for
// random b (A = the FMM operator, applied by the FMM code), the set-up time, the memory, and the
// GMRES iterations with M. One configuration per process:
//   ifmm_direct MESH_KIND REFINEMENTS K ORDER EPS [THREADS] [neumann|dirichlet]
//   MESH_KIND: icosphere (20 4^r elements) or octasphere (8 4^r: r = 5 gives 8192)
// Prints one line "key=value ..." (results in bench/results/ifmm_direct.md).
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/bem/ifmm_preconditioner.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/krylov/krylov.hpp"

using namespace elliptica;
using cplx = std::complex<double>;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s icosphere|octasphere REFINEMENTS K ORDER EPS [THREADS] [neumann|dirichlet]\n", argv[0]);
    return 1;
  }
  const std::string kind = argv[1];
  const int ref = std::atoi(argv[2]);
  const double k = std::atof(argv[3]);
  const int order = std::atoi(argv[4]);
  const double eps = std::atof(argv[5]);
  const int threads = argc > 6 ? std::atoi(argv[6]) : 0;
  const bool neumann = argc <= 7 || std::string(argv[7]) != "dirichlet";
  const bem::Mesh mesh = kind == "octasphere" ? bem::octasphere(ref) : bem::icosphere(ref);
  bem::FmmOperatorOptions fo;
  fo.bc = neumann ? bem::BoundaryCondition::Neumann : bem::BoundaryCondition::Dirichlet;
  fo.fmm.tolerance = 1e-6;
  fo.fmm.order = order;
  fo.fmm.compress_m2l = false;
  fo.threads = threads;
  const auto t0 = std::chrono::steady_clock::now();
  bem::HelmholtzBemFmmOperator op(mesh, cplx(k, 0), fo);
  // the IFMM on the same tree (at least 3 levels) and order: its operators are the matvec's
  const int depth = std::max(3, op.fmm().tree().leaf_level());
  if (depth != op.fmm().tree().leaf_level()) {
    fo.fmm.tree.depth = depth;
    op = bem::HelmholtzBemFmmOperator(mesh, cplx(k, 0), fo);
  }
  const double t_op = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bem::IfmmPreconditionerOptions io;
  io.ifmm.epsilon = eps;
  io.ifmm.threads = threads;
  io.order = order;
  io.depth = depth;
  bem::IfmmPreconditioner M(op, io);
  const auto& r = M.report();
  std::mt19937 g(1);
  std::normal_distribution<double> nd;
  const std::size_t n = op.size();
  double worst = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<cplx> b(n), x(n), Ax(n);
    for (auto& v : b) v = cplx(nd(g), nd(g));
    M.apply(b.data(), x.data());
    op.apply(x.data(), Ax.data());
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
      num += std::norm(Ax[i] - b[i]);
      den += std::norm(b[i]);
    }
    worst = std::max(worst, std::sqrt(num / den));
  }
  std::vector<cplx> b(n, 1.0), x(n, 0.0);
  krylov::Options go;
  go.rtol = 1e-10;
  go.restart = 100;
  go.max_iterations = 200;
  go.threads = threads;
  const auto res = krylov::gmres<cplx>(op, b.data(), x.data(), &M, go);
  std::printf("mesh=%s%d N=%zu k=%g bc=%s order=%d depth=%d eps=%g name=%s reuse=%d operator_s=%.2f ifmm_s=%.2f "
              "factor_MiB=%.1f peak_MiB=%.1f top=%zu residual_max=%.3e gmres_1e-10_iterations=%d\n",
              kind.c_str(), ref, n, k, neumann ? "neumann" : "dirichlet", order, depth, eps, r.name.c_str(),
              M.reuses_matvec_fmm() ? 1 : 0, t_op, r.seconds, double(r.bytes) / 1048576.0, double(r.peak_bytes) / 1048576.0,
              r.top_size, worst, res.iterations);
  return 0;
}
