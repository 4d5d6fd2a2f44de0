#pragma once
/// @file vtu.hpp
/// Output writers of the BEM front ends: a VTK XML UnstructuredGrid (.vtu, ASCII) of a surface
/// mesh with per-element (cell) data, and NumPy .npy files of complex128 vectors. Both are written
/// atomically (temporary file in the target's folder, then rename; IOError on failure).
#include <array>
#include <complex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/bem/mesh.hpp"

namespace elliptica::io {
class OutputFile;
}

namespace elliptica::bem {

/// One cell-data array: `components` values per element (1: scalar, 3: vector), element-major.
struct CellField {
  std::string name;
  int components = 1;
  std::vector<double> values;  ///< num_elements * components
};

/// Writes the triangles of `mesh` as VTK cells of type 5 (VTK_TRIANGLE) with the given cell data
/// (Float64, ASCII, 17 significant digits). Throws InvalidArgument if a field has the wrong length
/// or an empty/duplicate name, IOError if the file cannot be written.
void write_vtu(const std::string& path, const Mesh& mesh, const std::vector<CellField>& cells);
/// The same into an output file prepared earlier (core/output.hpp); the caller commits it.
void write_vtu(io::OutputFile& out, const Mesh& mesh, const std::vector<CellField>& cells);

/// A structured na x nb grid of points (point (i, j) at index i * nb + j: a plane cut of field
/// points) as VTK cells of type 9 (VTK_QUAD) with per-point data (PointData; NaN allowed, e.g.
/// inside a body). `fields` hold na * nb * components values each. InvalidArgument for na or nb
/// < 2, points.size() != na * nb, a field of the wrong length or an empty/duplicate name.
void write_vtu_grid(io::OutputFile& out, std::size_t na, std::size_t nb, const std::vector<std::array<double, 3>>& points,
                    const std::vector<CellField>& fields);
/// Writes a 1-D complex128 ('<c16') .npy file, format 1.0, shape (N,).
void write_npy_complex(const std::string& path, const std::vector<std::complex<double>>& v);
void write_npy_complex(io::OutputFile& out, const std::vector<std::complex<double>>& v);
/// Reads a complex128 ('<c16', C order) .npy file of shape (N,), as write_npy_complex and
/// numpy.save write it; nullopt for a file that is not one (not .npy, another dtype or shape:
/// io::read_array reads the real ones). IOError for a truncated file.
std::optional<std::vector<std::complex<double>>> read_npy_complex(const std::string& path);

}  // namespace elliptica::bem
