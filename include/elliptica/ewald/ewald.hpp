#pragma once
/// @file ewald.hpp
/// Spectrally accurate fast Ewald summation (spectral Ewald, SE) for triply periodic Laplace and
/// Stokes (stokeslet, stresslet, and both in one pass) potentials in a rectangular box, on the CPU.
///
/// Source: seed paper 000 ("A performance portable fast Ewald summation for Stokes flow"),
/// sections 2.1-2.4; Lindbo & Tornberg, J. Comput. Phys. 229 (2010) 8994 (Stokes, eqs. 2.4-2.9)
/// and 230 (2011) 8744 (Laplace); af Klinteberg & Tornberg, J. Comput. Phys. 326 (2016) 420
/// (stresslet splitting); Kaiser-Bessel window as in Shamshirgar, Bagge & Tornberg,
/// J. Chem. Phys. 154 (2021) 164109. Formulas collected in docs/ewald.md.
///
/// Free space (Options::periodicity 0P) and one or two periodic axes (1P, 2P), laplace with field
/// / energy and the stokeslet with its pressure: the same sums with images along the periodic axes only, on a grid
/// extended along the free ones with truncated Green's functions (Vico, Greengard & Ferrando,
/// J. Comput. Phys. 323 (2016) 191); docs/ewald.md section 9. The rest of this comment describes 3P.
///
/// ## What is computed
/// Box B = [0,L1) x [0,L2) x [0,L3) (lengths in [1e-100, 1e100], any aspect ratio); points outside
/// are wrapped into it exactly (fmod; the sums are periodic, so this changes nothing), up to 1e15
/// box lengths away (farther ones are refused). Sources y_n, targets x_m; by default the targets
/// are the sources.
///
/// Coincident points: a (target, source) pair whose separation modulo the period is below
/// kCoincidenceRelative * max(L) (after wrapping, so `sources + L` as targets coincide with the
/// sources) has its singular free-space term (p = 0) excluded; the smooth periodic remainder is
/// kept. This is the self-interaction exclusion when the targets are the sources; any other such
/// pair is counted in Result::coincident_pairs.
///
/// - Laplace (Gaussian units, no 1/(4 pi eps0)):
///     phi(x_m) = sum_p sum_n' q_n / |x_m - y_n + p L|,
///   Ewald "tin-foil" convention (k = 0 mode excluded). A non-neutral system gets the uniform
///   neutralising background, i.e. the shift -pi Q_tot / (xi^2 V) is included, so the result
///   does not depend on xi. Optionally the field E = -grad phi.
///   Real space:  q erfc(xi r)/r.  Fourier: (4 pi / V) sum_{k != 0} exp(-k^2/(4 xi^2))/k^2 ...
///   Self term:   -(2 xi / sqrt(pi)) q_m.
/// - Stokeslet (single layer; Hasimoto splitting), viscosity mu, forces f_n:
///     u(x_m) = 1/(8 pi mu) sum_p sum_n' S(x_m - y_n + p L) f_n,  S(r) = I/|r| + r r^T/|r|^3,
///   k = 0 excluded: zero mean velocity over the box, the mean pressure gradient balancing the
///   net force. Real space S^R(r) = erfc(xi r)(I/r + r r^T/r^3) + (2 xi/sqrt(pi)) e^{-xi^2 r^2}
///   (r r^T/r^2 - I); Fourier B(k) = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} (k^2 I - k k^T)/k^4;
///   self term -(4 xi/sqrt(pi)) f_m (Hasimoto 1959; Lindbo & Tornberg 2010, eqs. 2.6-2.9).
/// - Stresslet (double layer), dipole strengths q_n (a density times a quadrature weight) and
///   normals nu_n (the sum is bilinear in q and nu; nu is normally the unit normal):
///     u_j(x_m) = 1/(8 pi) sum_p sum_n' T_jlm(x_m - y_n + p L) q_{n,l} nu_{n,m},
///     T_jlm(r) = -6 r_j r_l r_m / |r|^5,  r = target - source  (no viscosity factor).
///   Real space: A(r)(r.q)(r.nu) r_j + B(r)[(q.nu) r_j + (r.nu) q_j + (r.q) nu_j],
///   A = -(2/r^4)[3 erfc(xi r)/r + (2 xi/sqrt(pi))(3 + 2 xi^2 r^2) e^{-xi^2 r^2}],
///   B = (4 xi^3/sqrt(pi)) e^{-xi^2 r^2}; Fourier (+i)(-8 pi/k^4)(1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)}
///   [-(k_m F_jm + k_m F_mj + k_j F_mm) k^2 + 2 k_j k_l k_m F_lm], F = q nu^T; no self term (the
///   smooth remainder of T is odd). The k = 0 term, -(8 pi/V) sum_n (q_n . nu_n)(x_m - y_n) with
///   wrapped coordinates, is dropped by default (Options::stresslet_zero_mode): it is not
///   periodic (it depends on where the box's origin is), the seed and the reference codes drop
///   it, and for a closed surface with a constant density it vanishes (sum q.nu w = 0).
/// - Stokes combined: u = stokeslet(f) + stresslet(q, nu) in one pass (seed 000, section 2.3):
///   9 spread components (f and the symmetric part of q (x) nu, all the stresslet's multiplier
///   sees), 9 forward FFTs, CNV to 3, 3 inverse FFTs, one G2P,
///   and one P2P loop evaluating both real-space kernels.
///
/// ## Algorithm
/// u = P2P (real space, cell list of columns >= r_c / 1.25 (float32: r_c) wide in x, y and z-cells
///     >= r_c / 5, per target and colleague column one run of the z-cells the sphere r < r_c reaches; pairs with
///     r < r_c evaluated in SIMD: Google Highway with run-time dispatch, SSE4 / AVX2 / AVX-512)
///   + far field: P2G (Kaiser-Bessel window of P grid points, shape beta, evaluated per bin by a
///     piecewise polynomial of degree nu with Horner's rule) -> FFT (FFTW r2c) -> CNV (diagonal
///     multiplication by the kernel's Fourier multiplier / w_hat^2 over the half spectrum)
///     -> IFFT (FFTW c2r) -> G2P,
///   + self term (own periodic images beyond r_c, background, optional stresslet k = 0 term).
/// Stages are separate units behind one backend interface (src/ewald/backend.hpp; CPU backend
/// in src/ewald/cpu/, one file per stage); kernels are traits (src/ewald/kernel_traits.hpp).
///
/// ## Plans: set points once, evaluate many times
/// set_points(sources[, targets][, normals]) stores the wrapped geometry. The parameters are
/// chosen (tune) from the first strengths seen, by tune() or by the first evaluate(); that step
/// then sorts the points into the cell list of the chosen r_c and caches the window weights of
/// every point, the erfcx series of P2P and the FFT plans. Every later evaluate(strengths) reuses all
/// of it: it is const and may be called from several threads at once (each call has its own
/// grids). Result::times has the stages "tune" and "set_points" only on the call that did them.
/// The parameters stay fixed for later strengths: the relative tolerance holds for strengths of
/// a similar spatial distribution (any overall scale); call tune() again for very different ones.
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
/// The DEFAULT tolerance is RELATIVE: eps bounds the RMS error divided by a scale of the result:
/// the larger of the RMS of the result over the targets (measured by a low-accuracy pilot
/// evaluation when the parameters are chosen) and the RMS value a single strength of RMS size
/// produces at the mean inter-particle spacing a = (V/N)^(1/3) (q/a for potentials and velocities,
/// q/a^2 for the field and the stresslet). The floor keeps the target finite when the result is
/// zero by symmetry (a single ion's field, an ionic crystal). For the field the same holds
/// separately. With ToleranceKind::Absolute, eps bounds the RMS error in the result's own units
/// (potential: charge/length; velocity: force/(viscosity length)) and no pilot runs.
/// Measured errors against a converged direct Ewald sum are 0.1-0.7 eps for eps = 1e-3 ... 1e-12
/// (tests/test_ewald_accuracy.cpp).
#include <array>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/core/array.hpp"
#include "elliptica/core/timer.hpp"

