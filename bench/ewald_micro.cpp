/// @file ewald_micro.cpp
/// Google Benchmark microbenchmarks: one whole evaluation of a tuned plan per iteration (the
/// parameter choice happens once, outside the timed loop), with the mean per-stage seconds
/// (P2P, P2G, FFT, CNV, IFFT, G2P, setup, self) exported as counters.
///
///   ewald_micro [--benchmark_filter=REGEX] [--benchmark_format=csv|json] ...
///
/// Arguments of each benchmark: N, -log10(eps), threads. Uniform points in the unit cube.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "elliptica/ewald/ewald.hpp"

using namespace elliptica;

namespace {

void run(benchmark::State& state, ewald::Kernel kernel) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const double eps = std::pow(10.0, -double(state.range(1)));
  const int threads = static_cast<int>(state.range(2));
  const int comps = ewald::strength_components(kernel);
  const std::vector<double> x = bench::uniform_points(n, 1);
  const std::vector<double> q = bench::neutral_strengths(n, comps, 1 + 1000003ULL);
  ewald::Options opt;
  opt.kernel = kernel;
  opt.tolerance = eps;
  opt.threads = threads;
  ewald::EwaldPlan plan(opt);
  const ConstMatrixView<double> xv(x, 3), qv(q, std::size_t(comps));
  plan.tune(xv, qv);
  StageTimes sum;
  for (auto _ : state) {
    ewald::Result r = plan.evaluate(xv, qv);
    benchmark::DoNotOptimize(r.values.values.data());
    for (auto& [name, t] : r.times.stages) sum.add(name, t);
  }
  const double it = double(state.iterations());
  for (auto& [name, t] : sum.stages) state.counters[name] = t / it;
  const auto& p = plan.params();
  state.counters["M"] = p.grid[0];
  state.counters["P"] = p.P;
  state.counters["rc"] = p.rc;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void BM_laplace(benchmark::State& s) { run(s, ewald::Kernel::Laplace); }
void BM_stokeslet(benchmark::State& s) { run(s, ewald::Kernel::Stokeslet); }

void args(benchmark::internal::Benchmark* b) {
  for (int n : {1000, 10000, 100000})
    for (int e : {6, 9}) b->Args({n, e, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_laplace)->Apply(args);
BENCHMARK(BM_stokeslet)->Apply(args);
BENCHMARK_MAIN();
