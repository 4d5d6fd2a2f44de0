// Truncated Green's functions (issue 31: spectral Ewald with free, 0P, and partly free, 1P / 2P,
// directions). Vico, Greengard & Ferrando, J. Comput. Phys. 323 (2016) 191-203: a Green's
// function G cut off at radius R (G_R = G for |x| <= R, 0 beyond) has an entire Fourier
// transform (Paley-Wiener), so its convolution with sources in a domain of diameter <= R is
// unchanged there and the trapezoid rule in k (an FFT on a grid oversampled by s >= 1 + R / L)
// converges spectrally. Conventions: f^(k) = int f(x) exp(-i k.x) dx over R^d; k >= 0 is |k|.
//
// The kernels, in the normalisation of the library's sums (Laplace phi = sum q / r, so the 3-D
// transform of 1/r is 4 pi / k^2), each derived here by the integral noted and checked against
// quadrature in tests/test_ewald_truncated_green.cpp:
// - laplace_3d:     1/r truncated in 3-D (0P):         4 pi (1 - cos kR) / k^2 = 8 pi sin^2(kR/2) / k^2,
//                   k = 0: 2 pi R^2  (int_0^R (1/r) sinc(kr) 4 pi r^2 dr).
// - stokeslet_3d:   the stokeslet truncated in 3-D (0P Stokes), below.
// - stresslet_3d:   the stresslet -6 x x x / |x|^5 truncated in 3-D (0P), below.
// - laplace_1p_zero, stokeslet_1p_zero, stresslet_1p_zero: the k_z = 0 plane of a 1P sum (the
//                   line's 2-D problem): -2 ln(rho / R), the 2-D stokeslet and the line's
//                   stresslet truncated in the plane, below.
// (2P's k_par = 0 mode, the sheet -2 pi |z| tapered, is transformed by quadrature in the plan.)
// Small kR: the closed forms cancel (to (kR)^2 or (kR)^4 relative); there the Taylor series of the
// same integrals are used (|kR| < 0.25: 8 terms, relative error < 1e-16).
#pragma once

#include <math.h>  // j0, j1 (POSIX; std::cyl_bessel_j is 70x slower at the arguments here, same accuracy)

#include <cmath>

