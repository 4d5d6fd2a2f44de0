/// @file gll.cpp
/// GLL nodes and weights, barycentric differentiation and interpolation matrices (gll.hpp).
#include "elliptica/multigrid/gll.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::multigrid {

double legendre(int n, double x) {
  if (n < 0) throw InvalidArgument("legendre: degree must be >= 0, got " + std::to_string(n));
  if (n == 0) return 1.0;
  double pm1 = 1.0, p = x;
  for (int k = 1; k < n; ++k) {
    const double pp1 = ((2.0 * k + 1.0) * x * p - k * pm1) / (k + 1.0);
    pm1 = p;
    p = pp1;
  }
  return p;
}

GllRule gll_rule(int p) {
  if (p < 1 || p > kMaxGllOrder)
    throw InvalidArgument("gll_rule: order p must be in [1, " + std::to_string(kMaxGllOrder) + "], got " +
                          std::to_string(p));
  GllRule r;
  r.nodes.assign(p + 1, 0.0);
  r.weights.assign(p + 1, 0.0);
  r.nodes[0] = -1.0;
  r.nodes[p] = 1.0;
  // Interior nodes: Newton on f(x) = (1 - x^2) P_p'(x) = p (P_{p-1} - x P_p), with
  // f'(x) = -p (p + 1) P_p(x) (Legendre's equation), i.e. dx = (x P_p - P_{p-1}) / ((p + 1) P_p).
  // Only the lower half is iterated; the upper half is its mirror image.
  for (int i = 1; 2 * i <= p; ++i) {
    double x = -std::cos(std::numbers::pi * i / p);
    bool converged = false;
    for (int it = 0; it < 100; ++it) {
      const double pp = legendre(p, x), pm = legendre(p - 1, x);
      const double dx = (x * pp - pm) / ((p + 1.0) * pp);
      x -= dx;
      if (std::abs(dx) <= 1e-16) {
        converged = true;
        break;
      }
    }
    if (!converged) {
      // Newton converges quadratically from the Chebyshev points; a last step that stalls at
      // the rounding level (|dx| ~ 2e-16) is accepted when the residual is at rounding level.
      const double pp = legendre(p, x), pm = legendre(p - 1, x);
      if (!(std::abs(x * pp - pm) <= 1e-14 * std::abs(pp) * (p + 1.0)))
        throw NumericalError("gll_rule: Newton's iteration for node " + std::to_string(i) + " of order " +
                             std::to_string(p) + " did not converge");
    }
    r.nodes[i] = x;
    r.nodes[p - i] = -x;
  }
  if (p % 2 == 0) r.nodes[p / 2] = 0.0;
  for (int i = 0; i <= p; ++i) {
    const double lp = legendre(p, r.nodes[i]);
    r.weights[i] = 2.0 / (p * (p + 1.0) * lp * lp);
  }
  return r;
}

std::vector<double> barycentric_weights(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n == 0) throw InvalidArgument("barycentric_weights: no nodes");
  std::vector<double> lam(n, 1.0);
  for (std::size_t j = 0; j < n; ++j) {
    if (!std::isfinite(x[j]))
      throw InvalidArgument("barycentric_weights: node " + std::to_string(j) + " is not finite");
    for (std::size_t k = 0; k < n; ++k) {
      if (k == j) continue;
      const double d = x[j] - x[k];
      if (d == 0.0)
        throw InvalidArgument("barycentric_weights: nodes " + std::to_string(k) + " and " + std::to_string(j) +
                              " are equal");
      lam[j] /= d;
    }
  }
  double m = 0.0;
  for (double v : lam) m = std::max(m, std::abs(v));
  for (double& v : lam) v /= m;
  return lam;
}

std::vector<double> differentiation_matrix(const std::vector<double>& x) {
  const std::size_t n = x.size();
  const std::vector<double> lam = barycentric_weights(x);
  std::vector<double> D(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    double diag = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const double d = (lam[j] / lam[i]) / (x[i] - x[j]);
      D[i * n + j] = d;
      diag -= d;
    }
    D[i * n + i] = diag;
  }
  return D;
}

std::vector<double> interpolation_matrix(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size(), m = y.size();
  const std::vector<double> lam = barycentric_weights(x);
  std::vector<double> J(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    if (!std::isfinite(y[i]))
      throw InvalidArgument("interpolation_matrix: point " + std::to_string(i) + " is not finite");
    double* row = &J[i * n];
    std::size_t exact = n;
    for (std::size_t j = 0; j < n; ++j)
      if (y[i] == x[j]) exact = j;
    if (exact < n) {
      row[exact] = 1.0;
      continue;
    }
    double s = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      row[j] = lam[j] / (y[i] - x[j]);
      s += row[j];
    }
    for (std::size_t j = 0; j < n; ++j) row[j] /= s;
  }
  return J;
}

}  // namespace elliptica::multigrid
