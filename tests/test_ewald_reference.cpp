// Self-checks of the independent reference (tests/reference/direct_ewald.*), without the plan:
// known lattice constants (which fix the normalisation, the self term and the neutralising
// background) and xi-independence (which checks that real space, Fourier space and self term
// belong to one and the same splitting). Stresslet: xi-independence (fixes the Fourier part's
// sign relative to real space), the free-space limit in a large box (fixes the real-space
// kernel's sign and 1/(8 pi)), and the periodic double-layer jump identity on a sphere (fixes the
// whole sum, k = 0 convention included). Also the sphere quadrature used for the latter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "reference/direct_ewald.hpp"

namespace {

using namespace elliptica::testref;

constexpr double kMadelungNaCl = 1.747564594633182190636;
// phi at a unit charge in a cube of side 1 with the neutralising background (self excluded);
// the constant is known to 14 digits, so comparisons use 1e-13.
constexpr double kCubeSelf = -2.8372974794806;

std::vector<double> nacl_positions() {
  return {0, 0, 0, 0, .5, .5, .5, 0, .5, .5, .5, 0,   // Na
          .5, .5, .5, .5, 0, 0, 0, .5, 0, 0, 0, .5};  // Cl
}
std::vector<double> nacl_charges() { return {1, 1, 1, 1, -1, -1, -1, -1}; }

TEST(EwaldReference, MadelungRockSalt) {
  RefOptions o;
  const auto q = nacl_charges();
  const auto r = direct_ewald(o, nacl_positions(), q);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(-r.values[i] * q[i] * 0.5, kMadelungNaCl, 1e-14) << "ion " << i;
}

TEST(EwaldReference, SingleChargeInCube) {
  for (double L : {1.0, 2.5}) {
    RefOptions o;
    o.box = {L, L, L};
    const auto r = direct_ewald(o, {0.3 * L, 0.2 * L, 0.9 * L}, {1.0});
    EXPECT_NEAR(r.values[0] * L / kCubeSelf, 1.0, 1e-13) << "L = " << L;
  }
}

TEST(EwaldReference, HasimotoPointForce) {
  for (double L : {1.0, 3.0})
    for (double mu : {1.0, 0.37}) {
      RefOptions o;
      o.kernel = RefKernel::Stokeslet;
      o.viscosity = mu;
      o.box = {L, L, L};
      const std::vector<double> f = {0.3, -0.5, 0.7};
      const auto r = direct_ewald(o, {0.1, 0.9 * L, 0.5}, f);
      for (int a = 0; a < 3; ++a) {
        const double ex = kCubeSelf * f[a] / (6 * M_PI * mu * L);
        EXPECT_NEAR(r.values[a] / ex, 1.0, 1e-13) << "L = " << L << " mu = " << mu << " a = " << a;
      }
    }
}

struct RefXiCase {
  RefKernel kernel;
  bool targets;
  bool neutral;
};

class EwaldReferenceXi : public ::testing::TestWithParam<RefXiCase> {};

TEST_P(EwaldReferenceXi, IndependentOfXi) {
  const auto c = GetParam();
  const std::array<double, 3> box{1.0, 1.7, 0.8};
  const int comps = c.kernel == RefKernel::Stokeslet ? 3 : 1;
  const auto x = make_points(Distribution::Uniform, 90, box, 11);
  const auto s = make_strengths(90, comps, 12, c.neutral);
  auto t = make_points(Distribution::Clustered, 40, box, 13);
  for (double& v : t) v = 3 * v - 1.1;  // some outside the box
  RefOptions o;
  o.kernel = c.kernel;
  o.box = box;
  o.field = c.kernel == RefKernel::Laplace;
  const auto a = direct_ewald(o, x, s, c.targets ? &t : nullptr);
  for (double f : {0.6, 1.7}) {
    RefOptions o2 = o;
    o2.xi = a.xi * f;
    const auto b = direct_ewald(o2, x, s, c.targets ? &t : nullptr);
    EXPECT_LT(rel_rms_err(b.values, a.values), 1e-13) << "xi factor " << f;
    if (o.field) {
      EXPECT_LT(rel_rms_err(b.field, a.field), 1e-13) << "xi factor " << f;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EwaldReferenceXi,
    ::testing::Values(RefXiCase{RefKernel::Laplace, false, true}, RefXiCase{RefKernel::Laplace, true, true},
                      RefXiCase{RefKernel::Laplace, false, false}, RefXiCase{RefKernel::Laplace, true, false},
                      RefXiCase{RefKernel::Stokeslet, false, false}, RefXiCase{RefKernel::Stokeslet, true, false}),
    [](const ::testing::TestParamInfo<RefXiCase>& i) {
      return std::string(i.param.kernel == RefKernel::Laplace ? "laplace" : "stokeslet") +
             (i.param.targets ? "_targets" : "_self") + (i.param.neutral ? "_neutral" : "_net");
    });

// The field is minus the gradient of the potential: central differences of the reference.
TEST(EwaldReference, FieldIsMinusGradient) {
  const std::array<double, 3> box{1.0, 1.7, 0.8};
  const auto x = make_points(Distribution::Uniform, 30, box, 21);
  const auto q = make_strengths(30, 1, 22, false);
  const std::vector<double> t0 = {0.31, 0.77, 0.45};
  RefOptions o;
  o.box = box;
  o.field = true;
  const auto r = direct_ewald(o, x, q, &t0);
  const double h = 1e-5;
  for (int a = 0; a < 3; ++a) {
    auto tp = t0, tm = t0;
    tp[a] += h;
    tm[a] -= h;
    o.field = false;
    const double dp = direct_ewald(o, x, q, &tp).values[0], dm = direct_ewald(o, x, q, &tm).values[0];
    // O(h^2 phi''') truncation ~1e-8 here, O(1e-16 phi / h) rounding ~1e-10
    EXPECT_NEAR(-(dp - dm) / (2 * h), r.field[a], 1e-6 * std::abs(r.field[a]) + 1e-6) << "axis " << a;
  }
}

TEST(EwaldReference, FastEnoughForN100) {
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const auto x = make_points(Distribution::Uniform, 100, box, 31);
  const auto f = make_strengths(100, 3, 32, false);
  RefOptions o;
  o.kernel = RefKernel::Stokeslet;
  const auto r = direct_ewald(o, x, f);
  EXPECT_EQ(r.values.size(), 300u);
  EXPECT_GT(r.n_kvectors, 100u);
}

// ---- Stresslet and StokesCombined ----------------------------------------------------------

struct RefXiCase2 {
  RefKernel kernel;
  bool targets;
};

class EwaldReferenceXiStokes : public ::testing::TestWithParam<RefXiCase2> {};

// Random q, nu (so sum q.nu != 0: the k = 0-dropped sum is xi-independent all the same).
// Measured: rel. rms differences ~3e-17 (one rounding at the end of long double sums); with the
// Fourier part's (+i) replaced by (-i) they are 0.3-0.6.
TEST_P(EwaldReferenceXiStokes, IndependentOfXi) {
  const auto c = GetParam();
  const std::array<double, 3> box{1.0, 1.3, 0.8};
  const int comps = strength_components(c.kernel);
  const auto x = make_points(Distribution::Uniform, 90, box, 41);
  const auto s = make_strengths(90, comps, 42, false);
  auto t = make_points(Distribution::Uniform, 40, box, 43);
  for (double& v : t) v = 2 * v - 0.4;  // some outside the box
  RefOptions o;
  o.kernel = c.kernel;
  o.box = box;
  o.viscosity = 0.7;
  const auto a = direct_ewald(o, x, s, c.targets ? &t : nullptr);
  ASSERT_EQ(a.values.size(), 3 * (c.targets ? 40u : 90u));
  for (double f : {0.6, 1.7}) {
    RefOptions o2 = o;
    o2.xi = a.xi * f;
    const auto b = direct_ewald(o2, x, s, c.targets ? &t : nullptr);
    EXPECT_LT(rel_rms_err(b.values, a.values), 1e-13) << "xi factor " << f;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EwaldReferenceXiStokes,
    ::testing::Values(RefXiCase2{RefKernel::Stresslet, false}, RefXiCase2{RefKernel::Stresslet, true},
                      RefXiCase2{RefKernel::StokesCombined, false}, RefXiCase2{RefKernel::StokesCombined, true}),
    [](const ::testing::TestParamInfo<RefXiCase2>& i) {
      return std::string(i.param.kernel == RefKernel::Stresslet ? "stresslet" : "combined") +
             (i.param.targets ? "_targets" : "_self");
    });

// One stresslet in a large box, target within distance 1: the periodic sum approaches the
// free-space T(r) q nu / (8 pi). The difference is the dropped k = 0 mode, (q.nu) r / V, plus
// the images' gradient, O(|q||nu||r| / L^3); measured max |diff| / (|q||nu||r| / V) = 1.2 at
// L = 1000 (0.7 at L = 100: the O(1/L^3) scaling), so the bound below is 10 |q||nu||r| / V
// (~1e-8 against values ~1e-2..1e-1).
TEST(EwaldReference, StressletFreeSpaceLimit) {
  std::mt19937_64 gen(51);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  const double L = 1000;
  const std::array<double, 3> box{L, 1.3 * L, 0.8 * L};
  const double V = box[0] * box[1] * box[2];
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<double> y(3), s(6), x(3), r(3);
    for (int a = 0; a < 3; ++a) y[a] = (0.5 + 0.5 * U(gen)) * box[a];
    for (double& v : s) v = U(gen);
    double r2 = 0;
    do {
      r2 = 0;
      for (int a = 0; a < 3; ++a) {
        r[a] = U(gen);
        r2 += r[a] * r[a];
      }
    } while (r2 > 1 || r2 < 0.04);
    for (int a = 0; a < 3; ++a) x[a] = y[a] + r[a];
    RefOptions o;
    o.kernel = RefKernel::Stresslet;
    o.box = box;
    const auto u = direct_ewald(o, y, s, &x);
    double rq = 0, rn = 0, qq = 0, nn = 0;
    for (int a = 0; a < 3; ++a) {
      rq += r[a] * s[a];
      rn += r[a] * s[3 + a];
      qq += s[a] * s[a];
      nn += s[3 + a] * s[3 + a];
    }
    const double rr = std::sqrt(r2);
    const double tol = 10 * std::sqrt(qq * nn) * rr / V;
    for (int a = 0; a < 3; ++a) {
      const double free = -6 * r[a] * rq * rn / std::pow(rr, 5) / (8 * M_PI);
      EXPECT_NEAR(u.values[a], free, tol) << "trial " << trial << " component " << a;
    }
  }
}

// A lone stresslet at its own position (targets = sources): the r = 0 pair is excluded and
// there is no self term, so the result is the image sum, 0 by the lattice's inversion symmetry.
TEST(EwaldReference, StressletAloneIsZeroAtItself) {
  RefOptions o;
  o.kernel = RefKernel::Stresslet;
  o.box = {1.0, 1.3, 0.8};
  const std::vector<double> s = {0.3, -0.5, 0.7, -0.2, 0.9, 0.4};
  const auto u = direct_ewald(o, {0.1, 1.2, 0.5}, s);
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(u.values[a], 0.0, 1e-14) << "component " << a;
}

// StokesCombined is the Stokeslet sum (with mu) plus the Stresslet sum (without mu). The
// combined values are rounded once from long double, the two parts separately: a few ulps of
// the parts' magnitudes.
TEST(EwaldReference, CombinedIsStokesletPlusStresslet) {
  const std::array<double, 3> box{1.0, 1.3, 0.8};
  const std::size_t n = 60;
  const auto x = make_points(Distribution::Uniform, n, box, 61);
  const auto f = make_strengths(n, 3, 62, false);
  const auto qn = make_strengths(n, 6, 63, false);
  std::vector<double> s9(9 * n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int a = 0; a < 3; ++a) s9[9 * i + a] = f[3 * i + a];
    for (int a = 0; a < 6; ++a) s9[9 * i + 3 + a] = qn[6 * i + a];
  }
  const auto t = make_points(Distribution::Clustered, 30, box, 64);
  for (bool targets : {false, true}) {
    RefOptions o;
    o.box = box;
    o.viscosity = 0.37;
    const std::vector<double>* tp = targets ? &t : nullptr;
    o.kernel = RefKernel::Stokeslet;
    const auto us = direct_ewald(o, x, f, tp);
    o.kernel = RefKernel::Stresslet;
    const auto ud = direct_ewald(o, x, qn, tp);
    o.kernel = RefKernel::StokesCombined;
    const auto uc = direct_ewald(o, x, s9, tp);
    ASSERT_EQ(uc.values.size(), us.values.size());
    EXPECT_EQ(uc.n_kvectors, us.n_kvectors);
    const double eps = std::numeric_limits<double>::epsilon();
    for (std::size_t i = 0; i < uc.values.size(); ++i)
      EXPECT_NEAR(uc.values[i], us.values[i] + ud.values[i],
                  4 * eps * (std::abs(us.values[i]) + std::abs(ud.values[i])))
          << (targets ? "targets" : "self") << " entry " << i;
  }
}

TEST(EwaldReference, StrengthLayoutChecked) {
  RefOptions o;
  o.kernel = RefKernel::Stresslet;
  EXPECT_THROW(direct_ewald(o, {0.1, 0.2, 0.3}, {1, 2, 3}), std::invalid_argument);
  o.kernel = RefKernel::StokesCombined;
  EXPECT_THROW(direct_ewald(o, {0.1, 0.2, 0.3}, {1, 2, 3, 4, 5, 6}), std::invalid_argument);
  EXPECT_EQ(strength_components(RefKernel::Laplace), 1);
  EXPECT_EQ(strength_components(RefKernel::Stokeslet), 3);
  EXPECT_EQ(strength_components(RefKernel::Stresslet), 6);
  EXPECT_EQ(strength_components(RefKernel::StokesCombined), 9);
}

// ---- sphere quadrature ----------------------------------------------------------------------

TEST(SphereQuadrature, MomentsAndGeometry) {
  struct Case {
    int nth, nph;
    double R;
    std::array<double, 3> c;
  };
  for (const Case& k : {Case{24, 48, 0.25, {0.5, 0.5, 0.5}}, Case{7, 5, 1.7, {-1.0, 2.0, 0.3}},
                        Case{1, 3, 0.5, {0.0, 0.0, 0.0}}}) {
    const auto q = sphere_quadrature(k.nth, k.nph, k.R, k.c);
    const std::size_t n = static_cast<std::size_t>(k.nth) * k.nph;
    ASSERT_EQ(q.nodes.size(), 3 * n);
    ASSERT_EQ(q.normals.size(), 3 * n);
    ASSERT_EQ(q.weights.size(), n);
    const double area = 4 * M_PI * k.R * k.R;
    long double sw = 0, swn[3] = {0, 0, 0}, sz2 = 0;  // 1152 weights: naive double sums drift ~1e-14
    for (std::size_t i = 0; i < n; ++i) {
      double nn = 0;
      for (int a = 0; a < 3; ++a) {
        nn += q.normals[3 * i + a] * q.normals[3 * i + a];
        EXPECT_NEAR(q.nodes[3 * i + a], k.c[a] + k.R * q.normals[3 * i + a], 1e-15 * (1 + std::abs(k.c[a])));
        swn[a] += q.weights[i] * q.normals[3 * i + a];
      }
      EXPECT_NEAR(nn, 1.0, 1e-15);
      EXPECT_GT(q.weights[i], 0.0);
      sw += q.weights[i];
      const double z = q.nodes[3 * i + 2] - k.c[2];
      sz2 += q.weights[i] * z * z;
    }
    EXPECT_NEAR(static_cast<double>(sw / area), 1.0, 1e-15) << k.nth << "x" << k.nph;
    for (int a = 0; a < 3; ++a)
      EXPECT_NEAR(static_cast<double>(swn[a] / area), 0.0, 1e-15) << k.nth << "x" << k.nph;
    if (k.nth >= 2) {  // Gauss-Legendre with >= 2 nodes integrates cos^2(theta) exactly
      EXPECT_NEAR(static_cast<double>(sz2 / (4 * M_PI * std::pow(k.R, 4) / 3)), 1.0, 1e-14)
          << k.nth << "x" << k.nph;
    }
  }
  EXPECT_THROW(sphere_quadrature(0, 4, 1.0, {0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(sphere_quadrature(4, 0, 1.0, {0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(sphere_quadrature(4, 4, 0.0, {0, 0, 0}), std::invalid_argument);
}

// Periodic double-layer identity: the density e_j on a sphere (q_n = w_n e_j, nu_n outward
// normals), radius R = 0.25 centred in the unit box, gives u_j = 1 - phi_v inside and -phi_v
// outside (phi_v = (4/3) pi R^3 / V, the mean removed with k = 0), other components 0. Targets
// on rays in 12 random directions at distances 0.1, 0.15, 0.2 inside and 0.1, 0.15, 0.2 outside
// the surface (the unit box is the Voronoi cell of the centre, so no periodic image is nearer),
// plus the centre and the box corner. The deviation is the quadrature error of the nearly
// singular integrand, largest at distance 0.1, and much larger outside (harmonic degree l decays
// like (R/rho)^l = 0.71^l at rho = 0.35) than inside (like (rho/R)^l = 0.6^l at rho = 0.15).
// Measured max |error| over these targets and the 3 x 3 components with 24 x 48 nodes: inside
// 1.5e-9, outside 1.2e-6 (over 200 random directions at distance 0.1: 1.6e-9 and 1.6e-6); the
// tolerances are 10x the measured values: 1.5e-8 inside, 1.2e-5 outside (against phi_v = 0.065
// and the jump 1, so a sign, a factor or the k = 0 convention would be seen at once).
TEST(EwaldReference, StressletDoubleLayerJump) {
  const double R = 0.25;
  const std::array<double, 3> centre{0.5, 0.5, 0.5};
  const auto q = sphere_quadrature(24, 48, R, centre);
  const std::size_t ns = q.weights.size();
  std::mt19937_64 gen(71);
  std::normal_distribution<double> G(0.0, 1.0);
  std::vector<double> t = {centre[0], centre[1], centre[2]};  // inside targets first
  std::vector<double> out = {0.0, 0.0, 0.0};
  for (int d = 0; d < 12; ++d) {
    double v[3], nv = 0;
    for (double& c : v) {
      c = G(gen);
      nv += c * c;
    }
    nv = std::sqrt(nv);
    for (double h : {0.1, 0.15, 0.2})
      for (int a = 0; a < 3; ++a) {
        t.push_back(centre[a] + (R - h) * v[a] / nv);
        out.push_back(centre[a] + (R + h) * v[a] / nv);
      }
  }
  const std::size_t n_in = t.size() / 3;
  t.insert(t.end(), out.begin(), out.end());
  const std::size_t nt = t.size() / 3;
  const double phi = 4.0 / 3.0 * M_PI * R * R * R;
  double err_in = 0, err_out = 0;
  for (int j = 0; j < 3; ++j) {
    std::vector<double> s(6 * ns, 0.0);
    for (std::size_t n = 0; n < ns; ++n) {
      s[6 * n + j] = q.weights[n];
      for (int a = 0; a < 3; ++a) s[6 * n + 3 + a] = q.normals[3 * n + a];
    }
    RefOptions o;
    o.kernel = RefKernel::Stresslet;
    const auto u = direct_ewald(o, q.nodes, s, &t);
    for (std::size_t m = 0; m < nt; ++m)
      for (int a = 0; a < 3; ++a) {
        const double ex = a != j ? 0.0 : m < n_in ? 1 - phi : -phi;
        double& err = m < n_in ? err_in : err_out;
        err = std::max(err, std::abs(u.values[3 * m + a] - ex));
      }
  }
  EXPECT_LT(err_in, 1.5e-8) << "max |u - (1 - phi_v) e_j| inside";
  EXPECT_LT(err_out, 1.2e-5) << "max |u + phi_v e_j| outside";
}

}  // namespace
