// The IFMM factorisation driver (include/elliptica/ifmm/ifmm.hpp; seed 001 Algorithm 1 and
// section 3): options, levels from the bottom up to 3 in colour order (node-parallel at levels >=
// tau, matrix-parallel below), the dense LU of level 2, the report.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/ifmm/colouring.hpp"
#include "internal.hpp"

namespace elliptica::ifmm {

using namespace detail;

struct Ifmm::Impl {
  Factorisation f;
  IfmmReport report;
  mutable std::mutex stats_mutex;
  mutable double apply_seconds = 0;
  mutable long applications = 0;
};

std::string configuration_name(int sigma, int top, int bottom) {
  if (sigma == 0) return "mIFMMb" + std::to_string(bottom);
  return "nIFMMs" + std::to_string(sigma) + "t" + std::to_string(top) + "b" + std::to_string(bottom);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void validate(const FmmSystem& sys, const IfmmOptions& o) {
  validate_options(o);
  if (!sys.tree) throw InvalidArgument("ifmm: the FMM system has no octree");
  if (!sys.entries || !sys.p2m || !sys.l2p || !sys.m2m || !sys.m2l)
    throw InvalidArgument("ifmm: the FMM system lacks one of its operators (entries, p2m, l2p, m2m, m2l)");
  if (sys.order < 1 || sys.order > 16) throw InvalidArgument("ifmm: Chebyshev order must be in [1, 16], got " + std::to_string(sys.order));
  const int L = sys.tree->leaf_level();
  if (L < 3)
    throw InvalidArgument("ifmm: the octree has " + std::to_string(L + 1) +
                          " levels (leaf level " + std::to_string(L) +
                          "); the IFMM needs a leaf level >= 3 (eliminated levels l..3 above the dense level 2): "
                          "use a deeper tree (smaller leaves)");
  const int l = o.bottom < 0 ? L : o.bottom;
  if (o.bottom < -1 || l < 3 || l > L)
    throw InvalidArgument("ifmm: bottom level l (--ifmm-bottom, ifmm_bottom) must be in [3, " + std::to_string(L) + "] (the tree's leaf level) or -1 (leaf level), got " +
                          std::to_string(o.bottom));
  const int tau = o.top == 0 ? 3 : o.top;
  if (tau < 2 || tau > l)
    throw InvalidArgument("ifmm: top level tau (--ifmm-top, ifmm_top) must be in [2, " + std::to_string(l) + "] (the bottom level) or 0 (3), got " +
                          std::to_string(o.top));
}

std::size_t level_operator_bytes(const Level& lev) {
  std::size_t b = 0;
  for (const auto& x : lev.boxes) {
    for (const auto& m : x.B) b += matrix_bytes(m);
    for (const auto& m : x.K) b += matrix_bytes(m);
    b += matrix_bytes(x.U) + matrix_bytes(x.V) + matrix_bytes(x.L2L) + matrix_bytes(x.M2M);
  }
  return b;
}

// Rough memory estimate of a level's operators before they are built (ranks <= min(n, p^3)).
double estimate_bottom_bytes(const fmm::Octree& tree, int l, int p3) {
  double b = 0;
  const auto& nodes = tree.nodes();
  for (int id : tree.level_nodes(l)) {
    const double n = double(nodes[id].end - nodes[id].begin);
    const double r = std::min(n, double(p3));
    for (int nb : tree.neighbours(id)) b += n * double(nodes[nb].end - nodes[nb].begin);
    b += double(tree.interaction_list(id).size()) * r * r + 4 * n * p3;
  }
  return 16.0 * b;
}

void dense_top(const FmmSystem& sys, Level& top, TopLevel& T, const Settings& s, int threads, const IfmmOptions& o) {
  const int nb = static_cast<int>(top.boxes.size());
  T.offset.assign(static_cast<std::size_t>(nb), 0);
  Eigen::Index n = 0;
  for (int i = 0; i < nb; ++i) {
    T.offset[static_cast<std::size_t>(i)] = n;
    n += top.boxes[static_cast<std::size_t>(i)].n;
  }
  T.n = n;
  require_memory(32.0 * double(n) * double(n), "ifmm: the dense level-2 system (" + std::to_string(n) + " unknowns)");
  Mat A = Mat::Zero(n, n);
  for (int i = 0; i < nb; ++i) {
    const auto& b = top.boxes[static_cast<std::size_t>(i)];
    for (std::size_t a = 0; a < b.nb.size(); ++a)
      A.block(T.offset[static_cast<std::size_t>(i)], T.offset[static_cast<std::size_t>(b.nb[a])], b.B[a].rows(), b.B[a].cols()) = b.B[a];
  }
  // non-adjacent pairs: L2P_i M2L_t P2M_j (full Chebyshev bases), grouped by offset
  std::map<std::array<int, 3>, std::vector<std::pair<int, int>>> by_offset;
  for (int i = 0; i < nb; ++i)
    for (int j = 0; j < nb; ++j) {
      const auto& ci = top.boxes[static_cast<std::size_t>(i)].coord;
      const auto& cj = top.boxes[static_cast<std::size_t>(j)].coord;
      if (box_distance(ci, cj) <= 1) continue;
      by_offset[{ci[0] - cj[0], ci[1] - cj[1], ci[2] - cj[2]}].push_back({i, j});
    }
  std::vector<const std::pair<const std::array<int, 3>, std::vector<std::pair<int, int>>>*> groups;
  for (const auto& g : by_offset) groups.push_back(&g);
  const int ng = static_cast<int>(groups.size());
  ParallelErrors errors;
  const int p3 = s.p3;
  // through the level's shared far-field bases (M2L_t ~ QU QU^* M2L_t QV QV^*)
  Mat QU, WU, QV, WV;
  far_field_weights(sys, 2, p3, s.eps, QU, WU, QV, WV, threads);
  std::vector<Mat> UQ(static_cast<std::size_t>(nb)), VQ(static_cast<std::size_t>(nb));
  for (int i = 0; i < nb; ++i) {
    UQ[static_cast<std::size_t>(i)] = top.boxes[static_cast<std::size_t>(i)].U * QU;
    VQ[static_cast<std::size_t>(i)] = top.boxes[static_cast<std::size_t>(i)].V * QV;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int g = 0; g < ng; ++g)
    errors.run([&] {
      const auto v = sys.m2l(2, groups[static_cast<std::size_t>(g)]->first);
      if (static_cast<int>(v.size()) != p3 * p3) throw InvalidArgument("ifmm: M2L matrix of level 2 has the wrong size");
      const Mat Kt = Eigen::Map<const Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(v.data(), p3, p3);
      const Mat Kc = QU.adjoint() * Kt * QV;
      for (const auto& [i, j] : groups[static_cast<std::size_t>(g)]->second) {
        const auto& bi = top.boxes[static_cast<std::size_t>(i)];
        const auto& bj = top.boxes[static_cast<std::size_t>(j)];
        A.block(T.offset[static_cast<std::size_t>(i)], T.offset[static_cast<std::size_t>(j)], bi.n, bj.n).noalias() =
            UQ[static_cast<std::size_t>(i)] * (Kc * VQ[static_cast<std::size_t>(j)].adjoint());
      }
    });
  errors.rethrow();
  if (!A.allFinite()) throw NumericalError("ifmm: the level-2 system has non-finite entries");
  if (o.progress) o.progress("top", 2, 0.0);
  const double tl = profile_clock();
  T.lu.compute(A);
  profile("dense LU", 2, profile_clock() - tl);
  const double rc = n > 0 ? T.lu.rcond() : 1.0;
  if (!(rc >= s.pivot_rcond)) {
    std::ostringstream m;
    m << "ifmm: the dense level-2 system (" << n << " unknowns) is nearly singular: reciprocal condition estimate " << rc;
    throw NumericalError(m.str());
  }
  T.children = top.children;
  if (o.progress) o.progress("top", 2, 1.0);
}

}  // namespace

void validate_options(const IfmmOptions& o) {
  std::ostringstream m;
  if (!(o.epsilon > 0 && o.epsilon < 1))
    m << "ifmm: epsilon (--ifmm-eps, ifmm_eps) must be in (0, 1), got " << o.epsilon;
  else if (o.sigma != 0 && o.sigma != 3 && o.sigma != 6)
    m << "ifmm: sigma (--ifmm-sigma, ifmm_sigma) must be 3 or 6 (node-parallel nIFMM) or 0 (sequential, mIFMM), got "
      << o.sigma;
  else if (o.top != 0 && o.top < 2)
    m << "ifmm: top level tau (--ifmm-top, ifmm_top) must be >= 2 (or 0: 3), got " << o.top;
  else if (o.bottom != -1 && o.bottom < 3)
    m << "ifmm: bottom level l (--ifmm-bottom, ifmm_bottom) must be >= 3 (or -1: the tree's leaf level), got " << o.bottom;
  else if (o.bottom != -1 && o.top > o.bottom)
    m << "ifmm: top level tau " << o.top << " (--ifmm-top, ifmm_top) is below the bottom level l " << o.bottom
      << " (--ifmm-bottom, ifmm_bottom): tau <= l";
  else if (o.threads < 0)
    m << "ifmm: threads must be >= 0 (0: all available), got " << o.threads;
  else if (!(o.pivot_rcond > 0 && o.pivot_rcond < 1))
    m << "ifmm: pivot_rcond must be in (0, 1), got " << o.pivot_rcond;
  if (!m.str().empty()) throw InvalidArgument(m.str());
}

Ifmm::Ifmm(const FmmSystem& sys, const IfmmOptions& opt) : impl_(std::make_unique<Impl>()) {
  const auto t0 = std::chrono::steady_clock::now();
  validate(sys, opt);
  with_threads(opt.threads, [&] {
    auto& I = *impl_;
    auto& f = I.f;
    auto& rep = I.report;
    const auto& tree = *sys.tree;
    const int L = tree.leaf_level();
    const int l = opt.bottom < 0 ? L : opt.bottom;
    const int tau = opt.top == 0 ? 3 : opt.top;
    const int threads = resolve_threads(opt.threads);
    f.threads = threads;
    f.n = tree.permutation().size();
    f.perm = tree.permutation();
    Settings s;
    s.eps = opt.epsilon;
    s.pivot_rcond = opt.pivot_rcond;
    s.p3 = sys.order * sys.order * sys.order;
    rep.epsilon = opt.epsilon;
    rep.sigma = opt.sigma;
    rep.top = tau;
    rep.bottom = l;
    rep.leaf_level = L;
    rep.order = sys.order;
    rep.name = configuration_name(opt.sigma, tau, l);
    require_memory(estimate_bottom_bytes(tree, l, s.p3), "ifmm: the operators of the bottom level " + std::to_string(l));

    std::size_t kept = 0;
    Level cur;
    {
      const auto tl = std::chrono::steady_clock::now();
      if (opt.progress) opt.progress("initialise", l, 0.0);
      initialise_bottom(sys, l, s, threads, cur);
      if (opt.progress) opt.progress("initialise", l, 1.0);
      IfmmLevelReport lr;
      lr.seconds = seconds_since(tl);
      rep.levels.push_back(lr);
    }
    for (int kappa = l; kappa >= 3; --kappa) {
      const auto tl = std::chrono::steady_clock::now();
      auto& lr = rep.levels.back();
      lr.level = kappa;
      lr.boxes = static_cast<int>(cur.boxes.size());
      for (const auto& b : cur.boxes) {
        lr.unknowns += static_cast<std::size_t>(b.n);
        lr.initial_max_rank = std::max(lr.initial_max_rank, static_cast<int>(std::max(b.U.cols(), b.V.cols())));
      }
      std::vector<std::array<int, 3>> coords;
      for (const auto& b : cur.boxes) coords.push_back(b.coord);
      cur.colours = colour_boxes(coords, opt.sigma);
      cur.order.clear();
      for (const auto& c : cur.colours) cur.order.insert(cur.order.end(), c.begin(), c.end());
      const bool node_parallel = opt.sigma != 0 && kappa >= tau && threads > 1;
      lr.colours = static_cast<int>(cur.colours.size());
      lr.node_parallel = opt.sigma != 0 && kappa >= tau;
      std::size_t peak = level_operator_bytes(cur);
      Settings sl = s;
      sl.critical = node_parallel && opt.sigma == 3;
      sl.inner_threads = node_parallel ? 1 : threads;
      std::size_t done = 0;
      const std::size_t total = cur.boxes.size();
      const double te = profile_clock();
      for (const auto& colour : cur.colours) {
        const int m = static_cast<int>(colour.size());
        if (node_parallel && m > 1) {
          ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
          for (int t = 0; t < m; ++t) errors.run([&] { eliminate(cur, colour[static_cast<std::size_t>(t)], sl); });
          errors.rethrow();
        } else {
          for (int t = 0; t < m; ++t) eliminate(cur, colour[static_cast<std::size_t>(t)], sl);
        }
        done += colour.size();
        if (opt.progress) opt.progress("factorise", kappa, double(done) / double(std::max<std::size_t>(total, 1)));
      }
      profile("elimination", kappa, profile_clock() - te);
      peak = std::max(peak, level_operator_bytes(cur));
      double rs = 0;
      for (const auto& b : cur.boxes) {
        lr.max_rank = std::max(lr.max_rank, b.r);
        rs += b.r;
        lr.bytes += b.el.bytes();
      }
      lr.mean_rank = cur.boxes.empty() ? 0 : rs / double(cur.boxes.size());
      kept += lr.bytes;
      rep.peak_bytes = std::max(rep.peak_bytes, kept + peak);
      f.node_parallel.push_back(lr.node_parallel ? 1 : 0);
      // the parent level (its operators from this level's), then this level is kept for the solve
      Level parent;
      const auto tp = std::chrono::steady_clock::now();
      if (opt.progress) opt.progress("initialise", kappa - 1, 0.0);
      initialise_parent(sys, cur, s, threads, parent);
      if (opt.progress) opt.progress("initialise", kappa - 1, 1.0);
      lr.seconds += seconds_since(tl) - seconds_since(tp);
      f.levels.push_back(std::move(cur));
      cur = std::move(parent);
      IfmmLevelReport next;
      next.seconds = seconds_since(tp);
      rep.levels.push_back(next);
    }
    // level 2: dense
    {
      const auto tt = std::chrono::steady_clock::now();
      dense_top(sys, cur, f.top, s, threads, opt);
      rep.top_size = static_cast<std::size_t>(f.top.n);
      rep.top_seconds = seconds_since(tt) + rep.levels.back().seconds;
      rep.levels.pop_back();  // the level-2 entry only timed its initialisation
      kept += static_cast<std::size_t>(f.top.lu.matrixLU().size()) * sizeof(cplx);
      rep.peak_bytes = std::max(rep.peak_bytes, kept + static_cast<std::size_t>(f.top.n * f.top.n) * sizeof(cplx));
    }
    rep.bytes = kept;
    rep.seconds = seconds_since(t0);
  });
}

Ifmm::~Ifmm() = default;

std::size_t Ifmm::size() const { return impl_->f.n; }

void Ifmm::apply(const cplx* r, cplx* z) const { solve_many(r, z, 1); }

void Ifmm::solve_many(const cplx* B, cplx* X, std::size_t m) const {
  with_threads(impl_->f.threads, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    detail::solve(impl_->f, B, X, m);
    const double dt = seconds_since(t0);
    std::lock_guard<std::mutex> lk(impl_->stats_mutex);
    impl_->apply_seconds += dt;
    impl_->applications += static_cast<long>(m);
  });
}

std::vector<cplx> Ifmm::solve(const std::vector<cplx>& b) const {
  if (b.size() != impl_->f.n)
    throw InvalidArgument("ifmm: right-hand side has " + std::to_string(b.size()) + " values, expected " + std::to_string(impl_->f.n));
  std::vector<cplx> x(b.size());
  apply(b.data(), x.data());
  return x;
}

const IfmmReport& Ifmm::report() const { return impl_->report; }
double Ifmm::apply_seconds_total() const {
  std::lock_guard<std::mutex> lk(impl_->stats_mutex);
  return impl_->apply_seconds;
}
long Ifmm::applications() const {
  std::lock_guard<std::mutex> lk(impl_->stats_mutex);
  return impl_->applications;
}

}  // namespace elliptica::ifmm
