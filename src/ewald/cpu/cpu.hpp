#pragma once
// The CPU backend of the spectral Ewald plan (not installed): prepared geometry, per-call
// workspace and the stage templates, one file per stage:
//   set_points.cpp  cell lists (wrap, sort), window weights, the backend object
//   p2p.cpp         real space over colleague cells (candidates per target cell)
//   p2p_simd.cpp    its SIMD inner loop (Google Highway, run-time dispatch AVX2 / AVX-512)
//   p2g.cpp         spreading onto the padded grid, folded periodically
//   fft.cpp         FFT and IFFT (FFTW, plans made once, executed on per-call arrays)
//   cnv.cpp         the kernel's Fourier multiplier over the half spectrum
//   g2p.cpp         interpolation back to the targets
//   p2g_baseline.cpp  P2G and G2P of P2GVariant::Baseline (input order, window on the fly,
//                   periodic wrap in the loops, atomic scatter), for benchmarking
//   self.cpp        own periodic images beyond r_c, background, stresslet k = 0 term
// Threads: every parallel region has a num_threads clause (the plan's `threads`); nothing in a
// region allocates or throws except P2P's buffers, whose failures are rethrown after it.
#include <fftw3.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "ewald/backend.hpp"
#include "ewald/cpu/p2p_simd.hpp"
#include "ewald/internal.hpp"
#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald::detail {

/// FFTW's interface for float (fftwf_*) and double (fftw_*).
template <class T> struct Fftw;
template <> struct Fftw<double> {
  using plan = fftw_plan;
  using complex = fftw_complex;
};
template <> struct Fftw<float> {
  using plan = fftwf_plan;
  using complex = fftwf_complex;
};

/// Points sorted by near-field cell. Coordinates stay float64 in both precisions: P2P forms the
/// offsets target - source in float64 and rounds them to T, so a pair's relative error is T's
/// rounding of r, not (box length / r) times it (the stresslet's float32 error grew as 1/r
/// with float32 coordinates: 7e-5 at N = 1e5).
template <class T>
struct CellList {
  std::array<int, 3> n{1, 1, 1};      // cells per axis
  std::vector<int> start;             // size ncells + 1, points of cell c are [start[c], start[c+1])
  std::vector<int> perm;              // sorted position -> original index
  std::vector<double> x, y, z;        // wrapped coordinates, sorted by cell
  int ncells() const { return n[0] * n[1] * n[2]; }
};
/// Builds a cell list of n cells per axis from wrapped float64 coordinates (npts, 3).
template <class T>
CellList<T> build_cells(const double* wrapped, std::size_t npts, const std::array<double, 3>& box,
                        const std::array<int, 3>& n);

/// Window weights of points (in cell-sorted order): first padded grid index per axis and the
/// P weights per axis (computed in float64 from the float64 coordinates, stored in T), cached
/// at set_points.
template <class T>
struct WindowCache {
  int P = 0;
  std::vector<int> j0;   // (n, 3)
  std::vector<T> w;      // (n, 3, P)
};
/// perm: sorted position -> index into `wrapped` (the cell list's perm).
template <class T>
WindowCache<T> window_cache(const double* wrapped, const std::vector<int>& perm, const Params& p, const Window& w,
                            int threads);

/// FFTW plans for n_grid forward and n_out backward transforms of an M1 x M2 x M3 grid, made once
/// (under the global FFTW planner lock) and executed with the new-array interface on per-call
/// arrays from fftw(f)_alloc (same alignment), which FFTW allows from several threads at once.
template <class T>
struct FftPlans {
  std::array<int, 3> M{0, 0, 0};
  int ncomp = 0;  // components of the arrays: max(n_grid, n_out)
  typename Fftw<T>::plan fwd = nullptr, bwd = nullptr;
  std::size_t nreal() const { return std::size_t(M[0]) * M[1] * M[2]; }
  std::size_t ncplx() const { return std::size_t(M[0]) * M[1] * (M[2] / 2 + 1); }
  /// planner: FftPlanner (ewald.hpp); Wisdom reads the wisdom cache, or measures, times and
  /// caches a problem it lacks (fft.cpp). Throws ResourceError when the scratch arrays cannot be
  /// allocated, NumericalError when FFTW makes no plan.
  FftPlans(const std::array<int, 3>& m, int n_grid, int n_out, int threads, FftPlanner planner = FftPlanner::Estimate);
  FftPlans(const FftPlans&) = delete;
  FftPlans& operator=(const FftPlans&) = delete;
  ~FftPlans();
};

