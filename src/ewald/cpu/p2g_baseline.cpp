// P2G and G2P, baseline variant (P2GVariant::Baseline; seed 000, section 3.2: P2G-base and
// G2P-base), kept for benchmarking against the default cell-ordered stages (p2g.cpp, g2p.cpp).
// Points are visited in the caller's input order; every point's window weights are evaluated on
// the fly (the same piecewise polynomial, in float64, rounded to T, as the cache of set_points);
// grid indices are wrapped periodically inside the point loop (no padded grid, no fold); P2G
// scatters straight into the FFT input (component-major) with threads over points and atomic
// updates of the grid (with one thread the atomics are left out: a serial scatter needs none);
// G2P gathers straight from the IFFT output, one target per iteration, no atomics.
// Arithmetic per point is that of the cell-ordered stages, so the two agree to round-off (the
// order of the sums differs).
#include <algorithm>

#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {

/// Window of the point at wrapped (x, y, z): the periodic grid index of each of the P points per
/// axis (idx[d][m] in [0, M_d)) and the P weights per axis (w[d][m]).
template <class T>
inline void point_window(const Params& p, const Window& win, const double* inv_h, double x, double y, double z,
                         int idx[3][kMaxWindowSupport], T w[3][kMaxWindowSupport]) {
  const int P = p.P;
  const double c[3] = {x, y, z};
  double wd[kMaxWindowSupport];
  for (int d = 0; d < 3; ++d) {
    int j0 = 0;
    double s = 0;
    window_offset(c[d], inv_h[d], p.grid[d], P, j0, s);
    win.weights(s, wd);
    const int M = p.grid[d];
    for (int m = 0; m < P; ++m) {
      idx[d][m] = ((j0 - P + m) % M + M) % M;  // padded index j0 + m -> periodic grid index
      w[d][m] = static_cast<T>(wd[m]);
    }
  }
}

template <class K, class T, bool Atomic>
void spread(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nc = K::n_grid;
  const Params& p = g.setup.params;
  const Window& win = g.setup.window;
  const int P = p.P, threads = g.setup.threads;
  const int M1 = p.grid[1], M2 = p.grid[2];
  const double inv_h[3] = {1.0 / p.h[0], 1.0 / p.h[1], 1.0 / p.h[2]};
  const std::size_t nreal = g.fft->nreal();
  T* gr = ws.grid.real;
  const CellList<T>& src = g.src;
  const long N = static_cast<long>(src.x.size());
  const int* rank = g.src_rank.data();
#pragma omp parallel num_threads(threads)
  {
    // Fixed-size scratch: nothing in the region allocates.
    int idx[3][kMaxWindowSupport];
    T w[3][kMaxWindowSupport];
    T qz[kMaxWindowSupport * nc];
    T gv[nc];
#pragma omp for schedule(static)
    for (long k = 0; k < N; ++k) {
      const int i = rank[k];  // input order -> sorted position (values, coordinates)
      point_window<T>(p, win, inv_h, src.x[i], src.y[i], src.z[i], idx, w);
      K::template grid_values<T>(&ws.values[std::size_t(i) * K::n_src], gv);
      for (int m = 0; m < P; ++m)
        for (int c = 0; c < nc; ++c) qz[m * nc + c] = w[2][m] * gv[c];
      for (int mx = 0; mx < P; ++mx)
        for (int my = 0; my < P; ++my) {
          const T wxy = w[0][mx] * w[1][my];
          const std::size_t row = (std::size_t(idx[0][mx]) * M1 + idx[1][my]) * M2;
          for (int mz = 0; mz < P; ++mz) {
            T* cell = gr + row + idx[2][mz];
            for (int c = 0; c < nc; ++c) {
              const T v = wxy * qz[mz * nc + c];
              if constexpr (Atomic) {
#pragma omp atomic
                cell[nreal * c] += v;
              } else {
                cell[nreal * c] += v;
              }
            }
          }
        }
    }
  }
}

}  // namespace

template <class K, class T>
void p2g_baseline(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nc = K::n_grid;
  const int threads = g.setup.threads;
  ws.grid.allocate(*g.fft);
  const std::size_t n = g.fft->nreal() * nc;
  T* gr = ws.grid.real;
  const long chunks = static_cast<long>(std::max<std::size_t>(1, n / 4096));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long b = 0; b < chunks; ++b)
    std::fill(gr + n * std::size_t(b) / std::size_t(chunks), gr + n * std::size_t(b + 1) / std::size_t(chunks), T(0));
  if (threads > 1)
    spread<K, T, true>(g, ws);
  else
    spread<K, T, false>(g, ws);
}

template <class K, class T>
void g2p_baseline(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nc = K::n_out;
  const Params& p = g.setup.params;
  const Window& win = g.setup.window;
  const int P = p.P, threads = g.setup.threads;
  const int M1 = p.grid[1], M2 = p.grid[2];
  const double inv_h[3] = {1.0 / p.h[0], 1.0 / p.h[1], 1.0 / p.h[2]};
  const std::size_t nreal = g.fft->nreal();
  const T* gr = ws.grid.real;
  const CellList<T>& trg = g.targets();
  const int* rank = g.separate ? g.trg_rank.data() : g.src_rank.data();
  const long N = static_cast<long>(trg.x.size());
  double* acc = ws.acc.data();
#pragma omp parallel num_threads(threads)
  {
    int idx[3][kMaxWindowSupport];
    T w[3][kMaxWindowSupport];
#pragma omp for schedule(static)
    for (long k = 0; k < N; ++k) {
      const int i = rank[k];
      point_window<T>(p, win, inv_h, trg.x[i], trg.y[i], trg.z[i], idx, w);
      T sum[nc] = {};
      for (int mx = 0; mx < P; ++mx)
        for (int my = 0; my < P; ++my) {
          const T wxy = w[0][mx] * w[1][my];
          const std::size_t row = (std::size_t(idx[0][mx]) * M1 + idx[1][my]) * M2;
          for (int mz = 0; mz < P; ++mz) {
            const T wv = wxy * w[2][mz];
            const T* cell = gr + row + idx[2][mz];
            for (int c = 0; c < nc; ++c) sum[c] += wv * cell[nreal * c];
          }
        }
      for (int c = 0; c < nc; ++c) acc[std::size_t(i) * nc + c] += sum[c];
    }
  }
}

ELLIPTICA_EWALD_INSTANTIATE(p2g_baseline)
ELLIPTICA_EWALD_INSTANTIATE(g2p_baseline)

}  // namespace elliptica::ewald::detail
