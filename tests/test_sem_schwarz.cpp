// Tests of the SEM Schwarz smoothers (issue 14, sem_schwarz.hpp): the FDM 1-D factors, the FDM
// box solve against a dense solve of the assembled operator restricted to the extended grid, ASM
// and RAS against their dense definitions, symmetry and definiteness (box and Kershaw meshes), the
// spectrum of S A, and the Chebyshev smoother over the matrix-free operator with an external S.
#include <gtest/gtest.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace mg = elliptica::multigrid;
using elliptica::CsrMatrix;

namespace {

constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD != 0;

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(g);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::shared_ptr<const mg::SemLaplacian> laplacian(mg::HexMesh m, int p, int threads = 1) {
  auto V = std::make_shared<const mg::SemSpace>(std::move(m), p, threads);
  return std::make_shared<const mg::SemLaplacian>(V, threads);
}

/// Rows and columns ids of the assembled matrix, dense.
Eigen::MatrixXd dense_block(const CsrMatrix& A, const std::vector<std::int32_t>& ids) {
  const auto m = static_cast<Eigen::Index>(ids.size());
  std::vector<std::int32_t> pos(A.rows, -1);
  for (Eigen::Index i = 0; i < m; ++i) pos[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])] = static_cast<std::int32_t>(i);
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(m, m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const auto row = static_cast<std::size_t>(ids[static_cast<std::size_t>(i)]);
    for (std::int64_t e = A.row_ptr[row]; e < A.row_ptr[row + 1]; ++e) {
      const std::int32_t c = pos[static_cast<std::size_t>(A.col[static_cast<std::size_t>(e)])];
      if (c >= 0) D(i, c) += A.val[static_cast<std::size_t>(e)];
    }
  }
  return D;
}

/// The free ids of element e's kept extended grid, in the local order of fdm_solve (r fastest).
std::vector<std::int32_t> kept_ids(const mg::SemSchwarz& S, std::size_t e, int p) {
  const int M = p + 3;
  const auto ext = S.extended_nodes(e);
  const mg::FdmAxis& r = S.fdm(e, 0);
  const mg::FdmAxis& s = S.fdm(e, 1);
  const mg::FdmAxis& t = S.fdm(e, 2);
  std::vector<std::int32_t> ids;
  for (int k = t.lo; k < t.lo + t.n; ++k)
    for (int j = s.lo; j < s.lo + s.n; ++j)
      for (int i = r.lo; i < r.lo + r.n; ++i) ids.push_back(ext[static_cast<std::size_t>(i + M * (j + M * k))]);
  return ids;
}

