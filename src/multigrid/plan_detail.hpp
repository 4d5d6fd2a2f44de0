#pragma once
/// @file plan_detail.hpp
/// Internal helpers of the multigrid plans: the right-hand-side preparations that
/// MultigridPlan::solve, the projected solve of plan_sequences.cpp and chebyshev_cg share (scaling
/// of a b of extreme norm, the consistent part of b for a singular operator with the constant null
/// space), and the diagnosis of a BoomerAMG set-up that made a single level.
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::multigrid::detail {

/// ||v||_2 without overflow or underflow of the squares (scaled by the largest magnitude); NaN
/// when v has one.
inline double safe_norm(const double* v, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = std::fabs(v[i]);
    if (!(a <= m)) m = a;  // (NaN propagates)
  }
  if (m == 0.0 || !std::isfinite(m)) return m;
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = v[i] / m;
    s += t * t;
  }
  return m * std::sqrt(s);
}

/// A right-hand side whose norm is outside [1e-100, 1e100]: the Krylov methods' squared norms and
/// dot products would underflow to 0 (a "converged" x = 0 at ||b|| = 1e-170) or overflow. Such a
/// solve runs on b / ||b|| and x / ||b|| (the problem is linear) with atol scaled alike; 0 when
/// no scaling is needed.
inline double rhs_scale(const double* b, std::size_t n) {
  const double s = safe_norm(b, n);
  return (s > 0.0 && std::isfinite(s) && (s < 1e-100 || s > 1e100)) ? s : 0.0;
}

/// Runs solve(bs, x) on b / s and x / s and scales x back (s = rhs_scale(b) > 0).
template <class Solve>
inline auto solve_scaled(const double* b, double* x, std::size_t n, double s, Solve&& solve) {
  std::vector<double> bs(b, b + n);
  for (double& v : bs) v /= s;
  for (std::size_t i = 0; i < n; ++i) x[i] /= s;
  auto r = solve(bs.data(), x);
  for (std::size_t i = 0; i < n; ++i) x[i] *= s;
  return r;
}

/// The consistent part b - mean(b) 1 of b (length n) in `storage`; returns storage.data(). The
/// right-hand side of a singular operator whose null space is the constants (pure Neumann /
/// periodic pressure problems), so that ||b|| is that of what is solved.
inline const double* consistent_rhs(const double* b, std::size_t n, std::vector<double>& storage) {
  storage.assign(b, b + n);
  double mean = 0.0;
  for (double v : storage) mean += v;
  mean /= static_cast<double>(n);
  for (double& v : storage) v -= mean;
  return storage.data();
}

/// Throws the error of a BoomerAMG set-up of A that made one level (no coarse grid), naming the
/// likely cause: a non-positive diagonal entry (NumericalError: A is not positive definite), no
/// negative off-diagonal entry (InvalidArgument: classical strength of connection, -a_ij >= theta
/// max_k (-a_ik), finds strong couplings among those only; or none at all: a diagonal matrix), else
/// no strong coupling at all.
/// `who` prefixes the message.
[[noreturn]] inline void throw_one_level_boomeramg(const CsrMatrix& A, const std::string& who) {
  bool negative_offdiagonal = false, offdiagonal = false;
  for (std::size_t i = 0; i < A.rows; ++i) {
    double d = 0.0;
    for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
      if (static_cast<std::size_t>(A.col[static_cast<std::size_t>(p)]) == i)
        d = A.val[static_cast<std::size_t>(p)];
      else if (A.val[static_cast<std::size_t>(p)] != 0.0)
        (A.val[static_cast<std::size_t>(p)] < 0.0 ? negative_offdiagonal : offdiagonal) = true;
    }
    if (!(d > 0.0))
      throw NumericalError(who + ": the matrix is not positive definite: its diagonal entry in row " + std::to_string(i) +
                           " (0-based) is " + text::shortest(d) +
                           " (BoomerAMG made no coarse level); a symmetric positive definite matrix is needed (for a "
                           "negative definite system A x = b, solve -A x = -b)");
  }
  if (!negative_offdiagonal && !offdiagonal)
    throw InvalidArgument(who + ": made one level of the " + std::to_string(A.rows) +
                          " unknowns: the matrix is diagonal (no couplings to coarsen: its solve is a division); a "
                          "one-level hierarchy is a direct solve, not multigrid");
  if (!negative_offdiagonal)
    throw InvalidArgument(who + ": made one level of the " + std::to_string(A.rows) +
                          " unknowns: the matrix has no negative off-diagonal entry, and classical strength of "
                          "connection (-a_ij >= theta max_k -a_ik) finds strong couplings among those only; use "
                          "smoothed aggregation (its strength measure takes |a_ij|); a one-level hierarchy is a direct "
                          "solve, not multigrid");
  throw InvalidArgument(who + ": made one level of the " + std::to_string(A.rows) +
                        " unknowns (no coarse level: no strong couplings, is the matrix diagonal?); a one-level "
                        "hierarchy is a direct solve, not multigrid");
}

}  // namespace elliptica::multigrid::detail