namespace elliptica::ewald {

enum class Kernel { Laplace, Stokeslet, Stresslet, StokesCombined };
enum class ToleranceKind { Relative, Absolute };
/// Arithmetic of the stages (P2P, P2G, FFT, CNV, IFFT, G2P). Coordinates are wrapped into the
/// box in double precision before any float32 arithmetic; results are returned as float64.
enum class Precision { Single, Double };
/// Implementation of the P2G and G2P stages (benchmarking; the results agree to round-off).
/// CellOrdered (default): window weights cached at set_points, sources spread in slabs of
/// x-planes owned by threads (no atomics) into a padded grid folded periodically; targets gather
/// from the unfolded padded grid. Baseline (the seed's P2G-base / G2P-base): points in input
/// order, window weights evaluated per point, periodic index wrap in the loops, threads over
/// points with atomic grid updates (P2G).
enum class P2GVariant { CellOrdered, Baseline };
inline constexpr P2GVariant kDefaultP2GVariant = P2GVariant::CellOrdered;

/// "single", "double".
std::string to_string(Precision p);
/// Parses "single"/"float32" or "double"/"float64"; throws InvalidArgument otherwise.
Precision precision_from_string(const std::string& s);

/// How FFTW plans the plan's transforms (Options::fft_planner). FFTW_ESTIMATE picks a plan from
/// heuristics in ~1 ms but is up to 2x slower at some sizes (measured here: 90^3, 96^3, 144^3;
/// bench/fftw_planner.cpp); FFTW_MEASURE times candidate plans (0.2-1 s per grid) and keeps the
/// fastest. A plan's results do not depend on its planner beyond rounding.
enum class FftPlanner {
  Estimate,  ///< FFTW_ESTIMATE at set_points; the tuner uses the cost model's FFT term
  Measure,   ///< FFTW_MEASURE at set_points, every time (nothing is read from or written to the cache)
  /// FFTW_MEASURE once per machine, grid, precision, components and threads, kept as FFTW wisdom
  /// with the measured transform times in the per-machine cache (fft_wisdom_file()); later plans
  /// read it (~1 ms). The tuner ranks its best candidate grids by these measured times (measuring
  /// the ones the cache lacks), so slow sizes are not chosen. ELLIPTICA_EWALD_FFT_WISDOM: unset or
  /// "auto" the cache file; "memory" measure once per process, no file; "off" plan as Estimate
  /// (test suites that make thousands of plans).
  Wisdom,
};
inline constexpr FftPlanner kDefaultFftPlanner = FftPlanner::Wisdom;
/// "estimate", "measure", "wisdom".
std::string to_string(FftPlanner p);
/// Parses the names of to_string(FftPlanner); throws InvalidArgument otherwise.
FftPlanner fft_planner_from_string(const std::string& s);

/// "laplace", "stokeslet", "stresslet", "stokes-combined".
std::string to_string(Kernel k);
/// Parses the names of to_string(); throws InvalidArgument otherwise.
Kernel kernel_from_string(const std::string& s);

/// Which axes are periodic (Options::periodicity): {x, y, z}. 3P = all, 0P = none (free space).
using Periodicity = std::array<bool, 3>;
/// "3P" (all periodic), "0P" (none), "2P" (x and y periodic, z free), "1P" (z periodic, x and y
/// free) for those, otherwise the periodic axes' letters ("xz", "y", ...).
std::string to_string(const Periodicity& p);
/// Parses "3P", "2P" (x, y periodic), "1P" (z periodic), "0P", or the periodic axes as letters
/// ("xyz", "xy", "z", ..., "none"); throws InvalidArgument otherwise.
Periodicity periodicity_from_string(const std::string& s);

/// Points closer than this times the longest box length (modulo the period, after wrapping) are
/// coincident: their singular p = 0 term is excluded (see the file comment).
inline constexpr double kCoincidenceRelative = 1e-13;

/// User configuration of a plan. Unset optionals are chosen automatically from `tolerance`.
struct Options {
  Kernel kernel = Kernel::Laplace;            ///< the sum to evaluate
  /// L1, L2, L3 in [1e-100, 1e100]: the period of each periodic axis. Not used along a free axis
  /// (0P: the points' bounding box is the domain; see periodicity).
  std::array<double, 3> box{1.0, 1.0, 1.0};
  /// Periodic axes {x, y, z}: {true, true, true} (3P, default), none (0P: free space), two (2P,
  /// e.g. x and y: a slab) or one (1P, e.g. z: a line or channel). Every kernel (laplace with the
  /// field and energy, the stokeslet with its pressure, the stresslet, stokes-combined), images
  /// along the periodic axes only, no neutrality needed, by the truncated-kernel method (Vico, Greengard & Ferrando 2016) on a grid about
  /// twice the points' extent along each free axis (docs/ewald.md section 9). Along a free axis
  /// the points may be anywhere (|x| <= 1e100) and box[d] is not used. The k = 0 conventions of
  /// the divergent lattice sums (per unit charge / force, A the cell area, L the period):
  /// 2P -2 pi |z| / A (laplace), -4 pi |z| (I - e_z e_z^T) / A (8 pi mu u, stokeslet);
  /// 1P -2 ln(rho) / L (laplace), (-2 ln(rho) I_perp + 2 rho^ rho^^T) / L across the line and
  /// (-4 ln(rho) - 2) / L along it (8 pi mu u), rho in the caller's length unit: the image sum
  /// over |p| <= P minus (2 / L) ln(2 (P + 1/2) L) (times I + e_z e_z^T), P -> infinity.
  /// The stokeslet's pressure: 1/(4 pi) sum_a E_a[f_a] (the Laplace field of the force components
  /// with the same conventions: 2P 2 pi sign(z) f_z / A per sheet). The stresslet's lattice sums
  /// converge (T ~ 1/r^2, odd): 2P's k_par = 0 mode is the dipole sheet's -4 pi sign(z) / A on
  /// T_zzz, T_zaa (a periodic; the plane integral of T), 1P's k_z = 0 mode the line integral of T
  /// (-8 rho rho rho / rho^4 across, -4 rho_j / rho^2 on T_jzz); no constants. Refused
  /// (InvalidArgument): the grid override, stresslet_zero_mode (a 3P term).
  Periodicity periodicity{true, true, true};
  double tolerance = 1e-6;                    ///< 0 < eps < 1 (relative eps >= 1e-14)
  ToleranceKind tolerance_kind = ToleranceKind::Relative;  ///< how eps is read (see the file comment)
  double viscosity = 1.0;       ///< mu > 0 (stokeslet and the single layer of stokes-combined)
  bool compute_field = false;   ///< Laplace only: also return E = -grad phi
  bool compute_pressure = false;  ///< stokeslet only: also return the pressure p (see Result::pressure)
  bool stresslet_zero_mode = false;  ///< stresslet / stokes-combined: add the k = 0 term (default off)
  Precision precision = Precision::Double;  ///< float32 or float64 stages (single: eps >= single_precision_floor(M, N))
  bool compute_energy = false;  ///< Laplace, targets = sources: also U = 1/2 sum q phi and forces F = q E
  /// Laplace with compute_field or compute_energy: false leaves the potential out (Result::values
  /// empty). The far field then transforms and interpolates E's 3 components instead of 4, and the
  /// energy's Fourier part is summed by Parseval on the spread grid in CNV (G2P is the adjoint of
  /// P2G: sum_n q_n phi_F(y_n) = sum_k c G_hat(k) |H_hat(k)|^2 / w_hat(k)^2), equal to the full
  /// path's energy to rounding (P2GVariant::Baseline evaluates the full path and drops the values).
  /// For molecular dynamics, which needs U and F only.
  bool compute_potential = true;
  int threads = 0;              ///< 0: all available (OpenMP default), else [1, 1024]
  /// How the FFTs are planned (see FftPlanner): by default from the per-machine wisdom cache,
  /// measured once per grid; results agree with every planner to rounding.
  FftPlanner fft_planner = kDefaultFftPlanner;
  P2GVariant p2g_variant = kDefaultP2GVariant;  ///< P2G/G2P implementation (benchmarking; see P2GVariant)
  /// P2P by pair symmetry (Newton's third law): in double precision, with the targets the
  /// sources, r_c < min(L)/2 and the per-thread arrays of the reverse terms (threads x N x outputs
  /// x 8 bytes) within 1 GiB, each pair within r_c is evaluated once, for both of its points
  /// (every kernel; P2P 0.6-0.8 of the one-sided time; results equal to rounding, the same bits on
  /// every run with the same threads). float32 sums one-sided (there it did not pay). false: each
  /// target sums over all of its sources (benchmarking). Ignored where it does not apply
  /// (Result::p2p.pair_symmetry says whether it did).
  bool pair_symmetry = true;
  // Overrides (any subset). A grid override fixes M per axis.
  std::optional<double> xi;            ///< splitting parameter, 0.05 <= xi max(L), xi min(L) <= 1e6
  std::optional<double> rc;            ///< real-space cutoff, [1e-6 min(L), max(L)]
  std::optional<std::array<int, 3>> grid;  ///< FFT grid M per axis, [4, 8192]
  std::optional<int> window_support;  ///< P, number of grid points in the window support per axis, [2, 32]
  std::optional<double> window_shape; ///< beta (default 2.5 P), (0, 300]
  std::optional<int> poly_degree;     ///< nu (default: smallest that meets the window error), [1, 30]
};

/// Parameters actually used, and the error estimates behind them.
struct Params {
  double xi = 0;                   ///< Ewald splitting parameter [1/length]
  double rc = 0;                   ///< real-space cutoff radius [length]
  std::array<int, 3> grid{0, 0, 0};  ///< FFT grid M per axis
  std::array<double, 3> h{0, 0, 0};  ///< grid spacing L_i / M_i
  std::array<int, 3> cells{0, 0, 0}; ///< near-field cell list, cells per axis (width >= rc / 1.25 in x, y (float32: rc); >= rc / 5 in z)
  int P = 0;                       ///< window support in grid points
  double beta = 0;                 ///< Kaiser-Bessel shape parameter
  int poly_degree = 0;             ///< piecewise polynomial degree nu
  double eps_abs = 0;              ///< absolute RMS error target used
  double result_rms = 0;           ///< RMS of the result used to turn a relative eps into eps_abs (0 if absolute)
  double result_scale = 0;         ///< the scale a relative eps multiplies: max(result_rms, floor) (0 if absolute)
  double est_real = 0;             ///< estimated RMS error of the real-space truncation
  double est_fourier = 0;          ///< estimated RMS error of the Fourier truncation
  double est_window = 0;           ///< estimated RMS error of the window (spreading/interpolation)
  double est_total = 0;            ///< sqrt of the sum of squares of the three
  double est_relative = 0;         ///< est_total / result_scale (0 if not known)
  // The second quantity: the Laplace field, or the stokeslet's pressure (times 8 pi mu).
  double field_eps_abs = 0;        ///< Laplace field only: absolute RMS target for E (0 otherwise)
  double field_rms = 0;            ///< Laplace field only: RMS of |E| from the pilot (0 if absolute)
  double field_scale = 0;          ///< Laplace field only: max(field_rms, floor) (0 if absolute)
  double field_est_total = 0;      ///< Laplace field only: estimated RMS error of E (all three parts)
  /// The box of the FFT grid (M_i h_i): Options::box along periodic axes; along a free axis the
  /// extended length that holds the points' extent twice plus the window (the aperiodic
  /// convolution's zero padding).
  std::array<double, 3> fft_box{0, 0, 0};
  /// 0P: R, the radius at which the Green's function is truncated (the extended box's half
  /// diagonal plus the screening's and the window's reach, so every pair of grid points within
  /// the data is closer than R); 1P / 2P: the same across the free axes for the zero mode k_p = 0
  /// (1P: the line's log truncated at R; 2P: the sheet tapered to 0 by R); 0 in 3P.
  double truncation_radius = 0;
  std::string describe() const;    ///< multi-line human-readable report
};

/// Work of the P2P stage in one evaluation (diagnostics, e.g. for flop counts and the cost model).
struct P2PCounts {
  std::size_t candidates = 0;  ///< (target, source) distance tests (the runs of cells scanned)
  std::size_t pairs = 0;       ///< pairs with coincidence <= r < r_c whose kernel was evaluated (once per pair with pair_symmetry)
  int series_degree = 0;       ///< degree of the erfcx Chebyshev series (from the tolerance)
  int exp_degree = 0;          ///< degree of the Taylor polynomial of exp(-xi^2 r^2) (from the tolerance)
  bool pair_symmetry = false;  ///< each pair evaluated once for both points (Options::pair_symmetry applied)
};

/// Result of one evaluation. values: (N_targets, 1) for the Laplace potential (empty, 0 x 1, with
/// Options::compute_potential false), (N_targets, 3) for the Stokes velocities; field:
/// (N_targets, 3) for the Laplace field when asked for.
struct Result {
  Array2D values;
  Array2D field;
  Params params;
  StageTimes times;  ///< seconds per stage: tune, set_points (first call only), P2P, P2G, FFT, CNV, IFFT, G2P, self
  std::size_t coincident_pairs = 0;  ///< (target, source) pairs coincident modulo the period, other than a source with itself
  P2PCounts p2p;  ///< work of the P2P stage of this evaluation
  /// Stokeslet with compute_pressure: p(x_m) = 1/(4 pi) sum_p sum_n' f_n . r / |r|^3, r = x_m - y_n + pL
  /// (N_t,1), k = 0 excluded (zero mean pressure over the box; the mean gradient balancing the net
  /// force is not included); independent of the viscosity. Empty otherwise.
  Array2D pressure;
  /// Laplace with compute_energy: U = 1/2 sum_n q_n phi(y_n) (Gaussian units: charge^2/length),
  /// excluded pairs removed (with compute_potential false the far field's part by Parseval, see
  /// Options::compute_potential); NaN otherwise.
  double energy = std::numeric_limits<double>::quiet_NaN();
  /// Laplace with compute_energy: F_n = q_n E(y_n) (N,3), excluded pairs removed; empty otherwise.
  Array2D forces;
};

/// The strengths of one evaluation (row-major; rows = number of sources).
struct Densities {
  /// Laplace: charges (N,1); stokeslet and stokes-combined: forces f (N,3); stresslet: empty.
  ConstMatrixView<double> strengths;
  /// Stresslet and stokes-combined: dipole strengths q (N,3) (density times quadrature weight); else empty.
  ConstMatrixView<double> dipoles;
};

/// A spectral Ewald plan: configured once (kernel, box, tolerance, options), then points set
/// once and strengths evaluated many times (see the file comment).
class EwaldPlan {
 public:
  /// Validates the options. Throws InvalidArgument for a box length outside [1e-100, 1e100] or
  /// non-finite, eps <= 0 or >= 1 (or a relative eps < 1e-14), non-positive viscosity, a field
  /// request with a Stokes kernel, the zero mode with a kernel without a stresslet, threads
  /// outside [0, 1024], or an out-of-range override (ranges at Options).
  explicit EwaldPlan(const Options& opts);
  ~EwaldPlan();
  EwaldPlan(EwaldPlan&&) noexcept;
  EwaldPlan& operator=(EwaldPlan&&) noexcept;

