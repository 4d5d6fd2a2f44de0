#pragma once
/// @file sparse_problems.hpp
/// Assembled test matrices shared by the C++ tests of the multigrid module (test_amg,
/// test_boomeramg, test_time_stepping): 2D Poisson, axis-aligned and rotated anisotropic diffusion, the pure-Neumann
/// graph Laplacian, and seeded random vectors. Unknowns on an n x n grid, x fastest.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/poisson.hpp"

namespace elliptica::testing {

inline CsrMatrix poisson2d(int nx, int ny) {
  multigrid::GridShape s;
  s.dim = 2;
  s.n = {nx, ny, 1};
  return multigrid::poisson_fd(s, {1.0, 1.0, 1.0});
}

/// 2D anisotropic diffusion -eps u_xx - u_yy (5-point, unit spacing): strong along y only.
inline CsrMatrix anisotropic2d(int n, double eps) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  auto id = [n](int i, int j) { return static_cast<std::int64_t>(i + n * j); };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      r.push_back(id(i, j)), c.push_back(id(i, j)), v.push_back(2 * eps + 2);
      if (i > 0) r.push_back(id(i, j)), c.push_back(id(i - 1, j)), v.push_back(-eps);
      if (i + 1 < n) r.push_back(id(i, j)), c.push_back(id(i + 1, j)), v.push_back(-eps);
      if (j > 0) r.push_back(id(i, j)), c.push_back(id(i, j - 1)), v.push_back(-1);
      if (j + 1 < n) r.push_back(id(i, j)), c.push_back(id(i, j + 1)), v.push_back(-1);
    }
  const auto N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return CsrMatrix::from_triplets(N, N, r, c, v);
}

/// Rotated anisotropic diffusion -div(K grad u), K = Q diag(1, eps) Q^T, Q the rotation by phi, on
/// an n x n grid (unit spacing, Dirichlet): the 9-point finite-difference stencil with the central
/// cross derivative (K11 along x, K22 along y, +-K12/2 on the diagonals).
inline CsrMatrix rotated_anisotropic2d(int n, double eps, double phi) {
  const double c = std::cos(phi), s = std::sin(phi);
  const double k11 = c * c + eps * s * s, k22 = s * s + eps * c * c, k12 = (1.0 - eps) * c * s;
  std::vector<std::int64_t> r, cc;
  std::vector<double> v;
  auto id = [n](int i, int j) { return static_cast<std::int64_t>(i + n * j); };
  auto add = [&](int i, int j, int i2, int j2, double w) {
    if (i2 < 0 || j2 < 0 || i2 >= n || j2 >= n) return;
    r.push_back(id(i, j)), cc.push_back(id(i2, j2)), v.push_back(w);
  };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      add(i, j, i, j, 2 * k11 + 2 * k22);
      add(i, j, i - 1, j, -k11), add(i, j, i + 1, j, -k11);
      add(i, j, i, j - 1, -k22), add(i, j, i, j + 1, -k22);
      add(i, j, i + 1, j + 1, -k12 / 2), add(i, j, i - 1, j - 1, -k12 / 2);
      add(i, j, i + 1, j - 1, k12 / 2), add(i, j, i - 1, j + 1, k12 / 2);
    }
  const auto N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return CsrMatrix::from_triplets(N, N, r, cc, v);
}

/// Pure-Neumann 2D Laplacian (graph Laplacian of the n x n grid): singular, null space the constants.
inline CsrMatrix neumann2d(int n) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  auto id = [n](int i, int j) { return static_cast<std::int64_t>(i + n * j); };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double d = 0;
      const int di[4] = {-1, 1, 0, 0}, dj[4] = {0, 0, -1, 1};
      for (int q = 0; q < 4; ++q) {
        const int a = i + di[q], b = j + dj[q];
        if (a < 0 || a >= n || b < 0 || b >= n) continue;
        r.push_back(id(i, j)), c.push_back(id(a, b)), v.push_back(-1.0), d += 1.0;
      }
      r.push_back(id(i, j)), c.push_back(id(i, j)), v.push_back(d);
    }
  const auto N = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  return CsrMatrix::from_triplets(N, N, r, c, v);
}

inline std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = U(gen);
  return v;
}

}  // namespace elliptica::testing
