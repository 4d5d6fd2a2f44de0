// Black-box Chebyshev FMM for the Helmholtz kernel vs direct O(N^2) sums
// (include/elliptica/fmm/helmholtz_fmm.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "elliptica/core/error.hpp"
#include "elliptica/fmm/helmholtz_fmm.hpp"

#ifndef ELLIPTICA_SANITIZED_BUILD
#define ELLIPTICA_SANITIZED_BUILD 0
#endif

using namespace elliptica::fmm;
using P3 = std::array<double, 3>;

namespace {
// ASan+UBSan builds run 10-50x slower: fewer points and tolerance cases there (same checks and
// error bounds), so that each test stays under ~20 s.
constexpr bool kSan = ELLIPTICA_SANITIZED_BUILD != 0;
}  // namespace

namespace {
struct Direct {
  std::vector<cplx> u, dn;
};
// u_i = sum_{j != i, r > 0} G q_j + dG/dn_y mu_j ; dn_i = d/dn_x of it. If far_only, only pairs
// whose owner leaves (given) are not adjacent.
Direct direct_sum(const std::vector<P3>& x, const std::vector<P3>& nx, const std::vector<P3>& y,
                  const std::vector<P3>& ny, cplx k, const std::vector<cplx>& q, const std::vector<cplx>& mu,
                  const std::function<bool(std::size_t, std::size_t)>& skip = {}) {
  Direct d;
  d.u.assign(x.size(), 0.0);
  d.dn.assign(x.size(), 0.0);
  const double pi = std::numbers::pi;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < y.size(); ++j) {
      if (skip && skip(i, j)) continue;
      double v[3] = {x[i][0] - y[j][0], x[i][1] - y[j][1], x[i][2] - y[j][2]};
      const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
      if (r == 0) continue;
      const cplx ik = cplx(0, 1) * k;
      const cplx G = std::exp(ik * r) / (4 * pi * r);
      // grad_x G = G (ik - 1/r) (x - y)/r ; Hessian_x G = a I + b rr^T
      const cplx g1 = G * (ik - 1.0 / r);
      const cplx a = g1 / r;
      const cplx b = G * ((ik - 1.0 / r) * (ik - 1.0 / r) + 1.0 / (r * r)) - g1 / r;
      double rx = 0, ry = 0, nn = 0;
      for (int c = 0; c < 3; ++c) {
        rx += v[c] / r * nx[i][c];
        ry += v[c] / r * ny[j][c];
        nn += nx[i][c] * ny[j][c];
      }
      d.u[i] += G * q[j] - g1 * ry * mu[j];
      d.dn[i] += g1 * rx * q[j] - (a * nn + b * rx * ry) * mu[j];
    }
  return d;
}
double rel(const std::vector<cplx>& a, const std::vector<cplx>& b) {
  double s = 0, t = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += std::norm(a[i] - b[i]);
    t += std::norm(b[i]);
  }
  return std::sqrt(s / t);
}
struct Cloud {
  std::vector<P3> x, n;
  std::vector<cplx> q, mu;
};
Cloud make_cloud(int N, bool sphere, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ud(-1, 1);
  Cloud c;
  c.x.resize(N);
  c.n.resize(N);
  c.q.resize(N);
  c.mu.resize(N);
  for (int i = 0; i < N; ++i) {
    P3 v{nd(g), nd(g), nd(g)};
    const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int a = 0; a < 3; ++a) c.n[i][a] = v[a] / r;
    c.x[i] = sphere ? c.n[i] : P3{ud(g), ud(g), ud(g)};
    c.q[i] = cplx(ud(g), ud(g));
    c.mu[i] = cplx(ud(g), ud(g));
  }
  return c;
}

void check_cloud(const Cloud& c, cplx k, double tol, int max_leaf, int min_level) {
  HelmholtzFmmOptions o;
  o.tolerance = tol;
  o.tree.max_leaf = max_leaf;
  HelmholtzFmm f(c.x, c.n, k, o);
  ASSERT_GE(f.tree().leaf_level(), min_level);
  const std::vector<cplx> zero(c.x.size(), 0.0);
  auto a = f.apply(c.q, {});
  auto b = f.apply({}, c.mu);
  auto s = direct_sum(c.x, c.n, c.x, c.n, k, c.q, zero);
  auto d = direct_sum(c.x, c.n, c.x, c.n, k, zero, c.mu);
  const double e[4] = {rel(a.potential, s.u), rel(a.normal_derivative, s.dn), rel(b.potential, d.u),
                       rel(b.normal_derivative, d.dn)};
  std::printf("  N=%zu k=(%g,%g) tol=%.0e p=%d L=%d rank<=%d: S %.2e K' %.2e K %.2e W %.2e\n", c.x.size(), k.real(),
              k.imag(), tol, f.order(), f.tree().leaf_level(), f.max_m2l_rank(), e[0], e[1], e[2], e[3]);
  for (double v : e) EXPECT_LT(v, tol);
}
}  // namespace

