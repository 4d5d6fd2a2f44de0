// P2P: the real-space sum of the spectral Ewald method over the colleague cells of each target
// cell (seed 000, section 2.1 and algorithm 1), for any kernel's traits (kernel_traits.hpp).
// Targets in blocks of consecutive z-cells of one column of cells; per block the colleague
// columns (block_columns), per target the SIMD loop of p2p_simd.cpp sums the z-cells of each
// column its sphere of radius r_c reaches. The loop lists the pairs closer than the coincidence
// distance (float32: twice that) instead of summing them; here such a pair contributes the limit
// r -> 0 of (real-space kernel - free-space kernel) (K::self_limit: the self term when the
// targets are the sources) if r < the coincidence distance, else its real-space kernel in float64.
// With pair symmetry (pair_symmetry_applies: float64, the targets the sources, r_c < min(L)/2)
// each pair is evaluated once, by its point of lower sorted index, for both points (p2p_simd.cpp).
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
  const double cd = 2.0 * xi_d / kSqrtPi;
  // float32's distance test lists pairs up to twice the coincidence distance as close (its
  // offsets carry ~1e-14 L of rounding besides the relative 2^-23): every pair within the
  // coincidence distance is among them; at least the smallest normal float
  const double close2 = sizeof(T) == 4 ? std::max(4 * coinc2, double(std::numeric_limits<float>::min())) : coinc2;
  const std::array<int, 3> Kr = g.reach;
  const int ncells = trg.ncells();
  const int threads = g.setup.threads;
  const std::vector<T>& q = ws.values;  // (ns + 1, nq) in cell-sorted order, the last row zero
  const std::size_t ns = src.x.size();
  // the values as nq arrays (structure of arrays), readable kPairPad past their end, or (gathered
  // per pair) interleaved with a row of zeros appended for the padding of the pair lists
  constexpr bool gathers = p2p_gathers<K>();
  // the gather indices are integers as wide as T: int32 for float32 plans
  if (gathers && double(ns + 1) * nq > double(std::numeric_limits<std::make_signed_t<std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>>::max()))
    throw ResourceError("P2P: " + std::to_string(ns) + " sources with " + std::to_string(nq) +
                        " values each exceed the 32-bit indices of a single-precision plan; use double precision");
  // (gathered: ws.values itself, whose last row is zero)
  const std::size_t qstride = ns + kPairPad;
  std::vector<T> qs(gathers ? 0 : qstride * nq, T(0));
  if (!gathers)
    for (std::size_t s = 0; s < ns; ++s)
      for (int d = 0; d < nq; ++d) qs[d * qstride + s] = q[s * nq + d];
  ws.acc.assign(trg.x.size() * nout, 0.0);
  std::size_t coincident = 0, candidates = 0, pairs = 0;
  // Pair symmetry (Newton's third law, pair_symmetry_applies): each pair is evaluated once, by the
  // target of lower sorted index, which also adds the pair's reverse term to the other point's
  // row of a per-thread array; the rows are added after the loop, in thread order. The blocks
  // are then dealt to the threads in a fixed order (static schedule), so that the sums do not
  // depend on the run.
  const bool sym = uses_pair_symmetry<K, T>(g);
  const std::size_t rev_len = sym ? (ns + 1) * std::size_t(nout) : 0;
  std::vector<std::vector<T>> rev(sym ? std::size_t(threads) : 0);
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
    T* rev_mine = nullptr;  // pair symmetry: this thread's reverse terms
    if (sym) {
      try {
        std::vector<T>& r = rev[std::size_t(omp_get_thread_num())];
        r.assign(rev_len, T(0));
        rev_mine = r.data();
      } catch (...) {
        errors.record(std::current_exception());
      }
    }
    std::vector<T> out, scratch;  // the block's sums; the SIMD loop's compacted pairs (p2p_simd.cpp)
    std::vector<std::size_t> per_k;
    std::vector<PairColumn> cols;
    PairColumnExtents ext;          // the columns' x, y extents
    std::vector<double> zscratch;   // the columns' z ranges per target
    std::vector<float> lscratch;    // float32: the block-local sources
    std::vector<int> iscratch, tk;
    std::vector<ClosePair> close;   // the block's close pairs
    auto block = [&](int blk) {
      const int col2 = blk / nzb;  // (x, y) cell index i n1 + j
      const int k0 = (blk % nzb) * zb, k1 = std::min(nzc, k0 + zb) - 1;
      const int c0 = col2 * nzc + k0;
      const int t0 = trg.start[c0], t1 = trg.start[c0 + (k1 - k0) + 1];
      if (t0 == t1 || errors.failed() || (sym && rev_mine == nullptr)) return;
      try {  // the buffers grow here: a failure is kept and rethrown after the region
        const int i = col2 / trg.n[1], j = col2 % trg.n[1];
        const std::size_t nt = std::size_t(t1 - t0);
        tk.resize(nt);
        for (int k = k0; k <= k1; ++k)
          for (int t = trg.start[c0 + k - k0]; t < trg.start[c0 + k - k0 + 1]; ++t) tk[std::size_t(t - t0)] = k;
        std::size_t max_candidates = 0;
        block_columns(src, box, Kr, rc, i, j, k0, k1, cols, ext, per_k, max_candidates);
        out.assign(nt * nout, T(0));
        close.clear();
        PairBlock<T> pb;
        pb.sx = src.x.data();
        pb.sy = src.y.data();
        pb.sz = src.z.data();
        pb.ns = ns;
        pb.q = gathers ? nullptr : qs.data();
        pb.qstride = qstride;
        pb.qa = gathers ? q.data() : nullptr;
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
        pb.close2 = close2;
        pb.xi = static_cast<T>(xi_d);
        pb.series = &g.series;
        pb.out = out.data();
        pb.close = &close;
        pb.scratch = &scratch;
        pb.lscratch = &lscratch;
        pb.iscratch = &iscratch;
        pb.counts = counts;
        pb.rev = rev_mine;
        pb.t_first = std::size_t(t0);
        p2p_cell<K, T>(pb);
        // the close pairs (in target order): r < the coincidence distance contributes the limit
        // r -> 0 of (real-space - free-space) kernel (K::self_limit; the target's own source, same
        // sorted index, when the targets are the sources); float32 also lists pairs a little
        // farther (up to sqrt(close2)), whose real-space kernel is evaluated here in float64
        std::size_t ci = 0;
        for (std::size_t t = 0; t < nt; ++t) {
          double extra[4] = {0, 0, 0, 0};
          for (; ci < close.size() && close[ci].t == t; ++ci) {
            const ClosePair& cp = close[ci];
            double sv[kMaxPairValues];
            for (int d = 0; d < nq; ++d) sv[d] = double(q[cp.s * nq + d]);
            const double r2 = std::fma(cp.rx, cp.rx, std::fma(cp.ry, cp.ry, cp.rz * cp.rz));
            // pair symmetry: the other point's term, from this target's values (into its row of rev)
            const bool back = sym && cp.s != std::size_t(t0) + t;
            double tv[kMaxPairValues], bk[4] = {0, 0, 0, 0};
            if (back)
              for (int d = 0; d < nq; ++d) tv[d] = double(q[(std::size_t(t0) + t) * nq + d]);
            if (r2 < coinc2) {
              K::template self_limit<double>(cd, sv, extra);
              if (g.separate || cp.s != std::size_t(t0) + t) ++coincident;
              if (back) {
                K::template self_limit<double>(cd, tv, bk);
                ++coincident;
              }
            } else if (r2 < rc * rc) {  // float32 only (close2 > coinc2): no pair symmetry there
              const double r = std::sqrt(r2), ir = 1.0 / r;
              K::template real_space<double>(std::erfc(xi_d * r) * ir, cd * std::exp(-xi_d * xi_d * r2), ir, xi_d * xi_d,
                                             cp.rx, cp.ry, cp.rz, sv, extra[0], extra[1], extra[2], extra[3]);
            }
            if (back)
              for (int d = 0; d < nout; ++d) rev_mine[cp.s * nout + d] += static_cast<T>(bk[d]);
          }
          double* o = ws.acc.data() + static_cast<std::size_t>(t0 + t) * nout;
          for (int d = 0; d < nout; ++d) o[d] = double(out[t * nout + d]) + extra[d];
        }
      } catch (...) {
        errors.record(std::current_exception());
      }
    };
    if (sym) {
#pragma omp for schedule(static, 2)
      for (int blk = 0; blk < nblocks; ++blk) block(blk);
    } else {
#pragma omp for schedule(dynamic, 2)
      for (int blk = 0; blk < nblocks; ++blk) block(blk);
    }
    candidates += counts[0];
    pairs += counts[1];
  }
  errors.rethrow();
  if (sym) {  // the reverse terms, in thread order
    const std::size_t nthr = rev.size();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::size_t s = 0; s < ns; ++s)
      for (std::size_t th = 0; th < nthr; ++th) {
        if (rev[th].empty()) continue;
        for (int d = 0; d < nout; ++d) ws.acc[s * nout + d] += double(rev[th][s * nout + d]);
      }
  }
  ws.coincident = coincident;
  ws.p2p_candidates = candidates;
  ws.p2p_pairs = pairs;
}

ELLIPTICA_EWALD_INSTANTIATE(p2p)

}  // namespace elliptica::ewald::detail
