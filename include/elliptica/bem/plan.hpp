#pragma once
/// @file plan.hpp
/// The Helmholtz BEM plan (seed 001, the FMBEM of its section 2 with the BD preconditioner of its
/// section 3): mesh + wavenumber + boundary condition + options, configured once (operator
/// assembly or FMM set-up, preconditioner factorisation), then solve() for any number of incident
/// fields, far-field patterns and scattered fields from each solution.
///
/// System (piecewise-constant collocation at the centroids, Burton-Miller; helmholtz.hpp has the
/// derivation and the sign conventions):
///   sound-hard (Neumann):   (1/2 I - K - alpha W) u = u_inc + alpha du_inc/dn,   unknown: total u
///   sound-soft (Dirichlet): (1/2 I + K' + beta S) q = du_inc/dn + beta u_inc,    unknown: q = du/dn
///   beta = 1/alpha; by default alpha = default_alpha(mesh, k) = i / max(k, 4/D), D = body_size
///   (helmholtz.hpp: the cap keeps both formulations accurate as k -> 0; sources there); alpha()
///   reports the value used. Sound-hard at low frequency: static correction of the diagonal below
///   k D = kStaticCorrectionKD, GMRES on u - c 1, refusal below k D = kMinSoundHardKD
///   (helmholtz.hpp, "Low frequency").
/// Operator:
///   - Dense: the N x N matrix (assemble_dense), 16 N^2 bytes, O(N^2) set-up and matvec;
///   - Fmm:   HelmholtzBemFmmOperator (fmm_operator.hpp): exact near-field entries for elements in
///            adjacent octree leaves + the Chebyshev black-box FMM for the rest, O(N) memory and
///            O(N) work per matvec at fixed k (low frequency);
///   - Auto:  Dense up to dense_max_elements elements, Fmm above.
/// Solver: GMRES(m) of the krylov module, right-preconditioned, to the relative residual
/// gmres.rtol; preconditioner none or block-diagonal (BD: LU of the self block of every octree box
/// at level l_BD, the leaf level by default; with the FMM operator the blocks are read from the
/// stored near field, with the dense operator from the matrix).
/// Tolerances: gmres.rtol >= kMinGmresRtol = 1e-12 for both operators (GMRES reaches true
/// relative residuals of about 1e-15 on the dense and on the FMM operator, a fixed linear map;
/// docs/bem.md "Tolerances"). The FMM's accuracy is op.fmm.tolerance, by default (0) min(gmres.rtol,
/// 1e-3); its order is capped at 16 Chebyshev nodes, which reaches about 5e-11 at small k x box
/// width (fmm::min_tolerance): a smaller automatic or explicit FMM tolerance is refused when the
/// FMM is set up, before its expensive part. A gmres.rtol below an explicit op.fmm.tolerance is
/// attainable but does not make the solution more accurate than cond(A) x fmm_tolerance.
///
/// Errors: InvalidArgument (bad mesh, k, options, tolerances below the floors above, sound-hard k
/// below the low-frequency floor: see validate(), HelmholtzBemFmmOperator,
/// BlockDiagonalPreconditioner), NumericalError (a singular BD block, or one whose LU overflows),
/// NotConverged (GMRES misses gmres.rtol within gmres.max_iterations and throw_if_not_converged
/// is set).
/// Threads: options().threads for every parallel part (local num_threads clauses, no global
/// OpenMP state); results agree to rounding for any thread count.
#include <array>
#include <complex>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/ifmm_preconditioner.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/fmm/helmholtz_fmm.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem {

enum class OperatorKind { Auto, Dense, Fmm };
/// The one preconditioner kind of the BEM (plan options, solve_preconditioned, set-up reports).
enum class PreconditionerKind { None, BlockDiagonal, Ifmm };

/// "auto" / "dense" / "fmm" and "none" / "bd" / "ifmm" (InvalidArgument otherwise); and back.
OperatorKind operator_kind_from_string(const std::string& s);
PreconditionerKind preconditioner_kind_from_string(const std::string& s);
std::string to_string(OperatorKind k);
std::string to_string(PreconditionerKind k);

