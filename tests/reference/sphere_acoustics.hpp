#pragma once
/// @file sphere_acoustics.hpp
/// Independent references for the radiation and impedance problems of the BEM (time e^{-i omega t},
/// h_n = j_n + i y_n outgoing, sphere of radius a at the origin, n = r-hat out of the body). Written
/// from the formulas only; shares no code with src/bem.
///
/// Impedance sphere (Robin du/dr = -i k beta u at r = a) in the unit plane wave e^{ik z}:
///   u = sum (2n+1) i^n [j_n(kr) + A_n h_n(kr)] P_n(cos theta),
///   A_n = -(j_n'(ka) + i beta j_n(ka)) / (h_n'(ka) + i beta h_n(ka))
///   (beta = 0: sound-hard, beta -> inf: sound-soft). Surface value by the Wronskian
///   j_n y_n' - j_n' y_n = 1/x^2:  u(a) = sum (2n+1) i^{n+1} P_n / ((ka)^2 (h_n' + i beta h_n)).
///   Far field u_inf = (-i/k) sum (2n+1) A_n P_n (h_n(x) ~ (-i)^{n+1} e^{ix}/x).
/// Pulsating sphere (du/dr = g uniform at r = a): u = A e^{ikr}/r, A = g a^2 e^{-ika} / (ika - 1);
///   u_inf = A. Radiated power with g = i omega rho v: P = 2 pi a^2 rho c |v|^2 (ka)^2 / (1 + (ka)^2)
///   (Kinsler, Frey, Coppens & Sanders, "Fundamentals of Acoustics", 4th ed., sec. 7.2).
/// Oscillating sphere (du/dr = g cos theta, the rigid sphere translating along z):
///   u = B h_1(kr) cos theta, B = g / (k h_1'(ka)); u_inf = -B cos theta / k.
#include <complex>

namespace elliptica::testref {

std::complex<double> impedance_sphere_surface(double k, double a, std::complex<double> beta, double cos_theta);
std::complex<double> impedance_sphere_far_field(double k, double a, std::complex<double> beta, double cos_theta);
/// Pulsating sphere: u(r) for r >= a and u_inf, for unit g.
std::complex<double> pulsating_sphere_field(double k, double a, double r);
std::complex<double> pulsating_sphere_far_field(double k, double a);
/// Oscillating sphere: u(r, theta) for r >= a and u_inf(theta), for unit g.
std::complex<double> oscillating_sphere_field(double k, double a, double r, double cos_theta);
std::complex<double> oscillating_sphere_far_field(double k, double a, double cos_theta);

}  // namespace elliptica::testref
