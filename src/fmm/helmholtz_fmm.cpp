// Black-box (Chebyshev interpolation) FMM for the Helmholtz kernel; see
// include/elliptica/fmm/helmholtz_fmm.hpp (Fong & Darve 2009 style).
#include "elliptica/fmm/helmholtz_fmm.hpp"

#include <Eigen/Dense>
#include <Eigen/SVD>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numbers>
#include <random>
#include <string>

#include "elliptica/core/error.hpp"

namespace elliptica::fmm {

namespace {
constexpr double kPi = std::numbers::pi;
using CMat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using CVec = Eigen::Matrix<cplx, Eigen::Dynamic, 1>;

inline cplx green(cplx k, double r) { return std::exp(cplx(0, 1) * k * r) / (4 * kPi * r); }

// 1D Lagrange basis on the p first-kind Chebyshev nodes, evaluated via
// S_p(xbar_m, x) = 1/p + 2/p sum_{j=1}^{p-1} T_j(xbar_m) T_j(x); also the derivative.
struct Cheb1D {
  int p = 0;
  std::vector<double> nodes;   // xbar_m
  std::vector<double> Tnode;   // T_j(xbar_m), [m * p + j]
  explicit Cheb1D(int p_ = 0) : p(p_) {
    nodes.resize(p);
    Tnode.resize(static_cast<std::size_t>(p) * p);
    for (int m = 0; m < p; ++m) {
      nodes[m] = std::cos((2 * m + 1) * kPi / (2 * p));
      for (int j = 0; j < p; ++j) Tnode[m * p + j] = std::cos(j * (2 * m + 1) * kPi / (2 * p));
    }
  }
  // values L_m(x) (and derivatives dL_m/dx if d != nullptr), x in reference coordinates
  void eval(double x, double* L, double* d) const {
    double T[32], dT[32];
    T[0] = 1;
    dT[0] = 0;
    if (p > 1) { T[1] = x; dT[1] = 1; }
    for (int j = 2; j < p; ++j) {
      T[j] = 2 * x * T[j - 1] - T[j - 2];
      dT[j] = 2 * T[j - 1] + 2 * x * dT[j - 1] - dT[j - 2];
    }
    for (int m = 0; m < p; ++m) {
      double s = 1, sd = 0;
      for (int j = 1; j < p; ++j) {
        s += 2 * Tnode[m * p + j] * T[j];
        sd += 2 * Tnode[m * p + j] * dT[j];
      }
      L[m] = s / p;
      if (d) d[m] = sd / p;
    }
  }
};

struct M2LOp {
  CMat full;     // p^3 x p^3 (when not compressed)
  CMat U, VH;    // compressed: K ~ U * VH (U: p^3 x r with singular values folded in)
  bool compressed = false;
  int rank = 0;
};
}  // namespace

int choose_order(double tolerance, cplx k, double w) {
  if (!(tolerance > 1e-14 && tolerance < 0.5))
    throw InvalidArgument("HelmholtzFmm: tolerance must be in (1e-14, 0.5), got " + std::to_string(tolerance));
  // measured (tests/test_fmm_helmholtz.cpp, random points on a sphere / in a cube, worst of the
  // four kernels = the double layer K and its adjoint K' on the sphere, where the kernel's
  // near-field cancellation makes the far part relatively large): error ~ 7e-3 at p = 4 for
  // |k| w <= 1, falling by 10^-0.68 per extra node; |k| w = 5 needs 2 more nodes.
  const double kappa = std::abs(k) * w;
  const int p = 4 + static_cast<int>(std::ceil((std::log10(1.0 / tolerance) - 2.14) / 0.68)) +
                std::max(0, static_cast<int>(std::ceil(0.45 * kappa - 0.5)));
  return std::max(p, 3);
}

struct HelmholtzFmm::Impl {
  cplx k;
  HelmholtzFmmOptions opt;
  std::unique_ptr<Octree> tree;
  int p = 0, p3 = 0, L = 0;
  double e = 0;
  double setup_seconds = 0;
  std::vector<Point3> tpts, tnrm;          // targets (original order)
  std::vector<Point3> spts, snrm;          // sources (original order)
  bool same_set = false;
  // sources sorted by leaf: leaf_src_begin[leaf slot]..end into src_order
  std::vector<std::int64_t> src_order;
  std::vector<std::int64_t> leaf_src_begin, leaf_src_end;  // indexed by node id (non-leaf: 0,0)
  Cheb1D cheb;
  // per level l (1..L): 1D M2M matrices S1[l][oct][axis] (p x p, [parent node i][child node j])
  std::vector<std::array<std::array<std::vector<double>, 3>, 8>> S1;
  // M2L per level: canonical offset code -> operator
  std::vector<std::map<int, M2LOp>> m2l;
  int max_rank = 0;