/// The FMM options of a default plan: those of fmm::HelmholtzFmmOptions except
///   tolerance = 0      automatic: min(gmres.rtol, 1e-3), so that the matvec error stays below
///                      the GMRES tolerance (or 0.1% when that is looser); explicit values in
///                      (1e-14, 0.5), refused below fmm::min_tolerance (about 5e-11, order cap 16);
///   tree.max_leaf = 64 mu: max elements per octree leaf, of the FMM tree and of the BD tree of
///                      the dense operator (the FMM may use a shallower tree so that its leaves
///                      stay wider than the elements: fmm_operator.hpp);
///   near_field = false the operator supplies the exact near-field entries itself.
/// Its `threads` is ignored by the plan (HelmholtzBemOptions::threads is used).
inline fmm::HelmholtzFmmOptions default_bem_fmm_options() {
  fmm::HelmholtzFmmOptions o;
  o.tolerance = 0;
  o.tree.max_leaf = 64;
  o.near_field = false;
  return o;
}

/// The GMRES options of a default plan: rtol 1e-5, restart 50, max_iterations 1000 (the CLI and
/// Python read these, they have no literals of their own). rtol in [kMinGmresRtol, 1); sound-hard:
/// relative to the residual of the constant fit (helmholtz.hpp, "Low frequency" (2)). Its
/// `threads` is ignored by the plan (HelmholtzBemOptions::threads is used); its `progress` is the
/// per-iteration callback of solve() when solve() is given none.
inline krylov::Options default_bem_gmres_options() {
  krylov::Options o;
  o.rtol = 1e-5;
  o.restart = 50;
  o.max_iterations = 1000;
  return o;
}

/// Which system operator the plan builds.
struct OperatorOptions {
  OperatorKind kind = OperatorKind::Auto;  ///< Auto: Dense up to dense_max_elements elements, else Fmm
  std::size_t dense_max_elements = 4000;
  /// FMM (kind Fmm): tolerance (0: automatic), order (0: from tolerance and k), tree (max_leaf =
  /// mu, also the BD tree of the dense operator), compression, box-size limit; see
  /// default_bem_fmm_options().
  fmm::HelmholtzFmmOptions fmm = default_bem_fmm_options();
};

/// The right preconditioner of GMRES.
struct PreconditionerOptions {
  PreconditionerKind kind = PreconditionerKind::BlockDiagonal;
  int bd_level = -1;  ///< l_BD: octree level of the BD blocks (>= 0), -1: the leaf level
  /// kind Ifmm (seed 001's IFMM preconditioner; needs the FMM operator, which op.kind Auto then
  /// chooses): epsilon, sigma, top (tau), bottom (l), order and depth of its tree
  /// (ifmm_preconditioner.hpp); its threads and progress are set by the plan.
  IfmmPreconditionerOptions ifmm;
};

