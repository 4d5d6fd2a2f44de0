/// @file acoustics.cpp
/// Physical units of the acoustic BEM (include/elliptica/bem/acoustics.hpp).
#include "elliptica/bem/acoustics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "elliptica/core/error.hpp"
#include "quadrature.hpp"

namespace elliptica::bem {

namespace {
bool finite(cplx z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }
double omega_of(double f) {
  if (!(std::isfinite(f) && f > 0)) throw InvalidArgument("bem: frequency must be finite and > 0 Hz, got " + std::to_string(f));
  return 2 * std::numbers::pi * f;
}
}  // namespace

void validate(const Medium& m) {
  if (!(std::isfinite(m.sound_speed) && m.sound_speed > 0))
    throw InvalidArgument("bem: sound speed must be finite and > 0 m/s, got " + std::to_string(m.sound_speed));
  if (!(std::isfinite(m.density) && m.density > 0))
    throw InvalidArgument("bem: density must be finite and > 0 kg/m^3, got " + std::to_string(m.density));
}

double wavenumber(double frequency_hz, const Medium& m) {
  validate(m);
  return omega_of(frequency_hz) / m.sound_speed;
}

std::vector<cplx> normal_velocity_data(const std::vector<cplx>& v_n, double frequency_hz, const Medium& m) {
  validate(m);
  const cplx c = cplx(0, omega_of(frequency_hz) * m.density);
  std::vector<cplx> g(v_n.size());
  for (std::size_t e = 0; e < v_n.size(); ++e) {
    if (!finite(v_n[e])) throw InvalidArgument("bem: normal velocity of element " + std::to_string(e) + " is not finite");
    g[e] = c * v_n[e];
  }
  return g;
}

std::vector<cplx> rigid_translation_velocity(const Mesh& mesh, std::array<cplx, 3> U) {
  for (const cplx& u : U)
    if (!finite(u)) throw InvalidArgument("bem: rigid-body velocity must be finite");
  std::vector<cplx> v(mesh.num_elements());
  for (std::size_t e = 0; e < v.size(); ++e) {
    const auto n = mesh.normal(e);
    v[e] = U[0] * n[0] + U[1] * n[1] + U[2] * n[2];
  }
  return v;
}

cplx admittance_from_impedance(cplx Z, const Medium& m) {
  validate(m);
  if (!finite(Z) || Z == cplx(0, 0))
    throw InvalidArgument("bem: impedance must be finite and nonzero (Z = 0 is a pressure-release, sound-soft surface: "
                          "use bc dirichlet)");
  if (Z.real() < 0)
    throw InvalidArgument("bem: impedance with Re Z < 0 describes an active surface; only passive ones (Re Z >= 0) "
                          "are accepted");
  const cplx beta = m.impedance() / Z;
  if (!(std::abs(beta) <= kMaxAdmittance))
    throw InvalidArgument("bem: impedance |Z| = " + std::to_string(std::abs(Z)) + " Pa s/m is below 1e-8 rho c: the "
                          "surface is pressure release (sound-soft): use bc dirichlet");
  return beta;
}

double spl_db(cplx p, double p_ref) {
  if (!(p_ref > 0 && std::isfinite(p_ref))) throw InvalidArgument("bem: reference pressure must be finite and > 0");
  const double a = std::abs(p);
  return a > 0 ? 20 * std::log10(a / (std::numbers::sqrt2 * p_ref)) : -std::numeric_limits<double>::infinity();
}

double surface_power(const Mesh& mesh, const SurfaceSolution& s, double frequency_hz, const Medium& m) {
  validate(m);
  const double omega = omega_of(frequency_hz);
  const std::size_t n = mesh.num_elements();
  if (s.u.size() != n || s.dudn.size() != n)
    throw InvalidArgument("bem: surface_power: the solution has " + std::to_string(s.u.size()) + " values, the mesh " +
                          std::to_string(n) + " elements");
  double P = 0;
  for (std::size_t e = 0; e < n; ++e) {
    const cplx v = s.dudn[e] / cplx(0, omega * m.density);
    P += mesh.area(e) * (s.u[e] * std::conj(v)).real();
  }
  return 0.5 * P;
}

SphereRule sphere_rule(int n_theta) {
  if (n_theta < 1 || n_theta > 2000)
    throw InvalidArgument("bem: sphere_rule needs 1 to 2000 polar nodes, got " + std::to_string(n_theta));
  std::vector<double> x, w;
  quadrature::gauss_legendre01(n_theta, x, w);
  const int nphi = 2 * n_theta;
  SphereRule r;
  r.directions.reserve(static_cast<std::size_t>(n_theta) * nphi);
  for (int i = 0; i < n_theta; ++i) {
    const double c = 2 * x[static_cast<std::size_t>(i)] - 1, s = std::sqrt(std::max(0.0, 1 - c * c));
    for (int j = 0; j < nphi; ++j) {
      const double ph = 2 * std::numbers::pi * (j + 0.5) / nphi;
      r.directions.push_back({s * std::cos(ph), s * std::sin(ph), c});
      r.weights.push_back(2 * w[static_cast<std::size_t>(i)] * 2 * std::numbers::pi / nphi);
    }
  }
  return r;
}

SphereRule hemisphere_rule(int n_theta, int axis) {
  if (n_theta < 1 || n_theta > 2000)
    throw InvalidArgument("bem: hemisphere_rule needs 1 to 2000 polar nodes, got " + std::to_string(n_theta));
  if (axis < 0 || axis > 2) throw InvalidArgument("bem: hemisphere_rule axis must be 0, 1 or 2");
  std::vector<double> x, w;
  quadrature::gauss_legendre01(n_theta, x, w);  // c = d[axis] in (0, 1)
  const int nphi = 2 * n_theta;
  const auto a = static_cast<std::size_t>(axis), b = (a + 1) % 3, c3 = (a + 2) % 3;
  SphereRule r;
  for (int i = 0; i < n_theta; ++i) {
    const double c = x[static_cast<std::size_t>(i)], s = std::sqrt(std::max(0.0, 1 - c * c));
    for (int j = 0; j < nphi; ++j) {
      const double ph = 2 * std::numbers::pi * (j + 0.5) / nphi;
      std::array<double, 3> d{};
      d[a] = c;
      d[b] = s * std::cos(ph);
      d[c3] = s * std::sin(ph);
      r.directions.push_back(d);
      r.weights.push_back(w[static_cast<std::size_t>(i)] * 2 * std::numbers::pi / nphi);
    }
  }
  return r;
}

double far_field_power(const std::vector<cplx>& p_inf, const SphereRule& rule, const Medium& m) {
  validate(m);
  if (p_inf.size() != rule.weights.size())
    throw InvalidArgument("bem: far_field_power: " + std::to_string(p_inf.size()) + " values for " +
                          std::to_string(rule.weights.size()) + " directions");
  double P = 0;
  for (std::size_t j = 0; j < p_inf.size(); ++j) P += rule.weights[j] * std::norm(p_inf[j]);
  return P / (2 * m.impedance());
}

}  // namespace elliptica::bem
