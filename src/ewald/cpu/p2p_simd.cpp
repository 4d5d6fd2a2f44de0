// P2P inner loops in explicit SIMD (Google Highway, Debian libhwy-dev), compiled for every x86
// target Highway knows (SSE4, AVX2, AVX-512, ...) and dispatched at run time to the best one the
// CPU has (HWY_DYNAMIC_DISPATCH): the machines this runs on vary between AVX2 and AVX-512.
// Highway rather than xsimd: Debian's xsimd 8.1 fixes the instruction set at compile time, so
// run-time dispatch would need a hand-made multi-compilation; Highway's foreach_target does that.
//
// One call evaluates every target of a block of target cells against the runs of sources that
// can lie within r_c of it (per column of colleague cells, the z-range the sphere of radius r_c
// around the target reaches), per target in two passes: a distance test over the runs that
// compacts the pairs with coincidence <= r < r_c (offsets in T, r^2, source values or their
// index) into per-thread buffers by a lane permutation per chunk and lists the closer ones, then
// the kernel on full vectors of the compacted pairs only. float64 reads the cell-sorted sources
// in place (runs split at periodic images); float32 tests on float32 lanes, twice as many, against
// a block-local copy of the columns' sources (PairBlock), one run per column.
//
// Pair symmetry (Newton's third law, PairBlock::rev; float64): a target tests only the sources of
// equal or higher sorted index (each run starts there), pass 1 also compacts each pair's row
// offset in rev, and pass 2 forms the reverse term (RealSpace at -r with the target's values)
// beside the forward one and adds it to the source's row by a gather, an add and a scatter per
// output (the lanes of one target hold distinct sources).
//
// erfc: erfc(x) = exp(-x^2) erfcx(x), erfcx(x) a Chebyshev series in t = 1/(1 + x/2) on
// [1/(1 + X/2), 1] (X = xi r_c) evaluated by Clenshaw's recurrence, its degree chosen from the
// tolerance (ErfcSeries, set_points.cpp); exp(-x^2) (Highway's contrib Exp) is shared with the
// Gaussian of the kernels. One division (t) and one square root per pair (approximate reciprocal
// square root and reciprocal refined by Newton steps), as the seed's rational approximation of
// erf(x)/x (seed 000, section 4).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ewald/cpu/p2p_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ewald/cpu/p2p_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace elliptica::ewald::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 1/sqrt(a) and 1/a: a hardware estimate refined by Newton steps. float: the float estimate
// (12 or 14 bits), 2 steps. double on AVX-512: the 14-bit double estimate (vrsqrt14pd,
// vrcp14pd), 2 steps (14 -> 28 -> 56 bits); other targets: the float estimate of the demoted
// value, 3 steps (12 -> 24 -> 48 -> 96 bits).
template <class D, class V>
HWY_INLINE V Estimate(D d, V a, bool rsqrt, int& steps) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 4) {
    steps = 2;
    return rsqrt ? hn::ApproximateReciprocalSqrt(a) : hn::ApproximateReciprocal(a);
  } else {
#if HWY_TARGET <= HWY_AVX3
    if constexpr (hn::MaxLanes(D()) == 8) {
      steps = 2;
      return V{rsqrt ? _mm512_rsqrt14_pd(a.raw) : _mm512_rcp14_pd(a.raw)};
    }
#endif
    steps = 3;
    const hn::Rebind<float, D> df;
    const auto af = hn::DemoteTo(df, a);
    return hn::PromoteTo(d, rsqrt ? hn::ApproximateReciprocalSqrt(af) : hn::ApproximateReciprocal(af));
  }
}

template <class D, class V>
HWY_INLINE V InvSqrt(D d, V a) {
  using T = hn::TFromD<D>;
  int steps = 0;
  V y = Estimate(d, a, true, steps);
  const V half = hn::Set(d, T(0.5)), three_half = hn::Set(d, T(1.5));
  const V ha = hn::Mul(half, a);
  for (int i = 0; i < steps; ++i) y = hn::Mul(y, hn::NegMulAdd(ha, hn::Mul(y, y), three_half));
  return y;
}

template <class D, class V>
HWY_INLINE V Inv(D d, V a) {
  using T = hn::TFromD<D>;
  int steps = 0;
  V y = Estimate(d, a, false, steps);
  const V two = hn::Set(d, T(2));
  for (int i = 0; i < steps; ++i) y = hn::Mul(y, hn::NegMulAdd(a, y, two));
  return y;
}

// exp(a) for a <= 0 (the Gaussians exp(-xi^2 r^2) of the kernels), to the tolerance's accuracy:
// a = n ln 2 + r with n = round(a / ln 2) (the round-to-nearest trick: adding 1.5 2^m leaves n in
// the low mantissa bits, m = 52 / 23), r in [-ln2/2, ln2/2] by a two-part ln 2 (Cody-Waite),
// e^r by Horner on the Taylor coefficients 1/k! up to `deg` (ErfcSeries::exp_degree), 2^n put
// into the exponent bits. a is clamped at -700 (float: -85): e^a is then below 1e-304 (1e-37)
// where the exact value is smaller still, and every caller multiplies it by bounded factors.
template <class D, class V>
HWY_INLINE V ExpNeg(D d, V a, const V* inv_fact, int deg) {
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  constexpr bool dbl = sizeof(T) == 8;
  constexpr int mant = dbl ? 52 : 23;
  const T magic = dbl ? T(6755399441055744.0) : T(12582912.0);  // 1.5 2^52, 1.5 2^23
  const V ln2_hi = hn::Set(d, dbl ? T(0.6931471805596629565116018) : T(0.693145751953125f));
  const V ln2_lo = hn::Set(d, dbl ? T(0.28235290563031577122588448175e-12) : T(1.428606765330187045e-06f));
  a = hn::Max(a, hn::Set(d, dbl ? T(-700) : T(-85)));
  const V t = hn::MulAdd(a, hn::Set(d, T(1.4426950408889634)), hn::Set(d, magic));  // magic + n
  const V n = hn::Sub(t, hn::Set(d, magic));
  const V r = hn::NegMulAdd(n, ln2_lo, hn::NegMulAdd(n, ln2_hi, a));
  V p = inv_fact[deg];
  for (int k = deg - 1; k >= 0; --k) p = hn::MulAdd(p, r, inv_fact[k]);
  // 2^n: the exponent bits of (n + bias); t's low bits hold magic's mantissa + n
  const TI bias = dbl ? TI(1023) : TI(127);
  const TI magic_bits = dbl ? TI(0x4338000000000000LL) : TI(0x4B400000);
  const auto e = hn::ShiftLeft<mant>(hn::Add(hn::BitCast(di, t), hn::Set(di, static_cast<TI>(bias - magic_bits))));
  return hn::Mul(p, hn::BitCast(d, e));
}

