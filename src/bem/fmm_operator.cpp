// FMM-accelerated Burton-Miller operator (include/elliptica/bem/fmm_operator.hpp).
#include "elliptica/bem/fmm_operator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "quadratic_element.hpp"
#include "quadrature.hpp"
#include "solve_common.hpp"
#include "validate.hpp"

namespace elliptica::bem {

struct HelmholtzBemFmmOperator::Impl {
  std::size_t n = 0;            // elements of the mesh (rows, columns of the operator)
  std::size_t nw = 0;           // elements of W: the mesh and its mirror images ((1 + M) n)
  std::vector<double> factor;   // f of each block of n elements of W (1 for the mesh itself)
  cplx k, alpha;
  BoundaryCondition bc;
  Mesh mesh;                    // W (the mesh, or with planes the whole set), for entries() outside the near field
  QuadratureOptions quadrature;
  int threads = 1;  // resolved OpenMP threads (near field, FMM, apply)
  std::unique_ptr<fmm::HelmholtzFmm> fmm;
  std::vector<std::int64_t> src_elem;   // element of each quadrature source
  std::vector<double> src_weight;       // area * w
  // the FMM's points and sources, kept for companion FMMs (make_fmm)
  std::vector<fmm::Point3> cent, nrm, ys, nys;
  std::vector<std::int64_t> owner;
  fmm::HelmholtzFmmOptions fmm_options;
  int depth_cap = 12;  // deepest leaf level of a companion FMM
  // near field, CSR by row (element), columns ascending within a row
  std::vector<std::int64_t> row_ptr, col;
  std::vector<cplx> val;
  std::vector<cplx> ones_image;  // sound-hard: A 1
  double setup_seconds = 0, fmm_setup_seconds = 0;

  // The density on W of x (n values): f_m x on the m-th block.
  cplx xw(const cplx* x, std::int64_t j) const {
    const auto b = static_cast<std::size_t>(j) / n;
    return factor[b] * x[static_cast<std::size_t>(j) - b * n];
  }

