#pragma once
/// @file krylov.hpp
/// Krylov solvers shared by the whole library (multigrid, BEM, integral equations): one
/// linear-operator interface, one preconditioner interface, GMRES(m) with right preconditioning,
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
#include <complex>
#include <cstddef>
#include <functional>
#include <vector>

namespace elliptica::krylov {

/// y = A x for vectors of length size(). Implementations must not keep the pointers.
template <class T>
class LinearOperator {
 public:
  virtual ~LinearOperator() = default;
  virtual std::size_t size() const = 0;
  virtual void apply(const T* x, T* y) const = 0;
};

/// z = M^{-1} r, an approximate inverse of the operator.
template <class T>
class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual std::size_t size() const = 0;
  virtual void apply(const T* r, T* z) const = 0;
  /// True when M^{-1} is symmetric positive definite (a requirement of PCG).
  virtual bool is_symmetric() const { return false; }
};

struct Options {
  double rtol = 1e-6;            ///< relative residual reduction ||r||/||r_0||, in (0, 1)
  int max_iterations = 1000;     ///< total iterations (inner iterations for GMRES)
  int restart = 30;              ///< m of GMRES(m)/FGMRES(m)
  /// Called after every iteration with (iteration, relative residual); may be empty.
  std::function<void(int, double)> progress;
};

struct Result {
  bool converged = false;
  int iterations = 0;
  std::vector<double> residual_history;  ///< ||r_i|| / ||r_0||, i = 0..iterations (entry 0 is 1)
  long operator_applications = 0;        ///< applications of A (including residual recomputations)
  long preconditioner_applications = 0;
  double final_relative_residual = 0;    ///< true ||b - A x|| / ||r_0|| at exit
};

/// GMRES(m), right-preconditioned (M may be nullptr). x holds the initial guess on entry and the
/// solution on exit. Operator applications: iterations + restart cycles + 1.
template <class T>
Result gmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt);

/// Flexible GMRES(m) (Saad 1993): stores the preconditioned directions, so M may change between
/// applications.
template <class T>
Result fgmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt);

/// Conjugate gradients for Hermitian positive definite A (M nullptr) and preconditioned CG
/// (M Hermitian positive definite). Throws NumericalError on a breakdown that shows A or M is not
/// positive definite.
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

}  // namespace elliptica::krylov