// The real-space kernels of kernel_traits.hpp on vectors (the same formulas; r = target - source).
template <class K, class D, class V>
HWY_INLINE void RealSpace(D d, V ec, V ce, V ir, V xi2, V rx, V ry, V rz, const V* s, V* a) {
  using T = hn::TFromD<D>;
  if constexpr (K::kernel == Kernel::Laplace) {
    a[0] = hn::MulAdd(s[0], ec, a[0]);
    if constexpr (K::field) {
      const V g = hn::Mul(hn::Mul(s[0], hn::Add(ec, ce)), hn::Mul(ir, ir));
      a[1] = hn::MulAdd(g, rx, a[1]);
      a[2] = hn::MulAdd(g, ry, a[2]);
      a[3] = hn::MulAdd(g, rz, a[3]);
    }
  } else {
    constexpr int o = K::kernel == Kernel::Stresslet ? 0 : 3;  // first value of the double layer
    if constexpr (K::kernel == Kernel::Stokeslet) {
      const V A = hn::Sub(ec, ce);
      const V rf = hn::Mul(hn::Mul(hn::Add(ec, ce), hn::Mul(ir, ir)),
                           hn::MulAdd(rx, s[0], hn::MulAdd(ry, s[1], hn::Mul(rz, s[2]))));
      a[0] = hn::MulAdd(A, s[0], hn::MulAdd(rf, rx, a[0]));
      a[1] = hn::MulAdd(A, s[1], hn::MulAdd(rf, ry, a[1]));
      a[2] = hn::MulAdd(A, s[2], hn::MulAdd(rf, rz, a[2]));
      if constexpr (K::kernel == Kernel::Stokeslet && K::field) {  // pressure: 2 (ec + ce)(r.f)/r^2
        const V g = hn::Mul(hn::Add(ec, ce), hn::Mul(ir, ir));
        a[3] = hn::MulAdd(hn::Add(g, g), hn::MulAdd(rx, s[0], hn::MulAdd(ry, s[1], hn::Mul(rz, s[2]))), a[3]);
      }
    }
    if constexpr (K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined) {
      const V* q = s + o;
      const V* n = s + o + 3;
      const V ir2 = hn::Mul(ir, ir);
      const V r2 = hn::MulAdd(rx, rx, hn::MulAdd(ry, ry, hn::Mul(rz, rz)));
      // A = -2/r^4 (3 ec + ce (3 + 2 xi^2 r^2)), B = 2 xi^2 ce
      const V three = hn::Set(d, T(3)), two = hn::Set(d, T(2));
      const V A = hn::Mul(hn::Mul(hn::Set(d, T(-2)), hn::Mul(ir2, ir2)),
                          hn::MulAdd(three, ec, hn::Mul(ce, hn::MulAdd(hn::Mul(two, xi2), r2, three))));
      const V B = hn::Mul(hn::Mul(two, xi2), ce);
      const V rq = hn::MulAdd(rx, q[0], hn::MulAdd(ry, q[1], hn::Mul(rz, q[2])));
      const V rn = hn::MulAdd(rx, n[0], hn::MulAdd(ry, n[1], hn::Mul(rz, n[2])));
      const V qn = hn::MulAdd(q[0], n[0], hn::MulAdd(q[1], n[1], hn::Mul(q[2], n[2])));
      V ar = hn::MulAdd(hn::Mul(A, rq), rn, hn::Mul(B, qn));
      const V Brn = hn::Mul(B, rn), Brq = hn::Mul(B, rq);
      if constexpr (K::kernel == Kernel::StokesCombined) {
        // the stokeslet of f joins in: (ec - ce) f, and (ec + ce)(r.f)/r^2 along r added to ar
        const V As = hn::Sub(ec, ce);
        ar = hn::MulAdd(hn::Mul(hn::Add(ec, ce), ir2), hn::MulAdd(rx, s[0], hn::MulAdd(ry, s[1], hn::Mul(rz, s[2]))), ar);
        a[0] = hn::MulAdd(As, s[0], a[0]);
        a[1] = hn::MulAdd(As, s[1], a[1]);
        a[2] = hn::MulAdd(As, s[2], a[2]);
      }
      a[0] = hn::MulAdd(ar, rx, hn::MulAdd(Brn, q[0], hn::MulAdd(Brq, n[0], a[0])));
      a[1] = hn::MulAdd(ar, ry, hn::MulAdd(Brn, q[1], hn::MulAdd(Brq, n[1], a[1])));
      a[2] = hn::MulAdd(ar, rz, hn::MulAdd(Brn, q[2], hn::MulAdd(Brq, n[2], a[2])));
    }
  }
}

// Compaction of up to 8 lanes: for each mask, the indices of its set lanes in ascending order
// followed by the others, 4 bits each. A lane permutation (TableLookupLanes) by these indices,
// computed once per chunk and applied to every array, replaces a Compress per array (Highway's
// 64-bit Compress copies its own 2 KiB table on every call).
struct CompactTable {
  uint32_t p[256];
  constexpr CompactTable() : p{} {
    for (int m = 0; m < 256; ++m) {
      uint32_t v = 0;
      int k = 0;
      for (int i = 0; i < 8; ++i)
        if (m >> i & 1) v |= uint32_t(i) << (4 * k++);
      for (int i = 0; i < 8; ++i)
        if (!(m >> i & 1)) v |= uint32_t(i) << (4 * k++);
      p[m] = v;
    }
  }
};
constexpr CompactTable kCompact{};

