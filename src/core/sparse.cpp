/// @file sparse.cpp
/// CSR matrix kernels: matvec, diagonal, transpose, triplet assembly, validation, sparse-sparse
/// product (Gustavson) and the Galerkin triple product.
#include "elliptica/core/sparse.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif
#include "core/csr_kernels.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"

namespace elliptica {

CsrOperator::CsrOperator(const CsrMatrix& A, int threads, bool symmetric)
    : A_(A), threads_(threads), symmetric_(symmetric) {
  if (A.rows != A.cols)
    throw InvalidArgument("CsrOperator: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (threads < 0) throw InvalidArgument("CsrOperator: threads must be >= 0, got " + std::to_string(threads));
}

namespace {

/// Records the pair (i, j) in the report: its deviation |a_ij - a_ji| / sqrt(m_i m_j) when it is the
/// largest so far, and symmetric = false when it exceeds rtol.
void compare_pair(SymmetryReport& rep, std::size_t i, std::size_t j, double aij, double aji,
                  const std::vector<double>& m, double rtol) {
  const double diff = std::abs(aij - aji);
  if (diff == 0.0) return;
  const double scale = std::sqrt(m[i]) * std::sqrt(m[j]);
  const double dev = scale > 0.0 ? diff / scale : std::numeric_limits<double>::infinity();
  if (dev > rep.deviation) {
    rep.deviation = dev;
    rep.row = i;
    rep.col = j;
    rep.a_ij = aij;
    rep.a_ji = aji;
  }
  if (diff > rtol * scale) rep.symmetric = false;
}

}  // namespace

SymmetryReport check_symmetry(const CsrMatrix& A, double rtol) {
  if (A.rows != A.cols)
    throw InvalidArgument("check_symmetry: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (!(rtol >= 0.0 && std::isfinite(rtol)))
    throw InvalidArgument("check_symmetry: rtol must be finite and >= 0, got " + std::to_string(rtol));
  const std::size_t n = A.rows;
  std::vector<double> m(n, 0.0);  // row scales max_k |a_ik|
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) m[i] = std::max(m[i], std::abs(A.val[p]));
  SymmetryReport rep;
  // Each pair {i, j} is visited from its upper entry (j > i) only, where the row-major scan of all
  // entries first meets it (so the worst pair reported is the same). That covers every pair when
  // the pattern is symmetric: every upper entry finds its mirror and there are as many lower
  // entries as upper ones. Otherwise the full scan below, which also reports missing mirrors.
  bool half_ok = true;
  std::int64_t upper = 0, lower = 0;
  for (std::size_t i = 0; i < n && half_ok; ++i) {
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[p]);
      if (j < i) {
        ++lower;
        continue;
      }
      if (j == i) continue;
      ++upper;
      const std::int32_t* b = A.col.data() + A.row_ptr[j];
      const std::int32_t* e = A.col.data() + A.row_ptr[j + 1];
      const std::int32_t* q = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      if (q == e || static_cast<std::size_t>(*q) != i) {
        half_ok = false;
        break;
      }
      const double aij = A.val[p];
      const double aji = A.val[static_cast<std::size_t>(q - A.col.data())];
      compare_pair(rep, i, j, aij, aji, m, rtol);
    }
  }
  if (half_ok && upper == lower) return rep;
  rep = SymmetryReport{};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[p]);
      if (j == i) continue;
      // a_ji by binary search in row j (sorted columns).
      const std::int32_t* b = A.col.data() + A.row_ptr[j];
      const std::int32_t* e = A.col.data() + A.row_ptr[j + 1];
      const std::int32_t* q = std::lower_bound(b, e, static_cast<std::int32_t>(i));
      const bool found = q != e && static_cast<std::size_t>(*q) == i;
      if (!found) rep.structurally_symmetric = false;
      const double aij = A.val[p];
      const double aji = found ? A.val[static_cast<std::size_t>(q - A.col.data())] : 0.0;
      compare_pair(rep, i, j, aij, aji, m, rtol);
    }
  }
  return rep;
}

std::string describe_asymmetry(const SymmetryReport& r, int base) {
  auto num = [](double v) {
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, res.ptr);
  };
  const auto b = static_cast<std::size_t>(base);
  return "the matrix is not symmetric (a_ij = " + num(r.a_ij) + ", a_ji = " + num(r.a_ji) + " at row " +
         std::to_string(r.row + b) + ", column " + std::to_string(r.col + b) + ", " + std::to_string(base) + "-based)";
}

