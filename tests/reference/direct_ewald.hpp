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
/// - Stresslet (Stokes double layer, no viscosity factor):
///   u_j(x) = 1/(8 pi) sum_p sum_n' T_jlm(x - y_n + pL) q_{n,l} nu_{n,m},
///   T_jlm(r) = -6 r_j r_l r_m / |r|^5, r = target - source. The lattice sum is only conditionally
///   convergent; the result is DEFINED as its Ewald sum with the k = 0 Fourier mode dropped (zero
///   mean over the box). That is what SE_unified_v2 / ParkiPy compute after removing the mode;
///   the dropped mode would be -(8 pi/V) sum_n (q_n.nu_n)(x - y_n) (not periodic). With this
///   definition the result does not depend on xi even when sum_n q_n.nu_n != 0 (the split's
///   difference kernels have Fourier transforms that vanish at k = 0). Example: constant density
///   e_j on a closed surface with outward normals gives u_j = 1 - phi inside and -phi outside,
///   phi = enclosed volume / V.
/// - StokesCombined: u = 1/(8 pi mu) sum S f + 1/(8 pi) sum T q nu, exactly the Stokeslet result
///   plus the Stresslet result (evaluated in one pass, accumulated separately, added at the end).
/// - The primed sum excludes the one singular term where the (wrapped) target coincides exactly
///   with a source for p = 0; this is the self-interaction when the targets are the sources.
///
/// Ewald split with parameter xi:
/// - Laplace   real  q erfc(xi r)/r,  Fourier (4 pi/V) sum_{k!=0} e^{-k^2/(4 xi^2)}/k^2 Re[S(k) e^{ikx}],
///   S(k) = sum_n q_n e^{-ik.y_n}, self -(2 xi/sqrt(pi)) q.
/// - Stokeslet real  S^R(r) = erfc(xi r)(I/r + r r^T/r^3) + (2 xi/sqrt(pi)) e^{-xi^2 r^2}(r r^T/r^2 - I),
///   Fourier (1/V) sum_{k!=0} B(k) F(k) e^{ikx}, B(k) = 8 pi (1 + k^2/(4xi^2)) e^{-k^2/(4xi^2)}
///   (k^2 I - k k^T)/k^4, self -(4 xi/sqrt(pi)) f.
/// - Stresslet real  u^R_j = A(r)(r.q)(r.nu) r_j + B(r)[(q.nu) r_j + (r.nu) q_j + (r.q) nu_j],
///   A = -(2/r^4)[3 erfc(xi r)/r + (2 xi/sqrt(pi))(3 + 2 xi^2 r^2) e^{-xi^2 r^2}],
///   B = (4 xi^3/sqrt(pi)) e^{-xi^2 r^2};  no self term (T^F is smooth and odd, T^F(0) = 0).
///   Fourier u^F_j = (1/V) sum_{k!=0} (+i)(-8 pi/k^4)(1 + k^2/(4xi^2)) e^{-k^2/(4xi^2)}
///   [-(k_m F_jm + k_m F_mj + k_j F_mm) k^2 + 2 k_j k_l k_m F_lm] e^{ik.x},
///   F_lm(k) = sum_n q_{n,l} nu_{n,m} e^{-ik.y_n}. The (+i) goes with r = target - source and
///   T(r) = (1/(2 pi)^3) int hat T(k) e^{ik.r} dk: from T_jlm = -delta_jm P_l + d_m S_jl + d_j S_ml
///   (P_l = 2 r_l/r^3, hat P = -8 pi i k/k^2, hat S = 8 pi (k^2 I - k k^T)/k^4),
///   hat T_jlm = (8 pi i/k^4)[k^2 (delta_jm k_l + delta_jl k_m + delta_lm k_j) - 2 k_j k_l k_m],
///   times the Hasimoto factor. Source of the split: /work/shared/design/FORMULAS.md (after
///   SE_unified_v2); the signs are checked by xi-independence, the free-space limit and the
///   double-layer jump (tests/test_ewald_reference.cpp).
/// Cutoffs: r_c = c/xi, k_c = 2 c xi with c = 7 by default (erfc(7) ~ 4e-23, e^{-49} ~ 5e-22),
/// every image within r_c and every k within k_c is summed; accumulation in long double.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace elliptica::testref {

enum class RefKernel { Laplace, Stokeslet, Stresslet, StokesCombined };

struct RefOptions {
  RefKernel kernel = RefKernel::Laplace;
  std::array<double, 3> box{1.0, 1.0, 1.0};
  double viscosity = 1.0;  ///< mu (stokeslet; also the stokeslet part of StokesCombined)
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

/// Classical Ewald sum. sources: Ns*3 values; targets: nullptr for "targets = sources"
/// (self-interaction excluded), else Nt*3 values. strengths, row-major, one row per source:
///   Laplace        Ns*1  (q)
///   Stokeslet      Ns*3  (f_x, f_y, f_z)
///   Stresslet      Ns*6  (q_x, q_y, q_z, nu_x, nu_y, nu_z)   (nu need not be a unit vector)
///   StokesCombined Ns*9  (f_x, f_y, f_z, q_x, q_y, q_z, nu_x, nu_y, nu_z)
/// values: (Nt,1) for Laplace, (Nt,3) velocity otherwise.
/// Throws std::invalid_argument on inconsistent sizes.
RefResult direct_ewald(const RefOptions& opt, const std::vector<double>& sources,
                       const std::vector<double>& strengths,
                       const std::vector<double>* targets = nullptr);

/// The automatic xi: balances the O(Ns Nt) real-space and O((Ns+Nt) K) Fourier work,
/// xi = (2 pi^3 Ns Nt / ((Ns + Nt) V^2))^(1/6)  (= sqrt(pi) (N/V^2)^(1/6) for Ns = Nt = N).
double balanced_xi(std::size_t ns, std::size_t nt, const std::array<double, 3>& box);

/// Number of strength values per source for a kernel (1, 3, 6 or 9; see direct_ewald).
int strength_components(RefKernel k);

// ---------------------------------------------------------------------------------------------
// Sphere quadrature (for double-layer identities).

/// nodes, normals: row-major (n,3); weights: (n). n = n_theta * n_phi, node (i, j) at row
/// i * n_phi + j.
struct SphereQuadrature {
  std::vector<double> nodes, normals, weights;
};

/// Tensor-product rule on the sphere |x - centre| = radius: Gauss-Legendre in t = cos(theta)
/// (n_theta nodes, computed by Newton on the three-term recurrence) times the periodic
/// trapezoidal rule in phi (n_phi nodes phi_j = 2 pi j / n_phi). Normals are the outward unit
/// normals, weights = radius^2 w_i (2 pi / n_phi), summing to 4 pi radius^2 (to rounding).
/// Exact for spherical harmonics of degree <= min(2 n_theta - 1, n_phi - 1).
/// Throws std::invalid_argument for n_theta < 1, n_phi < 1 or radius <= 0.
SphereQuadrature sphere_quadrature(int n_theta, int n_phi, double radius, std::array<double, 3> centre);

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
