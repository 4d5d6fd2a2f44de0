#pragma once
/// @file ewald.hpp
/// Spectrally accurate fast Ewald summation (spectral Ewald, SE) for triply periodic Laplace and
/// Stokes (stokeslet, Hasimoto splitting) potentials in a rectangular box, on the CPU.
///
/// Source: seed paper 000 ("A performance portable fast Ewald summation for Stokes flow"),
/// sections 2.1-2.4; Lindbo & Tornberg, J. Comput. Phys. 229 (2010) 8994 (Stokes, eqs. 2.4-2.9)
/// and 230 (2011) 8744 (Laplace); Kaiser-Bessel window as in Shamshirgar, Bagge & Tornberg,
/// J. Chem. Phys. 154 (2021) 164109.
///
/// ## What is computed
/// Box B = [0,L1) x [0,L2) x [0,L3) (lengths in [1e-100, 1e100], any aspect ratio); points outside
/// are wrapped into it exactly (fmod; the sums are periodic, so this changes nothing), up to 1e15
/// box lengths away (farther ones are refused). Sources y_n, targets x_m; by default
/// the targets are the sources and the singular self-interaction (n == m, p == 0) is excluded.
/// A target that coincides exactly with a source also excludes that one singular term.
///
/// - Laplace (Gaussian units, no 1/(4 pi eps0)):
///     phi(x_m) = sum_p sum_n' q_n / |x_m - y_n + p L|,
///   Ewald "tin-foil" convention (k = 0 mode excluded). A non-neutral system gets the uniform
///   neutralising background, i.e. the shift -pi Q_tot / (xi^2 V) is included, so the result
///   does not depend on xi. Optionally the field E = -grad phi.
///   Real space:  q erfc(xi r)/r.  Fourier: (4 pi / V) sum_{k != 0} exp(-k^2/(4 xi^2))/k^2 ...
///   Self term:   -(2 xi / sqrt(pi)) q_m.
/// - Stokeslet (Hasimoto splitting), viscosity mu:
///     u(x_m) = 1/(8 pi mu) sum_p sum_n' S(x_m - y_n + p L) f_n,  S(r) = I/|r| + r r^T/|r|^3,
///   k = 0 excluded: zero mean velocity over the box, the mean pressure gradient balancing the
///   net force. Real space S^R(r) = erfc(xi r)(I/r + r r^T/r^3) + (2 xi/sqrt(pi)) e^{-xi^2 r^2}
///   (r r^T/r^2 - I); Fourier B(k) = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} (k^2 I - k k^T)/k^4;
///   self term -(4 xi/sqrt(pi)) f_m (Hasimoto 1959; Lindbo & Tornberg 2010, eqs. 2.6-2.9).
///
/// ## Algorithm
/// u = P2P (real space, cell list with cell width >= r_c, 27 colleague cells, pairs with r < r_c)
///   + far field: P2G (Kaiser-Bessel window of P grid points, shape beta, evaluated per bin by a
///     piecewise polynomial of degree nu with Horner's rule) -> FFT (FFTW r2c) -> CNV (diagonal
///     multiplication by the kernel's Fourier multiplier / w_hat^2 over the half spectrum)
///     -> IFFT (FFTW c2r) -> G2P,
///   + self term (+ background for Laplace).
///
/// ## Parameters and tolerance
/// From one tolerance eps the plan chooses (xi, r_c, M per axis, P, beta, nu). Three RMS error
/// estimates, for sources at uncorrelated positions (the Kolafa-Perram model behind the estimates of
/// Lindbo & Tornberg), are evaluated by quadrature of the truncated kernel (src/ewald/params.cpp):
///   E_R  real space, rho * int_{r > r_c} |G^R|^2 d^3r;
///   E_F  Fourier truncation, rho/(2 pi)^3 * int_{k outside the grid} |G_hat|^2 d^3k;
///   E_W  window aliasing of P2G and G2P, rho/(2 pi)^3 * int |G_hat|^2 2 sum_d A_d(k_d) d^3k with
///        A_d the alias ratio sum_{j != 0} w_hat(k + 2 pi j/h)^2 / w_hat(k)^2, plus the coherent
///        self-aliasing of a source that is also a target (dominant for small N),
/// with rho = sum |q|^2 / V taken as the local density seen by the targets (clustered sources count
/// more). Each estimate is held below 0.35 eps / sqrt(3); among admissible choices the one of least
/// modelled cost (P2P pairs, P^3 spreading/interpolation, M log M FFTs) wins. beta = 2.5 P unless
/// overridden; nu is the smallest degree whose polynomial error is negligible. Every chosen value and
/// the estimates are reported in Params; any value can be overridden (the estimates then tell what
/// the overrides give).
/// The DEFAULT tolerance is RELATIVE: eps bounds the RMS error divided by the RMS of the result over
/// the targets (for the field, also the field's RMS error relative to the field's RMS). The RMS of the
/// result is measured by a low-accuracy pilot evaluation (relative accuracy max(eps, 1e-3)) when the
/// parameters are chosen. With ToleranceKind::Absolute, eps bounds the RMS error in the result's own
/// units (potential: charge/length; velocity: force/(viscosity length)) and no pilot runs.
/// Measured errors against a converged direct Ewald sum are 0.1-0.7 eps for eps = 1e-3 ... 1e-12
/// (tests/test_ewald_accuracy.cpp).
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/core/array.hpp"
#include "elliptica/core/timer.hpp"

