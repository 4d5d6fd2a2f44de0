/// @file mesh_intersect.cpp
/// Self-intersection and nesting checks of closed triangulated surfaces (validate_and_orient()
/// steps 5 and 6), on exact orientation predicates.
///
/// Triangle pairs: the closed triangles T1, T2 intersect iff an edge of one meets the other
/// (the extreme points of the convex set T1 n T2 lie on the boundary of T1 or of T2); a segment
/// meets a triangle it crosses the plane of iff the line through it passes the triangle, i.e. the
/// three orientations of the line against the triangle's edges agree (the sidedness formulation of
/// Guigue & Devillers, "Fast and robust triangle-triangle overlap test using orientation
/// predicates", J. Graphics Tools 8 (2003) 25). Coplanar cases are decided in the 2-D projection
/// along the dominant normal axis. Pairs that share a vertex or an edge are decided by what lies
/// beyond the shared part (see triangles_intersect()). All decisions use the signs of exact
/// predicates, so touching and coplanar configurations are classified exactly.
#include "bem/mesh_intersect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numbers>
#include <vector>

#include "elliptica/core/parallel.hpp"

namespace elliptica::bem::detail {

namespace {

using P2 = std::array<double, 2>;

// ---------------------------------------------------------------------------------------------
// Exact arithmetic (Shewchuk 1997): a value is an expansion, a sum of doubles ordered by
// increasing magnitude whose components do not overlap bitwise; its sign is that of its largest
// component.
// ---------------------------------------------------------------------------------------------

/// s + e == a + b exactly, s = fl(a + b) (Knuth's branch-free two-sum).
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bv = s - a;
  const double av = s - bv;
  e = (a - av) + (b - bv);
}

/// p + e == a * b exactly, p = fl(a * b) (exact unless the product underflows).
inline void two_prod(double a, double b, double& p, double& e) {
  p = a * b;
  e = std::fma(a, b, -p);
}

class Expansion {
 public:
  Expansion() { c_.reserve(32); }
  /// Adds b exactly (grow-expansion with zero elimination: Shewchuk 1997, sec. 2.5).
  void add(double b) {
    if (b == 0) return;
    std::size_t k = 0;
    double q = b;
    for (std::size_t i = 0; i < c_.size(); ++i) {
      double s, e;
      two_sum(q, c_[i], s, e);
      if (e != 0) c_[k++] = e;
      q = s;
    }
    c_.resize(k);
    if (q != 0) c_.push_back(q);
  }
  /// Adds (or subtracts) the exact product u v w.
  void add_product(double u, double v, double w, bool negate) {
    if (u == 0 || v == 0 || w == 0) return;
    double p, e, p1, e1, p2, e2;
    two_prod(u, v, p, e);     // u v = p + e
    two_prod(p, w, p1, e1);   // p w = p1 + e1
    two_prod(e, w, p2, e2);   // e w = p2 + e2
    const double s = negate ? -1.0 : 1.0;
    add(s * e2);
    add(s * e1);
    add(s * p2);
    add(s * p1);
  }
  void add_product(double u, double v, bool negate) {
    if (u == 0 || v == 0) return;
    double p, e;
    two_prod(u, v, p, e);
    add(negate ? -e : e);
    add(negate ? -p : p);
  }
  int sign() const { return c_.empty() ? 0 : (c_.back() > 0 ? 1 : -1); }

 private:
  std::vector<double> c_;
};

int orient3d_exact(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
  // rows r = (a - d, b - d, c - d), each difference exactly as hi + lo
  double r[3][3][2];
  const Vec3* p[3] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) two_sum((*p[i])[k], -d[k], r[i][k][0], r[i][k][1]);
  // det = sum over permutations s of sign(s) r0[s0] r1[s1] r2[s2]
  static constexpr int perm[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {1, 0, 2}, {2, 1, 0}};
  Expansion e;
  for (int s = 0; s < 6; ++s)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 2; ++k)
          e.add_product(r[0][perm[s][0]][i], r[1][perm[s][1]][j], r[2][perm[s][2]][k], s >= 3);
  return e.sign();
}

