// The spectral Ewald plan: validation, set_points, tuning (parameters from the tolerance) and the
// orchestration of the backend's stages P2P + P2G -> FFT -> CNV -> IFFT -> G2P + self (seed 000,
// algorithm 1). The stages themselves are in the backend (backend.hpp, cpu/).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>
#include <sstream>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/backend.hpp"
#include "ewald/cpu/truncated_conv.hpp"
#include "ewald/truncated_green.hpp"
#include "ewald/internal.hpp"
#include "ewald/kernel_traits.hpp"

namespace elliptica::ewald {

using namespace detail;

std::string to_string(Kernel k) {
  switch (k) {
    case Kernel::Laplace: return "laplace";
    case Kernel::Stokeslet: return "stokeslet";
    case Kernel::Stresslet: return "stresslet";
    case Kernel::StokesCombined: return "stokes-combined";
  }
  return "unknown";
}

Kernel kernel_from_string(const std::string& s) {
  for (Kernel k : {Kernel::Laplace, Kernel::Stokeslet, Kernel::Stresslet, Kernel::StokesCombined})
    if (s == to_string(k)) return k;
  throw InvalidArgument("unknown kernel '" + s + "' (expected 'laplace', 'stokeslet', 'stresslet' or 'stokes-combined')");
}

std::string to_string(Precision p) { return p == Precision::Single ? "single" : "double"; }

Precision precision_from_string(const std::string& s) {
  if (s == "single" || s == "float32") return Precision::Single;
  if (s == "double" || s == "float64") return Precision::Double;
  throw InvalidArgument("unknown precision '" + s + "' (expected 'single' or 'double')");
}

std::string to_string(FftPlanner p) {
  return p == FftPlanner::Estimate ? "estimate" : p == FftPlanner::Measure ? "measure" : "wisdom";
}

FftPlanner fft_planner_from_string(const std::string& s) {
  if (s == "estimate") return FftPlanner::Estimate;
  if (s == "measure") return FftPlanner::Measure;
  if (s == "wisdom") return FftPlanner::Wisdom;
  throw InvalidArgument("unknown FFT planner '" + s + "' (expected 'estimate', 'measure' or 'wisdom')");
}

std::string to_string(const Periodicity& p) {
  if (p[0] && p[1] && p[2]) return "3P";
  if (!p[0] && !p[1] && !p[2]) return "0P";
  if (p[0] && p[1] && !p[2]) return "2P";
  if (!p[0] && !p[1] && p[2]) return "1P";
  std::string s;
  for (int d = 0; d < 3; ++d)
    if (p[std::size_t(d)]) s += "xyz"[d];
  return s;
}

Periodicity periodicity_from_string(const std::string& s) {
  if (s == "3P" || s == "3p" || s == "xyz") return {true, true, true};
  if (s == "2P" || s == "2p") return {true, true, false};
  if (s == "1P" || s == "1p") return {false, false, true};
  if (s == "0P" || s == "0p" || s == "none") return {false, false, false};
  Periodicity p{false, false, false};
  bool ok = !s.empty() && s.size() <= 3;
  for (char c : s) {
    const int d = c == 'x' ? 0 : c == 'y' ? 1 : c == 'z' ? 2 : -1;
    if (d < 0 || p[std::size_t(d)]) ok = false;
    if (d >= 0) p[std::size_t(d)] = true;
  }
  if (!ok)
    throw InvalidArgument("unknown periodicity '" + s + "' (expected 3P, 2P (x, y periodic), 1P (z periodic), 0P, or the "
                          "periodic axes as letters such as 'xy', 'z' or 'none')");
  return p;
}

double single_precision_floor(const std::array<int, 3>& grid, std::size_t n_points) {
  const double u = std::ldexp(1.0, -24);
  const double lm = std::log2(std::max(2.0, double(grid[0]) * grid[1] * grid[2]));
  const double ln = std::log2(std::max<double>(2.0, double(n_points)));
  return 2.0 * u * std::sqrt(lm + ln);
}

int strength_components(Kernel k) {
  return k == Kernel::Laplace ? 1 : (k == Kernel::Stresslet ? 0 : 3);
}
bool has_double_layer(Kernel k) { return k == Kernel::Stresslet || k == Kernel::StokesCombined; }
int value_components(Kernel k) { return k == Kernel::Laplace ? 1 : 3; }

std::string Params::describe() const {
  std::ostringstream os;
  os.precision(6);
  os << "spectral Ewald parameters\n"
     << "  xi (splitting)        " << xi << "\n"
     << "  r_c (cutoff)          " << rc << "\n"
     << "  near-field cells      " << cells[0] << " x " << cells[1] << " x " << cells[2] << "\n"
     << "  FFT grid M            " << grid[0] << " x " << grid[1] << " x " << grid[2] << "\n"
     << "  grid spacing h        " << h[0] << ", " << h[1] << ", " << h[2] << "\n"
     << "  window support P      " << P << "\n"
     << "  Kaiser-Bessel beta    " << beta << "\n"
     << "  polynomial degree nu  " << poly_degree << "\n"
     << "  absolute RMS target   " << eps_abs << "\n";
  if (result_scale > 0)
    os << "  RMS of result (pilot) " << result_rms << " (relative tolerance scale " << result_scale << ")\n";
  os << "  estimated RMS error   " << est_total << " (real " << est_real << ", Fourier " << est_fourier << ", window "
     << est_window << ")\n";
  if (est_relative > 0) os << "  estimated relative    " << est_relative << "\n";
  if (field_eps_abs > 0) {
    os << "  field: absolute target " << field_eps_abs << ", estimated RMS error " << field_est_total;
    if (field_scale > 0) os << " (relative " << field_est_total / field_scale << ")";
    os << "\n";
  }
  return os.str();
}


namespace {

/// What the kernel's traits say, as values (for the parts of the plan that are not templates).
struct KernelInfo {
  int n_src = 1, n_grid = 1, n_out = 1, n_linear = 1;
  double final_scale = 1.0;
  std::vector<ErrorTerm> terms;
};
KernelInfo kernel_info(Kernel k, bool field) {
  return with_traits(k, field, [](auto tr) {
    using K = decltype(tr);
    KernelInfo i;
    i.n_src = K::n_src;
    i.n_grid = K::n_grid;
    i.n_out = K::n_out;
    i.n_linear = K::n_linear;
    i.final_scale = K::final_scale;
    i.terms.assign(K::errors.begin(), K::errors.end());
    return i;
  });
}

}  // namespace

namespace detail {

// 0P: CNV's multiplier table on the extended box (periodic_kernel_table): the effective kernel
// G_R^(k) e^{-k^2/(4 xi^2)} / w^(k)^2 with G_R^(k) = 8 pi sin^2(R k / 2) / k^2 the transform of
// 1/r truncated at R (Vico, Greengard & Ferrando, J. Comput. Phys. 323 (2016), eq. for the 3-D
// Laplace kernel; truncated_green.hpp), the window deconvolved before the crop (deconvolving a
// cropped kernel amplifies the crop's spectral tail: 5e-3 errors measured, docs/ewald.md). R: the
// box's half diagonal (the largest separation of grid values that interact) plus the screening's
// and the window's reach, so the smoothed truncation does not touch the data's separations.
//
// The stokeslet: the stokeslet itself truncated at R (truncated::stokeslet_3d), times Hasimoto's
// screening (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)}: 6 tables (xx, xy, xz, yy, yz, zz), each
// cropped on its own. (af Klinteberg, Shamshirgar & Tornberg, Res. Math. Sci. 4 (2017) truncate
// the biharmonic r instead, S = (I lap - grad grad) r; the layers that truncation leaves at r = R
// have strength O(R) and their band-limited tails cost 3 digits here (errors 1e-8 measured).)
//
// 2P / 1P: the table factors into one per periodic mode (periodic_kernel_table): a mode k_p != 0
// decays across the free axes as e^{-|k_p| rho} (times a polynomial for Stokes), so it needs no
// truncation, only an upsampled grid reaching decay / |k_p| beyond the crop (36 laplace, 40 the
// stokeslet: e^{-40} 41 = 2e-16); the zero mode k_p = 0 is the 1-D (2P) or 2-D (1P) problem
// across, with its divergent kernel truncated at R: 2P the sheet -2 pi |z| (charge; Lindbo &
// Tornberg, J. Chem. Phys. 136 (2012) 164111) or -4 pi |z| (I - e_z e_z^T) (force), exactly so
// for |z| < Z1 (the separations that occur plus the reach) and tapered smoothly to 0 by Z2 = R;
// 1P the line's -2 ln(rho / R) (charge) or -2 ln(rho / R) I_perp + 2 rho^ rho^^T, -4 ln(rho / R)
// (force; truncated::stokeslet_1p_zero), truncated at R = half the free axes' diagonal plus the
// reach (the constants -2 ln R, -4 ln R - 2 are added per target by the caller).
//
// The stresslet (and stokes-combined's double layer, after the stokeslet's 6): 10 odd tables of
// the fully symmetric T_jlm, by the same construction (the kernels at the end of this function).
std::shared_ptr<const std::vector<double>> free_space_table(Kernel kernel, bool field, const Periodicity& periodic,
                                                            const Params& p, const std::array<double, 3>& box,
                                                            int threads, double* R_out) {
  const double hmax = std::max({p.h[0], p.h[1], p.h[2]});
  const double reach = 7.0 / p.xi + p.P * hmax;  // the screening's reach (e^{-49}, times k^2 for Stokes); the window's
  double diag2 = 0;  // over the free axes: the truncation is along them only
  for (int d = 0; d < 3; ++d)
    if (!periodic[d]) diag2 += box[d] * box[d];
  const int n_periodic = int(periodic[0]) + int(periodic[1]) + int(periodic[2]);
  // 2P's zero mode: exactly the sheet kernel for |z| < Z1, tapered to 0 by Z2 (erfc over 12 widths
  // of 4 h: resolved by the grid's band). No constant: a constant c per unit charge would
  // multiply the spread charge, which is neutral only to the window's partition-of-unity error
  // (the hard-truncated -2 pi (|z| - R), c = 2 pi R, gave 3x eps at P = 7)
  double hfree = 0;
  for (int d = 0; d < 3; ++d)
    if (!periodic[d]) hfree = std::max(hfree, p.h[d]);
  const double Z1 = 0.5 * std::sqrt(diag2) + reach, wt = 4.0 * hfree, Zm = Z1 + 6 * wt, Z2 = Zm + 6 * wt;
  const double R = n_periodic == 2 ? Z2 : 0.5 * std::sqrt(diag2) + reach;
  const double decay = kernel == Kernel::Laplace ? 36.0 : 40.0;
  // the reach of a periodic mode across the free axes (periodic_kernel_table's mode_extent)
  auto mode_extent = [R, reach, decay](double kp) { return (kp > 0 ? decay / kp : R) + reach; };
  if (R_out) *R_out = R;
  const double i4xi2 = 1.0 / (4 * p.xi * p.xi), beta = p.beta;
  const std::array<double, 3> a{0.5 * p.P * p.h[0], 0.5 * p.P * p.h[1], 0.5 * p.P * p.h[2]};
  auto deconvolve = [a, beta](int d, double k) {
    const double w = window_hat(k, a[std::size_t(d)], beta);
    return 1.0 / (w * w);
  };
  // the tapered sheet's transform 2 int_0^Z2 (-2 pi z) tau(z) cos(k z) dz, tau = erfc((z - Zm)/wt)/2,
  // by 16-point Gauss-Legendre on panels of width <= min(wt, 1/k) / 2
  auto sheet = [Zm, Z2, wt](double k) {
    static const double gx[8] = {0.0950125098376374, 0.2816035507792589, 0.4580167776572274, 0.6178762444026438,
                                 0.7554044083550030, 0.8656312023878318, 0.9445750230732326, 0.9894009349916499};
    static const double gw[8] = {0.1894506104550685, 0.1826034150449236, 0.1691565193950025, 0.1495959888165767,
                                 0.1246289712555339, 0.0951585116824928, 0.0622535239386479, 0.0271524594117541};
    const double width = 0.5 * std::min(wt, k > 0 ? 1.0 / k : wt);
    const int panels = std::max(1, static_cast<int>(std::ceil(Z2 / width)));
    const double hw = 0.5 * Z2 / panels;
    double s = 0;
    for (int q = 0; q < panels; ++q) {
      const double c = (2 * q + 1) * hw;
      for (int g = 0; g < 8; ++g)
        for (int sg = -1; sg <= 1; sg += 2) {
          const double z = c + sg * hw * gx[g];
          s += gw[g] * z * 0.5 * std::erfc((z - Zm) / wt) * std::cos(k * z);
        }
    }
    return -4.0 * kPi * s * hw;
  };
  // the wavenumber along the periodic axes (kp) and across them (kf): 0P laplace_3d; 2P / 1P a
  // mode kp != 0 untruncated (4 pi / k^2), the zero mode the tapered sheet (2P) or the line's
  // log truncated at R (1P: 4 pi (1 - J0(kf R)) / kf^2, truncated::laplace_1p_zero)
  auto pot = [R, i4xi2, n_periodic, periodic, sheet](double kx, double ky, double kz) {
    const double k[3] = {kx, ky, kz};
    double kp2 = 0, kf2 = 0;
    for (int d = 0; d < 3; ++d) (periodic[std::size_t(d)] ? kp2 : kf2) += k[d] * k[d];
    const double screen = std::exp(-(kp2 + kf2) * i4xi2);
    if (n_periodic == 0) return truncated::laplace_3d(std::sqrt(kf2), R) * screen;
    if (kp2 > 0) return 4 * kPi / (kp2 + kf2) * screen;
    return (n_periodic == 2 ? sheet(std::sqrt(kf2)) : truncated::laplace_1p_zero(std::sqrt(kf2), R)) * screen;
  };
  // the Laplace field E = -grad phi: 3 tables of the odd kernels -d_a G (transform -i k_a G^),
  // each cropped on its own (i k times the potential's cropped table would differentiate the
  // crop); the stokeslet's pressure uses the same 3 (p = (1 / 4 pi) sum_a f_a E_a)
  auto add_field_tables = [&](std::vector<double>& all) {
    for (int d = 0; d < 3; ++d) {
      const std::vector<double> t = periodic_kernel_table(
          p.grid, p.h,
          [pot, d](double kx, double ky, double kz) {
            const double k[3] = {kx, ky, kz};
            return -k[d] * pot(kx, ky, kz);
          },
          R + reach, deconvolve, threads, true, periodic, mode_extent,
          std::array<int, 3>{int(d == 0), int(d == 1), int(d == 2)});
      all.insert(all.end(), t.begin(), t.end());
    }
  };
  if (kernel == Kernel::Laplace) {
    auto all = std::make_shared<std::vector<double>>(
        periodic_kernel_table(p.grid, p.h, pot, R + reach, deconvolve, threads, false, periodic, mode_extent, {0, 0, 0}));
    if (field) add_field_tables(*all);
    return all;
  }
  // the stokeslet's 6 components (and the pressure's 3), the stresslet's 10
  const std::size_t n = std::size_t(p.grid[0]) * std::size_t(p.grid[1]) * std::size_t(p.grid[2] / 2 + 1);
  const bool single = kernel == Kernel::Stokeslet || kernel == Kernel::StokesCombined;
  const bool dbl = kernel == Kernel::Stresslet || kernel == Kernel::StokesCombined;
  auto all = std::make_shared<std::vector<double>>();
  all->reserve(((single ? 6 : 0) + (field ? 3 : 0) + (dbl ? 10 : 0)) * n);
  constexpr int comp[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
  if (single)
  for (const auto& c : comp) {
    const int ci = c[0], cj = c[1];
    const std::vector<double> t = periodic_kernel_table(
        p.grid, p.h,
        [R, i4xi2, ci, cj, n_periodic, periodic, sheet](double kx, double ky, double kz) {
          const double k[3] = {kx, ky, kz};
          const double k2 = kx * kx + ky * ky + kz * kz;
          const double screen = (1 + k2 * i4xi2) * std::exp(-k2 * i4xi2);  // Hasimoto
          if (n_periodic == 0) {
            double sd, skk;
            truncated::stokeslet_3d(std::sqrt(k2), R, sd, skk);
            const double t = (ci == cj ? sd : 0.0) - (k2 > 0 ? skk * k[ci] * k[cj] / k2 : 0.0);
            return screen * t;
          }
          double kp2 = 0;  // along the periodic axes
          for (int d = 0; d < 3; ++d)
            if (periodic[std::size_t(d)]) kp2 += k[d] * k[d];
          if (kp2 > 0)  // a mode that decays across the free axes (no truncation: mode_extent)
            return screen * 8 * kPi * ((ci == cj ? 1.0 : 0.0) - k[ci] * k[cj] / k2) / k2;
          if (n_periodic == 2)  // 2P, k_par = 0: the force sheet's shear flow -4 pi |z| (I - e_z e_z^T)
            return ci == cj && periodic[std::size_t(ci)] ? screen * 2 * sheet(std::sqrt(k2)) : 0.0;
          // 1P, k_z = 0: the 2-D flow of the line of forces (truncated::stokeslet_1p_zero)
          double across_I, across_kk, along;
          truncated::stokeslet_1p_zero(std::sqrt(k2), R, across_I, across_kk, along);
          if (periodic[std::size_t(ci)] || periodic[std::size_t(cj)])
            return ci == cj ? screen * along : 0.0;
          return screen * ((ci == cj ? across_I : 0.0) + (k2 > 0 ? across_kk * k[ci] * k[cj] / k2 : 0.0));
        },
        R + reach, deconvolve, threads, false, periodic, mode_extent,
        std::array<int, 3>{int((ci == 0) != (cj == 0)), int((ci == 1) != (cj == 1)), int((ci == 2) != (cj == 2))});
    all->insert(all->end(), t.begin(), t.end());
  }
  if (field) add_field_tables(*all);  // the pressure
  if (!dbl) return all;
  // the stresslet T_jlm = -6 x_j x_l x_m / |x|^5: 10 odd tables (the fully symmetric tensor's
  // xxx, xxy, xxz, xyy, xyz, xzz, yyy, yyz, yzz, zzz; multiplier i t), each cropped on its own,
  // times Hasimoto's screening as the 3P multiplier (StressletTraits::fourier). 0P:
  // truncated::stresslet_3d; a periodic mode k_p != 0: the 3P multiplier (8 pi / k)[(delta k^)_sym -
  // 2 k^k^k^]; 2P k_par = 0: the dipole sheet's -4 pi sign(z) / A on (z, z, z) and (z, a, a), a
  // periodic (the sheet integral of T; twice the derivative of the tapered charge sheet: i k_z 2
  // sheet(k_z)); 1P k_z = 0: the line's -8 rho rho rho / rho^4 and -4 rho_j / rho^2 on (j, z, z)
  // truncated at R (truncated::stresslet_1p_zero). No constants: T is homogeneous of degree -2.
  constexpr int trip[10][3] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 1}, {0, 1, 2},
                               {0, 2, 2}, {1, 1, 1}, {1, 1, 2}, {1, 2, 2}, {2, 2, 2}};
  for (const auto& t3 : trip) {
    const int tj = t3[0], tl = t3[1], tm = t3[2];
    const std::vector<double> t = periodic_kernel_table(
        p.grid, p.h,
        [R, i4xi2, tj, tl, tm, n_periodic, periodic, sheet](double kx, double ky, double kz) {
          const double k[3] = {kx, ky, kz};
          const double k2 = kx * kx + ky * ky + kz * kz;
          if (k2 == 0.0) return 0.0;  // odd
          const double kk = std::sqrt(k2), kh[3] = {kx / kk, ky / kk, kz / kk};
          const double screen = (1 + k2 * i4xi2) * std::exp(-k2 * i4xi2);  // Hasimoto
          const double sym = (tj == tl ? kh[tm] : 0.0) + (tj == tm ? kh[tl] : 0.0) + (tl == tm ? kh[tj] : 0.0);
          const double kkk = kh[tj] * kh[tl] * kh[tm];
          if (n_periodic == 0) {
            double ta, tb;
            truncated::stresslet_3d(kk, R, ta, tb);
            return screen * (ta * kkk + tb * sym);
          }
          double kp2 = 0;
          for (int d = 0; d < 3; ++d)
            if (periodic[std::size_t(d)]) kp2 += k[d] * k[d];
          if (kp2 > 0) return screen * 8 * kPi / kk * (sym - 2 * kkk);
          const int idx[3] = {tj, tl, tm};
          int nper = 0, first_free = -1;
          for (int q : idx) {
            if (periodic[std::size_t(q)])
              ++nper;
            else if (first_free < 0)
              first_free = q;
          }
          if (n_periodic == 2) {  // the free axis f: (f, f, f) and (f, a, a)
            const int f = !periodic[0] ? 0 : !periodic[1] ? 1 : 2;
            bool on = nper == 0;
            if (nper == 2) {
              int a = -1, b = -1;
              for (int q : idx)
                if (q != f) (a < 0 ? a : b) = q;
              on = a == b;
            }
            return on ? screen * 2 * k[f] * sheet(std::abs(k[f])) : 0.0;
          }
          // 1P, k_z = 0 (kh across the line)
          double s_sym, s_kkk, s_zz;
          truncated::stresslet_1p_zero(kk, R, s_sym, s_kkk, s_zz);
          if (nper == 0) return screen * (s_sym * sym + s_kkk * kkk);
          if (nper == 2) return screen * s_zz * kh[first_free];
          return 0.0;
        },
        R + reach, deconvolve, threads, true, periodic, mode_extent,
        std::array<int, 3>{(int(tj == 0) + int(tl == 0) + int(tm == 0)) % 2, (int(tj == 1) + int(tl == 1) + int(tm == 1)) % 2,
                           (int(tj == 2) + int(tl == 2) + int(tm == 2)) % 2});
    all->insert(all->end(), t.begin(), t.end());
  }
  return all;
}

}  // namespace detail

