// Initialisation of the IFMM's extended system, level by level (src/ifmm/internal.hpp; seed 001
// Algorithm 1 lines 41-42 and section 4): P2P, P2M, L2P of the bottom level, the parent level's
// P2P / P2M / L2P from the children's M2L, fill-in, M2M and L2L, and the compression of the
// Chebyshev-basis operators into orthonormal bases with the M2L blocks in those bases.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <unordered_map>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include <omp.h>
#include "internal.hpp"

namespace elliptica::ifmm::detail {

namespace {

using RowMat = Eigen::Matrix<cplx, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowRMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat from_row_major(const std::vector<cplx>& v, Eigen::Index rows, Eigen::Index cols, const char* what) {
  if (static_cast<Eigen::Index>(v.size()) != rows * cols)
    throw InvalidArgument(std::string("ifmm: ") + what + " has " + std::to_string(v.size()) + " entries, expected " +
                          std::to_string(rows) + " x " + std::to_string(cols));
  for (const auto& z : v)
    if (!std::isfinite(z.real()) || !std::isfinite(z.imag()))
      throw NumericalError(std::string("ifmm: ") + what + " has a non-finite entry");
  return Eigen::Map<const RowMat>(v.data(), rows, cols);
}

RMat m2m_of(const FmmSystem& sys, int level, int octant, int p3) {
  const auto v = sys.m2m(level, octant);
  if (static_cast<int>(v.size()) != p3 * p3)
    throw InvalidArgument("ifmm: M2M matrix of level " + std::to_string(level) + " has the wrong size");
  return Eigen::Map<const RowRMat>(v.data(), p3, p3);
}

int octant_of(const std::array<int, 3>& c) { return (c[0] & 1) | ((c[1] & 1) << 1) | ((c[2] & 1) << 2); }

// Full (Chebyshev-basis) L2P (n x p^3) and P2M^* (n x p^3) of a tree node, aggregated from the
// leaves below it: L2P_node = stack_c L2P_c S_c^T, P2M_node = [S_c P2M_c]_c.
void full_operators(const FmmSystem& sys, int node, int p3, Mat& l2p, Mat& p2mh) {
  const auto& tree = *sys.tree;
  const auto& nd = tree.nodes()[node];
  const auto n = static_cast<Eigen::Index>(nd.end - nd.begin);
  if (nd.level == tree.leaf_level()) {
    l2p = from_row_major(sys.l2p(node), n, p3, "L2P");
    p2mh = from_row_major(sys.p2m(node), p3, n, "P2M").adjoint();
    return;
  }
  std::vector<int> ch;
  for (int c : nd.children)
    if (c >= 0) ch.push_back(c);
  std::sort(ch.begin(), ch.end(), [&](int a, int b) { return tree.nodes()[a].begin < tree.nodes()[b].begin; });
  l2p.resize(n, p3);
  p2mh.resize(n, p3);
  for (int c : ch) {
    const auto& cn = tree.nodes()[c];
    Mat cl, cp;
    full_operators(sys, c, p3, cl, cp);
    const Mat S = m2m_of(sys, cn.level, octant_of(cn.coord), p3).cast<cplx>();
    const auto off = static_cast<Eigen::Index>(cn.begin - nd.begin);
    l2p.middleRows(off, cl.rows()) = cl * S.transpose();
    p2mh.middleRows(off, cp.rows()) = cp * S.transpose();  // (S P2M_c)^* = P2M_c^* S^T (S real)
  }
}

double rms_singular_value(const Mat& A) {
  return A.rows() > 0 ? A.norm() / std::sqrt(static_cast<double>(A.rows())) : 1.0;
}

}  // namespace

int Box::self_index() const { return nb_index(pos); }

int Box::nb_index(int q) const {
  for (std::size_t a = 0; a < nb.size(); ++a)
    if (nb[a] == q) return static_cast<int>(a);
  return -1;
}

int Box::il_index(int pos) const {
  for (std::size_t a = 0; a < il.size(); ++a)
    if (il[a] == pos) return static_cast<int>(a);
  return -1;
}

void link_level(const fmm::Octree& tree, Level& lev) {
  std::unordered_map<int, int> pos;
  for (std::size_t i = 0; i < lev.boxes.size(); ++i) pos[lev.boxes[i].tree_node] = static_cast<int>(i);
  for (std::size_t i = 0; i < lev.boxes.size(); ++i) {
    auto& b = lev.boxes[i];
    b.pos = static_cast<int>(i);
    b.nb.clear();
    for (int t : tree.neighbours(b.tree_node)) b.nb.push_back(pos.at(t));
    b.il.clear();
    for (int t : tree.interaction_list(b.tree_node)) b.il.push_back(pos.at(t));
  }
  for (std::size_t i = 0; i < lev.boxes.size(); ++i) {
    auto& b = lev.boxes[i];
    b.il_back.resize(b.il.size());
    for (std::size_t a = 0; a < b.il.size(); ++a) {
      const int back = lev.boxes[static_cast<std::size_t>(b.il[a])].il_index(static_cast<int>(i));
      if (back < 0) throw NumericalError("ifmm: interaction lists of the octree are not symmetric");
      b.il_back[a] = back;
    }
  }
}

// Far-field weights of a level (p^3 x k): W_U W_U^* ~ sum_t K_t K_t^* and W_V W_V^* ~ sum_t
// K_t^* K_t over the 26 nearest well-separated offsets t in {-2, 0, 2}^3 \ {0}, which dominate the
// far field. The bases of a box are then the dominant singular vectors of L2P W_U and P2M^* W_V,
// i.e. of what the box's far field actually needs (the Chebyshev operators alone have no decay in
// their singular values).

void far_field_weights(const FmmSystem& sys, int level, int p3, double eps, Mat& QU, Mat& WU, Mat& QV, Mat& WV, int threads) {
  std::vector<std::array<int, 3>> offs;
  for (int a = -2; a <= 2; a += 2)
    for (int b = -2; b <= 2; b += 2)
      for (int c = -2; c <= 2; c += 2)
        if (a || b || c) offs.push_back({a, b, c});
  const int no = static_cast<int>(offs.size());
  std::vector<Mat> GU(static_cast<std::size_t>(threads), Mat::Zero(p3, p3)), GV(static_cast<std::size_t>(threads), Mat::Zero(p3, p3));
  ParallelErrors errors;
  // static schedule: which offsets each thread sums, and so the rounding of the total, does not
  // depend on timing (the same bases and factorisation from run to run)
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int o = 0; o < no; ++o)
    errors.run([&] {
      const Mat Kt = from_row_major(sys.m2l(level, offs[static_cast<std::size_t>(o)]), p3, p3, "M2L");
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      GU[t].noalias() += Kt * Kt.adjoint();
      GV[t].noalias() += Kt.adjoint() * Kt;
    });
  errors.rethrow();
  for (int t = 1; t < threads; ++t) {
    GU[0] += GU[static_cast<std::size_t>(t)];
    GV[0] += GV[static_cast<std::size_t>(t)];
  }
  auto weights = [&](const Mat& G, Mat& Q, Mat& W) {
    Eigen::SelfAdjointEigenSolver<Mat> es(G);
    const auto& lam = es.eigenvalues();  // ascending
    const double lmax = lam.size() ? std::max(lam(lam.size() - 1), 0.0) : 0.0;
    const double cut = 1e-4 * eps * eps * lmax;  // singular values 1e-2 eps below the largest
    int k = 0;
    while (k < lam.size() && lam(lam.size() - 1 - k) > cut) ++k;
    Q.resize(p3, k);
    W.resize(p3, k);
    for (int j = 0; j < k; ++j) {
      Q.col(j) = es.eigenvectors().col(lam.size() - 1 - j);
      W.col(j) = Q.col(j) * std::sqrt(lam(lam.size() - 1 - j));
    }
  };
  weights(GU[0], QU, WU);
  weights(GV[0], QV, WV);
}


