/// @file operators.cpp
/// Dense assembly of the Helmholtz collocation operators S, K, K', W and the potential
/// evaluations (far field, scattered field); conventions in include/elliptica/bem/helmholtz.hpp.
///
/// Kernels (z = ikr, G = e^{z}/(4 pi r), x - y = d, a = d.n_x, b = d.n_y):
///   G'(r)  = dG/dr = G (z - 1)/r,   G''(r) = G (2 - 2z + z^2)/r^2
///   dG/dn_y = -G'(r) b/r,   dG/dn_x = G'(r) a/r
///   d2G/dn_x dn_y = -G''(r) a b/r^2 - (G'(r)/r) (n_x.n_y - a b/r^2)
/// (derived by differentiating G(|x - y|); identical to design/FORMULAS.md).
/// Self terms on a flat triangle (a = b = 0, n_x = n_y):
///   S_self = (1/4pi) int 1/r (analytic) + int (e^{z} - 1)/(4 pi r) (Duffy)
///   K_self = K'_self = 0
///   W_self = -G'/r = e^{z}(1 - z)/(4 pi r^3): (1/4pi) FP int 1/r^3 (analytic)
///            + int [e^{z}(1 - z) - 1]/(4 pi r^3) (Duffy; ~ (k^2/(2r) + i k^3/3)/(4 pi)).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <map>
#include <numbers>
#include <sstream>
#include <string>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "quadratic_element.hpp"
#include "quadrature.hpp"
#include "validate.hpp"

