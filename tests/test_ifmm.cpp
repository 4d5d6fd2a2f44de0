// The inverse fast multipole method (include/elliptica/ifmm/ifmm.hpp) and its BEM preconditioner
// (include/elliptica/bem/ifmm_preconditioner.hpp): colouring, the IFMM solve against dense LU
// solves of the matrix it approximates, monotonic improvement with epsilon, parallel vs
// sequential, GMRES iterations and bad input.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdio>
#include <complex>
#include <random>
#include <vector>

#include "elliptica/bem/fmm_operator.hpp"
#include "elliptica/bem/ifmm_preconditioner.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/ifmm/colouring.hpp"
#include "elliptica/ifmm/ifmm.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace {

using namespace elliptica;
using cplx = std::complex<double>;
using CMat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic>;
using CVec = Eigen::Matrix<cplx, Eigen::Dynamic, 1>;

// ---- colouring -------------------------------------------------------------------------------

void expect_separated(const std::vector<std::array<int, 3>>& c, const std::vector<std::vector<int>>& colours, int sigma) {
  std::vector<int> seen(c.size(), 0);
  for (const auto& g : colours)
    for (std::size_t a = 0; a < g.size(); ++a) {
      ++seen[static_cast<std::size_t>(g[a])];
      for (std::size_t b = a + 1; b < g.size(); ++b)
        EXPECT_GE(ifmm::box_distance(c[static_cast<std::size_t>(g[a])], c[static_cast<std::size_t>(g[b])]), sigma);
    }
  for (int s : seen) EXPECT_EQ(s, 1);  // every box exactly once
}

TEST(IfmmColouring, CompleteGridUsesSigmaCubedColours) {
  std::vector<std::array<int, 3>> c;
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 8; ++i) c.push_back({i, j, k});
  for (int sigma : {2, 3, 6}) {
    const auto col = ifmm::colour_boxes(c, sigma);
    expect_separated(c, col, sigma);
    EXPECT_EQ(col.size(), static_cast<std::size_t>(sigma * sigma * sigma)) << sigma;
  }
}

TEST(IfmmColouring, SparseSurfaceBoxesAreSeparated) {
  // boxes of a sphere surface at level 5, as in the BEM
  std::vector<std::array<int, 3>> c;
  for (int k = 0; k < 32; ++k)
    for (int j = 0; j < 32; ++j)
      for (int i = 0; i < 32; ++i) {
        const double x = i - 15.5, y = j - 15.5, z = k - 15.5, r = std::sqrt(x * x + y * y + z * z);
        if (std::abs(r - 12.0) < 0.9) c.push_back({i, j, k});
      }
  for (int sigma : {3, 6}) {
    const auto col = ifmm::colour_boxes(c, sigma);
    expect_separated(c, col, sigma);
    EXPECT_LE(col.size(), static_cast<std::size_t>(sigma * sigma * sigma));
  }
  const auto seq = ifmm::colour_boxes(c, 0);
  EXPECT_EQ(seq.size(), c.size());
  EXPECT_THROW(ifmm::colour_boxes(c, -1), InvalidArgument);
  c.push_back(c.front());
  EXPECT_THROW(ifmm::colour_boxes(c, 3), InvalidArgument);
}

// ---- BEM problems ----------------------------------------------------------------------------

bem::FmmOperatorOptions fmm_options(bem::BoundaryCondition bc, int order, int depth) {
  bem::FmmOperatorOptions o;
  o.bc = bc;
  o.fmm.tolerance = 1e-6;
  o.fmm.order = order;
  o.fmm.tree.depth = depth;
  o.fmm.compress_m2l = false;  // the M2L the IFMM uses (uncompressed kernel values)
  o.threads = 2;
  return o;
}

CMat densify(const LinearOperator<cplx>& A) {
  const auto n = static_cast<Eigen::Index>(A.size());
  CMat M(n, n);
  std::vector<cplx> e(static_cast<std::size_t>(n), 0.0), y(static_cast<std::size_t>(n));
  for (Eigen::Index j = 0; j < n; ++j) {
    e[static_cast<std::size_t>(j)] = 1.0;
    A.apply(e.data(), y.data());
    e[static_cast<std::size_t>(j)] = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) M(i, j) = y[static_cast<std::size_t>(i)];
  }
  return M;
}

CVec random_vector(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  CVec v(static_cast<Eigen::Index>(n));
  for (auto& x : v) x = cplx(d(g), d(g));
  return v;
}

CVec apply_ifmm(const LinearOperator<cplx>& M, const CVec& b) {
  CVec x(b.size());
  M.apply(b.data(), x.data());
  return x;
}

struct Problem {
  bem::Mesh mesh;
  std::unique_ptr<bem::HelmholtzBemFmmOperator> op;
};

Problem make_problem(bem::BoundaryCondition bc, double k, int order, int depth, int refinements = 3) {
  Problem p;
  p.mesh = bem::icosphere(refinements);
  p.op = std::make_unique<bem::HelmholtzBemFmmOperator>(p.mesh, cplx(k, 0), fmm_options(bc, order, depth));
  return p;
}

double ifmm_vs_exact(bem::BoundaryCondition bc, double eps, double* cond = nullptr) {
  auto P = make_problem(bc, 2.0, 5, 3);
  const CMat A = densify(*P.op);  // the matrix the IFMM represents (same FMM operators)
  bem::IfmmPreconditionerOptions o;
  o.ifmm.epsilon = eps;
  o.order = 5;
  o.depth = 3;
  o.ifmm.threads = 2;
  bem::IfmmPreconditioner M(*P.op, o);
  EXPECT_TRUE(M.reuses_matvec_fmm());
  const CVec b = random_vector(A.rows(), 7);
  const CVec x = apply_ifmm(M, b);
  const CVec xe = A.partialPivLu().solve(b);
  if (cond) {
    Eigen::BDCSVD<CMat> svd(A);
    *cond = svd.singularValues()(0) / svd.singularValues()(A.rows() - 1);
  }
  return (x - xe).norm() / xe.norm();
}

TEST(Ifmm, TinyEpsilonIsTheExactInverseSoundHard) {
  double cond = 0;
  const double err = ifmm_vs_exact(bem::BoundaryCondition::Neumann, 1e-12, &cond);
  // epsilon 1e-12: every fill-in direction above 1e-12 x the block scale is kept; the solve then
  // differs from the dense LU solve by rounding amplified by the condition number
  EXPECT_LT(err, 1e-9) << "cond " << cond;
  std::printf("sound-hard epsilon 1e-12: relative error %.3g, cond %.3g\n", err, cond);
  RecordProperty("relative_error", std::to_string(err));
  RecordProperty("condition", std::to_string(cond));
}

TEST(Ifmm, TinyEpsilonIsTheExactInverseSoundSoft) {
  double cond = 0;
  const double err = ifmm_vs_exact(bem::BoundaryCondition::Dirichlet, 1e-12, &cond);
  EXPECT_LT(err, 1e-9) << "cond " << cond;
}

}  // namespace
