#pragma once
/// @file mesh.hpp
/// Closed triangulated surfaces for the boundary element method (seed 001): flat (3-node) or
/// curved second-order (6-node) triangles with piecewise-constant elements, collocation at the
/// (parametric) centroids.
///
/// Conventions: vertices are (x, y, z) in the user's length unit; triangle (a, b, c) is
/// counter-clockwise seen from outside, so the unit normal n = (b - a) x (c - a) / |...| points
/// OUT of the enclosed volume (into the exterior acoustic domain).
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace elliptica::bem {

struct Mesh {
  std::vector<std::array<double, 3>> vertices;
  std::vector<std::array<std::int32_t, 3>> triangles;  ///< 0-based vertex indices
  /// Curved second-order (6-node) triangles: midside[e] holds the midside nodes of triangle e,
  /// [0] on its edge (t0, t1), [1] on (t1, t2), [2] on (t2, t0) (the order of Gmsh's 6-node
  /// triangle, element type 9), and the element is the image of the quadratic Lagrange map
  /// through the six nodes (src/bem/quadratic_element.hpp). Empty: flat 3-node triangles.
  /// Otherwise it has one entry per triangle; neighbours must give a shared edge the same
  /// midside node (a conforming surface). Midside nodes at the edge midpoints give the flat
  /// triangle back. Curved elements raise the BEM's order of geometry from O(h^2) (the inscribed
  /// polyhedron) to O(h^3) (docs/bem.md, "Curved elements").
  std::vector<std::array<std::array<double, 3>, 3>> midside;

  std::size_t num_elements() const { return triangles.size(); }
  /// true for second-order (6-node) elements (midside not empty).
  bool curved() const { return !midside.empty(); }
  /// Collocation point of element e: the centroid of a flat triangle; for a curved one the image
  /// of the parametric centroid (1/3, 1/3, 1/3) under its quadratic map (a point of the surface).
  std::array<double, 3> centroid(std::size_t e) const;
  /// Outward unit normal of element e at its collocation point (from the vertex order).
  std::array<double, 3> normal(std::size_t e) const;
  /// Area of element e (length unit^2); of a curved element by a 12 x 12 conical Gauss rule
  /// (relative error far below 1e-12 for elements that are not strongly distorted).
  double area(std::size_t e) const;
  /// Reverses the orientation of element e: swaps its vertices 1 and 2 (and its midside nodes 0
  /// and 2). No range check.
  void flip(std::size_t e);
  /// Largest edge length over all elements (length unit).
  double max_edge() const;
  // Element accessors throw InvalidArgument if e >= num_elements(), a vertex index of the
  // element is out of range or midside has neither 0 nor num_elements() entries; normal() also
  // throws on a zero-area element. max_edge() is 0 for an
  // empty mesh.
};

/// Icosahedral sphere: the icosahedron refined `refinements` times (each triangle split in 4,
/// new vertices projected to the sphere): 20 * 4^refinements triangles and 10 * 4^refinements + 2
/// vertices (midpoints shared between neighbouring triangles), outward orientation.
/// order 1: flat 3-node triangles; order 2: curved 6-node triangles (Mesh::midside) whose midside
/// nodes are the edge midpoints projected onto the exact sphere (the same projection as the
/// refinement, so they are the vertices of the next refinement).
/// Throws InvalidArgument on refinements < 0 or > 10, radius not finite and > 0, order not 1 or 2.
Mesh icosphere(int refinements, double radius = 1.0, std::array<double, 3> center = {0, 0, 0}, int order = 1);

// ---------------------------------------------------------------------------------------------
// File input / output
// ---------------------------------------------------------------------------------------------

/// Reads a triangulated surface, dispatching on the (case-insensitive) file extension:
///  - `.msh`: Gmsh MSH 2.2 (2.x) and 4.1, ASCII and binary. Only 3-node triangles (element type 2)
///    and 6-node triangles (type 9, e.g. `gmsh -2 -order 2`) are taken, every other element type is
///    skipped. With any 6-node triangle the mesh is curved (Mesh::midside from nodes 4-6; a 3-node
///    triangle among them gets its edge midpoints); node tags may be arbitrary (non-contiguous,
///    unordered). Vertices are the nodes referenced by at least one triangle, in the order of the
///    node section (unreferenced nodes, e.g. volume nodes, are dropped). Binary files must have data-size 8 for 2.2 (sizeof(double)) and 4 or 8 for 4.1
///    (sizeof(size_t)); the endianness is taken from the binary "1" in $MeshFormat (both byte
///    orders are read). Sections other than $MeshFormat, $Nodes and $Elements (e.g. $Entities,
///    $PhysicalNames, also binary ones) are skipped up to their $End... line.
///  - `.obj`: Wavefront OBJ, `v x y z [...]` and `f` lines (other statements are ignored). Face
///    vertices may be written `a`, `a/t`, `a//n` or `a/t/n`; indices are 1-based, negative indices
///    count back from the last vertex defined so far. Faces with more than 3 vertices are
///    fan-triangulated (a, b, c), (a, c, d), ... Vertices are kept as in the file.
///  - `.stl`: ASCII or binary STL. A file is binary if its size is exactly 84 + 50 n bytes where n
///    is the uint32 (little-endian) triangle count at byte 80, even if it starts with "solid";
///    otherwise it must be ASCII text starting with "solid" (keywords case-insensitive; facets with
///    more than 3 vertices are fan-triangulated). Vertices with bit-identical coordinates are merged
///    (STL stores no connectivity); facet normals are ignored (the vertex order defines the
///    orientation).
///  - `.off`: plain ASCII OFF (the header `OFF`, the counts `V F E`, V lines `x y z`, F lines
///    `n i_1 ... i_n` with 0-based indices; `#` comments, extra values such as colours ignored;
///    faces with more than 3 vertices fan-triangulated), as written by CGAL, MeshLab, Geomview.
/// No orientation or closedness check is made: call validate_and_orient() on the result.
/// Throws IOError when the file cannot be opened, is truncated or malformed (the message names the
/// file and the line, or the byte offset for binary data, and what was expected), InvalidArgument
/// on an unknown extension or a file without any triangle.
Mesh read_mesh(const std::string& path);

/// Writes `m` (flat triangles only: InvalidArgument for a curved mesh, which OBJ cannot hold) as Wavefront OBJ (`v` lines with shortest round-trip decimal coordinates, so that
/// read_mesh() gives back bit-identical vertices, then 1-based `f` lines). Atomic: the data go to a
/// temporary file in the same directory which is then renamed onto `path`. Throws IOError if the
/// file cannot be written, InvalidArgument if a triangle index is out of range.
void write_mesh_obj(const Mesh& m, const std::string& path);

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Octahedral sphere: the regular octahedron (vertices +-e_x, +-e_y, +-e_z) refined `refinements`
/// times like icosphere(): 8 * 4^refinements triangles, 4^(refinements+1) + 2 vertices, outward
/// orientation. Same argument checks (InvalidArgument) as icosphere().
Mesh octasphere(int refinements, double radius = 1.0, std::array<double, 3> center = {0, 0, 0}, int order = 1);

/// Ellipsoid x^2/a^2 + y^2/b^2 + z^2/c^2 = 1 (shifted by `center`): the unit icosphere with
/// `refinements` refinements scaled by semi_axes = {a, b, c} (20 * 4^refinements triangles,
/// outward orientation). order 2: curved 6-node triangles, the midside nodes of the unit icosphere
/// (order 2) scaled likewise, so on the exact ellipsoid. Throws InvalidArgument on refinements < 0
/// or > 10, a semi-axis not finite and > 0, a non-finite center, or order not 1 or 2.
Mesh ellipsoid(int refinements, std::array<double, 3> semi_axes,
               std::array<double, 3> center = {0, 0, 0}, int order = 1);

/// Curved second-order version of a flat mesh whose vertices lie on a smooth surface (a body
/// from CAD or a scan given as STL / OBJ): every edge (a, b) gets the midpoint of the cubic
/// curve of the PN triangle through it (Vlachos, Peters, Boyd & Mitchell, "Curved PN Triangles",
/// I3D 2001: the cubic Bezier edge with its inner control points projected into the tangent
/// planes of the vertex normals),
///   m_ab = (a + b)/2 - (w_ab n_a + w_ba n_b)/8,  w_ab = (b - a).n_a,  w_ba = (a - b).n_b,
/// which lies within O(h^4) of a sphere when the normals are exact. The vertex normals are the
/// angle-weighted means of the adjacent faces' normals (Thurmer & Wuthrich, J. Graphics Tools 3
/// (1998) 43), O(h^2)-accurate on smooth regular meshes. An edge whose two faces meet at more
/// than `crease_degrees` (a feature edge) and the edges of the faces at a vertex whose faces'
/// normals spread by more than that stay straight (midside node at the midpoint), so sharp
/// edges and corners are kept. The mesh must be oriented consistently (validate_and_orient()
/// first); the result has the same vertices and triangles. Throws InvalidArgument if `m` is
/// already curved or empty, or crease_degrees is not in (0, 180].
Mesh curve_by_vertex_normals(const Mesh& m, double crease_degrees = 45.0);

/// Uniform refinement: every triangle split into 4 through its edge midpoints (shared new
/// vertices, orientation kept). A flat mesh gets the edge midpoints; a curved mesh gets the
/// points of each element's quadratic map (the new vertices and midside nodes lie on the same
/// curved surface, so the geometry does not change and a convergence study isolates the
/// discretisation of the unknowns). Throws InvalidArgument if a vertex index is out of range or
/// the result would exceed 2^31 - 1 vertices.
Mesh refine(const Mesh& m);

/// Curved second-order mesh on the Loop subdivision limit surface of a flat control mesh (C. Loop,
/// "Smooth subdivision surfaces based on triangles", MS thesis, Univ. of Utah 1987): a smooth
/// surface (C2, C1 at the extraordinary vertices, those of valence != 6; Zorin 2000, in the
/// SIGGRAPH 2000 course notes below)
/// that approximates, but does not interpolate, the control mesh: it lies inside convex parts by
/// O(h_control^2) (about h^2 / 4 at a regular vertex of a sphere-like mesh; a coarse body shrinks
/// a lot: an octahedron's vertices go to 24/55 of their radius).
/// Every call with the same control mesh interpolates the SAME surface, so the meshes of levels
/// 0, 1, 2, ... are a convergence sequence on one smooth body (unlike curve_by_vertex_normals() +
/// refine(), whose limit has normal kinks at the coarse edges).
///
/// Steps: `levels` Loop steps with the topology of refine() (every triangle split in 4, the same
/// child order and new-vertex numbering), odd (edge) vertex 3/8 (a + b) + 1/8 (c + d) for the
/// edge (a, b) whose two triangles have third vertices c and d, even vertex of valence n
/// (1 - n beta) v + beta sum(neighbours), beta = (1/n) (5/8 - (3/8 + 1/4 cos(2 pi / n))^2)
/// (Loop 1987; Zorin & Schroder, "Subdivision for Modeling and Animation", SIGGRAPH 2000 course
/// notes, ch. 4). Then every node is put on the limit surface with the limit mask
/// v_inf = (1 - n chi) v + chi sum(neighbours), chi = 1 / (3 / (8 beta) + n) (Hoppe et al.,
/// "Piecewise smooth surface reconstruction", SIGGRAPH 1994; pbrt, Pharr, Jakob & Humphreys,
/// sec. 3.8; regular valence 6: 1/2 centre + 1/12 each neighbour): it is the left eigenvector of
/// eigenvalue 1 of the local subdivision matrix, so the limit position of a vertex is the same
/// from every level. Output: the level-`levels` triangles, vertex i at the limit position of the
/// level-`levels` vertex i (the control vertices keep their indices 0 .. V-1); the midside node of
/// every edge at the limit position of the edge's odd vertex of level `levels` + 1 (one more Loop
/// step, computed once per edge from its lower half-edge, so neighbours get bit-identical nodes).
/// The corners and midside nodes of level L are corners of level L + 1. Orientation: that of the
/// control mesh. Control vertices used by no triangle are kept where they are.
/// Sizes: T 4^levels triangles and midside entries, V + (T / 2) (4^levels - 1) vertices for a
/// control mesh of T triangles and V vertices (each level adds one vertex per edge, E = 3 T / 2).
///
/// Geometry error (curved quadratic interpolation of a smooth surface): O(h^3) pointwise, the
/// enclosed volume and the area O(h^4) (measured orders 3.9-4.1; tests/test_bem_loop.cpp).
/// Cost: O(T 4^levels) time, about 0.2 us and 130 bytes per output element (the last level's
/// positions, triangles and half-edge twins, and the output); no hash tables (the half-edge twins
/// of the control mesh are found by sorting, those of the later levels follow from the split rule).
///
/// Input: a flat, closed, consistently oriented 2-manifold triangle mesh (validate_and_orient()
/// first, as for curve_by_vertex_normals()). Throws InvalidArgument if `control` is curved or has
/// no triangles, levels is not in [0, 8], the output would have more than 50 million elements
/// (T 4^levels, checked before anything is allocated; the message names the number), a vertex
/// index is out of range or repeated within a triangle, a coordinate is not finite, and, naming
/// the edge (vertex indices) and its elements, for an edge of one triangle only (an open surface),
/// an edge of more than two (non-manifold), or an edge traversed in the same direction by its two
/// triangles (inconsistent orientation); naming the vertex, for a vertex whose triangles form more
/// than one fan (surfaces touching at a point, which validate_and_orient() accepts) or that has
/// fewer than 3 triangles.
Mesh loop_subdivision_surface(const Mesh& control, int levels);

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// What validate_and_orient() found and changed.
struct MeshReport {
  std::size_t elements = 0;            ///< number of triangles (unchanged by validation)
  std::size_t vertices = 0;            ///< number of vertices after merging / removing
  double min_area = 0.0;               ///< smallest triangle area (length unit^2)
  double max_edge = 0.0;               ///< longest edge (length unit)
  bool flipped = false;                ///< true if any triangle's orientation was reversed
  std::size_t flipped_elements = 0;    ///< how many triangles were reversed
  std::size_t removed_duplicates = 0;  ///< vertices merged into a bit-identical earlier vertex
  std::size_t removed_unused = 0;      ///< vertices referenced by no triangle, removed
  std::size_t components = 0;          ///< connected closed surfaces (edge adjacency)
  double volume = 0.0;                 ///< enclosed volume after orientation (sum over components)
};

/// Checks that `m` is a valid closed, orientable, 2-manifold triangulation of the surfaces of
/// solid bodies that lie outside each other (what the exterior BEM needs), and orients it
/// consistently outward, in place.
///
/// Steps: (1) vertices with bit-identical coordinates are merged and vertices used by no triangle
/// are removed (triangle indices are renumbered accordingly; nothing changes if there are none);
/// (2) checks, each throwing InvalidArgument whose message names the offending element index:
/// empty mesh, non-finite coordinate (names the vertex), vertex index out of range, repeated vertex
/// index or near-zero area (area <= 1e-10 * (longest edge of that element)^2), an element whose
/// longest edge is below 2^-150 (7e-46) times the largest |coordinate| ("too small", beyond what
/// the exact predicates of step 5 resolve), two triangles on
/// the same vertex set ("duplicate", names both), an edge shared by more than two triangles
/// ("non-manifold", names the edge and the elements), an edge used by one triangle only ("mesh is
/// not closed: edge (i,j) of element e has no neighbour"); (3) orientation is propagated over edge
/// adjacency (breadth first from the lowest-numbered element of each component), flipping triangles
/// (swapping vertices 1 and 2) so that neighbours traverse their shared edge in opposite
/// directions; a contradiction means the surface is non-orientable (InvalidArgument naming the
/// element); (4) each connected component is made outward on its own: if its signed volume
/// sum a.(b x c)/6 is negative all its triangles are flipped. A component with zero enclosed
/// volume (relative to its area^(3/2)) throws InvalidArgument.
/// (5) No self-intersection: two elements may have common points only where they share a vertex
/// or an edge (by index, after step 1). Throws InvalidArgument naming both elements (and their
/// components) when two elements cross, touch, or overlap in a common plane, when two elements
/// sharing a vertex meet anywhere else, or when two elements sharing an edge fold onto each other
/// (coplanar, on the same side of the edge). This covers two bodies that overlap or touch, a
/// vertex pushed through the opposite side of a body, and surfaces that touch themselves.
/// Candidate pairs are the pairs of elements whose bounding boxes overlap, found by a self
/// traversal of a bounding-volume hierarchy (the element boxes sorted along a Morton curve, a
/// balanced tree over leaves of 8: O(N log N) build, O(N) candidates for a mesh of quasi-uniform
/// elements; the traversal is parallel over OpenMP threads). Each candidate pair is decided with
/// exact orientation predicates (floating-point evaluation with an error bound and exact expansion
/// arithmetic when it cannot decide: Shewchuk, Discrete Comput. Geom. 18 (1997) 305), so touching,
/// coplanar and shared-vertex configurations are classified exactly, without tolerances: two
/// closed triangles meet iff an edge of one meets the other; a segment meets a triangle iff its
/// endpoints are not strictly on one side of the plane and the line through it passes the
/// triangle by the signs of its orientations against the triangle's edges (Guigue & Devillers,
/// J. Graphics Tools 8 (2003) 25); coplanar pairs are decided in 2-D (edge crossings and
/// containment); a pair sharing a vertex A meets elsewhere iff their wedges at A share a
/// direction; a pair sharing an edge overlaps iff it is coplanar with both third vertices on one
/// side. The coordinates are scaled by a power of two first (exact) and scaled coordinates below
/// 2^-200 in magnitude are set to 0 (a change below 2^-200 of the mesh's size), so that no product
/// in the predicates overflows or underflows. When several pairs intersect, the one named is the smallest of the first batch of
/// candidates (deterministic, independent of the number of threads).
/// (6) No nesting: a closed component inside another (a hollow body, i.e. a sphere inside a
/// sphere, or a body inside a cavity) throws InvalidArgument naming both components and an
/// element of each: the BEM here solves exterior scattering by solid bodies. Decided, for every
/// pair of components whose bounding boxes nest (found with the same hierarchy over the component
/// boxes), by the winding number of the outer one at the centroid of the first element of the
/// inner one (> 1/2 inside; Van Oosterom & Strackee 1983, see winding_number()); after step 5 the
/// components do not meet, so each lies entirely inside or outside every other. Cost
/// O(size of the outer component) per nesting pair of boxes.
/// Time: for icosphere(7) (327680 elements) the whole validation takes about 0.4 s on one core,
/// 0.2 s of it in step 5 (measured on the project machines).
/// Validation errors leave `m` in an unspecified but valid state.
MeshReport validate_and_orient(Mesh& m);

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/// Elements per wavelength: lambda / h with lambda = 2 pi / |Re k| and h = m.max_edge() (so a
/// conservative, worst-element figure). k is the wavenumber in 1 / (length unit); Re k = 0 (static
/// or purely evanescent case) gives +infinity. Throws InvalidArgument if k is not finite or the
/// mesh is empty or has zero max edge.
double elements_per_wavelength(const Mesh& m, std::complex<double> k);

/// Winding number of the (closed, outward-oriented) surface around x: the sum of the signed solid
/// angles of the triangles seen from x divided by 4 pi (Van Oosterom & Strackee, IEEE Trans.
/// Biomed. Eng. 30 (1983) 125): 1 inside a closed component, 0 outside, about 1/2 on the surface
/// (less at a convex vertex or edge). O(number of triangles).
double winding_number(const Mesh& m, const std::array<double, 3>& x);

/// Euclidean distance from x to the closest point of the surface (closest point on each
/// triangle: Ericson, "Real-Time Collision Detection", 2005, sec. 5.1.5). O(number of triangles).
double distance_to_surface(const Mesh& m, const std::array<double, 3>& x);

/// Where x lies relative to a closed outward-oriented surface: kOutside, kOnSurface (closer than
/// 1e-6 x the longest edge) or kInside (winding number > 1/2).
enum class PointLocation { kOutside, kOnSurface, kInside };
PointLocation locate_point(const Mesh& m, const std::array<double, 3>& x);

/// Empty string if elements_per_wavelength(m, k) >= 6 (the usual rule of thumb for piecewise
/// constant elements), otherwise a one-line warning naming the value, max edge and wavelength.
std::string mesh_resolution_warning(const Mesh& m, std::complex<double> k);

}  // namespace elliptica::bem