namespace {

double rms_of(const std::vector<double>& v, int comps, int c0, int nc) {
  // RMS over points of the Euclidean norm of components [c0, c0+nc).
  const std::size_t n = v.size() / comps;
  if (n == 0) return 0;
  double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (int c = c0; c < c0 + nc; ++c) s += v[i * comps + c] * v[i * comps + c];
  return std::sqrt(s / n);
}

}  // namespace

/// The parameters and the prepared backend, immutable once made (shared by concurrent evaluations).
struct Tuned {
  Params params;      // plan units: lengths / ls, strengths / qscale
  Params reported;    // caller units
  Window window;
  std::shared_ptr<const Backend> backend;
  double qscale = 1;  // strength scale at tuning (an absolute tolerance depends on it)
  std::size_t ns = 0, nt = 0;
  double rho[2] = {0, 0};
  std::array<double, 3> box{1, 1, 1};  // the FFT grid's box (plan units): Options::box, or 0P's extended box
  std::shared_ptr<const std::vector<double>> table;  // 0P: CNV's multiplier table (free_space_table), else null
};

struct EwaldPlan::Impl {
  // Lengths are computed in units of ls, a power of two (so exact) chosen when the box is far
  // from unit size: the sums scale as phi(s x; s L) = phi(x; L) / s (stokeslet alike; the
  // stresslet as 1/s^2, so its dipoles are divided by ls as well), E as 1/s^2, and intermediate
  // quantities such as (h1 h2 h3)^2 / V or 1/k^4 then stay far from overflow and underflow for
  // every admissible box (lengths in [1e-100, 1e100]).
  Options user;  // as given (options())
  Options opt;   // the same with box, xi and rc in units of ls (used everywhere below)
  double ls = 1.0;
  int threads = 1;
  KernelInfo info;
  bool have_points = false;
  PointSet pts;
  mutable std::mutex mu;                       // guards `tuned` and `recheck`
  mutable std::shared_ptr<const Tuned> tuned;  // null: not tuned
  mutable bool recheck = false;                // points changed: re-check the density at the next evaluate
  std::vector<std::array<std::int64_t, 2>> exclusions;  // excluded source pairs (Laplace, targets = sources)
  // 0P / 2P (a free axis): along the free axes the points' bounding box in plan units (set_points
  // shifts it to the origin), along the periodic axes the period
  bool free = false;
  Periodicity periodic{true, true, true};
  std::array<double, 3> extent{0, 0, 0};
  // the points' volume (0P, 2P: the error model's mean density): periodic axes' periods times the
  // free axes' extents (each at least a quarter of the longest)
  double data_volume() const;