  double a(int l) const { return tree->nodes()[tree->level_nodes(0)[0]].half_width / std::pow(2.0, l) + e; }

  void build(const std::vector<std::int64_t>& owner);
  void setup_m2l(int l);
  const M2LOp& canonical(int l, std::array<int, 3> t, std::vector<int>& perm) const;
};

namespace {
int canon_code(int a, int b, int c) { return a * 16 + b * 4 + c; }
// canonical offset (|t| sorted descending) and the node index permutation pi with
// K_t(m, n) = K_c(pi(m), pi(n)).
std::array<int, 3> canonicalize(std::array<int, 3> t, int p, std::vector<int>* pi) {
  std::array<int, 3> s{}, at{};
  for (int i = 0; i < 3; ++i) { s[i] = t[i] < 0 ? -1 : 1; at[i] = std::abs(t[i]); }
  std::array<int, 3> sig{0, 1, 2};
  std::stable_sort(sig.begin(), sig.end(), [&](int x, int y) { return at[x] > at[y]; });
  std::array<int, 3> tc{at[sig[0]], at[sig[1]], at[sig[2]]};
  if (pi) {
    const int p3 = p * p * p;
    pi->resize(p3);
    for (int n = 0; n < p3; ++n) {
      const int m[3] = {n % p, (n / p) % p, n / (p * p)};
      int mc[3];
      for (int j = 0; j < 3; ++j) {
        const int src = sig[j];
        mc[j] = s[src] > 0 ? m[src] : p - 1 - m[src];
      }
      (*pi)[n] = mc[0] + p * mc[1] + p * p * mc[2];
    }
  }
  return tc;
}
}  // namespace

void HelmholtzFmm::Impl::setup_m2l(int l) {
  std::vector<std::array<int, 3>> canon;
  for (int t1 = 2; t1 <= 3; ++t1)
    for (int t2 = 0; t2 <= t1; ++t2)
      for (int t3 = 0; t3 <= t2; ++t3) canon.push_back({t1, t2, t3});
  const double al = a(l), bw = 2 * tree->nodes()[tree->level_nodes(0)[0]].half_width / std::pow(2.0, l);
  std::vector<M2LOp> ops(canon.size());
  const double thr = 0.01 * opt.tolerance;
#pragma omp parallel for schedule(dynamic)
  for (int c = 0; c < static_cast<int>(canon.size()); ++c) {
    CMat K(p3, p3);
    for (int n = 0; n < p3; ++n) {
      const int nn[3] = {n % p, (n / p) % p, n / (p * p)};
      for (int m = 0; m < p3; ++m) {
        const int mm[3] = {m % p, (m / p) % p, m / (p * p)};
        double r2 = 0;
        for (int d = 0; d < 3; ++d) {
          const double v = canon[c][d] * bw + al * (cheb.nodes[mm[d]] - cheb.nodes[nn[d]]);
          r2 += v * v;
        }
        K(m, n) = green(k, std::sqrt(r2));
      }
    }
    M2LOp& op = ops[c];
    if (opt.compress_m2l) {
      // randomized range finder (Halko, Martinsson & Tropp 2011) with adaptive rank doubling:
      // O(n^2 r) instead of the O(n^3) of a full SVD of the n x n (n = p^3) kernel matrix.
      std::mt19937_64 gen(12345 + c);
      std::normal_distribution<double> nd;
      int r0 = std::min(p3, 32);
      while (true) {
        const int cols = std::min(p3, r0 + 10);
        CMat Om(p3, cols);
        for (int j = 0; j < cols; ++j)
          for (int i = 0; i < p3; ++i) Om(i, j) = cplx(nd(gen), nd(gen));
        CMat Y = K * Om;
        Eigen::HouseholderQR<CMat> qr(Y);
        CMat Q = qr.householderQ() * CMat::Identity(p3, cols);
        CMat B = Q.adjoint() * K;
        Eigen::BDCSVD<CMat> svd(B, Eigen::ComputeThinU | Eigen::ComputeThinV);
        const auto& sv = svd.singularValues();
        int r = 0;
        while (r < sv.size() && sv(r) > thr * sv(0)) ++r;
        r = std::max(r, 1);
        if (r <= cols - 8 || cols == p3) {
          if (2 * r < p3) {
            op.U = (Q * svd.matrixU().leftCols(r)) * sv.head(r).asDiagonal();
            op.VH = svd.matrixV().leftCols(r).adjoint();
            op.compressed = true;
            op.rank = r;
          }
          break;
        }
        r0 = std::min(p3, 2 * r0);
      }
    }
    if (!op.compressed) { op.full = std::move(K); op.rank = p3; }
  }
  for (std::size_t c = 0; c < canon.size(); ++c) {
    max_rank = std::max(max_rank, ops[c].rank);
    m2l[l][canon_code(canon[c][0], canon[c][1], canon[c][2])] = std::move(ops[c]);
  }
}

const M2LOp& HelmholtzFmm::Impl::canonical(int l, std::array<int, 3> t, std::vector<int>& perm) const {
  auto tc = canonicalize(t, p, &perm);
  return m2l[l].at(canon_code(tc[0], tc[1], tc[2]));
}

void HelmholtzFmm::Impl::build(const std::vector<std::int64_t>& owner) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!std::isfinite(k.real()) || !std::isfinite(k.imag()) || k.imag() < 0 || k == cplx(0))
    throw InvalidArgument("HelmholtzFmm: k must be finite, nonzero, with Im k >= 0");
  if (opt.order != 0 && (opt.order < 2 || opt.order > 24))
    throw InvalidArgument("HelmholtzFmm: order must be 0 (automatic) or in [2, 24], got " + std::to_string(opt.order));
  if (!(opt.max_box_wavelengths > 0)) throw InvalidArgument("HelmholtzFmm: max_box_wavelengths must be > 0");
  if (!(opt.tolerance > 1e-14 && opt.tolerance < 0.5))
    throw InvalidArgument("HelmholtzFmm: tolerance must be in (1e-14, 0.5), got " + std::to_string(opt.tolerance));
  const std::size_t nt = tpts.size(), ns = spts.size();
  if (!tnrm.empty() && tnrm.size() != nt) throw InvalidArgument("HelmholtzFmm: normals must have one entry per point or be empty");
  if (!snrm.empty() && snrm.size() != ns) throw InvalidArgument("HelmholtzFmm: source normals must have one entry per source or be empty");
  if (owner.size() != ns) throw InvalidArgument("HelmholtzFmm: owner must have one entry per source");
  for (std::size_t s = 0; s < ns; ++s) {
    if (owner[s] < 0 || owner[s] >= static_cast<std::int64_t>(nt))
      throw InvalidArgument("HelmholtzFmm: owner[" + std::to_string(s) + "] out of range");
    for (int d = 0; d < 3; ++d)
      if (!std::isfinite(spts[s][d]) || (!snrm.empty() && !std::isfinite(snrm[s][d])))
        throw InvalidArgument("HelmholtzFmm: source " + std::to_string(s) + " has a NaN/Inf coordinate or normal");
  }
  for (std::size_t i = 0; i < tnrm.size(); ++i)
    for (int d = 0; d < 3; ++d)
      if (!std::isfinite(tnrm[i][d])) throw InvalidArgument("HelmholtzFmm: normal " + std::to_string(i) + " is NaN/Inf");
  tree = std::make_unique<Octree>(tpts, opt.tree);  // validates the points
  L = tree->leaf_level();
  const auto& nodes = tree->nodes();
  const auto& perm = tree->permutation();
  // leaf of each target point
  std::vector<int> leaf_of(nt);
  for (int id : tree->level_nodes(L))
    for (std::int64_t s = nodes[id].begin; s < nodes[id].end; ++s) leaf_of[perm[s]] = id;
  // sources sorted by leaf (stable by index)
  leaf_src_begin.assign(nodes.size(), 0);
  leaf_src_end.assign(nodes.size(), 0);
  std::vector<std::int64_t> cnt(nodes.size(), 0);
  for (std::size_t s = 0; s < ns; ++s) ++cnt[leaf_of[owner[s]]];
  std::int64_t acc = 0;
  for (int id : tree->level_nodes(L)) { leaf_src_begin[id] = acc; acc += cnt[id]; leaf_src_end[id] = leaf_src_begin[id]; }
  src_order.resize(ns);
  for (std::size_t s = 0; s < ns; ++s) src_order[leaf_src_end[leaf_of[owner[s]]]++] = static_cast<std::int64_t>(s);
  // margin e
  e = 0;
  for (std::size_t s = 0; s < ns; ++s) {
    const auto& nd = nodes[leaf_of[owner[s]]];
    for (int d = 0; d < 3; ++d) e = std::max(e, std::abs(spts[s][d] - nd.center[d]) - nd.half_width);
  }
  if (e > 0) e *= 1.0 + 1e-9;
  const double h0 = nodes[tree->level_nodes(0)[0]].half_width;
  if (L >= 2) {
    const double w2 = 2 * (h0 / 4 + e);
    if (k.real() > 0 && w2 * k.real() / (2 * kPi) > opt.max_box_wavelengths)
      throw InvalidArgument("HelmholtzFmm: the level-2 boxes are " + std::to_string(w2 * k.real() / (2 * kPi)) +
                            " wavelengths wide, beyond the low-frequency limit max_box_wavelengths = " +
                            std::to_string(opt.max_box_wavelengths) + " of this Chebyshev FMM");
    if (e > 0.5 * h0 / std::pow(2.0, L))
      throw InvalidArgument("HelmholtzFmm: sources stick out of their owner's leaf box by more than half a leaf "
                            "(use a shallower tree, i.e. larger max_leaf, or smaller elements)");
    p = opt.order > 0 ? opt.order : choose_order(opt.tolerance, k, w2);
    if (opt.order == 0 && p > 16)
      throw InvalidArgument("HelmholtzFmm: the tolerance and k*box size need " + std::to_string(p) +
                            " Chebyshev nodes per axis (> 16): outside the low-frequency regime");
  } else {
    p = opt.order > 0 ? opt.order : 3;
  }
  p3 = p * p * p;
  cheb = Cheb1D(p);
  // M2M 1D matrices: child (level l, half-width a(l)) nodes in parent (a(l-1)) coordinates
  S1.assign(L + 1, {});
  for (int l = 1; l <= L; ++l) {
    const double ac = a(l), ap = a(l - 1), hc = h0 / std::pow(2.0, l);
    for (int oct = 0; oct < 8; ++oct)
      for (int ax = 0; ax < 3; ++ax) {
        const double off = ((oct >> ax) & 1) ? hc : -hc;  // child center - parent center
        auto& S = S1[l][oct][ax];
        S.assign(static_cast<std::size_t>(p) * p, 0.0);
        std::vector<double> Lv(p);
        for (int j = 0; j < p; ++j) {
          cheb.eval((off + ac * cheb.nodes[j]) / ap, Lv.data(), nullptr);
          for (int i = 0; i < p; ++i) S[i * p + j] = Lv[i];
        }
      }
  }
  m2l.assign(L + 1, {});
  for (int l = 2; l <= L; ++l) setup_m2l(l);
  setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