namespace elliptica::bem {

namespace {

using V3 = std::array<double, 3>;
using Tri = std::array<V3, 3>;
constexpr double kInv4Pi = 0.25 / std::numbers::pi;

V3 sub(const V3& a, const V3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
double dot(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
double norm(const V3& a) { return std::sqrt(dot(a, a)); }
V3 mid(const V3& a, const V3& b) { return {0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])}; }
V3 centroid(const Tri& t) {
  return {(t[0][0] + t[1][0] + t[2][0]) / 3, (t[0][1] + t[1][1] + t[2][1]) / 3, (t[0][2] + t[1][2] + t[2][2]) / 3};
}
double diam(const Tri& t) { return std::max({norm(sub(t[0], t[1])), norm(sub(t[1], t[2])), norm(sub(t[2], t[0]))}); }
double tri_area(const Tri& t) {
  const V3 u = sub(t[1], t[0]), v = sub(t[2], t[0]);
  const V3 c = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  return 0.5 * norm(c);
}

/// e^z - 1 and e^z (1 - z) - 1 without cancellation for small |z|.
cplx expm1c(cplx z) {
  if (std::abs(z) < 1e-2) {
    // z + z^2/2 + ... + z^6/720
    return z * (1.0 + z * (0.5 + z * (1.0 / 6 + z * (1.0 / 24 + z * (1.0 / 120 + z / 720.0)))));
  }
  return std::exp(z) - 1.0;
}
cplx exp1mz_m1(cplx z) {
  // e^z (1 - z) - 1 = sum_{n>=2} (1 - n) z^n / n!
  if (std::abs(z) < 1e-2) {
    const cplx z2 = z * z;
    return z2 * (-0.5 + z * (-1.0 / 3 + z * (-1.0 / 8 + z * (-1.0 / 30 + z * (-1.0 / 144)))));
  }
  return std::exp(z) * (1.0 - z) - 1.0;
}

/// Internal OperatorSet bit: the dynamic part of the double layer, dG/dn_y - dG_0/dn_y
/// (scattered_field), evaluated without cancellation.
constexpr unsigned kDynamicDoubleLayer = 16u;

struct KVals {
  cplx s{}, k{}, kp{}, w{}, kd{};
};

/// All four kernels at (x, n_x) from (y, n_y); ik = i k.
inline void kernels(const V3& x, const V3& nx, const V3& y, const V3& ny, cplx ik, unsigned which, KVals& o) {
  const V3 d = sub(x, y);
  const double r2 = dot(d, d);
  const double r = std::sqrt(r2);
  const cplx z = ik * r;
  const cplx G = std::exp(z) * (kInv4Pi / r);
  o.s = G;
  if (which & (kDoubleLayer | kAdjointDoubleLayer | kHypersingular | kDynamicDoubleLayer)) {
    const cplx Gp = G * (z - 1.0) / r;
    const double a = dot(d, nx), b = dot(d, ny);
    o.k = -Gp * (b / r);
    o.kp = Gp * (a / r);
    // -(G' - G_0') b / r with G' - G_0' = [e^z (z - 1) + 1] / (4 pi r^2) = -exp1mz_m1(z) / (4 pi r^2)
    if (which & kDynamicDoubleLayer) o.kd = exp1mz_m1(z) * (kInv4Pi / r2) * (b / r);
    if (which & kHypersingular) {
      const cplx Gpp = G * (2.0 - 2.0 * z + z * z) / r2;
      o.w = -Gpp * (a * b / r2) - (Gp / r) * (dot(nx, ny) - a * b / r2);
    }
  }
}

struct Acc {
  cplx s{}, k{}, kp{}, w{}, kd{};
  void add(const KVals& v, double wt) {
    s += wt * v.s;
    k += wt * v.k;
    kp += wt * v.kp;
    w += wt * v.w;
    kd += wt * v.kd;
  }
};

/// Integrate the kernels over the flat triangle T (normal ny), target x not on T: the triangle
/// rule where |x - c| >= eta diam, recursive 4-split otherwise.
void integrate_regular(const V3& x, const V3& nx, const Tri& T, const V3& ny, cplx ik, unsigned which,
                       const QuadratureOptions& q, const std::vector<quadrature::TrianglePoint>& rule, int depth,
                       Acc& acc) {
  const V3 c = centroid(T);
  const double dm = diam(T);
  if (depth >= q.max_subdivision || norm(sub(x, c)) >= q.near_factor * dm) {
    const double A = tri_area(T);
    KVals v;
    for (const auto& p : rule) {
      const V3 y = {p.l0 * T[0][0] + p.l1 * T[1][0] + p.l2 * T[2][0], p.l0 * T[0][1] + p.l1 * T[1][1] + p.l2 * T[2][1],
                    p.l0 * T[0][2] + p.l1 * T[1][2] + p.l2 * T[2][2]};
      kernels(x, nx, y, ny, ik, which, v);
      acc.add(v, p.w * A);
    }
    return;
  }
  const V3 m01 = mid(T[0], T[1]), m12 = mid(T[1], T[2]), m20 = mid(T[2], T[0]);
  const std::array<Tri, 4> kids = {Tri{T[0], m01, m20}, Tri{m01, T[1], m12}, Tri{m20, m12, T[2]}, Tri{m12, m20, m01}};
  for (const auto& kt : kids) integrate_regular(x, nx, kt, ny, ik, which, q, rule, depth + 1, acc);
}

Tri element(const Mesh& m, std::size_t e) {
  const auto& t = m.triangles[e];
  return {m.vertices[static_cast<std::size_t>(t[0])], m.vertices[static_cast<std::size_t>(t[1])],
          m.vertices[static_cast<std::size_t>(t[2])]};
}

/// Self term of element T at its centroid x.
void integrate_self(const V3& x, const Tri& T, cplx ik, unsigned which, const QuadratureOptions& q, Acc& acc) {
  std::vector<V3> ys;
  std::vector<double> ws;
  quadrature::duffy_rule(x, T, q.singular_order, ys, ws);
  cplx s_rem{}, w_rem{};
  for (std::size_t p = 0; p < ys.size(); ++p) {
    const double r = norm(sub(x, ys[p]));
    const cplx z = ik * r;
    if (which & kSingleLayer) s_rem += ws[p] * expm1c(z) / r;
    if (which & kHypersingular) w_rem += ws[p] * exp1mz_m1(z) / (r * r * r);
  }
  if (which & kSingleLayer) acc.s = kInv4Pi * (quadrature::inv_r_integral(x, T) + s_rem);
  if (which & kHypersingular) acc.w = kInv4Pi * (quadrature::inv_r3_finite_part(x, T) + w_rem);
  acc.k = 0;
  acc.kp = 0;
}

// ---------------------------------------------------------------------------------------------
// Curved (6-node) elements (Mesh::midside; geometry map in quadratic_element.hpp). The
// integrals are taken in the parameter plane (s, t) with dS = |nJ| ds dt and the normal
// n_y = nJ / |nJ| of each quadrature point.
// ---------------------------------------------------------------------------------------------
using QT = detail::QuadraticTriangle;
using P2 = std::array<double, 2>;
using PTri = std::array<P2, 3>;  ///< a triangle of the parameter plane (s, t)
constexpr PTri kReferenceTriangle = {P2{0, 0}, P2{1, 0}, P2{0, 1}};

/// e^z (2 - 2z + z^2) - 2 = sum_{n>=3} (n - 1)(n - 2) z^n / n!, without cancellation for small |z|
/// (z^2 G''(r) r^... : the dynamic part of G'' is this / (4 pi r^3)).
cplx exp2_m2(cplx z) {
  if (std::abs(z) < 0.1) {
    return z * z * z *
           (1.0 / 3 + z * (1.0 / 4 + z * (1.0 / 10 + z * (1.0 / 36 + z * (1.0 / 168 + z * (1.0 / 960 + z * (1.0 / 6480 + z / 50400.0)))))));
  }
  return std::exp(z) * (2.0 - 2.0 * z + z * z) - 2.0;
}

/// Like integrate_regular, on the piece P of the parameter plane of the curved element E: the
/// triangle rule where |x - y(centroid of P)| >= near_factor x (diameter of P's mapped corners),
/// recursive 4-split of P otherwise.
void integrate_regular_curved(const V3& x, const V3& nx, const QT& E, const PTri& P, cplx ik, unsigned which,
                              const QuadratureOptions& q, const std::vector<quadrature::TrianglePoint>& rule, int depth,
                              Acc& acc) {
  auto at = [&](double s, double t) { return E.point(1 - s - t, s, t); };
  const Tri Y = {at(P[0][0], P[0][1]), at(P[1][0], P[1][1]), at(P[2][0], P[2][1])};
  const V3 c = at((P[0][0] + P[1][0] + P[2][0]) / 3, (P[0][1] + P[1][1] + P[2][1]) / 3);
  if (depth >= q.max_subdivision || norm(sub(x, c)) >= q.near_factor * diam(Y)) {
    const double Ap = 0.5 * std::abs((P[1][0] - P[0][0]) * (P[2][1] - P[0][1]) - (P[1][1] - P[0][1]) * (P[2][0] - P[0][0]));
    KVals v;
    V3 y, nj;
    for (const auto& p : rule) {
      const double s = p.l0 * P[0][0] + p.l1 * P[1][0] + p.l2 * P[2][0];
      const double t = p.l0 * P[0][1] + p.l1 * P[1][1] + p.l2 * P[2][1];
      E.eval(1 - s - t, s, t, y, nj);
      const double J = norm(nj);
      const V3 ny = {nj[0] / J, nj[1] / J, nj[2] / J};
      kernels(x, nx, y, ny, ik, which, v);
      acc.add(v, p.w * Ap * J);
    }
    return;
  }
  auto mid2 = [](const P2& a, const P2& b) { return P2{0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1])}; };
  const P2 m01 = mid2(P[0], P[1]), m12 = mid2(P[1], P[2]), m20 = mid2(P[2], P[0]);
  const std::array<PTri, 4> kids = {PTri{P[0], m01, m20}, PTri{m01, P[1], m12}, PTri{m20, m12, P[2]}, PTri{m12, m20, m01}};
  for (const auto& kt : kids) integrate_regular_curved(x, nx, E, kt, ik, which, q, rule, depth + 1, acc);
}

