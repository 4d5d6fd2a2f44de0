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
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Lower, Eigen::AMDOrdering<int>> ldlt;
  Eigen::VectorXd dinv;  ///< 1 / pivot, 0 for a dropped (null) pivot
};

SparseDirect::SparseDirect(const CsrMatrix& A) : impl_(std::make_unique<Impl>()), n_(A.rows) {
  if (A.rows != A.cols)
    throw InvalidArgument("SparseDirect: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (A.rows == 0) throw InvalidArgument("SparseDirect: empty matrix");
  // by values (an explicit zero stored on one side only is symmetric), relative to the rows'
  // magnitudes (core/sparse.hpp); Galerkin rounding stays far below 1e-10
  if (const SymmetryReport sym = check_symmetry(A, 1e-10); !sym.symmetric)
    throw NumericalError("SparseDirect: the coarsest operator is not symmetric (" + describe_asymmetry(sym) +
                         "); the algebraic hierarchy needs a symmetric matrix");
  std::vector<Eigen::Triplet<double>> trip;
  trip.reserve(A.nnz());
  for (std::size_t i = 0; i < A.rows; ++i)
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p)
      trip.emplace_back(static_cast<int>(i), A.col[static_cast<std::size_t>(p)], A.val[static_cast<std::size_t>(p)]);
  Eigen::SparseMatrix<double> M(static_cast<Eigen::Index>(n_), static_cast<Eigen::Index>(n_));
  M.setFromTriplets(trip.begin(), trip.end());
  impl_->ldlt.compute(M);
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
  Eigen::VectorXd y = f.permutationP() * Eigen::Map<const Eigen::VectorXd>(b, n);
  f.matrixL().solveInPlace(y);
  y = y.cwiseProduct(impl_->dinv);
  f.matrixU().solveInPlace(y);
  Eigen::Map<Eigen::VectorXd>(x, n) = f.permutationPinv() * y;
}

}  // namespace elliptica::multigrid