void CsrMatrix::multiply(const double* x, double* y, int threads) const {
  detail::csr_row_sweep(*this, x, [y](std::int64_t i, double s) { y[i] = s; }, threads);
}

void CsrMatrix::residual(const double* b, const double* x, double* r, int threads) const {
  detail::csr_row_sweep(*this, x, [b, r](std::int64_t i, double s) { r[i] = b[i] - s; }, threads);
}

void CsrMatrix::multiply_add(const double* x, double* y, double alpha, int threads) const {
  detail::csr_row_sweep(*this, x, [y, alpha](std::int64_t i, double s) { y[i] += alpha * s; }, threads);
}

std::vector<double> CsrMatrix::diagonal() const {
  std::vector<double> d(std::min(rows, cols), 0.0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      if (col[p] == static_cast<std::int32_t>(i)) {
        d[i] = val[p];
        break;
      }
    }
  }
  return d;
}

CsrMatrix CsrMatrix::transpose() const {
  CsrMatrix T;
  T.rows = cols;
  T.cols = rows;
  T.row_ptr.assign(cols + 1, 0);
  T.col.resize(nnz());
  T.val.resize(nnz());
  for (std::size_t p = 0; p < nnz(); ++p) ++T.row_ptr[static_cast<std::size_t>(col[p]) + 1];
  for (std::size_t j = 0; j < cols; ++j) T.row_ptr[j + 1] += T.row_ptr[j];
  std::vector<std::int64_t> next(T.row_ptr.begin(), T.row_ptr.end() - 1);
  // Rows visited in increasing order, so the columns of T come out sorted.
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      const std::int64_t q = next[static_cast<std::size_t>(col[p])]++;
      T.col[q] = static_cast<std::int32_t>(i);
      T.val[q] = val[p];
    }
  }
  return T;
}

CsrMatrix CsrMatrix::from_triplets(std::size_t rows, std::size_t cols, const std::vector<std::int64_t>& r,
                                   const std::vector<std::int64_t>& c, const std::vector<double>& v) {
  if (r.size() != c.size() || r.size() != v.size())
    throw InvalidArgument("CsrMatrix::from_triplets: triplet arrays differ in length (" + std::to_string(r.size()) +
                          ", " + std::to_string(c.size()) + ", " + std::to_string(v.size()) + ")");
  if (cols > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("CsrMatrix::from_triplets: " + std::to_string(cols) +
                          " columns exceed the 32-bit column index range");
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (r[k] < 0 || static_cast<std::size_t>(r[k]) >= rows || c[k] < 0 || static_cast<std::size_t>(c[k]) >= cols)
      throw InvalidArgument("CsrMatrix::from_triplets: entry " + std::to_string(k) + " (" + std::to_string(r[k]) +
                            ", " + std::to_string(c[k]) + ") is outside the " + std::to_string(rows) + " x " +
                            std::to_string(cols) + " matrix");
    if (!std::isfinite(v[k]))
      throw InvalidArgument("CsrMatrix::from_triplets: entry " + std::to_string(k) + " (" + std::to_string(r[k]) +
                            ", " + std::to_string(c[k]) + ") is not finite");
  }
  // Counting sort by row, then sort each row by column and sum duplicates.
  std::vector<std::int64_t> start(rows + 1, 0);
  for (auto i : r) ++start[static_cast<std::size_t>(i) + 1];
  for (std::size_t i = 0; i < rows; ++i) start[i + 1] += start[i];
  std::vector<std::int64_t> next(start.begin(), start.end() - 1);
  std::vector<std::size_t> order(r.size());
  for (std::size_t k = 0; k < r.size(); ++k) order[next[static_cast<std::size_t>(r[k])]++] = k;

  CsrMatrix A;
  A.rows = rows;
  A.cols = cols;
  A.row_ptr.assign(rows + 1, 0);
  A.col.reserve(r.size());
  A.val.reserve(r.size());
  for (std::size_t i = 0; i < rows; ++i) {
    auto b = order.begin() + start[i], e = order.begin() + start[i + 1];
    std::stable_sort(b, e, [&](std::size_t a, std::size_t bb) { return c[a] < c[bb]; });
    for (auto it = b; it != e; ++it) {
      const auto j = static_cast<std::int32_t>(c[*it]);
      if (static_cast<std::int64_t>(A.col.size()) > A.row_ptr[i] && A.col.back() == j) {
        A.val.back() += v[*it];
      } else {
        A.col.push_back(j);
        A.val.push_back(v[*it]);
      }
    }
    A.row_ptr[i + 1] = static_cast<std::int64_t>(A.col.size());
  }
  return A;
}