/// The static hypersingular self term W_0[i,i] = FP int_T d^2 G_0 / dn_x dn_y dy of a curved
/// element at its collocation point x (normal n_x), by Stokes' theorem as a line integral over
/// its boundary: the gradient of the static double-layer potential of the uniform density 1 on
/// an open surface T is the Biot-Savart integral of its boundary curve,
///   grad_x D_0[1_T](x) = (1/4pi) oint_{dT} (x - y) x dl_y / |x - y|^3
/// (dT counter-clockwise about the outward normal; e.g. Jackson, "Classical Electrodynamics",
/// 3rd ed., sec. 5.6, the field of a current loop from the solid angle it subtends). The gradient
/// is continuous across T (D_0[1_T] jumps by a constant), so for x on T this is the normal
/// derivative that defines W. For a flat triangle it equals (1/4pi) inv_r3_finite_part() (tested
/// in test_bem_curved). Each curved edge: 2 x 16 Gauss-Legendre points (x lies about h/3 from the
/// edges: error ~ 1e-12).
double static_hypersingular_self(const QT& E, const V3& x, const V3& nx) {
  static const auto gl = [] {
    std::pair<std::vector<double>, std::vector<double>> r;
    quadrature::gauss_legendre01(16, r.first, r.second);
    return r;
  }();
  double sum = 0;
  V3 y, dy;
  for (int a = 0; a < 3; ++a)
    for (int half = 0; half < 2; ++half)
      for (std::size_t i = 0; i < gl.first.size(); ++i) {
        const double tau = 0.5 * (half + gl.first[i]);
        E.edge(a, tau, y, dy);
        const V3 d = sub(x, y);
        const double r = norm(d);
        const V3 c = {d[1] * dy[2] - d[2] * dy[1], d[2] * dy[0] - d[0] * dy[2], d[0] * dy[1] - d[1] * dy[0]};
        sum += 0.5 * gl.second[i] * dot(nx, c) / (r * r * r);
      }
  return kInv4Pi * sum;
}

/// Self term of the curved element E at its collocation point x = y(1/3, 1/3, 1/3), normal nx.
/// S, K and K' are weakly singular on a smooth surface ((x - y).n = O(r^2) makes the double-layer
/// kernels O(1/r)): Duffy-transformed Gauss-Legendre rules on the three sub-triangles of the
/// parameter plane about the collocation point (each cut into 6 fans along its outer edge). W = W_0 + (W - W_0): the static part by
/// static_hypersingular_self(), the dynamic part (O(1/r): G - G_0 = (e^{ikr} - 1)/(4 pi r), whose
/// derivatives G' - G_0' = -exp1mz_m1(z)/(4 pi r^2), G'' - G_0'' = exp2_m2(z)/(4 pi r^3)) by the
/// Duffy rules.
void integrate_self_curved(const QT& E, cplx ik, unsigned which, const QuadratureOptions& q, Acc& acc) {
  constexpr double l = detail::kCollocationL;
  V3 x, nx;
  E.eval(l, l, l, x, nx);
  {
    const double J = norm(nx);
    for (double& c : nx) c /= J;
  }
  std::vector<double> gx, gw;
  quadrature::gauss_legendre01(q.singular_order, gx, gw);
  const P2 p0 = {l, l};
  cplx s{}, k{}, kp{}, w{};
  V3 y, nj;
  // each of the three sub-triangles (p0, v_a, v_b) is cut into kAngular fans: after the Duffy map
  // the integrand is analytic in v with a complex singularity at a distance ~ (distance of x from
  // the edge) / (edge length) ~ 0.3 from [0, 1]; a fan of 1/6 of the edge moves it to ~ 1.7 fan
  // lengths, where order-8 Gauss-Legendre is accurate to ~ 1e-9 (one fan: ~ 1e-4 relative)
  constexpr int kAngular = 6;
  for (int a = 0; a < 3 * kAngular; ++a) {
    const P2& ea = kReferenceTriangle[static_cast<std::size_t>(a / kAngular)];
    const P2& eb = kReferenceTriangle[static_cast<std::size_t>((a / kAngular + 1) % 3)];
    const double f0 = double(a % kAngular) / kAngular, f1 = double(a % kAngular + 1) / kAngular;
    const P2 va = {ea[0] + f0 * (eb[0] - ea[0]), ea[1] + f0 * (eb[1] - ea[1])};
    const P2 vb = {ea[0] + f1 * (eb[0] - ea[0]), ea[1] + f1 * (eb[1] - ea[1])};
    const P2 e1 = {va[0] - p0[0], va[1] - p0[1]}, e2 = {vb[0] - va[0], vb[1] - va[1]};
    const double det = std::abs(e1[0] * e2[1] - e1[1] * e2[0]);
    for (std::size_t iu = 0; iu < gx.size(); ++iu)
      for (std::size_t iv = 0; iv < gx.size(); ++iv) {
        const double u = gx[iu], v = gx[iv];
        const double ps = p0[0] + u * (e1[0] + v * e2[0]), pt = p0[1] + u * (e1[1] + v * e2[1]);
        E.eval(1 - ps - pt, ps, pt, y, nj);
        const double J = norm(nj);
        const V3 ny = {nj[0] / J, nj[1] / J, nj[2] / J};
        const double wt = gw[iu] * gw[iv] * u * det * J;
        const V3 d = sub(x, y);
        const double r2 = dot(d, d), r = std::sqrt(r2);
        const cplx z = ik * r;
        const cplx G = std::exp(z) * (kInv4Pi / r);
        if (which & kSingleLayer) s += wt * G;
        if (which & (kDoubleLayer | kAdjointDoubleLayer)) {
          const cplx Gp = G * (z - 1.0) / r;
          k += wt * (-Gp * (dot(d, ny) / r));
          kp += wt * (Gp * (dot(d, nx) / r));
        }
        if (which & kHypersingular) {
          const double A = dot(d, nx), B = dot(d, ny);
          const cplx Dp = -exp1mz_m1(z) * (kInv4Pi / r2);
          const cplx Dpp = exp2_m2(z) * (kInv4Pi / (r2 * r));
          w += wt * (-Dpp * (A * B / r2) - (Dp / r) * (dot(nx, ny) - A * B / r2));
        }
      }
  }
  acc.s = s;
  acc.k = k;
  acc.kp = kp;
  acc.w = (which & kHypersingular) ? w + static_hypersingular_self(E, x, nx) : cplx{};
}

