/// @file sem_operator.cpp
/// SemLaplacian (sem_operator.hpp): matrix-free SEM stiffness by sum factorisation, its exact
/// diagonal and its assembled matrix.
#include "elliptica/multigrid/sem_operator.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"

namespace elliptica::multigrid {
namespace {

/// Local stiffness y = A_e u of one element, N = p + 1 points per axis (sum factorisation).
/// D: N x N (D_ij = l_j'(x_i)), Dt its transpose, G: 6 x N^3 geometric factors of the element.
/// u, y: N^3 local values (x fastest). Deville, Fischer & Mund (2002), chapter 4.
template <int N>
inline void local_stiffness(const double* __restrict D, const double* __restrict Dt, const double* __restrict G,
                            const double* __restrict C, const double* __restrict w3, const double* __restrict u,
                            double* __restrict y) {
  constexpr int N2 = N * N, N3 = N2 * N;
  // One buffer with the three arrays 8 doubles (64 bytes) apart beyond N^3: at N = 8 (4 KiB each)
  // back-to-back arrays would be exactly 4 KiB apart, and a load after a store 4 KiB away stalls
  // (4K aliasing).
  constexpr int P = N3 + 8;
  alignas(64) double buf[3 * P];
  double* __restrict ur = buf;
  double* __restrict us = buf + P;
  double* __restrict ut = buf + 2 * P;
  // Reference gradient: ur = (I x I x D) u, us = (I x D x I) u, ut = (D x I x I) u.
  for (int kj = 0; kj < N2; ++kj) {
    double s[N] = {};
    for (int m = 0; m < N; ++m) {
      const double v = u[kj * N + m];
#pragma omp simd
      for (int i = 0; i < N; ++i) s[i] += Dt[m * N + i] * v;  // Dt[m][i] = D[i][m]
    }
    for (int i = 0; i < N; ++i) ur[kj * N + i] = s[i];
  }
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < N; ++j) {
      double s[N] = {};
      for (int m = 0; m < N; ++m) {
        const double d = D[j * N + m];
#pragma omp simd
        for (int i = 0; i < N; ++i) s[i] += d * u[k * N2 + m * N + i];
      }
      for (int i = 0; i < N; ++i) us[k * N2 + j * N + i] = s[i];
    }
  for (int k = 0; k < N; ++k) {
    double* __restrict o = ut + k * N2;
    {
      const double d = D[k * N];
#pragma omp simd
      for (int ji = 0; ji < N2; ++ji) o[ji] = d * u[ji];
    }
    for (int m = 1; m < N; ++m) {
      const double d = D[k * N + m];
      const double* __restrict in = u + m * N2;
#pragma omp simd
      for (int ji = 0; ji < N2; ++ji) o[ji] += d * in[ji];
    }
  }
  // Geometric factors: (wr, ws, wt) = G (ur, us, ut).
  const double* __restrict g0 = G;
  const double* __restrict g1 = G + N3;
  const double* __restrict g2 = G + 2 * N3;
  const double* __restrict g3 = G + 3 * N3;
  const double* __restrict g4 = G + 4 * N3;
  const double* __restrict g5 = G + 5 * N3;
  if (C) {  // affine element: G(q) = w_i w_j w_k C, C = |J| J^-1 J^-T constant (6 numbers)
    const double c0 = C[0], c1 = C[1], c2 = C[2], c3 = C[3], c4 = C[4], c5 = C[5];
#pragma omp simd
    for (int q = 0; q < N3; ++q) {
      const double a = w3[q] * ur[q], b = w3[q] * us[q], c = w3[q] * ut[q];
      ur[q] = c0 * a + c1 * b + c2 * c;
      us[q] = c1 * a + c3 * b + c4 * c;
      ut[q] = c2 * a + c4 * b + c5 * c;
    }
  } else {
#pragma omp simd
    for (int q = 0; q < N3; ++q) {
      const double a = ur[q], b = us[q], c = ut[q];
      ur[q] = g0[q] * a + g1[q] * b + g2[q] * c;
      us[q] = g1[q] * a + g3[q] * b + g4[q] * c;
      ut[q] = g2[q] * a + g4[q] * b + g5[q] * c;
    }
  }
  // Transposed gradient: y = (I x I x D^T) wr + (I x D^T x I) ws + (D^T x I x I) wt.
  for (int kj = 0; kj < N2; ++kj) {
    double s[N] = {};
    for (int m = 0; m < N; ++m) {
      const double v = ur[kj * N + m];
#pragma omp simd
      for (int i = 0; i < N; ++i) s[i] += D[m * N + i] * v;  // D[m][i] = Dt[i][m]
    }
    for (int i = 0; i < N; ++i) y[kj * N + i] = s[i];
  }
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < N; ++j) {
      double s[N] = {};
      for (int m = 0; m < N; ++m) {
        const double d = Dt[j * N + m];
#pragma omp simd
        for (int i = 0; i < N; ++i) s[i] += d * us[k * N2 + m * N + i];
      }
      for (int i = 0; i < N; ++i) y[k * N2 + j * N + i] += s[i];
    }
  for (int k = 0; k < N; ++k) {
    double* __restrict o = y + k * N2;
    for (int m = 0; m < N; ++m) {
      const double d = Dt[k * N + m];
      const double* __restrict in = ut + m * N2;
#pragma omp simd
      for (int ji = 0; ji < N2; ++ji) o[ji] += d * in[ji];
    }
  }
}

