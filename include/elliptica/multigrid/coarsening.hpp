#pragma once
/// @file coarsening.hpp
/// Geometric coarsening of a structured (tensor-product) grid of any size: which axes to coarsen
/// on a level (full or semi-coarsening) and the interpolation P from the coarse to the fine grid,
/// for vertex-centred and cell-centred unknowns. Hierarchy::geometric (hierarchy.hpp) uses these
/// steps; the Galerkin product P^T A P makes the coarse operator (so a non-uniform coarse grid,
/// e.g. a last coarse interval of one fine interval, needs no special operator).
///
/// Axis conventions (per axis, n unknowns, h the fine spacing, coordinates in units of h):
///  - Vertex: N = n + 1 intervals, unknowns at the interior points g = 1..n (Dirichlet points
///    0 and N excluded). Coarse points are the multiples of c strictly inside (0, N); the coarse
///    grid's points are 0, c, 2c, ..., c floor(n / c), N, so when c does not divide N the last
///    coarse interval has N mod c fine intervals (1 for c = 2 and n even). n_c = floor(n / c);
///    where c divides N this is the seed's N / c - 1 and P is bit-for-bit the seed's.
///  - Cell: n cells, unknown i at the cell centre i + 1/2. Coarse cell I is the union of the fine
///    cells cI .. cI + c - 1, the last coarse cell also taking the n mod c cells left over (a cell
///    of 3 fine cells for c = 2 and n odd). n_c = floor(n / c).
/// An axis is coarsenable when n_c >= 1 (vertex: n >= c; cell: n >= c).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace elliptica::multigrid {

/// Where the unknowns of a structured grid sit: at the interior vertices (finite differences with
/// Dirichlet points excluded) or at cell centres (finite volumes).
enum class GridKind { Vertex, Cell };
/// "vertex" / "cell"; InvalidArgument naming the unknown value otherwise.
GridKind grid_kind_from_string(const std::string& s);
std::string to_string(GridKind g);

/// Which axes a level coarsens.
enum class SemiCoarsening {
  Off,   ///< every coarsenable axis on every level (full coarsening; the seed's hierarchy)
  Auto,  ///< the strongly coupled axes only (axis_couplings(), strong_axes()), decided per level
  On     ///< only the most strongly coupled coarsenable axis per level (one direction at a time)
};
/// "off" / "auto" / "on"; InvalidArgument naming the unknown value otherwise.
SemiCoarsening semi_coarsening_from_string(const std::string& s);
std::string to_string(SemiCoarsening s);

/// Unknowns per axis after coarsening an axis of n unknowns by c (see the file comment):
/// floor(n / c) for both kinds. Throws InvalidArgument on n < 1 or c < 2.
int coarse_count(GridKind kind, int n, int c);

/// One row of a 1D interpolation: up to two coarse unknowns and their weights.
struct Interp1D {
  std::array<int, 2> idx{0, 0};
  std::array<double, 2> w{0.0, 0.0};
  int count = 0;
};

/// The 1D interpolation of one axis from n_c = coarse_count(kind, n, c) coarse unknowns to n fine
/// ones (one row per fine unknown), by linear interpolation in the coordinates of the file
/// comment:
///  - Vertex: a fine point between the coarse points X0 < X1 of the coarse grid gets
///    1 - (g - X0) / (X1 - X0) and (g - X0) / (X1 - X0); the boundary points carry zero and
///    are dropped (exactly the seed's weights 1 - r/c, r/c where c divides N).
///  - Cell: linear interpolation between the centres of the two nearest coarse cells
///    (weights 3/4 and 1/4 on a uniform pairing: the bilinear cell-centred prolongation of
///    Wesseling, "An Introduction to Multigrid Methods" (1992), section 5.3, and Trottenberg,
///    Oosterlee, Schueller, "Multigrid" (2001), section 2.8.4), and constant extrapolation beyond
///    the first and last coarse centres (the fine cells next to a wall take the nearest coarse
///    value), so P reproduces constants everywhere and the Galerkin coarse operators keep the
///    constant null space of a pure-Neumann or periodic operator. (Hierarchy::geometric
///    interpolates to zero at walls that dirichlet_walls() finds, see the overload below.)
/// c = 1 gives the identity (an axis not coarsened on this level).
/// Throws InvalidArgument on n < 1, c < 1 or an axis that cannot be coarsened (n_c < 1).
std::vector<Interp1D> interpolation_1d(GridKind kind, int n, int c);

