// P2P inner loops in explicit SIMD (Google Highway, Debian libhwy-dev), compiled for every x86
// target Highway knows (SSE4, AVX2, AVX-512, ...) and dispatched at run time to the best one the
// CPU has (HWY_DYNAMIC_DISPATCH): the machines this runs on vary between AVX2 and AVX-512.
// Highway rather than xsimd: Debian's xsimd 8.1 fixes the instruction set at compile time, so
// run-time dispatch would need a hand-made multi-compilation; Highway's foreach_target does that.
//
// One call evaluates every target of a target cell against the candidate sources of the cell's
// colleague cells (structure of arrays, offsets from the cell's corner in T): per target, the
// kernel over all candidates, Lanes(d) at a time, with the pairs outside coincidence <= r < r_c
// masked out (no compaction: it is branch- and gather-free; the cell width r_c/2 of the
// near-field list keeps ~27% of the candidates within r_c).
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

#include <vector>

#include "ewald/cpu/p2p_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace elliptica::ewald::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 1/sqrt(a) and 1/a: the hardware approximation (float) refined by Newton steps (2 for float,
// 3 for double from the float estimate: 12 -> 24 -> 48 -> 96 bits).
template <class D, class V>
HWY_INLINE V InvSqrt(D d, V a) {
  using T = hn::TFromD<D>;
  V y;
  if constexpr (sizeof(T) == 4) {
    y = hn::ApproximateReciprocalSqrt(a);
  } else {
    const hn::Rebind<float, D> df;
    y = hn::PromoteTo(d, hn::ApproximateReciprocalSqrt(hn::DemoteTo(df, a)));
  }
  const V half = hn::Set(d, T(0.5)), three_half = hn::Set(d, T(1.5));
  const V ha = hn::Mul(half, a);
  constexpr int steps = sizeof(T) == 4 ? 2 : 3;
  for (int i = 0; i < steps; ++i) y = hn::Mul(y, hn::NegMulAdd(ha, hn::Mul(y, y), three_half));
  return y;
}

template <class D, class V>
HWY_INLINE V Inv(D d, V a) {
  using T = hn::TFromD<D>;
  V y;
  if constexpr (sizeof(T) == 4) {
    y = hn::ApproximateReciprocal(a);
  } else {
    const hn::Rebind<float, D> df;
    y = hn::PromoteTo(d, hn::ApproximateReciprocal(hn::DemoteTo(df, a)));
  }
  const V two = hn::Set(d, T(2));
  constexpr int steps = sizeof(T) == 4 ? 2 : 3;
  for (int i = 0; i < steps; ++i) y = hn::Mul(y, hn::NegMulAdd(a, y, two));
  return y;
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
    if constexpr (K::kernel == Kernel::Stokeslet || K::kernel == Kernel::StokesCombined) {
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
      const V ar = hn::MulAdd(hn::Mul(A, rq), rn, hn::Mul(B, qn));
      const V Brn = hn::Mul(B, rn), Brq = hn::Mul(B, rq);
      a[0] = hn::MulAdd(ar, rx, hn::MulAdd(Brn, q[0], hn::MulAdd(Brq, n[0], a[0])));
      a[1] = hn::MulAdd(ar, ry, hn::MulAdd(Brn, q[1], hn::MulAdd(Brq, n[1], a[1])));
      a[2] = hn::MulAdd(ar, rz, hn::MulAdd(Brn, q[2], hn::MulAdd(Brq, n[2], a[2])));
    }
  }
}

// U chunks of Lanes(d) candidates are evaluated in lockstep: the kernel is a chain of dependent
// steps (Newton, Clenshaw, exp), so independent chunks side by side hide its latency.
constexpr int kUnroll = 3;

