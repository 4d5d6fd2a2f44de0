/// @file aggregation.cpp
/// Standard (greedy, three-pass) aggregation of smoothed aggregation (amg.hpp step 2; Vanek,
/// Mandel, Brezina 1996, section 3): deterministic, nodes visited in index order.
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

Aggregates standard_aggregation(const CsrMatrix& S) {
  if (S.rows != S.cols)
    throw InvalidArgument("standard_aggregation: the strength graph must be square, got " + std::to_string(S.rows) +
                          " x " + std::to_string(S.cols));
  const std::size_t n = S.rows;
  constexpr std::int32_t kFree = -1, kIsolated = -2;
  Aggregates a;
  a.of_node.assign(n, kFree);
  std::int32_t next = 0;
  auto nbrs = [&](std::size_t i, auto&& f) {
    for (std::int64_t p = S.row_ptr[i]; p < S.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(S.col[static_cast<std::size_t>(p)]);
      if (j != i) f(j);
    }
  };
  // Pass 1: a free node whose strong neighbours are all free roots a new aggregate of itself and
  // them; a node without strong neighbours is isolated (no aggregate).
  std::vector<char> root_made(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.of_node[i] != kFree) continue;
    bool has_nbr = false, all_free = true;
    nbrs(i, [&](std::size_t j) {
      has_nbr = true;
      if (a.of_node[j] != kFree) all_free = false;
    });
    if (!has_nbr) {
      a.of_node[i] = kIsolated;
      continue;
    }
    if (!all_free) continue;
    a.of_node[i] = next;
    nbrs(i, [&](std::size_t j) { a.of_node[j] = next; });
    ++next;
  }
  const std::int32_t after_pass1 = next;
  // Pass 2: a free node joins the pass-1 aggregate of its first strong neighbour that has one.
  std::vector<std::int32_t> joined(n, kFree);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.of_node[i] != kFree) continue;
    nbrs(i, [&](std::size_t j) {
      const std::int32_t g = a.of_node[j];
      if (joined[i] == kFree && g >= 0 && g < after_pass1) joined[i] = g;
    });
  }
  for (std::size_t i = 0; i < n; ++i)
    if (a.of_node[i] == kFree && joined[i] != kFree) a.of_node[i] = joined[i];
  // Pass 3: what is still free forms aggregates with its free strong neighbours.
  for (std::size_t i = 0; i < n; ++i) {
    if (a.of_node[i] != kFree) continue;
    a.of_node[i] = next;
    nbrs(i, [&](std::size_t j) {
      if (a.of_node[j] == kFree) a.of_node[j] = next;
    });
    ++next;
  }
  for (auto& g : a.of_node)
    if (g == kIsolated) g = -1;
  a.count = static_cast<std::size_t>(next);
  return a;
}

}  // namespace elliptica::multigrid
