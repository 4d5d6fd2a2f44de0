// Black-box (Chebyshev interpolation) FMM for the Helmholtz kernel; see
// include/elliptica/fmm/helmholtz_fmm.hpp (Fong & Darve 2009 style).
#include "elliptica/fmm/helmholtz_fmm.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <cstdio>
#include <cstdlib>

#include "elliptica/core/constants.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "fmm/thin_svd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace elliptica::fmm {

namespace {
using CMat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using CVec = Eigen::Matrix<cplx, Eigen::Dynamic, 1>;

inline cplx green(cplx k, double r) {
  // e^{ikr}/(4 pi r) without the generic complex exp (sincos + one real exp when Im k > 0)
  const double a = (k.imag() == 0 ? 1.0 : std::exp(-k.imag() * r)) / (4 * kPi * r), ph = k.real() * r;
  return {a * std::cos(ph), a * std::sin(ph)};
}

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
  // The p^3 tensor-product interpolation weights of the point x in the box of centre c and
  // half-width a (u = (x - c) / a in reference coordinates): out[n * stride] = L_n0(u0) L_n1(u1)
  // L_n2(u2) for n = n0 + p n1 + p^2 n2 (a row / column of the P2M and L2P matrices); with a
  // normal nr (not null), the derivative along nr in x instead: (nr . grad_x) of that product.
  void tensor_weights(const Point3& x, const std::array<double, 3>& c, double a, const Point3* nr, double* out,
                      std::size_t stride) const {
    double Lx[3 * 32], Dx[3 * 32];  // p <= 32, as in eval
    for (int d = 0; d < 3; ++d) eval((x[d] - c[d]) / a, &Lx[d * p], &Dx[d * p]);
    const int p3 = p * p * p;
    for (int n = 0; n < p3; ++n) {
      const int a0 = n % p, a1 = (n / p) % p, a2 = n / (p * p);
      double v;
      if (!nr) v = Lx[a0] * Lx[p + a1] * Lx[2 * p + a2];
      else {
        const Point3& m = *nr;
        v = (m[0] * Dx[a0] * Lx[p + a1] * Lx[2 * p + a2] + m[1] * Lx[a0] * Dx[p + a1] * Lx[2 * p + a2] +
             m[2] * Lx[a0] * Lx[p + a1] * Dx[2 * p + a2]) / a;
      }
      out[static_cast<std::size_t>(n) * stride] = v;
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
  // |k| w <= 1, falling by 10^-0.68 per extra node; |k| w = 5 needs 2 more nodes, |k| w = 10 six
  // and 12 seven (cube clouds near the low-frequency limit, FmmHelmholtz.NearTheFrequencyLimit).
  const double kappa = std::abs(k) * w;
  const int p = 4 + static_cast<int>(std::ceil((std::log10(1.0 / tolerance) - 2.14) / 0.68)) +
                std::max(0, static_cast<int>(std::ceil(0.45 * kappa + 0.02 * kappa * kappa - 0.5)));
  return std::max(p, 3);
}

double min_tolerance(cplx k, double w) {
  const double kappa = std::abs(k) * w;
  const int extra = std::max(0, static_cast<int>(std::ceil(0.45 * kappa + 0.02 * kappa * kappa - 0.5)));
  const int steps = kMaxOrder - 4 - extra;  // ceil((log10(1/tol) - 2.14) / 0.68) <= steps
  if (steps < 0) return std::numeric_limits<double>::infinity();
  return std::max(1.001 * std::pow(10.0, -(2.14 + 0.68 * steps)), 1.001e-14);
}

struct HelmholtzFmm::Impl {
  cplx k;       // wavenumber of the kernels (0 when |k| x extent < kStaticKernelKappa, see build)
  cplx k_user;  // the wavenumber given
  HelmholtzFmmOptions opt;
  std::shared_ptr<const Octree> tree;
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
  // batched M2L (Messner, Schanz & Darve 2012 style: symmetries + per-offset low rank + blocking):
  // per level, the interactions grouped by canonical offset, sorted by target
  struct Inter { int tgt_slot, src, sym; };
  struct M2LBatch { const M2LOp* op = nullptr; std::vector<Inter> list; };
  std::vector<std::vector<M2LBatch>> batches;  // [level][class]
  std::vector<int> slot;                       // node id -> index within its level
  std::vector<std::vector<int>> sym_perm;      // 48 node permutations of the cube
  // sources in leaf order (structure of arrays) for P2P
  std::vector<double> sx, sy, sz, snx, sny, snz;

  double a(int l) const { return tree->nodes()[tree->level_nodes(0)[0]].half_width / std::pow(2.0, l) + e; }

  void build(const std::vector<std::int64_t>& owner);
  void apply(const cplx* q, const cplx* mu, cplx* potential, cplx* normal_derivative) const;
  void setup_batches();
  void setup_m2l(int l);
};

namespace {
int canon_code(int a, int b, int c) { return a * 16 + b * 4 + c; }
// canonical offset (|t| sorted descending) and the node index permutation pi with
// K_t(m, n) = K_c(pi(m), pi(n)).
std::array<int, 3> canonicalize(std::array<int, 3> t, int p, std::vector<int>* pi, int* sym = nullptr) {
  std::array<int, 3> s{}, at{};
  for (int i = 0; i < 3; ++i) { s[i] = t[i] < 0 ? -1 : 1; at[i] = std::abs(t[i]); }
  std::array<int, 3> sig{0, 1, 2};
  std::stable_sort(sig.begin(), sig.end(), [&](int x, int y) { return at[x] > at[y]; });
  std::array<int, 3> tc{at[sig[0]], at[sig[1]], at[sig[2]]};
  if (sym)
    *sym = ((s[0] < 0) | ((s[1] < 0) << 1) | ((s[2] < 0) << 2)) * 6 + sig[0] * 2 + (sig[1] > sig[2] ? 1 : 0);
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

namespace {
// Randomized range finder (Halko, Martinsson & Tropp 2011) with adaptive rank doubling on a full
// kernel matrix K: K ~ U VH truncated at relative singular value thr. Returns false when the rank
// is not below p3/2 (then K is kept uncompressed). r0: initial rank guess.
bool compress_rsvd(const CMat& K, double thr, int r0, unsigned seed, CMat& U, CMat& VH) {
  const int n = static_cast<int>(K.rows());
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd;
  r0 = std::min(n, std::max(r0, 8));
  while (true) {
    const int cols = std::min(n, r0 + 10);
    CMat Om(n, cols);
    for (int j = 0; j < cols; ++j)
      for (int i = 0; i < n; ++i) Om(i, j) = cplx(nd(gen), nd(gen));
    CMat Y = K * Om;
    Eigen::HouseholderQR<CMat> qr(Y);
    CMat Q = qr.householderQ() * CMat::Identity(n, cols);
    CMat B = Q.adjoint() * K;
    const detail::ThinSvd svd = detail::thin_svd(B, true, "fmm", "M2L sketch Q^* K");
    const Eigen::VectorXd& sv = svd.s;
    int r = 0;
    while (r < sv.size() && sv(r) > thr * sv(0)) ++r;
    r = std::max(r, 1);
    if (r <= cols - 8 || cols == n) {
      if (2 * r >= n) return false;
      U = (Q * svd.U.leftCols(r)) * sv.head(r).asDiagonal();
      VH = svd.V.leftCols(r).adjoint();
      return true;
    }
    r0 = std::min(n, 2 * r0);
  }
}

// Adaptive cross approximation with partial pivoting (Bebendorf 2000) on an entry function,
// stopped when |u_k||v_k| <= eps ||S_k||_F, then recompressed (QR of both factors + SVD of the
// small core) to the truncated SVD at relative threshold thr. O(r^2 n) work and 2 r n kernel
// evaluations instead of the n^2 of the full matrix. The result is verified on random entries by
// the caller. Returns false when the rank grows beyond max_rank.
template <class Entry>
bool compress_aca(int n, const Entry& entry, double eps, double thr, int max_rank, CMat& U, CMat& VH) {
  // K ~ A B^T with the ACA vectors as columns (grown in blocks of 32)
  CMat A(n, 32), B(n, 32);
  int r = 0;
  std::vector<char> row_used(n, 0);
  double norm2 = 0;
  int i = 0;
  CVec row(n), col(n);
  for (int it = 0; it < max_rank + 8; ++it) {
    row_used[i] = 1;
    for (int j = 0; j < n; ++j) row(j) = entry(i, j);
    if (r > 0) row.noalias() -= B.leftCols(r) * A.row(i).head(r).transpose();
    int j = 0;
    row.cwiseAbs2().maxCoeff(&j);
    if (std::norm(row(j)) == 0) {
      int nxt = -1;
      for (int c = 0; c < n; ++c) if (!row_used[c]) { nxt = c; break; }
      if (nxt < 0) break;
      i = nxt;
      continue;
    }
    const cplx piv = row(j);
    for (int m = 0; m < n; ++m) col(m) = entry(m, j);
    if (r > 0) col.noalias() -= A.leftCols(r) * B.row(j).head(r).transpose();
    row /= piv;
    const double un = col.squaredNorm(), vn = row.squaredNorm();
    double cross = 0;
    if (r > 0) {
      const CVec au = A.leftCols(r).adjoint() * col, bv = B.leftCols(r).adjoint() * row;
      cross = 2 * (au.array() * bv.array()).sum().real();
    }
    norm2 += un * vn + cross;
    if (r == A.cols()) {
      A.conservativeResize(n, r + 32);
      B.conservativeResize(n, r + 32);
    }
    A.col(r) = col;
    B.col(r) = row;
    ++r;
    if (r > max_rank) return false;
    if (std::sqrt(un * vn) <= eps * std::sqrt(std::max(norm2, 0.0))) break;
    double best = -1;
    int inext = -1;
    for (int m = 0; m < n; ++m)
      if (!row_used[m] && std::norm(col(m)) > best) { best = std::norm(col(m)); inext = m; }
    if (inext < 0) break;
    i = inext;
  }
  if (r == 0) return false;
  A.conservativeResize(n, r);  // K ~ A B^T
  B.conservativeResize(n, r);
  Eigen::HouseholderQR<CMat> qa(A), qb(B);
  CMat Ra = qa.matrixQR().topRows(r).triangularView<Eigen::Upper>();
  CMat Rb = qb.matrixQR().topRows(r).triangularView<Eigen::Upper>();
  CMat core = Ra * Rb.transpose();
  const detail::ThinSvd svd = detail::thin_svd(core, true, "fmm", "M2L cross-approximation core");
  const Eigen::VectorXd& sv = svd.s;
  int rk = 0;
  while (rk < sv.size() && sv(rk) > thr * sv(0)) ++rk;
  rk = std::max(rk, 1);
  // U = Q_a [U_s S; 0], VH = V_s^H Q_b^T = (Q_b [conj(V_s); 0])^T (Householder sequences applied
  // to the thin blocks instead of forming Q_a, Q_b)
  CMat X = CMat::Zero(n, rk), Y = CMat::Zero(n, rk);
  X.topRows(r) = svd.U.leftCols(rk) * sv.head(rk).asDiagonal();
  Y.topRows(r) = svd.V.leftCols(rk).conjugate();
  U = qa.householderQ() * X;
  VH = (qb.householderQ() * Y).transpose();
  return true;
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
  ParallelErrors errors;  // the operators allocate: nothing may escape the region
#pragma omp parallel for schedule(dynamic) num_threads(resolve_threads(opt.threads))
  for (int c = 0; c < static_cast<int>(canon.size()); ++c) {
    if (errors.failed()) continue;
    try {
      // 1D coordinate differences per axis: diff[d][mm * p + nn]
      std::array<std::vector<double>, 3> diff;
      for (int d = 0; d < 3; ++d) {
        diff[d].resize(static_cast<std::size_t>(p) * p);
        for (int mm = 0; mm < p; ++mm)
          for (int nn = 0; nn < p; ++nn) diff[d][mm * p + nn] = canon[c][d] * bw + al * (cheb.nodes[mm] - cheb.nodes[nn]);
      }
      auto entry = [&](int m, int n) {
        const double v0 = diff[0][(m % p) * p + n % p], v1 = diff[1][((m / p) % p) * p + (n / p) % p],
                     v2 = diff[2][(m / (p * p)) * p + n / (p * p)];
        return green(k, std::sqrt(v0 * v0 + v1 * v1 + v2 * v2));
      };
      M2LOp& op = ops[c];
      bool done = false;
      if (opt.compress_m2l) {
        // ACA first (cheap), verified on random entries against the kernel; full matrix + randomized
        // SVD as the fallback.
        CMat U, VH;
        if (compress_aca(p3, entry, 0.01 * thr, thr, p3 / 2, U, VH)) {
          std::mt19937_64 gen(777 + c);
          std::uniform_int_distribution<int> ud(0, p3 - 1);
          double e2 = 0, k2 = 0;
          for (int s = 0; s < 4000; ++s) {
            const int m = ud(gen), n = ud(gen);
            const cplx kv = entry(m, n);
            e2 += std::norm(kv - U.row(m).transpose().cwiseProduct(VH.col(n)).sum());
            k2 += std::norm(kv);
          }
          if (e2 <= 9 * thr * thr * k2 && 2 * U.cols() < p3) {
            op.U = std::move(U);
            op.VH = std::move(VH);
            op.compressed = true;
            op.rank = static_cast<int>(op.U.cols());
            done = true;
          }
        }
      }
      if (!done) {
        CMat K(p3, p3);
        for (int n = 0; n < p3; ++n)
          for (int m = 0; m < p3; ++m) K(m, n) = entry(m, n);
        if (opt.compress_m2l && compress_rsvd(K, thr, 32, 12345 + c, op.U, op.VH)) {
          op.compressed = true;
          op.rank = static_cast<int>(op.U.cols());
        } else {
          op.full = std::move(K);
          op.rank = p3;
        }
      }
    } catch (...) {
      errors.record(std::current_exception());
    }
  }
  errors.rethrow();
  for (std::size_t c = 0; c < canon.size(); ++c) {
    max_rank = std::max(max_rank, ops[c].rank);
    m2l[l][canon_code(canon[c][0], canon[c][1], canon[c][2])] = std::move(ops[c]);
  }
}


void HelmholtzFmm::Impl::setup_batches() {
  const auto& nodes = tree->nodes();
  slot.assign(nodes.size(), -1);
  for (int l = 0; l <= L; ++l) {
    const auto& lev = tree->level_nodes(l);
    for (int i = 0; i < static_cast<int>(lev.size()); ++i) slot[lev[i]] = i;
  }
  sym_perm.assign(48, {});
  batches.assign(L + 1, {});
  for (int l = 2; l <= L; ++l) {
    std::map<int, int> cls;  // canonical code -> batch index
    for (int id : tree->level_nodes(l))
      for (int src : tree->interaction_list(id)) {
        std::array<int, 3> t;
        for (int d = 0; d < 3; ++d) t[d] = nodes[id].coord[d] - nodes[src].coord[d];
        int sym = 0;
        const auto tc = canonicalize(t, p, nullptr, &sym);
        if (sym_perm[sym].empty()) canonicalize(t, p, &sym_perm[sym]);
        const int code = canon_code(tc[0], tc[1], tc[2]);
        auto it = cls.find(code);
        if (it == cls.end()) {
          it = cls.emplace(code, static_cast<int>(batches[l].size())).first;
          batches[l].push_back({&m2l[l].at(code), {}});
        }
        batches[l][it->second].list.push_back({slot[id], src, sym});
      }
  }
  // sources in leaf order
  const std::size_t ns = src_order.size();
  sx.resize(ns); sy.resize(ns); sz.resize(ns);
  if (!snrm.empty()) { snx.resize(ns); sny.resize(ns); snz.resize(ns); }
  for (std::size_t u = 0; u < ns; ++u) {
    const auto s = src_order[u];
    sx[u] = spts[s][0]; sy[u] = spts[s][1]; sz[u] = spts[s][2];
    if (!snrm.empty()) { snx[u] = snrm[s][0]; sny[u] = snrm[s][1]; snz[u] = snrm[s][2]; }
  }
}

namespace {
/// HelmholtzFmmOptions::prebuilt_tree must be a tree over exactly these points: as many, and
/// each inside its leaf box (the property the FMM's interpolation and near field rely on).
void check_prebuilt_tree(const Octree& t, const std::vector<Point3>& pts) {
  if (t.permutation().size() != pts.size())
    throw InvalidArgument("HelmholtzFmm: prebuilt_tree holds " + std::to_string(t.permutation().size()) +
                          " points, the FMM has " + std::to_string(pts.size()) + " targets");
  const auto& nodes = t.nodes();
  const auto& perm = t.permutation();
  for (int id : t.level_nodes(t.leaf_level())) {
    const auto& nd = nodes[static_cast<std::size_t>(id)];
    for (std::int64_t s = nd.begin; s < nd.end; ++s) {
      const auto& x = pts[static_cast<std::size_t>(perm[static_cast<std::size_t>(s)])];
      for (int d = 0; d < 3; ++d)
        if (!(std::abs(x[d] - nd.center[d]) <= nd.half_width * (1 + 1e-12)))
          throw InvalidArgument("HelmholtzFmm: prebuilt_tree is not a tree over these points (target " +
                                std::to_string(perm[static_cast<std::size_t>(s)]) + " lies outside its leaf box)");
    }
  }
}
}  // namespace

void HelmholtzFmm::Impl::build(const std::vector<std::int64_t>& owner) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!std::isfinite(k.real()) || !std::isfinite(k.imag()) || k.imag() < 0 || k == cplx(0))
    throw InvalidArgument("HelmholtzFmm: k must be finite, nonzero, with Im k >= 0");
  if (opt.order != 0 && (opt.order < 2 || opt.order > 24))
    throw InvalidArgument("HelmholtzFmm: order must be 0 (automatic) or in [2, 24], got " + std::to_string(opt.order));
  if (!(opt.max_box_wavelengths > 0)) throw InvalidArgument("HelmholtzFmm: max_box_wavelengths must be > 0");
  if (opt.threads < 0) throw InvalidArgument("HelmholtzFmm: threads must be >= 0 (0: all available)");
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
  k_user = k;
  {
    // |k| x extent below 1e-100: the k-dependent parts of the kernels are below 1e-100 relative
    // to the static ones; evaluating them would only produce subnormal numbers (several times
    // slower, same result in double precision), so the kernels are evaluated at k = 0.
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (const auto* set : {&tpts, &spts})
      for (const auto& x : *set)
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], x[d]);
          hi[d] = std::max(hi[d], x[d]);
        }
    const double extent = std::hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
    if (std::abs(k) * extent < kStaticKernelKappa) k = cplx(0, 0);
  }
  OctreeOptions topt = opt.tree;
  if (opt.prebuilt_tree) {
    check_prebuilt_tree(*opt.prebuilt_tree, tpts);
    topt.depth = 0;  // no depth search: the tree is given
  } else if (topt.depth < 0 && topt.max_leaf <= 0) {
    if (!opt.near_field) {
      topt.max_leaf = 64;  // the caller's near-field blocks grow with the leaves: keep them small
    } else {
      // automatic depth: balance P2P (~ N * 27 * points per leaf) against P2M/L2P and M2L
      // (~ p^3 per point and ~ r p^3 per interaction): the depth whose average number of
      // points per non-empty leaf is geometrically closest to p^3 / 12 (measured optimum on
      // sphere surfaces and cubes, p = 7..10).
      const Octree t0(tpts, OctreeOptions{1, 12, 0});  // validates the points
      const double h0 = t0.nodes()[t0.level_nodes(0)[0]].half_width;
      const int pe = opt.order > 0 ? opt.order : std::clamp(choose_order(opt.tolerance, k, h0 / 2), 3, 16);
      const double target = std::max(8.0, pe * pe * pe / 12.0 * static_cast<double>(nt) / std::max<std::size_t>(ns, 1));
      int best = 0;
      double best_score = 1e300;
      for (int d = 1; d <= topt.max_depth; ++d) {
        const Octree td(tpts, OctreeOptions{1, topt.max_depth, d});
        const double avg = static_cast<double>(nt) / static_cast<double>(td.level_nodes(d).size());
        const double score = std::abs(std::log(avg / target));
        if (score < best_score) { best_score = score; best = d; }
        if (avg < target / 4) break;
      }
      topt.depth = best;
    }
  }
  if (opt.prebuilt_tree)
    tree = opt.prebuilt_tree;
  else
    tree = std::make_shared<const Octree>(tpts, topt);  // validates the points
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
    if (opt.order == 0 && p > kMaxOrder) {
      const double tmin = min_tolerance(k, w2);
      std::ostringstream os;
      os << "HelmholtzFmm: the tolerance " << opt.tolerance << " at k x (level-2 box width) = " << std::abs(k) * w2
         << " needs " << p << " Chebyshev nodes per axis, more than the " << kMaxOrder << " supported: ";
      if (!std::isfinite(tmin)) {
        os << "this k x box size is outside the low-frequency regime of this FMM";
        throw InvalidArgument(os.str());
      }
      os << "the smallest tolerance available at this k and box size is " << tmin;
      throw ToleranceUnavailable(os.str());
    }
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
  setup_batches();
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
  with_threads(opt.threads, [&] { impl_->build(owner); });
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
  with_threads(opt.threads, [&] { impl_->build(owner); });
}

