/// @file sem_operator_throughput.cpp
/// Throughput of the matrix-free spectral-element Laplacian (multigrid/sem_operator.hpp, issue 14):
/// DOF/s of SemLaplacian::apply for orders p on a box mesh (or --mesh kershaw: Kershaw eps = 0.3,
/// the element count per axis rounded to a multiple of 6) of about --dofs nodes (the unit cube,
/// n^3 elements with n p + 1 ~ dofs^(1/3)), at each thread count, best of --repeats timings of
/// --seconds of back-to-back applies each. Prints per case: elements, free DOFs, time per apply,
/// DOF/s (free DOFs / time), and the kernel's cost model (sem_apply_cost): flops per DOF, bytes
/// per DOF (geometric factors + local-to-global map streamed per element, x and y once per node)
/// and the achieved GFLOP/s and GB/s under that model, for comparison with the machine's FMA peak
/// (bench/fma_peak) and memory bandwidth (bench/mg_throughput STREAM) and with deal.II.
///   sem_operator_throughput [--mesh box|kershaw] --dofs 1500000 --orders 3,4,5,6,7,8 --threads 1,2 --seconds 0.3 --repeats 3
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "../bench_common.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/multigrid/sem_operator.hpp"

using namespace elliptica;
using namespace elliptica::multigrid;
using elliptica::bench::now_s;

namespace {

}  // namespace

int main(int argc, char** argv) {
  try {
    bench::Args args(argc, argv, {"dofs", "orders", "threads", "seconds", "repeats", "mesh"}, {});
    const double target = args.num("dofs", 1.5e6);
    const std::vector<int> orders = args.int_list("orders", "3,4,5,6,7,8");
    const std::vector<int> threads = args.int_list("threads", "1,2");
    const double seconds = args.num("seconds", 0.3);
    const int repeats = int(args.integer("repeats", 3));
    const std::string mesh = args.str("mesh", "box");
    if (mesh != "box" && mesh != "kershaw") throw InvalidArgument("--mesh must be box or kershaw, got '" + mesh + "'");
    std::printf("%2s %4s %8s %9s %3s %11s %10s %9s %9s %8s %8s\n", "p", "n", "elements", "dofs", "thr",
                "s/apply", "DOF/s", "flops/DOF", "bytes/DOF", "GFLOP/s", "GB/s");
    for (int p : orders) {
      int n = std::max(1, int(std::lround((std::cbrt(target) - 1.0) / p)));
      if (mesh == "kershaw") n = std::max(6, 6 * int(std::lround(n / 6.0)));
      auto S = std::make_shared<const SemSpace>(mesh == "box" ? box_mesh(n, n, n) : kershaw_mesh(n, 0.3), p, 0);
      const double ne = double(S->num_elements()), nf = double(S->num_free()), nn = double(S->num_nodes());
      const SemApplyCost c = sem_apply_cost(p, false), ca = sem_apply_cost(p, true);
      const double na = double(SemLaplacian(S, 1).affine_elements());  // all of a box
      const double flops = (ne - na) * c.flops_per_element + na * ca.flops_per_element;
      const double bytes = (ne - na) * c.element_bytes + na * ca.element_bytes + nn * c.vector_bytes_per_node;
      std::vector<double> x(S->num_free(), 1.0), y(S->num_free());
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.001 * double(i));
      for (int t : threads) {
        SemLaplacian A(S, t);
        const double best = bench::best_seconds([&] { A.apply(x.data(), y.data()); }, seconds, repeats);
        std::printf("%2d %4d %8.0f %9.0f %3d %11.4e %10.3e %9.1f %9.1f %8.2f %8.2f\n", p, n, ne, nf, t, best, nf / best,
                    flops / nf, bytes / nf, flops / best * 1e-9, bytes / best * 1e-9);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sem_operator_throughput: %s\n", e.what());
    return 2;
  }
  return 0;
}
