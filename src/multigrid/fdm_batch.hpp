#pragma once
/// @file fdm_batch.hpp
/// (internal) The fast-diagonalisation local solves of SemSchwarz batched across elements: kFdmLanes
/// elements with the same number of points per axis (n_r, n_s, n_t; SemSchwarz uses the full
/// extended grid, N + 2, for every element) are solved together, one element per SIMD lane (Kronbichler & Kormann 2012's vectorisation across
/// cells, as SemLaplacian's kernel). Every array is interleaved [index][lane]:
/// - u, w: n_r n_s n_t x kFdmLanes doubles, point (i, j, k) at ((k n_s + j) n_r + i) kFdmLanes + lane;
/// - per axis d: S_d and S_d^T (n_d x n_d, row-major, entry (i, a) at (i n_d + a) kFdmLanes + lane)
///   and lambda_d (n_d x kFdmLanes), the FdmAxis factors of the lane's element (a padded lane holds
///   the factors of the batch's first element: its results are never read).
/// fdm_solve_batch computes, lane by lane, exactly fdm_solve's
///   u <- (S_t x S_s x S_r) diag(1 / (lambda_r + lambda_s + lambda_t)) (S_t x S_s x S_r)^T u
/// with every 1-D contraction a sequence of per-lane multiply-adds over a compile-time line length.
#include <cstddef>

namespace elliptica::multigrid::detail {

#if defined(__AVX512F__)
inline constexpr int kFdmLanes = 8;
#else
inline constexpr int kFdmLanes = 4;
#endif
/// Elements per batch in precision T: one SIMD vector of T (kFdmLanes doubles, 2 kFdmLanes floats).
template <typename T>
inline constexpr int fdm_lanes = kFdmLanes * static_cast<int>(sizeof(double) / sizeof(T));

/// Factors of one batch: S[d], ST[d], lambda[d] point into interleaved arrays (see the file
/// docstring, with fdm_lanes<T> lanes); n[d] points kept along axis d (1 .. kMaxSemOrder + 3).
template <typename T>
struct FdmBatchFactors {
  int n[3];
  const T* S[3];
  const T* ST[3];
  const T* lambda[3];
};

/// u <- A_box^-1 u for the fdm_lanes<T> elements of a batch (file docstring) in precision T
/// (double or float). u and w: n_r n_s n_t fdm_lanes<T> values each, 64-byte aligned; w is
/// scratch. Does not throw.
template <typename T>
void fdm_solve_batch(const FdmBatchFactors<T>& f, T* u, T* w);

}  // namespace elliptica::multigrid::detail
