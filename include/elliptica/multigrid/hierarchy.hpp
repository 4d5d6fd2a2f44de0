#pragma once
/// @file hierarchy.hpp
/// Multigrid hierarchy: a list of levels {A_j as an operator, its diagonal, P_j, R_j, grid shape,
/// optionally A_j's CSR matrix} and a pluggable coarse solver (any LinearOperator<double> that
/// applies ~A_L^{-1}: the banded Cholesky below, a krylov::Cg object, a sparse direct solver, ...).
///
/// One way to fill it is the geometric finite-difference hierarchy on a structured box grid
/// (seed 003, section 3; Hierarchy::geometric): coarsening factor c (2: n_c = n/2, or 8:
/// aggressive n_c = n/8, n counting intervals per axis), prolongation by linear / bilinear /
/// trilinear interpolation, restriction R = P^T, Galerkin coarse operators A_{j+1} = P_j^T A_j P_j,
/// and an exact (banded Cholesky) solve on the coarsest level.
#include <cstddef>
#include <memory>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/coarsening.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace elliptica::multigrid {

/// A CSR matrix shared by its owners, as an operator (apply = multiply with `threads` threads).
/// Unlike CsrOperator it keeps the matrix alive, so a Level's operator and matrix can be handed
/// around independently. `symmetric`: the caller's promise that the matrix is SPD (not checked).
class SharedCsrOperator final : public LinearOperator<double> {
 public:
  explicit SharedCsrOperator(std::shared_ptr<const CsrMatrix> A, int threads = 0, bool symmetric = true);
  std::size_t size() const override { return A_->rows; }
  void apply(const double* x, double* y) const override { A_->multiply(x, y, threads_); }
  bool is_symmetric() const override { return symmetric_; }
  const CsrMatrix& matrix() const { return *A_; }
  const std::shared_ptr<const CsrMatrix>& shared_matrix() const { return A_; }
  int threads() const { return threads_; }

 private:
  std::shared_ptr<const CsrMatrix> A_;
  int threads_;
  bool symmetric_;
};

/// The CSR matrix behind an operator when it is a CsrOperator or a SharedCsrOperator (the fused
/// CSR kernels of the smoothers and cycles use it), otherwise nullptr.
const CsrMatrix* csr_of(const LinearOperator<double>& A);

/// A matrix-free transfer between a level (fine, size fine_size()) and the next coarser one (size
/// coarse_size()): prolong is x_f = P x_c (or x_f += P x_c), restrict_to_coarse is r_c = R r_f. A
/// Level that has one uses it instead of its CSR P and R (which may then be empty); the SEM
/// p-multigrid's element-wise tensor-product interpolation is one (pmg.hpp, PmgTransfer).
class LevelTransfer {
 public:
  virtual ~LevelTransfer() = default;
  virtual std::size_t fine_size() const = 0;
  virtual std::size_t coarse_size() const = 0;
  /// xf = P xc (add false) or xf += P xc (add true); xc of length coarse_size(), xf fine_size().
  virtual void prolong(const double* xc, double* xf, bool add) const = 0;
  /// rc = R rf; rf of length fine_size(), rc coarse_size().
  virtual void restrict_to_coarse(const double* rf, double* rc) const = 0;
};

