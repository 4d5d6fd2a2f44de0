// CNV: the diagonal convolution of the spectral Ewald method over the half spectrum (seed 000,
// section 2.2 step 3): X(k) = c G_hat(k) H_hat(k) / w_hat(k)^2 with c = (h1 h2 h3)^2 / V (P2G and
// G2P approximate integrals by grid sums) and G_hat the kernel's Fourier multiplier
// (K::fourier, kernel_traits.hpp); the k = 0 mode is set to zero. Reads n_grid components,
// writes n_out.
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
  std::vector<double> kv[3], iw2[3];
  const int Ms[3] = {M1, M2, M3};
  for (int d = 0; d < 3; ++d) {
    const int n = d == 2 ? M3h : Ms[d];
    kv[d].resize(n);
    iw2[d].resize(n);
    const double a = 0.5 * p.P * p.h[d];
    for (int i = 0; i < n; ++i) {
      const int fi = (d < 2 && i > Ms[d] / 2) ? i - Ms[d] : i;
      kv[d][i] = 2 * kPi / L[d] * fi;
      const double wh = window_hat(kv[d][i], a, p.beta);
      iw2[d][i] = 1.0 / (wh * wh);
    }
  }
  const std::size_t ncplx = g.fft->ncplx();
  auto* X = ws.grid.cplx;  // T[2] per mode; the multiplier is applied in float64
#pragma omp parallel for schedule(static) num_threads(g.setup.threads)
  for (int i = 0; i < M1; ++i) {
    const bool nyq1 = (M1 % 2 == 0) && i == M1 / 2;
    for (int j = 0; j < M2; ++j) {
      const bool nyq2 = (M2 % 2 == 0) && j == M2 / 2;
      for (int l = 0; l < M3h; ++l) {
        const std::size_t idx = (std::size_t(i) * M2 + j) * M3h + l;
        const double k[3] = {kv[0][i], kv[1][j], kv[2][l]};
        const bool nyq[3] = {nyq1, nyq2, (M3 % 2 == 0) && l == M3 / 2};
        const double ksq = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        if (ksq == 0.0) {
          for (int c = 0; c < K::n_out; ++c) X[idx + c * ncplx][0] = X[idx + c * ncplx][1] = T(0);
          continue;
        }
        double in[K::n_grid][2], out[K::n_out][2];
        for (int c = 0; c < K::n_grid; ++c) {
          in[c][0] = X[idx + c * ncplx][0];
          in[c][1] = X[idx + c * ncplx][1];
        }
        const double e = std::exp(-ksq * xi2i);
        const double wfac = scale * iw2[0][i] * iw2[1][j] * iw2[2][l];
        K::fourier(k, nyq, ksq, e, xi2i, wfac, in, out);
        for (int c = 0; c < K::n_out; ++c) {
          X[idx + c * ncplx][0] = static_cast<T>(out[c][0]);
          X[idx + c * ncplx][1] = static_cast<T>(out[c][1]);
        }
      }
    }
  }
}

ELLIPTICA_EWALD_INSTANTIATE(cnv)

}  // namespace elliptica::ewald::detail
