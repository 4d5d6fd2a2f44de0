// Low-rank compression of the IFMM (src/ifmm/internal.hpp): truncated SVDs of the initial
// operators and the randomised SVD (Halko, Martinsson & Tropp, SIAM Review 53 (2011) 217,
// Algorithms 4.2 (adaptive range finder) and 5.1 (direct SVD of Q^* A)) that absorbs fill-in.
#include <Eigen/SVD>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <random>
#include <string>

#include "elliptica/core/error.hpp"
#include "internal.hpp"

namespace elliptica::ifmm::detail {

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  for (std::uint64_t v : {a, b, c}) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  return h;
}

void profile(const char* step, int level, double seconds) {
  static const bool on = std::getenv("ELLIPTICA_IFMM_PROFILE") != nullptr;
  if (on) std::fprintf(stderr, "ifmm profile: level %d %-28s %9.3f s\n", level, step, seconds);
}

double profile_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::size_t matrix_bytes(const Mat& m) { return static_cast<std::size_t>(m.size()) * sizeof(cplx); }

void pad(Mat& M, Eigen::Index rows, Eigen::Index cols) {
  if (M.rows() == rows && M.cols() == cols) return;
  Mat N = Mat::Zero(rows, cols);
  const Eigen::Index r = std::min(rows, M.rows()), c = std::min(cols, M.cols());
  N.topLeftCorner(r, c) = M.topLeftCorner(r, c);
  M.swap(N);
}

namespace {

Mat gaussian(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  Mat G(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) G(i, j) = cplx(nd(gen), nd(gen));
  return G;
}

// Orthonormal basis of the columns of Y (thin QR, Householder).
Mat orth(const Mat& Y) {
  Eigen::HouseholderQR<Mat> qr(Y);
  return qr.householderQ() * Mat::Identity(Y.rows(), std::min(Y.rows(), Y.cols()));
}

// Left singular vectors of A with singular values > tol (at most kmax), direct SVD.
Mat svd_columns(const Mat& A, double tol, int kmax) {
  const ThinSvd svd = thin_svd(A, false, "range-finder block");
  int k = 0;
  while (k < svd.s.size() && k < kmax && svd.s(k) > tol) ++k;
  return svd.U.leftCols(k);
}

}  // namespace

Mat dominant_columns(const Mat& A, double tol, int kmax, std::uint64_t seed) {
  const Eigen::Index m = A.rows(), n = A.cols();
  kmax = static_cast<int>(std::min<Eigen::Index>({static_cast<Eigen::Index>(kmax), m, n}));
  if (kmax <= 0 || A.size() == 0) return Mat(m, 0);
  if (std::min(m, n) <= 64) return svd_columns(A, tol, kmax);
  // adaptive randomised range finder: sketch with k + 8 columns, doubling k until the
  // (k+1)-th singular value of the sketch falls below tol
  int k = std::min(kmax, 16);
  for (int attempt = 0;; ++attempt) {
    const int l = static_cast<int>(std::min<Eigen::Index>(k + 8, std::min(m, n)));
    const Mat Q = orth(A * gaussian(n, l, mix_seed(seed, attempt, 1)));
    const Mat Bq = Q.adjoint() * A;  // l x n
    const ThinSvd svd = thin_svd(Bq, false, "randomised sketch Q^* A");
    const auto& s = svd.s;
    int keep = 0;
    while (keep < s.size() && keep < kmax && s(keep) > tol) ++keep;
    if (keep < l - 4 || l >= std::min(m, n) || keep >= kmax) return Q * svd.U.leftCols(keep);
    k = std::min(kmax, 2 * k);
  }
}

int extend_basis(Mat& Q, const Mat& F, double tol, std::uint64_t seed) {
  const Eigen::Index n = Q.rows(), r = Q.cols();
  if (r >= n || F.cols() == 0) return 0;
  Mat G = F;
  if (r > 0) {
    G -= Q * (Q.adjoint() * G);
    G -= Q * (Q.adjoint() * G);  // twice: orthogonality to round-off
  }
  if (G.norm() <= tol) return 0;
  Mat N = dominant_columns(G, tol, static_cast<int>(n - r), seed);
  if (N.cols() == 0) return 0;
  if (r > 0) {
    N -= Q * (Q.adjoint() * N);
    N = orth(N);
  }
  Mat E(n, r + N.cols());
  E.leftCols(r) = Q;
  E.rightCols(N.cols()) = N;
  Q.swap(E);
  return static_cast<int>(N.cols());
}

void pad_basis(Mat& Q, int cols, std::uint64_t seed) {
  const Eigen::Index n = Q.rows(), r = Q.cols();
  if (cols <= r) return;
  Mat G = gaussian(n, cols - r, seed);
  if (r > 0) {
    G -= Q * (Q.adjoint() * G);
    G -= Q * (Q.adjoint() * G);
  }
  Mat N = orth(G);
  if (r > 0) {
    N -= Q * (Q.adjoint() * N);
    N = orth(N);
  }
  Mat E(n, cols);
  E.leftCols(r) = Q;
  E.rightCols(cols - r) = N.leftCols(cols - r);
  Q.swap(E);
}

void truncated_svd(const Mat& A, double rel, int rmax, Mat& Q, Mat& R) {
  if (A.size() == 0) {
    Q = Mat(A.rows(), 0);
    R = Mat(0, A.cols());
    return;
  }
  const ThinSvd svd = thin_svd(A, true, "operator (truncated SVD)");
  const auto& s = svd.s;
  int k = 0;
  const double tol = rel * (s.size() > 0 ? s(0) : 0.0);
  while (k < s.size() && k < rmax && s(k) > tol) ++k;
  if (k == 0 && s.size() > 0 && s(0) > 0) k = 1;
  Q = svd.U.leftCols(k);
  R = s.head(k).asDiagonal() * svd.V.leftCols(k).adjoint();
}

}  // namespace elliptica::ifmm::detail
