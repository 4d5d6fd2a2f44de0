#pragma once
// Internal data of the IFMM (include/elliptica/ifmm/ifmm.hpp): the extended sparse system of one
// level, the elimination records kept for the solve, and the steps under their seed names:
//   initialise.cpp  - the bottom level's operators (P2P, P2M, L2P) and the parent level's (from the
//                     children's M2L, fill-in, M2M, L2L), the initial compression, the M2L blocks
//   compression.cpp - randomised SVD and the basis updates that absorb well-separated fill-in
//   eliminate.cpp   - block Gaussian elimination of one box and its fill-in
//   factorise.cpp   - the driver: colours, levels (node- or matrix-parallel), the dense top level
//   solve.cpp       - forward and backward substitution
#include <Eigen/Dense>

#include <array>
#include <atomic>
#include <complex>
#include <cstdint>
#include <vector>

#include "elliptica/ifmm/ifmm.hpp"
#include "fmm/thin_svd.hpp"

namespace elliptica::ifmm::detail {

using Mat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic>;
using Vec = Eigen::Matrix<cplx, Eigen::Dynamic, 1>;
using RMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

/// What the solve needs of one box's elimination.
struct Elimination {
  Eigen::PartialPivLU<Mat> luB;  // LU of the self block P2P_ii (n x n)
  Eigen::PartialPivLU<Mat> luS;  // LU of the Schur pivot S = V^* P2P_ii^{-1} U (r x r)
  Mat BiU;                       // P2P_ii^{-1} U (n x r)
  Mat Vh;                        // V^* (r x n)
  // rows that received fill-in: neighbour box positions, whether that box was eliminated then
  // (its active row e2 rather than e1), and the block A[row, x_i] (active row x n)
  std::vector<int> rows;
  std::vector<char> row_elim;
  std::vector<Mat> C;
  // columns of the pivot rows e1_i: neighbour boxes, eliminated then (column y rather than x),
  // and the block A[e1_i, col] (n x active col)
  std::vector<int> cols;
  std::vector<char> col_elim;
  std::vector<Mat> R;
  std::size_t bytes() const;
};

/// One box of the current level.
struct Box {
  int tree_node = -1;
  int pos = -1;     // position in its level
  std::array<int, 3> coord{0, 0, 0};
  int parent = -1;  // position in the parent level
  int octant = 0;
  int n = 0;        // size of x (unknowns of the box at this level)
  std::int64_t begin = 0;  // bottom level: first tree-order position of its unknowns
  double scale = 1; // RMS singular value of the self block when the level was set up
  Mat U, V;         // L2P = U (n x rU), P2M = V^* (V: n x rV), orthonormal columns
  Mat L2L;          // e2 rows (rU) x parent's local coefficients in its Chebyshev basis (p^3)
  Mat M2M;          // parent's multipole (p^3) x y (rV)
  std::vector<int> nb;   // adjacent boxes (positions), the box itself included
  std::vector<Mat> B;    // aligned with nb: A[active row of this box, active column of nb]
  std::vector<int> il;   // interaction list (positions)
  std::vector<int> il_back;  // position of this box in il of il[a]
  std::vector<Mat> K;    // aligned with il: M2L (rU x rV of il[a]) from e2 of this box to y of il[a]
  bool eliminated = false;
  int r = 0;             // rank at elimination (rU = rV = r)
  unsigned random_calls = 0;  // counter of the box's random draws (reproducible seeds)
  Elimination el;
  int self_index() const;  // index of the box itself in nb
  int nb_index(int pos) const;  // index of pos in nb, -1 if absent
  int il_index(int pos) const;  // index of pos in il, -1 if absent
};

struct Level {
  int level = 0;
  std::vector<Box> boxes;
  std::vector<std::vector<int>> colours;
  std::vector<int> order;  // boxes in the elimination order (colours concatenated)
  std::vector<std::vector<int>> children;  // per box: its children's positions one level down
};

/// Top level (2): dense LU of the remaining system over the x of its boxes.
struct TopLevel {
  std::vector<std::vector<int>> children;  // per level-2 box: its children in the level below
  std::vector<Eigen::Index> offset;        // start of each box's x in the dense system
  Eigen::PartialPivLU<Mat> lu;
  Eigen::Index n = 0;
};

struct Settings {
  double eps = 1e-3;
  double pivot_rcond = 1e-14;
  int p3 = 0;
  bool critical = false;  // sigma = 3: interaction-list operations in a critical section
  int inner_threads = 1;  // threads inside one box's operations (matrix-parallel)
};

// compression.cpp
/// The IFMM's one SVD: fmm::detail::thin_svd (src/fmm/thin_svd.hpp, Jacobi, not Eigen 3.4's
/// BDCSVD), errors prefixed "ifmm:" and naming `what`.
using fmm::detail::ThinSvd;
inline ThinSvd thin_svd(const Mat& A, bool want_v, const char* what) {
  return fmm::detail::thin_svd(A, want_v, "ifmm", what);
}

/// Orthonormal columns Q (rows(A) x k) spanning the columns of A whose singular values exceed
/// tol (absolute), at most kmax of them; randomised range finder with adaptive rank for large A,
/// a direct SVD for small ones. seed: reproducible random draws.
Mat dominant_columns(const Mat& A, double tol, int kmax, std::uint64_t seed);
/// Extends the orthonormal basis Q (n x r) by the directions of F (n x m) outside it whose
/// singular values exceed tol, up to n columns. Returns the number of columns added.
int extend_basis(Mat& Q, const Mat& F, double tol, std::uint64_t seed);
/// Pads Q (n x r) to `cols` orthonormal columns with random directions orthogonal to it.
void pad_basis(Mat& Q, int cols, std::uint64_t seed);
/// Truncated SVD of A (m x k): A ~ Q R with Q (m x r) orthonormal, singular values > rel * s_max
/// (at most `rmax`).
void truncated_svd(const Mat& A, double rel, int rmax, Mat& Q, Mat& R);
/// Zero-pads M to rows x cols (keeps the existing entries).
void pad(Mat& M, Eigen::Index rows, Eigen::Index cols);
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c);

