// P2G: spreading of the sources' grid values (K::grid_values: n_grid components) onto the
// uniform grid with the Kaiser-Bessel window (seed 000, section 2.2 step 1). The window weights
// were cached at set_points. Spreading goes into a padded, component-interleaved grid
// pad[px][py][pz][c] with px = j + P (no periodic wrap in the inner loops, so they vectorise),
// then the padding is folded back periodically into the FFT input (component-major grids).
// p2g_spread is the first half alone, on the geometry's slab of planes (the whole grid in a
// serial plan; a rank's planes plus the window's reach in a distributed one, issue 30).
// Threads: sources by slabs of x-planes (set_points.cpp); slabs of one parity never overlap.
#include <algorithm>
#include <vector>

#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {

// Spreading into the padded grid. PP > 0: the window support P as a compile-time constant (the
// row of P nc values is then a fixed-length loop the compiler turns into whole vector operations;
// P = 5 and nc = 1 spent half of P2G in the loop's remainder handling); PP = 0: any P.
template <class K, class T, int PP>
void spread(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, T* pg, std::size_t S1, std::size_t S2) {
  constexpr int nc = K::n_grid;
  const int P = PP > 0 ? PP : g.setup.params.P;
  const WindowCache<T>& wc = g.wsrc;
  const int nslab = g.nslab;
  const int ncol = nslab > 1 ? 2 : 1;
  for (int colour = 0; colour < ncol; ++colour) {
#pragma omp parallel num_threads(g.setup.threads)
    {
      // Fixed-size scratch (P <= kMaxWindowSupport, nc <= kMaxComponents): nothing in the region
      // allocates, so nothing can throw.
      T qz[kMaxWindowSupport * nc];
      T gv[nc];
#pragma omp for schedule(dynamic, 1)
      for (int s = colour; s < nslab; s += ncol) {
        for (int o = g.slab_start[s]; o < g.slab_start[s + 1]; ++o) {
          const int i = g.slab_order[o];
          const T* wx = &wc.w[(std::size_t(i) * 3) * P];
          const T* wy = wx + P;
          const T* wz = wy + P;
          K::template grid_values<T>(&ws.values[std::size_t(i) * K::n_src], gv);
          for (int m = 0; m < P; ++m)
            for (int c = 0; c < nc; ++c) qz[m * nc + c] = wz[m] * gv[c];
          const int L = P * nc;
          T* base = pg + std::size_t(wc.j0[3 * i]) * S1 + std::size_t(wc.j0[3 * i + 1]) * S2 +
                         std::size_t(wc.j0[3 * i + 2]) * nc;
          for (int mx = 0; mx < P; ++mx)
            for (int my = 0; my < P; ++my) {
              T* row = base + mx * S1 + my * S2;
              const T wxy = wx[mx] * wy[my];
#pragma omp simd
              for (int t = 0; t < L; ++t) row[t] += wxy * qz[t];
            }
        }
      }
    }
  }
}

}  // namespace

template <class K, class T>
void p2g_spread(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nc = K::n_grid;
  const Params& p = g.setup.params;
  const int P = p.P;
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {g.slab_planes() + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  ws.pad.assign(std::size_t(PM[0]) * S1, T(0));
  T* pg = ws.pad.data();
  switch (P) {  // the supports the tuner picks (P <= 24 there; overrides up to 32)
    case 4: spread<K, T, 4>(g, ws, pg, S1, S2); break;
    case 5: spread<K, T, 5>(g, ws, pg, S1, S2); break;
    case 6: spread<K, T, 6>(g, ws, pg, S1, S2); break;
    case 7: spread<K, T, 7>(g, ws, pg, S1, S2); break;
    case 8: spread<K, T, 8>(g, ws, pg, S1, S2); break;
    case 9: spread<K, T, 9>(g, ws, pg, S1, S2); break;
    case 10: spread<K, T, 10>(g, ws, pg, S1, S2); break;
    case 11: spread<K, T, 11>(g, ws, pg, S1, S2); break;
    case 12: spread<K, T, 12>(g, ws, pg, S1, S2); break;
    default: spread<K, T, 0>(g, ws, pg, S1, S2); break;
  }
}

template <class K, class T>
void p2g(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nc = K::n_grid;
  const Params& p = g.setup.params;
  const int P = p.P, threads = g.setup.threads;
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {M[0] + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  ws.grid.allocate(*g.fft);
  p2g_spread<K, T>(g, ws);
  const T* pg = ws.pad.data();
  // Fold: grid[c][(px-P) mod M1][(py-P) mod M2][(pz-P) mod M3] += pad[px][py][pz][c].
  const std::size_t nreal = g.fft->nreal();
  T* gr = ws.grid.real;
  // grid index of each padded index along z (periodic), computed once rather than per value
  std::vector<int> izs(static_cast<std::size_t>(PM[2]));
  for (int pz = 0; pz < PM[2]; ++pz) izs[std::size_t(pz)] = ((pz - P) % M[2] + M[2]) % M[2];
  const int* iz_of = izs.data();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int ix = 0; ix < M[0]; ++ix) {
    for (int c = 0; c < nc; ++c)
      std::fill(gr + nreal * c + std::size_t(ix) * M[1] * M[2], gr + nreal * c + std::size_t(ix + 1) * M[1] * M[2], T(0));
    for (int px = ix + P - M[0] * ((ix + P) / M[0]); px < PM[0]; px += M[0]) {
      for (int py = 0; py < PM[1]; ++py) {
        const int iy = ((py - P) % M[1] + M[1]) % M[1];
        const T* src = pg + std::size_t(px) * S1 + std::size_t(py) * S2;
        for (int c = 0; c < nc; ++c) {
          T* dst = gr + nreal * c + (std::size_t(ix) * M[1] + iy) * M[2];
          for (int pz = 0; pz < PM[2]; ++pz) dst[iz_of[pz]] += src[std::size_t(pz) * nc + c];
        }
      }
    }
  }
}

ELLIPTICA_EWALD_INSTANTIATE(p2g_spread)
ELLIPTICA_EWALD_INSTANTIATE(p2g)

}  // namespace elliptica::ewald::detail