int orient2d_exact(const P2& a, const P2& b, const P2& c) {
  double r[2][2][2];
  const P2* p[2] = {&a, &b};
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 2; ++k) two_sum((*p[i])[k], -c[k], r[i][k][0], r[i][k][1]);
  Expansion e;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      e.add_product(r[0][0][i], r[1][1][j], false);
      e.add_product(r[0][1][i], r[1][0][j], true);
    }
  return e.sign();
}

}  // namespace

int orient3d(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
  const double adx = a[0] - d[0], ady = a[1] - d[1], adz = a[2] - d[2];
  const double bdx = b[0] - d[0], bdy = b[1] - d[1], bdz = b[2] - d[2];
  const double cdx = c[0] - d[0], cdy = c[1] - d[1], cdz = c[2] - d[2];
  const double bycz = bdy * cdz, bzcy = bdz * cdy;
  const double bzcx = bdz * cdx, bxcz = bdx * cdz;
  const double bxcy = bdx * cdy, bycx = bdy * cdx;
  const double det = adx * (bycz - bzcy) + ady * (bzcx - bxcz) + adz * (bxcy - bycx);
  // Forward error of this evaluation: <= 8 eps * perm (eps = 2^-53, one rounding per operation,
  // each difference one rounding); the absolute term covers products in the subnormal range.
  const double perm = std::abs(adx) * (std::abs(bycz) + std::abs(bzcy)) +
                      std::abs(ady) * (std::abs(bzcx) + std::abs(bxcz)) +
                      std::abs(adz) * (std::abs(bxcy) + std::abs(bycx));
  const double bound = 1e-15 * perm + 1e-300;
  if (det > bound) return 1;
  if (det < -bound) return -1;
  if (!std::isfinite(det)) return det > 0 ? 1 : (det < 0 ? -1 : 0);  // overflow: outside the contract
  return orient3d_exact(a, b, c, d);
}

