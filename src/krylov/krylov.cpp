/// @file krylov.cpp
/// GMRES(m) (right preconditioning), flexible GMRES(m) and (preconditioned) CG; see krylov.hpp for
/// the API and the stopping rule.
///
/// Implementation notes
/// - Inner products are <a, b> = sum conj(a_i) b_i (linear in the second argument).
/// - Arnoldi: modified Gram-Schmidt with one reorthogonalisation pass when the norm of the new
///   vector drops below ||w|| / sqrt(2) during the first pass (the "twice is enough" criterion of
///   Daniel, Gragg, Kaufman & Stewart, Math. Comp. 30 (1976) 772, and Kahan/Parlett).
/// - The Hessenberg least-squares problem is reduced with complex Givens rotations
///   G = [c s; -conj(s) c], c real, so |g_{j+1}| is the least-squares residual after step j.
/// - x is updated at the end of every cycle (restart, convergence, breakdown or iteration cap);
///   the true residual b - A x is then recomputed (one operator application) and used both as the
///   restart vector and as the reported final residual. A cycle whose least-squares residual met the
///   tolerance but whose true residual did not (loss of accuracy) is followed by another cycle while
///   iterations remain; `converged` always refers to the true residual.
/// - CG stops on the recursively updated residual, confirms with the true residual (one operator
///   application) and, if that does not meet the tolerance, restarts from the true residual.
/// - Vector kernels use OpenMP (static schedule) above a size threshold, so results are
///   deterministic for a given thread count.
#include "elliptica/krylov/krylov.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica::krylov {
namespace {

using cplx = std::complex<double>;

/// Reorthogonalise when the Gram-Schmidt pass shrinks the vector by more than this factor.
const double kReorthogonalise = 1.0 / std::sqrt(2.0);
/// Arnoldi "happy" breakdown: h_{j+1,j} <= kBreakdown * ||A z_j||, the Krylov space is invariant
/// to working precision.
constexpr double kBreakdown = 1e-14;

inline double conj_s(double a) { return a; }
inline cplx conj_s(cplx a) { return std::conj(a); }

inline bool finite_s(double a) { return std::isfinite(a); }
inline bool finite_s(cplx a) { return std::isfinite(a.real()) && std::isfinite(a.imag()); }

/// <a, b> = sum conj(a_i) b_i
double dot(const double* a, const double* b, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
  double s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) s += a[i] * b[i];
  return s;
}

cplx dot(const cplx* a, const cplx* b, std::size_t n, int nt) {
  // Array-oriented access to std::complex is guaranteed by [complex.numbers.general].
  const double* ad = reinterpret_cast<const double*>(a);
  const double* bd = reinterpret_cast<const double*>(b);
  const auto N = static_cast<std::ptrdiff_t>(n);
  double re = 0, im = 0;
#pragma omp parallel for simd reduction(+ : re, im) schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) {
    const double ar = ad[2 * i], ai = ad[2 * i + 1], br = bd[2 * i], bi = bd[2 * i + 1];
    re += ar * br + ai * bi;
    im += ar * bi - ai * br;
  }
  return {re, im};
}

template <class T>
double norm2(const T* a, std::size_t n, int nt) {
  return std::sqrt(std::abs(std::real(dot(a, a, n, nt))));
}

/// y += alpha x
void axpy(double alpha, const double* x, double* y, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) y[i] += alpha * x[i];
}

void axpy(cplx alpha, const cplx* x, cplx* y, std::size_t n, int nt) {
  const double* xd = reinterpret_cast<const double*>(x);
  double* yd = reinterpret_cast<double*>(y);
  const double ar = alpha.real(), ai = alpha.imag();
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) {
    const double xr = xd[2 * i], xi = xd[2 * i + 1];
    yd[2 * i] += ar * xr - ai * xi;
    yd[2 * i + 1] += ar * xi + ai * xr;
  }
}

/// The CG step's vector updates in one pass (instead of three): x += alpha p, r -= alpha q; returns
/// ||r|| of the updated r.
double cg_update(double alpha, const double* p, const double* q, double* x, double* r, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
  double s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) {
    x[i] += alpha * p[i];
    const double ri = r[i] + (-alpha) * q[i];
    r[i] = ri;
    s += ri * ri;
  }
  return std::sqrt(std::abs(s));
}

/// y = x + beta y
template <class T>
void xpby(const T* x, T beta, T* y, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) y[i] = x[i] + beta * y[i];
}

