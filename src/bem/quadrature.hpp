#pragma once
/// @file quadrature.hpp
/// Internal quadrature building blocks of the collocation BEM (implemented in quadrature.cpp;
/// used by operators.cpp, fmm_operator.cpp and the tests). Not part of the public API.
#include <array>
#include <vector>

namespace elliptica::bem::quadrature {

/// Point of a symmetric triangle rule: barycentric (l0, l1, l2) and weight (weights sum to 1).
struct TrianglePoint {
  double l0, l1, l2, w;
};
/// The 1-, 3- (degree 2) or 7-point (degree 5, Radon) rule; InvalidArgument for other n.
const std::vector<TrianglePoint>& triangle_rule(int n);
/// Gauss-Legendre nodes/weights on [0, 1] (Newton on P_n, Golub-Welsch-free); n >= 1.
void gauss_legendre01(int n, std::vector<double>& x, std::vector<double>& w);
/// int_T 1/|x - y| dy for x in the plane of the flat triangle T and inside it (analytic).
double inv_r_integral(const std::array<double, 3>& x, const std::array<std::array<double, 3>, 3>& T);
/// Hadamard finite part FP int_T 1/|x - y|^3 dy for x inside T (in its plane), analytic.
double inv_r3_finite_part(const std::array<double, 3>& x, const std::array<std::array<double, 3>, 3>& T);
/// Duffy rule about x (x inside T): points y and weights (including the Jacobian) with
/// sum w f(y) ~ int_T f(y) dy for f = O(1/|x - y|). Uses 3 sub-triangles, order^2 points each.
void duffy_rule(const std::array<double, 3>& x, const std::array<std::array<double, 3>, 3>& T, int order,
                std::vector<std::array<double, 3>>& y, std::vector<double>& w);

}  // namespace elliptica::bem::quadrature