Eigen::MatrixXd dense_operator(const elliptica::LinearOperator<double>& op) {
  const std::size_t n = op.size();
  Eigen::MatrixXd D(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(n));
  std::vector<double> x(n, 0.0), y(n);
  for (std::size_t j = 0; j < n; ++j) {
    x[j] = 1.0;
    op.apply(x.data(), y.data());
    x[j] = 0.0;
    for (std::size_t i = 0; i < n; ++i) D(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = y[i];
  }
  return D;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// 1-D factors

TEST(Fdm, AxisFactorsDiagonaliseTheOneDimensionalPair) {
  for (int p = 2; p <= mg::kMaxSemOrder; ++p)
    for (int bc = 0; bc < 4; ++bc) {
      const bool ld = bc & 1, rd = bc & 2;
      const mg::FdmAxis ax = mg::fdm_axis(p, 0.3, 0.5, 0.9, ld, rd);
      const int n = ax.n;
      ASSERT_EQ(n, p + 3 - 2 * int(ld) - 2 * int(rd));
      ASSERT_EQ(ax.lo, ld ? 2 : 0);
      Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> A(ax.A.data(), n, n),
          S(ax.S.data(), n, n);
      const Eigen::VectorXd B = Eigen::Map<const Eigen::VectorXd>(ax.B.data(), n);
      const Eigen::MatrixXd StBS = S.transpose() * B.asDiagonal() * S;
      const Eigen::MatrixXd StAS = S.transpose() * A * S;
      const double scale = A.cwiseAbs().maxCoeff() / B.minCoeff();
      EXPECT_LT((StBS - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-13) << "p " << p;
      Eigen::MatrixXd L = Eigen::MatrixXd::Zero(n, n);
      for (int i = 0; i < n; ++i) L(i, i) = ax.lambda[static_cast<std::size_t>(i)];
      EXPECT_LT((StAS - L).cwiseAbs().maxCoeff(), 1e-13 * scale) << "p " << p;
      EXPECT_GT(*std::min_element(ax.lambda.begin(), ax.lambda.end()), 0.0);
      // Consistency: the rows of the element's interior nodes (extended indices 2 .. N - 1 = p)
      // have their whole stencil (the element's nodes) inside the kept grid, and constants are in
      // the kernel of the element stiffness: those rows sum to 0.
      for (int a = 2; a <= p; ++a) EXPECT_NEAR(A.row(a - ax.lo).sum(), 0.0, 1e-12 * scale) << "p " << p << " row " << a;
    }
  EXPECT_THROW(mg::fdm_axis(1, 1, 1, 1, false, false), elliptica::InvalidArgument);
  EXPECT_THROW(mg::fdm_axis(3, -1, 1, 1, false, false), elliptica::InvalidArgument);
  EXPECT_NO_THROW(mg::fdm_axis(3, -1, 1, 1, true, false));  // an absent neighbour's length is ignored
  EXPECT_THROW(mg::fdm_axis(3, 1, 0.0, 1, true, true), elliptica::InvalidArgument);
}

// ------------------------------------------------------------------------------------------
// FDM on boxes: exact

TEST(SemSchwarz, FdmSolveIsExactOnBoxElements) {
  // Axis-aligned box of unequal edge lengths: A_box = R_e A R_e^T exactly (file docstring), for an
  // interior element and for a corner element (Dirichlet faces removed).
  const int pmax = kSanitized ? 5 : 7;
  for (int p = 2; p <= pmax; ++p) {
    auto A = laplacian(mg::box_mesh(3, 3, 3, {1.0, 1.6, 0.7}), p);
    const CsrMatrix Aa = A->assemble();
    mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1);
    for (std::size_t e : {std::size_t{13}, std::size_t{0}, std::size_t{5}}) {
      const auto ids = kept_ids(S, e, p);
      for (auto g : ids) ASSERT_GE(g, 0) << "box extended grids hold free nodes only";
      const Eigen::MatrixXd Ae = dense_block(Aa, ids);
      const std::vector<double> rhs = random_vector(ids.size(), 11u + static_cast<unsigned>(e));
      std::vector<double> u = rhs, w(ids.size());
      mg::fdm_solve(S.fdm(e, 0), S.fdm(e, 1), S.fdm(e, 2), u.data(), w.data());
      const Eigen::VectorXd ref = Ae.llt().solve(Eigen::Map<const Eigen::VectorXd>(rhs.data(), static_cast<Eigen::Index>(rhs.size())));
      const Eigen::VectorXd got = Eigen::Map<const Eigen::VectorXd>(u.data(), static_cast<Eigen::Index>(u.size()));
      // Two backward-stable solves of the same matrix: forward error <= cond * 1e-16 (cond(A_e)
      // ~ 1e3 here), asserted at 1e-12 relative.
      EXPECT_LT((got - ref).norm(), 1e-12 * ref.norm()) << "p " << p << " element " << e;
    }
  }
}

TEST(SemSchwarz, AsmAndRasEqualTheirDenseDefinitionsOnABox) {
  const int pmax = kSanitized ? 3 : 4;
  for (int p = 2; p <= pmax; ++p) {
    auto A = laplacian(mg::box_mesh(3, 3, 3, {1.0, 1.3, 0.8}), p);
    const CsrMatrix Aa = A->assemble();
    const std::size_t n = A->size();
    mg::SemSchwarz asm_(A, mg::SchwarzKind::ASM, 1), ras(A, mg::SchwarzKind::RAS, 1);
    const std::vector<double> r = random_vector(n, 5);
    std::vector<double> za(n), zr(n), refa(n, 0.0), refr(n, 0.0);
    asm_.apply(r.data(), za.data());
    ras.apply(r.data(), zr.data());
    // owner of a node: the first element having it among its own nodes
    const auto& l2g = A->space().local_to_global();
    const std::size_t N3 = A->space().nodes_per_element();
    std::vector<std::int64_t> owner(n, -1);
    for (std::size_t e = 0; e < A->space().num_elements(); ++e)
      for (std::size_t q = 0; q < N3; ++q) {
        const auto g = static_cast<std::size_t>(l2g[e * N3 + q]);
        if (g < n && owner[g] < 0) owner[g] = static_cast<std::int64_t>(e);
      }
    for (std::size_t e = 0; e < A->space().num_elements(); ++e) {
      const auto ids = kept_ids(asm_, e, p);
      const Eigen::MatrixXd Ae = dense_block(Aa, ids);
      Eigen::VectorXd re(static_cast<Eigen::Index>(ids.size()));
      for (std::size_t i = 0; i < ids.size(); ++i) re(static_cast<Eigen::Index>(i)) = r[static_cast<std::size_t>(ids[i])];
      const Eigen::VectorXd ze = Ae.llt().solve(re);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto g = static_cast<std::size_t>(ids[i]);
        refa[g] += ze(static_cast<Eigen::Index>(i));
        if (owner[g] == static_cast<std::int64_t>(e)) refr[g] = ze(static_cast<Eigen::Index>(i));
      }
    }
    double ea = 0, er = 0, na = 0, nr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ea = std::max(ea, std::abs(za[i] - refa[i]));
      er = std::max(er, std::abs(zr[i] - refr[i]));
      na = std::max(na, std::abs(refa[i]));
      nr = std::max(nr, std::abs(refr[i]));
    }
    EXPECT_LT(ea, 1e-12 * na) << "ASM p " << p;
    EXPECT_LT(er, 1e-12 * nr) << "RAS p " << p;
    EXPECT_TRUE(asm_.is_symmetric());
    EXPECT_FALSE(ras.is_symmetric());
  }
}

