// The slab decomposition (slab.hpp): ownership of planes and points, ghost destinations.
#include "ewald/slab.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::ewald::detail {

void SlabLayout::validate() const {
  if (M < 1) throw InvalidArgument("slab layout: " + std::to_string(M) + " grid planes (at least 1)");
  if (!(L > 0) || !std::isfinite(L)) throw InvalidArgument("slab layout: box length " + std::to_string(L) + " (must be > 0)");
  if (start.size() < 2) throw InvalidArgument("slab layout: no ranks");
  if (start.front() != 0 || start.back() != M)
    throw InvalidArgument("slab layout: the plane starts must run from 0 to M = " + std::to_string(M));
  for (std::size_t r = 0; r + 1 < start.size(); ++r)
    if (start[r + 1] < start[r]) throw InvalidArgument("slab layout: plane starts decrease at rank " + std::to_string(r));
}

int SlabLayout::owner_of_plane(int g) const {
  // the last rank whose start is <= g (ranks without planes share their start with the next)
  const auto it = std::upper_bound(start.begin(), start.end() - 1, g);
  return static_cast<int>(it - start.begin()) - 1;
}

int SlabLayout::plane_of(double x) const {
  // window_offset's clamp (internal.hpp), with inv_h = M / L
  const double t = std::clamp(x * (double(M) / L), 0.0, std::nextafter(double(M), 0.0));
  return static_cast<int>(std::floor(t));
}

SlabLayout block_slabs(int M, double L, int ranks) {
  if (ranks < 1) throw InvalidArgument("slab layout: " + std::to_string(ranks) + " ranks (at least 1)");
  SlabLayout s;
  s.M = M;
  s.L = L;
  const int b = (M + ranks - 1) / ranks;
  s.start.resize(std::size_t(ranks) + 1);
  for (int r = 0; r <= ranks; ++r) s.start[std::size_t(r)] = std::min(M, r * b);
  s.validate();
  return s;
}

std::vector<int> slab_neighbours(const SlabLayout& s, int r) {
  std::vector<int> out;
  const int R = s.ranks();
  if (s.planes(r) == 0) return out;
  for (int step : {-1, 1}) {
    int q = r;
    do q = (q + step + R) % R;
    while (q != r && s.planes(q) == 0);
    if (q != r && std::find(out.begin(), out.end(), q) == out.end()) out.push_back(q);
  }
  return out;
}

double slab_distance(const SlabLayout& s, double x, int r) {
  const double a = s.lo(r), b = s.hi(r);
  double d = s.L;
  for (const double y : {x - s.L, x, x + s.L}) {  // the nearest periodic image of x
    if (y >= a && y < b) return 0.0;
    d = std::min({d, std::abs(a - y), std::abs(y - b)});
  }
  return d;
}

void ghost_ranks(const SlabLayout& s, double x, double rc, std::vector<int>& out) {
  const int R = s.ranks(), o = s.owner(x);
  // in plane units: x's window centre t (as plane_of), the reach r_c / h with its margin
  const double t = std::clamp(x * (double(s.M) / s.L), 0.0, std::nextafter(double(s.M), 0.0));
  const double reach = (rc * (1 + 1e-12) + 1e-12 * s.L) * (double(s.M) / s.L);
  const std::size_t first = out.size();
  auto add = [&](int r) {
    for (std::size_t k = first; k < out.size(); ++k)
      if (out[k] == r) return;
    out.push_back(r);
  };
  // rightwards from the owner: the gap from t to each rank's first plane (unwrapped past the end
  // of the box) grows with k, so the scan stops at the first rank beyond reach
  for (int k = 1; k < R; ++k) {
    const int r = (o + k) % R;
    if (s.planes(r) == 0) continue;
    const double gap = double(s.start[std::size_t(r)] + (r < o ? s.M : 0)) - t;
    if (gap >= reach) break;
    add(r);
  }
  for (int k = 1; k < R; ++k) {  // leftwards: the gap from each rank's plane end to t
    const int r = ((o - k) % R + R) % R;
    if (s.planes(r) == 0) continue;
    const double gap = t - double(s.start[std::size_t(r) + 1] - (r > o ? s.M : 0));
    if (gap >= reach) break;
    add(r);
  }
}

