#pragma once
/// @file pmg.hpp
/// p-multigrid (pMG) for the spectral-element Poisson operator of sem_operator.hpp (seed 003,
/// sections 4-6): one HexMesh, a schedule of polynomial orders p_0 > p_1 > ... > p_L = 1, one
/// SemSpace per order, the matrix-free SemLaplacian with its exact diagonal on every order
/// p_j > 1, the assembled order-1 (trilinear, GLL-lumped) matrix on the coarsest level solved by
/// one hypre BoomerAMG V-cycle (nekRS's coarse solve, boomeramg.hpp) or by the sparse direct
/// solver (amg.hpp's SparseDirect); the transfers between orders are element-wise tensor-product
/// GLL Lagrange interpolation. The existing VCycle (vcycle.hpp) runs the Chebyshev-Jacobi
/// smoothers (smoother.hpp: cheb1, cheb1opt, cheb4, opt4) over this hierarchy, as the
/// preconditioner of the krylov module's PCG (symmetric cycles, m = n) or FGMRES / GMRES.
///
/// Conventions
/// - Vectors are over the FREE nodes of a level's SemSpace (length SemSpace::num_free(), the
///   global numbering of sem_operator.hpp; Dirichlet nodes are not stored: u = 0 there).
/// - Schedule: orders finest first, strictly decreasing, ending at 1, the first in
///   [2, kMaxSemOrder] (check_pmg_schedule). The seed (section 6) uses (7, 5, 3, 1) with
///   Chebyshev-Jacobi smoothing and (7, 3, 1) with Schwarz smoothing.
/// - Interpolation P_j from order q = p_{j+1} to p = p_j (pmg_prolongation): on each element the
///   coarse nodal values u_abc are interpolated to the fine GLL points,
///   u(x_i, x_j, x_k) = sum_abc J_ia J_jb J_kc u_abc, J = interpolation_matrix(gll(q).nodes,
///   gll(p).nodes) (gll.hpp; Deville, Fischer & Mund 2002, section 2.4 and appendix B). The
///   coarse space is conforming and V_q is a subspace of V_p on the same mesh, so a fine node
///   shared by several elements gets the same value from each: its row is taken once (from the
///   first element that holds it).
/// - Restriction R_j = P_j^T: the coarse problem is the Galerkin projection of the fine one onto
///   V_q (find e_q in V_q with a(e_q, v) = (r, v) for all v in V_q; every v in V_q is the fine
///   function with coefficients P v_q, so the coarse right-hand side is P^T r, and the exact
///   coarse operator of the fine bilinear form is P^T A_p P). The level operator used is A_q,
///   the SEM operator of order q with its own GLL quadrature, which differs from P^T A_p P: GLL
///   quadrature of order q integrates grad u . grad v (degree 2q in the direction of the
///   non-differentiated variable on an affine element) inexactly, that of order p > q exactly.
///   The two agree in the limit of fine meshes and are spectrally equivalent; tests report
///   ||R A_p P - A_q|| (seed 003 section 4 uses the rediscretised A_q, as nekRS does).
/// - The V-cycle applies P and R matrix-free (PmgTransfer, Level::transfer); pmg_prolongation
///   assembles the same P as a CSR matrix (for tests and for users who want the matrix).
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <cstdint>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/krylov/projection.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"
#include "elliptica/multigrid/sem_operator.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"
#include "elliptica/multigrid/smoother.hpp"
#include "elliptica/multigrid/vcycle.hpp"

