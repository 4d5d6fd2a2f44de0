#pragma once
/// @file sem_mesh.hpp
/// Conforming hexahedral meshes for the spectral-element method (seed 003, sections 4-6): order-1
/// (trilinear) hexahedra given by 8 vertices; curved geometry only through the trilinear map of
/// each element. Generators for a structured box and for the Kershaw family of the nekRS / CEED
/// benchmarks, and a Gmsh .msh reader (ASCII 2.2 and 4.1, hexahedra of type 5).
///
/// Conventions
/// - vertices: nv x 3 row-major (x, y, z) doubles.
/// - elements: ne x 8 vertex indices (0-based) in TENSOR (lexicographic) order: corner
///   c = a + 2 b + 4 c3 (a, b, c3 in {0, 1}) sits at reference point (r, s, t) = (2a - 1, 2b - 1,
///   2 c3 - 1), i.e. (0,0,0), (1,0,0), (0,1,0), (1,1,0), (0,0,1), (1,0,1), (0,1,1), (1,1,1). (Gmsh
///   orders its hexahedra counter-clockwise around the bottom face, then the top face: ours =
///   gmsh[{0, 1, 3, 2, 4, 5, 7, 6}].)
/// - Trilinear map x(r,s,t) = sum_c x_c phi_c(r,s,t), phi_c = (1 +- r)(1 +- s)(1 +- t)/8.
/// - Faces (local index f): 0 r = -1, 1 r = +1, 2 s = -1, 3 s = +1, 4 t = -1, 5 t = +1.
/// - Positive orientation: det(dx/dr) > 0. check_hex_mesh refuses elements whose Jacobian
///   determinant is <= 0 at one of the 8 corners (the SemSpace checks every GLL point again).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elliptica::multigrid {

struct HexMesh {
  std::vector<double> vertices;        ///< nv x 3
  std::vector<std::int64_t> elements;  ///< ne x 8, tensor corner order (file docstring)
  std::size_t num_vertices() const { return vertices.size() / 3; }
  std::size_t num_elements() const { return elements.size() / 8; }
};

/// One element face: (element, local face 0..5 as in the file docstring).
struct ElementFace {
  std::int64_t element = 0;
  int face = 0;
};

/// The 4 local corners of face f (0..5) in tensor order of the face's two remaining axes
/// (e.g. face 0 (r = -1): corners 0, 2, 4, 6).
std::array<int, 4> hex_face_corners(int face);

/// Structured box [0, Lx] x [0, Ly] x [0, Lz] of nx x ny x nz equal elements; vertices numbered
/// lexicographically (x fastest), elements likewise. Throws InvalidArgument for n < 1 or a length
/// that is not finite and > 0, ResourceError when the mesh needs more than memory_limit_bytes().
HexMesh box_mesh(int nx, int ny, int nz, std::array<double, 3> lengths = {1.0, 1.0, 1.0});

/// The Kershaw map of the unit cube (nekRS examples/kershaw, kershaw.usr, subroutine kershaw with
/// eps_y = eps_z = eps; Kershaw, J. Comput. Phys. 39 (1981) 375):
///   right(e, t) = (2 - e) t for t <= 1/2, 1 + e (t - 1) otherwise;  left(e, t) = 1 - right(e, 1 - t)
///   step(a, b, s) = a + (b - a) clamp(s, 0, 1);  layer = floor(6 x), lambda = 6 x - layer
///   X = x;  Y = F(y), Z = F(z) with, per layer of x,
///     layer 0:    F(t) = left(e, t)
///     layer 1, 4: F(t) = step(left(e, t), right(e, t), lambda)
///     layer 2:    F(t) = step(right(e, t), left(e, t), lambda / 2)
///     layer 3:    F(t) = step(right(e, t), left(e, t), (1 + lambda) / 2)
///     layer >= 5: F(t) = right(e, t)      (x = 1 gives layer 6)
/// F is continuous and piecewise bilinear in (x, t) with breaks at x = k/6 and t = 1/2; e = 1 is
/// the identity, small e squeezes half of each layer's elements into a band of width e/2.
/// Writes (X, Y, Z) to out. InvalidArgument when eps is not in (0, 1].
void kershaw_map(double eps, double x, double y, double z, double out[3]);

/// The unit cube of n x n x n elements (box_mesh(n, n, n)) with kershaw_map applied to the
/// vertices, as nekRS does (usrdat: the element vertices xc, yc, zc are mapped). The trilinear
/// elements reproduce the map exactly (the mesh IS the Kershaw geometry, not an approximation)
/// when n is a multiple of 6: then every break x = k/6, t = 1/2 of the map lies on element faces
/// and the map is bilinear in (x, y) and in (x, z) inside each element. For other n the mesh is the
/// trilinear interpolant of the map through its vertices (still a valid mesh of the unit cube).
/// Throws InvalidArgument for n < 1 or eps outside (0, 1].
HexMesh kershaw_mesh(int n, double eps);

/// Reads a Gmsh mesh file, ASCII format 2.2 or 4.1 ($MeshFormat, $Nodes, $Elements; other
/// sections skipped), keeping the order-1 hexahedra (element type 5) and the nodes; elements of
/// lower dimension (points, lines, triangles, quadrangles: boundary tags) are ignored. The vertex
/// order is converted from Gmsh's to ours; vertices are the file's nodes in file order.
/// Throws IOError naming the file and the line for an unreadable, truncated or malformed file
/// (bad header, binary format, unsupported version, a count or number that does not parse, a node
/// tag used but not defined, a duplicate node tag, a missing $End section); InvalidArgument
/// "FILE: not a hexahedral mesh ..." when the file holds 3-D elements other than hex8
/// (tetrahedra, prisms, pyramids, second-order hexahedra) or no hexahedron at all; ResourceError
/// when the declared counts exceed memory_limit_bytes(); and whatever check_hex_mesh throws
/// (inverted elements: InvalidArgument naming the element and its Gmsh element tag).
HexMesh read_gmsh_hex(const std::string& path);

/// read_gmsh_hex on the bytes of a file already in memory; `name` stands for the file in the
/// messages. The same errors (no IOError for reading, of course).
HexMesh parse_gmsh_hex(const std::string& name, std::string_view bytes);

/// Checks a mesh: vertices finite, vertex indices in range and distinct within an element,
/// det(dx/dr) > 0 at the 8 corners of every element (the trilinear map's Jacobian at corner c is
/// spanned by the three edges leaving c), each face shared by at most two elements. Throws
/// InvalidArgument naming the first bad element ("element E (0-based) is inverted or degenerate:
/// Jacobian determinant D at corner C"), or the offending face.
void check_hex_mesh(const HexMesh& mesh);

/// Faces of the mesh not shared by two elements (matched through their vertex indices, not
/// coordinates): the domain boundary, Dirichlet in SemSpace. Sorted by (element, face).
/// InvalidArgument when a face is shared by more than two elements.
std::vector<ElementFace> boundary_faces(const HexMesh& mesh);

}  // namespace elliptica::multigrid