  // Values (ns, n_src) in plan units, caller order; qscale: the power of two they were divided by.
  // Returns false when all strengths are zero.
  bool pack(const Densities& d, std::vector<double>& v, double& qscale) const;
  double density(const std::vector<double>& v, int layer, const std::array<double, 3>& box) const;
  // The box the tuner sees: Options::box (3P), or in 0P about the extended box
  std::array<double, 3> tuner_box() const;
  // The box whose cells measure the strengths' density: Options::box (3P); with free axes the
  // points' extent along them (at least 1/20 of the longest side: a sheet is counted that thick)
  std::array<double, 3> density_box() const;
  // 0P: the extended box for parameters p (their spacing h kept), p's grid and cells set for it
  std::array<double, 3> fit_free_box(Params& p) const;
  // 0P: whether tuned parameters still hold the points' bounding box
  bool free_box_holds(const Params& p, const std::array<double, 3>& box) const;
  double source_weight(const std::vector<double>& v, std::size_t i, int layer) const;
  std::shared_ptr<const Tuned> tune(const std::vector<double>& v, double qscale, StageTimes& times) const;
  std::shared_ptr<const Tuned> state(const std::vector<double>& v, double qscale, StageTimes& times) const;
  // pilot: the tuner's pilot evaluation (FFTW_ESTIMATE whatever fft_planner says)
  std::unique_ptr<Backend> prepare(const Params& p, const Window& w, const std::array<double, 3>& box,
                                   std::shared_ptr<const std::vector<double>> table, bool pilot = false) const;
  // far_energy: the backend's Parseval energy (NaN unless the potential is left out)
  void run(const Backend& b, const std::vector<double>& v, std::vector<double>& out, StageTimes& times,
           std::size_t* coincident, P2PCounts* counts = nullptr, double* far_energy = nullptr) const;
  Params report(const Params& p, double qscale) const;
  void validate(const Densities& d) const;
  // Removes the direct interaction of excluded pairs from out (plan units, (ns, n_out)).
  void exclude(const std::vector<double>& v, std::vector<double>& out, const std::array<double, 3>& box) const;
};