const Octree& HelmholtzFmm::tree() const { return *impl_->tree; }
std::shared_ptr<const Octree> HelmholtzFmm::tree_ptr() const { return impl_->tree; }
int HelmholtzFmm::order() const { return impl_->p; }
cplx HelmholtzFmm::k() const { return impl_->k_user; }
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
  // M along axis ax (index stride st; the other two axes have strides su, sv): out = M in, or
  // out += M in when add
  auto along = [&](const std::vector<double>& M, int st, int su, int sv, const T* in, T* out, bool add) {
    for (int v = 0; v < p; ++v)
      for (int u = 0; u < p; ++u) {
        const int b = su * u + sv * v;
        for (int i = 0; i < p; ++i) {
          T s{};
          for (int j = 0; j < p; ++j) s += A(M, i, j) * in[b + st * j];
          if (add)
            out[b + st * i] += s;
          else
            out[b + st * i] = s;
        }
      }
  };
  along(A0, 1, p, p * p, x, t1.data(), false);
  along(A1, p, 1, p * p, t1.data(), t2.data(), false);
  along(A2, p * p, 1, p, t2.data(), y, true);
}

// sin and cos of x (|x| < 1e6) with branch-free code that the compiler can vectorise:
// x = n pi/2 + y, |y| <= pi/4 (two-part Cody-Waite reduction, fdlibm constants), Taylor
// polynomials to degree 17/18 (truncation < 1e-19), quadrant selection.
#pragma omp declare simd notinbranch
inline void fast_sincos(double x, double& sn, double& cs) {
  constexpr double kTwoOverPi = 0.63661977236758134308, kP1 = 1.57079632673412561417e+00,
                   kP1t = 6.07710050650619224932e-11, kMagic = 6755399441055744.0;  // 1.5 * 2^52
  const double nd = (x * kTwoOverPi + kMagic) - kMagic;
  const double y = (x - nd * kP1) - nd * kP1t, y2 = y * y;
  const double sp = y * (1 + y2 * (-1.0 / 6 + y2 * (1.0 / 120 + y2 * (-1.0 / 5040 + y2 * (1.0 / 362880 + y2 * (-1.0 / 39916800 +
                    y2 * (1.0 / 6227020800 + y2 * (-1.0 / 1307674368000 + y2 * (1.0 / 355687428096000)))))))));
  const double cp = 1 + y2 * (-0.5 + y2 * (1.0 / 24 + y2 * (-1.0 / 720 + y2 * (1.0 / 40320 + y2 * (-1.0 / 3628800 +
                    y2 * (1.0 / 479001600 + y2 * (-1.0 / 87178291200 + y2 * (1.0 / 20922789888000 +
                    y2 * (-1.0 / 6402373705728000)))))))));
  // quadrant q = n mod 4 (branch-free): q odd swaps sin and cos; sin < 0 for q = 2, 3; cos < 0 for q = 1, 2
  const long q = static_cast<long>(nd);
  const double b0 = static_cast<double>(q & 1), b1 = static_cast<double>((q >> 1) & 1),
               b2 = static_cast<double>(((q + 1) >> 1) & 1);
  sn = (sp + b0 * (cp - sp)) * (1 - 2 * b1);
  cs = (cp + b0 * (sp - cp)) * (1 - 2 * b2);
}