  /// Sets the geometry: sources (Ns,3), optional separate targets (Nt,3) (Nt may be 0: every
  /// evaluation then returns empty results), and for the stresslet / stokes-combined the normals
  /// nu (Ns,3) (required there, refused otherwise). Copies and wraps the coordinates. The chosen
  /// parameters are kept when Ns and Nt stay within a factor 2 (the next evaluate re-checks the
  /// strengths' density and re-tunes when it changed by more than 4x). Throws InvalidArgument for
  /// wrong shapes, Ns = 0, NaN/Inf, or a coordinate farther than 1e15 box lengths from the box.
  void set_points(ConstMatrixView<double> sources, std::optional<ConstMatrixView<double>> targets = std::nullopt,
                  std::optional<ConstMatrixView<double>> normals = std::nullopt);

  /// Excluded pairs (Laplace, targets = the sources): for each (i, j), i != j, the direct
  /// interaction q_j / |r_ij| (nearest periodic image, as PME codes do for bonded atoms) is
  /// removed from phi(y_i) and q_i / |r_ij| from phi(y_j), and likewise from the fields, the
  /// energy and the forces. pairs: (K,2) row-major indices into the sources (K may be 0: none);
  /// a pair listed twice is removed twice. Throws InvalidArgument for another kernel, separate
  /// targets, an index out of range or i == j. Kept until the next set_points or set_exclusions.
  void set_exclusions(const std::vector<std::array<std::int64_t, 2>>& pairs);

