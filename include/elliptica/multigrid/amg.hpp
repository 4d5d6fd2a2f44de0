#pragma once
/// @file amg.hpp
/// Smoothed-aggregation algebraic multigrid (SA; Vanek, Mandel, Brezina, "Algebraic multigrid by
/// smoothed aggregation for second and fourth order elliptic problems", Computing 56, 1996): a
/// hierarchy for any sparse (symmetric positive (semi-)definite) matrix, with no grid, on which the
/// V-cycle of vcycle.hpp runs the seed-003 Chebyshev smoothers on every level.
///
/// Set-up per level (each step in a file of its own under src/multigrid/):
/// 1. strength of connection (strength.cpp): nodes i != j are strongly connected when
///    |a_ij| >= theta_l sqrt(|a_ii a_jj|) (block unknowns: the Frobenius norms of the b x b blocks
///    in place of |a_ij|; Vanek et al. 1996, eq. (3.2)) with theta_l = theta 2^-l on level l (or,
///    by choice, the classical row-relative measure: StrengthMeasure); the strength graph is symmetrised, and a node with couplings but none strong keeps its
///    strongest one (otherwise it would get a zero row of P and the coarse space would lose the
///    near-null space there). A level whose aggregation at theta_l makes no coarse level
///    (no strong couplings) is aggregated with every coupling strong.
/// 2. aggregation (aggregation.cpp): Vanek's greedy three-pass "standard" aggregation (the one of
///    Vanek et al. 1996, section 3, and pyamg's standard_aggregation): pass 1 makes every node
///    whose strong neighbours are all free the root of an aggregate {node + strong neighbours};
///    pass 2 adds each remaining node to an aggregate of a strong neighbour; pass 3 groups what is
///    left with its free strong neighbours. Nodes without strong neighbours (e.g. Dirichlet rows
///    kept in the matrix) belong to no aggregate: their rows of P are zero, the smoother alone
///    treats them. Nodes are visited in index order (deterministic).
/// 3. tentative prolongator (tentative_prolongator.cpp): the near-null-space vectors B (n x k,
///    constants by default; rigid-body modes for elasticity) restricted to each aggregate's rows
///    and orthonormalised there (thin QR, modified Gram-Schmidt twice): T = blockdiag(Q_a), coarse
///    B_c = stacked R_a, so T B_c = B exactly; k coarse unknowns per aggregate (the coarse block
///    size). Directions an aggregate cannot represent (fewer rows than k, or B dependent there)
///    become zero columns of T; their coarse unknowns are decoupled (diagonal 1 in the coarse
///    operator) and never touch the fine level.
/// 4. prolongator smoothing (smoothed_aggregation.cpp): P = (I - omega / lambda D_F^-1 A_F) T
///    with the filtered matrix A_F (A with its weak couplings added to the diagonal, Vanek et al.
///    1996, section 3; A itself when every coupling is strong, or when lumping makes A_F
///    indefinite, as for some elasticity blocks), lambda ~ rho(D_F^-1 A_F) from a Lanczos
///    estimate and omega = 4/3 (eq. (3.6) there); omega = 0 keeps P = T (plain aggregation).
///    Filtering keeps P's stencil along the strong couplings: without it the coarse operators
///    of a stretched mesh densify level by level.
/// 5. Galerkin coarse operator A_c = P^T A P (sparse.hpp's triple_product).
/// Coarsening stops at coarse_size unknowns or max_levels levels; the coarsest operator is
/// factorised by a sparse LDL^T (coarse_direct.cpp: Eigen's SimplicialLDLT, approximate minimum
/// degree ordering) whose zero pivots of a positive semi-definite matrix (the constant of a pure
/// Neumann / periodic problem) are dropped: the coarse solve is then a pseudo-inverse there.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/hierarchy.hpp"

