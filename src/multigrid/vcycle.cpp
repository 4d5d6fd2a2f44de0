/// @file vcycle.cpp
/// V-cycle with independent pre/post polynomial smoothing; stationary solver and preconditioner.
#include "elliptica/multigrid/vcycle.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"

namespace elliptica::multigrid {
namespace {

double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

}  // namespace

VCycle::VCycle(Hierarchy h, const VCycleOptions& opt)
    : VCycle(std::make_shared<const Hierarchy>(std::move(h)), opt) {}

VCycle::VCycle(std::shared_ptr<const Hierarchy> h, const VCycleOptions& opt) : h_(std::move(h)), opt_(opt) {
  if (!h_) throw InvalidArgument("VCycle: null hierarchy");
  if (opt_.pre < 0 || opt_.post < 0 || opt_.pre + opt_.post < 1)
    throw InvalidArgument("VCycle: smoothing orders (m, n) = (" + std::to_string(opt_.pre) + ", " +
                          std::to_string(opt_.post) + ") must be >= 0 with m + n >= 1");
  if (opt_.threads < 0) throw InvalidArgument("VCycle: threads must be >= 0, got " + std::to_string(opt_.threads));
  if (!h_->coarse_solver()) throw InvalidArgument("VCycle: the hierarchy has no coarse solver");
  const std::size_t L = h_->num_levels();
  if (!opt_.level_orders.empty()) {
    if (opt_.level_orders.size() + 1 != L)
      throw InvalidArgument("VCycle: level_orders has " + std::to_string(opt_.level_orders.size()) +
                            " entries, the hierarchy has " + std::to_string(L > 0 ? L - 1 : 0) + " smoothed levels");
    for (std::size_t j = 0; j < opt_.level_orders.size(); ++j)
      if (opt_.level_orders[j] < 1)
        throw InvalidArgument("VCycle: level_orders[" + std::to_string(j) + "] = " +
                              std::to_string(opt_.level_orders[j]) + " must be >= 1");
  }
  pre_.assign(std::max<std::size_t>(L, 1), opt_.pre);
  post_.assign(std::max<std::size_t>(L, 1), opt_.post);
  for (std::size_t j = 0; j < opt_.level_orders.size(); ++j) {
    pre_[j] = opt_.pre > 0 ? opt_.level_orders[j] : 0;
    post_[j] = opt_.post > 0 ? opt_.level_orders[j] : 0;
  }
  smoothers_.reserve(L > 0 ? L - 1 : 0);
  SmootherOptions so = opt_.smoother;
  so.threads = opt_.threads;
  for (std::size_t j = 0; j + 1 < L; ++j) {
    const Level& lv = h_->level(j);
    SmootherOptions sj = so;
    if (sj.base == BaseSmoother::Jacobi && !sj.lambda_max && lv.jacobi_lambda > 0.0)
      sj.lambda_max = sj.lambda_safety * lv.jacobi_lambda;  // the set-up's estimate of rho(D^-1 A)
    if (lv.schwarz && sj.base != BaseSmoother::Jacobi)
      smoothers_.emplace_back(*lv.A, lv.schwarz, sj);  // the level's own Schwarz operator (matrix-free levels)
    else
      smoothers_.emplace_back(*lv.A, lv.diagonal, sj, lv.shape);
  }
  r_.resize(L);
  bc_.resize(L);
  xc_.resize(L);
  // r_[j]: residual of level j < L-1; bc_[j], xc_[j]: right-hand side and correction of level
  // j > 0 (the fine level's are the caller's vectors: no unused fine-size vectors).
  for (std::size_t j = 0; j < L; ++j) {
    const std::size_t n = h_->level(j).rows();
    if (j + 1 < L) r_[j].assign(n, 0.0);
    if (j > 0) {
      bc_[j].assign(n, 0.0);
      xc_[j].assign(n, 0.0);
    }
  }
}

VCycle::~VCycle() = default;

std::size_t VCycle::size() const { return h_->level(0).rows(); }

bool VCycle::is_fixed() const { return h_->coarse_solver()->is_fixed(); }

namespace {
// r = b - A x on a level: one fused CSR sweep when the level has its matrix, else apply + update.
void level_residual(const Level& lv, const double* b, const double* x, double* r, int threads) {
  if (lv.matrix) {
    lv.matrix->residual(b, x, r, threads);
    return;
  }
  lv.A->apply(x, r);
  const auto n = static_cast<std::int64_t>(lv.rows());
  const int nt = resolve_threads(threads);
#pragma omp parallel for schedule(static) num_threads(nt) if (n > kParallelMinRows)
  for (std::int64_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
}
}  // namespace

bool VCycle::is_symmetric() const {
  return opt_.pre == opt_.post && opt_.smoother.base != BaseSmoother::RAS;
}

void VCycle::cycle_level(std::size_t j, const double* b, double* x, bool x_is_zero) const {
  const Level& lv = h_->level(j);
  if (j + 1 == h_->num_levels()) {
    h_->coarse_solve(b, x);
    return;
  }
  const std::size_t n = lv.rows();
  const int nt = opt_.threads;
  std::vector<double>& r = r_[j];
  const int pre = pre_[j], post = post_[j];
  if (pre > 0) {
    smoothers_[j].smooth(b, x, pre, x_is_zero);
    level_residual(lv, b, x, r.data(), nt);
  } else if (x_is_zero) {
    std::copy(b, b + n, r.begin());
  } else {
    level_residual(lv, b, x, r.data(), nt);
  }
  std::vector<double>& bc = bc_[j + 1];
  std::vector<double>& xc = xc_[j + 1];
  if (lv.transfer)
    lv.transfer->restrict_to_coarse(r.data(), bc.data());
  else
    lv.R.multiply(r.data(), bc.data(), nt);
  // The coarse problem starts from zero (its smoother skips the initial residual).
  if (pre == 0) std::fill(xc.begin(), xc.end(), 0.0);
  cycle_level(j + 1, bc.data(), xc.data(), true);
  if (lv.transfer) {
    lv.transfer->prolong(xc.data(), x, !(x_is_zero && pre == 0));
  } else if (x_is_zero && pre == 0) {
    lv.P.multiply(xc.data(), x, nt);
  } else {
    lv.P.multiply_add(xc.data(), x, 1.0, nt);
  }
  if (post > 0) smoothers_[j].smooth(b, x, post);
}

void VCycle::cycle(const double* b, double* x) const {
  if (!b || !x) throw InvalidArgument("VCycle::cycle: null vector");
  cycle_level(0, b, x, false);
}

void VCycle::apply(const double* r, double* z) const {
  if (!r || !z) throw InvalidArgument("VCycle::apply: null vector");
  cycle_level(0, r, z, true);
}

krylov::Result VCycle::solve(const double* b, double* x, double rtol, int max_iter,
                             const std::function<void(int, double)>& progress) const {
  return solve(b, x, rtol, 0.0, max_iter, progress);
}

krylov::Result VCycle::solve(const double* b, double* x, double rtol, double atol, int max_iter,
                             const std::function<void(int, double)>& progress) const {
  if (!b || !x) throw InvalidArgument("VCycle::solve: null vector");
  if (!(atol >= 0.0) || !std::isfinite(atol)) throw InvalidArgument("VCycle::solve: atol must be finite and >= 0");
  if (!(rtol > 0 && rtol < 1)) throw InvalidArgument("VCycle::solve: rtol must be in (0, 1)");
  if (max_iter < 0) throw InvalidArgument("VCycle::solve: max_iter must be >= 0");
  const std::size_t n = size();
  const Level& fine = h_->level(0);
  std::vector<double> r(n);
  auto residual = [&]() {
    level_residual(fine, b, x, r.data(), opt_.threads);
    return norm2(r);
  };
  krylov::Result res;
  const double r0 = residual();
  res.operator_applications = 1;
  if (!std::isfinite(r0)) throw NumericalError("VCycle::solve: the initial residual is not finite");
  res.residual_history.push_back(1.0);
  if (r0 == 0.0) {
    res.converged = true;
    return res;
  }
  if (r0 <= atol) {  // a warm start already within the absolute tolerance
    res.converged = true;
    res.final_relative_residual = 1.0;
    return res;
  }
  const double rel_target = std::max(rtol, atol / r0);
  double rel = 1.0;
  for (int it = 0; it < max_iter; ++it) {
    cycle_level(0, b, x, false);
    rel = residual() / r0;
    ++res.iterations;
    ++res.preconditioner_applications;
    res.operator_applications += matvecs_per_cycle() + 1;
    if (!std::isfinite(rel))
      throw NumericalError("VCycle::solve: residual became non-finite at cycle " + std::to_string(it + 1));
    res.residual_history.push_back(rel);
    if (progress) progress(it + 1, rel);
    if (rel <= rel_target) {
      res.converged = true;
      break;
    }
  }
  res.final_relative_residual = rel;
  return res;
}

}  // namespace elliptica::multigrid