template <class D>
HWY_INLINE auto CompactIndices(D d, unsigned bits) {
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  const auto packed = hn::Set(di, static_cast<TI>(kCompact.p[bits]));
  const auto shifts = hn::ShiftLeft<2>(hn::Iota(di, 0));
  return hn::IndicesFromVec(d, hn::And(hn::Shr(packed, shifts), hn::Set(di, TI(7))));
}

// U chunks of Lanes(d) candidates are evaluated in lockstep: the kernel is a chain of dependent
// steps (Newton, Clenshaw, exp), so independent chunks side by side hide its latency.
constexpr int kUnroll = 3;

// The float32 block-local copy of the colleague columns' sources (see CellImpl) and the compacted
// pair buffers, as one argument each.
struct LocalSources {
  const float *xh, *xl, *yh, *yl, *zh, *zl;  // coordinates hi + lo
  const float* val;                           // ns value arrays, cap apart (without gathers)
  const int* g;                               // cell-sorted source index
  const int* start;                           // column c, z-cell z: start[c (nzl + 1) + z - zbase]
  size_t cap;
  int nzl, zbase;
};
struct PairBuffers {
  float *px, *py, *pz, *pr2, *pq;
  size_t cap;
  int* close;  // the block-local indices of the close sources (room for every source tested)
};

// Pass 1 of one target in float32 (CellImpl): per column its z-range [zr[c], zr[colpad + c]]
// (unwrapped cells, one run in the block-local copy), r = (t_hi - s_hi) + (t_lo - s_lo), the pairs
// with close2 <= r^2 < r_c^2 compacted into the buffers and the block-local indices of the closer
// ones into pb.close (nclose of them). Returns the pairs compacted; adds the sources tested to
// ncand. Not inlined and without calls: the loop keeps its pointers and vectors in registers.
template <class K>
HWY_NOINLINE size_t TestF32(const LocalSources ls, const PairBuffers pb, const double* HWY_RESTRICT zr, int colpad,
                            int ncols, const double tloc[3], double close2d, double rc2d, size_t& nclose,
                            size_t& ncand) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const hn::RebindToSigned<decltype(d)> di;
  const size_t N = hn::Lanes(d);
  constexpr int ns = K::n_src;
  constexpr bool kOffsets = !(K::kernel == Kernel::Laplace && !K::field);
  constexpr bool kGather = p2p_gathers<K>();
  const V close2 = hn::Set(d, static_cast<float>(close2d)), rc2 = hn::Set(d, static_cast<float>(rc2d));
  const auto iota_i = hn::Iota(di, 0);
  const auto lane_mask = hn::Set(di, static_cast<int32_t>(N - 1));
  const float fhx = static_cast<float>(tloc[0]), fhy = static_cast<float>(tloc[1]), fhz = static_cast<float>(tloc[2]);
  const V thx = hn::Set(d, fhx), thy = hn::Set(d, fhy), thz = hn::Set(d, fhz);
  const V tlox = hn::Set(d, static_cast<float>(tloc[0] - fhx)), tloy = hn::Set(d, static_cast<float>(tloc[1] - fhy)),
          tloz = hn::Set(d, static_cast<float>(tloc[2] - fhz));
  const float* HWY_RESTRICT lxh = ls.xh;
  const float* HWY_RESTRICT lxl = ls.xl;
  const float* HWY_RESTRICT lyh = ls.yh;
  const float* HWY_RESTRICT lyl = ls.yl;
  const float* HWY_RESTRICT lzh = ls.zh;
  const float* HWY_RESTRICT lzl = ls.zl;
  float* HWY_RESTRICT px = pb.px;
  float* HWY_RESTRICT py = pb.py;
  float* HWY_RESTRICT pz = pb.pz;
  float* HWY_RESTRICT pr2 = pb.pr2;
  float* HWY_RESTRICT pq = pb.pq;
  size_t na = 0, tested = 0, ncl = 0;
  int* HWY_RESTRICT cl = pb.close;
  for (int c = 0; c < ncols; ++c) {
    if (zr[c] > zr[colpad + c]) continue;
    const int z0 = static_cast<int>(zr[c]) - ls.zbase, z1 = static_cast<int>(zr[colpad + c]) - ls.zbase;
    const int* cs = ls.start + size_t(c) * size_t(ls.nzl + 1);
    const size_t l0 = size_t(cs[z0]), l1 = size_t(cs[z1 + 1]);
    tested += l1 - l0;
    for (size_t j = l0; j < l1; j += N) {
      const V rx = hn::Add(hn::Sub(thx, hn::LoadU(d, lxh + j)), hn::Sub(tlox, hn::LoadU(d, lxl + j)));
      const V ry = hn::Add(hn::Sub(thy, hn::LoadU(d, lyh + j)), hn::Sub(tloy, hn::LoadU(d, lyl + j)));
      const V rz = hn::Add(hn::Sub(thz, hn::LoadU(d, lzh + j)), hn::Sub(tloz, hn::LoadU(d, lzl + j)));
      const V r2 = hn::MulAdd(rx, rx, hn::MulAdd(ry, ry, hn::Mul(rz, rz)));
      const auto valid = hn::FirstN(d, l1 - j);
      const auto close = hn::And(valid, hn::Lt(r2, close2));
      const auto in = hn::AndNot(close, hn::And(valid, hn::Lt(r2, rc2)));
      if (HWY_UNLIKELY(!hn::AllFalse(d, close))) {  // the target's own source, or rare
        uint8_t mb[8] = {};
        hn::StoreMaskBits(d, close, mb);
        for (size_t l = 0; l < N; ++l)
          if (mb[l / 8] >> (l % 8) & 1) cl[ncl++] = static_cast<int>(j + l);
      }
      const auto lanes = hn::And(hn::Compress(iota_i, hn::RebindMask(di, in)), lane_mask);
      const auto idx = hn::IndicesFromVec(d, lanes);
      if constexpr (kOffsets) {
        hn::StoreU(hn::TableLookupLanes(rx, idx), d, px + na);
        hn::StoreU(hn::TableLookupLanes(ry, idx), d, py + na);
        hn::StoreU(hn::TableLookupLanes(rz, idx), d, pz + na);
      }
      hn::StoreU(hn::TableLookupLanes(r2, idx), d, pr2 + na);
      if constexpr (kGather) {
        const auto gi = hn::Mul(hn::LoadU(di, ls.g + j), hn::Set(di, static_cast<int32_t>(ns)));
        hn::StoreU(hn::BitCast(d, hn::TableLookupLanes(gi, hn::IndicesFromVec(di, lanes))), d, pq + na);
      } else {
        for (int c2 = 0; c2 < ns; ++c2)
          hn::StoreU(hn::TableLookupLanes(hn::LoadU(d, ls.val + c2 * ls.cap + j), idx), d, pq + c2 * pb.cap + na);
      }
      na += hn::CountTrue(d, in);
    }
  }
  ncand += tested;
  nclose = ncl;
  return na;
}

