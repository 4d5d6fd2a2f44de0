#pragma once
/// @file fmm_operator.hpp
/// FMM-accelerated Burton-Miller operator of the collocation BEM of helmholtz.hpp (same matrices,
/// same signs as the dense operator of HelmholtzBem):
///   sound-hard (Neumann):   A = 1/2 I - K - alpha W      (dipole sources, FMM potential + d/dn_x)
///   sound-soft (Dirichlet): A = 1/2 I + K' + beta S      (charge sources), beta = 1/alpha.
/// Near field: the exact dense entries (assemble_entries below = the quadrature of
/// assemble_dense: singular self terms, subdivision of close elements) for all element pairs
/// whose centroids lie in adjacent leaves of the octree over the centroids. Far field: the
/// Chebyshev black-box FMM (fmm/helmholtz_fmm.hpp) with the quadrature.far_points triangle rule
/// per element (each quadrature point a source of weight area * w, attached to its element's
/// centroid). The far entries equal those of assemble_dense up to the FMM tolerance wherever
/// assemble_dense does not subdivide (|x - c_j| >= near_factor * diam(T_j)), i.e. when the leaf
/// boxes are wider than near_factor element diameters; otherwise the difference is the
/// quadrature error of the un-subdivided rule at more than one leaf width.
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/fmm/helmholtz_fmm.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem {

/// Entries of the collocation operators for the given (row i, column j) pairs, computed exactly as
/// assemble_dense computes S(i,j), K(i,j), K'(i,j), W(i,j). Output arrays (length pairs.size())
/// may be nullptr for operators not in `which`. Thread-safe; parallel over the pairs with
/// `threads` OpenMP threads (0: omp_get_max_threads()).
void assemble_entries(const Mesh& mesh, cplx k, unsigned which, const QuadratureOptions& q,
                      const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, cplx* S, cplx* K,
                      cplx* Kp, cplx* W, int threads = 0);

/// Options of the operator alone. The plan (plan.hpp) fills them from its HelmholtzBemOptions
/// (bc, alpha, quadrature, op.fmm, threads): the pieces are the same types, not copies of their
/// fields, so no default is repeated here.
struct FmmOperatorOptions {
  BoundaryCondition bc = BoundaryCondition::Neumann;
  std::optional<cplx> alpha;         ///< Burton-Miller coupling; default default_alpha(mesh, k)
  QuadratureOptions quadrature;      ///< near-field entries and far_points of the far field
  /// tolerance (> 0 here: the plan resolves its automatic 0), order, tree (over the centroids);
  /// near_field and threads are set by the operator (false, `threads` below).
  fmm::HelmholtzFmmOptions fmm;
  /// OpenMP threads of the near-field assembly, the FMM and apply(); 0: omp_get_max_threads().
  int threads = 0;
  /// Called during the near-field assembly with the fraction done (0..1], from the calling
  /// thread; may be empty.
  std::function<void(double)> progress;
  /// Ground and symmetry planes (helmholtz.hpp, MirrorPlane; at most 3, distinct axes): the
  /// operator of the image Green's function, A(i, j) = A_0(i, j) + sum_m f_m A_0(i, j_m), j_m the
  /// image of element j in the m-th of mirror_images(planes) and f_m its factor: the same
  /// matrix as assemble_dense with those images. Built over the whole set W = whole_body(mesh,
  /// planes) (the mesh and its images, (1 + M) N elements): the FMM runs over W's collocation
  /// points and quadrature sources with the density f_m x on image m, the near field is kept for
  /// the mesh's rows only (columns over W). Costs about (1 + M) times the free-space FMM and
  /// near field of a mesh of N elements. Empty: free space.
  std::vector<MirrorPlane> planes;
  /// k D of the static low-frequency correction of sound-hard operators (helmholtz.hpp, "Low
  /// frequency" (1): applied below kStaticCorrectionKD): < 0 (the default) |k| body_size(mesh);
  /// the plan passes the whole body's (symmetry planes), or +infinity, which switches the
  /// correction off (an antisymmetric plane: the folded image of 1 is not the static identity's).
  double correction_kd = -1;
};

/// y = A x (elliptica::LinearOperator<cplx>: x, y of size() values in caller storage, not
/// overlapping); a fixed linear map (the FMM's error does not depend on x), so usable by GMRES.
class HelmholtzBemFmmOperator final : public LinearOperator<cplx> {
 public:
  /// Sound-hard: one extra FMM application at set-up gives A 1 (ones_image(), the GMRES
  /// deflation vector); below kStaticCorrectionKD the near-field diagonal is then corrected so
  /// that the operator (near field + FMM) maps 1 to its static image exactly (helmholtz.hpp, "Low
  /// frequency" (1)). Throws InvalidArgument for a bad mesh, k or option, the FMM's errors
  /// (fmm::ToleranceUnavailable for a tolerance beyond its order cap), and the sound-hard
  /// low-frequency floor kMinSoundHardKD.
  HelmholtzBemFmmOperator(const Mesh& mesh, cplx k, const FmmOperatorOptions& opt = {});
  std::size_t size() const override;
  void apply(const cplx* x, cplx* y) const override;
  /// Vector convenience (InvalidArgument when x does not have size() values).
  std::vector<cplx> apply(const std::vector<cplx>& x) const;
  const fmm::HelmholtzFmm& fmm() const;
  cplx alpha() const;
  /// Sound-hard: A 1 (the static image of the constant when corrected); empty for sound-soft.
  const std::vector<cplx>& ones_image() const;
  std::size_t near_entries() const;  ///< stored exact near-field entries
  double setup_seconds() const;      ///< whole constructor
  double fmm_setup_seconds() const;  ///< the FMM's part of it (tree, operators); the rest is the near field
  /// Bytes held by the near-field entries (values + column indices + row pointers); the FMM's own
  /// operators are not included.
  std::size_t near_field_bytes() const;
  /// System-matrix entries A[rows[a], cols[b]] (row-major rows.size() x cols.size(), including the
  /// 1/2 on the diagonal): read from the stored near field where the pair is adjacent, computed by
  /// assemble_entries (same quadrature) otherwise. Thread-safe. This is the BlockFunction of the
  /// block-diagonal preconditioner: at the leaf level of this operator's octree every self block
  /// lies in the near field, so the BD set-up costs only its LU factorisations.
  void entries(const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols, cplx* out) const;
  /// A second Chebyshev FMM over the same centroids and quadrature sources (so the same root box),
  /// with its own order p (>= 1; 0: from the operator's tolerance) and exact tree depth (leaf
  /// level, in [0, max_tree_depth()]), M2L uncompressed: the operators of the IFMM
  /// (bem/ifmm_preconditioner.hpp). InvalidArgument for a depth outside that range, or for an
  /// operator with mirror planes (the IFMM does not take them).
  std::unique_ptr<fmm::HelmholtzFmm> make_fmm(int order, int depth) const;
  /// Deepest leaf level of make_fmm (leaves at least 2 x the largest centroid-to-quadrature-point
  /// distance wide, the FMM's own limit; the matvec tree keeps 4 x), or the explicit tree depth.
  int max_tree_depth() const;
  BoundaryCondition boundary_condition() const;
  /// Quadrature sources of the far field: element of each source and its weight (area x rule
  /// weight); source s of the FMM carries weight[s] x (density of element[s]).
  const std::vector<std::int64_t>& source_elements() const;
  const std::vector<double>& source_weights() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace elliptica::bem
