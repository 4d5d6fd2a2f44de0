/// @file solver.cpp
/// Burton-Miller plan for the dense collocation BEM (see include/elliptica/bem/helmholtz.hpp for
/// the derivation of the systems from the exterior traces of Green's representation formula):
///   Neumann:   A = 1/2 I - K - alpha W,   b = u_inc + alpha du_inc/dn,   unknown u (total)
///   Dirichlet: A = 1/2 I + K' + beta S,   b = du_inc/dn + beta u_inc,    unknown q = du/dn (total)
///   with beta = 1/alpha (assemble_dense_system, the dense operator of HelmholtzBem); the GMRES
///   solve that fills a SurfaceSolution (gmres_surface_solve). Also the
///   low-frequency rules shared with the FMM operator and the plan (helmholtz.hpp, "Low
///   frequency"): body_size, default_alpha, the sound-hard static correction and GMRES deflation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>

#include "elliptica/bem/block_diagonal.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "solve_common.hpp"
#include "validate.hpp"

namespace elliptica::bem {

IncidentField plane_wave(const Mesh& mesh, cplx k, std::array<double, 3> d) {
  validate_wavenumber(k);
  detail::validate_mesh(mesh);
  const double nd = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  if (!(nd > 0) || !std::isfinite(nd)) throw InvalidArgument("bem: plane-wave direction must be finite and nonzero");
  for (double& c : d) c /= nd;
  IncidentField f;
  const std::size_t n = mesh.num_elements();
  f.u.resize(n);
  f.dudn.resize(n);
  const cplx ik = cplx(0, 1) * k;
  for (std::size_t e = 0; e < n; ++e) {
    const auto x = mesh.centroid(e);
    const auto nn = mesh.normal(e);
    f.u[e] = std::exp(ik * (d[0] * x[0] + d[1] * x[1] + d[2] * x[2]));
    f.dudn[e] = ik * (d[0] * nn[0] + d[1] * nn[1] + d[2] * nn[2]) * f.u[e];
  }
  return f;
}

namespace {

/// Connected components of the triangles (sharing a vertex index): component of each element.
struct Components {
  std::vector<int> of_element;
  int count = 0;
};

Components components(const Mesh& m) {
  const std::size_t nv = m.vertices.size();
  std::vector<std::int64_t> parent(nv);
  std::iota(parent.begin(), parent.end(), std::int64_t{0});
  auto find = [&parent](std::int64_t a) {
    while (parent[static_cast<std::size_t>(a)] != a) {
      parent[static_cast<std::size_t>(a)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(a)])];
      a = parent[static_cast<std::size_t>(a)];
    }
    return a;
  };
  for (const auto& t : m.triangles)
    for (int e = 1; e < 3; ++e) {
      const std::int64_t a = find(t[0]), b = find(t[static_cast<std::size_t>(e)]);
      if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
    }
  Components c;
  std::vector<int> label(nv, -1);
  c.of_element.resize(m.num_elements());
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    const auto r = static_cast<std::size_t>(find(m.triangles[e][0]));
    if (label[r] < 0) label[r] = c.count++;
    c.of_element[e] = label[r];
  }
  return c;
}

std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

double body_size(const Mesh& mesh) {
  detail::validate_mesh(mesh);
  const Components cc = components(mesh);
  const auto nc = static_cast<std::size_t>(cc.count);
  std::vector<std::array<double, 3>> c(nc, {0.0, 0.0, 0.0});
  std::vector<double> area(nc, 0.0), radius(nc, 0.0);
  for (std::size_t e = 0; e < mesh.num_elements(); ++e) {
    const auto j = static_cast<std::size_t>(cc.of_element[e]);
    const double a = mesh.area(e);
    const auto x = mesh.centroid(e);
    for (int d = 0; d < 3; ++d) c[j][d] += a * x[d];
    area[j] += a;
  }
  for (std::size_t j = 0; j < nc; ++j)
    for (int d = 0; d < 3; ++d) c[j][d] /= area[j];
  for (std::size_t e = 0; e < mesh.num_elements(); ++e) {
    const auto j = static_cast<std::size_t>(cc.of_element[e]);
    for (auto vi : mesh.triangles[e]) {
      const auto& v = mesh.vertices[static_cast<std::size_t>(vi)];
      radius[j] = std::max(radius[j], std::hypot(v[0] - c[j][0], v[1] - c[j][1], v[2] - c[j][2]));
    }
  }
  return 2.0 * *std::max_element(radius.begin(), radius.end());
}

cplx default_alpha(const Mesh& mesh, cplx k) {
  validate_wavenumber(k);
  const double D = body_size(mesh);
  if (std::abs(k) * D >= kCouplingKD) return cplx(0, 1) / k;
  return cplx(0, D / kCouplingKD);
}

