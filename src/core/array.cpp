/// @file array.cpp
/// Validation helpers for array views.
#include "elliptica/core/array.hpp"

#include <cmath>
#include <sstream>

namespace elliptica {

void require_finite(ConstMatrixView<double> a, const std::string& what) {
  const std::size_t n = a.size();
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
