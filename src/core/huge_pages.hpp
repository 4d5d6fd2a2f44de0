#pragma once
/// @file huge_pages.hpp
/// Internal: sizing a large fresh std::vector so that the kernel backs it with transparent huge
/// pages where it can. A vector of many megabytes that is allocated and then touched for the first
/// time costs one page fault per 4 KiB page (on the 2D 1023^2 multigrid set-up and solve about a
/// fifth of the run); with madvise(MADV_HUGEPAGE) on the untouched allocation (Linux, THP mode
/// "madvise" or "always") one fault per 2 MiB. Only the advice on our own allocation: no
/// process-wide setting is changed; elsewhere, or if the kernel refuses, it is a plain resize.
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace elliptica::detail {

/// Below this many bytes a vector is left to the ordinary pages.
inline constexpr std::size_t kHugePageMinBytes = std::size_t{4} << 20;

/// Advises huge pages for the 2 MiB-aligned interior of [p, p + bytes) (memory not yet touched).
inline void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (a + huge - 1) & ~(huge - 1), hi = (a + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// v.resize(n) (new elements value-initialised, or `value`), with the huge-page advice first
/// when v must grow its storage to a large size. Same contract and exceptions as resize.
template <class T>
void resize_huge(std::vector<T>& v, std::size_t n, const T& value = T()) {
  if (n > v.capacity() && n * sizeof(T) >= kHugePageMinBytes) {
    std::vector<T> fresh;
    fresh.reserve(n);  // allocated, not touched
    advise_huge_pages(fresh.data(), n * sizeof(T));
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
  v.resize(n, value);
}

}  // namespace elliptica::detail