void compress_level(const FmmSystem& sys, Level& lev, std::vector<Mat>& l2p_full, std::vector<Mat>& p2m_full,
                    const Settings& s, int threads) {
  const int nb = static_cast<int>(lev.boxes.size());
  const int p3 = s.p3;
  std::vector<Mat> RU(static_cast<std::size_t>(nb)), RV(static_cast<std::size_t>(nb));
  Mat QU, WU, QV, WV;
  double t0 = profile_clock();
  far_field_weights(sys, lev.level, p3, s.eps, QU, WU, QV, WV, threads);
  profile("far-field weights", lev.level, profile_clock() - t0);
  t0 = profile_clock();
  ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int i = 0; i < nb; ++i)
    errors.run([&] {
      auto& b = lev.boxes[static_cast<std::size_t>(i)];
      Mat& L = l2p_full[static_cast<std::size_t>(i)];
      Mat& P = p2m_full[static_cast<std::size_t>(i)];
      Mat dummy;
      truncated_svd(L * WU, s.eps, b.n, b.U, dummy);
      truncated_svd(P * WV, s.eps, b.n, b.V, dummy);
      const Mat ru = b.U.adjoint() * L;  // L2P ~ U U^* L2P
      const Mat rv = b.V.adjoint() * P;  // P2M^* ~ V V^* P2M^*
      // the M2L blocks below see the coefficients through the level's shared far-field bases
      // QU, QV (M2L_t ~ QU QU^* M2L_t QV QV^*)
      RU[static_cast<std::size_t>(i)] = ru * QU;
      RV[static_cast<std::size_t>(i)] = rv * QV;
      Mat().swap(L);
      Mat().swap(P);
      if (lev.level >= 3) {
        const Mat S = m2m_of(sys, lev.level, b.octant, p3).cast<cplx>();
        b.L2L = ru * S.transpose();
        b.M2M = S * rv.adjoint();
      }
    });
  errors.rethrow();
  profile("bases (SVD)", lev.level, profile_clock() - t0);
  t0 = profile_clock();
  // M2L blocks in the new bases, grouped by offset: K_ij = RU_i M2L_t RV_j^*
  std::map<std::array<int, 3>, std::vector<std::pair<int, int>>> by_offset;  // t -> (i, a)
  for (int i = 0; i < nb; ++i) {
    auto& b = lev.boxes[static_cast<std::size_t>(i)];
    b.K.assign(b.il.size(), Mat());
    for (std::size_t a = 0; a < b.il.size(); ++a) {
      const auto& c = lev.boxes[static_cast<std::size_t>(b.il[a])].coord;
      by_offset[{b.coord[0] - c[0], b.coord[1] - c[1], b.coord[2] - c[2]}].push_back({i, static_cast<int>(a)});
    }
  }
  std::vector<const std::pair<const std::array<int, 3>, std::vector<std::pair<int, int>>>*> groups;
  for (const auto& g : by_offset) groups.push_back(&g);
  const int ng = static_cast<int>(groups.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int g = 0; g < ng; ++g)
    errors.run([&] {
      const Mat Kt = from_row_major(sys.m2l(lev.level, groups[static_cast<std::size_t>(g)]->first), p3, p3, "M2L");
      const Mat Kc = QU.adjoint() * Kt * QV;
      for (const auto& [i, a] : groups[static_cast<std::size_t>(g)]->second) {
        auto& b = lev.boxes[static_cast<std::size_t>(i)];
        const int j = b.il[static_cast<std::size_t>(a)];
        b.K[static_cast<std::size_t>(a)] = RU[static_cast<std::size_t>(i)] * (Kc * RV[static_cast<std::size_t>(j)].adjoint());
      }
    });
  errors.rethrow();
  profile("M2L blocks", lev.level, profile_clock() - t0);
}

