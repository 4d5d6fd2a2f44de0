// Parameter selection for the spectral Ewald sum from one tolerance (seed 000, section 2.4).
//
// Error model. For sources with random, uncorrelated positions and strength density
// rho = sum |q_n|^2 / V (Kolafa & Perram, Mol. Simul. 9 (1992) 351; the same model underlies the
// estimates of Lindbo & Tornberg 2010/2011), a truncated part of a kernel with mean-square response
// g^2 gives an RMS error
//   E_R^2 = rho * int_{|r| > r_c} g_R(r)^2 d^3r                        (real space, P2P truncated at r_c)
//   E_F^2 = rho / (2 pi)^3 * int_{k outside the grid} g_hat(k)^2 d^3k  (Fourier truncation)
//   E_W^2 = rho / (2 pi)^3 * int_{k in the grid} g_hat(k)^2 * 2 sum_d A_d(k_d) d^3k   (window)
// where A_d(k) = sum_{j != 0} w_hat(k + 2 pi j / h_d)^2 / w_hat(k)^2 is the aliasing ratio of the
// window in axis d (Poisson summation of the spreading sum and of the interpolation sum; the factor
// 2 counts both, P2G and G2P). The integrals are evaluated by Gauss-Legendre quadrature; for large
// xi r_c they reduce to the familiar closed forms ~ exp(-xi^2 r_c^2) and ~ exp(-k_max^2/(4 xi^2)).
// Mean-square kernels (strength direction averaged for the stokeslet):
//   Laplace potential  g_R^2 = (erfc(xi r)/r)^2, g_hat^2 = (4 pi e^{-k^2/4xi^2}/k^2)^2
//   Laplace field      g_R^2 = ((erfc(xi r)/r + c e^{-xi^2 r^2})/r)^2, g_hat^2 = (4 pi e^{-k^2/4xi^2}/k)^2
//   Stokeslet          g_R^2 = (2 A^2 + (2 erfc(xi r)/r)^2)/3, g_hat^2 = (2/3) b(k)^2,
//                      b = 8 pi (1 + k^2/4xi^2) e^{-k^2/4xi^2}/k^2
// Each part is held below 0.35 eps / sqrt(3) (the estimates are within a factor ~2 of measured errors); among the admissible (r_c, xi, M, P) the one of
// least modelled cost wins (cost model below, seed 000 algorithm 1 complexity).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <mutex>
#include <sstream>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/p2p_simd.hpp"
#include "ewald/internal.hpp"

namespace elliptica::ewald::detail {

namespace {

// Legendre polynomial P_n(z) and its derivative, by the three-term recurrence.
void legendre(int n, double z, double& p, double& dp) {
  double p0 = 1, p1 = z;
  for (int k = 2; k <= n; ++k) {
    const double p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
    p0 = p1;
    p1 = p2;
  }
  p = p1;
  dp = n * (z * p1 - p0) / (z * z - 1);
}

struct GaussLegendre {
  std::vector<double> x, w;  // on [-1, 1]
  explicit GaussLegendre(int n) : x(n), w(n) {
    for (int i = 0; i < n; ++i) {
      double z = std::cos(kPi * (i + 0.75) / (n + 0.5)), p, dp;
      for (int it = 0; it < 100; ++it) {  // Newton on P_n
        legendre(n, z, p, dp);
        const double dz = p / dp;
        z -= dz;
        if (std::abs(dz) < 1e-16) break;
      }
      legendre(n, z, p, dp);
      x[i] = z;
      w[i] = 2.0 / ((1 - z * z) * dp * dp);
    }
  }
};

const GaussLegendre& gl(int n) {
  static const GaussLegendre g48(48), g12(12);
  return n == 48 ? g48 : g12;
}

double ms_real(ErrKind k, double xi, double r) {
  const double ec = std::erfc(xi * r) / r;
  const double ce = 2.0 * xi / kSqrtPi * std::exp(-xi * xi * r * r);
  switch (k) {
    case ErrKind::Stokeslet: {
      const double A = ec - ce;
      return (2.0 * A * A + 4.0 * ec * ec) / 3.0;
    }
    case ErrKind::LaplaceField: {
      const double g = (ec + ce) / r;
      return g * g;
    }
    case ErrKind::StokesletPressure: {  // 2 (ec + ce)(r.f)/r^2, random f direction: 4/3 of the field's
      const double g = (ec + ce) / r;
      return 4.0 / 3.0 * g * g;
    }
    case ErrKind::Stresslet: {
      // u = alpha (rh.q)(rh.nu) rh + beta [(q.nu) rh + (rh.nu) q + (rh.q) nu] with alpha = A r^3,
      // beta = B r; averaged over independent uniformly random unit q and nu:
      // E|u|^2 = alpha^2/9 + 5 beta^2/3 + 2 alpha beta/3.
      const double A = -2.0 / (r * r * r * r) * (3.0 * ec + ce * (3.0 + 2.0 * xi * xi * r * r));
      const double B = 2.0 * xi * xi * ce;
      const double al = A * r * r * r, be = B * r;
      return al * al / 9.0 + 5.0 * be * be / 3.0 + 2.0 * al * be / 3.0;
    }
    case ErrKind::LaplacePotential:
      break;
  }
  return ec * ec;
}

double ms_hat(ErrKind k, double xi, double kk) {
  const double k2 = kk * kk;
  const double e = std::exp(-k2 / (4 * xi * xi));
  switch (k) {
    case ErrKind::Stokeslet: {
      const double b = 8 * kPi * (1 + k2 / (4 * xi * xi)) * e / k2;
      return 2.0 / 3.0 * b * b;
    }
    case ErrKind::Stresslet: {
      // |8 pi (1 + k^2/4xi^2) e / k^4 M(k)|^2 with M = k^3 [2 kh (kh.q)(kh.nu) - (q.nu) kh - (kh.nu) q
      // - (kh.q) nu], whose mean square over random unit q, nu is 7/9.
      const double b = 8 * kPi * (1 + k2 / (4 * xi * xi)) * e / kk;
      return 7.0 / 9.0 * b * b;
    }
    case ErrKind::LaplaceField: {
      const double g = 4 * kPi * e / kk;
      return g * g;
    }
    case ErrKind::StokesletPressure: {
      const double g = 4 * kPi * e / kk;
      return 4.0 / 3.0 * g * g;
    }
    case ErrKind::LaplacePotential:
      break;
  }
  const double g = 4 * kPi * e / k2;
  return g * g;
}

}  // namespace

double mean_real_tail(ErrKind k, double xi, double rc) {
  // The isotropic mean of the real-space kernel (Laplace erfc(xi r)/r; the stokeslet's
  // (1/3) tr S^R = (4 erfc(xi r)/r - (4 xi/sqrt(pi)) e^{-xi^2 r^2}) / 3), integrated over r > r_c;
  // the odd kernels (field, pressure, stresslet) average to zero.
  // The field's (odd) tail vanishes inside a uniform density; at its boundary (a half space) it is
  // pi int_{r > r_c} (erfc(xi r)/r + (2 xi/sqrt(pi)) e^{-xi^2 r^2}) r dr: that is taken.
  if (k != ErrKind::LaplacePotential && k != ErrKind::Stokeslet && k != ErrKind::LaplaceField) return 0.0;
  const auto& g = gl(48);
  const double a = rc, b = rc + 7.0 / xi;
  double s = 0;
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const double r = 0.5 * (a + b) + 0.5 * (b - a) * g.x[i];
    const double ec = std::erfc(xi * r) / r, ce = 2.0 * xi / kSqrtPi * std::exp(-xi * xi * r * r);
    if (k == ErrKind::LaplaceField) {
      s += g.w[i] * kPi * (ec + ce) * r;
      continue;
    }
    const double m = k == ErrKind::Stokeslet ? (4.0 * ec - 2.0 * ce) / 3.0 : ec;
    s += g.w[i] * m * 4 * kPi * r * r;
  }
  return std::abs(s * 0.5 * (b - a));
}