  // Burton-Miller combination of the operator entries of `pairs` (without the 1/2 I).
  void combine(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, cplx* out) const {
    const std::size_t m = pairs.size();
    std::vector<cplx> A1(m), A2(m);
    if (bc == BoundaryCondition::Neumann) {
      assemble_entries(mesh, k, kDoubleLayer | kHypersingular, quadrature, pairs, nullptr, A1.data(), nullptr, A2.data(), threads);
      for (std::size_t t = 0; t < m; ++t) out[t] = -A1[t] - alpha * A2[t];
    } else {
      assemble_entries(mesh, k, kSingleLayer | kAdjointDoubleLayer, quadrature, pairs, A1.data(), nullptr, A2.data(), nullptr, threads);
      const cplx beta = 1.0 / alpha;
      for (std::size_t t = 0; t < m; ++t) out[t] = A2[t] + beta * A1[t];
    }
  }
};

HelmholtzBemFmmOperator::HelmholtzBemFmmOperator(const Mesh& mesh, cplx k, const FmmOperatorOptions& opt)
    : impl_(std::make_shared<Impl>()) {
  const auto t0 = std::chrono::steady_clock::now();
  auto& I = *impl_;
  I.n = mesh.num_elements();
  if (I.n == 0) throw InvalidArgument("bem: FMM operator: empty mesh");
  I.k = k;
  I.bc = opt.bc;
  I.factor = {1.0};
  if (opt.planes.empty()) {
    I.mesh = mesh;
  } else {
    for (const MirrorImage& im : mirror_images(opt.planes)) I.factor.push_back(im.factor);  // validates the planes
    I.mesh = whole_body(mesh, opt.planes);  // the mesh, then its images in mirror_images' order
  }
  I.nw = I.mesh.num_elements();
  I.quadrature = opt.quadrature;
  if (opt.threads < 0)
    throw InvalidArgument("bem: FMM operator: threads must be >= 0 (0: all available), got " + std::to_string(opt.threads));
  I.threads = resolve_threads(opt.threads);
  validate_wavenumber(k);
  detail::validate_mesh(mesh);
  const double kd_mesh = detail::validate_low_frequency(opt.bc, mesh, k);
  const double kd = opt.correction_kd >= 0 ? opt.correction_kd : kd_mesh;
  I.alpha = detail::coupling(opt.alpha, mesh, k);
  const auto& rule = quadrature::triangle_rule(opt.quadrature.far_points);  // validates far_points
  const Mesh& W = I.mesh;
  std::vector<fmm::Point3> cent(I.nw), nrm(I.nw), ys, nys;
  std::vector<std::int64_t> owner;
  for (std::size_t e = 0; e < I.nw; ++e) {
    cent[e] = W.centroid(e);
    nrm[e] = W.normal(e);
    if (W.curved()) {  // sources at the mapped rule points, with their own normals and |nJ| w / 2
      const auto E = detail::quadratic_element(W, e);
      for (const auto& p : rule) {
        fmm::Point3 y, nj;
        E.eval(p.l0, p.l1, p.l2, y, nj);
        const double J = std::sqrt(nj[0] * nj[0] + nj[1] * nj[1] + nj[2] * nj[2]);
        ys.push_back(y);
        nys.push_back({nj[0] / J, nj[1] / J, nj[2] / J});
        owner.push_back(static_cast<std::int64_t>(e));
        I.src_elem.push_back(static_cast<std::int64_t>(e));
        I.src_weight.push_back(0.5 * J * p.w);
      }
      continue;
    }
    const auto& t = W.triangles[e];
    const auto &a = W.vertices[t[0]], &b = W.vertices[t[1]], &c = W.vertices[t[2]];
    const double A = W.area(e);
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
  fo.threads = I.threads;
  // The FMM needs every quadrature source within half a leaf of its owner's leaf box: cap the leaf
  // level so that leaves stay at least 4 x (largest centroid-to-source distance) wide (coarse
  // meshes then get fewer, fuller leaves instead of an error).
  if (fo.tree.depth < 0) {
    double e = 0;
    for (std::size_t s = 0; s < ys.size(); ++s)
      for (int d = 0; d < 3; ++d) e = std::max(e, std::abs(ys[s][d] - cent[static_cast<std::size_t>(owner[s])][d]));
    double lo[3] = {cent[0][0], cent[0][1], cent[0][2]}, hi[3] = {lo[0], lo[1], lo[2]};
    for (const auto& c : cent)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], c[d]);
        hi[d] = std::max(hi[d], c[d]);
      }
    const double hw = 0.5 * std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
    if (e > 0 && hw > 0) {
      const int cap = static_cast<int>(std::floor(std::log2(0.5 * hw / (e * (1 + 1e-6)))));
      fo.tree.max_depth = std::max(0, std::min(fo.tree.max_depth, cap));
      // companion FMMs (make_fmm) may go one level deeper: leaves 2 e wide, the FMM's own limit
      I.depth_cap = std::max(0, std::min(opt.fmm.tree.max_depth, cap + 1));
    }
  }
  I.fmm = std::make_unique<fmm::HelmholtzFmm>(cent, nrm, ys, nys, owner, k, fo);
  if (fo.tree.depth >= 0) I.depth_cap = std::max(I.depth_cap, fo.tree.depth);
  I.fmm_options = fo;
  I.fmm_options.prebuilt_tree.reset();  // companion FMMs (make_fmm) build their own trees
  I.fmm_setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // near-field pairs: elements in adjacent leaves
  const auto& tree = I.fmm->tree();
  const auto& nodes = tree.nodes();
  const auto& perm = tree.permutation();
  {
    // Memory of the near field before it is allocated: per entry its column (8 bytes, twice while
    // the rows are gathered) and its value (16), plus one chunk of (row, column) pairs.
    double entries = 0;
    for (int id : tree.level_nodes(tree.leaf_level())) {
      double nbs = 0, rows = 0;
      for (int nb : tree.neighbours(id)) nbs += double(nodes[nb].end - nodes[nb].begin);
      for (std::int64_t s = nodes[id].begin; s < nodes[id].end; ++s) rows += perm[s] < static_cast<std::int64_t>(I.n);
      entries += rows * nbs;
    }
    const double chunk = entries / (opt.progress ? 50.0 : 1.0);
    require_memory(32.0 * entries + 16.0 * chunk,
                   "bem: the FMM operator's near field (" + std::to_string(static_cast<long long>(entries)) + " entries)");
  }
  std::vector<std::vector<std::int64_t>> cols(I.n);
  for (int id : tree.level_nodes(tree.leaf_level()))
    for (std::int64_t s = nodes[id].begin; s < nodes[id].end; ++s) {
      if (perm[s] >= static_cast<std::int64_t>(I.n)) continue;  // an image's row: not an unknown
      auto& cl = cols[perm[s]];
      for (int nb : tree.neighbours(id))
        for (std::int64_t u = nodes[nb].begin; u < nodes[nb].end; ++u) cl.push_back(perm[u]);
    }
  for (auto& cl : cols) std::sort(cl.begin(), cl.end());
  I.row_ptr.assign(I.n + 1, 0);
  for (std::size_t i = 0; i < I.n; ++i) I.row_ptr[i + 1] = I.row_ptr[i] + static_cast<std::int64_t>(cols[i].size());
  const auto m = static_cast<std::size_t>(I.row_ptr[I.n]);
  I.col.reserve(m);
  for (auto& cl : cols) {
    I.col.insert(I.col.end(), cl.begin(), cl.end());
    std::vector<std::int64_t>().swap(cl);
  }
  I.val.assign(m, 0.0);
  // assembled in chunks of rows so that progress can be reported
  const std::size_t chunks = opt.progress ? 50 : 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::size_t row = 0;
  for (std::size_t c = 1; c <= chunks; ++c) {
    const std::size_t row_end = I.n * c / chunks;
    if (row_end == row) continue;
    pairs.clear();
    for (std::size_t i = row; i < row_end; ++i)
      for (std::int64_t t = I.row_ptr[i]; t < I.row_ptr[i + 1]; ++t) pairs.push_back({static_cast<std::int64_t>(i), I.col[t]});
    I.combine(pairs, I.val.data() + I.row_ptr[row]);
    row = row_end;
    if (opt.progress) opt.progress(double(row) / double(I.n));
  }
  if (I.bc == BoundaryCondition::Neumann) {
    // A 1 (the GMRES deflation vector) and, at low frequency, the static correction of the
    // diagonal (helmholtz.hpp, "Low frequency" (1)); the diagonal entry lies in the near field
    // (an element's own leaf is adjacent to itself).
    const std::size_t n = I.n;
    I.ones_image = apply(std::vector<cplx>(n, cplx(1, 0)));
    if (detail::static_correction_applies(I.bc, kd)) {
      const std::vector<double> t = detail::static_ones_image(mesh);
      for (std::size_t i = 0; i < n; ++i) {
        const auto* b0 = I.col.data() + I.row_ptr[i];
        const auto* b1 = I.col.data() + I.row_ptr[i + 1];
        const auto* it = std::lower_bound(b0, b1, static_cast<std::int64_t>(i));
        if (it == b1 || *it != static_cast<std::int64_t>(i))
          throw NumericalError("bem: FMM operator: diagonal entry " + std::to_string(i) + " missing from the near field");
        I.val[static_cast<std::size_t>(it - I.col.data())] -= I.ones_image[i] - t[i];
        I.ones_image[i] = t[i];
      }
    }
  }
  I.cent = std::move(cent);
  I.nrm = std::move(nrm);
  I.ys = std::move(ys);
  I.nys = std::move(nys);
  I.owner = std::move(owner);
  I.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<fmm::HelmholtzFmm> HelmholtzBemFmmOperator::make_fmm(int order, int depth) const {
  const auto& I = *impl_;
  if (depth < 0 || depth > I.depth_cap)
    throw InvalidArgument("bem: FMM operator: tree depth " + std::to_string(depth) + " outside [0, " + std::to_string(I.depth_cap) +
                          "] (leaves must stay wider than 4 x the elements' extent)");
  if (I.nw != I.n) throw InvalidArgument("bem: FMM operator: companion FMMs (the IFMM) do not take ground or symmetry planes");
  auto fo = I.fmm_options;
  fo.order = order;
  fo.tree.depth = depth;
  fo.compress_m2l = false;
  return std::make_unique<fmm::HelmholtzFmm>(I.cent, I.nrm, I.ys, I.nys, I.owner, I.k, fo);
}
int HelmholtzBemFmmOperator::max_tree_depth() const { return impl_->depth_cap; }
BoundaryCondition HelmholtzBemFmmOperator::boundary_condition() const { return impl_->bc; }
const std::vector<std::int64_t>& HelmholtzBemFmmOperator::source_elements() const { return impl_->src_elem; }
const std::vector<double>& HelmholtzBemFmmOperator::source_weights() const { return impl_->src_weight; }

