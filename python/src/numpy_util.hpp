#pragma once
// Array conversions shared by the nanobind binding files (bindings_bem.cpp, bindings_fmm.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/record.hpp"

namespace elliptica::pybind {

/// A result record (core/record.hpp) as a Python dict: the same field names as its JSON text.
inline nanobind::dict record_dict(const Record& r) {
  nanobind::dict d;
  for (const auto& f : r.fields()) {
    const char* k = f.key.c_str();
    switch (f.kind) {
      case Record::Kind::Bool: d[k] = f.b; break;
      case Record::Kind::Int: d[k] = f.i; break;
      case Record::Kind::Real: d[k] = f.d; break;
      case Record::Kind::String: d[k] = f.s; break;
      case Record::Kind::Object: d[k] = record_dict(f.records.front()); break;
      case Record::Kind::List: {
        nanobind::list l;
        for (const auto& e : f.records) l.append(record_dict(e));
        d[k] = l;
        break;
      }
    }
  }
  return d;
}

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