double est_real(ErrKind k, double rho, double xi, double rc, double V, double mean_density) {
  const auto& g = gl(48);
  const double a = rc, b = rc + 7.0 / xi;
  double s = 0;
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const double r = 0.5 * (a + b) + 0.5 * (b - a) * g.x[i];
    s += g.w[i] * ms_real(k, xi, r) * 4 * kPi * r * r;
  }
  s *= 0.5 * (b - a);
  // A source's own periodic images are not at random positions: when the truncation shell
  // (radius r_c, effective width w = 1/(2 xi^2 r_c) of erfc^2) holds n of them (a thin box with
  // r_c beyond its short side), they add coherently, raising the mean square by about 1 + n.
  const double w = std::min(1.0 / (2 * xi * xi * rc), rc);
  const double n_images = 4 * kPi * rc * rc * w / V;
  const double coherent = mean_density > 0 ? mean_density * mean_real_tail(k, xi, rc) : 0.0;
  return std::sqrt(std::max(0.0, rho * s * (1 + n_images) + coherent * coherent));
}

double est_fourier(ErrKind k, double rho, double xi, double kmax, double near_q2) {
  // Incoherent part (random positions) and, for sources within ~h of a target (its own source, a
  // tight cluster), the coherent part: their truncated modes add in phase, near_q2 (int g)^2.
  const auto& g = gl(48);
  const double a = kmax, b = kmax + 14.0 * xi;
  double s = 0, c = 0;
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const double kk = 0.5 * (a + b) + 0.5 * (b - a) * g.x[i];
    const double m = ms_hat(k, xi, kk);
    s += g.w[i] * m * 4 * kPi * kk * kk;
    c += g.w[i] * std::sqrt(m) * 4 * kPi * kk * kk;
  }
  s *= 0.5 * (b - a);
  c *= 0.5 * (b - a) / (8 * kPi * kPi * kPi);
  return std::sqrt(std::max(0.0, rho * s / (8 * kPi * kPi * kPi) + near_q2 * c * c));
}

