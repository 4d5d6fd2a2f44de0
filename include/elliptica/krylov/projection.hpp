#pragma once
/// @file projection.hpp
/// Initial guesses for a sequence of solves A x_t = b_t with one symmetric positive (semi-)definite
/// A and slowly varying right-hand sides (the pressure equation of a time step, an implicit
/// diffusion step): projection onto the span of previous solutions (P. F. Fischer, "Projection
/// techniques for iterative solution of Ax = b with successive right-hand sides", Comput. Methods
/// Appl. Mech. Engrg. 163 (1998) 193-204, section 3, "scheme 2").
///
/// Kept: an A-orthonormal basis X = {x_1 .. x_l} (x_i^T A x_j = delta_ij), l <= L, and the
/// products A x_i. For a new b:
///   1. x0 = sum_i (x_i^T b) x_i: the best approximation of A^{-1} b in span X in the A-norm
///      (Fischer eq. (9): alpha_i = x_i^T b), and r0 = b - A x0 = b - sum_i alpha_i (A x_i)
///      from the stored products (no matvec);
///   2. dx solves A dx = r0 from dx = 0 by the caller's solver (any callable);
///   3. x = x0 + dx; the new basis direction is dx (span X + {x} = span X + {dx}): with w = A dx
///      (the one matvec of a projected solve), dx and w are A-orthogonalised against the basis by
///      classical Gram-Schmidt twice (c_i = x_i^T w; dx -= c_i x_i, w -= c_i A x_i), and
///      appended as dx / ||dx||_A unless ||dx||_A after the two passes is below drop_tolerance x
///      ||x||_A (then the new solution lies in span X to that accuracy and dx is dropped);
///   4. when the basis holds L vectors, it restarts from the latest solution alone
///      (x_1 = x / ||x||_A, A x_1 = (A x0 + w) / ||x||_A with A x0 = b - r0: no matvec), as Fischer does.
/// Cost per solve beyond the inner solve: one application of A (w = A dx) and about 6 l + 4
/// vector operations of length n (l dot products for alpha, l axpys for x0 and for r0, 2 x 2 l for
/// the two Gram-Schmidt passes); memory 2 L vectors of length n.
/// The error after step 1 is the A-orthogonal projection error of A^{-1} b onto span X, so for
/// b_t varying smoothly in t the inner solve starts from a residual that is O(dt^l)-small relative
/// to ||b|| (Fischer, section 4) and needs fewer iterations when its stopping rule is absolute
/// (relative to ||b||, not to ||r0||: see InnerSolve).
/// A semi-definite A (pure Neumann: the constants as null space) works when the inner solver
/// returns solutions orthogonal to the null space (zero mean): the A-norm is then a norm on their span.
#include <cstddef>
#include <functional>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::krylov {

struct ProjectionOptions {
  std::size_t max_vectors = 8;    ///< L >= 1: basis size at which the basis restarts from the latest solution
  double drop_tolerance = 1e-10;  ///< in (0, 1): A-norm of a new direction, relative to ||x||_A, below which it is dropped
  int threads = 0;                ///< threads of the vector kernels (0: omp_get_max_threads()), >= 0
};

/// What one projected solve did.
struct ProjectedResult {
  Result inner;                  ///< the inner solve's statistics (its residuals relative to ||r0||)
  double rhs_norm = 0;           ///< ||b||_2
  double projected_residual = 0; ///< ||b - A x0||_2 / ||b||_2 (1 with an empty basis; 0 when b = 0)
  double final_residual = 0;     ///< ||b - A x||_2 / ||b||_2 from the inner solve's true final residual
  std::size_t basis_before = 0;  ///< l used for x0
  std::size_t basis_after = 0;   ///< l after appending (1 after a restart)
  bool appended = false;         ///< the new direction entered the basis (false: dropped)
  bool restarted = false;        ///< the basis was full and restarted from this solution
};

class SolutionProjection {
 public:
  /// The caller's solver for A dx = r from dx = 0 (dx is zero on entry, length n): any Krylov
  /// solve, multigrid plan or matrix-free method. b_norm = ||b||_2 of the outer right-hand side:
  /// stop at ||r - A dx|| <= max(rtol b_norm, atol) (the criterion of a solve of A x = b from
  /// x = 0) to profit from the projection; a stopping rule relative to ||r|| would only make the
  /// solve more accurate, not cheaper. Its Result's final_relative_residual is relative to ||r||.
  using InnerSolve = std::function<Result(const double* r, double* dx, double b_norm)>;

  /// n: the unknowns. Throws InvalidArgument for n = 0, max_vectors = 0, drop_tolerance outside
  /// (0, 1), threads < 0; ResourceError when the full basis (2 max_vectors n doubles) would not
  /// fit in memory_limit_bytes() (core/resources.hpp).
  explicit SolutionProjection(std::size_t n, ProjectionOptions opt = {});

  /// Solves A x = b through steps 1-4 of the file comment; x: the solution on exit (length n; its
  /// value on entry is not used: the initial guess is the projection). A: the operator of every
  /// vector in the basis (SPD, or semi-definite as above; call clear() when it changes).
  /// Throws InvalidArgument for null pointers, A.size() != n, a non-finite b; NumericalError when
  /// the inner solve or A produces NaN/Inf, or when dx^T A dx < 0 beyond rounding (A not positive
  /// semi-definite); what `inner` throws, with the basis unchanged.
  ProjectedResult solve(const LinearOperator<double>& A, const double* b, double* x, const InnerSolve& inner);

  /// Step 1 only: x0 = sum_i (x_i^T b) x_i (zero with an empty basis). Throws InvalidArgument for
  /// null pointers.
  void project(const double* b, double* x0) const;
  /// Adds the solution x of A x = b to the basis (step 3 with dx = x, after one product A x; the
  /// restart of step 4 when full). Returns whether it was appended. Throws as solve().
  bool add(const LinearOperator<double>& A, const double* x);

  std::size_t size() const { return n_; }
  /// l: vectors in the basis now.
  std::size_t basis_size() const { return X_.size(); }
  /// x_i and A x_i (i < basis_size(); length n).
  const std::vector<double>& basis_vector(std::size_t i) const { return X_.at(i); }
  const std::vector<double>& basis_product(std::size_t i) const { return AX_.at(i); }
  const ProjectionOptions& options() const { return opt_; }
  /// Empties the basis (the operator changed).
  void clear();

 private:
  /// A-orthonormalises (d, w = A d) against the basis and appends; restart (x_latest, Ax_latest)
  /// when full. Returns appended.
  bool append(std::vector<double> d, std::vector<double> w, const std::vector<double>* x_full,
              const std::vector<double>* ax_full, bool& restarted);
  std::size_t n_;
  ProjectionOptions opt_;
  std::vector<std::vector<double>> X_, AX_;
};

}  // namespace elliptica::krylov
