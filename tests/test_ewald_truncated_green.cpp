// The truncated Green's functions' transforms (src/ewald/truncated_green.hpp; issue 31) against
// their defining integrals, computed by composite Gauss-Legendre quadrature (panels of at most
// one radian of k r; the log kernels' first panel with r = h u^2, which smooths r ln r), at k = 0,
// on both sides of the series / closed-form switch (kR = 0.25) and far out (kR = 300); the error
// bound is 1e-12 of the integrand's L1 norm (the rounding the integral itself carries); the
// 2P reference below (the plan with truncated kernels against direct sums:
// test_ewald_free_space.cpp). Cost: about 2 s.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <string>
#include <functional>
#include <vector>

#include "ewald/truncated_green.hpp"

namespace {

namespace tr = elliptica::ewald::detail::truncated;
constexpr double kPi = tr::kPi;

// n-point Gauss-Legendre nodes and weights on [-1, 1] (Newton on P_n)
void gauss_legendre(int n, std::vector<double>& x, std::vector<double>& w) {
  x.assign(std::size_t(n), 0.0);
  w.assign(std::size_t(n), 0.0);
  for (int i = 0; i < n; ++i) {
    double z = std::cos(kPi * (i + 0.75) / (n + 0.5)), dp = 0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1, p1 = z;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (z * p1 - p0) / (z * z - 1);
      const double dz = p1 / dp;
      z -= dz;
      if (std::abs(dz) < 1e-16) break;
    }
    x[std::size_t(i)] = z;
    w[std::size_t(i)] = 2 / ((1 - z * z) * dp * dp);
  }
}

struct Integral {
  double value = 0, l1 = 0;
};

// int_0^R f(r) dr by panels of width <= min(R, 1 / k); the first panel by r = h u^2 when `log_start`
Integral integrate(const std::function<double(double)>& f, double R, double k, bool log_start) {
  static std::vector<double> x, w;
  if (x.empty()) gauss_legendre(40, x, w);
  const int panels = std::max(4, int(std::ceil(k * R)) * 2);
  const double h = R / panels;
  Integral s;
  for (int p = 0; p < panels; ++p)
    for (std::size_t i = 0; i < x.size(); ++i) {
      double r, jac;
      if (p == 0 && log_start) {
        const double u = 0.5 * (x[i] + 1);
        r = h * u * u;
        jac = 0.5 * w[i] * 2 * h * u;
      } else {
        r = h * (p + 0.5 * (x[i] + 1));
        jac = 0.5 * w[i] * h;
      }
      const double v = f(r) * jac;
      s.value += v;
      s.l1 += std::abs(v);
    }
  return s;
}

double sinc(double t) { return t == 0 ? 1.0 : std::sin(t) / t; }

const std::vector<double> kRs{0.0, 1e-9, 1e-4, 0.05, 0.2499, 0.2501, 0.7, 1.0, 3.3, 10.0, 41.7, 300.0};
const std::vector<double> Rs{0.37, 1.0, 1.9, 4.2};

TEST(TruncatedGreen, Laplace3dIsTheTransformOfOneOverR) {
  for (double R : Rs)
    for (double kR : kRs) {
      const double k = kR / R;
      const Integral q = integrate([&](double r) { return 4 * kPi * r * sinc(k * r); }, R, k, false);
      EXPECT_NEAR(tr::laplace_3d(k, R), q.value, 1e-12 * q.l1) << "R " << R << " kR " << kR;
    }
  EXPECT_NEAR(tr::laplace_3d(0, 1.3), 2 * kPi * 1.3 * 1.3, 1e-14);
}

