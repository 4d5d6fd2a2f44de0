// CNV: the diagonal convolution of the spectral Ewald method over the half spectrum (seed 000,
// section 2.2 step 3): X(k) = c G_hat(k) H_hat(k) / w_hat(k)^2 with c = (h1 h2 h3)^2 / V (P2G and
// G2P approximate integrals by grid sums) and G_hat the kernel's Fourier multiplier
// (K::fourier, kernel_traits.hpp); the k = 0 mode is set to zero. Reads n_grid components,
// writes n_out.
//
// Energy by Parseval (BackendSetup::energy_parseval, Laplace field): G2P is the adjoint of P2G
// (the same window weights at the same points), so with H = P2G(q) and phi_F = G2P(IFFT(X)),
//   sum_n q_n phi_F(y_n) = sum_grid H IFFT(X) = sum_k conj(H_hat(k)) X(k)
//                        = sum_k c G_hat(k) |H_hat(k)|^2 / w_hat(k)^2,
// summed here over the half spectrum (modes 0 < k3 < M3/2 twice, k3 = 0 and the Nyquist k3 = M3/2
// once); then only E's 3 components are written (slots 0..2) for the IFFT and G2P.
//
// cnv_on works on any SpectrumView: the whole half spectrum of a serial plan (rows (i, j)), or
// a rank's part of FFTW-MPI's transposed spectrum (rows (j, i), j in the rank's range; issue 30).
#include <cmath>
#include <vector>

#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {

// CNV of the Laplace kernels (LaplaceTraits::fourier, LaplaceFieldTraits::fourier, written out):
// G = 4 pi e^{-k^2/(4 xi^2)} / k^2 times c / w_hat^2, X_phi = G H and X_E = -i k G H (Nyquist
// components of k dropped), the per-axis factors precomputed so that the loop along k3 has no
// exp, no branch and no call (it vectorises); with energy_parseval the Parseval sum and E only.
template <bool field, class T>
void cnv_laplace(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, const SpectrumView& v, const std::vector<double> (&kv)[3],
                 const std::vector<double> (&iw2)[3], const std::vector<double> (&ek)[3], double scale) {
  const Params& p = g.setup.params;
  const int M1 = p.grid[0], M2 = p.grid[1], M3 = p.grid[2], M3h = M3 / 2 + 1;
  const std::size_t ncplx = v.comp_stride;
  T* X = reinterpret_cast<T*>(ws.grid.cplx);  // (re, im) pairs
  const bool parseval = field && g.setup.energy_parseval;
  // along k3: the Gaussian and window factor, k3 (0 on the Nyquist plane for the field), the
  // half-spectrum weight of the Parseval sum
  const std::size_t n3 = static_cast<std::size_t>(M3h);
  std::vector<double> fz(n3), kz(n3), kzs(n3), wz(n3);
  for (int l = 0; l < M3h; ++l) {
    const bool nyq = (M3 % 2 == 0) && l == M3 / 2;
    fz[l] = ek[2][l] * iw2[2][l];
    kz[l] = nyq ? 0.0 : kv[2][l];
    kzs[l] = kv[2][l] * kv[2][l];
    wz[l] = (l == 0 || nyq) ? 1.0 : 2.0;
  }
  std::vector<double> plane_energy(parseval ? std::size_t(v.n_outer) : 0, 0.0);
  double* pe = plane_energy.data();
  const double* fzp = fz.data();
  const double* kzp = kz.data();
  const double* kzsp = kzs.data();
  const double* wzp = wz.data();
  const double* ftab = g.setup.free_multiplier ? g.setup.free_multiplier->data() : nullptr;
  // free space with the field: the odd kernels' tables -d_a G (multiplier i t_a), after phi's
  const std::size_t ntab = std::size_t(M1) * std::size_t(M2) * std::size_t(M3h);
  const bool etabs = field && ftab && g.setup.free_multiplier->size() >= 4 * ntab;
#pragma omp parallel for schedule(static) num_threads(g.setup.threads)
  for (int a = 0; a < v.n_outer; ++a) {
    double e_plane = 0;
    for (int b = 0; b < v.n_inner; ++b) {
      const int i = v.i(a, b), j = v.j(a, b);
      const double kx = (M1 % 2 == 0 && i == M1 / 2) ? 0.0 : kv[0][i];
      const double ky = (M2 % 2 == 0 && j == M2 / 2) ? 0.0 : kv[1][j];
      const double kxy2 = kv[0][i] * kv[0][i] + kv[1][j] * kv[1][j];
      const double fxy = 4 * kPi * scale * ek[0][i] * iw2[0][i] * ek[1][j] * iw2[1][j];
      // the free-space table (BackendSetup::free_multiplier): its row, and c / w^2 of (i, j)
      const double* tab = ftab ? ftab + (std::size_t(i) * std::size_t(M2) + std::size_t(j)) * M3h : nullptr;
      const double* tx = etabs ? tab + ntab : nullptr;
      const double* ty = etabs ? tab + 2 * ntab : nullptr;
      const double* tz = etabs ? tab + 3 * ntab : nullptr;
      const std::size_t row = (std::size_t(a) * std::size_t(v.n_inner) + std::size_t(b)) * M3h;
      T* H = X + 2 * row;                                    // the spread charges (in), phi (out)
      T* E0 = X + 2 * (row + (parseval ? 0 : ncplx));        // E_x (component 1, or 0 without phi)
      T* E1 = E0 + 2 * ncplx;
      T* E2 = E1 + 2 * ncplx;
      double e_row = 0;
#pragma omp simd reduction(+ : e_row)
      for (int l = 0; l < M3h; ++l) {
        const double ksq = kxy2 + kzsp[l];
        const double gk = tab ? scale * tab[l] : ksq > 0 ? fxy * fzp[l] / ksq : 0.0;  // k = 0: dropped (3P)
        const double hr = double(H[2 * l]), hi = double(H[2 * l + 1]);
        const double re = gk * hr, im = gk * hi;
        if constexpr (field) {
          if (parseval) e_row += wzp[l] * (re * hr + im * hi);
          if (etabs) {
            // free space: E_a = i t_a H: (hr, hi) -> (-t_a hi, t_a hr)
            const double ax = scale * tx[l], ay = scale * ty[l], az = scale * tz[l];
            E0[2 * l] = static_cast<T>(-ax * hi);
            E0[2 * l + 1] = static_cast<T>(ax * hr);
            E1[2 * l] = static_cast<T>(-ay * hi);
            E1[2 * l + 1] = static_cast<T>(ay * hr);
            E2[2 * l] = static_cast<T>(-az * hi);
            E2[2 * l + 1] = static_cast<T>(az * hr);
          } else {
            // E = -i k phi_hat: (re, im) -> (k im, -k re)
            E0[2 * l] = static_cast<T>(kx * im);
            E0[2 * l + 1] = static_cast<T>(-kx * re);
            E1[2 * l] = static_cast<T>(ky * im);
            E1[2 * l + 1] = static_cast<T>(-ky * re);
            E2[2 * l] = static_cast<T>(kzp[l] * im);
            E2[2 * l + 1] = static_cast<T>(-kzp[l] * re);
          }
        }
        if (!parseval) {
          H[2 * l] = static_cast<T>(re);
          H[2 * l + 1] = static_cast<T>(im);
        }
      }
      e_plane += e_row;
    }
    if (parseval) pe[a] = e_plane;
  }
  double energy = 0;
  for (double v : plane_energy) energy += v;
  ws.far_energy = energy;
}

