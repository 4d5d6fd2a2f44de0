/// @file fuzz_mtx.cpp
/// libFuzzer target: the Matrix Market reader (io::detail::parse_matrix_market); a matrix it
/// returns must pass CsrMatrix::validate() and survive a product with a vector.
#include <vector>

#include "core/io_detail.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::limit_library_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::accept_library_errors([&] {
    const elliptica::CsrMatrix a = elliptica::io::detail::parse_matrix_market("fuzz.mtx", text);
    try {
      a.validate();
    } catch (const elliptica::Error& e) {
      std::fprintf(stderr, "parsed matrix fails validate(): %s\n", e.what());
      fuzz::check(false, "CsrMatrix::validate() of a parsed matrix");
    }
    if (a.rows <= 100000 && a.cols <= 100000) {
      const std::vector<double> x(a.cols, 1.0);
      std::vector<double> y(a.rows, 0.0);
      a.multiply(x.data(), y.data());
    }
  });
  return 0;
}
