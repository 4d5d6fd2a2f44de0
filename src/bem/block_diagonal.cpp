/// @file block_diagonal.cpp
/// Block-diagonal preconditioner over octree boxes (see include/elliptica/bem/block_diagonal.hpp)
/// and the preconditioned GMRES solve of the dense Burton-Miller plan (solve_preconditioned; the
/// GMRES call itself, solve_with_preconditioner, uses the plan's GMRES options and threads).
#include "elliptica/bem/block_diagonal.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>

#include <Eigen/Dense>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "solve_common.hpp"

namespace elliptica::bem {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

BlockFunction dense_block_function(const CMatrix& A) {
  const CMatrix* M = &A;
  return [M](const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols, cplx* out) {
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (std::size_t b = 0; b < cols.size(); ++b)
        out[a * cols.size() + b] = (*M)(static_cast<std::size_t>(rows[a]), static_cast<std::size_t>(cols[b]));
  };
}

struct BlockDiagonalPreconditioner::Impl {
  struct Block {
    std::vector<std::int64_t> idx;
    Eigen::PartialPivLU<Eigen::MatrixXcd> lu;
  };
  std::size_t n = 0;
  int level = 0;
  std::vector<Block> blocks;
  std::size_t largest = 0;
  int threads = 1;  // resolved OpenMP thread count of the set-up and apply()
  double setup_seconds = 0;
  mutable std::atomic<long> applications{0};
  mutable std::mutex time_mutex;
  mutable double apply_seconds = 0;
};

BlockDiagonalPreconditioner::BlockDiagonalPreconditioner(const fmm::Octree& tree, const BlockFunction& block, int level,
                                                         int threads)
    : impl_(std::make_unique<Impl>()) {
  const auto t0 = Clock::now();
  if (!block) throw InvalidArgument("bem: block-diagonal preconditioner: empty block function");
  if (threads < 0)
    throw InvalidArgument("bem: block-diagonal preconditioner: threads must be >= 0 (0: all available), got " +
                          std::to_string(threads));
  impl_->threads = resolve_threads(threads);
  const int leaf = tree.leaf_level();
  if (level < 0) level = leaf;
  if (level > leaf)
    throw InvalidArgument("bem: block-diagonal level l_BD = " + std::to_string(level) + " exceeds the octree leaf level " +
                          std::to_string(leaf));
  Impl& im = *impl_;
  im.level = level;
  const auto& perm = tree.permutation();
  im.n = perm.size();
  const auto& nodes = tree.nodes();
  const auto& ids = tree.level_nodes(level);
  im.blocks.resize(ids.size());
  std::size_t covered = 0;
  for (std::size_t b = 0; b < ids.size(); ++b) {
    const auto& nd = nodes[static_cast<std::size_t>(ids[b])];
    auto& idx = im.blocks[b].idx;
    idx.assign(perm.begin() + nd.begin, perm.begin() + nd.end);
    covered += idx.size();
    im.largest = std::max(im.largest, idx.size());
  }
  if (covered != im.n)
    throw InvalidArgument("bem: block-diagonal preconditioner: the octree boxes at level " + std::to_string(level) +
                          " cover " + std::to_string(covered) + " of " + std::to_string(im.n) + " points");
  const auto nb = static_cast<std::ptrdiff_t>(im.blocks.size());
  // Eigen's LU below must not fork a team of its own when im.threads is 1 (parallel.hpp)
  with_threads(im.threads, [&] {
    ParallelErrors errors;  // the first failure of any block, rethrown after the region
#pragma omp parallel for schedule(dynamic, 1) num_threads(im.threads)
    for (std::ptrdiff_t b = 0; b < nb; ++b) {
      if (errors.failed()) continue;
      auto& blk = im.blocks[static_cast<std::size_t>(b)];
      const auto m = static_cast<Eigen::Index>(blk.idx.size());
      try {
        // Block function fills row-major; Eigen's default is column-major.
        Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> a(m, m);
        block(blk.idx, blk.idx, a.data());
        if (!a.allFinite()) throw NumericalError("non-finite matrix entries in the block of box " + std::to_string(b));
        Eigen::MatrixXcd ac = a;
        blk.lu.compute(ac);
        const double rc = blk.lu.rcond();
        if (std::isnan(rc))
          throw NumericalError("the LU factorisation of the diagonal block of box " + std::to_string(b) + " (" +
                               std::to_string(m) + " elements, largest entry " + std::to_string(a.cwiseAbs().maxCoeff()) +
                               ") overflowed: the system matrix is too badly scaled for double precision (e.g. a "
                               "Burton-Miller alpha far too large or small)");
        if (!(rc > 1e-14))
          throw NumericalError("the diagonal block of box " + std::to_string(b) + " (" + std::to_string(m) +
                               " elements) is singular (reciprocal condition estimate " + std::to_string(rc) + ")");
      } catch (const NumericalError& e) {
        errors.record(std::make_exception_ptr(NumericalError(std::string("bem: block-diagonal preconditioner: ") + e.what())));
      } catch (...) {  // out of memory, or an error of the block function: as it is
        errors.record(std::current_exception());
      }
    }
    errors.rethrow();
  });
  im.setup_seconds = since(t0);
}

BlockDiagonalPreconditioner::~BlockDiagonalPreconditioner() = default;

std::size_t BlockDiagonalPreconditioner::size() const { return impl_->n; }
int BlockDiagonalPreconditioner::level() const { return impl_->level; }
std::size_t BlockDiagonalPreconditioner::num_blocks() const { return impl_->blocks.size(); }
std::size_t BlockDiagonalPreconditioner::largest_block() const { return impl_->largest; }
double BlockDiagonalPreconditioner::setup_seconds() const { return impl_->setup_seconds; }
long BlockDiagonalPreconditioner::applications() const { return impl_->applications.load(); }
double BlockDiagonalPreconditioner::apply_seconds_total() const {
  std::lock_guard<std::mutex> lk(impl_->time_mutex);
  return impl_->apply_seconds;
}

void BlockDiagonalPreconditioner::apply(const cplx* r, cplx* z) const {
  const auto t0 = Clock::now();
  const Impl& im = *impl_;
  const auto nb = static_cast<std::ptrdiff_t>(im.blocks.size());
  ParallelErrors errors;  // the block vectors allocate: nothing may escape the region
#pragma omp parallel for schedule(dynamic, 1) if (nb > 1 && im.threads > 1) num_threads(im.threads)
  for (std::ptrdiff_t b = 0; b < nb; ++b) {
    if (errors.failed()) continue;
    try {
      const auto& blk = im.blocks[static_cast<std::size_t>(b)];
      const auto m = static_cast<Eigen::Index>(blk.idx.size());
      Eigen::VectorXcd v(m);
      for (Eigen::Index a = 0; a < m; ++a) v[a] = r[blk.idx[static_cast<std::size_t>(a)]];
      const Eigen::VectorXcd w = blk.lu.solve(v);
      for (Eigen::Index a = 0; a < m; ++a) z[blk.idx[static_cast<std::size_t>(a)]] = w[a];
    } catch (...) {
      errors.record(std::current_exception());
    }
  }
  errors.rethrow();
  im.applications.fetch_add(1);
  const double dt = since(t0);
  std::lock_guard<std::mutex> lk(im.time_mutex);
  im.apply_seconds += dt;
}

std::vector<std::array<double, 3>> centroids(const Mesh& mesh) {
  std::vector<std::array<double, 3>> c(mesh.num_elements());
  for (std::size_t e = 0; e < c.size(); ++e) c[e] = mesh.centroid(e);
  return c;
}

SurfaceSolution solve_preconditioned(const HelmholtzBemDense& plan, const IncidentField& inc,
                                     const PreconditionedSolveOptions& opt, PreconditionedSolveInfo* info) {
  PreconditionedSolveInfo inf;
  inf.kind = opt.kind;
  std::unique_ptr<BlockDiagonalPreconditioner> bd;
  if (opt.kind == PreconditionerKind::BlockDiagonal) {
    const auto t0 = Clock::now();
    fmm::Octree tree(centroids(plan.mesh()), opt.tree);
    bd = std::make_unique<BlockDiagonalPreconditioner>(tree, dense_block_function(plan.matrix()), opt.bd_level,
                                                       plan.options().threads);
    inf.setup_seconds = since(t0);
    inf.bd_level = bd->level();
    inf.leaf_level = tree.leaf_level();
    inf.blocks = bd->num_blocks();
    inf.largest_block = bd->largest_block();
  }
  const auto t1 = Clock::now();
  SurfaceSolution s;
  try {
    s = solve_with_preconditioner(plan, inc, bd.get(), opt.progress);
  } catch (...) {
    if (info) {
      inf.gmres_seconds = since(t1);
      *info = inf;
    }
    throw;
  }
  inf.gmres_seconds = since(t1);
  if (bd) {
    inf.precond_apply_seconds = bd->apply_seconds_total();
    inf.precond_applications = bd->applications();
  }
  s.solve_seconds += inf.setup_seconds;
  if (info) *info = inf;
  return s;
}

SurfaceSolution solve_with_preconditioner(const HelmholtzBemDense& plan, const IncidentField& inc,
                                          const LinearOperator<cplx>* M, const std::function<void(int, double)>& progress) {
  const DenseMatrixOperator A(plan.matrix(), plan.options().threads);
  krylov::Options g = plan.gmres_options();
  if (progress) g.progress = progress;
  return detail::gmres_surface_solve(A, plan.rhs(inc), M, plan.options().bc, plan.k(), g,
                                     plan.options().throw_if_not_converged, M ? " (preconditioned)" : "",
                                     plan.ones_image().empty() ? nullptr : &plan.ones_image());
}

}  // namespace elliptica::bem
