// The slab decomposition of the distributed spectral Ewald sum (seed 000, section 6.5; issue 30),
// the parts that need no MPI: which rank owns which grid planes and points along the slab axis,
// and which ranks need a point as a ghost source for their real-space sum (MPI-GHOST-SOURCE).
// The MPI exchanges built on it are in mpi/ (compiled only with ELLIPTICA_HAVE_MPI).
//
// Conventions: the slab axis is the first axis of the (rotated) box, of length L with M grid
// planes of spacing h = L / M. Rank r owns planes [start[r], start[r + 1]) (a rank may own none:
// FFTW-MPI's block distribution gives the trailing ranks fewer planes, or none) and the points
// whose window centre t = x / h, clamped to [0, M) exactly as window_offset (internal.hpp) clamps
// it, lies in those planes: the point's plane is floor(t).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace elliptica::ewald::detail {

struct SlabLayout {
  int M = 1;               ///< grid planes along the slab axis, >= 1
  double L = 1;            ///< box length along the slab axis, > 0
  std::vector<int> start;  ///< ranks + 1 plane starts: start[0] = 0, non-decreasing, start[ranks] = M

  /// Checks the fields (throws InvalidArgument naming the problem).
  void validate() const;
  int ranks() const { return static_cast<int>(start.size()) - 1; }
  int planes(int r) const { return start[std::size_t(r) + 1] - start[std::size_t(r)]; }
  /// The rank that owns grid plane g (0 <= g < M); ranks without planes own none.
  int owner_of_plane(int g) const;
  /// The plane of a coordinate x in [0, L) (wrapped by the caller): floor(clamp(x M / L, 0, M-)).
  int plane_of(double x) const;
  /// The rank that owns a point at x in [0, L).
  int owner(double x) const { return owner_of_plane(plane_of(x)); }
  /// The grid planes a window of support P reaches beyond the plane of its point: the window of
  /// a point of plane p covers planes within [p - ghost_left(P), p + ghost_right(P)]. From
  /// window_offset: its first plane is floor(t - P/2) + 1 with t in [p, p + 1); the rounding of
  /// t - P/2 can reach the next integer (t an ulp below p + 1), hence one plane more on the
  /// right for even P: even P: P/2 - 1 and P/2 + 1; odd P: (P - 1)/2 and (P + 1)/2 (P in all).
  static int ghost_left(int P) { return P % 2 == 0 ? P / 2 - 1 : (P - 1) / 2; }
  static int ghost_right(int P) { return P % 2 == 0 ? P / 2 + 1 : (P + 1) / 2; }
  /// The interval [lo, hi) of rank r along the slab axis: [start[r] h, start[r + 1] h).
  double lo(int r) const { return L * double(start[std::size_t(r)]) / double(M); }
  double hi(int r) const { return L * double(start[std::size_t(r) + 1]) / double(M); }
};

/// FFTW-MPI's default distribution of M planes over R ranks: blocks of ceil(M / R) planes, the
/// last ones shorter or empty (M = 9, R = 4: 3, 3, 3, 0). The distributed plan takes the starts
/// that FFTW reports; this is the same rule, for tests and for planning without MPI.
SlabLayout block_slabs(int M, double L, int ranks);

/// The neighbours of rank r along the slab axis: the nearest ranks with planes before and after
/// it (periodically), distinct and other than r; none for a rank without planes. A symmetric
/// relation (the neighbour-only exchanges rely on it). With FFTW-MPI's trailing empty ranks
/// (planes 3, 3, 3, 0), the last rank with planes and rank 0 are neighbours.
std::vector<int> slab_neighbours(const SlabLayout& s, int r);

/// The periodic distance along the slab axis from x in [0, L) to rank r's interval (0 inside it).
double slab_distance(const SlabLayout& s, double x, int r);