void CsrMatrix::validate() const {
  if (row_ptr.size() != rows + 1)
    throw InvalidArgument("CsrMatrix: row_ptr has " + std::to_string(row_ptr.size()) + " entries, expected rows + 1 = " +
                          std::to_string(rows + 1));
  if (col.size() != val.size())
    throw InvalidArgument("CsrMatrix: col has " + std::to_string(col.size()) + " entries but val has " +
                          std::to_string(val.size()));
  if (row_ptr[0] != 0) throw InvalidArgument("CsrMatrix: row_ptr[0] = " + std::to_string(row_ptr[0]) + ", expected 0");
  if (row_ptr[rows] != static_cast<std::int64_t>(col.size()))
    throw InvalidArgument("CsrMatrix: row_ptr[rows] = " + std::to_string(row_ptr[rows]) + " but nnz = " +
                          std::to_string(col.size()));
  for (std::size_t i = 0; i < rows; ++i) {
    if (row_ptr[i + 1] < row_ptr[i])
      throw InvalidArgument("CsrMatrix: row_ptr decreases at row " + std::to_string(i));
    for (std::int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
      if (col[p] < 0 || static_cast<std::size_t>(col[p]) >= cols)
        throw InvalidArgument("CsrMatrix: column index " + std::to_string(col[p]) + " in row " + std::to_string(i) +
                              " is outside [0, " + std::to_string(cols) + ")");
      if (p > row_ptr[i] && col[p] <= col[p - 1])
        throw InvalidArgument("CsrMatrix: columns of row " + std::to_string(i) + " are not strictly increasing");
      if (!std::isfinite(val[p]))
        throw InvalidArgument("CsrMatrix: non-finite value in row " + std::to_string(i) + ", column " +
                              std::to_string(col[p]));
    }
  }
}

CsrMatrix multiply(const CsrMatrix& A, const CsrMatrix& B, int threads) {
  const int nthreads_req = resolve_threads(threads);
  if (A.cols != B.rows)
    throw InvalidArgument("multiply: inner dimensions differ (" + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols) + " times " + std::to_string(B.rows) + " x " +
                          std::to_string(B.cols) + ")");
  CsrMatrix C;
  C.rows = A.rows;
  C.cols = B.cols;
  C.row_ptr.assign(A.rows + 1, 0);
  const auto nr = static_cast<std::int64_t>(A.rows);
  // Gustavson in two passes over contiguous blocks of rows, one per thread: (1) symbolic: the
  // number of distinct columns of each row of C (a marker per column of B); (2) numeric: after the
  // prefix sum, each row is accumulated straight into its slice of C (the marker holds the
  // entry's position) and sorted by column there. C is allocated once at its exact size: no
  // per-thread buffers, no regrowth, no concatenation copy (those were 2/3 of the product's time).
  const bool par = nr > 2000;
  ParallelErrors errors;  // the markers allocate: nothing may escape the region
#pragma omp parallel num_threads(nthreads_req) if (par)
  {
#ifdef _OPENMP
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
#else
    const int nt = 1, t = 0;
#endif
    const std::int64_t r0 = nr * t / nt, r1 = nr * (t + 1) / nt;
    std::vector<std::int64_t> marker;
    errors.run([&] {
      marker.assign(B.cols, -1);
      for (std::int64_t i = r0; i < r1; ++i) {
        std::int64_t len = 0;
        for (std::int64_t p = A.row_ptr[static_cast<std::size_t>(i)]; p < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
          const auto k = static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]);
          for (std::int64_t q = B.row_ptr[k]; q < B.row_ptr[k + 1]; ++q) {
            const auto j = static_cast<std::size_t>(B.col[static_cast<std::size_t>(q)]);
            if (marker[j] != i) {
              marker[j] = i;
              ++len;
            }
          }
        }
        C.row_ptr[static_cast<std::size_t>(i) + 1] = len;
      }
    });
