/// @file array.cpp
/// Validation helpers for array views.
#include "elliptica/core/array.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>

namespace elliptica {

bool all_finite(const double* a, std::size_t n) {
  // a double is NaN or Inf iff its 11 exponent bits are all set
  constexpr std::uint64_t kExp = 0x7FF0000000000000ULL;
  std::uint64_t bad = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t b;
    std::memcpy(&b, a + k, sizeof(b));
    bad |= std::uint64_t((b & kExp) == kExp);
  }
  return bad == 0;
}

double max_abs(const double* a, std::size_t n) {
  std::uint64_t m = 0;  // |x| with the sign bit cleared orders like its bit pattern
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t b;
    std::memcpy(&b, a + k, sizeof(b));
    b &= 0x7FFFFFFFFFFFFFFFULL;
    m = b > m ? b : m;
  }
  double r;
  std::memcpy(&r, &m, sizeof(r));
  return r;
}

void require_finite(ConstMatrixView<double> a, const std::string& what) {
  const std::size_t n = a.size();
  if (all_finite(a.data, n)) return;
  for (std::size_t k = 0; k < n; ++k) {
    const double v = a.data[k];
    if (!std::isfinite(v)) {
      const std::size_t i = a.cols ? k / a.cols : k;
      const std::size_t j = a.cols ? k % a.cols : 0;
      std::ostringstream msg;
      msg << what << " contains a non-finite value (" << (std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"))
          << ") at row " << i;
      if (a.cols > 1) msg << ", column " << j;
      throw InvalidArgument(msg.str());
    }
  }
}

}  // namespace elliptica
