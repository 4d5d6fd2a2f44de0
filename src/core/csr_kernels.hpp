#pragma once
/// @file csr_kernels.hpp
/// Internal: the one row sweep that the matvec, the residual, the multiply-add, the fused
/// smoother sweeps and the Lanczos estimate share. `store(i, s)` receives s = (A x)_i for every
/// row i, where x is read through `xv(j)` (a vector, or a vector formed on the fly such as
/// c D^-1 b); rows are split into contiguous blocks over `threads` OpenMP threads
/// (resolve_threads) above kParallelMinRows rows, so `store` may only touch row i's data.
///
/// A matrix with a stencil form (core/stencil.hpp) has its interior rows summed from the
/// stencil's K coefficients at fixed column offsets (K a template parameter for the usual
/// 3/5/7/9/19/27-point stencils, so that the sum over k unrolls and the loop over rows
/// vectorises), the other rows from the CSR arrays. Both sum s = 0 + a_1 x_1 + a_2 x_2 + ... in
/// ascending column order, so a row gives the same s either way.
#include <algorithm>
#include <cstdint>

#include "elliptica/core/parallel.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/core/stencil.hpp"

namespace elliptica::detail {

/// Rows [b, e) from the CSR arrays.
template <class X, class Store>
inline void csr_rows(const CsrMatrix& A, X& xv, Store& store, std::int64_t b, std::int64_t e) {
  const std::int64_t* rp = A.row_ptr.data();
  const std::int32_t* ci = A.col.data();
  const double* v = A.val.data();
  for (std::int64_t i = b; i < e; ++i) {
    double s = 0.0;
    for (std::int64_t p = rp[i]; p < rp[i + 1]; ++p) s += v[p] * xv(ci[p]);
    store(i, s);
  }
}

/// Rows [b, e), all interior rows of the stencil S with K entries.
template <int K, class X, class Store>
inline void stencil_rows(const StencilForm& S, X& xv, Store& store, std::int64_t b, std::int64_t e) {
  std::int64_t off[K];
  double c[K];
  for (int k = 0; k < K; ++k) {
    off[k] = S.offset[static_cast<std::size_t>(k)];
    c[k] = S.coef[static_cast<std::size_t>(k)];
  }
  for (std::int64_t i = b; i < e; ++i) {
    double s = 0.0;
    for (int k = 0; k < K; ++k) s += c[k] * xv(i + off[k]);
    store(i, s);
  }
}

/// The same for any K.
template <class X, class Store>
inline void stencil_rows_any(const StencilForm& S, X& xv, Store& store, std::int64_t b, std::int64_t e) {
  const std::size_t K = S.offset.size();
  const std::int64_t* off = S.offset.data();
  const double* c = S.coef.data();
  for (std::int64_t i = b; i < e; ++i) {
    double s = 0.0;
    for (std::size_t k = 0; k < K; ++k) s += c[k] * xv(i + off[k]);
    store(i, s);
  }
}

template <class X, class Store>
inline void stencil_dispatch(const StencilForm& S, X& xv, Store& store, std::int64_t b, std::int64_t e) {
  switch (S.offset.size()) {
    case 3: stencil_rows<3>(S, xv, store, b, e); break;
    case 5: stencil_rows<5>(S, xv, store, b, e); break;
    case 7: stencil_rows<7>(S, xv, store, b, e); break;
    case 9: stencil_rows<9>(S, xv, store, b, e); break;
    case 19: stencil_rows<19>(S, xv, store, b, e); break;
    case 27: stencil_rows<27>(S, xv, store, b, e); break;
    default: stencil_rows_any(S, xv, store, b, e); break;
  }
}

/// Rows [b, e) of A: from the stencil where A has one and the row is interior, else from CSR.
template <class X, class Store>
inline void row_sweep_range(const CsrMatrix& A, X& xv, Store& store, std::int64_t b, std::int64_t e) {
  const StencilForm* S = A.stencil.get();
  if (S == nullptr) {
    csr_rows(A, xv, store, b, e);
    return;
  }
  const std::int64_t nx = S->n[0], ny = S->n[1], nz = S->n[2];
  const std::int64_t rx = S->reach[0], ry = S->reach[1], rz = S->reach[2];
  std::int64_t i = b;
  while (i < e) {
    const std::int64_t line = i / nx;  // a grid line along x: (y, z) fixed
    const std::int64_t start = line * nx, end = std::min(e, start + nx);
    const std::int64_t y = line % ny, z = line / ny;
    if (y < ry || y >= ny - ry || z < rz || z >= nz - rz) {
      csr_rows(A, xv, store, i, end);
    } else {
      const std::int64_t lo = std::clamp(start + rx, i, end), hi = std::clamp(start + nx - rx, lo, end);
      csr_rows(A, xv, store, i, lo);
      stencil_dispatch(*S, xv, store, lo, hi);
      csr_rows(A, xv, store, hi, end);
    }
    i = end;
  }
}

/// store(i, (A x)_i) for every row, x read through xv(j).
template <class X, class Store>
inline void row_sweep(const CsrMatrix& A, X&& xv, Store&& store, int threads = 0) {
  const auto n = static_cast<std::int64_t>(A.rows);
  const int nt = resolve_threads(threads);
  if (nt == 1 || n <= kParallelMinRows) {
    row_sweep_range(A, xv, store, 0, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const std::int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    row_sweep_range(A, xv, store, n * t / T, n * (t + 1) / T);
  }
}

/// The sum over the rows of store(i, (A x)_i) (store returns a double), e.g. p^T A p while q = A p
/// is stored. The partial sums are added in thread order.
template <class X, class Store>
inline double row_sweep_sum(const CsrMatrix& A, X&& xv, Store&& store, int threads = 0) {
  const auto n = static_cast<std::int64_t>(A.rows);
  const int nt = resolve_threads(threads);
  if (nt == 1 || n <= kParallelMinRows) {
    double s = 0.0;
    auto acc = [&](std::int64_t i, double v) { s += store(i, v); };
    row_sweep_range(A, xv, acc, 0, n);
    return s;
  }
  double total = 0.0;
#pragma omp parallel num_threads(nt) reduction(+ : total)
  {
    const std::int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    double s = 0.0;
    auto acc = [&](std::int64_t i, double v) { s += store(i, v); };
    row_sweep_range(A, xv, acc, n * t / T, n * (t + 1) / T);
    total += s;
  }
  return total;
}

/// row_sweep with x a plain vector.
template <class Store>
inline void csr_row_sweep(const CsrMatrix& A, const double* x, Store&& store, int threads = 0) {
  row_sweep(A, [x](std::int64_t j) { return x[j]; }, store, threads);
}

}  // namespace elliptica::detail