namespace elliptica::multigrid {

/// Throws InvalidArgument naming the problem unless `orders` is a pMG schedule: not empty, the
/// first order in [2, kMaxSemOrder], strictly decreasing, the last order 1.
void check_pmg_schedule(const std::vector<int>& orders);

/// The seed's schedule for Chebyshev-Jacobi smoothing (seed 003, section 6: (7, 5, 3, 1)):
/// p, p - 2, p - 4, ... while > 1, then 1 (p = 6: (6, 4, 2, 1); p = 2: (2, 1)).
/// InvalidArgument for p outside [2, kMaxSemOrder].
std::vector<int> default_pmg_schedule(int p);

/// The interpolation P from the free nodes of `coarse` (order q) to the free nodes of `fine`
/// (order p > q) on the same mesh (file docstring): fine.num_free() x coarse.num_free(), CSR with
/// sorted columns; a row has at most (q + 1)^3 entries (fewer on element faces, edges, vertices
/// and next to the boundary: coarse Dirichlet columns are dropped, their values being 0). Exact
/// zeros of the tensor-product weights are not stored.
/// `threads`: threads of the row loops (0: omp_get_max_threads()).
/// Throws InvalidArgument when the two spaces are not on the same mesh (element and vertex
/// arrays), when q >= p, or threads < 0; ResourceError when the matrix needs more memory than
/// memory_limit_bytes().
CsrMatrix pmg_prolongation(const SemSpace& coarse, const SemSpace& fine, int threads = 0);

/// The same interpolation P applied matrix-free (and its transpose, the restriction), as the
/// V-cycle's transfer of a p-multigrid level (Level::transfer): per element the coarse nodal
/// values are gathered (0 at Dirichlet nodes), interpolated by three 1-D contractions with the
/// (p+1) x (q+1) matrix J (sum factorisation: (p+1)(q+1)((q+1)^2 + (p+1)(q+1) + (p+1)^2) multiply-
/// adds an element instead of the (p+1)^3 (q+1)^3 of the CSR rows), and written to the fine free
/// nodes the element owns (a node's owner is the first element that holds it, as in
/// pmg_prolongation, so prolong equals pmg_prolongation's P x to rounding); restriction applies the
/// transposed contractions to the owned fine values and adds them into the coarse nodes, element
/// colour by colour (SemSpace::colours(): elements of one colour share no node), so the result does
/// not depend on the thread count. Memory: one byte per fine element node (the ownership mask).
class PmgTransfer final : public LevelTransfer {
 public:
  /// Throws what pmg_prolongation throws for the two spaces (InvalidArgument: not on the same mesh,
  /// q >= p, threads < 0), and ResourceError when the mask does not fit memory_limit_bytes().
  PmgTransfer(std::shared_ptr<const SemSpace> coarse, std::shared_ptr<const SemSpace> fine, int threads = 0);
  std::size_t fine_size() const override;
  std::size_t coarse_size() const override;
  /// xf = P xc or xf += P xc (add). Does not throw.
  void prolong(const double* xc, double* xf, bool add) const override;
  /// rc = P^T rf. Does not throw.
  void restrict_to_coarse(const double* rf, double* rc) const override;

