#pragma once
/// @file mie.hpp
/// Independent reference for the BEM tests: Mie series for a unit-amplitude plane wave
/// u_inc = e^{ik d.x} scattered by a sphere of radius a centred at the origin (time e^{-i omega t},
/// h_n = h_n^(1) = j_n + i y_n, outgoing). Written from the formulas only; shares no code with
/// src/bem. Derivation (theta = angle between d and xhat):
///   e^{ikr cos theta} = sum (2n+1) i^n j_n(kr) P_n(cos theta),  u_sc = sum (2n+1) i^n A_n h_n(kr) P_n
///   sound-soft  (u = 0):     A_n = -j_n(ka)/h_n(ka)
///   sound-hard  (du/dr = 0): A_n = -j_n'(ka)/h_n'(ka)
/// Surface values via the Wronskian j_n y_n' - j_n' y_n = 1/x^2:
///   hard: u(a, theta)     = sum (2n+1) i^{n+1} P_n / ((ka)^2 h_n'(ka))
///   soft: du/dr(a, theta) = sum (2n+1) i^{n-1} P_n / (k a^2 h_n(ka))
/// Far field (u_sc ~ e^{ikr}/r u_inf, h_n(x) ~ (-i)^{n+1} e^{ix}/x):
///   u_inf(theta) = (-i/k) sum (2n+1) A_n P_n(cos theta).
/// Real k > 0 only. Spherical Bessel functions from <cmath> (std::sph_bessel, std::sph_neumann).
#include <complex>
#include <vector>

namespace elliptica::testref {

enum class MieBC { SoundSoft, SoundHard };

/// Number of terms used: ka + 4 (ka)^{1/3} + 15 (Wiscombe-type rule plus margin).
int mie_terms(double ka);
/// Sound-hard: total u on the surface; sound-soft: total du/dr on the surface; at cos(theta).
std::complex<double> mie_surface(MieBC bc, double k, double a, double cos_theta);
/// Far-field amplitude u_inf at cos(theta).
std::complex<double> mie_far_field(MieBC bc, double k, double a, double cos_theta);
/// Scattered field at distance r >= a from the centre.
std::complex<double> mie_scattered(MieBC bc, double k, double a, double r, double cos_theta);
/// Scattered field at distance r >= a of the point source u_inc = e^{ik|x-x0|}/(4 pi |x-x0|) at
/// distance rs > a (gamma = angle between x and x0). From the addition theorem
///   G(x,x0) = (ik/(4 pi)) sum (2n+1) j_n(k r<) h_n(k r>) P_n(cos gamma)
/// the regular part j_n(kr) (r < rs near the sphere) is answered by A_n h_n(kr):
///   u_sc = (ik/(4 pi)) sum (2n+1) A_n h_n(k rs) h_n(k r) P_n(cos gamma).
std::complex<double> mie_point_source_scattered(MieBC bc, double k, double a, double rs, double r, double cos_gamma);

}  // namespace elliptica::testref
