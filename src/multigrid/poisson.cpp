/// @file poisson.cpp
/// Finite-difference Dirichlet Laplacians on boxes and the seed's 2D test problem.
#include "elliptica/multigrid/poisson.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <numbers>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::multigrid {
namespace {

void check_shape(const GridShape& s, const char* who) {
  if (s.dim < 1 || s.dim > 3)
    throw InvalidArgument(std::string(who) + ": dimension must be 1, 2 or 3, got " + std::to_string(s.dim));
  long long total = 1;
  for (int d = 0; d < s.dim; ++d) {
    if (s.n[d] < 1)
      throw InvalidArgument(std::string(who) + ": axis " + std::to_string(d) + " has " + std::to_string(s.n[d]) +
                            " unknowns; need at least 1");
    total *= s.n[d];
  }
  if (total > 2000000000LL) throw InvalidArgument(std::string(who) + ": grid too large for 32-bit indices");
}

/// splitmix64 (Steele, Lea, Flood 2014): portable, so g is identical everywhere.
std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

GridShape grid_shape(int dim, int intervals) {
  if (dim < 1 || dim > 3) throw InvalidArgument("grid_shape: dimension must be 1, 2 or 3, got " + std::to_string(dim));
  if (intervals < 2)
    throw InvalidArgument("grid_shape: need at least 2 intervals per axis, got " + std::to_string(intervals));
  GridShape s;
  s.dim = dim;
  for (int d = 0; d < dim; ++d) s.n[d] = intervals - 1;
  return s;
}

CsrMatrix poisson_fd(const GridShape& shape, std::array<double, 3> lengths) {
  check_shape(shape, "poisson_fd");
  std::array<double, 3> w{0, 0, 0};  // 1 / h_d^2
  for (int d = 0; d < shape.dim; ++d) {
    if (!(std::isfinite(lengths[d]) && lengths[d] > 0))
      throw InvalidArgument("poisson_fd: length of axis " + std::to_string(d) + " must be finite and positive");
    const double h = lengths[d] / (shape.n[d] + 1);
    w[d] = 1.0 / (h * h);
    if (!(std::isfinite(w[d]) && w[d] >= std::numeric_limits<double>::min() && w[d] <= 1e300))
      throw InvalidArgument("poisson_fd: length " + std::to_string(lengths[d]) + " of axis " + std::to_string(d) +
                            " gives the grid spacing h = " + std::to_string(h) +
                            ", whose stencil coefficient 1/h^2 over- or underflows (h must lie in [1e-150, 1e150])");
  }
  const int nx = shape.n[0], ny = shape.dim > 1 ? shape.n[1] : 1, nz = shape.dim > 2 ? shape.n[2] : 1;
  const std::size_t N = static_cast<std::size_t>(nx) * ny * nz;
  CsrMatrix A;
  A.rows = A.cols = N;
  A.row_ptr.assign(N + 1, 0);
  A.col.reserve(N * (2 * shape.dim + 1));
  A.val.reserve(N * (2 * shape.dim + 1));
  const double diag = 2.0 * (w[0] + w[1] + w[2]);
  const std::int64_t sy = nx, sz = static_cast<std::int64_t>(nx) * ny;
  std::size_t p = 0;
  // Entries pushed in increasing column order: -z, -y, -x, centre, +x, +y, +z.
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i, ++p) {
        const auto ip = static_cast<std::int64_t>(p);
        auto push = [&](std::int64_t c, double v) {
          A.col.push_back(static_cast<std::int32_t>(c));
          A.val.push_back(v);
        };
        if (k > 0) push(ip - sz, -w[2]);
        if (j > 0) push(ip - sy, -w[1]);
        if (i > 0) push(ip - 1, -w[0]);
        push(ip, diag);
        if (i < nx - 1) push(ip + 1, -w[0]);
        if (j < ny - 1) push(ip + sy, -w[1]);
        if (k < nz - 1) push(ip + sz, -w[2]);
        A.row_ptr[p + 1] = static_cast<std::int64_t>(A.col.size());
      }
  return A;
}