/// Options of the one BEM plan (HelmholtzBem). Every default lives here; the CLI and the Python
/// package read a default-constructed HelmholtzBemOptions.
struct HelmholtzBemOptions {
  BoundaryCondition bc = BoundaryCondition::Neumann;
  std::optional<cplx> alpha;             ///< Burton-Miller coupling (finite, != 0); default default_alpha(mesh, k)
  QuadratureOptions quadrature;          ///< singular/near/far quadrature of the entries
  OperatorOptions op;                    ///< dense or FMM operator
  PreconditionerOptions precond;         ///< none or BD
  krylov::Options gmres = default_bem_gmres_options();  ///< rtol, restart, max_iterations (progress: see there)
  bool throw_if_not_converged = true;    ///< NotConverged when GMRES misses gmres.rtol
  /// Locally reacting impedance (Robin) surface, bc Neumann only: the normalised specific acoustic
  /// admittance beta = rho c / Z of each element (N values, or 1 for every element; empty: rigid,
  /// i.e. sound-hard). The boundary condition becomes du/dn = -i k beta u (+ g of solve_radiation),
  /// n out of the body (acoustics.hpp: derivation, check by the plane-wall reflection coefficient
  /// R = (Z - rho c) / (Z + rho c), admittance_from_impedance). Each value finite with Re beta >= 0
  /// (a passive surface: the exterior problem is then uniquely solvable). The system becomes
  ///   (1/2 I - K - alpha W) u + (S + alpha (1/2 I + K')) (-i k beta u) = u_inc + alpha du_inc/dn,
  /// i.e. A_N + alpha A_D diag(-i k beta) with A_N, A_D the sound-hard and sound-soft systems;
  /// with the FMM operator both are FMM operators (twice the set-up and matvec work of a rigid
  /// body); the IFMM preconditioner does not take it (InvalidArgument).
  std::vector<cplx> admittance;
  /// A rigid or pressure-release plane bounding the half-space the body lies in (helmholtz.hpp,
  /// GroundPlane: method of images). Both operators: the dense one adds the image entries, the FMM
  /// operator runs over the body and its images (FmmOperatorOptions::planes, about (1 + M) times
  /// the FMM work for M images); the IFMM preconditioner is refused (InvalidArgument).
  /// solve_plane_wave / solve_monostatic / plane_wave()
  /// and point_source() of this plan add the reflected incident field; far_field and
  /// scattered_field add the image; points below the plane are refused (points on it are the
  /// microphones of a hemi-anechoic room: p doubles on a rigid plane, vanishes on a soft one).
  std::optional<GroundPlane> ground;
  /// Symmetry planes (at most 3 with the ground, on distinct axes; helmholtz.hpp MirrorPlane):
  /// the mesh is the part of a symmetric body with x[axis] >= height for each (an open surface
  /// whose cut edges lie exactly on the planes; validate_and_orient(mesh, symmetry) checks and
  /// orients it through the whole body), and the field is even (reflection +1) or odd (-1) across
  /// each. The whole body is the mesh and its mirror images: N unknowns instead of 2, 4 or 8 N.
  /// Incident fields must have the symmetry: a plane wave needs d[axis] = 0 and a point source
  /// x0[axis] = height for every plane (all of them +1; InvalidArgument otherwise); radiation data
  /// are the user's (the mirrored elements carry the mirrored velocity times the reflection).
  /// Far and exterior fields are those of the whole body; points inside it are refused. Both
  /// operators, like the ground plane (with the FMM the work is that of the whole body).
  std::vector<MirrorPlane> symmetry;
  /// OpenMP threads of everything the plan runs: the assembly, the FMM set-up and matvec, the BD
  /// set-up and applications, the dense matvec and GMRES's vector kernels; 0: omp_get_max_threads().
  /// Used through local num_threads clauses: the global OpenMP state is never changed. >= 0.
  int threads = 0;
  /// Set-up progress: (stage, fraction of the stage done in [0,1]); stages "assembly" (dense),
  /// "fmm", "near field", "bd". Called from the constructing thread; may be empty.
  std::function<void(const std::string&, double)> progress;
};

/// Incident field of a point source (monopole) at x0 outside the body, sampled at the centroids:
///   u_inc(x) = amplitude e^{ik|x - x0|} / (4 pi |x - x0|)   (= amplitude G(x, x0)),
///   du_inc/dn = grad u_inc . n = u_inc (ik - 1/r) (x - x0).n / r,   r = |x - x0|.
/// Throws InvalidArgument when x0 is not finite, or lies inside the scatterer or on its surface
/// (locate_point, mesh.hpp). A source outside but closer to the surface than
/// about one element size is accepted, but its field is not resolved by the P0 elements.
IncidentField point_source(const Mesh& mesh, cplx k, std::array<double, 3> x0, cplx amplitude = 1.0);

