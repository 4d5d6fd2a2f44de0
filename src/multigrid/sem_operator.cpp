/// @file sem_operator.cpp
/// SemLaplacian (sem_operator.hpp): matrix-free SEM stiffness by sum factorisation, its exact
/// diagonal and its assembled matrix. apply(): the batched kernel (W elements per SIMD vector,
/// even-odd contractions, coloured blocks; apply_all below); apply_element(): the one-element
/// kernel (local_stiffness).
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

/// Local stiffness y = A_e u of one element, N = p + 1 points per axis (sum factorisation; the
/// one-element kernel of apply_element, vectorised along the element's own lines).
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

// ---------------------------------------------------------------------------------------------
// Batched kernel: kLanes elements at once, vectorised ACROSS elements (Kronbichler & Kormann
// 2012: one SIMD lane per cell). Every local array is interleaved [q][lane]: VecD u[q] holds node
// q of the batch's kLanes elements, so each 1-D contraction is N^2 scalar-times-vector FMAs per
// line with every N-loop of compile-time length, and short N (p = 3: N = 4) wastes no lane.

#if defined(__AVX512F__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
/// kLanes doubles (GCC/Clang vector extension; one AVX2 / AVX-512 register).
typedef double VecD __attribute__((vector_size(kLanes * sizeof(double))));
/// The same, 8-byte aligned (loads from a std::vector<double>).
typedef double VecDu __attribute__((vector_size(kLanes * sizeof(double)), aligned(sizeof(double))));

/// One 1-D contraction along a line of N interleaved points: out[i SO] (=, or += with Add)
/// sum_m M[i N + m] in[m SI], M pre-broadcast (N x N VecD). The N inputs stay in registers, each
/// FMA reads its M entry from memory (L1).
template <int N, int SI, int SO, bool Add>
[[gnu::always_inline]] inline void line(const VecD* __restrict M, const VecD* __restrict in, VecD* __restrict out) {
  VecD v[N];
#pragma GCC unroll 16
  for (int m = 0; m < N; ++m) v[m] = in[m * SI];
#pragma GCC unroll 16
  for (int i = 0; i < N; ++i) {
    VecD a = M[i * N] * v[0];
#pragma GCC unroll 16
    for (int m = 1; m < N; ++m) a += M[i * N + m] * v[m];
    if constexpr (Add)
      out[i * SO] += a;
    else
      out[i * SO] = a;
  }
}

/// Contractions in the even-odd form (measured 1.3-1.6x faster in cache at p = 3..8 than the
/// full N x N form; the full form is kept for comparison).
constexpr bool kEvenOdd = true;

/// Even-odd form of a centro-antisymmetric N x N matrix M (M[N-1-i][N-1-m] = -M[i][m], as the GLL
/// derivative matrix D and its transpose; Solomonoff 1992, Kronbichler & Kormann 2019), h = N / 2:
/// A[i][m] = (M[i][m] + M[i][N-1-m]) / 2, B[i][m] = (M[i][m] - M[i][N-1-m]) / 2 (i, m < h), and for
/// odd N the middle column M[i][h] (i < h) and the middle row M[h][m] (m < h), pre-broadcast:
/// [A (h^2) | B (h^2) | column (h) | row (h)]. With e_m = v_m + v_{N-1-m}, o_m = v_m - v_{N-1-m}:
/// out_i = (A e)_i + (B o)_i + M[i][h] v_h, out_{N-1-i} = (B o)_i - (A e)_i - M[i][h] v_h,
/// out_h = (row . o): N^2 / 2 + O(N) multiply-adds instead of N^2.
template <int N>
constexpr int eo_size() {
  return 2 * (N / 2) * (N / 2) + 2 * (N / 2);
}
template <int N>
void even_odd(const double* M, VecD* out) {
  constexpr int h = N / 2;
  for (int i = 0; i < h; ++i)
    for (int m = 0; m < h; ++m) {
      out[i * h + m] = VecD{} + 0.5 * (M[i * N + m] + M[i * N + N - 1 - m]);
      out[h * h + i * h + m] = VecD{} + 0.5 * (M[i * N + m] - M[i * N + N - 1 - m]);
    }
  for (int i = 0; i < h; ++i) {
    out[2 * h * h + i] = VecD{} + (N % 2 ? M[i * N + h] : 0.0);
    out[2 * h * h + h + i] = VecD{} + (N % 2 ? M[h * N + i] : 0.0);
  }
}