// The Stokes multipliers of kernel_traits.hpp (StokesletTraits, StokesletPressureTraits,
// StressletTraits, StokesCombinedTraits ::fourier) written out for a mode off every Nyquist plane
// with k != 0, free of branches so that the loop along k3 vectorises: with
// b = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} w / k^4 (w = c / w_hat^2),
//   stokeslet   b (k^2 f - k (k.f)),   pressure -i (8 pi e w / k^2) (k.f),
//   stresslet   -i b M(S), M_j = -(2 (S k)_j + k_j tr S) k^2 + 2 k_j (k.S.k),
// combined the stokeslet of f (components 0..2) plus the stresslet of S (components 3..8).
template <class K>
inline void stokes_interior(const double (&k)[3], double ksq, double e, double i4xi2, double wfac,
                            const double (&in)[K::n_grid][2], double (&out)[K::n_out][2]) {
  const double b = 8 * kPi * (1 + ksq * i4xi2) * e / (ksq * ksq) * wfac;
  constexpr bool single = K::kernel == Kernel::Stokeslet || K::kernel == Kernel::StokesCombined;
  constexpr bool dbl = K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined;
  constexpr int o = K::kernel == Kernel::StokesCombined ? 3 : 0;  // first S component
  for (int p = 0; p < 2; ++p) {
    if constexpr (single) {
      const double kf = k[0] * in[0][p] + k[1] * in[1][p] + k[2] * in[2][p];
      for (int j = 0; j < 3; ++j) out[j][p] = b * (ksq * in[j][p] - k[j] * kf);
      if constexpr (K::n_out == 4) {  // the stokeslet pressure
        const double g = 8 * kPi * e / ksq * wfac;
        if (p == 0) out[3][1] = -g * kf; else out[3][0] = g * kf;
      }
    } else {
      for (int j = 0; j < 3; ++j) out[j][p] = 0.0;
    }
  }
  if constexpr (dbl) {
    double M[2][3];
    for (int p = 0; p < 2; ++p)
      stresslet_multiplier(k[0], k[1], k[2], ksq, in[o][p], in[o + 1][p], in[o + 2][p], in[o + 3][p], in[o + 4][p],
                           in[o + 5][p], M[p]);
    // -i b (M_re + i M_im) = b M_im - i b M_re
    for (int j = 0; j < 3; ++j) {
      out[j][0] += b * M[1][j];
      out[j][1] -= b * M[0][j];
    }
  }
}