/// Set-up report of a plan.
struct HelmholtzBemSetup {
  OperatorKind op = OperatorKind::Dense;         ///< the operator used (never Auto)
  PreconditionerKind precond = PreconditionerKind::None;
  std::size_t elements = 0;
  double operator_seconds = 0;  ///< dense assembly, or FMM set-up + near field
  double fmm_seconds = 0;       ///< the FMM's part (tree, interpolation and M2L operators)
  double precond_seconds = 0;   ///< octree + BD blocks + LU
  std::size_t operator_bytes = 0;  ///< dense matrix, or stored near-field entries
  std::size_t precond_bytes = 0;   ///< BD LU factors
  int fmm_order = 0, fmm_max_rank = 0;
  double fmm_tolerance = 0;
  std::size_t near_entries = 0;
  int leaf_level = -1, bd_level = -1;
  std::size_t bd_blocks = 0, bd_largest_block = 0;
  bool impedance = false;        ///< options().admittance given: the Robin system A_N + alpha A_D diag(-i k beta)
  /// The sound-soft companion operator A_D (its dense matrix or FMM operator) that the radiation
  /// right-hand side and the impedance system need: built with the plan for an impedance surface,
  /// at the first solve_radiation otherwise (then its set-up time is in neither field above).
  bool companion_built = false;
  double companion_seconds = 0;
  /// kind Ifmm: the factorisation's report (name nIFMMs{sigma}t{tau}b{l} / mIFMMb{l}, per-level
  /// times, ranks, memory, the Chebyshev order `ifmm.order` of its operators) and the depth of
  /// its octree.
  ifmm::IfmmReport ifmm;
  int ifmm_depth = -1;
  bool ifmm_reuses_matvec_fmm = false;
};

/// The IFMM part of a set-up report as a result record (summary.json "ifmm", Python
/// setup["ifmm"]): ifmm::to_record(su.ifmm) followed by depth (ifmm_depth) and
/// reuses_matvec_fmm; an empty record unless su.precond is Ifmm.
Record ifmm_record(const HelmholtzBemSetup& su);

/// Timings of one solve (besides what SurfaceSolution reports).
struct HelmholtzBemSolveInfo {
  double gmres_seconds = 0;
  long matvecs = 0;
  double matvec_seconds = 0;
  long precond_applications = 0;
  double precond_apply_seconds = 0;
};

/// Monostatic (backscatter) quantities of a far-field amplitude a = u_inf(-d) of a unit-amplitude
/// plane wave e^{ik d.x} (u_inf in the length unit, see helmholtz.hpp "Far field"):
///   backscattering cross-section  sigma = 4 pi |a|^2                 (length unit^2),
///   target strength               TS    = 10 log10(sigma / (4 pi)) = 20 log10 |a|
///                                          (dB re 1 length unit^2; -inf for a = 0).
/// The target strength is that of underwater acoustics, TS = 10 log10(sigma_bs / r0^2) with the
/// differential backscattering cross-section sigma_bs = |a|^2 = sigma / (4 pi) and r0 = 1 length
/// unit (MacLennan, Fernandes & Dalen, "A consistent approach to definitions and symbols in
/// fisheries acoustics", ICES J. Mar. Sci. 59 (2002) 365; Medwin & Clay, "Fundamentals of
/// Acoustical Oceanography", 1998, ch. 7). Check: a rigid sphere of radius R at ka >> 1 has
/// |a| -> R/2, TS -> 20 log10(R/2) (-6.02 dB for R = 1).
double monostatic_cross_section(cplx u_inf_back);
double target_strength_db(cplx u_inf_back);

/// The angle of a sweep of incident directions over a great circle (sweep_directions):
///   Theta: d = (sin t, 0, cos t), the x-z plane, t the polar angle of d from +z towards +x;
///   Phi:   d = (cos t, sin t, 0), the x-y plane, t the azimuth of d from +x towards +y
/// (the theta / phi of the far-field tables: theta from +z, phi from +x). d is the propagation
/// direction of the plane wave e^{ik d.x}; its backscatter direction is -d (towards the source).
enum class SweepAngle { Theta, Phi };
/// "theta" / "phi" (InvalidArgument otherwise); and back.
SweepAngle sweep_angle_from_string(const std::string& s);
std::string to_string(SweepAngle a);
/// n unit directions at the angles from_deg + j (to_deg - from_deg) / (n - 1), j = 0..n-1, in
/// degrees (both ends included; n = 1: from_deg alone), on the great circle of `angle`; the
/// angles come back through `angles_deg` when it is not nullptr. InvalidArgument for n < 1 or
/// n > kMaxSweepDirections, or a non-finite angle.
inline constexpr std::size_t kMaxSweepDirections = 1000000;
std::vector<std::array<double, 3>> sweep_directions(SweepAngle angle, double from_deg, double to_deg, long n,
                                                    std::vector<double>* angles_deg = nullptr);

