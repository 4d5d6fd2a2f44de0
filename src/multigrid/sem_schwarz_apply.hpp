#pragma once
/// @file sem_schwarz_apply.hpp
/// (internal) The coloured application shared by SemSchwarz's two local solvers (sem_schwarz.cpp:
/// FDM batches; sem_schwarz_element.cpp: dense element inverses): rx = W^1/2 r in the local
/// solves' precision T (with the sentinel rx[n] = 0), zx = 0, then colour by colour (an implicit
/// barrier after each) every unit of work of the colour (a batch or an element), whose local
/// solutions touch nodes disjoint from the colour's other units, adds into zx directly; finally
/// z = W^1/2 zx. Every node receives its contributions in the same order (colours, then units)
/// whatever the thread count: the result is bitwise independent of it.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "elliptica/core/parallel.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"

namespace elliptica::multigrid {

/// local(unit, scratch, rx, zx): unit = the index of a batch or element in the colour schedule
/// (colour_batch_), scratch = this thread's scratch_values values of T (64-byte aligned). Must not
/// throw (it runs inside a parallel region).
template <typename T, typename Local>
void SemSchwarz::apply_coloured(const double* r, double* z, std::size_t scratch_values, Local&& local) const {
  const int nt = resolve_threads(threads_);
  const bool par = static_cast<std::ptrdiff_t>(n_) > kParallelMinRows;
  const double* ws = wsqrt_.empty() ? nullptr : wsqrt_.data();
  // Per thread scratch_values values of T and 64 bytes of alignment room, counted in doubles.
  const std::size_t slot = (scratch_values * sizeof(T) + 64 + sizeof(double) - 1) / sizeof(double);
  const int team = par ? nt : 1;
  if (scratch_.size() < static_cast<std::size_t>(team) * slot) scratch_.resize(static_cast<std::size_t>(team) * slot);
  const auto n = static_cast<std::int64_t>(n_);
  // rx = W^1/2 r (or r) with one more entry: index n_ is the sentinel of the FDM entries without
  // a node, rx[n_] = 0, so the gather runs without branches; the scatter-adds skip it.
  T* rx = nullptr;
  T* zx = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    rx = rxf_.data();
    zx = zxf_.data();
  } else {
    rx = rx_.data();
    zx = zx_.data();
  }
#pragma omp parallel num_threads(nt) if (par)
  {
    // This thread's scratch (scratch_ has one slot per thread of the team, sized before the region).
    T* u = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(scratch_.data() + static_cast<std::size_t>(omp_get_thread_num()) * slot) + 63) &
                                ~std::uintptr_t{63});
#pragma omp for schedule(static)
    for (std::int64_t g = 0; g < n; ++g) {
      rx[g] = static_cast<T>(ws != nullptr ? ws[g] * r[g] : r[g]);
      zx[g] = T(0);
    }
#pragma omp single
    rx[n] = T(0);
    for (std::size_t col = 0; col + 1 < colour_batch_.size(); ++col) {
      const auto b0 = static_cast<std::int64_t>(colour_batch_[col]), b1 = static_cast<std::int64_t>(colour_batch_[col + 1]);
#pragma omp for schedule(static)
      for (std::int64_t ib = b0; ib < b1; ++ib) local(static_cast<std::size_t>(ib), u, static_cast<const T*>(rx), zx);
    }
#pragma omp for schedule(static)
    for (std::int64_t g = 0; g < n; ++g) z[g] = ws != nullptr ? ws[g] * static_cast<double>(zx[g]) : static_cast<double>(zx[g]);
  }
}

}  // namespace elliptica::multigrid
