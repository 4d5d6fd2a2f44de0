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
#include <array>
#include <map>
#include <cmath>
#include <memory>
#include <random>

#include <stdlib.h>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/gll.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"

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
      // (without a Dirichlet side: there the boundary node is removed from the stencil).
      if (!ld && !rd) {
        for (int a = 2; a <= p; ++a) EXPECT_NEAR(A.row(a - ax.lo).sum(), 0.0, 1e-12 * scale) << "p " << p << " row " << a;
      }
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
    mg::SemSchwarz asm_(A, mg::SchwarzKind::ASM, 1), ras(A, mg::SchwarzKind::RAS, 1),
        wasm(A, mg::SchwarzKind::ASMWeighted, 1);
    const std::vector<double> r = random_vector(n, 5);
    std::vector<double> za(n), zr(n), zw(n), refa(n, 0.0), refr(n, 0.0), refw(n, 0.0);
    asm_.apply(r.data(), za.data());
    ras.apply(r.data(), zr.data());
    wasm.apply(r.data(), zw.data());
    // multiplicity of each node among the extended grids, for the weighted ASM
    std::vector<double> w(n, 0.0);
    for (std::size_t e = 0; e < A->space().num_elements(); ++e)
      for (auto g : kept_ids(asm_, e, p)) w[static_cast<std::size_t>(g)] += 1.0;
    for (double& x : w) x = 1.0 / std::sqrt(x);
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
      const Eigen::LLT<Eigen::MatrixXd> llt(Ae);
      const Eigen::VectorXd ze = llt.solve(re);
      for (std::size_t i = 0; i < ids.size(); ++i) re(static_cast<Eigen::Index>(i)) *= w[static_cast<std::size_t>(ids[i])];
      const Eigen::VectorXd zwe = llt.solve(re);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto g = static_cast<std::size_t>(ids[i]);
        refw[g] += w[g] * zwe(static_cast<Eigen::Index>(i));
        refa[g] += ze(static_cast<Eigen::Index>(i));
        if (owner[g] == static_cast<std::int64_t>(e)) refr[g] = ze(static_cast<Eigen::Index>(i));
      }
    }
    double ea = 0, er = 0, na = 0, nr = 0, ew = 0, nw = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ew = std::max(ew, std::abs(zw[i] - refw[i]));
      nw = std::max(nw, std::abs(refw[i]));
      ea = std::max(ea, std::abs(za[i] - refa[i]));
      er = std::max(er, std::abs(zr[i] - refr[i]));
      na = std::max(na, std::abs(refa[i]));
      nr = std::max(nr, std::abs(refr[i]));
    }
    EXPECT_LT(ea, 1e-12 * na) << "ASM p " << p;
    EXPECT_LT(er, 1e-12 * nr) << "RAS p " << p;
    EXPECT_LT(ew, 1e-12 * nw) << "weighted ASM p " << p;
    EXPECT_TRUE(wasm.is_symmetric());
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
  for (auto& c : cases)
   for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted}) {
    auto A = laplacian(c.mesh, c.p);
    mg::SemSchwarz S(A, kind, 1);
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

TEST(SemSchwarz, SpectrumOfAsmTimesAIsBounded) {
  // Exact local solves (box): every P_e = R_e^T A_e^-1 R_e A is an A-orthogonal projection, so the
  // eigenvalues of S A = sum_e P_e are > 0, the largest >= 1, and <= the largest number of
  // subdomains coupled through A to one subdomain, itself included (Toselli & Widlund, "Domain
  // Decomposition Methods", 2005, lemma 2.6 with the strengthened Cauchy-Schwarz constants <= 1):
  // 27 on a box (the element and its 26 neighbours). The finer heuristic "<= the number of
  // subdomains a node belongs to" (8 here) does not hold: measured rho(S A) = 10.55 at p = 3
  // (the edge and corner modes of the overlap); asserted <= 1.5 x that count as a regression
  // bound. Weighted ASM: measured spectrum [0.369, 1.317]; asserted lambda_max in [1, 2] (a
  // regression check of the clustering that makes it the better Chebyshev base).
  auto A = laplacian(mg::box_mesh(3, 3, 3), 3);
  mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1), Sw(A, mg::SchwarzKind::ASMWeighted, 1);
  const std::size_t n = A->size();
  std::vector<int> mult(n, 0);
  for (std::size_t e = 0; e < A->space().num_elements(); ++e)
    for (auto g : kept_ids(S, e, 3)) ++mult[static_cast<std::size_t>(g)];
  const int maxmult = *std::max_element(mult.begin(), mult.end());
  const Eigen::MatrixXd Ad = dense_operator(*A);
  auto spectrum = [&](const mg::SemSchwarz& op) {
    const Eigen::MatrixXd Sd = dense_operator(op);
    // eigenvalues of S A = those of the symmetric L^T A L with S = L L^T
    const Eigen::MatrixXd L = Eigen::LLT<Eigen::MatrixXd>(0.5 * (Sd + Sd.transpose())).matrixL();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(L.transpose() * Ad * L, Eigen::EigenvaluesOnly);
    return std::make_pair(es.eigenvalues().minCoeff(), es.eigenvalues().maxCoeff());
  };
  const auto [lmin, lmax] = spectrum(S);
  const auto [wmin, wmax] = spectrum(Sw);
  std::printf("box 3^3 p = 3: ASM spectrum [%.4g, %.4f], weighted [%.4g, %.4f], max subdomains per node %d\n", lmin,
              lmax, wmin, wmax, maxmult);
  EXPECT_EQ(maxmult, 8);
  EXPECT_GE(lmax, 1.0 - 1e-10);
  EXPECT_LE(lmax, 27.0);
  EXPECT_LE(lmax, 1.5 * maxmult);
  EXPECT_GT(lmin, 0.0);
  EXPECT_GT(wmin, 0.0);
  EXPECT_LE(wmax, 2.0);
  EXPECT_GE(wmax, 1.0);
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

TEST(SemSchwarz, ChebyshevSchwarzSmoothsMuchBetterThanChebyshevJacobi) {
  // Quality measure: PCG iterations to 1e-8 with one Chebyshev (opt4) smoothing of order k as the
  // preconditioner (the smoother as an operator, SmootherPreconditioner). Fast diagonalisation
  // removes the element-interior high-order conditioning (kappa(D^-1 A) grows like p^3 per
  // element; the overlapping Schwarz operator's does not grow with p: Fischer, Miller & Tufo
  // 2000), so the ratio of iteration counts falls as p grows. Measured on box 4^3 (k = 2):
  // Jacobi 31 / 59 / 87 iterations at p = 3 / 5 / 7, ASM 14 / 21 / 27, weighted ASM 9 / 11 / 17.
  // Asserted: ASM and weighted ASM <= 0.6 x Jacobi's count, RAS (in a flexible method: the
  // smoother is not symmetric) likewise. The one-smoothing reduction of ||e||_A for a random error
  // does not separate them (0.28-0.35 for all: what remains is the smooth error no smoother
  // touches, left to the coarse levels); it is printed only.
  struct Case {
    mg::HexMesh mesh;
    int p;
    const char* name;
  };
  std::vector<Case> cases;
  cases.push_back({mg::box_mesh(4, 4, 4), kSanitized ? 4 : 5, "box 4^3"});
  cases.push_back({mg::kershaw_mesh(4, 0.3), kSanitized ? 3 : 5, "kershaw 4^3 eps 0.3"});
  for (auto& c : cases) {
    auto A = laplacian(c.mesh, c.p);
    const std::size_t n = A->size();
    auto Sa = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::ASM, 1);
    auto Sw = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::ASMWeighted, 1);
    auto Sr = std::make_shared<const mg::SemSchwarz>(A, mg::SchwarzKind::RAS, 1);
    mg::SmootherOptions oj, oa, orr;
    oj.threads = oa.threads = orr.threads = 1;
    oa.base = mg::BaseSmoother::ASM;
    orr.base = mg::BaseSmoother::RAS;
    mg::Smoother jac(*A, A->diagonal(), oj), as(*A, Sa, oa), aw(*A, Sw, oa), ra(*A, Sr, orr);
    const auto b = random_vector(n, 3);
    const int k = 2;
    elliptica::krylov::Options ko;
    ko.rtol = 1e-8;
    ko.max_iterations = 400;
    ko.threads = 1;
    auto pcg = [&](const mg::Smoother& sm) {
      mg::SmootherPreconditioner M(sm, k);
      std::vector<double> x(n, 0.0);
      const auto res = elliptica::krylov::Cg<double>(*A, &M, ko).solve(b.data(), x.data());
      EXPECT_TRUE(res.converged);
      return res.iterations;
    };
    auto fgmres = [&](const mg::Smoother& sm) {
      mg::SmootherPreconditioner M(sm, k);
      std::vector<double> x(n, 0.0);
      const auto res = elliptica::krylov::Fgmres<double>(*A, &M, ko).solve(b.data(), x.data());
      EXPECT_TRUE(res.converged);
      return res.iterations;
    };
    const int ij = pcg(jac), ia = pcg(as), iw = pcg(aw), ijf = fgmres(jac), irf = fgmres(ra);
    std::printf("%s p = %d, k = %d: PCG iterations Jacobi %d, ASM %d, weighted ASM %d; FGMRES Jacobi %d, RAS %d; "
                "lambda_max %.3f / %.3f / %.3f / %.3f\n",
                c.name, c.p, k, ij, ia, iw, ijf, irf, jac.lambda_max(), as.lambda_max(), aw.lambda_max(),
                ra.lambda_max());
    std::printf("  one smoothing, ||e||_A reduction: Jacobi %.3f, ASM %.3f, weighted ASM %.3f, RAS %.3f\n",
                reduction(jac, *A, b, k), reduction(as, *A, b, k), reduction(aw, *A, b, k), reduction(ra, *A, b, k));
    EXPECT_LE(ia, 0.6 * ij) << c.name;
    EXPECT_LE(iw, 0.6 * ij) << c.name;
    EXPECT_LE(irf, 0.6 * ijf) << c.name;
  }
}