int orient2d(const P2& a, const P2& b, const P2& c) {
  const double acx = a[0] - c[0], acy = a[1] - c[1], bcx = b[0] - c[0], bcy = b[1] - c[1];
  const double l = acx * bcy, r = acy * bcx;
  const double det = l - r;
  const double bound = 5e-16 * (std::abs(l) + std::abs(r)) + 1e-300;  // >= 4 eps (|l| + |r|)
  if (det > bound) return 1;
  if (det < -bound) return -1;
  if (!std::isfinite(det)) return det > 0 ? 1 : (det < 0 ? -1 : 0);
  return orient2d_exact(a, b, c);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Triangle pairs
// ---------------------------------------------------------------------------------------------

/// Axis of the largest component of the normal of (a, b, c): dropping it projects the plane of a
/// non-degenerate triangle one-to-one.
int dominant_axis(const Vec3& a, const Vec3& b, const Vec3& c) {
  const double ux = b[0] - a[0], uy = b[1] - a[1], uz = b[2] - a[2];
  const double vx = c[0] - a[0], vy = c[1] - a[1], vz = c[2] - a[2];
  const double n[3] = {std::abs(uy * vz - uz * vy), std::abs(uz * vx - ux * vz), std::abs(ux * vy - uy * vx)};
  return n[0] >= n[1] ? (n[0] >= n[2] ? 0 : 2) : (n[1] >= n[2] ? 1 : 2);
}

P2 project(const Vec3& p, int axis) {
  switch (axis) {
    case 0: return {p[1], p[2]};
    case 1: return {p[2], p[0]};
    default: return {p[0], p[1]};
  }
}

/// Closed 2-D segments [p1, p2] and [q1, q2] (non-degenerate) have a common point.
bool segments_meet_2d(const P2& p1, const P2& p2, const P2& q1, const P2& q2) {
  const int d1 = orient2d(q1, q2, p1), d2 = orient2d(q1, q2, p2);
  if (d1 * d2 > 0) return false;
  const int d3 = orient2d(p1, p2, q1), d4 = orient2d(p1, p2, q2);
  if (d3 * d4 > 0) return false;
  if (d1 == 0 && d2 == 0) {  // collinear: overlap of the ranges along a non-constant coordinate
    const int k = p1[0] != p2[0] ? 0 : 1;
    const double lo = std::max(std::min(p1[k], p2[k]), std::min(q1[k], q2[k]));
    const double hi = std::min(std::max(p1[k], p2[k]), std::max(q1[k], q2[k]));
    return lo <= hi;
  }
  return true;
}

/// p lies in the closed 2-D triangle (u, v, w) (non-degenerate).
bool in_triangle_2d(const P2& p, const P2& u, const P2& v, const P2& w) {
  const int o = orient2d(u, v, w);
  const int a = orient2d(u, v, p), b = orient2d(v, w, p), c = orient2d(w, u, p);
  return (a == 0 || a == o) && (b == 0 || b == o) && (c == 0 || c == o);
}

/// p lies in the closed 2-D wedge {apex + s (u - apex) + t (w - apex), s, t >= 0} (angle < pi).
bool in_wedge_2d(const P2& apex, const P2& u, const P2& w, const P2& p) {
  const int o = orient2d(apex, u, w);
  const int s1 = orient2d(apex, u, p), s2 = orient2d(apex, w, p);
  return (s1 == 0 || s1 == o) && (s2 == 0 || s2 == -o);
}

/// The closed segment [p, q] meets the closed triangle (u, v, w); op, oq are the orientations of
/// p and q against the triangle's plane (orient3d(u, v, w, .)).
bool segment_meets_triangle(const Vec3& p, const Vec3& q, int op, int oq, const Vec3& u, const Vec3& v,
                            const Vec3& w) {
  if (op * oq > 0) return false;
  if (op == 0 && oq == 0) {  // the segment lies in the triangle's plane
    const int ax = dominant_axis(u, v, w);
    const P2 P = project(p, ax), Q = project(q, ax), U = project(u, ax), V = project(v, ax), W = project(w, ax);
    return in_triangle_2d(P, U, V, W) || in_triangle_2d(Q, U, V, W) || segments_meet_2d(P, Q, U, V) ||
           segments_meet_2d(P, Q, V, W) || segments_meet_2d(P, Q, W, U);
  }
  // the segment crosses (or ends on) the plane at one point: inside iff the line through p, q
  // passes the closed triangle, i.e. its orientations against the three edges agree
  const int a = orient3d(p, q, u, v), b = orient3d(p, q, v, w), c = orient3d(p, q, w, u);
  return (a >= 0 && b >= 0 && c >= 0) || (a <= 0 && b <= 0 && c <= 0);
}

bool same_strict_sign(const int o[3]) {
  return (o[0] > 0 && o[1] > 0 && o[2] > 0) || (o[0] < 0 && o[1] < 0 && o[2] < 0);
}

bool disjoint_triangles_intersect(const Vec3* t1[3], const Vec3* t2[3]) {
  int o2[3], o1[3];  // o2: vertices of t1 against the plane of t2; o1: t2 against t1
  for (int i = 0; i < 3; ++i) o2[i] = orient3d(*t2[0], *t2[1], *t2[2], *t1[i]);
  if (same_strict_sign(o2)) return false;
  for (int i = 0; i < 3; ++i) o1[i] = orient3d(*t1[0], *t1[1], *t1[2], *t2[i]);
  if (same_strict_sign(o1)) return false;
  if (o2[0] == 0 && o2[1] == 0 && o2[2] == 0) {  // coplanar
    const int ax = dominant_axis(*t1[0], *t1[1], *t1[2]);
    P2 a[3], b[3];
    for (int i = 0; i < 3; ++i) {
      a[i] = project(*t1[i], ax);
      b[i] = project(*t2[i], ax);
    }
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        if (segments_meet_2d(a[i], a[(i + 1) % 3], b[j], b[(j + 1) % 3])) return true;
    return in_triangle_2d(a[0], b[0], b[1], b[2]) || in_triangle_2d(b[0], a[0], a[1], a[2]);
  }
  for (int i = 0; i < 3; ++i) {
    const int j = (i + 1) % 3;
    if (segment_meets_triangle(*t1[i], *t1[j], o2[i], o2[j], *t2[0], *t2[1], *t2[2])) return true;
    if (segment_meets_triangle(*t2[i], *t2[j], o1[i], o1[j], *t1[0], *t1[1], *t1[2])) return true;
  }
  return false;
}

/// T1 = (A, B, C), T2 = (A, D, E) share only the vertex A. T1 n T2 != {A} iff the cones of the two
/// triangles at A share a direction. Non-coplanar: T2 meets the plane of T1 in a segment [A, X]
/// with X on [Q, R] (Q the one of D, E off that plane); the triangles overlap iff X lies in the
/// wedge of T1 at A, decided by the sides of X against the planes (A, B, Q) and (A, C, Q), which
/// are those of R (orient3d(A, B, Q, X) = t orient3d(A, B, Q, R), t in (0, 1]).
bool vertex_neighbours_intersect(const Vec3& A, const Vec3& B, const Vec3& C, const Vec3& D, const Vec3& E) {
  const int oD = orient3d(A, B, C, D), oE = orient3d(A, B, C, E);
  if (oD * oE > 0) return false;  // T2 touches the plane of T1 at A only
  if (oD == 0 && oE == 0) {       // coplanar: a boundary ray of one wedge lies in the other
    const int ax = dominant_axis(A, B, C);
    const P2 a = project(A, ax), b = project(B, ax), c = project(C, ax), d = project(D, ax), e = project(E, ax);
    return in_wedge_2d(a, b, c, d) || in_wedge_2d(a, b, c, e) || in_wedge_2d(a, d, e, b) || in_wedge_2d(a, d, e, c);
  }
  const int oB = orient3d(A, D, E, B), oC = orient3d(A, D, E, C);
  if (oB * oC > 0) return false;  // T1 touches the plane of T2 at A only
  const Vec3& Q = oD != 0 ? D : E;
  const Vec3& R = oD != 0 ? E : D;
  const int s1 = orient3d(A, B, Q, R), r1 = orient3d(A, B, Q, C);
  const int s2 = orient3d(A, C, Q, R), r2 = orient3d(A, C, Q, B);
  return (s1 == 0 || s1 == r1) && (s2 == 0 || s2 == r2);
}

/// T1 = (A, B, C), T2 = (A, B, D) share the edge AB: they overlap beyond it iff they are coplanar
/// with C and D on the same side of AB (a fold onto itself).
bool edge_neighbours_intersect(const Vec3& A, const Vec3& B, const Vec3& C, const Vec3& D) {
  if (orient3d(A, B, C, D) != 0) return false;
  const int ax = dominant_axis(A, B, C);
  const P2 a = project(A, ax), b = project(B, ax);
  return orient2d(a, b, project(C, ax)) == orient2d(a, b, project(D, ax));
}

// ---------------------------------------------------------------------------------------------
// Bounding-volume hierarchy of axis-aligned boxes
// ---------------------------------------------------------------------------------------------

struct Box {
  Vec3 lo, hi;
};

bool overlap(const Box& a, const Box& b) {
  for (int k = 0; k < 3; ++k)
    if (a.hi[k] < b.lo[k] || b.hi[k] < a.lo[k]) return false;
  return true;
}

bool contains(const Box& outer, const Box& inner) {
  for (int k = 0; k < 3; ++k)
    if (inner.lo[k] < outer.lo[k] || inner.hi[k] > outer.hi[k]) return false;
  return true;
}

/// Spreads the low 21 bits of x to every third bit (bit k -> bit 3k).
std::uint64_t spread3(std::uint64_t x) {
  x &= 0x1fffffULL;
  x = (x | x << 32) & 0x1f00000000ffffULL;
  x = (x | x << 16) & 0x1f0000ff0000ffULL;
  x = (x | x << 8) & 0x100f00f00f00f00fULL;
  x = (x | x << 4) & 0x10c30c30c30c30c3ULL;
  x = (x | x << 2) & 0x1249249249249249ULL;
  return x;
}

/// Bounding-volume hierarchy of closed axis-aligned boxes: the boxes sorted along the Morton
/// (Z-order) curve of their centres, grouped kLeaf at a time into leaves, and a complete binary
/// tree over the leaves (heap layout, padded with empty leaves to a power of two), built bottom-up:
/// O(n log n) for the sort, O(n) for the tree (the "linear BVH" idea of Lauterbach et al.,
/// Comput. Graph. Forum 28 (2009) 375, with a fixed balanced topology).
class Bvh {
 public:
  explicit Bvh(const std::vector<Box>& boxes) : n_(static_cast<std::uint32_t>(boxes.size())) {
    if (n_ == 0) return;
    Box all = boxes[0];
    for (const auto& b : boxes)
      for (int k = 0; k < 3; ++k) {
        all.lo[k] = std::min(all.lo[k], b.lo[k]);
        all.hi[k] = std::max(all.hi[k], b.hi[k]);
      }
    std::vector<std::pair<std::uint64_t, std::uint32_t>> key(n_);
    for (std::uint32_t i = 0; i < n_; ++i) {
      std::uint64_t code = 0;
      for (int k = 0; k < 3; ++k) {
        const double w = all.hi[k] - all.lo[k];
        const double c = 0.5 * boxes[i].lo[k] + 0.5 * boxes[i].hi[k];
        double u = w > 0 ? (c - all.lo[k]) / w : 0.0;  // in [0, 1]
        if (!(u >= 0)) u = 0;                          // also NaN (inf / inf)
        if (u > 1) u = 1;
        const auto q = static_cast<std::uint64_t>(u * 2097151.0);
        code |= spread3(q) << k;
      }
      key[i] = {code, i};
    }
    std::sort(key.begin(), key.end());
    order_.resize(n_);
    sorted_.resize(n_);
    for (std::uint32_t i = 0; i < n_; ++i) {
      order_[i] = key[i].second;
      sorted_[i] = boxes[key[i].second];
    }
    const std::uint32_t leaves = (n_ + kLeaf - 1) / kLeaf;
    leaves_ = 1;
    while (leaves_ < leaves) leaves_ *= 2;
    const double inf = std::numeric_limits<double>::infinity();
    nodes_.assign(2 * static_cast<std::size_t>(leaves_) - 1, Box{{inf, inf, inf}, {-inf, -inf, -inf}});
    for (std::uint32_t l = 0; l < leaves; ++l) {
      Box& b = nodes_[leaves_ - 1 + l];
      for (std::uint32_t i = l * kLeaf; i < std::min(n_, (l + 1) * kLeaf); ++i) unite(b, sorted_[i]);
    }
    for (std::size_t i = leaves_ - 1; i-- > 0;) {
      nodes_[i] = nodes_[2 * i + 1];
      unite(nodes_[i], nodes_[2 * i + 2]);
    }
  }

  /// Calls f(i) for every box i that overlaps q.
  template <class F>
  void query(const Box& q, F&& f) const {
    if (n_ == 0) return;
    std::vector<std::uint32_t> stack{0};
    while (!stack.empty()) {
      const std::uint32_t a = stack.back();
      stack.pop_back();
      if (!overlap(nodes_[a], q)) continue;
      if (a >= leaves_ - 1) {
        const std::uint32_t l = a - (leaves_ - 1);
        for (std::uint32_t i = l * kLeaf; i < std::min(n_, (l + 1) * kLeaf); ++i)
          if (overlap(sorted_[i], q)) f(order_[i]);
      } else {
        stack.push_back(2 * a + 1);
        stack.push_back(2 * a + 2);
      }
    }
  }

  /// Self traversal of the tree, resumable: appends up to `max` pairs of leaves (a <= b) whose
  /// boxes overlap to `out`; returns false once the traversal is complete. Each pair of
  /// overlapping boxes i != j then lies in exactly one listed leaf pair (see for_leaf_pair()).
  struct Traversal {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{0, 0}};
  };
  bool leaf_pairs(Traversal& t, std::size_t max, std::vector<std::pair<std::uint32_t, std::uint32_t>>& out) const {
    if (n_ == 0) return false;
    while (!t.stack.empty() && out.size() < max) {
      const auto [a, b] = t.stack.back();
      t.stack.pop_back();
      if (!overlap(nodes_[a], nodes_[b])) continue;
      if (a >= leaves_ - 1) {  // a and b are at the same depth: both leaves
        out.emplace_back(a - (leaves_ - 1), b - (leaves_ - 1));
      } else if (a == b) {
        t.stack.emplace_back(2 * a + 1, 2 * a + 2);
        t.stack.emplace_back(2 * a + 2, 2 * a + 2);
        t.stack.emplace_back(2 * a + 1, 2 * a + 1);
      } else {
        t.stack.emplace_back(2 * a + 2, 2 * b + 2);
        t.stack.emplace_back(2 * a + 2, 2 * b + 1);
        t.stack.emplace_back(2 * a + 1, 2 * b + 2);
        t.stack.emplace_back(2 * a + 1, 2 * b + 1);
      }
    }
    return !t.stack.empty();
  }
  /// Calls f(i, j) for the pairs of distinct boxes with overlapping boxes in leaves (la, lb).
  template <class F>
  void for_leaf_pair(std::uint32_t la, std::uint32_t lb, F&& f) const {
    const std::uint32_t a0 = la * kLeaf, a1 = std::min(n_, a0 + kLeaf);
    const std::uint32_t b0 = lb * kLeaf, b1 = std::min(n_, b0 + kLeaf);
    if (la == lb) {
      for (std::uint32_t i = a0; i < a1; ++i)
        for (std::uint32_t j = i + 1; j < a1; ++j)
          if (overlap(sorted_[i], sorted_[j])) f(order_[i], order_[j]);
      return;
    }
    // only the items of each leaf that overlap the other leaf's box can pair up
    const Box& boxa = nodes_[leaves_ - 1 + la];
    const Box& boxb = nodes_[leaves_ - 1 + lb];
    std::uint32_t ia[kLeaf], ib[kLeaf];
    std::uint32_t na = 0, nb = 0;
    for (std::uint32_t i = a0; i < a1; ++i)
      if (overlap(sorted_[i], boxb)) ia[na++] = i;
    if (na == 0) return;
    for (std::uint32_t j = b0; j < b1; ++j)
      if (overlap(sorted_[j], boxa)) ib[nb++] = j;
    for (std::uint32_t x = 0; x < na; ++x)
      for (std::uint32_t y = 0; y < nb; ++y)
        if (overlap(sorted_[ia[x]], sorted_[ib[y]])) f(order_[ia[x]], order_[ib[y]]);
  }

 private:
  static constexpr std::uint32_t kLeaf = 8;
  static void unite(Box& a, const Box& b) {
    for (int k = 0; k < 3; ++k) {
      a.lo[k] = std::min(a.lo[k], b.lo[k]);
      a.hi[k] = std::max(a.hi[k], b.hi[k]);
    }
  }
  std::uint32_t n_ = 0, leaves_ = 0;
  std::vector<std::uint32_t> order_;  ///< item at each sorted position
  std::vector<Box> sorted_;           ///< boxes in sorted order
  std::vector<Box> nodes_;            ///< heap layout: children of i are 2i+1, 2i+2; leaves last
};