// P2P of one target against a contiguous range of sources (leaf order, structure of arrays),
// real k. Returns (adds) the potential and, when DN, the normal derivative.
template <bool DIP, bool DN>
inline void p2p_real(double kr_, double x0, double x1, double x2, double nx0, double nx1, double nx2,
                     const double* sx, const double* sy, const double* sz, const double* nx, const double* ny,
                     const double* nz, const double* qr, const double* qi, const double* mr, const double* mi,
                     std::int64_t b, std::int64_t e, double& ur, double& ui, double& dr, double& di) {
  constexpr double c4pi = 1.0 / (4 * kPi);
  double aur = 0, aui = 0, adr = 0, adi = 0;
#pragma omp simd reduction(+ : aur, aui, adr, adi)
  for (std::int64_t u = b; u < e; ++u) {
    const double d0 = x0 - sx[u], d1 = x1 - sy[u], d2 = x2 - sz[u];
    const double r2 = d0 * d0 + d1 * d1 + d2 * d2;
    const double rinv = r2 > 0 ? 1.0 / std::sqrt(r2) : 0.0;
    const double r = r2 * rinv, kr = kr_ * r;
    double sn, cs;
    fast_sincos(kr, sn, cs);
    const double g = c4pi * rinv;
    const double Gr = g * cs, Gi = g * sn;  // G
    aur += Gr * qr[u] - Gi * qi[u];
    aui += Gr * qi[u] + Gi * qr[u];
    // A = G (1 - i kr) = -r dG/dr
    const double Ar = Gr + Gi * kr, Ai = Gi - Gr * kr;
    const double ri2 = rinv * rinv;
    if constexpr (DIP) {
      const double dny = (d0 * nx[u] + d1 * ny[u] + d2 * nz[u]) * ri2;  // rhat.n_y / r
      // dG/dn_y = -G'(r) rhat.n_y = A rhat.n_y / r
      aur += dny * (Ar * mr[u] - Ai * mi[u]);
      aui += dny * (Ar * mi[u] + Ai * mr[u]);
    }
    if constexpr (DN) {
      const double dnx = (d0 * nx0 + d1 * nx1 + d2 * nx2) * ri2;  // rhat.n_x / r
      // dG/dn_x = G'(r) rhat.n_x = -A rhat.n_x / r
      adr += -dnx * (Ar * qr[u] - Ai * qi[u]);
      adi += -dnx * (Ar * qi[u] + Ai * qr[u]);
      if constexpr (DIP) {
        // d2G/dn_x dn_y = -(G1/r nn + (G2 - G1/r) rnx rny), G1 = -A/r, G2 = G (2 - 2ikr - k^2r^2)/r^2
        const double nn = nx0 * nx[u] + nx1 * ny[u] + nx2 * nz[u];
        const double rny = (d0 * nx[u] + d1 * ny[u] + d2 * nz[u]) * rinv, rnx = (d0 * nx0 + d1 * nx1 + d2 * nx2) * rinv;
        const double G1r_r = -Ar * ri2, G1r_i = -Ai * ri2;  // G1 / r
        const double k2r2 = kr * kr;
        const double G2r = (Gr * (2 - k2r2) + Gi * 2 * kr) * ri2, G2i = (Gi * (2 - k2r2) - Gr * 2 * kr) * ri2;
        const double Hr = -(G1r_r * nn + (G2r - G1r_r) * rnx * rny), Hi = -(G1r_i * nn + (G2i - G1r_i) * rnx * rny);
        adr += Hr * mr[u] - Hi * mi[u];
        adi += Hr * mi[u] + Hi * mr[u];
      }
    }
  }
  ur += aur; ui += aui; dr += adr; di += adi;
}