// Free axes (0P, 2P, 1P; BackendSetup::free_multiplier): the Stokes multipliers from their
// tables over the half spectrum (free_space_table, src/ewald/plan.cpp), each tensor tabulated
// component by component (not a cropped scalar times a k-tensor, which would differentiate the
// crop's jump). The stokeslet (and stokes-combined's single layer): 6 tables xx, xy, xz, yy, yz,
// zz, u_j = c sum_l T_jl(k) f_l; with the pressure 3 more, the Laplace field's odd tables t_a,
// p = 2 sum_a (i t_a) f_a (the 3P multiplier -i (8 pi e / k^2) k.f, since t_a -> -k_a 4 pi e / k^2).
// The stresslet (after the stokeslet's 6 for stokes-combined): 10 odd tables t_jlm (xxx, xxy,
// xxz, xyy, xyz, xzz, yyy, yyz, yzz, zzz), u_j = c i sum_lm t_jlm S_lm over the grid's symmetric
// S (StressletTraits::grid_values: S_00, S_11, S_22, S_01, S_02, S_12).
template <class K, class T>
void cnv_stokes_free(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, const SpectrumView& v, double scale) {
  constexpr bool single = K::kernel == Kernel::Stokeslet || K::kernel == Kernel::StokesCombined;
  constexpr bool dbl = K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined;
  constexpr bool pressure = K::kernel == Kernel::Stokeslet && K::n_out == 4;
  constexpr int o = K::kernel == Kernel::StokesCombined ? 3 : 0;  // the first S component
  const Params& p = g.setup.params;
  const int M2 = p.grid[1], M3h = p.grid[2] / 2 + 1;
  const std::size_t ncplx = v.comp_stride;
  const std::size_t nt = std::size_t(p.grid[0]) * std::size_t(M2) * std::size_t(M3h);
  const double* tab = g.setup.free_multiplier->data();
  const double* ttab = tab + (single ? 6 : 0) * nt;  // the stresslet's 10
  // the symmetric 3-tensor's table of (j, l, m)
  constexpr int t3[3][3][3] = {{{0, 1, 2}, {1, 3, 4}, {2, 4, 5}}, {{1, 3, 4}, {3, 6, 7}, {4, 7, 8}},
                               {{2, 4, 5}, {4, 7, 8}, {5, 8, 9}}};
  // S's grid components (l, m) and their weights (off-diagonal: both (l, m) and (m, l))
  constexpr int sl[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
  constexpr double sw[6] = {1, 1, 1, 2, 2, 2};
  T* X = reinterpret_cast<T*>(ws.grid.cplx);
#pragma omp parallel for schedule(static) num_threads(g.setup.threads)
  for (int a = 0; a < v.n_outer; ++a)
    for (int b = 0; b < v.n_inner; ++b) {
      const int i = v.i(a, b), j = v.j(a, b);
      const std::size_t t0 = (std::size_t(i) * std::size_t(M2) + std::size_t(j)) * M3h;
      T* row = X + 2 * (std::size_t(a) * std::size_t(v.n_inner) + std::size_t(b)) * M3h;
      for (int l = 0; l < M3h; ++l) {
        double in[K::n_grid][2], out[K::n_out][2] = {};
        for (int c = 0; c < K::n_grid; ++c)
          for (int q = 0; q < 2; ++q) in[c][q] = double(row[2 * (c * ncplx + std::size_t(l)) + std::size_t(q)]);
        const std::size_t tl = t0 + std::size_t(l);
        if constexpr (single) {
          const double txx = tab[tl], txy = tab[nt + tl], txz = tab[2 * nt + tl], tyy = tab[3 * nt + tl],
                       tyz = tab[4 * nt + tl], tzz = tab[5 * nt + tl];
          for (int q = 0; q < 2; ++q) {
            const double x = in[0][q], y = in[1][q], z = in[2][q];
            out[0][q] = scale * (txx * x + txy * y + txz * z);
            out[1][q] = scale * (txy * x + tyy * y + tyz * z);
            out[2][q] = scale * (txz * x + tyz * y + tzz * z);
          }
          if constexpr (pressure) {
            const double *px = tab + 6 * nt + tl, *py = px + nt, *pz = py + nt;
            const double tr = *px * in[0][0] + *py * in[1][0] + *pz * in[2][0];
            const double ti = *px * in[0][1] + *py * in[1][1] + *pz * in[2][1];
            out[3][0] = -2 * scale * ti;  // i (tr + i ti) = -ti + i tr
            out[3][1] = 2 * scale * tr;
          }
        }
        if constexpr (dbl) {
          double tt[10];
          for (int c = 0; c < 10; ++c) tt[c] = ttab[std::size_t(c) * nt + tl];
          for (int jj = 0; jj < 3; ++jj) {
            double re = 0, im = 0;
            for (int c = 0; c < 6; ++c) {
              const double w = sw[c] * tt[t3[jj][sl[c][0]][sl[c][1]]];
              re += w * in[o + c][0];
              im += w * in[o + c][1];
            }
            out[jj][0] -= scale * im;  // i (re + i im)
            out[jj][1] += scale * re;
          }
        }
        for (int c = 0; c < K::n_out; ++c)
          for (int q = 0; q < 2; ++q) row[2 * (c * ncplx + std::size_t(l)) + std::size_t(q)] = static_cast<T>(out[c][q]);
      }
    }
}

}  // namespace

