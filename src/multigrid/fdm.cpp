/// @file fdm.cpp
/// Fast diagonalisation (sem_schwarz.hpp): the 1-D SEM operators of an element's extended grid,
/// their generalized eigen-decomposition, and the tensor-product inverse of the box operator
/// (Lynch, Rice & Thomas 1964; Deville, Fischer & Mund 2002, section 4.4).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/gll.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"
#include "fdm_batch.hpp"

namespace elliptica::multigrid {

FdmAxis fdm_axis(int order, double h_left, double h_mid, double h_right, bool left_dirichlet,
                 bool right_dirichlet) {
  if (order < 2 || order > kMaxSemOrder)
    throw InvalidArgument("fdm_axis: order must be in [2, " + std::to_string(kMaxSemOrder) + "], got " +
                          std::to_string(order));
  auto check_h = [](const char* what, double h) {
    if (!(h > 0.0) || !std::isfinite(h))
      throw InvalidArgument(std::string("fdm_axis: ") + what + " element length must be finite and > 0, got " +
                            std::to_string(h));
  };
  check_h("middle", h_mid);
  if (!left_dirichlet) check_h("left", h_left);
  if (!right_dirichlet) check_h("right", h_right);
  const int N = order + 1, p = order, M = N + 2;
  const GllRule rule = gll_rule(order);
  const std::vector<double> D = differentiation_matrix(rule.nodes);
  // Reference stiffness Ahat_ij = sum_a D_ai w_a D_aj (GLL quadrature of l_i' l_j'), mass W = diag(w).
  Eigen::MatrixXd Ahat = Eigen::MatrixXd::Zero(N, N);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0.0;
      for (int a = 0; a < N; ++a) s += D[a * N + i] * rule.weights[a] * D[a * N + j];
      Ahat(i, j) = s;
    }
  // Assembled on the extended points 0 .. N+1: left neighbour's nodes p-1, p at 0, 1; e's nodes
  // 0 .. p at 1 .. N; right neighbour's nodes 0, 1 at N, N+1.
  Eigen::MatrixXd Af = Eigen::MatrixXd::Zero(M, M);
  Eigen::VectorXd Bf = Eigen::VectorXd::Zero(M);
  for (int i = 0; i < N; ++i) {
    Bf(1 + i) += 0.5 * h_mid * rule.weights[i];
    for (int j = 0; j < N; ++j) Af(1 + i, 1 + j) += 2.0 / h_mid * Ahat(i, j);
  }
  if (!left_dirichlet)
    for (int i = 0; i < 2; ++i) {
      Bf(i) += 0.5 * h_left * rule.weights[p - 1 + i];
      for (int j = 0; j < 2; ++j) Af(i, j) += 2.0 / h_left * Ahat(p - 1 + i, p - 1 + j);
    }
  if (!right_dirichlet)
    for (int i = 0; i < 2; ++i) {
      Bf(N + i) += 0.5 * h_right * rule.weights[i];
      for (int j = 0; j < 2; ++j) Af(N + i, N + j) += 2.0 / h_right * Ahat(i, j);
    }
  FdmAxis ax;
  ax.lo = left_dirichlet ? 2 : 0;
  ax.n = M - (left_dirichlet ? 2 : 0) - (right_dirichlet ? 2 : 0);
  const int n = ax.n;
  const Eigen::MatrixXd A = Af.block(ax.lo, ax.lo, n, n);
  const Eigen::VectorXd B = Bf.segment(ax.lo, n);
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(A, Eigen::MatrixXd(B.asDiagonal()),
                                                               Eigen::ComputeEigenvectors | Eigen::Ax_lBx);
  if (es.info() != Eigen::Success || !(es.eigenvalues().minCoeff() > 0.0))
    throw NumericalError("fdm_axis: the 1-D generalized eigenproblem A S = B S Lambda failed (order " +
                         std::to_string(order) + ")");
  ax.A.resize(static_cast<std::size_t>(n * n));
  ax.S.resize(static_cast<std::size_t>(n * n));
  ax.B.resize(static_cast<std::size_t>(n));
  ax.lambda.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    ax.B[static_cast<std::size_t>(i)] = B(i);
    ax.lambda[static_cast<std::size_t>(i)] = es.eigenvalues()(i);
    for (int j = 0; j < n; ++j) {
      ax.A[static_cast<std::size_t>(i * n + j)] = A(i, j);
      ax.S[static_cast<std::size_t>(i * n + j)] = es.eigenvectors()(i, j);
    }
  }
  return ax;
}

