#pragma once
// Internal building blocks of the spectral Ewald plan (not installed).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "elliptica/core/constants.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald::detail {

// ---------------------------------------------------------------------------------------------
// Kaiser-Bessel window (window.cpp)
//   w(z) = I0(beta sqrt(1 - (z/a)^2)) / I0(beta) for |z| <= a = P h / 2, zero outside,
//   w_hat(k) = 2a sinh(sqrt(beta^2 - k^2 a^2)) / (sqrt(beta^2 - k^2 a^2) I0(beta))   (k a < beta)
//            = 2a sin(sqrt(k^2 a^2 - beta^2)) / (sqrt(k^2 a^2 - beta^2) I0(beta))   (k a > beta).
// A source at t = x/h (grid units) touches the P grid points j0 + m, m = 0..P-1, with
// j0 = floor(t - P/2) + 1; with s = t - P/2 - floor(t - P/2) in [0,1) the weight of point m is
// w((m + 1 - P/2 - s) h). For each m that is one smooth function of s on [0,1] ("bin" m), which we
// replace by a polynomial of degree nu in x = 2s - 1 (Chebyshev interpolation converted to the
// monomial basis) and evaluate with Horner's rule for all m at once (seed 000, section 4).
constexpr int kMaxWindowSupport = 32;  ///< largest P (the override range; the tuner stays <= 24)
constexpr int kMaxComponents = 12;     ///< most grid components (stokes-combined: f and q (x) nu)

struct Window {
  int P = 0;
  double beta = 0;
  int degree = 0;
  std::vector<double> coef;  // [degree + 1][P]: coef[d * P + m] multiplies x^d for bin m
  double max_poly_error = 0;  // max |poly - exact| over a fine sampling, relative to w(0) = 1

  // Exact window value at normalised offset u = z/a in [-1, 1].
  double exact(double u) const;
  // Weights of the P points for fractional position s in [0,1): out[m], m = 0..P-1.
  inline void weights(double s, double* out) const {
    const double x = 2.0 * s - 1.0;
    const double* c = coef.data() + static_cast<std::size_t>(degree) * P;
    for (int m = 0; m < P; ++m) out[m] = c[m];
    for (int d = degree - 1; d >= 0; --d) {
      c -= P;
      for (int m = 0; m < P; ++m) out[m] = out[m] * x + c[m];
    }
  }
};

// Chebyshev interpolant of degree n of f on [a, b], as monomial coefficients in the local variable
// t = (2x - a - b)/(b - a) in [-1, 1] (coefficient d multiplies t^d).
std::vector<double> chebyshev_monomial(const std::function<double(double)>& f, double a, double b, int n);

// Builds the piecewise polynomial of the given degree; degree <= 0 chooses the smallest degree
// whose maximal error is below `target` (capped at 24).
Window make_window(int P, double beta, int degree, double target);
// Fourier transform of the (exact, truncated) window with half-width a, at wavenumber k.
double window_hat(double k, double a, double beta);
// The same without the constant factor 2a / I0(beta) (for ratios of transforms).
double window_hat_shape(double k, double a, double beta);

// ---------------------------------------------------------------------------------------------
// Parameter selection (params.cpp)
struct TuneInput {
  Kernel kernel = Kernel::Laplace;
  bool field = false;                 // Laplace field requested (error targets for phi and E)
  std::vector<ErrorTerm> terms;       // the kernel's error model (kernel_traits.hpp)
  int n_src = 1, n_grid = 1, n_out = 1;
  // Cost model (params.cpp, model_cost): the constants of the plan's precision (calibrate.cpp:
  // measured per machine, cached, or built in) and the kernel's variant (cost_variant()).
  CostConstants costs = builtin_cost_constants(Precision::Double);
  int cost_variant = 0;
  std::array<double, 3> box{1, 1, 1};
  std::size_t n_sources = 0, n_targets = 0;
  double rho[2] = {0, 0};             // effective strength densities (single, double layer) seen by the targets
  double mean_density[2] = {0, 0};    // 0P: |sum of the strengths| / volume (est_real's coherent tail); 0 in 3P
  double mean_far[2] = {0, 0};        // 0P: mean_density a^2, a the radius of the points' volume as a ball (est_window)
  double mean_ball = 1;               // 0P: that radius a
  double self_q2[2] = {0, 0};         // mean squared strengths of sources that are also targets (0 if separate)
  // Coherent near field of the window error: the mean over the targets of the sum of squared
  // strengths of the sources within a cube of side s around the target (the target's own source
  // included), for a layer; s is the grid spacing. Unset: self_q2.
  std::function<double(int layer, double s)> near_q2;
  double eps[2] = {0, 0};             // absolute RMS targets: the values, the Laplace field
  int threads = 1;
  // P2P by pair symmetry where it applies (Options::pair_symmetry and the targets the sources;
  // model_cost checks the rest, pair_symmetry_applies): half the distance tests and pairs
  bool pair_symmetry = false;
  Precision precision = Precision::Double;
  const Options* overrides = nullptr;
  // Largest r_c candidate (0: 0.95 of the longest side). 0P: half the points' extent (a larger
  // r_c would grow the extended grid, which must hold 2 r_c, beyond what the cost model sees).
  double rc_max = 0;
  // The points' density where they are over their mean density in `box` (>= 1): with free axes
  // the box is the extended one (about 2.5x the points' extent per free axis), the points fill
  // only their part of it, and P2P's sources per cell and pairs are this many times the box
  // mean (a cost model without it chose r_c 2-3x too large in 0P: P2P 20x the FFT's time).
  double crowding = 1;
  // FftPlanner::Wisdom: wall seconds of the plan's FFT and IFFT on grid M at `threads` threads,
  // measured (once per machine) or read from the wisdom cache; NaN when not available. Unset:
  // the cost model's FFT term alone ranks the grids.
  std::function<double(const std::array<int, 3>& M)> fft_seconds;
};

