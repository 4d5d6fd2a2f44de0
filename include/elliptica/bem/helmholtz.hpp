#pragma once
/// @file helmholtz.hpp
/// Dense piecewise-constant collocation BEM for 3D exterior Helmholtz scattering (seed 001, which
/// follows Burton & Miller, Proc. R. Soc. Lond. A 323 (1971) 201, with P0 elements collocated at
/// the centroids of flat triangles): conventions, the dense operators (O(N^2) memory and work),
/// incident fields and the far/scattered field evaluation. The one plan that solves the systems
/// (dense or FMM operator, BD preconditioner, GMRES) is HelmholtzBem in plan.hpp; the FMM
/// operator is in fmm_operator.hpp.
///
/// Conventions
/// - Time dependence e^{-i omega t}; G(x,y) = e^{ikr}/(4 pi r), r = |x - y|; k complex with
///   Re k >= 0, Im k >= 0, k != 0 (outgoing / decaying waves).
/// - n is the outward unit normal of the Mesh (it points into the exterior acoustic domain).
/// - Surface operators on P0 densities (row i: target x = centroid of element i, normal n_x;
///   column j: element T_j, normal n_y):
///     S [i,j] = int_Tj G(x,y) dy                                  (single layer)
///     K [i,j] = PV int_Tj dG/dn_y(x,y) dy                         (double layer)
///     K'[i,j] = PV int_Tj dG/dn_x(x,y) dy                         (adjoint double layer)
///     W [i,j] = FP int_Tj d^2G/(dn_x dn_y)(x,y) dy                (hypersingular)
///   W is the normal derivative of the double-layer potential, W phi = d/dn_x D phi, which is
///   continuous across the surface (NOTE: the opposite sign of the "hypersingular operator"
///   -d/dn D of Bempp and of design/FORMULAS.md). For G = 1/(4 pi r) on a closed surface:
///   K 1 = -1/2 (the double-layer potential of 1 is -1 inside, 0 outside, -1/2 on the surface),
///   W 1 = 0, and on the unit sphere S 1 = 1, K' 1 = -1/2.
/// - Jump relations (exterior traces, outward n): D phi -> (K + 1/2) phi,
///   dn S q -> (K' - 1/2) q (Colton & Kress, "Inverse Acoustic and Electromagnetic Scattering
///   Theory", Thm 3.1; same as Kress "Linear Integral Equations" ch. 6 with the 1/(4 pi) kernel).
/// - Representation (Colton & Kress Thm 2.5 plus Green's 2nd identity for the incident field
///   inside the scatterer), total field u = u_inc + u_sc, q = du/dn (total) on the surface:
///     u_sc(x) = int_Gamma [ u(y) dG/dn_y(x,y) - q(y) G(x,y) ] dy,   x in the exterior.
///   Exterior traces: (1/2 I - K) u + S q = u_inc                       (CBIE)
///                    -W u + (1/2 I + K') q = du_inc/dn                  (HBIE)
/// - Burton-Miller systems solved here (Im alpha != 0 removes the interior resonances, Burton &
///   Miller 1971; the default alpha is default_alpha() below: i/k except at low frequency):
///     sound-hard (Neumann, q = 0), unknown u:  (1/2 I - K - alpha W) u = u_inc + alpha du_inc/dn
///       (this is "1/2 I - K + alpha W_bempp" with W_bempp = -W, the form quoted in
///       design/FORMULAS.md and used by Bempp);
///     sound-soft (Dirichlet, u = 0), unknown q: (CBIE + alpha HBIE)/alpha, i.e. second kind
///       (1/2 I + K' + beta S) q = du_inc/dn + beta u_inc,  beta = 1/alpha (= -ik for alpha = i/k:
///       the "0.5 I + K' - i k S" combined form of Bempp / Colton & Kress with eta = k).
///   Both signs were confirmed against the Mie series (tests/test_bem_helmholtz.cpp); flipping
///   the sign of the W term makes the Neumann system inconsistent with its right-hand side.
/// - Low frequency (k D small, D = body_size()). With alpha = i/k the sound-soft system tends to
///   1/2 I + K', whose static limit annihilates the equilibrium density (on the sphere: the
///   constants, K'_0 1 = -1/2), so the O(h) error of the flat-panel K' on constants is amplified
///   ~ 1/(kD); the sound-hard system is dominated by (i/k) W, whose static limit annihilates the
///   constants (W_0 1 = 0), so the constant part of u is set by quadrature errors. Hence the
///   default coupling caps |alpha| at D/4 (default_alpha()). Sound-hard has a second
///   low-frequency problem: its scattered field is O(kD) near the body and O((kD)^2) in the far
///   field while the total surface field is 1 + O(kD), so an error delta in the non-constant part
///   of u costs a relative far-field error ~ delta/(kD). The plans (HelmholtzBem with the dense
///   or the FMM operator, HelmholtzBemFmmOperator) therefore, for sound-hard only:
///   (1) for kD < kStaticCorrectionKD correct the diagonal of the system matrix so that it maps
///       the constant 1 exactly to its static image, 1 (1 + m on a surface enclosed by m other
///       components): the static identities K_0 1 = -1/2 and W_0 1 = 0 of a closed surface
///       (Gauss's integral for the double-layer potential of a constant, e.g. Kress, "Linear
///       Integral Equations", ch. 6; W_0 1 = 0 since D_0 1 is piecewise constant) then hold
///       exactly instead of up to the quadrature error of the entries (max |W 1| = 1.4e-5 against
///       max |W_ii| = 16.5 on 1280 elements, growing about 3x per refinement, which cost a far-
///       field error ~ 2.5e-7/(kD) on a jittered mesh); the dynamic parts of K 1 and W 1 that
///       this neglects are O((kD)^2) (measured: far field changed by 0.06 (kD)^2);
///   (2) run GMRES on A w = b - c A 1 and return u = c + w, c = (A1)^H b / |A1|^2 (the
///       least-squares constant), so that the tolerance applies to the part of u that carries
///       the scattered field;
///   (3) refuse kD < kMinSoundHardKD = 1e-10 (InvalidArgument): the O(kD) part of u approaches
///       the double-precision rounding error of u ~ 1 (jittered 1280-element sphere, far-field
///       error 8.34e-3 for every kD from 2 down to 2e-11, 8.8e-3 at 2e-13, 3.0e-2 at 2e-14).
///   scattered_field() evaluates the static part of the double layer of the mean of u exactly
///   (solid angles, see there). Sound-soft needs none of this: its surface and far fields are
///   O(1) as k -> 0 and every k > 0 is accepted. Measurements: docs/bem.md, "Low frequency".
/// - Accuracy on icosphere meshes (measured against the Mie series, unit sphere, default coupling,
///   refinements 2-5 = 320-20480 elements, ka = 1 and 2; docs/bem.md "Accuracy" has the tables
///   and the command): sound-hard far field O(h^2) (observed orders 1.92-1.99), sound-hard
///   surface field O(h) asymptotically (orders 1.5-1.6, 1.1-1.15, 0.9 from refinement 2->3, 3->4,
///   4->5); sound-soft surface and far field O(h) (orders 0.87-1.14). The sound-soft error comes
///   from the adjoint double layer K' of flat P0 panels collocated at centroids, which is only
///   O(h)-consistent (K' 1 on the inscribed polyhedron differs from -1/2 by O(h)), independent of
///   the quadrature accuracy; a larger |beta| = 1/|alpha| (more single layer) lowers it, which is
///   why the low-frequency cap of default_alpha() also improves sound-soft at ka < 2 (1280
///   elements, ka = 1: 2.2e-2 against 3.4e-2 with i/k).
/// - Curved second-order (6-node) elements (Mesh::midside) remove that geometric consistency
///   error: sound-soft, sound-hard and radiation far fields converge at O(h^2) (docs/bem.md,
///   "Curved elements"; tests/test_bem_curved.cpp). Their integrals are taken in the parameter
///   plane of the quadratic map; the self terms by Duffy rules (S, K, K' are weakly singular on a
///   smooth surface) and, for the static part of W, by a line integral over the element's edges
///   (Stokes' theorem, operators.cpp: static_hypersingular_self).
/// - Far field: u_sc(x) = e^{ik|x|}/|x| (u_inf(xhat) + O(1/|x|)), with
///     u_inf(xhat) = 1/(4 pi) int_Gamma [ -ik (xhat . n_y) u(y) - q(y) ] e^{-ik xhat.y} dy.
///   (For the unit plane wave on a sphere this equals (i/k) sum (2n+1) c_n P_n(cos theta).)
///
/// Quadrature (internal helpers: src/bem/quadrature.hpp)
/// - self term (i == j): the 1/r part of S analytically (sum over edges, design/FORMULAS.md;
///   e.g. Hess & Smith 1967 / Newman 1986 for constant panels), the Hadamard finite part of the
///   static hypersingular kernel analytically, FP int_T 1/r^3 = -sum_e (1/d_e)[t/R]_{t1}^{t2}
///   (polar coordinates about x: FP int_0^{R(theta)} r^-2 dr = -1/R(theta)); K, K' self terms
///   are exactly zero on a flat triangle ((x - y).n = 0); the bounded/weakly singular dynamic
///   remainders (e^{ikr} - 1)/(4 pi r) and [e^{ikr}(1 - ikr) - 1]/(4 pi r^3) ~ (k^2/(2r) +
///   i k^3/3)/(4 pi) are integrated with Duffy-transformed Gauss-Legendre rules on the three
///   sub-triangles (x, v_a, v_b) (Duffy, SIAM J. Numer. Anal. 19 (1982) 1260).
/// - other elements: a symmetric triangle rule (1, 3 or 7 points; 7 = Radon's degree-5 rule,
///   Stroud T2:5-1) when |x - c_j| >= near_factor * diam(T_j); otherwise the triangle is split into
///   4 recursively until every piece satisfies that criterion (or max_subdivision is reached).
#include <array>
#include <complex>
#include <cstddef>
#include <optional>
#include <vector>