HelmholtzFmm::HelmholtzFmm(const std::vector<Point3>& points, const std::vector<Point3>& normals, cplx k,
                           const HelmholtzFmmOptions& opt)
    : impl_(std::make_shared<Impl>()) {
  impl_->k = k;
  impl_->opt = opt;
  impl_->tpts = points;
  impl_->tnrm = normals;
  impl_->spts = points;
  impl_->snrm = normals;
  impl_->same_set = true;
  std::vector<std::int64_t> owner(points.size());
  for (std::size_t i = 0; i < owner.size(); ++i) owner[i] = static_cast<std::int64_t>(i);
  impl_->build(owner);
}

HelmholtzFmm::HelmholtzFmm(const std::vector<Point3>& points, const std::vector<Point3>& normals,
                           const std::vector<Point3>& sources, const std::vector<Point3>& source_normals,
                           const std::vector<std::int64_t>& owner, cplx k, const HelmholtzFmmOptions& opt)
    : impl_(std::make_shared<Impl>()) {
  impl_->k = k;
  impl_->opt = opt;
  impl_->tpts = points;
  impl_->tnrm = normals;
  impl_->spts = sources;
  impl_->snrm = source_normals;
  impl_->build(owner);
}

const Octree& HelmholtzFmm::tree() const { return *impl_->tree; }
int HelmholtzFmm::order() const { return impl_->p; }
cplx HelmholtzFmm::k() const { return impl_->k; }
std::size_t HelmholtzFmm::num_targets() const { return impl_->tpts.size(); }
std::size_t HelmholtzFmm::num_sources() const { return impl_->spts.size(); }
double HelmholtzFmm::box_margin() const { return impl_->e; }
int HelmholtzFmm::max_m2l_rank() const { return impl_->max_rank; }
double HelmholtzFmm::setup_seconds() const { return impl_->setup_seconds; }

