/// @file projection.cpp
/// Fischer's projection onto previous solutions (krylov/projection.hpp; Fischer 1998, scheme 2).
#include "elliptica/krylov/projection.hpp"

#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/core/parallel.hpp"

namespace elliptica::krylov {
namespace {

double vdot(const double* a, const double* b, std::size_t n, int nt) {
  const auto m = static_cast<std::ptrdiff_t>(n);
  double s = 0.0;
#pragma omp parallel for reduction(+ : s) num_threads(nt) if (m > kParallelMinVector) schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) s += a[i] * b[i];
  return s;
}

/// y += a x
void vaxpy(double a, const double* x, double* y, std::size_t n, int nt) {
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(nt) if (m > kParallelMinVector) schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) y[i] += a * x[i];
}

void vscale(double a, double* x, std::size_t n, int nt) {
  const auto m = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for num_threads(nt) if (m > kParallelMinVector) schedule(static)
  for (std::ptrdiff_t i = 0; i < m; ++i) x[i] *= a;
}

bool all_finite(const double* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

}  // namespace

SolutionProjection::SolutionProjection(std::size_t n, ProjectionOptions opt) : n_(n), opt_(opt) {
  if (n == 0) throw InvalidArgument("SolutionProjection: no unknowns (n = 0)");
  if (opt.max_vectors < 1) throw InvalidArgument("SolutionProjection: max_vectors must be >= 1, got 0");
  if (!(opt.drop_tolerance > 0.0 && opt.drop_tolerance < 1.0))
    throw InvalidArgument("SolutionProjection: drop_tolerance must be in (0, 1), got " +
                          std::to_string(opt.drop_tolerance));
  if (opt.threads < 0)
    throw InvalidArgument("SolutionProjection: threads must be >= 0, got " + std::to_string(opt.threads));
  // The basis grows to max_vectors pairs (x_i, A x_i) of n doubles: refuse a size that cannot fit
  // now rather than at the solve that would fill it.
  require_memory(2.0 * static_cast<double>(opt.max_vectors) * static_cast<double>(n) * sizeof(double),
                 "SolutionProjection: a basis of max_vectors = " + std::to_string(opt.max_vectors) + " solutions of " +
                     std::to_string(n) + " unknowns");
}

void SolutionProjection::clear() {
  X_.clear();
  AX_.clear();
}

void SolutionProjection::project(const double* b, double* x0) const {
  if (!b || !x0) throw InvalidArgument("SolutionProjection::project: null vector");
  const int nt = resolve_threads(opt_.threads);
  for (std::size_t i = 0; i < n_; ++i) x0[i] = 0.0;
  for (std::size_t i = 0; i < X_.size(); ++i) vaxpy(vdot(X_[i].data(), b, n_, nt), X_[i].data(), x0, n_, nt);
}

bool SolutionProjection::append(std::vector<double> d, std::vector<double> w, const std::vector<double>* x_full,
                                const std::vector<double>* ax_full, bool& restarted) {
  const int nt = resolve_threads(opt_.threads);
  restarted = false;
  if (X_.size() >= opt_.max_vectors && x_full) {  // step 4: restart from the latest solution
    const double xx = vdot(x_full->data(), ax_full->data(), n_, nt);
    if (!std::isfinite(xx)) throw NumericalError("SolutionProjection: x^T A x is not finite");
    clear();
    restarted = true;
    if (!(xx > 0.0)) return false;  // x = 0 (b = 0) or in the null space: nothing to keep
    std::vector<double> x1 = *x_full, ax1 = *ax_full;
    const double s = 1.0 / std::sqrt(xx);
    vscale(s, x1.data(), n_, nt);
    vscale(s, ax1.data(), n_, nt);
    X_.push_back(std::move(x1));
    AX_.push_back(std::move(ax1));
    return true;
  }
  const double before = vdot(d.data(), w.data(), n_, nt);
  if (!std::isfinite(before)) throw NumericalError("SolutionProjection: dx^T A dx is not finite");
  if (!(before > 0.0)) {
    // dx = 0 exactly (b in the span already), or in the null space; a clearly negative value means
    // A is not positive semi-definite
    double dd = vdot(d.data(), d.data(), n_, nt), ww = vdot(w.data(), w.data(), n_, nt);
    if (before < -1e-12 * std::sqrt(dd * ww))
      throw NumericalError("SolutionProjection: dx^T A dx = " + std::to_string(before) +
                           " < 0: the operator is not symmetric positive (semi-)definite");
    return false;
  }
  const std::size_t l = X_.size();
  std::vector<double> c(l);
  for (int pass = 0; pass < 2; ++pass) {  // classical Gram-Schmidt twice, in the A-inner product
    for (std::size_t i = 0; i < l; ++i) c[i] = vdot(X_[i].data(), w.data(), n_, nt);  // x_i^T A d
    for (std::size_t i = 0; i < l; ++i) {
      vaxpy(-c[i], X_[i].data(), d.data(), n_, nt);
      vaxpy(-c[i], AX_[i].data(), w.data(), n_, nt);
    }
  }
  const double after = vdot(d.data(), w.data(), n_, nt);
  // what is left of d after the projection is below drop_tolerance relative to the solution's
  // A-norm (or to d's own when no solution is given): in span X to the solve's accuracy
  const double ref = x_full ? vdot(x_full->data(), ax_full->data(), n_, nt) : before;
  if (!(after > opt_.drop_tolerance * opt_.drop_tolerance * ref)) return false;
  const double s = 1.0 / std::sqrt(after);
  vscale(s, d.data(), n_, nt);
  vscale(s, w.data(), n_, nt);
  X_.push_back(std::move(d));
  AX_.push_back(std::move(w));
  return true;
}

ProjectedResult SolutionProjection::solve(const LinearOperator<double>& A, const double* b, double* x,
                                          const InnerSolve& inner) {
  if (!b || !x) throw InvalidArgument("SolutionProjection::solve: null vector");
  if (!inner) throw InvalidArgument("SolutionProjection::solve: no inner solver");
  if (A.size() != n_)
    throw InvalidArgument("SolutionProjection::solve: the operator has size " + std::to_string(A.size()) +
                          ", the projection " + std::to_string(n_));
  if (!all_finite(b, n_)) throw InvalidArgument("SolutionProjection::solve: b has a non-finite entry");
  const int nt = resolve_threads(opt_.threads);
  ProjectedResult out;
  out.basis_before = X_.size();
  out.rhs_norm = std::sqrt(vdot(b, b, n_, nt));
  // step 1: x0 and r0 = b - sum alpha_i A x_i
  std::vector<double> x0(n_, 0.0), r0(b, b + n_);
  for (std::size_t i = 0; i < X_.size(); ++i) {
    const double a = vdot(X_[i].data(), b, n_, nt);
    vaxpy(a, X_[i].data(), x0.data(), n_, nt);
    vaxpy(-a, AX_[i].data(), r0.data(), n_, nt);
  }
  const double r0n = std::sqrt(vdot(r0.data(), r0.data(), n_, nt));
  out.projected_residual = out.rhs_norm > 0 ? r0n / out.rhs_norm : 0.0;
  // step 2: A dx = r0 from zero
  std::vector<double> dx(n_, 0.0);
  out.inner = inner(r0.data(), dx.data(), out.rhs_norm);
  if (!all_finite(dx.data(), n_)) throw NumericalError("SolutionProjection::solve: the inner solve returned NaN/Inf");
  out.final_residual = out.rhs_norm > 0 ? out.inner.final_relative_residual * r0n / out.rhs_norm : 0.0;
  // step 3: x = x0 + dx; w = A dx (the one matvec)
  std::vector<double> xs(x0);
  vaxpy(1.0, dx.data(), xs.data(), n_, nt);
  std::vector<double> w(n_);
  A.apply(dx.data(), w.data());
  if (!all_finite(w.data(), n_)) throw NumericalError("SolutionProjection::solve: A dx is not finite");
  std::vector<double> ax(b, b + n_);  // A x = (b - r0) + A dx: the drop test and the restart
  vaxpy(-1.0, r0.data(), ax.data(), n_, nt);
  vaxpy(1.0, w.data(), ax.data(), n_, nt);
  out.appended = append(std::move(dx), std::move(w), &xs, &ax, out.restarted);
  out.basis_after = X_.size();
  for (std::size_t i = 0; i < n_; ++i) x[i] = xs[i];
  return out;
}

bool SolutionProjection::add(const LinearOperator<double>& A, const double* x) {
  if (!x) throw InvalidArgument("SolutionProjection::add: null vector");
  if (A.size() != n_)
    throw InvalidArgument("SolutionProjection::add: the operator has size " + std::to_string(A.size()) +
                          ", the projection " + std::to_string(n_));
  if (!all_finite(x, n_)) throw InvalidArgument("SolutionProjection::add: x has a non-finite entry");
  std::vector<double> d(x, x + n_), w(n_);
  A.apply(d.data(), w.data());
  if (!all_finite(w.data(), n_)) throw NumericalError("SolutionProjection::add: A x is not finite");
  bool restarted = false;
  const std::vector<double> xf = d, axf = w;
  return append(std::move(d), std::move(w), &xf, &axf, restarted);  // relative to x's own A-norm
}

}  // namespace elliptica::krylov