namespace {
std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

void validate_options(const Options& o) {
  for (int d = 0; d < 3; ++d)
    if (!(o.box[d] >= 1e-100 && o.box[d] <= 1e100))
      throw InvalidArgument("box length L" + std::to_string(d + 1) + " must be positive, finite and in [1e-100, 1e100], got " +
                            num(o.box[d]));
  if (!std::isfinite(o.tolerance) || !(o.tolerance > 0) || !(o.tolerance < 1))
    throw InvalidArgument("tolerance eps must satisfy 0 < eps < 1, got " + num(o.tolerance));
  if (o.tolerance_kind == ToleranceKind::Relative && o.tolerance < 1e-14)
    throw InvalidArgument("relative tolerance " + num(o.tolerance) +
                          " is below double-precision round-off (use eps >= 1e-14)");
  if (!(o.viscosity > 0) || !std::isfinite(o.viscosity))
    throw InvalidArgument("viscosity mu must be positive and finite, got " + num(o.viscosity));
  if (o.compute_field && o.kernel != Kernel::Laplace)
    throw InvalidArgument("the field (compute_field) is only available for the laplace kernel");
  if (o.compute_pressure && o.kernel != Kernel::Stokeslet)
    throw InvalidArgument("the pressure (compute_pressure) is only available for the stokeslet kernel");
  if (o.compute_energy && o.kernel != Kernel::Laplace)
    throw InvalidArgument("the energy and forces (compute_energy) are only available for the laplace kernel");
  if (!o.compute_potential && !(o.kernel == Kernel::Laplace && (o.compute_field || o.compute_energy)))
    throw InvalidArgument("the potential can only be left out (compute_potential = false) by the laplace kernel with the "
                          "field or the energy and forces (compute_field or compute_energy): otherwise nothing is left "
                          "to compute");
  if (o.stresslet_zero_mode && !has_double_layer(o.kernel))
    throw InvalidArgument("the k = 0 term (stresslet_zero_mode) is only defined for the stresslet and stokes-combined kernels");
  if (o.threads < 0 || o.threads > 1024)
    throw InvalidArgument("threads must be in [0, 1024] (0 = all available), got " + std::to_string(o.threads));
  const Periodicity& per = o.periodicity;
  if (!is_triply_periodic(per)) {
    if (o.stresslet_zero_mode)
      throw InvalidArgument("the k = 0 term (stresslet_zero_mode) is a 3P term; with periodicity " + to_string(per) +
                            " the stresslet's zero mode is the free axes' own (the dipole sheet's or line's flow, "
                            "always included)");
    if (o.grid)
      throw InvalidArgument("periodicity " + to_string(per) + " takes no grid override: the FFT grid along a free axis "
                            "follows from the points' extent and the grid spacing the tolerance (or the xi override) "
                            "needs");
    if (o.xi && (!(*o.xi > 0) || !std::isfinite(*o.xi)))
      throw InvalidArgument("xi override must be positive and finite, got xi = " + num(*o.xi));
    if (o.rc && (!(*o.rc > 0) || !std::isfinite(*o.rc)))
      throw InvalidArgument("rc override must be positive and finite, got rc = " + num(*o.rc));
  }
  // (2P: box[2] is not used; the checks below for 3P only)
  const double Lmin = std::min({o.box[0], o.box[1], o.box[2]});
  const double Lmax = std::max({o.box[0], o.box[1], o.box[2]});
  if (o.xi && is_triply_periodic(per) && (!(*o.xi * Lmax >= 0.05) || !(*o.xi * Lmin <= 1e6)))
    throw InvalidArgument("xi override must satisfy 0.05 <= xi max(L) and xi min(L) <= 1e6, got xi = " + num(*o.xi));
  if (o.rc && is_triply_periodic(per) && (!(*o.rc > 0) || !(*o.rc <= Lmax * (1 + 1e-12)) || !(*o.rc >= 1e-6 * Lmin)))
    throw InvalidArgument("rc override must satisfy 1e-6 min(L) <= rc <= max(L) = " + num(Lmax) + ", got " +
                          num(*o.rc));
  if (o.grid)
    for (int d = 0; d < 3; ++d)
      if ((*o.grid)[d] < 4 || (*o.grid)[d] > 8192)
        throw InvalidArgument("grid override M must be in [4, 8192] per axis, got " + std::to_string((*o.grid)[d]));
  if (o.window_support && (*o.window_support < 2 || *o.window_support > kMaxWindowSupport))
    throw InvalidArgument("window support P override must be in [2, 32], got " + std::to_string(*o.window_support));
  if (o.grid && o.window_support &&
      *o.window_support > std::min({(*o.grid)[0], (*o.grid)[1], (*o.grid)[2]}))
    throw InvalidArgument("window support P must not exceed the grid size M");
  if (o.window_shape && (!(*o.window_shape > 0) || !(*o.window_shape <= 300)))
    throw InvalidArgument("window shape beta override must be in (0, 300], got " + num(*o.window_shape));
  if (o.poly_degree && (*o.poly_degree < 1 || *o.poly_degree > 30))
    throw InvalidArgument("polynomial degree override must be in [1, 30], got " + std::to_string(*o.poly_degree));
}

void validate_points(ConstMatrixView<double> a, const char* what, const std::array<double, 3>& box,
                     bool allow_empty = false) {
  if (a.rows == 0 && !allow_empty) throw InvalidArgument(std::string(what) + ": no points (N = 0)");
  if (a.rows == 0 && (a.cols == 3 || a.cols == 0)) return;
  if (a.cols != 3)
    throw InvalidArgument(std::string(what) + " must have shape (N,3), got (" + std::to_string(a.rows) + "," +
                          std::to_string(a.cols) + ")");
  if (!a.data) throw InvalidArgument(std::string(what) + ": null data");
  require_finite(a, what);
  for (int d = 0; d < 3; ++d) {
    const double lim = kMaxBoxLengthsFromBox * box[d];
    for (std::size_t i = 0; i < a.rows; ++i)
      if (!(std::abs(a(i, d)) <= lim))
        throw InvalidArgument(std::string(what) + ": coordinate " + "xyz"[d] + " of point " + std::to_string(i) + " is " +
                              num(a(i, d)) + ", more than " + num(kMaxBoxLengthsFromBox) + " box lengths (L" +
                              std::to_string(d + 1) + " = " + num(box[d]) +
                              ") from the box: in double precision its periodic position is not determined");
  }
}

void validate_values(ConstMatrixView<double> v, std::size_t rows, std::size_t cols, const std::string& what,
                     const std::string& kernel) {
  if (v.rows != rows && v.cols == cols)
    throw InvalidArgument("the number of " + what + " (" + std::to_string(v.rows) + ") does not match the number of sources (" +
                          std::to_string(rows) + ")");
  if (v.rows != rows || v.cols != cols || (!v.data && rows * cols > 0))
    throw InvalidArgument(what + " for the " + kernel + " kernel must have shape (" + std::to_string(rows) + "," +
                          std::to_string(cols) + ")" + (cols == 1 ? " or (" + std::to_string(rows) + ",)" : "") +
                          " (one row per source), got (" + std::to_string(v.rows) + "," + std::to_string(v.cols) + ")");
  require_finite(v, what);
}

}  // namespace

EwaldPlan::EwaldPlan(const Options& opts) : impl_(std::make_unique<Impl>()) {
  validate_options(opts);
  auto& I = *impl_;
  I.user = opts;
  I.opt = opts;
  const double Lmax = std::max({opts.box[0], opts.box[1], opts.box[2]});
  if (Lmax > 0x1p20 || Lmax < 0x1p-20) I.ls = std::ldexp(1.0, std::ilogb(Lmax));
  for (double& L : I.opt.box) L /= I.ls;
  if (I.opt.xi) *I.opt.xi *= I.ls;
  if (I.opt.rc) *I.opt.rc /= I.ls;
  I.threads = opts.threads > 0 ? opts.threads : omp_get_max_threads();
  I.free = !is_triply_periodic(opts.periodicity);
  I.periodic = opts.periodicity;
  // the second quantity: the Laplace field (also for forces = q E) or the stokeslet's pressure
  I.opt.compute_field = opts.compute_field || opts.compute_energy || opts.compute_pressure;
  I.info = kernel_info(opts.kernel, I.opt.compute_field);
}
EwaldPlan::~EwaldPlan() = default;
EwaldPlan::EwaldPlan(EwaldPlan&&) noexcept = default;
EwaldPlan& EwaldPlan::operator=(EwaldPlan&&) noexcept = default;

const Options& EwaldPlan::options() const { return impl_->user; }
Params EwaldPlan::params() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->tuned ? impl_->tuned->reported : Params{};
}
void EwaldPlan::retune() {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->tuned.reset();
}

void EwaldPlan::set_points(ConstMatrixView<double> sources, std::optional<ConstMatrixView<double>> targets,
                           std::optional<ConstMatrixView<double>> normals) {
  auto& I = *impl_;
  const std::string kname = to_string(I.user.kernel);
  // 0P: any finite coordinates up to 1e100 (the box is not used); 3P: within 1e15 box lengths
  // (2P: z like 0P, x and y within 1e15 periods)
  std::array<double, 3> vbox = I.user.box;
  for (int d = 0; d < 3; ++d)
    if (!I.periodic[d]) vbox[d] = 1e85;
  validate_points(sources, "sources", vbox);
  if (targets) validate_points(*targets, "targets", vbox, true);
  if (has_double_layer(I.user.kernel)) {
    if (!normals)
      throw InvalidArgument("the " + kname + " kernel needs the normals nu (N,3) of the sources (set_points(..., normals))");
    validate_values(*normals, sources.rows, 3, "normals", kname);
  } else if (normals) {
    throw InvalidArgument("normals are only used by the stresslet and stokes-combined kernels, not " + kname);
  }
  PointSet p;
  p.ns = sources.rows;
  p.separate = targets.has_value();
  p.nt = targets ? targets->rows : sources.rows;
  // 0P: the points' bounding box [lo, hi] (sources and targets), its longest side the length
  // unit's reference (ls as in the constructor); the points are shifted to put lo at the origin
  std::array<double, 3> lo{0, 0, 0}, extent{0, 0, 0};
  double ls = I.ls;
  if (I.free) {
    std::array<double, 3> hi;
    for (int d = 0; d < 3; ++d) lo[d] = hi[d] = sources(0, d);
    // (periodic axes: lo, hi unused; extent = the period)
    for (const ConstMatrixView<double>* a : {&sources, targets ? &*targets : nullptr}) {
      if (!a) continue;
      for (std::size_t i = 0; i < a->rows; ++i)
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], (*a)(i, d));
          hi[d] = std::max(hi[d], (*a)(i, d));
        }
    }
    double Dmax = 0;
    for (int d = 0; d < 3; ++d) Dmax = std::max(Dmax, I.periodic[d] ? I.user.box[d] : hi[d] - lo[d]);
    if (!(Dmax > 0)) Dmax = std::max({std::abs(lo[0]), std::abs(lo[1]), std::abs(lo[2]), 1.0});  // one point
    ls = (Dmax > 0x1p20 || Dmax < 0x1p-20) ? std::ldexp(1.0, std::ilogb(Dmax)) : 1.0;
    for (int d = 0; d < 3; ++d)
      extent[d] = I.periodic[d] ? I.user.box[d] / ls : std::max((hi[d] - lo[d]) / ls, 1e-6 * Dmax / ls);
  }
  auto wrap = [&](ConstMatrixView<double> a, std::vector<double>& out) {
    out.resize(a.rows * 3);
    for (std::size_t i = 0; i < a.rows; ++i)
      for (int d = 0; d < 3; ++d)
        out[3 * i + d] = I.periodic[d] ? wrap_into_box(a(i, d) / ls, I.user.box[d] / ls)  // ls: a power of two
                                       : (a(i, d) - lo[d]) / ls;
  };
  wrap(sources, p.src);
  if (targets) wrap(*targets, p.trg);
  if (normals) p.normals.assign(normals->data, normals->data + normals->size());
  std::lock_guard<std::mutex> lk(I.mu);
  if (I.free) {
    if (ls != I.ls) I.tuned.reset();  // parameters in other units
    I.ls = ls;
    I.extent = extent;
    for (int d = 0; d < 3; ++d) I.opt.box[d] = I.user.box[d] / ls;
    if (I.user.xi) I.opt.xi = *I.user.xi * ls;
    if (I.user.rc) I.opt.rc = *I.user.rc / ls;
  }
  if (I.tuned) {
    const auto ratio = [](double a, double b) { return std::max(a, b) / std::max(std::min(a, b), 1.0); };
    if (ratio(double(p.ns), double(I.tuned->ns)) > 2.0 || ratio(double(p.nt), double(I.tuned->nt)) > 2.0)
      I.tuned.reset();
    // 0P: the extended box must still hold the points' bounding box (else a new grid)
    else if (I.free && !I.free_box_holds(I.tuned->params, I.tuned->box))
      I.tuned.reset();
  }
  I.recheck = true;  // the backend holds the old points: rebuilt at the next evaluate
  I.pts = std::move(p);
  I.exclusions.clear();
  I.have_points = true;
}