/// x *= alpha (alpha real)
template <class T>
void scale(double alpha, T* x, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) x[i] *= alpha;
}

/// r = b - r (r holds A x on entry)
template <class T>
void residual_from_ax(const T* b, T* r, std::size_t n, int nt) {
  const auto N = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static) num_threads(nt) if (N > kParallelMinVector)
  for (std::ptrdiff_t i = 0; i < N; ++i) r[i] = b[i] - r[i];
}

template <class T>
bool all_finite(const T* a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!finite_s(a[i])) return false;
  return true;
}

}  // namespace

template <class T>
void validate_setup(const char* who, const LinearOperator<T>& A, const LinearOperator<T>* M, const Options& opt,
                    bool flexible, bool uses_restart) {
  const std::string w(who);
  if (!(opt.rtol > 0.0 && opt.rtol < 1.0)) {
    std::ostringstream s;
    s << w << ": rtol must be in (0, 1), got " << opt.rtol;
    throw InvalidArgument(s.str());
  }
  if (!(opt.atol >= 0.0) || !std::isfinite(opt.atol)) {
    std::ostringstream s;
    s << w << ": atol must be finite and >= 0, got " << opt.atol;
    throw InvalidArgument(s.str());
  }
  if (opt.max_iterations < 1)
    throw InvalidArgument(w + ": max_iterations must be >= 1, got " + std::to_string(opt.max_iterations));
  if (uses_restart && opt.restart < 1)
    throw InvalidArgument(w + ": restart must be >= 1, got " + std::to_string(opt.restart));
  if (opt.threads < 0) throw InvalidArgument(w + ": threads must be >= 0 (0: OpenMP default), got " + std::to_string(opt.threads));
  const std::size_t n = A.size();
  if (M != nullptr && M->size() != n)
    throw InvalidArgument(w + ": preconditioner size " + std::to_string(M->size()) + " does not match operator size " +
                          std::to_string(n));
  if (M != nullptr && !flexible && !M->is_fixed())
    throw InvalidArgument(w + ": the preconditioner is not a fixed linear map (an inner Krylov solve?): use FGMRES");
}

