#pragma once
/// @file helmholtz_fmm.hpp
/// Kernel-independent ("black-box") fast multipole method based on Chebyshev interpolation
/// (Fong & Darve, J. Comput. Phys. 228 (2009) 8712, "The black-box fast multipole method") for
/// the 3D Helmholtz kernel G(x,y) = e^{ik|x-y|} / (4 pi |x-y|), complex k with Im k >= 0,
/// in the LOW-FREQUENCY regime (boxes of the top interacting level up to ~2 wavelengths).
///
/// Sums computed (targets x_i with unit normals n_x, sources y_j with normals n_y):
///     u(x_i)      = sum_j [ G(x_i,y_j) q_j + dG/dn_y(x_i,y_j) mu_j ]     (single + double layer)
///     du/dn_x(x_i)= sum_j [ dG/dn_x q_j + d^2G/(dn_x dn_y) mu_j ]
/// Pairs with x_i == y_j (r = 0 exactly) are skipped (as FMM3D does).
///
/// Method: uniform octree (fmm/octree.hpp) over the target points. Every box carries a tensor
/// Chebyshev grid of p^3 nodes (first-kind nodes cos((2m+1)pi/(2p)) on the box enlarged by the
/// same absolute margin e at every level, e = how far attached sources stick out of their
/// owner's leaf box; e = 0 when sources are the tree points). With Lagrange polynomials L_n on
/// those nodes, G(x,y) ~ sum_{m,n} L_m(x) G(xbar_m, ybar_n) L_n(y) for well-separated boxes:
///  - P2M: W_n = sum_j q_j L_n(y_j) + mu_j n_y.grad L_n(y_j)     (d/dn_y applied to the polynomials)
///  - M2M: W_parent = sum_children S_child W_child, S = Kronecker product of three p x p 1D
///          interpolation matrices (per level and octant; real)
///  - M2L: F_target += K_t W_source, K_t(m,n) = G(xbar_m, ybar_n), one matrix per level and per
///          relative offset t (translation invariance; at most 316 offsets, reduced to 16
///          canonical offsets c by the 48 reflections/permutations of the cube, which map the
///          symmetric Chebyshev grid onto itself: K_t = P_t^T K_c P_t for a node permutation P_t;
///          Messner, Schanz & Darve, J. Comput. Phys. 231 (2012) 1175, sec. 3-4). Each K_c is
///          compressed to K_c ~ U_c VH_c (rank r_c) by adaptive cross approximation with partial
///          pivoting (2 r p^3 kernel evaluations instead of p^6), recompressed by QR + SVD to the
///          truncated SVD at the relative threshold 0.01 * tolerance and checked on 4000 random
///          entries (RMS error <= 3 * threshold * RMS of K_c), with a full matrix + randomised SVD
///          (Halko, Martinsson & Tropp 2011) as the fallback. Applied BATCHED: per level and
///          canonical offset, chunks of up to 96 interactions are gathered as columns
///          X = [P_t W_src] and multiplied as two GEMMs Y = U_c (VH_c X) (2 r_c p^3 complex
///          multiply-adds per interaction, at matrix-matrix speed), then F_tgt += P_t^T Y (threads
///          accumulate into private copies of the level's locals, summed afterwards)
///  - L2L: F_child += S_child^T F_parent;   L2P: u = sum_m L_m(x) F_m, du/dn_x = sum n_x.grad L_m(x) F_m
///  - P2P: sources in the neighbour leaves (26 + self) directly (sources stored leaf-contiguous
///    as structure of arrays; for real k a 4-wide vectorised kernel with a polynomial sincos, for
///    complex k a scalar loop); can be switched off so that the
///    caller adds its own near-field blocks (BEM: exact singular integrals). The FMM part then
///    covers exactly the pairs of non-adjacent leaves.
/// Why bbFMM (vs the multipole/partial-wave LFFMM of the seed paper): only kernel evaluations
/// are needed, all operators are explicit (small dense) matrices, which the inverse FMM (IFMM)
/// needs, and dipole/normal-derivative variants come from differentiating the polynomials.
///
/// Order rule (see choose_order): p = 4 + ceil((log10(1/tol) - 2.14) / 0.68)
///                                       + max(0, ceil(0.45 kappa + 0.02 kappa^2 - 0.5)),
/// kappa = |k| * (width of the enlarged level-2 box). Fitted to measured relative errors (random
/// points on a sphere and in a cube, the worst of the four kernels: the double layer and its
/// adjoint on the sphere, about 7e-3 at p = 4 and kappa <= 1, falling by 10^-0.68 per node;
/// kappa = 5 costs 2 more nodes, kappa = 10 six, kappa = 12 seven: the quadratic term was added
/// after errors up to 4x the tolerance at kappa = 10-12); verified in tests/test_fmm_helmholtz.cpp
/// up to kappa = 12 (level-2 boxes of 1.9 wavelengths). E.g. kappa <= 1:
/// tol 1e-3/1e-5/1e-7 -> p = 6/9/12. Measured further (2000 random points on the unit sphere,
/// k = 2, kappa = 1, worst kernel): tol 1e-8/1e-9/1e-10 -> p = 13/15/16, errors 3.6e-9,
/// 2.1e-10, 3.1e-11. p is capped at kMaxOrder = 16, so tolerances below min_tolerance(k, w)
/// (5.0e-11 for kappa <= 1) are refused (ToleranceUnavailable).
/// Throws InvalidArgument when the level-2 box is wider than max_box_wavelengths wavelengths
/// (2 pi / Re k) or p would exceed kMaxOrder (the message names the smallest tolerance available).
///
/// Tree depth (OctreeOptions max_leaf = 0, the default): with near_field, the level whose average
/// number of points per non-empty leaf is closest to p^3/12 (balances P2P ~ 27 x leaf size per
/// target against P2M/L2P ~ p^3 per point and M2L ~ 2 r p^3 per interaction); without
/// near_field max_leaf = 64 (the caller's near-field blocks grow with the leaves).
///
/// Not (yet) done: the single shared per-level bases of Fong & Darve sec. 3.3 (r x r M2L with
/// compressed multipoles); the per-offset bases above keep P2M/M2M/L2L/L2P in the p^3 node basis.
///
/// Parallelised with OpenMP over boxes at each level (M2L over batches). With the environment
/// variable ELLIPTICA_FMM_PROFILE set, apply() prints the wall time of each stage to stderr.
#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/fmm/octree.hpp"