/// Wall seconds of n_grid forward plus n_out backward transforms of grid M on `threads` threads
/// as FftPlanner::Wisdom plans them: from the wisdom cache, or planned (measured), timed and
/// cached now. NaN when the wisdom cache is off (ELLIPTICA_EWALD_FFT_WISDOM=off). For the tuner.
template <class T>
double measured_fft_seconds(const std::array<int, 3>& M, int n_grid, int n_out, int threads);
/// The process-wide lock of FFTW's planner and wisdom (fft.cpp).
std::mutex& fftw_planner_mutex();
/// With fftw_planner_mutex held: the next double-precision plans are serial (each planner call
/// sets the thread count it needs). The kernel tables' plans (truncated_conv.cpp) are executed
/// from the caller's threads, one per mode, and threaded r2r plans leaked in FFTW 3.3.10
/// (LeakSanitizer: the sub-plans of fftw_plan_r2r_* made after fftw_plan_with_nthreads(2)).
void fftw_plan_serially();

/// FFT arrays of one evaluation (fftw(f)_alloc'd).
template <class T>
struct FftArrays {
  T* real = nullptr;
  typename Fftw<T>::complex* cplx = nullptr;
  FftArrays() = default;
  FftArrays(const FftArrays&) = delete;
  FftArrays& operator=(const FftArrays&) = delete;
  ~FftArrays();
  void allocate(const FftPlans<T>& plans);
};

/// The prepared geometry (the set_points stage), immutable after construction.
template <class T>
struct CpuGeometry {
  BackendSetup setup;
  CellList<T> src, trg;  // trg is used when the targets are separate
  bool separate = false;
  WindowCache<T> wsrc, wtrg;
  std::vector<int> slab_start, slab_order;  // P2G: sources by slabs of x-planes (threads own alternate slabs)
  int nslab = 1;
  std::vector<int> src_rank, trg_rank;      // P2GVariant::Baseline: input index -> sorted position
  ErfcSeries series;                        // erfcx for P2P (degree from the tolerance)
  std::array<int, 3> reach{1, 1, 1};        // colleague offsets per axis (cells)
  std::unique_ptr<FftPlans<T>> fft;
  double self_image[3][3] = {{0}};          // own periodic images beyond r_c (linear part)
  const CellList<T>& targets() const { return separate ? trg : src; }
  /// Components of the IFFT and G2P: the kernel's n_out, or E's 3 with energy_parseval (the
  /// far-field potential left out; G2P adds them after the potential's slot).
  int far_out(int n_out) const { return setup.energy_parseval ? 3 : n_out; }
  const WindowCache<T>& target_window() const { return separate ? wtrg : wsrc; }
  /// The grid planes along axis 0 that P2G spreads onto and G2P reads (the padded grid holds
  /// slab_planes() + 2P of them): the whole grid (serial plans), or a distributed plan's slab
  /// (nx > 0, issue 30; the window cache's x-indices are then relative to the slab's first plane).
  int slab_planes() const { return nx > 0 ? nx : setup.params.grid[0]; }
  int nx = 0;  ///< planes of this rank's slab (0: the whole grid)
  int x0 = 0;  ///< the slab's first plane (the window cache's x-indices are relative to it)
  /// A slab's geometry (SlabPart): target (owned point) t in sorted order -> its source's sorted
  /// position (the own periodic images of self_term); empty otherwise.
  std::vector<int> own_source;
};

/// The part of a distributed plan one rank evaluates (issue 30): sources [0, n_owned) of the
/// PointSet are the rank's own points, which are also its targets, the rest ghost sources that
/// P2P needs; grid planes [x0, x0 + nx) along axis 0 are the rank's.
struct SlabPart {
  int x0 = 0, nx = 0;
  std::size_t n_owned = 0;
};

/// The set_points stage: cell lists, window weights, P2G slab order, erfcx series, own images;
/// the serial FFT plans (without a SlabPart; a distributed plan has its own).
template <class K, class T>
std::unique_ptr<CpuGeometry<T>> make_geometry(const PointSet& pts, const BackendSetup& setup, const SlabPart* slab);

