// Solve phase of the IFMM (seed 001 Algorithm 2): forward substitution level by level from the
// bottom in the factorisation's colour order, the dense level-2 solve, backward substitution in
// the reverse order (include/elliptica/ifmm/ifmm.hpp). All right-hand sides at once (n x m).
#include <algorithm>

#include "elliptica/core/parallel.hpp"
#include "internal.hpp"

namespace elliptica::ifmm::detail {

namespace {

// [x; z] = A_PP^{-1} [a; b] for box elimination el.
void pivot_solve(const Elimination& el, const Mat& a, const Mat* b, Mat& x, Mat& z) {
  const Mat Bf = el.luB.solve(a);
  if (el.Vh.rows() > 0) {
    Mat rhs = el.Vh * Bf;
    if (b) rhs -= *b;
    z = el.luS.solve(rhs);
    x = Bf - el.BiU * z;
  } else {
    z = Mat(0, a.cols());
    x = Bf;
  }
}

template <class F>
void for_colour(const std::vector<int>& colour, bool parallel, int threads, F&& f) {
  const int m = static_cast<int>(colour.size());
  if (parallel && threads > 1 && m > 1) {
    ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int t = 0; t < m; ++t) errors.run([&] { f(colour[static_cast<std::size_t>(t)]); });
    errors.rethrow();
  } else {
    for (int t = 0; t < m; ++t) f(colour[static_cast<std::size_t>(t)]);
  }
}

}  // namespace

void solve(const Factorisation& f, const cplx* B, cplx* X, std::size_t m) {
  const auto M = static_cast<Eigen::Index>(m);
  const std::size_t nl = f.levels.size();
  // per level, per box: f1 (active rows e1, then e2 of the children one level up), f2 (e2), the
  // pivot solutions w = (wx, wz), and in the backward pass x (the box's unknowns), y (remaining)
  std::vector<std::vector<Mat>> f1(nl + 1), f2(nl), wx(nl), wz(nl), xs(nl + 1);
  {
    const Level& bot = f.levels[0];
    f1[0].resize(bot.boxes.size());
    for (std::size_t i = 0; i < bot.boxes.size(); ++i) {
      const auto& b = bot.boxes[i];
      Mat& v = f1[0][i];
      v.resize(b.n, M);
      for (Eigen::Index c = 0; c < M; ++c)
        for (int t = 0; t < b.n; ++t)
          v(t, c) = B[static_cast<std::size_t>(c) * f.n + static_cast<std::size_t>(f.perm[static_cast<std::size_t>(b.begin + t)])];
    }
  }
  // forward
  for (std::size_t li = 0; li < nl; ++li) {
    const Level& lev = f.levels[li];
    const std::size_t nb = lev.boxes.size();
    f2[li].resize(nb);
    wx[li].resize(nb);
    wz[li].resize(nb);
    for (std::size_t i = 0; i < nb; ++i) f2[li][i] = Mat::Zero(lev.boxes[i].r, M);
    const bool par = f.node_parallel[li] != 0;
    for (const auto& colour : lev.colours)
      for_colour(colour, par, f.threads, [&](int i) {
        const auto& b = lev.boxes[static_cast<std::size_t>(i)];
        const auto& el = b.el;
        pivot_solve(el, f1[li][static_cast<std::size_t>(i)], nullptr, wx[li][static_cast<std::size_t>(i)], wz[li][static_cast<std::size_t>(i)]);
        for (std::size_t t = 0; t < el.rows.size(); ++t) {
          Mat& target = el.row_elim[t] ? f2[li][static_cast<std::size_t>(el.rows[t])] : f1[li][static_cast<std::size_t>(el.rows[t])];
          target.noalias() -= el.C[t] * wx[li][static_cast<std::size_t>(i)];
        }
        f2[li][static_cast<std::size_t>(i)] += wz[li][static_cast<std::size_t>(i)];
      });
    // the next level's right-hand sides: the children's e2 rows stacked
    const auto& children = li + 1 < nl ? f.levels[li + 1].children : f.top.children;
    f1[li + 1].resize(children.size());
    for (std::size_t P = 0; P < children.size(); ++P) {
      Eigen::Index rows = 0;
      for (int c : children[P]) rows += f2[li][static_cast<std::size_t>(c)].rows();
      Mat& v = f1[li + 1][P];
      v.resize(rows, M);
      Eigen::Index o = 0;
      for (int c : children[P]) {
        const Mat& w = f2[li][static_cast<std::size_t>(c)];
        v.middleRows(o, w.rows()) = w;
        o += w.rows();
      }
    }
  }
  // level 2
  {
    Mat rhs(f.top.n, M);
    for (std::size_t P = 0; P < f1[nl].size(); ++P) rhs.middleRows(f.top.offset[P], f1[nl][P].rows()) = f1[nl][P];
    const Mat sol = f.top.lu.solve(rhs);
    xs[nl].resize(f1[nl].size());
    for (std::size_t P = 0; P < f1[nl].size(); ++P) xs[nl][P] = sol.middleRows(f.top.offset[P], f1[nl][P].rows());
  }
  // backward
  for (std::size_t li = nl; li-- > 0;) {
    const Level& lev = f.levels[li];
    const std::size_t nb = lev.boxes.size();
    // y of this level's boxes: slices of the parents' x
    std::vector<Mat> ys(nb);
    const auto& children = li + 1 < nl ? f.levels[li + 1].children : f.top.children;
    for (std::size_t P = 0; P < children.size(); ++P) {
      Eigen::Index o = 0;
      for (int c : children[P]) {
        const auto r = lev.boxes[static_cast<std::size_t>(c)].r;
        ys[static_cast<std::size_t>(c)] = xs[li + 1][P].middleRows(o, r);
        o += r;
      }
    }
    xs[li].assign(nb, Mat());
    const bool par = f.node_parallel[li] != 0;
    for (std::size_t ci = lev.colours.size(); ci-- > 0;)
      for_colour(lev.colours[ci], par, f.threads, [&](int i) {
        const auto& b = lev.boxes[static_cast<std::size_t>(i)];
        const auto& el = b.el;
        Mat top = Mat::Zero(b.n, M);
        for (std::size_t t = 0; t < el.cols.size(); ++t) {
          const Mat& sol = el.col_elim[t] ? ys[static_cast<std::size_t>(el.cols[t])] : xs[li][static_cast<std::size_t>(el.cols[t])];
          top.noalias() += el.R[t] * sol;
        }
        const Mat bot = -ys[static_cast<std::size_t>(i)];
        Mat dx, dz;
        pivot_solve(el, top, &bot, dx, dz);
        xs[li][static_cast<std::size_t>(i)] = wx[li][static_cast<std::size_t>(i)] - dx;
      });
  }
  const Level& bot = f.levels[0];
  for (std::size_t i = 0; i < bot.boxes.size(); ++i) {
    const auto& b = bot.boxes[i];
    const Mat& v = xs[0][i];
    for (Eigen::Index c = 0; c < M; ++c)
      for (int t = 0; t < b.n; ++t)
        X[static_cast<std::size_t>(c) * f.n + static_cast<std::size_t>(f.perm[static_cast<std::size_t>(b.begin + t)])] = v(t, c);
  }
}

}  // namespace elliptica::ifmm::detail