namespace detail {

DenseSystem assemble_dense_system(const Mesh& mesh, cplx k, BoundaryCondition bc, cplx alpha,
                                  const QuadratureOptions& q, double kd, int threads,
                                  const std::vector<MirrorImage>* images) {
  DenseSystem sys;
  CMatrix& A = sys.A;
  const std::size_t n = mesh.num_elements();
  if (bc == BoundaryCondition::Neumann) {
    DenseOperators ops = assemble_dense(mesh, k, kDoubleLayer | kHypersingular, q, threads, images);
    A = std::move(ops.K);
    for (std::size_t p = 0; p < A.data.size(); ++p) A.data[p] = -A.data[p] - alpha * ops.W.data[p];
  } else {
    DenseOperators ops = assemble_dense(mesh, k, kSingleLayer | kAdjointDoubleLayer, q, threads, images);
    const cplx beta = 1.0 / alpha;
    A = std::move(ops.Kp);
    for (std::size_t p = 0; p < A.data.size(); ++p) A.data[p] += beta * ops.S.data[p];
  }
  for (std::size_t i = 0; i < n; ++i) A(i, i) += 0.5;
  for (const cplx& v : A.data)
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
      throw InvalidArgument("bem: the Burton-Miller matrix has non-finite entries (alpha = " + num(std::abs(alpha)) +
                            " in modulus, k = " + num(std::abs(k)) +
                            "): the coupling is out of the range of double precision");
  if (bc == BoundaryCondition::Neumann) {
    sys.ones_image = A.apply(std::vector<cplx>(n, cplx(1, 0)), threads);
    if (static_correction_applies(bc, kd)) {
      const std::vector<double> t = static_ones_image(mesh);
      for (std::size_t i = 0; i < n; ++i) {
        A(i, i) -= sys.ones_image[i] - t[i];
        sys.ones_image[i] = t[i];
      }
    }
  }
  return sys;
}

void validate_gmres_options(const krylov::Options& g) {
  const double gmres_rtol = g.rtol;
  if (!(gmres_rtol > 0 && gmres_rtol < 1)) throw InvalidArgument("bem: gmres_rtol must be in (0, 1), got " + num(gmres_rtol));
  if (gmres_rtol < kMinGmresRtol)
    throw InvalidArgument("bem: the GMRES tolerance gmres_rtol = " + num(gmres_rtol) +
                          " is below the smallest supported value " + num(kMinGmresRtol) +
                          ": double-precision rounding stops GMRES at true relative residuals of about 1e-15 "
                          "on these systems (and the discretisation error is far larger)");
  if (g.restart < 1) throw InvalidArgument("bem: gmres_restart must be >= 1");
  if (g.max_iterations < 1) throw InvalidArgument("bem: gmres_max_iterations must be >= 1");
}

double validate_low_frequency(BoundaryCondition bc, const Mesh& mesh, cplx k) {
  const double D = body_size(mesh);
  const double kd = std::abs(k) * D;
  if (bc == BoundaryCondition::Neumann && kd < kMinSoundHardKD)
    throw InvalidArgument(
        "bem: sound-hard scattering at k D = " + num(kd) + " (|k| = " + num(std::abs(k)) + ", body size D = " + num(D) +
        ") is below the supported k D >= " + num(kMinSoundHardKD) +
        ": the scattered field is O(kD) near the body and O((kD)^2) far from it while the surface field is "
        "1 + O(kD), so in double precision it is lost in the rounding error of the surface field (this is the "
        "static limit; use a larger k)");
  return kd;
}

cplx coupling(const std::optional<cplx>& alpha, const Mesh& mesh, cplx k) {
  if (!alpha) return default_alpha(mesh, k);
  const cplx a = *alpha;
  if (!std::isfinite(a.real()) || !std::isfinite(a.imag()) || a == cplx(0, 0))
    throw InvalidArgument("bem: Burton-Miller alpha must be finite and nonzero");
  return a;
}

std::vector<double> static_ones_image(const Mesh& mesh) {
  const Components cc = components(mesh);
  const std::size_t n = mesh.num_elements();
  std::vector<double> t(n, 1.0);
  if (cc.count < 2) return t;
  const auto nc = static_cast<std::size_t>(cc.count);
  std::vector<std::array<double, 6>> box(nc, {1e300, 1e300, 1e300, -1e300, -1e300, -1e300});
  std::vector<std::size_t> first(nc, n);
  for (std::size_t e = 0; e < n; ++e) {
    const auto j = static_cast<std::size_t>(cc.of_element[e]);
    first[j] = std::min(first[j], e);
    for (auto vi : mesh.triangles[e])
      for (int d = 0; d < 3; ++d) {
        const double x = mesh.vertices[static_cast<std::size_t>(vi)][d];
        box[j][d] = std::min(box[j][d], x);
        box[j][3 + d] = std::max(box[j][3 + d], x);
      }
  }
  std::vector<int> enclosing(nc, 0);
  for (std::size_t j = 0; j < nc; ++j) {
    Mesh sub;  // component j alone (all vertices kept; winding_number visits its triangles only)
    for (std::size_t i = 0; i < nc; ++i) {
      if (i == j) continue;
      bool inside_box = true;
      for (int d = 0; d < 3; ++d) inside_box = inside_box && box[i][d] >= box[j][d] && box[i][3 + d] <= box[j][3 + d];
      if (!inside_box) continue;
      if (sub.triangles.empty()) {
        sub.vertices = mesh.vertices;
        for (std::size_t e = 0; e < n; ++e)
          if (static_cast<std::size_t>(cc.of_element[e]) == j) sub.triangles.push_back(mesh.triangles[e]);
      }
      if (winding_number(sub, mesh.centroid(first[i])) > 0.5) ++enclosing[i];
    }
  }
  for (std::size_t e = 0; e < n; ++e) t[e] += enclosing[static_cast<std::size_t>(cc.of_element[e])];
  return t;
}

std::vector<cplx> burton_miller_rhs(BoundaryCondition bc, cplx alpha, const IncidentField& inc, std::size_t n) {
  if (inc.u.size() != n || inc.dudn.size() != n)
    throw InvalidArgument("bem: incident field has " + std::to_string(inc.u.size()) + "/" +
                          std::to_string(inc.dudn.size()) + " values, mesh has " + std::to_string(n) + " elements");
  std::vector<cplx> b(n);
  if (bc == BoundaryCondition::Neumann) {
    for (std::size_t i = 0; i < n; ++i) b[i] = inc.u[i] + alpha * inc.dudn[i];
  } else {
    const cplx beta = 1.0 / alpha;
    for (std::size_t i = 0; i < n; ++i) b[i] = inc.dudn[i] + beta * inc.u[i];
  }
  for (const auto& v : b)
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) throw InvalidArgument("bem: incident field is not finite");
  return b;
}