#if defined(__GNUC__)
#define ELLIPTICA_FMM_VEC4 1
// The same P2P with GCC/Clang vector extensions, 4 sources at a time (the auto-vectoriser gives
// up on the loop above because of sqrt's errno path).
typedef double v4d __attribute__((vector_size(32)));
typedef long v4l __attribute__((vector_size(32)));
template <bool DIP, bool DN>
inline void p2p_real4(double kr_, double x0, double x1, double x2, double nx0, double nx1, double nx2,
                      const double* sx, const double* sy, const double* sz, const double* nx, const double* ny,
                      const double* nz, const double* qr, const double* qi, const double* mr, const double* mi,
                      std::int64_t b, std::int64_t e, double& ur, double& ui, double& dr, double& di) {
  constexpr double c4pi = 1.0 / (4 * kPi);
  constexpr double kTwoOverPi = 0.63661977236758134308, kP1 = 1.57079632673412561417e+00,
                   kP1t = 6.07710050650619224932e-11, kMagic = 6755399441055744.0;
  const v4d zero = {0, 0, 0, 0};
  v4d aur = zero, aui = zero, adr = zero, adi = zero;
  for (std::int64_t u = b; u < e; u += 4) {
    const int nl = static_cast<int>(std::min<std::int64_t>(4, e - u));
    v4d X = zero, Y = zero, Z = zero, Qr = zero, Qi = zero, Mr = zero, Mi = zero, Nx = zero, Ny = zero, Nz = zero;
    for (int l = 0; l < nl; ++l) {
      X[l] = sx[u + l]; Y[l] = sy[u + l]; Z[l] = sz[u + l]; Qr[l] = qr[u + l]; Qi[l] = qi[u + l];
      if constexpr (DIP) { Mr[l] = mr[u + l]; Mi[l] = mi[u + l]; Nx[l] = nx[u + l]; Ny[l] = ny[u + l]; Nz[l] = nz[u + l]; }
    }
    for (int l = nl; l < 4; ++l) { X[l] = x0 + 1; Y[l] = x1; Z[l] = x2; }  // padding: r = 1, zero weights
    const v4d d0 = x0 - X, d1 = x1 - Y, d2 = x2 - Z;
    const v4d r2 = d0 * d0 + d1 * d1 + d2 * d2;
    v4d r;
    for (int l = 0; l < 4; ++l) r[l] = __builtin_sqrt(r2[l]);
    const v4d rinv = r2 > 0 ? 1.0 / (r2 > 0 ? r : 1.0) : zero;  // r = 0: skipped (zero contribution)
    const v4d kr = kr_ * r;
    // sincos (as fast_sincos)
    const v4d nd = (kr * kTwoOverPi + kMagic) - kMagic;
    const v4d y = (kr - nd * kP1) - nd * kP1t, y2 = y * y;
    const v4d sp = y * (1 + y2 * (-1.0 / 6 + y2 * (1.0 / 120 + y2 * (-1.0 / 5040 + y2 * (1.0 / 362880 + y2 * (-1.0 / 39916800 +
                   y2 * (1.0 / 6227020800 + y2 * (-1.0 / 1307674368000 + y2 * (1.0 / 355687428096000)))))))));
    const v4d cp = 1 + y2 * (-0.5 + y2 * (1.0 / 24 + y2 * (-1.0 / 720 + y2 * (1.0 / 40320 + y2 * (-1.0 / 3628800 +
                   y2 * (1.0 / 479001600 + y2 * (-1.0 / 87178291200 + y2 * (1.0 / 20922789888000 +
                   y2 * (-1.0 / 6402373705728000)))))))));
    const v4l q = __builtin_convertvector(nd, v4l);
    const v4d b0 = __builtin_convertvector(q & 1, v4d), b1 = __builtin_convertvector((q >> 1) & 1, v4d),
              b2 = __builtin_convertvector(((q + 1) >> 1) & 1, v4d);
    const v4d sn = (sp + b0 * (cp - sp)) * (1 - 2 * b1), cs = (cp + b0 * (sp - cp)) * (1 - 2 * b2);
    const v4d g = c4pi * rinv;
    const v4d Gr = g * cs, Gi = g * sn;
    aur += Gr * Qr - Gi * Qi;
    aui += Gr * Qi + Gi * Qr;
    const v4d Ar = Gr + Gi * kr, Ai = Gi - Gr * kr;
    const v4d ri2 = rinv * rinv;
    if constexpr (DIP) {
      const v4d dny = (d0 * Nx + d1 * Ny + d2 * Nz) * ri2;
      aur += dny * (Ar * Mr - Ai * Mi);
      aui += dny * (Ar * Mi + Ai * Mr);
    }
    if constexpr (DN) {
      const v4d dnx = (d0 * nx0 + d1 * nx1 + d2 * nx2) * ri2;
      adr -= dnx * (Ar * Qr - Ai * Qi);
      adi -= dnx * (Ar * Qi + Ai * Qr);
      if constexpr (DIP) {
        const v4d nn = nx0 * Nx + nx1 * Ny + nx2 * Nz;
        const v4d rny = (d0 * Nx + d1 * Ny + d2 * Nz) * rinv, rnx = (d0 * nx0 + d1 * nx1 + d2 * nx2) * rinv;
        const v4d G1r_r = -Ar * ri2, G1r_i = -Ai * ri2;
        const v4d k2r2 = kr * kr;
        const v4d G2r = (Gr * (2 - k2r2) + Gi * 2 * kr) * ri2, G2i = (Gi * (2 - k2r2) - Gr * 2 * kr) * ri2;
        const v4d Hr = -(G1r_r * nn + (G2r - G1r_r) * rnx * rny), Hi = -(G1r_i * nn + (G2i - G1r_i) * rnx * rny);
        adr += Hr * Mr - Hi * Mi;
        adi += Hr * Mi + Hi * Mr;
      }
    }
  }
  for (int l = 0; l < 4; ++l) { ur += aur[l]; ui += aui[l]; dr += adr[l]; di += adi[l]; }
}
#define P2P_REAL p2p_real4
#else
#define P2P_REAL p2p_real
#endif

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
  if ((outputs & ~3u) != 0 || outputs == 0) throw InvalidArgument("HelmholtzFmm::apply: bad outputs mask");
  FmmResult r;
  if (outputs & kPotential) r.potential.resize(nt);
  if (outputs & kNormalDerivative) r.normal_derivative.resize(nt);
  apply(q.empty() ? nullptr : q.data(), mu.empty() ? nullptr : mu.data(),
        r.potential.empty() ? nullptr : r.potential.data(),
        r.normal_derivative.empty() ? nullptr : r.normal_derivative.data());
  return r;
}

