#pragma once
// The CPU backend of the spectral Ewald plan (not installed): prepared geometry, per-call
// workspace and the stage templates, one file per stage:
//   set_points.cpp  cell lists (wrap, sort), window weights, the backend object
//   p2p.cpp         real space over colleague cells (erfc/exp tables)
//   p2g.cpp         spreading onto the padded grid, folded periodically
//   fft.cpp         FFT and IFFT (FFTW, plans made once, executed on per-call arrays)
//   cnv.cpp         the kernel's Fourier multiplier over the half spectrum
//   g2p.cpp         interpolation back to the targets
//   self.cpp        own periodic images beyond r_c, background, stresslet k = 0 term
// Threads: every parallel region has a num_threads clause (the plan's `threads`); nothing in a
// region allocates or throws except P2P's buffers, whose failures are rethrown after it.
#include <fftw3.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "ewald/backend.hpp"
#include "ewald/internal.hpp"
#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald::detail {

/// Points sorted by near-field cell.
struct CellList {
  std::array<int, 3> n{1, 1, 1};      // cells per axis
  std::array<double, 3> inv_width{1, 1, 1};
  std::vector<int> start;             // size ncells + 1, points of cell c are [start[c], start[c+1])
  std::vector<int> perm;              // sorted position -> original index
  std::vector<double> x, y, z;        // wrapped coordinates, sorted by cell
  int ncells() const { return n[0] * n[1] * n[2]; }
};
/// Builds a cell list of n cells per axis from wrapped coordinates (npts, 3).
CellList build_cells(const double* wrapped, std::size_t npts, const std::array<double, 3>& box,
                     const std::array<int, 3>& n);

/// Window weights of points (in cell-sorted order): first padded grid index per axis and the
/// P weights per axis, cached at set_points.
struct WindowCache {
  int P = 0;
  std::vector<int> j0;      // (n, 3)
  std::vector<double> w;    // (n, 3, P)
};
WindowCache window_cache(const CellList& cl, const Params& p, const Window& w, int threads);

/// erfc(x) and (2/sqrt(pi)) exp(-x^2) on [0, X] as piecewise Chebyshev polynomials (degree 9 on
/// 2^k equal intervals, k chosen so that the absolute error is at the rounding floor, ~2e-15),
/// evaluated by Horner's rule; several times cheaper than the libm calls, which dominate P2P (seed
/// 000, section 4, approximates erf(x)/x by a rational function for the same reason).
struct ErfcTable {
  static constexpr int kDeg = 9;
  double X = 0, scale = 0;
  int n = 0;
  std::vector<double> ce, cg;  // [n][kDeg + 1] monomial coefficients in the local variable t in [-1, 1]
  ErfcTable() = default;
  explicit ErfcTable(double xmax);
  void build();
  double max_error() const;
  inline void eval(double x, double& erfc_v, double& gauss_v) const {
    int i = static_cast<int>(x * scale);
    i = i < 0 ? 0 : (i >= n ? n - 1 : i);
    const double t = 2.0 * (x * scale - i) - 1.0;
    const double* a = &ce[std::size_t(i) * (kDeg + 1)];
    const double* b = &cg[std::size_t(i) * (kDeg + 1)];
    double u = a[kDeg], v = b[kDeg];
    for (int d = kDeg - 1; d >= 0; --d) {
      u = u * t + a[d];
      v = v * t + b[d];
    }
    erfc_v = u;
    gauss_v = v;
  }
};

/// FFTW plans for n_grid forward and n_out backward transforms of an M1 x M2 x M3 grid, made once
/// (under the global FFTW planner lock) and executed with the new-array interface on per-call
/// arrays from fftw_alloc (same alignment), which FFTW allows from several threads at once.
struct FftPlans {
  std::array<int, 3> M{0, 0, 0};
  int ncomp = 0;  // components of the arrays: max(n_grid, n_out)
  fftw_plan fwd = nullptr, bwd = nullptr;
  std::size_t nreal() const { return std::size_t(M[0]) * M[1] * M[2]; }
  std::size_t ncplx() const { return std::size_t(M[0]) * M[1] * (M[2] / 2 + 1); }
  FftPlans() = default;
  FftPlans(const std::array<int, 3>& m, int n_grid, int n_out, int threads);
  FftPlans(const FftPlans&) = delete;
  FftPlans& operator=(const FftPlans&) = delete;
  ~FftPlans();
};

/// FFT arrays of one evaluation (fftw_alloc'd).
struct FftArrays {
  double* real = nullptr;
  fftw_complex* cplx = nullptr;
  FftArrays() = default;
  FftArrays(const FftArrays&) = delete;
  FftArrays& operator=(const FftArrays&) = delete;
  ~FftArrays();
  void allocate(const FftPlans& plans);
};

/// The prepared geometry (the set_points stage), immutable after construction.
struct CpuGeometry {
  BackendSetup setup;
  CellList src, trg;  // trg is used when setup separate
  bool separate = false;
  WindowCache wsrc, wtrg;
  std::vector<int> slab_start, slab_order;  // P2G: sources by slabs of x-planes (threads own alternate slabs)
  int nslab = 1;
  ErfcTable table;
  std::array<int, 3> reach{1, 1, 1};        // colleague offsets per axis (cells)
  std::unique_ptr<FftPlans> fft;
  double self_image[3][3] = {{0}};          // own periodic images beyond r_c (linear part)
  const CellList& targets() const { return separate ? trg : src; }
  const WindowCache& target_window() const { return separate ? wtrg : wsrc; }
};

/// Per-call data of the CPU backend.
struct CpuWorkspace final : Workspace {
  std::vector<double> values;  // (ns, n_src) in cell-sorted source order
  std::vector<double> acc;     // (nt, n_out) in cell-sorted target order
  std::vector<double> pad;     // padded grid, component-interleaved
  FftArrays grid;
  double total[2] = {0, 0};    // Laplace: total charge; stresslet: sum q.nu
  double moment[3] = {0, 0, 0};  // stresslet k = 0 term: sum (q.nu) y
  std::size_t coincident = 0;
};

// Stage templates (explicitly instantiated for the five traits in their files).
template <class K> void p2p(const CpuGeometry& g, CpuWorkspace& ws);
template <class K> void p2g(const CpuGeometry& g, CpuWorkspace& ws);
void fft_forward(const CpuGeometry& g, CpuWorkspace& ws);
void fft_backward(const CpuGeometry& g, CpuWorkspace& ws);
template <class K> void cnv(const CpuGeometry& g, CpuWorkspace& ws);
template <class K> void g2p(const CpuGeometry& g, CpuWorkspace& ws);
template <class K> void self_term(const CpuGeometry& g, CpuWorkspace& ws);
/// Own images: the matrix C with out += C s for a source that is also a target (self.cpp).
template <class K> void self_images(const BackendSetup& s, double C[3][3]);

#define ELLIPTICA_EWALD_INSTANTIATE(F)                         \
  template void F<LaplaceTraits>(const CpuGeometry&, CpuWorkspace&);      \
  template void F<LaplaceFieldTraits>(const CpuGeometry&, CpuWorkspace&); \
  template void F<StokesletTraits>(const CpuGeometry&, CpuWorkspace&);    \
  template void F<StressletTraits>(const CpuGeometry&, CpuWorkspace&);    \
  template void F<StokesCombinedTraits>(const CpuGeometry&, CpuWorkspace&);

}  // namespace elliptica::ewald::detail