 private:
  std::shared_ptr<const SemSpace> coarse_, fine_;
  int threads_ = 0;
  std::vector<double> J_;            // (p+1) x (q+1), row-major
  std::vector<std::uint8_t> owned_;  // ne x (p+1)^3: this element writes / reads that fine node
};

/// Coarse solver of the order-1 level.
enum class PmgCoarseSolver {
  BoomerAmg,  ///< one BoomerAMG V-cycle (BoomerAmgPreconditioner with the given options)
  Direct      ///< sparse LDL^T (SparseDirect of amg.hpp): exact
};
/// BoomerAmg when this build has hypre (have_boomeramg()), else Direct.
PmgCoarseSolver default_pmg_coarse_solver();
/// "boomeramg" / "direct"; InvalidArgument naming the value otherwise. And back.
PmgCoarseSolver pmg_coarse_solver_from_string(const std::string& s);
std::string to_string(PmgCoarseSolver c);

/// Options of pmg_hierarchy.
struct PMultigridOptions {
  /// Orders finest first (check_pmg_schedule); the first must be the fine space's order. Empty:
  /// default_pmg_schedule(fine order).
  std::vector<int> schedule;
  /// Solver of the order-1 level. BoomerAMG is replaced by Direct when the order-1 matrix has no
  /// more rows than boomeramg.max_coarse_size (BoomerAMG would make a single level of it).
  PmgCoarseSolver coarse = default_pmg_coarse_solver();
  /// BoomerAMG's settings (BoomerAmgOptions{}: nekRS's coarse-solve defaults, one V-cycle).
  BoomerAmgOptions boomeramg;
  /// Threads of the set-up loops and of the level operators (0: omp_get_max_threads()).
  int threads = 0;
  /// The overlapping Schwarz operator of every level of order >= 2 (Level::schwarz, a SemSchwarz
  /// of sem_schwarz.hpp with fast-diagonalisation local solves), for V-cycles whose smoother base
  /// is ASM or RAS; none: Jacobi only.
  std::optional<SchwarzKind> schwarz;
  /// Arithmetic of those Schwarz operators' local solves (SchwarzPrecision, sem_schwarz.hpp).
  SchwarzPrecision schwarz_precision = SchwarzPrecision::Double;
  /// Levels of order <= this solve their Schwarz local problems exactly on the elements' own
  /// nodes (SchwarzLocalSolver::Element); the others by fast diagonalisation (FDM). 0: FDM on
  /// every level. In [0, kMaxSemOrder].
  int schwarz_element_max_order = 0;
};

/// The p-multigrid hierarchy on fine's mesh: level j (finest first) has order schedule[j]; for
/// schedule[j] > 1 A_j is the SemLaplacian of that order (matrix-free, Level::matrix null) and
/// Level::diagonal its exact diagonal; the last level (order 1) has the assembled matrix
/// (SemLaplacian::assemble()) as Level::matrix and operator; the transfers are matrix-free:
/// Level::transfer = PmgTransfer(space_{j+1}, space_j) (P_j = pmg_prolongation's matrix, R_j =
/// P_j^T; Level::P and Level::R are left empty); GridShape dim 0. The level operators keep their SemSpaces alive
/// (pmg_level_space() finds them). Coarse solver as opt.coarse.
/// Throws InvalidArgument for a bad schedule, schedule[0] != fine->order(), a null space,
/// threads < 0, bad BoomerAMG options, an order-1 space without free nodes (a mesh too small
/// to coarsen: one element across); NumericalError from the coarse factorisation / BoomerAMG's
/// set-up; ResourceError from the spaces and matrices.
Hierarchy pmg_hierarchy(std::shared_ptr<const SemSpace> fine, const PMultigridOptions& opt = {});

/// The SemSpace of level j of a hierarchy made by pmg_hierarchy (null for a level whose operator
/// is not a SemLaplacian: the order-1 level, held as a matrix). InvalidArgument for j out of range.
std::shared_ptr<const SemSpace> pmg_level_space(const Hierarchy& h, std::size_t j);

/// Options of SemPoissonPlan; SemPoissonOptions{} holds the defaults.
/// The base of the pMG smoothers (SemPoissonOptions::base).
enum class SemSmootherBase { Jacobi, ASM, ASMWeighted, RAS };
/// "jacobi", "asm", "asm-weighted", "ras"; InvalidArgument naming an unknown value.
SemSmootherBase sem_smoother_base_from_string(const std::string& s);
std::string to_string(SemSmootherBase b);

struct SemPoissonOptions {
  int order = 7;                 ///< p of the discretisation, in [2, kMaxSemOrder]
  std::vector<int> schedule;     ///< pMG orders finest first (empty: default_pmg_schedule(order))
  int pre = 2;                   ///< m: pre-smoothing Chebyshev order, >= 0
  int post = 2;                  ///< n: post-smoothing Chebyshev order, >= 0 (m + n >= 1; PCG needs m = n)
  /// Per-level Chebyshev orders, one per smoothed level (schedule size - 1, finest first), each
  /// >= 1, replacing pre / post there (VCycleOptions::level_orders); empty: pre / post everywhere.
  std::vector<int> level_orders;
  Polynomial polynomial = Polynomial::Cheby4Opt;  ///< Chebyshev kind (Simple not refused)
  /// The preconditioner the Chebyshev polynomial runs over on every level of order >= 2: Jacobi
  /// (the exact SEM diagonal) or an overlapping Schwarz method with fast-diagonalisation local
  /// solves (sem_schwarz.hpp): ASM, weighted ASM (W^1/2 ASM W^1/2, W the inverse multiplicity:
  /// symmetric, its spectrum clustered near 1) or RAS (not symmetric: method fgmres or gmres).
  /// Default weighted ASM (issue 33): on Kershaw meshes its PCG iterations stay flat in p (29 / 32
  /// / 34 at p = 3 / 5 / 7, eps = 0.3, n = 6, against Jacobi's 45 / 62 / 80); Jacobi is cheaper per
  /// cycle and as fast on undeformed boxes (docs/multigrid.md).
  SemSmootherBase base = SemSmootherBase::ASMWeighted;
  /// Arithmetic of the Schwarz local solves (base asm / asm-weighted / ras): fp32 (default, as
  /// nekRS: the fast-diagonalisation factors and local arrays in float, 1.3-1.5x faster local
  /// solves, the same PCG iterations, also at rtol 1e-12) or fp64 (SchwarzPrecision).
  SchwarzPrecision schwarz_precision = SchwarzPrecision::Single;
  /// Schwarz bases: the levels of order <= this solve their local problems exactly on the
  /// elements' own nodes (SchwarzLocalSolver::Element: a dense A_e^-1 of (N^3)^2 values an
  /// element, exact on any geometry), the others by fast diagonalisation of the one-layer-extended
  /// element's box (FDM, blind to shear). 0: FDM everywhere. In [0, kMaxSemOrder].
  int schwarz_element_max_order = 0;
  double lambda_safety = 1.1;    ///< lambda_max = this x the Lanczos estimate of rho(D^-1 A); > 0
  int lambda_iterations = 10;    ///< Lanczos steps of that estimate, >= 1
  double lmin_ratio = 0.1;       ///< cheb1: lambda_min / lambda_max, in (0, 1)
  PmgCoarseSolver coarse = default_pmg_coarse_solver();  ///< order-1 solve (PMultigridOptions::coarse)
  BoomerAmgOptions boomeramg;    ///< BoomerAMG's settings of that solve
  krylov::Method method = krylov::Method::Cg;  ///< outer Krylov method: cg (PCG), fgmres or gmres
  double rtol = 1e-8;            ///< stop at ||b - A x|| <= rtol ||b - A x_0||, in (0, 1)
  double atol = 0.0;             ///< ... or at ||b - A x|| <= atol, >= 0
  int max_iterations = 500;      ///< outer iterations, >= 1
  int restart = 30;              ///< (F)GMRES restart length, >= 1
  int threads = 0;               ///< threads of every kernel (0: omp_get_max_threads()), >= 0
  /// Chebyshev order tuning at set-up (SemPoissonPlan::tuning()), 0: off; else in [1, 1000].
  /// When > 0, pre == post and level_orders is empty, the plan raises pre = post from their value
  /// (at most kMaxTunedChebyshevOrder) until the Krylov method reaches rtol in at most this many
  /// iterations on the sub-problem of the last smoothed level: the hierarchy's orders (q, 1), q
  /// the schedule's last order above 1, b uniform in [-1, 1] (fixed seed), x0 = 0, at most
  /// 10 x target iterations a trial (a trial stopped there counts that many). Next order
  /// after a trial of order k with m > target iterations: max(k + 1, ceil(1.2 k m / target)): the
  /// iterations fall like 1 / k with the 4th-kind polynomials, k m growing by up to 20% from k = 2
  /// to 8 (measured on Kershaw meshes, docs/multigrid.md). The order-q problem is several times
  /// cheaper than the fine one, and its iterations are within 1.3x of the fine problem's on the
  /// Kershaw meshes (the schedule keeps them flat in p). Default 30: on the Kershaw meshes of
  /// docs/multigrid.md the fine problem then needs at most 40 PCG iterations; an undistorted mesh
  /// keeps order 2 (one trial of about 7 iterations). The trials cost set-up time: about two
  /// solves of the order-q problem on a distorted mesh (where the fine problem is order 3 itself,
  /// more than its solve); set 0 for one-off solves of small problems. Iteration counts, hence the
  /// order chosen, may differ by thread count (reduction order). The rule assumes the 4th-kind
  /// polynomials (opt4, cheb4): cheb1's iterations fall more slowly, and the tuning may stop at
  /// order 12 above the target (kershaw:6,0.05, p = 3: 35). With base Jacobi the iterations grow
  /// with p, so the fine problem may need more than the sub-problem (46 against 29 at p = 5,
  /// kershaw:6,0.05); the Schwarz bases keep them flat.
  int tune_iterations = 30;
};

/// Largest Chebyshev order the set-up tuning picks (SemPoissonOptions::tune_iterations).
inline constexpr int kMaxTunedChebyshevOrder = 12;

/// One trial of the set-up's Chebyshev order tuning.
struct SemOrderTrial {
  int order = 0;           ///< pre = post of the trial
  int iterations = 0;      ///< Krylov iterations of the trial solve
  bool converged = false;  ///< whether it reached rtol within max_iterations
  double seconds = 0;      ///< wall time of the trial (cycle set-up and solve)
};

/// The V-cycle options of a SemPoissonOptions (pre / post, per-level Chebyshev orders, smoother
/// kind and base, the lambda_max estimate, threads): what SemPoissonPlan builds its cycle with, for
/// programs that assemble their own hierarchy (bench/sem) and must smooth the same way.
VCycleOptions sem_vcycle_options(const SemPoissonOptions& o);

/// What one solve did: the Krylov statistics (iterations, residual_history relative to ||r_0||,
/// converged, final_relative_residual) and the time.
struct SemSolveResult : krylov::Result {
  double solve_seconds = 0;        ///< wall time of this solve
  /// With a SolutionProjection: ||b - A x0|| / ||b|| of the projected initial guess (1 without,
  /// or with an empty basis) and the basis size before / after.
  double projected_residual = 1;
  std::size_t basis_before = 0, basis_after = 0;
};

/// The SEM Poisson problem -Laplace(u) = f, u = 0 on the boundary of a hexahedral mesh, at order
/// p, solved by a Krylov method preconditioned with one pMG V-cycle (Chebyshev smoothing over
/// weighted ASM by default, or Jacobi / ASM / RAS; BoomerAMG or direct order-1 solve). Set up once, solve() many times. Solves are not
/// thread-safe on one plan (the cycle's work vectors).
class SemPoissonPlan {
 public:
  /// Builds the space of order opt.order on `mesh`, the hierarchy (pmg_hierarchy) and the V-cycle,
  /// then tunes the Chebyshev order (SemPoissonOptions::tune_iterations; tuning()).
  /// Throws InvalidArgument naming the option out of range (the ranges of SemPoissonOptions;
  /// method cg with pre != post or with a BoomerAMG relaxation that is not symmetric: the cycle
  /// is not symmetric), and what SemSpace, pmg_hierarchy, the smoothers and the tuning's Krylov
  /// solves throw (a bad mesh, NumericalError, ResourceError).
  explicit SemPoissonPlan(HexMesh mesh, const SemPoissonOptions& opt = {});
  ~SemPoissonPlan();
  SemPoissonPlan(SemPoissonPlan&&) noexcept;
  SemPoissonPlan& operator=(SemPoissonPlan&&) noexcept;