/// MPI-GHOST-SOURCE: the ranks other than owner(x) that own planes and whose interval lies
/// within reach of x (periodically): reach = r_c (1 + 1e-12) + 1e-12 L, a margin over the
/// rounding of the ownership rule and of the pair test, so that every source within r_c of a
/// rank's points (in three dimensions, hence along the slab axis) is held by that rank. Ranks are
/// scanned outwards in both directions from the owner until the distance passes the reach, so a
/// point costs O(ranks it goes to). Appends to `out` (each rank once, ascending order not
/// guaranteed).
void ghost_ranks(const SlabLayout& s, double x, double rc, std::vector<int>& out);

}  // namespace elliptica::ewald::detail

namespace elliptica::ewald::detail {

/// Grid planes sent between ranks by MPI-GHOST-GRID: plane[k] is a global plane index along the
/// slab axis, its values at values[k * nc M2 M3 ...] as (nc, M2, M3) (component-major, z fastest).
template <class T>
struct GhostPlanes {
  std::vector<int> plane;
  std::vector<T> values;
};

/// The FFT input of one rank: nc components of its planes, plane ix (local), row iy at
/// data + c * comp_stride + (ix * M2 + iy) * row_stride, M3 values (row_stride >= M3: FFTW-MPI's
/// padded rows).
template <class T>
struct SlabGrid {
  T* data = nullptr;
  std::size_t row_stride = 0, comp_stride = 0;
};

/// MPI-GHOST-GRID, the P2G half (seed 000, section 6.5): the padded grid of rank `rank` (P2G's
/// layout: planes px = 0 .. nx + 2P - 1 for global planes x0 + px - P, each (M2 + 2P, M3 + 2P,
/// nc), component-interleaved, nx and x0 the rank's planes) folded periodically along y and z;
/// along x the rank's own planes are written into `grid` (overwritten: no zeroing needed), the
/// planes of the window's reach [P - ghost_left(P), P) and [nx + P, nx + P + ghost_right(P))
/// added where they belong: into `grid` when this rank owns them (one rank, or a reach around
/// the box), else appended to to_rank[owner] (to_rank: ranks() lists). Planes outside the reach
/// are not read (P2G of owned points never writes them).
template <class T>
void slab_fold(const SlabLayout& s, int rank, int P, const std::array<int, 3>& M, int nc, const T* pad,
               const SlabGrid<T>& grid, std::vector<GhostPlanes<T>>& to_rank);

/// Adds received ghost planes (of this rank's planes) into its grid.
template <class T>
void slab_add(const SlabLayout& s, int rank, const std::array<int, 3>& M, int nc, const GhostPlanes<T>& in,
              const SlabGrid<T>& grid);

/// MPI-GHOST-GRID, the G2P half: the planes rank `rank` must receive to interpolate at its
/// points, as (global plane, owner) pairs, and the planes it must send (its own planes that
/// other ranks need: for each destination rank, the global planes). Planes are those of the
/// window's reach around each rank's slab.
std::vector<int> slab_planes_needed(const SlabLayout& s, int rank, int P);
/// Copies this rank's planes that `dest` needs (slab_planes_needed(dest)) into a GhostPlanes
/// (component-major (nc, M2, M3)).
template <class T>
void slab_planes_for(const SlabLayout& s, int rank, int dest, int P, const std::array<int, 3>& M, int nc,
                     const SlabGrid<T>& grid, GhostPlanes<T>& out);
/// The padded grid of rank `rank` for G2P (P2G's layout, nx + 2P planes, nc interleaved): the
/// planes of the reach from its own grid and from the received planes (any order), unfolded
/// periodically along y and z; planes beyond the reach zero. pad is resized.
template <class T>
void slab_unfold(const SlabLayout& s, int rank, int P, const std::array<int, 3>& M, int nc, const SlabGrid<T>& grid,
                 const std::vector<const GhostPlanes<T>*>& received, std::vector<T>& pad);

}  // namespace elliptica::ewald::detail