void EwaldPlan::set_exclusions(const std::vector<std::array<std::int64_t, 2>>& pairs) {
  auto& I = *impl_;
  if (I.user.kernel != Kernel::Laplace)
    throw InvalidArgument("exclusions are only defined for the laplace kernel, not " + to_string(I.user.kernel));
  if (!I.have_points) throw InvalidArgument("set_exclusions: no points: call set_points(sources) first");
  if (I.pts.separate)
    throw InvalidArgument("exclusions need the targets to be the sources (set_points without targets)");
  const auto n = static_cast<std::int64_t>(I.pts.ns);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [i, j] = pairs[k];
    if (i < 0 || j < 0 || i >= n || j >= n)
      throw InvalidArgument("exclusion " + std::to_string(k) + " (" + std::to_string(i) + ", " + std::to_string(j) +
                            ") names a source index outside [0, " + std::to_string(n) + ")");
    if (i == j)
      throw InvalidArgument("exclusion " + std::to_string(k) + " pairs source " + std::to_string(i) +
                            " with itself (the self-interaction is always excluded)");
  }
  I.exclusions = pairs;
}

void EwaldPlan::Impl::exclude(const std::vector<double>& v, std::vector<double>& out,
                              const std::array<double, 3>& box) const {
  // Nearest periodic image of y_i - y_j (wrapped coordinates, per axis). A coincident pair had
  // its singular term excluded in P2P already.
  const int co = info.n_out, ns = info.n_src;
  const bool field = opt.compute_field;
  // (0P: the extended box is over twice the points' extent, so the nearest image is the pair itself)
  const double Lmax = std::max({box[0], box[1], box[2]});
  for (const auto& [i, j] : exclusions) {
    double r[3], r2 = 0;
    for (int d = 0; d < 3; ++d) {
      const double L = box[d];
      double x = pts.src[3 * i + d] - pts.src[3 * j + d];
      x -= L * std::nearbyint(x / L);
      r[d] = x;
      r2 += x * x;
    }
    if (r2 < (kCoincidenceRelative * Lmax) * (kCoincidenceRelative * Lmax)) continue;
    const double ir = 1.0 / std::sqrt(r2), ir3 = ir * ir * ir;
    const double qi = v[std::size_t(i) * ns], qj = v[std::size_t(j) * ns];
    out[std::size_t(i) * co] -= qj * ir;
    out[std::size_t(j) * co] -= qi * ir;
    if (field)
      for (int d = 0; d < 3; ++d) {  // E at y_i from q_j is q_j r / |r|^3 with r = y_i - y_j
        out[std::size_t(i) * co + 1 + d] -= qj * r[d] * ir3;
        out[std::size_t(j) * co + 1 + d] += qi * r[d] * ir3;
      }
  }
}

void EwaldPlan::Impl::validate(const Densities& d) const {
  const Kernel k = user.kernel;
  const std::string kname = to_string(k);
  if (!have_points) throw InvalidArgument("evaluate: no points: call set_points(sources[, targets][, normals]) first");
  if (user.compute_energy && pts.separate)
    throw InvalidArgument("the energy and forces (compute_energy) need the targets to be the sources");
  const int nsc = strength_components(k);
  if (nsc > 0)
    validate_values(d.strengths, pts.ns, nsc, k == Kernel::Laplace ? "strengths (charges)" : "strengths (forces)", kname);
  else if (d.strengths.rows > 0 || d.strengths.cols > 0)
    throw InvalidArgument("the stresslet kernel takes no strengths: pass the dipole strengths q as dipoles (N,3)");
  if (has_double_layer(k))
    validate_values(d.dipoles, pts.ns, 3, "dipoles", kname);
  else if (d.dipoles.rows > 0 || d.dipoles.cols > 0)
    throw InvalidArgument("dipoles are only used by the stresslet and stokes-combined kernels, not " + kname);
}

bool EwaldPlan::Impl::pack(const Densities& d, std::vector<double>& v, double& qscale) const {
  // Source values as the traits take them: Laplace q; stokeslet f/mu; stresslet q/ls, nu;
  // combined f/mu, q/ls, nu. The sum is linear in the strengths: they are divided by a power of
  // two (exact) that brings the largest to ~1, which keeps sums of squares and grid values far
  // from under- and overflow. Two passes (the largest value, then the scaled copy): ls and
  // qscale are powers of two, so a multiplication by their inverse is the division exactly.
  const Kernel k = user.kernel;
  const std::size_t n = pts.ns;
  const int ns = info.n_src;
  const int nsc = strength_components(k);
  const bool dl = has_double_layer(k);
  const double imu = k == Kernel::Laplace ? 1.0 : 1.0 / user.viscosity;
  const double ils = 1.0 / ls;
  // |f| imu and |q| / ls are monotone in |f| and |q|: their largest values come from the largest
  // inputs (the inputs are finite: validate())
  const double fmax = nsc > 0 ? max_abs(d.strengths.data, n * std::size_t(nsc)) * imu : 0.0;
  if (!std::isfinite(fmax))
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < nsc; ++c)
        if (!std::isfinite(d.strengths(i, c) * imu))
          throw InvalidArgument("force " + std::to_string(i) + " divided by the viscosity " + num(user.viscosity) +
                                " overflows");
  const double qmax = std::max(fmax, dl ? max_abs(d.dipoles.data, n * 3) * ils : 0.0);
  if (qmax == 0) return false;
  qscale = std::ldexp(1.0, std::ilogb(qmax));
  const double iq = 1.0 / qscale;
  v.resize(n * std::size_t(ns));
  double* const vd = v.data();
  for (std::size_t i = 0; i < n; ++i) {
    double* vi = vd + i * std::size_t(ns);
    for (int c = 0; c < nsc; ++c) vi[c] = (d.strengths(i, c) * imu) * iq;
    if (dl)
      for (int c = 0; c < 3; ++c) {
        vi[nsc + c] = (d.dipoles(i, c) * ils) * iq;
        vi[nsc + 3 + c] = pts.normals[3 * i + c];
      }
    for (int c = nsc + (dl ? 6 : 0); c < ns; ++c) vi[c] = 0.0;
  }
  return true;
}

double EwaldPlan::Impl::source_weight(const std::vector<double>& v, std::size_t i, int layer) const {
  // layer 0: the single-layer values |s|^2; layer 1: the double layer |q|^2 |nu|^2.
  const int ns = info.n_src, nsc = strength_components(user.kernel);
  const double* s = &v[i * ns];
  if (layer == 0) {
    double w = 0;
    for (int c = 0; c < nsc; ++c) w += s[c] * s[c];
    return w;
  }
  const double* q = s + nsc;
  return (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]) * (q[3] * q[3] + q[4] * q[4] + q[5] * q[5]);
}

double EwaldPlan::Impl::density(const std::vector<double>& v, int layer, const std::array<double, 3>& box) const {
  // Effective strength density seen by the targets: sum of squared strengths per coarse cell
  // (about 8 sources per cell on average), averaged over the targets' cells; never below the
  // mean. layer 0: the single-layer values |s|^2; layer 1: the double layer |q|^2 |nu|^2.
  const auto& L = box;
  const double V = L[0] * L[1] * L[2];
  const std::size_t N = pts.ns;
  auto weight = [&](std::size_t i) { return source_weight(v, i, layer); };
  double Q = 0;
  for (std::size_t i = 0; i < N; ++i) Q += weight(i);
  const double target_cells = std::max(1.0, double(N) / 8.0);
  const double cw = std::cbrt(V / target_cells);
  std::array<int, 3> n;
  for (int d = 0; d < 3; ++d) n[d] = std::clamp(static_cast<int>(L[d] / cw), 1, 256);
  const std::size_t nc = std::size_t(n[0]) * n[1] * n[2];
  std::vector<double> cell(nc, 0.0);
  auto index = [&](const double* x) {
    std::size_t c = 0;
    for (int d = 0; d < 3; ++d) c = c * n[d] + cell_index(x[d], n[d] / L[d], n[d]);
    return c;
  };
  for (std::size_t i = 0; i < N; ++i) cell[index(&pts.src[3 * i])] += weight(i);
  const double cellvol = V / double(nc);
  const std::vector<double>& t = pts.separate ? pts.trg : pts.src;
  const std::size_t nt = t.size() / 3;
  double acc = 0;
  for (std::size_t i = 0; i < nt; ++i) acc += cell[index(&t[3 * i])] / cellvol;
  return std::max(nt ? acc / double(nt) : 0.0, Q / V);
}