namespace {
/// The p-multigrid prolongation from order q to order p on the same mesh (free nodes to free
/// nodes), by Lagrange interpolation along each axis (gll.hpp: interpolation_matrix), for the
/// two-level V-cycle test only.
CsrMatrix order_prolongation(const mg::SemSpace& fine, const mg::SemSpace& coarse) {
  const int Nf = fine.points_1d(), Nc = coarse.points_1d();
  const std::vector<double> J = mg::interpolation_matrix(coarse.gll().nodes, fine.gll().nodes);  // Nf x Nc
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
  std::vector<char> done(fine.num_free(), 0);
  for (std::size_t e = 0; e < fine.num_elements(); ++e)
    for (int k = 0; k < Nf; ++k)
      for (int j = 0; j < Nf; ++j)
        for (int i = 0; i < Nf; ++i) {
          const auto gf = static_cast<std::size_t>(fine.local_to_global()[e * fine.nodes_per_element() + static_cast<std::size_t>(i + Nf * (j + Nf * k))]);
          if (gf >= fine.num_free() || done[gf]) continue;
          done[gf] = 1;
          for (int c = 0; c < Nc; ++c)
            for (int b = 0; b < Nc; ++b)
              for (int a = 0; a < Nc; ++a) {
                const double w = J[static_cast<std::size_t>(i * Nc + a)] * J[static_cast<std::size_t>(j * Nc + b)] * J[static_cast<std::size_t>(k * Nc + c)];
                const auto gc = static_cast<std::size_t>(coarse.local_to_global()[e * coarse.nodes_per_element() + static_cast<std::size_t>(a + Nc * (b + Nc * c))]);
                if (gc >= coarse.num_free() || std::abs(w) < 1e-15) continue;
                rows.push_back(static_cast<std::int64_t>(gf));
                cols.push_back(static_cast<std::int64_t>(gc));
                vals.push_back(w);
              }
        }
  return CsrMatrix::from_triplets(fine.num_free(), coarse.num_free(), rows, cols, vals);
}
}  // namespace

