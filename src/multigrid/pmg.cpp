/// @file pmg.cpp
/// p-multigrid for the SEM Poisson operator: the schedule, the hierarchy of orders (matrix-free
/// levels, assembled order-1 level, BoomerAMG / direct coarse solve) and SemPoissonPlan.
#include "elliptica/multigrid/pmg.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"

namespace elliptica::multigrid {

namespace {

std::string list(const std::vector<int>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void check_pmg_schedule(const std::vector<int>& s) {
  if (s.empty()) throw InvalidArgument("p-multigrid schedule: empty (give the orders finest first, ending at 1)");
  if (s.front() < 2 || s.front() > kMaxSemOrder)
    throw InvalidArgument("p-multigrid schedule " + list(s) + ": the first (finest) order must be in [2, " +
                          std::to_string(kMaxSemOrder) + "], got " + std::to_string(s.front()));
  for (std::size_t i = 1; i < s.size(); ++i)
    if (s[i] >= s[i - 1])
      throw InvalidArgument("p-multigrid schedule " + list(s) + ": orders must decrease strictly, but order " +
                            std::to_string(s[i]) + " follows " + std::to_string(s[i - 1]));
  if (s.back() != 1)
    throw InvalidArgument("p-multigrid schedule " + list(s) + ": must end at order 1 (the coarse level), ends at " +
                          std::to_string(s.back()));
}

std::vector<int> default_pmg_schedule(int p) {
  if (p < 2 || p > kMaxSemOrder)
    throw InvalidArgument("default_pmg_schedule: the order must be in [2, " + std::to_string(kMaxSemOrder) +
                          "], got " + std::to_string(p));
  std::vector<int> s;
  for (int q = p; q > 1; q -= 2) s.push_back(q);
  s.push_back(1);
  return s;
}

PmgCoarseSolver default_pmg_coarse_solver() {
  return have_boomeramg() ? PmgCoarseSolver::BoomerAmg : PmgCoarseSolver::Direct;
}

PmgCoarseSolver pmg_coarse_solver_from_string(const std::string& s) {
  if (s == "boomeramg") return PmgCoarseSolver::BoomerAmg;
  if (s == "direct") return PmgCoarseSolver::Direct;
  throw InvalidArgument("unknown p-multigrid coarse solver '" + s + "' (expected boomeramg or direct)");
}

SemSmootherBase sem_smoother_base_from_string(const std::string& s) {
  if (s == "jacobi") return SemSmootherBase::Jacobi;
  if (s == "asm") return SemSmootherBase::ASM;
  if (s == "asm-weighted") return SemSmootherBase::ASMWeighted;
  if (s == "ras") return SemSmootherBase::RAS;
  throw InvalidArgument("unknown SEM smoother base '" + s + "' (expected jacobi, asm, asm-weighted or ras)");
}

std::string to_string(SemSmootherBase b) {
  switch (b) {
    case SemSmootherBase::Jacobi: return "jacobi";
    case SemSmootherBase::ASM: return "asm";
    case SemSmootherBase::ASMWeighted: return "asm-weighted";
    case SemSmootherBase::RAS: return "ras";
  }
  return "?";
}

std::string to_string(PmgCoarseSolver c) { return c == PmgCoarseSolver::BoomerAmg ? "boomeramg" : "direct"; }

Hierarchy pmg_hierarchy(std::shared_ptr<const SemSpace> fine, const PMultigridOptions& opt) {
  if (!fine) throw InvalidArgument("pmg_hierarchy: null space");
  if (opt.threads < 0) throw InvalidArgument("pmg_hierarchy: threads must be >= 0, got " + std::to_string(opt.threads));
  if (opt.schwarz_element_max_order < 0 || opt.schwarz_element_max_order > kMaxSemOrder)
    throw InvalidArgument("pmg_hierarchy: schwarz_element_max_order must be in [0, " + std::to_string(kMaxSemOrder) +
                          "], got " + std::to_string(opt.schwarz_element_max_order));
  const std::vector<int> schedule = opt.schedule.empty() ? default_pmg_schedule(fine->order()) : opt.schedule;
  check_pmg_schedule(schedule);
  if (schedule.front() != fine->order())
    throw InvalidArgument("pmg_hierarchy: the schedule " + list(schedule) + " starts at order " +
                          std::to_string(schedule.front()) + ", the space has order " + std::to_string(fine->order()));
  if (opt.coarse == PmgCoarseSolver::BoomerAmg) check_boomeramg_options(opt.boomeramg, "pmg_hierarchy: BoomerAMG");

  // Spaces, finest first (the fine one is the caller's).
  std::vector<std::shared_ptr<const SemSpace>> spaces{fine};
  for (std::size_t j = 1; j < schedule.size(); ++j)
    spaces.push_back(std::make_shared<const SemSpace>(fine->mesh(), schedule[j], opt.threads));
  const SemSpace& s1 = *spaces.back();
  if (s1.num_free() == 0)
    throw InvalidArgument("pmg_hierarchy: the order-1 space of this mesh has no free node (every vertex is on the "
                          "boundary); p-multigrid needs a mesh with an interior vertex (at least 2 elements per axis)");

  std::vector<Level> levels;
  levels.reserve(schedule.size());
  for (std::size_t j = 0; j + 1 < schedule.size(); ++j) {
    auto A = std::make_shared<const SemLaplacian>(spaces[j], opt.threads);
    Level lv;
    lv.diagonal = A->diagonal();
    lv.A = A;
    lv.transfer = std::make_shared<const PmgTransfer>(spaces[j + 1], spaces[j], opt.threads);
    if (opt.schwarz)
      lv.schwarz = std::make_shared<const SemSchwarz>(
          A, *opt.schwarz, opt.threads, opt.schwarz_precision,
          schedule[j] <= opt.schwarz_element_max_order ? SchwarzLocalSolver::Element : SchwarzLocalSolver::FDM);
    levels.push_back(std::move(lv));
  }
  CsrMatrix A1 = SemLaplacian(spaces.back(), opt.threads).assemble();
  levels.push_back(Level::from_matrix(std::move(A1), GridShape{}, opt.threads));
  const CsrMatrix& M1 = *levels.back().matrix;

  std::shared_ptr<const LinearOperator<double>> coarse;
  if (opt.coarse == PmgCoarseSolver::BoomerAmg && M1.rows > std::size_t(opt.boomeramg.max_coarse_size))
    coarse = std::make_shared<const BoomerAmgPreconditioner>(M1, opt.boomeramg);
  else
    coarse = std::make_shared<const SparseDirect>(M1);
  return Hierarchy(std::move(levels), std::move(coarse));
}

std::shared_ptr<const SemSpace> pmg_level_space(const Hierarchy& h, std::size_t j) {
  if (j >= h.num_levels())
    throw InvalidArgument("pmg_level_space: level " + std::to_string(j) + " of a hierarchy of " +
                          std::to_string(h.num_levels()));
  const auto* L = dynamic_cast<const SemLaplacian*>(h.level(j).A.get());
  return L ? L->space_ptr() : nullptr;
}

// ------------------------------------------------------------------------------------------------
// SemPoissonPlan

namespace {

void check_plan_options(const SemPoissonOptions& o) {
  const std::string w = "SemPoissonPlan: ";
  if (o.order < 2 || o.order > kMaxSemOrder)
    throw InvalidArgument(w + "order must be in [2, " + std::to_string(kMaxSemOrder) + "], got " +
                          std::to_string(o.order));
  if (!o.schedule.empty()) {
    check_pmg_schedule(o.schedule);
    if (o.schedule.front() != o.order)
      throw InvalidArgument(w + "the schedule " + list(o.schedule) + " must start at the order " +
                            std::to_string(o.order));
  }
  if (o.pre < 0 || o.post < 0 || o.pre + o.post < 1)
    throw InvalidArgument(w + "smoothing orders (pre, post) = (" + std::to_string(o.pre) + ", " +
                          std::to_string(o.post) + ") must be >= 0 with pre + post >= 1");
  if (o.method == krylov::Method::Cg && o.pre != o.post)
    throw InvalidArgument(w + "method cg needs a symmetric cycle (pre == post), got (" + std::to_string(o.pre) +
                          ", " + std::to_string(o.post) + "); use fgmres for one-sided cycles");
  if (!(o.lambda_safety > 0.0) || !std::isfinite(o.lambda_safety))
    throw InvalidArgument(w + "lambda_safety must be finite and > 0");
  if (o.lambda_iterations < 1) throw InvalidArgument(w + "lambda_iterations must be >= 1");
  if (!(o.lmin_ratio > 0.0 && o.lmin_ratio < 1.0)) throw InvalidArgument(w + "lmin_ratio must be in (0, 1)");
  if (!(o.rtol > 0.0 && o.rtol < 1.0)) throw InvalidArgument(w + "rtol must be in (0, 1), got " + std::to_string(o.rtol));
  if (!(o.atol >= 0.0) || !std::isfinite(o.atol)) throw InvalidArgument(w + "atol must be finite and >= 0");
  if (o.max_iterations < 1) throw InvalidArgument(w + "max_iterations must be >= 1");
  if (o.restart < 1) throw InvalidArgument(w + "restart must be >= 1");
  if (o.threads < 0) throw InvalidArgument(w + "threads must be >= 0, got " + std::to_string(o.threads));
  if (o.schwarz_element_max_order < 0 || o.schwarz_element_max_order > kMaxSemOrder)
    throw InvalidArgument(w + "schwarz_element_max_order must be in [0, " + std::to_string(kMaxSemOrder) +
                          "] (0: fast diagonalisation on every level), got " + std::to_string(o.schwarz_element_max_order));
  if (o.tune_iterations < 0 || o.tune_iterations > 1000)
    throw InvalidArgument(w + "tune_iterations must be in [0, 1000] (0: no tuning), got " +
                          std::to_string(o.tune_iterations));
}

krylov::Options krylov_options(const SemPoissonOptions& o) {
  krylov::Options k;
  k.rtol = o.rtol;
  k.atol = o.atol;
  k.max_iterations = o.max_iterations;
  k.restart = o.restart;
  k.threads = o.threads;
  return k;
}

}  // namespace

VCycleOptions sem_vcycle_options(const SemPoissonOptions& o) {
  VCycleOptions vo;
  vo.pre = o.pre;
  vo.post = o.post;
  vo.threads = o.threads;
  vo.level_orders = o.level_orders;
  vo.smoother.base = o.base == SemSmootherBase::Jacobi ? BaseSmoother::Jacobi
                     : o.base == SemSmootherBase::RAS  ? BaseSmoother::RAS
                                                       : BaseSmoother::ASM;
  vo.smoother.kind = o.polynomial;
  vo.smoother.lambda_safety = o.lambda_safety;
  vo.smoother.lambda_iterations = o.lambda_iterations;
  vo.smoother.lmin_ratio = o.lmin_ratio;
  return vo;
}

SemPoissonPlan::SemPoissonPlan(HexMesh mesh, const SemPoissonOptions& opt) : opt_(opt) {
  const auto t0 = std::chrono::steady_clock::now();
  check_plan_options(opt_);
  space_ = std::make_shared<const SemSpace>(std::move(mesh), opt_.order, opt_.threads);
  PMultigridOptions po;
  po.schedule = opt_.schedule;
  po.coarse = opt_.coarse;
  po.boomeramg = opt_.boomeramg;
  po.threads = opt_.threads;
  po.schwarz_precision = opt_.schwarz_precision;
  po.schwarz_element_max_order = opt_.schwarz_element_max_order;
  if (opt_.base == SemSmootherBase::ASM) po.schwarz = SchwarzKind::ASM;
  if (opt_.base == SemSmootherBase::ASMWeighted) po.schwarz = SchwarzKind::ASMWeighted;
  if (opt_.base == SemSmootherBase::RAS) po.schwarz = SchwarzKind::RAS;
  if (opt_.base == SemSmootherBase::RAS && opt_.method == krylov::Method::Cg)
    throw InvalidArgument("SemPoissonPlan: method cg needs a symmetric cycle, but the RAS smoother is not symmetric; "
                          "use method fgmres, or base asm / asm-weighted");
  h_ = std::make_shared<const Hierarchy>(pmg_hierarchy(space_, po));
  A_ = std::dynamic_pointer_cast<const SemLaplacian>(h_->level(0).A);
  cycle_ = std::make_unique<VCycle>(h_, sem_vcycle_options(opt_));
  // The Krylov solver's own checks (M symmetric for cg, fixed for gmres) once, here.
  krylov::validate_setup<double>("SemPoissonPlan", *A_, cycle_.get(), krylov_options(opt_),
                                 opt_.method == krylov::Method::Fgmres, opt_.method != krylov::Method::Cg);
  if (opt_.method == krylov::Method::Cg && !cycle_->is_symmetric())
    throw InvalidArgument("SemPoissonPlan: method cg needs a symmetric cycle");
  if (opt_.method == krylov::Method::Cg && !h_->coarse_solver()->is_symmetric())
    throw InvalidArgument("SemPoissonPlan: method cg needs a symmetric coarse solve, but the BoomerAMG cycle with "
                          "relaxation " + to_string(opt_.boomeramg.relaxation) +
                          " is not symmetric; use a symmetric relaxation or method fgmres");
  if (opt_.tune_iterations > 0 && opt_.pre == opt_.post && opt_.level_orders.empty() && h_->num_levels() >= 2)
    tune_chebyshev_order();
  setup_seconds_ = seconds_since(t0);
}

void SemPoissonPlan::tune_chebyshev_order() {
  // The sub-hierarchy of the last smoothed level and the coarse level (sharing their operators,
  // smoothers' set-up data and the coarse solver, which h_ keeps alive).
  const std::size_t L = h_->num_levels();
  std::vector<Level> lv{h_->level(L - 2), h_->level(L - 1)};
  const std::shared_ptr<const LinearOperator<double>> coarse(h_, h_->coarse_solver());
  const auto hs = std::make_shared<const Hierarchy>(std::move(lv), coarse);
  const LinearOperator<double>& Aq = *hs->level(0).A;
  const std::size_t n = Aq.size();
  std::vector<double> b(n), x(n);
  std::mt19937_64 rng(0x5eed33);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (double& v : b) v = uniform(rng);
  const int target = opt_.tune_iterations;
  krylov::Options ko = krylov_options(opt_);
  ko.atol = 0.0;                    // relative to this right-hand side only
  ko.max_iterations = 10 * target;  // the smoother's quality, whatever the solve's own cap
  int k = opt_.pre;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    SemPoissonOptions o = opt_;
    o.pre = o.post = k;
    const VCycle cyc(hs, sem_vcycle_options(o));
    std::fill(x.begin(), x.end(), 0.0);
    const auto solver = krylov::make_solver<double>(opt_.method, Aq, &cyc, ko);
    const krylov::Result r = solver->solve(b.data(), x.data());
    tuning_.push_back(SemOrderTrial{k, r.iterations, r.converged, seconds_since(t0)});
    if ((r.converged && r.iterations <= target) || k >= kMaxTunedChebyshevOrder) break;
    // Iterations ~ 1 / k, with k m growing slowly in k (docs/multigrid.md): aim 20% low.
    const int want = static_cast<int>(std::ceil(1.2 * static_cast<double>(k) * r.iterations / target));
    k = std::min(kMaxTunedChebyshevOrder, std::max(k + 1, want));
  }
  if (k != opt_.pre) {
    opt_.pre = opt_.post = k;
    cycle_ = std::make_unique<VCycle>(h_, sem_vcycle_options(opt_));
  }
}

SemPoissonPlan::~SemPoissonPlan() = default;
SemPoissonPlan::SemPoissonPlan(SemPoissonPlan&&) noexcept = default;
SemPoissonPlan& SemPoissonPlan::operator=(SemPoissonPlan&&) noexcept = default;

std::size_t SemPoissonPlan::size() const { return A_->size(); }
const SemSpace& SemPoissonPlan::space() const { return *space_; }
const SemLaplacian& SemPoissonPlan::op() const { return *A_; }
const Hierarchy& SemPoissonPlan::hierarchy() const { return *h_; }
const VCycle& SemPoissonPlan::cycle() const { return *cycle_; }

std::vector<double> SemPoissonPlan::load_vector(const std::function<double(double, double, double)>& f) const {
  if (!f) throw InvalidArgument("SemPoissonPlan::load_vector: empty function");
  const std::vector<double> B = space_->mass();
  const auto& c = space_->coordinates();
  const std::size_t n = size();
  std::vector<double> b(n);
  for (std::size_t g = 0; g < n; ++g) {
    const double v = f(c[3 * g], c[3 * g + 1], c[3 * g + 2]);
    if (!std::isfinite(v))
      throw NumericalError("SemPoissonPlan::load_vector: f is not finite at node " + std::to_string(g) + " (" +
                           std::to_string(c[3 * g]) + ", " + std::to_string(c[3 * g + 1]) + ", " +
                           std::to_string(c[3 * g + 2]) + ")");
    b[g] = B[g] * v;
  }
  return b;
}

SemSolveResult SemPoissonPlan::solve(const double* b, double* x) const {
  if (!b || !x) throw InvalidArgument("SemPoissonPlan::solve: null vector");
  const std::size_t n = size();
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(b[i]))
      throw InvalidArgument("SemPoissonPlan::solve: b[" + std::to_string(i) + "] is not finite");
  const auto t0 = std::chrono::steady_clock::now();
  const auto solver = krylov::make_solver<double>(opt_.method, *A_, cycle_.get(), krylov_options(opt_));
  SemSolveResult out;
  static_cast<krylov::Result&>(out) = solver->solve(b, x);
  out.solve_seconds = seconds_since(t0);
  return out;
}

SemSolveResult SemPoissonPlan::solve(const double* b, double* x, krylov::SolutionProjection& proj) const {
  if (!b || !x) throw InvalidArgument("SemPoissonPlan::solve: null vector");
  const std::size_t n = size();
  if (proj.size() != n)
    throw InvalidArgument("SemPoissonPlan::solve: the projection has " + std::to_string(proj.size()) +
                          " unknowns, the plan " + std::to_string(n));
  const auto t0 = std::chrono::steady_clock::now();
  krylov::Result inner_result;
  const auto inner = [&](const double* r, double* dx, double b_norm) -> krylov::Result {
    krylov::Options k = krylov_options(opt_);
    k.atol = std::max(k.atol, k.rtol * b_norm);  // stop relative to ||b||, not to ||r0||
    const auto solver = krylov::make_solver<double>(opt_.method, *A_, cycle_.get(), k);
    inner_result = solver->solve(r, dx);
    return inner_result;
  };
  const krylov::ProjectedResult pr = proj.solve(*A_, b, x, inner);
  SemSolveResult out;
  static_cast<krylov::Result&>(out) = inner_result;
  for (double& h : out.residual_history) h *= pr.projected_residual;  // relative to ||b||
  out.final_relative_residual = pr.final_residual;
  out.operator_applications += 1;  // w = A dx of the projection
  out.projected_residual = pr.projected_residual;
  out.basis_before = pr.basis_before;
  out.basis_after = pr.basis_after;
  out.solve_seconds = seconds_since(t0);
  return out;
}

}  // namespace elliptica::multigrid
