#pragma once
/// @file parallel.hpp
/// Exceptions and OpenMP parallel regions. An exception must never leave a parallel region (the
/// OpenMP runtime then calls std::terminate) and a thread must never skip the implicit barrier of
/// a worksharing loop (the other threads then wait forever). ParallelErrors keeps the first
/// exception thrown by any thread; every thread goes on through the region (skipping the remaining
/// work once an error is recorded), and the exception is rethrown on the calling thread after the
/// region:
///
///   ParallelErrors errors;
///   #pragma omp parallel num_threads(threads)
///   {
///     std::vector<double> buf;
///     errors.run([&] { buf.resize(n); });           // per-thread set-up
///   #pragma omp for
///     for (long i = 0; i < m; ++i)
///       errors.run([&] { work(i, buf); });           // skipped once any thread has failed
///   }
///   errors.rethrow();                                // on the calling thread
///
/// Threads: every plan and operator takes a `threads` option (0 = omp_get_max_threads() at the
/// call, n > 0 exactly n) and passes resolve_threads(threads) to the num_threads clause of each of
/// its parallel regions; nothing in the library calls omp_set_num_threads or changes any other
/// process-wide state (with_threads below sets the team size of one nested scope only). Below the size thresholds of this file a region runs on one thread
/// (if clause): the fork/join costs more than the work there (measured on 2-core AVX-512 and
/// AVX2 machines with the loops they guard).
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>

#include <omp.h>

namespace elliptica {

/// The team size of a parallel region for a `threads` option: `requested` when > 0, otherwise
/// omp_get_max_threads() (which OMP_NUM_THREADS sets). Negative values are refused by the
/// option validators of the plans before they get here; resolve_threads treats them as 0.
inline int resolve_threads(int requested) { return requested > 0 ? requested : omp_get_max_threads(); }

/// Vector kernels (dot products, axpy, scaling in the Krylov solvers): parallel above this length.
inline constexpr std::ptrdiff_t kParallelMinVector = 32768;
/// Row-wise sparse kernels (CSR matvec, residual, Jacobi and Chebyshev vector updates): parallel
/// above this many rows.
inline constexpr std::ptrdiff_t kParallelMinRows = 20000;
/// Dense row kernels (dense BEM matvec): parallel above this many rows.
inline constexpr std::ptrdiff_t kParallelMinDenseRows = 256;

class ParallelErrors;

/// Runs f() on the calling thread so that the OpenMP regions opened inside it *without* a
/// num_threads clause get resolve_threads(threads) threads. Eigen's own parallel kernels (the
/// GEMM under its LU factorisations, large products) size their teams by omp_get_max_threads();
/// without this scope they use OMP_NUM_THREADS / all cores whatever a plan's `threads` says.
/// How: f runs inside a one-thread parallel region (inactive, so regions nested in it may still
/// fork) whose implicit task gets nthreads-var = threads through omp_set_num_threads; that ICV
/// belongs to the region's implicit task only (OpenMP 5.2 sections 2.4.1 and 18.2.1) and is gone
/// when the region ends: nothing outside f changes. Inside a region of the library's own with
/// more than one thread Eigen stays sequential (it checks omp_get_num_threads() > 1).
/// Exceptions thrown by f are rethrown on the calling thread after the region.
template <class F>
void with_threads(int threads, F&& f);

class ParallelErrors {
 public:
  /// Runs f() unless an error was recorded already; records the first exception f throws.
  template <class F>
  void run(F&& f) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      f();
    } catch (...) {
      record(std::current_exception());
    }
  }
  /// True once any thread has recorded an exception.
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  /// Records an exception (the first one wins).
  void record(std::exception_ptr e) noexcept {
    std::lock_guard<std::mutex> lk(mutex_);
    if (!first_) first_ = e;
    failed_.store(true, std::memory_order_relaxed);
  }
  /// Rethrows the recorded exception, if any (call after the parallel region).
  void rethrow() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr first_;
};

template <class F>
void with_threads(int threads, F&& f) {
  const int t = resolve_threads(threads);
  std::exception_ptr error;
#pragma omp parallel num_threads(1)
  {
    omp_set_num_threads(t);
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace elliptica