/// The whole apply for one N: y = 0, then colour by colour, elements of a colour in parallel:
/// gather, local stiffness, scatter-add (free nodes only).
template <int N>
void apply_all(const SemSpace& S, const double* D, const double* Dt, const double* C, const std::uint8_t* affine,
               const double* w3, const double* x, double* y, int threads) {
  constexpr int N3 = N * N * N;
  const std::int64_t nf = std::int64_t(S.num_free());
  const std::int32_t* l2g = S.local_to_global().data();
  const double* G = S.geometric_factors().data();
  const auto& colours = S.colours();
  const int nt = resolve_threads(threads);
  const bool par = nt > 1 && nf > kParallelMinRows;
#pragma omp parallel num_threads(nt) if (par)
  {
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < nf; ++i) y[i] = 0.0;
    alignas(64) double lbuf[2 * N3 + 24];  // u and y not 4 KiB apart (as in local_stiffness)
    double* __restrict ul = lbuf;
    double* __restrict yl = lbuf + N3 + 16;
    for (const auto& col : colours) {
      const std::int64_t nc = std::int64_t(col.size());
#pragma omp for schedule(static)
      for (std::int64_t c = 0; c < nc; ++c) {
        const std::size_t e = std::size_t(col[c]);
        const std::int32_t* ids = l2g + e * N3;
        for (int q = 0; q < N3; ++q) {
          const std::int32_t g = ids[q];
          ul[q] = g < nf ? x[g] : 0.0;
        }
        local_stiffness<N>(D, Dt, G + e * 6 * N3, affine[e] ? C + 6 * e : nullptr, w3, ul, yl);
        for (int q = 0; q < N3; ++q) {
          const std::int32_t g = ids[q];
          if (g < nf) y[g] += yl[q];
        }
      }
    }
  }
}

template <int N>
void element_only(const double* D, const double* Dt, const double* G, const double* C, const double* w3, const double* u,
                  double* y) {
  local_stiffness<N>(D, Dt, G, C, w3, u, y);
}

using ApplyFn = void (*)(const SemSpace&, const double*, const double*, const double*, const std::uint8_t*,
                         const double*, const double*, double*, int);
using ElementFn = void (*)(const double*, const double*, const double*, const double*, const double*, const double*,
                           double*);

ApplyFn apply_fn(int p) {
  switch (p) {
    case 1: return &apply_all<2>;
    case 2: return &apply_all<3>;
    case 3: return &apply_all<4>;
    case 4: return &apply_all<5>;
    case 5: return &apply_all<6>;
    case 6: return &apply_all<7>;
    case 7: return &apply_all<8>;
    case 8: return &apply_all<9>;
    case 9: return &apply_all<10>;
    case 10: return &apply_all<11>;
  }
  throw InvalidArgument("SemLaplacian: no kernel for order " + std::to_string(p));
}

ElementFn element_fn(int p) {
  switch (p) {
    case 1: return &element_only<2>;
    case 2: return &element_only<3>;
    case 3: return &element_only<4>;
    case 4: return &element_only<5>;
    case 5: return &element_only<6>;
    case 6: return &element_only<7>;
    case 7: return &element_only<8>;
    case 8: return &element_only<9>;
    case 9: return &element_only<10>;
    case 10: return &element_only<11>;
  }
  throw InvalidArgument("SemLaplacian: no kernel for order " + std::to_string(p));
}

}  // namespace

