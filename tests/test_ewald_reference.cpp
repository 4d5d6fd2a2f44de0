// Self-checks of the independent reference (tests/reference/direct_ewald.*), without the plan:
// known lattice constants (which fix the normalisation, the self term and the neutralising
// background) and xi-independence (which checks that real space, Fourier space and self term
// belong to one and the same splitting).
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