namespace {

// The boxes of an octree level, one per non-empty node, in the tree's order: node, coordinates,
// octant (their sizes and operators are the caller's).
void start_level(const fmm::Octree& tree, int level, Level& out) {
  const auto& ids = tree.level_nodes(level);
  out.level = level;
  out.boxes.assign(ids.size(), Box());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto& b = out.boxes[i];
    b.tree_node = ids[i];
    b.coord = tree.nodes()[ids[i]].coord;
    b.octant = octant_of(b.coord);
  }
}

}  // namespace

void initialise_bottom(const FmmSystem& sys, int l, const Settings& s, int threads, Level& out) {
  const auto& tree = *sys.tree;
  const auto& ids = tree.level_nodes(l);
  start_level(tree, l, out);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& nd = tree.nodes()[ids[i]];
    out.boxes[i].n = static_cast<int>(nd.end - nd.begin);
    out.boxes[i].begin = nd.begin;
  }
  link_level(tree, out);
  const int nbx = static_cast<int>(ids.size());
  std::vector<Mat> l2p(ids.size()), p2m(ids.size());
  const auto& perm = tree.permutation();
  auto unknowns = [&](int pos) {
    const auto& nd = tree.nodes()[out.boxes[static_cast<std::size_t>(pos)].tree_node];
    return std::vector<std::int64_t>(perm.begin() + nd.begin, perm.begin() + nd.end);
  };
  ParallelErrors errors;
  const double t0 = profile_clock();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int i = 0; i < nbx; ++i)
    errors.run([&] {
      auto& b = out.boxes[static_cast<std::size_t>(i)];
      full_operators(sys, b.tree_node, s.p3, l2p[static_cast<std::size_t>(i)], p2m[static_cast<std::size_t>(i)]);
      const auto rows = unknowns(i);
      b.B.resize(b.nb.size());
      for (std::size_t a = 0; a < b.nb.size(); ++a) {
        const auto cols = unknowns(b.nb[a]);
        std::vector<cplx> v(rows.size() * cols.size());
        sys.entries(rows, cols, v.data());
        b.B[a] = from_row_major(v, static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols.size()), "P2P block");
        if (b.nb[a] == i) b.scale = rms_singular_value(b.B[a]);
      }
    });
  errors.rethrow();
  profile("P2P, P2M, L2P", l, profile_clock() - t0);
  compress_level(sys, out, l2p, p2m, s, threads);
}

