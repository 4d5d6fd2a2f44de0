/// @file tentative_prolongator.cpp
/// Tentative prolongator of smoothed aggregation (amg.hpp step 3; Vanek, Mandel, Brezina 1996,
/// section 3): the near-null space restricted to each aggregate and orthonormalised there.
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

TentativeProlongator tentative_prolongator(const Aggregates& agg, int block_size, const NearNullSpace& B,
                                           std::size_t n) {
  if (block_size < 1) throw InvalidArgument("tentative_prolongator: block_size must be >= 1");
  const auto b = static_cast<std::size_t>(block_size);
  if (n % b != 0 || agg.of_node.size() != n / b)
    throw InvalidArgument("tentative_prolongator: " + std::to_string(agg.of_node.size()) + " nodes of " +
                          std::to_string(b) + " unknowns do not make " + std::to_string(n) + " rows");
  const std::size_t k = B.k;
  if (k == 0 || B.B.size() != n * k)
    throw InvalidArgument("tentative_prolongator: near-null space must have k >= 1 columns of length " +
                          std::to_string(n) + ", got " + std::to_string(B.B.size()) + " values for k = " +
                          std::to_string(k));
  const std::size_t na = agg.count, nn = n / b;
  // rows of each aggregate, in increasing order (counting sort by aggregate)
  std::vector<std::size_t> start(na + 1, 0);
  for (std::size_t I = 0; I < nn; ++I)
    if (agg.of_node[I] >= 0) start[static_cast<std::size_t>(agg.of_node[I]) + 1] += b;
  for (std::size_t a = 0; a < na; ++a) start[a + 1] += start[a];
  std::vector<std::size_t> rows(start[na]), fill(start.begin(), start.end() - 1);
  for (std::size_t I = 0; I < nn; ++I)
    if (agg.of_node[I] >= 0)
      for (std::size_t r = 0; r < b; ++r) rows[fill[static_cast<std::size_t>(agg.of_node[I])]++] = I * b + r;

  TentativeProlongator out;
  out.coarse.k = k;
  out.coarse.B.assign(na * k * k, 0.0);  // (na k) x k, column-major
  // Q per aggregate, stored per row: Qrow[row * k + c]
  std::vector<double> Q(n * k, 0.0);
  std::vector<double> q, R(k * k);
  for (std::size_t a = 0; a < na; ++a) {
    const std::size_t m = start[a + 1] - start[a];
    const std::size_t* ra = rows.data() + start[a];
    q.assign(m * k, 0.0);  // column-major m x k
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t i = 0; i < m; ++i) q[i + m * c] = B.B[ra[i] + n * c];
    std::fill(R.begin(), R.end(), 0.0);
    // modified Gram-Schmidt, each column orthogonalised twice (re-orthogonalisation keeps Q
    // orthonormal to rounding for nearly dependent columns); a column whose remainder is below
    // 1e-10 of its norm is dependent: zero column, zero row of R.
    for (std::size_t c = 0; c < k; ++c) {
      double* qc = q.data() + m * c;
      double norm0 = 0;
      for (std::size_t i = 0; i < m; ++i) norm0 += qc[i] * qc[i];
      norm0 = std::sqrt(norm0);
      for (int pass = 0; pass < 2; ++pass)
        for (std::size_t p = 0; p < c; ++p) {
          const double* qp = q.data() + m * p;
          double d = 0;
          for (std::size_t i = 0; i < m; ++i) d += qp[i] * qc[i];
          for (std::size_t i = 0; i < m; ++i) qc[i] -= d * qp[i];
          R[p + k * c] += d;
        }
      double norm = 0;
      for (std::size_t i = 0; i < m; ++i) norm += qc[i] * qc[i];
      norm = std::sqrt(norm);
      if (!(norm > 1e-10 * norm0) || norm0 == 0.0) {
        for (std::size_t i = 0; i < m; ++i) qc[i] = 0.0;
        continue;
      }
      for (std::size_t i = 0; i < m; ++i) qc[i] /= norm;
      R[c + k * c] = norm;
    }
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t i = 0; i < m; ++i) Q[ra[i] * k + c] = q[i + m * c];
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t r = 0; r < k; ++r) out.coarse.B[(a * k + r) + na * k * c] = R[r + k * c];
  }
  CsrMatrix& T = out.T;
  T.rows = n;
  T.cols = na * k;
  T.row_ptr.assign(n + 1, 0);
  for (std::size_t I = 0; I < nn; ++I) {
    const std::int32_t a = agg.of_node[I];
    for (std::size_t r = 0; r < b; ++r) {
      const std::size_t i = I * b + r;
      if (a >= 0)
        for (std::size_t c = 0; c < k; ++c) {
          const double v = Q[i * k + c];
          if (v == 0.0) continue;
          T.col.push_back(static_cast<std::int32_t>(static_cast<std::size_t>(a) * k + c));
          T.val.push_back(v);
        }
      T.row_ptr[i + 1] = static_cast<std::int64_t>(T.col.size());
    }
  }
  return out;
}

}  // namespace elliptica::multigrid