double est_window(ErrKind k, double rho, double xi, const std::array<double, 3>& box,
                  const std::array<int, 3>& M, int P, double beta, double self_q2, double mean_far,
                  double mean_ball) {
  // Integral over the positive octant of the grid's k-box, per axis either Gauss-Legendre (many
  // modes) or the exact sum over the axis' discrete modes k = 2 pi m / L, m = 0..M/2, with the
  // end modes at half weight (few modes: a thin box axis, where an integral would be poor).
  const auto& g = gl(12);
  const double kmin2 = std::pow(2 * kPi / std::max({box[0], box[1], box[2]}), 2);
  const double i4x2 = 1.0 / (4 * xi * xi);
  struct Axis {
    std::vector<double> k2, wq, alias, near, ex;
  } ax[3];
  for (int d = 0; d < 3; ++d) {
    const double h = box[d] / M[d];
    if (d > 0 && M[d] == M[d - 1] && std::abs(h - box[d - 1] / M[d - 1]) < 1e-15 * h) {
      ax[d] = ax[d - 1];
      continue;
    }
    const double K = kPi / h;
    const double a = 0.5 * P * h;
    // The first modes m = 0..m0 exactly (end modes at half weight), the rest, if any, by
    // Gauss-Legendre on [(m0 + 1/2) dk, K]: the small-k modes carry the 1/k^2 singularity of the
    // kernel, which a quadrature would miss when the other axes are short.
    std::vector<double> nodes, weights;
    const double dk = 2 * kPi / box[d];
    const int m0 = std::min(M[d] / 2, 8);
    for (int m = 0; m <= m0; ++m) {
      nodes.push_back(m * dk);
      weights.push_back((m == 0 || (2 * m == M[d])) ? 0.5 * dk : dk);
    }
    if (m0 < M[d] / 2) {
      const double k0 = (m0 + 0.5) * dk;
      for (std::size_t i = 0; i < g.x.size(); ++i) {
        nodes.push_back(k0 + 0.5 * (K - k0) * (1 + g.x[i]));
        weights.push_back(0.5 * (K - k0) * g.w[i]);
      }
    }
    Axis& A = ax[d];
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const double kk = nodes[i];
      A.k2.push_back(kk * kk);
      A.ex.push_back(std::exp(-kk * kk * i4x2));
      A.wq.push_back(weights[i]);
      const double w0 = window_hat_shape(kk, a, beta);
      double s = 0;
      for (int j = 1; j <= 24; ++j) {
        const double wp = window_hat_shape(kk + 2 * kPi * j / h, a, beta);
        const double wm = window_hat_shape(kk - 2 * kPi * j / h, a, beta);
        s += wp * wp + wm * wm;
      }
      A.alias.push_back(s / (w0 * w0));
      // coherent alias amplitude: the first aliases dominate for the usual P; for small P
      // (a window wide in k) the next ones matter too (j up to 3)
      double nr = 0;
      for (int j = 1; j <= 3; ++j)
        nr += window_hat_shape(kk + 2 * kPi * j / h, a, beta) + window_hat_shape(kk - 2 * kPi * j / h, a, beta);
      A.near.push_back(nr / w0);
    }
  }
  // |G_hat(k)| (strength-direction RMS for the Stokes kernels): sqrt(ms_hat) in closed form
  const double gfac = k == ErrKind::Stokeslet ? 0.816496580927726 * 8 * kPi   // sqrt(2/3) 8 pi
                      : k == ErrKind::Stresslet ? 0.881917103688197 * 8 * kPi  // sqrt(7/9) 8 pi
                      : k == ErrKind::StokesletPressure ? 1.154700538379252 * 4 * kPi  // sqrt(4/3) 4 pi
                                                : 4 * kPi;
  double sum = 0, coh[3] = {0, 0, 0};
  const std::size_t n0 = ax[0].k2.size(), n1 = ax[1].k2.size(), n2 = ax[2].k2.size();
  for (std::size_t i = 0; i < n0; ++i)
    for (std::size_t j = 0; j < n1; ++j) {
      const double k2ij = ax[0].k2[i] + ax[1].k2[j];
      const double eij = ax[0].ex[i] * ax[1].ex[j];
      const double wij = ax[0].wq[i] * ax[1].wq[j];
      for (std::size_t l = 0; l < n2; ++l) {
        const double kk2 = k2ij + ax[2].k2[l];
        if (kk2 < kmin2 * (1 - 1e-12)) continue;
        const double e = eij * ax[2].ex[l];  // exp(-k^2/(4 xi^2)), separable
        // |G_hat(k)| (strength-direction RMS for the stokeslet), see ms_hat
        double gk;
        switch (k) {
          case ErrKind::Stokeslet: gk = gfac * (1 + kk2 * i4x2) * e / kk2; break;
          case ErrKind::Stresslet: gk = gfac * (1 + kk2 * i4x2) * e / std::sqrt(kk2); break;
          case ErrKind::LaplaceField:
          case ErrKind::StokesletPressure: gk = gfac * e / std::sqrt(kk2); break;
          default: gk = gfac * e / kk2; break;
        }
        const double wt = wij * ax[2].wq[l];
        sum += wt * gk * gk * (ax[0].alias[i] + ax[1].alias[j] + ax[2].alias[l]);
        const double wg = wt * gk;
        coh[0] += wg * ax[0].near[i];
        coh[1] += wg * ax[1].near[j];
        coh[2] += wg * ax[2].near[l];
      }
    }
  sum *= 8.0 * 2.0;  // eight octants; spreading and interpolation
  const double c = 8.0 / (8 * kPi * kPi * kPi);
  // Self-aliasing: a source that is also a target sees its own spread-and-interpolated image; the
  // first aliases (j = +-1) add coherently over k, with an amplitude that oscillates with the
  // source's position in the grid cell.
  // Both aliasing sums (P2G's and G2P's) carry the same first-alias term: amplitude 2 coh.
  const double self2 = 4.0 * self_q2 * c * c * (coh[0] * coh[0] + coh[1] * coh[1] + coh[2] * coh[2]);
  // 0P, a non-neutral system: the smooth far field of the mean density (about a uniform ball's at
  // its centre: 2 pi rho a^2 for 1/r, (8 pi / 3) rho a^2 for the stokeslet) is spread and
  // interpolated with the windows' first aliases at k ~ 0, an error of 2 far sum_d near_d(0)
  double mean2 = 0;
  // (the field: (4 pi / 3) rho a at the ball's surface; mean_far = rho a^2, mean_ball = a)
  if (mean_far > 0 && (k == ErrKind::LaplacePotential || k == ErrKind::Stokeslet || k == ErrKind::LaplaceField)) {
    const double far = k == ErrKind::LaplaceField ? mean_far / mean_ball * 4.0 * kPi / 3.0
                                                   : mean_far * (k == ErrKind::Stokeslet ? 8.0 * kPi / 3.0 : 2.0 * kPi);
    const double e = 2.0 * far * (ax[0].near[0] + ax[1].near[0] + ax[2].near[0]);
    mean2 = e * e;
  }
  return std::sqrt(std::max(0.0, rho * sum / (8 * kPi * kPi * kPi) + self2 + mean2));
}

