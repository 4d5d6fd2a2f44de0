#pragma once
/// @file smoother.hpp
/// Polynomial smoothers for multigrid (seed 003, section 2; Lottes, "Optimal polynomial smoothers
/// for multigrid V-cycles", NLAA 2023): x <- x + p(S A) S (b - A x) of order k, where A is the level
/// operator and S the base smoother (point Jacobi, additive Schwarz ASM, restrictive additive
/// Schwarz RAS), and the polynomial is a simple iteration, a 1st-kind Chebyshev on
/// [lmin, lmax] (lmin = 0.1 lmax, or lmin optimised for the two-level bound), a 4th-kind
/// Chebyshev, or an optimised 4th-kind Chebyshev (beta_i weights). lmax estimates rho(S A).
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica::multigrid {

enum class BaseSmoother { Jacobi, ASM, RAS };
enum class Polynomial { Simple, Cheby1, Cheby1Opt, Cheby4, Cheby4Opt };

/// Structured-grid layout of a level's unknowns (lexicographic, x fastest), used to build the
/// Schwarz subdomains as boxes of grid points; dim 0 means "no geometry" (index blocks instead).
struct GridShape {
  int dim = 0;
  std::array<int, 3> n{0, 0, 0};  ///< unknowns per axis
};

struct SmootherOptions {
  BaseSmoother base = BaseSmoother::Jacobi;
  Polynomial kind = Polynomial::Cheby4Opt;
  double lmin_ratio = 0.1;               ///< Cheby1: lmin = lmin_ratio * lmax
  std::optional<double> lambda_max;      ///< override of the estimate of rho(S A)
  double lambda_safety = 1.1;            ///< estimate is multiplied by this
  int lambda_iterations = 10;            ///< Lanczos steps for the estimate
  double omega = 0.0;                    ///< Simple: x += omega S r; 0 means 1/lmax
  int subdomain = 4;                     ///< ASM/RAS: subdomain edge in grid points (or block size)
  int overlap = 1;                       ///< ASM/RAS: overlap in grid points
  int threads = 0;                       ///< threads of the smoother's kernels (0: omp_get_max_threads())
};

/// A smoother for one level operator. Not thread-safe for concurrent smooth() calls.
class Smoother {
 public:
  /// Holds a reference to A (A must outlive the smoother). Jacobi: S = diag(A)^-1 (nonzero
  /// diagonal required). ASM/RAS: boxes of `subdomain` points per axis (index blocks when
  /// shape.dim == 0) extended by `overlap`; the local matrices are Cholesky-factorised once (LU
  /// where not SPD), one factorisation shared by all subdomains with identical local matrices;
  /// memory ~ 2 (subdomain + 2 overlap)^(2 dim) doubles per distinct local matrix.
  /// lambda_max: opt.lambda_max if set (used as is), else lambda_safety times the largest Ritz value
  /// of lambda_iterations Lanczos steps on S A (run as PCG with preconditioner S; RAS: Arnoldi,
  /// largest |Ritz value|) from a fixed-seed random vector. Cheby1Opt: lmin/lmax maximises the
  /// two-level gamma^-1 (1-D search, cached per k). Simple with omega = 0: omega = 1/lambda_max.
  /// Throws InvalidArgument on a non-square/empty matrix, a zero diagonal (Jacobi), a GridShape not
  /// matching the rows, subdomain < 1, overlap < 0, lambda_iterations < 1, non-positive
  /// lambda_safety/override, omega < 0, lmin_ratio outside (0,1) for Cheby1; NumericalError when
  /// A or S is found indefinite by the estimate or a subdomain matrix is singular; at such a
  /// breakdown of the estimate, InvalidArgument instead when the CSR matrix is not symmetric
  /// (check_symmetry, core/sparse.hpp: the message names the worst pair).
  Smoother(const CsrMatrix& A, const SmootherOptions& opt, const GridShape& shape = {});
  /// Over an operator and its diagonal (length A.size(), what S = diag^-1 and the checks above use):
  /// A may be matrix-free for the Jacobi kinds (one A.apply per smoothing step plus vector sweeps);
  /// when A is a CsrOperator or a SharedCsrOperator (hierarchy.hpp) the fused CSR sweeps are used,
  /// as with the CsrMatrix constructor. ASM/RAS need the CSR matrix: InvalidArgument for a
  /// matrix-free A (give such a level its Schwarz operator through the constructor below). Holds a reference to A (A must outlive the smoother).
  Smoother(const LinearOperator<double>& A, std::vector<double> diagonal, const SmootherOptions& opt,
           const GridShape& shape = {});
  /// Over an operator A (matrix-free or not) with an EXTERNAL base smoother S ~ A^-1 (e.g. the
  /// SEM Schwarz operator SemSchwarz of sem_schwarz.hpp): apply_S is S->apply, everything else as
  /// for the built-in Schwarz bases (the same recurrence, one A application and one S application
  /// per order). opt.base says how S is treated: ASM (S must be symmetric positive definite:
  /// lambda_max by Lanczos on S A, as PCG with preconditioner S; the smoother is then symmetric)
  /// or RAS (S not symmetric: lambda_max by Arnoldi, largest |Ritz value|). opt.subdomain and
  /// opt.overlap are not used. Holds a reference to A (A must outlive the smoother) and shares S.
  /// Throws InvalidArgument for an empty A, a null S, S->size() != A.size(), base jacobi, base asm
  /// with an S that says it is not symmetric, and the option errors of the constructors above;
  /// NumericalError as above when A or S is found indefinite.
  Smoother(const LinearOperator<double>& A, std::shared_ptr<const LinearOperator<double>> S,
           const SmootherOptions& opt);
  ~Smoother();
  Smoother(Smoother&&) noexcept;
  Smoother& operator=(Smoother&&) noexcept;

  /// k applications of the polynomial smoother to A x = b, improving x in place (k >= 1).
  void smooth(const double* b, double* x, int k) const;
  /// The same; x_is_zero = true promises x == 0 on entry (its contents are then ignored and
  /// overwritten), which saves the initial residual matvec (r_0 = b), as on the coarse levels of a
  /// V-cycle and in preconditioner applications.
  void smooth(const double* b, double* x, int k, bool x_is_zero) const;
  double lambda_max() const;            ///< the (safety-scaled) bound used
  const SmootherOptions& options() const;
  std::size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses "simple", "cheb1", "cheb1opt", "cheb4", "opt4"; throws InvalidArgument naming the
/// unknown smoother polynomial otherwise.
Polynomial polynomial_from_string(const std::string& s);
/// Parses "jacobi", "asm", "ras"; throws InvalidArgument naming the unknown base smoother otherwise.
BaseSmoother base_from_string(const std::string& s);
/// The names polynomial_from_string / base_from_string parse ("opt4", "ras", ...): their inverses,
/// for the CLI's and Python's option names.
std::string to_string(Polynomial p);
std::string to_string(BaseSmoother b);

/// Optimised 4th-kind Chebyshev weights beta_1..beta_k (Lottes 2023): from a table for k <= 16,
/// computed beyond.
std::vector<double> opt4_betas(int k);

/// A smoother of fixed order k as an operator (one smoothing from x = 0, a preconditioner
/// M ~ A^{-1}): symmetric for the polynomial kinds with Jacobi or ASM (so usable in PCG), not for
/// RAS. Holds a reference to the smoother; not reentrant (the smoother's work vectors).
class SmootherPreconditioner : public LinearOperator<double> {
 public:
  SmootherPreconditioner(const Smoother& s, int k) : s_(s), k_(k) {}
  std::size_t size() const override { return s_.size(); }
  void apply(const double* r, double* z) const override;
  bool is_symmetric() const override;

 private:
  const Smoother& s_;
  int k_;
};

}  // namespace elliptica::multigrid