Box triangle_box(const std::vector<Vec3>& v, const Tri& t) {
  Box b{v[static_cast<std::size_t>(t[0])], v[static_cast<std::size_t>(t[0])]};
  for (int j = 1; j < 3; ++j)
    for (int k = 0; k < 3; ++k) {
      b.lo[k] = std::min(b.lo[k], v[static_cast<std::size_t>(t[j])][k]);
      b.hi[k] = std::max(b.hi[k], v[static_cast<std::size_t>(t[j])][k]);
    }
  return b;
}

/// The vertices of m scaled by the power of two that brings the largest |coordinate| into
/// [1/2, 1) (exact unless a coordinate becomes subnormal).
std::vector<Vec3> scaled_vertices(const Mesh& m) {
  double amax = 0;
  for (const auto& p : m.vertices)
    for (double x : p) amax = std::max(amax, std::abs(x));
  int ex = 0;
  if (amax > 0) std::frexp(amax, &ex);
  std::vector<Vec3> v(m.vertices.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    for (int k = 0; k < 3; ++k) v[i][k] = std::ldexp(m.vertices[i][k], -ex);
  return v;
}

/// Winding number of the triangles `elems` of m (vertices v) around x (Van Oosterom &
/// Strackee 1983).
double winding_number_of(const Mesh& m, const std::vector<Vec3>& v, const std::vector<std::size_t>& elems,
                         const Vec3& x) {
  double omega = 0;
  for (auto e : elems) {
    const auto& t = m.triangles[e];
    double r[3][3], len[3];
    for (int a = 0; a < 3; ++a) {
      for (int d = 0; d < 3; ++d) r[a][d] = v[static_cast<std::size_t>(t[a])][d] - x[d];
      len[a] = std::sqrt(r[a][0] * r[a][0] + r[a][1] * r[a][1] + r[a][2] * r[a][2]);
    }
    const double det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1]) -
                       r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0]) +
                       r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
    auto dt = [&r](int a, int b) { return r[a][0] * r[b][0] + r[a][1] * r[b][1] + r[a][2] * r[b][2]; };
    const double den = len[0] * len[1] * len[2] + dt(0, 1) * len[2] + dt(0, 2) * len[1] + dt(1, 2) * len[0];
    omega += 2 * std::atan2(det, den);
  }
  return omega / (4 * std::numbers::pi);
}

}  // namespace