/// One level. A: the level operator (required; size rows); diagonal: diag(A) (length rows; the
/// Jacobi and Chebyshev smoothers need only A and this); matrix: A's CSR matrix when there is one
/// (null for a matrix-free level; ASM/RAS smoothers and the banded Cholesky need it); P maps the
/// next coarser level to this one (rows x rows_{j+1}; empty on the coarsest level), R its
/// restriction (usually P^T); shape: the grid of the level's unknowns (dim 0: none).
struct Level {
  std::shared_ptr<const LinearOperator<double>> A;
  std::vector<double> diagonal;
  CsrMatrix P;
  CsrMatrix R;
  GridShape shape;
  std::shared_ptr<const CsrMatrix> matrix;
  /// rho(D^-1 A) as a hierarchy's set-up estimated it (the largest Ritz value of a Lanczos run;
  /// 0: not known). A V-cycle's Jacobi-based smoother uses lambda_safety times it instead of
  /// estimating again (smoothed aggregation needs it for its prolongator smoothing).
  double jacobi_lambda = 0.0;
  /// An external Schwarz base smoother S ~ A^-1 of this level (null: none), for matrix-free levels
  /// whose ASM/RAS cannot be built from a CSR matrix (the SEM levels of a p-multigrid:
  /// std::make_shared<SemSchwarz>(laplacian, SchwarzKind::ASM or RAS), sem_schwarz.hpp). A
  /// V-cycle whose smoother base is asm or ras uses it (Smoother's external-S constructor) instead
  /// of building subdomains; with base jacobi it is ignored. S->size() must equal rows().
  std::shared_ptr<const LinearOperator<double>> schwarz;
  /// A matrix-free transfer to the next coarser level (null: P and R are used). When set, P and R
  /// may be empty (0 x 0): the V-cycle calls transfer->restrict_to_coarse / prolong instead.
  std::shared_ptr<const LevelTransfer> transfer;

  std::size_t rows() const { return A ? A->size() : 0; }
  /// A level made from a CSR matrix: A = SharedCsrOperator(matrix, threads), diagonal = its
  /// diagonal, no P/R yet. The matrix gets its constant-coefficient stencil form when it has one
  /// (core/stencil.hpp: attach_stencil on `shape`, or on a grid guessed from the matrix when
  /// shape.dim is 0), so that the level's row kernels read the vectors only.
  static Level from_matrix(CsrMatrix A, const GridShape& shape, int threads = 0);
};

/// Linear interpolation from the grid with N/c intervals per axis to the grid with N intervals per
/// axis (N = fine.n[d] + 1): coarse point J sits at fine point c J; a fine point between the
/// coarse points J and J+1 gets the weights 1 - r/c and r/c (r = its offset from c J), tensor
/// products across axes; boundary points (zero) dropped. Size prod(fine.n) x prod(coarse.n).
/// Throws InvalidArgument unless every axis's interval count is divisible by c (any size:
/// tensor_prolongation of coarsening.hpp).
CsrMatrix prolongation(const GridShape& fine, int c);

/// Exact solve with an SPD CSR matrix by a banded Cholesky factor A = L L^T (lexicographic grid
/// operators have half-bandwidth w ~ nx (2D) or nx ny (3D)); memory n (w + 1) doubles, set-up
/// O(n w^2), apply O(n w). The default coarse solver of the geometric hierarchy. As an operator:
/// apply(b, x) = A^{-1} b, fixed, symmetric.
/// Throws NumericalError when A is not symmetric (relative 1e-12) or not positive definite, and
/// InvalidArgument when it is not square or too large (n (w + 1) > 2.5e8).
class BandedCholesky final : public LinearOperator<double> {
 public:
  explicit BandedCholesky(const CsrMatrix& A);
  std::size_t size() const override { return n_; }
  void apply(const double* b, double* x) const override;
  bool is_symmetric() const override { return true; }
  std::size_t half_bandwidth() const { return w_; }

 private:
  double L(std::size_t i, std::size_t j) const { return band_[i * (w_ + 1) + (j + w_ - i)]; }
  double& L(std::size_t i, std::size_t j) { return band_[i * (w_ + 1) + (j + w_ - i)]; }
  std::size_t n_ = 0, w_ = 0;
  std::vector<double> band_;
};

/// Coarse solver of a geometric hierarchy.
enum class CoarseSolverKind {
  BandedCholesky,  ///< exact, the default
  None,            ///< none yet: the caller sets one with set_coarse_solver()
  SparseDirect     ///< sparse LDL^T of amg.hpp: keeps a singular (constant) null space
};