  /// Chooses the parameters for these strengths now (otherwise the first evaluate does) and
  /// prepares the set_points caches. Throws as evaluate, and InvalidArgument when all strengths
  /// are zero. Requires set_points.
  const Params& tune(const Densities& d);

  /// Evaluates the sum at the targets. Thread-safe (const; tuning on the first call is
  /// serialised). Throws InvalidArgument for strengths of the wrong shape or count, NaN/Inf, or
  /// no set_points; ResourceError when no parameters fit the size limits (FFT grids <= 8 GiB and
  /// 8192 points per axis, <= 1e12 P2P pair checks, <= 4 GiB of pair lists) or the machine's
  /// memory (all checked before allocating); NumericalError when overrides cannot meet the
  /// tolerance, the tolerance is below round-off, or the result is not finite.
  Result evaluate(const Densities& d) const;
  /// evaluate({strengths, {}}): Laplace charges or stokeslet forces.
  Result evaluate(ConstMatrixView<double> strengths) const;

  /// One-shot forms (Laplace and stokeslet): set_points then evaluate. sources (N,3), strengths
  /// (N,1) or (N,3), targets (N_t,3).
  Result evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths);
  Result evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                  ConstMatrixView<double> targets);
  /// One-shot tune (Laplace and stokeslet): set_points then tune.
  const Params& tune(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                     std::optional<ConstMatrixView<double>> targets = std::nullopt);

  /// Forgets the chosen parameters: the next evaluate or tune chooses them again.
  void retune();
  const Options& options() const;
  /// Parameters in use (all zero before the first tuning).
  Params params() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Smallest relative tolerance a single-precision plan accepts with FFT grid M and N points:
