// The truncated-kernel method's kernel table (issue 31; Vico, Greengard & Ferrando, J. Comput.
// Phys. 323 (2016) 191-203): a free-space (0P) sum evaluated as a periodic one on an extended
// grid, its multiplier the transform of the effective kernel cropped to the separations that
// occur (used by the plan's free_space_table, src/ewald/plan.cpp; docs/ewald.md section 9).
#pragma once

#include <array>
#include <functional>
#include <vector>

namespace elliptica::ewald::detail {

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
/// table is neither upsampled nor cropped, and the construction factors into one per periodic
/// mode (1P: a plane over the free axes, 2P: a line), each upsampled by its own reach:
/// mode_extent(|k_p|) (default: `extent`), so that the modes decaying fast across the free axes
/// (e^{-|k_p| rho}) need short grids and only the slowest need long ones.
/// odd: the kernel is real and odd (a derivative: its transform is i hat, hat odd in k); the table
/// then holds the imaginary part t of the cropped kernel's transform (the multiplier is i t).
/// parity: the kernel's parity along each axis, 0 even, 1 odd in k_a (then also in x_a), -1
/// unknown; with all three known (and M even) the table is built from one octant (0P) or each
/// periodic mode's half line (2P) / quadrant (1P) by DCT-I / DST-I transforms (FFTW REDFT00 /
/// RODFT00): 8x (0P) or 2x / 4x (2P / 1P) fewer points than the complex path, real transforms,
/// the same table to rounding. hat must have that parity (an odd table: an odd number of odd axes).
/// Throws InvalidArgument for M < 2 or h <= 0 or a parity that contradicts `odd`, ResourceError
/// beyond 2^31 upsampled points or the memory limit (checked before allocating).
std::vector<double> periodic_kernel_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                          const std::function<double(double kx, double ky, double kz)>& hat,
                                          double extent, const std::function<double(int a, double k)>& axis_factor = {},
                                          int threads = 1, bool odd = false,
                                          const std::array<bool, 3>& periodic = {false, false, false},
                                          const std::function<double(double kp)>& mode_extent = {},
                                          const std::array<int, 3>& parity = {-1, -1, -1});

}  // namespace elliptica::ewald::detail
