/// @file hierarchy.cpp
/// Geometric coarsening, interpolation, Galerkin operators and the coarsest-level direct solve
/// (banded Cholesky: lexicographic grid operators have half-bandwidth ~ nx (2D) or nx ny (3D)).
#include "elliptica/multigrid/hierarchy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/stencil.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

SharedCsrOperator::SharedCsrOperator(std::shared_ptr<const CsrMatrix> A, int threads, bool symmetric)
    : A_(std::move(A)), threads_(threads), symmetric_(symmetric) {
  if (!A_) throw InvalidArgument("SharedCsrOperator: null matrix");
  if (A_->rows != A_->cols)
    throw InvalidArgument("SharedCsrOperator: matrix must be square, got " + std::to_string(A_->rows) + " x " +
                          std::to_string(A_->cols));
  if (threads < 0) throw InvalidArgument("SharedCsrOperator: threads must be >= 0, got " + std::to_string(threads));
}

const CsrMatrix* csr_of(const LinearOperator<double>& A) {
  if (const auto* s = dynamic_cast<const SharedCsrOperator*>(&A)) return &s->matrix();
  if (const auto* c = dynamic_cast<const CsrOperator*>(&A)) return &c->matrix();
  return nullptr;
}

Level Level::from_matrix(CsrMatrix A, const GridShape& shape, int threads) {
  Level l;
  // A grid level's interior rows are usually one constant stencil (a constant-coefficient
  // operator and its Galerkin coarse operators): the row kernels then read the vectors only.
  // Without a grid shape (algebraic levels) the grid is guessed from the matrix.
  if (shape.dim > 0)
    attach_stencil(A, shape.dim, shape.n);
  else
    attach_stencil(A);
  l.diagonal = A.diagonal();
  l.matrix = std::make_shared<const CsrMatrix>(std::move(A));
  l.A = std::make_shared<const SharedCsrOperator>(l.matrix, threads, true);
  l.shape = shape;
  return l;
}

// Row i of L is stored in band[i (w + 1) + (j - i + w)] for j in [i - w, i].
BandedCholesky::BandedCholesky(const CsrMatrix& A) : n_(A.rows) {
  if (A.rows != A.cols)
    throw InvalidArgument("BandedCholesky: matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  const std::size_t n = n_;
  std::size_t w = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[p]);
      w = std::max(w, i > j ? i - j : j - i);
    }
  w_ = w;
  if (static_cast<double>(n) * static_cast<double>(w + 1) > 2.5e8)
    throw InvalidArgument("Hierarchy: coarsest level (" + std::to_string(n) + " unknowns, half-bandwidth " +
                          std::to_string(w) + ") is too large for the direct solve; choose a grid that coarsens further");
  // Symmetry check, then copy the lower triangle into the band.
  const CsrMatrix T = A.transpose();
  double scale = 0;
  for (double v : A.val) scale = std::max(scale, std::abs(v));
  for (std::size_t q = 0; q < A.nnz(); ++q)
    if (A.col[q] != T.col[q] || std::abs(A.val[q] - T.val[q]) > 1e-12 * scale)
      throw NumericalError("Hierarchy: the coarsest operator is not symmetric; the direct solve needs an SPD operator");
  band_.assign(n * (w + 1), 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[p]);
      if (j <= i) L(i, j) = A.val[p];
    }
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t k0 = j > w ? j - w : 0;
    double d = L(j, j);
    for (std::size_t k = k0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > 0) || !std::isfinite(d))
      throw NumericalError("Hierarchy: the coarsest operator is not positive definite (Cholesky pivot " +
                           std::to_string(j) + ")");
    const double ljj = std::sqrt(d);
    L(j, j) = ljj;
    const std::size_t iend = std::min(n - 1, j + w);
    for (std::size_t i = j + 1; i <= iend; ++i) {
      const std::size_t k1 = i > w ? std::max(i - w, k0) : k0;
      double s = L(i, j);
      for (std::size_t k = k1; k < j; ++k) s -= L(i, k) * L(j, k);
      L(i, j) = s / ljj;
    }
  }
}

void BandedCholesky::apply(const double* b, double* x) const {
  const std::size_t n = n_, w = w_;
  std::vector<double> y(b, b + n);
  for (std::size_t i = 0; i < n; ++i) {  // L y = b
    double s = y[i];
    for (std::size_t k = i > w ? i - w : 0; k < i; ++k) s -= L(i, k) * y[k];
    y[i] = s / L(i, i);
  }
  for (std::size_t i = n; i-- > 0;) {  // L^T x = y
    double s = y[i];
    const std::size_t kend = std::min(n - 1, i + w);
    for (std::size_t k = i + 1; k <= kend; ++k) s -= L(k, i) * y[k];
    y[i] = s / L(i, i);
  }
  std::copy(y.begin(), y.end(), x);
}

