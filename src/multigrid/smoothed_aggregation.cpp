/// @file smoothed_aggregation.cpp
/// The smoothed-aggregation hierarchy (amg.hpp; Vanek, Mandel, Brezina 1996): per level strength
/// graph, standard aggregation, tentative prolongator, Jacobi prolongator smoothing (step 4,
/// eq. (3.6) there), Galerkin coarse operator; SparseDirect on the coarsest level. Also the
/// rigid-body modes of linear elasticity.
#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "sa_detail.hpp"

namespace elliptica::multigrid {

NearNullSpace rigid_body_modes(const std::vector<double>& coords, int dim) {
  if (dim != 2 && dim != 3) throw InvalidArgument("rigid_body_modes: dim must be 2 or 3, got " + std::to_string(dim));
  const auto d = static_cast<std::size_t>(dim);
  if (coords.empty() || coords.size() % d != 0)
    throw InvalidArgument("rigid_body_modes: " + std::to_string(coords.size()) + " coordinates are not nodes x " +
                          std::to_string(dim));
  const std::size_t nn = coords.size() / d, n = nn * d;
  double c[3] = {0, 0, 0};
  for (std::size_t i = 0; i < nn; ++i)
    for (std::size_t a = 0; a < d; ++a) c[a] += coords[i * d + a] / static_cast<double>(nn);
  NearNullSpace B;
  B.k = dim == 2 ? 3 : 6;
  B.B.assign(n * B.k, 0.0);
  auto at = [&](std::size_t node, std::size_t comp, std::size_t col) -> double& { return B.B[node * d + comp + n * col]; };
  for (std::size_t i = 0; i < nn; ++i) {
    const double x = coords[i * d] - c[0], y = coords[i * d + 1] - c[1], z = dim == 3 ? coords[i * d + 2] - c[2] : 0.0;
    for (std::size_t a = 0; a < d; ++a) at(i, a, a) = 1.0;  // translations
    if (dim == 2) {
      at(i, 0, 2) = -y;  // rotation about z
      at(i, 1, 2) = x;
    } else {
      at(i, 1, 3) = -z;  // about x
      at(i, 2, 3) = y;
      at(i, 0, 4) = z;  // about y
      at(i, 2, 4) = -x;
      at(i, 0, 5) = -y;  // about z
      at(i, 1, 5) = x;
    }
  }
  return B;
}

namespace {

/// P = T - w D^-1 (A T) row by row (columns sorted, exact zeros dropped): (A T)_i accumulated in
/// the order of the sparse product (A's row, then T's rows), then combined with T_i, the values of
/// multiply(A, T) followed by a merge, without storing A T (a graph of about nnz(A) entries).
/// Sequential (`threads` unused).
CsrMatrix smooth_prolongator(const CsrMatrix& A, const std::vector<double>& diag, const CsrMatrix& T, double w,
                             int /*threads*/) {
  CsrMatrix P;
  P.rows = T.rows;
  P.cols = T.cols;
  P.row_ptr.assign(P.rows + 1, 0);
  {  // capacity for the largest possible P (untouched capacity costs no memory traffic)
    std::size_t bound = T.nnz();
    for (std::size_t i = 0; i < A.rows; ++i)
      for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
        const auto j = static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]);
        bound += static_cast<std::size_t>(T.row_ptr[j + 1] - T.row_ptr[j]);
      }
    bound = std::min(bound, P.rows * P.cols);
    P.col.reserve(bound);
    P.val.reserve(bound);
  }
  std::vector<double> tacc(T.cols, 0.0), atacc(T.cols, 0.0);
  std::vector<std::int64_t> marker(T.cols, -1);
  std::vector<std::int32_t> cols;
  for (std::size_t i = 0; i < P.rows; ++i) {
    cols.clear();
    auto touch = [&](std::int32_t c) {
      const auto cc = static_cast<std::size_t>(c);
      if (marker[cc] != static_cast<std::int64_t>(i)) {
        marker[cc] = static_cast<std::int64_t>(i);
        tacc[cc] = 0.0;
        atacc[cc] = 0.0;
        cols.push_back(c);
      }
      return cc;
    };
    for (std::int64_t p = T.row_ptr[i]; p < T.row_ptr[i + 1]; ++p)
      tacc[touch(T.col[static_cast<std::size_t>(p)])] += T.val[static_cast<std::size_t>(p)];
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]);
      const double a = A.val[static_cast<std::size_t>(p)];
      for (std::int64_t q = T.row_ptr[j]; q < T.row_ptr[j + 1]; ++q)
        atacc[touch(T.col[static_cast<std::size_t>(q)])] += a * T.val[static_cast<std::size_t>(q)];
    }
    std::sort(cols.begin(), cols.end());
    const double s = -w / diag[i];
    for (auto c : cols) {
      const double v = tacc[static_cast<std::size_t>(c)] + s * atacc[static_cast<std::size_t>(c)];
      if (v == 0.0) continue;
      P.col.push_back(c);
      P.val.push_back(v);
    }
    P.row_ptr[i + 1] = static_cast<std::int64_t>(P.col.size());
  }
  return P;
}

