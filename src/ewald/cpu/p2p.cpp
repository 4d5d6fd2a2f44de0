// P2P: the real-space sum of the spectral Ewald method over the colleague cells of each target
// cell (seed 000, section 2.1 and algorithm 1), for any kernel's traits (kernel_traits.hpp).
// Per target cell the candidates of its colleague cells are gathered once (structure of arrays)
// and every target of the cell is summed over them by the SIMD loop of p2p_simd.cpp. A pair
// closer than the coincidence distance contributes the limit r -> 0 of (real-space kernel -
// free-space kernel) instead (K::self_limit): the self term when the targets are the sources.
#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"
#include "ewald/cpu/p2p_simd.hpp"

namespace elliptica::ewald::detail {

ErfcSeries::ErfcSeries(double X, double target) {
  // g(t) = erfcx(2 (1/t - 1)) on t in [t0, 1], t0 = 1/(1 + X/2), interpolated at Chebyshev points.
  const double t0 = 1.0 / (1.0 + 0.5 * std::max(X, 1e-3));
  scale = 2.0 / (1.0 - t0);
  shift = -(1.0 + t0) / (1.0 - t0);
  // exp(x^2) erfc(x); beyond x = 25 (where exp(x^2) overflows as erfc underflows) its asymptotic
  // series 1/(x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8)), relative error
  // below 1e-13 there (an override xi r_c that large is possible; the tuner stays below ~8)
  auto erfcx_exact = [](double x) {
    if (x < 25.0) return std::exp(x * x) * std::erfc(x);
    const double y = 1.0 / (2.0 * x * x);
    return (1.0 - y * (1.0 - 3.0 * y * (1.0 - 5.0 * y * (1.0 - 7.0 * y)))) / (x * kSqrtPi);
  };
  auto g = [&](double u) {  // u in [-1, 1]
    const double t = (u - shift) / scale;
    return erfcx_exact(2.0 * (1.0 / t - 1.0));
  };
  for (int n = 4; n <= 28; ++n) {
    const int np = n + 1;
    std::vector<double> f(np);
    for (int j = 0; j < np; ++j) f[j] = g(std::cos(kPi * (j + 0.5) / np));
    cd.assign(np, 0.0);
    for (int k = 0; k < np; ++k) {
      double s = 0;
      for (int j = 0; j < np; ++j) s += f[j] * std::cos(kPi * k * (j + 0.5) / np);
      cd[k] = (k == 0 ? 1.0 : 2.0) * s / np;
    }
    degree = n;
    max_rel_error = 0;
    for (int i = 0; i <= 2000; ++i) {
      const double x = X * i / 2000.0;
      const double e = erfcx_exact(x);
      max_rel_error = std::max(max_rel_error, std::abs(erfcx(x) - e) / e);
    }
    if (max_rel_error <= target) break;
  }
  cf.assign(cd.begin(), cd.end());
}

double ErfcSeries::erfcx(double x) const {
  const double u = scale / (1.0 + 0.5 * x) + shift;
  double b1 = 0, b2 = 0;
  for (int k = degree; k >= 1; --k) {
    const double b = 2 * u * b1 - b2 + cd[k];
    b2 = b1;
    b1 = b;
  }
  return u * b1 - b2 + cd[0];
}

namespace {

struct Neighbour {
  int cell;
  double sx, sy, sz;  // shift added to source coordinates (periodic image)
};

// The colleague cells of cell (i,j,k) with the periodic shifts of their sources: offsets
// o in [-K_d, K_d] per axis, K_d = ceil(r_c / cell width) (2 for the cell list's width >= r_c/2:
// 5 x 5 x 5 colleagues). Offset o maps to source cell (c + o) mod n and periodic image
// floor((c + o)/n), so all (cell, image) pairs are distinct, and together they hold every image of
// every source within r_c (several images of one source when r_c exceeds a box length).
template <class T>
int colleagues(const CellList<T>& cl, const std::array<double, 3>& box, const std::array<int, 3>& K, int i, int j, int k,
               std::vector<Neighbour>& nb) {
  const int c[3] = {i, j, k};
  std::vector<std::pair<int, double>> ax[3];
  for (int d = 0; d < 3; ++d)
    for (int o = -K[d]; o <= K[d]; ++o) {
      const int cc = c[d] + o;
      const int img = cc >= 0 ? cc / cl.n[d] : -((-cc + cl.n[d] - 1) / cl.n[d]);
      ax[d].emplace_back(cc - img * cl.n[d], img * box[d]);
    }
  nb.clear();
  for (const auto& [ii, sx] : ax[0])
    for (const auto& [jj, sy] : ax[1])
      for (const auto& [kk, sz] : ax[2]) nb.push_back({(ii * cl.n[1] + jj) * cl.n[2] + kk, sx, sy, sz});
  return static_cast<int>(nb.size());
}

}  // namespace

template <class K, class T>
void p2p(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  constexpr int nout = K::n_out, nq = K::n_src;
  const CellList<T>& src = g.src;
  const CellList<T>& trg = g.targets();
  const auto& box = g.setup.box;
  const double xi_d = g.setup.params.xi, rc = g.setup.params.rc;
  const double L = std::max({box[0], box[1], box[2]});
  const double coinc2_d = (kCoincidenceRelative * L) * (kCoincidenceRelative * L);
  const T c = static_cast<T>(2.0 * xi_d / kSqrtPi);
  const std::array<int, 3> Kr = g.reach;
  const int ncells = trg.ncells();
  const int threads = g.setup.threads;
  const std::vector<T>& q = ws.values;
  const double width[3] = {box[0] / trg.n[0], box[1] / trg.n[1], box[2] / trg.n[2]};
  ws.acc.assign(trg.x.size() * nout, 0.0);
  std::size_t coincident = 0;
  ParallelErrors errors;
#pragma omp parallel num_threads(threads) reduction(+ : coincident)
  {
    // The candidates of the current target cell (structure of arrays, offsets from the cell's
    // corner formed in float64 and rounded to T), its targets and their sums.
    std::vector<T> cx, cy, cz, cq, tx, ty, tz, out;
    std::vector<T> cxl, cyl, czl, txl, tyl, tzl;  // float32: rounding remainders of the offsets
    constexpr bool lo = std::is_same_v<T, float>;
    std::vector<std::size_t> ncoinc, scratch;
    std::vector<Neighbour> nb;
#pragma omp for schedule(dynamic, 4)
    for (int cellid = 0; cellid < ncells; ++cellid) {
      const int t0 = trg.start[cellid], t1 = trg.start[cellid + 1];
      if (t0 == t1 || errors.failed()) continue;
      try {  // the buffers grow here: a failure is kept and rethrown after the region
        const int i = cellid / (trg.n[1] * trg.n[2]);
        const int j = (cellid / trg.n[2]) % trg.n[1];
        const int k = cellid % trg.n[2];
        const double corner[3] = {i * width[0], j * width[1], k * width[2]};
        const int nn = colleagues(src, box, Kr, i, j, k, nb);
        std::size_t cap = 0;
        for (int b = 0; b < nn; ++b) cap += src.start[nb[b].cell + 1] - src.start[nb[b].cell];
        // at least one whole padding chunk: the SIMD loop uses the last chunk as an all-outside filler
        const std::size_t padded = (cap + kPairPad - 1) / kPairPad * kPairPad + kPairPad;
        cx.resize(padded);
        cy.resize(padded);
        cz.resize(padded);
        cq.resize(padded * nq);
        if constexpr (lo) {
          cxl.assign(padded, T(0));
          cyl.assign(padded, T(0));
          czl.assign(padded, T(0));
        }
        std::size_t m = 0;
        for (int b = 0; b < nn; ++b) {
          const int s0 = src.start[nb[b].cell], s1 = src.start[nb[b].cell + 1];
          const double ox = nb[b].sx - corner[0], oy = nb[b].sy - corner[1], oz = nb[b].sz - corner[2];
          for (int s = s0; s < s1; ++s, ++m) {
            const double px = src.x[s] + ox, py = src.y[s] + oy, pz = src.z[s] + oz;
            cx[m] = static_cast<T>(px);
            cy[m] = static_cast<T>(py);
            cz[m] = static_cast<T>(pz);
            if constexpr (lo) {
              cxl[m] = static_cast<T>(px - double(cx[m]));
              cyl[m] = static_cast<T>(py - double(cy[m]));
              czl[m] = static_cast<T>(pz - double(cz[m]));
            }
            for (int d = 0; d < nq; ++d) cq[d * padded + m] = q[std::size_t(s) * nq + d];
          }
        }
        for (; m < padded; ++m) {  // far away: outside r_c in every lane
          cx[m] = cy[m] = cz[m] = static_cast<T>(1e18);
          for (int d = 0; d < nq; ++d) cq[d * padded + m] = T(0);
        }
        const std::size_t nt = std::size_t(t1 - t0);
        tx.resize(nt);
        ty.resize(nt);
        tz.resize(nt);
        out.assign(nt * nout, T(0));
        ncoinc.assign(nt, 0);
        if constexpr (lo) {
          txl.resize(nt);
          tyl.resize(nt);
          tzl.resize(nt);
        }
        for (std::size_t t = 0; t < nt; ++t) {
          const double px = trg.x[t0 + t] - corner[0], py = trg.y[t0 + t] - corner[1], pz = trg.z[t0 + t] - corner[2];
          tx[t] = static_cast<T>(px);
          ty[t] = static_cast<T>(py);
          tz[t] = static_cast<T>(pz);
          if constexpr (lo) {
            txl[t] = static_cast<T>(px - double(tx[t]));
            tyl[t] = static_cast<T>(py - double(ty[t]));
            tzl[t] = static_cast<T>(pz - double(tz[t]));
          }
        }
        PairBlock<T> pb;
        pb.cx = cx.data();
        pb.cy = cy.data();
        pb.cz = cz.data();
        for (int d = 0; d < nq; ++d) pb.q[d] = cq.data() + d * padded;
        pb.nc = padded;
        pb.tx = tx.data();
        pb.ty = ty.data();
        pb.tz = tz.data();
        pb.nt = nt;
        if constexpr (lo) {
          pb.cxl = cxl.data();
          pb.cyl = cyl.data();
          pb.czl = czl.data();
          pb.txl = txl.data();
          pb.tyl = tyl.data();
          pb.tzl = tzl.data();
        }
        pb.xi = static_cast<T>(xi_d);
        pb.rc2 = static_cast<T>(rc * rc);
        pb.coinc2 = static_cast<T>(coinc2_d);
        pb.series = &g.series;
        pb.out = out.data();
        pb.ncoinc = ncoinc.data();
        pb.scratch = &scratch;
        p2p_cell<K, T>(pb);
        for (std::size_t t = 0; t < nt; ++t) {
          T self[nout] = {};
          const std::size_t nco = ncoinc[t];
          if (nco == 1 && !g.separate) {
            // the target's own source (same sorted index): the self limit of (real-space -
            // free-space) kernel, as for every coincident pair
            K::template self_limit<T>(c, &q[std::size_t(t0 + t) * nq], self);
          } else if (nco > 0) {
            // rare: other coincident sources; find them (the same test as the SIMD loop)
            for (std::size_t jj = 0; jj < cap; ++jj) {
              T rx = tx[t] - cx[jj], ry = ty[t] - cy[jj], rz = tz[t] - cz[jj];
              if constexpr (lo) {
                rx += txl[t] - cxl[jj];
                ry += tyl[t] - cyl[jj];
                rz += tzl[t] - czl[jj];
              }
              if (rx * rx + ry * ry + rz * rz < pb.coinc2) {
                T sv[kMaxPairValues];
                for (int d = 0; d < nq; ++d) sv[d] = cq[d * padded + jj];
                K::template self_limit<T>(c, sv, self);
              }
            }
          }
          coincident += (!g.separate && nco > 0) ? nco - 1 : nco;
          double* o = ws.acc.data() + static_cast<std::size_t>(t0 + t) * nout;
          for (int d = 0; d < nout; ++d) o[d] = double(out[t * nout + d]) + double(self[d]);
        }
      } catch (...) {
        errors.record(std::current_exception());
      }
    }
  }
  errors.rethrow();
  ws.coincident = coincident;
}

ELLIPTICA_EWALD_INSTANTIATE(p2p)

}  // namespace elliptica::ewald::detail