#include "elliptica/bem/mesh.hpp"
#include "elliptica/core/operator.hpp"
#include "elliptica/core/parallel.hpp"

namespace elliptica::bem {

using cplx = std::complex<double>;

/// Dense complex matrix, row-major: (i, j) = data[i * cols + j].
struct CMatrix {
  std::size_t rows = 0, cols = 0;
  std::vector<cplx> data;
  CMatrix() = default;
  CMatrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  cplx& operator()(std::size_t i, std::size_t j) { return data[i * cols + j]; }
  const cplx& operator()(std::size_t i, std::size_t j) const { return data[i * cols + j]; }
  bool empty() const { return data.empty(); }
  /// y = A x (x of length cols, y of length rows; InvalidArgument otherwise). Rows in parallel
  /// above kParallelMinDenseRows rows with `threads` threads (0: omp_get_max_threads()).
  std::vector<cplx> apply(const std::vector<cplx>& x, int threads = 0) const;
};

/// A square CMatrix as an operator (elliptica::LinearOperator<cplx>: y = A x into caller
/// storage, x and y of size() values, not overlapping), e.g. for GMRES on the dense
/// Burton-Miller matrix. Keeps a reference: the matrix must outlive the operator. apply() is
/// row-parallel above kParallelMinDenseRows (core/parallel.hpp) rows with `threads` threads
/// (0: omp_get_max_threads(); a local num_threads clause, no global OpenMP state); each row is
/// summed sequentially, so the result does not depend on the threads.
class DenseMatrixOperator final : public LinearOperator<cplx> {
 public:
  /// InvalidArgument if A is not square or threads < 0.
  explicit DenseMatrixOperator(const CMatrix& A, int threads = 0);
  std::size_t size() const override { return A_.rows; }
  void apply(const cplx* x, cplx* y) const override;

