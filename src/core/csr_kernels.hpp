#pragma once
/// @file csr_kernels.hpp
/// Internal: the one CSR row sweep that the matvec, the residual, the multiply-add and the fused
/// smoother sweeps share. `store(i, s)` receives s = (A x)_i for every row i; rows are split
/// statically over the OpenMP threads above 20000 rows, so `store` may only touch row i's data.
#include <cstdint>

#include "elliptica/core/sparse.hpp"

namespace elliptica::detail {

template <class Store>
inline void csr_row_sweep(const CsrMatrix& A, const double* x, Store&& store) {
  const auto n = static_cast<std::int64_t>(A.rows);
  const std::int64_t* rp = A.row_ptr.data();
  const std::int32_t* ci = A.col.data();
  const double* v = A.val.data();
#pragma omp parallel for schedule(static) if (n > 20000)
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (std::int64_t p = rp[i]; p < rp[i + 1]; ++p) s += v[p] * x[ci[p]];
    store(i, s);
  }
}

}  // namespace elliptica::detail
