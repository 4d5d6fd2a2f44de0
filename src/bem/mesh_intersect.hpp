#pragma once
/// @file mesh_intersect.hpp
/// Internal (not installed): the geometric checks behind validate_and_orient() steps (5) and (6),
/// self-intersection and nesting of closed triangulated surfaces, and the exact orientation
/// predicates they are built on. Implemented in mesh_intersect.cpp; see the docstring of
/// validate_and_orient() in elliptica/bem/mesh.hpp for the algorithm and its sources.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "elliptica/bem/mesh.hpp"

namespace elliptica::bem::detail {

using Vec3 = std::array<double, 3>;
using Tri = std::array<std::int32_t, 3>;

/// Exact sign (+1, 0, -1) of det[a - d; b - d; c - d] (rows), i.e. of six times the signed volume
/// of the tetrahedron (a, b, c, d): a floating-point evaluation with a forward error bound, and
/// when that cannot decide, exact expansion arithmetic (Shewchuk, "Adaptive precision
/// floating-point arithmetic and fast robust geometric predicates", Discrete Comput. Geom. 18
/// (1997) 305). Exact for finite coordinates as long as no intermediate product overflows or
/// underflows, e.g. for coordinates that are 0 or multiples of 2^-252 in [-1, 1] (see
/// predicate_coordinates()).
int orient3d(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d);
/// Exact sign of det[a - c; b - c] for 2-D points (same method and conditions).
int orient2d(const std::array<double, 2>& a, const std::array<double, 2>& b, const std::array<double, 2>& c);

/// Smallest longest edge of an element that the intersection test resolves, relative to the
/// largest |coordinate| of the mesh (validate_and_orient() refuses smaller elements).
constexpr double kMinRelativeElementSize = 0x1p-150;

/// The coordinates the intersection predicates work on: the vertices of m scaled by the power of
/// two that brings the largest |coordinate| into [1/2, 1) (exact), with every scaled coordinate
/// of magnitude below 2^-200 set to 0 (a change below 2^-200 of the mesh's size). Every
/// coordinate is then 0 or a multiple of 2^-252 in [-1, 1], so that no product or sum in the
/// predicates overflows or underflows and orient3d()/orient2d() are exact on them; elements
/// down to kMinRelativeElementSize keep distinct, non-collinear vertices.
std::vector<Vec3> predicate_coordinates(const Mesh& m);

/// Whether the closed triangles t1 and t2 (vertex indices into v) have a common point other than
/// the vertices or the edge they share by index. Preconditions (established by
/// validate_and_orient() before it calls this): valid indices, equal index <=> equal point,
/// non-degenerate triangles, t1 and t2 not on the same vertex set.
bool triangles_intersect(const std::vector<Vec3>& v, const Tri& t1, const Tri& t2);

struct ElementPair {
  std::size_t first = 0, second = 0;
};

/// A pair of elements of m (first < second) that intersect in the sense of triangles_intersect();
/// nullopt if there is none. Candidate pairs (overlapping element boxes) come from a self
/// traversal of a bounding-volume hierarchy in batches; the pair returned is the smallest (by
/// first, then second) of the first batch with an intersection, independent of the number of
/// threads. The predicates work on predicate_coordinates(m). Same preconditions as
/// triangles_intersect(), and elements not smaller than kMinRelativeElementSize.
std::optional<ElementPair> find_intersecting_elements(const Mesh& m);

/// For closed, outward-oriented, mutually non-intersecting components (lists of element
/// indices, as validate_and_orient() finds them): a pair (inner, outer) of component numbers such
/// that component inner lies inside component outer (winding number of outer at the centroid of
/// the first element of inner > 1/2), the smallest inner first; nullopt if no component lies
/// inside another. Only pairs whose bounding boxes nest are evaluated.
std::optional<ElementPair> find_nested_components(const Mesh& m,
                                                  const std::vector<std::vector<std::size_t>>& components);

}  // namespace elliptica::bem::detail
