#pragma once
/// @file validate.hpp
/// Internal argument checks shared by the dense BEM sources (implemented in operators.cpp).
/// Each throws InvalidArgument with a message naming the offending value.
#include <array>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"

namespace elliptica::bem::detail {

/// Nonempty mesh, finite vertices, valid vertex indices, no degenerate (zero-area) triangles.
void validate_mesh(const Mesh& mesh);
/// The representation formula D[u] - S[q] of a solution at points off the surface, without the
/// inside/outside check of scattered_field (the plans with mirror planes check against the whole
/// body): the exterior field there, as scattered_field computes it.
std::vector<cplx> representation(const Mesh& mesh, const SurfaceSolution& sol,
                                 const std::vector<std::array<double, 3>>& points, const QuadratureOptions& q);
/// far_points in {1, 3, 7}, near_factor finite and > 0, max_subdivision in [0, 30],
/// singular_order in [1, 64].
void validate_quadrature(const QuadratureOptions& q);

}  // namespace elliptica::bem::detail
