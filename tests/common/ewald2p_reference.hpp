// A reference for doubly periodic (2P) Laplace sums (issue 31): the classical 2P Ewald sum of
// Lindbo & Tornberg, J. Chem. Phys. 136 (2012) 164111, evaluated directly (O(N^2) per image and
// mode), for neutral systems: periodic in x and y (cell Lx x Ly, area A), free in z.
//   phi(x_m) = sum_n sum'_p q_n erfc(xi r) / r                       (real space, 2-D images p)
//            + (pi / A) sum_{k != 0} sum_n q_n cos(k . (x_m - x_n)_par) / |k|
//                  [e^{|k| z} erfc(|k| / (2 xi) + xi z) + e^{-|k| z} erfc(|k| / (2 xi) - xi z)]
//            - (2 pi / A) sum_n q_n [|z| erf(xi |z|) + e^{-xi^2 z^2} / (xi sqrt(pi))]   (k = 0)
//            - 2 xi q_m / sqrt(pi)                                    (self)
// with z = z_m - z_n and sum' omitting n = m at p = 0. The result does not depend on xi (the
// test checks it); the k = 0 term's constant drops out only when sum q = 0 (neutrality). Meant
// for tests: |k| z must stay moderate (|z| <= Lz, kmax chosen from xi) so e^{|k| z} does not
// overflow. Header-only, no library code.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace elliptica::test {

/// phi at each point (x, y, z rows of `pts`, charges q). xi: splitting; rimg: 2-D image shells
/// in real space (|p| <= rimg per axis); kmax_idx: Fourier modes |k_i L_i / 2 pi| <= kmax_idx.
inline std::vector<double> ewald2p_laplace(const std::vector<double>& pts, const std::vector<double>& q, double Lx,
                                           double Ly, double xi, int rimg, int kmax_idx) {
  const double pi = 3.14159265358979323846, A = Lx * Ly;
  // |e^{k z} erfc(k / (2 xi) + xi z)| <= 2 e^{-k^2 / (4 xi^2)} for every z: modes with
  // k^2 / (4 xi^2) > 40 add below 1e-17 of the charges and are skipped
  const double kcut = 2 * xi * std::sqrt(40.0);
  const std::size_t n = q.size();
  std::vector<double> phi(n, 0.0);
  // the pair term is even in the separation (each image p has its mirror -p, each mode k its
  // mirror -k with the same value): each unordered pair once, each mode pair +-k once (weight 2)
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t j = 0; j <= m; ++j) {
      const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
      double s = 0;
      for (int a = -rimg; a <= rimg; ++a)
        for (int b = -rimg; b <= rimg; ++b) {
          if (j == m && a == 0 && b == 0) continue;
          const double rx = dx + a * Lx, ry = dy + b * Ly, r = std::sqrt(rx * rx + ry * ry + z * z);
          s += std::erfc(xi * r) / r;
        }
      for (int a = 0; a <= kmax_idx; ++a)
        for (int b = a == 0 ? 1 : -kmax_idx; b <= kmax_idx; ++b) {
          const double kx = 2 * pi * a / Lx, ky = 2 * pi * b / Ly, k = std::sqrt(kx * kx + ky * ky);
          if (k > kcut) continue;
          const double t = std::exp(k * z) * std::erfc(k / (2 * xi) + xi * z) + std::exp(-k * z) * std::erfc(k / (2 * xi) - xi * z);
          s += 2 * (pi / A) * std::cos(kx * dx + ky * dy) / k * t;
        }
      const double az = std::abs(z);
      s -= (2 * pi / A) * (az * std::erf(xi * az) + std::exp(-xi * xi * z * z) / (xi * std::sqrt(pi)));
      phi[m] += q[j] * s;
      if (j != m) phi[j] += q[m] * s;
    }
  for (std::size_t m = 0; m < n; ++m) phi[m] -= 2 * xi * q[m] / std::sqrt(pi);
  return phi;
}

/// The field E = -grad phi of the same sum at each point (3 per point, x, y, z), term by term:
///   real space   q_n [erfc(xi r) / r + (2 xi / sqrt(pi)) e^{-xi^2 r^2}] r_vec / r^2,
///   k != 0       (pi / A) q_n [sin(k . d_par) k_vec / |k| t(z), -cos(k . d_par) / |k| t'(z)],
///                t'(z) = |k| [e^{|k| z} erfc(|k| / (2 xi) + xi z) - e^{-|k| z} erfc(|k| / (2 xi) - xi z)]
///                (the erfc derivatives' Gaussians cancel),
///   k = 0        (2 pi / A) q_n erf(xi z) along z (the sheet's field, no neutrality needed).
/// The self term and a point's own images add nothing (odd in the separation).
inline std::vector<double> ewald2p_laplace_field(const std::vector<double>& pts, const std::vector<double>& q,
                                                 double Lx, double Ly, double xi, int rimg, int kmax_idx) {
  const double pi = 3.14159265358979323846, A = Lx * Ly, kcut = 2 * xi * std::sqrt(40.0);
  const std::size_t n = q.size();
  std::vector<double> E(3 * n, 0.0);
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t j = 0; j < m; ++j) {
      const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
      double g[3] = {0, 0, 0};  // the field at m of a unit charge at j (odd in the separation)
      for (int a = -rimg; a <= rimg; ++a)
        for (int b = -rimg; b <= rimg; ++b) {
          const double rx = dx + a * Lx, ry = dy + b * Ly, r2 = rx * rx + ry * ry + z * z, r = std::sqrt(r2);
          const double f = (std::erfc(xi * r) / r + 2 * xi / std::sqrt(pi) * std::exp(-xi * xi * r2)) / r2;
          g[0] += f * rx;
          g[1] += f * ry;
          g[2] += f * z;
        }
      for (int a = 0; a <= kmax_idx; ++a)
        for (int b = a == 0 ? 1 : -kmax_idx; b <= kmax_idx; ++b) {
          const double kx = 2 * pi * a / Lx, ky = 2 * pi * b / Ly, k = std::sqrt(kx * kx + ky * ky);
          if (k > kcut) continue;
          const double ep = std::exp(k * z) * std::erfc(k / (2 * xi) + xi * z),
                       em = std::exp(-k * z) * std::erfc(k / (2 * xi) - xi * z);
          const double ph = kx * dx + ky * dy, c = 2 * (pi / A);  // +-k pair
          g[0] += c * std::sin(ph) * kx / k * (ep + em);
          g[1] += c * std::sin(ph) * ky / k * (ep + em);
          g[2] -= c * std::cos(ph) * (ep - em);
        }
      g[2] += (2 * pi / A) * std::erf(xi * z);
      for (int d = 0; d < 3; ++d) {
        E[3 * m + std::size_t(d)] += q[j] * g[d];
        E[3 * j + std::size_t(d)] -= q[m] * g[d];
      }
    }
  return E;
}

}  // namespace elliptica::test
