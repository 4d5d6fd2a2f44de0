/// @file numeric_setup.cpp
/// Numeric re-setup of a hierarchy for new values on the same sparsity pattern (numeric_setup.hpp).
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/numeric_setup.hpp"

#include <atomic>
#include <cmath>
#include <memory>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "sa_detail.hpp"

namespace elliptica::multigrid {

bool same_pattern(const CsrMatrix& a, const CsrMatrix& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col == b.col;
}

bool galerkin_values(const CsrMatrix& R, const CsrMatrix& A, const CsrMatrix& P, CsrMatrix& C, int threads) {
  if (R.cols != A.rows || A.cols != P.rows || C.rows != R.rows || C.cols != P.cols ||
      C.row_ptr.size() != C.rows + 1)
    throw InvalidArgument("galerkin_values: R is " + std::to_string(R.rows) + " x " + std::to_string(R.cols) +
                          ", A " + std::to_string(A.rows) + " x " + std::to_string(A.cols) + ", P " +
                          std::to_string(P.rows) + " x " + std::to_string(P.cols) + ", C " + std::to_string(C.rows) +
                          " x " + std::to_string(C.cols) + ": they do not chain");
  // A P as triple_product forms it (stored once: a fused R A P would recompute each row of A P once
  // per nonzero of R's column), then R (A P) numerically into C's pattern
  const CsrMatrix AP = multiply(A, P, threads);
  C.stencil.reset();  // C's values change here: a stencil form of the old ones no longer holds
  const auto nr = static_cast<std::int64_t>(C.rows);
  std::atomic<bool> outside{false};
  ParallelErrors errors;  // the per-thread maps allocate: nothing may escape the region
#pragma omp parallel num_threads(resolve_threads(threads)) if (nr > 2000)
  {
    std::vector<std::int64_t> pos;  // column of C -> its position in the current row, -1: none
    errors.run([&] { pos.assign(P.cols, -1); });
#pragma omp for schedule(dynamic, 256)
    for (std::int64_t i = 0; i < nr; ++i) {
      if (errors.failed()) continue;
      const auto ii = static_cast<std::size_t>(i);
      const std::int64_t c0 = C.row_ptr[ii], c1 = C.row_ptr[ii + 1];
      for (std::int64_t q = c0; q < c1; ++q) {
        pos[static_cast<std::size_t>(C.col[static_cast<std::size_t>(q)])] = q;
        C.val[static_cast<std::size_t>(q)] = 0.0;
      }
      bool miss = false;
      for (std::int64_t p = R.row_ptr[ii]; p < R.row_ptr[ii + 1]; ++p) {
        const double r = R.val[static_cast<std::size_t>(p)];
        const auto k = static_cast<std::size_t>(R.col[static_cast<std::size_t>(p)]);
        for (std::int64_t s = AP.row_ptr[k]; s < AP.row_ptr[k + 1]; ++s) {
          const auto j = static_cast<std::size_t>(AP.col[static_cast<std::size_t>(s)]);
          const double v = r * AP.val[static_cast<std::size_t>(s)];
          if (pos[j] >= 0)
            C.val[static_cast<std::size_t>(pos[j])] += v;
          else if (v != 0.0)
            miss = true;
        }
      }
      for (std::int64_t q = c0; q < c1; ++q) pos[static_cast<std::size_t>(C.col[static_cast<std::size_t>(q)])] = -1;
      if (miss) outside.store(true, std::memory_order_relaxed);
    }
  }
  errors.rethrow();
  return !outside.load();
}

namespace {

/// InvalidArgument unless A_new has the pattern of the finest level of h (and finite values).
void check_new_matrix(const Hierarchy& h, const CsrMatrix& A_new, const char* who) {
  const std::string w = std::string(who) + ": ";
  const CsrMatrix* A0 = h.level(0).matrix.get();
  if (!A0) throw InvalidArgument(w + "the hierarchy's finest level has no CSR matrix (matrix-free): nothing to update");
  if (A_new.rows != A0->rows || A_new.cols != A0->cols)
    throw InvalidArgument(w + "the new matrix is " + std::to_string(A_new.rows) + " x " + std::to_string(A_new.cols) +
                          " but the plan's is " + std::to_string(A0->rows) + " x " + std::to_string(A0->cols) +
                          "; a matrix of another size needs a new plan");
  A_new.validate();
  if (!same_pattern(A_new, *A0))
    throw InvalidArgument(w + "the new matrix has a different sparsity pattern (" + std::to_string(A_new.nnz()) +
                          " stored entries, the plan's " + std::to_string(A0->nnz()) +
                          (A_new.nnz() == A0->nnz() ? ", in other places" : "") +
                          "); update_values keeps the pattern and changes the values only: set up a new plan");
  for (double v : A_new.val)
    if (!std::isfinite(v)) throw InvalidArgument(w + "the new matrix has a non-finite value");
}

/// The coarsest solver of h set up again for A (the kind h has).
std::shared_ptr<const LinearOperator<double>> coarse_again(const Hierarchy& h, const CsrMatrix& A, bool same) {
  const LinearOperator<double>* c = h.coarse_solver();
  if (const auto* sd = dynamic_cast<const SparseDirect*>(c))
    return same ? std::make_shared<const SparseDirect>(A, *sd) : std::make_shared<const SparseDirect>(A);
  if (dynamic_cast<const BandedCholesky*>(c)) return std::make_shared<const BandedCholesky>(A);
  if (const auto* bp = dynamic_cast<const BoomerAmgPreconditioner*>(c))  // BoomerAMG's set-up again
    return std::make_shared<const BoomerAmgPreconditioner>(A, bp->options());
  throw InvalidArgument(
      "update_values: the hierarchy's coarse solver is neither the banded Cholesky, the sparse LDL^T nor BoomerAMG; it "
      "cannot be set up again from new values");
}

void check_coarse_kind(const Hierarchy& h) {
  const LinearOperator<double>* c = h.coarse_solver();
  if (!dynamic_cast<const SparseDirect*>(c) && !dynamic_cast<const BandedCholesky*>(c) &&
      !dynamic_cast<const BoomerAmgPreconditioner*>(c))
    throw InvalidArgument(
        "update_values: the hierarchy's coarse solver is neither the banded Cholesky, the sparse LDL^T nor BoomerAMG; it "
        "cannot be set up again from new values");
  for (std::size_t j = 0; j < h.num_levels(); ++j)
    if (!h.level(j).matrix)
      throw InvalidArgument("update_values: level " + std::to_string(j) + " has no CSR matrix (matrix-free)");
}

/// The coarse operator of level j + 1 for the new fine level f with transfer P, R: a numeric-only
/// product into the old pattern when P's pattern and the chain above are unchanged (`reuse`),
/// otherwise a full triple_product (and reuse becomes false).
CsrMatrix galerkin(const Hierarchy& h, std::size_t j, const Level& f, bool& reuse, int threads) {
  const Level& old = h.level(j);
  reuse = reuse && same_pattern(f.P, old.P);
  if (reuse) {
    CsrMatrix Ac = *h.level(j + 1).matrix;  // the pattern; the values are overwritten
    if (galerkin_values(f.R, *f.matrix, f.P, Ac, threads)) return Ac;
    reuse = false;
  }
  return triple_product(f.R, *f.matrix, f.P, threads);
}

}  // namespace

Hierarchy update_values(const Hierarchy& h, CsrMatrix A_new, int threads) {
  if (threads < 0) throw InvalidArgument("update_values: threads must be >= 0, got " + std::to_string(threads));
  check_coarse_kind(h);
  check_new_matrix(h, A_new, "update_values");
  std::vector<Level> levels;
  levels.push_back(Level::from_matrix(std::move(A_new), h.level(0).shape, threads));
  bool reuse = true;
  for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) {
    Level& f = levels.back();
    f.P = h.level(j).P;
    f.R = h.level(j).R;
    CsrMatrix Ac = galerkin(h, j, f, reuse, threads);
    levels.push_back(Level::from_matrix(std::move(Ac), h.level(j + 1).shape, threads));
  }
  auto coarse = coarse_again(h, *levels.back().matrix, reuse);
  return Hierarchy(std::move(levels), std::move(coarse), h.coarsening());
}