/// 2 u sqrt(log2(M1 M2 M3) + log2(N)), u = 2^-24 the float32 unit roundoff (5.7e-7 for M = 64^3,
/// N = 1e4; 7.5e-7 for M = 160^3, N = 1e5). The RMS rounding error of the FFT and of the
/// sums of the stages grows as u sqrt(log of their lengths) (Higham, Accuracy and Stability of
/// Numerical Algorithms, 2002, section 24.1); the factor 2 is measured: float32 results stay
/// below eps down to 2.5 u for N up to 1e5 and every kernel (docs/ewald.md, "Single precision").
/// A single-precision plan whose chosen grid puts eps below this throws NumericalError.
double single_precision_floor(const std::array<int, 3>& grid, std::size_t n_points);

/// Number of vector components of Densities::strengths for a kernel (1 Laplace, 3 stokeslet and
/// stokes-combined, 0 stresslet).
int strength_components(Kernel k);
/// True for the kernels with a double layer (stresslet, stokes-combined): dipoles and normals.
bool has_double_layer(Kernel k);
/// Components of Result::values (1 Laplace, 3 otherwise).
int value_components(Kernel k);


// ---------------------------------------------------------------------------------------------
// Cost model of the parameter choice, measured per machine (seed 000, section 5)

/// Kernel variants of the cost model (the index of CostConstants::p2p_check and p2p_pair):
/// 0 laplace, 1 laplace with the field, 2 stokeslet, 3 stokeslet with the pressure, 4 stresslet,
/// 5 stokes-combined.
inline constexpr int kCostVariants = 6;
/// The variant of a kernel: second_quantity is the Laplace field (compute_field or
/// compute_energy) or the stokeslet's pressure (compute_pressure).
int cost_variant(Kernel k, bool second_quantity);
/// "laplace", "laplace-field", "stokeslet", "stokeslet-pressure", "stresslet", "stokes-combined";
/// throws InvalidArgument for v outside [0, kCostVariants).
std::string cost_variant_name(int v);

