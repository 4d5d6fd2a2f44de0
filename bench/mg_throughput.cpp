/// @file mg_throughput.cpp
/// Google Benchmark: memory-bandwidth throughput of the multigrid kernels against a STREAM-style
/// measurement of the same machine, for the issue's question "what fraction of the memory
/// bandwidth do the matvec and the smoother reach?".
///
///   mg_throughput [--benchmark_filter=REGEX] [--benchmark_format=json] ...
///   (bench/mg/throughput.py runs it and writes the fractions; see bench/README.md)
///
/// Every benchmark reports bytes_per_second from an explicit model of the bytes it must move
/// (the STREAM convention: each array element read or written once, write-allocate traffic not
/// counted, the gathered vector x read once because its neighbours are in cache):
///   STREAM copy  a = b            16 B/element
///   STREAM triad a = b + s c      24 B/element
///   CSR matvec   y = A x          12 nnz + 8 (row pointer) + 8 (x) + 8 (y) B/row
///                                  = 84 B/row for the 5-point, 108 B/row for the 7-point stencil
///   residual     r = b - A x      CSR + 8 (x) + 8 (b) + 8 (r)
///   smoothing    Chebyshev/Jacobi of order k (fused sweeps, src/multigrid/smoother.cpp):
///                first sweep CSR + 40, each of the k - 1 further sweeps CSR + 56, last x update 24
/// Arguments: problem (2: 2D 5-point with n intervals per axis, 3: 3D 7-point), n, threads.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/poisson.hpp"
#include "elliptica/multigrid/smoother.hpp"

using namespace elliptica;
namespace mg = elliptica::multigrid;

namespace {

constexpr std::size_t kStreamN = std::size_t{1} << 27;  // 1 GiB per array: far beyond any cache

void BM_StreamCopy(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  const auto n = static_cast<std::int64_t>(kStreamN);
  std::vector<double> a(kStreamN), b(kStreamN);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
  }
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 16);
}

void BM_StreamTriad(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(0)));
  const auto n = static_cast<std::int64_t>(kStreamN);
  std::vector<double> a(kStreamN), b(kStreamN), c(kStreamN);
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  const double s = 0.5;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 24);
}

CsrMatrix make_problem(const benchmark::State& state, mg::GridShape& shape) {
  const int dim = static_cast<int>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  shape = mg::GridShape{};
  shape.dim = dim;
  for (int d = 0; d < dim; ++d) shape.n[d] = n - 1;
  return mg::poisson_fd(shape, {1.0, 1.0, 1.0});
}

double csr_bytes(const CsrMatrix& A) {
  return 12.0 * static_cast<double>(A.nnz()) + 8.0 * static_cast<double>(A.rows);
}

void set_counters(benchmark::State& state, const CsrMatrix& A, double bytes_per_call) {
  state.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(state.iterations()) * bytes_per_call));
  state.counters["rows"] = static_cast<double>(A.rows);
  state.counters["bytes_per_row"] = bytes_per_call / static_cast<double>(A.rows);
  state.counters["rows_per_second"] =
      benchmark::Counter(static_cast<double>(A.rows), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Matvec(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(2)));
  mg::GridShape shape;
  const CsrMatrix A = make_problem(state, shape);
  std::vector<double> x(A.rows, 1.0), y(A.rows, 0.0);
  for (auto _ : state) {
    A.multiply(x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, A, csr_bytes(A) + 16.0 * static_cast<double>(A.rows));
}

void BM_Residual(benchmark::State& state) {
  omp_set_num_threads(static_cast<int>(state.range(2)));
  mg::GridShape shape;
  const CsrMatrix A = make_problem(state, shape);
  std::vector<double> x(A.rows, 1.0), b(A.rows, 2.0), r(A.rows, 0.0);
  for (auto _ : state) {
    A.residual(b.data(), x.data(), r.data());
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, A, csr_bytes(A) + 24.0 * static_cast<double>(A.rows));
}

void BM_Smoother(benchmark::State& state, mg::Polynomial kind, int k) {
  omp_set_num_threads(static_cast<int>(state.range(2)));
  mg::GridShape shape;
  const CsrMatrix A = make_problem(state, shape);
  mg::SmootherOptions opt;
  opt.kind = kind;
  opt.base = mg::BaseSmoother::Jacobi;
  const mg::Smoother S(A, opt, shape);
  std::vector<double> x(A.rows, 0.0), b(A.rows, 1.0);
  for (auto _ : state) {
    S.smooth(b.data(), x.data(), k);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  const double rows = static_cast<double>(A.rows);
  set_counters(state, A, (csr_bytes(A) + 40.0 * rows) + (k - 1) * (csr_bytes(A) + 56.0 * rows) + 24.0 * rows);
  state.counters["order"] = k;
}

void args(benchmark::internal::Benchmark* b) {
  for (int t : {1, 2}) {
    b->Args({2, 1024, t});
    b->Args({2, 4096, t});
    b->Args({3, 128, t});
    b->Args({3, 256, t});
  }
  b->ArgNames({"dim", "n", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_StreamCopy)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StreamTriad)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Matvec)->Apply(args);
BENCHMARK(BM_Residual)->Apply(args);
BENCHMARK_CAPTURE(BM_Smoother, cheb4_k4, mg::Polynomial::Cheby4, 4)->Apply(args);
BENCHMARK_CAPTURE(BM_Smoother, opt4_k4, mg::Polynomial::Cheby4Opt, 4)->Apply(args);
BENCHMARK_CAPTURE(BM_Smoother, cheb1_k4, mg::Polynomial::Cheby1, 4)->Apply(args);

BENCHMARK_MAIN();