/// The filtered matrix of prolongator smoothing (Vanek, Mandel, Brezina 1996, section 3): the
/// entries of A between strongly connected nodes (and within a node's block) kept, the others
/// dropped and added to the diagonal. With one near-null vector B (k = 1) the dropped entry
/// a_ij goes to the diagonal as a_ij B_j / B_i, so that A_F B = A B and smoothing keeps the
/// near-null space in P's range (on coarse levels B is not constant: plain lumping, which keeps
/// row sums, would lose it); otherwise a_ij itself (row sums kept). With every connection strong
/// it is A itself. S: the strength graph on nodes of b unknowns.
CsrMatrix filtered_matrix(const CsrMatrix& A, const CsrMatrix& S, std::size_t b, const NearNullSpace& B) {
  CsrMatrix F;
  F.rows = A.rows;
  F.cols = A.cols;
  F.row_ptr.assign(A.rows + 1, 0);
  F.col.reserve(A.nnz());
  F.val.reserve(A.nnz());
  std::vector<std::int64_t> mark(S.rows, -1);
  for (std::size_t i = 0; i < A.rows; ++i) {
    const std::size_t I = i / b;
    for (std::int64_t p = S.row_ptr[I]; p < S.row_ptr[I + 1]; ++p)
      mark[static_cast<std::size_t>(S.col[static_cast<std::size_t>(p)])] = static_cast<std::int64_t>(i);
    double lumped = 0.0;
    std::size_t diag_pos = static_cast<std::size_t>(-1);
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]);
      const double v = A.val[static_cast<std::size_t>(p)];
      const std::size_t J = j / b;
      if (J == I || mark[J] == static_cast<std::int64_t>(i)) {
        if (j == i) diag_pos = F.col.size();
        F.col.push_back(static_cast<std::int32_t>(j));
        F.val.push_back(v);
      } else if (B.k == 1 && B.B[i] != 0.0) {
        lumped += v * B.B[j] / B.B[i];
      } else {
        lumped += v;
      }
    }
    if (diag_pos != static_cast<std::size_t>(-1)) F.val[diag_pos] += lumped;
    F.row_ptr[i + 1] = static_cast<std::int64_t>(F.col.size());
  }
  return F;
}

/// Coarse unknowns from zero columns of T (directions an aggregate cannot represent) have empty
/// rows in P^T A P: give them a unit diagonal (decoupled; P maps them to zero).
}  // namespace

