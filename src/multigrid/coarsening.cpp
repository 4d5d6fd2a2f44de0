/// @file coarsening.cpp
/// Geometric coarsening of structured grids of any size: 1D interpolations (vertex- and
/// cell-centred), their tensor product, axis couplings and the choice of coarsened axes.
#include "elliptica/multigrid/coarsening.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"

namespace elliptica::multigrid {

GridKind grid_kind_from_string(const std::string& s) {
  if (s == "vertex") return GridKind::Vertex;
  if (s == "cell") return GridKind::Cell;
  throw InvalidArgument("unknown grid kind '" + s + "' (expected vertex or cell)");
}

std::string to_string(GridKind g) { return g == GridKind::Vertex ? "vertex" : "cell"; }

SemiCoarsening semi_coarsening_from_string(const std::string& s) {
  if (s == "off") return SemiCoarsening::Off;
  if (s == "auto") return SemiCoarsening::Auto;
  if (s == "on") return SemiCoarsening::On;
  throw InvalidArgument("unknown semi-coarsening mode '" + s + "' (expected off, auto or on)");
}

std::string to_string(SemiCoarsening s) {
  switch (s) {
    case SemiCoarsening::Off: return "off";
    case SemiCoarsening::Auto: return "auto";
    case SemiCoarsening::On: return "on";
  }
  return "?";
}

int coarse_count(GridKind /*kind*/, int n, int c) {
  if (n < 1) throw InvalidArgument("coarse_count: an axis needs at least 1 unknown, got " + std::to_string(n));
  if (c < 2) throw InvalidArgument("coarse_count: coarsening factor must be >= 2, got " + std::to_string(c));
  return n / c;  // vertex: multiples of c in [1, N - 1] = floor((N - 1) / c); cell: whole groups of c cells
}

std::vector<double> uniform_coordinates(GridKind kind, int n) {
  if (n < 1) throw InvalidArgument("uniform_coordinates: an axis needs at least 1 unknown, got " + std::to_string(n));
  std::vector<double> x(static_cast<std::size_t>(kind == GridKind::Vertex ? n + 2 : n + 1));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
  return x;
}

namespace {

/// Unknowns of an axis with coordinates x; InvalidArgument unless x is long enough and increasing.
int axis_unknowns(GridKind kind, const std::vector<double>& x, const char* who) {
  const int n = static_cast<int>(x.size()) - (kind == GridKind::Vertex ? 2 : 1);
  if (n < 1) throw InvalidArgument(std::string(who) + ": too few coordinates for an axis with at least 1 unknown");
  for (std::size_t i = 1; i < x.size(); ++i)
    if (!(x[i] > x[i - 1])) throw InvalidArgument(std::string(who) + ": coordinates must be increasing");
  return n;
}

}  // namespace

std::vector<double> coarse_coordinates(GridKind kind, const std::vector<double>& x, int c) {
  const int n = axis_unknowns(kind, x, "coarse_coordinates");
  if (c == 1) return x;
  const int nc = coarse_count(kind, n, c);
  if (nc < 1)
    throw InvalidArgument("coarse_coordinates: an axis of " + std::to_string(n) + " unknowns cannot be coarsened by " +
                          std::to_string(c));
  std::vector<double> X;
  if (kind == GridKind::Vertex) {  // p_0, p_c, ..., p_{c nc}, p_{n+1}
    for (int J = 0; J <= nc; ++J) X.push_back(x[static_cast<std::size_t>(c) * J]);
    X.push_back(x.back());
  } else {  // e_0, e_c, ..., e_{c (nc - 1)}, e_n
    for (int I = 0; I < nc; ++I) X.push_back(x[static_cast<std::size_t>(c) * I]);
    X.push_back(x.back());
  }
  return X;
}

std::vector<Interp1D> interpolation_1d(GridKind kind, int n, int c) {
  if (n < 1) throw InvalidArgument("interpolation_1d: an axis needs at least 1 unknown, got " + std::to_string(n));
  return interpolation_1d(kind, uniform_coordinates(kind, n), c);
}

std::vector<Interp1D> interpolation_1d(GridKind kind, const std::vector<double>& x, int c,
                                       std::array<bool, 2> dirichlet, bool periodic) {
  const int n = axis_unknowns(kind, x, "interpolation_1d");
  if (c < 1) throw InvalidArgument("interpolation_1d: coarsening factor must be >= 1, got " + std::to_string(c));
  std::vector<Interp1D> rows(static_cast<std::size_t>(n));
  if (c == 1) {
    for (int i = 0; i < n; ++i) rows[i] = Interp1D{{i, 0}, {1.0, 0.0}, 1};
    return rows;
  }
  const int nc = coarse_count(kind, n, c);
  if (nc < 1)
    throw InvalidArgument("interpolation_1d: an axis of " + std::to_string(n) + " unknowns cannot be coarsened by " +
                          std::to_string(c));
  auto add = [](Interp1D& r, int J, double w) {
    if (w == 0.0) return;
    r.idx[r.count] = J;
    r.w[r.count] = w;
    ++r.count;
  };
  if (kind == GridKind::Vertex) {
    const int N = n + 1;
    for (int i = 0; i < n; ++i) {
      const int g = i + 1, J0 = g / c, r = g - c * J0;
      const int right = J0 < nc ? c * (J0 + 1) : N;  // the next coarse-grid point (N: the boundary)
      // t = (x_g - X_0) / (X_1 - X_0): on the finest grid exactly r / c (r / (N mod c) on the last interval)
      const double t = (x[g] - x[static_cast<std::size_t>(c) * J0]) / (x[right] - x[static_cast<std::size_t>(c) * J0]);
      Interp1D& row = rows[i];
      // Coarse unknown J sits at the point c (J + 1); the points 0 and N are boundary (dropped).
      if (J0 >= 1) add(row, J0 - 1, 1.0 - t);
      if (r != 0 && J0 < nc) add(row, J0, t);
    }
    return rows;
  }
  // Cell-centred: coarse cell I spans the fine cells c I .. c (I + 1) - 1 (the last one up to n - 1).
  std::vector<double> X(static_cast<std::size_t>(nc));
  for (int I = 0; I < nc; ++I) {
    const int a = c * I, b = I + 1 < nc ? c * (I + 1) : n;
    X[I] = 0.5 * (x[a] + x[b]);
  }
  for (int i = 0; i < n; ++i) {
    const double xi = 0.5 * (x[i] + x[i + 1]);
    Interp1D& row = rows[i];
    if (periodic && nc >= 2 && (xi < X.front() || xi > X.back())) {
      // across the seam: between the last centre (shifted by -L below X_0) and the first
      const double L = x.back() - x.front();
      const double left = xi < X.front() ? X.back() - L : X.back();
      const double right = xi < X.front() ? X.front() : X.front() + L;
      const double t = (xi - left) / (right - left);  // weight of the first coarse cell
      add(row, 0, t);
      add(row, nc - 1, 1.0 - t);
    } else if (xi <= X.front()) {  // between the low wall x[0] and the first coarse centre
      add(row, 0, dirichlet[0] ? (xi - x.front()) / (X.front() - x.front()) : 1.0);
    } else if (xi >= X.back()) {
      add(row, nc - 1, dirichlet[1] ? (x.back() - xi) / (x.back() - X.back()) : 1.0);
    } else {
      int I = std::min(i / c, nc - 1);  // the coarse cell of i; step to the centre left of xi
      while (X[I] > xi) --I;
      while (I + 1 < nc && X[I + 1] <= xi) ++I;
      const double t = (xi - X[I]) / (X[I + 1] - X[I]);
      add(row, I, 1.0 - t);
      add(row, I + 1, t);
    }
  }
  return rows;
}

GridShape coarsened_shape(const GridShape& fine, GridKind kind, const std::array<int, 3>& factor) {
  GridShape g = fine;
  for (int d = 0; d < fine.dim; ++d)
    if (factor[d] > 1) g.n[d] = coarse_count(kind, fine.n[d], factor[d]);
  return g;
}

CsrMatrix tensor_prolongation(const GridShape& fine, GridKind kind, const std::array<int, 3>& factor,
                              const std::array<std::vector<double>, 3>* coords,
                              const std::array<std::array<bool, 2>, 3>* dirichlet,
                              const std::array<bool, 3>* periodic, int threads) {
  if (fine.dim < 1 || fine.dim > 3)
    throw InvalidArgument("prolongation: dimension must be 1, 2 or 3, got " + std::to_string(fine.dim));
  std::array<std::vector<Interp1D>, 3> ax;
  for (int d = 0; d < 3; ++d) {
    if (d >= fine.dim) {
      ax[d] = {Interp1D{{0, 0}, {1.0, 0.0}, 1}};
      continue;
    }
    const std::array<bool, 2> walls = dirichlet ? (*dirichlet)[d] : std::array<bool, 2>{false, false};
    const bool wrap = periodic && (*periodic)[d];
    if (coords) {
      if ((*coords)[d].size() != static_cast<std::size_t>(fine.n[d] + (kind == GridKind::Vertex ? 2 : 1)))
        throw InvalidArgument("prolongation: axis " + std::to_string(d) + " has coordinates of the wrong length");
      ax[d] = interpolation_1d(kind, (*coords)[d], factor[d], walls, wrap);
    } else {
      ax[d] = interpolation_1d(kind, uniform_coordinates(kind, fine.n[d]), factor[d], walls, wrap);
    }
  }
  const GridShape coarse = coarsened_shape(fine, kind, factor);
  const int nfx = fine.n[0], nfy = fine.dim > 1 ? fine.n[1] : 1, nfz = fine.dim > 2 ? fine.n[2] : 1;
  const int ncx = coarse.n[0], ncy = fine.dim > 1 ? coarse.n[1] : 1, ncz = fine.dim > 2 ? coarse.n[2] : 1;
  CsrMatrix P;
  P.rows = static_cast<std::size_t>(nfx) * nfy * nfz;
  P.cols = static_cast<std::size_t>(ncx) * ncy * ncz;
  // Two passes: the row lengths (products of the 1-D counts), then the entries straight into
  // their exact-size arrays, grid lines in parallel (no regrowth of col / val).
  P.row_ptr.assign(P.rows + 1, 0);
  for (int k = 0, row = 0; k < nfz; ++k)
    for (int j = 0; j < nfy; ++j)
      for (int i = 0; i < nfx; ++i, ++row)
        P.row_ptr[static_cast<std::size_t>(row) + 1] = ax[0][i].count * ax[1][j].count * ax[2][k].count;
  for (std::size_t r = 0; r < P.rows; ++r) P.row_ptr[r + 1] += P.row_ptr[r];
  P.col.resize(static_cast<std::size_t>(P.row_ptr[P.rows]));
  P.val.resize(P.col.size());
  const std::int64_t lines = static_cast<std::int64_t>(nfy) * nfz;
#pragma omp parallel for schedule(static) num_threads(resolve_threads(threads)) if (P.rows > 20000)
  for (std::int64_t line = 0; line < lines; ++line) {
    const int j = static_cast<int>(line % nfy), k = static_cast<int>(line / nfy);
    const Interp1D &wy = ax[1][j], &wz = ax[2][k];
    std::int64_t q = P.row_ptr[static_cast<std::size_t>(line * nfx)];
    for (int i = 0; i < nfx; ++i) {
      const Interp1D& wx = ax[0][i];
      // z, y, x outermost to innermost with increasing coarse indices: columns sorted.
      for (int c3 = 0; c3 < wz.count; ++c3)
        for (int c2 = 0; c2 < wy.count; ++c2)
          for (int c1 = 0; c1 < wx.count; ++c1, ++q) {
            P.col[static_cast<std::size_t>(q)] = static_cast<std::int32_t>(
                wx.idx[c1] + static_cast<std::int64_t>(ncx) * (wy.idx[c2] + static_cast<std::int64_t>(ncy) * wz.idx[c3]));
            P.val[static_cast<std::size_t>(q)] = wx.w[c1] * wy.w[c2] * wz.w[c3];
          }
    }
  }
  return P;
}

std::array<std::array<bool, 2>, 3> dirichlet_walls(const CsrMatrix& A, const GridShape& shape) {
  std::size_t rows = 1;
  for (int d = 0; d < shape.dim; ++d) rows *= static_cast<std::size_t>(std::max(shape.n[d], 0));
  if (shape.dim < 1 || shape.dim > 3 || A.rows != rows || A.cols != rows)
    throw InvalidArgument("dirichlet_walls: the operator's size does not match the grid");
  std::vector<double> rs(rows, 0.0), diag(rows, 0.0);
  for (std::size_t p = 0; p < rows; ++p)
    for (std::int64_t q = A.row_ptr[p]; q < A.row_ptr[p + 1]; ++q) {
      rs[p] += A.val[q];
      if (static_cast<std::size_t>(A.col[q]) == p) diag[p] = A.val[q];
    }
  const std::array<std::int64_t, 3> n{shape.n[0], shape.dim > 1 ? shape.n[1] : 1, shape.dim > 2 ? shape.n[2] : 1};
  const std::array<std::int64_t, 3> stride{1, n[0], n[0] * n[1]};
  std::array<std::array<bool, 2>, 3> walls{};
  for (int d = 0; d < shape.dim; ++d) {
    if (n[d] < 2) continue;
    for (int side = 0; side < 2; ++side) {
      const std::int64_t face = side == 0 ? 0 : n[d] - 1, inward = side == 0 ? stride[d] : -stride[d];
      double excess = 0.0, dsum = 0.0;
      for (std::size_t p = 0; p < rows; ++p) {
        const auto ip = static_cast<std::int64_t>(p);
        if ((ip / stride[d]) % n[d] != face) continue;
        excess += rs[p] - rs[static_cast<std::size_t>(ip + inward)];
        dsum += std::abs(diag[p]);
      }
      walls[d][side] = excess > 1e-6 * dsum;
    }
  }
  return walls;
}

std::array<bool, 3> periodic_axes(const CsrMatrix& A, const GridShape& shape) {
  std::size_t rows = 1;
  for (int d = 0; d < shape.dim; ++d) rows *= static_cast<std::size_t>(std::max(shape.n[d], 0));
  if (shape.dim < 1 || shape.dim > 3 || A.rows != rows || A.cols != rows)
    throw InvalidArgument("periodic_axes: the operator's size does not match the grid");
  const std::array<std::int64_t, 3> n{shape.n[0], shape.dim > 1 ? shape.n[1] : 1, shape.dim > 2 ? shape.n[2] : 1};
  std::array<bool, 3> wrap{false, false, false};
  for (std::size_t p = 0; p < rows; ++p) {
    const auto ip = static_cast<std::int64_t>(p);
    const std::array<std::int64_t, 3> a{ip % n[0], (ip / n[0]) % n[1], ip / (n[0] * n[1])};
    for (std::int64_t q = A.row_ptr[p]; q < A.row_ptr[p + 1]; ++q) {
      const std::int64_t jq = A.col[q];
      const std::array<std::int64_t, 3> b{jq % n[0], (jq / n[0]) % n[1], jq / (n[0] * n[1])};
      for (int d = 0; d < shape.dim; ++d)
        // Galerkin stencils reach 2 cells; a coupling further than that and than half the axis wraps
        if (A.val[q] != 0.0 && std::llabs(a[d] - b[d]) > 2 && 2 * std::llabs(a[d] - b[d]) > n[d]) wrap[d] = true;
    }
  }
  return wrap;
}

std::array<double, 3> axis_couplings(const CsrMatrix& A, const GridShape& shape) {
  std::size_t rows = 1;
  for (int d = 0; d < shape.dim; ++d) rows *= static_cast<std::size_t>(std::max(shape.n[d], 0));
  if (shape.dim < 1 || shape.dim > 3 || A.rows != rows || A.cols != rows)
    throw InvalidArgument("axis_couplings: the operator's size does not match the grid");
  const std::int64_t nx = shape.n[0], ny = shape.dim > 1 ? shape.n[1] : 1, nz = shape.dim > 2 ? shape.n[2] : 1;
  std::array<double, 3> c{0.0, 0.0, 0.0};
  auto offset = [](std::int64_t a, std::int64_t b, std::int64_t n) {
    const std::int64_t o = std::llabs(a - b);
    return static_cast<double>(std::min(o, n - o));
  };
  for (std::size_t p = 0; p < rows; ++p) {
    const auto ip = static_cast<std::int64_t>(p);
    const std::int64_t i = ip % nx, j = (ip / nx) % ny, k = ip / (nx * ny);
    for (std::int64_t q = A.row_ptr[p]; q < A.row_ptr[p + 1]; ++q) {
      const std::int64_t jq = A.col[q];
      if (jq == ip) continue;
      const std::int64_t i2 = jq % nx, j2 = (jq / nx) % ny, k2 = jq / (nx * ny);
      const double a = -A.val[q] * 0.5;
      const double ox = offset(i, i2, nx), oy = offset(j, j2, ny), oz = offset(k, k2, nz);
      c[0] += a * ox * ox;
      c[1] += a * oy * oy;
      c[2] += a * oz * oz;
    }
  }
  for (int d = 0; d < 3; ++d) c[d] = d < shape.dim ? c[d] / static_cast<double>(rows) : 0.0;
  return c;
}

std::array<int, 3> coarsening_factors(const GridShape& shape, GridKind kind, int c, SemiCoarsening mode,
                                      const std::array<double, 3>& couplings, double theta) {
  std::array<int, 3> f{1, 1, 1};
  std::array<bool, 3> can{false, false, false};
  double cmax = 0.0;
  for (int d = 0; d < shape.dim; ++d) {
    can[d] = shape.n[d] >= 1 && coarse_count(kind, shape.n[d], c) >= 1;
    if (can[d]) cmax = std::max(cmax, couplings[d]);
  }
  if (mode == SemiCoarsening::Off || !(cmax > 0.0)) {
    for (int d = 0; d < shape.dim; ++d)
      if (can[d]) f[d] = c;
    return f;
  }
  if (mode == SemiCoarsening::On) {
    for (int d = 0; d < shape.dim; ++d)
      if (can[d] && couplings[d] == cmax) {
        f[d] = c;
        break;
      }
    return f;
  }
  for (int d = 0; d < shape.dim; ++d)
    if (can[d] && couplings[d] >= theta * cmax) f[d] = c;
  return f;
}

}  // namespace elliptica::multigrid
