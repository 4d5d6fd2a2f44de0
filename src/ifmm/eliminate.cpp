// Block Gaussian elimination of one IFMM box and its fill-in (seed 001 Algorithm 1, lines 3-40;
// src/ifmm/internal.hpp and the file comment of include/elliptica/ifmm/ifmm.hpp).
//
// Box i (not eliminated): unknowns x_i (n) and z_i (r) are eliminated with the equations e1_i and
// e3_i; the pivot block is [[P2P_ii, U_i], [V_i^*, 0]]. The columns outside the pivot met by the
// pivot rows are the active columns of i's neighbours j (x_j, or y_j once j is eliminated) through
// A[e1_i, j] and y_i through -I in e3_i; the rows outside the pivot that meet the pivot columns are
// the active rows of the neighbours p (e1_p, or e2_p once p is eliminated) through A[p, x_i] and
// e2_i through -I at z_i. The Schur complement update A[a, b] -= A[a, P] A[P, P]^{-1} A[P, b] is
// formed for every such pair: (p, y_i) and (e2_i, b) become new neighbour blocks, (p, q) is added
// to P2P_pq when p and q are adjacent (or equal) and compressed into M2L_pq otherwise.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "elliptica/core/error.hpp"
#include "internal.hpp"

namespace elliptica::ifmm::detail {

namespace {

int active_dim(const Box& b) { return b.eliminated ? b.r : b.n; }

std::string box_name(const Level& lev, const Box& b) {
  std::ostringstream o;
  o << "level " << lev.level << " box (" << b.coord[0] << "," << b.coord[1] << "," << b.coord[2] << ")";
  return o.str();
}

void check_pivot(const Level& lev, const Box& b, double rcond, const char* what, const Settings& s) {
  if (!(rcond >= s.pivot_rcond)) {
    std::ostringstream o;
    o << "ifmm: nearly singular " << what << " at " << box_name(lev, b) << " (" << b.n << " unknowns, rank " << b.r
      << "): reciprocal condition estimate " << rcond << " < " << s.pivot_rcond
      << "; a smaller epsilon, another bottom level, or (BEM) a mesh without near-coincident elements may help";
    throw NumericalError(o.str());
  }
}

// Runs f under an OpenMP critical section when the level is processed node-parallel with sigma 3.
template <class F>
void interaction_list_op(const Settings& s, F&& f) {
  if (s.critical) {
#pragma omp critical(elliptica_ifmm_interaction_list)
    f();
  } else {
    f();
  }
}

// U_p grew from r0 to U_p.cols() columns: pad the rows of p's M2L blocks and of its L2L.
void pad_rows(Level& lev, Box& p, Eigen::Index r0) {
  (void)lev;
  const Eigen::Index r = p.U.cols();
  if (r == r0) return;
  for (auto& K : p.K) pad(K, r, K.cols());
  if (p.L2L.size() || p.L2L.cols()) pad(p.L2L, r, p.L2L.cols());
}

// V_q grew: pad the columns of the M2L blocks toward q and of its M2M.
void pad_cols(Level& lev, Box& q, Eigen::Index r0) {
  const Eigen::Index r = q.V.cols();
  if (r == r0) return;
  for (std::size_t a = 0; a < q.il.size(); ++a) {
    auto& K = lev.boxes[static_cast<std::size_t>(q.il[a])].K[static_cast<std::size_t>(q.il_back[a])];
    pad(K, K.rows(), r);
  }
  if (q.M2M.size() || q.M2M.rows()) pad(q.M2M, q.M2M.rows(), r);
}

void extend_U(Level& lev, Box& p, const Mat& F, const Settings& s) {
  const Eigen::Index r0 = p.U.cols();
  extend_basis(p.U, F, s.eps * p.scale, mix_seed(lev.level, static_cast<std::uint64_t>(p.pos), 2 * p.random_calls++));
  if (p.U.cols() != r0) interaction_list_op(s, [&] { pad_rows(lev, p, r0); });
}

void extend_V(Level& lev, Box& q, const Mat& Fh, const Settings& s) {
  const Eigen::Index r0 = q.V.cols();
  extend_basis(q.V, Fh, s.eps * q.scale, mix_seed(lev.level, static_cast<std::uint64_t>(q.pos), 2 * q.random_calls++ + 1));
  if (q.V.cols() != r0) interaction_list_op(s, [&] { pad_cols(lev, q, r0); });
}

// Well-separated fill-in F between the active row of p and the active column of q (seed 001
// Algorithm 1, lines 5-30): absorbed into the bases and M2L_pq.
void compress_fill(Level& lev, Box& p, Box& q, const Mat& F, const Settings& s) {
  const int ki = p.il_index(q.pos);
  if (ki < 0) throw NumericalError("ifmm: internal: fill-in between boxes that are neither adjacent nor in each other's interaction list");
  if (!p.eliminated) extend_U(lev, p, F, s);
  if (!q.eliminated) extend_V(lev, q, F.adjoint(), s);
  Mat& K = p.K[static_cast<std::size_t>(ki)];
  const Eigen::Index rows = p.eliminated ? p.r : p.U.cols();
  const Eigen::Index cols = q.eliminated ? q.r : q.V.cols();
  if (K.rows() != rows || K.cols() != cols) throw NumericalError("ifmm: internal: M2L block out of step with the bases");
  if (!p.eliminated && !q.eliminated) K.noalias() += p.U.adjoint() * F * q.V;
  else if (!p.eliminated) K.noalias() += p.U.adjoint() * F;
  else if (!q.eliminated) K.noalias() += F * q.V;
  else K += F;
}

}  // namespace

void eliminate(Level& lev, int i, const Settings& s) {
  Box& bi = lev.boxes[static_cast<std::size_t>(i)];
  const int n = bi.n;
  // equal ranks of U_i and V_i: pad the smaller basis (zero M2L rows / columns)
  {
    const int r = static_cast<int>(std::max(bi.U.cols(), bi.V.cols()));
    if (bi.U.cols() < r) {
      const Eigen::Index r0 = bi.U.cols();
      pad_basis(bi.U, r, mix_seed(lev.level, static_cast<std::uint64_t>(i), 1000003ULL + bi.random_calls++));
      interaction_list_op(s, [&] { pad_rows(lev, bi, r0); });
    }
    if (bi.V.cols() < r) {
      const Eigen::Index r0 = bi.V.cols();
      pad_basis(bi.V, r, mix_seed(lev.level, static_cast<std::uint64_t>(i), 2000003ULL + bi.random_calls++));
      interaction_list_op(s, [&] { pad_cols(lev, bi, r0); });
    }
    bi.r = r;
  }
  const int r = bi.r;
  if (!bi.U.allFinite() || !bi.V.allFinite())
    throw NumericalError("ifmm: internal: non-finite far-field basis (U or V) at " + box_name(lev, bi));
  const int self = bi.self_index();
  if (!bi.B[static_cast<std::size_t>(self)].allFinite())
    throw NumericalError("ifmm: non-finite self block at " + box_name(lev, bi));
  Elimination& el = bi.el;
  // pivot: LU of the self block and of the Schur pivot S = V^* P2P_ii^{-1} U
  el.luB.compute(bi.B[static_cast<std::size_t>(self)]);
  check_pivot(lev, bi, n > 0 ? el.luB.rcond() : 1.0, "self block", s);
  el.BiU = el.luB.solve(bi.U);
  el.Vh = bi.V.adjoint();
  if (r > 0) {
    el.luS.compute(el.Vh * el.BiU);
    check_pivot(lev, bi, el.luS.rcond(), "Schur pivot", s);
  }
  // columns: active columns of the neighbours (j != i), then y_i
  std::vector<int> cols, coff;
  int tot = 0;
  for (std::size_t a = 0; a < bi.nb.size(); ++a) {
    if (static_cast<int>(a) == self) continue;
    cols.push_back(static_cast<int>(a));
    coff.push_back(tot);
    tot += active_dim(lev.boxes[static_cast<std::size_t>(bi.nb[a])]);
  }
  const int ycol = tot;
  tot += r;
  Mat Rtop = Mat::Zero(n, tot);
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const Mat& Bij = bi.B[static_cast<std::size_t>(cols[c])];
    Rtop.middleCols(coff[c], Bij.cols()) = Bij;
  }
  // W = A_PP^{-1} [Rtop; Rbot], Rbot = [0, -I]
  const Mat Bf = el.luB.solve(Rtop);
  Mat Wz(r, tot), Wx;
  if (r > 0) {
    Mat rhs = el.Vh * Bf;
    rhs.rightCols(r) += Mat::Identity(r, r);
    Wz = el.luS.solve(rhs);
    Wx = Bf - el.BiU * Wz;
  } else {
    Wx = Bf;
  }
  // rows: active rows of the neighbours p != i, through A[p, x_i]
  std::vector<int> rows;  // indices into nb
  for (std::size_t a = 0; a < bi.nb.size(); ++a)
    if (static_cast<int>(a) != self) rows.push_back(static_cast<int>(a));
  const int nr = static_cast<int>(rows.size());
  std::vector<Mat> CW(static_cast<std::size_t>(nr));
  el.rows.assign(static_cast<std::size_t>(nr), 0);
  el.row_elim.assign(static_cast<std::size_t>(nr), 0);
  el.C.assign(static_cast<std::size_t>(nr), Mat());
#pragma omp parallel for schedule(dynamic, 1) num_threads(s.inner_threads) if (s.inner_threads > 1)
  for (int t = 0; t < nr; ++t) {
    Box& bp = lev.boxes[static_cast<std::size_t>(bi.nb[static_cast<std::size_t>(rows[static_cast<std::size_t>(t)])])];
    const int idx = bp.nb_index(i);
    Mat& C = bp.B[static_cast<std::size_t>(idx)];
    CW[static_cast<std::size_t>(t)].noalias() = -C * Wx;
    el.rows[static_cast<std::size_t>(t)] = bp.pos;
    el.row_elim[static_cast<std::size_t>(t)] = bp.eliminated ? 1 : 0;
    el.C[static_cast<std::size_t>(t)].swap(C);
    // (p, y_i): the new block of p's active row at i's remaining column
    C = CW[static_cast<std::size_t>(t)].middleCols(ycol, r);
  }
  // record of the pivot rows' columns, and i's new active row e2_i
  el.cols.resize(cols.size());
  el.col_elim.resize(cols.size());
  el.R.resize(cols.size());
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const Box& bj = lev.boxes[static_cast<std::size_t>(bi.nb[static_cast<std::size_t>(cols[c])])];
    el.cols[c] = bj.pos;
    el.col_elim[c] = bj.eliminated ? 1 : 0;
    el.R[c].swap(bi.B[static_cast<std::size_t>(cols[c])]);
    bi.B[static_cast<std::size_t>(cols[c])] = Wz.middleCols(coff[c], active_dim(bj));
  }
  bi.B[static_cast<std::size_t>(self)] = Wz.middleCols(ycol, r);
  // fill-in between neighbours: adjacent pairs exactly (parallel over rows: each row's blocks
  // belong to its box), well-separated pairs compressed (in sequence)