namespace elliptica::fmm {

using cplx = std::complex<double>;
using Point3 = std::array<double, 3>;

struct HelmholtzFmmOptions {
  /// Octree of the target points. max_leaf = 0 and depth < 0 (the default): automatic, i.e. with
  /// near_field the depth whose average number of points per non-empty leaf is closest to p^3/8
  /// (times #targets/#sources), without near_field (BEM: the caller's near-field blocks grow with
  /// the leaves) max_leaf = 64.
  OctreeOptions tree{0, 12, -1};
  /// An octree over exactly the target points (the same points, in the same order), e.g. the
  /// tree() of an earlier FMM over them at another k (a frequency sweep): used instead of
  /// building one (`tree` above is then ignored). The constructor checks that it holds as many
  /// points as there are targets and that every target lies in its leaf box (InvalidArgument
  /// otherwise). Empty (the default): the tree is built.
  std::shared_ptr<const Octree> prebuilt_tree;
  double tolerance = 1e-5;         ///< target relative accuracy, in (1e-14, 0.5)
  int order = 0;                   ///< p (Chebyshev nodes per axis); 0: from tolerance and k
  bool compress_m2l = true;        ///< low-rank (ACA + SVD) compression of the M2L matrices
  bool near_field = true;          ///< false: P2P is skipped, apply() returns the far field only
  double max_box_wavelengths = 2;  ///< low-frequency limit on the level-2 box width
  /// OpenMP threads of the set-up and of apply() (local num_threads clauses; the global OpenMP
  /// state is not touched); 0: omp_get_max_threads(). >= 0.
  int threads = 0;
};

enum FmmOutput : unsigned { kPotential = 1u, kNormalDerivative = 2u };

struct FmmResult {
  std::vector<cplx> potential;          ///< empty unless kPotential was requested
  std::vector<cplx> normal_derivative;  ///< empty unless kNormalDerivative was requested
};

/// p for a tolerance, wave number and level-2 box width (the rule above).
int choose_order(double tolerance, cplx k, double level2_box_width);
/// Largest automatic order (choose_order results above it are refused).
inline constexpr int kMaxOrder = 16;
/// Below |k| x (extent of the points) = kStaticKernelKappa the kernels are evaluated at k = 0:
/// their k-dependent parts are then below 1e-100 relative (invisible in double precision), and
/// computing them would only run into subnormal arithmetic (about 10x slower set-up at k = 1e-300).
inline constexpr double kStaticKernelKappa = 1e-100;
/// The smallest tolerance whose choose_order is at most kMaxOrder, for this k and level-2 box
/// width (the rule above inverted, times 1.001); +infinity when the kappa term alone needs more
/// than kMaxOrder nodes (beyond the low-frequency regime).
double min_tolerance(cplx k, double level2_box_width);

/// Thrown (an InvalidArgument) when the requested tolerance needs more than kMaxOrder nodes at this
/// k and box size; the message names the smallest tolerance available there.
struct ToleranceUnavailable : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

class HelmholtzFmm {
 public:
  /// Same point set for sources and targets. normals: N unit normals or empty (then dipoles and
  /// normal derivatives are unavailable).
  HelmholtzFmm(const std::vector<Point3>& points, const std::vector<Point3>& normals, cplx k,
               const HelmholtzFmmOptions& opt = {});
  /// Targets `points` (the tree) and separate sources, each attached to an owner target point
  /// (e.g. BEM quadrature points of element j attached to its centroid j): source s is treated as
  /// belonging to the leaf of point owner[s]; near field = sources whose owner is in an adjacent leaf.
  HelmholtzFmm(const std::vector<Point3>& points, const std::vector<Point3>& normals,
               const std::vector<Point3>& sources, const std::vector<Point3>& source_normals,
               const std::vector<std::int64_t>& owner, cplx k, const HelmholtzFmmOptions& opt = {});