/// The elements of a mesh as the integration routines need them: flat triangles, or curved
/// ones (Mesh::midside), with collocation points and normals.
struct Elements {
  bool curved = false;
  std::vector<Tri> tris;
  std::vector<QT> quads;
  std::vector<V3> cents, normals;
  explicit Elements(const Mesh& mesh) : curved(mesh.curved()) {
    const std::size_t n = mesh.num_elements();
    tris.resize(n);
    cents.resize(n);
    normals.resize(n);
    if (curved) quads.resize(n);
    for (std::size_t e = 0; e < n; ++e) {
      tris[e] = element(mesh, e);
      if (curved) quads[e] = detail::quadratic_element(mesh, e);
      cents[e] = curved ? mesh.centroid(e) : centroid(tris[e]);
      normals[e] = mesh.normal(e);
    }
  }
  /// Integrals over element j from a target x (normal nx) off it.
  void regular(std::size_t j, const V3& x, const V3& nx, cplx ik, unsigned which, const QuadratureOptions& q,
               const std::vector<quadrature::TrianglePoint>& rule, Acc& acc) const {
    if (curved) integrate_regular_curved(x, nx, quads[j], kReferenceTriangle, ik, which, q, rule, 0, acc);
    else integrate_regular(x, nx, tris[j], normals[j], ik, which, q, rule, 0, acc);
  }
  /// Self term of element j at its collocation point.
  void self(std::size_t j, cplx ik, unsigned which, const QuadratureOptions& q, Acc& acc) const {
    if (curved) integrate_self_curved(quads[j], ik, which, q, acc);
    else integrate_self(cents[j], tris[j], ik, which, q, acc);
  }
};

/// i k for the kernels; 0 when |k| x (bounding-box diagonal) < fmm::kStaticKernelKappa = 1e-100,
/// where the k-dependent parts are invisible in double precision and would only produce
/// subnormal numbers (same rule as the FMM, helmholtz_fmm.hpp).
cplx kernel_ik(const Mesh& m, cplx k) {
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (const auto& v : m.vertices)
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], v[d]);
      hi[d] = std::max(hi[d], v[d]);
    }
  const double extent = std::hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
  return std::abs(k) * extent < fmm::kStaticKernelKappa ? cplx(0, 0) : cplx(0, 1) * k;
}

}  // namespace

void validate_wavenumber(cplx k) {
  if (!std::isfinite(k.real()) || !std::isfinite(k.imag()))
    throw InvalidArgument("bem: wavenumber k must be finite (got NaN or Inf)");
  if (k == cplx(0, 0)) throw InvalidArgument("bem: wavenumber k must be nonzero (k = 0 is the Laplace limit)");
  if (k.real() < 0) throw InvalidArgument("bem: wavenumber k must have Re k >= 0 (negative k gives incoming waves)");
  if (k.imag() < 0) throw InvalidArgument("bem: wavenumber k must have Im k >= 0");
}

namespace detail {

void validate_mesh(const Mesh& mesh) {
  if (mesh.triangles.empty()) throw InvalidArgument("bem: mesh is empty (no triangles)");
  const auto nv = static_cast<std::int64_t>(mesh.vertices.size());
  for (const auto& v : mesh.vertices)
    for (double c : v)
      if (!std::isfinite(c)) throw InvalidArgument("bem: mesh has a non-finite vertex coordinate");
  for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
    for (auto i : mesh.triangles[e])
      if (i < 0 || i >= nv) throw InvalidArgument("bem: mesh triangle " + std::to_string(e) + " has a vertex index out of range");
    const Tri T = element(mesh, e);
    if (!(tri_area(T) > 1e-14 * diam(T) * diam(T)))
      throw InvalidArgument("bem: mesh triangle " + std::to_string(e) + " is degenerate (zero area)");
  }
  if (mesh.curved()) {
    if (mesh.midside.size() != mesh.triangles.size())
      throw InvalidArgument("bem: mesh midside has " + std::to_string(mesh.midside.size()) + " entries for " +
                            std::to_string(mesh.triangles.size()) + " triangles (empty, or one per triangle)");
    for (const auto& ms : mesh.midside)
      for (const auto& v : ms)
        for (double c : v)
          if (!std::isfinite(c)) throw InvalidArgument("bem: mesh has a non-finite midside node coordinate");
  }
}