 private:
  const CMatrix& A_;
  int threads_ = 0;
};

/// Which operators assemble_dense builds (bit mask).
enum OperatorSet : unsigned {
  kSingleLayer = 1u,
  kDoubleLayer = 2u,
  kAdjointDoubleLayer = 4u,
  kHypersingular = 8u,
  kAllOperators = 15u
};

struct QuadratureOptions {
  int far_points = 7;           ///< triangle rule for well-separated elements: 1, 3 or 7 points
  double near_factor = 2.5;     ///< subdivide while |x - c| < near_factor * diam (> 0)
  int max_subdivision = 12;     ///< recursion depth cap of the near-field subdivision (>= 0)
  int singular_order = 8;       ///< Gauss-Legendre points per direction of the Duffy rules (>= 1)
};

struct DenseOperators {
  unsigned which = 0;  ///< OperatorSet bits that were assembled; the others are empty
  CMatrix S, K, Kp, W;
  double seconds = 0;  ///< wall time of the assembly
};

/// The one wavenumber check of the BEM (every plan, operator, incident field and field
/// evaluation calls it): InvalidArgument unless k is finite, nonzero, Re k >= 0 and Im k >= 0
/// (outgoing / decaying waves); the message names the rule broken.
void validate_wavenumber(cplx k);

/// A mirror plane x[axis] = height: a ground plane bounding the acoustic half-space (the body
/// strictly above it) or a symmetry plane of the body (the mesh on one side, its cut edges on it).
/// Method of images: with the reflection r = +1 or -1 the Green's function becomes
///   G_h(x, y) = G(x, y) + r G(x, R y),  R the mirror map of the plane,
/// and since |x - R y| = |R x - y| and R maps the normals, every operator entry gains the entry of
/// the mirrored collocation point R x_i (with normal R n_i) against the element itself:
/// S, K, K', W of (R x_i, R n_i; T_j) (e.g. Morse & Ingard, "Theoretical Acoustics", 1968, sec.
/// 7.4; Seybert & Wu, J. Acoust. Soc. Am. 85 (1989) 19, for the BEM). Far field and exterior
/// field follow in the same way: u_inf_h(xhat) = u_inf(xhat) + r u_inf(R xhat), u_h(x) = u(x) +
/// r u(R x).
///   ground:   r = +1 rigid (du/dn = 0 on the plane), -1 pressure release (u = 0);
///   symmetry: r = +1 symmetric (u even across the plane), -1 antisymmetric (u odd).
struct MirrorPlane {
  int axis = 2;             ///< normal axis of the plane: 0 x, 1 y, 2 z
  double height = 0;        ///< the plane x[axis] = height
  double reflection = 1.0;  ///< +1 or -1 (see above)
  /// The mirror image of a point / a direction. A coordinate exactly on the plane stays
  /// bit-identical (so that mirrored copies of a symmetric mesh share their cut vertices).
  std::array<double, 3> mirror(std::array<double, 3> x) const {
    double& c = x[static_cast<std::size_t>(axis)];
    if (c != height) c = 2 * height - c;
    return x;
  }
  std::array<double, 3> mirror_direction(std::array<double, 3> d) const {
    d[static_cast<std::size_t>(axis)] = -d[static_cast<std::size_t>(axis)];
    return d;
  }
};
using GroundPlane = MirrorPlane;

/// InvalidArgument unless axis is 0, 1 or 2, height finite, reflection +1 or -1 and every vertex
/// of the mesh lies strictly above the plane (x[axis] > height): the message names the first one
/// that does not.
void validate(const GroundPlane& g, const Mesh& mesh);
/// The same rules for a symmetry plane, except that vertices may lie on it (x[axis] >= height).
void validate_symmetry_plane(const MirrorPlane& p, const Mesh& mesh);

/// One image of a set of mirror planes on distinct axes: the composition of the reflections in
/// a nonempty subset of them (flip[a]: axis a reflected about height[a]) and the product of their
/// reflection factors.
struct MirrorImage {
  std::array<bool, 3> flip{};
  std::array<double, 3> height{};
  double factor = 1.0;
  std::array<double, 3> point(std::array<double, 3> x) const {
    for (std::size_t a = 0; a < 3; ++a)
      if (flip[a] && x[a] != height[a]) x[a] = 2 * height[a] - x[a];
    return x;
  }
  std::array<double, 3> direction(std::array<double, 3> d) const {
    for (std::size_t a = 0; a < 3; ++a)
      if (flip[a]) d[a] = -d[a];
    return d;
  }
  /// An odd number of reflections reverses the orientation of a mirrored triangle.
  bool reverses() const { return (int(flip[0]) + int(flip[1]) + int(flip[2])) % 2 == 1; }
};
/// The whole body of a mesh cut by symmetry planes: the mesh followed by its images (vertices
/// mirrored, triangles reversed for an odd number of reflections; the cut vertices, exactly on the
/// planes, are repeated and stay bit-identical). Element e of the mesh is element e of the result.
Mesh whole_body(const Mesh& mesh, const std::vector<MirrorPlane>& symmetry);
/// validate_and_orient (mesh.hpp) for a mesh cut by symmetry planes: validates and orients the
/// whole body (whole_body; its cut vertices merged) and gives the mesh the orientation of its
/// part. Vertices within 1e-6 x (longest edge) of a plane are first moved onto it (file rounding,
/// e.g. float32 STL). Throws what validate_and_orient throws, prefixed by what it means here and
/// naming elements of the whole body (the mesh's elements keep their numbers), e.g. when the cut
/// edges do not lie on the planes (the whole body is then not closed). Empty `symmetry`:
/// validate_and_orient(mesh).
MeshReport validate_and_orient(Mesh& mesh, const std::vector<MirrorPlane>& symmetry);

/// The 2^m - 1 images of m <= 3 mirror planes (every nonempty subset). InvalidArgument for more
/// than 3 planes or two on one axis (parallel planes would need infinitely many images).
std::vector<MirrorImage> mirror_images(const std::vector<MirrorPlane>& planes);

/// Assemble the collocation matrices (see the file comment for definitions and conventions).
/// For |k| x (bounding-box diagonal) < 1e-100 (fmm::kStaticKernelKappa) the kernels are evaluated
/// at k = 0: their k-dependent parts are invisible in double precision there, and computing them
/// would only produce subnormal numbers (several times slower).
/// Throws InvalidArgument on an empty mesh, bad vertex indices, degenerate triangles, a k that is
/// NaN/Inf, zero, or has Re k < 0 or Im k < 0 (validate_wavenumber), bad quadrature options or
/// threads < 0. Rows in parallel with `threads` OpenMP threads (0: omp_get_max_threads()).
/// Memory: 16 N^2 bytes per operator in `which` (checked before allocating, OutOfResources).
/// With `images` (not nullptr) every entry gains factor x the entry of the image of the
/// collocation point (MirrorPlane): the Green's function of the ground and symmetry planes.
DenseOperators assemble_dense(const Mesh& mesh, cplx k, unsigned which = kAllOperators,
                              const QuadratureOptions& q = {}, int threads = 0,
                              const std::vector<MirrorImage>* images = nullptr);

enum class BoundaryCondition { Neumann, Dirichlet };  ///< sound-hard, sound-soft

// ---------------------------------------------------------------------------------------------
// Low-frequency rules (file comment, "Low frequency"; measurements in docs/bem.md)
// ---------------------------------------------------------------------------------------------

/// Below |k| D = kCouplingKD the default coupling stops following i/k (default_alpha()).
inline constexpr double kCouplingKD = 4.0;
/// Sound-hard: below |k| D = kStaticCorrectionKD the system matrix is corrected to map the
/// constant exactly to its static image (file comment, (1)). Chosen where the two errors cross on
/// a jittered 1280-element ellipsoid: the neglected dynamic part (far field 0.06 (kD)^2) and the
/// quadrature error of the uncorrected matrix (far field ~2.5e-7/(kD), growing ~3x per mesh
/// refinement); at the switch both are < 1e-4.
inline constexpr double kStaticCorrectionKD = 0.02;
/// Sound-hard problems with |k| D below this are refused (file comment, (3)).
inline constexpr double kMinSoundHardKD = 1e-10;
/// Smallest accepted GMRES relative tolerance (every plan, dense or FMM operator): GMRES reaches
/// true relative residuals of 0.4e-15 .. 4.7e-15 on these systems (dense 320-5120 and FMM
/// 1280-20480 elements, docs/bem.md "Tolerances"), growing slowly with N; 1e-12 leaves a margin
/// of 200.
inline constexpr double kMinGmresRtol = 1e-12;

/// Length D of the low-frequency rules: the largest, over the connected components of the mesh
/// (triangles sharing a vertex index), of 2 max_v |v - c|, where c is the area-weighted mean of the
/// component's element centroids and v runs over its vertices. For a sphere D is its diameter; for
/// any body it lies between its diameter and twice it (c lies in the convex hull). O(N).
/// Throws InvalidArgument for an empty mesh or bad vertex indices.
double body_size(const Mesh& mesh);

/// The default Burton-Miller coupling:
///   alpha = i / k         for |k| D >= kCouplingKD = 4,
///   alpha = i D / 4       for |k| D <  4          (D = body_size(mesh)),
/// i.e. alpha = i / max(k, 4/D) for real k. Sources: i/k is Burton & Miller's choice, close to
/// optimal for the sphere at moderate and high ka (Kress, Q. J. Mech. Appl. Math. 38 (1985)
/// 323; Amini, Appl. Anal. 35 (1990) 75); at low frequency it degrades the conditioning and the
/// accuracy of both formulations and a size-dependent cap helps (Kreuzer, "About the
/// Burton-Miller factor in the low frequency region", arXiv:2405.10722, 2024; mechanism in the
/// file comment). The constant 4 is ours, from the measurements of docs/bem.md ("Low
/// frequency"): as k -> 0 the sound-soft error roughly halves per doubling of the constant
/// (1280 elements: 2.2e-2, 1.1e-2, 6.6e-3 for 2, 4, 8, against 3.4e-2 at ka = 1 with i/k) while
/// its GMRES iterations grow slowly (8, 9, 10 unpreconditioned), sound-hard gains a little;
/// 4 < 5.13 keeps the capped range |k| D < 4 below the lowest interior Dirichlet eigenvalue of
/// every component (a body of
/// diameter d lies in a ball of radius d sqrt(3/8), Jung's theorem, so by domain monotonicity its
/// first Dirichlet eigenvalue is >= (pi / (0.613 d))^2, k d >= 5.13; D >= d), where the CBIE part
/// alone is uniquely solvable: the smaller HBIE weight costs no robustness at the resonances.
/// Throws InvalidArgument for a bad k (validate rules of assemble_dense) or mesh.
cplx default_alpha(const Mesh& mesh, cplx k);

/// Incident data at the collocation points.
struct IncidentField {
  std::vector<cplx> u;     ///< u_inc(x_i)
  std::vector<cplx> dudn;  ///< du_inc/dn(x_i) with the element's outward normal
};

/// Plane wave u_inc(x) = e^{ik d.x} (d normalised here; InvalidArgument for a zero/non-finite d),
/// du_inc/dn = i k (d . n) u_inc, sampled at the centroids.
IncidentField plane_wave(const Mesh& mesh, cplx k, std::array<double, 3> direction);

struct SurfaceSolution {
  BoundaryCondition bc = BoundaryCondition::Neumann;
  cplx k{};
  std::vector<cplx> u;     ///< total field on the surface (zero for Dirichlet)
  std::vector<cplx> dudn;  ///< total normal derivative on the surface (zero for Neumann)
  bool converged = false;
  int iterations = 0;
  std::vector<double> residual_history;  ///< GMRES relative residuals
  double final_relative_residual = 0;
  double solve_seconds = 0;
};

/// u_inf(xhat) for each direction (normalised internally), normalisation as in the file comment.
std::vector<cplx> far_field(const Mesh& mesh, const SurfaceSolution& sol,
                            const std::vector<std::array<double, 3>>& directions,
                            const QuadratureOptions& q = {});
/// u_sc(x) at exterior points (near-surface points use the subdivided rule). InvalidArgument for
/// a point inside the scatterer or on its surface (locate_point, mesh.hpp), where the
/// representation formula does not give the exterior field. The double layer of u is summed as
/// D[u - m] + m (D - D_0)[1] + m D_0[1] with m the area-weighted mean of u: the last term is
/// exact, D_0[1](x) = -winding_number(mesh, x) (flat triangles: minus the solid angle / 4 pi),
/// and the dynamic kernel of D - D_0 is evaluated without cancellation. This keeps the O(kD)
/// sound-hard scattered field accurate at low frequency, where the quadrature error of D_0[1]
/// (about 4e-8 at 0.2 radii off a 1280-element sphere) would otherwise dominate it.
std::vector<cplx> scattered_field(const Mesh& mesh, const SurfaceSolution& sol,
                                  const std::vector<std::array<double, 3>>& points,
                                  const QuadratureOptions& q = {});

}  // namespace elliptica::bem
