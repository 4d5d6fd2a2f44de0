/// @file hierarchy.cpp
/// Geometric coarsening, interpolation, Galerkin operators and the coarsest-level direct solve
/// (banded Cholesky: lexicographic grid operators have half-bandwidth ~ nx (2D) or nx ny (3D)).
#include "elliptica/multigrid/hierarchy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"

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

namespace {

bool can_coarsen(const GridShape& s, int c) {
  for (int d = 0; d < s.dim; ++d) {
    const int N = s.n[d] + 1;
    if (N % c != 0 || N / c < 2) return false;
  }
  return true;
}

GridShape coarse_shape(const GridShape& s, int c) {
  GridShape g = s;
  for (int d = 0; d < s.dim; ++d) g.n[d] = (s.n[d] + 1) / c - 1;
  return g;
}

}  // namespace

CsrMatrix prolongation(const GridShape& fine, int c) {
  if (fine.dim < 1 || fine.dim > 3)
    throw InvalidArgument("prolongation: dimension must be 1, 2 or 3, got " + std::to_string(fine.dim));
  if (c < 2) throw InvalidArgument("prolongation: coarsening factor must be >= 2, got " + std::to_string(c));
  for (int d = 0; d < fine.dim; ++d)
    if (fine.n[d] < 1 || (fine.n[d] + 1) % c != 0)
      throw InvalidArgument("prolongation: axis " + std::to_string(d) + " has " + std::to_string(fine.n[d] + 1) +
                            " intervals, not divisible by the coarsening factor " + std::to_string(c));
  const GridShape coarse = coarse_shape(fine, c);
  // Per axis: for each fine unknown, up to two (coarse unknown, weight) pairs.
  struct W {
    int idx[2];
    double w[2];
    int cnt;
  };
  std::array<std::vector<W>, 3> ax;
  for (int d = 0; d < 3; ++d) {
    const int nf = d < fine.dim ? fine.n[d] : 1;
    ax[d].resize(nf);
    if (d >= fine.dim) {
      ax[d][0] = W{{0, 0}, {1.0, 0.0}, 1};
      continue;
    }
    const int nc = coarse.n[d];
    for (int i = 0; i < nf; ++i) {
      const int g = i + 1, J = g / c, r = g % c;
      W w{{0, 0}, {0, 0}, 0};
      auto add = [&](int Jc, double wt) {
        if (Jc >= 1 && Jc <= nc && wt != 0.0) {
          w.idx[w.cnt] = Jc - 1;
          w.w[w.cnt] = wt;
          ++w.cnt;
        }
      };
      add(J, 1.0 - static_cast<double>(r) / c);
      if (r != 0) add(J + 1, static_cast<double>(r) / c);
      ax[d][i] = w;
    }
  }
  const int nfx = fine.n[0], nfy = fine.dim > 1 ? fine.n[1] : 1, nfz = fine.dim > 2 ? fine.n[2] : 1;
  const int ncx = coarse.n[0], ncy = fine.dim > 1 ? coarse.n[1] : 1, ncz = fine.dim > 2 ? coarse.n[2] : 1;
  CsrMatrix P;
  P.rows = static_cast<std::size_t>(nfx) * nfy * nfz;
  P.cols = static_cast<std::size_t>(ncx) * ncy * ncz;
  P.row_ptr.assign(P.rows + 1, 0);
  std::size_t row = 0;
  for (int k = 0; k < nfz; ++k)
    for (int j = 0; j < nfy; ++j)
      for (int i = 0; i < nfx; ++i, ++row) {
        const W &wx = ax[0][i], &wy = ax[1][j], &wz = ax[2][k];
        // Loops z, y, x outermost-to-innermost with increasing coarse indices: columns sorted.
        for (int c3 = 0; c3 < wz.cnt; ++c3)
          for (int c2 = 0; c2 < wy.cnt; ++c2)
            for (int c1 = 0; c1 < wx.cnt; ++c1) {
              const std::int64_t col =
                  wx.idx[c1] + static_cast<std::int64_t>(ncx) * (wy.idx[c2] + static_cast<std::int64_t>(ncy) * wz.idx[c3]);
              P.col.push_back(static_cast<std::int32_t>(col));
              P.val.push_back(wx.w[c1] * wy.w[c2] * wz.w[c3]);
            }
        P.row_ptr[row + 1] = static_cast<std::int64_t>(P.col.size());
      }
  return P;
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
      if (l.P.rows != n || l.P.cols != nc || l.R.rows != nc || l.R.cols != n)
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
  std::vector<Level> levels;
  levels.push_back(Level::from_matrix(std::move(A), shape, opt.threads));
  while (can_coarsen(levels.back().shape, c) &&
         (opt.max_levels == 0 || levels.size() < static_cast<std::size_t>(opt.max_levels))) {
    Level& f = levels.back();
    f.P = prolongation(f.shape, c);
    f.R = f.P.transpose();
    CsrMatrix Ac = triple_product(f.R, *f.matrix, f.P, opt.threads);
    const GridShape cs = coarse_shape(f.shape, c);
    levels.push_back(Level::from_matrix(std::move(Ac), cs, opt.threads));
  }
  std::shared_ptr<const LinearOperator<double>> coarse;
  if (opt.coarse == CoarseSolverKind::BandedCholesky) coarse = std::make_shared<const BandedCholesky>(*levels.back().matrix);
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