double typical_magnitude(ErrKind k, double rho, const std::array<double, 3>& box, std::size_t n) {
  const double V = box[0] * box[1] * box[2];
  const double L = std::max({box[0], box[1], box[2]});
  const double a = std::min(0.5 * std::cbrt(V / std::max<std::size_t>(n, 1)), 0.25 * L);
  double s;
  switch (k) {
    case ErrKind::Stokeslet: s = 8 * kPi * (0.5 * L - a); break;
    case ErrKind::LaplaceField: s = 4 * kPi * (1.0 / a - 2.0 / L); break;
    case ErrKind::Stresslet: s = 24 * kPi * (1.0 / a - 2.0 / L); break;
    case ErrKind::StokesletPressure: s = 16.0 / 3.0 * kPi * (1.0 / a - 2.0 / L); break;
    default: s = 4 * kPi * (0.5 * L - a); break;
  }
  return std::sqrt(std::max(rho * s, 1e-300));
}

int fft_friendly(int m) {
  m = std::max(m, 4);
  for (int c = m + (m & 1);; c += 2) {
    int r = c;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return c;
  }
}


std::array<int, 3> cell_grid(const std::array<double, 3>& box, double rc, std::size_t n_points, Precision prec) {
  std::array<double, 3> n;
  // Columns of width r_c / 1.25 in x and y, cells of r_c / 5 along z (cpu/p2p.cpp): the
  // consecutive z-cells of a column are one run of sources, so fine z-cells trim the runs to the
  // sphere of radius r_c without more runs, and wide columns keep the runs few (~13 per target).
  // Measured at N = 1e5 (uniform, one thread, AVX-512) against cubic cells of r_c / 2: P2P
  // 0.07-0.09 s instead of 0.11-0.12 (Laplace), 0.20 instead of 0.21 (stokeslet), with 2.9
  // instead of 2.6 distance tests per pair. float32 (16 lanes per distance test on AVX-512):
  // columns of r_c (3 x 3 colleague columns, ~9 runs per target) measured faster: water box, 81000
  // atoms, Laplace field at 1e-3, P2P 0.0373 -> 0.0322 s; uniform N = 1e5 at 1e-4, stokeslet
  // 0.0566 -> 0.0514, Laplace field 0.0453 -> 0.0373 (r_c / 1.5 and / 0.8 were slower); in
  // float64 the same change was neutral to 7% slower.
  const double xy = cells_per_rc_xy(prec);
  for (int d = 0; d < 3; ++d) n[d] = std::max(1.0, std::floor((d == 2 ? kCellsPerRcZ : xy) * box[d] / rc));
  // More cells than ~8 per point only cost memory; coarser cells (width still >= r_c) are valid.
  const double cap = std::min(8.0 * double(n_points) + 64.0, double(1 << 26));
  while (n[0] * n[1] * n[2] > cap) {
    const int d = n[0] >= n[1] && n[0] >= n[2] ? 0 : (n[1] >= n[2] ? 1 : 2);
    n[d] = std::max(1.0, std::floor(n[d] / 2));
  }
  return {static_cast<int>(n[0]), static_cast<int>(n[1]), static_cast<int>(n[2])};
}