namespace {
constexpr int kMaxM = kMaxSemOrder + 3;

/// out = Mx applied along one axis of a 3-D array (dims r fastest, then s, then t): the axis has
/// length m, stride = product of the dims before it, outer = product of those after it:
/// out[o, i, l] = sum_a Mx(i, a) in[o, a, l], Mx row-major m x m. m a compile-time constant so
/// the a- and i-loops unroll (orders 2..10 give m = 1 .. 13).
template <int m>
void contract_m(const double* __restrict Mx, const double* __restrict MxT, int stride, int outer,
                const double* __restrict in, double* __restrict out) {
  if (stride == 1) {
    // dst[i] = sum_a Mx(i, a) src[a] = sum_a MxT(a, i) src[a]: vector over i (the a-loop
    // broadcasts src[a]), not a horizontal sum over a per i.
    for (int o = 0; o < outer; ++o) {
      const double* src = in + static_cast<std::ptrdiff_t>(o) * m;
      double* dst = out + static_cast<std::ptrdiff_t>(o) * m;
      double acc[m];
#pragma omp simd
      for (int i = 0; i < m; ++i) acc[i] = MxT[i] * src[0];
      for (int a = 1; a < m; ++a) {
        const double sa = src[a];
#pragma omp simd
        for (int i = 0; i < m; ++i) acc[i] += MxT[a * m + i] * sa;
      }
      for (int i = 0; i < m; ++i) dst[i] = acc[i];
    }
    return;
  }
  for (int o = 0; o < outer; ++o) {
    const double* src = in + static_cast<std::ptrdiff_t>(o) * m * stride;
    double* dst = out + static_cast<std::ptrdiff_t>(o) * m * stride;
    for (int i = 0; i < m; ++i) {
      double* di = dst + static_cast<std::ptrdiff_t>(i) * stride;
      for (int l = 0; l < stride; ++l) di[l] = 0.0;
      for (int a = 0; a < m; ++a) {
        const double c = Mx[i * m + a];
        const double* sa = src + static_cast<std::ptrdiff_t>(a) * stride;
#pragma omp simd
        for (int l = 0; l < stride; ++l) di[l] += c * sa[l];
      }
    }
  }
}

template <int... ms>
void contract_dispatch(std::integer_sequence<int, ms...>, int m, const double* Mx, const double* MxT, int stride,
                       int outer, const double* in, double* out) {
  ((m == ms + 1 ? (contract_m<ms + 1>(Mx, MxT, stride, outer, in, out), true) : false) || ...);
}

/// M (trans false) or M^T applied along one axis (see contract_m).
void contract(const double* M, bool trans, int m, int stride, int outer, const double* in, double* out) {
  double Mt[kMaxM * kMaxM];
  for (int i = 0; i < m; ++i)
    for (int a = 0; a < m; ++a) Mt[i * m + a] = M[a * m + i];
  const double* Mx = trans ? Mt : M;
  const double* MxT = trans ? M : Mt;
  contract_dispatch(std::make_integer_sequence<int, kMaxM>{}, m, Mx, MxT, stride, outer, in, out);
}
}  // namespace

void fdm_solve(const FdmAxis& r, const FdmAxis& s, const FdmAxis& t, double* u, double* work) {
  const int nr = r.n, ns = s.n, nt = t.n;
  // (S_t x S_s x S_r)^T u
  contract(r.S.data(), true, nr, 1, ns * nt, u, work);
  contract(s.S.data(), true, ns, nr, nt, work, u);
  contract(t.S.data(), true, nt, nr * ns, 1, u, work);
  // divided by lambda_r(i) + lambda_s(j) + lambda_t(k)
  for (int k = 0; k < nt; ++k)
    for (int j = 0; j < ns; ++j) {
      const double lst = s.lambda[static_cast<std::size_t>(j)] + t.lambda[static_cast<std::size_t>(k)];
      double* w = work + (static_cast<std::ptrdiff_t>(k) * ns + j) * nr;
      for (int i = 0; i < nr; ++i) w[i] /= r.lambda[static_cast<std::size_t>(i)] + lst;
    }
  // (S_t x S_s x S_r) w
  contract(r.S.data(), false, nr, 1, ns * nt, work, u);
  contract(s.S.data(), false, ns, nr, nt, u, work);
  contract(t.S.data(), false, nt, nr * ns, 1, work, u);
}

}  // namespace elliptica::multigrid

