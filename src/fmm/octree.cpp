// Uniform-depth octree (see include/elliptica/fmm/octree.hpp).
#include "elliptica/fmm/octree.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_map>

#include "elliptica/core/error.hpp"

namespace elliptica::fmm {

bool OctreeNode::is_leaf() const {
  for (int c : children)
    if (c >= 0) return false;
  return true;
}

namespace {
constexpr int kMaxSupportedDepth = 20;  // 3 * 20 bits of integer coordinates fit a 64-bit key

std::uint64_t pack(int x, int y, int z) {
  return static_cast<std::uint64_t>(x) | (static_cast<std::uint64_t>(y) << 21) |
         (static_cast<std::uint64_t>(z) << 42);
}
// Morton key of integer coordinates with `bits` bits each (bit b of x -> bit 3b, y -> 3b+1, z -> 3b+2).
std::uint64_t morton(std::uint32_t x, std::uint32_t y, std::uint32_t z, int bits) {
  std::uint64_t k = 0;
  for (int b = 0; b < bits; ++b) {
    k |= static_cast<std::uint64_t>((x >> b) & 1u) << (3 * b);
    k |= static_cast<std::uint64_t>((y >> b) & 1u) << (3 * b + 1);
    k |= static_cast<std::uint64_t>((z >> b) & 1u) << (3 * b + 2);
  }
  return k;
}
}  // namespace

struct Octree::Impl {
  std::vector<OctreeNode> nodes;
  std::vector<std::int64_t> perm;
  int leaf_level = 0;
  std::vector<std::vector<int>> level_nodes;
  std::vector<std::vector<int>> neighbours;
  std::vector<std::vector<int>> interaction;
};

Octree::Octree(const std::vector<std::array<double, 3>>& points, const OctreeOptions& opt)
    : impl_(std::make_shared<Impl>()) {
  const std::size_t n = points.size();
  if (n == 0) throw InvalidArgument("Octree: the point set is empty");
  if (opt.depth < -1 || opt.depth > kMaxSupportedDepth)
    throw InvalidArgument("Octree: depth must be -1 (automatic) or in [0, " +
                          std::to_string(kMaxSupportedDepth) + "], got " + std::to_string(opt.depth));
  if (opt.depth < 0) {
    if (opt.max_leaf < 1)
      throw InvalidArgument("Octree: max_leaf must be >= 1, got " + std::to_string(opt.max_leaf));
    if (opt.max_depth < 0 || opt.max_depth > kMaxSupportedDepth)
      throw InvalidArgument("Octree: max_depth must be in [0, " + std::to_string(kMaxSupportedDepth) +
                            "], got " + std::to_string(opt.max_depth));
  }
  std::array<double, 3> lo{}, hi{};
  for (int d = 0; d < 3; ++d) lo[d] = hi[d] = points[0][d];
  for (std::size_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      const double v = points[i][d];
      if (!std::isfinite(v))
        throw InvalidArgument("Octree: point " + std::to_string(i) + " has a NaN/Inf coordinate");
      lo[d] = std::min(lo[d], v);
      hi[d] = std::max(hi[d], v);
    }
  std::array<double, 3> c{};
  double hw = 0, scale = 0;
  for (int d = 0; d < 3; ++d) {
    c[d] = 0.5 * (lo[d] + hi[d]);
    hw = std::max(hw, 0.5 * (hi[d] - lo[d]));
    scale = std::max({scale, std::abs(lo[d]), std::abs(hi[d])});
  }
  // enlarge slightly so that no point lies on the outer boundary; a degenerate (single point)
  // set gets a small cube relative to its coordinates.
  if (hw <= 1e-12 * std::max(scale, 1e-300)) hw = std::max(1e-3 * scale, 1e-3);
  hw *= 1.0 + 1e-6;
  if (!std::isfinite(hw)) throw InvalidArgument("Octree: the point coordinates overflow");

  const int cap = opt.depth >= 0 ? opt.depth : opt.max_depth;
  const std::uint32_t ncap = 1u << cap;
  std::vector<std::array<std::uint32_t, 3>> ic(n);
  std::vector<std::uint64_t> key(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) {
      const double t = (points[i][d] - (c[d] - hw)) / (2 * hw) * ncap;
      long long v = static_cast<long long>(std::floor(t));
      v = std::clamp<long long>(v, 0, static_cast<long long>(ncap) - 1);
      ic[i][d] = static_cast<std::uint32_t>(v);
    }
    key[i] = morton(ic[i][0], ic[i][1], ic[i][2], cap);
  }
  auto& perm = impl_->perm;
  perm.resize(n);
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::stable_sort(perm.begin(), perm.end(), [&](std::int64_t a, std::int64_t b) { return key[a] < key[b]; });

