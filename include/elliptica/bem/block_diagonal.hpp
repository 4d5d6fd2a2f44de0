#pragma once
/// @file block_diagonal.hpp
/// Block-diagonal (BD) preconditioner of the BEM system (seed 001, "BD" / "BDbot l_BD"): the
/// elements are grouped by the octree boxes of their centroids at a level l_BD (default: the leaf
/// level of the tree); M is the block-diagonal matrix made of the self blocks A[I_b, I_b] of those
/// boxes, and M^{-1} is applied through one LU factorisation (partial pivoting) per box. Set-up and
/// application are parallel over the boxes (OpenMP). l_BD = 0 gives one block, M = A (exact
/// inverse, for tests); a smaller l_BD than the leaf level gives wider blocks, fewer GMRES
/// iterations, and more set-up work (O(sum n_b^3)).
///
/// The matrix entries come from a callback (BlockFunction) so that the dense plan
/// (dense_block_function) and, later, an FMM operator (its near-field P2P self blocks) can both
/// supply them.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/fmm/octree.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem {

/// Fills out (row-major, rows.size() x cols.size()) with the system-matrix entries
/// A[rows[a], cols[b]] (indices are element numbers, i.e. original point indices of the octree).
/// Called concurrently from several OpenMP threads: must be thread-safe.
using BlockFunction = std::function<void(const std::vector<std::int64_t>& rows,
                                         const std::vector<std::int64_t>& cols, std::complex<double>* out)>;

/// Block function reading a dense row-major matrix (kept by reference: A must outlive it).
BlockFunction dense_block_function(const CMatrix& A);

/// M^{-1} as an operator (elliptica::LinearOperator<cplx>, a fixed map): usable as the
/// preconditioner of any krylov solver object.
class BlockDiagonalPreconditioner final : public LinearOperator<std::complex<double>> {
 public:
  /// tree: octree over the n collocation points (element centroids) in element order;
  /// level: l_BD in [0, tree.leaf_level()], or -1 for the leaf level; threads: OpenMP threads of
  /// the set-up and of apply() (0: omp_get_max_threads()). Throws InvalidArgument on a bad level
  /// or threads < 0, NumericalError if a block is singular (or numerically so: reciprocal condition
  /// estimate below 1e-14), its LU overflows (NaN condition estimate: a badly scaled matrix, the
  /// message says so) or the block function returns non-finite values.
  BlockDiagonalPreconditioner(const fmm::Octree& tree, const BlockFunction& block, int level = -1,
                              int threads = 0);
  ~BlockDiagonalPreconditioner() override;

  std::size_t size() const override;
  /// z = M^{-1} r (z and r may not alias).
  void apply(const std::complex<double>* r, std::complex<double>* z) const override;

  int level() const;
  std::size_t num_blocks() const;
  std::size_t largest_block() const;
  double setup_seconds() const;        ///< wall time of the constructor (entries + LU)
  double apply_seconds_total() const;  ///< accumulated wall time of apply() calls
  long applications() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct PreconditionedSolveOptions {
  PreconditionerKind kind = PreconditionerKind::BlockDiagonal;
  int bd_level = -1;                  ///< l_BD; -1: the octree's leaf level
  fmm::OctreeOptions tree;            ///< octree over the centroids (max_leaf = mu, ...)
  std::function<void(int, double)> progress;  ///< GMRES (iteration, relative residual); may be empty
};

/// What solve_preconditioned() did, besides the solution.
struct PreconditionedSolveInfo {
  PreconditionerKind kind = PreconditionerKind::None;
  int bd_level = -1, leaf_level = -1;
  std::size_t blocks = 0, largest_block = 0;
  double setup_seconds = 0;  ///< octree + block extraction + LU (0 for None)
  double gmres_seconds = 0;  ///< GMRES alone
  double precond_apply_seconds = 0;
  long precond_applications = 0;
};

/// Solves the plan's Burton-Miller system with GMRES (plan.gmres_options(): the plan's rtol,
/// restart, iteration cap and threads), right-preconditioned by BD (or nothing), using the plan's
/// dense matrix for products and BD entries. Same result conventions and NotConverged rule as
/// HelmholtzBem::solve (solve_seconds = set-up + GMRES).
SurfaceSolution solve_preconditioned(const HelmholtzBemDense& plan, const IncidentField& inc,
                                     const PreconditionedSolveOptions& opt = {},
                                     PreconditionedSolveInfo* info = nullptr);

/// GMRES on the plan's matrix with any preconditioner (nullptr: none); as above.
SurfaceSolution solve_with_preconditioner(const HelmholtzBemDense& plan, const IncidentField& inc,
                                          const LinearOperator<std::complex<double>>* M,
                                          const std::function<void(int, double)>& progress = {});

/// The element centroids of a mesh, in element order (the points of the BD octree).
std::vector<std::array<double, 3>> centroids(const Mesh& mesh);

}  // namespace elliptica::bem