bool triangles_intersect(const std::vector<Vec3>& v, const Tri& t1, const Tri& t2) {
  int shared = 0, i1 = -1, j1 = -1, i2 = -1;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (t1[i] == t2[j]) {
        ++shared;
        if (i1 < 0) {
          i1 = i;
          j1 = j;
        } else {
          i2 = i;
        }
      }
  auto P = [&v](std::int32_t idx) -> const Vec3& { return v[static_cast<std::size_t>(idx)]; };
  if (shared == 0) {
    const Vec3* a[3] = {&P(t1[0]), &P(t1[1]), &P(t1[2])};
    const Vec3* b[3] = {&P(t2[0]), &P(t2[1]), &P(t2[2])};
    return disjoint_triangles_intersect(a, b);
  }
  if (shared == 1)
    return vertex_neighbours_intersect(P(t1[i1]), P(t1[(i1 + 1) % 3]), P(t1[(i1 + 2) % 3]), P(t2[(j1 + 1) % 3]),
                                       P(t2[(j1 + 2) % 3]));
  if (shared == 2) {
    const int c = 3 - i1 - i2;  // the vertex of t1 off the shared edge
    std::int32_t d = -1;
    for (int j = 0; j < 3; ++j)
      if (t2[j] != t1[i1] && t2[j] != t1[i2]) d = t2[j];
    return edge_neighbours_intersect(P(t1[i1]), P(t1[i2]), P(t1[c]), P(d));
  }
  return true;  // same vertex set: the triangles coincide
}

