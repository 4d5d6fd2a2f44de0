/// @file quadrature.cpp
/// Quadrature building blocks of the collocation BEM (declared in quadrature.hpp): symmetric triangle
/// rules, Gauss-Legendre on [0,1], the analytic 1/r and finite-part 1/r^3 integrals over a flat
/// triangle seen from a point inside it, and Duffy rules about an interior point.
///
/// Analytic integrals (polar coordinates about x, edge e at in-plane distance d_e, tangential
/// coordinates t along the edge line measured from the foot of the perpendicular from x,
/// R(t) = sqrt(d^2 + t^2)):
///   int_T 1/r dy      = sum_e int_{phi_1}^{phi_2} d/cos(phi) dphi = sum_e d_e ln[(t2 + R2)/(t1 + R1)]
///   FP int_T 1/r^3 dy = sum_e int (-1/R(phi)) dphi = -sum_e (1/d_e) [t/R]_{t1}^{t2}
/// (the finite part drops the 1/eps of int_eps^R r^-2 dr; for a flat panel it equals the limit of
/// the normal derivative of the Laplace double-layer potential, which was checked against the
/// explicit h -> 0 limit over a disk: 2 pi (-1/R) in both cases).
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "quadrature.hpp"

#include "elliptica/core/error.hpp"

namespace elliptica::bem::quadrature {
namespace {

using V3 = std::array<double, 3>;
V3 sub(const V3& a, const V3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
double dot(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
double norm(const V3& a) { return std::sqrt(dot(a, a)); }
/// P_n(z) and P_n'(z) (three-term recurrence; n >= 1, |z| < 1).
std::pair<double, double> legendre_with_derivative(int n, double z) {
  double p0 = 1, p1 = z;
  for (int m = 2; m <= n; ++m) {
    const double p2 = ((2 * m - 1) * z * p1 - (m - 1) * p0) / m;
    p0 = p1;
    p1 = p2;
  }
  return {p1, n * (z * p1 - p0) / (z * z - 1)};
}
V3 cross(const V3& a, const V3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

/// Per edge (p, q): in-plane distance d from x to the edge line and the tangential coordinates
/// t1, t2 and distances R1, R2 of the edge ends.
struct EdgeGeom {
  double d, t1, t2, R1, R2;
};
EdgeGeom edge_geom(const V3& x, const V3& p, const V3& q) {
  const V3 e = sub(q, p);
  const double len = norm(e);
  const V3 tau = {e[0] / len, e[1] / len, e[2] / len};
  const V3 px = sub(p, x), qx = sub(q, x);
  EdgeGeom g{};
  g.t1 = dot(px, tau);
  g.t2 = dot(qx, tau);
  const V3 perp = {px[0] - g.t1 * tau[0], px[1] - g.t1 * tau[1], px[2] - g.t1 * tau[2]};
  g.d = norm(perp);
  g.R1 = norm(px);
  g.R2 = norm(qx);
  return g;
}
/// t + R without cancellation for t < 0: t + R = d^2 / (R - t).
double t_plus_R(double t, double R, double d) { return t >= 0 ? t + R : d * d / (R - t); }

}  // namespace

const std::vector<TrianglePoint>& triangle_rule(int n) {
  static const std::vector<TrianglePoint> r1 = {{1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0}};
  static const std::vector<TrianglePoint> r3 = {{2.0 / 3, 1.0 / 6, 1.0 / 6, 1.0 / 3},
                                                {1.0 / 6, 2.0 / 3, 1.0 / 6, 1.0 / 3},
                                                {1.0 / 6, 1.0 / 6, 2.0 / 3, 1.0 / 3}};
  static const std::vector<TrianglePoint> r7 = [] {
    const double s15 = std::sqrt(15.0);
    const double a1 = (9 - 2 * s15) / 21, b1 = (6 + s15) / 21, w1 = (155 + s15) / 1200;
    const double a2 = (9 + 2 * s15) / 21, b2 = (6 - s15) / 21, w2 = (155 - s15) / 1200;
    return std::vector<TrianglePoint>{{1.0 / 3, 1.0 / 3, 1.0 / 3, 9.0 / 40},
                                      {a1, b1, b1, w1}, {b1, a1, b1, w1}, {b1, b1, a1, w1},
                                      {a2, b2, b2, w2}, {b2, a2, b2, w2}, {b2, b2, a2, w2}};
  }();
  switch (n) {
    case 1: return r1;
    case 3: return r3;
    case 7: return r7;
    default: throw InvalidArgument("bem: triangle rule with " + std::to_string(n) + " points not available (use 1, 3 or 7)");
  }
}

void gauss_legendre01(int n, std::vector<double>& x, std::vector<double>& w) {
  if (n < 1) throw InvalidArgument("bem: Gauss-Legendre order must be >= 1");
  x.assign(static_cast<std::size_t>(n), 0.0);
  w.assign(static_cast<std::size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    // Initial guess (Tricomi) and Newton iteration on P_n over [-1, 1].
    double z = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    for (int it = 0; it < 100; ++it) {
      const auto [p, dpz] = legendre_with_derivative(n, z);
      const double dz = p / dpz;
      z -= dz;
      if (std::abs(dz) < 1e-15) break;
    }
    const double dp = legendre_with_derivative(n, z).second;  // derivative at the converged node
    const double wz = 2 / ((1 - z * z) * dp * dp);
    x[static_cast<std::size_t>(i)] = 0.5 * (1 - z);
    w[static_cast<std::size_t>(i)] = 0.5 * wz;
  }
}

double inv_r_integral(const V3& x, const std::array<V3, 3>& T) {
  double s = 0;
  for (int e = 0; e < 3; ++e) {
    const EdgeGeom g = edge_geom(x, T[static_cast<std::size_t>(e)], T[static_cast<std::size_t>((e + 1) % 3)]);
    if (g.d <= 0) continue;
    s += g.d * std::log(t_plus_R(g.t2, g.R2, g.d) / t_plus_R(g.t1, g.R1, g.d));
  }
  return s;
}

double inv_r3_finite_part(const V3& x, const std::array<V3, 3>& T) {
  double s = 0;
  for (int e = 0; e < 3; ++e) {
    const EdgeGeom g = edge_geom(x, T[static_cast<std::size_t>(e)], T[static_cast<std::size_t>((e + 1) % 3)]);
    if (g.d <= 0) continue;
    s -= (g.t2 / g.R2 - g.t1 / g.R1) / g.d;
  }
  return s;
}

void duffy_rule(const V3& x, const std::array<V3, 3>& T, int order, std::vector<V3>& y, std::vector<double>& w) {
  std::vector<double> gx, gw;
  gauss_legendre01(order, gx, gw);
  y.clear();
  w.clear();
  for (int e = 0; e < 3; ++e) {
    const V3& a = T[static_cast<std::size_t>(e)];
    const V3& b = T[static_cast<std::size_t>((e + 1) % 3)];
    const V3 xa = sub(a, x), ab = sub(b, a);
    const double jac = norm(cross(xa, ab));  // twice the sub-triangle area
    // y(s,t) = x + s (a - x) + s t (b - a),  dy = jac * s ds dt
    for (std::size_t i = 0; i < gx.size(); ++i) {
      const double s = gx[i];
      for (std::size_t j = 0; j < gx.size(); ++j) {
        const double t = gx[j];
        y.push_back({x[0] + s * (xa[0] + t * ab[0]), x[1] + s * (xa[1] + t * ab[1]), x[2] + s * (xa[2] + t * ab[2])});
        w.push_back(jac * s * gw[i] * gw[j]);
      }
    }
  }
}

}  // namespace elliptica::bem::quadrature
