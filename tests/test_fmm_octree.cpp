// Tests of the uniform-depth octree (include/elliptica/fmm/octree.hpp) against brute-force
// definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "elliptica/core/error.hpp"
#include "elliptica/fmm/octree.hpp"

using elliptica::fmm::Octree;
using elliptica::fmm::OctreeOptions;
using P3 = std::array<double, 3>;

namespace {
std::vector<P3> random_cube(int n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  std::vector<P3> p(n);
  for (auto& x : p) x = {u(g), 0.5 * u(g), u(g) + 3.0};
  return p;
}
std::vector<P3> random_sphere(int n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd;
  std::vector<P3> p(n);
  for (auto& x : p) {
    double a = nd(g), b = nd(g), c = nd(g), r = std::sqrt(a * a + b * b + c * c);
    x = {a / r, b / r, c / r};
  }
  return p;
}
bool adjacent(const elliptica::fmm::OctreeNode& a, const elliptica::fmm::OctreeNode& b) {
  for (int d = 0; d < 3; ++d)
    if (std::abs(a.coord[d] - b.coord[d]) > 1) return false;
  return true;
}

void check_tree(const std::vector<P3>& pts, const Octree& t) {
  const auto& nodes = t.nodes();
  const auto& perm = t.permutation();
  const std::int64_t n = static_cast<std::int64_t>(pts.size());
  ASSERT_EQ(static_cast<std::int64_t>(perm.size()), n);
  {  // permutation is a permutation
    std::vector<std::int64_t> s(perm.begin(), perm.end());
    std::sort(s.begin(), s.end());
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(s[i], i);
  }
  const int L = t.leaf_level();
  ASSERT_EQ(t.level_nodes(0).size(), 1u);
  const auto& root = nodes[t.level_nodes(0)[0]];
  EXPECT_EQ(root.begin, 0);
  EXPECT_EQ(root.end, n);
  std::set<int> seen;
  for (int l = 0; l <= L; ++l) {
    // the ranges of the level partition [0, n)
    std::vector<std::pair<std::int64_t, std::int64_t>> r;
    for (int id : t.level_nodes(l)) {
      ASSERT_TRUE(seen.insert(id).second);
      const auto& nd = nodes[id];
      EXPECT_EQ(nd.level, l);
      EXPECT_LT(nd.begin, nd.end);  // pruned: no empty boxes
      r.push_back({nd.begin, nd.end});
      EXPECT_NEAR(nd.half_width, root.half_width / std::pow(2.0, l), 1e-14 * root.half_width);
      EXPECT_EQ(nd.is_leaf(), l == L);
      // every point inside the box (closed box, rounding tolerance)
      const double tol = 1e-12 * root.half_width;
      for (std::int64_t s = nd.begin; s < nd.end; ++s)
        for (int d = 0; d < 3; ++d)
          EXPECT_LE(std::abs(pts[perm[s]][d] - nd.center[d]), nd.half_width + tol);
      // children: consistent parent link and covering ranges
      if (l < L) {
        std::int64_t sum = 0;
        for (int c : nd.children)
          if (c >= 0) {
            EXPECT_EQ(nodes[c].parent, id);
            EXPECT_GE(nodes[c].begin, nd.begin);
            EXPECT_LE(nodes[c].end, nd.end);
            sum += nodes[c].end - nodes[c].begin;
            for (int d = 0; d < 3; ++d) EXPECT_EQ(nodes[c].coord[d] / 2, nd.coord[d]);
          }
        EXPECT_EQ(sum, nd.end - nd.begin);
      }
    }
    std::sort(r.begin(), r.end());
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.front().first, 0);
    EXPECT_EQ(r.back().second, n);
    for (std::size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i].first, r[i - 1].second);
  }
  EXPECT_EQ(seen.size(), nodes.size());
  // neighbours and interaction lists vs the brute-force definitions
  for (int l = 0; l <= L; ++l) {
    const auto& lev = t.level_nodes(l);
    for (int id : lev) {
      std::set<int> nb_ref, il_ref;
      for (int o : lev)
        if (adjacent(nodes[id], nodes[o])) nb_ref.insert(o);
      if (l > 0)
        for (int o : lev)
          if (!adjacent(nodes[id], nodes[o]) && adjacent(nodes[nodes[id].parent], nodes[nodes[o].parent]))
            il_ref.insert(o);
      const auto& nb = t.neighbours(id);
      const auto& il = t.interaction_list(id);
      EXPECT_EQ(std::set<int>(nb.begin(), nb.end()), nb_ref);
      EXPECT_EQ(nb.size(), nb_ref.size());
      EXPECT_EQ(std::set<int>(il.begin(), il.end()), il_ref);
      EXPECT_EQ(il.size(), il_ref.size());
      EXPECT_LE(il.size(), 189u);
    }
  }
}
}  // namespace