TEST(SemSchwarz, VCycleUsesTheLevelsSchwarzOperator) {
  // Two levels: p = 4 (matrix-free, Level::schwarz) over p = 2 (assembled, banded Cholesky).
  const int pf = kSanitized ? 3 : 4, pc = 2;
  auto Af = laplacian(mg::box_mesh(3, 3, 3), pf);
  auto Ac = laplacian(mg::box_mesh(3, 3, 3), pc);
  const CsrMatrix P = order_prolongation(Af->space(), Ac->space());
  auto make = [&](std::shared_ptr<const elliptica::LinearOperator<double>> S) {
    std::vector<mg::Level> lv(2);
    lv[0].A = Af;
    lv[0].diagonal = Af->diagonal();
    lv[0].P = P;
    lv[0].R = P.transpose();
    lv[0].schwarz = std::move(S);
    lv[1] = mg::Level::from_matrix(Ac->assemble(), {}, 1);
    auto coarse = std::make_shared<const mg::BandedCholesky>(*lv[1].matrix);
    return mg::Hierarchy(std::move(lv), coarse);
  };
  const std::size_t n = Af->size();
  const auto b = random_vector(n, 4);
  auto cycles = [&](mg::BaseSmoother base, std::shared_ptr<const elliptica::LinearOperator<double>> S, double* lmax) {
    mg::VCycleOptions o;
    o.pre = o.post = 2;
    o.threads = 1;
    o.smoother.base = base;
    mg::VCycle vc(make(std::move(S)), o);
    *lmax = vc.smoother(0).lambda_max();
    std::vector<double> x(n, 0.0);
    const auto res = vc.solve(b.data(), x.data(), 1e-8, 60);
    EXPECT_TRUE(res.converged);
    EXPECT_EQ(vc.is_symmetric(), base != mg::BaseSmoother::RAS);
    return res.iterations;
  };
  auto Sw = std::make_shared<const mg::SemSchwarz>(Af, mg::SchwarzKind::ASMWeighted, 1);
  auto Sr = std::make_shared<const mg::SemSchwarz>(Af, mg::SchwarzKind::RAS, 1);
  double lj = 0, lw = 0, lr = 0, lign = 0;
  const int cj = cycles(mg::BaseSmoother::Jacobi, nullptr, &lj);
  const int cw = cycles(mg::BaseSmoother::ASM, Sw, &lw);
  const int cr = cycles(mg::BaseSmoother::RAS, Sr, &lr);
  const int cign = cycles(mg::BaseSmoother::Jacobi, Sw, &lign);  // base jacobi: Level::schwarz ignored
  std::printf("two-level p = %d / %d, (2,2) cycles to 1e-8: Jacobi %d, weighted ASM %d, RAS %d\n", pf, pc, cj, cw, cr);
  // the cycle's smoother is the one over the level's S (same lambda_max as a direct construction)
  mg::SmootherOptions so;
  so.base = mg::BaseSmoother::ASM;
  so.threads = 1;
  EXPECT_EQ(lw, mg::Smoother(*Af, Sw, so).lambda_max());
  EXPECT_EQ(lign, lj);
  EXPECT_EQ(cign, cj);
  EXPECT_LT(cw, cj);
  EXPECT_LT(cr, cj);
}

