#pragma once
/// @file mesh_io_detail.hpp
/// In-memory entry point of the mesh reader (not installed): read_mesh() on bytes already read.
/// `ext` is the lower-case extension with its dot (".msh", ".obj", ".stl"), `name` stands for the
/// file name in error messages. Used by read_mesh() and the fuzz targets (fuzz/).
#include <string>

#include "elliptica/bem/mesh.hpp"

namespace elliptica::bem::detail {

Mesh parse_mesh(const std::string& name, const std::string& ext, const std::string& bytes);

}  // namespace elliptica::bem::detail
