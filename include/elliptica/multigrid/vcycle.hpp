#pragma once
/// @file vcycle.hpp
/// Multigrid V-cycle with polynomial smoothing of independent pre-order m and post-order n
/// (n = 0: the one-sided (2k,0) cycle of seed 003), usable as a stationary solver and as a
/// preconditioner for GMRES / FGMRES / PCG (PCG only when the cycle is symmetric).
///
/// One cycle on level j (b_j, x_j): pre-smooth with order m; r = b - A_j x; b_{j+1} = R_j r;
/// x_{j+1} = 0; cycle on level j+1 (the hierarchy's coarse solver on the coarsest level);
/// x += P_j x_{j+1}; post-smooth with order n.
/// The cycle is an operator (core/operator.hpp): apply(r, z) = one cycle from z = 0. It is a fixed
/// map when the coarse solver is (the banded Cholesky is; an inner krylov::Cg is not: use FGMRES
/// around such a cycle).
/// Cost convention (fine-grid matrix-vector products, as counted in the seed's study): a smoothing
/// of order k costs k products, the residual before restriction one, so a cycle costs m + n + 1;
/// the stationary solver adds one per iteration (plus one initially) for its residual check.
#include <functional>
#include <memory>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "elliptica/multigrid/smoother.hpp"

namespace elliptica::multigrid {

struct VCycleOptions {
  int pre = 2;               ///< m: pre-smoothing order (>= 0)
  int post = 2;              ///< n: post-smoothing order (>= 0); m + n >= 1
  SmootherOptions smoother;  ///< the smoother of every level but the coarsest
  /// Threads of every kernel of the cycle (residuals, transfers, smoothers: it replaces
  /// smoother.threads) through num_threads clauses; 0: omp_get_max_threads() at each call.
  int threads = 0;
  /// Per-level smoothing orders (nekRS's pMGSchedule gives a Chebyshev order per level): empty
  /// (the default) = pre / post on every level; otherwise one order k_j >= 1 per smoothed level
  /// (num_levels - 1 entries, finest first), level j then pre-smooths with k_j where pre > 0 and
  /// post-smooths with k_j where post > 0 (so (m, m) cycles stay symmetric, (m, 0) one-sided).
  std::vector<int> level_orders;
};

/// Holds per-level work vectors: not thread-safe for concurrent cycle/apply/solve calls (each
/// call itself may use OpenMP inside the matvecs and smoothers).
class VCycle : public LinearOperator<double> {
 public:
  /// Builds one Smoother per level except the coarsest, over the level's operator and diagonal
  /// (each with the level's GridShape; ASM/RAS need the level's matrix, or the level's external
  /// Schwarz operator Level::schwarz, which is used whenever it is set and the base is asm or ras).
  /// Throws InvalidArgument on m < 0, n < 0 or m + n = 0, threads < 0, a hierarchy without a
  /// coarse solver, level_orders of the wrong length or with an order < 1 (and whatever the
  /// smoother throws).
  VCycle(std::shared_ptr<const Hierarchy> h, const VCycleOptions& opt);
  VCycle(Hierarchy h, const VCycleOptions& opt);
  ~VCycle() override;

  std::size_t size() const override;
  /// z = one cycle applied to A z = r from z = 0.
  void apply(const double* r, double* z) const override;
  /// True when m == n and the smoother is symmetric (base Jacobi or ASM; RAS is not).
  bool is_symmetric() const override;
  /// True when the coarse solver is a fixed map.
  bool is_fixed() const override;

  /// One V-cycle for A x = b improving x in place (length size()).
  void cycle(const double* b, double* x) const;
  /// Stationary iteration x <- cycle(x) until ||b - A x|| <= rtol ||b - A x_0|| or max_iter cycles.
  /// Result: iterations = cycles, residual_history (relative, entry 0 is 1),
  /// operator_applications = fine-grid matvecs by the cost convention above,
  /// preconditioner_applications = cycles. Throws InvalidArgument on bad rtol / max_iter / null
  /// pointers, NumericalError when the iteration produces NaN/Inf. `progress` (may be empty) is
  /// called after every cycle with (cycle, relative residual).
  krylov::Result solve(const double* b, double* x, double rtol, int max_iter,
                       const std::function<void(int, double)>& progress = {}) const;
  /// The same, also stopping at ||b - A x|| <= atol (>= 0; a warm start below it does no cycle).
  krylov::Result solve(const double* b, double* x, double rtol, double atol, int max_iter,
                       const std::function<void(int, double)>& progress = {}) const;

  /// Fine-grid matvecs per cycle by the seed's cost convention: m + n + 1 (a smoothing of order k
  /// counts k, plus the residual before restriction). A cycle that starts from zero (apply(), the
  /// coarse levels) skips the smoother's initial residual, so it does one fewer product.
  /// With level_orders: the finest level's orders.
  long matvecs_per_cycle() const { return pre_[0] + post_[0] + 1; }
  const Hierarchy& hierarchy() const { return *h_; }
  const VCycleOptions& options() const { return opt_; }
  const Smoother& smoother(std::size_t level) const { return smoothers_.at(level); }

 private:
  void cycle_level(std::size_t j, const double* b, double* x, bool x_is_zero) const;

  std::shared_ptr<const Hierarchy> h_;
  VCycleOptions opt_;
  std::vector<Smoother> smoothers_;
  std::vector<int> pre_, post_;  ///< smoothing orders per level (level_orders or pre / post)
  mutable std::vector<std::vector<double>> r_, bc_, xc_;  ///< work vectors per level
};

}  // namespace elliptica::multigrid
