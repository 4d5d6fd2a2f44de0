#pragma once
/// @file gll.hpp
/// Gauss-Lobatto-Legendre (GLL) quadrature and the 1-D operators of the spectral-element method
/// (seed 003, section 4; Deville, Fischer & Mund, "High-Order Methods for Incompressible Fluid
/// Flow", CUP 2002, chapter 2 and appendix B): the p + 1 GLL nodes and weights on [-1, 1], the
/// differentiation matrix of the Lagrange basis on any distinct nodes, and the Lagrange
/// interpolation matrix from one point set to another (the p-multigrid transfer between orders).
///
/// Conventions: nodes in increasing order, x_0 = -1, x_p = 1. Matrices are dense, row-major,
/// std::vector<double> of rows x cols entries.
#include <vector>

namespace elliptica::multigrid {

/// Largest order gll_rule accepts (the Newton iteration is accurate far beyond it; the bound only
/// catches nonsense such as a negative count wrapped to a huge one).
inline constexpr int kMaxGllOrder = 64;

/// The p + 1 GLL points of order p on [-1, 1] and their quadrature weights.
struct GllRule {
  std::vector<double> nodes;    ///< x_0 = -1 < x_1 < ... < x_p = 1
  std::vector<double> weights;  ///< w_i = 2 / (p (p + 1) P_p(x_i)^2), sum 2
};

/// GLL rule of order p (1 <= p <= kMaxGllOrder): the interior nodes are the roots of P_p'(x),
/// found by Newton's iteration on (1 - x^2) P_p'(x) = p (P_{p-1}(x) - x P_p(x)) from the
/// Chebyshev-Gauss-Lobatto points cos(pi i / p), with the Legendre three-term recurrence
/// (Deville, Fischer & Mund 2002, appendix B); converged to |dx| <= 1e-16 (about 1 ulp), the nodes
/// symmetrised (x_{p-i} = -x_i exactly). Exact for polynomials of degree <= 2p - 1.
/// Throws InvalidArgument for p < 1 or p > kMaxGllOrder; NumericalError if Newton fails to
/// converge (not observed).
GllRule gll_rule(int p);

/// Legendre polynomial P_n(x) (three-term recurrence (n+1) P_{n+1} = (2n+1) x P_n - n P_{n-1}).
/// InvalidArgument for n < 0.
double legendre(int n, double x);

/// Barycentric weights lambda_j = 1 / prod_{k != j} (x_j - x_k) of distinct nodes x (Berrut &
/// Trefethen, SIAM Review 46 (2004) 501, section 3), scaled so that max |lambda_j| = 1 (the scale
/// cancels in every formula that uses them). InvalidArgument for an empty set or two equal nodes.
std::vector<double> barycentric_weights(const std::vector<double>& x);

/// Differentiation matrix D (n x n, n = x.size(), row-major) of the Lagrange basis l_j on the
/// distinct nodes x: D_ij = l_j'(x_i), i.e. (D u)_i = u'(x_i) for the interpolant u of the values
/// u_j. Off-diagonal D_ij = (lambda_j / lambda_i) / (x_i - x_j), diagonal D_ii = -sum_{j != i} D_ij
/// (the "negative sum trick": rows sum to zero, so constants differentiate to exactly 0) (Berrut &
/// Trefethen 2004, section 9; Baltensperger & Trummer, SIAM J. Sci. Comput. 24 (2003) 1465).
/// Exact (up to rounding) on polynomials of degree <= n - 1. InvalidArgument as
/// barycentric_weights.
std::vector<double> differentiation_matrix(const std::vector<double>& x);

/// Interpolation matrix J (m x n, m = y.size(), n = x.size(), row-major) from values at the
/// distinct nodes x to the points y: J_ij = l_j(y_i), by the second (true) barycentric formula
/// l_j(y) = (lambda_j / (y - x_j)) / sum_k (lambda_k / (y - x_k)) (Berrut & Trefethen 2004,
/// section 4); a point y_i equal to a node x_j gets the exact row e_j. Exact on polynomials of
/// degree <= n - 1. The p-multigrid prolongation from order q to order p is
/// interpolation_matrix(gll(q).nodes, gll(p).nodes) applied along each axis, the restriction
/// its transpose. InvalidArgument as barycentric_weights, or for a non-finite y_i.
std::vector<double> interpolation_matrix(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace elliptica::multigrid