namespace {

template <class T>
void validate(const char* who, const LinearOperator<T>& A, const T* b, const T* x, const Preconditioner<T>* M,
              const Options& opt, bool uses_restart, bool flexible = false) {
  const std::string w(who);
  validate_setup(who, A, M, opt, flexible, uses_restart);
  const std::size_t n = A.size();
  if (n > 0 && (b == nullptr || x == nullptr))
    throw InvalidArgument(w + ": b and x must not be null for an operator of size " + std::to_string(n));
  if (n > 0 && !all_finite(b, n)) throw InvalidArgument(w + ": right-hand side b contains NaN or Inf");
  if (n > 0 && !all_finite(x, n)) throw InvalidArgument(w + ": initial guess x contains NaN or Inf");
}

/// Where a Krylov solve starts (start_solve): beta0 = ||b - A x0||, the stopping threshold
/// target = max(rtol beta0, atol), and done when x0 already solves the system.
struct Start {
  double beta0 = 0.0, target = 0.0;
  bool done = false;
};

/// The common start of GMRES, FGMRES and CG (after validate): the initial residual r = b - A x
/// (r: A.size() entries; one operator application, counted in res) and its norm, with
/// residual_history {1} in res. When x already solves the system, res is marked converged and
/// done is set: final_relative_residual 0 for b - A x = 0, 1 for a warm start with
/// ||b - A x|| <= atol. Throws NumericalError "<name>: the initial residual b - A x is not finite
/// ..." when the operator produced NaN or Inf.
template <class T>
Start start_solve(const std::string& name, const LinearOperator<T>& A, const T* b, const T* x, T* r, const Options& opt,
                  int nt, Result& res) {
  const std::size_t n = A.size();
  res.residual_history.push_back(1.0);
  if (n > 0) {
    A.apply(x, r);
    ++res.operator_applications;
    residual_from_ax(b, r, n, nt);
  }
  Start st;
  st.beta0 = norm2(r, n, nt);
  if (!std::isfinite(st.beta0))
    throw NumericalError(name + ": the initial residual b - A x is not finite (the operator produced NaN or Inf)");
  if (st.beta0 == 0.0) {
    res.converged = true;
    res.final_relative_residual = 0.0;
    st.done = true;
    return st;
  }
  if (st.beta0 <= opt.atol) {  // a warm start already within the absolute tolerance
    res.converged = true;
    res.final_relative_residual = 1.0;
    st.done = true;
    return st;
  }
  st.target = std::max(opt.rtol * st.beta0, opt.atol);
  return st;
}

/// Givens rotation G = [c s; -conj(s) c] with G [a; b] = [r; 0] (b real, >= 0).
template <class T>
void make_rotation(T a, double b, double& c, T& s, T& r) {
  const double absa = std::abs(a);
  if (b == 0.0) {
    c = 1.0;
    s = T(0);
    r = a;
  } else if (absa == 0.0) {
    c = 0.0;
    s = T(1);
    r = T(b);
  } else {
    const double rho = std::hypot(absa, b);
    const T phase = a / absa;
    c = absa / rho;
    s = phase * (b / rho);
    r = phase * rho;
  }
}

template <class T>
void apply_rotation(double c, T s, T& x1, T& x2) {
  const T t1 = c * x1 + s * x2;
  x2 = -conj_s(s) * x1 + c * x2;
  x1 = t1;
}

template <class T>
Result gmres_impl(const char* who, bool flexible, const LinearOperator<T>& A, const T* b, T* x,
                  const Preconditioner<T>* M, const Options& opt) {
  validate(who, A, b, x, M, opt, true, flexible);
  const int nt = resolve_threads(opt.threads);
  const std::string name(who);
  const std::size_t n = A.size();
  Result res;
  std::vector<T> r(n), w(n), u(n);
  const Start st = start_solve(name, A, b, x, r.data(), opt, nt, res);
  if (st.done) return res;
  const double beta0 = st.beta0, target = st.target;

  const int m = std::min(opt.restart, opt.max_iterations);
  const auto ld = static_cast<std::size_t>(m) + 1;  // leading dimension of H (column-major)
  std::vector<std::vector<T>> V;  // Arnoldi basis, grown on demand
  std::vector<std::vector<T>> Z;  // FGMRES: preconditioned directions
  std::vector<T> H(ld * static_cast<std::size_t>(m));
  std::vector<double> cs(static_cast<std::size_t>(m));
  std::vector<T> sn(static_cast<std::size_t>(m));
  std::vector<T> g(ld), y(static_cast<std::size_t>(m));
  auto h = [&](std::size_t i, std::size_t j) -> T& { return H[i + j * ld]; };
  const bool store_z = flexible && M != nullptr;

  double beta = beta0;  // true residual norm at the start of the cycle (r holds the residual)
  int total = 0;
  while (true) {
    if (V.empty()) V.emplace_back(n);
    std::copy(r.begin(), r.end(), V[0].begin());
    scale(1.0 / beta, V[0].data(), n, nt);
    std::fill(g.begin(), g.end(), T(0));
    g[0] = T(beta);

    int k = 0;  // columns of the least-squares problem usable at the end of the cycle
    bool breakdown = false;
    for (int j = 0; j < m && total < opt.max_iterations; ++j) {
      const auto ju = static_cast<std::size_t>(j);
      const T* zin = V[ju].data();
      if (M != nullptr) {
        T* zj = u.data();
        if (store_z) {
          if (Z.size() <= ju) Z.emplace_back(n);
          zj = Z[ju].data();
        }
        M->apply(V[ju].data(), zj);
        ++res.preconditioner_applications;
        zin = zj;
      }
      A.apply(zin, w.data());
      ++res.operator_applications;

      // Modified Gram-Schmidt, plus one more pass if the first one cancelled too much.
      const double wnorm0 = norm2(w.data(), n, nt);
      for (std::size_t i = 0; i <= ju; ++i) {
        const T hij = dot(V[i].data(), w.data(), n, nt);
        h(i, ju) = hij;
        axpy(-hij, V[i].data(), w.data(), n, nt);
      }
      double hnext = norm2(w.data(), n, nt);
      if (hnext < kReorthogonalise * wnorm0) {
        for (std::size_t i = 0; i <= ju; ++i) {
          const T t = dot(V[i].data(), w.data(), n, nt);
          h(i, ju) += t;
          axpy(-t, V[i].data(), w.data(), n, nt);
        }
        hnext = norm2(w.data(), n, nt);
      }
      if (!std::isfinite(wnorm0) || !std::isfinite(hnext))
        throw NumericalError(name + ": the operator or preconditioner produced NaN or Inf at iteration " +
                             std::to_string(total + 1));

      // Apply the previous rotations to column j, then eliminate h(j+1, j).
      for (std::size_t i = 0; i < ju; ++i) apply_rotation(cs[i], sn[i], h(i, ju), h(i + 1, ju));
      T rjj;
      make_rotation(h(ju, ju), hnext, cs[ju], sn[ju], rjj);
      if (std::abs(rjj) == 0.0) {
        // A z_j = 0 (to the last bit): the least-squares matrix is singular, column j is unusable.
        breakdown = true;
        break;
      }
      h(ju, ju) = rjj;
      h(ju + 1, ju) = T(0);
      g[ju + 1] = -conj_s(sn[ju]) * g[ju];
      g[ju] = cs[ju] * g[ju];

      ++total;
      k = j + 1;
      const double ls = std::abs(g[ju + 1]);
      res.residual_history.push_back(ls / beta0);
      if (opt.progress) opt.progress(total, ls / beta0);
      if (ls <= target) break;
      if (hnext <= kBreakdown * wnorm0) {
        breakdown = true;
        break;
      }
      if (V.size() <= ju + 1) V.emplace_back(n);
      std::copy(w.begin(), w.end(), V[ju + 1].begin());
      scale(1.0 / hnext, V[ju + 1].data(), n, nt);
    }

    // x += M^{-1} V_k y_k (GMRES) or Z_k y_k (FGMRES), y_k from the triangular system R y = g.
    if (k > 0) {
      const auto ku = static_cast<std::size_t>(k);
      for (std::size_t ii = ku; ii-- > 0;) {
        T s = g[ii];
        for (std::size_t l = ii + 1; l < ku; ++l) s -= h(ii, l) * y[l];
        y[ii] = s / h(ii, ii);
      }
      if (store_z) {
        for (std::size_t i = 0; i < ku; ++i) axpy(y[i], Z[i].data(), x, n, nt);
      } else if (M == nullptr) {
        for (std::size_t i = 0; i < ku; ++i) axpy(y[i], V[i].data(), x, n, nt);
      } else {
        std::fill(u.begin(), u.end(), T(0));
        for (std::size_t i = 0; i < ku; ++i) axpy(y[i], V[i].data(), u.data(), n, nt);
        M->apply(u.data(), w.data());
        ++res.preconditioner_applications;
        axpy(T(1), w.data(), x, n, nt);
      }
    }

    // True residual: restart vector and reported final residual.
    A.apply(x, r.data());
    ++res.operator_applications;
    residual_from_ax(b, r.data(), n, nt);
    beta = norm2(r.data(), n, nt);
    if (!std::isfinite(beta))
      throw NumericalError(name + ": the residual b - A x became NaN or Inf after " + std::to_string(total) +
                           " iterations");
    res.final_relative_residual = beta / beta0;
    if (beta <= target) {
      res.converged = true;
      break;
    }
    if (total >= opt.max_iterations || breakdown || k == 0) break;
  }
  res.iterations = total;
  return res;
}

/// At a CG breakdown (r^H M^{-1} r <= 0 or p^H A p <= 0): when A is a CsrOperator over a real
/// matrix that is not symmetric (check_symmetry), that is the cause; throws InvalidArgument
/// saying so instead of the "not positive definite" of the caller. Returns otherwise.
template <class T>
void throw_if_unsymmetric(const std::string& name, int iteration, const LinearOperator<T>& A) {
  if constexpr (std::is_same_v<T, double>) {
    if (const auto* c = dynamic_cast<const CsrOperator*>(&A)) {
      const SymmetryReport sym = check_symmetry(c->matrix());
      if (!sym.symmetric)
        throw InvalidArgument(name + " breakdown at iteration " + std::to_string(iteration) + ": " +
                              describe_asymmetry(sym) + "; CG needs a symmetric positive definite matrix: use gmres");
    }
  }
}

template <class T>
Result cg_impl(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt) {
  const char* who = M != nullptr ? "pcg" : "cg";
  validate(who, A, b, x, M, opt, false);
  const int nt = resolve_threads(opt.threads);
  const std::string name(who);
  if (M != nullptr && !M->is_symmetric())
    throw InvalidArgument("PCG needs a symmetric preconditioner (Preconditioner::is_symmetric() returned false)");
  const std::size_t n = A.size();
  Result res;
  std::vector<T> r(n), z, p(n), q(n);
  const Start st = start_solve(name, A, b, x, r.data(), opt, nt, res);
  if (st.done) return res;
  const double beta0 = st.beta0, target = st.target;
  if (M != nullptr) z.resize(n);

  // z = M^{-1} r; rho = Re(r^H z), which must be > 0 for an SPD M.
  auto precondition = [&](int iteration) -> double {
    if (M == nullptr) {
      const double rr = norm2(r.data(), n, nt);
      return rr * rr;
    }
    M->apply(r.data(), z.data());
    ++res.preconditioner_applications;
    const double rho = std::real(dot(r.data(), z.data(), n, nt));
    if (!std::isfinite(rho))
      throw NumericalError(name + ": the preconditioner produced NaN or Inf at iteration " + std::to_string(iteration));
    if (!(rho > 0.0)) {
      throw_if_unsymmetric(name, iteration, A);
      std::ostringstream s;
      s << name << " breakdown at iteration " << iteration << ": r^H M^{-1} r = " << rho
        << " <= 0, the preconditioner is not positive definite";
      throw NumericalError(s.str());
    }
    return rho;
  };
  const T* zp = M != nullptr ? z.data() : r.data();

  double rho = precondition(0);
  std::copy(zp, zp + n, p.begin());
  bool have_true = false;  // r currently holds the true residual of the final x
  int it = 0;
  while (it < opt.max_iterations) {
    A.apply(p.data(), q.data());
    ++res.operator_applications;
    const double pap = std::real(dot(p.data(), q.data(), n, nt));
    if (!std::isfinite(pap))
      throw NumericalError(name + ": the operator produced NaN or Inf at iteration " + std::to_string(it + 1));
    if (!(pap > 0.0)) {
      throw_if_unsymmetric(name, it + 1, A);
      std::ostringstream s;
      s << name << " breakdown at iteration " << it + 1 << ": p^H A p = " << pap
        << " <= 0, the operator is not Hermitian positive definite";
      throw NumericalError(s.str());
    }
    const double alpha = rho / pap;
    double rn = 0.0;
    if constexpr (std::is_same_v<T, double>) {
      rn = cg_update(alpha, p.data(), q.data(), x, r.data(), n, nt);
    } else {
      axpy(T(alpha), p.data(), x, n, nt);
      axpy(T(-alpha), q.data(), r.data(), n, nt);
      rn = norm2(r.data(), n, nt);
    }
    ++it;
    have_true = false;
    res.residual_history.push_back(rn / beta0);
    if (opt.progress) opt.progress(it, rn / beta0);
    if (rn <= target) {
      // Confirm with the true residual; if rounding made the recursion drift, restart from it.
      A.apply(x, r.data());
      ++res.operator_applications;
      residual_from_ax(b, r.data(), n, nt);
      rn = norm2(r.data(), n, nt);
      have_true = true;
      if (rn <= target) {
        res.converged = true;
        break;
      }
      if (it >= opt.max_iterations) break;
      rho = precondition(it);
      std::copy(zp, zp + n, p.begin());
      continue;
    }
    if (it >= opt.max_iterations) break;
    const double rho_new = precondition(it);
    xpby(zp, T(rho_new / rho), p.data(), n, nt);
    rho = rho_new;
  }
  if (!have_true) {
    A.apply(x, r.data());
    ++res.operator_applications;
    residual_from_ax(b, r.data(), n, nt);
  }
  const double final_norm = norm2(r.data(), n, nt);
  if (!std::isfinite(final_norm))
    throw NumericalError(name + ": the residual b - A x became NaN or Inf after " + std::to_string(it) + " iterations");
  res.final_relative_residual = final_norm / beta0;
  res.iterations = it;
  return res;
}

}  // namespace

