// Single precision (issue 12): relative RMS error / eps of float32 and float64 plans against a
// float64 plan at eps 1e-12, N = 1e3, 1e4, 1e5 uniform in the unit cube, every kernel, eps from
// 1e-3 down to the float32 floor (below it the plan refuses: printed as "refused"). Accuracy
// only (no timings: see ewald_issue12_p2p.py for speed).
//   build-bench/bench/ewald_float32_sweep > bench/results/ewald_issue12/float32_sweep.txt
#include <cstdio>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "reference/direct_ewald.hpp"

using namespace elliptica;
using namespace elliptica::ewald;
using namespace elliptica::testref;

int main() {
  for (int n : {1000, 10000, 100000})
    for (Kernel K : {Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet, Kernel::StokesCombined}) {
      const auto x = make_points(Distribution::Uniform, n, {1, 1, 1}, 1);
      const auto f = make_strengths(n, 3, 2, true), q1 = make_strengths(n, 1, 3, true);
      const auto qd = make_strengths(n, 3, 4, false), nu = make_strengths(n, 3, 5, false);
      Densities d;
      if (K == Kernel::Laplace) d.strengths = ConstMatrixView<double>(q1, 1);
      if (K == Kernel::Stokeslet || K == Kernel::StokesCombined) d.strengths = ConstMatrixView<double>(f, 3);
      if (has_double_layer(K)) d.dipoles = ConstMatrixView<double>(qd, 3);
      auto run = [&](double eps, Precision p) {
        Options o;
        o.kernel = K;
        o.tolerance = eps;
        o.precision = p;
        EwaldPlan pl(o);
        if (has_double_layer(K))
          pl.set_points(ConstMatrixView<double>(x, 3), std::nullopt, ConstMatrixView<double>(nu, 3));
        else
          pl.set_points(ConstMatrixView<double>(x, 3));
        return pl.evaluate(d);
      };
      const Result ref = run(1e-12, Precision::Double);
      for (double eps : {1e-3, 1e-4, 1e-5, 3e-6, 1e-6, 7e-7, 3e-7}) {
        const Result r64 = run(eps, Precision::Double);
        const double e64 = rel_rms_err(r64.values.values, ref.values.values) / eps;
        try {
          const Result r32 = run(eps, Precision::Single);
          std::printf("%-16s n=%-6d eps=%-6g err32/eps=%.3f err64/eps=%.3f M=%d floor=%.2g\n", to_string(K).c_str(),
                      n, eps, rel_rms_err(r32.values.values, ref.values.values) / eps, e64, r32.params.grid[0],
                      single_precision_floor(r32.params.grid, n));
        } catch (const NumericalError&) {
          std::printf("%-16s n=%-6d eps=%-6g float32 refused (below its floor) err64/eps=%.3f\n", to_string(K).c_str(),
                      n, eps, e64);
        }
      }
    }
}