/// A geometry for P2P alone (a distributed plan's split P2P, issue 30): cell lists of the
/// sources (n_src, 3) and, when `targets` is given, of the targets (n_trg, 3) (wrapped float64
/// coordinates, row-major), the erfcx series and the colleague reach; no window caches, slabs or
/// FFT plans (P2G, G2P, self and the FFTs must not be given it). Targets = sources when
/// `targets` is null (then pair symmetry may apply: uses_pair_symmetry).
template <class T>
std::unique_ptr<CpuGeometry<T>> make_p2p_geometry(const double* sources, std::size_t n_src, const double* targets,
                                                  std::size_t n_trg, const BackendSetup& setup);

/// Whether this geometry's P2P sums each pair once for both points (p2p.cpp).
template <class K, class T>
bool uses_pair_symmetry(const CpuGeometry<T>& g) {
  return std::is_same_v<T, double> && pair_symmetry_applies(g.setup.kernel, g.setup.field, g.setup.precision,
                                                           g.setup.pair_symmetry, g.separate, g.setup.params.rc,
                                                           g.setup.box, g.src.x.size(), g.setup.threads);
}

/// Per-call data of the CPU backend. Stage results are added in float64 (acc); each stage
/// computes in T.
template <class T>
struct CpuWorkspace final : Workspace {
  std::vector<T> values;       // (ns + 1, n_src) in cell-sorted source order, the last row zero
  std::vector<double> acc;     // (nt, n_out) in cell-sorted target order
  std::vector<T> pad;          // padded grid, component-interleaved
  FftArrays<T> grid;
  double total[2] = {0, 0};    // Laplace: total charge; stresslet: sum q.nu
  double moment[3] = {0, 0, 0};  // stresslet k = 0 term: sum (q.nu) y
  std::size_t coincident = 0;
  double far_energy = 0;       // energy_parseval: sum_n q_n phi_F(y_n) from CNV (Parseval)
  std::size_t p2p_candidates = 0, p2p_pairs = 0;  // P2P distance tests, pairs within r_c evaluated
};

/// The rows of the half spectrum a CNV works on: row (a, b) of M3/2 + 1 complex modes starts at
/// complex offset (a n_inner + b)(M3/2 + 1) of each component, components comp_stride complex
/// values apart. Serial plans: a = i (axis 0, M1 rows), b = j (axis 1, M2); FFTW-MPI's transposed
/// output (issue 30): a = j - j0 (the rank's local_n1 values of j from j0), b = i (M1).
struct SpectrumView {
  int n_outer = 0, n_inner = 0;
  bool transposed = false;
  int j0 = 0;
  std::size_t comp_stride = 0;
  int i(int a, int b) const { return transposed ? b : a; }
  int j(int a, int b) const { return transposed ? j0 + a : b; }
};

// Stage templates (explicitly instantiated for the five traits and both precisions in their files).
template <class K, class T> void p2p(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class K, class T> void p2g(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
/// P2G's spreading alone: ws.pad = (slab_planes() + 2P, M2 + 2P, M3 + 2P, n_grid), no fold.
template <class K, class T> void p2g_spread(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
/// G2P's interpolation alone, from ws.pad as p2g_spread lays it out (n_out or far_out components),
/// added to ws.acc.
template <class K, class T> void g2p_gather(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class T> void fft_forward(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class T> void fft_backward(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class K, class T> void cnv(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
/// The CNV on the rows of a SpectrumView of ws.grid.cplx (cnv: the serial view of g.fft).
template <class K, class T> void cnv_on(const CpuGeometry<T>& g, CpuWorkspace<T>& ws, const SpectrumView& v);
template <class K, class T> void g2p(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
/// P2GVariant::Baseline (p2g_baseline.cpp): the same results to round-off.
template <class K, class T> void p2g_baseline(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class K, class T> void g2p_baseline(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
template <class K, class T> void self_term(const CpuGeometry<T>& g, CpuWorkspace<T>& ws);
/// Own images: the matrix C with out += C s for a source that is also a target (self.cpp).
template <class K> void self_images(const BackendSetup& s, double C[3][3]);

#define ELLIPTICA_EWALD_INSTANTIATE_T(F, T)                                   \
  template void F<LaplaceTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&);      \
  template void F<LaplaceFieldTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&); \
  template void F<StokesletTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&);    \
  template void F<StokesletPressureTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&); \
  template void F<StressletTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&);    \
  template void F<StokesCombinedTraits, T>(const CpuGeometry<T>&, CpuWorkspace<T>&);
#define ELLIPTICA_EWALD_INSTANTIATE(F)   \
  ELLIPTICA_EWALD_INSTANTIATE_T(F, float) \
  ELLIPTICA_EWALD_INSTANTIATE_T(F, double)

}  // namespace elliptica::ewald::detail
