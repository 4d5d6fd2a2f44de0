#pragma once
/// @file quadratic_element.hpp
/// Internal: the geometry map of a second-order (6-node, curved) triangle, used by mesh.cpp
/// (collocation point, normal, area), operators.cpp (quadrature) and fmm_operator.cpp (sources).
/// Not part of the public API.
///
/// Nodes X0, X1, X2 (corners, counter-clockwise seen from outside) and M01, M12, M20 (midside
/// nodes of the edges (0,1), (1,2), (2,0); Mesh::midside). With barycentric coordinates
/// (l0, l1, l2), l1 = s, l2 = t, l0 = 1 - s - t, the standard quadratic Lagrange map (e.g. Zienkiewicz
/// & Taylor, "The Finite Element Method", vol. 1, sec. 8.8) is
///   y(l) = sum_a l_a (2 l_a - 1) X_a + 4 l0 l1 M01 + 4 l1 l2 M12 + 4 l2 l0 M20,
///   dy/ds = -(4 l0 - 1) X0 + (4 l1 - 1) X1 + 4 (l0 - l1) M01 + 4 l2 M12 - 4 l2 M20,
///   dy/dt = -(4 l0 - 1) X0 + (4 l2 - 1) X2 - 4 l1 M01 + 4 l1 M12 + 4 (l0 - l2) M20,
/// and the surface element is dS = |nJ| ds dt with nJ = dy/ds x dy/dt (outward, the reference
/// triangle {s, t >= 0, s + t <= 1} has area 1/2). With the midside nodes at the edge midpoints the
/// map is the affine map of the flat triangle (nJ = 2 A n).
#include <array>
#include <cmath>
#include <cstddef>

#include "elliptica/bem/mesh.hpp"

namespace elliptica::bem::detail {

struct QuadraticTriangle {
  using V3 = std::array<double, 3>;
  std::array<V3, 6> X;  ///< X0, X1, X2, M01, M12, M20

  /// The point y(l) and the unnormalised outward normal nJ = dy/ds x dy/dt at barycentric l.
  void eval(double l0, double l1, double l2, V3& y, V3& nj) const {
    const double n0 = l0 * (2 * l0 - 1), n1 = l1 * (2 * l1 - 1), n2 = l2 * (2 * l2 - 1);
    const double n3 = 4 * l0 * l1, n4 = 4 * l1 * l2, n5 = 4 * l2 * l0;
    const double s0 = -(4 * l0 - 1), s1 = 4 * l1 - 1, s3 = 4 * (l0 - l1), s4 = 4 * l2, s5 = -4 * l2;
    const double t0 = s0, t2 = 4 * l2 - 1, t3 = -4 * l1, t4 = 4 * l1, t5 = 4 * (l0 - l2);
    V3 ds, dt;
    for (int d = 0; d < 3; ++d) {
      y[d] = n0 * X[0][d] + n1 * X[1][d] + n2 * X[2][d] + n3 * X[3][d] + n4 * X[4][d] + n5 * X[5][d];
      ds[d] = s0 * X[0][d] + s1 * X[1][d] + s3 * X[3][d] + s4 * X[4][d] + s5 * X[5][d];
      dt[d] = t0 * X[0][d] + t2 * X[2][d] + t3 * X[3][d] + t4 * X[4][d] + t5 * X[5][d];
    }
    nj = {ds[1] * dt[2] - ds[2] * dt[1], ds[2] * dt[0] - ds[0] * dt[2], ds[0] * dt[1] - ds[1] * dt[0]};
  }
  V3 point(double l0, double l1, double l2) const {
    V3 y, nj;
    eval(l0, l1, l2, y, nj);
    return y;
  }
  /// The point on edge a (0: X0 -> X1, 1: X1 -> X2, 2: X2 -> X0) at tau in [0, 1], and dy/dtau.
  void edge(int a, double tau, V3& y, V3& dy) const {
    const V3& p = X[static_cast<std::size_t>(a)];
    const V3& q = X[static_cast<std::size_t>((a + 1) % 3)];
    const V3& m = X[static_cast<std::size_t>(3 + a)];
    const double np = (1 - tau) * (1 - 2 * tau), nm = 4 * tau * (1 - tau), nq = tau * (2 * tau - 1);
    const double dp = 4 * tau - 3, dm = 4 - 8 * tau, dq = 4 * tau - 1;
    for (int d = 0; d < 3; ++d) {
      y[d] = np * p[d] + nm * m[d] + nq * q[d];
      dy[d] = dp * p[d] + dm * m[d] + dq * q[d];
    }
  }
};

/// Element e of a mesh with Mesh::midside (no range checks: the caller validated the mesh).
inline QuadraticTriangle quadratic_element(const Mesh& m, std::size_t e) {
  const auto& t = m.triangles[e];
  QuadraticTriangle q;
  for (int a = 0; a < 3; ++a) {
    q.X[static_cast<std::size_t>(a)] = m.vertices[static_cast<std::size_t>(t[static_cast<std::size_t>(a)])];
    q.X[static_cast<std::size_t>(3 + a)] = m.midside[e][static_cast<std::size_t>(a)];
  }
  return q;
}

/// Barycentric coordinates of the collocation point of a curved element (its parametric
/// centroid, mapped by y(l)).
inline constexpr double kCollocationL = 1.0 / 3.0;

}  // namespace elliptica::bem::detail
