// A reference for doubly periodic (2P) Laplace and Stokes sums (issue 31): the classical 2P Ewald sum of
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


/// 8 pi mu u of the 2P stokeslet sum (3 per point): u(x_m) = 1/(8 pi mu) sum_p sum_n' S(r + p) f_n,
/// S(r) = I/r + r r^T/r^3, periodic in x and y, with the k_par = 0 mode the force sheet's shear
/// flow -4 pi |z| (I - e_z e_z^T) / A per unit force (no force balance needed). By Hasimoto's
/// split evaluated directly:
///   real space   S^R(r) = erfc(xi r)(I/r + r r^T/r^3) + (2 xi/sqrt(pi)) e^{-xi^2 r^2}(r r^T/r^2 - I),
///   k_par != 0   (1/A) Re[e^{i kappa . d_par} int dk_z/(2 pi) B(k) e^{i k_z z}], k = (kappa, k_z),
///                B(k) = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} (k^2 I - k k^T)/k^4, the k_z
///                integral by the trapezoidal rule (the integrand is analytic in |Im k_z| < |kappa|:
///                step |kappa|_min / 16, error below e^{-90}; cut where the Gaussian is e^{-45}),
///   k_par = 0    (I - e_z e_z^T)/A [-4 pi |z| erf(xi |z|) - (2 sqrt(pi)/xi) e^{-xi^2 z^2}] (twice the
///                Laplace sheet term, plus the Hasimoto factor's k^2/(4 xi^2) part in closed form),
///   self         -(4 xi/sqrt(pi)) f_m (the m = n pair's Fourier terms are included).
/// Slow (per pair and mode a quadrature): meant for a few dozen points.
inline std::vector<double> ewald2p_stokeslet(const std::vector<double>& pts, const std::vector<double>& f, double Lx,
                                             double Ly, double xi, int rimg, int kmax_idx) {
  const double pi = 3.14159265358979323846, sqpi = std::sqrt(pi), A = Lx * Ly;
  const double kcut = 2 * xi * std::sqrt(45.0), kmin = 2 * pi / std::max(Lx, Ly), dk = kmin / 16;
  const int nq = static_cast<int>(std::ceil(kcut / dk));
  const std::size_t n = pts.size() / 3;
  std::vector<double> u(3 * n, 0.0);
  // per mode: the trapezoid's nodes k_z = q dk (q >= 0, weight halved at 0) and the factors
  // g(k) = 8 pi (1 + k^2/4xi^2) e^{-k^2/4xi^2} / k^4 at them
  std::vector<double> g(std::size_t(nq) + 1);
  for (int a = -kmax_idx; a <= kmax_idx; ++a)
    for (int b = -kmax_idx; b <= kmax_idx; ++b) {
      if (a == 0 && b == 0) continue;
      const double kx = 2 * pi * a / Lx, ky = 2 * pi * b / Ly, kap2 = kx * kx + ky * ky;
      if (kap2 > kcut * kcut) continue;
      for (int q = 0; q <= nq; ++q) {
        const double kz = q * dk, k2 = kap2 + kz * kz;
        g[std::size_t(q)] = 8 * pi * (1 + k2 / (4 * xi * xi)) * std::exp(-k2 / (4 * xi * xi)) / (k2 * k2) * (q == 0 ? 0.5 : 1.0);
      }
      const double kv[2] = {kx, ky};
      for (std::size_t m = 0; m < n; ++m)
        for (std::size_t j = 0; j < n; ++j) {
          const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
          // int dk_z/(2 pi) g(k) M(k) e^{i k_z z} with M's entries even (c0: 1, c2: k_z^2) or odd (s1: k_z) in k_z
          double c0 = 0, c2 = 0, s1 = 0;
          for (int q = 0; q <= nq; ++q) {
            const double kz = q * dk, cz = std::cos(kz * z), sz = std::sin(kz * z), w = g[std::size_t(q)];
            c0 += w * cz;
            c2 += w * kz * kz * cz;
            s1 += w * kz * sz;
          }
          c0 *= 2 * dk / (2 * pi);  // both halves of the k_z line
          c2 *= 2 * dk / (2 * pi);
          s1 *= 2 * dk / (2 * pi);  // the odd part: i times this
          const double th = kx * dx + ky * dy, ct = std::cos(th) / A, st = std::sin(th) / A;
          // (k^2 I - k k^T): in-plane (kap^2 + k_z^2) delta_ab - kap_a kap_b, (a, z) -kap_a k_z, (z, z) kap^2
          for (int r = 0; r < 2; ++r) {
            double v = 0;
            for (int c = 0; c < 2; ++c)
              v += (((r == c ? kap2 : 0.0) - kv[r] * kv[c]) * c0 + (r == c ? c2 : 0.0)) * ct * f[3 * j + std::size_t(c)];
            v += kv[r] * s1 * st * f[3 * j + 2];  // Re[e^{i th} (-kap_a) (i s1)] = kap_a s1 sin(th)
            u[3 * m + std::size_t(r)] += v;
          }
          double vz = kap2 * c0 * ct * f[3 * j + 2];
          for (int c = 0; c < 2; ++c) vz += kv[c] * s1 * st * f[3 * j + std::size_t(c)];
          u[3 * m + 2] += vz;
        }
    }
  for (std::size_t m = 0; m < n; ++m) {
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
      for (int a = -rimg; a <= rimg; ++a)
        for (int b = -rimg; b <= rimg; ++b) {
          if (j == m && a == 0 && b == 0) continue;
          const double r[3] = {dx + a * Lx, dy + b * Ly, z};
          const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], rr = std::sqrt(r2);
          const double e = std::erfc(xi * rr), gs = 2 * xi / sqpi * std::exp(-xi * xi * r2);
          const double rf = r[0] * f[3 * j] + r[1] * f[3 * j + 1] + r[2] * f[3 * j + 2];
          for (int c = 0; c < 3; ++c)
            u[3 * m + std::size_t(c)] += e * (f[3 * j + std::size_t(c)] / rr + r[c] * rf / (r2 * rr)) +
                                         gs * (r[c] * rf / r2 - f[3 * j + std::size_t(c)]);
        }
      const double az = std::abs(z);
      const double k0 = (-4 * pi * az * std::erf(xi * az) - 2 * sqpi / xi * std::exp(-xi * xi * z * z)) / A;
      u[3 * m] += k0 * f[3 * j];
      u[3 * m + 1] += k0 * f[3 * j + 1];
    }
    for (int c = 0; c < 3; ++c) u[3 * m + std::size_t(c)] -= 4 * xi / sqpi * f[3 * m + std::size_t(c)];
  }
  return u;
}