CsrMatrix prolongation(const GridShape& fine, int c) {
  if (fine.dim < 1 || fine.dim > 3)
    throw InvalidArgument("prolongation: dimension must be 1, 2 or 3, got " + std::to_string(fine.dim));
  if (c < 2) throw InvalidArgument("prolongation: coarsening factor must be >= 2, got " + std::to_string(c));
  for (int d = 0; d < fine.dim; ++d)
    if (fine.n[d] < 1 || (fine.n[d] + 1) % c != 0)
      throw InvalidArgument("prolongation: axis " + std::to_string(d) + " has " + std::to_string(fine.n[d] + 1) +
                            " intervals, not divisible by the coarsening factor " + std::to_string(c));
  return tensor_prolongation(fine, GridKind::Vertex, {c, c, c});
}

Hierarchy::Hierarchy(std::vector<Level> levels, std::shared_ptr<const LinearOperator<double>> coarse_solver,
                     int coarsening)
    : levels_(std::move(levels)), c_(coarsening) {
  if (levels_.empty()) throw InvalidArgument("Hierarchy: no levels");
  for (std::size_t j = 0; j < levels_.size(); ++j) {
    const Level& l = levels_[j];
    const std::string lj = "Hierarchy: level " + std::to_string(j);
    if (!l.A) throw InvalidArgument(lj + " has no operator");
    const std::size_t n = l.A->size();
    if (l.diagonal.size() != n)
      throw InvalidArgument(lj + ": diagonal has length " + std::to_string(l.diagonal.size()) + ", expected " +
                            std::to_string(n));
    if (l.matrix && (l.matrix->rows != n || l.matrix->cols != n))
      throw InvalidArgument(lj + ": its matrix does not match the operator's size " + std::to_string(n));
    if (j + 1 < levels_.size()) {
      const std::size_t nc = levels_[j + 1].A ? levels_[j + 1].A->size() : 0;
      if (l.transfer) {
        if (l.transfer->fine_size() != n || l.transfer->coarse_size() != nc)
          throw InvalidArgument(lj + ": its transfer maps " + std::to_string(l.transfer->coarse_size()) + " to " +
                                std::to_string(l.transfer->fine_size()) + " unknowns, expected " + std::to_string(nc) +
                                " to " + std::to_string(n));
      } else if (l.P.rows != n || l.P.cols != nc || l.R.rows != nc || l.R.cols != n)
        throw InvalidArgument(lj + ": P must be " + std::to_string(n) + " x " + std::to_string(nc) + " and R " +
                              std::to_string(nc) + " x " + std::to_string(n) + ", got P " + std::to_string(l.P.rows) +
                              " x " + std::to_string(l.P.cols) + ", R " + std::to_string(l.R.rows) + " x " +
                              std::to_string(l.R.cols));
    }
  }
  if (coarse_solver) set_coarse_solver(std::move(coarse_solver));
}

