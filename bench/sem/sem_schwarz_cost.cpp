/// @file sem_schwarz_cost.cpp
/// What a Schwarz smoother costs against a Jacobi one (issue 33): on kershaw_mesh(n, eps) at each
/// order p, the best of --repeats timings of --seconds of back-to-back calls of
///   - A: SemLaplacian::apply (the operator),
///   - S: SemSchwarz::apply, weighted ASM (the batched fast-diagonalisation local solves + gather),
///     in fp64 and in fp32 (SchwarzPrecision::Single),
///   - S (per element): the same local solves one element at a time with fdm_solve (the
///     unbatched loop SemSchwarz used before issue 33) plus the same gather, for comparison,
///   - the V-cycle of a SemPoissonPlan (default options but the base: opt4, (2, 2), schedule p, p-2, ..., 1,
///     BoomerAMG / direct order-1 solve) with base jacobi and with base asm-weighted: the cost of
///     one PCG iteration's preconditioner, and their ratio (the goal: <= 2), also with
///     fp32 local solves.
/// One line per (p, threads).
///   sem_schwarz_cost --n 12 --eps 0.3 --orders 3,5,7 --threads 1,2 --seconds 0.5 --repeats 3
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../bench_common.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/multigrid/pmg.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;
using elliptica::bench::now_s;

namespace {

const auto best_time = bench::best_seconds;

}  // namespace

int main(int argc, char** argv) {
  try {
    bench::Args args(argc, argv, {"n", "eps", "orders", "threads", "seconds", "repeats"}, {});
    const int n = int(args.integer("n", 12));
    const double eps = args.num("eps", 0.3);
    const std::vector<int> orders = args.int_list("orders", "3,5,7");
    const std::vector<int> threads = args.int_list("threads", "1,2");
    const double seconds = args.num("seconds", 0.5);
    const int repeats = int(args.integer("repeats", 3));
    std::printf("kershaw:%d,%g\n%2s %9s %3s %10s %10s %10s %12s %9s %11s %11s %11s %8s %8s\n", n, eps, "p", "dofs", "thr",
                "A s", "S s", "S fp32 s", "S elem. s", "S/A", "Jacobi V s", "ASMw V s", "fp32 V s", "V ratio", "fp32 r");
    for (int p : orders) {
      const HexMesh mesh = kershaw_mesh(n, eps);
      auto V = std::make_shared<const SemSpace>(mesh, p, 0);
      std::vector<double> x(V->num_free()), y(V->num_free());
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.001 * double(i));
      for (int t : threads) {
        auto A = std::make_shared<const SemLaplacian>(V, t);
        const SemSchwarz S(A, SchwarzKind::ASMWeighted, t);
        const SemSchwarz Sf(A, SchwarzKind::ASMWeighted, t, SchwarzPrecision::Single);
        const double ta = best_time([&] { A->apply(x.data(), y.data()); }, seconds, repeats);
        const double ts = best_time([&] { S.apply(x.data(), y.data()); }, seconds, repeats);
        const double tsf = best_time([&] { Sf.apply(x.data(), y.data()); }, seconds, repeats);
        // The unbatched local solves (one element at a time) with the same gather.
        const std::size_t ne = V->num_elements();
        const int M = p + 3;
        const std::size_t m3 = std::size_t(M) * M * M;
        std::vector<std::vector<std::int32_t>> ext(ne);
        for (std::size_t e = 0; e < ne; ++e) ext[e] = S.extended_nodes(e);
        std::vector<double> buf(ne * m3, 0.0), z(x.size());
        std::vector<double> w(x.size());
        for (std::size_t g = 0; g < x.size(); ++g) w[g] = 1.0;
        const double te = best_time(
            [&] {
#pragma omp parallel num_threads(t)
              {
                std::vector<double> u(m3), wk(m3);
#pragma omp for schedule(static)
                for (std::int64_t ie = 0; ie < std::int64_t(ne); ++ie) {
                  const auto e = std::size_t(ie);
                  const FdmAxis& fr = S.fdm(e, 0);
                  const FdmAxis& fs = S.fdm(e, 1);
                  const FdmAxis& ft = S.fdm(e, 2);
                  std::size_t c = 0;
                  for (int k = ft.lo; k < ft.lo + ft.n; ++k)
                    for (int j = fs.lo; j < fs.lo + fs.n; ++j)
                      for (int i = fr.lo; i < fr.lo + fr.n; ++i) {
                        const std::int32_t g = ext[e][std::size_t(i + M * (j + M * k))];
                        u[c++] = g >= 0 ? x[std::size_t(g)] : 0.0;
                      }
                  fdm_solve(fr, fs, ft, u.data(), wk.data());
                  c = 0;
                  for (int k = ft.lo; k < ft.lo + ft.n; ++k)
                    for (int j = fs.lo; j < fs.lo + fs.n; ++j)
                      for (int i = fr.lo; i < fr.lo + fr.n; ++i) buf[e * m3 + std::size_t(i + M * (j + M * k))] = u[c++];
                }
              }
              // the gather (as SemSchwarz's, without its precomputed map: every entry once)
              std::fill(z.begin(), z.end(), 0.0);
              for (std::size_t e = 0; e < ne; ++e)
                for (std::size_t q = 0; q < m3; ++q)
                  if (ext[e][q] >= 0) z[std::size_t(ext[e][q])] += buf[e * m3 + q];
            },
            seconds, repeats);
        SemPoissonOptions oj;
        oj.order = p;
        oj.threads = t;
        oj.base = SemSmootherBase::Jacobi;
        oj.tune_iterations = 0;  // the cycles at (2, 2): per-cycle cost, not the tuned order
        SemPoissonOptions os = oj;
        os.base = SemSmootherBase::ASMWeighted;
        os.schwarz_precision = SchwarzPrecision::Double;
        SemPoissonOptions of = os;
        of.schwarz_precision = SchwarzPrecision::Single;
        const SemPoissonPlan pj(mesh, oj), ps(mesh, os), pf(mesh, of);
        const double tvj = best_time([&] { pj.cycle().apply(x.data(), y.data()); }, seconds, repeats);
        const double tvs = best_time([&] { ps.cycle().apply(x.data(), y.data()); }, seconds, repeats);
        const double tvf = best_time([&] { pf.cycle().apply(x.data(), y.data()); }, seconds, repeats);
        std::printf("%2d %9zu %3d %10.3e %10.3e %10.3e %12.3e %9.2f %11.3e %11.3e %11.3e %8.2f %8.2f\n", p, x.size(), t, ta,
                    ts, tsf, te, ts / ta, tvj, tvs, tvf, tvs / tvj, tvf / tvj);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sem_schwarz_cost: %s\n", e.what());
    return 2;
  }
  return 0;
}
