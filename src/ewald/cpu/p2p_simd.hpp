#pragma once
// Interface of the SIMD P2P inner loops (p2p_simd.cpp, Google Highway with run-time dispatch).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald::detail {

/// erfcx(x) = exp(x^2) erfc(x) on [0, X] as a Chebyshev series in u = scale t + shift in [-1, 1],
/// t = 1/(1 + x/2) in [1/(1 + X/2), 1]; the degree is the smallest whose maximal relative error
/// is below the target (at most kMaxSeriesDegree = 28; the fit's own floor is ~1e-14).
inline constexpr int kMaxSeriesDegree = 28;
inline constexpr int kMaxExpDegree = 16;
struct ErfcSeries {
  int degree = 0;
  double scale = 1, shift = 0, max_rel_error = 0;
  std::vector<double> cd;  // coefficients c_0 .. c_degree
  std::vector<float> cf;
  /// exp(-x^2) of the kernels: 2^n e^r, |r| <= ln(2)/2, e^r by its Taylor polynomial of this
  /// degree, the smallest whose remainder (ln 2 / 2)^(d+1) / (d+1)! (times e^(ln2/2)) is below the
  /// same target (at most kMaxExpDegree).
  int exp_degree = 0;
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

/// A column of colleague cells (fixed x and y cell offsets from the target cell) whose (x, y)
/// extent lies closer than r_c to the target cell. Its cells along z are consecutive in the
/// cell-sorted order: cell (ii, jj, kk) starts at cell_start[base + kk].
struct PairColumn {
  int base = 0;                      // cell-list index of cell (ii, jj, 0), ii, jj wrapped into the box
  double sx = 0, sy = 0;             // the periodic shift of the column's image (x, y)
};

/// The x and y extents of the columns (unwrapped, widened by the slack) as arrays for the SIMD
/// loop, padded to a multiple of 8 with columns beyond reach (x0 = x1 = +1e300).
struct PairColumnExtents {
  std::vector<double> x0, x1, y0, y1;
  void clear() { x0.clear(); x1.clear(); y0.clear(); y1.clear(); }
  void push(double a0, double a1, double b0, double b1) {
    x0.push_back(a0); x1.push_back(a1); y0.push_back(b0); y1.push_back(b1);
  }
  void pad() {
    const std::size_t n = (x0.size() + 7) / 8 * 8;
    for (auto* v : {&x0, &x1, &y0, &y1}) v->resize(n, 1e300);
  }
};

/// A (target, source image) pair closer than the coincidence test of the SIMD loop: its
/// contribution is left to the caller (p2p.cpp: the self limit when r < the coincidence distance,
/// else the real-space kernel in float64). t: the target's index in the block; s: the source's
/// cell-sorted index; r = target - (source + shift) in float64.
struct ClosePair {
  std::size_t t = 0, s = 0;
  double rx = 0, ry = 0, rz = 0;
};

/// The targets of a block of target cells (i, j, k0..k1) with the colleague columns of that block. Per target, the
/// SIMD loop visits, in each column whose (x, y) distance from the target is below r_c, the
/// z-cells the sphere of radius r_c around the target reaches there (offsets [-Kz, Kz] from the
/// target's cell kz; offset o maps to cell (kz + o) mod nz and periodic image floor((kz + o)/nz)).
/// float64: consecutive cells of one image are one run of sources read in place, offsets
/// r = target - (source + shift) formed in float64. float32: the block first copies the sources of
/// its columns' z-cells [min kz - Kz, max kz + Kz] (every image) into block-local coordinates
/// (source + shift - origin, origin = the block's first target) held as float32 pairs hi + lo
/// (hi = the value rounded, lo = the rest rounded), so that a column's reach is one run and the
/// distance test runs on float32 lanes; r = (t_hi - s_hi) + (t_lo - s_lo) has a relative error
/// of ~2u in each component (u = 2^-24) plus ~u^2 times the block's extent, as the rounding of
/// a float64 offset.
template <class T>
struct PairBlock {
  const double *sx = nullptr, *sy = nullptr, *sz = nullptr;  // all sources, cell-sorted
  std::size_t ns = 0;                                         // number of sources
  const T* q = nullptr;    // n_src value arrays (cell-sorted): value c of source s at q[c * qstride + s]
  std::size_t qstride = 0;  // >= ns + kPairPad (readable past the last source)
  const T* qa = nullptr;    // p2p_gathers<K>() instead of q: value c of source s at qa[s * n_src + c],
                            // (ns + 1) rows, the last one zero
  const int* cell_start = nullptr;  // the source cell list's start array (ncells + 1)
  const double *tx = nullptr, *ty = nullptr, *tz = nullptr;   // the targets of the cell
  std::size_t nt = 0;
  const PairColumn* cols = nullptr;  // the colleague columns of the targets' (x, y) cell
  int ncols = 0;
  // the columns' x and y extent as arrays, readable up to ncols rounded up to 8 (the padding
  // columns lie beyond reach: x0 = +1e300)
  const double *colx0 = nullptr, *colx1 = nullptr, *coly0 = nullptr, *coly1 = nullptr;
  const int* tk = nullptr;           // (nt): the z index of each target's cell
  int nz = 1, Kz = 1;                // cells along z, reach along z
  double wz = 1, Lz = 1, slack = 0;  // cell width and box length along z; bound widening
  std::size_t max_candidates = 0;    // upper bound of the sources any target of the block visits
  double rc2 = 0, coinc2 = 0;
  T xi = 0;
  const ErfcSeries* series = nullptr;
  double close2 = 0;              // float32: the test of close pairs (>= coinc2, see ClosePair)
  T* out = nullptr;               // (nt, n_out), added to
  std::vector<ClosePair>* close = nullptr;  // pairs with r^2 < coinc2 (float32: < close2), appended to
  std::vector<T>* scratch = nullptr;  // per-thread buffer of the compacted pairs
  std::vector<double>* zscratch = nullptr;  // per-thread buffer of the columns' z ranges
  std::vector<float>* lscratch = nullptr;   // float32: per-thread buffer of the block-local sources
  std::vector<int>* iscratch = nullptr;     // float32: their cell-sorted indices and the columns' starts
  std::size_t* counts = nullptr;      // added to: [0] distance tests (run lengths), [1] pairs evaluated
  // Pair symmetry (Newton's third law; pair_symmetry_applies, float64, the targets the sources):
  // with rev set, target t (sorted index t_first + t) tests only the sources of sorted index >= its own,
  // and each pair's reverse term, the kernel at -r applied to the target's values, is added to
  // rev[s * n_out + c] ((ns + 1) rows of n_out, the last one takes the padding of the pair lists)
  T* rev = nullptr;
  std::size_t t_first = 0;
};

/// Whether the SIMD loop gathers the source values per pair (PairBlock::qa, 3 or more values per
/// source) instead of compacting them with the offsets (PairBlock::q).
template <class K>
constexpr bool p2p_gathers() { return K::n_src >= 3; }
/// The most memory the per-thread arrays of the reverse terms may take (threads x (N + 1) rows
/// of n_out values); beyond it P2P sums one-sided (many threads on many points).
inline constexpr double kPairSymmetryMaxBytes = 1024.0 * 1024.0 * 1024.0;
/// Whether P2P sums each pair once for both of its points (PairBlock::rev; every kernel): the
/// option (Options::pair_symmetry), double precision (in float32 it did not pay: the distance test
/// on the block-local copy cannot skip the lower indices, and 16-lane scatters cost more than the
/// float32 arithmetic saved; bench/results/ewald_issue28/symmetry_p2p.md), the targets the
/// sources, r_c < min(L) / 2 (every source has at most one image within r_c of a target, so the
/// lanes of a scatter never collide and no pair is met twice), and the reverse terms' arrays
/// within kPairSymmetryMaxBytes.
inline bool pair_symmetry_applies(Kernel kernel, bool field, Precision precision, bool option, bool separate,
                                  double rc, const std::array<double, 3>& box, std::size_t n_sources, int threads) {
  if (!option || separate || precision != Precision::Double) return false;
  const int n_out = with_traits(kernel, field, [](auto tr) { return decltype(tr)::n_out; });
  const double lmin = std::min({box[0], box[1], box[2]});
  const double bytes = double(std::max(1, threads)) * (double(n_sources) + 1) * n_out * 8.0;
  return rc < 0.5 * lmin * (1 - 1e-12) && bytes <= kPairSymmetryMaxBytes;
}

/// Adds the real-space sums over the sources of the runs with coincidence <= r < r_c to b.out
/// (float32: close2 <= r^2 < r_c^2) and appends the closer pairs to b.close.
template <class K, class T>
void p2p_cell(const PairBlock<T>& b);

/// Name of the instruction set the dispatch chose on this CPU (e.g. "AVX3" = AVX-512, "AVX2").
std::string simd_target();

/// floor(a / n) for n > 0.
inline int floor_div(int a, int n) { return a >= 0 ? a / n : -((-a + n - 1) / n); }

/// Elements the value arrays are readable past their end (the largest SIMD width of any target).
inline constexpr std::size_t kPairPad = 16;

}  // namespace elliptica::ewald::detail