std::array<double, 3> EwaldPlan::Impl::tuner_box() const {
  if (!free) return opt.box;
  // 0P: about the extended box (twice the extent plus the windows; fit_free_box makes it exact
  // once the spacing is chosen); short sides count as a quarter of the longest, so that the grid
  // spacing the tuner picks is the same along every axis
  const double Dmax = std::max({extent[0], extent[1], extent[2]});
  std::array<double, 3> b;
  for (int d = 0; d < 3; ++d) b[d] = periodic[d] ? extent[d] : 2.5 * std::max(extent[d], 0.25 * Dmax);
  return b;
}

std::array<double, 3> EwaldPlan::Impl::density_box() const {
  if (!free) return opt.box;
  const double Dmax = std::max({extent[0], extent[1], extent[2]});
  std::array<double, 3> b;
  for (int d = 0; d < 3; ++d) b[d] = periodic[d] ? extent[d] : std::max(extent[d], 0.05 * Dmax) * (1 + 1e-12);
  return b;
}

double EwaldPlan::Impl::data_volume() const {
  const double Dmax = std::max({extent[0], extent[1], extent[2]});
  double V = 1;
  for (int d = 0; d < 3; ++d) V *= periodic[d] ? extent[d] : std::max(extent[d], 0.25 * Dmax);
  return V;
}

namespace {
// 0P: the extended box's length along axis d for parameters p: the data (points and windows,
// D + (P + 2) h) fills at most half of it (aperiodic convolution: separations < L / 2 are free
// of images in the cropped kernel), and a point's images lie beyond r_c (P2P finds none), with
// r_c < L / 2 (P2P's pair symmetry condition)
double free_length(double D, double h, int P, double rc) {
  return std::max({2 * (D + (P + 2) * h), D + rc + 2 * h, 2 * rc + 2 * h});
}
}  // namespace

std::array<double, 3> EwaldPlan::Impl::fit_free_box(Params& p) const {
  std::array<double, 3> box;
  for (int d = 0; d < 3; ++d) {
    if (periodic[d]) {  // the period, on the tuner's grid
      box[d] = extent[d];
      continue;
    }
    const double need = free_length(extent[d], p.h[d], p.P, p.rc);
    const double m = std::ceil(need / p.h[d] * (1 - 1e-12));
    if (!(m <= 8192))
      throw ResourceError("free space (0P): the extended grid would need " + num(m) + " points along " + "xyz"[d] +
                          " (at most 8192): the points' extent is too large for the grid spacing the tolerance needs; "
                          "loosen the tolerance");
    p.grid[d] = fft_friendly(static_cast<int>(m));
    box[d] = p.grid[d] * p.h[d];
  }
  if (!(double(p.grid[0]) * p.grid[1] * p.grid[2] * 8.0 * std::max(info.n_grid, info.n_out) <= kMaxGridBytes))
    throw ResourceError("free space (0P): the extended FFT grid " + std::to_string(p.grid[0]) + "x" +
                        std::to_string(p.grid[1]) + "x" + std::to_string(p.grid[2]) + " exceeds the " +
                        num(kMaxGridBytes / 1073741824.0) + " GiB limit; loosen the tolerance");
  p.cells = cell_grid(box, p.rc, pts.ns + pts.nt, opt.precision);
  return box;
}

bool EwaldPlan::Impl::free_box_holds(const Params& p, const std::array<double, 3>& box) const {
  for (int d = 0; d < 3; ++d)
    if (!periodic[d] && free_length(extent[d], p.h[d], p.P, p.rc) > box[d] * (1 + 1e-12)) return false;
  return true;
}

std::unique_ptr<Backend> EwaldPlan::Impl::prepare(const Params& p, const Window& w, const std::array<double, 3>& box,
                                                  std::shared_ptr<const std::vector<double>> table, bool pilot) const {
  BackendSetup s;
  s.kernel = opt.kernel;
  s.field = opt.compute_field;
  s.zero_mode = opt.stresslet_zero_mode;
  s.precision = opt.precision;
  // erfc to 1% of the relative tolerance (full accuracy for an absolute one, whose scale is not
  // known here); the Chebyshev fit's own floor is ~1e-14
  const double rel = p.result_scale > 0 ? p.eps_abs / p.result_scale : 0.0;
  s.erfc_target = std::clamp(0.01 * rel, 1e-15, 1e-4);
  s.box = box;
  s.free_multiplier = std::move(table);
  s.periodic = periodic;
  s.threads = threads;
  s.fft_planner = pilot ? FftPlanner::Estimate : opt.fft_planner;
  s.p2g_variant = opt.p2g_variant;
  s.pair_symmetry = opt.pair_symmetry;
  // the pilot measures the potential's RMS (the scale of a relative tolerance): full path there
  s.energy_parseval = !opt.compute_potential && !pilot && opt.p2g_variant == P2GVariant::CellOrdered;
  s.params = p;
  s.window = w;
  return make_cpu_backend(pts, s);
}

void EwaldPlan::Impl::run(const Backend& b, const std::vector<double>& v, std::vector<double>& out,
                          StageTimes& times, std::size_t* coincident, P2PCounts* counts, double* far_energy) const {
  // a kept workspace (repeated evaluations reuse its grids); returned to the backend only after
  // a complete evaluation
  std::unique_ptr<Workspace> ws = b.acquire();
  b.load(*ws, v.data());
  // the stages in order, each timed under its name
  using Stage = void (Backend::*)(Workspace&) const;
  static constexpr std::pair<const char*, Stage> stages[] = {{"P2P", &Backend::p2p}, {"P2G", &Backend::p2g},
                                                             {"FFT", &Backend::fft}, {"CNV", &Backend::cnv},
                                                             {"IFFT", &Backend::ifft}, {"G2P", &Backend::g2p}};
  for (const auto& [name, stage] : stages) {
    ScopedStage st(times, name);
    (b.*stage)(*ws);
  }
  {
    ScopedStage st(times, "self");
    b.self(*ws);
    out.assign(pts.nt * info.n_out, 0.0);
    b.store(*ws, out.data());
  }
  if (coincident) *coincident = b.coincident_pairs(*ws);
  if (counts) *counts = b.p2p_counts(*ws);
  if (far_energy) *far_energy = b.far_energy(*ws);
  b.release(std::move(ws));
}

Params EwaldPlan::Impl::report(const Params& p, double qscale) const {
  // Back to the caller's units: strengths (qscale) and lengths (ls; potential and velocity scale
  // as 1/length, the field as 1/length^2); raw sums times the kernel's final factor.
  Params r = p;
  const double u = info.final_scale * qscale / ls;
  for (double* x : {&r.eps_abs, &r.result_rms, &r.result_scale, &r.est_real, &r.est_fourier, &r.est_window,
                    &r.est_total})
    *x *= u;
  // the second quantity: the Laplace field (raw), or the pressure (raw = 8 pi p / mu)
  const double u2 = opt.kernel == Kernel::Laplace ? 1.0 : info.final_scale * user.viscosity;
  for (double* x : {&r.field_eps_abs, &r.field_rms, &r.field_scale, &r.field_est_total}) *x *= u2 * qscale / (ls * ls);
  r.xi /= ls;
  r.rc *= ls;
  for (double& h : r.h) h *= ls;
  for (double& b : r.fft_box) b *= ls;
  r.truncation_radius *= ls;
  return r;
}