namespace detail {

void unit_diagonal_on_empty_rows(CsrMatrix& A) {
  std::vector<std::size_t> empty;
  for (std::size_t i = 0; i < A.rows; ++i) {
    bool any = false;
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1] && !any; ++p) any = A.val[static_cast<std::size_t>(p)] != 0.0;
    if (!any) empty.push_back(i);
  }
  if (empty.empty()) return;
  CsrMatrix B;
  B.rows = A.rows;
  B.cols = A.cols;
  B.row_ptr.assign(A.rows + 1, 0);
  std::size_t e = 0;
  for (std::size_t i = 0; i < A.rows; ++i) {
    if (e < empty.size() && empty[e] == i) {
      B.col.push_back(static_cast<std::int32_t>(i));
      B.val.push_back(1.0);
      ++e;
    } else {
      for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
        B.col.push_back(A.col[static_cast<std::size_t>(p)]);
        B.val.push_back(A.val[static_cast<std::size_t>(p)]);
      }
    }
    B.row_ptr[i + 1] = static_cast<std::int64_t>(B.col.size());
  }
  A = std::move(B);
}

/// Step 4 on one level (amg.hpp); sets f.jacobi_lambda when it estimates rho(D^-1 A) itself.
CsrMatrix sa_prolongator(Level& f, const CsrMatrix& S, CsrMatrix T, const NearNullSpace& B, std::size_t bl,
                         double theta, const AmgOptions& opt) {
  const CsrMatrix& Af = *f.matrix;
  CsrMatrix P;
  if (opt.prolongator_omega > 0.0) {
    // smoothing with the filtered matrix keeps P's sparsity along the strong connections (with
    // theta = 0 it is A); lambda ~ rho(D_F^-1 A_F) by Lanczos
    bool filter = theta > 0.0 && S.nnz() + Af.rows / bl < Af.nnz() / (bl * bl);
    const CsrMatrix AF = filter ? filtered_matrix(Af, S, bl, B) : CsrMatrix{};
    std::vector<double> dF = filter ? AF.diagonal() : f.diagonal;
    if (filter && !std::all_of(dF.begin(), dF.end(), [](double d) { return d > 0.0; })) {
      filter = false;  // lumping made a diagonal entry non-positive (positive weak couplings)
      dF = f.diagonal;
    }
    SmootherOptions so;
    so.base = BaseSmoother::Jacobi;
    so.kind = Polynomial::Simple;
    so.lambda_safety = 1.0;
    so.lambda_iterations = opt.lambda_iterations;
    so.threads = opt.threads;
    double lambda = 0.0;
    if (filter) {
      try {
        lambda = Smoother(AF, so).lambda_max();
      } catch (const NumericalError&) {
        filter = false;  // lumped blocks of a system (elasticity) can make A_F indefinite
        dF = f.diagonal;
      }
    }
    if (!filter) {
      lambda = Smoother(*f.A, f.diagonal, so).lambda_max();
      f.jacobi_lambda = lambda;  // the V-cycle's Jacobi smoother reuses it
    }
    P = smooth_prolongator(filter ? AF : Af, dF, T, opt.prolongator_omega / lambda, opt.threads);
  } else {
    P = std::move(T);
  }
  return P;
}

}  // namespace detail

namespace {

void check_options(const AmgOptions& o) {
  const std::string w = "smoothed aggregation: ";
  if (!(o.strength_threshold >= 0.0 && o.strength_threshold < 1.0))
    throw InvalidArgument(w + "strength_threshold must be in [0, 1), got " + std::to_string(o.strength_threshold));
  if (o.block_size < 1) throw InvalidArgument(w + "block_size must be >= 1, got " + std::to_string(o.block_size));
  if (!(o.prolongator_omega >= 0.0 && o.prolongator_omega < 2.0))
    throw InvalidArgument(w + "prolongator_omega must be in [0, 2), got " + std::to_string(o.prolongator_omega));
  if (o.lambda_iterations < 1)
    throw InvalidArgument(w + "lambda_iterations must be >= 1, got " + std::to_string(o.lambda_iterations));
  if (o.coarse_size < 1) throw InvalidArgument(w + "coarse_size must be >= 1");
  if (o.max_levels < 2)
    throw InvalidArgument(w + "max_levels must be >= 2 (a one-level hierarchy is not multigrid), got " +
                          std::to_string(o.max_levels));
  if (o.threads < 0) throw InvalidArgument(w + "threads must be >= 0, got " + std::to_string(o.threads));
}

}  // namespace