std::vector<Vec3> predicate_coordinates(const Mesh& m) {
  std::vector<Vec3> v = scaled_vertices(m);
  for (auto& p : v)
    for (double& x : p)
      if (std::abs(x) < 0x1p-200) x = 0.0;
  return v;
}

std::optional<ElementPair> find_intersecting_elements(const Mesh& m) {
  const std::size_t ne = m.triangles.size();
  if (ne < 2) return std::nullopt;
  const std::vector<Vec3> v = predicate_coordinates(m);
  std::vector<Box> boxes(ne);
  for (std::size_t e = 0; e < ne; ++e) boxes[e] = triangle_box(v, m.triangles[e]);
  const Bvh bvh(boxes);

  // Leaf pairs come in batches (bounded memory); each batch is tested in parallel, and the search
  // stops after the first batch with an intersection, reporting its smallest pair (deterministic:
  // the batches do not depend on the number of threads).
  constexpr std::size_t kBatch = 8192;
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  Bvh::Traversal trav;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> batch;
  ElementPair best{kNone, kNone};
  std::mutex mutex;
  bool more = true;
  while (more && best.first == kNone) {
    batch.clear();
    more = bvh.leaf_pairs(trav, kBatch, batch);
    ParallelErrors errors;
    const long nb = static_cast<long>(batch.size());
#pragma omp parallel for schedule(dynamic, 64)
    for (long p = 0; p < nb; ++p)
      errors.run([&] {
        ElementPair local{kNone, kNone};
        bvh.for_leaf_pair(batch[static_cast<std::size_t>(p)].first, batch[static_cast<std::size_t>(p)].second,
                          [&](std::uint32_t i0, std::uint32_t j0) {
                            const std::size_t i = std::min(i0, j0), j = std::max(i0, j0);
                            if (i > local.first || (i == local.first && j >= local.second)) return;
                            if (triangles_intersect(v, m.triangles[i], m.triangles[j])) local = {i, j};
                          });
        if (local.first == kNone) return;
        std::lock_guard<std::mutex> lk(mutex);
        if (local.first < best.first || (local.first == best.first && local.second < best.second)) best = local;
      });
    errors.rethrow();
  }
  if (best.first == kNone) return std::nullopt;
  return best;
}

