/// @file mg_update_values.cpp
/// Numeric re-setup against a fresh set-up (MultigridPlan::update_values, docs/multigrid.md
/// "Sequences of solves"): 2D diffusion -div(k grad u) on n x n interior points (5 points,
/// harmonic face means), first k = 1, then k scaled by --scale in [0.25, 0.5]^2 (the same
/// pattern). For the smoothed-aggregation plan (and the geometric one when n + 1 is divisible by
/// 2 at least twice): the set-up time on the new matrix from scratch, update_values from the plan
/// of the old one, and update_values keeping the prolongators (best of --repeats each), and the PCG
/// iterations / solve time to 1e-8.
///   mg_update_values --n 1000 --threads 2 --repeats 3 --scale 100
#include <cstdio>
#include <exception>
#include <vector>

#include "bench_common.hpp"
#include "elliptica/multigrid/plan.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;
using elliptica::bench::now_s;

namespace {

CsrMatrix diffusion2d(int n, double scale) {
  const double h = 1.0 / (n + 1);
  auto k = [scale](double x, double y) { return x >= 0.25 && x <= 0.5 && y >= 0.25 && y <= 0.5 ? scale : 1.0; };
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  const std::size_t N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  r.reserve(5 * N), c.reserve(5 * N), v.reserve(5 * N);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double x = (i + 1) * h, y = (j + 1) * h;
      const std::int64_t p = i + static_cast<std::int64_t>(n) * j;
      double d = 0;
      const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
      for (int q = 0; q < 4; ++q) {
        const double a = k(x, y), b = k(x + di[q] * h, y + dj[q] * h), w = 2 * a * b / (a + b) / (h * h);
        d += w;
        const int ii = i + di[q], jj = j + dj[q];
        if (ii < 0 || ii >= n || jj < 0 || jj >= n) continue;
        r.push_back(p), c.push_back(ii + static_cast<std::int64_t>(n) * jj), v.push_back(-w);
      }
      r.push_back(p), c.push_back(p), v.push_back(d);
    }
  return CsrMatrix::from_triplets(N, N, r, c, v);
}

template <class Make>
void compare(const char* name, Make make, const CsrMatrix& A0, const CsrMatrix& A1, int repeats) {
  double fresh = 1e300, update = 1e300, keep = 1e300;
  for (int rep = 0; rep < repeats; ++rep) {
    double t = now_s();
    MultigridPlan f = make(A1);
    fresh = std::min(fresh, now_s() - t);
    MultigridPlan q = make(A0);
    t = now_s();
    q.update_values(A1, {.keep_prolongators = true});
    keep = std::min(keep, now_s() - t);
    MultigridPlan p = make(A0);
    t = now_s();
    p.update_values(A1);
    update = std::min(update, now_s() - t);
    if (rep + 1 < repeats) continue;
    std::vector<double> bq(A1.rows, 1.0), xq(A1.rows, 0.0);
    const SolveResult rq = q.solve(bq.data(), xq.data());
    std::vector<double> b(A1.rows, 1.0), x(A1.rows, 0.0), y(A1.rows, 0.0);
    t = now_s();
    const SolveResult rf = f.solve(b.data(), x.data());
    const double sf = now_s() - t;
    t = now_s();
    const SolveResult ru = p.solve(b.data(), y.data());
    const double su = now_s() - t;
    std::printf("%-10s n=%zu levels=%zu  set-up fresh %.3f s  update_values %.3f s (ratio %.2f), keeping P %.3f s "
                "(ratio %.2f)  pcg to 1e-8: fresh %d it %.3f s, updated %d it %.3f s, keeping P %d it\n",
                name, A1.rows, p.hierarchy().num_levels(), fresh, update, update / fresh, keep, keep / fresh,
                rf.iterations, sf, ru.iterations, su, rq.iterations);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const elliptica::bench::Args args(argc, argv, {"n", "threads", "repeats", "scale"}, {});
    const int n = static_cast<int>(args.integer("n", 1000));
    const int threads = static_cast<int>(args.integer("threads", 0));
    const int repeats = static_cast<int>(args.integer("repeats", 3));
    const double scale = args.num("scale", 100.0);
    const CsrMatrix A0 = diffusion2d(n, 1.0), A1 = diffusion2d(n, scale);
    MultigridOptions o;
    o.solver.method = SolverMethod::Cg;
    o.solver.krylov.rtol = 1e-8;
    o.threads = threads;
    compare("sa", [&](const CsrMatrix& A) { return MultigridPlan::smoothed_aggregation(A, o); }, A0, A1, repeats);
    if ((n + 1) % 4 == 0) {
      GridShape s;
      s.dim = 2;
      s.n = {n, n, 1};
      compare("geometric", [&](const CsrMatrix& A) { return MultigridPlan(A, s, o); }, A0, A1, repeats);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mg_update_values: %s\n", e.what());
    return 1;
  }
  return 0;
}
