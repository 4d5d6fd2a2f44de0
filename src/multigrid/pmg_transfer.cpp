/// @file pmg_transfer.cpp
/// The p-multigrid interpolation between two orders on one mesh: element-wise tensor-product GLL
/// Lagrange interpolation (pmg.hpp's file docstring), assembled as a CSR matrix over the free
/// nodes, each fine row taken once from the first element that holds its node.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/multigrid/gll.hpp"
#include "elliptica/multigrid/pmg.hpp"

namespace elliptica::multigrid {

CsrMatrix pmg_prolongation(const SemSpace& coarse, const SemSpace& fine, int threads) {
  if (threads < 0) throw InvalidArgument("pmg_prolongation: threads must be >= 0, got " + std::to_string(threads));
  const int q = coarse.order(), p = fine.order();
  if (q >= p)
    throw InvalidArgument("pmg_prolongation: the coarse order " + std::to_string(q) +
                          " must be below the fine order " + std::to_string(p));
  if (coarse.mesh().elements != fine.mesh().elements || coarse.mesh().vertices != fine.mesh().vertices)
    throw InvalidArgument("pmg_prolongation: the coarse and fine spaces are not on the same mesh");

  const int Nc = q + 1, Nf = p + 1;
  const std::size_t nc3 = coarse.nodes_per_element(), nf3 = fine.nodes_per_element();
  const std::size_t ne = fine.num_elements();
  const std::size_t rows = fine.num_free(), cols = coarse.num_free();
  const auto& l2g_c = coarse.local_to_global();
  const auto& l2g_f = fine.local_to_global();

  // 1-D interpolation from the q-points to the p-points (rows: fine points; exact e_j rows where
  // a fine point is a coarse node, e.g. the end points).
  const std::vector<double> J = interpolation_matrix(coarse.gll().nodes, fine.gll().nodes);  // Nf x Nc

  require_memory(double(rows) * double(nc3) * 12.0 + double(rows) * 16.0,
                 "the p-multigrid interpolation (" + std::to_string(rows) + " rows, order " + std::to_string(q) +
                     " to " + std::to_string(p) + ")");

  // Owner of each free fine node: the first (element, local node) that holds it.
  std::vector<std::int64_t> owner(rows, -1);
  for (std::size_t e = 0; e < ne; ++e)
    for (std::size_t l = 0; l < nf3; ++l) {
      const std::int32_t g = l2g_f[e * nf3 + l];
      if (std::size_t(g) < rows && owner[g] < 0) owner[g] = std::int64_t(e * nf3 + l);
    }

  // Nonzero 1-D weights per fine point: which coarse indices a contribute, and J_ia.
  std::vector<std::vector<int>> nz(Nf);
  for (int i = 0; i < Nf; ++i)
    for (int a = 0; a < Nc; ++a)
      if (J[std::size_t(i) * Nc + a] != 0.0) nz[i].push_back(a);

  auto split = [Nf](std::size_t l, int& i, int& j, int& k) {
    i = int(l % Nf);
    j = int((l / Nf) % Nf);
    k = int(l / (std::size_t(Nf) * Nf));
  };
  auto for_row = [&](std::size_t g, auto&& visit) {
    const std::size_t e = std::size_t(owner[g]) / nf3, l = std::size_t(owner[g]) % nf3;
    int i, j, k;
    split(l, i, j, k);
    for (int c : nz[k])
      for (int b : nz[j])
        for (int a : nz[i]) {
          const std::int32_t col = l2g_c[e * nc3 + a + std::size_t(Nc) * (b + std::size_t(Nc) * c)];
          if (std::size_t(col) >= cols) continue;  // coarse Dirichlet node: value 0
          visit(col, J[std::size_t(i) * Nc + a] * J[std::size_t(j) * Nc + b] * J[std::size_t(k) * Nc + c]);
        }
  };

  CsrMatrix P;
  P.rows = rows;
  P.cols = cols;
  P.row_ptr.assign(rows + 1, 0);
  const auto n = static_cast<std::int64_t>(rows);
  const int nt = resolve_threads(threads);
  // Pass 1: row lengths (nothing in the loops throws).
#pragma omp parallel for schedule(static) num_threads(nt) if (n > kParallelMinRows)
  for (std::int64_t g = 0; g < n; ++g) {
    std::int64_t len = 0;
    for_row(std::size_t(g), [&](std::int32_t, double) { ++len; });
    P.row_ptr[g + 1] = len;
  }
  for (std::size_t g = 0; g < rows; ++g) P.row_ptr[g + 1] += P.row_ptr[g];
  P.col.resize(std::size_t(P.row_ptr[rows]));
  P.val.resize(std::size_t(P.row_ptr[rows]));
  // Pass 2: the entries, each row sorted by column (a row's columns are distinct: one element's
  // coarse nodes have distinct global ids).
#pragma omp parallel for schedule(static) num_threads(nt) if (n > kParallelMinRows)
  for (std::int64_t g = 0; g < n; ++g) {
    std::int64_t pos = P.row_ptr[g];
    const std::int64_t begin = pos;
    for_row(std::size_t(g), [&](std::int32_t col, double v) {
      P.col[pos] = col;
      P.val[pos] = v;
      ++pos;
    });
    // insertion sort: at most (q + 1)^3 entries
    for (std::int64_t s = begin + 1; s < pos; ++s) {
      const std::int32_t c = P.col[s];
      const double v = P.val[s];
      std::int64_t t = s;
      while (t > begin && P.col[t - 1] > c) {
        P.col[t] = P.col[t - 1];
        P.val[t] = P.val[t - 1];
        --t;
      }
      P.col[t] = c;
      P.val[t] = v;
    }
  }
  return P;
}

}  // namespace elliptica::multigrid

