/// @file poisson.cpp
/// Finite-difference Dirichlet Laplacians on boxes and the seed's 2D test problem.
#include "elliptica/multigrid/poisson.hpp"

#include <cmath>
#include <limits>
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

}  // namespace elliptica::multigrid