/// line() in the even-odd form (M: even_odd's layout).
template <int N, int SI, int SO, bool Add>
[[gnu::always_inline]] inline void line_eo(const VecD* __restrict M, const VecD* __restrict in, VecD* __restrict out) {
  constexpr int h = N / 2;
  VecD e[h], o[h];
#pragma GCC unroll 16
  for (int m = 0; m < h; ++m) {
    const VecD a = in[m * SI], b = in[(N - 1 - m) * SI];
    e[m] = a + b;
    o[m] = a - b;
  }
  const VecD* __restrict A = M;
  const VecD* __restrict B = M + h * h;
#pragma GCC unroll 16
  for (int i = 0; i < h; ++i) {
    VecD se = A[i * h] * e[0], so = B[i * h] * o[0];
#pragma GCC unroll 16
    for (int m = 1; m < h; ++m) {
      se += A[i * h + m] * e[m];
      so += B[i * h + m] * o[m];
    }
    if constexpr (N % 2 == 1) se += M[2 * h * h + i] * in[h * SI];
    if constexpr (Add) {
      out[i * SO] += se + so;
      out[(N - 1 - i) * SO] += so - se;
    } else {
      out[i * SO] = se + so;
      out[(N - 1 - i) * SO] = so - se;
    }
  }
  if constexpr (N % 2 == 1) {
    const VecD* __restrict R = M + 2 * h * h + h;
    VecD a = R[0] * o[0];
#pragma GCC unroll 16
    for (int m = 1; m < h; ++m) a += R[m] * o[m];
    if constexpr (Add)
      out[h * SO] += a;
    else
      out[h * SO] = a;
  }
}

/// line() or line_eo().
template <int N, int SI, int SO, bool Add, bool EO>
[[gnu::always_inline]] inline void line_any(const VecD* __restrict M, const VecD* __restrict in, VecD* __restrict out) {
  if constexpr (EO)
    line_eo<N, SI, SO, Add>(M, in, out);
  else
    line<N, SI, SO, Add>(M, in, out);
}

/// Geometric factors of the batch: affine (6 per-lane constants C times w3) or per point (the
/// batch's copy interleaved [q][c][lane]: one stream of aligned loads, no transposes; measured
/// 1.05-1.45x faster on Kershaw than transposing the lanes' own arrays in registers).
struct BatchGeometry {
  const VecDu* Gi;          ///< non-affine batch: 6 N^3 VecD, [q][c]
  VecD C[6];                ///< per-lane constants (affine batch)
  bool affine;
};

/// Local stiffness of a batch, y = A_e u in place (u: N^3 VecD in, y out), sum factorisation in
/// the slab-fused order (Deville, Fischer & Mund 2002, ch. 4; slab order as in deal.II's
/// FEEvaluation): ut = (D x I x I) u over the whole element; then per t-slab k: ur, us of the slab
/// (N^2 each, in L1), the geometric factors (wr, ws, wt at the slab's points; wt in place in ut),
/// y_k = (I x D^T) ws + (D^T x I) wr over u's slab (no longer needed); finally
/// y += (D^T x I x I) wt. Working set: 2 N^3 + 2 N^2 VecD.
template <int N, bool EO>
[[gnu::always_inline]] inline void batch_stiffness(const VecD* __restrict Dv, const VecD* __restrict Dtv,
                                                   const BatchGeometry& geo, const double* __restrict w3,
                                                   VecD* __restrict u, VecD* __restrict ut, VecD* __restrict ur,
                                                   VecD* __restrict us) {
  constexpr int N2 = N * N;
  for (int ji = 0; ji < N2; ++ji) line_any<N, N2, N2, false, EO>(Dv, u + ji, ut + ji);
  for (int k = 0; k < N; ++k) {
    VecD* __restrict uk = u + k * N2;
    for (int j = 0; j < N; ++j) line_any<N, 1, 1, false, EO>(Dv, uk + j * N, ur + j * N);
    for (int i = 0; i < N; ++i) line_any<N, N, N, false, EO>(Dv, uk + i, us + i);
    VecD* __restrict tk = ut + k * N2;
    if (geo.affine) {
      const VecD c0 = geo.C[0], c1 = geo.C[1], c2 = geo.C[2], c3 = geo.C[3], c4 = geo.C[4], c5 = geo.C[5];
      const double* __restrict wk = w3 + k * N2;
      for (int q = 0; q < N2; ++q) {
        const double w = wk[q];
        const VecD a = w * ur[q], b = w * us[q], c = w * tk[q];
        ur[q] = c0 * a + c1 * b + c2 * c;
        us[q] = c1 * a + c3 * b + c4 * c;
        tk[q] = c2 * a + c4 * b + c5 * c;
      }
    } else {
      const VecDu* __restrict gk = geo.Gi + 6 * k * N2;
      for (int q = 0; q < N2; ++q) {
        const VecDu* __restrict g = gk + 6 * q;
        const VecD a = ur[q], b = us[q], c = tk[q];
        ur[q] = g[0] * a + g[1] * b + g[2] * c;
        us[q] = g[1] * a + g[3] * b + g[4] * c;
        tk[q] = g[2] * a + g[4] * b + g[5] * c;
      }
    }
    for (int j = 0; j < N; ++j) line_any<N, 1, 1, false, EO>(Dtv, ur + j * N, uk + j * N);
    for (int i = 0; i < N; ++i) line_any<N, N, N, true, EO>(Dtv, us + i, uk + i);
  }
  for (int ji = 0; ji < N2; ++ji) line_any<N, N2, N2, true, EO>(Dtv, ut + ji, u + ji);
}