template <class K, class T>
void cnv(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  const Params& p = g.setup.params;
  cnv_on<K, T>(g, ws, SpectrumView{p.grid[0], p.grid[1], false, 0, g.fft->ncplx()});
}

template <class K, class T>
void cnv_on(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, const SpectrumView& v) {
  const Params& p = g.setup.params;
  const int M1 = p.grid[0], M2 = p.grid[1], M3 = p.grid[2], M3h = M3 / 2 + 1;
  const auto& L = g.setup.box;
  const double V = L[0] * L[1] * L[2];
  const double scale = std::pow(p.h[0] * p.h[1] * p.h[2], 2) / V;
  const double xi2i = 1.0 / (4.0 * p.xi * p.xi);
  // exp(-k^2/(4 xi^2)) = prod_d exp(-k_d^2/(4 xi^2)): per-axis factors instead of one exp per mode
  std::vector<double> kv[3], iw2[3], ek[3];
  const int Ms[3] = {M1, M2, M3};
  for (int d = 0; d < 3; ++d) {
    const int n = d == 2 ? M3h : Ms[d];
    kv[d].resize(n);
    iw2[d].resize(n);
    ek[d].resize(n);
    const double a = 0.5 * p.P * p.h[d];
    for (int i = 0; i < n; ++i) {
      const int fi = (d < 2 && i > Ms[d] / 2) ? i - Ms[d] : i;
      kv[d][i] = 2 * kPi / L[d] * fi;
      const double wh = window_hat(kv[d][i], a, p.beta);
      iw2[d][i] = 1.0 / (wh * wh);
      ek[d][i] = std::exp(-kv[d][i] * kv[d][i] * xi2i);
    }
  }
  const std::size_t ncplx = v.comp_stride;
  auto* X = ws.grid.cplx;  // T[2] per mode; the multiplier is applied in float64
  if constexpr (K::kernel == Kernel::Laplace) {
    cnv_laplace<K::field, T>(g, ws, v, kv, iw2, ek, scale);
    return;
  }
  if (g.setup.free_multiplier) {  // (free axes: the tables)
    cnv_stokes_free<K, T>(g, ws, v, scale);
    return;
  }
  // the Stokes kernels (the Laplace ones, and the Parseval energy, are in cnv_laplace): on rows off
  // the Nyquist planes of k1 and k2 the modes 0 < l < M3/2 (k != 0, no Nyquist component) by
  // stokes_interior, a loop the compiler vectorises along k3; the other modes by K::fourier.
  const int lend = (M3 % 2 == 0) ? M3 / 2 : M3h;  // interior modes: 1 <= l < lend
  const double* e3p = ek[2].data();
  const double* w3p = iw2[2].data();
  const double* k3p = kv[2].data();
  auto general = [&](int a, int b, int l) {
    const int i = v.i(a, b), j = v.j(a, b);
    const bool nyq1 = (M1 % 2 == 0) && i == M1 / 2, nyq2 = (M2 % 2 == 0) && j == M2 / 2;
    const std::size_t idx = (std::size_t(a) * std::size_t(v.n_inner) + std::size_t(b)) * M3h + l;
    const double k[3] = {kv[0][i], kv[1][j], kv[2][l]};
    const bool nyq[3] = {nyq1, nyq2, (M3 % 2 == 0) && l == M3 / 2};
    const double ksq = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
    if (ksq == 0.0) {
      for (int c = 0; c < K::n_out; ++c) X[idx + c * ncplx][0] = X[idx + c * ncplx][1] = T(0);
      return;
    }
    double in[K::n_grid][2], out[K::n_out][2];
    for (int c = 0; c < K::n_grid; ++c) {
      in[c][0] = X[idx + c * ncplx][0];
      in[c][1] = X[idx + c * ncplx][1];
    }
    const double e = ek[0][i] * ek[1][j] * ek[2][l];
    const double wfac = scale * iw2[0][i] * iw2[1][j] * iw2[2][l];
    K::fourier(k, nyq, ksq, e, xi2i, wfac, in, out);
    for (int c = 0; c < K::n_out; ++c) {
      X[idx + c * ncplx][0] = static_cast<T>(out[c][0]);
      X[idx + c * ncplx][1] = static_cast<T>(out[c][1]);
    }
  };
#pragma omp parallel for schedule(static) num_threads(g.setup.threads)
  for (int a = 0; a < v.n_outer; ++a) {
    for (int b = 0; b < v.n_inner; ++b) {
      const int i = v.i(a, b), j = v.j(a, b);
      const bool nyq1 = (M1 % 2 == 0) && i == M1 / 2, nyq2 = (M2 % 2 == 0) && j == M2 / 2;
      if (nyq1 || nyq2) {
        for (int l = 0; l < M3h; ++l) general(a, b, l);
        continue;
      }
      general(a, b, 0);
      for (int l = lend; l < M3h; ++l) general(a, b, l);
      const double kx = kv[0][i], ky = kv[1][j], kxy2 = kx * kx + ky * ky;
      const double exy = ek[0][i] * ek[1][j], wxy = scale * iw2[0][i] * iw2[1][j];
      T* row = reinterpret_cast<T*>(X + (std::size_t(a) * std::size_t(v.n_inner) + std::size_t(b)) * M3h);  // (re, im) pairs
#pragma omp simd
      for (int l = 1; l < lend; ++l) {
        const double k[3] = {kx, ky, k3p[l]};
        const double ksq = kxy2 + k3p[l] * k3p[l];
        double in[K::n_grid][2], out[K::n_out][2];
        for (int c = 0; c < K::n_grid; ++c) {
          in[c][0] = double(row[2 * (c * ncplx + l)]);
          in[c][1] = double(row[2 * (c * ncplx + l) + 1]);
        }
        stokes_interior<K>(k, ksq, exy * e3p[l], xi2i, wxy * w3p[l], in, out);
        for (int c = 0; c < K::n_out; ++c) {
          row[2 * (c * ncplx + l)] = static_cast<T>(out[c][0]);
          row[2 * (c * ncplx + l) + 1] = static_cast<T>(out[c][1]);
        }
      }
    }
  }
}

ELLIPTICA_EWALD_INSTANTIATE(cnv)
#define ELLIPTICA_EWALD_CNV_ON(K, T) template void cnv_on<K, T>(const CpuGeometry<T>&, CpuWorkspace<T>&, const SpectrumView&);
#define ELLIPTICA_EWALD_CNV_ON_BOTH(K) ELLIPTICA_EWALD_CNV_ON(K, float) ELLIPTICA_EWALD_CNV_ON(K, double)
ELLIPTICA_EWALD_CNV_ON_BOTH(LaplaceTraits)
ELLIPTICA_EWALD_CNV_ON_BOTH(LaplaceFieldTraits)
ELLIPTICA_EWALD_CNV_ON_BOTH(StokesletTraits)
ELLIPTICA_EWALD_CNV_ON_BOTH(StokesletPressureTraits)
ELLIPTICA_EWALD_CNV_ON_BOTH(StressletTraits)
ELLIPTICA_EWALD_CNV_ON_BOTH(StokesCombinedTraits)

}  // namespace elliptica::ewald::detail
