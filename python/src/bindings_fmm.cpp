// nanobind bindings of the black-box Chebyshev Helmholtz FMM (include/elliptica/fmm/helmholtz_fmm.hpp),
// registered into elliptica._core by init_fmm() (called from bindings.cpp).
//
// Thin layer: python/elliptica/_fmm.py converts and checks the arrays (points/normals float64
// (N, 3) C-contiguous, charges/dipoles complex128 (N,)); here the GIL is released while computing
// and results are handed back as NumPy arrays owning the C++ buffers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>

#include <array>
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/fmm/helmholtz_fmm.hpp"
#include "numpy_util.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

namespace fmm = elliptica::fmm;
using elliptica::InvalidArgument;
using cplx = std::complex<double>;
using elliptica::pybind::InPts;
using InVec = nb::ndarray<const cplx, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

using elliptica::pybind::points3;
using elliptica::pybind::vec_to_numpy;

const cplx* cptr(const std::optional<InVec>& a, std::size_t n, const char* what) {
  if (!a) return nullptr;
  if (a->shape(0) != n)
    throw InvalidArgument(std::string(what) + " must have length " + std::to_string(n) + ", got " +
                          std::to_string(a->shape(0)));
  return a->data();
}

struct PyHelmholtzFmm {
  std::unique_ptr<fmm::HelmholtzFmm> f;
  std::size_t n = 0;
  PyHelmholtzFmm(const InPts& points, std::optional<InPts> normals, cplx k, double tol, int max_leaf, int threads) {
    auto x = points3(points, "points");
    std::vector<fmm::Point3> nr;
    if (normals) {
      nr = points3(*normals, "normals");
      if (nr.size() != x.size()) throw InvalidArgument("normals must have the same shape as points");
    }
    fmm::HelmholtzFmmOptions o;
    o.tolerance = tol;
    o.tree.max_leaf = max_leaf;  // 0: automatic
    o.threads = threads;
    n = x.size();
    nb::gil_scoped_release release;
    f = std::make_unique<fmm::HelmholtzFmm>(x, nr, k, o);
  }
  /// Outputs are written by the FMM straight into the arrays handed to NumPy (no copies).
  nb::object apply(std::optional<InVec> charges, std::optional<InVec> dipoles, bool normal_derivative) {
    const cplx* q = cptr(charges, n, "charges");
    const cplx* mu = cptr(dipoles, n, "dipoles");
    std::vector<cplx> u(n), dn(normal_derivative ? n : 0);
    {
      nb::gil_scoped_release release;
      if (q || mu) f->apply(q, mu, u.data(), normal_derivative ? dn.data() : nullptr);
    }
    if (!normal_derivative) return vec_to_numpy(std::move(u));
    return nb::make_tuple(vec_to_numpy(std::move(u)), vec_to_numpy(std::move(dn)));
  }
};

}  // namespace

void init_fmm(nb::module_& m) {
  // the C++ defaults (Python has no literals of its own)
  m.def("fmm_defaults", [] {
    const fmm::HelmholtzFmmOptions o;
    nb::dict d;
    d["tol"] = o.tolerance;
    d["max_leaf"] = o.tree.max_leaf;  // 0: automatic
    d["threads"] = o.threads;
    return d;
  });
  nb::class_<PyHelmholtzFmm>(m, "_HelmholtzFMM")
      .def(nb::init<const InPts&, std::optional<InPts>, cplx, double, int, int>(), "points"_a, "normals"_a.none(), "k"_a,
           "tol"_a, "max_leaf"_a, "threads"_a)
      .def("apply", &PyHelmholtzFmm::apply, "charges"_a.none(), "dipoles"_a.none(), "normal_derivative"_a)
      .def_prop_ro("order", [](PyHelmholtzFmm& s) { return s.f->order(); })
      .def_prop_ro("setup_seconds", [](PyHelmholtzFmm& s) { return s.f->setup_seconds(); })
      .def_prop_ro("leaf_level", [](PyHelmholtzFmm& s) { return s.f->tree().leaf_level(); })
      .def_prop_ro("max_m2l_rank", [](PyHelmholtzFmm& s) { return s.f->max_m2l_rank(); })
      .def_prop_ro("k", [](PyHelmholtzFmm& s) { return s.f->k(); })
      .def_prop_ro("num_points", [](PyHelmholtzFmm& s) { return s.n; });
}
