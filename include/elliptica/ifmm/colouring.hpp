#pragma once
/// @file colouring.hpp
/// Greedy colouring of the non-empty boxes of one octree level with a separation sigma (seed 001,
/// section 3.4, Algorithm 3): two boxes of one colour are at least sigma apart in the box
/// distance dist(a, b) = max_d |coord_a[d] - coord_b[d]| (neighbours are at distance 1). The
/// IFMM processes the boxes of one colour in parallel: sigma = 3 keeps the neighbour lists of two
/// such boxes disjoint, sigma = 6 also their neighbours' interaction lists (seed 001, section 3.1,
/// remarks 6-9).
///
/// Algorithm (O(n) for n boxes and fixed sigma): take the first uncoloured box (i0, j0, k0) in the
/// order (k, j, i); the new colour may use the lines j = j0 + a sigma, k = k0 + b sigma (a, b
/// integers of either sign); along each such line the uncoloured boxes are taken greedily in
/// increasing i, each at least sigma after the previous one taken. Boxes on different lines of a
/// colour differ by a nonzero multiple of sigma in j or k, boxes on one line by >= sigma in i.
/// At most sigma^3 colours when the level is complete (then the colours are the sub-grids of
/// stride sigma, the optimum), usually far fewer boxes per colour otherwise.
#include <array>
#include <vector>

namespace elliptica::ifmm {

/// colours[c] = indices (into coords) of the boxes of colour c, each list ascending, the colours in
/// the order they are created. sigma >= 1 (sigma = 1: one colour); sigma = 0: one box per colour
/// in the order given (sequential processing). Throws InvalidArgument for sigma < 0, negative
/// coordinates or two boxes with the same coordinates.
std::vector<std::vector<int>> colour_boxes(const std::vector<std::array<int, 3>>& coords, int sigma);

/// dist(a, b) of the file comment.
int box_distance(const std::array<int, 3>& a, const std::array<int, 3>& b);

}  // namespace elliptica::ifmm
