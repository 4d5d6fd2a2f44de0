#pragma once
// The internal backend interface of the spectral Ewald plan (not installed). The plan
// (plan.cpp) validates, tunes and orchestrates; a backend owns the prepared geometry (the
// set_points stage: sorted points, cell lists, window weights, tables, FFT plans) and runs the
// stages P2P, P2G, FFT, CNV, IFFT, G2P and the self term, each on a per-call Workspace, so
// that a const backend is evaluated from several threads at once. The CPU backend is in
// src/ewald/cpu/ (one file per stage); a GPU or MPI backend implements the same interface.
#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "elliptica/ewald/ewald.hpp"
#include "ewald/internal.hpp"

namespace elliptica::ewald::detail {

/// The geometry given to set_points, wrapped into the box, lengths in the plan's units.
struct PointSet {
  std::vector<double> src;      ///< (ns, 3) wrapped source coordinates, caller order
  std::vector<double> trg;      ///< (nt, 3) wrapped target coordinates when separate, else empty
  std::vector<double> normals;  ///< (ns, 3) normals (double-layer kernels), else empty
  bool separate = false;        ///< targets given separately (else the targets are the sources)
  std::size_t ns = 0, nt = 0;
};

/// Everything a backend needs besides the points.
struct BackendSetup {
  Kernel kernel = Kernel::Laplace;
  bool field = false;      ///< Laplace field
  bool zero_mode = false;  ///< stresslet k = 0 term
  Precision precision = Precision::Double;  ///< arithmetic of the stages
  double erfc_target = 1e-15;  ///< relative accuracy of erfc in P2P (a fraction of the relative tolerance)
  std::array<double, 3> box{1, 1, 1};
  int threads = 1;
  FftPlanner fft_planner = FftPlanner::Estimate;  ///< how the FFTs are planned (Options::fft_planner)
  P2GVariant p2g_variant = kDefaultP2GVariant;  ///< P2G/G2P implementation (cpu/p2g.cpp, g2p.cpp, p2g_baseline.cpp)
  /// Laplace field, targets = sources, CellOrdered only: the far-field potential is left out
  /// (IFFT and G2P of E's 3 components only) and CNV sums the Fourier part of sum_n q_n phi(y_n)
  /// by Parseval instead (Backend::far_energy; Options::compute_potential = false).
  bool energy_parseval = false;
  /// P2P sums each pair once for both points where pair_symmetry_applies (Options::pair_symmetry)
  bool pair_symmetry = true;
  /// Free axes (0P, 2P, 1P; every kernel): a free-space sum on an
  /// extended box (the plan's fit_free_box: the data in at most half of it per axis). The
  /// table (M1 M2 (M3/2+1) reals over the half spectrum, periodic_kernel_table; the stokeslet:
  /// 6 such tables one after the other, its tensor's xx, xy, xz, yy, yz, zz; the Laplace field:
  /// the potential's and 3 of -d_a G, imaginary parts t_a, multiplier i t_a; the stokeslet's
  /// pressure: those 3 after its 6; the stresslet: 10 odd tables of T_jlm, xxx, xxy, xxz, xyy,
  /// xyz, xzz, yyy, yyz, yzz, zzz, after the stokeslet's 6 for stokes-combined) replaces the
  /// multiplier 4 pi e^{-k^2/4xi^2} / (k^2 w^(k)^2) in CNV (the window deconvolution is in the
  /// table: the effective kernel is cropped, not the bare one), the k = 0 mode kept; the self
  /// stage adds no periodic images and no neutralising background. Null: periodic (3P).
  std::shared_ptr<const std::vector<double>> free_multiplier;
  /// The periodic axes (Options::periodicity): the self stage's own images along these only.
  std::array<bool, 3> periodic{true, true, true};
  Params params;
  Window window;
};

/// Per-evaluation scratch of a backend (grids, sorted strengths, accumulators).
struct Workspace {
  virtual ~Workspace() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<Workspace> workspace() const = 0;
  /// A workspace for one evaluation: one that an earlier evaluation returned (its grids and
  /// buffers keep their memory, so a repeated evaluation neither allocates nor page-faults its
  /// grids again), else a new one. Thread-safe; every stage re-initialises what it reads.
  std::unique_ptr<Workspace> acquire() const {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) {
        std::unique_ptr<Workspace> w = std::move(pool_.back());
        pool_.pop_back();
        return w;
      }
    }
    return workspace();
  }
  /// Keeps a workspace for the next evaluation (one per evaluation that ran concurrently).
  void release(std::unique_ptr<Workspace> w) const {
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push_back(std::move(w));
  }
  /// Loads the source values (ns, n_src of the kernel's traits) given in caller order.
  virtual void load(Workspace& ws, const double* values) const = 0;
  virtual void p2p(Workspace& ws) const = 0;
  virtual void p2g(Workspace& ws) const = 0;
  virtual void fft(Workspace& ws) const = 0;
  virtual void cnv(Workspace& ws) const = 0;
  virtual void ifft(Workspace& ws) const = 0;
  virtual void g2p(Workspace& ws) const = 0;
  /// Own periodic images beyond r_c, neutralising background, stresslet k = 0 term.
  virtual void self(Workspace& ws) const = 0;
  /// Writes (nt, n_out) values in caller order, times the kernel's final factor.
  virtual void store(Workspace& ws, double* out) const = 0;
  /// Coincident (target, source) pairs of the last P2P other than a source with itself.
  virtual std::size_t coincident_pairs(const Workspace& ws) const = 0;
  /// Distance tests and evaluated pairs of the last P2P, the erfcx series and exp degrees.
  virtual P2PCounts p2p_counts(const Workspace& ws) const = 0;
  /// With BackendSetup::energy_parseval: the Fourier part sum_n q_n phi_F(y_n) of the last CNV
  /// (plan units, the kernel's final factor applied); NaN otherwise.
  virtual double far_energy(const Workspace& ws) const = 0;

 private:
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Workspace>> pool_;
};

/// The set_points stage on the CPU: sorts the points into the cell list of the parameters,
/// caches the window weights of every point, the erfcx series and the FFT plans.
/// Throws ResourceError when the caches or grids exceed the limits or the machine's memory.
std::unique_ptr<Backend> make_cpu_backend(const PointSet& pts, const BackendSetup& setup);

/// The CPU backend's FFT + IFFT wall seconds for grid M (n_grid forward, n_out backward
/// transforms, `threads` threads) as FftPlanner::Wisdom plans them: from the wisdom cache, or
/// measured and cached now (cpu/fft.cpp); NaN when the cache is off. For the tuner.
double cpu_fft_seconds(Precision p, const std::array<int, 3>& M, int n_grid, int n_out, int threads);
/// False when the wisdom cache is off (ELLIPTICA_EWALD_FFT_WISDOM=off: FftPlanner::Wisdom plans as
/// Estimate and the tuner uses the cost model alone, exactly as with Estimate).
bool cpu_fft_wisdom_on();

}  // namespace elliptica::ewald::detail
