#pragma once
// Interface of the SIMD P2P inner loops (p2p_simd.cpp, Google Highway with run-time dispatch).
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald::detail {

/// erfcx(x) = exp(x^2) erfc(x) on [0, X] as a Chebyshev series in u = scale t + shift in [-1, 1],
/// t = 1/(1 + x/2) in [1/(1 + X/2), 1]; the degree is the smallest whose maximal relative error
/// is below the target (at most 28; the fit's own floor is ~1e-14).
struct ErfcSeries {
  int degree = 0;
  double scale = 1, shift = 0, max_rel_error = 0;
  std::vector<double> cd;  // coefficients c_0 .. c_degree
  std::vector<float> cf;
  ErfcSeries() = default;
  ErfcSeries(double X, double target);
  template <class T>
  const T* coef() const {
    if constexpr (std::is_same_v<T, float>) return cf.data();
    else return cd.data();
  }
  /// Scalar evaluation (Clenshaw), for tests and the scalar reference.
  double erfcx(double x) const;
};

/// The candidates of one target cell and its targets (offsets from the cell's corner, in T).
template <class T>
struct PairBlock {
  // candidates, padded to a multiple of kPairPad with at least kPairPad far-away points (the
  // last chunk of the SIMD width is all padding)
  const T *cx = nullptr, *cy = nullptr, *cz = nullptr;
  const T* q[kMaxPairValues] = {};                      // n_src value arrays of the candidates
  std::size_t nc = 0;                                   // candidates (padded count)
  const T *tx = nullptr, *ty = nullptr, *tz = nullptr;  // targets
  std::size_t nt = 0;
  // float32 only: the rounding remainders of the offsets (c = hi + lo, c - hi rounded to T), so
  // that r = (t_hi - c_hi) + (t_lo - c_lo) is accurate to T's rounding of r itself (t_hi - c_hi
  // is exact for close pairs, Sterbenz) rather than of the offsets, ~r_c: the stresslet's 1/r^2
  // would otherwise amplify it for close pairs by r_c / r.
  const T *cxl = nullptr, *cyl = nullptr, *czl = nullptr, *txl = nullptr, *tyl = nullptr, *tzl = nullptr;
  T xi = 0, rc2 = 0, coinc2 = 0;
  const ErfcSeries* series = nullptr;
  T* out = nullptr;  // (nt, n_out), added to
  std::size_t* ncoinc = nullptr;  // (nt): candidates closer than the coincidence distance, added to
  std::vector<std::size_t>* scratch = nullptr;  // per-thread work list of the SIMD loop
};

/// Adds the real-space sums over the candidates with coincidence <= r < r_c to b.out.
template <class K, class T>
void p2p_cell(const PairBlock<T>& b);

/// Name of the instruction set the dispatch chose on this CPU (e.g. "AVX3" = AVX-512, "AVX2").
std::string simd_target();

/// SIMD width the candidate arrays are padded to (the largest any target uses, in elements).
inline constexpr std::size_t kPairPad = 16;

}  // namespace elliptica::ewald::detail
