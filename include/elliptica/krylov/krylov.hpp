#pragma once
/// @file krylov.hpp
/// Krylov solvers shared by the whole library (multigrid, BEM, integral equations) over the one
/// operator interface of core/operator.hpp (a preconditioner is an operator M ~ A^{-1}):
/// GMRES(m) with right preconditioning,
/// flexible GMRES (for preconditioners that change between applications, e.g. a V-cycle with a
/// Krylov coarse solve), CG and preconditioned CG. Scalar types: double and std::complex<double>.
///
/// Stopping rule (all solvers): ||r_i||_2 <= rtol * ||r_0||_2 with r = b - A x, or max_iterations
/// reached. The iteration watches the recurrence's residual (GMRES: the least-squares residual);
/// when that meets rtol the true residual is recomputed, and `converged` means the TRUE residual
/// met it (otherwise the solver restarts from the true residual while iterations remain).
/// If ||r_0|| = 0 the solvers return at once: converged, 0 iterations, history {1}.
/// Errors: InvalidArgument (bad options, size mismatch, null or non-finite input), NumericalError
/// (NaN/Inf produced by the operator or preconditioner; CG/PCG breakdown showing that A or M is
/// not positive definite).
/// Sources: Saad & Schultz, SIAM J. Sci. Stat. Comput. 7 (1986) 856 (GMRES); Saad, SIAM J. Sci.
/// Comput. 14 (1993) 461 (FGMRES); Hestenes & Stiefel (1952) (CG); Saad, "Iterative Methods for
/// Sparse Linear Systems", 2nd ed., algorithms 6.9/6.11, 9.5, 9.6.
#include <atomic>
#include <complex>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"

namespace elliptica::krylov {

/// The operator interface (core/operator.hpp), under the names the solvers' callers know.
template <class T>
using LinearOperator = elliptica::LinearOperator<T>;
/// A preconditioner z = M^{-1} r is an operator (is_symmetric(): Hermitian positive definite, as PCG
/// requires; is_fixed(): the same map every time, as GMRES and CG require).
template <class T>
using Preconditioner = elliptica::LinearOperator<T>;

struct Options {
  double rtol = 1e-6;            ///< relative residual reduction ||r||/||r_0||, in (0, 1)
  /// Absolute residual norm, >= 0: the iteration stops at ||r|| <= max(rtol ||r_0||, atol), so a
  /// warm start whose residual is already below atol stops at once (0 iterations). 0: off.
  double atol = 0.0;
  int max_iterations = 1000;     ///< total iterations (inner iterations for GMRES), >= 1
  int restart = 30;              ///< m of GMRES(m)/FGMRES(m), >= 1
  int threads = 0;               ///< threads of the vector kernels (0: omp_get_max_threads()), >= 0
  /// Called after every iteration with (iteration, relative residual); may be empty.
  std::function<void(int, double)> progress;
};

/// Krylov method of a solver object.
enum class Method { Gmres, Fgmres, Cg };
/// "gmres", "fgmres", "cg" (InvalidArgument naming the unknown method otherwise); and back.
Method method_from_string(const std::string& s);
std::string to_string(Method m);

struct Result {
  bool converged = false;
  int iterations = 0;
  std::vector<double> residual_history;  ///< ||r_i|| / ||r_0||, i = 0..iterations (entry 0 is 1)
  long operator_applications = 0;        ///< applications of A (including residual recomputations)
  long preconditioner_applications = 0;
  double final_relative_residual = 0;    ///< true ||b - A x|| / ||r_0|| at exit
};

/// GMRES(m), right-preconditioned (M may be nullptr; otherwise a fixed map, InvalidArgument when
/// M->is_fixed() is false: use fgmres). x holds the initial guess on entry and the
/// solution on exit. Operator applications: iterations + restart cycles + 1.
template <class T>
Result gmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt);

/// Flexible GMRES(m) (Saad 1993): stores the preconditioned directions, so M may change between
/// applications.
template <class T>
Result fgmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt);

/// Conjugate gradients for Hermitian positive definite A (M nullptr) and preconditioned CG
/// (M Hermitian positive definite, fixed). Throws NumericalError on a breakdown that shows A or M is not
/// positive definite; InvalidArgument instead when A is a CsrOperator (core/sparse.hpp) whose
/// matrix is not symmetric (check_symmetry, checked only at the breakdown: the message names the
/// worst pair, 0-based).
template <class T>
Result cg(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt);

extern template Result gmres<double>(const LinearOperator<double>&, const double*, double*,
                                     const Preconditioner<double>*, const Options&);
extern template Result gmres<std::complex<double>>(const LinearOperator<std::complex<double>>&,
                                                   const std::complex<double>*, std::complex<double>*,
                                                   const Preconditioner<std::complex<double>>*, const Options&);
extern template Result fgmres<double>(const LinearOperator<double>&, const double*, double*,
                                      const Preconditioner<double>*, const Options&);
extern template Result fgmres<std::complex<double>>(const LinearOperator<std::complex<double>>&,
                                                    const std::complex<double>*, std::complex<double>*,
                                                    const Preconditioner<std::complex<double>>*, const Options&);
