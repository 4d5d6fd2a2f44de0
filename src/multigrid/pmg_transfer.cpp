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
