#pragma once
/// @file ifmm_preconditioner.hpp
/// The inverse fast multipole method (ifmm/ifmm.hpp) on the FMM-accelerated Burton-Miller operator
/// (fmm_operator.hpp): seed 001's IFMM preconditioner of GMRES (nIFMM / mIFMM), and a direct
/// solver for many right-hand sides.
///
/// Built from the operator: the tree over the centroids with the same root box; P2P blocks = the
/// exact near-field entries (HelmholtzBemFmmOperator::entries: read from the stored near field
/// wherever the IFMM's boxes are adjacent at the operator's leaf level, by the same quadrature
/// otherwise); P2M of a leaf = the Chebyshev P2M of its quadrature sources weighted and summed per
/// element (dipoles for sound-hard, charges for sound-soft), L2P = the Burton-Miller combination
/// of the L2P of the potential and of its normal derivative (sound-hard -(L + alpha D), sound-soft
/// D + beta L, the signs of the operator's far field), M2M / M2L of the Chebyshev FMM.
/// The IFMM's Chebyshev order is its own (order, default from epsilon: the FMM order rule
/// fmm::choose_order at tolerance epsilon, at most kMaxIfmmOrder) so that its operators are small;
/// when that order and the tree depth equal the matvec FMM's, the matvec FMM itself is used.
/// The tree depth is the operator's leaf level, deepened to 3 when it is shallower (and the
/// elements' size allows: max_tree_depth()), or `depth`.
#include <memory>

#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/ifmm/ifmm.hpp"

namespace elliptica::bem {

/// Largest automatic Chebyshev order of the IFMM's operators (p^3 = 343 per box).
inline constexpr int kMaxIfmmOrder = 7;

struct IfmmPreconditionerOptions {
  ifmm::IfmmOptions ifmm;  ///< epsilon, sigma, top, bottom, threads, pivot_rcond, progress
  int order = 0;           ///< Chebyshev nodes per axis of the IFMM's operators, in [2, 16]; 0: automatic
  int depth = -1;          ///< leaf level of the IFMM's tree, in [3, max_tree_depth()]; -1: automatic
};

/// The option checks that need no operator: ifmm::validate_options, order 0 or in [2, 16],
/// depth -1 or >= 3 (the upper bound of depth needs the operator). Throws InvalidArgument naming
/// the field with its CLI / Python spellings. Called by the plan before any set-up work.
void validate(const IfmmPreconditionerOptions& opt);

/// M ~ A^{-1} of the operator (a fixed elliptica::LinearOperator<cplx>).
class IfmmPreconditioner final : public LinearOperator<cplx> {
 public:
  /// Throws InvalidArgument for bad options (ifmm::Ifmm's, order or depth out of range, a tree
  /// that cannot be made 3 levels deep: a coarse mesh), NumericalError for a singular pivot,
  /// ResourceError when its memory is not available.
  IfmmPreconditioner(const HelmholtzBemFmmOperator& op, const IfmmPreconditionerOptions& opt = {});
  ~IfmmPreconditioner() override;
  std::size_t size() const override;
  void apply(const cplx* r, cplx* z) const override;
  const ifmm::Ifmm& ifmm() const;
  const ifmm::IfmmReport& report() const;
  int order() const;       ///< Chebyshev order used
  int depth() const;       ///< leaf level of its tree
  bool reuses_matvec_fmm() const;
  double setup_seconds() const;  ///< companion FMM (if any) + IFMM factorisation

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace elliptica::bem