namespace {
// y = (A0 x A1 x A2) x for 1D p x p matrices (A_ax[i * p + j]) applied along axes; transpose
// when trans. x, y of length p^3 (index n0 + p n1 + p^2 n2). y is ADDED to.
template <class T>
void kron3_apply(int p, const std::vector<double>& A0, const std::vector<double>& A1, const std::vector<double>& A2,
                 bool trans, const T* x, T* y) {
  const int p3 = p * p * p;
  std::vector<T> t1(p3), t2(p3);
  auto A = [&](const std::vector<double>& M, int i, int j) { return trans ? M[j * p + i] : M[i * p + j]; };
  // axis 0
  for (int n2 = 0; n2 < p; ++n2)
    for (int n1 = 0; n1 < p; ++n1)
      for (int i = 0; i < p; ++i) {
        T s{};
        for (int j = 0; j < p; ++j) s += A(A0, i, j) * x[j + p * n1 + p * p * n2];
        t1[i + p * n1 + p * p * n2] = s;
      }
  for (int n2 = 0; n2 < p; ++n2)
    for (int i = 0; i < p; ++i)
      for (int n0 = 0; n0 < p; ++n0) {
        T s{};
        for (int j = 0; j < p; ++j) s += A(A1, i, j) * t1[n0 + p * j + p * p * n2];
        t2[n0 + p * i + p * p * n2] = s;
      }
  for (int i = 0; i < p; ++i)
    for (int n1 = 0; n1 < p; ++n1)
      for (int n0 = 0; n0 < p; ++n0) {
        T s{};
        for (int j = 0; j < p; ++j) s += A(A2, i, j) * t2[n0 + p * n1 + p * p * j];
        y[n0 + p * n1 + p * p * i] += s;
      }
}

inline void kernel_terms(cplx k, const Point3& x, const Point3& y, const Point3* nx, const Point3* ny, bool want_dn,
                         cplx q, cplx mu, cplx& u, cplx& dn) {
  const double d0 = x[0] - y[0], d1 = x[1] - y[1], d2 = x[2] - y[2];
  const double r2 = d0 * d0 + d1 * d1 + d2 * d2;
  if (r2 == 0) return;
  const double r = std::sqrt(r2);
  const cplx ikr = cplx(0, 1) * k * r;
  const cplx G = std::exp(ikr) / (4 * kPi * r);
  const cplx G1 = G * (ikr - 1.0) / r;                     // dG/dr
  const cplx G2 = G * (2.0 - 2.0 * ikr + ikr * ikr) / r2;  // d2G/dr2 (ikr^2 = -k^2 r^2)
  const double rh[3] = {d0 / r, d1 / r, d2 / r};
  u += G * q;
  double rny = 0;
  if (ny) {
    rny = rh[0] * (*ny)[0] + rh[1] * (*ny)[1] + rh[2] * (*ny)[2];
    u += -G1 * rny * mu;  // dG/dn_y = -G'(r) rhat.n_y
  }
  if (want_dn) {
    const double rnx = rh[0] * (*nx)[0] + rh[1] * (*nx)[1] + rh[2] * (*nx)[2];
    dn += G1 * rnx * q;
    if (ny) {
      const double nn = (*nx)[0] * (*ny)[0] + (*nx)[1] * (*ny)[1] + (*nx)[2] * (*ny)[2];
      dn += -(G1 / r * nn + (G2 - G1 / r) * rnx * rny) * mu;
    }
  }
}
}  // namespace