std::optional<ElementPair> find_nested_components(const Mesh& m,
                                                  const std::vector<std::vector<std::size_t>>& components) {
  const std::size_t nc = components.size();
  if (nc < 2) return std::nullopt;
  const std::vector<Vec3> v = scaled_vertices(m);  // no overflow in the solid angles
  std::vector<Box> boxes(nc);
  for (std::size_t c = 0; c < nc; ++c) {
    boxes[c] = triangle_box(v, m.triangles[components[c].front()]);
    for (auto e : components[c]) {
      const Box b = triangle_box(v, m.triangles[e]);
      for (int k = 0; k < 3; ++k) {
        boxes[c].lo[k] = std::min(boxes[c].lo[k], b.lo[k]);
        boxes[c].hi[k] = std::max(boxes[c].hi[k], b.hi[k]);
      }
    }
  }
  const Bvh bvh(boxes);
  std::vector<std::uint32_t> outer;
  for (std::size_t a = 0; a < nc; ++a) {
    // probe point: the centroid of the component's first element (on its surface, off every
    // other component since the components do not intersect)
    const auto& t = m.triangles[components[a].front()];
    Vec3 x{};
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) x[k] += v[static_cast<std::size_t>(t[j])][k] / 3.0;
    outer.clear();
    bvh.query(boxes[a], [&](std::uint32_t b) {
      if (b != a && contains(boxes[b], boxes[a])) outer.push_back(b);
    });
    std::sort(outer.begin(), outer.end());
    for (auto b : outer)
      if (winding_number_of(m, v, components[b], x) > 0.5) return ElementPair{a, b};
  }
  return std::nullopt;
}

}  // namespace elliptica::bem::detail
