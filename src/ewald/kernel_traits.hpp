#pragma once
// Kernels of the spectral Ewald sum as traits (not installed). Each trait says how many values a
// source carries into P2P (n_src), how many grid components P2G spreads (n_grid), how many
// components a target receives (n_out), and gives the real-space kernel, the self limit, the
// Fourier multiplier of CNV and the error-estimate integrands' kinds. The stages (src/ewald/cpu/)
// are templates over these traits; nothing else branches on the kernel.
//
// Conventions: r = target - source; ec = erfc(xi r)/r, ce = (2 xi/sqrt(pi)) e^{-xi^2 r^2},
// ir = 1/r, xi2 = xi^2. Forces are divided by the viscosity when loaded (single layer = f/mu), so
// the Stokes kernels share the final factor 1/(8 pi). Formulas: docs/ewald.md and
// include/elliptica/ewald/ewald.hpp (Hasimoto 1959; Lindbo & Tornberg 2010 eqs. 2.6-2.9;
// af Klinteberg & Tornberg 2016 for the stresslet; seed 000 section 2.3 for the combined kernel).
#include <array>

#include "elliptica/core/constants.hpp"
#include "elliptica/ewald/ewald.hpp"

namespace elliptica::ewald::detail {

/// Mean-square kernels of the error model (params.cpp).
enum class ErrKind { LaplacePotential, LaplaceField, Stokeslet, Stresslet, StokesletPressure };

/// One term of a kernel's error model: the kind of truncated kernel, which strength density it
/// weighs (0: the single-layer values |s|^2, 1: the double layer |q|^2 |nu|^2) and which
/// quantity's tolerance it counts against (0: the values, 1: the Laplace field).
struct ErrorTerm {
  ErrKind kind;
  int density;
  int quantity;
};

/// Most values a source carries into P2P (stokes-combined: f, q, nu).
constexpr int kMaxPairValues = 9;

// Complex numbers as double[2] (the FFTW layout).
using cplx = double[2];

struct LaplaceTraits {
  static constexpr Kernel kernel = Kernel::Laplace;
  static constexpr bool field = false;
  static constexpr int n_src = 1, n_grid = 1, n_out = 1;
  static constexpr int n_linear = 1;  // leading source values the kernel is linear in (self images)
  static constexpr double final_scale = 1.0;
  static constexpr std::array<ErrorTerm, 1> errors{{{ErrKind::LaplacePotential, 0, 0}}};
  // Built-in cost model (CostConstants, ELLIPTICA_EWALD_COSTS=builtin): seconds of one core per P2P
  // distance test of a (target, candidate) and per pair within r_c (kernel evaluation), float64;
  // float32 takes half of each. Measured constants (calibrate.cpp) replace them by default.
  static constexpr double check_seconds = 0.5e-9, pair_seconds = 3.0e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) { g[0] = s[0]; }
  template <class T>
  static inline void real_space(T ec, T, T, T, T, T, T, const T* s, T& a0, T&, T&, T&) {
    a0 += s[0] * ec;
  }
  // lim_{r->0} (G^R - G)(r) s with c = 2 xi/sqrt(pi).
  template <class T>
  static inline void self_limit(T c, const T* s, T* a) { a[0] -= c * s[0]; }
  static inline void fourier(const double*, const bool*, double ksq, double e, double, double wfac, const cplx* in,
                             cplx* out) {
    const double g = 4 * kPi * e / ksq * wfac;
    out[0][0] = g * in[0][0];
    out[0][1] = g * in[0][1];
  }
};

