/// @file mie.cpp
/// Mie series (see mie.hpp for the formulas).
#include "reference/mie.hpp"

#include <cmath>
#include <stdexcept>

#include "reference/spherical_bessel.hpp"

namespace elliptica::testref {
namespace {

using cd = std::complex<double>;

using namespace sph;  // jn, yn, jnp, ynp, hn, hnp, ipow

/// A_n (scattered coefficients).
cd coeff(MieBC bc, int n, double ka) {
  return bc == MieBC::SoundSoft ? -jn(n, ka) / hn(n, ka) : -jnp(n, ka) / hnp(n, ka);
}

void check(double k, double a) {
  if (!(k > 0) || !(a > 0)) throw std::invalid_argument("mie: k and a must be > 0");
}

}  // namespace

int mie_terms(double ka) { return static_cast<int>(ka + 4 * std::cbrt(ka) + 15); }

cd mie_surface(MieBC bc, double k, double a, double c) {
  check(k, a);
  const double ka = k * a;
  const int N = mie_terms(ka);
  cd s{};
  double p0 = 1, p1 = c;  // P_{n}, P_{n+1}
  for (int n = 0; n <= N; ++n) {
    const double Pn = p0;
    if (bc == MieBC::SoundHard)
      s += (2.0 * n + 1) * ipow(n + 1) * Pn / (ka * ka * hnp(n, ka));
    else
      s += (2.0 * n + 1) * ipow(n - 1) * Pn / (k * a * a * hn(n, ka));
    const double p2 = ((2 * n + 3) * c * p1 - (n + 1) * p0) / (n + 2);
    p0 = p1;
    p1 = p2;
  }
  return s;
}

cd mie_far_field(MieBC bc, double k, double a, double c) {
  check(k, a);
  const double ka = k * a;
  const int N = mie_terms(ka);
  cd s{};
  double p0 = 1, p1 = c;
  for (int n = 0; n <= N; ++n) {
    s += (2.0 * n + 1) * coeff(bc, n, ka) * p0;
    const double p2 = ((2 * n + 3) * c * p1 - (n + 1) * p0) / (n + 2);
    p0 = p1;
    p1 = p2;
  }
  return cd(0, -1) / k * s;
}

cd mie_scattered(MieBC bc, double k, double a, double r, double c) {
  check(k, a);
  if (!(r >= a)) throw std::invalid_argument("mie: r must be >= a");
  const double ka = k * a;
  const int N = mie_terms(ka) + static_cast<int>(k * r);
  cd s{};
  double p0 = 1, p1 = c;
  for (int n = 0; n <= N; ++n) {
    s += (2.0 * n + 1) * ipow(n) * coeff(bc, n, ka) * hn(n, k * r) * p0;
    const double p2 = ((2 * n + 3) * c * p1 - (n + 1) * p0) / (n + 2);
    p0 = p1;
    p1 = p2;
  }
  return s;
}

cd mie_point_source_scattered(MieBC bc, double k, double a, double rs, double r, double c) {
  check(k, a);
  if (!(r >= a) || !(rs > a)) throw std::invalid_argument("mie: r must be >= a and rs > a");
  const double ka = k * a;
  // terms decay like (a^2 / (r rs))^n
  const int N = mie_terms(ka) + static_cast<int>(40 * std::log(10.0) / std::log(r * rs / (a * a)) + 1);
  cd s{};
  double p0 = 1, p1 = c;
  for (int n = 0; n <= N; ++n) {
    s += (2.0 * n + 1) * coeff(bc, n, ka) * hn(n, k * rs) * hn(n, k * r) * p0;
    const double p2 = ((2 * n + 3) * c * p1 - (n + 1) * p0) / (n + 2);
    p0 = p1;
    p1 = p2;
  }
  return cd(0, k / (4 * 3.141592653589793238462643383279502884)) * s;
}

}  // namespace elliptica::testref