TEST(FmmHelmholtz, OrderRule) {
  EXPECT_THROW(choose_order(0.0, 1.0, 1.0), elliptica::InvalidArgument);
  EXPECT_THROW(choose_order(0.7, 1.0, 1.0), elliptica::InvalidArgument);
  int prev = 0;
  for (double t : {1e-2, 1e-3, 1e-5, 1e-7, 1e-9}) {
    const int p = choose_order(t, 1.0, 0.5);
    EXPECT_GE(p, prev);
    prev = p;
  }
  EXPECT_GT(choose_order(1e-5, 10.0, 0.5), choose_order(1e-5, 1.0, 0.5));
}

TEST(FmmHelmholtz, SphereSurfaceAllKernels) {
  // unit sphere, ka = 1 and ka = 10 (k D = 20 across the domain)
  auto c = make_cloud(kSan ? 700 : 3000, true, 11);
  for (double ka : {1.0, 10.0})
    for (double tol : {1e-3, 1e-5}) {
      if (kSan && (tol < 1e-3 || ka > 1.0)) continue;  // sanitizers: the set-up of high orders is slow
      check_cloud(c, cplx(ka, 0), tol, kSan ? 10 : 40, 3);
    }
}

TEST(FmmHelmholtz, CubeAllKernels) {
  auto c = make_cloud(kSan ? 450 : 2000, false, 12);
  for (double tol : {1e-3, 1e-5})
    if (!kSan || tol >= 1e-3) check_cloud(c, cplx(5.0, 0.0), tol, kSan ? 5 : 16, 3);
  check_cloud(c, cplx(3.0, 0.5), kSan ? 1e-3 : 1e-5, kSan ? 5 : 16, 3);  // complex k, Im k > 0
}

// Near the low-frequency limit (level-2 boxes 1.5-1.9 wavelengths wide: kappa = 10-12): the
// order rule's kappa term must keep the error below the tolerance (a fresh-user trial found 4x
// overshoots there with a smaller kappa coefficient).
TEST(FmmHelmholtz, NearTheFrequencyLimit) {
  if (kSan) GTEST_SKIP() << "p = 11-15 set-up is too slow under the sanitizers";
  const Cloud c = make_cloud(3000, false, 11);
  for (double k : {20.0, 24.0})
    for (double tol : {1e-3, 1e-4}) check_cloud(c, k, tol, 16, 2);
}

TEST(FmmHelmholtz, Tolerance1e7) {
  if (kSan) GTEST_SKIP() << "p = 12..13 set-up too slow under ASan; covered by the Release build";
  auto s = make_cloud(2000, true, 13);
  check_cloud(s, cplx(5.0, 0), 1e-7, 60, 2);  // k D = 10 across the sphere
  auto c = make_cloud(2000, false, 14);
  check_cloud(c, cplx(2.0, 0), 1e-7, 100, 2);
}

TEST(FmmHelmholtz, AutomaticTreeDepth) {
  // default tree options (max_leaf = 0): depth chosen from p; accuracy as before
  auto c = make_cloud(kSan ? 700 : 4000, true, 19);
  check_cloud(c, cplx(5.0, 0), 1e-5, 0, 0);
  check_cloud(c, cplx(5.0, 0), 1e-3, 0, 0);
}

