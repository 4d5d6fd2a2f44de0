#pragma once
/// @file poisson.hpp
/// Finite-difference Poisson operators (-Laplacian) with homogeneous Dirichlet boundary on boxes,
/// and the seed's 2D test problem (seed 003, section 3).
///
/// Grid convention: axis d of [0, L_d] is split into N_d equal intervals (N_d = shape.n[d] + 1),
/// spacing h_d = L_d / N_d; the unknowns are the interior points x_i = (i + 1) h_d,
/// i = 0..shape.n[d]-1, ordered lexicographically with x fastest (index = i + nx (j + ny k)).
#include <array>
#include <cstdint>
#include <vector>

#include <string>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/coarsening.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace elliptica::multigrid {

/// The grid of `intervals` intervals per axis in `dim` dimensions: n = intervals - 1 unknowns per
/// axis. Throws InvalidArgument unless dim in {1, 2, 3} and intervals >= 2.
GridShape grid_shape(int dim, int intervals);

/// The standard 3-point (1D), 5-point (2D) or 7-point (3D) discretisation of -Laplacian on
/// [0,Lx] x [0,Ly] x [0,Lz] with homogeneous Dirichlet boundary: row of unknown p holds
/// sum_d (2 u_p - u_{p-e_d} - u_{p+e_d}) / h_d^2 (neighbours on the boundary dropped).
/// Symmetric positive definite, rows x rows with rows = prod_d shape.n[d]. `lengths` entries
/// beyond shape.dim are ignored. Throws InvalidArgument on dim not in {1,2,3}, n[d] < 1 or a
/// length that is not finite and positive.
CsrMatrix poisson_fd(const GridShape& shape, std::array<double, 3> lengths);

/// A discrete problem A u = b with known solution.
struct TestProblem {
  GridShape shape;
  std::array<double, 3> lengths{1.0, 1.0, 1.0};
  CsrMatrix A;
  std::vector<double> u;  ///< exact discrete solution at the unknowns
  std::vector<double> b;  ///< right-hand side b = A u
};

/// The seed's 2D test (section 3): n intervals per axis on [0,Lx] x [0,Ly], exact solution
/// u = sin(3 pi x / Lx) sin(4 pi y / Ly) + g, where g is a fixed pseudo-random grid function,
/// uniform in [-1, 1) at the interior points (hence zero on the boundary), generated from `seed`
/// by a portable generator (splitmix64), so the same seed gives the same g on every platform;
/// b = A u. Throws InvalidArgument on n < 2 or a non-positive length.
TestProblem seed_problem_2d(int n, double Lx, double Ly = 1.0, std::uint64_t seed = 20221006);

/// Boundary condition of an axis (both of its ends).
enum class Boundary {
  Dirichlet,  ///< u = 0 on the walls
  Neumann,    ///< du/dn = 0 on the walls (cell-centred grids only)
  Periodic    ///< u(x + L) = u(x)
};
/// "dirichlet" / "neumann" / "periodic"; InvalidArgument naming the unknown value otherwise.
Boundary boundary_from_string(const std::string& s);
std::string to_string(Boundary b);

/// -Laplacian on a vertex- or cell-centred grid of [0,L_0] x ... with a boundary condition per
/// axis (entries beyond shape.dim ignored); row p holds sum_d (flux differences) / h_d^2:
///  - Vertex, Dirichlet: as poisson_fd above (h = L / (n + 1), points (i + 1) h).
///  - Vertex, Periodic: n points x_i = i h, h = L / n, neighbours wrapped around.
///  - Cell (n cells, h = L / n, centres (i + 1/2) h), interior: (2 u_i - u_{i-1} - u_{i+1}) / h^2,
///    the finite-volume Laplacian; at a Dirichlet wall the ghost value -u_0 (u = 0 on the wall
///    by linear extrapolation: wall flux 2 u_0 / h^2, diagonal 3 / h^2 on that side); at a
///    Neumann wall no flux (diagonal 1 / h^2 on that side); Periodic: wrapped neighbours.
///    (LeVeque, "Finite Volume Methods for Hyperbolic Problems" (2002), section 7.2, ghost
///    cells; Trottenberg et al., "Multigrid" (2001), section 5.6 for the pressure equation.)
/// Symmetric; positive definite when some axis is Dirichlet, else semi-definite with the
/// constant null space (pure Neumann / periodic: solve with constant_null_space). Couplings that
/// meet twice (a periodic axis of 2 unknowns) are summed; a periodic axis of 1 unknown has none.
/// Throws InvalidArgument on what poisson_fd throws and on Neumann with a vertex grid (use a
/// cell grid).
CsrMatrix poisson_fd(const GridShape& shape, std::array<double, 3> lengths, GridKind grid,
                     std::array<Boundary, 3> bc);

/// A test problem on the grid of poisson_fd(shape, lengths, grid, {bc, bc, bc}) with n unknowns
/// per axis (vertex Dirichlet: n + 1 intervals): exact discrete solution u = prod_d f_d(x_d) + g,
/// f_d = sin(pi x / L_d) (Dirichlet), cos(pi x / L_d) (Neumann), cos(2 pi x / L_d) (periodic), g
/// the splitmix64 pseudo-random grid function of seed_problem_2d; when the operator is singular
/// (no Dirichlet axis) u has its mean removed (the zero-mean solution a constant-null-space solve
/// returns); b = A u. Throws InvalidArgument on dim not in {1,2,3}, n < 1 and what poisson_fd
/// throws.
TestProblem poisson_problem(int dim, int n, std::array<double, 3> lengths, GridKind grid, Boundary bc,
                            std::uint64_t seed = 20221006);

}  // namespace elliptica::multigrid
