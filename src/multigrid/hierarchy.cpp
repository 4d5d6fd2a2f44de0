/// @file hierarchy.cpp
/// Geometric coarsening, interpolation, Galerkin operators and the coarsest-level direct solve
/// (banded Cholesky: lexicographic grid operators have half-bandwidth ~ nx (2D) or nx ny (3D)).
#include "elliptica/multigrid/hierarchy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::multigrid {

/// Banded Cholesky factor A = L L^T of an SPD matrix of half-bandwidth w; row i of L is stored in
/// band[i (w + 1) + (j - i + w)] for j in [i - w, i].
struct Hierarchy::Coarse {
  std::size_t n = 0, w = 0;
  std::vector<double> band;
  double& L(std::size_t i, std::size_t j) { return band[i * (w + 1) + (j + w - i)]; }
  double L(std::size_t i, std::size_t j) const { return band[i * (w + 1) + (j + w - i)]; }

  explicit Coarse(const CsrMatrix& A) : n(A.rows) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
        const auto j = static_cast<std::size_t>(A.col[p]);
        w = std::max(w, i > j ? i - j : j - i);
      }
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
    band.assign(n * (w + 1), 0.0);
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

  void solve(const double* b, double* x) const {
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
};

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

Hierarchy::Hierarchy(CsrMatrix A, const GridShape& shape, int coarsening, int max_levels) : c_(coarsening) {
  if (coarsening != 2 && coarsening != 8)
    throw InvalidArgument("Hierarchy: coarsening factor must be 2 or 8, got " + std::to_string(coarsening));
  if (shape.dim < 1 || shape.dim > 3)
    throw InvalidArgument("Hierarchy: grid dimension must be 1, 2 or 3, got " + std::to_string(shape.dim));
  if (max_levels < 0) throw InvalidArgument("Hierarchy: max_levels must be >= 0");
  std::size_t rows = 1;
  for (int d = 0; d < shape.dim; ++d) {
    if (shape.n[d] < 1) throw InvalidArgument("Hierarchy: grid axis " + std::to_string(d) + " has no unknowns");
    rows *= static_cast<std::size_t>(shape.n[d]);
  }
  if (A.rows != A.cols || A.rows != rows)
    throw InvalidArgument("Hierarchy: operator is " + std::to_string(A.rows) + " x " + std::to_string(A.cols) +
                          " but the grid has " + std::to_string(rows) + " unknowns");
  A.validate();
  levels_.push_back(Level{std::move(A), shape, {}, {}});
  while (can_coarsen(levels_.back().shape, c_) &&
         (max_levels == 0 || levels_.size() < static_cast<std::size_t>(max_levels))) {
    Level& f = levels_.back();
    f.P = prolongation(f.shape, c_);
    f.R = f.P.transpose();
    Level next;
    next.shape = coarse_shape(f.shape, c_);
    next.A = triple_product(f.R, f.A, f.P);
    levels_.push_back(std::move(next));
  }
  coarse_ = std::make_unique<Coarse>(levels_.back().A);
}

Hierarchy::~Hierarchy() = default;
Hierarchy::Hierarchy(Hierarchy&&) noexcept = default;
Hierarchy& Hierarchy::operator=(Hierarchy&&) noexcept = default;

double Hierarchy::operator_complexity() const {
  double s = 0;
  for (const auto& l : levels_) s += static_cast<double>(l.A.nnz());
  return s / static_cast<double>(levels_.front().A.nnz());
}

double Hierarchy::grid_complexity() const {
  double s = 0;
  for (const auto& l : levels_) s += static_cast<double>(l.A.rows);
  return s / static_cast<double>(levels_.front().A.rows);
}

void Hierarchy::coarse_solve(const double* b, double* x) const { coarse_->solve(b, x); }

}  // namespace elliptica::multigrid