Hierarchy smoothed_aggregation(CsrMatrix A, const AmgOptions& opt, const NearNullSpace& B0) {
  return smoothed_aggregation(std::move(A), opt, B0, nullptr);
}

Hierarchy smoothed_aggregation(CsrMatrix A, const AmgOptions& opt, const NearNullSpace& B0, AggregationPattern* record) {
  check_options(opt);
  if (record) *record = AggregationPattern{};
  const std::string w = "smoothed aggregation: ";
  if (A.rows != A.cols)
    throw InvalidArgument(w + "the matrix must be square, got " + std::to_string(A.rows) + " x " + std::to_string(A.cols));
  A.validate();
  if (const SymmetryReport sym = check_symmetry(A); !sym.symmetric)
    throw InvalidArgument(w + describe_asymmetry(sym) +
                          "; the hierarchy (Galerkin operators with R = P^T, a symmetric coarse solve) needs a "
                          "symmetric matrix");
  const std::size_t n = A.rows;
  const auto b = static_cast<std::size_t>(opt.block_size);
  if (n % b != 0)
    throw InvalidArgument(w + std::to_string(n) + " rows are not divisible by block_size " + std::to_string(b));
  {
    const std::vector<double> d = A.diagonal();
    for (std::size_t i = 0; i < n; ++i)
      if (!(d[i] > 0.0))
        throw InvalidArgument(w + "the matrix has a " + (d[i] < 0 ? "negative" : "zero") + " diagonal entry (row " +
                              std::to_string(i) + ", 0-based: " + text::shortest(d[i]) +
                              "), so it is not symmetric positive definite; the hierarchy needs a positive diagonal");
  }
  if (n <= opt.coarse_size)
    throw InvalidArgument(w + "the matrix has " + std::to_string(n) + " unknowns, not more than coarse_size = " +
                          std::to_string(opt.coarse_size) +
                          ": the hierarchy would have one level (a direct solve, not multigrid); lower coarse_size or "
                          "solve it directly");
  NearNullSpace B = B0;
  if (B.k == 0 && B.B.empty()) {
    B.k = b;
    B.B.assign(n * b, 0.0);
    for (std::size_t i = 0; i < n; ++i) B.B[i + n * (i % b)] = 1.0;
  } else if (B.k == 0 || B.B.size() != n * B.k) {
    throw InvalidArgument(w + "near-null space must be n x k (n = " + std::to_string(n) + "), got " +
                          std::to_string(B.B.size()) + " values for k = " + std::to_string(B.k));
  } else {
    for (double v : B.B)
      if (!std::isfinite(v)) throw InvalidArgument(w + "near-null space has a non-finite entry");
    // Each vector scaled to unit largest magnitude (the span, hence P, is unchanged; the squares
    // of the aggregates' Gram-Schmidt then neither underflow for a vector of size 1e-160 nor
    // overflow for 1e160), then checked: a zero vector or one in the span of the others would
    // give every aggregate a dependent direction, i.e. coarse unknowns that do nothing.
    const std::size_t k = B.k;
    for (std::size_t c = 0; c < k; ++c) {
      double m = 0.0;
      for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(B.B[i + n * c]));
      if (m == 0.0)
        throw InvalidArgument(w + "near-null vector " + std::to_string(c) + " (0-based column) is zero; give " +
                              "vectors the operator nearly annihilates (constants, rigid-body modes)");
      for (std::size_t i = 0; i < n; ++i) B.B[i + n * c] /= m;
    }
    // linear independence: modified Gram-Schmidt (twice) on a copy; a remainder below 1e-8 of the
    // vector's norm means it lies in the span of the earlier ones
    std::vector<double> Q = B.B;
    for (std::size_t c = 0; c < k; ++c) {
      double* qc = Q.data() + n * c;
      double norm0 = 0.0;
      for (std::size_t i = 0; i < n; ++i) norm0 += qc[i] * qc[i];
      for (int pass = 0; pass < 2; ++pass)
        for (std::size_t p = 0; p < c; ++p) {
          const double* qp = Q.data() + n * p;
          double d = 0.0;
          for (std::size_t i = 0; i < n; ++i) d += qp[i] * qc[i];
          for (std::size_t i = 0; i < n; ++i) qc[i] -= d * qp[i];
        }
      double norm = 0.0;
      for (std::size_t i = 0; i < n; ++i) norm += qc[i] * qc[i];
      if (!(std::sqrt(norm) > 1e-8 * std::sqrt(norm0)))
        throw InvalidArgument(w + "near-null vector " + std::to_string(c) +
                              " (0-based column) is a linear combination of the vectors before it; give " +
                              "linearly independent vectors");
      for (std::size_t i = 0; i < n; ++i) qc[i] /= std::sqrt(norm);
    }
  }

  std::vector<Level> levels;
  levels.push_back(Level::from_matrix(std::move(A), GridShape{}, opt.threads));
  std::size_t bl = b;
  while (levels.size() < static_cast<std::size_t>(opt.max_levels) && levels.back().rows() > opt.coarse_size) {
    Level& f = levels.back();
    const CsrMatrix& Af = *f.matrix;
    const std::size_t nf = Af.rows;
    // theta_l = theta 2^-l (Vanek et al. 1996: the Galerkin operators' off-diagonal entries
    // shrink relative to the diagonal level by level); when a level has no strong connections at
    // its threshold (every node isolated), every connection counts.
    // (the classical measure is row-relative: the same theta on every level)
    const double theta = opt.strength_measure == StrengthMeasure::Classical
                             ? opt.strength_threshold
                             : opt.strength_threshold * std::ldexp(1.0, -static_cast<int>(levels.size() - 1));
    CsrMatrix S = strength_graph(Af, theta, static_cast<int>(bl), opt.strength_measure);
    Aggregates agg = standard_aggregation(S);
    if ((agg.count == 0 || agg.count * B.k >= nf) && theta > 0.0) {
      S = strength_graph(Af, 0.0, static_cast<int>(bl));
      agg = standard_aggregation(S);
    }
    if (agg.count == 0) break;
    TentativeProlongator tp = tentative_prolongator(agg, static_cast<int>(bl), B, nf);
    if (tp.T.cols >= nf) break;  // no reduction: stop here
    if (record) record->levels.push_back({S, tp.T, B, bl, theta});
    CsrMatrix P = detail::sa_prolongator(f, S, std::move(tp.T), B, bl, theta, opt);
    f.R = P.transpose();
    CsrMatrix Ac = triple_product(f.R, Af, P, opt.threads);
    f.P = std::move(P);
    detail::unit_diagonal_on_empty_rows(Ac);
    levels.push_back(Level::from_matrix(std::move(Ac), GridShape{}, opt.threads));
    B = std::move(tp.coarse);
    bl = B.k;
  }
  if (levels.size() < 2)
    throw InvalidArgument(w + "the aggregation of the " + std::to_string(n) +
                          " unknowns made no coarser level (no strong connections: is the matrix diagonal?); a "
                          "one-level hierarchy is not multigrid");
  std::shared_ptr<const LinearOperator<double>> coarse;
  if (opt.coarse_direct) coarse = std::make_shared<const SparseDirect>(*levels.back().matrix);
  return Hierarchy(std::move(levels), std::move(coarse), 0);
}

}  // namespace elliptica::multigrid