  /// The sums of the file comment into caller-owned storage.
  /// charges q (single layer) and dipoles mu (double layer): arrays of num_sources() complex
  /// values, or nullptr (= zero). potential u and normal_derivative du/dn_x: arrays of
  /// num_targets() complex values at the target points (original order), overwritten, or nullptr
  /// when that output is not wanted (at least one must be given). Inputs and outputs may not
  /// overlap. Throws InvalidArgument for no output, dipoles without source normals, normal
  /// derivatives without target normals, or a non-finite charge/dipole.
  void apply(const cplx* charges, const cplx* dipoles, cplx* potential, cplx* normal_derivative) const;
  /// Vector convenience of apply() above: charges/dipoles of length num_sources() or empty
  /// (= zero); returns the outputs requested by the mask (InvalidArgument for a bad mask or
  /// lengths). Same numbers as the pointer version.
  FmmResult apply(const std::vector<cplx>& charges, const std::vector<cplx>& dipoles,
                  unsigned outputs = kPotential | kNormalDerivative) const;

  const Octree& tree() const;
  /// The same octree, shared (e.g. for HelmholtzFmmOptions::prebuilt_tree of a later FMM).
  std::shared_ptr<const Octree> tree_ptr() const;
  int order() const;
  cplx k() const;
  std::size_t num_targets() const;
  std::size_t num_sources() const;
  double box_margin() const;  ///< e (absolute enlargement of the interpolation boxes)
  /// Largest / average retained M2L rank over the levels (p^3 without compression).
  int max_m2l_rank() const;
  double setup_seconds() const;

  /// Explicit operators (for tests and the IFMM). Node multi-index n = n0 + p n1 + p^2 n2.
  /// M2M of level l (child at level l, 1 <= l <= leaf level) and child octant (bit0 x, bit1 y,
  /// bit2 z): p^3 x p^3, row-major; L2L = its transpose.
  std::vector<double> m2m_matrix(int level, int octant) const;
  /// M2L for target box coords - source box coords = t (|t_i| <= 3, not all |t_i| <= 1), level
  /// >= 2: p^3 x p^3 row-major, uncompressed kernel values G(xbar_m, ybar_n).
  std::vector<cplx> m2l_matrix(int level, std::array<int, 3> t) const;
  /// P2M of a leaf (node index): p^3 x (#sources of the leaf) row-major for charges (dipole =
  /// false) or dipoles (true); the sources of the leaf are leaf_sources(leaf).
  std::vector<double> p2m_matrix(int leaf, bool dipole) const;
  std::vector<std::int64_t> leaf_sources(int leaf) const;  ///< original source indices
  /// L2P of a leaf: (#targets of the leaf) x p^3 row-major, row i for the target
  /// tree().permutation()[node.begin + i]: L_n(x_i) (normal_derivative = false) or
  /// n_x.grad L_n(x_i) (true; needs target normals), so that u_i = sum_n M(i, n) F_n.
  std::vector<double> l2p_matrix(int leaf, bool normal_derivative) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace elliptica::fmm