struct LaplaceFieldTraits {
  static constexpr Kernel kernel = Kernel::Laplace;
  static constexpr bool field = true;
  static constexpr int n_src = 1, n_grid = 1, n_out = 4;  // phi, E_x, E_y, E_z
  static constexpr int n_linear = 1;
  static constexpr double final_scale = 1.0;
  static constexpr std::array<ErrorTerm, 2> errors{{{ErrKind::LaplacePotential, 0, 0}, {ErrKind::LaplaceField, 0, 1}}};
  static constexpr double check_seconds = 0.5e-9, pair_seconds = 4.0e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) { g[0] = s[0]; }
  template <class T>
  static inline void real_space(T ec, T ce, T ir, T, T rx, T ry, T rz, const T* s, T& a0, T& a1, T& a2, T& a3) {
    a0 += s[0] * ec;
    const T g = s[0] * (ec + ce) * ir * ir;  // -grad of erfc(xi r)/r, divided by r
    a1 += g * rx;
    a2 += g * ry;
    a3 += g * rz;
  }
  template <class T>
  static inline void self_limit(T c, const T* s, T* a) { a[0] -= c * s[0]; }  // field: 0 by symmetry
  static inline void fourier(const double* k, const bool* nyq, double ksq, double e, double, double wfac,
                             const cplx* in, cplx* out) {
    const double g = 4 * kPi * e / ksq * wfac;
    const double re = g * in[0][0], im = g * in[0][1];
    out[0][0] = re;
    out[0][1] = im;
    // E = -grad phi: multiply by -i k (an odd derivative: the Nyquist component is dropped).
    for (int d = 0; d < 3; ++d) {
      const double kd = nyq[d] ? 0.0 : k[d];
      out[d + 1][0] = kd * im;
      out[d + 1][1] = -kd * re;
    }
  }
};

struct StokesletTraits {
  static constexpr Kernel kernel = Kernel::Stokeslet;
  static constexpr bool field = false;
  static constexpr int n_src = 3, n_grid = 3, n_out = 3;
  static constexpr int n_linear = 3;
  static constexpr double final_scale = 1.0 / (8 * kPi);
  static constexpr std::array<ErrorTerm, 1> errors{{{ErrKind::Stokeslet, 0, 0}}};
  static constexpr double check_seconds = 0.6e-9, pair_seconds = 5.0e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) {
    g[0] = s[0];
    g[1] = s[1];
    g[2] = s[2];
  }
  // S^R(r) f = A f + B r (r.f), A = ec - ce, B = (ec + ce)/r^2.
  template <class T>
  static inline void real_space(T ec, T ce, T ir, T, T rx, T ry, T rz, const T* f, T& a0, T& a1, T& a2, T&) {
    const T A = ec - ce;
    const T rf = (ec + ce) * ir * ir * (rx * f[0] + ry * f[1] + rz * f[2]);
    a0 += A * f[0] + rf * rx;
    a1 += A * f[1] + rf * ry;
    a2 += A * f[2] + rf * rz;
  }
  template <class T>
  static inline void self_limit(T c, const T* s, T* a) {
    for (int i = 0; i < 3; ++i) a[i] -= T(2) * c * s[i];
  }
  // B(k) f = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} (k^2 f - k (k.f)) / k^4.
  static inline void fourier(const double* k, const bool*, double ksq, double e, double i4xi2, double wfac,
                             const cplx* in, cplx* out) {
    const double b = 8 * kPi * (1 + ksq * i4xi2) * e / (ksq * ksq) * wfac;
    for (int p = 0; p < 2; ++p) {
      const double kf = k[0] * in[0][p] + k[1] * in[1][p] + k[2] * in[2][p];
      const double f0 = in[0][p], f1 = in[1][p], f2 = in[2][p];
      out[0][p] = b * (ksq * f0 - k[0] * kf);
      out[1][p] = b * (ksq * f1 - k[1] * kf);
      out[2][p] = b * (ksq * f2 - k[2] * kf);
    }
  }
};