/// Constants of the cost model that chooses (r_c, xi, M, P) among the parameter sets meeting the
/// tolerance: seconds of one core per unit of work (all finite and > 0), for one precision.
/// The modelled time of one evaluation (src/ewald/params.cpp, model_cost) is, for Ns sources, Nt
/// targets, n_src values per source, n_grid / n_out grid components, colleague list of the cell grid:
///   P2P  p2p_cell  * occupied target cells
///      + p2p_column * targets x columns of colleague cells (the set-up of a target's source runs)
///      + p2p_check[v] * (target, source) distance tests (the sources of the runs)
///      + p2p_pair[v]  * pairs within r_c (Nt Ns 4/3 pi r_c^3 / V for uniform points)
///        (the distance tests and pairs halved where Options::pair_symmetry applies)
///   P2G  p2g_scale[v] Ns P^2 (window_row + spread P n_grid) + grid_pass n_grid (M1+2P)(M2+2P)(M3+2P)
///   G2P  g2p_scale[v] Nt P^2 (window_row + interp P n_out)  + grid_pass n_out  (M1+2P)(M2+2P)(M3+2P)
///        (spread, interp and window_row fitted on small grids that stay in cache; the per-variant
///        scales are the measured point work over that fit on a grid out of cache, 1e5 points on
///        128^3 with P = 8, 24 windows overlapping at a grid point as in the tuned plans of 0.1-1 s;
///        measured on the development machine: float64 P2G 1.3-1.9, G2P 1.5-1.7, float32 P2G
///        0.9-1.3, G2P 1.1-1.5 and 3-4 with 4 output components; clamped to [0.5, 4], also when
///        read from a file; skipped (scales 1) when the machine has too little memory for it)
///   FFT  fft(M) M log2(M) (n_grid + n_out), M = M1 M2 M3,
///        fft(M) = fft * max(0.5, 1 + fft_growth (log2 M - 18)) (larger transforms leave the caches)
///   CNV  M1 M2 (M3/2 + 1) (cnv_mode + cnv_component (n_grid + n_out))
/// divided by the number of threads. window_eval (per point and axis) is the set_points stage's
/// window evaluation, reported but not part of the choice (it does not depend on r_c).
struct CostConstants {
  Precision precision = Precision::Double;
  /// Where the values come from: "builtin" (ELLIPTICA_EWALD_COSTS=builtin, or no measurement
  /// possible), "measured" (in this process), "cache" (the per-machine cache file) or "file"
  /// (ELLIPTICA_EWALD_COSTS=PATH).
  std::string source = "builtin";
  std::string file;         ///< the cache or constants file read or written ("" if none)
  std::string cpu;          ///< CPU model name (/proc/cpuinfo), "unknown" if not found
  std::string simd_target;  ///< SIMD instruction set of P2P's run-time dispatch (e.g. "AVX3", "AVX2")
  std::string version;      ///< library version the constants were measured with
  std::string build;        ///< "release", "debug", "asan" or "tsan"
  std::string measured_at;  ///< UTC time of the measurement (ISO 8601), "" for builtin
  double measure_seconds = 0;  ///< wall time the measurement took
  double p2p_cell = 0, p2p_column = 0;
  std::array<double, kCostVariants> p2p_check{}, p2p_pair{};
  double spread = 0, interp = 0, window_row = 0, grid_pass = 0;
  std::array<double, kCostVariants> p2g_scale{}, g2p_scale{};  ///< P2G / G2P point work out of cache (1 builtin)
  double fft = 0, fft_growth = 0;
  double cnv_mode = 0, cnv_component = 0;
  double window_eval = 0;
};