// ------------------------------------------------------------------------------------------
// Symmetry, definiteness, spectrum

TEST(SemSchwarz, AsmIsSymmetricPositiveDefiniteOnBoxAndKershaw) {
  struct Case {
    mg::HexMesh mesh;
    int p;
    const char* name;
  };
  std::vector<Case> cases;
  cases.push_back({mg::box_mesh(2, 3, 2, {1.0, 2.0, 0.5}), 3, "box"});
  cases.push_back({mg::kershaw_mesh(3, 0.3), 3, "kershaw 0.3"});
  cases.push_back({mg::kershaw_mesh(3, 0.3), 2, "kershaw 0.3"});
  for (auto& c : cases) {
    auto A = laplacian(c.mesh, c.p);
    mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1);
    const Eigen::MatrixXd Sd = dense_operator(S);
    const double nrm = Sd.cwiseAbs().maxCoeff();
    EXPECT_LT((Sd - Sd.transpose()).cwiseAbs().maxCoeff(), 1e-14 * nrm) << c.name << " p " << c.p;
    const Eigen::MatrixXd Ss = 0.5 * (Sd + Sd.transpose());
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Ss, Eigen::EigenvaluesOnly);
    EXPECT_GT(es.eigenvalues().minCoeff(), 1e-8 * es.eigenvalues().maxCoeff()) << c.name << " p " << c.p;
    // x^T S y = y^T S x through apply
    const auto x = random_vector(S.size(), 1), y = random_vector(S.size(), 2);
    std::vector<double> Sx(S.size()), Sy(S.size());
    S.apply(x.data(), Sx.data());
    S.apply(y.data(), Sy.data());
    EXPECT_NEAR(dot(y, Sx), dot(x, Sy), 1e-13 * std::sqrt(dot(x, Sx) * dot(y, Sy)));
  }
}