// Stokeslet velocity and pressure. Raw pressure (before the final 1/(8 pi), forces divided by
// mu): 8 pi p / mu = 2 sum f.r/r^3, i.e. twice the Laplace field of the vector charge f
// contracted with it: real space 2 (ec + ce) (r.f)/r^2, Fourier -8 pi i (k.f) e^{-k^2/4xi^2}/k^2.
struct StokesletPressureTraits {
  static constexpr Kernel kernel = Kernel::Stokeslet;
  static constexpr bool field = true;  // the second quantity (pressure)
  static constexpr int n_src = 3, n_grid = 3, n_out = 4;  // u (3), pressure
  static constexpr int n_linear = 3;
  static constexpr double final_scale = 1.0 / (8 * kPi);
  static constexpr std::array<ErrorTerm, 2> errors{{{ErrKind::Stokeslet, 0, 0}, {ErrKind::StokesletPressure, 0, 1}}};
  static constexpr double check_seconds = 0.6e-9, pair_seconds = 5.5e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) {
    StokesletTraits::grid_values<T>(s, g);
  }
  template <class T>
  static inline void real_space(T ec, T ce, T ir, T xi2, T rx, T ry, T rz, const T* f, T& a0, T& a1, T& a2, T& a3) {
    StokesletTraits::real_space<T>(ec, ce, ir, xi2, rx, ry, rz, f, a0, a1, a2, a3);
    a3 += T(2) * (ec + ce) * ir * ir * (rx * f[0] + ry * f[1] + rz * f[2]);
  }
  template <class T>
  static inline void self_limit(T c, const T* s, T* a) {  // pressure: 0 (odd)
    StokesletTraits::self_limit<T>(c, s, a);
  }
  static inline void fourier(const double* k, const bool* nyq, double ksq, double e, double i4xi2, double wfac,
                             const cplx* in, cplx* out) {
    StokesletTraits::fourier(k, nyq, ksq, e, i4xi2, wfac, in, out);
    // -i (8 pi e/k^2) (k.f): an odd derivative, the Nyquist components dropped
    const double g = 8 * kPi * e / ksq * wfac;
    double kf[2] = {0, 0};
    for (int d = 0; d < 3; ++d) {
      const double kd = nyq[d] ? 0.0 : k[d];
      kf[0] += kd * in[d][0];
      kf[1] += kd * in[d][1];
    }
    out[3][0] = g * kf[1];
    out[3][1] = -g * kf[0];
  }
};

// The stresslet multiplier's vector M(S, k)_j = -(2 (S k)_j + k_j tr S) k^2 + 2 k_j (k.S.k) for S
// given by its 6 components (S_00, S_11, S_22, S_01, S_02, S_12; StressletTraits::grid_values):
// the stresslet's Fourier sum is -i b M (b as in StokesletTraits::fourier). One place for
// StressletTraits, StokesCombinedTraits and the written-out CNV (cpu/cnv.cpp).
inline void stresslet_multiplier(double k0, double k1, double k2, double ksq, double s00, double s11, double s22,
                                 double s01, double s02, double s12, double (&M)[3]) {
  const double Sk0 = s00 * k0 + s01 * k1 + s02 * k2, Sk1 = s01 * k0 + s11 * k1 + s12 * k2,
               Sk2 = s02 * k0 + s12 * k1 + s22 * k2;
  const double tr = s00 + s11 + s22;
  const double kSk = k0 * Sk0 + k1 * Sk1 + k2 * Sk2;
  M[0] = -(2 * Sk0 + k0 * tr) * ksq + 2 * k0 * kSk;
  M[1] = -(2 * Sk1 + k1 * tr) * ksq + 2 * k1 * kSk;
  M[2] = -(2 * Sk2 + k2 * tr) * ksq + 2 * k2 * kSk;
}

