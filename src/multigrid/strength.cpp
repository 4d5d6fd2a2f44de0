/// @file strength.cpp
/// Strength of connection of smoothed aggregation (amg.hpp step 1; Vanek, Mandel, Brezina 1996,
/// eq. (3.2)): i ~ j when |a_ij| >= theta sqrt(|a_ii a_jj|) (symmetric measure) or
/// |a_ij| >= theta max_{k != i} |a_ik| (classical, Ruge & Stueben 1987), on the node graph of
/// b x b blocks (Frobenius norms), symmetrised.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

namespace {

/// The node graph: entry (I, J) = ||A_IJ||_F over the b x b blocks, diagonal included, columns
/// sorted. The squares are summed in long double (range 1e+-4931), so entries of any double
/// magnitude (1e+-160) neither overflow nor underflow in the norm.
CsrMatrix block_norms(const CsrMatrix& A, int b) {
  const std::size_t nn = A.rows / static_cast<std::size_t>(b);
  CsrMatrix G;
  G.rows = G.cols = nn;
  G.row_ptr.assign(nn + 1, 0);
  std::vector<long double> acc(nn, 0.0L);
  std::vector<std::int32_t> marker(nn, -1), cols;
  for (std::size_t I = 0; I < nn; ++I) {
    cols.clear();
    for (int r = 0; r < b; ++r) {
      const std::size_t i = I * static_cast<std::size_t>(b) + static_cast<std::size_t>(r);
      for (std::int64_t p = A.row_ptr[i]; p < A.row_ptr[i + 1]; ++p) {
        const auto J = static_cast<std::int32_t>(A.col[static_cast<std::size_t>(p)] / b);
        if (marker[static_cast<std::size_t>(J)] != static_cast<std::int32_t>(I)) {
          marker[static_cast<std::size_t>(J)] = static_cast<std::int32_t>(I);
          acc[static_cast<std::size_t>(J)] = 0.0L;
          cols.push_back(J);
        }
        const long double v = A.val[static_cast<std::size_t>(p)];
        acc[static_cast<std::size_t>(J)] += v * v;
      }
    }
    std::sort(cols.begin(), cols.end());
    for (auto J : cols) {
      G.col.push_back(J);
      G.val.push_back(static_cast<double>(std::sqrt(acc[static_cast<std::size_t>(J)])));
    }
    G.row_ptr[I + 1] = static_cast<std::int64_t>(G.col.size());
  }
  return G;
}

}  // namespace

StrengthMeasure strength_measure_from_string(const std::string& s) {
  if (s == "symmetric") return StrengthMeasure::Symmetric;
  if (s == "classical") return StrengthMeasure::Classical;
  throw InvalidArgument("strength measure: expected symmetric or classical, got '" + s + "'");
}

std::string to_string(StrengthMeasure m) { return m == StrengthMeasure::Classical ? "classical" : "symmetric"; }

double default_strength_threshold(StrengthMeasure m) { return m == StrengthMeasure::Classical ? 0.5 : 0.08; }

