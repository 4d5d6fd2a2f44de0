/// @file fuzz_array.cpp
/// libFuzzer target: the array reader (read_array's parser, io::detail::parse_array): NumPy .npy
/// (detected by its magic string) and whitespace/comma separated text tables.
#include <cmath>

#include "core/io_detail.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::limit_library_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  fuzz::accept_library_errors([&] {
    elliptica::io::ReadInfo info;
    const elliptica::Array2D a = elliptica::io::detail::parse_array("fuzz.input", bytes, &info);
    fuzz::check(a.values.size() == a.rows * a.cols, "values.size() == rows * cols");
    fuzz::check(a.ndim == 1 || a.ndim == 2, "ndim is 1 or 2");
    fuzz::check(a.ndim == 2 || a.cols == 1, "a 1-D array has cols == 1");
    fuzz::check(info.header_line == 0 || !info.column_names.empty(), "a skipped header has names");
  });
  return 0;
}