// The truncated stokeslet's transform, k along z: S_R,zz = s_delta - s_kk and S_R,xx = s_delta,
// both the 2-D integral int_0^R r int_{-1}^1 (1 + m(mu)) cos(k r mu) 2 pi dmu dr with the
// squared direction cosine's azimuthal mean m = mu^2 (zz) or (1 - mu^2)/2 (xx), by nested
// composite quadrature (kR up to 41.7: the nested rule costs (kR)^2).
TEST(TruncatedGreen, Stokeslet3dIsTheTransformOfTheStokeslet) {
  for (double R : {0.37, 1.9})
    for (double kR : kRs) {
      if (kR > 50) continue;
      const double k = kR / R;
      double sd = 0, skk = 0;
      tr::stokeslet_3d(k, R, sd, skk);
      for (int comp = 0; comp < 2; ++comp) {
        const Integral q = integrate(
            [&](double r) {
              const Integral inner = integrate(
                  [&](double u) {  // mu = u - 1 on [0, 2]: both halves of [-1, 1]
                    const double mu = u - 1, m = comp == 0 ? mu * mu : 0.5 * (1 - mu * mu);
                    return (1 + m) * std::cos(k * r * mu);
                  },
                  2.0, k * r / 2 + 1e-300, false);
              return 2 * kPi * r * inner.value;
            },
            R, k, false);
        const double want = comp == 0 ? sd - skk : sd;
        EXPECT_NEAR(want, q.value, 1e-12 * std::max(q.l1, 1e-300)) << (comp ? "xx" : "zz") << " R " << R << " kR " << kR;
      }
    }
  double sd = 0, skk = 0;
  tr::stokeslet_3d(0, 1.3, sd, skk);
  EXPECT_NEAR(sd, 8 * kPi / 3 * 1.3 * 1.3, 1e-13);  // int_{r<R} S = (8 pi / 3) R^2 I
  EXPECT_EQ(skk, 0.0);
  // far from the truncation's oscillation: 8 pi (k^2 I - k k^T) / k^4 on average over kR
  double avg_d = 0, avg_k = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    tr::stokeslet_3d(3.0, (200.0 + 2 * kPi * (i + 0.5) / n) / 3.0, sd, skk);
    avg_d += sd / n;
    avg_k += skk / n;
  }
  EXPECT_NEAR(avg_d, 8 * kPi / 9, 1e-4);  // the decaying j0, j1 terms leave O(1 / (kR)^2)
  EXPECT_NEAR(avg_k, 8 * kPi / 9, 1e-3);
}

// The truncated stresslet's transform, k along z: T_R,zzz = i (t_a + 3 t_b) and T_R,zxx = i t_b,
// from T^_jlm = -6 int_0^R int n_j n_l n_m e^{-i k r mu} dOmega dr = 12 pi i int_0^R int_{-1}^1
// m(mu) sin(k r mu) dmu dr with the azimuthal mean m = mu^3 (zzz) or mu (1 - mu^2) / 2 (zxx), by
// nested composite quadrature (independent of the closed forms' spherical Bessel functions).
TEST(TruncatedGreen, Stresslet3dIsTheTransformOfTheStresslet) {
  for (double R : {0.37, 1.9})
    for (double kR : {1e-9, 1e-4, 0.05, 0.7, 2.999, 3.001, 10.0, 41.7}) {
      const double k = kR / R;
      double ta = 0, tb = 0;
      tr::stresslet_3d(k, R, ta, tb);
      for (int comp = 0; comp < 2; ++comp) {
        const Integral q = integrate(
            [&](double r) {
              const Integral inner = integrate(
                  [&](double u) {
                    const double mu = u - 1, m = comp == 0 ? mu * mu * mu : 0.5 * mu * (1 - mu * mu);
                    return m * std::sin(k * r * mu);
                  },
                  2.0, k * r / 2 + 1e-300, false);
              return 12 * kPi * inner.value;
            },
            R, k, false);
        const double want = comp == 0 ? ta + 3 * tb : tb;
        EXPECT_NEAR(want, q.value, 1e-12 * std::max(q.l1, 1e-300) + 1e-300)
            << (comp ? "zxx" : "zzz") << " R " << R << " kR " << kR;
      }
    }
  double ta = 1, tb = 1;
  tr::stresslet_3d(0, 1.3, ta, tb);
  EXPECT_EQ(ta, 0.0);
  EXPECT_EQ(tb, 0.0);
  // far from the truncation's oscillation: (8 pi / k)[(delta k^)_sym - 2 k^k^k^], t_a -> -16 pi / k,
  // t_b -> 8 pi / k (the decaying j1 / x, j2 terms average out over a period of kR)
  double avg_a = 0, avg_b = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    tr::stresslet_3d(3.0, (200.0 + 2 * kPi * (i + 0.5) / n) / 3.0, ta, tb);
    avg_a += ta / n;
    avg_b += tb / n;
  }
  EXPECT_NEAR(avg_a, -16 * kPi / 3, 1e-3);
  EXPECT_NEAR(avg_b, 8 * kPi / 3, 1e-3);
}