template <class K, class T>
void CellImpl(const PairBlock<T>& b) {
  // pass 1 (distance test) in float64, N64 lanes (float32: on the block-local hi + lo copy, N
  // lanes); dq: N64 lanes of T for the compacted
  // values; pass 2 in T, N lanes
  const hn::ScalableTag<double> d64;
  using V64 = hn::Vec<decltype(d64)>;
  const size_t N64 = hn::Lanes(d64);
  static_assert(hn::MaxLanes(decltype(d64)()) <= 8, "compaction table covers up to 8 lanes");
  const hn::Rebind<T, decltype(d64)> dq;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t N = hn::Lanes(d);
  constexpr int ns = K::n_src, no = K::n_out, U = kUnroll;
  // the Laplace potential alone needs r^2 only: the offsets are neither stored nor loaded
  constexpr bool kOffsets = !(K::kernel == Kernel::Laplace && !K::field);
  // 3 or more values per source: pass 1 stores the source's index, pass 2 gathers its values
  // from the interleaved copy (one index per pair instead of ns compacted arrays)
  constexpr bool kGather = p2p_gathers<K>();
  const hn::RebindToSigned<decltype(dq)> dqi;  // pass-1 index lanes (as wide as T)
  const hn::RebindToSigned<decltype(d)> di;    // pass-2 index lanes
  using TI = hn::TFromD<decltype(di)>;
  const auto iota_ns = hn::Mul(hn::Iota(dqi, 0), hn::Set(dqi, static_cast<TI>(ns)));
  const ErfcSeries& es = *b.series;
  const V xi = hn::Set(d, b.xi), xi2 = hn::Set(d, b.xi * b.xi);
  const V one = hn::Set(d, T(1)), half = hn::Set(d, T(0.5)), zero = hn::Zero(d);
  const V64 rc2 = hn::Set(d64, b.rc2), co2 = hn::Set(d64, b.coinc2);
  const V tsc = hn::Set(d, static_cast<T>(es.scale)), tsh = hn::Set(d, static_cast<T>(es.shift));
  const V two_sqrtpi = hn::Set(d, static_cast<T>(2.0 / kSqrtPi));
  const T* cf = es.coef<T>();
  const int deg = es.degree;
  V cv[kMaxSeriesDegree + 1];
  for (int k = 0; k <= deg; ++k) cv[k] = hn::Set(d, cf[k]);
  const int edeg = es.exp_degree;
  V inv_fact[kMaxExpDegree + 1];
  {
    double f = 1;
    for (int k = 0; k <= edeg; ++k) {
      if (k > 0) f /= k;
      inv_fact[k] = hn::Set(d, static_cast<T>(f));
    }
  }
  // the compacted pairs of one target: offsets r (3), r^2 and the source values (ns), each an
  // array of `cap` entries (room for the candidates, the full-vector stores past the count and
  // the padding of the last group of U chunks)
  const size_t cap = b.max_candidates + (U + 1) * N + N64;
  constexpr int nval = kGather ? 1 : ns;  // compacted value arrays: the index, or the values
  std::vector<T>& buf = *b.scratch;
  // pair symmetry (PairBlock::rev, float64): the reverse terms scattered into rev's rows, whose
  // offsets (source index x n_out, bits of TI) pass 1 compacts into prv
  T* HWY_RESTRICT rev = b.rev;
  const bool sym = std::is_same_v<T, double> && rev != nullptr;
  const size_t nbuf = 4 + nval + (sym ? 1 : 0);
  if (buf.size() < nbuf * cap) buf.resize(nbuf * cap);
  // locals: the compiler cannot keep fields of b in registers across the buffer stores
  const double* HWY_RESTRICT sx = b.sx;
  const double* HWY_RESTRICT sy = b.sy;
  const double* HWY_RESTRICT sz = b.sz;
  const T* HWY_RESTRICT q = b.q;
  const int* HWY_RESTRICT start = b.cell_start;
  const size_t nsrc = b.ns, qst = b.qstride;
  const int nz = b.nz, Kz = b.Kz;
  const double inv_wz = 1.0 / b.wz, Lz = b.Lz, slack = b.slack, rc2s = b.rc2;
  T* HWY_RESTRICT px = buf.data();
  T* HWY_RESTRICT py = px + cap;
  T* HWY_RESTRICT pz = py + cap;
  T* HWY_RESTRICT pr2 = pz + cap;
  T* HWY_RESTRICT pq = pr2 + cap;  // value c at pq + c * cap; with kGather: the index (bits of TI)
  T* HWY_RESTRICT prv = pq + nval * cap;  // pair symmetry: the source's row offset in rev (bits of TI)
  const T* HWY_RESTRICT qa = b.qa;  // with kGather: the values interleaved, (ns + 1, n_src), last row 0
  const TI zero_row = static_cast<TI>(b.ns * size_t(ns));
  const TI zero_rev = static_cast<TI>(b.ns * size_t(no));  // the padding's row of rev
  // per target: the z-cell range [zr[c], zr[colpad + c]] of each column (empty: lo > hi)
  const int colpad = (b.ncols + int(N64) - 1) / int(N64) * int(N64);
  std::vector<double>& zbuf = *b.zscratch;
  if (zbuf.size() < 2 * size_t(colpad)) zbuf.resize(2 * size_t(colpad));
  double* HWY_RESTRICT zr = zbuf.data();
  // float32: the sources of every column's z-cells [zbase, zbase + nzl) (unwrapped, every image)
  // copied into block-local coordinates as float32 hi + lo (PairBlock); cell z of column c starts
  // at lst[c * (nzl + 1) + z - zbase]; lg: the cell-sorted index of each copied source
  constexpr bool kLocal = std::is_same_v<T, float>;
  const float *lxh = nullptr, *lxl = nullptr, *lyh = nullptr, *lyl = nullptr, *lzh = nullptr, *lzl = nullptr;
  const float* lval = nullptr;  // ns value arrays (without kGather), lcap apart
  const int *lst = nullptr, *lg = nullptr;
  int* closeidx = nullptr;  // float32: the block-local indices of one target's close sources
  int zbase = 0, nzl = 0;
  size_t lcap = 0;
  double ox = 0, oy = 0, oz = 0;
  if constexpr (kLocal) {
    int kmin = b.tk[0], kmax = b.tk[0];
    for (size_t t = 1; t < b.nt; ++t) {
      kmin = std::min(kmin, b.tk[t]);
      kmax = std::max(kmax, b.tk[t]);
    }
    zbase = kmin - Kz;
    nzl = kmax - kmin + 2 * Kz + 1;
    ox = b.tx[0];
    oy = b.ty[0];
    oz = b.tz[0];
    std::vector<int>& iv = *b.iscratch;
    const size_t nst = size_t(b.ncols) * size_t(nzl + 1);
    iv.resize(nst);
    size_t tot = 0;
    for (int c = 0; c < b.ncols; ++c)
      for (int z = 0; z <= nzl; ++z) {
        iv[size_t(c) * size_t(nzl + 1) + size_t(z)] = static_cast<int>(tot);
        if (z == nzl) break;
        const int cz = zbase + z;
        const int kk = cz - floor_div(cz, nz) * nz;
        tot += size_t(start[b.cols[c].base + kk + 1] - start[b.cols[c].base + kk]);
      }
    lcap = tot + 2 * N64 + N;  // room for the full-vector stores of the copy and the reads past the end
    iv.resize(nst + lcap + b.max_candidates + N);  // + the close sources of one target
    constexpr int nlv = kGather ? 0 : ns;
    std::vector<float>& lv = *b.lscratch;
    if (lv.size() < (6 + nlv) * lcap) lv.resize((6 + nlv) * lcap);
    float* HWY_RESTRICT wxh = lv.data();
    float* HWY_RESTRICT wxl = wxh + lcap;
    float* HWY_RESTRICT wyh = wxl + lcap;
    float* HWY_RESTRICT wyl = wyh + lcap;
    float* HWY_RESTRICT wzh = wyl + lcap;
    float* HWY_RESTRICT wzl = wzh + lcap;
    float* HWY_RESTRICT wv = wzl + lcap;
    int* HWY_RESTRICT wg = iv.data() + nst;
    for (int c = 0; c < b.ncols; ++c) {
      const PairColumn& col = b.cols[c];
      const V64 shx = hn::Set(d64, col.sx - ox), shy = hn::Set(d64, col.sy - oy);
      for (int z = 0; z < nzl;) {  // consecutive z-cells of one periodic image: one run
        const int cz = zbase + z;
        const int imz = floor_div(cz, nz);
        const int kk = cz - imz * nz;
        const int zend = std::min(nzl - 1, (imz + 1) * nz - 1 - zbase);
        const size_t s0 = size_t(start[col.base + kk]), s1 = size_t(start[col.base + kk + (zend - z) + 1]);
        const size_t o0 = size_t(iv[size_t(c) * size_t(nzl + 1) + size_t(z)]);
        z = zend + 1;
        const V64 shz = hn::Set(d64, imz * Lz - oz);
        size_t o = o0;
        for (size_t j = s0; j < s1; j += N64, o += N64) {
          V64 vx, vy, vz;
          if (HWY_LIKELY(j + N64 <= nsrc)) {
            vx = hn::LoadU(d64, sx + j);
            vy = hn::LoadU(d64, sy + j);
            vz = hn::LoadU(d64, sz + j);
          } else {  // the end of the source arrays: copy the lanes that exist
            HWY_ALIGN double cx[8] = {}, cy[8] = {}, cz8[8] = {};
            for (size_t l = 0; j + l < nsrc; ++l) {
              cx[l] = sx[j + l];
              cy[l] = sy[j + l];
              cz8[l] = sz[j + l];
            }
            vx = hn::Load(d64, cx);
            vy = hn::Load(d64, cy);
            vz = hn::Load(d64, cz8);
          }
          auto split = [&](V64 v, float* h, float* l) {
            const auto vh = hn::DemoteTo(dq, v);
            hn::StoreU(vh, dq, h + o);
            hn::StoreU(hn::DemoteTo(dq, hn::Sub(v, hn::PromoteTo(d64, vh))), dq, l + o);
          };
          split(hn::Add(vx, shx), wxh, wxl);
          split(hn::Add(vy, shy), wyh, wyl);
          split(hn::Add(vz, shz), wzh, wzl);
        }
        for (size_t j = s0; j < s1; ++j) wg[o0 + (j - s0)] = static_cast<int>(j);
        if constexpr (!kGather)
          for (int c2 = 0; c2 < ns; ++c2) std::memcpy(wv + c2 * lcap + o0, q + c2 * qst + s0, (s1 - s0) * sizeof(float));
      }
    }
    // the entries past the last source: finite (read by masked lanes)
    for (size_t k = tot; k < lcap; ++k) {
      wxh[k] = wxl[k] = wyh[k] = wyl[k] = wzh[k] = wzl[k] = 0.0f;
      wg[k] = 0;
      if constexpr (!kGather)
        for (int c2 = 0; c2 < ns; ++c2) wv[c2 * lcap + k] = 0.0f;
    }
    lxh = wxh; lxl = wxl; lyh = wyh; lyl = wyl; lzh = wzh; lzl = wzl; lval = wv;
    lst = iv.data();
    lg = wg;
    closeidx = wg + lcap;
  }
  std::vector<ClosePair>& closev = *b.close;
  for (size_t t = 0; t < b.nt; ++t) {
    const double ttx = b.tx[t], tty = b.ty[t], ttz = b.tz[t];
    const int kz = b.tk[t];
    const size_t tg = b.t_first + t;  // the target's sorted index (pair symmetry)
    // Pass 1 (distance test) over the runs: r = (target - shift) - source in float64, and the
    // pairs with coincidence <= r < r_c compacted into the buffers (one lane permutation per
    // chunk, applied to every array; no branch on the outcome), so that pass 2 evaluates the
    // kernel on full vectors only.
    size_t na = 0, ncand = 0;
    // the z-cells the sphere reaches in each column, N64 columns at a time: the (x, y) distance g
    // from the target to the column, h = sqrt(r_c^2 - g^2), the z-cell range of [t_z - h, t_z + h]
    // clamped to the reach in float64 before the conversion (thin boxes: (t +- h)/w can exceed
    // int's range); columns out of reach get an empty range
    {
      const V64 vtx = hn::Set(d64, ttx), vty = hn::Set(d64, tty), vtz = hn::Set(d64, ttz);
      const V64 zlo = hn::Set(d64, double(kz - Kz)), zhi = hn::Set(d64, double(kz + Kz));
      const V64 vinv = hn::Set(d64, inv_wz), vsl = hn::Set(d64, slack), vrc2 = hn::Set(d64, rc2s), z64 = hn::Zero(d64);
      for (int c = 0; c < b.ncols; c += int(N64)) {
        const V64 gx = hn::Max(hn::Max(hn::Sub(hn::LoadU(d64, b.colx0 + c), vtx), hn::Sub(vtx, hn::LoadU(d64, b.colx1 + c))), z64);
        const V64 gy = hn::Max(hn::Max(hn::Sub(hn::LoadU(d64, b.coly0 + c), vty), hn::Sub(vty, hn::LoadU(d64, b.coly1 + c))), z64);
        const V64 g2 = hn::MulAdd(gx, gx, hn::Mul(gy, gy));
        const V64 h = hn::Add(hn::Sqrt(hn::Max(hn::Sub(vrc2, g2), z64)), vsl);
        const V64 lo = hn::Max(zlo, hn::Floor(hn::Mul(hn::Sub(vtz, h), vinv)));
        const V64 hi = hn::Min(zhi, hn::Floor(hn::Mul(hn::Add(vtz, h), vinv)));
        const auto out = hn::Ge(g2, vrc2);
        hn::StoreU(hn::IfThenElse(out, hn::Set(d64, 1.0), lo), d64, zr + c);
        hn::StoreU(hn::IfThenElse(out, hn::Set(d64, 0.0), hi), d64, zr + colpad + c);
      }
    }
    if constexpr (kLocal) {
      const LocalSources ls{lxh, lxl, lyh, lyl, lzh, lzl, lval, lg, lst, lcap, nzl, zbase};
      const PairBuffers pbuf{px, py, pz, pr2, pq, cap, closeidx};
      const double tloc[3] = {ttx - ox, tty - oy, ttz - oz};
      size_t nclose = 0;
      na = TestF32<K>(ls, pbuf, zr, colpad, b.ncols, tloc, b.close2, b.rc2, nclose, ncand);
      for (size_t i = 0; i < nclose; ++i) {
        const size_t k = size_t(closeidx[i]);
        closev.push_back({t, size_t(lg[k]), tloc[0] - (double(lxh[k]) + double(lxl[k])),
                          tloc[1] - (double(lyh[k]) + double(lyl[k])), tloc[2] - (double(lzh[k]) + double(lzl[k]))});
      }
    } else {
    for (int c = 0; c < b.ncols; ++c) {
      if (zr[c] > zr[colpad + c]) continue;
      const int z0 = static_cast<int>(zr[c]), z1 = static_cast<int>(zr[colpad + c]);
      const PairColumn& col = b.cols[c];
      const V64 tx = hn::Set(d64, ttx - col.sx), ty = hn::Set(d64, tty - col.sy);
      for (int cz = z0; cz <= z1;) {  // consecutive z-cells of one periodic image form one run
        const int imz = cz >= 0 && cz < nz ? 0 : floor_div(cz, nz);
        const int end = std::min(z1, (imz + 1) * nz - 1);
        const int kk = cz - imz * nz;
        size_t s0 = size_t(start[col.base + kk]);
        const size_t s1 = size_t(start[col.base + kk + (end - cz) + 1]);
        cz = end + 1;
        if (sym) {  // the sources from the target's own sorted index on
          s0 = std::max(s0, tg);
          if (s0 >= s1) continue;
        }
        ncand += s1 - s0;
        const V64 tz = hn::Set(d64, ttz - imz * Lz);
        for (size_t j = s0; j < s1; j += N64) {
          V64 rx, ry, rz;
          if (HWY_LIKELY(j + N64 <= nsrc)) {
            rx = hn::Sub(tx, hn::LoadU(d64, sx + j));
            ry = hn::Sub(ty, hn::LoadU(d64, sy + j));
            rz = hn::Sub(tz, hn::LoadU(d64, sz + j));
          } else {  // the end of the source arrays: copy the lanes that exist
            HWY_ALIGN double cx[8] = {}, cy[8] = {}, cz8[8] = {};
            for (size_t l = 0; j + l < nsrc; ++l) {
              cx[l] = sx[j + l];
              cy[l] = sy[j + l];
              cz8[l] = sz[j + l];
            }
            rx = hn::Sub(tx, hn::Load(d64, cx));
            ry = hn::Sub(ty, hn::Load(d64, cy));
            rz = hn::Sub(tz, hn::Load(d64, cz8));
          }
          const V64 r2 = hn::MulAdd(rx, rx, hn::MulAdd(ry, ry, hn::Mul(rz, rz)));
          const auto valid = hn::FirstN(d64, s1 - j);
          const auto close = hn::And(valid, hn::Lt(r2, co2));
          const auto in = hn::AndNot(close, hn::And(valid, hn::Lt(r2, rc2)));
          if (HWY_UNLIKELY(!hn::AllFalse(d64, close))) {  // the target's own source, or rare
            HWY_ALIGN double ax[8], ay[8], az[8];
            hn::Store(rx, d64, ax);
            hn::Store(ry, d64, ay);
            hn::Store(rz, d64, az);
            uint8_t mc[8] = {};
            hn::StoreMaskBits(d64, close, mc);
            for (size_t l = 0; l < N64; ++l)
              if (mc[0] >> l & 1) closev.push_back({t, j + l, ax[l], ay[l], az[l]});
          }
          uint8_t mb[8] = {};
          hn::StoreMaskBits(d64, in, mb);
          const auto idx = CompactIndices(dq, mb[0]);
          if constexpr (kOffsets) {
            hn::StoreU(hn::TableLookupLanes(rx, idx), dq, px + na);
            hn::StoreU(hn::TableLookupLanes(ry, idx), dq, py + na);
            hn::StoreU(hn::TableLookupLanes(rz, idx), dq, pz + na);
          }
          hn::StoreU(hn::TableLookupLanes(r2, idx), dq, pr2 + na);
          if constexpr (kGather) {
            const auto gi = hn::Add(hn::Set(dqi, static_cast<TI>(j * size_t(ns))), iota_ns);
            hn::StoreU(hn::BitCast(dq, hn::TableLookupLanes(gi, CompactIndices(dqi, mb[0]))), dq, pq + na);
          } else {
            for (int c2 = 0; c2 < ns; ++c2)
              hn::StoreU(hn::TableLookupLanes(hn::LoadU(dq, q + c2 * qst + j), idx), dq, pq + c2 * cap + na);
          }
          if (sym) {
            const auto ri = hn::Mul(hn::Add(hn::Set(dqi, static_cast<TI>(j)), hn::Iota(dqi, 0)), hn::Set(dqi, static_cast<TI>(no)));
            hn::StoreU(hn::BitCast(dq, hn::TableLookupLanes(ri, CompactIndices(dqi, mb[0]))), dq, prv + na);
          }
          na += size_t(hwy::PopCount(mb[0]));
        }
      }
    }
    }
    // pad to whole chunks: zero offsets and values at r = r_c (every kernel term is finite there
    // and multiplied by a zero offset or value)
    const size_t nau = (na + N - 1) / N * N;
    for (size_t k = na; k < nau; ++k) {
      px[k] = py[k] = pz[k] = T(0);
      pr2[k] = static_cast<T>(b.rc2);
      if constexpr (kGather) std::memcpy(pq + k, &zero_row, sizeof(T));  // the row of zeros
      else for (int c = 0; c < ns; ++c) pq[c * cap + k] = T(0);
      if (sym) std::memcpy(prv + k, &zero_rev, sizeof(T));
    }
    // Pass 2: the kernel on the compacted pairs, UU chunks in lockstep (U, then the last 1 or 2)
    V acc[4] = {zero, zero, zero, zero};
    V st[ns];  // pair symmetry: the target's own values (the sources of the reverse terms)
    for (int c = 0; c < ns; ++c) {
      if (!sym) st[c] = zero;
      else if constexpr (kGather) st[c] = hn::Set(d, qa[tg * size_t(ns) + size_t(c)]);
      else st[c] = hn::Set(d, q[size_t(c) * qst + tg]);
    }
    // the reverse term at -r from the target's values, added to the source's row of rev
    auto reverse = [&](V ec, V ce, V ir, V rx, V ry, V rz, size_t j) {
      V ra[4] = {zero, zero, zero, zero};
      RealSpace<K>(d, ec, ce, ir, xi2, hn::Neg(rx), hn::Neg(ry), hn::Neg(rz), st, ra);
      const auto ri = hn::BitCast(di, hn::LoadU(d, prv + j));
      for (int c = 0; c < no; ++c) hn::ScatterIndex(hn::Add(hn::GatherIndex(d, rev + c, ri), ra[c]), d, rev + c, ri);
    };
    auto group = [&]<int UU>(size_t k) {
      V ir[UU], x[UU], u[UU], u2[UU], b1[UU], b2[UU];
#pragma GCC unroll 8
      for (int v = 0; v < UU; ++v) {
        const V r2 = hn::LoadU(d, pr2 + k + v * N);
        ir[v] = InvSqrt(d, r2);
        x[v] = hn::Mul(xi, hn::Mul(r2, ir[v]));  // xi r
        // erfcx(x) = sum_k c_k T_k(u), u = scale t + shift, t = 1/(1 + x/2): Clenshaw
        u[v] = hn::MulAdd(tsc, Inv(d, hn::MulAdd(half, x[v], one)), tsh);
        b1[v] = zero;
        b2[v] = zero;
      }
      // b_k = 2u b_{k+1} - b_{k+2} + c_k as one FMA on the critical path ((c_k - b_{k+2}) is
      // ready a step early), two steps per iteration so that b1 and b2 swap roles without moves
#pragma GCC unroll 8
      for (int v = 0; v < UU; ++v) u2[v] = hn::Add(u[v], u[v]);
      int kk = deg;
      for (; kk >= 2; kk -= 2) {
        const V c1 = cv[kk], c0 = cv[kk - 1];
#pragma GCC unroll 8
        for (int v = 0; v < UU; ++v) {
          b2[v] = hn::MulAdd(u2[v], b1[v], hn::Sub(c1, b2[v]));  // b_kk
          b1[v] = hn::MulAdd(u2[v], b2[v], hn::Sub(c0, b1[v]));  // b_{kk-1}
        }
      }
      if (kk == 1) {
#pragma GCC unroll 8
        for (int v = 0; v < UU; ++v) {
          const V bk = hn::MulAdd(u2[v], b1[v], hn::Sub(cv[1], b2[v]));
          b2[v] = b1[v];
          b1[v] = bk;
        }
      }
#pragma GCC unroll 8
      for (int v = 0; v < UU; ++v) {
        const size_t j = k + v * N;
        const V erfcx = hn::Add(hn::MulSub(u[v], b1[v], b2[v]), cv[0]);
        const V e = ExpNeg(d, hn::Neg(hn::Mul(x[v], x[v])), inv_fact, edeg);
        const V ec = hn::Mul(hn::Mul(e, erfcx), ir[v]);        // erfc(xi r) / r
        const V ce = hn::Mul(xi, hn::Mul(two_sqrtpi, e));      // (2 xi / sqrt(pi)) e^{-xi^2 r^2}
        V s[ns];
        if constexpr (kGather) {
          const auto gi = hn::BitCast(di, hn::LoadU(d, pq + j));
          for (int c = 0; c < ns; ++c) s[c] = hn::GatherIndex(d, qa + c, gi);
        } else {
          for (int c = 0; c < ns; ++c) s[c] = hn::LoadU(d, pq + c * cap + j);
        }
        if constexpr (kOffsets) {
          const V rx = hn::LoadU(d, px + j), ry = hn::LoadU(d, py + j), rz = hn::LoadU(d, pz + j);
          RealSpace<K>(d, ec, ce, ir[v], xi2, rx, ry, rz, s, acc);
          if (sym) reverse(ec, ce, ir[v], rx, ry, rz, j);
        } else {
          RealSpace<K>(d, ec, ce, ir[v], xi2, zero, zero, zero, s, acc);
          if (sym) reverse(ec, ce, ir[v], zero, zero, zero, j);
        }
      }
    };
    const size_t nfull = na / (U * N) * (U * N);
    for (size_t k = 0; k < nfull; k += U * N) group.template operator()<U>(k);
    size_t k = nfull;
    for (; k + 2 * N <= nau; k += 2 * N) group.template operator()<2>(k);
    if (k < nau) group.template operator()<1>(k);
    for (int c = 0; c < no; ++c) b.out[t * no + c] += hn::GetLane(hn::SumOfLanes(d, acc[c]));
    b.counts[0] += ncand;
    b.counts[1] += na;
  }
}

