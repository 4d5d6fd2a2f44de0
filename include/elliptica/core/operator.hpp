#pragma once
/// @file operator.hpp
/// The one operator interface of the library (in the spirit of Ginkgo's LinOp): a square linear
/// map y = A x of size n. Matrices (CSR, dense), matrix-free operators (the FMM-accelerated BEM
/// operator), preconditioners (block-diagonal, smoothers, V-cycles, direct factorisations) and
/// Krylov solvers (krylov::Gmres, krylov::Fgmres, krylov::Cg: apply = solve from zero) all
/// implement it, so they nest without special-case code: FGMRES preconditioned by GMRES
/// preconditioned by a V-cycle whose coarse solve is CG is three constructor calls.
///
/// Conventions
/// - apply(x, y) writes all n entries of y (caller-owned storage, length size()); x and y must
///   not alias. Implementations must not keep the pointers. apply() is const and reentrant unless
///   the implementation says otherwise (plans with internal work vectors say so).
/// - is_symmetric(): the map is Hermitian (symmetric for real T) positive definite up to
///   rounding -- what (preconditioned) CG requires of A and of M.
/// - is_fixed(): the map is the same linear map on every application. False for inner Krylov
///   solves (their result depends on x nonlinearly through the stopping rule): an outer GMRES or
///   CG then needs the flexible variant (krylov::Fgmres), and refuses such a preconditioner.
/// - Scalar types: float, double, std::complex<float>, std::complex<double> (the interface is a
///   template; the library instantiates its solvers for double and std::complex<double>).
/// - Errors: apply() throws elliptica::Error subclasses (core/error.hpp) for bad input of its own
///   kind; size mismatches are the caller's contract (checked by the solvers before the first
///   application).
#include <cstddef>

namespace elliptica {

template <class T>
class LinearOperator {
 public:
  using value_type = T;
  virtual ~LinearOperator() = default;
  /// n: rows = columns.
  virtual std::size_t size() const = 0;
  /// y = A x, x and y of length size(), not aliased.
  virtual void apply(const T* x, T* y) const = 0;
  /// Hermitian positive definite (CG may use it as A or as a preconditioner).
  virtual bool is_symmetric() const { return false; }
  /// The same linear map on every call (false for inner Krylov solves: use FGMRES around them).
  virtual bool is_fixed() const { return true; }
};

/// The identity of size n (the "no preconditioner" operator made explicit).
template <class T>
class IdentityOperator final : public LinearOperator<T> {
 public:
  explicit IdentityOperator(std::size_t n) : n_(n) {}
  std::size_t size() const override { return n_; }
  void apply(const T* x, T* y) const override {
    for (std::size_t i = 0; i < n_; ++i) y[i] = x[i];
  }
  bool is_symmetric() const override { return true; }

 private:
  std::size_t n_;
};

}  // namespace elliptica