namespace {

int wrap(int i, int n) { return ((i % n) + n) % n; }

// The reach of a rank's padded planes: [lo, hi) of px (P2G's layout, nx + 2P planes).
void reach(const SlabLayout& s, int rank, int P, int& lo, int& hi) {
  const int nx = s.planes(rank);
  lo = std::max(0, P - SlabLayout::ghost_left(P));
  hi = std::min(nx + 2 * P, nx + P + SlabLayout::ghost_right(P));
}

// Padded plane px (interleaved (M2 + 2P, M3 + 2P, nc)) folded along y and z, added into
// out (nc, M2, M3).
template <class T>
void fold_yz(const T* plane, int P, const std::array<int, 3>& M, int nc, T* out) {
  const int PM2 = M[1] + 2 * P, PM3 = M[2] + 2 * P;
  const std::size_t S2 = std::size_t(PM3) * std::size_t(nc), plane_c = std::size_t(M[1]) * std::size_t(M[2]);
  for (int py = 0; py < PM2; ++py) {
    const int iy = wrap(py - P, M[1]);
    const T* src = plane + std::size_t(py) * S2;
    for (int pz = 0; pz < PM3; ++pz) {
      const int iz = wrap(pz - P, M[2]);
      for (int c = 0; c < nc; ++c)
        out[std::size_t(c) * plane_c + std::size_t(iy) * std::size_t(M[2]) + std::size_t(iz)] += src[std::size_t(pz) * std::size_t(nc) + std::size_t(c)];
    }
  }
}

// (nc, M2, M3) values added into (or, add false, written to) local plane ix of the grid.
template <class T>
void to_grid(const T* v, int ix, const std::array<int, 3>& M, int nc, const SlabGrid<T>& g, bool add) {
  for (int c = 0; c < nc; ++c)
    for (int iy = 0; iy < M[1]; ++iy) {
      T* row = g.data + std::size_t(c) * g.comp_stride + (std::size_t(ix) * std::size_t(M[1]) + std::size_t(iy)) * g.row_stride;
      const T* src = v + (std::size_t(c) * std::size_t(M[1]) + std::size_t(iy)) * std::size_t(M[2]);
      for (int iz = 0; iz < M[2]; ++iz) row[iz] = add ? row[iz] + src[iz] : src[iz];
    }
}

// Local plane ix of the grid as (nc, M2, M3), appended to out.
template <class T>
void from_grid(int ix, const std::array<int, 3>& M, int nc, const SlabGrid<T>& g, std::vector<T>& out) {
  for (int c = 0; c < nc; ++c)
    for (int iy = 0; iy < M[1]; ++iy) {
      const T* row = g.data + std::size_t(c) * g.comp_stride + (std::size_t(ix) * std::size_t(M[1]) + std::size_t(iy)) * g.row_stride;
      out.insert(out.end(), row, row + M[2]);
    }
}

}  // namespace

template <class T>
void slab_fold(const SlabLayout& s, int rank, int P, const std::array<int, 3>& M, int nc, const T* pad,
               const SlabGrid<T>& grid, std::vector<GhostPlanes<T>>& to_rank) {
  const int nx = s.planes(rank), x0 = s.start[std::size_t(rank)];
  if (nx == 0) return;  // no planes, no points
  const std::size_t S1 = std::size_t(M[1] + 2 * P) * std::size_t(M[2] + 2 * P) * std::size_t(nc);
  const std::size_t plane = std::size_t(nc) * std::size_t(M[1]) * std::size_t(M[2]);
  std::vector<T> buf(plane);
  // the rank's own planes first (written), then the reach's planes (added)
  for (int px = P; px < P + nx; ++px) {
    std::fill(buf.begin(), buf.end(), T(0));
    fold_yz(pad + std::size_t(px) * S1, P, M, nc, buf.data());
    to_grid(buf.data(), px - P, M, nc, grid, false);
  }
  int lo = 0, hi = 0;
  reach(s, rank, P, lo, hi);
  for (int px = lo; px < hi; ++px) {
    if (px >= P && px < P + nx) continue;
    std::fill(buf.begin(), buf.end(), T(0));
    fold_yz(pad + std::size_t(px) * S1, P, M, nc, buf.data());
    const int g = wrap(x0 + px - P, M[0]), o = s.owner_of_plane(g);
    if (o == rank) {
      to_grid(buf.data(), g - x0, M, nc, grid, true);
    } else {
      GhostPlanes<T>& out = to_rank[std::size_t(o)];
      out.plane.push_back(g);
      out.values.insert(out.values.end(), buf.begin(), buf.end());
    }
  }
}

template <class T>
void slab_add(const SlabLayout& s, int rank, const std::array<int, 3>& M, int nc, const GhostPlanes<T>& in,
              const SlabGrid<T>& grid) {
  const int x0 = s.start[std::size_t(rank)], nx = s.planes(rank);
  const std::size_t plane = std::size_t(nc) * std::size_t(M[1]) * std::size_t(M[2]);
  for (std::size_t k = 0; k < in.plane.size(); ++k) {
    const int ix = in.plane[k] - x0;
    if (ix < 0 || ix >= nx)
      throw InvalidArgument("slab_add: plane " + std::to_string(in.plane[k]) + " is not rank " + std::to_string(rank) + "'s");
    to_grid(in.values.data() + k * plane, ix, M, nc, grid, true);
  }
}