/// Node coordinates of one axis of a level, in units of the finest spacing h, so that the levels
/// below a non-uniform coarse grid interpolate linearly in space, not in index:
///  - Vertex: n + 2 point positions p_0 < ... < p_{n+1} (p_0, p_{n+1}: the Dirichlet boundary
///    points; unknown i at p_{i+1}); the finest grid's are 0, 1, ..., n + 1.
///  - Cell: n + 1 cell edges e_0 < ... < e_n (unknown i at (e_i + e_{i+1}) / 2); finest 0..n.
/// uniform_coordinates gives the finest grid's; coarse_coordinates keeps the coarse grid's
/// points (vertex: p_0, p_c, ..., p_{c n_c}, p_{n+1}) or edges (cell: e_0, e_c, ..., e_{c (n_c - 1)},
/// e_n). Throws InvalidArgument on n < 1, c < 1, an axis that cannot be coarsened or
/// coordinates of the wrong length or not increasing.
std::vector<double> uniform_coordinates(GridKind kind, int n);
std::vector<double> coarse_coordinates(GridKind kind, const std::vector<double>& x, int c);
/// interpolation_1d on a grid with coordinates x (as above; n = x.size() - 2 for vertex,
/// x.size() - 1 for cell): weights (x_f - X_0) / (X_1 - X_0) between the neighbouring coarse
/// nodes X_0 < X_1 (vertex: the boundary points count as nodes of value zero; cell: constant
/// beyond the first and last coarse centres, except at a wall marked in `dirichlet` (low, high
/// end), where the fine cells between the wall and the nearest coarse centre interpolate
/// linearly towards zero on the wall: weight (x_f - e_0) / (X_0 - e_0), 1/2 on a uniform
/// pairing). `periodic` (cell grids; the axis's period is x.back() - x.front()): the fine cells
/// beyond the first and last coarse centres interpolate between those two centres across the
/// periodic seam instead (weights by distance around the period), so P stays exact on
/// linears-modulo-the-period and constant-preserving. Within a row idx[0] < idx[1].
/// On uniform coordinates this is interpolation_1d(kind, n, c).
std::vector<Interp1D> interpolation_1d(GridKind kind, const std::vector<double>& x, int c,
                                       std::array<bool, 2> dirichlet = {false, false}, bool periodic = false);

/// The axes along which a grid operator couples the first and the last layer (wrap-around
/// entries: grid offset > 2 (the widest Galerkin stencil's reach) and > n_d / 2): periodic axes
/// (axes of at most 4 unknowns are never found periodic). Throws InvalidArgument when A's size is not
/// prod(shape.n).
std::array<bool, 3> periodic_axes(const CsrMatrix& A, const GridShape& shape);

/// The walls of a cell-centred grid operator that act as Dirichlet walls: wall (d, side) when
/// the row sums of the face's rows exceed those of the rows one layer in (same other indices) by
/// more than 1e-6 x the face's diagonal (a Dirichlet wall adds 2/h^2 to its cells' diagonals, a
/// Neumann or periodic wall leaves the row sums zero; the Galerkin coarse operators keep the
/// difference). Axes with fewer than 2 unknowns: false. Throws InvalidArgument when A's size is
/// not prod(shape.n).
std::array<std::array<bool, 2>, 3> dirichlet_walls(const CsrMatrix& A, const GridShape& shape);

/// The tensor-product interpolation P (prod(fine.n) x prod(coarse.n), lexicographic x fastest)
/// coarsening axis d by factor[d] (1: axis kept) with interpolation_1d on each axis (on the
/// axes' coordinates when `coords` is given, else on uniform ones; cell grids: with the
/// Dirichlet walls `dirichlet` and the periodic axes `periodic` when given). Rows hold their columns in
/// increasing order. `threads` as in core/parallel.hpp (0: omp_get_max_threads()). Throws
/// InvalidArgument on dim not in {1,2,3} and what interpolation_1d throws.
CsrMatrix tensor_prolongation(const GridShape& fine, GridKind kind, const std::array<int, 3>& factor,
                              const std::array<std::vector<double>, 3>* coords = nullptr,
                              const std::array<std::array<bool, 2>, 3>* dirichlet = nullptr,
                              const std::array<bool, 3>* periodic = nullptr, int threads = 0);
/// The grid of `fine` after coarsening axis d by factor[d] (1: kept).
GridShape coarsened_shape(const GridShape& fine, GridKind kind, const std::array<int, 3>& factor);

/// The coupling of a grid operator along each axis: c_d = (1/rows) sum_{i != j} (-a_ij) o_d(i,j)^2 / 2,
/// with o_d the grid-index offset of j from i along axis d (periodic wrap-around offsets counted
/// as the short way round, min(|o|, n_d - |o|)). For a constant-coefficient stencil this is the
/// second-order coefficient of its symbol along d (the diffusion coefficient in grid units:
/// 1/h_d^2 for the 5-point Laplacian, K_d H_d^2/h_d^2-scaled for its Galerkin coarse operators),
/// so couplings compare axes whatever the stencil's width. Entries past shape.dim are 0.
/// Throws InvalidArgument when A's size is not prod(shape.n).
std::array<double, 3> axis_couplings(const CsrMatrix& A, const GridShape& shape);

/// The axes a level coarsens (factor[d] = c or 1) among the coarsenable ones:
/// Off: all; Auto: those with c_d >= theta max_{e coarsenable} c_e, the strength rule of Ruge &
/// Stueben ("Algebraic multigrid", in Multigrid Methods, SIAM 1987, eq. (5.1), theta = 0.25)
/// applied to axis couplings, which coarsens an anisotropic operator along its strong axes only
/// (semi-coarsening: Trottenberg, Oosterlee, Schueller, "Multigrid" (2001), section 5.1.3);
/// On: the coarsenable axis with the largest c_d (the lowest index among ties). When no
/// coupling is positive every coarsenable axis is coarsened. All factors 1: nothing to coarsen.
std::array<int, 3> coarsening_factors(const GridShape& shape, GridKind kind, int c, SemiCoarsening mode,
                                      const std::array<double, 3>& couplings, double theta);

}  // namespace elliptica::multigrid