void validate_quadrature(const QuadratureOptions& q) {
  if (q.far_points != 1 && q.far_points != 3 && q.far_points != 7)
    throw InvalidArgument("bem: QuadratureOptions.far_points must be 1, 3 or 7");
  if (!(q.near_factor > 0) || !std::isfinite(q.near_factor))
    throw InvalidArgument("bem: QuadratureOptions.near_factor must be finite and > 0");
  if (q.max_subdivision < 0 || q.max_subdivision > 30)
    throw InvalidArgument("bem: QuadratureOptions.max_subdivision must be in [0, 30]");
  if (q.singular_order < 1 || q.singular_order > 64)
    throw InvalidArgument("bem: QuadratureOptions.singular_order must be in [1, 64]");
}
}  // namespace detail

namespace {
/// y = A x, rows in parallel (threads: resolve_threads) above kParallelMinDenseRows rows; each row
/// is summed sequentially, so the result does not depend on the threads.
void dense_matvec(const CMatrix& A, const cplx* x, cplx* y, int threads) {
  const auto R = static_cast<std::ptrdiff_t>(A.rows);
  const std::size_t cols = A.cols;
  const int nt = resolve_threads(threads);
#pragma omp parallel for schedule(static) if (R > kParallelMinDenseRows && nt > 1) num_threads(nt)
  for (std::ptrdiff_t i = 0; i < R; ++i) {
    const cplx* a = A.data.data() + static_cast<std::size_t>(i) * cols;
    cplx s{};
    for (std::size_t j = 0; j < cols; ++j) s += a[j] * x[j];
    y[i] = s;
  }
}
}  // namespace

std::vector<cplx> CMatrix::apply(const std::vector<cplx>& x, int threads) const {
  if (x.size() != cols) throw InvalidArgument("bem: CMatrix::apply size mismatch");
  if (threads < 0) throw InvalidArgument("bem: CMatrix::apply: threads must be >= 0");
  std::vector<cplx> y(rows);
  dense_matvec(*this, x.data(), y.data(), threads);
  return y;
}

DenseMatrixOperator::DenseMatrixOperator(const CMatrix& A, int threads) : A_(A), threads_(threads) {
  if (threads < 0) throw InvalidArgument("bem: DenseMatrixOperator: threads must be >= 0 (0: all available)");
  if (A.rows != A.cols)
    throw InvalidArgument("bem: DenseMatrixOperator needs a square matrix (got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols) + ")");
}

void DenseMatrixOperator::apply(const cplx* x, cplx* y) const { dense_matvec(A_, x, y, threads_); }

void validate(const GroundPlane& g, const Mesh& mesh) {
  if (g.axis < 0 || g.axis > 2) throw InvalidArgument("bem: ground plane axis must be 0 (x), 1 (y) or 2 (z)");
  if (!std::isfinite(g.height)) throw InvalidArgument("bem: ground plane height must be finite");
  if (g.reflection != 1.0 && g.reflection != -1.0)
    throw InvalidArgument("bem: ground plane reflection must be +1 (rigid) or -1 (pressure release)");
  for (const auto& t : mesh.triangles)  // the vertices in use
    for (const auto vi : t) {
      const auto v = static_cast<std::size_t>(vi);
      if (v >= mesh.vertices.size() || mesh.vertices[v][static_cast<std::size_t>(g.axis)] > g.height) continue;
      throw InvalidArgument("bem: vertex " + std::to_string(v) + " of the mesh is not above the ground plane " +
                            std::string(1, "xyz"[g.axis]) + " = " + std::to_string(g.height) +
                            ": the body must lie strictly inside the half-space (a body resting on the plane is "
                            "not supported)");
    }
  for (std::size_t e = 0; e < mesh.midside.size(); ++e)
    for (const auto& v : mesh.midside[e])
      if (!(v[static_cast<std::size_t>(g.axis)] > g.height))
        throw InvalidArgument("bem: a midside node of element " + std::to_string(e) + " is not above the ground plane " +
                              std::string(1, "xyz"[g.axis]) + " = " + std::to_string(g.height));
}