std::vector<int> slab_planes_needed(const SlabLayout& s, int rank, int P) {
  std::vector<int> out;
  const int nx = s.planes(rank), x0 = s.start[std::size_t(rank)];
  if (nx == 0) return out;
  int lo = 0, hi = 0;
  reach(s, rank, P, lo, hi);
  for (int px = lo; px < hi; ++px) {
    const int g = wrap(x0 + px - P, s.M);
    if (s.owner_of_plane(g) != rank && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
  return out;
}

template <class T>
void slab_planes_for(const SlabLayout& s, int rank, int dest, int P, const std::array<int, 3>& M, int nc,
                     const SlabGrid<T>& grid, GhostPlanes<T>& out) {
  const int x0 = s.start[std::size_t(rank)];
  for (int g : slab_planes_needed(s, dest, P))
    if (s.owner_of_plane(g) == rank) {
      out.plane.push_back(g);
      from_grid(g - x0, M, nc, grid, out.values);
    }
}

template <class T>
void slab_unfold(const SlabLayout& s, int rank, int P, const std::array<int, 3>& M, int nc, const SlabGrid<T>& grid,
                 const std::vector<const GhostPlanes<T>*>& received, std::vector<T>& pad) {
  const int nx = s.planes(rank), x0 = s.start[std::size_t(rank)];
  const int PM2 = M[1] + 2 * P, PM3 = M[2] + 2 * P;
  const std::size_t S2 = std::size_t(PM3) * std::size_t(nc), S1 = std::size_t(PM2) * S2;
  const std::size_t plane = std::size_t(nc) * std::size_t(M[1]) * std::size_t(M[2]);
  pad.assign(std::size_t(nx + 2 * P) * S1, T(0));
  if (nx == 0) return;
  int lo = 0, hi = 0;
  reach(s, rank, P, lo, hi);
  std::vector<T> own;
  for (int px = lo; px < hi; ++px) {
    const int g = wrap(x0 + px - P, M[0]);
    const T* src = nullptr;
    if (s.owner_of_plane(g) == rank) {
      own.clear();
      from_grid(g - x0, M, nc, grid, own);
      src = own.data();
    } else {
      for (const GhostPlanes<T>* r : received) {
        for (std::size_t k = 0; k < r->plane.size() && !src; ++k)
          if (r->plane[k] == g) src = r->values.data() + k * plane;
        if (src) break;
      }
      if (!src) throw InvalidArgument("slab_unfold: plane " + std::to_string(g) + " was not received by rank " + std::to_string(rank));
    }
    T* dst = pad.data() + std::size_t(px) * S1;
    for (int py = 0; py < PM2; ++py) {
      const int iy = wrap(py - P, M[1]);
      for (int pz = 0; pz < PM3; ++pz) {
        const int iz = wrap(pz - P, M[2]);
        for (int c = 0; c < nc; ++c)
          dst[std::size_t(py) * S2 + std::size_t(pz) * std::size_t(nc) + std::size_t(c)] =
              src[(std::size_t(c) * std::size_t(M[1]) + std::size_t(iy)) * std::size_t(M[2]) + std::size_t(iz)];
      }
    }
  }
}

#define ELLIPTICA_SLAB_INSTANTIATE(T)                                                                              \
  template void slab_fold<T>(const SlabLayout&, int, int, const std::array<int, 3>&, int, const T*, const SlabGrid<T>&, \
                             std::vector<GhostPlanes<T>>&);                                                        \
  template void slab_add<T>(const SlabLayout&, int, const std::array<int, 3>&, int, const GhostPlanes<T>&,           \
                            const SlabGrid<T>&);                                                                   \
  template void slab_planes_for<T>(const SlabLayout&, int, int, int, const std::array<int, 3>&, int,                \
                                   const SlabGrid<T>&, GhostPlanes<T>&);                                           \
  template void slab_unfold<T>(const SlabLayout&, int, int, const std::array<int, 3>&, int, const SlabGrid<T>&,     \
                               const std::vector<const GhostPlanes<T>*>&, std::vector<T>&);
ELLIPTICA_SLAB_INSTANTIATE(float)
ELLIPTICA_SLAB_INSTANTIATE(double)

}  // namespace elliptica::ewald::detail
