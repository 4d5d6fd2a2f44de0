#pragma once
/// @file ifmm.hpp
/// The inverse fast multipole method (IFMM): an approximate direct solver of a dense system
/// A x = b whose matrix-vector product is an FMM (Ambikasaran & Darve, arXiv 1407.1572; Coulier,
/// Pouransari & Darve, SIAM J. Sci. Comput. 39 (2017) A761), with the node-parallel (nIFMM) and
/// matrix-parallel (mIFMM) variants of seed 001 (Takahashi, Chen & Darve, "Parallelization of the
/// inverse fast multipole method with an application to boundary element method", sections 2-3).
/// Kernel-independent: it is built from the explicit operators of a black-box (Chebyshev) FMM,
/// described by FmmSystem; the Helmholtz BEM builds one in bem/ifmm_preconditioner.hpp.
///
/// Extended sparse system (per box i of the bottom level l, unknowns x_i of the box, multipole
/// coefficients y_i, local coefficients z_i, equations e1, e2, e3):
///   e1_i:  sum_{j adjacent to i, incl. i} P2P_ij x_j + L2P_i z_i          = b_i
///   e2_i:  -z_i + sum_{j in interaction list of i} M2L_ij y_j + L2L_i z_parent = 0
///   e3_i:  -y_i + P2M_i x_i  (and, one level up, -y_parent + sum_children M2M_c y_c = 0)
/// which is A x = b exactly when y, z are eliminated (the FMM's matvec). P2M_i and L2P_i are kept
/// as orthonormal bases V_i, U_i (P2M_i = V_i^*, L2P_i = U_i) of rank r_i, obtained by a truncated
/// SVD of the Chebyshev operators (relative tolerance epsilon), the M2L blocks in those bases.
///
/// Factorisation (seed Algorithm 1), level by level from l up to 3: at box i, block Gaussian
/// elimination of (x_i, z_i) with the equations (e1_i, e3_i): LU of the self block P2P_ii and of
/// the Schur pivot S_i = V_i^* P2P_ii^{-1} U_i (both checked: reciprocal condition estimate below
/// IfmmOptions::pivot_rcond is reported as a NumericalError naming the box); y_i and e2_i remain.
/// The elimination creates fill-in between every pair (p, q) of neighbours of i: between adjacent
/// p, q (or p = q) it is added exactly to their P2P block; for well-separated p, q (then always in
/// each other's interaction list) it is compressed: the part of the fill outside the current
/// bases U_p (columns) and V_q (rows) is added to the bases where its singular values exceed
/// epsilon x s_p (s_p: RMS singular value of box p's self block at the start of the level;
/// randomised SVD, Halko, Martinsson & Tropp 2011, for large blocks), and the fill in those
/// bases is added to M2L_pq; the sparsity pattern never grows. The bases only grow (at most to
/// the box size), so a basis change pads the M2L blocks of p's interaction list with zeros: these
/// are the "neighbours' interaction-list operations" of seed section 3.1(c). When U_p and V_p of a
/// box differ in rank at its elimination the smaller one is padded with random orthonormal
/// directions (seeded per box: reproducible). After level kappa, the remaining unknowns of the
/// children of a box P (their y) are the unknowns x_P of level kappa - 1; their M2L blocks and
/// neighbour fill-in form P2P_PQ, their L2L and M2M (in the parent's Chebyshev basis) form L2P_P
/// and P2M_P, compressed as at the bottom level. At level 2 the remaining system (P2P blocks
/// between adjacent boxes, L2P M2L P2M between the others) is factorised by one dense LU.
///
/// Solve (seed Algorithm 2): forward substitution in the factorisation's order, the dense solve,
/// backward substitution in the reverse order. apply() is this solve: M ~ A^{-1}, a fixed linear
/// map (usable as the right preconditioner of GMRES, or as a direct solver for new right-hand
/// sides); with epsilon -> 0 M -> A^{-1} of the FMM operator the FmmSystem describes.
///
/// Parallelism: the boxes of each level are coloured with separation sigma (colouring.hpp); the
/// colours are processed in sequence, and for levels >= top (tau) the boxes of one colour in
/// parallel (nIFMM; sigma = 3: the interaction-list operations in an OpenMP critical section,
/// sigma = 6: none needed). Levels below tau, the dense top level and sigma = 0 (mIFMM: boxes in
/// their octree order) run box by box with the threads inside each box's dense operations (the
/// fill-in products and updates). The box order depends only on sigma, so M is the same up to
/// rounding for any thread count and tau; the solve uses the same colours.
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/record.hpp"
#include "elliptica/fmm/octree.hpp"