CsrMatrix strength_graph(const CsrMatrix& A, double theta, int block_size, StrengthMeasure measure) {
  if (!(theta >= 0.0 && theta < 1.0))
    throw InvalidArgument("smoothed aggregation: strength_threshold must be in [0, 1), got " + std::to_string(theta));
  if (block_size < 1)
    throw InvalidArgument("smoothed aggregation: block_size must be >= 1, got " + std::to_string(block_size));
  if (A.rows != A.cols)
    throw InvalidArgument("smoothed aggregation: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (A.rows % static_cast<std::size_t>(block_size) != 0)
    throw InvalidArgument("smoothed aggregation: " + std::to_string(A.rows) + " rows are not divisible by block_size " +
                          std::to_string(block_size));
  // b = 1: the node graph is A itself, read through |.| (no copy)
  const CsrMatrix Gb = block_size == 1 ? CsrMatrix{} : block_norms(A, block_size);
  const CsrMatrix& G = block_size == 1 ? A : Gb;
  const std::size_t nn = G.rows;
  std::vector<double> d(nn, 0.0);
  for (std::size_t I = 0; I < nn; ++I)
    for (std::int64_t p = G.row_ptr[I]; p < G.row_ptr[I + 1]; ++p)
      if (static_cast<std::size_t>(G.col[static_cast<std::size_t>(p)]) == I) d[I] = std::fabs(G.val[static_cast<std::size_t>(p)]);
  // directed strong couplings I -> J (row I), then S = Sd + Sd^T merged row by row (both sorted)
  CsrMatrix Sd;
  Sd.rows = Sd.cols = nn;
  Sd.row_ptr.assign(nn + 1, 0);
  Sd.col.reserve(G.nnz());
  Sd.val.reserve(G.nnz());
  for (std::size_t I = 0; I < nn; ++I) {
    bool any = false;
    std::size_t best = I;
    double best_ratio = 0.0, best_s = 0.0;
    double row_max = 0.0;  // the classical measure's max_{J != I} s_IJ
    if (measure == StrengthMeasure::Classical)
      for (std::int64_t p = G.row_ptr[I]; p < G.row_ptr[I + 1]; ++p)
        if (static_cast<std::size_t>(G.col[static_cast<std::size_t>(p)]) != I)
          row_max = std::max(row_max, std::fabs(G.val[static_cast<std::size_t>(p)]));
    for (std::int64_t p = G.row_ptr[I]; p < G.row_ptr[I + 1]; ++p) {
      const auto J = static_cast<std::size_t>(G.col[static_cast<std::size_t>(p)]);
      const double s = std::fabs(G.val[static_cast<std::size_t>(p)]);
      if (J == I || s == 0.0) continue;
      // (sqrt(d_I) sqrt(d_J): no overflow of d_I d_J at 1e160)
      const double ratio = measure == StrengthMeasure::Classical ? s / row_max : s / (std::sqrt(d[I]) * std::sqrt(d[J]));
      if (ratio >= theta) {
        Sd.col.push_back(static_cast<std::int32_t>(J));
        Sd.val.push_back(s);
        any = true;
      } else if (ratio > best_ratio) {
        best_ratio = ratio;
        best_s = s;
        best = J;
      }
    }
    // A coupled node keeps at least its strongest coupling: left out of every aggregate it
    // would get a zero row of P, and the coarse space would lose the near-null space there
    // (a pure-Neumann operator's constant). Only decoupled rows (kept Dirichlet rows) stay alone.
    if (!any && best != I) {
      Sd.col.push_back(static_cast<std::int32_t>(best));
      Sd.val.push_back(best_s);
    }
    Sd.row_ptr[I + 1] = static_cast<std::int64_t>(Sd.col.size());
  }
  // Sd is usually symmetric already (the symmetric measure of a symmetric matrix; only the
  // strongest-coupling rule and the classical measure add one-way entries): then S = Sd + Sd^T is
  // Sd with doubled values, without the transpose and the merge (two more graphs of nnz entries).
  bool symmetric = true;
  for (std::size_t I = 0; I < nn && symmetric; ++I)
    for (std::int64_t p = Sd.row_ptr[I]; p < Sd.row_ptr[I + 1]; ++p) {
      const auto J = static_cast<std::size_t>(Sd.col[static_cast<std::size_t>(p)]);
      const std::int32_t* b = Sd.col.data() + Sd.row_ptr[J];
      const std::int32_t* e = Sd.col.data() + Sd.row_ptr[J + 1];
      const std::int32_t* q = std::lower_bound(b, e, static_cast<std::int32_t>(I));
      if (q == e || static_cast<std::size_t>(*q) != I ||
          Sd.val[static_cast<std::size_t>(q - Sd.col.data())] != Sd.val[static_cast<std::size_t>(p)]) {
        symmetric = false;
        break;
      }
    }
  if (symmetric) {
    for (double& v : Sd.val) v += v;  // s_IJ + s_JI, the merge's sum
    return Sd;
  }
  const CsrMatrix St = Sd.transpose();
  CsrMatrix S;
  S.rows = S.cols = nn;
  S.row_ptr.assign(nn + 1, 0);
  S.col.reserve(Sd.nnz() + Sd.nnz() / 8);
  S.val.reserve(Sd.nnz() + Sd.nnz() / 8);
  for (std::size_t I = 0; I < nn; ++I) {
    std::int64_t p = Sd.row_ptr[I], q = St.row_ptr[I];
    const std::int64_t pe = Sd.row_ptr[I + 1], qe = St.row_ptr[I + 1];
    while (p < pe || q < qe) {
      const std::int32_t cp = p < pe ? Sd.col[static_cast<std::size_t>(p)] : INT32_MAX;
      const std::int32_t cq = q < qe ? St.col[static_cast<std::size_t>(q)] : INT32_MAX;
      if (cp == cq) {
        S.col.push_back(cp);
        S.val.push_back(Sd.val[static_cast<std::size_t>(p++)] + St.val[static_cast<std::size_t>(q++)]);
      } else if (cp < cq) {
        S.col.push_back(cp);
        S.val.push_back(Sd.val[static_cast<std::size_t>(p++)]);
      } else {
        S.col.push_back(cq);
        S.val.push_back(St.val[static_cast<std::size_t>(q++)]);
      }
    }
    S.row_ptr[I + 1] = static_cast<std::int64_t>(S.col.size());
  }
  return S;
}

}  // namespace elliptica::multigrid
