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
/// is below the target (at most kMaxSeriesDegree = 28; the fit's own floor is ~1e-14).
inline constexpr int kMaxSeriesDegree = 28;
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

/// A run of consecutive sources (in cell-sorted order) [s0, s1) that may hold sources within r_c
/// of a target, with the periodic shift (sx, sy, sz) added to their coordinates.
struct PairRun {
  int s0 = 0, s1 = 0;
  double sx = 0, sy = 0, sz = 0;
};

/// The targets of one target cell with their source runs. Offsets r = target - (source + shift)
/// are formed in float64 and rounded to T (float32: the pair's error is the rounding of r, not
/// of the coordinates).
template <class T>
struct PairBlock {
  const double *sx = nullptr, *sy = nullptr, *sz = nullptr;  // all sources, cell-sorted
  std::size_t ns = 0;                                         // number of sources
  const T* q = nullptr;    // n_src value arrays (cell-sorted): value c of source s at q[c * qstride + s]
  std::size_t qstride = 0;  // >= ns + kPairPad (readable past the last source)
  const double *tx = nullptr, *ty = nullptr, *tz = nullptr;   // the targets of the cell
  std::size_t nt = 0;
  const PairRun* runs = nullptr;  // runs of target t: [run_begin[t], run_begin[t + 1])
  const int* run_begin = nullptr;
  double rc2 = 0, coinc2 = 0;
  T xi = 0;
  const ErfcSeries* series = nullptr;
  T* out = nullptr;               // (nt, n_out), added to
  std::size_t* ncoinc = nullptr;  // (nt): sources closer than the coincidence distance, added to
  std::vector<T>* scratch = nullptr;  // per-thread buffer of the compacted pairs
  std::size_t* counts = nullptr;      // added to: [0] distance tests (run lengths), [1] pairs evaluated
};

/// Adds the real-space sums over the sources of the runs with coincidence <= r < r_c to b.out.
template <class K, class T>
void p2p_cell(const PairBlock<T>& b);

/// Name of the instruction set the dispatch chose on this CPU (e.g. "AVX3" = AVX-512, "AVX2").
std::string simd_target();

/// Elements the value arrays are readable past their end (the largest SIMD width of any target).
inline constexpr std::size_t kPairPad = 16;

}  // namespace elliptica::ewald::detail