/// Candidates re-ranked by measured FFT times (choose_params): those within this factor of the
/// best modelled cost, on at most kMeasuredFftGrids distinct grids (each measured once per machine).
inline constexpr double kMeasuredFftSpread = 1.5;
inline constexpr std::size_t kMeasuredFftGrids = 4;

// Error estimates of one truncated kernel (RMS, random-source model; see params.cpp).
// mean_density: 0P, |the strengths' sum| / the points' volume: without periodic images there is
// no neutralising background (3P cancels it), so the truncated tails of a non-neutral system
// (net charge, net force) add coherently: mean_density * |int_{r > r_c} mean kernel| is added
// to the random-source estimate (mean_real_tail).
double est_real(ErrKind k, double rho, double xi, double rc, double V, double mean_density = 0);
double mean_real_tail(ErrKind k, double xi, double rc);
double est_fourier(ErrKind k, double rho, double xi, double kmax, double near_q2 = 0);
double est_window(ErrKind k, double rho, double xi, const std::array<double, 3>& box,
                  const std::array<int, 3>& M, int P, double beta, double self_q2, double mean_far = 0,
                  double mean_ball = 1);
// Rough RMS size of a kernel's result (for the pilot of a relative tolerance).
double typical_magnitude(ErrKind k, double rho, const std::array<double, 3>& box, std::size_t n);

/// Size limits of a plan, checked while the parameters are chosen (before anything is allocated):
/// the FFT grids (kMaxGridBytes, also at most 8192 points per axis), the P2P work (pair checks)
/// and the per-thread P2P pair lists. A box of extreme aspect ratio can need either a huge grid
/// along its long axis or a cutoff reaching over many images of its short axes: then no
/// parameters fit and the plan throws ResourceError (NumericalError, as for any tolerance out of
/// reach, when overrides are given; InvalidArgument for a grid override above kMaxGridBytes).
constexpr double kMaxGridBytes = 8.0 * 1024 * 1024 * 1024;  // 8 GiB
constexpr double kMaxPairChecks = 1e12;
constexpr double kMaxNearFieldBytes = 4.0 * 1024 * 1024 * 1024;  // 4 GiB

/// Cells per r_c of the P2P cell lists along z (cells >= r_c / 5) and along x and y (columns
/// >= r_c / 1.25 wide in float64, >= r_c in float32: 3 x 3 colleague columns; the float32 distance
/// test runs on twice as many lanes, so fewer, longer runs pay off; measured in params.cpp).
inline constexpr double kCellsPerRcZ = 5.0;
constexpr double cells_per_rc_xy(Precision p) { return p == Precision::Single ? 1.0 : 1.25; }
/// Cells per axis of the near-field cell list for cutoff rc: floor(cells_per_rc_xy(prec) L_d / rc)
/// along x and y, floor(kCellsPerRcZ L_z / rc) along z (at least 1), halved along the axis with the
/// most cells while there are more than min(8 n_points + 64, 2^26) cells.
std::array<int, 3> cell_grid(const std::array<double, 3>& box, double rc, std::size_t n_points,
                             Precision prec = Precision::Double);

/// Near-field (P2P) load of a cutoff and cell grid, as visited by p2p() (cpu/p2p.cpp): every
/// source of the runs a target visits is distance-tested by the SIMD loop.
struct NearFieldLoad {
  double colleagues = 0;         ///< (cell, image) pairs within the reach of a target cell
  double columns = 0;            ///< columns of colleague cells (x, y offsets) per target
  double checks_per_target = 0;  ///< source images tested per target (mean, uniform points: the
                                 ///< cells of the runs P2P scans, see cpu/p2p.cpp)
  double pair_checks = 0;        ///< total source-target tests
  double bytes = 0;              ///< per-thread colleague and pair lists, times the threads
};
NearFieldLoad near_field_load(const std::array<double, 3>& box, std::size_t n_sources, std::size_t n_targets,
                              double rc, const std::array<int, 3>& cells, int strength_components, int threads);