namespace elliptica::ewald {

enum class Kernel { Laplace, Stokeslet };
enum class ToleranceKind { Relative, Absolute };

std::string to_string(Kernel k);
/// Parses "laplace" or "stokeslet"; throws InvalidArgument otherwise.
Kernel kernel_from_string(const std::string& s);

/// User configuration of a plan. Unset optionals are chosen automatically from `tolerance`.
struct Options {
  Kernel kernel = Kernel::Laplace;
  std::array<double, 3> box{1.0, 1.0, 1.0};  ///< L1, L2, L3 > 0
  double tolerance = 1e-6;                   ///< 0 < eps < 1
  ToleranceKind tolerance_kind = ToleranceKind::Relative;
  double viscosity = 1.0;       ///< mu > 0 (stokeslet only)
  bool compute_field = false;   ///< Laplace only: also return E = -grad phi
  int threads = 0;              ///< 0: all available (OpenMP default)
  // Overrides (any subset). A grid override fixes M per axis.
  std::optional<double> xi;
  std::optional<double> rc;
  std::optional<std::array<int, 3>> grid;
  std::optional<int> window_support;  ///< P, number of grid points in the window support per axis
  std::optional<double> window_shape; ///< beta (default 2.5 P)
  std::optional<int> poly_degree;     ///< nu (default: smallest that meets the window error)
};

/// Parameters actually used, and the error estimates behind them.
struct Params {
  double xi = 0;                   ///< Ewald splitting parameter [1/length]
  double rc = 0;                   ///< real-space cutoff radius [length]
  std::array<int, 3> grid{0, 0, 0};  ///< FFT grid M per axis
  std::array<double, 3> h{0, 0, 0};  ///< grid spacing L_i / M_i
  std::array<int, 3> cells{0, 0, 0}; ///< near-field cell list, cells per axis (width >= rc)
  int P = 0;                       ///< window support in grid points
  double beta = 0;                 ///< Kaiser-Bessel shape parameter
  int poly_degree = 0;             ///< piecewise polynomial degree nu
  double eps_abs = 0;              ///< absolute RMS error target used
  double result_rms = 0;           ///< RMS of the result used to turn a relative eps into eps_abs (0 if absolute)
  double est_real = 0;             ///< estimated RMS error of the real-space truncation
  double est_fourier = 0;          ///< estimated RMS error of the Fourier truncation
  double est_window = 0;           ///< estimated RMS error of the window (spreading/interpolation)
  double est_total = 0;            ///< sqrt of the sum of squares of the three
  double est_relative = 0;         ///< est_total / result_rms (0 if not known)
  double field_eps_abs = 0;        ///< Laplace field only: absolute RMS target for E (0 otherwise)
  double field_rms = 0;            ///< Laplace field only: RMS of |E| from the pilot (0 if absolute)
  double field_est_total = 0;      ///< Laplace field only: estimated RMS error of E (all three parts)
  std::string describe() const;    ///< multi-line human-readable report
};

/// Result of one evaluation. values: (N_targets, 1) for Laplace potential, (N_targets, 3) for
/// the stokeslet velocity; field: (N_targets, 3) for the Laplace field when asked for.
struct Result {
  Array2D values;
  Array2D field;
  Params params;
  StageTimes times;  ///< seconds per stage: P2P, P2G, FFT, CNV, IFFT, G2P, self, setup
};

/// A spectral Ewald plan: configured once (kernel, box, tolerance, options), evaluated many times.
/// Parameters are chosen at the first evaluation (they depend on N and the strengths) and kept
/// while the number of points stays within a factor 2 and the sum of squared strengths within a
/// factor 4 (re-chosen otherwise); call retune() to force a new choice. Not thread-safe: use one
/// plan per thread of the caller (the plan itself runs multithreaded).
class EwaldPlan {
 public:
  /// Validates the options. Throws InvalidArgument for a box length outside [1e-100, 1e100] or
  /// non-finite, eps <= 0 or >= 1 (or a relative eps < 1e-14), non-positive viscosity, a field
  /// request with the stokeslet kernel, threads outside [0, 1024], or an out-of-range override
  /// (xi max(L) < 0.05, rc outside [1e-6 min(L), max(L)], grid outside [4, 8192], P outside
  /// [2, 32] or > M, beta outside (0, 300], degree outside [1, 30]). evaluate() throws
  /// InvalidArgument for a coordinate farther than 1e15 box lengths from the box (its periodic
  /// position is not determined in double precision; nearer ones are wrapped exactly) or a grid
  /// override above the 8 GiB grid limit; ResourceError when no parameters fit the size limits
  /// (FFT grids <= 8 GiB and 8192 points per axis, <= 1e12 P2P pair checks, <= 4 GiB of pair
  /// lists: a box of extreme aspect ratio) or the grids exceed the machine's memory
  /// (memory_limit_bytes(), core/resources.hpp), all checked before allocating; NumericalError
  /// when overrides cannot meet the tolerance, or when the result is not finite.
  explicit EwaldPlan(const Options& opts);
  ~EwaldPlan();
  EwaldPlan(EwaldPlan&&) noexcept;
  EwaldPlan& operator=(EwaldPlan&&) noexcept;

  /// Evaluates at the sources themselves (self-interaction excluded).
  /// sources: (N,3); strengths: (N,1) or (N,) charges for Laplace, (N,3) forces for stokeslet.
  /// Throws InvalidArgument on wrong shapes, mismatched lengths, N == 0, NaN/Inf.
  Result evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths);
  /// Evaluates at separate targets (N_t,3).
  Result evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                  ConstMatrixView<double> targets);

  /// Chooses parameters for these points/strengths now (normally done by the first evaluate).
  const Params& tune(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                     std::optional<ConstMatrixView<double>> targets = std::nullopt);
  void retune();
  const Options& options() const;
  /// Parameters in use (all zero before the first evaluate/tune).
  const Params& params() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Number of vector components of the strengths for a kernel (1 Laplace, 3 stokeslet).
int strength_components(Kernel k);

}  // namespace elliptica::ewald
