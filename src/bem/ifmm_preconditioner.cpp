// IFMM of the FMM-accelerated Burton-Miller operator (include/elliptica/bem/ifmm_preconditioner.hpp).
#include "elliptica/bem/ifmm_preconditioner.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>

#include "elliptica/core/error.hpp"

namespace elliptica::bem {

struct IfmmPreconditioner::Impl {
  std::unique_ptr<fmm::HelmholtzFmm> own;  // companion FMM (when the matvec FMM is not reused)
  const fmm::HelmholtzFmm* fmm = nullptr;
  std::unique_ptr<ifmm::Ifmm> M;
  int order = 0, depth = 0;
  double seconds = 0;
};

void validate(const IfmmPreconditionerOptions& opt) {
  ifmm::validate_options(opt.ifmm);
  if (opt.order != 0 && (opt.order < 2 || opt.order > 16))
    throw InvalidArgument("bem: IFMM Chebyshev order (--ifmm-order, ifmm_order) must be in [2, 16] or 0 (automatic), got " +
                          std::to_string(opt.order));
  if (opt.depth != -1 && opt.depth < 3)
    throw InvalidArgument("bem: IFMM tree depth (--ifmm-depth, ifmm_depth) must be >= 3 (or -1: automatic), got " +
                          std::to_string(opt.depth));
}

IfmmPreconditioner::IfmmPreconditioner(const HelmholtzBemFmmOperator& op, const IfmmPreconditionerOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& I = *impl_;
  const auto& mv = op.fmm();
  validate(opt);
  const int cap = op.max_tree_depth();
  int depth = opt.depth;
  if (depth < 0) {
    depth = std::max(3, mv.tree().leaf_level());
    if (depth > cap)
      throw InvalidArgument("bem: IFMM: the mesh is too coarse for a 4-level octree (deepest allowed leaf level " +
                            std::to_string(cap) + ", the IFMM needs >= 3): refine the mesh, or use --precond bd");
  } else if (depth < 3 || depth > cap) {
    throw InvalidArgument("bem: IFMM tree depth (--ifmm-depth, ifmm_depth) must be in [3, " + std::to_string(cap) + "], got " + std::to_string(depth));
  }
  const auto& root = mv.tree().nodes()[mv.tree().level_nodes(0)[0]];
  const double w2 = 2 * root.half_width / 4 + 2 * mv.box_margin();
  const int order = opt.order > 0 ? opt.order
                                  : std::clamp(fmm::choose_order(opt.ifmm.epsilon, mv.k(), w2), 2, kMaxIfmmOrder);
  if (order == mv.order() && depth == mv.tree().leaf_level()) {
    I.fmm = &mv;
  } else {
    I.own = op.make_fmm(order, depth);
    I.fmm = I.own.get();
  }
  I.order = order;
  I.depth = depth;
  const fmm::HelmholtzFmm& F = *I.fmm;
  const bool neumann = op.boundary_condition() == BoundaryCondition::Neumann;
  const cplx alpha = op.alpha(), beta = 1.0 / op.alpha();
  const auto& src_elem = op.source_elements();
  const auto& src_w = op.source_weights();
  const int p3 = order * order * order;
  ifmm::FmmSystem sys;
  sys.tree = &F.tree();
  sys.order = order;
  sys.entries = [&op](const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c, cplx* out) { op.entries(r, c, out); };
  sys.p2m = [&F, &src_elem, &src_w, neumann, p3](int leaf) {
    const auto& nd = F.tree().nodes()[leaf];
    const auto& perm = F.tree().permutation();
    const std::size_t n = static_cast<std::size_t>(nd.end - nd.begin);
    std::unordered_map<std::int64_t, std::size_t> col;
    for (std::size_t t = 0; t < n; ++t) col[perm[static_cast<std::size_t>(nd.begin) + t]] = t;
    const auto src = F.leaf_sources(leaf);
    const auto P = F.p2m_matrix(leaf, neumann);
    std::vector<cplx> out(static_cast<std::size_t>(p3) * n, 0.0);
    for (std::size_t s = 0; s < src.size(); ++s) {
      const auto e = src_elem[static_cast<std::size_t>(src[s])];
      const auto it = col.find(e);
      if (it == col.end()) throw NumericalError("bem: IFMM: a quadrature source lies in another leaf than its element");
      const double w = src_w[static_cast<std::size_t>(src[s])];
      for (int m = 0; m < p3; ++m) out[static_cast<std::size_t>(m) * n + it->second] += w * P[static_cast<std::size_t>(m) * src.size() + s];
    }
    return out;
  };
  sys.l2p = [&F, neumann, alpha, beta](int leaf) {
    const auto L = F.l2p_matrix(leaf, false);
    const auto D = F.l2p_matrix(leaf, true);
    std::vector<cplx> out(L.size());
    for (std::size_t t = 0; t < L.size(); ++t) out[t] = neumann ? -(L[t] + alpha * D[t]) : D[t] + beta * L[t];
    return out;
  };
  sys.m2m = [&F](int level, int octant) { return F.m2m_matrix(level, octant); };
  sys.m2l = [&F](int level, std::array<int, 3> t) { return F.m2l_matrix(level, t); };
  I.M = std::make_unique<ifmm::Ifmm>(sys, opt.ifmm);
  I.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

IfmmPreconditioner::~IfmmPreconditioner() = default;
std::size_t IfmmPreconditioner::size() const { return impl_->M->size(); }
void IfmmPreconditioner::apply(const cplx* r, cplx* z) const { impl_->M->apply(r, z); }
const ifmm::Ifmm& IfmmPreconditioner::ifmm() const { return *impl_->M; }
const ifmm::IfmmReport& IfmmPreconditioner::report() const { return impl_->M->report(); }
int IfmmPreconditioner::order() const { return impl_->order; }
int IfmmPreconditioner::depth() const { return impl_->depth; }
bool IfmmPreconditioner::reuses_matvec_fmm() const { return impl_->own == nullptr; }
double IfmmPreconditioner::setup_seconds() const { return impl_->seconds; }

}  // namespace elliptica::bem