// The 1P stresslet's k_z = 0 plane: the line integrals -8 rho_j rho_l rho_m / rho^4 and -4 rho_j /
// rho^2 truncated at R, k along x: xxx i (3 s_sym + s_kkk), xyy i s_sym, xzz i s_zz, from
// T^ = int_0^R int_0^{2 pi} K(theta) e^{-i k rho cos(theta)} dtheta drho (the 1 / rho of the
// kernels cancels rho drho): K = -8 cos^3, -8 cos sin^2, -4 cos, i.e. 8 i int int cos^3 sin(k rho
// cos), ..., by nested quadrature over theta (no Bessel function involved).
TEST(TruncatedGreen, StressletOnePZeroPlaneIsItsTransform) {
  for (double R : {0.37, 1.9})
    for (double kR : {1e-9, 1e-4, 0.05, 0.7, 2.999, 3.001, 10.0, 41.7}) {
      const double k = kR / R;
      double ss = 0, sk = 0, sz = 0;
      tr::stresslet_1p_zero(k, R, ss, sk, sz);
      for (int comp = 0; comp < 3; ++comp) {
        const Integral q = integrate(
            [&](double r) {
              const Integral inner = integrate(
                  [&](double th) {
                    const double c = std::cos(th), s = std::sin(th);
                    const double m = comp == 0 ? 8 * c * c * c : comp == 1 ? 8 * c * s * s : 4 * c;
                    return m * std::sin(k * r * c);
                  },
                  2 * kPi, k * r / 8 + 1e-300, false);  // (panels of about 2.5 radians of phase)
              return inner.value;
            },
            R, k, false);
        const double want = comp == 0 ? 3 * ss + sk : comp == 1 ? ss : sz;
        EXPECT_NEAR(want, q.value, 1e-12 * std::max(q.l1, 1e-300) + 1e-300)
            << (comp == 0 ? "xxx" : comp == 1 ? "xyy" : "xzz") << " R " << R << " kR " << kR;
      }
    }
}