void validate_symmetry_plane(const MirrorPlane& p, const Mesh& mesh) {
  if (p.axis < 0 || p.axis > 2) throw InvalidArgument("bem: symmetry plane axis must be 0 (x), 1 (y) or 2 (z)");
  if (!std::isfinite(p.height)) throw InvalidArgument("bem: symmetry plane position must be finite");
  if (p.reflection != 1.0 && p.reflection != -1.0)
    throw InvalidArgument("bem: symmetry plane reflection must be +1 (symmetric) or -1 (antisymmetric)");
  for (const auto& t : mesh.triangles)  // the vertices in use (a file may carry others)
    for (const auto vi : t) {
      const auto v = static_cast<std::size_t>(vi);
      if (v >= mesh.vertices.size() || !(mesh.vertices[v][static_cast<std::size_t>(p.axis)] < p.height)) continue;
      throw InvalidArgument("bem: vertex " + std::to_string(v) + " of the mesh lies on the wrong side of the symmetry plane " +
                            std::string(1, "xyz"[p.axis]) + " = " + std::to_string(p.height) +
                            ": give the part of the body with " + std::string(1, "xyz"[p.axis]) + " >= " +
                            std::to_string(p.height));
    }
  for (std::size_t e = 0; e < mesh.midside.size(); ++e)
    for (const auto& v : mesh.midside[e])
      if (v[static_cast<std::size_t>(p.axis)] < p.height)
        throw InvalidArgument("bem: a midside node of element " + std::to_string(e) +
                              " lies on the wrong side of the symmetry plane " + std::string(1, "xyz"[p.axis]) + " = " +
                              std::to_string(p.height));
}

Mesh whole_body(const Mesh& mesh, const std::vector<MirrorPlane>& symmetry) {
  Mesh w = mesh;
  // a mirrored vertex with the coordinates of one already there (a cut vertex on the plane) is
  // that vertex, so that the whole body is one connected surface
  std::map<std::array<double, 3>, std::int32_t> index;
  for (std::size_t v = 0; v < mesh.vertices.size(); ++v) index.emplace(mesh.vertices[v], static_cast<std::int32_t>(v));
  for (const MirrorImage& im : mirror_images(symmetry)) {
    std::vector<std::int32_t> map(mesh.vertices.size());
    for (std::size_t v = 0; v < mesh.vertices.size(); ++v) {
      const auto x = im.point(mesh.vertices[v]);
      const auto [it, added] = index.emplace(x, static_cast<std::int32_t>(w.vertices.size()));
      if (added) w.vertices.push_back(x);
      map[v] = it->second;
    }
    for (std::size_t e = 0; e < mesh.triangles.size(); ++e) {
      auto t = mesh.triangles[e];
      if (im.reverses()) std::swap(t[1], t[2]);
      w.triangles.push_back({map[static_cast<std::size_t>(t[0])], map[static_cast<std::size_t>(t[1])],
                             map[static_cast<std::size_t>(t[2])]});
      if (mesh.curved()) {  // mirrored midside nodes; a reversed triangle swaps its edges 0 and 2
        auto ms = mesh.midside[e];
        for (auto& v : ms) v = im.point(v);
        if (im.reverses()) std::swap(ms[0], ms[2]);
        w.midside.push_back(ms);
      }
    }
  }
  return w;
}

MeshReport validate_and_orient(Mesh& mesh, const std::vector<MirrorPlane>& symmetry) {
  if (symmetry.empty()) return validate_and_orient(mesh);
  detail::validate_mesh(mesh);
  // vertices within 1e-6 of the longest edge of a plane are put on it (the rounding of a mesh
  // file, e.g. float32 STL coordinates), then the sides are checked
  const double tol = 1e-6 * mesh.max_edge();
  for (const auto& p : symmetry) {
    if (p.axis < 0 || p.axis > 2 || !std::isfinite(p.height)) validate_symmetry_plane(p, mesh);  // its message
    auto snap = [&](std::array<double, 3>& v) {
      double& c = v[static_cast<std::size_t>(p.axis)];
      if (std::abs(c - p.height) <= tol) c = p.height;
    };
    for (auto& v : mesh.vertices) snap(v);
    for (auto& ms : mesh.midside)
      for (auto& v : ms) snap(v);
  }
  for (const auto& p : symmetry) validate_symmetry_plane(p, mesh);
  Mesh w = whole_body(mesh, symmetry);
  MeshReport rep;
  try {
    rep = validate_and_orient(w);  // triangle order kept: the first N are the mesh's
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("bem: the whole body (the mesh and its mirror images in the symmetry planes) is "
                                      "not a valid closed surface; the cut edges must lie on the planes (to 1e-6 of "
                                      "the longest edge) and the mesh must be the part on one side: ") +
                          e.what());
  }
  const std::size_t n = mesh.num_elements();
  for (std::size_t e = 0; e < n; ++e) {
    // the same triangle, possibly reversed: copy the orientation by comparing vertex coordinates
    const auto& t = mesh.triangles[e];
    const auto& u = w.triangles[e];
    const auto& a1 = w.vertices[static_cast<std::size_t>(u[1])];
    const auto& b1 = mesh.vertices[static_cast<std::size_t>(t[1])];
    const auto& b2 = mesh.vertices[static_cast<std::size_t>(t[2])];
    const auto& a0 = w.vertices[static_cast<std::size_t>(u[0])];
    const auto& b0 = mesh.vertices[static_cast<std::size_t>(t[0])];
    // orientation-preserving rotations of (b0, b1, b2) keep the cyclic order
    const bool same = (a0 == b0 && a1 == b1) || (a0 == b1 && a1 == b2) || (a0 == b2 && a1 == b0);
    if (!same) mesh.flip(e);
  }
  MeshReport r = rep;
  r.elements = n;
  return r;
}