SurfaceSolution gmres_surface_solve(const LinearOperator<cplx>& A, const std::vector<cplx>& b,
                                    const LinearOperator<cplx>* M, BoundaryCondition bc, cplx k,
                                    const krylov::Options& g, bool throw_if_not_converged, const std::string& what,
                                    const std::vector<cplx>* a1) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = b.size();
  if (A.size() != n)
    throw InvalidArgument("bem: operator size " + std::to_string(A.size()) + " != system size " + std::to_string(n));
  if (M && M->size() != n)
    throw InvalidArgument("bem: preconditioner size " + std::to_string(M->size()) + " != system size " +
                          std::to_string(n));
  if (a1 && a1->size() != n)
    throw InvalidArgument("bem: deflation vector size " + std::to_string(a1->size()) + " != system size " + std::to_string(n));
  // Sound-hard deflation (helmholtz.hpp, "Low frequency" (2)): A (c 1 + w) = b <=> A w = b - c A 1.
  const bool deflate = a1 != nullptr && bc == BoundaryCondition::Neumann;
  cplx c{};
  std::vector<cplx> rhs;
  if (deflate) {
    cplx num_c{};
    double den = 0;
    for (std::size_t i = 0; i < n; ++i) {
      num_c += std::conj((*a1)[i]) * b[i];
      den += std::norm((*a1)[i]);
    }
    if (den > 0) c = num_c / den;
    rhs.resize(n);
    for (std::size_t i = 0; i < n; ++i) rhs[i] = b[i] - c * (*a1)[i];
  }
  std::vector<cplx> x(n, cplx{});
  const krylov::Result r = krylov::gmres<cplx>(A, deflate ? rhs.data() : b.data(), x.data(), M, g);
  if (deflate)
    for (auto& v : x) v += c;
  SurfaceSolution s;
  s.bc = bc;
  s.k = k;
  s.converged = r.converged;
  s.iterations = r.iterations;
  s.residual_history = r.residual_history;
  s.final_relative_residual = r.final_relative_residual;
  if (bc == BoundaryCondition::Neumann) {
    s.u = std::move(x);
    s.dudn.assign(n, cplx{});
  } else {
    s.dudn = std::move(x);
    s.u.assign(n, cplx{});
  }
  s.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.converged && throw_if_not_converged) {
    std::ostringstream os;
    os << "bem: GMRES" << what << " did not reach rtol " << g.rtol << " in " << r.iterations
       << " iterations (relative residual " << r.final_relative_residual << ")";
    throw NotConverged(os.str());
  }
  return s;
}

}  // namespace detail

}  // namespace elliptica::bem
