#pragma once
// Array conversions shared by the nanobind binding files (bindings_bem.cpp, bindings_fmm.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"

namespace elliptica::pybind {

namespace nb = nanobind;
using InPts = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

/// A NumPy array (1-D, or 2-D with `cols` columns) owning the moved vector's buffer.
template <class T>
nb::object vec_to_numpy(std::vector<T>&& v, std::size_t cols = 0) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule cap(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  if (cols == 0) {
    const std::size_t shape[1] = {owner->size()};
    return nb::cast(nb::ndarray<nb::numpy, T>(owner->data(), 1, shape, cap));
  }
  const std::size_t shape[2] = {owner->size() / cols, cols};
  return nb::cast(nb::ndarray<nb::numpy, T>(owner->data(), 2, shape, cap));
}

/// (M, 3) float64 -> points; InvalidArgument naming `what` for another shape or NaN/Inf.
inline std::vector<std::array<double, 3>> points3(const InPts& a, const char* what) {
  if (a.shape(1) != 3)
    throw InvalidArgument(std::string(what) + " must have shape (M, 3), got (" + std::to_string(a.shape(0)) + ", " +
                          std::to_string(a.shape(1)) + ")");
  std::vector<std::array<double, 3>> p(a.shape(0));
  for (std::size_t i = 0; i < p.size(); ++i)
    for (int c = 0; c < 3; ++c) {
      p[i][c] = a.data()[3 * i + c];
      if (!std::isfinite(p[i][c])) throw InvalidArgument(std::string(what) + " contains NaN or Inf (row " + std::to_string(i) + ")");
    }
  return p;
}

}  // namespace elliptica::pybind
