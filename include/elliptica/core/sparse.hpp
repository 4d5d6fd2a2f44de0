#pragma once
/// @file sparse.hpp
/// Compressed sparse row (CSR) matrix of doubles: the operator format of the multigrid module and
/// of Matrix Market input. Row-major, 0-based, column indices sorted within each row, no duplicate
/// entries (from_triplets sums duplicates).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"

namespace elliptica {

struct StencilForm;  // core/stencil.hpp

struct CsrMatrix {
  std::size_t rows = 0, cols = 0;
  std::vector<std::int64_t> row_ptr;  ///< size rows + 1
  std::vector<std::int32_t> col;      ///< size nnz
  std::vector<double> val;            ///< size nnz
  /// The constant-coefficient stencil form of the interior rows (core/stencil.hpp,
  /// attach_stencil), which the row kernels below use; null for most matrices. It describes the
  /// values it was detected from: code that changes row_ptr, col or val in place must reset it
  /// (or attach it again). Copies share it; every function here that makes a new matrix leaves
  /// it null.
  std::shared_ptr<const StencilForm> stencil;

  std::size_t nnz() const { return val.size(); }
  /// y = A x (OpenMP over rows above kParallelMinRows rows; threads as in core/parallel.hpp:
  /// 0 = omp_get_max_threads()).
  void multiply(const double* x, double* y, int threads = 0) const;
  /// r = b - A x in one sweep (x, b: cols/rows; r must not alias x).
  void residual(const double* b, const double* x, double* r, int threads = 0) const;
  /// y += alpha A x (y must not alias x).
  void multiply_add(const double* x, double* y, double alpha = 1.0, int threads = 0) const;
  /// Diagonal entries (0 where absent).
  std::vector<double> diagonal() const;
  CsrMatrix transpose() const;
  /// Builds from (row, col, value) triplets, summing duplicates; throws InvalidArgument on an
  /// index out of range or a non-finite value.
  static CsrMatrix from_triplets(std::size_t rows, std::size_t cols, const std::vector<std::int64_t>& r,
                                 const std::vector<std::int64_t>& c, const std::vector<double>& v);
  /// Throws InvalidArgument naming the first inconsistency (sizes, unsorted or out-of-range columns).
  void validate() const;
};

/// C = A * B (sparse-sparse product; Gustavson's algorithm: a dense accumulator per row, rows in
/// parallel above 2000 rows; columns sorted in each row, explicit zeros of the sum kept). Throws
/// InvalidArgument when A.cols != B.rows. `threads` as in core/parallel.hpp (0 = omp_get_max_threads()).
CsrMatrix multiply(const CsrMatrix& A, const CsrMatrix& B, int threads = 0);
/// Galerkin triple product P^T A P.
CsrMatrix galerkin(const CsrMatrix& A, const CsrMatrix& P);
/// C = (R * A) * P: two sparse products (multiply above), the intermediate R A stored (a fused
/// row-by-row R A P recomputes rows of A P once per nonzero in the matching column of R, ruinous
/// on levels that densify; R A has the coarse rows, the smaller intermediate under aggregation). Used for the Galerkin coarse operators R A P with R = P^T. Throws InvalidArgument
/// when the inner dimensions differ. `threads` as in core/parallel.hpp (0 = omp_get_max_threads()).
CsrMatrix triple_product(const CsrMatrix& R, const CsrMatrix& A, const CsrMatrix& P, int threads = 0);

/// What check_symmetry found: the largest relative deviation from symmetry and where.
struct SymmetryReport {
  bool symmetric = true;               ///< every pair meets |a_ij - a_ji| <= rtol * sqrt(m_i m_j)
  bool structurally_symmetric = true;  ///< the stored pattern equals the pattern of A^T
  /// The worst pair (0-based), the one with the largest deviation; meaningful when deviation > 0.
  std::size_t row = 0, col = 0;
  double a_ij = 0, a_ji = 0;  ///< the values at (row, col) and (col, row); an entry not stored counts 0
  /// |a_ij - a_ji| / sqrt(m_i m_j) at the worst pair (m_i = max_k |a_ik|, the largest magnitude of
  /// row i); 0 for an exactly symmetric matrix, +inf when the scale is 0 and the values differ.
  double deviation = 0;
};

/// Checks that a square CSR matrix is symmetric, structurally (pattern of A against A^T) and
/// numerically: (i, j) and (j, i) agree when |a_ij - a_ji| <= rtol * sqrt(m_i m_j), m_i the largest
/// magnitude in row i, and an entry missing from the pattern counts as 0 (so an explicitly stored
/// zero does not make a matrix unsymmetric). The row-scaled bound is unchanged by a scaling of A
/// and follows rows of very different size (coefficient jumps, diagonal scalings), where a bound
/// on max |a| would miss an asymmetry in the small rows; rtol = 1e-12 is about 4500 ulp, room
/// for the rounding of an assembly that sums a_ij and a_ji in different orders, far below any
/// asymmetry that matters to CG. Cost: one pass over the entries with a binary search in row j
/// for each (i, j), no allocation. Needs sorted column indices within rows (as every CsrMatrix
/// has). Throws InvalidArgument when A is not square or rtol is negative or not finite.
SymmetryReport check_symmetry(const CsrMatrix& A, double rtol = 1e-12);

/// "the matrix is not symmetric (a_ij = X, a_ji = Y at row i, column j, B-based)" for the report's
/// worst pair, indices counted from `base` (0: the library and Python; 1: the CLI and Matrix
/// Market files) and the base named, values in their shortest round-trip form.
std::string describe_asymmetry(const SymmetryReport& r, int base = 0);

/// A square CsrMatrix as an operator (core/operator.hpp): apply = multiply with `threads`
/// threads. Holds a reference (the matrix must outlive it). `symmetric` is the caller's promise
/// that the matrix is symmetric positive definite (CG may then use it as a preconditioner);
/// it is not checked. InvalidArgument when the matrix is not square.
class CsrOperator : public LinearOperator<double> {
 public:
  explicit CsrOperator(const CsrMatrix& A, int threads = 0, bool symmetric = false);
  std::size_t size() const override { return A_.rows; }
  void apply(const double* x, double* y) const override { A_.multiply(x, y, threads_); }
  bool is_symmetric() const override { return symmetric_; }
  const CsrMatrix& matrix() const { return A_; }