// initialise.cpp
/// Bottom level l from the system (P2P from the exact entries, P2M/L2P aggregated to level l).
void initialise_bottom(const FmmSystem& sys, int l, const Settings& s, int threads, Level& out);
/// Level kappa - 1 from the eliminated level kappa.
void initialise_parent(const FmmSystem& sys, Level& child, const Settings& s, int threads, Level& out);
/// Compresses the full (Chebyshev-basis) L2P (n x p^3) and P2M^* (n x p^3) of every box of `lev`
/// into U, V (truncated SVD) and returns the coefficient matrices RU (rU x p^3), RV (rV x p^3):
/// L2P ~ U RU, P2M ~ RV^* V^*. Then the M2L blocks K = RU_i M2L_t RV_j^* and the boxes' L2L / M2M
/// toward their parents (in the parent's p^3 basis).
void compress_level(const FmmSystem& sys, Level& lev, std::vector<Mat>& l2p_full, std::vector<Mat>& p2m_full,
                    const Settings& s, int threads);
/// Shared far-field bases of a level (orthonormal QU, QV: p^3 x k) and weights W = Q diag(s), from
/// the M2L matrices of the 26 nearest well-separated offsets: sum_t K_t K_t^* ~ WU WU^*,
/// sum_t K_t^* K_t ~ WV WV^* (singular values below 1e-2 eps x the largest dropped).
void far_field_weights(const FmmSystem& sys, int level, int p3, double eps, Mat& QU, Mat& WU, Mat& QV, Mat& WV, int threads);
/// Neighbour / interaction lists of the boxes of a level (positions), from the octree.
void link_level(const fmm::Octree& tree, Level& lev);

// eliminate.cpp
/// Eliminates box i of lev (x_i, z_i) with the fill-in of the file comment of ifmm.hpp.
void eliminate(Level& lev, int i, const Settings& s);

// solve.cpp
struct Factorisation;
void solve(const Factorisation& f, const cplx* B, cplx* X, std::size_t m);

struct Factorisation {
  std::size_t n = 0;
  std::vector<Level> levels;  // bottom level first; the last one is level 3
  std::vector<std::int64_t> perm;  // tree order -> original index
  TopLevel top;
  int threads = 1;
  std::vector<char> node_parallel;  // per level
};

std::size_t matrix_bytes(const Mat& m);

/// With the environment variable ELLIPTICA_IFMM_PROFILE set, the factorisation prints the wall
/// time of each step to stderr (as ELLIPTICA_FMM_PROFILE does for the FMM).
void profile(const char* step, int level, double seconds);
double profile_clock();

}  // namespace elliptica::ifmm::detail