namespace {
/// The box mesh with every element's corners re-listed under a random rotation of the reference
/// cube (one of the 24 orientation-preserving symmetries) and the vertices renumbered at random
/// (as tests/test_sem.cpp): neighbours see their shared faces in different orientations.
mg::HexMesh scrambled_box(int n, unsigned seed) {
  mg::HexMesh m = mg::box_mesh(n, n, n);
  std::mt19937 g(seed);
  std::vector<std::int64_t> perm(m.num_vertices());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = std::int64_t(i);
  std::shuffle(perm.begin(), perm.end(), g);
  mg::HexMesh out;
  out.vertices.resize(m.vertices.size());
  for (std::size_t v = 0; v < m.num_vertices(); ++v)
    for (int d = 0; d < 3; ++d) out.vertices[3 * perm[v] + d] = m.vertices[3 * v + d];
  out.elements.resize(m.elements.size());
  const int axes[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}};  // first 3 even
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    int a, flips;
    do {
      a = int(g() % 6);
      flips = int(g() % 8);
    } while (((a >= 3) + __builtin_popcount(flips)) % 2 != 0);  // determinant +1
    for (int c = 0; c < 8; ++c) {
      int cn = 0;
      for (int d = 0; d < 3; ++d) cn |= (((c >> d) & 1) ^ ((flips >> d) & 1)) << axes[a][d];
      out.elements[8 * e + cn] = perm[m.elements[8 * e + c]];
    }
  }
  return out;
}

std::array<long long, 3> key(const mg::SemSpace& V, std::size_t g) {
  std::array<long long, 3> k{};
  for (int d = 0; d < 3; ++d) k[static_cast<std::size_t>(d)] = std::llround(V.coordinates()[3 * g + static_cast<std::size_t>(d)] * 1e9);
  return k;
}
}  // namespace

TEST(SemSchwarz, ElementOrientationsDoNotMatter) {
  // On a scrambled box every element's extended grid holds the same points as on the plain box,
  // and ASM / RAS are the same operators up to the node permutation (RAS: the owner rule is by
  // element index, the same in both meshes).
  for (int p : {2, 3}) {
    auto A0 = laplacian(mg::box_mesh(3, 3, 3), p), A1 = laplacian(scrambled_box(3, 7u + unsigned(p)), p);
    const mg::SemSpace &V0 = A0->space(), &V1 = A1->space();
    ASSERT_EQ(V0.num_free(), V1.num_free());
    const std::size_t n = V0.num_free();
    std::map<std::array<long long, 3>, std::size_t> at0;
    for (std::size_t g = 0; g < n; ++g) at0[key(V0, g)] = g;
    std::vector<std::size_t> map10(n);  // node of mesh 1 -> node of mesh 0
    for (std::size_t g = 0; g < n; ++g) {
      const auto it = at0.find(key(V1, g));
      ASSERT_NE(it, at0.end());
      map10[g] = it->second;
    }
    for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::RAS}) {
      mg::SemSchwarz S0(A0, kind, 1), S1(A1, kind, 1);
      for (std::size_t e = 0; e < V0.num_elements(); ++e) {
        std::vector<std::size_t> a, b;
        for (auto g : S0.extended_nodes(e))
          if (g >= 0) a.push_back(static_cast<std::size_t>(g));
        for (auto g : S1.extended_nodes(e))
          if (g >= 0) b.push_back(map10[static_cast<std::size_t>(g)]);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << "element " << e;
      }
      const auto r0 = random_vector(n, 21);
      std::vector<double> r1(n), z0(n), z1(n);
      for (std::size_t g = 0; g < n; ++g) r1[g] = r0[map10[g]];
      S0.apply(r0.data(), z0.data());
      S1.apply(r1.data(), z1.data());
      double err = 0, nrm = 0;
      for (std::size_t g = 0; g < n; ++g) {
        err = std::max(err, std::abs(z1[g] - z0[map10[g]]));
        nrm = std::max(nrm, std::abs(z0[g]));
      }
      EXPECT_LT(err, 1e-12 * nrm) << "p " << p;
    }
  }
}