Hierarchy update_values(const Hierarchy& h, const AggregationPattern& pattern, CsrMatrix A_new, const AmgOptions& opt) {
  const std::string w = "update_values (smoothed aggregation): ";
  if (opt.threads < 0) throw InvalidArgument(w + "threads must be >= 0, got " + std::to_string(opt.threads));
  if (pattern.levels.size() + 1 != h.num_levels())
    throw InvalidArgument(w + "the aggregation record has " + std::to_string(pattern.levels.size()) +
                          " coarsened levels, the hierarchy " + std::to_string(h.num_levels() - 1));
  check_coarse_kind(h);
  check_new_matrix(h, A_new, "update_values");
  if (const SymmetryReport sym = check_symmetry(A_new); !sym.symmetric)
    throw InvalidArgument(w + describe_asymmetry(sym) + "; the hierarchy needs a symmetric matrix");
  {
    const std::vector<double> d = A_new.diagonal();
    for (std::size_t i = 0; i < d.size(); ++i)
      if (!(d[i] > 0.0))
        throw InvalidArgument(w + "the new matrix has a " + (d[i] < 0 ? "negative" : "zero") + " diagonal entry (row " +
                              std::to_string(i) + ", 0-based); the hierarchy needs a positive diagonal");
  }
  std::vector<Level> levels;
  levels.push_back(Level::from_matrix(std::move(A_new), GridShape{}, opt.threads));
  bool reuse = true;
  for (std::size_t j = 0; j + 1 < h.num_levels(); ++j) {
    const AggregationPattern::LevelPattern& lp = pattern.levels[j];
    Level& f = levels.back();
    if (lp.T.rows != f.rows() || lp.T.cols != h.level(j + 1).rows())
      throw InvalidArgument(w + "the aggregation record of level " + std::to_string(j) + " does not fit the hierarchy");
    f.P = detail::sa_prolongator(f, lp.S, lp.T, lp.B, lp.block, lp.theta, opt);
    f.R = f.P.transpose();
    CsrMatrix Ac = galerkin(h, j, f, reuse, opt.threads);
    detail::unit_diagonal_on_empty_rows(Ac);
    if (reuse && !same_pattern(Ac, *h.level(j + 1).matrix)) reuse = false;
    levels.push_back(Level::from_matrix(std::move(Ac), GridShape{}, opt.threads));
  }
  auto coarse = coarse_again(h, *levels.back().matrix, reuse);
  return Hierarchy(std::move(levels), std::move(coarse), 0);
}

}  // namespace elliptica::multigrid
