#pragma once
/// @file direct_ewald.hpp
/// Independent reference for the tests: the classical Ewald sum, evaluated directly (no grids,
/// no FFT, no window), with cutoffs so generous that both truncation errors are far below double
/// precision. Written from the formulas only; it shares no code with src/ewald.
///
/// Conventions (identical to include/elliptica/ewald/ewald.hpp):
/// - Box [0,L1) x [0,L2) x [0,L3), triply periodic; points anywhere (wrapped internally).
/// - Laplace, Gaussian units: phi(x) = sum_p sum_n' q_n / |x - y_n + pL|, tin-foil (k = 0
///   excluded) plus the neutralising background shift -pi Q_tot / (xi^2 V) (so the result does
///   not depend on xi). Field E = -grad phi.
/// - Stokeslet: u(x) = 1/(8 pi mu) sum_p sum_n' S(x - y_n + pL) f_n, S(r) = I/r + r r^T/r^3,
///   k = 0 excluded (Hasimoto).
/// - The primed sum excludes the one singular term where the (wrapped) target coincides exactly
///   with a source for p = 0; this is the self-interaction when the targets are the sources.
///
/// Ewald split with parameter xi:
/// - Laplace   real  q erfc(xi r)/r,  Fourier (4 pi/V) sum_{k!=0} e^{-k^2/(4 xi^2)}/k^2 Re[S(k) e^{ikx}],
///   S(k) = sum_n q_n e^{-ik.y_n}, self -(2 xi/sqrt(pi)) q.
/// - Stokeslet real  S^R(r) = erfc(xi r)(I/r + r r^T/r^3) + (2 xi/sqrt(pi)) e^{-xi^2 r^2}(r r^T/r^2 - I),
///   Fourier (1/V) sum_{k!=0} B(k) F(k) e^{ikx}, B(k) = 8 pi (1 + k^2/(4xi^2)) e^{-k^2/(4xi^2)}
///   (k^2 I - k k^T)/k^4, self -(4 xi/sqrt(pi)) f.
/// Cutoffs: r_c = c/xi, k_c = 2 c xi with c = 7 by default (erfc(7) ~ 4e-23, e^{-49} ~ 5e-22),
/// every image within r_c and every k within k_c is summed; accumulation in long double.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace elliptica::testref {

enum class RefKernel { Laplace, Stokeslet };

struct RefOptions {
  RefKernel kernel = RefKernel::Laplace;
  std::array<double, 3> box{1.0, 1.0, 1.0};
  double viscosity = 1.0;  ///< mu (stokeslet)
  bool field = false;      ///< Laplace: also compute E = -grad phi
  double xi = 0.0;         ///< splitting parameter; <= 0: balanced automatic choice
  double c = 7.0;          ///< truncation parameter: r_c = c/xi, k_c = 2 c xi
};

struct RefResult {
  std::vector<double> values;  ///< (Nt,1) potential or (Nt,3) velocity, row-major
  std::vector<double> field;   ///< (Nt,3) Laplace field if requested
  double xi = 0, rc = 0, kc = 0;
  std::size_t n_kvectors = 0;  ///< number of half-space k vectors summed
};

/// Classical Ewald sum. sources: Ns*3 values; strengths: Ns (Laplace) or Ns*3 (stokeslet);
/// targets: nullptr for "targets = sources" (self-interaction excluded), else Nt*3 values.
/// Throws std::invalid_argument on inconsistent sizes.
RefResult direct_ewald(const RefOptions& opt, const std::vector<double>& sources,
                       const std::vector<double>& strengths,
                       const std::vector<double>* targets = nullptr);

/// The automatic xi: balances the O(Ns Nt) real-space and O((Ns+Nt) K) Fourier work,
/// xi = (2 pi^3 Ns Nt / ((Ns + Nt) V^2))^(1/6)  (= sqrt(pi) (N/V^2)^(1/6) for Ns = Nt = N).
double balanced_xi(std::size_t ns, std::size_t nt, const std::array<double, 3>& box);

// ---------------------------------------------------------------------------------------------
// Test configurations shared by the test files (deterministic: fixed seeds, std::mt19937_64).

enum class Distribution { Uniform, Clustered, Surface };
std::string to_string(Distribution d);

/// n points, row-major (n,3):
/// Uniform   - uniform in [0,L1) x [0,L2) x [0,L3);
/// Clustered - Gaussian around the box centre, standard deviation 0.1 L_i per axis
///             (a few may fall outside the box; the sums are periodic);
/// Surface   - uniform on the sphere of radius 0.3 min(L_i) around the box centre.
std::vector<double> make_points(Distribution d, std::size_t n, const std::array<double, 3>& box,
                                std::uint64_t seed);

/// n*comps values uniform in [-1,1]; if neutral, the mean of each component is subtracted
/// (so the total charge / net force is zero to rounding).
std::vector<double> make_strengths(std::size_t n, int comps, std::uint64_t seed, bool neutral);

/// sqrt(mean(a^2)).
double rms(const std::vector<double>& a);
/// rms(a - b) (same sizes required).
double rms_diff(const std::vector<double>& a, const std::vector<double>& b);
/// rms(a - ref) / rms(ref).
double rel_rms_err(const std::vector<double>& a, const std::vector<double>& ref);

}  // namespace elliptica::testref