TEST(SemSchwarz, ThreadsGiveTheSameResult) {
  // Above kParallelMinRows free nodes (5 x 4 x 4 elements, p = 7: 24786), so apply() forks (kept
  // in sanitizer builds: the ThreadSanitizer run needs the parallel path; ~0.1 s in Release).
  auto A = laplacian(mg::box_mesh(5, 4, 4), 7);
  ASSERT_GT(A->size(), 20000u);
  for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted, mg::SchwarzKind::RAS}) {
    mg::SemSchwarz S1(A, kind, 1), S2(A, kind, 2);
    const auto r = random_vector(A->size(), 9);
    std::vector<double> z1(A->size()), z2(A->size());
    S1.apply(r.data(), z1.data());
    S2.apply(r.data(), z2.data());
    EXPECT_EQ(z1, z2);
  }
}

TEST(SemSchwarz, OneElementIsAnExactSolve) {
  // One box element: its extended grid (Dirichlet on every face) is all free nodes and the FDM
  // box is the element itself, so S = A^-1 for ASM, weighted ASM (multiplicity 1) and RAS; with
  // the Element local solver the element's own free nodes are all the free nodes: S = A^-1 too.
  for (int p : {2, 4, 6}) {
    auto A = laplacian(mg::box_mesh(1, 1, 1, {0.5, 1.0, 2.0}), p);
    ASSERT_EQ(A->size(), std::size_t((p - 1) * (p - 1) * (p - 1)));
    for (auto local : {mg::SchwarzLocalSolver::FDM, mg::SchwarzLocalSolver::Element})
      for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted, mg::SchwarzKind::RAS}) {
        mg::SemSchwarz S(A, kind, 1, mg::SchwarzPrecision::Double, local);
        const auto x = random_vector(A->size(), 17);
        std::vector<double> Ax(A->size()), SAx(A->size());
        A->apply(x.data(), Ax.data());
        S.apply(Ax.data(), SAx.data());
        double err = 0, nrm = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          err = std::max(err, std::abs(SAx[i] - x[i]));
          nrm = std::max(nrm, std::abs(x[i]));
        }
        EXPECT_LT(err, 1e-12 * nrm) << "p " << p << " " << mg::to_string(local);
      }
  }
}