 private:
  const CsrMatrix& A_;
  int threads_;
  bool symmetric_;
};

namespace io {
/// What the banner and the size line of a Matrix Market file declare.
struct MatrixMarketInfo {
  std::size_t rows = 0, cols = 0;
  std::size_t entries = 0;     ///< entry lines declared (array format: rows x cols values)
  std::size_t stored_max = 0;  ///< upper bound of the stored entries (symmetric: 2 x entries; at most what the file can hold)
  bool symmetric = false, pattern = false, array = false;
};

/// Reads only the banner and the size line (cheap for any file size), so that a caller can
/// check the declared sizes (against a right-hand side, say) before the body is read and
/// allocated. Throws as read_matrix_market for those lines, also IOError when the declared
/// entry count cannot fit in the rest of the file, and ResourceError when the declared matrix
/// needs more memory than memory_limit_bytes().
MatrixMarketInfo read_matrix_market_info(const std::string& path);

/// Reads a Matrix Market file (coordinate real/integer/pattern, general or symmetric; array real
/// general). Throws IOError naming the file, the line and the problem (bad banner, unsupported
/// field or symmetry, wrong entry count, an entry count the rest of the file cannot hold, index
/// out of range, non-numeric value, truncated file), ResourceError when the declared sizes need
/// more memory than memory_limit_bytes() (checked before allocating).
CsrMatrix read_matrix_market(const std::string& path);
}  // namespace io

}  // namespace elliptica