FmmResult HelmholtzFmm::apply(const std::vector<cplx>& q, const std::vector<cplx>& mu, unsigned outputs) const {
  const Impl& I = *impl_;
  const std::size_t nt = I.tpts.size(), ns = I.spts.size();
  if (!q.empty() && q.size() != ns)
    throw InvalidArgument("HelmholtzFmm::apply: charges must have num_sources() entries or be empty");
  if (!mu.empty() && mu.size() != ns)
    throw InvalidArgument("HelmholtzFmm::apply: dipoles must have num_sources() entries or be empty");
  if (!mu.empty() && I.snrm.empty()) throw InvalidArgument("HelmholtzFmm::apply: dipoles need source normals");
  const bool want_u = outputs & kPotential, want_dn = outputs & kNormalDerivative;
  if (want_dn && I.tnrm.empty()) throw InvalidArgument("HelmholtzFmm::apply: normal derivatives need target normals");
  if ((outputs & ~3u) != 0 || outputs == 0) throw InvalidArgument("HelmholtzFmm::apply: bad outputs mask");
  for (auto& v : q) if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) throw InvalidArgument("HelmholtzFmm::apply: NaN/Inf charge");
  for (auto& v : mu) if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) throw InvalidArgument("HelmholtzFmm::apply: NaN/Inf dipole");
  const bool has_q = !q.empty(), has_mu = !mu.empty();
  const auto& nodes = I.tree->nodes();
  const auto& perm = I.tree->permutation();
  const int p = I.p, p3 = I.p3, L = I.L;
  std::vector<cplx> U(nt, 0.0), DN(nt, 0.0);
  const cplx k = I.k;

  if (L >= 2 && (has_q || has_mu)) {
    const std::size_t nn = nodes.size();
    std::vector<cplx> W(nn * p3, 0.0), F(nn * p3, 0.0);
    // P2M
    const auto& leaves = I.tree->level_nodes(L);
    const double aL = I.a(L);
#pragma omp parallel
    {
      std::vector<double> Lx(3 * p), Dx(3 * p), T(p3);
#pragma omp for schedule(dynamic)
      for (int li = 0; li < static_cast<int>(leaves.size()); ++li) {
        const int id = leaves[li];
        cplx* w = &W[static_cast<std::size_t>(id) * p3];
        for (std::int64_t t = I.leaf_src_begin[id]; t < I.leaf_src_end[id]; ++t) {
          const std::int64_t s = I.src_order[t];
          for (int d = 0; d < 3; ++d)
            I.cheb.eval((I.spts[s][d] - nodes[id].center[d]) / aL, &Lx[d * p], &Dx[d * p]);
          const cplx qs = has_q ? q[s] : 0.0, ms = has_mu ? mu[s] : 0.0;
          const double* n = has_mu ? I.snrm[s].data() : nullptr;
          for (int n2 = 0; n2 < p; ++n2)
            for (int n1 = 0; n1 < p; ++n1)
              for (int n0 = 0; n0 < p; ++n0) {
                const double l0 = Lx[n0], l1 = Lx[p + n1], l2 = Lx[2 * p + n2];
                cplx v = qs * (l0 * l1 * l2);
                if (n)
                  v += ms * ((n[0] * Dx[n0] * l1 * l2 + n[1] * l0 * Dx[p + n1] * l2 + n[2] * l0 * l1 * Dx[2 * p + n2]) / aL);
                w[n0 + p * n1 + p * p * n2] += v;
              }
        }
      }
    }
    // M2M (upward, levels L..3 into parents at L-1..2)
    for (int l = L; l >= 3; --l) {
      const auto& par = I.tree->level_nodes(l - 1);
#pragma omp parallel for schedule(dynamic)
      for (int pi = 0; pi < static_cast<int>(par.size()); ++pi) {
        const int id = par[pi];
        for (int oct = 0; oct < 8; ++oct) {
          const int c = nodes[id].children[oct];
          if (c < 0) continue;
          kron3_apply<cplx>(p, I.S1[l][oct][0], I.S1[l][oct][1], I.S1[l][oct][2], false,
                            &W[static_cast<std::size_t>(c) * p3], &W[static_cast<std::size_t>(id) * p3]);
        }
      }
    }
    // M2L
    for (int l = 2; l <= L; ++l) {
      const auto& lev = I.tree->level_nodes(l);
#pragma omp parallel
      {
        std::vector<int> pm;
        CVec wp(p3), fp(p3), tmp;
#pragma omp for schedule(dynamic)
        for (int ti = 0; ti < static_cast<int>(lev.size()); ++ti) {
          const int id = lev[ti];
          cplx* f = &F[static_cast<std::size_t>(id) * p3];
          for (int src : I.tree->interaction_list(id)) {
            std::array<int, 3> t;
            for (int d = 0; d < 3; ++d) t[d] = nodes[id].coord[d] - nodes[src].coord[d];
            const M2LOp& op = I.canonical(l, t, pm);
            const cplx* w = &W[static_cast<std::size_t>(src) * p3];
            for (int n = 0; n < p3; ++n) wp(pm[n]) = w[n];
            if (op.compressed) {
              tmp.noalias() = op.VH * wp;
              fp.noalias() = op.U * tmp;
            } else {
              fp.noalias() = op.full * wp;
            }
            for (int m = 0; m < p3; ++m) f[m] += fp(pm[m]);
          }
        }
      }
    }
    // L2L (downward)
    for (int l = 3; l <= L; ++l) {
      const auto& lev = I.tree->level_nodes(l);
#pragma omp parallel for schedule(dynamic)
      for (int ci = 0; ci < static_cast<int>(lev.size()); ++ci) {
        const int c = lev[ci];
        const int par = nodes[c].parent;
        const int oct = (nodes[c].coord[0] & 1) | ((nodes[c].coord[1] & 1) << 1) | ((nodes[c].coord[2] & 1) << 2);
        kron3_apply<cplx>(p, I.S1[l][oct][0], I.S1[l][oct][1], I.S1[l][oct][2], true,
                          &F[static_cast<std::size_t>(par) * p3], &F[static_cast<std::size_t>(c) * p3]);
      }
    }
    // L2P
#pragma omp parallel
    {
      std::vector<double> Lx(3 * p), Dx(3 * p);
#pragma omp for schedule(dynamic)
      for (int li = 0; li < static_cast<int>(leaves.size()); ++li) {
        const int id = leaves[li];
        const cplx* f = &F[static_cast<std::size_t>(id) * p3];
        for (std::int64_t t = nodes[id].begin; t < nodes[id].end; ++t) {
          const std::int64_t i = perm[t];
          for (int d = 0; d < 3; ++d) I.cheb.eval((I.tpts[i][d] - nodes[id].center[d]) / aL, &Lx[d * p], &Dx[d * p]);
          cplx su = 0, sd = 0;
          const double* n = want_dn ? I.tnrm[i].data() : nullptr;
          for (int n2 = 0; n2 < p; ++n2)
            for (int n1 = 0; n1 < p; ++n1)
              for (int n0 = 0; n0 < p; ++n0) {
                const cplx fv = f[n0 + p * n1 + p * p * n2];
                const double l0 = Lx[n0], l1 = Lx[p + n1], l2 = Lx[2 * p + n2];
                su += fv * (l0 * l1 * l2);
                if (n) sd += fv * (n[0] * Dx[n0] * l1 * l2 + n[1] * l0 * Dx[p + n1] * l2 + n[2] * l0 * l1 * Dx[2 * p + n2]);
              }
          U[i] += su;
          DN[i] += sd / aL;
        }
      }
    }
  }
  // P2P near field
  if (I.opt.near_field && (has_q || has_mu)) {
    const auto& leaves = I.tree->level_nodes(L);
#pragma omp parallel for schedule(dynamic)
    for (int li = 0; li < static_cast<int>(leaves.size()); ++li) {
      const int id = leaves[li];
      for (std::int64_t t = nodes[id].begin; t < nodes[id].end; ++t) {
        const std::int64_t i = perm[t];
        cplx su = 0, sd = 0;
        const Point3* nx = want_dn ? &I.tnrm[i] : nullptr;
        for (int nb : I.tree->neighbours(id))
          for (std::int64_t u = I.leaf_src_begin[nb]; u < I.leaf_src_end[nb]; ++u) {
            const std::int64_t s = I.src_order[u];
            kernel_terms(k, I.tpts[i], I.spts[s], nx, has_mu ? &I.snrm[s] : nullptr, want_dn, has_q ? q[s] : 0.0,
                         has_mu ? mu[s] : 0.0, su, sd);
          }
        U[i] += su;
        DN[i] += sd;
      }
    }
  }
  FmmResult r;
  if (want_u) r.potential = std::move(U);
  if (want_dn) r.normal_derivative = std::move(DN);
  return r;
}