TEST(SemSchwarz, MemoryIsCheckedBeforeAllocating) {
  auto A = laplacian(mg::box_mesh(4, 4, 4), 5);
  ::setenv("ELLIPTICA_MEMORY_LIMIT", "100000", 1);  // 100 kB: the estimate is ~1.2 MB (64 extended grids of 8^3)
  EXPECT_THROW(mg::SemSchwarz(A, mg::SchwarzKind::ASM, 1), elliptica::ResourceError);
  ::unsetenv("ELLIPTICA_MEMORY_LIMIT");
  EXPECT_NO_THROW(mg::SemSchwarz(A, mg::SchwarzKind::ASM, 1));
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


// ------------------------------------------------------------------------------------------
// Issue 33: the batched local solves and the elements' lengths along their GLL lines

TEST(SemSchwarz, BatchedLocalSolvesEqualTheElementwiseDefinitionOnKershaw) {
  // The batched apply (kFdmLanes elements per SIMD vector, colour by colour) against the
  // definition written element by element with the public pieces: gather r on each kept extended
  // grid (weighted: W^1/2 r), fdm_solve, add back (RAS: only the nodes the element owns, the first
  // element having the node among its own); a Kershaw mesh (every element its own factors) with
  // interior and boundary elements (extended grids of 4 kept shapes), p = 2, 3, 5. ~0.1 s.
  for (int p : {2, 3, 5}) {
    auto A = laplacian(mg::kershaw_mesh(kSanitized ? 3 : 6, 0.3), p);
    const mg::SemSpace& V = A->space();
    const std::size_t n = A->size(), ne = V.num_elements();
    const int N = p + 1, M = p + 3;
    const auto r = random_vector(n, 33);
    for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted, mg::SchwarzKind::RAS}) {
      mg::SemSchwarz S(A, kind, 1);
      std::vector<double> mult(n, 0.0);
      for (std::size_t e = 0; e < ne; ++e)
        for (std::int32_t g : kept_ids(S, e, p))
          if (g >= 0) mult[static_cast<std::size_t>(g)] += 1.0;
      std::vector<std::int64_t> owner(n, -1);
      const auto& l2g = V.local_to_global();
      for (std::size_t e = 0; e < ne; ++e)
        for (std::size_t q = 0; q < V.nodes_per_element(); ++q) {
          const auto g = static_cast<std::size_t>(l2g[e * V.nodes_per_element() + q]);
          if (g < n && owner[g] < 0) owner[g] = static_cast<std::int64_t>(e);
        }
      std::vector<double> ref(n, 0.0);
      for (std::size_t e = 0; e < ne; ++e) {
        const auto ids = kept_ids(S, e, p);
        std::vector<double> u(ids.size()), w(ids.size());
        for (std::size_t q = 0; q < ids.size(); ++q) {
          const std::int32_t g = ids[q];
          u[q] = g < 0 ? 0.0 : r[static_cast<std::size_t>(g)] / (kind == mg::SchwarzKind::ASMWeighted ? std::sqrt(mult[static_cast<std::size_t>(g)]) : 1.0);
        }
        mg::fdm_solve(S.fdm(e, 0), S.fdm(e, 1), S.fdm(e, 2), u.data(), w.data());
        const mg::FdmAxis& fr = S.fdm(e, 0);
        const mg::FdmAxis& fs = S.fdm(e, 1);
        std::size_t q = 0;
        for (int k = S.fdm(e, 2).lo; k < S.fdm(e, 2).lo + S.fdm(e, 2).n; ++k)
          for (int j = fs.lo; j < fs.lo + fs.n; ++j)
            for (int i = fr.lo; i < fr.lo + fr.n; ++i, ++q) {
              const std::int32_t g = ids[q];
              if (g < 0) continue;
              const bool own = i >= 1 && i <= N && j >= 1 && j <= N && k >= 1 && k <= N && owner[static_cast<std::size_t>(g)] == static_cast<std::int64_t>(e);
              if (kind == mg::SchwarzKind::RAS) {
                if (own) ref[static_cast<std::size_t>(g)] = u[q];
              } else {
                ref[static_cast<std::size_t>(g)] += u[q];
              }
            }
        (void)M;
      }
      if (kind == mg::SchwarzKind::ASMWeighted)
        for (std::size_t g = 0; g < n; ++g) ref[g] /= std::sqrt(mult[g]);
      std::vector<double> z(n);
      S.apply(r.data(), z.data());
      double err = 0, nrm = 0;
      for (std::size_t g = 0; g < n; ++g) {
        err = std::max(err, std::abs(z[g] - ref[g]));
        nrm = std::max(nrm, std::abs(ref[g]));
      }
      EXPECT_LT(err, 1e-13 * nrm) << "p " << p << " kind " << int(kind);
    }
  }
}

TEST(SemSchwarz, FdmLengthIsTheHarmonicMeanOverTheGllLines) {
  // One element, a wedge: x in [0, 1], z in [0, 1], y from 0 to a height growing linearly in x
  // from a to b (the shape of a Kershaw transition element). The lines along s (y) at the GLL
  // points x_j have lengths L_j = a + (b - a) (1 + xi_j) / 2; the FDM length is
  // (sum w_j w_k / sum w_j w_k L_j^-2)^(1/2). Read back from the 1-D mass B = h/2 w (every face
  // Dirichlet: the kept points are the element's interior nodes 1 .. p - 1).
  const double a = 0.05, b = 1.95;
  mg::HexMesh m;
  m.vertices = {0, 0, 0, 1, 0, 0, 0, a, 0, 1, b, 0, 0, 0, 1, 1, 0, 1, 0, a, 1, 1, b, 1};
  m.elements = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int p : {3, 5, 7}) {
    auto A = laplacian(m, p);
    mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1);
    const mg::GllRule g = mg::gll_rule(p);
    double num = 0, den = 0, mean_edges = 0.5 * (a + b);
    for (int j = 0; j <= p; ++j)
      for (int k = 0; k <= p; ++k) {
        const double L = a + (b - a) * (1.0 + g.nodes[std::size_t(j)]) / 2.0;
        num += g.weights[std::size_t(j)] * g.weights[std::size_t(k)];
        den += g.weights[std::size_t(j)] * g.weights[std::size_t(k)] / (L * L);
      }
    const double h = std::sqrt(num / den);
    const mg::FdmAxis& fs = S.fdm(0, 1);
    ASSERT_EQ(fs.n, p - 1);
    for (int i = 0; i < fs.n; ++i) EXPECT_NEAR(fs.B[std::size_t(i)], 0.5 * h * g.weights[std::size_t(i + 1)], 1e-14) << "p " << p;
    EXPECT_LT(h, 0.5 * mean_edges);  // the thin end dominates: far below the mean edge length
    // Along x the line at height fraction eta = (1 + xi_j) / 2 runs from (0, eta a) to (1, eta b).
    num = den = 0;
    for (int j = 0; j <= p; ++j)
      for (int k = 0; k <= p; ++k) {
        const double eta = (1.0 + g.nodes[std::size_t(j)]) / 2.0;
        const double L2 = 1.0 + eta * eta * (b - a) * (b - a);
        num += g.weights[std::size_t(j)] * g.weights[std::size_t(k)];
        den += g.weights[std::size_t(j)] * g.weights[std::size_t(k)] / L2;
      }
    const mg::FdmAxis& fr = S.fdm(0, 0);
    for (int i = 0; i < fr.n; ++i)
      EXPECT_NEAR(fr.B[std::size_t(i)], 0.5 * std::sqrt(num / den) * g.weights[std::size_t(i + 1)], 1e-14);
  }
}

