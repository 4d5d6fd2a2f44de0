#pragma once
/// @file plan_detail.hpp
/// Internal: the right-hand-side preparations that MultigridPlan::solve, the projected solve of
/// plan_sequences.cpp and chebyshev_cg share (scaling of a b of extreme norm, the consistent part of
/// b for a singular operator with the constant null space).
#include <cmath>
#include <cstddef>
#include <vector>

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

}  // namespace elliptica::multigrid::detail
