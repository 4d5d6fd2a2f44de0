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
  const std::size_t n = q.size();
  std::vector<double> phi(n, 0.0);
  for (std::size_t m = 0; m < n; ++m) {
    double s = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
      for (int a = -rimg; a <= rimg; ++a)
        for (int b = -rimg; b <= rimg; ++b) {
          if (j == m && a == 0 && b == 0) continue;
          const double rx = dx + a * Lx, ry = dy + b * Ly, r = std::sqrt(rx * rx + ry * ry + z * z);
          s += q[j] * std::erfc(xi * r) / r;
        }
      for (int a = -kmax_idx; a <= kmax_idx; ++a)
        for (int b = -kmax_idx; b <= kmax_idx; ++b) {
          if (a == 0 && b == 0) continue;
          const double kx = 2 * pi * a / Lx, ky = 2 * pi * b / Ly, k = std::sqrt(kx * kx + ky * ky);
          const double t = std::exp(k * z) * std::erfc(k / (2 * xi) + xi * z) + std::exp(-k * z) * std::erfc(k / (2 * xi) - xi * z);
          s += (pi / A) * q[j] * std::cos(kx * dx + ky * dy) / k * t;
        }
      const double az = std::abs(z);
      s -= (2 * pi / A) * q[j] * (az * std::erf(xi * az) + std::exp(-xi * xi * z * z) / (xi * std::sqrt(pi)));
    }
    phi[m] = s - 2 * xi * q[m] / std::sqrt(pi);
  }
  return phi;
}

}  // namespace elliptica::test