template <class T>
Result gmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt) {
  return gmres_impl("gmres", false, A, b, x, M, opt);
}

template <class T>
Result fgmres(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt) {
  return gmres_impl("fgmres", true, A, b, x, M, opt);
}

template <class T>
Result cg(const LinearOperator<T>& A, const T* b, T* x, const Preconditioner<T>* M, const Options& opt) {
  return cg_impl(A, b, x, M, opt);
}

template Result gmres<double>(const LinearOperator<double>&, const double*, double*, const Preconditioner<double>*,
                              const Options&);
template Result gmres<cplx>(const LinearOperator<cplx>&, const cplx*, cplx*, const Preconditioner<cplx>*,
                            const Options&);
template Result fgmres<double>(const LinearOperator<double>&, const double*, double*, const Preconditioner<double>*,
                               const Options&);
template Result fgmres<cplx>(const LinearOperator<cplx>&, const cplx*, cplx*, const Preconditioner<cplx>*,
                             const Options&);
template Result cg<double>(const LinearOperator<double>&, const double*, double*, const Preconditioner<double>*,
                           const Options&);
template Result cg<cplx>(const LinearOperator<cplx>&, const cplx*, cplx*, const Preconditioner<cplx>*,
                         const Options&);

}  // namespace elliptica::krylov