// The 1P k_z = 0 plane: -2 ln(rho / R) (laplace) and the 2-D stokeslet of a line of forces,
// -2 ln(rho / R) I_perp + 2 rho^ rho^^T across and -4 ln(rho / R) along the line, truncated at R;
// the angular integrals by std::cyl_bessel_j (J0, J2: independent of the closed forms' libm j0 /
// j1): with k along x, int n_x^2 e^{-i k rho cos theta} dtheta = pi (J0 - J2), n_y^2: pi (J0 + J2).
TEST(TruncatedGreen, OnePZeroPlaneKernelsAreTheirTransforms) {
  for (double R : Rs)
    for (double kR : kRs) {
      const double k = kR / R;
      auto J = [&](int n, double r) { return std::cyl_bessel_j(double(n), k * r); };
      const Integral lap = integrate(
          [&](double r) { return r == 0 ? 0.0 : -2 * std::log(r / R) * J(0, r) * 2 * kPi * r; }, R, k, true);
      EXPECT_NEAR(tr::laplace_1p_zero(k, R), lap.value, 1e-12 * lap.l1) << "R " << R << " kR " << kR;
      double aI = 0, akk = 0, along = 0;
      tr::stokeslet_1p_zero(k, R, aI, akk, along);
      const Integral xx = integrate(
          [&](double r) {
            return r == 0 ? 0.0 : r * (-4 * kPi * std::log(r / R) * J(0, r) + 2 * kPi * (J(0, r) - J(2, r)));
          },
          R, k, true);
      const Integral yy = integrate(
          [&](double r) {
            return r == 0 ? 0.0 : r * (-4 * kPi * std::log(r / R) * J(0, r) + 2 * kPi * (J(0, r) + J(2, r)));
          },
          R, k, true);
      EXPECT_NEAR(aI + akk, xx.value, 1e-12 * xx.l1) << "along k, R " << R << " kR " << kR;
      EXPECT_NEAR(aI, yy.value, 1e-12 * yy.l1) << "across k, R " << R << " kR " << kR;
      EXPECT_NEAR(along, 2 * lap.value, 2e-12 * lap.l1) << "along the line, R " << R << " kR " << kR;
    }
  // far out both tend to the 3P multiplier 8 pi (I - k^ k^^T) / k^2 on average over kR (the k^ k^^T
  // part oscillates with an amplitude growing as sqrt(kR): the truncated rho^ rho^^T jumps at R;
  // a Hann-weighted mean over 10 periods removes the oscillation)
  double aI = 0, akk = 0, along = 0, mI = 0, mkk = 0, wsum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double t = (i + 0.5) / n, w = std::sin(kPi * t) * std::sin(kPi * t);
    tr::stokeslet_1p_zero(3.0, (300.0 + 20 * kPi * t) / 3.0, aI, akk, along);
    mI += w * aI;
    mkk += w * akk;
    wsum += w;
  }
  mI /= wsum;
  mkk /= wsum;
  EXPECT_NEAR(mI, 8 * kPi / 9, 1e-3);
  EXPECT_NEAR(mkk, -8 * kPi / 9, 1e-3);
  EXPECT_NEAR(tr::laplace_1p_zero(0, 1.3), kPi * 1.3 * 1.3, 1e-13);
}

}  // namespace

// The 2P reference (tests/common/ewald2p_reference.hpp), the independent check the 2P plan will be
// tested against: the Madelung constant of the square lattice of alternating charges (one
// rock-salt (100) plane: M2 = 1.6155426267128247, Zucker 1974, OEIS A088537; the potential at an
// ion from all the others is -M2 q / a), and xi-independence for a neutral set off the plane.
#include "common/ewald2p_reference.hpp"

namespace {

TEST(Ewald2pReference, SquareLatticeMadelungConstant) {
  // cell 2a x 2a, a = 1: +1 at (0,0), (1,1); -1 at (1,0), (0,1)
  const std::vector<double> pts{0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0};
  const std::vector<double> q{1, 1, -1, -1};
  for (double xi : {1.2, 1.8, 2.6}) {
    const std::vector<double> phi = elliptica::test::ewald2p_laplace(pts, q, 2.0, 2.0, xi, 4, 12);
    for (int m = 0; m < 4; ++m) EXPECT_NEAR(phi[std::size_t(m)] * q[std::size_t(m)], -1.6155426267128247, 1e-12) << "xi " << xi;
  }
}

TEST(Ewald2pReference, NeutralSetOffThePlaneIsXiIndependent) {
  std::vector<double> pts, q;
  std::uint64_t s = 12345;
  auto u = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) * 0x1p-53;
  };
  const double Lx = 1.3, Ly = 0.9;
  double sum = 0;
  for (int i = 0; i < 12; ++i) {
    pts.insert(pts.end(), {u() * Lx, u() * Ly, (u() - 0.5) * 0.8});
    q.push_back(u() - 0.5);
    sum += q.back();
  }
  q.back() -= sum;  // neutral
  const std::vector<double> a = elliptica::test::ewald2p_laplace(pts, q, Lx, Ly, 3.0, 3, 14);
  const std::vector<double> b = elliptica::test::ewald2p_laplace(pts, q, Lx, Ly, 4.5, 3, 20);
  for (std::size_t m = 0; m < q.size(); ++m) EXPECT_NEAR(a[m], b[m], 1e-11 * (1 + std::abs(a[m]))) << m;
}

}  // namespace