TEST(FmmOctree, CubePointsStructure) {
  auto p = random_cube(3000, 1);
  OctreeOptions o;
  o.max_leaf = 40;
  Octree t(p, o);
  check_tree(p, t);
}

TEST(FmmOctree, SpherePointsStructure) {
  auto p = random_sphere(4000, 2);
  OctreeOptions o;
  o.max_leaf = 30;
  Octree t(p, o);
  check_tree(p, t);
}

TEST(FmmOctree, DepthSelectionByMaxLeaf) {
  auto p = random_cube(2000, 3);
  for (int ml : {1, 5, 20, 64, 500, 2000}) {
    OctreeOptions o;
    o.max_leaf = ml;
    o.max_depth = 14;
    Octree t(p, o);
    std::size_t worst = 0;
    for (int id : t.level_nodes(t.leaf_level()))
      worst = std::max<std::size_t>(worst, t.nodes()[id].end - t.nodes()[id].begin);
    EXPECT_LE(worst, static_cast<std::size_t>(ml)) << "max_leaf " << ml;
    if (t.leaf_level() > 0) {  // one level less would violate max_leaf: minimality
      OctreeOptions o2;
      o2.depth = t.leaf_level() - 1;
      Octree t2(p, o2);
      std::size_t w2 = 0;
      for (int id : t2.level_nodes(t2.leaf_level()))
        w2 = std::max<std::size_t>(w2, t2.nodes()[id].end - t2.nodes()[id].begin);
      EXPECT_GT(w2, static_cast<std::size_t>(ml));
    }
  }
  OctreeOptions o;
  o.max_leaf = 2000;
  EXPECT_EQ(Octree(p, o).leaf_level(), 0);
  // max_depth caps the level
  o.max_leaf = 1;
  o.max_depth = 3;
  EXPECT_EQ(Octree(p, o).leaf_level(), 3);
  // exact depth
  OctreeOptions od;
  od.depth = 4;
  Octree t4(p, od);
  EXPECT_EQ(t4.leaf_level(), 4);
  check_tree(p, t4);
}

TEST(FmmOctree, DuplicatePointsAndSinglePoint) {
  std::vector<P3> p(50, P3{1.0, 2.0, 3.0});
  OctreeOptions o;
  o.max_leaf = 4;
  o.max_depth = 5;
  Octree t(p, o);
  EXPECT_EQ(t.leaf_level(), 5);  // duplicates cannot be split: capped
  check_tree(p, t);
  Octree t1(std::vector<P3>{{0.0, 0.0, 0.0}});
  EXPECT_EQ(t1.leaf_level(), 0);
  check_tree({{0.0, 0.0, 0.0}}, t1);
}

TEST(FmmOctree, BadInput) {
  using elliptica::InvalidArgument;
  EXPECT_THROW(Octree(std::vector<P3>{}), InvalidArgument);
  EXPECT_THROW(Octree(std::vector<P3>{{0.0, std::numeric_limits<double>::quiet_NaN(), 0.0}}), InvalidArgument);
  EXPECT_THROW(Octree(std::vector<P3>{{std::numeric_limits<double>::infinity(), 0.0, 0.0}}), InvalidArgument);
  auto p = random_cube(10, 4);
  OctreeOptions o;
  o.max_leaf = 0;
  EXPECT_THROW(Octree(p, o), InvalidArgument);
  o = {};
  o.max_depth = -1;
  EXPECT_THROW(Octree(p, o), InvalidArgument);
  o = {};
  o.max_depth = 40;
  EXPECT_THROW(Octree(p, o), InvalidArgument);
  o = {};
  o.depth = -2;
  EXPECT_THROW(Octree(p, o), InvalidArgument);
  o = {};
  o.depth = 40;
  EXPECT_THROW(Octree(p, o), InvalidArgument);
  Octree t(p);
  EXPECT_THROW(t.level_nodes(-1), InvalidArgument);
  EXPECT_THROW(t.level_nodes(t.leaf_level() + 1), InvalidArgument);
  EXPECT_THROW(t.neighbours(-1), InvalidArgument);
  EXPECT_THROW(t.interaction_list(static_cast<int>(t.nodes().size())), InvalidArgument);
}