/// What apply_all needs besides the space: the derivative matrices, the affine constants, the
/// tensor weights and the batches (SemLaplacian's constructor).
struct ApplyData {
  const double* D;
  const double* Dt;
  const double* C;
  const double* w3;
  const std::int32_t* batch_elements;  ///< kLanes per batch, -1 = padded lane
  const std::size_t* block_batches;    ///< block b: batches [block_batches[b], block_batches[b + 1])
  const std::size_t* colour_blocks;    ///< colour c: blocks [colour_blocks[c], colour_blocks[c + 1])
  const std::uint8_t* batch_affine;    ///< 1: every lane affine (or padded)
  const double* Gi;                    ///< interleaved factors of the non-affine batches
  const std::size_t* batch_goff;       ///< batch i's offset in Gi (doubles)
  std::size_t num_colours;
};

/// The whole apply for one N: y = 0, then colour by colour the blocks of that colour in parallel
/// (`omp for`; blocks of a colour share no node, so no two threads add into the same y entry), the
/// batches of a block in order: gather into the interleaved local vector (Dirichlet nodes and
/// padded lanes read 0), batch_stiffness, scatter-add lane by lane (free nodes of active lanes;
/// lanes of a batch may share nodes, the scatter is sequential). The schedule (colours, blocks,
/// batches, lanes) is fixed by the constructor, so every y entry sums its contributions in the same
/// order for every thread count: y is bitwise the same with 1 or n threads.
template <int N>
void apply_all(const SemSpace& S, const ApplyData& A, const double* x, double* y, int threads) {
  constexpr int N2 = N * N, N3 = N2 * N;
  const std::int64_t nf = std::int64_t(S.num_free());
  const std::int32_t* l2g = S.local_to_global().data();
  const int nt = resolve_threads(threads);
  const bool par = nt > 1 && nf > kParallelMinRows;
#pragma omp parallel num_threads(nt) if (par)
  {
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < nf; ++i) y[i] = 0.0;
    alignas(64) VecD Dv[N2], Dtv[N2], De[eo_size<N>()], Dte[eo_size<N>()];
    for (int i = 0; i < N2; ++i) {
      Dv[i] = VecD{} + A.D[i];
      Dtv[i] = VecD{} + A.Dt[i];
    }
    even_odd<N>(A.D, De);
    even_odd<N>(A.Dt, Dte);
    // u and ut 96 bytes off a 4 KiB multiple (a load after a store 4 KiB away stalls).
    alignas(64) VecD buf[2 * N3 + 2 * N2 + 9];
    VecD* __restrict ul = buf;
    VecD* __restrict ut = buf + N3 + 3;
    VecD* __restrict ur = ut + N3 + 3;
    VecD* __restrict us = ur + N2 + 3;
    BatchGeometry geo;
    const double zero = 0.0;
    double sink = 0.0;
    for (std::size_t col = 0; col < A.num_colours; ++col) {
      const std::int64_t k0 = std::int64_t(A.colour_blocks[col]), k1 = std::int64_t(A.colour_blocks[col + 1]);
#pragma omp for schedule(static)
      for (std::int64_t blk = k0; blk < k1; ++blk)
      for (std::size_t b = A.block_batches[blk]; b < A.block_batches[blk + 1]; ++b) {
        const std::int32_t* el = A.batch_elements + b * kLanes;
        // Prefetch the next batch's x and y entries: the gather/scatter is latency-bound (indirect,
        // irregular) and the prefetches overlap it with this batch's arithmetic.
        if (b + 1 < A.block_batches[blk + 1]) {
          for (int l = 0; l < kLanes; ++l) {
            const std::int32_t e = el[kLanes + l];
            if (e < 0) continue;
            const std::int32_t* ids = l2g + std::size_t(e) * N3;
            for (int q = 0; q < N3; ++q) {
              const std::int32_t g = ids[q] < nf ? ids[q] : 0;
              __builtin_prefetch(x + g, 0, 3);
              __builtin_prefetch(y + g, 1, 3);
            }
          }
        }
        geo.affine = A.batch_affine[b];
        geo.Gi = geo.affine ? nullptr : reinterpret_cast<const VecDu*>(A.Gi + A.batch_goff[b]);
        for (int l = 0; l < kLanes; ++l) {
          const std::int32_t e = el[l] >= 0 ? el[l] : el[0];  // padded lane: lane 0's constants
          if (geo.affine)
            for (int c = 0; c < 6; ++c) geo.C[c][l] = A.C[6 * std::size_t(e) + c];
          if (el[l] < 0) {
            for (int q = 0; q < N3; ++q) ul[q][l] = 0.0;
            continue;
          }
          // Branch-free (Dirichlet nodes are not predictable): read a zero for them.
          const std::int32_t* ids = l2g + std::size_t(e) * N3;
          for (int q = 0; q < N3; ++q) {
            const std::int32_t g = ids[q];
            const double* src = g < nf ? x + g : &zero;
            ul[q][l] = *src;
          }
        }
        batch_stiffness<N, kEvenOdd>(kEvenOdd ? De : Dv, kEvenOdd ? Dte : Dtv, geo, A.w3, ul, ut, ur, us);
        for (int l = 0; l < kLanes; ++l) {
          if (el[l] < 0) continue;
          const std::int32_t* ids = l2g + std::size_t(el[l]) * N3;
          for (int q = 0; q < N3; ++q) {  // Dirichlet nodes into a private sink
            const std::int32_t g = ids[q];
            double* dst = g < nf ? y + g : &sink;
            *dst += ul[q][l];
          }
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

using ApplyFn = void (*)(const SemSpace&, const ApplyData&, const double*, double*, int);
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
  // Schedule of apply(): blocks of consecutive elements (element order, so that a block's
  // elements share nodes and its gather/scatter stays in cache), coloured so that no two blocks
  // of a colour share a node; each block cut into batches of kLanes elements, affine ones first
  // (at most one batch per block mixes the two kinds; a mixed batch reads the stored factors of
  // all its lanes), the last batch padded with -1.
  const std::size_t target_nodes = 8192;  // x and y of a block: 128 KiB, in L2
  std::size_t bsize = std::max<std::size_t>(1, target_nodes / n3);
  bsize = std::min(bsize, std::max<std::size_t>(1, (ne + 31) / 32));  // >= ~32 blocks for the threads
  bsize = (bsize + kLanes - 1) / kLanes * kLanes;
  const std::size_t nb = (ne + bsize - 1) / bsize;
  std::vector<int> bcolour(nb, 0);
  int ncol = 0;
  {
    const auto& l2g = space_->local_to_global();
    const std::size_t nf = space_->num_free();
    std::vector<std::uint64_t> used(nf, 0);  // per free node: colours of the blocks touching it
    std::vector<std::uint8_t> taken;
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t e0 = b * bsize, e1 = std::min(ne, e0 + bsize);
      std::uint64_t forbidden = 0;
      for (std::size_t i = e0 * n3; i < e1 * n3; ++i)
        if (std::size_t(l2g[i]) < nf) forbidden |= used[std::size_t(l2g[i])];
      if (~forbidden == 0) throw InvalidArgument("SemLaplacian: more than 64 block colours");
      int c = 0;
      while (forbidden >> c & 1) ++c;
      bcolour[b] = c;
      ncol = std::max(ncol, c + 1);
      for (std::size_t i = e0 * n3; i < e1 * n3; ++i)
        if (std::size_t(l2g[i]) < nf) used[std::size_t(l2g[i])] |= std::uint64_t(1) << c;
    }
  }
  colour_blocks_.assign(1, 0);
  block_batches_.assign(1, 0);
  for (int c = 0; c < ncol; ++c) {
    for (std::size_t b = 0; b < nb; ++b) {
      if (bcolour[b] != c) continue;
      const std::size_t e0 = b * bsize, e1 = std::min(ne, e0 + bsize);
      std::vector<std::int32_t> sorted;
      for (std::size_t e = e0; e < e1; ++e)
        if (affine_[e]) sorted.push_back(std::int32_t(e));
      for (std::size_t e = e0; e < e1; ++e)
        if (!affine_[e]) sorted.push_back(std::int32_t(e));
      while (sorted.size() % kLanes) sorted.push_back(-1);
      for (std::size_t i = 0; i < sorted.size(); i += kLanes) {
        bool aff = true;
        for (int l = 0; l < kLanes; ++l) aff = aff && (sorted[i + l] < 0 || affine_[std::size_t(sorted[i + l])]);
        batch_affine_.push_back(aff);
      }
      batch_elements_.insert(batch_elements_.end(), sorted.begin(), sorted.end());
      block_batches_.push_back(batch_elements_.size() / kLanes);
    }
    colour_blocks_.push_back(block_batches_.size() - 1);
  }
  // The non-affine batches' factors interleaved [q][c][lane] (one stream per batch instead of
  // 6 kLanes; padded lanes 0).
  batch_goff_.assign(batch_affine_.size(), 0);
  {
    const double nonaffine = double(std::count(batch_affine_.begin(), batch_affine_.end(), std::uint8_t(0)));
    require_memory(nonaffine * 6.0 * double(n3) * kLanes * 8.0, "SemLaplacian: interleaved geometric factors");
    Gi_.reserve(std::size_t(nonaffine) * 6 * n3 * kLanes);
    const auto& Gall2 = space_->geometric_factors();
    for (std::size_t i = 0; i < batch_affine_.size(); ++i) {
      if (batch_affine_[i]) continue;
      batch_goff_[i] = Gi_.size();
      Gi_.resize(Gi_.size() + 6 * n3 * kLanes, 0.0);
      double* out = Gi_.data() + batch_goff_[i];
      for (int l = 0; l < kLanes; ++l) {
        const std::int32_t e = batch_elements_[i * kLanes + std::size_t(l)];
        if (e < 0) continue;
        const double* G = &Gall2[std::size_t(e) * 6 * n3];
        for (std::size_t q = 0; q < n3; ++q)
          for (int c = 0; c < 6; ++c) out[(q * 6 + std::size_t(c)) * kLanes + std::size_t(l)] = G[std::size_t(c) * n3 + q];
      }
    }
  }
}

void SemLaplacian::apply(const double* x, double* y) const {
  const ApplyData A{space_->derivative().data(), Dt_.data(),           C_.data(),
                    w3_.data(),                 batch_elements_.data(),  block_batches_.data(),
                    colour_blocks_.data(),      batch_affine_.data(),    Gi_.data(),
                    batch_goff_.data(),         colour_blocks_.size() - 1};
  apply_fn(space_->order())(*space_, A, x, y, threads_);
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
  const int p = S.order();
  const std::size_t n3 = S.nodes_per_element(), nf = S.num_free(), ne = S.num_elements();
  const auto& l2g = S.local_to_global();
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
  std::vector<double> Ae(n3 * n3);
  for (std::size_t e = 0; e < ne; ++e) {
    sem_element_stiffness(S, e, Ae.data());
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

void sem_element_stiffness(const SemSpace& S, std::size_t e, double* out) {
  if (e >= S.num_elements())
    throw InvalidArgument("sem_element_stiffness: element " + std::to_string(e) + " out of range (" +
                          std::to_string(S.num_elements()) + " elements)");
  if (out == nullptr) throw InvalidArgument("sem_element_stiffness: null output");
  const int N = S.points_1d();
  const std::size_t n3 = S.nodes_per_element();
  const auto& D = S.derivative();
  std::fill(out, out + n3 * n3, 0.0);
  // At q = (a, b, c) the reference gradient of basis function n is nonzero only for n on the
  // three lines through q: d/dr of n = (m, b, c) is D[a][m], etc.
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
              double* row = &out[node[X][m1] * n3];
              for (int m2 = 0; m2 < N; ++m2) row[node[Y][m2]] += f * der[Y][m2];
            }
          }
      }
}

SemApplyCost sem_apply_cost(int order, bool affine) {
  if (order < kMinSemOrder || order > kMaxSemOrder)
    throw InvalidArgument("sem_apply_cost: order p must be in [" + std::to_string(kMinSemOrder) + ", " +
                          std::to_string(kMaxSemOrder) + "], got " + std::to_string(order));
  const double N = order + 1.0, N2 = N * N, N3 = N2 * N, N4 = N3 * N;
  SemApplyCost c;
  // even-odd contractions: N^2 + N flops per line (N^2 + N - 3 for odd N), 6 N^2 lines, 2 N^3
  // adds of the two accumulating contractions; geometric factors 15 N^3 (+ 3 N^3 weights, affine)
  c.flops_per_element = 6.0 * N4 + (affine ? 26.0 : 23.0) * N3 - (order % 2 == 0 ? 18.0 * N2 : 0.0);
  c.element_bytes = (affine ? 48.0 : 48.0 * N3) + 4.0 * N3;
  c.vector_bytes_per_node = 32.0;
  return c;
}

}  // namespace elliptica::multigrid
