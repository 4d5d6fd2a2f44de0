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

#include "elliptica/core/sparse.hpp"
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

}  // namespace elliptica::multigrid
