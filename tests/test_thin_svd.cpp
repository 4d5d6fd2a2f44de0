// The thin SVD of the FMM and the IFMM (src/fmm/thin_svd.hpp, fmm::detail::thin_svd; the IFMM
// calls it through ifmm::detail::thin_svd) on matrices whose singular values cluster or vanish:
// the kind on which Eigen 3.4's divide-and-conquer BDCSVD read out of bounds (a NaN basis at
// level 3 of Ifmm.SmallEpsilonStaysAccurateAtEightThousandUnknowns in one CI run, and a crash of
// one study run). Checked against the definition: A = U diag(s) V^*,
// U^* U = I, V^* V = I, s descending and >= 0, to rounding (1e-13 relative; the Jacobi SVD's
// backward error is a small multiple of machine epsilon).
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <complex>
#include <random>
#include <string>

#include "elliptica/core/error.hpp"
#include "ifmm/internal.hpp"

namespace {

using namespace elliptica;
using ifmm::detail::Mat;
using cplx = std::complex<double>;

Mat random_matrix(Eigen::Index m, Eigen::Index n, std::mt19937_64& g) {
  std::normal_distribution<double> nd;
  Mat G(m, n);
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = 0; i < m; ++i) G(i, j) = cplx(nd(g), nd(g));
  return G;
}

Mat orthonormal(Eigen::Index m, Eigen::Index k, std::mt19937_64& g) {
  Eigen::HouseholderQR<Mat> qr(random_matrix(m, k, g));
  return qr.householderQ() * Mat::Identity(m, k);
}

void expect_svd(const Mat& A, const std::string& what) {
  const auto r = ifmm::detail::thin_svd(A, true, "test matrix");
  const Eigen::Index k = std::min(A.rows(), A.cols());
  ASSERT_EQ(r.s.size(), k) << what;
  ASSERT_EQ(r.U.cols(), k) << what;
  ASSERT_EQ(r.V.cols(), k) << what;
  const double scale = std::max(A.norm(), 1e-300);
  EXPECT_LT((r.U * r.s.cast<cplx>().asDiagonal() * r.V.adjoint() - A).norm(), 1e-13 * scale) << what;
  EXPECT_LT((r.U.adjoint() * r.U - Mat::Identity(k, k)).norm(), 1e-13 * double(k)) << what;
  EXPECT_LT((r.V.adjoint() * r.V - Mat::Identity(k, k)).norm(), 1e-13 * double(k)) << what;
  for (Eigen::Index i = 0; i < k; ++i) {
    EXPECT_GE(r.s(i), 0.0) << what;
    if (i > 0) {
      EXPECT_LE(r.s(i), r.s(i - 1)) << what;
    }
  }
  const auto u = ifmm::detail::thin_svd(A, false, "test matrix");
  EXPECT_EQ(u.V.size(), 0) << what;
  EXPECT_LT((u.s - r.s).norm(), 1e-13 * scale) << what;
}

TEST(ThinSvd, ClusteredAndVanishingSingularValues) {
  std::mt19937_64 g(7);
  for (const auto& [m, n, r] : {std::array<int, 3>{70, 84, 56}, {84, 70, 56}, {120, 40, 40}, {40, 120, 12}, {64, 64, 64}}) {
    const Mat U = orthonormal(m, r, g), V = orthonormal(n, r, g);
    // equal, nearly equal (1e-15 apart) and mixed equal / tiny singular values, a zero column and a
    // repeated column (as the IFMM's padded bases and identity blocks of its fill-in give)
    for (int kind = 0; kind < 3; ++kind) {
      Eigen::VectorXd s(r);
      for (int q = 0; q < r; ++q) s(q) = kind == 0 ? 1.0 : kind == 1 ? 1.0 + 1e-15 * q : (q % 3 == 0 ? 1.0 : 1e-300);
      Mat A = U * s.cast<cplx>().asDiagonal() * V.adjoint();
      A.col(3).setZero();
      A.col(5) = A.col(1);
      expect_svd(A, std::to_string(m) + "x" + std::to_string(n) + " rank " + std::to_string(r) + " kind " + std::to_string(kind));
    }
  }
  expect_svd(Mat::Zero(30, 20), "zero matrix");
  expect_svd(Mat::Identity(40, 40), "identity");
}

TEST(ThinSvd, NonFiniteInputIsReported) {
  Mat A = Mat::Identity(20, 20);
  A(3, 4) = cplx(std::nan(""), 0);
  try {
    ifmm::detail::thin_svd(A, true, "sketch");
    FAIL() << "no exception";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("ifmm: non-finite entry in the sketch"), std::string::npos) << e.what();
  }
  try {
    fmm::detail::thin_svd(A, true, "fmm", "M2L sketch");
    FAIL() << "no exception";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("fmm: non-finite entry in the M2L sketch"), std::string::npos) << e.what();
  }
}

}  // namespace