SemLaplacian::SemLaplacian(std::shared_ptr<const SemSpace> space, int threads)
    : space_(std::move(space)), threads_(threads) {
  if (!space_) throw InvalidArgument("SemLaplacian: null SemSpace");
  if (threads < 0) throw InvalidArgument("SemLaplacian: threads must be >= 0, got " + std::to_string(threads));
  const int N = space_->points_1d();
  const auto& D = space_->derivative();
  Dt_.resize(D.size());
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) Dt_[i * N + j] = D[j * N + i];
  // Tensor weights w_i w_j w_k, and the affine elements: G(q) / (w_i w_j w_k) the same 6 numbers at
  // every node (to 1e-13 relative to the element's largest factor).
  const std::size_t n3 = space_->nodes_per_element(), ne = space_->num_elements();
  const auto& w = space_->gll().weights;
  w3_.resize(n3);
  for (int k = 0; k < N; ++k)
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < N; ++i) w3_[i + N * (j + N * k)] = w[i] * w[j] * w[k];
  affine_.assign(ne, 0);
  C_.assign(6 * ne, 0.0);
  const auto& Gall = space_->geometric_factors();
  for (std::size_t e = 0; e < ne; ++e) {
    const double* G = &Gall[e * 6 * n3];
    double scale = 0;
    for (int c = 0; c < 6; ++c) {
      C_[6 * e + c] = G[c * n3] / w3_[0];
      scale = std::max(scale, std::abs(C_[6 * e + c]));
    }
    bool aff = true;
    for (int c = 0; c < 6 && aff; ++c)
      for (std::size_t q = 0; q < n3 && aff; ++q)
        aff = std::abs(G[c * n3 + q] - w3_[q] * C_[6 * e + c]) <= 1e-13 * scale * w3_[q];
    affine_[e] = aff;
    num_affine_ += aff;
  }
}

void SemLaplacian::apply(const double* x, double* y) const {
  apply_fn(space_->order())(*space_, space_->derivative().data(), Dt_.data(), C_.data(), affine_.data(), w3_.data(), x, y,
                            threads_);
}

void SemLaplacian::apply_element(std::size_t e, const double* u, double* y) const {
  if (e >= space_->num_elements())
    throw InvalidArgument("SemLaplacian::apply_element: element " + std::to_string(e) + " out of range [0, " +
                          std::to_string(space_->num_elements()) + ")");
  const std::size_t n3 = space_->nodes_per_element();
  element_fn(space_->order())(space_->derivative().data(), Dt_.data(), space_->geometric_factors().data() + e * 6 * n3,
                              affine_[e] ? &C_[6 * e] : nullptr, w3_.data(), u, y);
}

std::vector<double> SemLaplacian::diagonal() const {
  const SemSpace& S = *space_;
  const int N = S.points_1d();
  const std::size_t n3 = S.nodes_per_element(), nf = S.num_free();
  const auto& D = S.derivative();
  const auto& l2g = S.local_to_global();
  std::vector<double> d(nf, 0.0);
  for (std::size_t e = 0; e < S.num_elements(); ++e) {
    const double* G = S.geometric_factors().data() + e * 6 * n3;
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
          const std::size_t q = std::size_t(i + N * (j + N * k));
          const std::size_t g = std::size_t(l2g[e * n3 + q]);
          if (g >= nf) continue;
          double a = 0;
          for (int m = 0; m < N; ++m) {
            a += D[m * N + i] * D[m * N + i] * G[0 * n3 + (m + N * (j + N * k))];
            a += D[m * N + j] * D[m * N + j] * G[3 * n3 + (i + N * (m + N * k))];
            a += D[m * N + k] * D[m * N + k] * G[5 * n3 + (i + N * (j + N * m))];
          }
          const double di = D[i * N + i], dj = D[j * N + j], dk = D[k * N + k];
          a += 2.0 * (di * dj * G[1 * n3 + q] + di * dk * G[2 * n3 + q] + dj * dk * G[4 * n3 + q]);
          d[g] += a;
        }
  }
  return d;
}