// ------------------------------------------------------------------------------------------
// Issue 33: the Element local solver (exact solves on the elements' own nodes)

TEST(SemSchwarz, ElementLocalSolvesEqualTheDenseDefinitionOnKershaw) {
  // S = sum_e R_e^T (R_e A R_e^T)^-1 R_e (weighted: W^1/2 ... W^1/2, W = 1 / the number of
  // elements holding the node; RAS: each node's value from the first element holding it), with
  // R_e A R_e^T taken from the ASSEMBLED matrix (SemLaplacian::assemble) and inverted by Eigen's
  // Cholesky: an independent check of the library's A_e, which it builds from the element
  // stiffness of e and its neighbours' on the shared nodes. Kershaw meshes at eps 0.3 and 0.05
  // (sheared elements, boundary and interior), p = 2, 3, 4. fp64: to rounding (1e-12 of max|z|);
  // fp32: the inverse's entries and the input rounded to float (relative 6e-8 each), a sum of at
  // most N^3 = 125 terms per entry, then amplified by the cancellation within A_e^-1 r_e: 1e-5
  // relative to max|z| (measured: at most 1.9e-7; fp64 at most 4.3e-16). A 0.1% error in the
  // neighbours' contributions gives 9e-4. ~0.3 s.
  for (double eps : {0.3, 0.05})
    for (int p : {2, 3, 4}) {
      auto A = laplacian(mg::kershaw_mesh(kSanitized ? 3 : 4, eps), p);
      const mg::SemSpace& V = A->space();
      const std::size_t n = A->size(), ne = V.num_elements(), N3 = V.nodes_per_element();
      const CsrMatrix Aa = A->assemble();
      const auto& l2g = V.local_to_global();
      const auto r = random_vector(n, 41);
      std::vector<double> mult(n, 0.0);
      std::vector<std::int64_t> owner(n, -1);
      std::vector<std::vector<std::int32_t>> ids(ne);
      for (std::size_t e = 0; e < ne; ++e)
        for (std::size_t q = 0; q < N3; ++q) {
          const std::int32_t g = l2g[e * N3 + q];
          if (static_cast<std::size_t>(g) >= n) continue;
          ids[e].push_back(g);
          mult[static_cast<std::size_t>(g)] += 1.0;
          if (owner[static_cast<std::size_t>(g)] < 0) owner[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(e);
        }
      for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted, mg::SchwarzKind::RAS}) {
        const bool w = kind == mg::SchwarzKind::ASMWeighted;
        std::vector<double> ref(n, 0.0);
        for (std::size_t e = 0; e < ne; ++e) {
          const Eigen::MatrixXd Ae = dense_block(Aa, ids[e]);
          Eigen::VectorXd re(static_cast<Eigen::Index>(ids[e].size()));
          for (std::size_t i = 0; i < ids[e].size(); ++i) {
            const auto g = static_cast<std::size_t>(ids[e][i]);
            re(static_cast<Eigen::Index>(i)) = w ? r[g] / std::sqrt(mult[g]) : r[g];
          }
          const Eigen::VectorXd ze = Ae.llt().solve(re);
          for (std::size_t i = 0; i < ids[e].size(); ++i) {
            const auto g = static_cast<std::size_t>(ids[e][i]);
            const double v = ze(static_cast<Eigen::Index>(i));
            if (kind == mg::SchwarzKind::RAS) {
              if (owner[g] == static_cast<std::int64_t>(e)) ref[g] = v;
            } else {
              ref[g] += w ? v / std::sqrt(mult[g]) : v;
            }
          }
        }
        double nrm = 0;
        for (double x : ref) nrm = std::max(nrm, std::abs(x));
        for (auto prec : {mg::SchwarzPrecision::Double, mg::SchwarzPrecision::Single}) {
          mg::SemSchwarz S(A, kind, 1, prec, mg::SchwarzLocalSolver::Element);
          EXPECT_EQ(S.local_solver(), mg::SchwarzLocalSolver::Element);
          EXPECT_EQ(S.num_colours(), V.colours().size());
          for (std::size_t e = 0; e < ne; ++e) ASSERT_EQ(S.element_nodes(e), ids[e]) << "element " << e;
          std::vector<double> z(n);
          S.apply(r.data(), z.data());
          double err = 0;
          for (std::size_t g = 0; g < n; ++g) err = std::max(err, std::abs(z[g] - ref[g]));
          const double tol = prec == mg::SchwarzPrecision::Double ? 1e-12 : 1e-5;
          EXPECT_LT(err, tol * nrm) << "eps " << eps << " p " << p << " kind " << int(kind) << " "
                                    << mg::to_string(prec);
        }
      }
    }
}

