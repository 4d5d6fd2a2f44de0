#pragma once
/// @file acoustics.hpp
/// Physical units of the acoustic BEM (the plan of plan.hpp solves for the acoustic pressure):
/// frequency in Hz, sound speed c in m/s, density rho in kg/m^3, lengths in m, pressure in Pa.
///
/// Conventions
/// - Time dependence e^{-i omega t}, omega = 2 pi f; complex amplitudes are *peak* amplitudes:
///   p(x, t) = Re(p(x) e^{-i omega t}). Levels use the RMS value |p| / sqrt(2).
/// - The unknown u of the BEM is the pressure p; k = omega / c.
/// - Vibrating surface. Linearised Euler, rho dv/dt = -grad p, gives grad p = i omega rho v, so a
///   surface moving with outward normal velocity v_n (m/s, n out of the body into the fluid) has
///   dp/dn = i omega rho v_n (normal_velocity_data; Kinsler, Frey, Coppens & Sanders,
///   "Fundamentals of Acoustics", 4th ed. 2000, sec. 5.2, with their e^{+j omega t} conjugated).
/// - Locally reacting surface of specific acoustic impedance Z = p / v_in (Pa s/m, v_in the
///   normal velocity into the surface, = -v.n): dp/dn = i omega rho v.n = -i omega rho p / Z
///   = -i k beta p with the normalised admittance beta = rho c / Z (admittance_from_impedance).
///   Check: a plane wave e^{ikz} + R e^{-ikz} on the wall z = 0 (fluid z < 0, n = -z) gives
///   R = (Z - rho c) / (Z + rho c), the textbook normal-incidence reflection coefficient (Kinsler
///   et al. sec. 6.3; Pierce, "Acoustics", 1989, sec. 3.2). A passive wall has Re Z >= 0: the mean
///   intensity into it is |p|^2 Re(1/Z) / 2 >= 0.
/// - Sound pressure level SPL = 20 log10(|p| / (sqrt(2) p_ref)) dB, p_ref = 20 uPa (air; 1 uPa is
///   the underwater reference: pass it).
/// - Radiated (or scattered) power, peak amplitudes: P = 1/2 Re int_Gamma p conj(v_n) dS
///   (surface_power) = 1/(2 rho c) int_{S^2} |p_inf|^2 dOmega (far_field_power), p ~ e^{ikr}/r p_inf.
///   Directivity index DI(xhat) = 10 log10(4 pi |p_inf(xhat)|^2 / int |p_inf|^2 dOmega).
/// Checks (tests/test_bem_radiation.cpp): the pulsating sphere of radius a and surface velocity
/// v radiates P = 2 pi a^2 rho c |v|^2 (ka)^2 / (1 + (ka)^2) (Kinsler et al. sec. 7.2, with the
/// peak-amplitude 1/2); both power formulas agree with it.
#include <array>
#include <complex>
#include <vector>

#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/mesh.hpp"

namespace elliptica::bem {

/// The fluid: sound speed (m/s) and density (kg/m^3), both finite and > 0. Defaults: air at
/// about 20 C (343 m/s, 1.21 kg/m^3; water is about 1482 m/s, 998 kg/m^3).
struct Medium {
  double sound_speed = 343.0;  ///< c, m/s
  double density = 1.21;       ///< rho, kg/m^3
  double impedance() const { return density * sound_speed; }  ///< rho c, Pa s/m (rayl)
};

/// Above this |beta| = rho c / |Z| a surface is treated as pressure release: admittance_from_impedance
/// refuses it (the Robin system's entries would be dominated by the -i k beta term; use bc
/// Dirichlet).
inline constexpr double kMaxAdmittance = 1e8;
/// SPL reference pressure in air, Pa.
inline constexpr double kReferencePressureAir = 20e-6;

/// InvalidArgument unless sound_speed and density are finite and > 0.
void validate(const Medium& m);
/// k = 2 pi f / c (1/m) for a frequency f in Hz (finite, > 0; InvalidArgument otherwise).
double wavenumber(double frequency_hz, const Medium& m);
/// dp/dn = i omega rho v_n per element (N values, Pa/m) for outward normal velocities v_n (m/s).
/// InvalidArgument for a bad frequency, medium or non-finite v_n.
std::vector<cplx> normal_velocity_data(const std::vector<cplx>& v_n, double frequency_hz, const Medium& m);
/// Outward normal velocity of a rigid body translating with velocity U (m/s, complex amplitude):
/// v_n = U . n per element (the oscillating-sphere / radiating-dipole source).
std::vector<cplx> rigid_translation_velocity(const Mesh& mesh, std::array<cplx, 3> U);
/// beta = rho c / Z: normalised admittance of a specific acoustic impedance Z (Pa s/m), finite,
/// nonzero, Re Z >= 0, |beta| <= kMaxAdmittance (InvalidArgument otherwise).
cplx admittance_from_impedance(cplx Z, const Medium& m);
/// 20 log10(|p| / (sqrt 2 p_ref)); -inf for p = 0. p_ref > 0.
double spl_db(cplx p, double p_ref = kReferencePressureAir);
/// 1/2 Re sum_e A_e p_e conj(v_e), v_e = dudn_e / (i omega rho): the power (W) through the
/// surface of a solution of the plan (u = p, dudn = dp/dn; P0 elements). InvalidArgument for a
/// solution of the wrong size or a bad frequency / medium.
double surface_power(const Mesh& mesh, const SurfaceSolution& s, double frequency_hz, const Medium& m);

/// A product rule on the unit sphere: Gauss-Legendre in cos(theta) (n_theta nodes) times the
/// trapezoid rule in phi (2 n_theta nodes); exact for spherical harmonics of degree < 2 n_theta.
struct SphereRule {
  std::vector<std::array<double, 3>> directions;  ///< unit vectors
  std::vector<double> weights;                    ///< sum = 4 pi
};
/// n_theta in [1, 2000] (InvalidArgument otherwise).
SphereRule sphere_rule(int n_theta);
/// The same product rule on the half sphere d[axis] > 0 (Gauss-Legendre in d[axis] on (0, 1),
/// trapezoid about the axis; weights sum to 2 pi): the far field above a ground plane, whose
/// image makes |p_inf|^2 smooth up to the plane, so the rule converges spectrally. axis 0, 1, 2.
SphereRule hemisphere_rule(int n_theta, int axis);
/// 1/(2 rho c) sum_j w_j |p_inf,j|^2 (W): the power of a far-field pattern p_inf (Pa m) sampled
/// on rule.directions. InvalidArgument when the sizes differ.
double far_field_power(const std::vector<cplx>& p_inf, const SphereRule& rule, const Medium& m);

}  // namespace elliptica::bem