/// One incident direction of HelmholtzBem::solve_monostatic.
struct MonostaticResult {
  std::array<double, 3> direction{};  ///< d: the unit propagation direction of e^{ik d.x} (normalised input)
  cplx u_inf{};                       ///< u_inf(-d), the backscattered far-field amplitude (length unit)
  double sigma = 0;                   ///< 4 pi |u_inf(-d)|^2 (length unit^2)
  double ts_db = 0;                   ///< 20 log10 |u_inf(-d)| (dB re 1 length unit^2)
  int iterations = 0;                 ///< GMRES iterations of this direction
  bool converged = false;
  double final_relative_residual = 0;
  double solve_seconds = 0;           ///< GMRES wall time of this direction
  HelmholtzBemSolveInfo info;         ///< matvec / preconditioner counts and times
  /// The surface solution (solve()'s result) when MonostaticOptions::keep_solutions, else empty
  /// u / dudn (bc, k, iterations and the residual history are kept either way).
  SurfaceSolution solution;
};

/// Options of HelmholtzBem::solve_monostatic.
struct MonostaticOptions {
  bool keep_solutions = false;  ///< keep each direction's surface field (N complex values each)
  /// Called after each direction (index in [0, M), M, its result), from the calling thread; may
  /// be empty.
  std::function<void(std::size_t, std::size_t, const MonostaticResult&)> progress;
  /// Per-iteration GMRES callback of every solve (iteration, relative residual); empty: none.
  std::function<void(int, double)> gmres_progress;
};

/// Symmetry planes take incident fields with their symmetry only (HelmholtzBemOptions::symmetry):
/// InvalidArgument for any incident field with an antisymmetric plane, a plane wave (direction v,
/// point = false) with v[axis] != 0, or a point source (location v) off a plane.
void check_symmetric_incidence(const std::vector<MirrorPlane>& symmetry, const std::array<double, 3>& v, bool point);

class HelmholtzBem {
 public:
  /// Validates the mesh (use validate_and_orient first for files: this constructor only checks
  /// indices, degenerate triangles and emptiness), k (finite, nonzero, Re k >= 0, Im k >= 0),
  /// the options (validate()); assembles or sets up the operator and the preconditioner.
  HelmholtzBem(Mesh mesh, cplx k, HelmholtzBemOptions opt = {});
  /// The constructor's argument checks alone (cheap, O(N)): k, mesh, options, the GMRES floor
  /// kMinGmresRtol, the sound-hard low-frequency floor kMinSoundHardKD, alpha, the resolution.
  /// Throws what the constructor throws for them (InvalidArgument), so that a caller can refuse
  /// bad input before announcing the set-up. The FMM's own limits (tolerance at the order cap,
  /// box size in wavelengths) need its octree and are checked by the constructor, before the
  /// expensive part of the FMM set-up.
  static void validate(const Mesh& mesh, cplx k, const HelmholtzBemOptions& opt);
  ~HelmholtzBem();
  HelmholtzBem(HelmholtzBem&&) noexcept;
  HelmholtzBem& operator=(HelmholtzBem&&) noexcept;