void initialise_parent(const FmmSystem& sys, Level& child, const Settings& s, int threads, Level& out) {
  const auto& tree = *sys.tree;
  const int kappa = child.level - 1;
  const auto& ids = tree.level_nodes(kappa);
  start_level(tree, kappa, out);
  std::unordered_map<int, int> pos;
  for (std::size_t i = 0; i < ids.size(); ++i) pos[ids[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> children(ids.size());
  for (std::size_t c = 0; c < child.boxes.size(); ++c) {
    auto& cb = child.boxes[c];
    cb.parent = pos.at(tree.nodes()[cb.tree_node].parent);
    children[static_cast<std::size_t>(cb.parent)].push_back(static_cast<int>(c));
  }
  out.children = children;
  std::vector<std::vector<Eigen::Index>> coff(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Eigen::Index o = 0;
    for (int c : children[i]) {
      coff[i].push_back(o);
      o += child.boxes[static_cast<std::size_t>(c)].r;
    }
    out.boxes[i].n = static_cast<int>(o);
  }
  link_level(tree, out);
  const int nbx = static_cast<int>(ids.size());
  std::vector<Mat> l2p(ids.size()), p2m(ids.size());
  ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int i = 0; i < nbx; ++i)
    errors.run([&] {
      auto& P = out.boxes[static_cast<std::size_t>(i)];
      const auto& chP = children[static_cast<std::size_t>(i)];
      P.B.resize(P.nb.size());
      for (std::size_t a = 0; a < P.nb.size(); ++a) {
        const int q = P.nb[a];
        const auto& chQ = children[static_cast<std::size_t>(q)];
        Mat Bq = Mat::Zero(P.n, out.boxes[static_cast<std::size_t>(q)].n);
        for (std::size_t u = 0; u < chP.size(); ++u) {
          const auto& cb = child.boxes[static_cast<std::size_t>(chP[u])];
          for (std::size_t v = 0; v < chQ.size(); ++v) {
            const int c2 = chQ[v];
            const int rc2 = child.boxes[static_cast<std::size_t>(c2)].r;
            const Mat* blk = nullptr;
            const int bi = cb.nb_index(c2);
            if (bi >= 0) blk = &cb.B[static_cast<std::size_t>(bi)];
            else {
              const int ki = cb.il_index(c2);
              if (ki < 0) throw NumericalError("ifmm: children of adjacent boxes neither adjacent nor well separated");
              blk = &cb.K[static_cast<std::size_t>(ki)];
            }
            if (blk->rows() > cb.r || blk->cols() > rc2)
              throw NumericalError("ifmm: internal: block larger than the boxes' ranks");
            Bq.block(coff[static_cast<std::size_t>(i)][u], coff[static_cast<std::size_t>(q)][v], blk->rows(), blk->cols()) = *blk;
          }
        }
        P.B[a].swap(Bq);
        if (q == i) P.scale = rms_singular_value(P.B[a]);
      }
      auto& L = l2p[static_cast<std::size_t>(i)];
      auto& M = p2m[static_cast<std::size_t>(i)];
      L = Mat::Zero(P.n, s.p3);
      M = Mat::Zero(P.n, s.p3);
      for (std::size_t u = 0; u < chP.size(); ++u) {
        const auto& cb = child.boxes[static_cast<std::size_t>(chP[u])];
        L.block(coff[static_cast<std::size_t>(i)][u], 0, cb.L2L.rows(), s.p3) = cb.L2L;
        M.block(coff[static_cast<std::size_t>(i)][u], 0, cb.M2M.cols(), s.p3) = cb.M2M.adjoint();
      }
    });
  errors.rethrow();
  // the children's operators are no longer needed (the eliminations are kept)
  for (auto& cb : child.boxes) {
    std::vector<Mat>().swap(cb.B);
    std::vector<Mat>().swap(cb.K);
    Mat().swap(cb.U);
    Mat().swap(cb.V);
    Mat().swap(cb.L2L);
    Mat().swap(cb.M2M);
  }
  if (kappa == 2) {
    // top level: keep the full Chebyshev-basis operators for the dense system
    for (int i = 0; i < nbx; ++i) {
      out.boxes[static_cast<std::size_t>(i)].U.swap(l2p[static_cast<std::size_t>(i)]);
      out.boxes[static_cast<std::size_t>(i)].V.swap(p2m[static_cast<std::size_t>(i)]);
    }
    return;
  }
  compress_level(sys, out, l2p, p2m, s, threads);
}

}  // namespace elliptica::ifmm::detail