TestProblem seed_problem_2d(int n, double Lx, double Ly, std::uint64_t seed) {
  TestProblem tp;
  tp.shape = grid_shape(2, n);
  tp.lengths = {Lx, Ly, 1.0};
  tp.A = poisson_fd(tp.shape, tp.lengths);
  const int m = n - 1;
  const double hx = Lx / n, hy = Ly / n, pi = std::numbers::pi;
  tp.u.resize(static_cast<std::size_t>(m) * m);
  std::uint64_t s = seed;
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < m; ++i) {
      const double x = (i + 1) * hx, y = (j + 1) * hy;
      const double g = 2.0 * static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53 - 1.0;
      tp.u[static_cast<std::size_t>(i) + static_cast<std::size_t>(m) * j] =
          std::sin(3 * pi * x / Lx) * std::sin(4 * pi * y / Ly) + g;
    }
  tp.b.resize(tp.u.size());
  tp.A.multiply(tp.u.data(), tp.b.data());
  return tp;
}

Boundary boundary_from_string(const std::string& s) {
  if (s == "dirichlet") return Boundary::Dirichlet;
  if (s == "neumann") return Boundary::Neumann;
  if (s == "periodic") return Boundary::Periodic;
  throw InvalidArgument("unknown boundary condition '" + s + "' (expected dirichlet, neumann or periodic)");
}

std::string to_string(Boundary b) {
  switch (b) {
    case Boundary::Dirichlet: return "dirichlet";
    case Boundary::Neumann: return "neumann";
    case Boundary::Periodic: return "periodic";
  }
  return "?";
}

CsrMatrix poisson_fd(const GridShape& shape, std::array<double, 3> lengths, GridKind grid, std::array<Boundary, 3> bc) {
  check_shape(shape, "poisson_fd");
  bool all_dirichlet = true;
  for (int d = 0; d < shape.dim; ++d) {
    if (grid == GridKind::Vertex && bc[d] == Boundary::Neumann)
      throw InvalidArgument("poisson_fd: Neumann walls need a cell-centred grid (axis " + std::to_string(d) + ")");
    all_dirichlet = all_dirichlet && bc[d] == Boundary::Dirichlet;
  }
  if (grid == GridKind::Vertex && all_dirichlet) return poisson_fd(shape, lengths);
  std::array<double, 3> w{0, 0, 0};  // 1 / h_d^2
  for (int d = 0; d < shape.dim; ++d) {
    if (!(std::isfinite(lengths[d]) && lengths[d] > 0))
      throw InvalidArgument("poisson_fd: length of axis " + std::to_string(d) + " must be finite and positive");
    const int intervals = grid == GridKind::Vertex && bc[d] == Boundary::Dirichlet ? shape.n[d] + 1 : shape.n[d];
    const double h = lengths[d] / intervals;
    w[d] = 1.0 / (h * h);
    if (!(std::isfinite(w[d]) && w[d] >= std::numeric_limits<double>::min() && w[d] <= 1e300))
      throw InvalidArgument("poisson_fd: length " + std::to_string(lengths[d]) + " of axis " + std::to_string(d) +
                            " gives the grid spacing h = " + std::to_string(h) +
                            ", whose stencil coefficient 1/h^2 over- or underflows (h must lie in [1e-150, 1e150])");
  }
  const std::array<std::int64_t, 3> n{shape.n[0], shape.dim > 1 ? shape.n[1] : 1, shape.dim > 2 ? shape.n[2] : 1};
  const std::array<std::int64_t, 3> stride{1, n[0], n[0] * n[1]};
  const std::size_t N = static_cast<std::size_t>(n[0] * n[1] * n[2]);
  CsrMatrix A;
  A.rows = A.cols = N;
  A.row_ptr.assign(N + 1, 0);
  std::vector<std::pair<std::int64_t, double>> row;
  for (std::size_t p = 0; p < N; ++p) {
    const auto ip = static_cast<std::int64_t>(p);
    const std::array<std::int64_t, 3> at{ip % n[0], (ip / n[0]) % n[1], ip / (n[0] * n[1])};
    row.clear();
    double diag = 0.0;
    for (int d = 0; d < shape.dim; ++d) {
      for (int side : {-1, 1}) {
        const std::int64_t q = at[d] + side;
        if (q >= 0 && q < n[d]) {  // an interior face
          diag += w[d];
          row.emplace_back(ip + side * stride[d], -w[d]);
        } else if (bc[d] == Boundary::Periodic) {
          if (n[d] == 1) continue;  // the neighbour is the unknown itself: no coupling
          diag += w[d];
          row.emplace_back(ip + (q < 0 ? (n[d] - 1) : -(n[d] - 1)) * stride[d], -w[d]);
        } else if (bc[d] == Boundary::Dirichlet) {
          diag += grid == GridKind::Cell ? 2.0 * w[d] : w[d];  // wall at h/2 (cell) or h (vertex)
        }  // Neumann: no flux through the wall
      }
    }
    row.emplace_back(ip, diag);
    std::sort(row.begin(), row.end());
    for (std::size_t t = 0; t < row.size(); ++t) {
      if (!A.col.empty() && static_cast<std::int64_t>(A.row_ptr[p]) < static_cast<std::int64_t>(A.col.size()) &&
          A.col.back() == row[t].first) {
        A.val.back() += row[t].second;  // a coupling met twice (periodic axis of 2)
        continue;
      }
      A.col.push_back(static_cast<std::int32_t>(row[t].first));
      A.val.push_back(row[t].second);
    }
    A.row_ptr[p + 1] = static_cast<std::int64_t>(A.col.size());
  }
  return A;
}