std::vector<MirrorImage> mirror_images(const std::vector<MirrorPlane>& planes) {
  if (planes.size() > 3) throw InvalidArgument("bem: at most 3 mirror planes (ground and symmetry), got " + std::to_string(planes.size()));
  for (std::size_t a = 0; a < planes.size(); ++a)
    for (std::size_t b = a + 1; b < planes.size(); ++b)
      if (planes[a].axis == planes[b].axis)
        throw InvalidArgument("bem: two mirror planes (ground / symmetry) on the same axis " +
                              std::string(1, "xyz"[planes[a].axis]) + ": parallel planes would need infinitely many images");
  std::vector<MirrorImage> out;
  for (unsigned mask = 1; mask < (1u << planes.size()); ++mask) {
    MirrorImage im;
    for (std::size_t a = 0; a < planes.size(); ++a)
      if (mask & (1u << a)) {
        const auto ax = static_cast<std::size_t>(planes[a].axis);
        im.flip[ax] = true;
        im.height[ax] = planes[a].height;
        im.factor *= planes[a].reflection;
      }
    out.push_back(im);
  }
  return out;
}

DenseOperators assemble_dense(const Mesh& mesh, cplx k, unsigned which, const QuadratureOptions& q, int threads,
                              const std::vector<MirrorImage>* images) {
  const auto t0 = std::chrono::steady_clock::now();
  validate_wavenumber(k);
  detail::validate_mesh(mesh);
  detail::validate_quadrature(q);
  which &= kAllOperators;
  if (which == 0) throw InvalidArgument("bem: assemble_dense: no operator selected");
  if (threads < 0) throw InvalidArgument("bem: assemble_dense: threads must be >= 0 (0: all available)");
  const std::size_t n = mesh.num_elements();
  DenseOperators ops;
  ops.which = which;
  require_memory(16.0 * double(n) * double(n) * double(std::popcount(which)),
                 "bem: the dense " + std::to_string(n) + " x " + std::to_string(n) + " operator matrices (" +
                     std::to_string(std::popcount(which)) + ")");
  if (which & kSingleLayer) ops.S = CMatrix(n, n);
  if (which & kDoubleLayer) ops.K = CMatrix(n, n);
  if (which & kAdjointDoubleLayer) ops.Kp = CMatrix(n, n);
  if (which & kHypersingular) ops.W = CMatrix(n, n);

  const Elements els(mesh);
  const auto& rule = quadrature::triangle_rule(q.far_points);
  const cplx ik = kernel_ik(mesh, k);
  const auto N = static_cast<std::ptrdiff_t>(n);
  ParallelErrors errors;  // the singular rules allocate: nothing may escape the region
#pragma omp parallel for schedule(dynamic, 4) num_threads(resolve_threads(threads))
  for (std::ptrdiff_t ii = 0; ii < N; ++ii) {
    if (errors.failed()) continue;
    try {
      const auto i = static_cast<std::size_t>(ii);
      const V3& x = els.cents[i];
      const V3& nx = els.normals[i];
      for (std::size_t j = 0; j < n; ++j) {
        Acc acc;
        if (i == j) {
          els.self(j, ik, which, q, acc);
        } else {
          els.regular(j, x, nx, ik, which, q, rule, acc);
        }
        if (images)  // the image terms: (R x_i, R n_i) against T_j (MirrorPlane)
          for (const MirrorImage& im : *images) {
            Acc img;
            els.regular(j, im.point(x), im.direction(nx), ik, which, q, rule, img);
            const double s = im.factor;
            acc.s += s * img.s;
            acc.k += s * img.k;
            acc.kp += s * img.kp;
            acc.w += s * img.w;
          }
        if (which & kSingleLayer) ops.S(i, j) = acc.s;
        if (which & kDoubleLayer) ops.K(i, j) = acc.k;
        if (which & kAdjointDoubleLayer) ops.Kp(i, j) = acc.kp;
        if (which & kHypersingular) ops.W(i, j) = acc.w;
      }
    } catch (...) {
      errors.record(std::current_exception());
    }
  }
  errors.rethrow();
  ops.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ops;
}

namespace {
void check_solution(const Mesh& mesh, const SurfaceSolution& sol) {
  detail::validate_mesh(mesh);
  validate_wavenumber(sol.k);
  const std::size_t n = mesh.num_elements();
  if (sol.u.size() != n || sol.dudn.size() != n)
    throw InvalidArgument("bem: surface solution size does not match the mesh (" + std::to_string(sol.u.size()) +
                          ", " + std::to_string(sol.dudn.size()) + " vs " + std::to_string(n) + " elements)");
}
}  // namespace

std::vector<cplx> far_field(const Mesh& mesh, const SurfaceSolution& sol, const std::vector<std::array<double, 3>>& dirs,
                            const QuadratureOptions& q) {
  check_solution(mesh, sol);
  detail::validate_quadrature(q);
  const auto& rule = quadrature::triangle_rule(q.far_points);
  const std::size_t n = mesh.num_elements();
  const cplx ik = cplx(0, 1) * sol.k;
  std::vector<cplx> out(dirs.size());
  for (std::size_t m = 0; m < dirs.size(); ++m) {
    V3 xh = dirs[m];
    const double nr = norm(xh);
    if (!(nr > 0) || !std::isfinite(nr)) throw InvalidArgument("bem: far_field direction must be finite and nonzero");
    for (double& c : xh) c /= nr;
    cplx s{};
    if (mesh.curved()) {  // per quadrature point: e^{-ik xhat.y} [-ik (xhat.nJ) u - |nJ| q] (w / 2)
      V3 y, nj;
      for (std::size_t e = 0; e < n; ++e) {
        const QT E = detail::quadratic_element(mesh, e);
        for (const auto& p : rule) {
          E.eval(p.l0, p.l1, p.l2, y, nj);
          s += 0.5 * p.w * std::exp(-ik * dot(xh, y)) * (-ik * dot(xh, nj) * sol.u[e] - norm(nj) * sol.dudn[e]);
        }
      }
      out[m] = kInv4Pi * s;
      continue;
    }
    for (std::size_t e = 0; e < n; ++e) {
      const Tri T = element(mesh, e);
      const V3 ny = mesh.normal(e);
      const double A = tri_area(T);
      cplx integ{};
      for (const auto& p : rule) {
        const V3 y = {p.l0 * T[0][0] + p.l1 * T[1][0] + p.l2 * T[2][0], p.l0 * T[0][1] + p.l1 * T[1][1] + p.l2 * T[2][1],
                      p.l0 * T[0][2] + p.l1 * T[1][2] + p.l2 * T[2][2]};
        integ += p.w * std::exp(-ik * dot(xh, y));
      }
      s += A * integ * (-ik * dot(xh, ny) * sol.u[e] - sol.dudn[e]);
    }
    out[m] = kInv4Pi * s;
  }
  return out;
}

