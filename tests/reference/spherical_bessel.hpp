#pragma once
/// @file spherical_bessel.hpp
/// Spherical Bessel functions of the sphere references (mie.cpp, sphere_acoustics.cpp), from
/// <cmath> (std::sph_bessel, std::sph_neumann); h_n = h_n^(1) = j_n + i y_n (outgoing for
/// e^{-i omega t}). Derivatives by f_n' = f_{n-1} - (n+1)/x f_n, f_0' = -f_1 (DLMF 10.51.2).
#include <cmath>
#include <complex>

namespace elliptica::testref::sph {

inline double jn(int n, double x) { return std::sph_bessel(static_cast<unsigned>(n), x); }
inline double yn(int n, double x) { return std::sph_neumann(static_cast<unsigned>(n), x); }
inline double jnp(int n, double x) { return n == 0 ? -jn(1, x) : jn(n - 1, x) - (n + 1) / x * jn(n, x); }
inline double ynp(int n, double x) { return n == 0 ? -yn(1, x) : yn(n - 1, x) - (n + 1) / x * yn(n, x); }
inline std::complex<double> hn(int n, double x) { return {jn(n, x), yn(n, x)}; }
inline std::complex<double> hnp(int n, double x) { return {jnp(n, x), ynp(n, x)}; }
/// i^n for any integer n.
inline std::complex<double> ipow(int n) {
  static const std::complex<double> p[4] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  return p[((n % 4) + 4) % 4];
}

}  // namespace elliptica::testref::sph
