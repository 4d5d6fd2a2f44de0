#pragma once
/// @file hierarchy.hpp
/// Geometric multigrid hierarchy on a structured box grid (seed 003, section 3): coarsening
/// factor c (2: n_c = n/2, or 8: aggressive n_c = n/8, n counting intervals per axis),
/// prolongation by linear / bilinear / trilinear interpolation, restriction R = P^T, Galerkin
/// coarse operators A_{j+1} = P_j^T A_j P_j, and an exact (banded Cholesky) solve on the coarsest level.
#include <cstddef>
#include <memory>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace elliptica::multigrid {

/// One level: its operator and grid; P maps the next coarser level to this one (empty on the
/// coarsest level), R = P^T.
struct Level {
  CsrMatrix A;
  GridShape shape;
  CsrMatrix P;
  CsrMatrix R;
};

/// Linear interpolation from the grid with N/c intervals per axis to the grid with N intervals per
/// axis (N = fine.n[d] + 1): coarse point J sits at fine point c J; a fine point between the
/// coarse points J and J+1 gets the weights 1 - r/c and r/c (r = its offset from c J), tensor
/// products across axes; boundary points (zero) dropped. Size prod(fine.n) x prod(coarse.n).
/// Throws InvalidArgument unless every axis's interval count is divisible by c.
CsrMatrix prolongation(const GridShape& fine, int c);

class Hierarchy {
 public:
  /// Coarsens (all axes together) while every axis's interval count N is divisible by c and
  /// N / c >= 2, i.e. down to one unknown per axis when N is 2 c^L (n = 128: 7 levels for c = 2,
  /// 3 for c = 8). A must be the shape's operator (rows = prod(shape.n)); max_levels caps the
  /// number of levels (0: no cap). The coarsest operator (must be SPD) is factorised once
  /// (banded Cholesky).
  /// Throws InvalidArgument on c not in {2, 8}, dim not in {1,2,3} or a size mismatch, and
  /// NumericalError when the coarsest operator is not symmetric positive definite, InvalidArgument
  /// when it is too large for the banded factorisation (n (w + 1) > 2.5e8, w the half-bandwidth).
  Hierarchy(CsrMatrix A, const GridShape& shape, int coarsening, int max_levels = 0);
  ~Hierarchy();
  Hierarchy(Hierarchy&&) noexcept;
  Hierarchy& operator=(Hierarchy&&) noexcept;

  std::size_t num_levels() const { return levels_.size(); }
  const Level& level(std::size_t j) const { return levels_.at(j); }
  int coarsening() const { return c_; }
  /// Operator complexity sum_j nnz(A_j) / nnz(A_0) (stored nonzeros, explicit zeros included).
  double operator_complexity() const;
  /// Grid complexity sum_j rows(A_j) / rows(A_0).
  double grid_complexity() const;
  /// x = A_L^{-1} b on the coarsest level (b, x of length rows(A_L); may alias).
  void coarse_solve(const double* b, double* x) const;

 private:
  std::vector<Level> levels_;
  int c_ = 2;
  struct Coarse;
  std::unique_ptr<Coarse> coarse_;
};

}  // namespace elliptica::multigrid