TEST(SemSchwarz, SpectrumOfAsmTimesAIsBoundedByTheSubdomainCount) {
  // Exact local solves (box): every P_e = R_e^T A_e^-1 R_e A is an A-orthogonal projection, so the
  // eigenvalues of S A = sum_e P_e lie in (0, max number of subdomains a node belongs to]
  // (here: the largest count over nodes; the classical bound is the number of colours of
  // mutually non-overlapping subdomains, larger), and >= 1 (a sum of projections).
  auto A = laplacian(mg::box_mesh(3, 3, 3), 3);
  mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1);
  const std::size_t n = A->size();
  std::vector<int> mult(n, 0);
  for (std::size_t e = 0; e < A->space().num_elements(); ++e)
    for (auto g : kept_ids(S, e, 3))
      if (g >= 0) ++mult[static_cast<std::size_t>(g)];
  const int maxmult = *std::max_element(mult.begin(), mult.end());
  const Eigen::MatrixXd Sd = dense_operator(S), Ad = dense_operator(*A);
  // eigenvalues of S A = those of the symmetric L^T A L with S = L L^T
  const Eigen::MatrixXd L = Eigen::LLT<Eigen::MatrixXd>(0.5 * (Sd + Sd.transpose())).matrixL();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(L.transpose() * Ad * L, Eigen::EigenvaluesOnly);
  const double lmax = es.eigenvalues().maxCoeff(), lmin = es.eigenvalues().minCoeff();
  EXPECT_GE(lmax, 1.0 - 1e-10);
  EXPECT_LE(lmax, maxmult * (1.0 + 1e-10)) << "max multiplicity " << maxmult;
  EXPECT_GT(lmin, 0.0);
  std::printf("box 3^3 p = 3: rho(S A) = %.4f, lambda_min = %.4g, max subdomains per node %d\n", lmax, lmin, maxmult);
}

// ------------------------------------------------------------------------------------------
// Chebyshev over the external S

namespace {
/// ||e||_A after one smoothing of order k of A x = 0 from x = e0, relative to ||e0||_A.
double reduction(const mg::Smoother& sm, const mg::SemLaplacian& A, const std::vector<double>& e0, int k) {
  const std::size_t n = e0.size();
  std::vector<double> x = e0, b(n, 0.0), Ax(n);
  A.apply(e0.data(), Ax.data());
  const double n0 = std::sqrt(dot(e0, Ax));
  sm.smooth(b.data(), x.data(), k);
  A.apply(x.data(), Ax.data());
  return std::sqrt(dot(x, Ax)) / n0;
}
}  // namespace

TEST(SemSchwarz, ChebyshevAsmSmoothsMuchBetterThanChebyshevJacobi) {
  struct Case {
    mg::HexMesh mesh;
    int p;
    const char* name;
  };
  std::vector<Case> cases;
  cases.push_back({mg::box_mesh(4, 4, 4), kSanitized ? 4 : 5, "box 4^3"});
  cases.push_back({mg::kershaw_mesh(4, 0.3), kSanitized ? 3 : 4, "kershaw 4^3 eps 0.3"});
  for (auto& c : cases) {
    auto A = laplacian(c.mesh, c.p);
    const std::size_t n = A->size();
    auto Sa = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::ASM, 1);
    auto Sr = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::RAS, 1);
    mg::SmootherOptions oj, oa, orr;
    oj.kind = oa.kind = orr.kind = mg::Polynomial::Cheby4Opt;
    oj.threads = oa.threads = orr.threads = 1;
    oa.base = mg::BaseSmoother::ASM;
    orr.base = mg::BaseSmoother::RAS;
    mg::Smoother jac(*A, A->diagonal(), oj), as(*A, Sa, oa), ra(*A, Sr, orr);
    const auto e0 = random_vector(n, 3);
    for (int k : {2, 3}) {
      const double rj = reduction(jac, *A, e0, k), ra_ = reduction(as, *A, e0, k), rr = reduction(ra, *A, e0, k);
      std::printf("%s p = %d k = %d: ||e||_A reduction Jacobi %.4f, ASM %.4f, RAS %.4f (lambda_max %.3f / %.3f / %.3f)\n",
                  c.name, c.p, k, rj, ra_, rr, jac.lambda_max(), as.lambda_max(), ra.lambda_max());
      EXPECT_LT(ra_, 0.5 * rj) << c.name << " k " << k;
      EXPECT_LT(rr, 0.5 * rj) << c.name << " k " << k;
      EXPECT_LT(ra_, 1.0);
    }
  }
}

TEST(SemSchwarz, ThreadsGiveTheSameResult) {
  // Above kParallelMinRows free nodes (5 x 4 x 4 elements, p = 7: 24786), so apply() forks.
  if (kSanitized) GTEST_SKIP() << "large case skipped in sanitizer builds";
  auto A = laplacian(mg::box_mesh(5, 4, 4), 7);
  ASSERT_GT(A->size(), 20000u);
  for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::RAS}) {
    mg::SemSchwarz S1(A, kind, 1), S2(A, kind, 2);
    const auto r = random_vector(A->size(), 9);
    std::vector<double> z1(A->size()), z2(A->size());
    S1.apply(r.data(), z1.data());
    S2.apply(r.data(), z2.data());
    EXPECT_EQ(z1, z2);
  }
}