std::shared_ptr<const Tuned> EwaldPlan::Impl::tune(const std::vector<double>& v, double qscale,
                                                   StageTimes& times) const {
  auto t = std::make_shared<Tuned>();
  t->qscale = qscale;
  t->ns = pts.ns;
  t->nt = pts.nt;
  const std::array<double, 3> tbox = tuner_box();  // 0P: about the extended box (fit_free_box below)
  TuneInput in;
  {
    ScopedStage st(times, "tune");
    in.kernel = opt.kernel;
    in.field = opt.compute_field;
    in.terms = info.terms;
    in.n_src = info.n_src;
    in.n_grid = info.n_grid;
    in.n_out = info.n_out;
    // potential left out: IFFT and G2P of E's 3 components (see prepare())
    if (!opt.compute_potential && opt.p2g_variant == P2GVariant::CellOrdered) in.n_out = 3;
    // the cost model's constants (measured per machine and cached, or built in: calibrate.cpp)
    in.costs = cost_constants(opt.precision);
    in.precision = opt.precision;
    in.cost_variant = cost_variant(opt.kernel, opt.compute_field);
    in.box = tbox;
    if (free) {
      in.rc_max = 0.5 * std::max({extent[0], extent[1], extent[2]});
      in.crowding = tbox[0] * tbox[1] * tbox[2] / data_volume();
    }
    in.n_sources = pts.ns;
    in.n_targets = pts.nt;
    in.threads = threads;
    in.pair_symmetry = opt.pair_symmetry && !pts.separate;
    in.overrides = &opt;
    double ms[2] = {0, 0};  // mean squared strengths per layer
    for (int l = 0; l < 2; ++l) {
      bool used = false;
      for (const ErrorTerm& e : in.terms) used |= e.density == l;
      if (!used) continue;
      in.rho[l] = density(v, l, density_box());
      const double V = tbox[0] * tbox[1] * tbox[2];
      // mean |s|^2 = (total / V) * V / N; the density() floor is the mean Q / V
      double Q = 0;
      const int ns = info.n_src, nsc = strength_components(opt.kernel);
      for (std::size_t i = 0; i < pts.ns; ++i) {
        const double* s = &v[i * ns];
        if (l == 0)
          for (int c = 0; c < nsc; ++c) Q += s[c] * s[c];
        else
          Q += (s[nsc] * s[nsc] + s[nsc + 1] * s[nsc + 1] + s[nsc + 2] * s[nsc + 2]) *
               (s[nsc + 3] * s[nsc + 3] + s[nsc + 4] * s[nsc + 4] + s[nsc + 5] * s[nsc + 5]);
      }
      ms[l] = Q / double(pts.ns);
      if (!pts.separate) in.self_q2[l] = ms[l];
      if (free && l == 0) {
        // 0P: the net charge / force spread over the points' box (est_real's coherent tail)
        double net[3] = {0, 0, 0};
        const int ns = info.n_src, nsc = strength_components(opt.kernel);
        for (std::size_t i = 0; i < pts.ns; ++i)
          for (int c = 0; c < nsc; ++c) net[c] += v[i * ns + c];
        const double Vd = data_volume(), ball = std::cbrt(3 * Vd / (4 * kPi));
        in.mean_density[0] = std::sqrt(net[0] * net[0] + net[1] * net[1] + net[2] * net[2]) / Vd;
        in.mean_far[0] = in.mean_density[0] * ball * ball;
        in.mean_ball = ball;
      }
      t->rho[l] = in.rho[l];
      (void)V;
    }
    // Sources clustered within a fraction of the grid spacing alias coherently (seen as errors up
    // to 4x eps for Gaussian clusters narrower than h): the window estimate counts the squared
    // strengths of the sources in the target's cube of side s (bins of side s_k = Lmax 2^-k with
    // s_k >= s, memoised per k).
    std::map<std::pair<int, int>, double> near_memo;
    in.near_q2 = [&](int layer, double s) {
      const double Lmax = std::max({tbox[0], tbox[1], tbox[2]});
      const int k = std::clamp(static_cast<int>(std::floor(std::log2(Lmax / s))), 0, 40);
      const auto key = std::make_pair(layer, k);
      if (auto it = near_memo.find(key); it != near_memo.end()) return it->second;
      const double inv = std::ldexp(1.0, k) / Lmax;
      auto key_of = [&](const double* x) {
        std::uint64_t c = 0;
        for (int d = 0; d < 3; ++d) c = c * (std::uint64_t(1) << 21) + (static_cast<std::uint64_t>(x[d] * inv) & 0x1FFFFF);
        return c;
      };
      std::unordered_map<std::uint64_t, double> bins;
      bins.reserve(pts.ns);
      for (std::size_t i = 0; i < pts.ns; ++i) bins[key_of(&pts.src[3 * i])] += source_weight(v, i, layer);
      const std::vector<double>& t = pts.separate ? pts.trg : pts.src;
      const std::size_t nt = t.size() / 3;
      double acc = 0;
      for (std::size_t i = 0; i < nt; ++i)
        if (auto it = bins.find(key_of(&t[3 * i])); it != bins.end()) acc += it->second;
      const double r = nt ? acc / double(nt) : 0.0;
      near_memo[key] = r;
      return r;
    };
    // Scales of the results: the typical magnitude from the model (pilot targets) and the floor of
    // a relative tolerance: a strength of RMS size at the mean spacing a (q/a single layer and
    // potential, q/a^2 field and double layer).
    // (0P: the points' bounding box's volume, its short sides counted as a quarter of the longest)
    const double V = free ? data_volume() : tbox[0] * tbox[1] * tbox[2];
    const double a = std::cbrt(V / double(std::max<std::size_t>(pts.ns, 1)));
    double typ[2] = {0, 0}, floor[2] = {0, 0};
    for (const ErrorTerm& e : in.terms) {
      if (in.rho[e.density] <= 0) continue;
      const double m = typical_magnitude(e.kind, in.rho[e.density], in.box, in.n_sources);
      typ[e.quantity] = std::hypot(typ[e.quantity], m);
      const bool inv2 = e.kind == ErrKind::LaplaceField || e.kind == ErrKind::Stresslet;
      const double fl = std::sqrt(ms[e.density]) / (inv2 ? a * a : a);
      floor[e.quantity] = std::hypot(floor[e.quantity], fl);
    }
    const int nq = opt.compute_field ? 2 : 1;
    auto finish = [&](Params p, double scale0) {
      const double poly_target = std::clamp(0.05 * in.eps[0] / std::max(scale0, in.eps[0]), 1e-16, 1e-3);
      t->window = make_window(p.P, p.beta, opt.poly_degree ? *opt.poly_degree : 0, poly_target);
      if (opt.poly_degree && t->window.max_poly_error > std::max(poly_target, 1e-14))
        throw NumericalError("polynomial degree override nu = " + std::to_string(*opt.poly_degree) +
                             " approximates the window with error " + num(t->window.max_poly_error) +
                             ", above the " + num(poly_target) + " that the tolerance needs; raise it or leave it automatic");
      p.poly_degree = t->window.degree;
      return p;
    };
    // 0P: the extended box of parameters p and its kernel table
    auto free_setup = [&](Params& p, std::shared_ptr<const std::vector<double>>& table) {
      std::array<double, 3> box = fit_free_box(p);
      table = free_space_table(opt.kernel, opt.compute_field, periodic, p, box, threads, &p.truncation_radius);
      return box;
    };
    // FftPlanner::Wisdom: the final choice ranks its best grids by measured FFT times (the
    // pilot's low-accuracy choice uses the model alone)
    auto use_measured_fft = [&] {
      // (0P: the candidates' grids are not the extended grid fit_free_box makes: not measured)
      if (free || opt.fft_planner != FftPlanner::Wisdom || !cpu_fft_wisdom_on()) return;
      const Precision prec = opt.precision;
      const int ng = in.n_grid, no = in.n_out, th = threads;
      in.fft_seconds = [prec, ng, no, th](const std::array<int, 3>& M) { return cpu_fft_seconds(prec, M, ng, no, th); };
    };
    if (opt.tolerance_kind == ToleranceKind::Absolute) {
      use_measured_fft();
      // eps in caller units -> raw plan units (see report()).
      in.eps[0] = opt.tolerance * ls / (qscale * info.final_scale);
      in.eps[1] = opt.tolerance * ls * ls / qscale /
                  (opt.kernel == Kernel::Laplace ? 1.0 : info.final_scale * user.viscosity);
      t->params = finish(choose_params(in), typ[0]);
    } else {
      // Pilot: a low-accuracy evaluation measures the RMS of the result, which turns the relative
      // tolerance into an absolute one. Tolerances above 1e-2 are met as 1e-2 (the error estimates
      // are asymptotic forms).
      const double pilot_rel = std::clamp(opt.tolerance, 1e-3, 1e-2);
      for (int q = 0; q < nq; ++q) in.eps[q] = pilot_rel * std::max(typ[q], floor[q]);
      const Params pilot = finish(choose_params(in), std::max(typ[0], floor[0]));
      use_measured_fft();
      std::vector<double> out;
      StageTimes pt;
      {
        Params pp = pilot;
        std::array<double, 3> pbox = tbox;
        std::shared_ptr<const std::vector<double>> ptable;
        if (free) pbox = free_setup(pp, ptable);
        run(*prepare(pp, t->window, pbox, ptable, true), v, out, pt, nullptr);
      }
      double meas[2] = {rms_of(out, info.n_out, 0, opt.kernel == Kernel::Laplace ? 1 : 3) / info.final_scale, 0};
      if (opt.compute_field)
        meas[1] = opt.kernel == Kernel::Laplace ? rms_of(out, info.n_out, 1, 3)
                                                : rms_of(out, info.n_out, 3, 1) / info.final_scale;
      double scale[2];
      const double eps = std::min(opt.tolerance, 1e-2);
      for (int q = 0; q < nq; ++q) {
        scale[q] = std::max(meas[q], floor[q]);
        in.eps[q] = eps * scale[q];
      }
      t->params = finish(choose_params(in), scale[0]);
      t->params.result_rms = meas[0];
      t->params.result_scale = scale[0];
      if (opt.compute_field) {
        t->params.field_rms = meas[1];
        t->params.field_scale = scale[1];
      }
    }
    t->box = tbox;
    if (free) t->box = free_setup(t->params, t->table);
    t->params.fft_box = t->box;
    // Overrides can make the tolerance unreachable: say so instead of returning a poor result.
    const Params& p = t->params;
    const bool any_override = opt.xi || opt.rc || opt.grid || opt.window_support || opt.window_shape;
    if (any_override && (p.est_total > p.eps_abs * (1 + 1e-9) ||
                         (opt.compute_field && p.field_est_total > p.field_eps_abs * (1 + 1e-9)))) {
      const Params r = report(p, qscale);
      std::ostringstream os;
      os << "the parameter overrides cannot meet the tolerance: estimated RMS error " << r.est_total << " (real space "
         << r.est_real << ", Fourier " << r.est_fourier << ", window " << r.est_window << ") exceeds the target "
         << r.eps_abs;
      if (opt.compute_field)
        os << " (field: estimated " << r.field_est_total << ", target " << r.field_eps_abs << ")";
      os << " with xi = " << r.xi << ", rc = " << r.rc << ", M = " << p.grid[0] << "x" << p.grid[1] << "x" << p.grid[2]
         << ", P = " << p.P << "; remove or change an override, or loosen the tolerance";
      throw NumericalError(os.str());
    }
    if (opt.precision == Precision::Single) {
      // float32 rounding floor for the chosen grid (relative to the result's scale)
      const double fl = single_precision_floor(p.grid, std::max(pts.ns, pts.nt));
      const double scale0 = p.result_scale > 0 ? p.result_scale : std::max(typ[0], floor[0]);
      const double rel = p.eps_abs / scale0;
      if (rel < fl) {
        std::ostringstream os;
        os << "tolerance " << opt.tolerance << (opt.tolerance_kind == ToleranceKind::Absolute ? " (absolute, about " : " (")
           << rel << " relative) is below what single precision reaches with this grid (M = " << p.grid[0] << "x"
           << p.grid[1] << "x" << p.grid[2] << ") and N = " << std::max(pts.ns, pts.nt) << ": float32 floor " << fl
           << " relative; use precision double or a tolerance >= " << fl;
        throw NumericalError(os.str());
      }
    }
    t->params.est_relative = t->params.result_scale > 0 ? t->params.est_total / t->params.result_scale : 0.0;
    t->reported = report(t->params, qscale);
  }
  {
    ScopedStage st(times, "set_points");
    t->backend = prepare(t->params, t->window, t->box, t->table);
  }
  return t;
}

