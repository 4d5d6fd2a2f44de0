#pragma once
/// @file stencil.hpp
/// The constant-coefficient stencil form of a CSR matrix on a structured grid.
///
/// A finite-difference operator on a box grid, and the Galerkin coarse operators of its geometric
/// hierarchy, have the same entries in every row away from the boundary: the 5-point Laplacian
/// (-1, -1, 4, -1, -1) at the column offsets (-nx, -1, 0, 1, nx), its bilinear Galerkin coarse
/// operator a 9-point stencil, and so on. A CSR sweep reads a value (8 bytes) and a column index
/// (4 bytes) per entry; the stencil form reads K coefficients once and the vectors alone, about
/// 5x less memory traffic on a 5-point operator (structured-grid multigrid codes, e.g. hypre's
/// Struct interface, store operators this way). The CSR arrays stay the matrix: the stencil form
/// only tells the row sweeps of core/csr_kernels.hpp that the interior rows (those at least
/// `reach` points from every face of the grid) equal the stencil exactly, entry for entry, so
/// that they may compute those rows from the stencil. The boundary rows are read from the CSR
/// arrays as before, and a row computed either way gives the same sum in the same order.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace elliptica {

struct CsrMatrix;

/// The constant-coefficient form of a CSR matrix's interior rows (see the file comment).
/// Unknowns are numbered lexicographically on a grid of n[0] x n[1] x n[2] points, x fastest
/// (n[d] = 1 for the axes beyond dim).
struct StencilForm {
  int dim = 0;                            ///< 1, 2 or 3
  std::array<std::int64_t, 3> n{1, 1, 1};  ///< grid points per axis
  std::array<int, 3> reach{0, 0, 0};       ///< largest |shift| of the stencil along each axis
  std::vector<std::int64_t> offset;       ///< column - row of each entry, ascending (the CSR order)
  std::vector<double> coef;               ///< the entries, in the order of `offset`
  std::size_t interior_rows = 0;          ///< rows the stencil gives (the rest: CSR)
};

/// The stencil form of A on the grid n (dim axes; n[d] points along axis d, x fastest), or null
/// when A does not have one: when A is not square with prod(n) rows, the grid has no interior
/// row, the stencil reaches further than 3 points or has more than 125 entries along any axis,
/// or any interior row differs from the grid's central row in its column offsets or values (exact
/// comparison: a variable coefficient has no stencil form). Rows at most `reach` points from a
/// face (Dirichlet rows, Neumann or periodic closures) may be anything. Cost: one pass over the
/// interior entries, no allocation beyond the stencil itself. Throws InvalidArgument when dim is
/// not 1, 2 or 3 or an n[d] of the first dim axes is < 1.
std::shared_ptr<const StencilForm> detect_stencil(const CsrMatrix& A, int dim, const std::array<int, 3>& n);

/// Sets A.stencil to detect_stencil(A, dim, n) when at least half of A's rows are interior rows
/// (below that the dispatch between CSR and stencil rows costs more than it saves), otherwise to
/// null. Returns whether a stencil form was attached. Throws as detect_stencil.
bool attach_stencil(CsrMatrix& A, int dim, const std::array<int, 3>& n);

/// True when A.stencil is null or agrees with A's CSR arrays (every interior row equal to the
/// stencil): the check behind the tests, and a guard for code that is handed a matrix whose
/// values may have been changed after attach_stencil.
bool stencil_matches(const CsrMatrix& A);

}  // namespace elliptica