namespace elliptica::ewald::detail::truncated {

inline constexpr double kPi = 3.14159265358979323846;

/// 4 pi int_0^R r^p sinc(k r) r^2 dr by its Taylor series in x = kR:
/// 4 pi R^(p+3) sum_j (-1)^j x^(2j) / ((p + 3 + 2j) (2j + 1)!).
inline double radial_series(double k, double R, int p) {
  const double x2 = (k * R) * (k * R);
  double term = 1.0, sum = 0.0;  // term = (-1)^j x^(2j) / (2j + 1)!
  for (int j = 0; j < 8; ++j) {
    sum += term / double(p + 3 + 2 * j);
    term *= -x2 / double((2 * j + 2) * (2 * j + 3));
  }
  return 4.0 * kPi * std::pow(R, p + 3) * sum;
}

/// The transform of 1/r truncated at R (3-D, radial in k).
inline double laplace_3d(double k, double R) {
  if (std::abs(k * R) < 0.25) return radial_series(k, R, -1);
  const double s = std::sin(0.5 * k * R);
  return 8.0 * kPi * s * s / (k * k);
}

/// The transform of the stokeslet S(x) = I/r + x x^T/r^3 truncated at R (3-D):
///   S_R^(k) = s_delta(k) I - s_kk(k) k k^T / k^2,
///   s_delta = (4 pi / k^2) [(1 - cos x) + (1 - j0(x))],  s_kk = (4 pi / k^2) int_0^x z j2(z) dz,
///   int_0^x z j2(z) dz = (1 - cos x)/2 - (3/2)(x j1(x) - 1 + j0(x)),  x = kR,
/// from int n n^T e^{-i z n.k^} dOmega = 4 pi [j1(z)/z I - j2(z) k^ k^^T] (derivation in
/// docs/ewald.md, "Free space (0P)"). Away from the oscillation s_delta -> 8 pi / k^2 and
/// s_kk -> 8 pi / k^2: S^ = 8 pi (k^2 I - k k^T) / k^4. At k = 0: s_delta = 8 pi R^2 / 3, s_kk = 0.
/// The jump at R is O(1/R), as for 1/r (truncating the biharmonic r instead, as af Klinteberg,
/// Shamshirgar & Tornberg, Res. Math. Sci. 4 (2017) do, and differentiating leaves layers of
/// strength O(R) at r = R, whose band-limited tails cost digits: measured 1e-8).
/// Series in x below x = 2 (the closed forms cancel there).
inline void stokeslet_3d(double k, double R, double& s_delta, double& s_kk) {
  const double x = k * R, x2 = x * x;
  double b, c;  // 1 - j0(x) and int_0^x z j2(z) dz
  if (x < 2.0) {
    // 1 - j0 = sum_m (-1)^m x^(2m+2) / ((2m+2) 2^m m! (2m+3)!!),
    // int z j2 = sum_m (-1)^m x^(2m+4) / ((2m+4) 2^m m! (2m+5)!!); both divided by x^2 here
    double tb = 1.0 / 3.0, tc = x2 / 15.0;  // m = 0: x^0 / 3!!, x^2 / 5!! (times the 1/(2m+2), 1/(2m+4) below)
    double sb = 0.0, sc = 0.0;
    for (int m = 0; m < 24; ++m) {
      sb += tb / double(2 * m + 2);
      sc += tc / double(2 * m + 4);
      tb *= -x2 / (2.0 * double(m + 1) * double(2 * m + 5));
      tc *= -x2 / (2.0 * double(m + 1) * double(2 * m + 7));
    }
    const double s2 = std::sin(0.5 * x);
    const double a = x < 1e-8 ? 0.5 : 2.0 * s2 * s2 / x2;  // (1 - cos x) / x^2
    s_delta = 4.0 * kPi * R * R * (a + sb);
    s_kk = 4.0 * kPi * R * R * sc;
    return;
  }
  const double sx = std::sin(x), cx = std::cos(x);
  const double j0 = sx / x, j1 = sx / x2 - cx / x;
  b = 1.0 - j0;
  c = 0.5 * (1.0 - cx) - 1.5 * (x * j1 - 1.0 + j0);
  const double s2 = std::sin(0.5 * x);
  s_delta = 4.0 * kPi * (2.0 * s2 * s2 + b) / (k * k);
  s_kk = 4.0 * kPi * c / (k * k);
}

/// The transform of the stresslet T_jlm(x) = -6 x_j x_l x_m / |x|^5 truncated at R (3-D, 0P):
///   T_R^(k)_jlm = i [t_a k^_j k^_l k^_m + t_b (delta_jl k^_m + delta_jm k^_l + delta_lm k^_j)],
///   t_a = -24 pi a(x) / k,  t_b = 24 pi b(x) / k,  x = kR,
///   b = int_0^x j2(t) / t dt = 1/3 - j1(x) / x,  a = int_0^x j3(t) dt = 2 b - j2(x)
/// (from int n_j n_l n_m e^{-i z n.k^} dOmega = 4 pi i [j3(z) k^k^k^ - (j2(z) / z)(delta k^)_sym]
/// and j3 = (2 / t) j2 - j2'). Odd in k (real kernel, odd): the multiplier is i times a real
/// table. Away from the oscillation b -> 1/3, a -> 2/3: the 3P multiplier
/// (8 pi i / k)[(delta k^)_sym - 2 k^k^k^] (kernel_traits.hpp, StressletTraits::fourier without
/// the screening). Both vanish at k = 0 (a = O(x^4), b = O(x^2)). Series below x = 3:
/// b = sum_{m>=1} c_m x^(2m), a = sum_{m>=2} (2 - 2m) c_m x^(2m), c_m = -(-1)^m / (2^m m! (2m+3)!!).
inline void stresslet_3d(double k, double R, double& t_a, double& t_b) {
  const double x = k * R;
  if (x == 0.0) {
    t_a = t_b = 0.0;
    return;
  }
  double a, b;
  if (x < 3.0) {
    const double x2 = x * x;
    double c = x2 / 30.0;  // c_1 x^2
    a = b = 0.0;
    for (int m = 1; m < 30; ++m) {
      b += c;
      a += (2.0 - 2.0 * m) * c;
      c *= -x2 / (2.0 * double(m + 1) * double(2 * m + 5));
    }
  } else {
    const double sx = std::sin(x), cx = std::cos(x);
    const double j1 = sx / (x * x) - cx / x, j2 = (3.0 / (x * x) - 1.0) * sx / x - 3.0 * cx / (x * x);
    b = 1.0 / 3.0 - j1 / x;
    a = 2.0 * b - j2;
  }
  t_a = -24.0 * kPi * a / k;
  t_b = 24.0 * kPi * b / k;
}

/// (1 - J0(x)) / x^2 and (2 - 2 J0(x) - x J1(x)) / x^2, both even in x; by their Taylor series
/// below x = 1 (no cancellation), where sum_{n>=1} (-1)^(n-1) (x/2)^(2n) / (n!)^2 and
/// sum_{n>=2} 2 (-1)^n (n - 1) (x/2)^(2n) / (n!)^2 (from the series of J0 and J1).
inline void bessel_ratios_2d(double x, double& one_minus_j0, double& two_j) {
  const double x2 = x * x;
  if (x2 == 0.0) {
    one_minus_j0 = 0.25;
    two_j = 0.0;
    return;
  }
  if (x < 1.0) {
    const double h2 = 0.25 * x2;
    double a = 0.0, b = 0.0, t = h2;  // t = (x/2)^(2n) / (n!)^2
    for (int n = 1; n < 14; ++n) {
      a += (n % 2 ? t : -t);
      b += 2.0 * double(n - 1) * (n % 2 ? -t : t);
      t *= h2 / double((n + 1) * (n + 1));
    }
    one_minus_j0 = a / x2;
    two_j = b / x2;
    return;
  }
  const double j0 = ::j0(x), j1 = ::j1(x);
  one_minus_j0 = (1.0 - j0) / x2;
  two_j = (2.0 - 2.0 * j0 - x * j1) / x2;
}

/// 1P stokeslet, the k_z = 0 plane (the line of point forces' 2-D flow): per unit length the
/// stokeslet's line integral with its divergent part 2 ln(2Z) (I + e_z e_z^T) removed,
/// -2 ln(rho) I_perp + 2 rho^ rho^^T across the line and -4 ln(rho) - 2 along it, here shifted to
/// -2 ln(rho / R) I_perp + 2 rho^ rho^^T and -4 ln(rho / R) and truncated at R (the caller adds
/// the constants -2 ln R and -4 ln R - 2 back). Transforms, x = c R (c = |k_perp|), from
/// int_0^{2 pi} n n^T e^{-i x cos(theta)} dtheta = pi [(J0 + J2) I - 2 J2 k^ k^^T] and
/// int_0^R rho J0 = R J1(x) / c, int_0^R rho J2 = (2 - 2 J0(x) - x J1(x)) / c^2:
///   across: 8 pi R^2 f0 I_perp - 4 pi R^2 f2 k^ k^^T,  along: 8 pi R^2 f0,
///   f0 = (1 - J0(x)) / x^2, f2 = (2 - 2 J0(x) - x J1(x)) / x^2 (bessel_ratios_2d).
/// Both tend to the 3P multiplier 8 pi (I - k^ k^^T) / c^2 far out.
inline void stokeslet_1p_zero(double c, double R, double& across_I, double& across_kk, double& along) {
  double f0, f2;
  bessel_ratios_2d(c * R, f0, f2);
  across_I = 8.0 * kPi * R * R * f0;
  across_kk = -4.0 * kPi * R * R * f2;
  along = 8.0 * kPi * R * R * f0;
}

/// 1P stresslet, the k_z = 0 plane: the stresslet's line integral per unit length,
/// int T_jlm dz = -8 rho_j rho_l rho_m / rho^4 (all indices across the line), -4 rho_j / rho^2
/// (j across, l = m = z, and its permutations), 0 with one or three z indices (odd in z); no
/// divergent part (T ~ 1/r^2 along the line). Truncated at R, transforms (c = |k_perp|, x = cR):
///   across:   i [s_sym (delta k^)_sym + s_kkk k^k^k^],  s_sym = 4 pi (I1 + I3) / c,  s_kkk = -16 pi I3 / c,
///   (j, z, z): i s_zz k^_j,  s_zz = 8 pi I1 / c,
///   I1 = int_0^x J1 = 1 - J0(x),  I3 = int_0^x J3 = 1 + J0(x) - 4 J1(x) / x,
/// from int_0^{2 pi} n (x) n (x) n e^{-i x cos(theta)} dtheta = -(pi i / 2)[(J1 + J3)(delta k^)_sym - 4 J3 k^k^k^]
/// and int n e^{-i x cos} = -2 pi i J1 k^. Far out (I1, I3 -> 1): the 3P multiplier's k_z = 0 plane,
/// (8 pi i / c)[(delta k^)_sym - 2 k^k^k^] and 8 pi i k^_j / c. Series below x = 3:
/// I3 = sum_m (-1)^m 2 (x/2)^(2m+4) / ((2m+4) m! (m+3)!).
inline void stresslet_1p_zero(double c, double R, double& s_sym, double& s_kkk, double& s_zz) {
  const double x = c * R;
  if (x == 0.0) {
    s_sym = s_kkk = s_zz = 0.0;
    return;
  }
  double f0, f2;
  bessel_ratios_2d(x, f0, f2);
  const double i1 = f0 * x * x;  // 1 - J0 (series below x = 1)
  double i3;
  if (x < 3.0) {
    const double h2 = 0.25 * x * x;
    double t = 2.0 * h2 * h2 / 6.0;  // m = 0: 2 (x/2)^4 / 3!
    i3 = 0.0;
    for (int m = 0; m < 30; ++m) {
      i3 += t / double(2 * m + 4);
      t *= -h2 / (double(m + 1) * double(m + 4));
    }
  } else {
    i3 = 1.0 + ::j0(x) - 4.0 * ::j1(x) / x;
  }
  s_sym = 4.0 * kPi * (i1 + i3) / c;
  s_kkk = -16.0 * kPi * i3 / c;
  s_zz = 8.0 * kPi * i1 / c;
}

/// 1P, laplace: the transform of the k_z = 0 kernel -2 ln(rho / R) truncated at R (the line
/// integral of 1/r with its divergent part 2 ln(2Z) removed is -2 ln rho; shifted by 2 ln R to
/// vanish at R: the caller adds -2 ln(R) per unit charge back): 4 pi (1 - J0(cR)) / c^2, c = k_perp
/// (int_0^R (-2 ln(rho / R)) J0(c rho) 2 pi rho drho; 4 pi R^2 / 4 = pi R^2 at c = 0).
inline double laplace_1p_zero(double c, double R) {
  double f0, f2;
  bessel_ratios_2d(c * R, f0, f2);
  return 4.0 * kPi * R * R * f0;
}

}  // namespace elliptica::ewald::detail::truncated