CsrMatrix SemLaplacian::assemble() const {
  const SemSpace& S = *space_;
  const int N = S.points_1d(), p = S.order();
  const std::size_t n3 = S.nodes_per_element(), nf = S.num_free(), ne = S.num_elements();
  const auto& l2g = S.local_to_global();
  const auto& D = S.derivative();
  const double row_max = std::min<double>(double(2 * p + 1) * (2 * p + 1) * (2 * p + 1), double(nf));
  require_memory(double(nf) * row_max * 12.0 + double(n3) * double(n3) * 8.0,
                 "SemLaplacian::assemble (" + std::to_string(nf) + " rows)");
  // Pattern: node -> elements, then each row's columns = the free nodes of its elements.
  std::vector<std::int64_t> nstart(nf + 1, 0);
  for (std::size_t i = 0; i < ne * n3; ++i)
    if (std::size_t(l2g[i]) < nf) ++nstart[l2g[i] + 1];
  for (std::size_t g = 0; g < nf; ++g) nstart[g + 1] += nstart[g];
  std::vector<std::int32_t> nelem(static_cast<std::size_t>(nstart[nf]));
  {
    std::vector<std::int64_t> fill(nstart.begin(), nstart.end() - 1);
    for (std::size_t i = 0; i < ne * n3; ++i)
      if (std::size_t(l2g[i]) < nf) nelem[fill[l2g[i]]++] = std::int32_t(i / n3);
  }
  CsrMatrix A;
  A.rows = A.cols = nf;
  A.row_ptr.assign(nf + 1, 0);
  std::vector<std::int32_t> cols;
  for (std::size_t g = 0; g < nf; ++g) {
    cols.clear();
    for (std::int64_t k = nstart[g]; k < nstart[g + 1]; ++k) {
      const std::size_t e = std::size_t(nelem[k]);
      for (std::size_t q = 0; q < n3; ++q)
        if (std::size_t(l2g[e * n3 + q]) < nf) cols.push_back(l2g[e * n3 + q]);
    }
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    A.col.insert(A.col.end(), cols.begin(), cols.end());
    A.row_ptr[g + 1] = std::int64_t(A.col.size());
  }
  A.val.assign(A.col.size(), 0.0);
  // Element matrices by quadrature: at q = (a, b, c) the reference gradient of basis function n
  // is nonzero only for n on the three lines through q: d/dr of n = (m, b, c) is D[a][m], etc.
  std::vector<double> Ae(n3 * n3);
  for (std::size_t e = 0; e < ne; ++e) {
    std::fill(Ae.begin(), Ae.end(), 0.0);
    const double* G = S.geometric_factors().data() + e * 6 * n3;
    for (int c = 0; c < N; ++c)
      for (int b = 0; b < N; ++b)
        for (int a = 0; a < N; ++a) {
          const std::size_t q = std::size_t(a + N * (b + N * c));
          const double g[3][3] = {{G[0 * n3 + q], G[1 * n3 + q], G[2 * n3 + q]},
                                  {G[1 * n3 + q], G[3 * n3 + q], G[4 * n3 + q]},
                                  {G[2 * n3 + q], G[4 * n3 + q], G[5 * n3 + q]}};
          // lines[X][m]: (local node, derivative value) along axis X.
          std::size_t node[3][16];
          double der[3][16];
          for (int m = 0; m < N; ++m) {
            node[0][m] = std::size_t(m + N * (b + N * c));
            der[0][m] = D[a * N + m];
            node[1][m] = std::size_t(a + N * (m + N * c));
            der[1][m] = D[b * N + m];
            node[2][m] = std::size_t(a + N * (b + N * m));
            der[2][m] = D[c * N + m];
          }
          for (int X = 0; X < 3; ++X)
            for (int Y = 0; Y < 3; ++Y) {
              const double gxy = g[X][Y];
              for (int m1 = 0; m1 < N; ++m1) {
                const double f = gxy * der[X][m1];
                double* row = &Ae[node[X][m1] * n3];
                for (int m2 = 0; m2 < N; ++m2) row[node[Y][m2]] += f * der[Y][m2];
              }
            }
        }
    const std::int32_t* ids = &l2g[e * n3];
    for (std::size_t q1 = 0; q1 < n3; ++q1) {
      const std::size_t r = std::size_t(ids[q1]);
      if (r >= nf) continue;
      const std::int32_t* cb = A.col.data() + A.row_ptr[r];
      const std::int32_t* ce = A.col.data() + A.row_ptr[r + 1];
      for (std::size_t q2 = 0; q2 < n3; ++q2) {
        const std::int32_t cidx = ids[q2];
        if (std::size_t(cidx) >= nf) continue;
        const std::int32_t* it = std::lower_bound(cb, ce, cidx);
        A.val[std::size_t(it - A.col.data())] += Ae[q1 * n3 + q2];
      }
    }
  }
  return A;
}

SemApplyCost sem_apply_cost(int order, bool affine) {
  if (order < kMinSemOrder || order > kMaxSemOrder)
    throw InvalidArgument("sem_apply_cost: order p must be in [" + std::to_string(kMinSemOrder) + ", " +
                          std::to_string(kMaxSemOrder) + "], got " + std::to_string(order));
  const double N = order + 1.0, N3 = N * N * N, N4 = N3 * N;
  SemApplyCost c;
  c.flops_per_element = 12.0 * N4 + (affine ? 20.0 : 17.0) * N3;
  c.element_bytes = (affine ? 48.0 : 48.0 * N3) + 4.0 * N3;
  c.vector_bytes_per_node = 32.0;
  return c;
}

}  // namespace elliptica::multigrid