#define ELLIPTICA_P2P_CELL(NAME, K, T) \
  void NAME(const PairBlock<T>& b) { CellImpl<K, T>(b); }
ELLIPTICA_P2P_CELL(CellLaplaceF64, LaplaceTraits, double)
ELLIPTICA_P2P_CELL(CellFieldF64, LaplaceFieldTraits, double)
ELLIPTICA_P2P_CELL(CellStokesletF64, StokesletTraits, double)
ELLIPTICA_P2P_CELL(CellPressureF64, StokesletPressureTraits, double)
ELLIPTICA_P2P_CELL(CellPressureF32, StokesletPressureTraits, float)
ELLIPTICA_P2P_CELL(CellStressletF64, StressletTraits, double)
ELLIPTICA_P2P_CELL(CellCombinedF64, StokesCombinedTraits, double)
ELLIPTICA_P2P_CELL(CellLaplaceF32, LaplaceTraits, float)
ELLIPTICA_P2P_CELL(CellFieldF32, LaplaceFieldTraits, float)
ELLIPTICA_P2P_CELL(CellStokesletF32, StokesletTraits, float)
ELLIPTICA_P2P_CELL(CellStressletF32, StressletTraits, float)
ELLIPTICA_P2P_CELL(CellCombinedF32, StokesCombinedTraits, float)

}  // namespace elliptica::ewald::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace elliptica::ewald::detail {