std::shared_ptr<const Tuned> EwaldPlan::Impl::state(const std::vector<double>& v, double qscale,
                                                    StageTimes& times) const {
  std::lock_guard<std::mutex> lk(mu);
  if (tuned) {
    bool keep = true;
    const auto ratio = [](double a, double b) { return std::max(a, b) / std::max(std::min(a, b), 1e-300); };
    if (recheck)
      for (int l = 0; l < 2; ++l)
        if (tuned->rho[l] > 0 && ratio(density(v, l, density_box()), tuned->rho[l]) > 4.0) keep = false;
    if (opt.tolerance_kind == ToleranceKind::Absolute && ratio(qscale, tuned->qscale) > 1.5) keep = false;
    if (keep && recheck) {
      // Same parameters, new points: only the set_points stage again.
      auto t = std::make_shared<Tuned>(*tuned);
      t->ns = pts.ns;
      t->nt = pts.nt;
      {
        ScopedStage st(times, "set_points");
        t->backend = prepare(t->params, t->window, t->box, t->table);
      }
      tuned = t;
      recheck = false;
    }
    if (!keep) tuned.reset();
  }
  if (!tuned) {
    tuned = tune(v, qscale, times);
    recheck = false;
  }
  return tuned;
}

const Params& EwaldPlan::tune(const Densities& d) {
  auto& I = *impl_;
  I.validate(d);
  std::vector<double> v;
  double qscale = 1;
  if (!I.pack(d, v, qscale)) throw InvalidArgument("strengths are all zero: there is nothing to tune for");
  StageTimes t;
  std::lock_guard<std::mutex> lk(I.mu);
  I.tuned = I.tune(v, qscale, t);
  I.recheck = false;
  return I.tuned->reported;
}

Result EwaldPlan::evaluate(const Densities& d) const {
  const auto& I = *impl_;
  I.validate(d);
  Result r;
  const std::size_t nt = I.pts.nt;
  const bool potential = I.user.compute_potential;
  r.values = potential ? Array2D(nt, value_components(I.user.kernel), I.user.kernel == Kernel::Laplace ? 1 : 2)
                       : Array2D(0, 1, 1);
  if (I.user.compute_field) r.field = Array2D(nt, 3);
  if (I.user.compute_pressure) r.pressure = Array2D(nt, 1, 1);
  std::vector<double> v;
  double qscale = 1;
  if (nt == 0 || !I.pack(d, v, qscale)) {  // no targets, or all strengths zero: the sum is zero
    if (I.user.compute_energy) {
      r.forces = Array2D(nt, 3);
      r.energy = 0.0;
    }
    r.params = params();
    return r;
  }
  const std::shared_ptr<const Tuned> t = I.state(v, qscale, r.times);
  std::vector<double> out;
  double far_energy = std::numeric_limits<double>::quiet_NaN();
  I.run(*t->backend, v, out, r.times, &r.coincident_pairs, &r.p2p, &far_energy);
  if (!I.exclusions.empty()) {
    ScopedStage st(r.times, "exclusions");
    I.exclude(v, out, t->box);
  }
  const int co = I.info.n_out;
  const double u = qscale / I.ls, uf = qscale / (I.ls * I.ls);  // back to the caller's units
  const int nv = value_components(I.user.kernel);
  for (std::size_t i = 0; i < nt; ++i) {
    if (potential)
      for (int c = 0; c < nv; ++c) r.values.values[i * nv + c] = out[i * co + c] * u;
    if (I.user.compute_field)
      for (int c = 0; c < 3; ++c) r.field.values[i * 3 + c] = out[i * co + 1 + c] * uf;
    // pressure: the sum scaled like a field (1/length^2); forces were divided by mu
    if (I.user.compute_pressure) r.pressure.values[i] = out[i * co + 3] * uf * I.user.viscosity;
  }
  if (I.user.compute_energy) {
    // U = 1/2 sum q phi and F = q E in the caller's units (charges as given).
    r.forces = Array2D(nt, 3);
    double U = 0;
    for (std::size_t i = 0; i < nt; ++i) {
      const double q = d.strengths(i, 0);
      U += q * out[i * co] * u;
      for (int c = 0; c < 3; ++c) r.forces.values[i * 3 + c] = q * out[i * co + 1 + c] * uf;
    }
    // Potential left out: out's potential column holds the real-space, self and background parts
    // (exclusions removed); the far field's part sum v phi_F came from CNV in plan units
    // (strengths / qscale, lengths / ls), i.e. times qscale^2 / ls in the caller's.
    if (std::isfinite(far_energy)) U += far_energy * qscale * u;
    r.energy = 0.5 * U;
  }
  // 1P: the k_z = 0 term -2 ln(rho) / L per charge is in the caller's length unit; the plan's
  // unit ls (a power of two, set_points) turns it into -2 ln(rho / ls) / L: add -2 Q ln(ls) / L
  if (I.free && I.ls != 1.0 && I.opt.kernel == Kernel::Laplace &&
      int(I.periodic[0]) + int(I.periodic[1]) + int(I.periodic[2]) == 1) {
    const int ax = I.periodic[0] ? 0 : I.periodic[1] ? 1 : 2;
    double Q = 0;
    for (std::size_t i = 0; i < I.pts.ns; ++i) Q += d.strengths(i, 0);
    const double c = -2.0 * Q * std::log(I.ls) / I.user.box[std::size_t(ax)];
    if (potential)
      for (std::size_t i = 0; i < nt; ++i) r.values.values[i] += c;
    if (I.user.compute_energy) r.energy += 0.5 * Q * c;
  }
  // 1P stokeslet (and stokes-combined's single layer): the table's k_z = 0 kernel is -2 ln(rho / R) I_perp + 2 rho^ rho^^T across the
  // line and -4 ln(rho / R) along it (truncated::stokeslet_1p_zero); the convention's constants
  // -2 ln R and -4 ln R - 2 (R in the caller's unit) times the net force over 8 pi mu L
  if (I.free && (I.opt.kernel == Kernel::Stokeslet || I.opt.kernel == Kernel::StokesCombined) &&
      int(I.periodic[0]) + int(I.periodic[1]) + int(I.periodic[2]) == 1) {
    const int ax = I.periodic[0] ? 0 : I.periodic[1] ? 1 : 2;
    double F[3] = {0, 0, 0};
    for (std::size_t i = 0; i < I.pts.ns; ++i)
      for (int c = 0; c < 3; ++c) F[c] += d.strengths(i, std::size_t(c));
    const double lnR = std::log(t->reported.truncation_radius);  // (caller units: the plan's R times ls)
    const double w = 1.0 / (8 * kPi * I.user.viscosity * I.user.box[std::size_t(ax)]);
    double du[3];
    for (int c = 0; c < 3; ++c) du[c] = w * (c == ax ? -4 * lnR - 2 : -2 * lnR) * F[c];
    for (std::size_t i = 0; i < nt; ++i)
      for (int c = 0; c < 3; ++c) r.values.values[i * 3 + std::size_t(c)] += du[c];
  }
  for (const Array2D* a : {&r.values, &r.field, &r.forces, &r.pressure}) {
    if (all_finite(a->values.data(), a->values.size())) continue;
    for (std::size_t i = 0; i < a->values.size(); ++i)
      if (!std::isfinite(a->values[i]))
        throw NumericalError("the result contains a non-finite value (at target " + std::to_string(i / a->cols) +
                             "); the strengths or the parameter overrides are out of range");
  }
  r.params = t->reported;
  return r;
}

Result EwaldPlan::evaluate(ConstMatrixView<double> strengths) const { return evaluate(Densities{strengths, {}}); }

namespace {
void require_single_layer(Kernel k, const char* what) {
  if (has_double_layer(k))
    throw InvalidArgument(std::string(what) + "(sources, strengths[, targets]) is for the laplace and stokeslet kernels; the " +
                          to_string(k) + " kernel needs normals and dipoles: set_points(sources, targets, normals) then "
                          "evaluate({forces, dipoles})");
}
}  // namespace

Result EwaldPlan::evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths) {
  require_single_layer(impl_->user.kernel, "evaluate");
  set_points(sources);
  return evaluate(Densities{strengths, {}});
}

Result EwaldPlan::evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                           ConstMatrixView<double> targets) {
  require_single_layer(impl_->user.kernel, "evaluate");
  set_points(sources, targets);
  return evaluate(Densities{strengths, {}});
}

const Params& EwaldPlan::tune(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                              std::optional<ConstMatrixView<double>> targets) {
  require_single_layer(impl_->user.kernel, "tune");
  set_points(sources, targets);
  return tune(Densities{strengths, {}});
}

}  // namespace elliptica::ewald