/// 8 pi u of the 2P stresslet sum (3 per point): u_j(x_m) = 1/(8 pi) sum_p sum_n' T_jlm(r + p)
/// q_{n,l} nu_{n,m}, T_jlm(r) = -6 r_j r_l r_m / r^5, periodic in x and y, with the k_par = 0 mode
/// the dipole sheet's -4 pi sign(z) / A on (z, z, z) and (z, a, a) (a = x, y; the plane integral of
/// T). By Hasimoto's split evaluated directly:
///   real space   A(r)(r.q)(r.nu) r + B(r)[(q.nu) r + (r.nu) q + (r.q) nu] (StressletTraits' formula:
///                A = -(2/r^4)[3 erfc(xi r)/r + (2 xi/sqrt(pi))(3 + 2 xi^2 r^2) e^{-xi^2 r^2}],
///                B = (4 xi^3/sqrt(pi)) e^{-xi^2 r^2}),
///   k_par != 0   (1/A) sum_kappa int dk_z/(2 pi) i (-b(k)) M(k, S^(k)) e^{i k.x_m}, b(k) = 8 pi (1 +
///                k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} / k^4, M_j(k, S) = -(2 (S k)_j + k_j tr S) k^2 +
///                2 k_j (k.S.k), S^(k) = sum_n sym(q_n nu_n^T) e^{-i k.x_n} (a structure factor per
///                node: O(N) per (kappa, k_z)), the k_z integral by the trapezoidal rule (step
///                |kappa|_min / 16, cut where the Gaussian is e^{-45}),
///   k_par = 0    (1/A)[-4 pi erf(xi z) - 4 sqrt(pi) xi z e^{-xi^2 z^2}] on (z, z, z), (z, a, a)
///                (the k_z integral of the screened 3P multiplier 8 pi i / k_z in closed form):
///                u_z += K0(z) tr S_n, u_a += 2 K0(z) S_n,az,
///   self         none (the odd remainder vanishes at r = 0).
/// The result does not depend on xi (checked by the tests).
inline std::vector<double> ewald2p_stresslet(const std::vector<double>& pts, const std::vector<double>& q,
                                             const std::vector<double>& nu, double Lx, double Ly, double xi,
                                             int rimg, int kmax_idx) {
  const double pi = 3.14159265358979323846, sqpi = std::sqrt(pi), A = Lx * Ly;
  const double kcut = 2 * xi * std::sqrt(45.0), kmin = 2 * pi / std::max(Lx, Ly), dk = kmin / 16;
  const int nq = static_cast<int>(std::ceil(kcut / dk));
  const std::size_t n = pts.size() / 3;
  std::vector<double> u(3 * n, 0.0);
  // the symmetric S_n = sym(q_n nu_n^T) as a 3 x 3 per point
  std::vector<double> S(9 * n);
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        S[9 * i + std::size_t(3 * a + b)] = 0.5 * (q[3 * i + std::size_t(a)] * nu[3 * i + std::size_t(b)] +
                                                   q[3 * i + std::size_t(b)] * nu[3 * i + std::size_t(a)]);
  std::vector<double> cs(n), sn(n);
  for (int a = -kmax_idx; a <= kmax_idx; ++a)
    for (int b = -kmax_idx; b <= kmax_idx; ++b) {
      if (a == 0 && b == 0) continue;
      const double kx = 2 * pi * a / Lx, ky = 2 * pi * b / Ly, kap2 = kx * kx + ky * ky;
      if (kap2 > kcut * kcut) continue;
      for (int iq = -nq; iq <= nq; ++iq) {
        const double kz = iq * dk, k2 = kap2 + kz * kz, k[3] = {kx, ky, kz};
        const double g = 8 * pi * (1 + k2 / (4 * xi * xi)) * std::exp(-k2 / (4 * xi * xi)) / (k2 * k2);
        if (g * k2 < 1e-30) continue;
        // S^(k) = sum_n S_n e^{-i k.x_n}
        double Sr[9] = {}, Si[9] = {};
        for (std::size_t i = 0; i < n; ++i) {
          const double ph = k[0] * pts[3 * i] + k[1] * pts[3 * i + 1] + k[2] * pts[3 * i + 2];
          cs[i] = std::cos(ph);
          sn[i] = std::sin(ph);
          for (int c = 0; c < 9; ++c) {
            Sr[c] += S[9 * i + std::size_t(c)] * cs[i];
            Si[c] -= S[9 * i + std::size_t(c)] * sn[i];
          }
        }
        // M(k, S^) (linear in S: real and imaginary parts apart)
        double Mr[3], Mi[3];
        for (int part = 0; part < 2; ++part) {
          const double* Sp = part == 0 ? Sr : Si;
          double* M = part == 0 ? Mr : Mi;
          double Sk[3], kSk = 0, tr = Sp[0] + Sp[4] + Sp[8];
          for (int r = 0; r < 3; ++r) {
            Sk[r] = Sp[3 * r] * k[0] + Sp[3 * r + 1] * k[1] + Sp[3 * r + 2] * k[2];
            kSk += k[r] * Sk[r];
          }
          for (int r = 0; r < 3; ++r) M[r] = -(2 * Sk[r] + k[r] * tr) * k2 + 2 * k[r] * kSk;
        }
        // u_m += (dk / (2 pi A)) Re[i (-g) (Mr + i Mi) e^{i k.x_m}] = (dk / (2 pi A)) g (Mi cos + Mr sin)
        const double w = dk / (2 * pi * A) * g;
        for (std::size_t m = 0; m < n; ++m)
          for (int r = 0; r < 3; ++r) u[3 * m + std::size_t(r)] += w * (Mi[r] * cs[m] + Mr[r] * sn[m]);
      }
    }
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = pts[3 * m] - pts[3 * j], dy = pts[3 * m + 1] - pts[3 * j + 1], z = pts[3 * m + 2] - pts[3 * j + 2];
      const double* qj = &q[3 * j];
      const double* nj = &nu[3 * j];
      const double qn = qj[0] * nj[0] + qj[1] * nj[1] + qj[2] * nj[2];
      for (int a = -rimg; a <= rimg; ++a)
        for (int b = -rimg; b <= rimg; ++b) {
          if (j == m && a == 0 && b == 0) continue;
          const double r[3] = {dx + a * Lx, dy + b * Ly, z};
          const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2], rr = std::sqrt(r2);
          const double ex = std::exp(-xi * xi * r2);
          const double Ar = -2 / (r2 * r2) * (3 * std::erfc(xi * rr) / rr + 2 * xi / sqpi * (3 + 2 * xi * xi * r2) * ex);
          const double Br = 4 * xi * xi * xi / sqpi * ex;
          const double rq = r[0] * qj[0] + r[1] * qj[1] + r[2] * qj[2], rn = r[0] * nj[0] + r[1] * nj[1] + r[2] * nj[2];
          for (int c = 0; c < 3; ++c)
            u[3 * m + std::size_t(c)] += Ar * rq * rn * r[c] + Br * (qn * r[c] + rn * qj[c] + rq * nj[c]);
        }
      const double K0 = (-4 * pi * std::erf(xi * z) - 4 * sqpi * xi * z * std::exp(-xi * xi * z * z)) / A;
      const double* Sj = &S[9 * j];
      u[3 * m] += 2 * K0 * Sj[2];      // S_xz
      u[3 * m + 1] += 2 * K0 * Sj[5];  // S_yz
      u[3 * m + 2] += K0 * (Sj[0] + Sj[4] + Sj[8]);
    }
  return u;
}

}  // namespace elliptica::test
