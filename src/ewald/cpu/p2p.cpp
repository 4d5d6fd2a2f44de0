// P2P: the real-space sum of the spectral Ewald method over the colleague cells of each target
// cell (seed 000, section 2.1 and algorithm 1), for any kernel's traits (kernel_traits.hpp).
// Per target, the runs of cell-sorted sources its sphere of radius r_c can reach (target_runs)
// are summed by the SIMD loop of p2p_simd.cpp, which reads the sources in place. A pair
// closer than the coincidence distance contributes the limit r -> 0 of (real-space kernel -
// free-space kernel) instead (K::self_limit): the self term when the targets are the sources.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
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
  for (int n = 4; n <= kMaxSeriesDegree; ++n) {
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
  // exp: Taylor remainder of e^r on |r| <= ln(2)/2, relative to e^r >= e^(-ln2/2)
  const double h = 0.5 * std::log(2.0);
  double term = h;  // h^(d+1) / (d+1)!
  for (exp_degree = 1; exp_degree < kMaxExpDegree; ++exp_degree) {
    term *= h / (exp_degree + 1);
    if (term * std::exp(h) <= 0.5 * target) break;
  }
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

/// A run of consecutive sources (in cell-sorted order) [s0, s1) that may hold sources within r_c
/// of a target, with the periodic shift (sx, sy, sz) added to their coordinates.
struct PairRun {
  int s0 = 0, s1 = 0;
  double sx = 0, sy = 0, sz = 0;
};

// The runs of sources that can lie within r_c of the target t (coordinates wrapped into the box,
// in cell (i, j, k) of the cell list): for each column (x, y offsets in [-K, K]) of colleague
// cells whose (x, y) distance from t is below r_c, the z-cells (offsets in [-K, K]) the sphere of
// radius r_c around t reaches there. Offset o maps to cell (c + o) mod n and periodic image
// floor((c + o)/n), so every image of every source within r_c is in exactly one run (several
// images of one source when r_c exceeds a box length). Cell bounds are widened by 1e-12 L so that
// the rounding of a point's cell index never drops a pair. The SIMD loop (p2p_simd.cpp) visits
// the same runs (from the columns of cell_columns, with the same arithmetic); this list serves
// the rare targets with coincident sources other than themselves.
template <class T>
void target_runs(const CellList<T>& cl, const std::array<double, 3>& box, const std::array<int, 3>& K, double rc,
                 int i, int j, int k, const double t[3], std::vector<PairRun>& runs) {
  const double w[3] = {box[0] / cl.n[0], box[1] / cl.n[1], box[2] / cl.n[2]};
  const double slack = 1e-12 * std::max({box[0], box[1], box[2]});
  const double rc2 = rc * rc;
  auto gap = [&](int d, int cc) {  // distance from t to the (unwrapped) cell interval cc along d
    const double lo = cc * w[d] - slack, hi = (cc + 1) * w[d] + slack;
    return t[d] < lo ? lo - t[d] : (t[d] > hi ? t[d] - hi : 0.0);
  };
  for (int ox = -K[0]; ox <= K[0]; ++ox) {
    const int cx = i + ox;
    const double gx = gap(0, cx);
    if (gx * gx >= rc2) continue;
    const int imx = floor_div(cx, cl.n[0]);
    const int ii = cx - imx * cl.n[0];
    for (int oy = -K[1]; oy <= K[1]; ++oy) {
      const int cy = j + oy;
      const double gy = gap(1, cy);
      const double g2 = gx * gx + gy * gy;
      if (g2 >= rc2) continue;
      const int imy = floor_div(cy, cl.n[1]);
      const int jj = cy - imy * cl.n[1];
      const double h = std::sqrt(rc2 - g2) + slack;
      // clamped in float64 before the conversion (thin boxes: (t +- h)/w can exceed int's range)
      const int z0 = static_cast<int>(std::max(double(k - K[2]), std::floor((t[2] - h) / w[2])));
      const int z1 = static_cast<int>(std::min(double(k + K[2]), std::floor((t[2] + h) / w[2])));
      const int col = (ii * cl.n[1] + jj) * cl.n[2];
      for (int cz = z0; cz <= z1;) {  // consecutive z-cells of one periodic image form one run
        const int imz = floor_div(cz, cl.n[2]);
        const int end = std::min(z1, (imz + 1) * cl.n[2] - 1);
        const int kk = cz - imz * cl.n[2];
        const int s0 = cl.start[col + kk], s1 = cl.start[col + kk + (end - cz) + 1];
        if (s1 > s0) runs.push_back({s0, s1, imx * box[0], imy * box[1], imz * box[2]});
        cz = end + 1;
      }
    }
  }
}

// The colleague columns of the targets in cells (i, j, k0..k1) (x, y offsets in [-K, K] whose cell
// interval lies closer than r_c to the target cells' in (x, y)) and a bound of the sources any
// of these targets visits (the columns' x, y extents into ext, padded for the SIMD loop): the
// largest, over k in [k0, k1], number of sources in the z-cells
// [k - K, k + K] of all columns (every image counted).
template <class T>
void block_columns(const CellList<T>& cl, const std::array<double, 3>& box, const std::array<int, 3>& K, double rc,
                   int i, int j, int k0, int k1, std::vector<PairColumn>& cols, PairColumnExtents& ext, std::vector<std::size_t>& per_k,
                   std::size_t& max_candidates) {
  const double w[3] = {box[0] / cl.n[0], box[1] / cl.n[1], box[2] / cl.n[2]};
  const double slack = 1e-12 * std::max({box[0], box[1], box[2]});
  cols.clear();
  ext.clear();
  per_k.assign(std::size_t(k1 - k0 + 1), 0);
  for (int ox = -K[0]; ox <= K[0]; ++ox) {
    const double gx = std::max(0.0, std::max(0, std::abs(ox) - 1) * w[0] - 2 * slack);
    const int cx = i + ox;
    const int imx = floor_div(cx, cl.n[0]);
    const int ii = cx - imx * cl.n[0];
    for (int oy = -K[1]; oy <= K[1]; ++oy) {
      const double gy = std::max(0.0, std::max(0, std::abs(oy) - 1) * w[1] - 2 * slack);
      if (gx * gx + gy * gy >= rc * rc) continue;
      const int cy = j + oy;
      const int imy = floor_div(cy, cl.n[1]);
      const int jj = cy - imy * cl.n[1];
      PairColumn c;
      c.base = (ii * cl.n[1] + jj) * cl.n[2];
      ext.push(cx * w[0] - slack, (cx + 1) * w[0] + slack, cy * w[1] - slack, (cy + 1) * w[1] + slack);
      c.sx = imx * box[0];
      c.sy = imy * box[1];
      cols.push_back(c);
      auto count = [&](int cz) {
        const int kk = cz - floor_div(cz, cl.n[2]) * cl.n[2];
        return std::size_t(cl.start[c.base + kk + 1] - cl.start[c.base + kk]);
      };
      std::size_t win = 0;  // sources in z-cells [k - K, k + K], slid along k
      for (int cz = k0 - K[2]; cz <= k0 + K[2]; ++cz) win += count(cz);
      for (int k = k0; k <= k1; ++k) {
        per_k[std::size_t(k - k0)] += win;
        if (k < k1) win += count(k + K[2] + 1) - count(k - K[2]);
      }
    }
  }
  ext.pad();
  max_candidates = per_k.empty() ? 0 : *std::max_element(per_k.begin(), per_k.end());
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
  const double coinc2 = (kCoincidenceRelative * L) * (kCoincidenceRelative * L);
  const T c = static_cast<T>(2.0 * xi_d / kSqrtPi);
  const std::array<int, 3> Kr = g.reach;
  const int ncells = trg.ncells();
  const int threads = g.setup.threads;
  const std::vector<T>& q = ws.values;  // (ns, nq) in cell-sorted order
  const std::size_t ns = src.x.size();
  // the values as nq arrays (structure of arrays), readable kPairPad past their end, or (gathered
  // per pair) interleaved with a row of zeros appended for the padding of the pair lists
  constexpr bool gathers = p2p_gathers<K>();
  // the gather indices are integers as wide as T: int32 for float32 plans
  if (gathers && double(ns + 1) * nq > double(std::numeric_limits<std::make_signed_t<std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>>::max()))
    throw ResourceError("P2P: " + std::to_string(ns) + " sources with " + std::to_string(nq) +
                        " values each exceed the 32-bit indices of a single-precision plan; use double precision");
  const std::size_t qstride = ns + kPairPad;
  std::vector<T> qs(gathers ? (ns + 1) * nq : qstride * nq, T(0));
  if (gathers) std::copy(q.begin(), q.begin() + std::ptrdiff_t(ns * nq), qs.begin());
  else
    for (std::size_t s = 0; s < ns; ++s)
      for (int d = 0; d < nq; ++d) qs[d * qstride + s] = q[s * nq + d];
  ws.acc.assign(trg.x.size() * nout, 0.0);
  std::size_t coincident = 0, candidates = 0, pairs = 0;
  // Targets in blocks of consecutive z-cells of one (x, y) column of cells (contiguous in the
  // cell-sorted order), ~64 targets per block: the colleague columns and the buffers are set up
  // once per block.
  const int nzc = trg.n[2];
  const double per_cell = double(trg.x.size()) / std::max(1, ncells);
  const int zb = std::clamp(static_cast<int>(std::lround(64.0 / std::max(per_cell, 1e-3))), 1, nzc);
  const int nzb = (nzc + zb - 1) / zb;
  const int nblocks = trg.n[0] * trg.n[1] * nzb;
  ParallelErrors errors;
#pragma omp parallel num_threads(threads) reduction(+ : coincident, candidates, pairs)
  {
    std::size_t counts[2] = {0, 0};
    std::vector<T> out, scratch;  // the block's sums; the SIMD loop's compacted pairs (p2p_simd.cpp)
    std::vector<std::size_t> ncoinc, per_k;
    std::vector<PairColumn> cols;
    PairColumnExtents ext;          // the columns' x, y extents
    std::vector<double> zscratch;   // the columns' z ranges per target
    std::vector<PairRun> runs;
    std::vector<int> tk;
#pragma omp for schedule(dynamic, 2)
    for (int blk = 0; blk < nblocks; ++blk) {
      const int col2 = blk / nzb;  // (x, y) cell index i n1 + j
      const int k0 = (blk % nzb) * zb, k1 = std::min(nzc, k0 + zb) - 1;
      const int c0 = col2 * nzc + k0;
      const int t0 = trg.start[c0], t1 = trg.start[c0 + (k1 - k0) + 1];
      if (t0 == t1 || errors.failed()) continue;
      try {  // the buffers grow here: a failure is kept and rethrown after the region
        const int i = col2 / trg.n[1], j = col2 % trg.n[1];
        const std::size_t nt = std::size_t(t1 - t0);
        tk.resize(nt);
        for (int k = k0; k <= k1; ++k)
          for (int t = trg.start[c0 + k - k0]; t < trg.start[c0 + k - k0 + 1]; ++t) tk[std::size_t(t - t0)] = k;
        std::size_t max_candidates = 0;
        block_columns(src, box, Kr, rc, i, j, k0, k1, cols, ext, per_k, max_candidates);
        out.assign(nt * nout, T(0));
        ncoinc.assign(nt, 0);
        PairBlock<T> pb;
        pb.sx = src.x.data();
        pb.sy = src.y.data();
        pb.sz = src.z.data();
        pb.ns = ns;
        pb.q = gathers ? nullptr : qs.data();
        pb.qstride = qstride;
        pb.qa = gathers ? qs.data() : nullptr;
        pb.tx = trg.x.data() + t0;
        pb.ty = trg.y.data() + t0;
        pb.tz = trg.z.data() + t0;
        pb.nt = nt;
        pb.cell_start = src.start.data();
        pb.cols = cols.data();
        pb.ncols = static_cast<int>(cols.size());
        pb.colx0 = ext.x0.data();
        pb.colx1 = ext.x1.data();
        pb.coly0 = ext.y0.data();
        pb.coly1 = ext.y1.data();
        pb.zscratch = &zscratch;
        pb.nz = src.n[2];
        pb.tk = tk.data();
        pb.Kz = Kr[2];
        pb.wz = box[2] / src.n[2];
        pb.Lz = box[2];
        pb.slack = 1e-12 * L;
        pb.max_candidates = max_candidates;
        pb.rc2 = rc * rc;
        pb.coinc2 = coinc2;
        pb.xi = static_cast<T>(xi_d);
        pb.series = &g.series;
        pb.out = out.data();
        pb.ncoinc = ncoinc.data();
        pb.scratch = &scratch;
        pb.counts = counts;
        p2p_cell<K, T>(pb);
        for (std::size_t t = 0; t < nt; ++t) {
          T self[nout] = {};
          const std::size_t nco = ncoinc[t];
          if (nco == 1 && !g.separate) {
            // the target's own source (same sorted index): the self limit of (real-space -
            // free-space) kernel, as for every coincident pair
            K::template self_limit<T>(c, &q[std::size_t(t0 + t) * nq], self);
          } else if (nco > 0) {
            // rare: other coincident sources; find them (the same runs and float64 test as the
            // SIMD loop)
            const double tp[3] = {trg.x[t0 + t], trg.y[t0 + t], trg.z[t0 + t]};
            runs.clear();
            target_runs(src, box, Kr, rc, i, j, tk[t], tp, runs);
            for (const PairRun& run : runs) {
              const double ox = trg.x[t0 + t] - run.sx, oy = trg.y[t0 + t] - run.sy, oz = trg.z[t0 + t] - run.sz;
              for (int s = run.s0; s < run.s1; ++s) {
                const double rx = ox - src.x[s], ry = oy - src.y[s], rz = oz - src.z[s];
                if (std::fma(rx, rx, std::fma(ry, ry, rz * rz)) < coinc2) {
                  T sv[kMaxPairValues];
                  for (int d = 0; d < nq; ++d) sv[d] = q[std::size_t(s) * nq + d];
                  K::template self_limit<T>(c, sv, self);
                }
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
    candidates += counts[0];
    pairs += counts[1];
  }
  errors.rethrow();
  ws.coincident = coincident;
  ws.p2p_candidates = candidates;
  ws.p2p_pairs = pairs;
}

ELLIPTICA_EWALD_INSTANTIATE(p2p)

}  // namespace elliptica::ewald::detail
