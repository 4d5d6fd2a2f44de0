/// @file coarse_direct.cpp
/// Coarsest-level solve of the algebraic hierarchies (amg.hpp): sparse LDL^T (Eigen's
/// SimplicialLDLT, approximate minimum degree ordering) with zero pivots dropped, i.e. a
/// pseudo-inverse on the null space of a positive semi-definite operator.
#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

namespace {
/// Pivots with |d| <= kNullPivot x max|d| are null. The Galerkin products of a singular operator
/// (pure Neumann) leave its null pivot at ~1e-11 of the largest on 1e6-unknown problems (rounding
/// of fine-level entries ~1e3 x larger than the coarsest ones, summed over the levels); a genuine
/// pivot that small would mean a coarsest operator with condition number 1e8.
constexpr double kNullPivot = 1e-8;

std::string fmt_e(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3e", v);
  return b;
}
}  // namespace

struct SparseDirect::Impl {
  /// LDL^T of the permuted matrix P A P^T (the ordering is applied here, so Eigen's own is natural)
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Lower, Eigen::NaturalOrdering<int>> ldlt;
  Eigen::VectorXd dinv;  ///< 1 / pivot, 0 for a dropped (null) pivot
};

/// The fill-reducing permutation (Eigen's AMDOrdering of the symmetric pattern) and its inverse.
struct SparseDirect::Ordering {
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> P, Pinv;
};

namespace {
Eigen::SparseMatrix<double> to_eigen(const CsrMatrix& A) {
  std::vector<Eigen::Triplet<double>> trip;
  trip.reserve(A.nnz());
  for (std::size_t i = 0; i < A.rows; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p)
      trip.emplace_back(static_cast<int>(i), A.col[static_cast<std::size_t>(p)], A.val[static_cast<std::size_t>(p)]);
  Eigen::SparseMatrix<double> M(static_cast<Eigen::Index>(A.rows), static_cast<Eigen::Index>(A.cols));
  M.setFromTriplets(trip.begin(), trip.end());
  return M;
}

void check_square(const CsrMatrix& A) {
  if (A.rows != A.cols)
    throw InvalidArgument("SparseDirect: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (A.rows == 0) throw InvalidArgument("SparseDirect: empty matrix");
}
}  // namespace

SparseDirect::SparseDirect(const CsrMatrix& A) : impl_(std::make_unique<Impl>()), n_(A.rows), nnz_(A.nnz()) {
  check_square(A);
  const Eigen::SparseMatrix<double> M = to_eigen(A);
  auto ord = std::make_shared<Ordering>();
  // AMD on the full symmetric pattern (as Eigen's SimplicialCholeskyBase::ordering does)
  Eigen::SparseMatrix<double> C;
  C = M.selfadjointView<Eigen::Lower>();
  Eigen::AMDOrdering<int> amd;
  amd(C, ord->Pinv);
  ord->P = ord->Pinv.inverse();
  ordering_ = std::move(ord);
  factorise(A);
}

SparseDirect::SparseDirect(const CsrMatrix& A, const SparseDirect& analysed)
    : impl_(std::make_unique<Impl>()), ordering_(analysed.ordering_), n_(A.rows), nnz_(A.nnz()) {
  check_square(A);
  if (A.rows != analysed.n_ || A.nnz() != analysed.nnz_)
    throw InvalidArgument("SparseDirect: the new matrix (" + std::to_string(A.rows) + " rows, " +
                          std::to_string(A.nnz()) + " entries) does not have the pattern of the analysed one (" +
                          std::to_string(analysed.n_) + " rows, " + std::to_string(analysed.nnz_) + " entries)");
  factorise(A);
}

void SparseDirect::factorise(const CsrMatrix& A) {
  // by values (an explicit zero stored on one side only is symmetric), relative to the rows'
  // magnitudes (core/sparse.hpp); Galerkin rounding stays far below 1e-10
  if (const SymmetryReport sym = check_symmetry(A, 1e-10); !sym.symmetric)
    throw NumericalError("SparseDirect: the coarsest operator is not symmetric (" + describe_asymmetry(sym) +
                         "); the algebraic hierarchy needs a symmetric matrix");
  const Eigen::SparseMatrix<double> M = to_eigen(A);
  Eigen::SparseMatrix<double> Mp(M.rows(), M.cols());
  Mp.selfadjointView<Eigen::Lower>() = M.selfadjointView<Eigen::Lower>().twistedBy(ordering_->P);
  impl_->ldlt.compute(Mp);
  // Eigen reports NumericalIssue only for an exactly zero pivot; those and tiny ones are handled
  // below from the pivots themselves.
  if (impl_->ldlt.info() != Eigen::Success && impl_->ldlt.info() != Eigen::NumericalIssue)
    throw NumericalError("SparseDirect: the LDL^T factorisation of the coarsest operator failed");
  const Eigen::VectorXd d = impl_->ldlt.vectorD();
  double dmax = 0.0;  // a plain loop: Eigen's cwiseAbs().maxCoeff() trips a g++ 12 AVX-512 warning
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    if (!std::isfinite(d[i])) throw NumericalError("SparseDirect: the LDL^T factorisation of the coarsest operator is not finite");
    dmax = std::max(dmax, std::abs(d[i]));
  }
  if (!(dmax > 0) || !std::isfinite(dmax))
    throw NumericalError("SparseDirect: the coarsest operator is zero or not finite");
  impl_->dinv.resize(d.size());
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    if (std::abs(d[i]) <= kNullPivot * dmax) {
      impl_->dinv[i] = 0.0;
      ++null_pivots_;
    } else if (d[i] < 0) {
      throw NumericalError("SparseDirect: the coarsest operator is indefinite (negative pivot " + fmt_e(d[i]) +
                           " of largest " + fmt_e(dmax) + "); the algebraic hierarchy needs a symmetric "
                           "positive (semi-)definite matrix");
    } else {
      impl_->dinv[i] = 1.0 / d[i];
    }
  }
}

SparseDirect::~SparseDirect() = default;

void SparseDirect::apply(const double* b, double* x) const {
  const auto n = static_cast<Eigen::Index>(n_);
  const auto& f = impl_->ldlt;
  Eigen::VectorXd y = ordering_->P * Eigen::Map<const Eigen::VectorXd>(b, n);
  f.matrixL().solveInPlace(y);
  y = y.cwiseProduct(impl_->dinv);
  f.matrixU().solveInPlace(y);
  Eigen::Map<Eigen::VectorXd>(x, n) = ordering_->Pinv * y;
}

}  // namespace elliptica::multigrid