  const Mesh& mesh() const;
  cplx k() const;
  cplx alpha() const;  ///< the coupling used: options().alpha or default_alpha(mesh, k)
  const HelmholtzBemOptions& options() const;
  const HelmholtzBemSetup& setup() const;
  /// The system operator A (size N: DenseMatrixOperator or HelmholtzBemFmmOperator, with the
  /// plan's threads) and the preconditioner (the BlockDiagonalPreconditioner, nullptr for none).
  /// Both are elliptica::LinearOperator<cplx>, usable with any krylov solver object.
  const LinearOperator<cplx>& system_operator() const;
  const LinearOperator<cplx>* preconditioner() const;
  /// The dense system matrix (sound-hard below kStaticCorrectionKD: with the corrected diagonal);
  /// nullptr with the FMM operator.
  const CMatrix* dense_matrix() const;
  /// The octree of the FMM operator (over the collocation points, with ground or symmetry planes
  /// those of the images too; k-independent for the BEM's FMM, whose depth follows from
  /// op.fmm.tree alone), for op.fmm.prebuilt_tree of a plan on the same mesh and planes at another
  /// k; nullptr with the dense operator.
  std::shared_ptr<const fmm::Octree> fmm_tree() const;
  /// Sound-hard: A 1, the image of the constant (the GMRES deflation vector of helmholtz.hpp,
  /// "Low frequency" (2)); empty for sound-soft.
  const std::vector<cplx>& ones_image() const;
  /// The krylov::Options solve() hands to GMRES: options().gmres with threads = options().threads.
  krylov::Options gmres_options() const;

  /// The Burton-Miller right-hand side (N values) of incident data with N values each
  /// (InvalidArgument otherwise, or for non-finite data).
  std::vector<cplx> rhs(const IncidentField& inc) const;
  /// GMRES (gmres_options(): rtol, restart, iteration cap, the plan's threads) from zero,
  /// right-preconditioned by preconditioner(); progress(iteration, relative residual) per
  /// iteration (may be empty; default options().gmres.progress). Returns the surface solution:
  /// u (N values, total field, same unit as u_inc) for sound-hard, dudn (N values, 1/length) for
  /// sound-soft, the other zero, in element order; solve_seconds = GMRES wall time; info (may be
  /// nullptr) gets the matvec / preconditioner counts and times. NotConverged when GMRES misses
  /// gmres.rtol and throw_if_not_converged is set. Results of concurrent calls are independent;
  /// only the timing counters are shared. Impedance plans (options().admittance): u as for
  /// sound-hard and dudn = -i k beta u.
  SurfaceSolution solve(const IncidentField& inc, const std::function<void(int, double)>& progress = {},
                        HelmholtzBemSolveInfo* info = nullptr) const;
  SurfaceSolution solve_plane_wave(std::array<double, 3> direction) const;
  /// The incident data of this plan: the plane wave e^{ik d.x} (d normalised) or the point
  /// source amplitude G(x, x0), plus, with a ground plane, the reflected wave u_inc(R x) =
  /// e^{ik d.t} e^{ik (R0 d).x} times the reflection (R x = R0 x + t, t = 2 height on the
  /// plane's axis; so that the total incident field meets the ground's condition on the plane at
  /// any height) or the image source (at R x0). InvalidArgument as plane_wave /
  /// point_source, and for a source below the ground plane.
  IncidentField plane_wave(std::array<double, 3> direction) const;
  IncidentField point_source(std::array<double, 3> x0, cplx amplitude = 1.0) const;
  /// The same incident fields at arbitrary points (M values, input order), e.g. microphones: the
  /// total field there is scattered_field() + plane_wave_at() / point_source_at(). With a ground
  /// plane the reflected wave / image source is included: e^{ik d.x} + r e^{ik d.t} e^{ik (R0 d).x},
  /// amplitude (G(x, x0) + r G(x, R x0)). No symmetry or location checks (the points may lie
  /// anywhere; the field is that of free space plus the ground). InvalidArgument for a zero or
  /// non-finite direction, a non-finite point, source or amplitude, or a point at the source.
  std::vector<cplx> plane_wave_at(std::array<double, 3> direction, const std::vector<std::array<double, 3>>& points) const;
  std::vector<cplx> point_source_at(std::array<double, 3> x0, const std::vector<std::array<double, 3>>& points,
                                    cplx amplitude = 1.0) const;
  /// Radiation (and radiation + scattering): bc Neumann plans (rigid or impedance surface) with a
  /// prescribed source g of the normal derivative (N values, element order):
  ///   du/dn = g - i k beta u   on the surface   (beta = options().admittance, 0 when rigid),
  /// e.g. g = i omega rho v_n for a surface vibrating with outward normal velocity v_n
  /// (acoustics.hpp, normal_velocity_data). The incident field (may be nullptr: pure radiation)
  /// is added as in solve(). Green's representation of the total field (helmholtz.hpp) gives the
  /// right-hand side
  ///   b = u_inc + alpha du_inc/dn - (S + alpha (1/2 I + K')) g = u_inc + alpha du_inc/dn - alpha A_D g
  /// with A_D the sound-soft system (1/2 I + K' + S / alpha): its dense matrix or FMM operator
  /// is built at the first call (thread-safe; setup().companion_*) unless the plan has it
  /// (impedance). Returns u (total field on the surface) and dudn (= g - i k beta u). Throws
  /// InvalidArgument for a Dirichlet plan (no Neumann data to prescribe), g of the wrong size or
  /// not finite, and what solve() throws.
  SurfaceSolution solve_radiation(const std::vector<cplx>& g, const IncidentField* inc = nullptr,
                                  const std::function<void(int, double)>& progress = {},
                                  HelmholtzBemSolveInfo* info = nullptr) const;
  /// u_inf(xhat) (M values for M directions, normalised internally; unit of u) and u_sc(x) (M
  /// values at M exterior points) of a solution of this plan, by the representation formula
  /// (helmholtz.hpp, far_field / scattered_field), direct sums over the elements: O(N M).
  /// InvalidArgument for a zero direction, a point inside or on the body, or a solution of the
  /// wrong size.
  std::vector<cplx> far_field(const SurfaceSolution& s, const std::vector<std::array<double, 3>>& directions) const;
  std::vector<cplx> scattered_field(const SurfaceSolution& s, const std::vector<std::array<double, 3>>& points) const;