TEST(SemSchwarz, BadInput) {
  auto A1 = laplacian(mg::box_mesh(2, 2, 2), 1);
  EXPECT_THROW(mg::SemSchwarz(A1, mg::SchwarzKind::ASM), elliptica::InvalidArgument);
  EXPECT_THROW(mg::SemSchwarz(nullptr, mg::SchwarzKind::ASM), elliptica::InvalidArgument);
  auto A = laplacian(mg::box_mesh(2, 2, 2), 2);
  EXPECT_THROW(mg::SemSchwarz(A, mg::SchwarzKind::ASM, -1), elliptica::InvalidArgument);
  mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1);
  EXPECT_THROW(S.extended_nodes(8), elliptica::InvalidArgument);
  EXPECT_THROW(S.fdm(0, 3), elliptica::InvalidArgument);
  auto ras = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::RAS, 1);
  mg::SmootherOptions o;
  o.base = mg::BaseSmoother::ASM;
  EXPECT_THROW(mg::Smoother(*A, ras, o), elliptica::InvalidArgument);  // asm needs a symmetric S
  o.base = mg::BaseSmoother::Jacobi;
  EXPECT_THROW(mg::Smoother(*A, ras, o), elliptica::InvalidArgument);
  o.base = mg::BaseSmoother::RAS;
  EXPECT_THROW(mg::Smoother(*A, nullptr, o), elliptica::InvalidArgument);
  auto B = laplacian(mg::box_mesh(2, 2, 2), 3);
  EXPECT_THROW(mg::Smoother(*B, ras, o), elliptica::InvalidArgument);  // size mismatch
  EXPECT_NO_THROW(mg::Smoother(*A, ras, o));
}

#include "elliptica/krylov/krylov.hpp"
namespace {
struct Weighted : elliptica::LinearOperator<double> {
  std::shared_ptr<const mg::SemSchwarz> S;
  std::vector<double> w;
  std::size_t size() const override { return S->size(); }
  bool is_symmetric() const override { return true; }
  void apply(const double* r, double* z) const override {
    std::vector<double> t(size());
    for (std::size_t i = 0; i < size(); ++i) t[i] = w[i] * r[i];
    S->apply(t.data(), z);
    for (std::size_t i = 0; i < size(); ++i) z[i] *= w[i];
  }
};
}  // namespace
TEST(Explore, Weighted) {
  for (int p : {3, 5, 7}) {
    auto A = laplacian(mg::box_mesh(4, 4, 4), p);
    const std::size_t n = A->size();
    auto Sa = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::ASM, 1);
    auto W = std::make_shared<Weighted>();
    W->S = Sa;
    W->w.assign(n, 0.0);
    for (std::size_t e = 0; e < A->space().num_elements(); ++e)
      for (auto g : kept_ids(*Sa, e, p)) if (g >= 0) W->w[g] += 1;
    for (auto& x : W->w) x = 1.0 / std::sqrt(x);
    mg::SmootherOptions oj, oa;
    oj.threads = oa.threads = 1;
    oa.base = mg::BaseSmoother::ASM;
    mg::Smoother jac(*A, A->diagonal(), oj), as(*A, Sa, oa), aw(*A, W, oa);
    const auto e0 = random_vector(n, 3);
    for (int k : {2, 3}) {
      std::printf("p %d k %d: jac %.4f asm %.4f wasm %.4f (lmax %.3f %.3f %.3f)\n", p, k, reduction(jac, *A, e0, k),
                  reduction(as, *A, e0, k), reduction(aw, *A, e0, k), jac.lambda_max(), as.lambda_max(), aw.lambda_max());
      mg::SmootherPreconditioner pj(jac, k), pa(as, k), pw(aw, k);
      elliptica::krylov::Options ko;
      ko.rtol = 1e-8;
      ko.max_iterations = 500;
      for (auto* M : std::vector<const elliptica::LinearOperator<double>*>{&pj, &pa, &pw}) {
        elliptica::krylov::Cg<double> cg(*A, M, ko);
        std::vector<double> x(n, 0.0);
        auto res = cg.solve(e0.data(), x.data());
        std::printf("   pcg its %d\n", res.iterations);
      }
    }
  }
}