  // depth: smallest level whose largest box holds at most max_leaf points
  int L = cap;
  if (opt.depth < 0) {
    for (int l = 0; l <= cap; ++l) {
      const int sh = 3 * (cap - l);
      std::size_t run = 0, best = 0;
      for (std::size_t t = 0; t < n; ++t) {
        if (t > 0 && (key[perm[t]] >> sh) == (key[perm[t - 1]] >> sh)) ++run; else run = 1;
        best = std::max(best, run);
      }
      if (best <= static_cast<std::size_t>(opt.max_leaf)) { L = l; break; }
    }
  }
  impl_->leaf_level = L;

  auto& nodes = impl_->nodes;
  impl_->level_nodes.assign(L + 1, {});
  std::vector<int> prev_of_point;  // node at the previous level for each tree-order position
  std::vector<int> cur_of_point(n);
  for (int l = 0; l <= L; ++l) {
    const int sh = 3 * (cap - l);
    const double bw = 2 * hw / static_cast<double>(1u << l);
    std::size_t t = 0;
    while (t < n) {
      std::size_t e = t + 1;
      const std::uint64_t kk = key[perm[t]] >> sh;
      while (e < n && (key[perm[e]] >> sh) == kk) ++e;
      OctreeNode nd;
      nd.level = l;
      for (int d = 0; d < 3; ++d) {
        nd.coord[d] = static_cast<int>(ic[perm[t]][d] >> (cap - l));
        nd.center[d] = c[d] - hw + (nd.coord[d] + 0.5) * bw;
      }
      nd.half_width = 0.5 * bw;
      nd.begin = static_cast<std::int64_t>(t);
      nd.end = static_cast<std::int64_t>(e);
      const int id = static_cast<int>(nodes.size());
      if (l > 0) {
        nd.parent = prev_of_point[t];
        const int oct = (nd.coord[0] & 1) | ((nd.coord[1] & 1) << 1) | ((nd.coord[2] & 1) << 2);
        nodes[nd.parent].children[oct] = id;
      }
      nodes.push_back(nd);
      impl_->level_nodes[l].push_back(id);
      for (std::size_t s = t; s < e; ++s) cur_of_point[s] = id;
      t = e;
    }
    prev_of_point = cur_of_point;
  }

  const std::size_t nn = nodes.size();
  impl_->neighbours.assign(nn, {});
  impl_->interaction.assign(nn, {});
  for (int l = 0; l <= L; ++l) {
    std::unordered_map<std::uint64_t, int> map;
    map.reserve(impl_->level_nodes[l].size() * 2);
    for (int id : impl_->level_nodes[l]) map.emplace(pack(nodes[id].coord[0], nodes[id].coord[1], nodes[id].coord[2]), id);
    const int m = 1 << l;
    for (int id : impl_->level_nodes[l]) {
      const auto& cc = nodes[id].coord;
      for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
          for (int dx = -1; dx <= 1; ++dx) {
            const int x = cc[0] + dx, y = cc[1] + dy, z = cc[2] + dz;
            if (x < 0 || y < 0 || z < 0 || x >= m || y >= m || z >= m) continue;
            auto it = map.find(pack(x, y, z));
            if (it != map.end()) impl_->neighbours[id].push_back(it->second);
          }
    }
  }
  for (int l = 1; l <= L; ++l)
    for (int id : impl_->level_nodes[l]) {
      const auto& cc = nodes[id].coord;
      for (int pn : impl_->neighbours[nodes[id].parent])
        for (int ch : nodes[pn].children) {
          if (ch < 0) continue;
          const auto& dc = nodes[ch].coord;
          if (std::abs(dc[0] - cc[0]) > 1 || std::abs(dc[1] - cc[1]) > 1 || std::abs(dc[2] - cc[2]) > 1)
            impl_->interaction[id].push_back(ch);
        }
      std::sort(impl_->interaction[id].begin(), impl_->interaction[id].end());
    }
}

const std::vector<OctreeNode>& Octree::nodes() const { return impl_->nodes; }
const std::vector<std::int64_t>& Octree::permutation() const { return impl_->perm; }
int Octree::leaf_level() const { return impl_->leaf_level; }
const std::vector<int>& Octree::level_nodes(int l) const {
  if (l < 0 || l > impl_->leaf_level)
    throw InvalidArgument("Octree::level_nodes: level " + std::to_string(l) + " outside [0, " +
                          std::to_string(impl_->leaf_level) + "]");
  return impl_->level_nodes[l];
}
const std::vector<int>& Octree::neighbours(int node) const {
  if (node < 0 || node >= static_cast<int>(impl_->nodes.size()))
    throw InvalidArgument("Octree::neighbours: node index " + std::to_string(node) + " out of range");
  return impl_->neighbours[node];
}
const std::vector<int>& Octree::interaction_list(int node) const {
  if (node < 0 || node >= static_cast<int>(impl_->nodes.size()))
    throw InvalidArgument("Octree::interaction_list: node index " + std::to_string(node) + " out of range");
  return impl_->interaction[node];
}

}  // namespace elliptica::fmm