const std::vector<cplx>& HelmholtzBemFmmOperator::ones_image() const { return impl_->ones_image; }

std::size_t HelmholtzBemFmmOperator::size() const { return impl_->n; }
const fmm::HelmholtzFmm& HelmholtzBemFmmOperator::fmm() const { return *impl_->fmm; }
cplx HelmholtzBemFmmOperator::alpha() const { return impl_->alpha; }
std::size_t HelmholtzBemFmmOperator::near_entries() const { return impl_->val.size(); }
double HelmholtzBemFmmOperator::setup_seconds() const { return impl_->setup_seconds; }
double HelmholtzBemFmmOperator::fmm_setup_seconds() const { return impl_->fmm_setup_seconds; }
std::size_t HelmholtzBemFmmOperator::near_field_bytes() const {
  const auto& I = *impl_;
  return I.val.size() * sizeof(cplx) + (I.col.size() + I.row_ptr.size()) * sizeof(std::int64_t);
}

void HelmholtzBemFmmOperator::entries(const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols,
                                      cplx* out) const {
  const auto& I = *impl_;
  const auto n = static_cast<std::int64_t>(I.n);
  std::vector<std::pair<std::int64_t, std::int64_t>> missing;
  std::vector<std::size_t> missing_at;
  std::vector<double> missing_factor;
  for (std::size_t a = 0; a < rows.size(); ++a) {
    const std::int64_t i = rows[a];
    if (i < 0 || i >= n) throw InvalidArgument("bem: FMM operator entries: row index " + std::to_string(i) + " out of range");
    const auto* b0 = I.col.data() + I.row_ptr[i];
    const auto* b1 = I.col.data() + I.row_ptr[i + 1];
    for (std::size_t b = 0; b < cols.size(); ++b) {
      const std::int64_t j = cols[b];
      if (j < 0 || j >= n) throw InvalidArgument("bem: FMM operator entries: column index " + std::to_string(j) + " out of range");
      cplx v = i == j ? 0.5 : 0.0;
      for (std::size_t m = 0; m < I.factor.size(); ++m) {  // the column's element and its images
        const std::int64_t jm = j + static_cast<std::int64_t>(m) * n;
        const auto* it = std::lower_bound(b0, b1, jm);
        if (it != b1 && *it == jm) {
          v += I.factor[m] * I.val[static_cast<std::size_t>(it - I.col.data())];
        } else {
          missing.push_back({i, jm});
          missing_at.push_back(a * cols.size() + b);
          missing_factor.push_back(I.factor[m]);
        }
      }
      out[a * cols.size() + b] = v;
    }
  }
  if (!missing.empty()) {
    std::vector<cplx> v(missing.size());
    I.combine(missing, v.data());
    for (std::size_t t = 0; t < missing.size(); ++t) out[missing_at[t]] += missing_factor[t] * v[t];
  }
}