TEST(SemSchwarz, ElementLocalSolvesAreSymmetric) {
  // On a Kershaw mesh the (weighted) ASM with element solves is symmetric positive definite:
  // x^T S y = y^T S x to rounding, x^T S x > 0. (One element: OneElementIsAnExactSolve.)
  auto A = laplacian(mg::kershaw_mesh(3, 0.05), 3);
  for (auto kind : {mg::SchwarzKind::ASM, mg::SchwarzKind::ASMWeighted}) {
    mg::SemSchwarz S(A, kind, 1, mg::SchwarzPrecision::Double, mg::SchwarzLocalSolver::Element);
    EXPECT_TRUE(S.is_symmetric());
    const auto x = random_vector(A->size(), 3), y = random_vector(A->size(), 4);
    std::vector<double> Sx(A->size()), Sy(A->size());
    S.apply(x.data(), Sx.data());
    S.apply(y.data(), Sy.data());
    EXPECT_NEAR(dot(y, Sx), dot(x, Sy), 1e-12 * std::sqrt(dot(Sx, Sx) * dot(y, y)));
    EXPECT_GT(dot(x, Sx), 0.0);
  }
}

TEST(SemSchwarz, ElementLocalSolvesThreadsGiveTheSameResult) {
  // 10^3 elements at p = 3: 24389 free nodes, above kParallelMinRows, so apply() forks (kept in
  // the sanitizer builds for the ThreadSanitizer run; ~0.1 s).
  auto A = laplacian(mg::box_mesh(10, 10, 10), 3);
  ASSERT_GT(A->size(), 20000u);
  for (auto kind : {mg::SchwarzKind::ASMWeighted, mg::SchwarzKind::RAS})
    for (auto prec : {mg::SchwarzPrecision::Double, mg::SchwarzPrecision::Single}) {
      mg::SemSchwarz S1(A, kind, 1, prec, mg::SchwarzLocalSolver::Element), S2(A, kind, 2, prec, mg::SchwarzLocalSolver::Element);
      const auto r = random_vector(A->size(), 9);
      std::vector<double> z1(A->size()), z2(A->size());
      S1.apply(r.data(), z1.data());
      S2.apply(r.data(), z2.data());
      EXPECT_EQ(z1, z2);
    }
}

TEST(SemSchwarz, ElementLocalSolverBadInputAndMemory) {
  auto A = laplacian(mg::box_mesh(2, 2, 2), 3);
  mg::SemSchwarz S(A, mg::SchwarzKind::ASM, 1, mg::SchwarzPrecision::Double, mg::SchwarzLocalSolver::Element);
  EXPECT_THROW(S.extended_nodes(0), elliptica::InvalidArgument);
  EXPECT_THROW(S.fdm(0, 0), elliptica::InvalidArgument);
  EXPECT_THROW(S.element_nodes(8), elliptica::InvalidArgument);
  mg::SemSchwarz F(A, mg::SchwarzKind::ASM, 1);
  EXPECT_THROW(F.element_nodes(0), elliptica::InvalidArgument);
  EXPECT_EQ(mg::schwarz_local_solver_from_string("element"), mg::SchwarzLocalSolver::Element);
  EXPECT_EQ(mg::schwarz_local_solver_from_string("fdm"), mg::SchwarzLocalSolver::FDM);
  EXPECT_EQ(mg::to_string(mg::SchwarzLocalSolver::Element), "element");
  EXPECT_THROW(mg::schwarz_local_solver_from_string("dense"), elliptica::InvalidArgument);
  EXPECT_THROW(mg::SemSchwarz(A, mg::SchwarzKind::ASM, 1, mg::SchwarzPrecision::Double, static_cast<mg::SchwarzLocalSolver>(7)),
               elliptica::InvalidArgument);
  // 4^3 elements at p = 5: 64 dense 216^2 inverses, ~3 MB in fp64; a 1 MB limit refuses it.
  auto B = laplacian(mg::box_mesh(4, 4, 4), 5);
  ::setenv("ELLIPTICA_MEMORY_LIMIT", "1000000", 1);
  EXPECT_THROW(mg::SemSchwarz(B, mg::SchwarzKind::ASM, 1, mg::SchwarzPrecision::Double, mg::SchwarzLocalSolver::Element),
               elliptica::ResourceError);
  ::unsetenv("ELLIPTICA_MEMORY_LIMIT");
}
