#pragma once
/// @file octree.hpp
/// Uniform-depth octree over points in 3D (the tree of the FMM, the IFMM and the block-diagonal
/// preconditioner; seed 001 uses levels 0..l with the leaf level l and a chosen level l_BD).
///
/// Level 0 is one cube enclosing all points (a cube, slightly enlarged); level j splits it into
/// 2^j boxes per axis. Only non-empty boxes are stored. Points are permuted into tree order so
/// that every node owns a contiguous range [begin, end) of permutation().
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace elliptica::fmm {

struct OctreeOptions {
  int max_leaf = 64;    ///< mu: the depth is the smallest with at most max_leaf points per leaf
  int max_depth = 12;   ///< cap on the leaf level (a leaf may then hold more than max_leaf points)
  int depth = -1;       ///< if >= 0: use exactly this leaf level (max_leaf ignored)
};

struct OctreeNode {
  int level = 0;
  std::array<int, 3> coord{0, 0, 0};      ///< integer box coordinates at its level
  std::array<double, 3> center{0, 0, 0};
  double half_width = 0;
  int parent = -1;
  std::array<int, 8> children{-1, -1, -1, -1, -1, -1, -1, -1};  ///< -1 where the child box is empty
  std::int64_t begin = 0, end = 0;        ///< range in permutation()
  bool is_leaf() const;
};

class Octree {
 public:
  /// points: N x 3 row-major (x, y, z). Throws InvalidArgument on N == 0, NaN/Inf, bad options.
  Octree(const std::vector<std::array<double, 3>>& points, const OctreeOptions& opt = {});

  const std::vector<OctreeNode>& nodes() const;
  /// tree order -> original point index
  const std::vector<std::int64_t>& permutation() const;
  int leaf_level() const;
  /// indices (into nodes()) of the non-empty boxes at level l, l = 0..leaf_level()
  const std::vector<int>& level_nodes(int l) const;
  /// Same-level boxes adjacent to node (sharing a face, edge or corner), the node itself included.
  const std::vector<int>& neighbours(int node) const;
  /// Interaction list (M2L): children of the parent's neighbours that are not adjacent to node.
  const std::vector<int>& interaction_list(int node) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace elliptica::fmm