// The 0P kernel table from one octant (periodic_kernel_table with the parities: DCT-I / DST-I),
// and 2P / 1P's per-mode tables from their half lines / quadrants, against the complex path
// (parities unknown), for each parity pattern the plan uses (even; odd
// along one axis, an odd table; odd along two, even; odd along all three, an odd table), a
// separable axis factor, unequal M and h: equal to 1e-13 of the table's largest entry (both are
// the same sums in another order).
#include "elliptica/core/error.hpp"
#include "ewald/cpu/truncated_conv.hpp"

namespace {

TEST(KernelTable, OctantEqualsTheComplexPath) {
  const std::array<int, 3> M{12, 16, 10};
  const std::array<double, 3> h{0.11, 0.09, 0.13};
  const double R = 0.9, extent = 1.3;
  auto factor = [](int a, double k) { return 1.0 + 0.01 * (a + 1) * k * k; };
  for (const std::array<int, 3>& par : {std::array<int, 3>{0, 0, 0}, {1, 0, 0}, {0, 1, 1}, {1, 1, 1}, {0, 0, 1}}) {
    const bool odd = (par[0] + par[1] + par[2]) % 2 == 1;
    // a kernel with that parity: the truncated 1/r's transform times k_a per odd axis
    auto hat = [&](double kx, double ky, double kz) {
      const double k[3] = {kx, ky, kz};
      double v = tr::laplace_3d(std::sqrt(kx * kx + ky * ky + kz * kz), R) * std::exp(-0.01 * (kx * kx + ky * ky + kz * kz));
      for (int a = 0; a < 3; ++a)
        if (par[std::size_t(a)]) v *= k[a];
      return v;
    };
    const std::vector<double> ref =
        elliptica::ewald::detail::periodic_kernel_table(M, h, hat, extent, factor, 2, odd);
    const std::vector<double> oct = elliptica::ewald::detail::periodic_kernel_table(
        M, h, hat, extent, factor, 2, odd, {false, false, false}, {}, par);
    ASSERT_EQ(ref.size(), oct.size());
    double top = 0, diff = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      top = std::max(top, std::abs(ref[i]));
      diff = std::max(diff, std::abs(ref[i] - oct[i]));
    }
    EXPECT_GT(top, 0.0);
    EXPECT_LT(diff, 1e-13 * top) << "parity " << par[0] << par[1] << par[2];
    // 2P (periodic x, y; the modes' lines along z) and 1P (periodic y; the modes' planes in x, z):
    // per mode the free axes' half / quadrant by the parities against the complex path
    for (const std::array<bool, 3>& per : {std::array<bool, 3>{true, true, false}, {false, true, false}}) {
      auto reach = [](double kp) { return kp > 0 ? 3.0 / kp : 1.3; };
      const std::vector<double> pref =
          elliptica::ewald::detail::periodic_kernel_table(M, h, hat, extent, factor, 2, odd, per, reach);
      const std::vector<double> psym =
          elliptica::ewald::detail::periodic_kernel_table(M, h, hat, extent, factor, 2, odd, per, reach, par);
      double ptop = 0, pdiff = 0;
      for (std::size_t i = 0; i < pref.size(); ++i) {
        ptop = std::max(ptop, std::abs(pref[i]));
        pdiff = std::max(pdiff, std::abs(pref[i] - psym[i]));
      }
      EXPECT_GT(ptop, 0.0);
      EXPECT_LT(pdiff, 1e-13 * ptop) << "parity " << par[0] << par[1] << par[2] << ", periodic " << per[0] << per[1];
    }
  }
  // a parity that contradicts the table's oddness is refused
  EXPECT_THROW(elliptica::ewald::detail::periodic_kernel_table(
                   M, h, [](double, double, double) { return 1.0; }, extent, {}, 1, true, {false, false, false}, {},
                   {0, 0, 0}),
               elliptica::InvalidArgument);
}

}  // namespace