TEST(FmmHelmholtz, FarFieldOnlyMatchesNonAdjacentPairs) {
  auto c = make_cloud(kSan ? 400 : 2000, true, 15);
  // sanitizers: tolerance 1e-3 (a lower order: the M2L set-up of 1e-5 took 47 s under ASan)
  const double tol = kSan ? 1e-3 : 1e-5;
  HelmholtzFmmOptions o;
  o.tolerance = tol;
  o.tree.max_leaf = kSan ? 8 : 40;
  o.near_field = false;
  const cplx k(4.0, 0.0);
  HelmholtzFmm f(c.x, c.n, k, o);
  const auto& t = f.tree();
  const auto& nodes = t.nodes();
  std::vector<int> leaf(c.x.size());
  for (int id : t.level_nodes(t.leaf_level()))
    for (auto s = nodes[id].begin; s < nodes[id].end; ++s) leaf[t.permutation()[s]] = id;
  auto adjacent = [&](std::size_t i, std::size_t j) {
    for (int d = 0; d < 3; ++d)
      if (std::abs(nodes[leaf[i]].coord[d] - nodes[leaf[j]].coord[d]) > 1) return false;
    return true;
  };
  auto r = f.apply(c.q, c.mu);
  auto d = direct_sum(c.x, c.n, c.x, c.n, k, c.q, c.mu, adjacent);
  auto full = direct_sum(c.x, c.n, c.x, c.n, k, c.q, c.mu);
  // error of the far part relative to the full sums (the quantity the tolerance refers to)
  auto err = [](const std::vector<cplx>& a, const std::vector<cplx>& b, const std::vector<cplx>& ref) {
    double s = 0, t = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      s += std::norm(a[i] - b[i]);
      t += std::norm(ref[i]);
    }
    return std::sqrt(s / t);
  };
  EXPECT_LT(err(r.potential, d.u, full.u), tol);
  EXPECT_LT(err(r.normal_derivative, d.dn, full.dn), tol);
  EXPECT_LT(rel(r.potential, d.u), 10 * tol);  // relative to the far part alone: a smaller denominator
}

TEST(FmmHelmholtz, SeparateSourcesWithOwners) {
  // targets: points on the sphere; sources: 3 points near each target (like BEM quadrature)
  auto c = make_cloud(kSan ? 300 : 1500, true, 16);
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> ud(-1, 1);
  std::vector<P3> y, ny;
  std::vector<std::int64_t> owner;
  std::vector<cplx> q, mu;
  for (std::size_t i = 0; i < c.x.size(); ++i)
    for (int s = 0; s < 3; ++s) {
      y.push_back({c.x[i][0] + 0.01 * ud(g), c.x[i][1] + 0.01 * ud(g), c.x[i][2] + 0.01 * ud(g)});
      ny.push_back(c.n[i]);
      owner.push_back(static_cast<std::int64_t>(i));
      q.push_back(cplx(ud(g), ud(g)));
      mu.push_back(cplx(ud(g), ud(g)));
    }
  const double tol = kSan ? 1e-3 : 1e-5;  // sanitizers: a lower order (1e-5 took 85 s under ASan)
  HelmholtzFmmOptions o;
  o.tolerance = tol;
  o.tree.max_leaf = kSan ? 6 : 30;
  const cplx k(6.0, 0.0);
  HelmholtzFmm f(c.x, c.n, y, ny, owner, k, o);
  EXPECT_GT(f.box_margin(), 0.0);
  auto r = f.apply(q, mu);
  auto d = direct_sum(c.x, c.n, y, ny, k, q, mu);
  EXPECT_LT(rel(r.potential, d.u), tol);
  EXPECT_LT(rel(r.normal_derivative, d.dn), tol);
}