  /// Many right-hand sides with one set-up: for each incident direction d_j (M of them, any
  /// length, normalised here) solves the plane wave e^{ik d_j.x} (solve(), the operator and the
  /// preconditioner of this plan reused as they are: nothing is assembled or factorised again) and
  /// evaluates the monostatic far field u_inf(-d_j) (far_field()), the backscattering
  /// cross-section and the target strength (monostatic_cross_section, target_strength_db). Returns
  /// M results in input order; the results are those of separate solve_plane_wave(d_j) +
  /// far_field(s, {-d_j}) calls (the same computation). Cost: M GMRES solves + O(N M).
  /// Errors: InvalidArgument "direction J ..." for an empty list or a zero / non-finite direction J
  /// (all checked before the first solve); NotConverged (when throw_if_not_converged) naming
  /// the direction whose GMRES missed gmres.rtol (the earlier directions' results have been
  /// handed to opt.progress; with throw_if_not_converged = false every direction is solved and
  /// reports `converged`).
  std::vector<MonostaticResult> solve_monostatic(const std::vector<std::array<double, 3>>& directions,
                                                 const MonostaticOptions& opt = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Deprecated thin alias of the plan kept for existing callers: HelmholtzBem with the dense
/// operator and no preconditioner (op.kind and precond.kind of the options are overridden).
/// Use HelmholtzBem with op.kind = OperatorKind::Dense instead.
class HelmholtzBemDense : public HelmholtzBem {
 public:
  HelmholtzBemDense(Mesh mesh, cplx k, HelmholtzBemOptions opt = {})
      : HelmholtzBem(std::move(mesh), k, dense_only(std::move(opt))) {}
  const CMatrix& matrix() const { return *dense_matrix(); }
  double assembly_seconds() const { return setup().operator_seconds; }

 private:
  static HelmholtzBemOptions dense_only(HelmholtzBemOptions o) {
    o.op.kind = OperatorKind::Dense;
    o.precond.kind = PreconditionerKind::None;
    return o;
  }
};

}  // namespace elliptica::bem