HWY_EXPORT(CellLaplaceF64);
HWY_EXPORT(CellFieldF64);
HWY_EXPORT(CellStokesletF64);
HWY_EXPORT(CellPressureF64);
HWY_EXPORT(CellPressureF32);
HWY_EXPORT(CellStressletF64);
HWY_EXPORT(CellCombinedF64);
HWY_EXPORT(CellLaplaceF32);
HWY_EXPORT(CellFieldF32);
HWY_EXPORT(CellStokesletF32);
HWY_EXPORT(CellStressletF32);
HWY_EXPORT(CellCombinedF32);

template <class K, class T>
void p2p_cell(const PairBlock<T>& b) {
  constexpr bool f = std::is_same_v<T, float>;
  if constexpr (K::kernel == Kernel::Laplace && !K::field) {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellLaplaceF32)(b); else HWY_DYNAMIC_DISPATCH(CellLaplaceF64)(b);
  } else if constexpr (K::kernel == Kernel::Laplace) {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellFieldF32)(b); else HWY_DYNAMIC_DISPATCH(CellFieldF64)(b);
  } else if constexpr (K::kernel == Kernel::Stokeslet && K::field) {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellPressureF32)(b); else HWY_DYNAMIC_DISPATCH(CellPressureF64)(b);
  } else if constexpr (K::kernel == Kernel::Stokeslet) {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellStokesletF32)(b); else HWY_DYNAMIC_DISPATCH(CellStokesletF64)(b);
  } else if constexpr (K::kernel == Kernel::Stresslet) {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellStressletF32)(b); else HWY_DYNAMIC_DISPATCH(CellStressletF64)(b);
  } else {
    if constexpr (f) HWY_DYNAMIC_DISPATCH(CellCombinedF32)(b); else HWY_DYNAMIC_DISPATCH(CellCombinedF64)(b);
  }
}

std::string simd_target() {
  const int64_t t = hwy::SupportedTargets() & HWY_TARGETS;  // lower bit = better target
  return t ? hwy::TargetName(t & -t) : "none";
}

#define ELLIPTICA_P2P_CELL_INST(K)                     \
  template void p2p_cell<K, float>(const PairBlock<float>&); \
  template void p2p_cell<K, double>(const PairBlock<double>&);
ELLIPTICA_P2P_CELL_INST(LaplaceTraits)
ELLIPTICA_P2P_CELL_INST(LaplaceFieldTraits)
ELLIPTICA_P2P_CELL_INST(StokesletTraits)
ELLIPTICA_P2P_CELL_INST(StokesletPressureTraits)
ELLIPTICA_P2P_CELL_INST(StressletTraits)
ELLIPTICA_P2P_CELL_INST(StokesCombinedTraits)

}  // namespace elliptica::ewald::detail
#endif