/// Options of the geometric FD hierarchy (defaults: MultigridOptions{} of plan.hpp reads them).
struct HierarchyOptions {
  int coarsening = 2;   ///< 2 or 8
  int max_levels = 0;   ///< cap on the number of levels (0: no cap)
  CoarseSolverKind coarse = CoarseSolverKind::BandedCholesky;
  int threads = 0;      ///< threads of the Galerkin products and of the level operators (0: all)
  GridKind grid = GridKind::Vertex;  ///< where the unknowns sit (coarsening.hpp)
  /// Which axes each level coarsens (coarsening.hpp). Off keeps the seed's full coarsening (and
  /// its study of anisotropic boxes); Auto suits stretched meshes.
  SemiCoarsening semi_coarsening = SemiCoarsening::Off;
  /// theta of the Auto rule: axis d is strong when its coupling >= theta x the largest; in (0, 1].
  double semi_coarsening_threshold = 0.25;
};

class Hierarchy {
 public:
  /// From levels built elsewhere (finest first) and a coarse solver for the last level (may be
  /// null here and set later with set_coarse_solver). Throws InvalidArgument on no levels, a
  /// level without an operator, a diagonal of the wrong length, P/R sizes not chaining the
  /// levels, a coarse solver of the wrong size.
  Hierarchy(std::vector<Level> levels, std::shared_ptr<const LinearOperator<double>> coarse_solver,
            int coarsening = 0);

  /// The geometric hierarchy of a structured grid of any size (coarsening.hpp): on each level the
  /// axes chosen by coarsening_factors(opt.semi_coarsening) among those with at least c
  /// unknowns are coarsened by c (n -> floor(n / c)), P = tensor_prolongation (vertex- or
  /// cell-centred, opt.grid; linear in each level's node coordinates; cell grids: towards zero
  /// at the walls dirichlet_walls() finds in A_j), R = P^T, A_{j+1} = R A_j P, until no axis can
  /// be coarsened or max_levels is reached (n = 127: 7 levels for c = 2, 3 for c = 8; n = 1000:
  /// 10 levels for c = 2). Where c divides every axis's interval count the hierarchy is the
  /// seed's (the same P bit for bit). A must be the shape's operator (rows = prod(shape.n)); the
  /// coarsest operator is factorised once (opt.coarse: banded Cholesky, must be SPD;
  /// SparseDirect: may be singular; coarsening then stops at a level of <= 64 unknowns) unless
  /// opt.coarse is None. A one-level result is possible here (every axis below c);
  /// MultigridPlan refuses it.
  /// Throws InvalidArgument on c not in {2, 8}, dim not in {1,2,3}, max_levels < 0, threads < 0,
  /// a semi_coarsening_threshold outside (0, 1] or a size mismatch, and what BandedCholesky /
  /// SparseDirect throw (NumericalError: not SPD; InvalidArgument: too large).
  static Hierarchy geometric(CsrMatrix A, const GridShape& shape, const HierarchyOptions& opt = {});
  /// The same as geometric(A, shape, {coarsening, max_levels}).
  Hierarchy(CsrMatrix A, const GridShape& shape, int coarsening, int max_levels = 0);
  ~Hierarchy();
  Hierarchy(Hierarchy&&) noexcept;
  Hierarchy& operator=(Hierarchy&&) noexcept;

  std::size_t num_levels() const { return levels_.size(); }
  const Level& level(std::size_t j) const { return levels_.at(j); }
  /// The coarsening factor of a geometric hierarchy (0 when built from levels without one).
  int coarsening() const { return c_; }
  /// Operator complexity sum_j nnz(A_j) / nnz(A_0) (stored nonzeros, explicit zeros included;
  /// 0 when a level has no matrix).
  double operator_complexity() const;
  /// Grid complexity sum_j rows(A_j) / rows(A_0).
  double grid_complexity() const;
  /// Replaces the coarse solver (size rows(A_L); InvalidArgument otherwise or when null).
  void set_coarse_solver(std::shared_ptr<const LinearOperator<double>> s);
  /// The coarse solver (null until set when built with CoarseSolverKind::None).
  const LinearOperator<double>* coarse_solver() const { return coarse_.get(); }
  /// x = A_L^{-1} b on the coarsest level (b, x of length rows(A_L); may alias).
  /// Throws InvalidArgument when no coarse solver is set.
  void coarse_solve(const double* b, double* x) const;

 private:
  std::vector<Level> levels_;
  int c_ = 0;
  std::shared_ptr<const LinearOperator<double>> coarse_;
};

}  // namespace elliptica::multigrid
