#pragma once
/// @file io_detail.hpp
/// In-memory entry points of the file readers (not installed): the same parsers as the public
/// read_* functions, on bytes already read. `name` stands for the file name in error messages
/// (and, for the array reader, decides nothing: the content does). Used by the fuzz targets
/// (fuzz/) and the readers themselves.
#include <string>

#include "elliptica/core/array.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica::io::detail {

Array2D parse_array(const std::string& name, const std::string& bytes, ReadInfo* info = nullptr);
CsrMatrix parse_matrix_market(const std::string& name, const std::string& text);

}  // namespace elliptica::io::detail