std::vector<double> HelmholtzFmm::m2m_matrix(int level, int octant) const {
  const Impl& I = *impl_;
  if (level < 1 || level > I.L || octant < 0 || octant > 7) throw InvalidArgument("HelmholtzFmm::m2m_matrix: bad level/octant");
  const int p = I.p, p3 = I.p3;
  std::vector<double> M(static_cast<std::size_t>(p3) * p3);
  const auto& S = I.S1[level][octant];
  for (int i = 0; i < p3; ++i)
    for (int j = 0; j < p3; ++j)
      M[static_cast<std::size_t>(i) * p3 + j] = S[0][(i % p) * p + j % p] * S[1][((i / p) % p) * p + (j / p) % p] *
                                                S[2][(i / (p * p)) * p + j / (p * p)];
  return M;
}

std::vector<cplx> HelmholtzFmm::m2l_matrix(int level, std::array<int, 3> t) const {
  const Impl& I = *impl_;
  if (level < 2 || level > I.L) throw InvalidArgument("HelmholtzFmm::m2l_matrix: level must be in [2, leaf level]");
  int mx = 0;
  for (int d = 0; d < 3; ++d) mx = std::max(mx, std::abs(t[d]));
  if (mx < 2 || mx > 3) throw InvalidArgument("HelmholtzFmm::m2l_matrix: offset is not an interaction-list offset");
  const int p = I.p, p3 = I.p3;
  const double al = I.a(level), bw = 2 * I.tree->nodes()[I.tree->level_nodes(0)[0]].half_width / std::pow(2.0, level);
  std::vector<cplx> K(static_cast<std::size_t>(p3) * p3);
  for (int m = 0; m < p3; ++m)
    for (int n = 0; n < p3; ++n) {
      const int mm[3] = {m % p, (m / p) % p, m / (p * p)}, nn[3] = {n % p, (n / p) % p, n / (p * p)};
      double r2 = 0;
      for (int d = 0; d < 3; ++d) {
        const double v = t[d] * bw + al * (I.cheb.nodes[mm[d]] - I.cheb.nodes[nn[d]]);
        r2 += v * v;
      }
      K[static_cast<std::size_t>(m) * p3 + n] = green(I.k, std::sqrt(r2));
    }
  return K;
}