NearFieldLoad near_field_load(const std::array<double, 3>& box, std::size_t n_sources, std::size_t n_targets,
                              double rc, const std::array<int, 3>& cells, int strength_components, int threads) {
  NearFieldLoad l;
  const double ncell = double(cells[0]) * cells[1] * cells[2];
  double K[3], w[3];  // reach in cells per axis (as double: thin boxes make it huge)
  for (int d = 0; d < 3; ++d) {
    K[d] = std::max(1.0, std::ceil(rc * cells[d] / box[d] * (1 - 1e-12)));
    w[d] = box[d] / cells[d];
  }
  l.colleagues = (2.0 * K[0] + 1) * (2.0 * K[1] + 1) * (2.0 * K[2] + 1);
  l.columns = (2.0 * K[0] + 1) * (2.0 * K[1] + 1);
  // P2P scans, per target, the z-cells of each column of colleague cells that the sphere of radius
  // r_c around the target reaches (cpu/p2p_simd.cpp): the mean number of cells over 4^3
  // target positions in a cell, times the mean sources per cell. Beyond 400 columns (r_c many
  // cell widths: thin boxes) the bound of all colleague cells (the sampling would cost more than
  // such a plan is worth).
  double cells_scanned = 0;
  const double rc2 = rc * rc;
  if (l.columns > 400) cells_scanned = 64.0 * l.colleagues;
  else for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c) {
        const double f[3] = {(a + 0.5) / 4, (b + 0.5) / 4, (c + 0.5) / 4};
        auto gap = [&](int d, int o) { return o > 0 ? (o - f[d]) * w[d] : (o < 0 ? (f[d] - o - 1) * w[d] : 0.0); };
        const int kx = static_cast<int>(K[0]), ky = static_cast<int>(K[1]);  // <= 200 here
        for (int ox = -kx; ox <= kx; ++ox)
          for (int oy = -ky; oy <= ky; ++oy) {
            const double g2 = gap(0, ox) * gap(0, ox) + gap(1, oy) * gap(1, oy);
            if (g2 >= rc2) continue;
            const double h = std::sqrt(rc2 - g2), z = f[2] * w[2];
            const double z0 = std::max(-K[2], std::floor((z - h) / w[2]));
            const double z1 = std::min(K[2], std::floor((z + h) / w[2]));
            cells_scanned += z1 - z0 + 1;
          }
      }
  l.checks_per_target = cells_scanned / 64.0 * double(n_sources) / ncell;
  l.pair_checks = double(n_targets) * l.checks_per_target;
  // Per thread: the colleague list (cell index + shift, 32 bytes; the per-axis offset lists are
  // smaller) and the compacted pair buffers (r^2, r_vec, strengths: 8 bytes each) of the
  // fullest target cell, taken as 4x the mean (clustered sources).
  const double per_thread = 32.0 * l.colleagues + 8.0 * (4 + strength_components) * (4.0 * l.checks_per_target + 1);
  l.bytes = per_thread * std::max(1, threads);
  return l;
}

// The cost model (seed 000, section 5: a performance model per stage, its constants measured on
// the machine; calibrate.cpp measures them, CostConstants in ewald.hpp lists the terms). P2P:
// per target cell a fixed overhead, per target and column of colleague cells the set-up of its
// runs, then every source of the runs is tested (the SIMD distance test) and the kernel is
// evaluated on the pairs within r_c only (compacted first), so the cost has a per-check and a
// per-pair term. Far field: P2G and G2P per point and window row (P^2 rows of P n_grid values)
// plus the padded grid's fold / unfold, the FFTs per M log2 M, CNV per half-spectrum mode.
double model_fft_cost(const TuneInput& in, const std::array<int, 3>& M) {
  const CostConstants& c = in.costs;
  const double mtot = double(M[0]) * M[1] * M[2];
  const double lm = std::log2(std::max(2.0, mtot));
  return c.fft * std::max(0.5, 1.0 + c.fft_growth * (lm - 18.0)) * mtot * lm * (in.n_grid + in.n_out);
}

ModelStages model_stages(const TuneInput& in, double rc, const std::array<int, 3>& cells, const std::array<int, 3>& M,
                         int P) {
  const CostConstants& c = in.costs;
  const int v = std::clamp(in.cost_variant, 0, kCostVariants - 1);
  const double ncell = double(cells[0]) * cells[1] * cells[2];
  const double nt = double(in.n_targets), ns = double(in.n_sources);
  const double V = in.box[0] * in.box[1] * in.box[2];
  const double crowd = std::max(1.0, in.crowding);  // (free axes: the points fill 1 / crowd of the box)
  const NearFieldLoad nl = near_field_load(in.box, static_cast<std::size_t>(std::llround(double(in.n_sources) * crowd)),
                                           in.n_targets, rc, cells, in.n_src, in.threads);
  // target cells holding a target (uniform points in 1 / crowd of the cells)
  const double occupied = ncell / crowd * -std::expm1(-nt * crowd / ncell);
  // pair symmetry: each pair and (about) each distance test once for both points
  const double half = pair_symmetry_applies(in.kernel, in.field, in.precision, in.pair_symmetry, false, rc, in.box,
                                            in.n_sources, in.threads)
                          ? 0.5 : 1.0;
  const double pairs = half * nt * ns * crowd * (4.0 / 3.0 * kPi * rc * rc * rc) / V;
  const double p2p = c.p2p_cell * occupied + c.p2p_column * nt * nl.columns +
                     c.p2p_check[v] * half * nl.pair_checks + c.p2p_pair[v] * pairs;
  const double P2 = double(P) * P;
  const double padded = double(M[0] + 2 * P) * (M[1] + 2 * P) * (M[2] + 2 * P);
  const double p2g =
      c.p2g_scale[v] * ns * P2 * (c.window_row + c.spread * P * in.n_grid) + c.grid_pass * in.n_grid * padded;
  const double g2p =
      c.g2p_scale[v] * nt * P2 * (c.window_row + c.interp * P * in.n_out) + c.grid_pass * in.n_out * padded;
  const double fft = model_fft_cost(in, M);
  const double cnv = double(M[0]) * M[1] * (M[2] / 2 + 1) * (c.cnv_mode + c.cnv_component * (in.n_grid + in.n_out));
  const double th = std::max(1, in.threads);
  return {p2p / th, p2g / th, fft / th, cnv / th, g2p / th};
}