struct StressletTraits {
  static constexpr Kernel kernel = Kernel::Stresslet;
  static constexpr bool field = false;
  static constexpr int n_src = 6;   // q (3), nu (3)
  // The multiplier below sees F_lm = q_l nu_m only through its symmetric part S = (F + F^T)/2
  // (k_m (F_jm + F_mj) = 2 (S k)_j, tr F = tr S, k.F.k = k.S.k): 6 grid components S_00, S_11,
  // S_22, S_01, S_02, S_12 instead of 9 (a third less spreading and fewer FFTs, same result).
  static constexpr int n_grid = 6;
  static constexpr int n_out = 3;
  static constexpr int n_linear = 0;
  static constexpr double final_scale = 1.0 / (8 * kPi);
  static constexpr std::array<ErrorTerm, 1> errors{{{ErrKind::Stresslet, 1, 0}}};
  static constexpr double check_seconds = 0.7e-9, pair_seconds = 7.0e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) {
    const T* q = s;
    const T* n = s + 3;
    g[0] = q[0] * n[0];
    g[1] = q[1] * n[1];
    g[2] = q[2] * n[2];
    g[3] = T(0.5) * (q[0] * n[1] + q[1] * n[0]);
    g[4] = T(0.5) * (q[0] * n[2] + q[2] * n[0]);
    g[5] = T(0.5) * (q[1] * n[2] + q[2] * n[1]);
  }
  // T^R: A (r.q)(r.nu) r + B [(q.nu) r + (r.nu) q + (r.q) nu],
  // A = -(2/r^4)[3 ec + ce (3 + 2 xi^2 r^2)], B = 2 xi^2 ce = (4 xi^3/sqrt(pi)) e^{-xi^2 r^2}.
  template <class T>
  static inline void real_space(T ec, T ce, T ir, T xi2, T rx, T ry, T rz, const T* s, T& a0, T& a1, T& a2, T&) {
    const T* q = s;
    const T* n = s + 3;
    const T ir2 = ir * ir;
    const T r2 = rx * rx + ry * ry + rz * rz;
    const T A = T(-2) * ir2 * ir2 * (T(3) * ec + ce * (T(3) + T(2) * xi2 * r2));
    const T B = T(2) * xi2 * ce;
    const T rq = rx * q[0] + ry * q[1] + rz * q[2];
    const T rn = rx * n[0] + ry * n[1] + rz * n[2];
    const T qn = q[0] * n[0] + q[1] * n[1] + q[2] * n[2];
    const T ar = A * rq * rn + B * qn;
    a0 += ar * rx + B * (rn * q[0] + rq * n[0]);
    a1 += ar * ry + B * (rn * q[1] + rq * n[1]);
    a2 += ar * rz + B * (rn * q[2] + rq * n[2]);
  }
  template <class T>
  static inline void self_limit(T, const T*, T*) {}  // the smooth part of T is odd: 0 at r = 0
  // (+i)(-8 pi/k^4)(1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} [-(k_m F_jm + k_m F_mj + k_j F_mm) k^2 + 2 k_j k_l k_m F_lm]
  //   = (+i)(...) [-(2 (S k)_j + k_j tr S) k^2 + 2 k_j (k.S.k)], S the symmetric part of F.
  // Odd in k: a mode on a Nyquist plane has no odd real counterpart and is dropped (its size is
  // that of the Fourier truncation error).
  static inline void fourier(const double* k, const bool* nyq, double ksq, double e, double i4xi2, double wfac,
                             const cplx* in, cplx* out) {
    if (nyq[0] || nyq[1] || nyq[2]) {
      for (int j = 0; j < 3; ++j) out[j][0] = out[j][1] = 0.0;
      return;
    }
    const double c = -8 * kPi * (1 + ksq * i4xi2) * e / (ksq * ksq) * wfac;
    for (int p = 0; p < 2; ++p) {
      double M[3];  // S from its 6 components (grid_values)
      stresslet_multiplier(k[0], k[1], k[2], ksq, in[0][p], in[1][p], in[2][p], in[3][p], in[4][p], in[5][p], M);
      // multiplying by i: (x + i y) i = -y + i x, so the real part comes from the imaginary one.
      for (int j = 0; j < 3; ++j) {
        if (p == 0)
          out[j][1] = c * M[j];
        else
          out[j][0] = -c * M[j];
      }
    }
  }
};