std::vector<std::int64_t> HelmholtzFmm::leaf_sources(int leaf) const {
  const Impl& I = *impl_;
  if (leaf < 0 || leaf >= static_cast<int>(I.tree->nodes().size()) || !I.tree->nodes()[leaf].is_leaf())
    throw InvalidArgument("HelmholtzFmm::leaf_sources: not a leaf node index");
  return {I.src_order.begin() + I.leaf_src_begin[leaf], I.src_order.begin() + I.leaf_src_end[leaf]};
}

std::vector<double> HelmholtzFmm::p2m_matrix(int leaf, bool dipole) const {
  const Impl& I = *impl_;
  auto src = leaf_sources(leaf);
  if (dipole && I.snrm.empty()) throw InvalidArgument("HelmholtzFmm::p2m_matrix: no source normals");
  const int p = I.p, p3 = I.p3;
  const auto& nd = I.tree->nodes()[leaf];
  const double aL = I.a(I.L);
  const std::size_t ncol = src.size();
  std::vector<double> M(p3 * ncol), Lx(3 * p), Dx(3 * p);
  for (std::size_t c = 0; c < ncol; ++c) {
    const auto s = src[c];
    for (int d = 0; d < 3; ++d) I.cheb.eval((I.spts[s][d] - nd.center[d]) / aL, &Lx[d * p], &Dx[d * p]);
    for (int n = 0; n < p3; ++n) {
      const int a0 = n % p, a1 = (n / p) % p, a2 = n / (p * p);
      double v;
      if (!dipole) v = Lx[a0] * Lx[p + a1] * Lx[2 * p + a2];
      else {
        const auto& nr = I.snrm[s];
        v = (nr[0] * Dx[a0] * Lx[p + a1] * Lx[2 * p + a2] + nr[1] * Lx[a0] * Dx[p + a1] * Lx[2 * p + a2] +
             nr[2] * Lx[a0] * Lx[p + a1] * Dx[2 * p + a2]) / aL;
      }
      M[n * ncol + c] = v;
    }
  }
  return M;
}

}  // namespace elliptica::fmm