double model_cost(const TuneInput& in, double rc, const std::array<int, 3>& cells, const std::array<int, 3>& M,
                  int P) {
  return model_stages(in, rc, cells, M, P).total();
}

namespace {

// ELLIPTICA_EWALD_TRACE set to anything but "" or "0" (docs/ewald.md, "Cost model").
bool trace_on() {
  const char* e = std::getenv("ELLIPTICA_EWALD_TRACE");
  return e && *e && std::string(e) != "0";
}

// Smallest x in [lo, hi] with f(x) <= target for a decreasing f (geometric bisection).
template <class F>
double solve_decreasing(F f, double target, double lo, double hi) {
  if (f(hi) > target) return std::numeric_limits<double>::infinity();
  if (f(lo) <= target) return lo;
  for (int it = 0; it < 60; ++it) {
    const double mid = std::sqrt(lo * hi);
    if (f(mid) <= target)
      hi = mid;
    else
      lo = mid;
    if (hi / lo < 1.0 + 1e-4) break;
  }
  return hi;
}

}  // namespace

// Estimates of the chosen quantity (0 values, 1 field): the root sum of squares over the terms.
template <class F>
double per_quantity(const TuneInput& in, int quantity, F&& est) {
  double s = 0;
  for (const ErrorTerm& t : in.terms)
    if (t.quantity == quantity && in.rho[t.density] > 0) {
      const double e = est(t);
      s += e * e;
    }
  return std::sqrt(s);
}