void HelmholtzFmm::apply(const cplx* q, const cplx* mu, cplx* potential, cplx* normal_derivative) const {
  // the team size of Eigen's products inside = opt.threads (core/parallel.hpp with_threads)
  with_threads(impl_->opt.threads, [&] { impl_->apply(q, mu, potential, normal_derivative); });
}

void HelmholtzFmm::Impl::apply(const cplx* q, const cplx* mu, cplx* potential, cplx* normal_derivative) const {
  const Impl& I = *this;
  const std::size_t nt = I.tpts.size(), ns = I.spts.size();
  const int nthr = resolve_threads(I.opt.threads);
  if (!potential && !normal_derivative) throw InvalidArgument("HelmholtzFmm::apply: no output requested");
  if (mu && I.snrm.empty()) throw InvalidArgument("HelmholtzFmm::apply: dipoles need source normals");
  const bool want_dn = normal_derivative != nullptr;
  if (want_dn && I.tnrm.empty()) throw InvalidArgument("HelmholtzFmm::apply: normal derivatives need target normals");
  for (std::size_t s = 0; s < (q ? ns : 0); ++s)
    if (!std::isfinite(q[s].real()) || !std::isfinite(q[s].imag())) throw InvalidArgument("HelmholtzFmm::apply: NaN/Inf charge");
  for (std::size_t s = 0; s < (mu ? ns : 0); ++s)
    if (!std::isfinite(mu[s].real()) || !std::isfinite(mu[s].imag())) throw InvalidArgument("HelmholtzFmm::apply: NaN/Inf dipole");
  const bool has_q = q != nullptr, has_mu = mu != nullptr;
  const bool dbg = std::getenv("ELLIPTICA_FMM_PROFILE") != nullptr;
  auto tlast = std::chrono::steady_clock::now();
  auto dbg_t = [&](const char* what) {
    if (!dbg) return;
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "  %s %.3f\n", what, std::chrono::duration<double>(now - tlast).count());
    tlast = now;
  };
  const auto& nodes = I.tree->nodes();
  const auto& perm = I.tree->permutation();
  const int p = I.p, p3 = I.p3, L = I.L;
  // outputs accumulate in the caller's storage; an output not requested goes to scratch
  std::vector<cplx> u_scratch, dn_scratch;
  if (!potential) u_scratch.resize(nt);
  if (!normal_derivative) dn_scratch.resize(nt);
  cplx* U = potential ? potential : u_scratch.data();
  cplx* DN = normal_derivative ? normal_derivative : dn_scratch.data();
  std::fill(U, U + nt, cplx(0.0));
  std::fill(DN, DN + nt, cplx(0.0));
  const cplx k = I.k;

  if (L >= 2 && (has_q || has_mu)) {
    const std::size_t nn = nodes.size();
    std::vector<cplx> W(nn * p3, 0.0), F(nn * p3, 0.0);
    // P2M
    const auto& leaves = I.tree->level_nodes(L);
    const double aL = I.a(L);
    // Every region below that allocates records a failure instead of letting it escape; the
    // remaining work of a failed region is skipped and the error rethrown after it.
    ParallelErrors errors;
    // For each point of each leaf (the leaves in parallel): the 1-D Chebyshev values Lx and
    // derivatives Dx (3p each, axis d at d * p) of the point in its leaf's box, then
    // body(leaf id, point, Lx, Dx). pts: the points; range(id): the [begin, end) of the leaf's
    // points in order, which maps those positions to point indices.
    auto leaf_points = [&](const std::vector<Point3>& pts, auto&& range, const std::vector<std::int64_t>& order,
                           auto&& body) {
#pragma omp parallel num_threads(nthr)
      {
        std::vector<double> Lx, Dx;
        errors.run([&] {
          Lx.resize(3 * p);
          Dx.resize(3 * p);
        });
#pragma omp for schedule(dynamic)
        for (int li = 0; li < static_cast<int>(leaves.size()); ++li) {
          if (errors.failed()) continue;
          const int id = leaves[li];
          const auto [t0, t1] = range(id);
          for (std::int64_t t = t0; t < t1; ++t) {
            const std::int64_t s = order[t];
            for (int d = 0; d < 3; ++d) I.cheb.eval((pts[s][d] - nodes[id].center[d]) / aL, &Lx[d * p], &Dx[d * p]);
            body(id, s, Lx.data(), Dx.data());
          }
        }
      }
      errors.rethrow();
    };
    leaf_points(
        I.spts, [&](int id) { return std::pair{I.leaf_src_begin[id], I.leaf_src_end[id]}; }, I.src_order,
        [&](int id, std::int64_t s, const double* Lx, const double* Dx) {
          cplx* w = &W[static_cast<std::size_t>(id) * p3];
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
        });
    dbg_t("P2M");
    // M2M (upward, levels L..3 into parents at L-1..2)
    for (int l = L; l >= 3; --l) {
      const auto& par = I.tree->level_nodes(l - 1);
#pragma omp parallel for schedule(dynamic) num_threads(nthr)
      for (int pi = 0; pi < static_cast<int>(par.size()); ++pi)
        errors.run([&] {
          const int id = par[pi];
          for (int oct = 0; oct < 8; ++oct) {
            const int c = nodes[id].children[oct];
            if (c < 0) continue;
            kron3_apply<cplx>(p, I.S1[l][oct][0], I.S1[l][oct][1], I.S1[l][oct][2], false,
                              &W[static_cast<std::size_t>(c) * p3], &W[static_cast<std::size_t>(id) * p3]);
          }
        });
      errors.rethrow();
    }
    dbg_t("M2M");
    // M2L, batched per level and canonical offset c: X = [P_j W_src(j)] (p^3 x B gathered with
    // the symmetry permutations), Y = U_c (VH_c X) as two GEMMs, F_tgt(j) += P_j^T Y(:, j).
    // Threads accumulate into private copies of the level's local expansions (no write conflicts).
    constexpr int kB = 96;
    for (int l = 2; l <= L; ++l) {
      const auto& lev = I.tree->level_nodes(l);
      const std::size_t nb = lev.size();
      // work items: (batch, first interaction)
      std::vector<std::pair<int, int>> work;
      for (int c = 0; c < static_cast<int>(I.batches[l].size()); ++c)
        for (int j0 = 0; j0 < static_cast<int>(I.batches[l][c].list.size()); j0 += kB) work.push_back({c, j0});
      const bool priv = nthr > 1 && work.size() > 1;
      std::vector<std::vector<cplx>> Fth(priv ? nthr : 0);
#pragma omp parallel if (priv) num_threads(nthr)
      {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        std::vector<cplx>* acc = nullptr;
        if (priv)
          errors.run([&] {
            Fth[tid].assign(nb * p3, 0.0);
            acc = &Fth[tid];
          });
        CMat X, T, Y;
#pragma omp for schedule(dynamic)
        for (int wi = 0; wi < static_cast<int>(work.size()); ++wi) {
          if (errors.failed()) continue;
          try {
            const auto& bt = I.batches[l][work[wi].first];
            const int j0 = work[wi].second, nc = std::min<int>(kB, static_cast<int>(bt.list.size()) - j0);
            X.resize(p3, nc);
            for (int j = 0; j < nc; ++j) {
              const auto& it = bt.list[j0 + j];
              const int* pm = I.sym_perm[it.sym].data();
              const cplx* w = &W[static_cast<std::size_t>(it.src) * p3];
              cplx* x = X.col(j).data();
              for (int n = 0; n < p3; ++n) x[pm[n]] = w[n];
            }
            if (bt.op->compressed) {
              T.noalias() = bt.op->VH * X;
              Y.noalias() = bt.op->U * T;
            } else {
              Y.noalias() = bt.op->full * X;
            }
            for (int j = 0; j < nc; ++j) {
              const auto& it = bt.list[j0 + j];
              const int* pm = I.sym_perm[it.sym].data();
              cplx* f = priv ? &(*acc)[static_cast<std::size_t>(it.tgt_slot) * p3]
                             : &F[static_cast<std::size_t>(lev[it.tgt_slot]) * p3];
              const cplx* y = Y.col(j).data();
              for (int m = 0; m < p3; ++m) f[m] += y[pm[m]];
            }
          } catch (...) {
            errors.record(std::current_exception());
          }
        }
      }
      errors.rethrow();
      if (priv) {
#pragma omp parallel for schedule(static) num_threads(nthr)
        for (int bi = 0; bi < static_cast<int>(nb); ++bi) {
          cplx* f = &F[static_cast<std::size_t>(lev[bi]) * p3];
          for (int t = 0; t < nthr; ++t) {
            if (Fth[t].empty()) continue;
            const cplx* g = &Fth[t][static_cast<std::size_t>(bi) * p3];
            for (int m = 0; m < p3; ++m) f[m] += g[m];
          }
        }
      }
    }
    dbg_t("M2L");
    // L2L (downward)
    for (int l = 3; l <= L; ++l) {
      const auto& lev = I.tree->level_nodes(l);
#pragma omp parallel for schedule(dynamic) num_threads(nthr)
      for (int ci = 0; ci < static_cast<int>(lev.size()); ++ci)
        errors.run([&] {
          const int c = lev[ci];
          const int par = nodes[c].parent;
          const int oct = (nodes[c].coord[0] & 1) | ((nodes[c].coord[1] & 1) << 1) | ((nodes[c].coord[2] & 1) << 2);
          kron3_apply<cplx>(p, I.S1[l][oct][0], I.S1[l][oct][1], I.S1[l][oct][2], true,
                            &F[static_cast<std::size_t>(par) * p3], &F[static_cast<std::size_t>(c) * p3]);
        });
      errors.rethrow();
    }
    dbg_t("L2L");
    // L2P
    leaf_points(
        I.tpts, [&](int id) { return std::pair{nodes[id].begin, nodes[id].end}; }, perm,
        [&](int id, std::int64_t i, const double* Lx, const double* Dx) {
          const cplx* f = &F[static_cast<std::size_t>(id) * p3];
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
        });
  }
  dbg_t("L2P");
  // P2P near field
  if (I.opt.near_field && (has_q || has_mu)) {
    const auto& leaves = I.tree->level_nodes(L);
    const bool real_k = k.imag() == 0;
    // source strengths in leaf order (real and imaginary parts apart, for the vectorised kernel)
    std::vector<double> qr, qi, mr, mi;
    if (real_k) {
      const std::size_t nsrc = I.src_order.size();
      qr.assign(nsrc, 0.0); qi.assign(nsrc, 0.0); mr.assign(nsrc, 0.0); mi.assign(nsrc, 0.0);
      for (std::size_t u = 0; u < nsrc; ++u) {
        const auto s = I.src_order[u];
        if (has_q) { qr[u] = q[s].real(); qi[u] = q[s].imag(); }
        if (has_mu) { mr[u] = mu[s].real(); mi[u] = mu[s].imag(); }
      }
    }
#pragma omp parallel for schedule(dynamic) num_threads(nthr)
    for (int li = 0; li < static_cast<int>(leaves.size()); ++li) {
      const int id = leaves[li];
      for (std::int64_t t = nodes[id].begin; t < nodes[id].end; ++t) {
        const std::int64_t i = perm[t];
        cplx su = 0, sd = 0;
        const Point3* nx = want_dn ? &I.tnrm[i] : nullptr;
        if (real_k) {
          double ur = 0, ui = 0, dr = 0, di = 0;
          const auto& x = I.tpts[i];
          const double n0 = nx ? (*nx)[0] : 0, n1 = nx ? (*nx)[1] : 0, n2 = nx ? (*nx)[2] : 0;
          for (int nb : I.tree->neighbours(id)) {
            const auto b = I.leaf_src_begin[nb], e = I.leaf_src_end[nb];
            if (has_mu && want_dn)
              P2P_REAL<true, true>(k.real(), x[0], x[1], x[2], n0, n1, n2, I.sx.data(), I.sy.data(), I.sz.data(), I.snx.data(),
                                   I.sny.data(), I.snz.data(), qr.data(), qi.data(), mr.data(), mi.data(), b, e, ur, ui, dr, di);
            else if (has_mu)
              P2P_REAL<true, false>(k.real(), x[0], x[1], x[2], n0, n1, n2, I.sx.data(), I.sy.data(), I.sz.data(), I.snx.data(),
                                    I.sny.data(), I.snz.data(), qr.data(), qi.data(), mr.data(), mi.data(), b, e, ur, ui, dr, di);
            else if (want_dn)
              P2P_REAL<false, true>(k.real(), x[0], x[1], x[2], n0, n1, n2, I.sx.data(), I.sy.data(), I.sz.data(), nullptr,
                                    nullptr, nullptr, qr.data(), qi.data(), nullptr, nullptr, b, e, ur, ui, dr, di);
            else
              P2P_REAL<false, false>(k.real(), x[0], x[1], x[2], n0, n1, n2, I.sx.data(), I.sy.data(), I.sz.data(), nullptr,
                                     nullptr, nullptr, qr.data(), qi.data(), nullptr, nullptr, b, e, ur, ui, dr, di);
          }
          su = {ur, ui};
          sd = {dr, di};
        } else {
          for (int nb : I.tree->neighbours(id))
            for (std::int64_t u = I.leaf_src_begin[nb]; u < I.leaf_src_end[nb]; ++u) {
              const std::int64_t s = I.src_order[u];
              kernel_terms(k, I.tpts[i], I.spts[s], nx, has_mu ? &I.snrm[s] : nullptr, want_dn, has_q ? q[s] : 0.0,
                           has_mu ? mu[s] : 0.0, su, sd);
            }
        }
        U[i] += su;
        DN[i] += sd;
      }
    }
  }
  dbg_t("P2P");
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
  const auto& nd = I.tree->nodes()[leaf];
  const double aL = I.a(I.L);
  const std::size_t ncol = src.size();
  std::vector<double> M(I.p3 * ncol);
  for (std::size_t c = 0; c < ncol; ++c) {
    const auto s = src[c];
    I.cheb.tensor_weights(I.spts[s], nd.center, aL, dipole ? &I.snrm[s] : nullptr, &M[c], ncol);
  }
  return M;
}

std::vector<double> HelmholtzFmm::l2p_matrix(int leaf, bool normal_derivative) const {
  const Impl& I = *impl_;
  const auto& nodes = I.tree->nodes();
  if (leaf < 0 || leaf >= static_cast<int>(nodes.size()) || !nodes[leaf].is_leaf())
    throw InvalidArgument("HelmholtzFmm::l2p_matrix: not a leaf node index");
  if (normal_derivative && I.tnrm.empty()) throw InvalidArgument("HelmholtzFmm::l2p_matrix: no target normals");
  const std::size_t p3 = static_cast<std::size_t>(I.p3);
  const auto& nd = nodes[leaf];
  const double aL = I.a(I.L);
  const std::size_t nrow = static_cast<std::size_t>(nd.end - nd.begin);
  std::vector<double> M(nrow * p3);
  for (std::size_t r = 0; r < nrow; ++r) {
    const auto i = I.tree->permutation()[nd.begin + static_cast<std::int64_t>(r)];
    I.cheb.tensor_weights(I.tpts[i], nd.center, aL, normal_derivative ? &I.tnrm[i] : nullptr, &M[r * p3], 1);
  }
  return M;
}

}  // namespace elliptica::fmm