namespace elliptica::krylov {

template void validate_setup<double>(const char*, const LinearOperator<double>&, const LinearOperator<double>*,
                                     const Options&, bool, bool);
template void validate_setup<std::complex<double>>(const char*, const LinearOperator<std::complex<double>>&,
                                                   const LinearOperator<std::complex<double>>*, const Options&,
                                                   bool, bool);

Method method_from_string(const std::string& s) {
  if (s == "gmres") return Method::Gmres;
  if (s == "fgmres") return Method::Fgmres;
  if (s == "cg") return Method::Cg;
  throw InvalidArgument("unknown Krylov method '" + s + "' (expected gmres, fgmres or cg)");
}

std::string to_string(Method m) {
  switch (m) {
    case Method::Gmres: return "gmres";
    case Method::Fgmres: return "fgmres";
    case Method::Cg: return "cg";
  }
  return "?";
}

template <class T>
void Solver<T>::apply(const T* b, T* x) const {
  const std::size_t n = A_.size();
  for (std::size_t i = 0; i < n; ++i) x[i] = T(0);
  const Result r = solve(b, x);
  applications_.fetch_add(1);
  iterations_.fetch_add(r.iterations);
}

template <class T>
Gmres<T>::Gmres(const LinearOperator<T>& A, const LinearOperator<T>* M, Options opt) : Solver<T>(A, M, std::move(opt)) {
  validate_setup("gmres", A, M, this->opt_, false, true);
}
template <class T>
Result Gmres<T>::solve(const T* b, T* x) const {
  return gmres(this->A_, b, x, this->M_, this->opt_);
}

template <class T>
Fgmres<T>::Fgmres(const LinearOperator<T>& A, const LinearOperator<T>* M, Options opt)
    : Solver<T>(A, M, std::move(opt)) {
  validate_setup("fgmres", A, M, this->opt_, true, true);
}
template <class T>
Result Fgmres<T>::solve(const T* b, T* x) const {
  return fgmres(this->A_, b, x, this->M_, this->opt_);
}

template <class T>
Cg<T>::Cg(const LinearOperator<T>& A, const LinearOperator<T>* M, Options opt) : Solver<T>(A, M, std::move(opt)) {
  validate_setup(M != nullptr ? "pcg" : "cg", A, M, this->opt_, false, false);
  if (M != nullptr && !M->is_symmetric())
    throw InvalidArgument("PCG needs a symmetric preconditioner (is_symmetric() returned false)");
}
template <class T>
Result Cg<T>::solve(const T* b, T* x) const {
  return cg(this->A_, b, x, this->M_, this->opt_);
}

template <class T>
std::unique_ptr<Solver<T>> make_solver(Method m, const LinearOperator<T>& A, const LinearOperator<T>* M, Options opt) {
  switch (m) {
    case Method::Gmres: return std::make_unique<Gmres<T>>(A, M, std::move(opt));
    case Method::Fgmres: return std::make_unique<Fgmres<T>>(A, M, std::move(opt));
    case Method::Cg: return std::make_unique<Cg<T>>(A, M, std::move(opt));
  }
  throw InvalidArgument("make_solver: unknown Krylov method");
}

template class Solver<double>;
template class Solver<std::complex<double>>;
template class Gmres<double>;
template class Gmres<std::complex<double>>;
template class Fgmres<double>;
template class Fgmres<std::complex<double>>;
template class Cg<double>;
template class Cg<std::complex<double>>;
template std::unique_ptr<Solver<double>> make_solver<double>(Method, const LinearOperator<double>&,
                                                             const LinearOperator<double>*, Options);
template std::unique_ptr<Solver<std::complex<double>>> make_solver<std::complex<double>>(
    Method, const LinearOperator<std::complex<double>>&, const LinearOperator<std::complex<double>>*, Options);

}  // namespace elliptica::krylov