std::vector<cplx> scattered_field(const Mesh& mesh, const SurfaceSolution& sol,
                                  const std::vector<std::array<double, 3>>& points, const QuadratureOptions& q) {
  for (std::size_t p = 0; p < points.size(); ++p) {
    const V3& x = points[p];
    for (double c : x)
      if (!std::isfinite(c)) throw InvalidArgument("bem: scattered_field point is not finite");
    const PointLocation where = locate_point(mesh, x);
    if (where != PointLocation::kOutside)
      throw InvalidArgument("bem: scattered_field point " + std::to_string(p) + " lies " +
                            (where == PointLocation::kInside ? "inside" : "on the surface of") +
                            " the scatterer (the representation formula holds in the exterior only)");
  }
  return detail::representation(mesh, sol, points, q);
}

std::vector<cplx> detail::representation(const Mesh& mesh, const SurfaceSolution& sol,
                                         const std::vector<std::array<double, 3>>& points, const QuadratureOptions& q) {
  check_solution(mesh, sol);
  detail::validate_quadrature(q);
  const auto& rule = quadrature::triangle_rule(q.far_points);
  const std::size_t n = mesh.num_elements();
  const cplx ik = cplx(0, 1) * sol.k;
  std::vector<cplx> out(points.size());
  const V3 dummy = {0, 0, 1};
  // D[u] = D[u - m] + m (D - D_0)[1] + m D_0[1], D_0[1](x) = -winding number (helmholtz.hpp)
  cplx m{};
  double area = 0;
  for (std::size_t e = 0; e < n; ++e) {
    m += mesh.area(e) * sol.u[e];
    area += mesh.area(e);
  }
  m /= area;
  const bool split = m != cplx(0, 0);
  const unsigned which = kSingleLayer | kDoubleLayer | (split ? kDynamicDoubleLayer : 0u);
  const Elements els(mesh);
  for (std::size_t p = 0; p < points.size(); ++p) {
    const V3& x = points[p];
    cplx s{};
    for (std::size_t e = 0; e < n; ++e) {
      Acc acc;
      els.regular(e, x, dummy, ik, which, q, rule, acc);
      s += (sol.u[e] - m) * acc.k + m * acc.kd - sol.dudn[e] * acc.s;
    }
    if (split) s -= m * winding_number(mesh, x);
    out[p] = s;
  }
  return out;
}

}  // namespace elliptica::bem

// ---------------------------------------------------------------------------------------------
// Entries for given (i, j) pairs (used by the FMM operator's near field, fmm_operator.hpp); the
// same quadrature as assemble_dense.
// ---------------------------------------------------------------------------------------------
namespace elliptica::bem {
void assemble_entries(const Mesh& mesh, cplx k, unsigned which, const QuadratureOptions& q,
                      const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, cplx* S, cplx* K,
                      cplx* Kp, cplx* W, int threads) {
  validate_wavenumber(k);
  detail::validate_mesh(mesh);
  detail::validate_quadrature(q);
  which &= kAllOperators;
  const auto n = static_cast<std::int64_t>(mesh.num_elements());
  for (const auto& pr : pairs)
    if (pr.first < 0 || pr.first >= n || pr.second < 0 || pr.second >= n)
      throw InvalidArgument("bem: assemble_entries: element pair index out of range");
  if (threads < 0) throw InvalidArgument("bem: assemble_entries: threads must be >= 0 (0: all available)");
  const auto& rule = quadrature::triangle_rule(q.far_points);
  const cplx ik = kernel_ik(mesh, k);
  const Elements els(mesh);
  const auto P = static_cast<std::ptrdiff_t>(pairs.size());
  ParallelErrors errors;  // the singular rules allocate: nothing may escape the region
#pragma omp parallel for schedule(dynamic, 64) num_threads(resolve_threads(threads))
  for (std::ptrdiff_t t = 0; t < P; ++t) {
    if (errors.failed()) continue;
    try {
      const auto i = static_cast<std::size_t>(pairs[t].first), j = static_cast<std::size_t>(pairs[t].second);
      Acc acc;
      if (i == j) els.self(j, ik, which, q, acc);
      else els.regular(j, els.cents[i], els.normals[i], ik, which, q, rule, acc);
      if (S && (which & kSingleLayer)) S[t] = acc.s;
      if (K && (which & kDoubleLayer)) K[t] = acc.k;
      if (Kp && (which & kAdjointDoubleLayer)) Kp[t] = acc.kp;
      if (W && (which & kHypersingular)) W[t] = acc.w;
    } catch (...) {
      errors.record(std::current_exception());
    }
  }
  errors.rethrow();
}
}  // namespace elliptica::bem
