// G2P: interpolation of the IFFT output back to the targets with the window (seed 000,
// section 2.2 step 5). The grid is unfolded into the padded, component-interleaved layout,
// then every target gathers its P^3 neighbourhood with contiguous rows of P n_out values, summed
// over the P^2 rows (x, y) in vector registers, using the window weights cached at set_points.
// Adds to the P2P accumulator. g2p_gather is the second half alone, on the geometry's slab of
// planes (a distributed plan unfolds its own planes and the neighbours' ghost planes, issue 30).
#include <algorithm>
#include <cstring>
#include <vector>

#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {
// 32 bytes of T as one vector (GCC/Clang vector extension: AVX registers where available)
template <class T> struct Vec32;
template <> struct Vec32<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct Vec32<double> { typedef double type __attribute__((vector_size(32))); };

// The unfold: the IFFT output (component-major, periodic) into the padded, component-interleaved
// grid of P2G's layout (the whole grid: serial plans).
template <int nc, class T>
void unfold(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  const Params& p = g.setup.params;
  const int P = p.P, threads = g.setup.threads;
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {M[0] + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  constexpr int G = 4 * 32 / int(sizeof(T));  // gather's over-read (below)
  ws.pad.resize(std::size_t(PM[0]) * S1 + G);
  const std::size_t nreal = g.fft->nreal();
  const T* gr = ws.grid.real;
  T* pg = ws.pad.data();
  // grid index of each padded index along z (periodic), computed once rather than per value
  std::vector<int> izs(static_cast<std::size_t>(PM[2]));
  for (int pz = 0; pz < PM[2]; ++pz) izs[std::size_t(pz)] = ((pz - P) % M[2] + M[2]) % M[2];
  const int* iz_of = izs.data();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int px = 0; px < PM[0]; ++px) {
    const int ix = ((px - P) % M[0] + M[0]) % M[0];
    for (int py = 0; py < PM[1]; ++py) {
      const int iy = ((py - P) % M[1] + M[1]) % M[1];
      T* dst = pg + std::size_t(px) * S1 + std::size_t(py) * S2;
      const T* src[nc];
      for (int c = 0; c < nc; ++c) src[c] = gr + nreal * c + (std::size_t(ix) * M[1] + iy) * M[2];
      for (int pz = 0; pz < PM[2]; ++pz) {
        const int iz = iz_of[pz];
        for (int c = 0; c < nc; ++c) dst[std::size_t(pz) * nc + c] = src[c][iz];
      }
    }
  }
}

// G2P of nc grid components from the padded grid (slab_planes() + 2P planes), added to the
// accumulator's components [off, off + nc) of `stride`.
// PP > 0: the window support P as a compile-time constant (fixed-length row loops); 0: any P.
template <int nc, class T, int PP>
void g2p_components(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, int stride, int off) {
  const Params& p = g.setup.params;
  const int P = PP > 0 ? PP : p.P, threads = g.setup.threads;
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {g.slab_planes() + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  // row sums in groups of 4 vectors of W values (GCC/Clang vector extension, 32 bytes): the
  // last group of a row reads up to 4 W - 1 values past it (into the next rows, or this padding)
  using VT = typename Vec32<T>::type;
  constexpr int W = 32 / sizeof(T), G = 4 * W;
  ws.pad.resize(std::size_t(PM[0]) * S1 + G);  // keeps the values (the caller's unfold)
  const T* pg = ws.pad.data();
  const WindowCache<T>& wc = g.target_window();
  const long N = static_cast<long>(g.targets().x.size());
  double* acc = ws.acc.data();
#pragma omp parallel num_threads(threads)
  {
    // Fixed-size scratch: nothing in the region allocates.
    T wze[kMaxWindowSupport * nc], sum[kMaxWindowSupport * nc + G];
#pragma omp for schedule(static)
    for (long i = 0; i < N; ++i) {
      const T* wx = &wc.w[(std::size_t(i) * 3) * P];
      const T* wy = wx + P;
      const T* wz = wy + P;
      const int L = P * nc;
      for (int m = 0; m < P; ++m)
        for (int c = 0; c < nc; ++c) wze[m * nc + c] = wz[m];
      const T* base = pg + std::size_t(wc.j0[3 * i]) * S1 + std::size_t(wc.j0[3 * i + 1]) * S2 +
                           std::size_t(wc.j0[3 * i + 2]) * nc;
      // groups of NV vectors (4; 1 or 2 when the row is that short: P = 5 with 3 float32
      // components is 15 values, 2 vectors, not 4)
      auto rows = [&]<int NV>(int t0) {
        VT a[NV] = {};
        for (int mx = 0; mx < P; ++mx)
          for (int my = 0; my < P; ++my) {
            const T* row = base + mx * S1 + my * S2 + t0;
            const T wxy = wx[mx] * wy[my];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
              VT x;
              std::memcpy(&x, row + v * W, sizeof(VT));
              a[v] += wxy * x;
            }
          }
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) std::memcpy(sum + t0 + v * W, &a[v], sizeof(VT));
      };
      if (L <= W)
        rows.template operator()<1>(0);
      else if (L <= 2 * W)
        rows.template operator()<2>(0);
      else
        for (int t0 = 0; t0 < L; t0 += G) rows.template operator()<4>(t0);
      for (int c = 0; c < nc; ++c) {
        T s = 0;
        for (int m = 0; m < P; ++m) s += sum[m * nc + c] * wze[m * nc + c];
        acc[std::size_t(i) * stride + off + c] += s;
      }
    }
  }
}

template <int nc, class T>
void g2p_dispatch(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, int stride, int off) {
  switch (g.setup.params.P) {  // the supports the tuner picks (P <= 24 there; overrides up to 32)
    case 4: g2p_components<nc, T, 4>(g, ws, stride, off); break;
    case 5: g2p_components<nc, T, 5>(g, ws, stride, off); break;
    case 6: g2p_components<nc, T, 6>(g, ws, stride, off); break;
    case 7: g2p_components<nc, T, 7>(g, ws, stride, off); break;
    case 8: g2p_components<nc, T, 8>(g, ws, stride, off); break;
    case 9: g2p_components<nc, T, 9>(g, ws, stride, off); break;
    case 10: g2p_components<nc, T, 10>(g, ws, stride, off); break;
    case 11: g2p_components<nc, T, 11>(g, ws, stride, off); break;
    case 12: g2p_components<nc, T, 12>(g, ws, stride, off); break;
    default: g2p_components<nc, T, 0>(g, ws, stride, off); break;
  }
}
}  // namespace

template <class K, class T>
void g2p_gather(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  if constexpr (K::kernel == Kernel::Laplace && K::field) {
    if (g.setup.energy_parseval) {  // the far-field potential left out: E only (cnv.cpp)
      g2p_dispatch<3, T>(g, ws, K::n_out, 1);
      return;
    }
  }
  g2p_dispatch<K::n_out, T>(g, ws, K::n_out, 0);
}

template <class K, class T>
void g2p(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  if constexpr (K::kernel == Kernel::Laplace && K::field) {
    if (g.setup.energy_parseval) {  // E only (g2p_gather)
      unfold<3, T>(g, ws);
      g2p_gather<K, T>(g, ws);
      return;
    }
  }
  unfold<K::n_out, T>(g, ws);
  g2p_gather<K, T>(g, ws);
}

ELLIPTICA_EWALD_INSTANTIATE(g2p_gather)
ELLIPTICA_EWALD_INSTANTIATE(g2p)

}  // namespace elliptica::ewald::detail