TestProblem poisson_problem(int dim, int n, std::array<double, 3> lengths, GridKind grid, Boundary bc,
                            std::uint64_t seed) {
  if (dim < 1 || dim > 3) throw InvalidArgument("poisson_problem: dimension must be 1, 2 or 3, got " + std::to_string(dim));
  if (n < 1) throw InvalidArgument("poisson_problem: need at least 1 unknown per axis, got " + std::to_string(n));
  TestProblem tp;
  tp.shape.dim = dim;
  for (int d = 0; d < dim; ++d) tp.shape.n[d] = n;
  tp.lengths = lengths;
  tp.A = poisson_fd(tp.shape, lengths, grid, {bc, bc, bc});
  const double pi = std::numbers::pi;
  std::array<std::vector<double>, 3> f;
  for (int d = 0; d < 3; ++d) {
    if (d >= dim) {
      f[d] = {1.0};
      continue;
    }
    const double L = lengths[d];
    const double h = grid == GridKind::Vertex && bc == Boundary::Dirichlet ? L / (n + 1) : L / n;
    f[d].resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const double x = grid == GridKind::Cell ? (i + 0.5) * h : bc == Boundary::Dirichlet ? (i + 1) * h : i * h;
      f[d][i] = bc == Boundary::Dirichlet ? std::sin(pi * x / L)
                : bc == Boundary::Neumann ? std::cos(pi * x / L)
                                          : std::cos(2 * pi * x / L);
    }
  }
  const std::size_t N = tp.A.rows;
  tp.u.resize(N);
  std::uint64_t s = seed;
  const std::size_t nx = f[0].size(), ny = f[1].size();
  for (std::size_t p = 0; p < N; ++p) {
    const double g = 2.0 * static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53 - 1.0;
    tp.u[p] = f[0][p % nx] * f[1][(p / nx) % ny] * f[2][p / (nx * ny)] + g;
  }
  if (bc != Boundary::Dirichlet) {
    double mean = 0.0;
    for (double v : tp.u) mean += v;
    mean /= static_cast<double>(N);
    for (double& v : tp.u) v -= mean;
  }
  tp.b.resize(N);
  tp.A.multiply(tp.u.data(), tp.b.data());
  return tp;
}

}  // namespace elliptica::multigrid
