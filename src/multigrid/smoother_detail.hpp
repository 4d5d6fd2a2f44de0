#pragma once
/// @file smoother_detail.hpp
/// Internal helpers of the polynomial smoothers (exposed for tests): the two-level quantity of a
/// smoothing polynomial, the optimal lambda_min of the 1st-kind Chebyshev smoother and the
/// generator of Lottes' optimal 4th-kind weights. All with rho(S A) scaled to 1.
#include <vector>

namespace elliptica::multigrid::detail {

/// gamma(p) = sup_{0<l<=1} l p(l)^2 / (1 - p(l)^2) for p(l) = prod_j (1 - l / roots[j]) (p(0) = 1);
/// the limit l -> 0+ is 1 / (2 |p'(0)|). Returns +inf where |p| >= 1 somewhere in (0, 1].
double two_level_gamma(const std::vector<double>& roots);

/// Roots of the 1st-kind Chebyshev error polynomial T_k((theta - l)/delta)/T_k(theta/delta) on
/// [lmin, 1].
std::vector<double> cheby1_roots(int k, double lmin);
/// Roots of the 4th-kind error polynomial W_k(1 - 2 l)/(2k + 1): sin^2(j pi / (2k + 1)), j = 1..k.
std::vector<double> cheby4_roots(int k);

/// lmin / lmax of the 1st-kind Chebyshev smoother of order k minimising the two-level gamma
/// (1-D search, relative accuracy ~1e-10; cached per k, thread-safe).
double cheby1_opt_lmin_ratio(int k);

/// Roots of the order-k polynomial minimising gamma (Newton on the equioscillation conditions,
/// started from the 4th-kind roots).
std::vector<double> opt4_roots(int k);
/// beta_1..beta_k expressing the optimal polynomial in the 4th-kind recurrence:
/// p*(l) = 1 - sum_i beta_i (p_{i-1}(l) - p_i(l)), p_i the 4th-kind error polynomials.
std::vector<double> opt4_betas_computed(int k);

/// Error polynomial of the 4th-kind Chebyshev smoother of order k at l (lmax = 1).
double cheby4_poly(int k, double l);

}  // namespace elliptica::multigrid::detail
