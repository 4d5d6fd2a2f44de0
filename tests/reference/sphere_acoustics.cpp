/// @file sphere_acoustics.cpp
/// Radiation and impedance series of a sphere (formulas in sphere_acoustics.hpp).
#include "reference/sphere_acoustics.hpp"

#include <cmath>
#include <stdexcept>

#include "reference/spherical_bessel.hpp"

#include "reference/mie.hpp"

namespace elliptica::testref {
namespace {

using cd = std::complex<double>;

using namespace sph;  // jn, yn, jnp, ynp, hn, hnp, ipow
void check(double k, double a) {
  if (!(k > 0) || !(a > 0)) throw std::invalid_argument("sphere_acoustics: k and a must be > 0");
}

/// sum_n f(n) P_n(c) for n = 0..N.
template <class F>
cd legendre_sum(int N, double c, F f) {
  cd s{};
  double p0 = 1, p1 = c;
  for (int n = 0; n <= N; ++n) {
    s += f(n) * p0;
    const double p2 = ((2 * n + 3) * c * p1 - (n + 1) * p0) / (n + 2);
    p0 = p1;
    p1 = p2;
  }
  return s;
}

}  // namespace

cd impedance_sphere_surface(double k, double a, cd beta, double c) {
  check(k, a);
  const double ka = k * a;
  const cd ib = cd(0, 1) * beta;
  return legendre_sum(mie_terms(ka), c, [&](int n) {
    return (2.0 * n + 1) * ipow(n + 1) / (ka * ka * (hnp(n, ka) + ib * hn(n, ka)));
  });
}

cd impedance_sphere_far_field(double k, double a, cd beta, double c) {
  check(k, a);
  const double ka = k * a;
  const cd ib = cd(0, 1) * beta;
  return cd(0, -1) / k * legendre_sum(mie_terms(ka), c, [&](int n) {
           return (2.0 * n + 1) * (-(jnp(n, ka) + ib * jn(n, ka)) / (hnp(n, ka) + ib * hn(n, ka)));
         });
}

cd pulsating_sphere_far_field(double k, double a) {
  check(k, a);
  return a * a * std::exp(cd(0, -k * a)) / (cd(0, k * a) - 1.0);
}

cd pulsating_sphere_field(double k, double a, double r) {
  if (r < a) throw std::invalid_argument("pulsating_sphere_field: r < a");
  return pulsating_sphere_far_field(k, a) * std::exp(cd(0, k * r)) / r;
}

cd oscillating_sphere_field(double k, double a, double r, double c) {
  check(k, a);
  if (r < a) throw std::invalid_argument("oscillating_sphere_field: r < a");
  const cd B = 1.0 / (k * hnp(1, k * a));
  return B * hn(1, k * r) * c;
}

cd oscillating_sphere_far_field(double k, double a, double c) {
  check(k, a);
  const cd B = 1.0 / (k * hnp(1, k * a));
  return -B * c / k;
}

}  // namespace elliptica::testref
