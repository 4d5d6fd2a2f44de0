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
#include <cmath>
#include <vector>

#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

template <class K, class T>
void cnv(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
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
  const std::size_t ncplx = g.fft->ncplx();
  auto* X = ws.grid.cplx;  // T[2] per mode; the multiplier is applied in float64
  constexpr bool can_parseval = K::kernel == Kernel::Laplace && K::field;
  const bool parseval = can_parseval && g.setup.energy_parseval;
  const int off = parseval ? 1 : 0;  // first of the kernel's outputs that is written
  // per x-plane partial sums of the Parseval energy, added in plane order afterwards (the same
  // result for any thread count)
  std::vector<double> plane_energy(parseval ? std::size_t(M1) : 0, 0.0);
  double* pe = plane_energy.data();
#pragma omp parallel for schedule(static) num_threads(g.setup.threads)
  for (int i = 0; i < M1; ++i) {
    const bool nyq1 = (M1 % 2 == 0) && i == M1 / 2;
    double e_plane = 0;
    for (int j = 0; j < M2; ++j) {
      const bool nyq2 = (M2 % 2 == 0) && j == M2 / 2;
      for (int l = 0; l < M3h; ++l) {
        const std::size_t idx = (std::size_t(i) * M2 + j) * M3h + l;
        const double k[3] = {kv[0][i], kv[1][j], kv[2][l]};
        const bool nyq[3] = {nyq1, nyq2, (M3 % 2 == 0) && l == M3 / 2};
        const double ksq = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (ksq == 0.0) {
          for (int c = off; c < K::n_out; ++c) X[idx + (c - off) * ncplx][0] = X[idx + (c - off) * ncplx][1] = T(0);
          continue;
        }
        double in[K::n_grid][2], out[K::n_out][2];
        for (int c = 0; c < K::n_grid; ++c) {
          in[c][0] = X[idx + c * ncplx][0];
          in[c][1] = X[idx + c * ncplx][1];
        }
        const double e = ek[0][i] * ek[1][j] * ek[2][l];
        const double wfac = scale * iw2[0][i] * iw2[1][j] * iw2[2][l];
        K::fourier(k, nyq, ksq, e, xi2i, wfac, in, out);
        if constexpr (can_parseval) {
          if (parseval) {
            // Re(X_phi conj(H)) = G |H|^2; half-spectrum weight 1 on k3 = 0 and Nyquist, else 2
            const double wl = (l == 0 || nyq[2]) ? 1.0 : 2.0;
            e_plane += wl * (out[0][0] * in[0][0] + out[0][1] * in[0][1]);
          }
        }
        for (int c = off; c < K::n_out; ++c) {
          X[idx + (c - off) * ncplx][0] = static_cast<T>(out[c][0]);
          X[idx + (c - off) * ncplx][1] = static_cast<T>(out[c][1]);
        }
      }
    }
    if (parseval) pe[i] = e_plane;
  }
  double energy = 0;
  for (double v : plane_energy) energy += v;
  ws.far_energy = energy;
}

ELLIPTICA_EWALD_INSTANTIATE(cnv)

}  // namespace elliptica::ewald::detail
