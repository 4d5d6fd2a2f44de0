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
#include <atomic>
#include <exception>
#include <mutex>

namespace elliptica {

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

}  // namespace elliptica