namespace elliptica::ifmm {

using cplx = std::complex<double>;

/// The FMM an IFMM is built on. Unknowns are the points of `tree` (original numbering = the
/// row/column numbers of A); a box's unknowns are tree->permutation()[begin..end).
struct FmmSystem {
  const fmm::Octree* tree = nullptr;  ///< must outlive the factorisation's construction
  int order = 0;                      ///< p: Chebyshev nodes per axis; the bases have p^3 columns
  /// A[rows[a], cols[b]] into out (row-major rows.size() x cols.size()); called concurrently.
  std::function<void(const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols, cplx* out)> entries;
  /// P2M of a leaf (leaf level of `tree`): p^3 x n_leaf row-major, columns in tree order.
  std::function<std::vector<cplx>(int leaf)> p2m;
  /// L2P of a leaf: n_leaf x p^3 row-major, rows in tree order.
  std::function<std::vector<cplx>(int leaf)> l2p;
  /// M2M from a child at `level` (1..leaf level) in `octant` (bit0 x, bit1 y, bit2 z) to its
  /// parent: p^3 x p^3 real row-major; L2L is its transpose.
  std::function<std::vector<double>(int level, int octant)> m2m;
  /// M2L at `level` (>= 2) for box offset t = target coord - source coord: p^3 x p^3 row-major.
  std::function<std::vector<cplx>(int level, std::array<int, 3> t)> m2l;
};

/// Options of an IFMM factorisation (every field: meaning and range).
struct IfmmOptions {
  double epsilon = 1e-3;  ///< relative compression tolerance, in (0, 1); seed: 1e-3 (also 1e-1, 1e-2)
  /// Colouring separation: 3 or 6 (nIFMM, node-parallel), 0 (sequential box order, mIFMM).
  int sigma = 3;
  /// tau: levels >= top are processed node-parallel, levels < top matrix-parallel; in
  /// [2, bottom] (2 and 3 are the same: level 2 is the dense LU). 0: 3. Ignored for sigma = 0.
  int top = 0;
  /// l: the bottom level, in [3, leaf level of the tree]; -1: the leaf level. Above the leaf
  /// level the boxes' P2P blocks are the exact entries and their P2M / L2P the leaves' ones
  /// aggregated by M2M / L2L (seed section 4).
  int bottom = -1;
  /// OpenMP threads (local num_threads clauses); 0: omp_get_max_threads(). >= 0.
  int threads = 0;
  /// Pivots (self blocks, Schur pivots, the dense top system) whose reciprocal condition estimate
  /// is below this are refused (NumericalError naming the box). In (0, 1).
  double pivot_rcond = 1e-14;
  /// Called from the constructing thread: (stage, level, fraction of the stage done in [0, 1]);
  /// stages "initialise", "factorise", "top". May be empty.
  std::function<void(const std::string& stage, int level, double fraction)> progress;
};

/// The checks of the options that need no tree (the one definition of their ranges: the IFMM,
/// the BEM plan, the CLI and Python all reach this): epsilon in (0, 1), sigma in {0, 3, 6},
/// top 0 or >= 2, bottom -1 or >= 3, top <= bottom when both are given, threads >= 0,
/// pivot_rcond in (0, 1). Each message names the field and its CLI / Python spellings
/// (e.g. "ifmm: epsilon (--ifmm-eps, ifmm_eps) must be in (0, 1), got 0"). Throws InvalidArgument.
void validate_options(const IfmmOptions& o);

/// Per level of the factorisation.
struct IfmmLevelReport {
  int level = 0;
  int boxes = 0;               ///< non-empty boxes
  int colours = 0;             ///< colour groups (= boxes for sigma 0)
  bool node_parallel = false;  ///< processed colour by colour in parallel (level >= tau)
  std::size_t unknowns = 0;    ///< sum of the boxes' x sizes
  int max_rank = 0;            ///< largest r_i after the level's elimination
  double mean_rank = 0;        ///< average r_i at the end of the level
  int initial_max_rank = 0;    ///< largest r_i after the initial compression of the level
  double seconds = 0;          ///< set-up of the level's operators + elimination
  std::size_t bytes = 0;       ///< factors kept for the solve from this level
};

/// Set-up report of an IFMM.
struct IfmmReport {
  std::string name;            ///< seed naming: nIFMMs{sigma}t{tau}b{l} or mIFMMb{l}
  double epsilon = 0;
  int sigma = 0, top = 0, bottom = 0, leaf_level = 0, order = 0;
  std::vector<IfmmLevelReport> levels;  ///< bottom level first
  std::size_t top_size = 0;    ///< size of the dense system at level 2
  double top_seconds = 0;      ///< its assembly + LU
  double seconds = 0;          ///< whole constructor
  std::size_t bytes = 0;       ///< all factors kept for the solve
  std::size_t peak_bytes = 0;  ///< largest working set of the factorisation (factors + operators)
};

/// The report as a result record (summary.json's "ifmm" object, Python's setup["ifmm"]): name,
/// epsilon, sigma, top, bottom, leaf_level, order, seconds, bytes, peak_bytes, top_size,
/// top_seconds and levels (a list: level, boxes, colours, node_parallel, unknowns,
/// initial_max_rank, max_rank, mean_rank, seconds, bytes), with the meanings of the fields above.
Record to_record(const IfmmReport& r);

/// The seed's name of a configuration (sigma 0: "mIFMMb{l}"; else "nIFMMs{sigma}t{tau}b{l}").
std::string configuration_name(int sigma, int top, int bottom);

/// M ~ A^{-1} as an elliptica::LinearOperator<cplx> (fixed; apply() is reentrant: concurrent
/// calls are independent).
class Ifmm final : public LinearOperator<cplx> {
 public:
  /// Initialises the extended system from `sys` and factorises it. Throws InvalidArgument for
  /// bad options (epsilon outside (0, 1), sigma not in {0, 3, 6}, top or bottom outside the
  /// tree, a tree shallower than 3 levels: the message says how to deepen it), missing
  /// callbacks or operator sizes that do not match; NumericalError for a nearly singular pivot
  /// (the box, its level and coordinates, the condition estimate) or non-finite entries;
  /// ResourceError when the factorisation's estimated memory exceeds the available memory.
  Ifmm(const FmmSystem& sys, const IfmmOptions& opt = {});
  ~Ifmm() override;
  std::size_t size() const override;
  /// z = M r (n values each, caller storage, not overlapping).
  void apply(const cplx* r, cplx* z) const override;
  /// Vector convenience (InvalidArgument for a wrong length).
  std::vector<cplx> solve(const std::vector<cplx>& b) const;
  /// Several right-hand sides: B is n x m column-major (column c = right-hand side c), X likewise.
  void solve_many(const cplx* B, cplx* X, std::size_t m) const;
  const IfmmReport& report() const;
  double apply_seconds_total() const;  ///< accumulated wall time of apply() calls
  long applications() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace elliptica::ifmm