template <class K, class T>
void CellImpl(const PairBlock<T>& b) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t N = hn::Lanes(d);
  constexpr int ns = K::n_src, no = K::n_out, U = kUnroll;
  const ErfcSeries& es = *b.series;
  const V xi = hn::Set(d, b.xi), xi2 = hn::Set(d, b.xi * b.xi), rc2 = hn::Set(d, b.rc2), co2 = hn::Set(d, b.coinc2);
  const V one = hn::Set(d, T(1)), half = hn::Set(d, T(0.5)), zero = hn::Zero(d);
  const V tsc = hn::Set(d, static_cast<T>(es.scale)), tsh = hn::Set(d, static_cast<T>(es.shift));
  const V two_sqrtpi = hn::Set(d, static_cast<T>(2.0 / kSqrtPi));
  const T* cf = es.coef<T>();
  const int deg = es.degree;
  // chunks with at least one candidate within r_c, for the current target
  std::vector<size_t>& active = *b.scratch;
  active.resize(b.nc / N + U);
  for (size_t t = 0; t < b.nt; ++t) {
    const V tx = hn::Set(d, b.tx[t]), ty = hn::Set(d, b.ty[t]), tz = hn::Set(d, b.tz[t]);
    const bool lo = b.cxl != nullptr;
    const V txl = lo ? hn::Set(d, b.txl[t]) : zero, tyl = lo ? hn::Set(d, b.tyl[t]) : zero,
            tzl = lo ? hn::Set(d, b.tzl[t]) : zero;
    // r = target - candidate, with the remainders in float32
    auto offset = [&](size_t j, V& rx, V& ry, V& rz) {
      rx = hn::Sub(tx, hn::LoadU(d, b.cx + j));
      ry = hn::Sub(ty, hn::LoadU(d, b.cy + j));
      rz = hn::Sub(tz, hn::LoadU(d, b.cz + j));
      if (lo) {
        rx = hn::Add(rx, hn::Sub(txl, hn::LoadU(d, b.cxl + j)));
        ry = hn::Add(ry, hn::Sub(tyl, hn::LoadU(d, b.cyl + j)));
        rz = hn::Add(rz, hn::Sub(tzl, hn::LoadU(d, b.czl + j)));
      }
    };
    size_t na = 0, nco = 0;
    for (size_t j = 0; j < b.nc; j += N) {  // nc is padded to a multiple of N with far-away points
      V rx, ry, rz;
      offset(j, rx, ry, rz);
      const V r2 = hn::MulAdd(rx, rx, hn::MulAdd(ry, ry, hn::Mul(rz, rz)));
      nco += hn::CountTrue(d, hn::Lt(r2, co2));
      active[na] = j;
      na += !hn::AllFalse(d, hn::Lt(r2, rc2));
    }
    // pad the active list to a multiple of U with the last padding chunk (all lanes outside)
    const size_t pad_chunk = b.nc - N;
    const size_t nau = (na + U - 1) / U * U;
    for (size_t k = na; k < nau; ++k) active[k] = pad_chunk;
    V acc[4] = {zero, zero, zero, zero};
    for (size_t k = 0; k < nau; k += U) {
      V rx[U], ry[U], rz[U], ir[U], x[U], u[U], b1[U], b2[U];
      hn::Mask<decltype(d)> in[U];
      for (int v = 0; v < U; ++v) {
        const size_t j = active[k + v];
        offset(j, rx[v], ry[v], rz[v]);
        const V r2 = hn::MulAdd(rx[v], rx[v], hn::MulAdd(ry[v], ry[v], hn::Mul(rz[v], rz[v])));
        in[v] = hn::And(hn::Lt(r2, rc2), hn::Ge(r2, co2));
        const V r2s = hn::IfThenElse(in[v], r2, one);
        // lanes outside: offsets zero, so that no kernel term overflows (the padding is 1e18 away:
        // xi^2 r^2 is beyond float's range) and 0 * inf never makes a NaN
        rx[v] = hn::IfThenElseZero(in[v], rx[v]);
        ry[v] = hn::IfThenElseZero(in[v], ry[v]);
        rz[v] = hn::IfThenElseZero(in[v], rz[v]);
        ir[v] = InvSqrt(d, r2s);
        x[v] = hn::Mul(xi, hn::Mul(r2s, ir[v]));  // xi r
        // erfcx(x) = sum_k c_k T_k(u), u = scale t + shift, t = 1/(1 + x/2): Clenshaw
        u[v] = hn::MulAdd(tsc, Inv(d, hn::MulAdd(half, x[v], one)), tsh);
        b1[v] = zero;
        b2[v] = zero;
      }
      for (int kk = deg; kk >= 1; --kk) {
        const V c = hn::Set(d, cf[kk]);
        for (int v = 0; v < U; ++v) {
          const V bk = hn::Add(hn::MulSub(hn::Add(u[v], u[v]), b1[v], b2[v]), c);
          b2[v] = b1[v];
          b1[v] = bk;
        }
      }
      for (int v = 0; v < U; ++v) {
        const size_t j = active[k + v];
        const V erfcx = hn::Add(hn::MulSub(u[v], b1[v], b2[v]), hn::Set(d, cf[0]));
        const V e = hn::Exp(d, hn::Neg(hn::Mul(x[v], x[v])));
        const V ec = hn::Mul(hn::Mul(e, erfcx), ir[v]);        // erfc(xi r) / r
        const V ce = hn::Mul(xi, hn::Mul(two_sqrtpi, e));      // (2 xi / sqrt(pi)) e^{-xi^2 r^2}
        V s[ns];
        for (int c = 0; c < ns; ++c) s[c] = hn::IfThenElseZero(in[v], hn::LoadU(d, b.q[c] + j));
        RealSpace<K>(d, ec, ce, ir[v], xi2, rx[v], ry[v], rz[v], s, acc);
      }
    }
    for (int c = 0; c < no; ++c) b.out[t * no + c] += hn::GetLane(hn::SumOfLanes(d, acc[c]));
    b.ncoinc[t] += nco;
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
