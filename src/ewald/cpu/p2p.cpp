// P2P: the real-space sum of the spectral Ewald method over the colleague cells of each target
// cell (seed 000, section 2.1 and algorithm 1), for any kernel's traits (kernel_traits.hpp).
// A pair closer than the coincidence distance contributes the limit r -> 0 of (real-space kernel
// - free-space kernel) instead (K::self_limit): the self term when the targets are the sources.
#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

ErfcTable::ErfcTable(double xmax) {
  X = xmax * (1 + 1e-12) + 1e-300;
  // Refine until the error reaches the rounding floor of the monomial Horner form (~2e-15,
  // i.e. ~1e-15 relative to the kernel): stop at 4e-15 or when refining no longer helps.
  double prev = 1.0;
  for (int k = 4; k <= 12; ++k) {
    n = 1 << k;
    build();
    const double e = max_error();
    if (e < 4e-15) break;
    if (e > 0.7 * prev) {  // stagnated: keep the previous, smaller table
      n = 1 << (k - 1);
      build();
      break;
    }
    prev = e;
  }
}

namespace {
double gauss_fn(double x) { return 2.0 / kSqrtPi * std::exp(-x * x); }
double erfc_fn(double x) { return std::erfc(x); }
void fit(double (*f)(double), double a, double b, double* out) {
  const std::vector<double> mono = chebyshev_monomial(f, a, b, ErfcTable::kDeg);
  for (int d = 0; d <= ErfcTable::kDeg; ++d) out[d] = mono[d];
}
}  // namespace

void ErfcTable::build() {
  scale = n / X;
  ce.assign(std::size_t(n) * (kDeg + 1), 0.0);
  cg.assign(std::size_t(n) * (kDeg + 1), 0.0);
  for (int i = 0; i < n; ++i) {
    fit(erfc_fn, i / scale, (i + 1) / scale, &ce[std::size_t(i) * (kDeg + 1)]);
    fit(gauss_fn, i / scale, (i + 1) / scale, &cg[std::size_t(i) * (kDeg + 1)]);
  }
  cef.assign(ce.begin(), ce.end());
  cgf.assign(cg.begin(), cg.end());
}

double ErfcTable::max_error() const {
  double e = 0;
  for (int i = 0; i <= 4000; ++i) {
    const double x = X * i / 4000.0;
    double a, b;
    eval(x, a, b);
    e = std::max({e, std::abs(a - std::erfc(x)), std::abs(b - gauss_fn(x))});
  }
  return e;
}

namespace {

struct Neighbour {
  int cell;
  double sx, sy, sz;  // shift added to source coordinates (periodic image)
};

// The colleague cells of cell (i,j,k) with the periodic shifts of their sources: offsets
// o in [-K_d, K_d] per axis, K_d = ceil(r_c / cell width) (1 when the width is >= r_c, which gives
// the usual 27 colleagues). Offset o maps to source cell (c + o) mod n and periodic image
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
  const T xi = static_cast<T>(xi_d);
  const T rc2 = static_cast<T>(rc * rc), xi2 = static_cast<T>(xi_d * xi_d);
  const double L = std::max({box[0], box[1], box[2]});
  const T coinc2 = static_cast<T>((kCoincidenceRelative * L) * (kCoincidenceRelative * L));
  const T c = static_cast<T>(2.0 * xi_d / kSqrtPi);
  const ErfcTable& tab = g.table;
  const std::array<int, 3> Kr = g.reach;
  const int ncells = trg.ncells();
  const int threads = g.setup.threads;
  const std::vector<T>& q = ws.values;
  ws.acc.assign(trg.x.size() * nout, 0.0);
  std::size_t coincident = 0;
  ParallelErrors errors;
#pragma omp parallel num_threads(threads) reduction(+ : coincident)
  {
    // Pairs within r_c of the current target, compacted so the kernel loop has no branches.
    std::vector<T> br, bx, by, bz, bq;
    std::vector<Neighbour> nb;
#pragma omp for schedule(dynamic, 4)
    for (int cellid = 0; cellid < ncells; ++cellid) {
      const int t0 = trg.start[cellid], t1 = trg.start[cellid + 1];
      if (t0 == t1 || errors.failed()) continue;
      try {  // the buffers grow here: a failure is kept and rethrown after the region
        const int i = cellid / (trg.n[1] * trg.n[2]);
        const int j = (cellid / trg.n[2]) % trg.n[1];
        const int k = cellid % trg.n[2];
        const int nn = colleagues(src, box, Kr, i, j, k, nb);
        std::size_t cap = 1;
        for (int b = 0; b < nn; ++b) cap += src.start[nb[b].cell + 1] - src.start[nb[b].cell];
        if (br.size() < cap) {
          br.resize(cap);
          bx.resize(cap);
          by.resize(cap);
          bz.resize(cap);
          bq.resize(cap * nq);
        }
        for (int t = t0; t < t1; ++t) {
          // Offsets in float64 (the periodic shift applied to the target), rounded to T.
          T self[nout] = {};
          std::size_t m = 0, nco = 0;
          for (int b = 0; b < nn; ++b) {
            const int s0 = src.start[nb[b].cell], s1 = src.start[nb[b].cell + 1];
            const double ox = trg.x[t] - nb[b].sx, oy = trg.y[t] - nb[b].sy, oz = trg.z[t] - nb[b].sz;
            for (int s = s0; s < s1; ++s) {
              // Branch-free compaction: always store, advance only for coincidence <= r < r_c.
              const T rx = static_cast<T>(ox - src.x[s]), ry = static_cast<T>(oy - src.y[s]),
                      rz = static_cast<T>(oz - src.z[s]);
              const T r2 = rx * rx + ry * ry + rz * rz;
              br[m] = r2;
              bx[m] = rx;
              by[m] = ry;
              bz[m] = rz;
              for (int d = 0; d < nq; ++d) bq[m * nq + d] = q[std::size_t(s) * nq + d];
              const bool coinc = r2 < coinc2;
              m += (r2 < rc2) & !coinc;
              if (coinc) {  // rare: the self limit of (real-space - free-space) kernel
                ++nco;
                K::template self_limit<T>(c, &q[std::size_t(s) * nq], self);
              }
            }
          }
          // A target among the sources coincides with itself: not a reported coincidence.
          coincident += (!g.separate && nco > 0) ? nco - 1 : nco;
          T a0 = self[0], a1 = nout > 1 ? self[1 % nout] : T(0), a2 = nout > 2 ? self[2 % nout] : T(0),
            a3 = nout > 3 ? self[3 % nout] : T(0);
#pragma omp simd reduction(+ : a0, a1, a2, a3)
          for (std::size_t p = 0; p < m; ++p) {
            const T r = std::sqrt(br[p]);
            const T ir = T(1) / r;
            T ef, ga;
            tab.eval<T>(xi * r, ef, ga);
            K::template real_space<T>(ef * ir, xi * ga, ir, xi2, bx[p], by[p], bz[p], &bq[p * nq], a0, a1, a2, a3);
          }
          double* o = ws.acc.data() + static_cast<std::size_t>(t) * nout;
          const T a[4] = {a0, a1, a2, a3};
          for (int d = 0; d < nout; ++d) o[d] = a[d];
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