namespace elliptica::multigrid {

namespace {
void check_spaces(const SemSpace& coarse, const SemSpace& fine, int threads) {
  if (threads < 0) throw InvalidArgument("PmgTransfer: threads must be >= 0, got " + std::to_string(threads));
  if (coarse.order() >= fine.order())
    throw InvalidArgument("PmgTransfer: the coarse order " + std::to_string(coarse.order()) +
                          " must be below the fine order " + std::to_string(fine.order()));
  if (coarse.mesh().elements != fine.mesh().elements || coarse.mesh().vertices != fine.mesh().vertices)
    throw InvalidArgument("PmgTransfer: the coarse and fine spaces are not on the same mesh");
}

constexpr int kMaxN = kMaxSemOrder + 1;

/// uf (Nf^3, r fastest) = (J x J x J) uc (Nc^3), J Nf x Nc row-major: three 1-D contractions.
void interpolate(const double* J, int Nf, int Nc, const double* uc, double* t1, double* t2, double* uf) {
  // t1[c][b][i] = sum_a J[i][a] uc[c][b][a]
  for (int cb = 0; cb < Nc * Nc; ++cb) {
    const double* u = uc + cb * Nc;
    double* t = t1 + cb * Nf;
    for (int i = 0; i < Nf; ++i) {
      double acc = 0.0;
      for (int a = 0; a < Nc; ++a) acc += J[i * Nc + a] * u[a];
      t[i] = acc;
    }
  }
  // t2[c][j][i] = sum_b J[j][b] t1[c][b][i]
  for (int c = 0; c < Nc; ++c)
    for (int j = 0; j < Nf; ++j) {
      double* t = t2 + (c * Nf + j) * Nf;
      for (int i = 0; i < Nf; ++i) t[i] = 0.0;
      for (int b = 0; b < Nc; ++b) {
        const double w = J[j * Nc + b];
        const double* s = t1 + (c * Nc + b) * Nf;
        for (int i = 0; i < Nf; ++i) t[i] += w * s[i];
      }
    }
  // uf[k][j][i] = sum_c J[k][c] t2[c][j][i]
  const int nf2 = Nf * Nf;
  for (int k = 0; k < Nf; ++k) {
    double* t = uf + k * nf2;
    for (int l = 0; l < nf2; ++l) t[l] = 0.0;
    for (int c = 0; c < Nc; ++c) {
      const double w = J[k * Nc + c];
      const double* s = t2 + c * nf2;
      for (int l = 0; l < nf2; ++l) t[l] += w * s[l];
    }
  }
}

/// uc (Nc^3) = (J x J x J)^T uf (Nf^3): the transposed contractions in reverse order.
void interpolate_transpose(const double* J, int Nf, int Nc, const double* uf, double* t2, double* t1, double* uc) {
  const int nf2 = Nf * Nf;
  // t2[c][j][i] = sum_k J[k][c] uf[k][j][i]
  for (int c = 0; c < Nc; ++c) {
    double* t = t2 + c * nf2;
    for (int l = 0; l < nf2; ++l) t[l] = 0.0;
    for (int k = 0; k < Nf; ++k) {
      const double w = J[k * Nc + c];
      const double* s = uf + k * nf2;
      for (int l = 0; l < nf2; ++l) t[l] += w * s[l];
    }
  }
  // t1[c][b][i] = sum_j J[j][b] t2[c][j][i]
  for (int c = 0; c < Nc; ++c)
    for (int b = 0; b < Nc; ++b) {
      double* t = t1 + (c * Nc + b) * Nf;
      for (int i = 0; i < Nf; ++i) t[i] = 0.0;
      for (int j = 0; j < Nf; ++j) {
        const double w = J[j * Nc + b];
        const double* s = t2 + (c * Nf + j) * Nf;
        for (int i = 0; i < Nf; ++i) t[i] += w * s[i];
      }
    }
  // uc[c][b][a] = sum_i J[i][a] t1[c][b][i]
  for (int cb = 0; cb < Nc * Nc; ++cb) {
    const double* t = t1 + cb * Nf;
    double* u = uc + cb * Nc;
    for (int a = 0; a < Nc; ++a) {
      double acc = 0.0;
      for (int i = 0; i < Nf; ++i) acc += J[i * Nc + a] * t[i];
      u[a] = acc;
    }
  }
}
}  // namespace

PmgTransfer::PmgTransfer(std::shared_ptr<const SemSpace> coarse, std::shared_ptr<const SemSpace> fine, int threads)
    : coarse_(std::move(coarse)), fine_(std::move(fine)), threads_(threads) {
  if (!coarse_ || !fine_) throw InvalidArgument("PmgTransfer: null space");
  check_spaces(*coarse_, *fine_, threads);
  const std::size_t ne = fine_->num_elements(), nf3 = fine_->nodes_per_element(), rows = fine_->num_free();
  require_memory(double(ne) * double(nf3), "the p-multigrid transfer's ownership mask (" + std::to_string(ne) +
                                                " elements of order " + std::to_string(fine_->order()) + ")");
  J_ = interpolation_matrix(coarse_->gll().nodes, fine_->gll().nodes);
  owned_.assign(ne * nf3, 0);
  std::vector<std::uint8_t> seen(rows, 0);
  const auto& l2g = fine_->local_to_global();
  for (std::size_t e = 0; e < ne; ++e)
    for (std::size_t l = 0; l < nf3; ++l) {
      const std::int32_t g = l2g[e * nf3 + l];
      if (std::size_t(g) < rows && !seen[std::size_t(g)]) {
        seen[std::size_t(g)] = 1;
        owned_[e * nf3 + l] = 1;
      }
    }
}

std::size_t PmgTransfer::fine_size() const { return fine_->num_free(); }
std::size_t PmgTransfer::coarse_size() const { return coarse_->num_free(); }

void PmgTransfer::prolong(const double* xc, double* xf, bool add) const {
  const int Nf = fine_->points_1d(), Nc = coarse_->points_1d();
  const std::size_t nf3 = fine_->nodes_per_element(), nc3 = coarse_->nodes_per_element();
  const std::size_t cols = coarse_->num_free();
  const auto& l2g_c = coarse_->local_to_global();
  const auto& l2g_f = fine_->local_to_global();
  const auto ne = static_cast<std::int64_t>(fine_->num_elements());
  const int nt = resolve_threads(threads_);
#pragma omp parallel num_threads(nt) if (ne > 64)
  {
    double uc[kMaxN * kMaxN * kMaxN], t1[kMaxN * kMaxN * kMaxN], t2[kMaxN * kMaxN * kMaxN], uf[kMaxN * kMaxN * kMaxN];
#pragma omp for schedule(static)
    for (std::int64_t ie = 0; ie < ne; ++ie) {
      const auto e = static_cast<std::size_t>(ie);
      const std::int32_t* gc = l2g_c.data() + e * nc3;
      for (std::size_t l = 0; l < nc3; ++l) uc[l] = std::size_t(gc[l]) < cols ? xc[gc[l]] : 0.0;
      interpolate(J_.data(), Nf, Nc, uc, t1, t2, uf);
      const std::int32_t* gf = l2g_f.data() + e * nf3;
      const std::uint8_t* own = owned_.data() + e * nf3;
      if (add) {
        for (std::size_t l = 0; l < nf3; ++l)
          if (own[l]) xf[gf[l]] += uf[l];
      } else {
        for (std::size_t l = 0; l < nf3; ++l)
          if (own[l]) xf[gf[l]] = uf[l];
      }
    }
  }
}

void PmgTransfer::restrict_to_coarse(const double* rf, double* rc) const {
  const int Nf = fine_->points_1d(), Nc = coarse_->points_1d();
  const std::size_t nf3 = fine_->nodes_per_element(), nc3 = coarse_->nodes_per_element();
  const std::size_t cols = coarse_->num_free();
  const auto& l2g_c = coarse_->local_to_global();
  const auto& l2g_f = fine_->local_to_global();
  const int nt = resolve_threads(threads_);
  std::fill(rc, rc + cols, 0.0);
  const auto& colours = fine_->colours();
#pragma omp parallel num_threads(nt) if (fine_->num_elements() > 64)
  {
    double uc[kMaxN * kMaxN * kMaxN], t1[kMaxN * kMaxN * kMaxN], t2[kMaxN * kMaxN * kMaxN], uf[kMaxN * kMaxN * kMaxN];
    for (const auto& colour : colours) {
      const auto m = static_cast<std::int64_t>(colour.size());
#pragma omp for schedule(static)
      for (std::int64_t i = 0; i < m; ++i) {
        const auto e = static_cast<std::size_t>(colour[static_cast<std::size_t>(i)]);
        const std::int32_t* gf = l2g_f.data() + e * nf3;
        const std::uint8_t* own = owned_.data() + e * nf3;
        for (std::size_t l = 0; l < nf3; ++l) uf[l] = own[l] ? rf[gf[l]] : 0.0;
        interpolate_transpose(J_.data(), Nf, Nc, uf, t2, t1, uc);
        const std::int32_t* gc = l2g_c.data() + e * nc3;
        for (std::size_t l = 0; l < nc3; ++l)
          if (std::size_t(gc[l]) < cols) rc[gc[l]] += uc[l];
      }  // implicit barrier: the next colour starts when this one is done
    }
  }
}

}  // namespace elliptica::multigrid