/// The cost model's FFT term of grid M (seconds of one core, not divided by threads).
double model_fft_cost(const TuneInput& in, const std::array<int, 3>& M);
/// The modelled wall seconds of each stage (model_cost is their sum): threads-divided, as model_cost.
struct ModelStages {
  double p2p = 0, p2g = 0, fft = 0, cnv = 0, g2p = 0;  ///< fft: the FFT and the IFFT together
  double total() const { return p2p + p2g + fft + cnv + g2p; }
};
ModelStages model_stages(const TuneInput& in, double rc, const std::array<int, 3>& cells, const std::array<int, 3>& M,
                         int P);
/// Modelled seconds of one evaluation with these parameters (the cost model of CostConstants,
/// divided by in.threads).
double model_cost(const TuneInput& in, double rc, const std::array<int, 3>& cells, const std::array<int, 3>& M, int P);

/// Chooses the parameters (see params.cpp). Throws InvalidArgument for a grid override above
/// kMaxGridBytes, ResourceError when only the size limits rule out every choice, NumericalError
/// when the tolerance is out of reach otherwise (also with overrides).
Params choose_params(const TuneInput& in);
// Smallest M >= m that is even and has no prime factor above 7.
int fft_friendly(int m);

// ---------------------------------------------------------------------------------------------
// Periodic wrapping (exact for every finite value)

/// Coordinates farther than this many box lengths from the box are refused: beyond it one unit in
/// the last place of the coordinate exceeds ~0.2 box lengths (2^-52 * 1e15), so its periodic
/// position is not determined by the double-precision value.
constexpr double kMaxBoxLengthsFromBox = 1e15;

/// CNV's multiplier tables with free axes (plan.cpp; docs/ewald.md section 9): the kernel's
/// truncated / per-mode transforms times the screening and the window deconvolution, over the
/// half spectrum of p.grid on the extended box `box` (BackendSetup::free_multiplier's layout);
/// field: the Laplace field's (or the stokeslet pressure's) 3 odd tables too. R_out: the
/// truncation radius used. Throws ResourceError beyond the memory limit.
std::shared_ptr<const std::vector<double>> free_space_table(Kernel kernel, bool field, const Periodicity& periodic,
                                                            const Params& p, const std::array<double, 3>& box,
                                                            int threads, double* R_out = nullptr);

/// Options::periodicity: every axis periodic (3P), none (0P), the periodic axes' names ("x, y").
inline bool is_triply_periodic(const Periodicity& p) { return p[0] && p[1] && p[2]; }
inline bool is_free_space(const Periodicity& p) { return !p[0] && !p[1] && !p[2]; }
inline std::string periodic_axes(const Periodicity& p) {
  std::string s;
  for (int d = 0; d < 3; ++d)
    if (p[std::size_t(d)]) s += std::string(s.empty() ? "" : ", ") + "xyz"[d];
  return s.empty() ? "none" : s;
}

/// v wrapped into [0, L) for L > 0: fmod is exact in IEEE arithmetic (no rounding, unlike
/// v - L floor(v/L), which FMA contraction or the rounding of v/L can make negative or >= L);
/// a negative remainder so small that r + L rounds to L maps to 0 (the nearest periodic value).
/// Never negative (-0.0 becomes +0.0), never >= L.
inline double wrap_into_box(double v, double L) {
  double r = std::fmod(v, L);
  if (r < 0) {
    r += L;
    if (r >= L) r = 0.0;
  }
  return r == 0.0 ? 0.0 : r;
}

/// Index floor(v * inv) of the cell (or grid interval) holding v in [0, L), clamped into
/// [0, n - 1] so that an index is in range by construction.
inline int cell_index(double v, double inv, int n) {
  const double t = v * inv;
  if (!(t > 0)) return 0;
  return t >= double(n) ? n - 1 : std::min(static_cast<int>(t), n - 1);
}

/// Window placement of a wrapped coordinate x in [0, L) on a grid of M points (inv_h = M / L),
/// support P: the first padded grid index j0 (grid index + P) and the fractional position s in
/// [0, 1) that Window::weights() takes. t = x/h is clamped into [0, M), so j0 is in [1, M + P]
/// and j0 + P - 1 < M + 2P (inside the padded grid) by construction.
inline void window_offset(double x, double inv_h, int M, int P, int& j0, double& s) {
  const double t = std::clamp(x * inv_h, 0.0, std::nextafter(double(M), 0.0));
  const double f = std::floor(t - 0.5 * P);
  j0 = static_cast<int>(f) + 1 + P;
  s = t - 0.5 * P - f;
}

}  // namespace elliptica::ewald::detail