  /// Unknowns: the free nodes of the order-p space.
  std::size_t size() const;
  const SemSpace& space() const;
  /// The fine operator A (SemLaplacian of order p).
  const SemLaplacian& op() const;
  const Hierarchy& hierarchy() const;
  const VCycle& cycle() const;
  const SemPoissonOptions& options() const { return opt_; }
  /// Wall time of the constructor (spaces, operators, diagonals, P, order-1 matrix, coarse
  /// set-up, smoother estimates).
  double setup_seconds() const { return setup_seconds_; }
  /// The Chebyshev order tuning's trials in order (SemPoissonOptions::tune_iterations; empty when
  /// it did not run). The order chosen is options().pre (= post), which the tuning updated.
  const std::vector<SemOrderTrial>& tuning() const { return tuning_; }

  /// b = (B f) on the free nodes: the right-hand side of -Laplace(u) = f with GLL quadrature
  /// (B the assembled diagonal mass matrix, SemSpace::mass()); f(x, y, z) at the node
  /// coordinates. Throws InvalidArgument for an empty f, NumericalError for a non-finite value.
  std::vector<double> load_vector(const std::function<double(double, double, double)>& f) const;

  /// Solves A x = b (length size(); x holds the initial guess on entry, the solution on exit)
  /// with the plan's Krylov method and rtol / atol / max_iterations. Not converging is reported
  /// (converged = false), not thrown. Throws InvalidArgument for null vectors or a non-finite b;
  /// NumericalError from the Krylov solver (NaN / Inf, breakdown).
  SemSolveResult solve(const double* b, double* x) const;
  /// The same with Fischer's projection onto previous solutions (krylov/projection.hpp): x's
  /// value on entry is not used; the inner solve from the projected guess stops at
  /// ||r|| <= max(atol, rtol ||b||), so a good projection saves iterations. residual_history is
  /// relative to ||b||. InvalidArgument when proj.size() != size().
  SemSolveResult solve(const double* b, double* x, krylov::SolutionProjection& proj) const;

 private:
  SemPoissonOptions opt_;
  std::shared_ptr<const SemSpace> space_;
  std::shared_ptr<const SemLaplacian> A_;
  std::shared_ptr<const Hierarchy> h_;
  std::unique_ptr<VCycle> cycle_;
  double setup_seconds_ = 0;
  std::vector<SemOrderTrial> tuning_;
  void tune_chebyshev_order();
};

}  // namespace elliptica::multigrid