#pragma omp parallel for schedule(dynamic, 1) num_threads(s.inner_threads) if (s.inner_threads > 1)
  for (int t = 0; t < nr; ++t) {
    Box& bp = lev.boxes[static_cast<std::size_t>(bi.nb[static_cast<std::size_t>(rows[static_cast<std::size_t>(t)])])];
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const int q = bi.nb[static_cast<std::size_t>(cols[c])];
      const int idx = bp.nb_index(q);
      if (idx < 0) continue;
      bp.B[static_cast<std::size_t>(idx)] += CW[static_cast<std::size_t>(t)].middleCols(coff[c], bp.B[static_cast<std::size_t>(idx)].cols());
    }
  }
  bi.eliminated = true;  // from here on i's active row is e2_i and its active column y_i
  for (int t = 0; t < nr; ++t) {
    Box& bp = lev.boxes[static_cast<std::size_t>(bi.nb[static_cast<std::size_t>(rows[static_cast<std::size_t>(t)])])];
    for (std::size_t c = 0; c < cols.size(); ++c) {
      Box& bq = lev.boxes[static_cast<std::size_t>(bi.nb[static_cast<std::size_t>(cols[c])])];
      if (bp.nb_index(bq.pos) >= 0) continue;
      compress_fill(lev, bp, bq, CW[static_cast<std::size_t>(t)].middleCols(coff[c], active_dim(bq)), s);
    }
  }
  Mat().swap(bi.U);
  Mat().swap(bi.V);
}

std::size_t Elimination::bytes() const {
  std::size_t b = static_cast<std::size_t>(luB.matrixLU().size() + luS.matrixLU().size() + BiU.size() + Vh.size()) * sizeof(cplx);
  for (const auto& m : C) b += matrix_bytes(m);
  for (const auto& m : R) b += matrix_bytes(m);
  return b;
}

}  // namespace elliptica::ifmm::detail
