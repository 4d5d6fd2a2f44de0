#pragma once
/// @file csr_kernels.hpp
/// Internal: the one CSR row sweep that the matvec, the residual, the multiply-add and the fused
/// smoother sweeps share. `store(i, s)` receives s = (A x)_i for every row i; rows are split
/// statically over `threads` OpenMP threads (resolve_threads) above kParallelMinRows rows, so
/// `store` may only touch row i's data.
#include <cstdint>

#include "elliptica/core/parallel.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica::detail {

template <class Store>
inline void csr_row_sweep(const CsrMatrix& A, const double* x, Store&& store, int threads = 0) {
  const auto n = static_cast<std::int64_t>(A.rows);
  const std::int64_t* rp = A.row_ptr.data();
  const std::int32_t* ci = A.col.data();
  const double* v = A.val.data();
  const int nt = resolve_threads(threads);
#pragma omp parallel for schedule(static) num_threads(nt) if (n > kParallelMinRows)
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (std::int64_t p = rp[i]; p < rp[i + 1]; ++p) s += v[p] * x[ci[p]];
    store(i, s);
  }
}

}  // namespace elliptica::detail