namespace elliptica::multigrid {

/// The strength-of-connection measure of step 1 (on |a_ij|, or block Frobenius norms).
enum class StrengthMeasure {
  /// |a_ij| >= theta_l sqrt(|a_ii a_jj|), theta_l = theta 2^-l on level l (Vanek, Mandel, Brezina
  /// 1996, eq. (3.2) and section 3): the SA default; threshold 0.08.
  Symmetric,
  /// |a_ij| >= theta max_{k != i} |a_ik|, theta the same on every level (the Ruge-Stueben
  /// measure of classical AMG, Ruge & Stueben 1987, eq. (4.1), on magnitudes; pyamg's "classical"
  /// strength): row-relative, so a row's strongest direction always counts; better for rotated
  /// anisotropy (bench/results/amg_issue13: 2.8x fewer iterations at theta 0.5), worse for a
  /// 3D coefficient jump. Threshold 0.5.
  Classical
};
/// "symmetric" / "classical" (the CLI's and Python's spelling); InvalidArgument otherwise.
StrengthMeasure strength_measure_from_string(const std::string& s);
std::string to_string(StrengthMeasure m);
/// The threshold a measure is meant with: 0.08 (Symmetric), 0.5 (Classical). The CLI's and
/// Python's `strength` default to it when not given.
double default_strength_threshold(StrengthMeasure m);

/// Options of the smoothed-aggregation hierarchy; AmgOptions{} holds the library's defaults (the
/// CLI's and Python's defaults are read from it).
struct AmgOptions {
  /// theta in [0, 1): strength threshold of step 1 on the finest level, halved on each coarser one
  /// for the symmetric measure (Vanek et al. 1996, section 3: 0.08 (1/2)^l), the same on every
  /// level for the classical one (use default_strength_threshold(measure)); 0: every off-diagonal
  /// entry is strong.
  double strength_threshold = 0.08;
  /// How couplings are compared with theta (StrengthMeasure above).
  StrengthMeasure strength_measure = StrengthMeasure::Symmetric;
  /// b >= 1: unknowns per node, interleaved (node i owns rows b i .. b i + b - 1; 2 or 3 for
  /// elasticity). rows must be divisible by b.
  int block_size = 1;
  /// omega >= 0 of step 4 (4/3: Vanek's choice; 0: unsmoothed aggregation).
  double prolongator_omega = 4.0 / 3.0;
  /// Lanczos steps of the rho(D^-1 A) estimate of step 4 (>= 1).
  int lambda_iterations = 15;
  /// Stop coarsening when a level has at most this many unknowns (>= 1); it is factorised.
  std::size_t coarse_size = 300;
  /// Cap on the number of levels (>= 2; a one-level "hierarchy" is not multigrid).
  int max_levels = 25;
  /// Threads of the set-up's parallel kernels and of the levels' operators (0: all).
  int threads = 0;
};

/// Near-null-space vectors: k columns of length n, column-major (B[i + n c] is row i of column c).
/// Empty (k = 0): the constant vector per unknown of a block (k = block_size columns, column c is
/// 1 on the rows b i + c), the right choice for scalar diffusion and the pure-Neumann pressure
/// equation; for 2D / 3D linear elasticity give the 3 / 6 rigid-body modes
/// (rigid_body_modes()).
struct NearNullSpace {
  std::size_t k = 0;
  std::vector<double> B;  ///< length n k
};

/// Rigid-body modes of linear elasticity at node coordinates (n_nodes x dim, row-major, length
/// n_nodes dim; dim 2 or 3): dim 2: two translations and the rotation (-y, x); dim 3: three
/// translations and three rotations; unknowns interleaved per node (block_size = dim). The
/// coordinates are shifted to their centroid first (better-conditioned QR). Throws
/// InvalidArgument for dim not 2 or 3 or a length not divisible by dim.
NearNullSpace rigid_body_modes(const std::vector<double>& coords, int dim);

/// Strength graph of step 1 on the node graph (n / b nodes) by `measure` at threshold theta (as
/// given: the caller applies the symmetric measure's level halving): a CSR pattern without the
/// diagonal, symmetrised (i ~ j when either direction is strong), every coupled node keeping at
/// least its strongest coupling; val holds the measure |a_ij| or
/// ||A_IJ||_F (summed over both directions where both are strong; the aggregation reads the
/// pattern only). Throws InvalidArgument for theta outside [0, 1), b < 1, rows not divisible by b.
CsrMatrix strength_graph(const CsrMatrix& A, double theta, int block_size,
                         StrengthMeasure measure = StrengthMeasure::Symmetric);

/// Step 2 on a strength graph: aggregate index per node (-1: no aggregate) and their count.
struct Aggregates {
  std::vector<std::int32_t> of_node;
  std::size_t count = 0;
};
Aggregates standard_aggregation(const CsrMatrix& S);

/// Step 3: the tentative prolongator T (n x count k) and the coarse near-null space (count k rows,
/// k columns) from the aggregates of the nodes (b rows each) and B (n x k, column-major).
/// Throws InvalidArgument for sizes that do not match.
struct TentativeProlongator {
  CsrMatrix T;
  NearNullSpace coarse;
};
TentativeProlongator tentative_prolongator(const Aggregates& agg, int block_size, const NearNullSpace& B,
                                           std::size_t n);

/// Exact solve on the coarsest level by a sparse LDL^T factorisation (Eigen SimplicialLDLT with
/// AMD ordering) of a symmetric positive semi-definite matrix; pivots of magnitude below 1e-8 x the
/// largest (the rounding level the Galerkin products leave on a singular operator's null pivot)
/// are treated as zero (pseudo-inverse on that direction: the constant of a singular pure-Neumann
/// operator), and null_pivots() says how many there were. As an operator: fixed, symmetric.
/// Throws NumericalError when the matrix is not symmetric (relative 1e-10 of its largest entry) or
/// has a negative pivot beyond rounding (indefinite), InvalidArgument when not square.
class SparseDirect final : public LinearOperator<double> {
 public:
  explicit SparseDirect(const CsrMatrix& A);
  ~SparseDirect() override;
  std::size_t size() const override { return n_; }
  void apply(const double* b, double* x) const override;
  bool is_symmetric() const override { return true; }
  std::size_t null_pivots() const { return null_pivots_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::size_t n_ = 0, null_pivots_ = 0;
};

/// The smoothed-aggregation hierarchy of A (square; symmetric positive definite, or semi-definite
/// with the null space in the span of B) with near-null space B (see NearNullSpace), levels
/// finest first, coarsest factorised by SparseDirect. The levels' GridShape is empty (dim 0:
/// ASM / RAS use index blocks). Throws InvalidArgument on bad options (each named), a
/// non-square or non-symmetric A (core/sparse.hpp's check_symmetry, relative 1e-12), B of the wrong length, a zero or negative diagonal entry, and when A is too
/// small to coarsen (rows <= coarse_size: a one-level hierarchy is a direct solve, not multigrid;
/// the message says so) or the aggregation stalls on the first level (no coarse level smaller than
/// the fine one); NumericalError from SparseDirect.
Hierarchy smoothed_aggregation(CsrMatrix A, const AmgOptions& opt = {}, const NearNullSpace& B = {});

}  // namespace elliptica::multigrid