/// The built-in constants of precision p (deterministic; the same for every machine).
CostConstants builtin_cost_constants(Precision p);

/// The revision of the cost model's terms (the "model" of a constants file's entries; entries of
/// another revision are skipped when a file or the cache is read).
int cost_model_revision();

/// The constants the parameter choice of this process uses for precision p, per the environment
/// variable ELLIPTICA_EWALD_COSTS, decided on the first call (thread-safe; later calls return the
/// same values until calibrate_costs() replaces them):
///   unset or "auto": the per-machine cache file (cost_cache_file()) when it has an entry for this
///     CPU model, SIMD target, library version, build and precision; otherwise they are measured
///     (about 2-4 s, one thread) and written to the cache (atomically: a temporary file renamed
///     into place). A corrupt cache file is ignored and replaced; an unwritable or missing cache
///     directory keeps the measurement in memory. Never throws for cache problems.
///   "builtin": builtin_cost_constants(p), no measurement (use it where the parameter choice must
///     be the same on every machine, e.g. tests).
///   a file name: the entry for precision p of that file (written by `elliptica ewald calibrate
///     --output FILE` or a cache file; the built-in constants when it has no entry for p).
///     Throws IOError when the file cannot be read or is not a constants file.
CostConstants cost_constants(Precision p);