// ---------------------------------------------------------------------------------------------
// Batched local solves (fdm_batch.hpp): kFdmLanes elements per SIMD vector.

namespace elliptica::multigrid::detail {
namespace {

/// One SIMD vector of T: fdm_lanes<T> lanes (GCC/Clang vector extension).
template <typename T>
using VecT __attribute__((vector_size(kFdmLanes * sizeof(double)))) = T;

/// The lanes at p (only element-aligned: the factors live in std::vector) as one vector: an
/// unaligned load.
template <typename T>
[[gnu::always_inline]] inline VecT<T> ldu(const T* p) {
  VecT<T> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

/// out = M in along one axis of an interleaved 3-D array: the axis has length n (compile-time),
/// stride = product of the lengths before it, outer = product of those after it;
/// out[(o n + i) stride + l] = sum_m M(i, m) in[(o n + m) stride + l], M per lane (n x n vectors).
/// The n inputs of a line stay in registers.
template <typename T, int n>
void contract_lanes(const T* __restrict M, int stride, int outer, const VecT<T>* __restrict in,
                    VecT<T>* __restrict out) {
  constexpr int L = fdm_lanes<T>;
  for (int o = 0; o < outer; ++o)
    for (int l = 0; l < stride; ++l) {
      const std::ptrdiff_t base = static_cast<std::ptrdiff_t>(o) * n * stride + l;
      VecT<T> v[n];
#pragma GCC unroll 16
      for (int m = 0; m < n; ++m) v[m] = in[base + static_cast<std::ptrdiff_t>(m) * stride];
#pragma GCC unroll 16
      for (int i = 0; i < n; ++i) {
        VecT<T> a = ldu(M + i * n * L) * v[0];
#pragma GCC unroll 16
        for (int m = 1; m < n; ++m) a += ldu(M + (i * n + m) * L) * v[m];
        out[base + static_cast<std::ptrdiff_t>(i) * stride] = a;
      }
    }
}

template <typename T, int... ms>
void contract_lanes_dispatch(std::integer_sequence<int, ms...>, int n, const T* M, int stride, int outer,
                             const VecT<T>* in, VecT<T>* out) {
  ((n == ms + 1 ? (contract_lanes<T, ms + 1>(M, stride, outer, in, out), true) : false) || ...);
}

template <typename T>
void contract_axis(const T* M, int n, int stride, int outer, const VecT<T>* in, VecT<T>* out) {
  contract_lanes_dispatch<T>(std::make_integer_sequence<int, kMaxM>{}, n, M, stride, outer, in, out);
}

}  // namespace

template <typename T>
void fdm_solve_batch(const FdmBatchFactors<T>& f, T* u_, T* w_) {
  constexpr int L = fdm_lanes<T>;
  auto* u = reinterpret_cast<VecT<T>*>(u_);
  auto* w = reinterpret_cast<VecT<T>*>(w_);
  const int nr = f.n[0], ns = f.n[1], nt = f.n[2];
  // (S_t x S_s x S_r)^T u: row (a, i) of S^T
  contract_axis<T>(f.ST[0], nr, 1, ns * nt, u, w);
  contract_axis<T>(f.ST[1], ns, nr, nt, w, u);
  contract_axis<T>(f.ST[2], nt, nr * ns, 1, u, w);
  const T* lr = f.lambda[0];
  const T* ls = f.lambda[1];
  const T* lt = f.lambda[2];
  for (int k = 0; k < nt; ++k)
    for (int j = 0; j < ns; ++j) {
      const VecT<T> lst = ldu(ls + j * L) + ldu(lt + k * L);
      VecT<T>* wl = w + (static_cast<std::ptrdiff_t>(k) * ns + j) * nr;
      for (int i = 0; i < nr; ++i) wl[i] /= ldu(lr + i * L) + lst;
    }
  // (S_t x S_s x S_r) w
  contract_axis<T>(f.S[0], nr, 1, ns * nt, w, u);
  contract_axis<T>(f.S[1], ns, nr, nt, u, w);
  contract_axis<T>(f.S[2], nt, nr * ns, 1, w, u);
}

template void fdm_solve_batch<double>(const FdmBatchFactors<double>&, double*, double*);
template void fdm_solve_batch<float>(const FdmBatchFactors<float>&, float*, float*);

}  // namespace elliptica::multigrid::detail