Hierarchy Hierarchy::geometric(CsrMatrix A, const GridShape& shape, const HierarchyOptions& opt) {
  const int c = opt.coarsening;
  if (c != 2 && c != 8)
    throw InvalidArgument("Hierarchy: coarsening factor must be 2 or 8, got " + std::to_string(c));
  if (shape.dim < 1 || shape.dim > 3)
    throw InvalidArgument("Hierarchy: grid dimension must be 1, 2 or 3, got " + std::to_string(shape.dim));
  if (opt.max_levels < 0) throw InvalidArgument("Hierarchy: max_levels must be >= 0");
  if (opt.threads < 0) throw InvalidArgument("Hierarchy: threads must be >= 0, got " + std::to_string(opt.threads));
  std::size_t rows = 1;
  for (int d = 0; d < shape.dim; ++d) {
    if (shape.n[d] < 1) throw InvalidArgument("Hierarchy: grid axis " + std::to_string(d) + " has no unknowns");
    rows *= static_cast<std::size_t>(shape.n[d]);
  }
  if (A.rows != A.cols || A.rows != rows)
    throw InvalidArgument("Hierarchy: operator is " + std::to_string(A.rows) + " x " + std::to_string(A.cols) +
                          " but the grid has " + std::to_string(rows) + " unknowns");
  A.validate();
  if (!(opt.semi_coarsening_threshold > 0.0 && opt.semi_coarsening_threshold <= 1.0))
    throw InvalidArgument("Hierarchy: semi_coarsening_threshold must be in (0, 1], got " +
                          std::to_string(opt.semi_coarsening_threshold));
  std::vector<Level> levels;
  levels.push_back(Level::from_matrix(std::move(A), shape, opt.threads));
  std::array<std::vector<double>, 3> coords;  // node coordinates of the current level's axes
  for (int d = 0; d < shape.dim; ++d) coords[d] = uniform_coordinates(opt.grid, shape.n[d]);
  while (opt.max_levels == 0 || levels.size() < static_cast<std::size_t>(opt.max_levels)) {
    Level& f = levels.back();
    const std::array<double, 3> couplings = opt.semi_coarsening == SemiCoarsening::Off
                                                ? std::array<double, 3>{1.0, 1.0, 1.0}
                                                : axis_couplings(*f.matrix, f.shape);
    const std::array<int, 3> factor =
        coarsening_factors(f.shape, opt.grid, c, opt.semi_coarsening, couplings, opt.semi_coarsening_threshold);
    if (factor[0] == 1 && factor[1] == 1 && factor[2] == 1) break;  // no axis left to coarsen
    // A semi-definite operator (SparseDirect coarse solve) stops at <= kSingularCoarsest unknowns:
    // on one unknown its Galerkin value is rounding noise that SparseDirect could not tell from a
    // pivot, and a smoothed level with hardly more unknowns than the smoother's Lanczos steps
    // runs into the null vector (p^T A p = 0) once the rest of its Krylov space is exhausted.
    constexpr std::size_t kSingularCoarsest = 64;
    if (opt.coarse == CoarseSolverKind::SparseDirect && f.rows() <= kSingularCoarsest) break;
    const GridShape cs = coarsened_shape(f.shape, opt.grid, factor);
    // Cell grids: interpolate to zero at Dirichlet walls, across the seam of periodic axes.
    std::array<std::array<bool, 2>, 3> walls{};
    std::array<bool, 3> wrap{false, false, false};
    if (opt.grid == GridKind::Cell) {
      walls = dirichlet_walls(*f.matrix, f.shape);
      wrap = periodic_axes(*f.matrix, f.shape);
    }
    f.P = tensor_prolongation(f.shape, opt.grid, factor, &coords, &walls, &wrap, opt.threads);
    for (int d = 0; d < f.shape.dim; ++d) coords[d] = coarse_coordinates(opt.grid, coords[d], factor[d]);
    f.R = f.P.transpose();
    CsrMatrix Ac = triple_product(f.R, *f.matrix, f.P, opt.threads);
    levels.push_back(Level::from_matrix(std::move(Ac), cs, opt.threads));
  }
  std::shared_ptr<const LinearOperator<double>> coarse;
  if (opt.coarse == CoarseSolverKind::BandedCholesky) coarse = std::make_shared<const BandedCholesky>(*levels.back().matrix);
  if (opt.coarse == CoarseSolverKind::SparseDirect)
    coarse = std::make_shared<const multigrid::SparseDirect>(*levels.back().matrix);
  return Hierarchy(std::move(levels), std::move(coarse), c);
}

Hierarchy::Hierarchy(CsrMatrix A, const GridShape& shape, int coarsening, int max_levels)
    : Hierarchy(geometric(std::move(A), shape, HierarchyOptions{coarsening, max_levels})) {}

Hierarchy::~Hierarchy() = default;
Hierarchy::Hierarchy(Hierarchy&&) noexcept = default;
Hierarchy& Hierarchy::operator=(Hierarchy&&) noexcept = default;

double Hierarchy::operator_complexity() const {
  double s = 0;
  for (const auto& l : levels_) {
    if (!l.matrix) return 0.0;
    s += static_cast<double>(l.matrix->nnz());
  }
  return s / static_cast<double>(levels_.front().matrix->nnz());
}

double Hierarchy::grid_complexity() const {
  double s = 0;
  for (const auto& l : levels_) s += static_cast<double>(l.rows());
  return s / static_cast<double>(levels_.front().rows());
}

void Hierarchy::set_coarse_solver(std::shared_ptr<const LinearOperator<double>> s) {
  if (!s) throw InvalidArgument("Hierarchy: null coarse solver");
  if (s->size() != levels_.back().rows())
    throw InvalidArgument("Hierarchy: coarse solver has size " + std::to_string(s->size()) +
                          " but the coarsest level has " + std::to_string(levels_.back().rows()) + " unknowns");
  coarse_ = std::move(s);
}

void Hierarchy::coarse_solve(const double* b, double* x) const {
  if (!coarse_) throw InvalidArgument("Hierarchy: no coarse solver set (set_coarse_solver)");
  if (b == x) {
    std::vector<double> tmp(b, b + coarse_->size());
    coarse_->apply(tmp.data(), x);
  } else {
    coarse_->apply(b, x);
  }
}

}  // namespace elliptica::multigrid
