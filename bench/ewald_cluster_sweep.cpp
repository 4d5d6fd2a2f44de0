// Clustered sources (issue 12): measured relative RMS error / eps of the spectral Ewald plan
// against the classical Ewald sum (tests/reference/direct_ewald), for Gaussian clusters of
// random-sign unit charges / forces of width 0.3 ... 5e-4 in a 1 x 2.3 x 0.7 box, 100 and 800
// points, eps 1e-4, 1e-6, 1e-9; also the plan's own estimate. One line per case.
//   build-bench/bench/ewald_cluster_sweep > bench/results/ewald_issue12/cluster_sweep.txt
#include <cstdio>
#include <random>

#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

using namespace elliptica;
using namespace elliptica::ewald;
using namespace elliptica::testref;

int main() {
  const std::array<double, 3> box{1.0, 2.3, 0.7};
  int over = 0, total = 0;
  double worst = 0;
  for (double width : {0.3, 0.05, 0.01, 0.002, 0.0005})
    for (int n : {100, 800})
      for (int stokes = 0; stokes < 2; ++stokes) {
        std::mt19937_64 rng(7 + n);
        std::normal_distribution<double> g(0, width);
        std::uniform_real_distribution<double> u(-1, 1);
        std::vector<double> x(3 * n), q(n * (stokes ? 3 : 1));
        for (int i = 0; i < n; ++i)
          for (int a = 0; a < 3; ++a) x[3 * i + a] = 0.5 * box[a] + g(rng);
        for (auto& v : q) v = u(rng) < 0 ? -1 : 1;
        RefOptions ro;
        ro.box = box;
        ro.kernel = stokes ? RefKernel::Stokeslet : RefKernel::Laplace;
        const RefResult ref = direct_ewald(ro, x, q);
        for (double eps : {1e-4, 1e-6, 1e-9}) {
          Options o;
          o.box = box;
          o.tolerance = eps;
          o.kernel = stokes ? Kernel::Stokeslet : Kernel::Laplace;
          EwaldPlan p(o);
          const Result r = p.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, stokes ? 3 : 1));
          const double e = rel_rms_err(r.values.values, ref.values) / eps;
          worst = std::max(worst, e);
          over += e > 0.7;
          ++total;
          std::printf("%-9s width=%-6g n=%-4d eps=%-6g err/eps=%.3f est/eps=%.3f M=%d P=%d rc=%.4g\n",
                      stokes ? "stokeslet" : "laplace", width, n, eps, e, r.params.est_relative / eps, r.params.grid[0],
                      r.params.P, r.params.rc);
        }
      }
  std::printf("# %d of %d cases above 0.7 eps; worst %.3f eps\n", over, total, worst);
}