struct StokesCombinedTraits {
  static constexpr Kernel kernel = Kernel::StokesCombined;
  static constexpr bool field = false;
  static constexpr int n_src = 9;   // f/mu (3), q (3), nu (3)
  static constexpr int n_grid = 9;  // f (3), the symmetric part of q (x) nu (6, StressletTraits)
  static constexpr int n_out = 3;
  static constexpr int n_linear = 3;
  static constexpr double final_scale = 1.0 / (8 * kPi);
  static constexpr std::array<ErrorTerm, 2> errors{{{ErrKind::Stokeslet, 0, 0}, {ErrKind::Stresslet, 1, 0}}};
  static constexpr double check_seconds = 0.8e-9, pair_seconds = 9.0e-9;
  template <class T>
  static inline void grid_values(const T* s, T* g) {
    StokesletTraits::grid_values<T>(s, g);
    StressletTraits::grid_values<T>(s + 3, g + 3);
  }
  // StokesletTraits::real_space(f) + StressletTraits::real_space(q, nu) with the terms along r
  // gathered into one coefficient: (ec - ce) f + [(ec + ce)(r.f)/r^2 + A (r.q)(r.nu) + B (q.nu)] r
  // + B [(r.nu) q + (r.q) nu] (fewer operations per pair than the two calls; same sum).
  template <class T>
  static inline void real_space(T ec, T ce, T ir, T xi2, T rx, T ry, T rz, const T* s, T& a0, T& a1, T& a2, T&) {
    const T* f = s;
    const T* q = s + 3;
    const T* n = s + 6;
    const T ir2 = ir * ir;
    const T r2 = rx * rx + ry * ry + rz * rz;
    const T As = ec - ce;
    const T A = T(-2) * ir2 * ir2 * (T(3) * ec + ce * (T(3) + T(2) * xi2 * r2));
    const T B = T(2) * xi2 * ce;
    const T rf = rx * f[0] + ry * f[1] + rz * f[2];
    const T rq = rx * q[0] + ry * q[1] + rz * q[2];
    const T rn = rx * n[0] + ry * n[1] + rz * n[2];
    const T qn = q[0] * n[0] + q[1] * n[1] + q[2] * n[2];
    const T ar = (ec + ce) * ir2 * rf + A * rq * rn + B * qn;
    a0 += ar * rx + As * f[0] + B * (rn * q[0] + rq * n[0]);
    a1 += ar * ry + As * f[1] + B * (rn * q[1] + rq * n[1]);
    a2 += ar * rz + As * f[2] + B * (rn * q[2] + rq * n[2]);
  }
  template <class T>
  static inline void self_limit(T c, const T* s, T* a) { StokesletTraits::self_limit<T>(c, s, a); }
  // StokesletTraits::fourier(f) + StressletTraits::fourier(S) with their common factor
  // b = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} / k^4 formed once: b (k^2 f - k (k.f))
  // + i (-b) M(S), M as in StressletTraits (dropped on a Nyquist plane).
  static inline void fourier(const double* k, const bool* nyq, double ksq, double e, double i4xi2, double wfac,
                             const cplx* in, cplx* out) {
    const double b = 8 * kPi * (1 + ksq * i4xi2) * e / (ksq * ksq) * wfac;
    const bool odd = !(nyq[0] || nyq[1] || nyq[2]);
    double M[2][3] = {{0, 0, 0}, {0, 0, 0}};
    for (int p = 0; p < 2; ++p) {
      const double kf = k[0] * in[0][p] + k[1] * in[1][p] + k[2] * in[2][p];
      for (int j = 0; j < 3; ++j) out[j][p] = b * (ksq * in[j][p] - k[j] * kf);
      if (!odd) continue;
      const cplx* S = in + 3;
      stresslet_multiplier(k[0], k[1], k[2], ksq, S[0][p], S[1][p], S[2][p], S[3][p], S[4][p], S[5][p], M[p]);
    }
    // i (-b) (M_re + i M_im) = b M_im - i b M_re
    for (int j = 0; j < 3; ++j) {
      out[j][0] += b * M[1][j];
      out[j][1] -= b * M[0][j];
    }
  }
};

/// Calls f(Traits{}) with the traits of a kernel (the one place that maps the enum to a type).
template <class F>
decltype(auto) with_traits(Kernel k, bool field, F&& f) {
  switch (k) {
    case Kernel::Laplace:
      if (field) return f(LaplaceFieldTraits{});
      return f(LaplaceTraits{});
    case Kernel::Stokeslet:
      if (field) return f(StokesletPressureTraits{});
      return f(StokesletTraits{});
    case Kernel::Stresslet:
      return f(StressletTraits{});
    case Kernel::StokesCombined:
      break;
  }
  return f(StokesCombinedTraits{});
}

}  // namespace elliptica::ewald::detail
