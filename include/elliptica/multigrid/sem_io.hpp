#pragma once
/// @file sem_io.hpp
/// Input and output of the spectral-element (SEM) Poisson solver (issue 14, "Interfaces"): mesh
/// specifications as the command line and the Python bindings take them, and a VTK file of a
/// nodal SEM field for ParaView / VisIt / meshio.
///
/// Mesh specifications (sem_mesh_from_spec):
///   "box:NX,NY,NZ"              box_mesh(NX, NY, NZ) of the unit cube
///   "box:NX,NY,NZ:LX,LY,LZ"     box_mesh of [0, LX] x [0, LY] x [0, LZ]
///   "kershaw:N,EPS"             kershaw_mesh(N, EPS): the unit cube, N^3 elements, EPS in (0, 1]
///   anything else               a Gmsh .msh file (read_gmsh_hex: ASCII 2.2 / 4.1, order-1 hexahedra)
///
/// VTU output (write_sem_vtu): VTK XML UnstructuredGrid, version 1.0, little-endian, UInt64
/// block headers, every array in one AppendedData section with encoding "raw" (binary, no
/// base64): Points (Float64, the num_nodes() global node coordinates), Cells (connectivity
/// Int64, offsets Int64, types UInt8 = 12, VTK_HEXAHEDRON) and PointData "u" (Float64, one
/// value per global node). Each element of order p is split into p^3 trilinear hexahedra
/// through its GLL points: sub-cell (i, j, k), 0 <= i, j, k < p, has the element-local nodes
/// (i + a, j + b, k + c) in VTK's corner order (0,0,0), (1,0,0), (1,1,0), (0,1,0), (0,0,1),
/// (1,0,1), (1,1,1), (0,1,1), as global node ids (SemSpace::local_to_global), sub-cells
/// ordered element by element, i fastest. Points are shared, so a continuous field stays
/// continuous in the file. Size: 24 + 8 bytes per node, 8 x 8 + 8 + 1 bytes per sub-cell.
#include <string>

#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"

namespace elliptica::io {
class OutputFile;
}

namespace elliptica::multigrid {

/// The mesh of a specification (file docstring). Throws InvalidArgument naming the spec for a
/// malformed "box:" / "kershaw:" spec (a missing or extra value, a value that is not a number,
/// a count < 1 or above 100000, a length not finite and > 0, EPS outside (0, 1], trailing
/// text); for a file: what read_gmsh_hex throws (IOError for a missing, unreadable or malformed
/// file; InvalidArgument for a file without hexahedra or with other 3-D elements, or an inverted
/// element); ResourceError from the generators.
HexMesh sem_mesh_from_spec(const std::string& spec);

/// True when `spec` is a "box:" or "kershaw:" specification (not a file name).
bool is_generated_mesh_spec(const std::string& spec);

/// Writes the field u (values at ALL num_nodes() global nodes of `space`, free nodes first, then
/// the Dirichlet nodes: SemSpace numbering) as a VTU file (file docstring) into `out`, an
/// OutputFile the caller commits (io/output.hpp: nothing half-written). Throws InvalidArgument
/// for a null u, IOError from the writes.
void write_sem_vtu(io::OutputFile& out, const SemSpace& space, const double* u_nodes);
/// The same into the file at `path`, written atomically.
void write_sem_vtu(const std::string& path, const SemSpace& space, const double* u_nodes);

}  // namespace elliptica::multigrid
