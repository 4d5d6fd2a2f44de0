// FMM-accelerated Burton-Miller operator (include/elliptica/bem/fmm_operator.hpp).
#include "elliptica/bem/fmm_operator.hpp"

#include <chrono>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::bem {

struct HelmholtzBemFmmOperator::Impl {
  std::size_t n = 0;
  cplx k, alpha;
  BoundaryCondition bc;
  std::unique_ptr<fmm::HelmholtzFmm> fmm;
  std::vector<std::int64_t> src_elem;   // element of each quadrature source
  std::vector<double> src_weight;       // area * w
  // near field, CSR by row (element)
  std::vector<std::int64_t> row_ptr, col;
  std::vector<cplx> val;
  double setup_seconds = 0;
};

HelmholtzBemFmmOperator::HelmholtzBemFmmOperator(const Mesh& mesh, cplx k, const FmmOperatorOptions& opt)
    : impl_(std::make_shared<Impl>()) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& I = *impl_;
  I.n = mesh.num_elements();
  if (I.n == 0) throw InvalidArgument("bem: FMM operator: empty mesh");
  I.k = k;
  I.bc = opt.bc;
  I.alpha = opt.alpha ? *opt.alpha : cplx(0, 1) / k;
  if (!std::isfinite(I.alpha.real()) || !std::isfinite(I.alpha.imag()) || I.alpha == cplx(0, 0))
    throw InvalidArgument("bem: Burton-Miller alpha must be finite and nonzero");
  const auto& rule = quadrature::triangle_rule(opt.quadrature.far_points);  // validates far_points
  std::vector<fmm::Point3> cent(I.n), nrm(I.n), ys, nys;
  std::vector<std::int64_t> owner;
  for (std::size_t e = 0; e < I.n; ++e) {
    cent[e] = mesh.centroid(e);
    nrm[e] = mesh.normal(e);
    const auto& t = mesh.triangles[e];
    const auto &a = mesh.vertices[t[0]], &b = mesh.vertices[t[1]], &c = mesh.vertices[t[2]];
    const double A = mesh.area(e);
    for (const auto& p : rule) {
      ys.push_back({p.l0 * a[0] + p.l1 * b[0] + p.l2 * c[0], p.l0 * a[1] + p.l1 * b[1] + p.l2 * c[1],
                    p.l0 * a[2] + p.l1 * b[2] + p.l2 * c[2]});
      nys.push_back(nrm[e]);
      owner.push_back(static_cast<std::int64_t>(e));
      I.src_elem.push_back(static_cast<std::int64_t>(e));
      I.src_weight.push_back(A * p.w);
    }
  }
  auto fo = opt.fmm;
  fo.near_field = false;
  I.fmm = std::make_unique<fmm::HelmholtzFmm>(cent, nrm, ys, nys, owner, k, fo);
  // near-field pairs: elements in adjacent leaves
  const auto& tree = I.fmm->tree();
  const auto& nodes = tree.nodes();
  const auto& perm = tree.permutation();
  std::vector<std::vector<std::int64_t>> cols(I.n);
  for (int id : tree.level_nodes(tree.leaf_level()))
    for (std::int64_t s = nodes[id].begin; s < nodes[id].end; ++s) {
      auto& cl = cols[perm[s]];
      for (int nb : tree.neighbours(id))
        for (std::int64_t u = nodes[nb].begin; u < nodes[nb].end; ++u) cl.push_back(perm[u]);
    }
  I.row_ptr.assign(I.n + 1, 0);
  for (std::size_t i = 0; i < I.n; ++i) I.row_ptr[i + 1] = I.row_ptr[i] + static_cast<std::int64_t>(cols[i].size());
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  pairs.reserve(I.row_ptr[I.n]);
  I.col.reserve(I.row_ptr[I.n]);
  for (std::size_t i = 0; i < I.n; ++i)
    for (auto j : cols[i]) {
      pairs.push_back({static_cast<std::int64_t>(i), j});
      I.col.push_back(j);
    }
  const std::size_t m = pairs.size();
  I.val.assign(m, 0.0);
  std::vector<cplx> A1(m), A2(m);
  if (I.bc == BoundaryCondition::Neumann) {
    assemble_entries(mesh, k, kDoubleLayer | kHypersingular, opt.quadrature, pairs, nullptr, A1.data(), nullptr, A2.data());
    for (std::size_t t = 0; t < m; ++t) I.val[t] = -A1[t] - I.alpha * A2[t];
  } else {
    assemble_entries(mesh, k, kSingleLayer | kAdjointDoubleLayer, opt.quadrature, pairs, A1.data(), nullptr, A2.data(), nullptr);
    const cplx beta = 1.0 / I.alpha;
    for (std::size_t t = 0; t < m; ++t) I.val[t] = A2[t] + beta * A1[t];
  }
  I.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t HelmholtzBemFmmOperator::size() const { return impl_->n; }
const fmm::HelmholtzFmm& HelmholtzBemFmmOperator::fmm() const { return *impl_->fmm; }
cplx HelmholtzBemFmmOperator::alpha() const { return impl_->alpha; }
std::size_t HelmholtzBemFmmOperator::near_entries() const { return impl_->val.size(); }
double HelmholtzBemFmmOperator::setup_seconds() const { return impl_->setup_seconds; }

void HelmholtzBemFmmOperator::apply(const cplx* x, cplx* y) const {
  const auto& I = *impl_;
  const std::size_t ns = I.src_elem.size();
  std::vector<cplx> dens(ns);
  for (std::size_t s = 0; s < ns; ++s) dens[s] = I.src_weight[s] * x[I.src_elem[s]];
  fmm::FmmResult r;
  if (I.bc == BoundaryCondition::Neumann) r = I.fmm->apply({}, dens);
  else r = I.fmm->apply(dens, {});
  const cplx beta = 1.0 / I.alpha;
  const auto N = static_cast<std::ptrdiff_t>(I.n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < N; ++i) {
    cplx v = 0.5 * x[i];
    if (I.bc == BoundaryCondition::Neumann) v += -r.potential[i] - I.alpha * r.normal_derivative[i];
    else v += r.normal_derivative[i] + beta * r.potential[i];
    for (std::int64_t t = I.row_ptr[i]; t < I.row_ptr[i + 1]; ++t) v += I.val[t] * x[I.col[t]];
    y[i] = v;
  }
}

std::vector<cplx> HelmholtzBemFmmOperator::apply(const std::vector<cplx>& x) const {
  if (x.size() != impl_->n)
    throw InvalidArgument("bem: FMM operator: vector has " + std::to_string(x.size()) + " entries, expected " +
                          std::to_string(impl_->n));
  std::vector<cplx> y(impl_->n);
  apply(x.data(), y.data());
  return y;
}

}  // namespace elliptica::bem