Params choose_params(const TuneInput& in) {
  const Options& ov = *in.overrides;
  const double Lmin = std::min({in.box[0], in.box[1], in.box[2]});
  const double V = in.box[0] * in.box[1] * in.box[2];
  const double safety = 0.35 / std::sqrt(3.0);
  const double target[2] = {safety * in.eps[0], safety * in.eps[1]};
  const int nq = in.field ? 2 : 1;
  const int cin = in.n_grid, cout = in.n_out;

  // Largest ratio estimate / target over the quantities (<= 1 is admissible).
  auto worst = [&](auto&& est) {
    double e = 0;
    for (int q = 0; q < nq; ++q) e = std::max(e, per_quantity(in, q, est) / target[q]);
    return e;
  };
  // Sources near a target (closer than ~h) alias coherently with it, like its own source.
  auto near_at = [&](int layer, double h) {
    if (!in.near_q2) return in.self_q2[layer];
    return std::max(in.self_q2[layer], in.near_q2(layer, h));
  };
  auto near = [&](int layer, const std::array<int, 3>& M) {
    return near_at(layer, std::max({in.box[0] / M[0], in.box[1] / M[1], in.box[2] / M[2]}));
  };
  auto real_ok = [&](double xi, double rc) {
    return worst([&](const ErrorTerm& t) {
      return est_real(t.kind, in.rho[t.density], xi, rc, V, in.mean_density[t.density]);
    });
  };
  auto fourier_ok = [&](double xi, double kmax) {
    return worst([&](const ErrorTerm& t) {
      return est_fourier(t.kind, in.rho[t.density], xi, kmax, near_at(t.density, kPi / kmax));
    });
  };
  auto window_ok = [&](double xi, const std::array<int, 3>& M, int P, double beta) {
    return worst([&](const ErrorTerm& t) {
      return est_window(t.kind, in.rho[t.density], xi, in.box, M, P, beta, near(t.density, M), in.mean_far[t.density],
                        in.mean_ball);
    });
  };
  auto beta_of = [&](int P) { return ov.window_shape ? *ov.window_shape : 2.5 * P; };

  // r_c may exceed a box length (P2P then visits several images per axis; a thin box needs that).
  // Candidates avoid the lattice lengths |p L|, where a source's own images would sit on the
  // cutoff and rounding would decide whether they are counted.
  const double Lmax = std::max({in.box[0], in.box[1], in.box[2]});
  const double rc_max = in.rc_max > 0 ? std::min(in.rc_max, 0.95 * Lmax) : 0.95 * Lmax;
  std::vector<double> rcs;
  if (ov.rc) {
    rcs.push_back(*ov.rc);
  } else if (ov.xi) {
    const double xi = *ov.xi;
    double rc = solve_decreasing([&](double r) { return real_ok(xi, r); }, 1.0, 1e-6 * Lmin, rc_max);
    rcs.push_back(std::isfinite(rc) ? rc : rc_max);
  } else {
    for (double rc = rc_max; rc > 2e-3 * Lmin; rc *= 0.87) {
      bool on_lattice = false;
      for (int d = 0; d < 3; ++d) {
        const double m = rc / in.box[d];
        if (m > 0.5 && std::abs(m - std::round(m)) < 0.02) on_lattice = true;
      }
      if (on_lattice) continue;
      rcs.push_back(rc);
      const double cells = std::floor(in.box[0] / rc) * std::floor(in.box[1] / rc) * std::floor(in.box[2] / rc);
      if (cells > 8.0 * double(in.n_sources + in.n_targets) + 64) break;
    }
  }

  Params best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, Params>> candidates;  // (modelled cost, parameters) of every admissible choice
  bool memory_rejected = false, near_rejected = false;
  const bool any_override = ov.xi || ov.rc || ov.grid || ov.window_support || ov.window_shape;
  // Grid memory: FFT input/output, half-spectrum and the padded P2G/G2P grid.
  auto grid_bytes = [&](const std::array<int, 3>& M) { return double(M[0]) * M[1] * M[2] * std::max(cin, cout) * 8.0 * 3.5; };
  if (ov.grid && grid_bytes(*ov.grid) > kMaxGridBytes)
    throw InvalidArgument("grid override M = " + std::to_string((*ov.grid)[0]) + " x " + std::to_string((*ov.grid)[1]) + " x " +
                          std::to_string((*ov.grid)[2]) + " needs about " + format_bytes(grid_bytes(*ov.grid)) +
                          " of FFT grid memory, above the " + format_bytes(kMaxGridBytes) + " limit");
  for (double rc : rcs) {
    double xi;
    if (ov.xi) {
      xi = *ov.xi;
    } else {
      // Real-space error decreases with xi at fixed r_c.
      xi = solve_decreasing([&](double x) { return real_ok(x, rc); }, 1.0, 0.1 / rc, 40.0 / rc);
      if (!std::isfinite(xi)) continue;
    }
    const std::array<int, 3> cells = cell_grid(in.box, rc, in.n_sources + in.n_targets, in.costs.precision);
    {
      const NearFieldLoad nl =
          near_field_load(in.box, static_cast<std::size_t>(std::llround(double(in.n_sources) * std::max(1.0, in.crowding))),
                          in.n_targets, rc, cells, in.n_src, in.threads);
      if (nl.pair_checks > kMaxPairChecks || nl.bytes > kMaxNearFieldBytes) {
        near_rejected = true;
        continue;
      }
    }
    std::vector<std::array<int, 3>> grids;
    if (ov.grid) {
      grids.push_back(*ov.grid);
    } else {
      const double kmax = solve_decreasing([&](double km) { return fourier_ok(xi, km); }, 1.0, 0.5 * xi, 60.0 * xi);
      if (!std::isfinite(kmax)) continue;
      // Oversampling sigma; and a floor on M per axis, which matters for a short axis whose
      // few Fourier modes leave too few grid points for the window.
      for (int mfloor : {4, 8, 16, 32})
        for (double sigma : {1.0, 1.15, 1.3, 1.5, 1.75, 2.0}) {
          std::array<int, 3> M;
          bool too_big = false;
          for (int d = 0; d < 3; ++d) {
            const double m = std::max(std::ceil(sigma * kmax * in.box[d] / kPi), double(mfloor));
            if (m > 8192) too_big = true;
            else M[d] = fft_friendly(static_cast<int>(m));
          }
          if (too_big) {
            memory_rejected = true;
            continue;
          }
          if (std::find(grids.begin(), grids.end(), M) == grids.end()) grids.push_back(M);
          // With measured FFT times (FftPlanner::Wisdom) also the next two FFT-friendly sizes per
          // axis: a slightly larger grid can transform faster (measured here: 9 float64 r2c of
          // 128^3 in 88 ms, of 126^3 in 121 ms) and allows a smaller window P.
          if (in.fft_seconds) {
            std::array<int, 3> Mn = M;
            for (int step = 0; step < 2; ++step) {
              bool big = false;
              for (int d = 0; d < 3; ++d) {
                Mn[d] = fft_friendly(Mn[d] + 1);
                big |= Mn[d] > 8192;
              }
              if (big) break;
              if (std::find(grids.begin(), grids.end(), Mn) == grids.end()) grids.push_back(Mn);
            }
          }
        }
    }
    for (const auto& M : grids) {
      if (grid_bytes(M) > kMaxGridBytes) {
        memory_rejected = true;
        continue;
      }
      const int mmin = std::min({M[0], M[1], M[2]});
      int P = 0;
      if (ov.window_support) {
        P = *ov.window_support;
      } else {
        int lo = 2, hi = std::min(24, mmin / 2);  // the window spans at most half a period
        if (hi < lo || window_ok(xi, M, hi, beta_of(hi)) > 1.0) continue;
        while (lo < hi) {
          const int mid = (lo + hi) / 2;
          if (window_ok(xi, M, mid, beta_of(mid)) <= 1.0)
            hi = mid;
          else
            lo = mid + 1;
        }
        P = lo;
      }
      const double cost = model_cost(in, rc, cells, M, P);
      Params cand;
      cand.xi = xi;
      cand.rc = rc;
      cand.grid = M;
      cand.cells = cells;
      cand.P = P;
      candidates.push_back({cost, cand});
      if (cost < best_cost) {
        best_cost = cost;
        best = cand;
      }
      if (ov.window_support) break;
    }
  }
  // Measured FFT times (FftPlanner::Wisdom): the candidates within kMeasuredFftSpread of the best
  // modelled cost, on at most kMeasuredFftGrids distinct grids, are ranked again with the FFT term
  // replaced by the measured time of their grid (measured once per machine, see fft_wisdom.hpp).
  if (in.fft_seconds && std::isfinite(best_cost) && !ov.grid) {
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::array<int, 3>> measured;
    const double threads = std::max(1, in.threads);
    double best_measured = std::numeric_limits<double>::infinity();
    const bool trace = trace_on();
    if (trace)
      std::fprintf(stderr,
                   "elliptica ewald tuner: %s, %s, %zu sources, %zu targets, %d thread(s): candidates within %.2gx of the "
                   "best modelled cost, ranked by modelled seconds with the measured FFT + IFFT\n",
                   cost_variant_name(std::clamp(in.cost_variant, 0, kCostVariants - 1)).c_str(),
                   to_string(in.precision).c_str(), in.n_sources, in.n_targets, in.threads, kMeasuredFftSpread);
    for (const auto& [cost, cand] : candidates) {
      if (cost > kMeasuredFftSpread * best_cost) break;
      if (std::find(measured.begin(), measured.end(), cand.grid) == measured.end()) {
        if (measured.size() >= kMeasuredFftGrids) continue;
        measured.push_back(cand.grid);
      }
      const double t = in.fft_seconds(cand.grid);
      if (!std::isfinite(t)) break;  // no measurements: keep the model's choice
      const double c = cost - model_fft_cost(in, cand.grid) / threads + t;
      if (trace) {
        const ModelStages ms = model_stages(in, cand.rc, cand.cells, cand.grid, cand.P);
        std::fprintf(stderr,
                     "  candidate r_c %.4g M %dx%dx%d P %d: P2P %.4g s, P2G %.4g s, G2P %.4g s, CNV %.4g s, FFT + IFFT "
                     "%.4g s modelled / %.4g s measured; total %.4g s\n",
                     cand.rc, cand.grid[0], cand.grid[1], cand.grid[2], cand.P, ms.p2p, ms.p2g, ms.g2p, ms.cnv, ms.fft,
                     t, c);
      }
      if (c < best_measured) {
        best_measured = c;
        best = cand;
      }
    }
    if (trace)
      std::fprintf(stderr, "  chosen: r_c %.4g M %dx%dx%d P %d\n", best.rc, best.grid[0], best.grid[1], best.grid[2],
                   best.P);
  }
  if (!std::isfinite(best_cost)) {
    std::ostringstream os;
    os << "no spectral Ewald parameters meet the tolerance (absolute RMS target " << in.eps[0] << " for the "
       << (in.kernel == Kernel::Laplace ? "potential" : "velocity");
    if (in.field) os << ", " << in.eps[1] << " for the field";
    os << ")";
    if (memory_rejected || near_rejected) {
      os << " within the size limits:";
      if (memory_rejected) os << " the FFT grids it needs exceed " << format_bytes(kMaxGridBytes) << " (or 8192 points per axis)";
      if (memory_rejected && near_rejected) os << ", and";
      if (near_rejected)
        os << " the real-space cutoffs it needs exceed the near-field limits (" << kMaxPairChecks << " pair checks, "
           << format_bytes(kMaxNearFieldBytes) << " of pair lists)";
      const double Lmx = std::max({in.box[0], in.box[1], in.box[2]});
      if (Lmx / Lmin > 1e3)
        os << "; the box's aspect ratio " << Lmx / Lmin << " is far beyond what a 3D-periodic Ewald sum handles well";
    }
    if (any_override) {
      os << "; the overrides (xi, rc, grid, P, beta) may rule it out";
      throw NumericalError(os.str());
    }
    if (memory_rejected || near_rejected) throw ResourceError(os.str());
    os << "; it may be below double-precision round-off";
    throw NumericalError(os.str());
  }
  best.beta = beta_of(best.P);
  for (int d = 0; d < 3; ++d) best.h[d] = in.box[d] / best.grid[d];
  const double kmax = kPi * std::min({best.grid[0] / in.box[0], best.grid[1] / in.box[1], best.grid[2] / in.box[2]});
  auto estimates = [&](int q, double& er, double& ef, double& ew) {
    er = per_quantity(in, q, [&](const ErrorTerm& t) {
      return est_real(t.kind, in.rho[t.density], best.xi, best.rc, V, in.mean_density[t.density]);
    });
    ef = per_quantity(in, q, [&](const ErrorTerm& t) {
      return est_fourier(t.kind, in.rho[t.density], best.xi, kmax, near_at(t.density, kPi / kmax));
    });
    ew = per_quantity(in, q, [&](const ErrorTerm& t) {
      return est_window(t.kind, in.rho[t.density], best.xi, in.box, best.grid, best.P, best.beta, near(t.density, best.grid),
                        in.mean_far[t.density], in.mean_ball);
    });
  };
  estimates(0, best.est_real, best.est_fourier, best.est_window);
  best.est_total = std::sqrt(best.est_real * best.est_real + best.est_fourier * best.est_fourier +
                             best.est_window * best.est_window);
  best.eps_abs = in.eps[0];
  if (in.field) {
    double er, ef, ew;
    estimates(1, er, ef, ew);
    best.field_est_total = std::sqrt(er * er + ef * ef + ew * ew);
    best.field_eps_abs = in.eps[1];
  }
  return best;
}

}  // namespace elliptica::ewald::detail
