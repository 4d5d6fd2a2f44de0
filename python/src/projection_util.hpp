#pragma once
// The Python class of a krylov::SolutionProjection, shared by the plans that solve with one
// (bindings_mg.cpp: _SolutionProjection of a MultigridPlan; bindings_sem.cpp: _SemProjection of a
// SemPoissonPlan).
#include <nanobind/nanobind.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/krylov/projection.hpp"
#include "numpy_util.hpp"

namespace elliptica::pybind {

/// Checks that a projection of `projection` unknowns serves a plan of `plan` unknowns;
/// InvalidArgument naming both sizes otherwise.
inline void check_projection_size(std::size_t projection, std::size_t plan) {
  if (projection != plan)
    throw InvalidArgument("the projection has " + std::to_string(projection) + " unknowns, the plan " +
                          std::to_string(plan));
}

/// Binds the holder type P of one plan's projection as the Python class `name` of module m:
/// __init__(n, max_vectors, drop_tolerance, threads=0) (krylov::ProjectionOptions; the library
/// checks the values and raises InvalidArgument), clear(), basis_size (property) and basis()
/// (a 1-D float64 array of n * basis_size values: the basis column-major, n x basis_size).
/// P holds `kr::SolutionProjection proj` and `std::mutex mutex` (taken by every method here) and is
/// constructible from (n, ProjectionOptions). Returns the class for more methods.
template <class P>
nanobind::class_<P> bind_projection(nanobind::module_& m, const char* name) {
  namespace nb = nanobind;
  using namespace nb::literals;
  nb::class_<P> c(m, name);
  c.def(
       "__init__",
       [](P* self, std::size_t n, std::size_t max_vectors, double drop_tolerance, int threads) {
         krylov::ProjectionOptions o;
         o.max_vectors = max_vectors;
         o.drop_tolerance = drop_tolerance;
         o.threads = threads;
         new (self) P(n, o);
       },
       "n"_a, "max_vectors"_a, "drop_tolerance"_a, "threads"_a = 0)
      .def("clear",
           [](P& p) {
             std::lock_guard<std::mutex> lock(p.mutex);
             p.proj.clear();
           })
      .def_prop_ro("basis_size",
                   [](P& p) {
                     std::lock_guard<std::mutex> lock(p.mutex);
                     return p.proj.basis_size();
                   })
      .def("basis", [](P& p) {
        std::lock_guard<std::mutex> lock(p.mutex);
        std::vector<double> X;  // column-major n x l
        for (std::size_t i = 0; i < p.proj.basis_size(); ++i)
          X.insert(X.end(), p.proj.basis_vector(i).begin(), p.proj.basis_vector(i).end());
        return vec_to_numpy(std::move(X));
      });
  return c;
}

}  // namespace elliptica::pybind