extern template Result cg<double>(const LinearOperator<double>&, const double*, double*,
                                  const Preconditioner<double>*, const Options&);
extern template Result cg<std::complex<double>>(const LinearOperator<std::complex<double>>&,
                                                const std::complex<double>*, std::complex<double>*,
                                                const Preconditioner<std::complex<double>>*, const Options&);

/// Checks what a solver object checks at construction: options in range (rtol, max_iterations,
/// restart when `uses_restart`, threads), M's size, and, unless `flexible`, that M is a fixed
/// linear map. Throws InvalidArgument naming `who` and the problem.
template <class T>
void validate_setup(const char* who, const LinearOperator<T>& A, const LinearOperator<T>* M, const Options& opt,
                    bool flexible, bool uses_restart);
extern template void validate_setup<double>(const char*, const LinearOperator<double>&, const LinearOperator<double>*,
                                            const Options&, bool, bool);
extern template void validate_setup<std::complex<double>>(const char*, const LinearOperator<std::complex<double>>&,
                                                          const LinearOperator<std::complex<double>>*, const Options&,
                                                          bool, bool);

/// A Krylov solve configured once: A, an optional preconditioner M (nullptr: none) and the
/// options. Holds references: A and M must outlive the solver. As an operator: size() = A's,
/// apply(b, x) writes the approximate solution of A x = b from x = 0 (result statistics are
/// accumulated in applications() / total_iterations(); convergence is not required: an inner
/// solve that stops at max_iterations is still a useful preconditioner), is_fixed() = false,
/// is_symmetric() = false. solve() and apply() are reentrant (no work storage is kept between
/// calls); the options' progress callback is called from the solving thread.
template <class T>
class Solver : public LinearOperator<T> {
 public:
  ~Solver() override = default;
  std::size_t size() const override { return A_.size(); }
  /// x = solve(A x = b) from x = 0.
  void apply(const T* b, T* x) const override;
  bool is_fixed() const override { return false; }
  /// One solve; x holds the initial guess on entry and the solution on exit. Throws as the free
  /// functions below (InvalidArgument for null or non-finite b/x, NumericalError).
  virtual Result solve(const T* b, T* x) const = 0;
  virtual Method method() const = 0;
  const LinearOperator<T>& op() const { return A_; }
  const LinearOperator<T>* preconditioner() const { return M_; }
  const Options& options() const { return opt_; }
  /// Calls of apply() so far and the iterations they took (all threads together).
  long applications() const { return applications_.load(); }
  long total_iterations() const { return iterations_.load(); }

 protected:
  Solver(const LinearOperator<T>& A, const LinearOperator<T>* M, Options opt)
      : A_(A), M_(M), opt_(std::move(opt)) {}
  const LinearOperator<T>& A_;
  const LinearOperator<T>* M_;
  Options opt_;
  mutable std::atomic<long> applications_{0}, iterations_{0};
};

/// GMRES(m) as an object (right preconditioning; M must be a fixed map). Throws InvalidArgument
/// from the constructor for bad options or an M of the wrong size or not fixed.
template <class T>
class Gmres final : public Solver<T> {
 public:
  Gmres(const LinearOperator<T>& A, const LinearOperator<T>* M = nullptr, Options opt = {});
  Result solve(const T* b, T* x) const override;
  Method method() const override { return Method::Gmres; }
};

/// FGMRES(m) as an object (M may be any operator, fixed or not: a V-cycle, an inner Gmres, ...).
template <class T>
class Fgmres final : public Solver<T> {
 public:
  Fgmres(const LinearOperator<T>& A, const LinearOperator<T>* M = nullptr, Options opt = {});
  Result solve(const T* b, T* x) const override;
  Method method() const override { return Method::Fgmres; }
};

/// CG / PCG as an object: A Hermitian positive definite; M, when given, fixed and is_symmetric()
/// (InvalidArgument from the constructor otherwise). As an operator it is not symmetric in the
/// sense of is_symmetric() (an inner CG is a nonlinear map of b).
template <class T>
class Cg final : public Solver<T> {
 public:
  Cg(const LinearOperator<T>& A, const LinearOperator<T>* M = nullptr, Options opt = {});
  Result solve(const T* b, T* x) const override;
  Method method() const override { return Method::Cg; }
};

/// The solver object of a method (the CLI's and Python's dispatch on a method name).
template <class T>
std::unique_ptr<Solver<T>> make_solver(Method m, const LinearOperator<T>& A, const LinearOperator<T>* M,
                                       Options opt);

extern template class Solver<double>;
extern template class Solver<std::complex<double>>;
extern template class Gmres<double>;
extern template class Gmres<std::complex<double>>;
extern template class Fgmres<double>;
extern template class Fgmres<std::complex<double>>;
extern template class Cg<double>;
extern template class Cg<std::complex<double>>;
extern template std::unique_ptr<Solver<double>> make_solver<double>(Method, const LinearOperator<double>&,
                                                                    const LinearOperator<double>*, Options);
extern template std::unique_ptr<Solver<std::complex<double>>> make_solver<std::complex<double>>(
    Method, const LinearOperator<std::complex<double>>&, const LinearOperator<std::complex<double>>*, Options);

}  // namespace elliptica::krylov