void HelmholtzBemFmmOperator::apply(const cplx* x, cplx* y) const {
  const auto& I = *impl_;
  const std::size_t ns = I.src_elem.size();
  std::vector<cplx> dens(ns);
  for (std::size_t s = 0; s < ns; ++s) dens[s] = I.src_weight[s] * I.xw(x, I.src_elem[s]);
  std::vector<cplx> pot(I.nw), dn(I.nw);
  if (I.bc == BoundaryCondition::Neumann) I.fmm->apply(nullptr, dens.data(), pot.data(), dn.data());
  else I.fmm->apply(dens.data(), nullptr, pot.data(), dn.data());
  const cplx beta = 1.0 / I.alpha;
  const auto N = static_cast<std::ptrdiff_t>(I.n);
#pragma omp parallel for schedule(static) num_threads(I.threads)
  for (std::ptrdiff_t i = 0; i < N; ++i) {
    cplx v = 0.5 * x[i];
    if (I.bc == BoundaryCondition::Neumann) v += -pot[i] - I.alpha * dn[i];
    else v += dn[i] + beta * pot[i];
    if (I.nw == I.n) {
      for (std::int64_t t = I.row_ptr[i]; t < I.row_ptr[i + 1]; ++t) v += I.val[t] * x[I.col[t]];
    } else {
      for (std::int64_t t = I.row_ptr[i]; t < I.row_ptr[i + 1]; ++t) v += I.val[t] * I.xw(x, I.col[t]);
    }
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
