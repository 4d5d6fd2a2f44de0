// The free-space convolution of the truncated-kernel method (issue 31; Vico, Greengard &
// Ferrando, J. Comput. Phys. 323 (2016) 191-203): phi = G * rho for rho on a grid of M1 x M2 x M3
// points of spacing h (the domain L = M h per axis), G a radial Green's function given by the
// transform of its truncation at R (truncated_green.hpp), R >= the domain's diameter.
//
// Precomputation (once per grid and R): the truncated kernel's transform is sampled on an
// upsampled grid (N_a = s_a M_a points of spacing h per axis, s_a the smallest integer with
// N_a h >= L_a + R: its periodic images then stay beyond every separation in the domain), inverse
// transformed (c2r), cropped to the separations -M_a + 1 .. M_a - 1 per axis on the 2M-point
// zero-padded grid (index -M_a set to zero), and transformed forward (r2c). Every convolution is
// then an ordinary aperiodic convolution with 2x zero padding: FFT, multiply, IFFT.
// Cost: the precomputation one c2r of prod(s_a M_a) points (s = 3 for a cube: 27 M^3) and one r2c
// of 8 M^3; each convolution one r2c and one c2r of 8 M^3.
#pragma once

#include <array>
#include <complex>
#include <functional>
#include <vector>

namespace elliptica::ewald::detail {

class TruncatedConvolution {
 public:
  /// M: grid points per axis (>= 2); h: spacing per axis (> 0); hat(k, R): the radial transform;
  /// R: the truncation radius (>= the domain's diameter |M h|). Throws InvalidArgument on bad
  /// arguments, ResourceError beyond 2^31 upsampled points.
  TruncatedConvolution(const std::array<int, 3>& M, const std::array<double, 3>& h,
                       const std::function<double(double k, double R)>& hat, double R);
  /// phi_m = sum_m' K(m - m') rho_m' h1 h2 h3 on the M grid (row-major, index (i M2 + j) M3 + l):
  /// the free-space potential of the density rho, to the accuracy rho is resolved on the grid.
  std::vector<double> apply(const std::vector<double>& rho) const;
  /// The upsampling factors s_a the precomputation used.
  const std::array<int, 3>& upsampling() const { return s_; }

 private:
  std::array<int, 3> M_{}, s_{};
  std::array<double, 3> h_{};
  std::vector<double> khat_;  // real transform of the cropped kernel on the 2M grid, r2c layout ((2M1) (2M2) (M3 + 1))
};

/// The multiplier table of a free-space sum computed on a periodic grid (issue 31: 0P as 3P on
/// an extended box): the transform, over the r2c half spectrum (M1 M2 (M3/2+1) reals, index
/// (i M2 + j)(M3/2+1) + l), of the effective kernel whose transform is hat(kx, ky, kz) (for CNV:
/// the truncated Green's function's transform times the screening and the window deconvolution
/// 1 / w^(k)^2), band-limited by an upsampled grid of the same spacing (N_a >= M_a points, the
/// smallest FFT-friendly with N_a h_a >= M_a h_a / 2 + extent, `extent`: the distance beyond
/// which the effective kernel is negligible) and cropped to separations |m_a| < M_a / 2: the periodic convolution on the M
/// grid then equals the free-space one for separations below M_a h_a / 2 per axis.
/// axis_factor(a, k) (optional): a separable factor of the transform along axis a (the window's
/// 1 / w^(k_a)^2), evaluated once per upsampled index; the transform is then
/// hat(kx, ky, kz) f(0, kx) f(1, ky) f(2, kz). hat is called from `threads` threads at once.
/// periodic: axes along which the kernel is periodic with period M h (2P: x and y): there the
/// table is neither upsampled nor cropped.
/// odd: the kernel is real and odd (a derivative: its transform is i hat, hat odd in k); the table
/// then holds the imaginary part t of the cropped kernel's transform (the multiplier is i t).
/// Throws InvalidArgument for M < 2 or h <= 0, ResourceError beyond 2^31 upsampled points or the
/// memory limit (checked before allocating).
std::vector<double> periodic_kernel_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                          const std::function<double(double kx, double ky, double kz)>& hat,
                                          double extent, const std::function<double(int a, double k)>& axis_factor = {},
                                          int threads = 1, bool odd = false,
                                          const std::array<bool, 3>& periodic = {false, false, false});

}  // namespace elliptica::ewald::detail