TEST(FmmHelmholtz, ExplicitOperators) {
  auto c = make_cloud(1000, false, 17);
  HelmholtzFmmOptions o;
  o.order = 4;
  o.tree.depth = 3;
  const cplx k(2.0, 0.0);
  HelmholtzFmm f(c.x, c.n, k, o);
  const int p3 = 64;
  // M2M columns: Lagrange partition of unity (sum_i L_i = 1)
  auto M = f.m2m_matrix(3, 5);
  ASSERT_EQ(M.size(), static_cast<std::size_t>(p3 * p3));
  for (int j = 0; j < p3; ++j) {
    double s = 0;
    for (int i = 0; i < p3; ++i) s += M[i * p3 + j];
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
  // P2M of a leaf: charge columns sum to 1 as well; dipole columns to 0
  int leaf = f.tree().level_nodes(3)[0];
  auto src = f.leaf_sources(leaf);
  auto P = f.p2m_matrix(leaf, false), D = f.p2m_matrix(leaf, true);
  for (std::size_t j = 0; j < src.size(); ++j) {
    double s = 0, sd = 0;
    for (int i = 0; i < p3; ++i) {
      s += P[i * src.size() + j];
      sd += D[i * src.size() + j];
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
    EXPECT_NEAR(sd, 0.0, 1e-10);
  }
  // L2P of a leaf: rows (targets) sum to 1 (potential) and to 0 (normal derivative); applied to
  // the nodal values of a smooth function it interpolates that function
  auto Lp = f.l2p_matrix(leaf, false), Ld = f.l2p_matrix(leaf, true);
  const auto& nd = f.tree().nodes()[leaf];
  const std::size_t nt = static_cast<std::size_t>(nd.end - nd.begin);
  ASSERT_GT(nt, 0u);
  ASSERT_EQ(Lp.size(), nt * p3);
  ASSERT_EQ(Ld.size(), nt * p3);
  for (std::size_t i = 0; i < nt; ++i) {
    double s = 0, sd = 0;
    for (int n = 0; n < p3; ++n) {
      s += Lp[i * p3 + n];
      sd += Ld[i * p3 + n];
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
    EXPECT_NEAR(sd, 0.0, 1e-10);
  }
  {
    // the Chebyshev nodes of the leaf: reconstruct them from P2M's transpose is not needed; a
    // linear function a.x is reproduced exactly by p = 4 interpolation: sum_n L_n(x) (a.xbar_n)
    // = a.x and sum_n n.grad L_n(x) (a.xbar_n) = a.n. Node coordinates: center + (a_L) cos(...).
    const auto& tr = f.tree();
    const auto ids = tr.permutation();
    std::vector<double> nodes1(4);
    for (int m = 0; m < 4; ++m) nodes1[m] = std::cos((2 * m + 1) * std::numbers::pi / 8);
    const double aL = nd.half_width + f.box_margin();
    const double av[3] = {0.3, -1.1, 0.7};
    for (std::size_t i = 0; i < nt; ++i) {
      const auto t = ids[nd.begin + static_cast<std::int64_t>(i)];
      double u = 0, du = 0;
      for (int n = 0; n < p3; ++n) {
        const int m3[3] = {n % 4, (n / 4) % 4, n / 16};
        double lin = 0;
        for (int d = 0; d < 3; ++d) lin += av[d] * (nd.center[d] + aL * nodes1[m3[d]]);
        u += Lp[i * p3 + n] * lin;
        du += Ld[i * p3 + n] * lin;
      }
      double ex = 0, exd = 0;
      for (int d = 0; d < 3; ++d) {
        ex += av[d] * c.x[t][d];
        exd += av[d] * c.n[t][d];
      }
      EXPECT_NEAR(u, ex, 1e-10);
      EXPECT_NEAR(du, exd, 1e-9);
    }
  }
  EXPECT_THROW(f.l2p_matrix(f.tree().level_nodes(2)[0], false), elliptica::InvalidArgument);
  auto K = f.m2l_matrix(2, {2, -3, 1});
  EXPECT_EQ(K.size(), static_cast<std::size_t>(p3 * p3));
  EXPECT_THROW(f.m2l_matrix(2, {1, 1, 0}), elliptica::InvalidArgument);
  EXPECT_THROW(f.m2l_matrix(1, {2, 0, 0}), elliptica::InvalidArgument);
}

TEST(FmmHelmholtz, BadInput) {
  using elliptica::InvalidArgument;
  auto c = make_cloud(kSan ? 200 : 500, true, 18);
  HelmholtzFmmOptions o;
  o.tree.max_leaf = 10;
  if (kSan) o.tolerance = 1e-3;
  EXPECT_THROW(HelmholtzFmm(c.x, c.n, cplx(1.0, -0.1), o), InvalidArgument);
  EXPECT_THROW(HelmholtzFmm(c.x, c.n, cplx(0.0, 0.0), o), InvalidArgument);
  EXPECT_THROW(HelmholtzFmm(c.x, std::vector<P3>(3), cplx(1.0, 0.0), o), InvalidArgument);
  EXPECT_THROW(HelmholtzFmm(c.x, c.n, cplx(200.0, 0.0), o), InvalidArgument);  // beyond low frequency
  auto o2 = o;
  o2.tolerance = 0;
  EXPECT_THROW(HelmholtzFmm(c.x, c.n, cplx(1.0, 0.0), o2), InvalidArgument);
  HelmholtzFmm f(c.x, {}, cplx(1.0, 0.0), o);
  EXPECT_THROW(f.apply(std::vector<cplx>(3), {}), InvalidArgument);
  EXPECT_THROW(f.apply({}, c.mu), InvalidArgument);                  // no normals
  EXPECT_THROW(f.apply(c.q, {}, kNormalDerivative), InvalidArgument);  // no normals
  EXPECT_NO_THROW(f.apply(c.q, {}, kPotential));
}

// min_tolerance inverts the order rule at the order cap (kMaxOrder = 16), and the constructor
// refuses a tolerance below it with a message naming the smallest one available (it used to say
// "outside the low-frequency regime" for a tolerance that was merely too small). Measured accuracy
// near the cap (2000 random points on the unit sphere, k = 2): tol 1e-10 -> p = 16, worst kernel
// error 3.1e-11.
TEST(FmmHelmholtz, MinToleranceAtTheOrderCap) {
  for (double kappa : {0.0, 1.0, 5.0, 10.0}) {
    const double w = 0.5, t = min_tolerance(cplx(kappa / w, 0), w);
    ASSERT_TRUE(std::isfinite(t)) << kappa;
    EXPECT_LE(choose_order(t, kappa / w, w), kMaxOrder) << kappa;
    EXPECT_GT(choose_order(t / 1.01, kappa / w, w), kMaxOrder) << kappa;
  }
  EXPECT_NEAR(min_tolerance(1.0, 0.5), 5.0e-11, 0.3e-11);
  auto c = make_cloud(600, true, 21);
  HelmholtzFmmOptions o;
  o.tree.max_leaf = 20;
  o.tolerance = 1e-11;
  try {
    HelmholtzFmm f(c.x, c.n, cplx(1.0, 0), o);
    ADD_FAILURE() << "tolerance 1e-11 accepted (p = " << f.order() << ")";
  } catch (const elliptica::InvalidArgument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("smallest tolerance available"), std::string::npos) << w;
    EXPECT_EQ(w.find("outside the low-frequency regime"), std::string::npos) << w;
  }
}

// apply() into caller-owned storage: the same numbers as the vector convenience (one
// implementation; equal to rounding, since the threads' M2L contributions are summed in a
// run-dependent order), both outputs or either alone, and the direct sum to the tolerance; the
// threads option gives the same sums to rounding.
TEST(FmmHelmholtz, ApplyIntoCallerStorage) {
  auto c = make_cloud(kSan ? 300 : 800, true, 31);
  const cplx k(2.0, 0.0);
  const double tol = kSan ? 1e-3 : 1e-5;  // sanitizers: a lower order (1e-5 took 75 s under ASan)
  HelmholtzFmmOptions o;
  o.tolerance = tol;
  o.tree.max_leaf = 20;
  HelmholtzFmm f(c.x, c.n, k, o);
  const std::size_t n = c.x.size();
  const FmmResult r = f.apply(c.q, c.mu);
  std::vector<cplx> u(n, cplx(7, 7)), dn(n, cplx(7, 7));  // overwritten, not accumulated
  f.apply(c.q.data(), c.mu.data(), u.data(), dn.data());
  EXPECT_LT(rel(u, r.potential), 1e-14);
  EXPECT_LT(rel(dn, r.normal_derivative), 1e-14);
  std::vector<cplx> u_only(n), dn_only(n);
  f.apply(c.q.data(), c.mu.data(), u_only.data(), nullptr);
  f.apply(c.q.data(), c.mu.data(), nullptr, dn_only.data());
  EXPECT_LT(rel(u_only, r.potential), 1e-14);
  EXPECT_LT(rel(dn_only, r.normal_derivative), 1e-14);
  std::vector<cplx> uq(n);
  f.apply(c.q.data(), nullptr, uq.data(), nullptr);
  EXPECT_LT(rel(uq, f.apply(c.q, {}, kPotential).potential), 1e-14);
  const auto d = direct_sum(c.x, c.n, c.x, c.n, k, c.q, c.mu);
  EXPECT_LT(rel(u, d.u), tol);
  EXPECT_LT(rel(dn, d.dn), tol);
  EXPECT_THROW(f.apply(c.q.data(), nullptr, nullptr, nullptr), elliptica::InvalidArgument);
  for (int t : {1, 2}) {
    auto ot = o;
    ot.threads = t;
    HelmholtzFmm ft(c.x, c.n, k, ot);
    std::vector<cplx> ut(n), dt(n);
    ft.apply(c.q.data(), c.mu.data(), ut.data(), dt.data());
    EXPECT_LT(rel(ut, u), 1e-13) << t;
    EXPECT_LT(rel(dt, dn), 1e-13) << t;
  }
  auto bad = o;
  bad.threads = -1;
  EXPECT_THROW(HelmholtzFmm(c.x, c.n, k, bad), elliptica::InvalidArgument);
}