/// Measures the constants of precision p now: small CPU-backend evaluations on one thread
/// (uniform random points in the unit cube, every kernel variant; about 2-4 s, up to about 0.5 GB), fitted by
/// non-negative least squares. With write_cache (default) the entry is written to the cache
/// file (CostConstants::file says where; "" when it could not be written, which is not an error).
/// Unless ELLIPTICA_EWALD_COSTS is "builtin" or a file name, the process then uses the new values.
/// Throws ResourceError only when memory runs out.
CostConstants calibrate_costs(Precision p, bool write_cache = true);

/// The cache file: $ELLIPTICA_CACHE_DIR/ewald_costs.json, else $XDG_CACHE_HOME/elliptica/...,
/// else $HOME/.cache/elliptica/...; "" when none of these variables is set.
std::string cost_cache_file();

/// A JSON object of the constants and their key (precision, cpu, simd_target, version, build,
/// source, measured_at, measure_seconds, the constants; p2p_check, p2p_pair, p2g_scale and g2p_scale
/// as objects keyed by cost_variant_name()). indent: spaces before every line but the first.
std::string cost_constants_json(const CostConstants& c, int indent = 0);

/// The text of a constants file (the cache's format: {"format": "elliptica-ewald-costs",
/// "format_version": 1, "entries": [cost_constants_json of each]}).
std::string cost_constants_file_json(const std::vector<CostConstants>& entries);
/// Writes cost_constants_file_json(entries) to path atomically (a temporary file in the same
/// folder renamed into place). Throws IOError when it cannot be written.
void write_cost_constants(const std::string& path, const std::vector<CostConstants>& entries);

// ---------------------------------------------------------------------------------------------
// FFT wisdom cache (FftPlanner::Wisdom)

/// One measured FFT problem of the wisdom cache: `forward` r2c and `backward` c2r transforms of
/// an M1 x M2 x M3 grid (FFTW's batched plans, as a plan's FFT and IFFT stages run them) on
/// `threads` threads; the wall seconds of one execution of each plan (best of 3, after one warm-up).
struct FftTiming {
  Precision precision = Precision::Double;
  std::array<int, 3> grid{0, 0, 0};
  int forward = 0, backward = 0, threads = 1;
  double forward_seconds = 0, backward_seconds = 0;
};

/// The wisdom cache file: ewald_fft_wisdom.json in the cost model's cache folder (see
/// cost_cache_file()); "" when no folder is known. It holds FFTW's wisdom of both precisions and
/// the FftTiming of every problem measured, for one CPU model and FFTW version (a file of another
/// is replaced). A corrupt or unwritable file is ignored (the wisdom is then kept in memory).
std::string fft_wisdom_file();

/// The measured problems this process knows (read from the cache, or measured since).
std::vector<FftTiming> fft_wisdom_entries();

/// Forgets FFTW's wisdom of both precisions and the timings (this process's and, unless
/// ELLIPTICA_EWALD_FFT_WISDOM is "memory" or "off", the cache file's), then measures again every
/// problem that was known and those of `problems` (their *_seconds are ignored), and writes the
/// cache (`elliptica ewald fft-wisdom --rebuild`). Returns the new entries. Plans made before keep
/// their plans. With ELLIPTICA_EWALD_FFT_WISDOM=off nothing is measured (returns no entries).
/// Throws InvalidArgument for a problem with a grid outside [4, 8192] or counts outside [1, 12],
/// threads outside [1, 1024]; ResourceError when its arrays do not fit in memory.
std::vector<FftTiming> rebuild_fft_wisdom(const std::vector<FftTiming>& problems = {});

}  // namespace elliptica::ewald