#pragma omp barrier
#pragma omp single
    errors.run([&] {
      for (std::size_t i = 0; i < C.rows; ++i) C.row_ptr[i + 1] += C.row_ptr[i];
      C.col.resize(static_cast<std::size_t>(C.row_ptr[C.rows]));
      C.val.resize(C.col.size());
    });
    // (the implicit barrier of `single` publishes the row pointers and the storage)
    errors.run([&] {  // (skipped when a thread failed above)
        std::fill(marker.begin(), marker.end(), std::int64_t{-1});
        std::vector<std::pair<std::int32_t, double>> tmp;
        for (std::int64_t i = r0; i < r1; ++i) {
          const std::int64_t start = C.row_ptr[static_cast<std::size_t>(i)];
          std::int64_t end = start;
          std::int32_t* cc = C.col.data();
          double* cv = C.val.data();
          for (std::int64_t p = A.row_ptr[static_cast<std::size_t>(i)]; p < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++p) {
            const auto k = static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]);
            const double a = A.val[static_cast<std::size_t>(p)];
            for (std::int64_t q = B.row_ptr[k]; q < B.row_ptr[k + 1]; ++q) {
              const std::int32_t jc = B.col[static_cast<std::size_t>(q)];
              const auto j = static_cast<std::size_t>(jc);
              if (marker[j] < start) {  // first time in this row (positions of earlier rows are < start)
                marker[j] = end;
                cc[end] = jc;
                cv[end] = a * B.val[static_cast<std::size_t>(q)];
                ++end;
              } else {
                cv[marker[j]] += a * B.val[static_cast<std::size_t>(q)];
              }
            }
          }
          const std::int64_t len = end - start;
          if (len <= 32) {  // short rows (grid operators): insertion sort of the (column, value) pairs
            for (std::int64_t u = start + 1; u < end; ++u) {
              const std::int32_t c = cc[u];
              const double v = cv[u];
              std::int64_t w = u - 1;
              for (; w >= start && cc[w] > c; --w) {
                cc[w + 1] = cc[w];
                cv[w + 1] = cv[w];
              }
              cc[w + 1] = c;
              cv[w + 1] = v;
            }
          } else {
            tmp.resize(static_cast<std::size_t>(len));
            for (std::int64_t u = 0; u < len; ++u) tmp[static_cast<std::size_t>(u)] = {cc[start + u], cv[start + u]};
            std::sort(tmp.begin(), tmp.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
            for (std::int64_t u = 0; u < len; ++u) {
              cc[start + u] = tmp[static_cast<std::size_t>(u)].first;
              cv[start + u] = tmp[static_cast<std::size_t>(u)].second;
            }
          }
        }
      });
  }
  errors.rethrow();
  return C;
}

CsrMatrix triple_product(const CsrMatrix& R, const CsrMatrix& A, const CsrMatrix& P, int threads) {
  if (R.cols != A.rows || A.cols != P.rows)
    throw InvalidArgument("triple_product: R is " + std::to_string(R.rows) + " x " + std::to_string(R.cols) + ", A is " +
                          std::to_string(A.rows) + " x " + std::to_string(A.cols) + ", P is " + std::to_string(P.rows) +
                          " x " + std::to_string(P.cols) + "; need R.cols = A.rows and A.cols = P.rows");
  // (R A) P: the intermediate R A is formed once. Fusing the two products row by row of R
  // (never storing an intermediate) recomputes rows of A P once for every nonzero of the matching
  // column of R: 4-9 times the work on grid operators, and ~n_c times on levels that densify (a
  // random graph Laplacian's second level: 100 s instead of 0.1 s at n = 1e4). R A rather than
  // A P: R A has the coarse level's rows, so it is the smaller intermediate when P aggregates
  // many unknowns (smoothed aggregation on a 1023^2 Laplacian: 75 ms against 93 ms for R (A P),
  // the same nnz; the geometric factor-2 hierarchy: equal, 99 vs 101 ms).
  return multiply(multiply(R, A, threads), P, threads);
}

CsrMatrix galerkin(const CsrMatrix& A, const CsrMatrix& P) {
  if (A.rows != A.cols || A.cols != P.rows)
    throw InvalidArgument("galerkin: A is " + std::to_string(A.rows) + " x " + std::to_string(A.cols) + ", P is " +
                          std::to_string(P.rows) + " x " + std::to_string(P.cols) + "; need square A with P.rows = A.cols");
  return triple_product(P.transpose(), A, P);
}

}  // namespace elliptica
