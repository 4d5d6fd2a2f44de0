// Near field of the spectral Ewald sum: cell list C^N and P2P over the 27 colleague cells.
// Real-space kernels (Hasimoto splitting for the stokeslet, Lindbo & Tornberg 2010 eq. 2.6):
//   Laplace    G^R(r) = erfc(xi r)/r,  field -grad: r_vec (erfc(xi r)/r + (2 xi/sqrt(pi)) e^{-xi^2 r^2})/r^2
//   Stokeslet  S^R(r) = A(r) I + B(r) r r^T,  A = erfc(xi r)/r - c e,  B = erfc(xi r)/r^3 + c e/r^2,
//              c = 2 xi/sqrt(pi), e = exp(-xi^2 r^2).
// A pair at r = 0 contributes the limit of (real-space kernel - free-space kernel), which is the
// self term: -(2 xi/sqrt(pi)) q for Laplace, -(4 xi/sqrt(pi)) f for the stokeslet, 0 for the field.
#include <algorithm>
#include <cmath>

#include "ewald/internal.hpp"

namespace elliptica::ewald::detail {

CellList build_cells(ConstMatrixView<double> pts, const std::array<double, 3>& box, const std::array<int, 3>& n) {
  CellList cl;
  cl.n = n;
  for (int d = 0; d < 3; ++d) cl.inv_width[d] = n[d] / box[d];
  const std::size_t N = pts.rows;
  const int nc = cl.ncells();
  std::vector<int> cell(N);
  std::vector<double> w(3 * N);
  for (std::size_t i = 0; i < N; ++i) {
    int ci[3];
    for (int d = 0; d < 3; ++d) {
      double v = pts(i, d);
      v -= box[d] * std::floor(v / box[d]);
      if (v >= box[d]) v = 0.0;  // floor rounding at the upper edge
      w[3 * i + d] = v;
      ci[d] = std::min(static_cast<int>(v * cl.inv_width[d]), n[d] - 1);
    }
    cell[i] = (ci[0] * n[1] + ci[1]) * n[2] + ci[2];
  }
  cl.start.assign(nc + 1, 0);
  for (std::size_t i = 0; i < N; ++i) cl.start[cell[i] + 1]++;
  for (int c = 0; c < nc; ++c) cl.start[c + 1] += cl.start[c];
  std::vector<int> fill(cl.start.begin(), cl.start.end() - 1);
  cl.perm.resize(N);
  cl.x.resize(N);
  cl.y.resize(N);
  cl.z.resize(N);
  for (std::size_t i = 0; i < N; ++i) {
    const int p = fill[cell[i]]++;
    cl.perm[p] = static_cast<int>(i);
    cl.x[p] = w[3 * i];
    cl.y[p] = w[3 * i + 1];
    cl.z[p] = w[3 * i + 2];
  }
  return cl;
}

namespace {

struct Neighbour {
  int cell;
  double sx, sy, sz;  // shift added to source coordinates (periodic image)
};

// The 27 colleague cells of cell (i,j,k) with the periodic shifts of their sources.
// Requires n >= 3 per axis so that the 27 (cell, image) pairs are distinct.
inline int colleagues(const CellList& cl, const std::array<double, 3>& box, int i, int j, int k, Neighbour* nb) {
  int cnt = 0;
  for (int di = -1; di <= 1; ++di) {
    int ii = i + di;
    double sx = 0;
    if (ii < 0) { ii += cl.n[0]; sx = -box[0]; }
    if (ii >= cl.n[0]) { ii -= cl.n[0]; sx = box[0]; }
    for (int dj = -1; dj <= 1; ++dj) {
      int jj = j + dj;
      double sy = 0;
      if (jj < 0) { jj += cl.n[1]; sy = -box[1]; }
      if (jj >= cl.n[1]) { jj -= cl.n[1]; sy = box[1]; }
      for (int dk = -1; dk <= 1; ++dk) {
        int kk = k + dk;
        double sz = 0;
        if (kk < 0) { kk += cl.n[2]; sz = -box[2]; }
        if (kk >= cl.n[2]) { kk -= cl.n[2]; sz = box[2]; }
        nb[cnt++] = {(ii * cl.n[1] + jj) * cl.n[2] + kk, sx, sy, sz};
      }
    }
  }
  return cnt;
}

template <int KIND>  // 0 Laplace potential, 1 Laplace potential + field, 2 stokeslet
void p2p_impl(const CellList& src, const std::vector<double>& q, const CellList& trg, double xi, double rc,
              const std::array<double, 3>& box, int threads, std::vector<double>& out) {
  constexpr int nout = KIND == 0 ? 1 : (KIND == 1 ? 4 : 3);
  const double rc2 = rc * rc;
  const double c = 2.0 * xi / kSqrtPi;
  const double xi2 = xi * xi;
  const int ncells = trg.ncells();
  out.assign(trg.x.size() * nout, 0.0);
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (int cellid = 0; cellid < ncells; ++cellid) {
    const int t0 = trg.start[cellid], t1 = trg.start[cellid + 1];
    if (t0 == t1) continue;
    const int i = cellid / (trg.n[1] * trg.n[2]);
    const int j = (cellid / trg.n[2]) % trg.n[1];
    const int k = cellid % trg.n[2];
    Neighbour nb[27];
    const int nn = colleagues(src, box, i, j, k, nb);
    for (int t = t0; t < t1; ++t) {
      const double tx = trg.x[t], ty = trg.y[t], tz = trg.z[t];
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (int b = 0; b < nn; ++b) {
        const int s0 = src.start[nb[b].cell], s1 = src.start[nb[b].cell + 1];
        const double ox = tx - nb[b].sx, oy = ty - nb[b].sy, oz = tz - nb[b].sz;
        for (int s = s0; s < s1; ++s) {
          const double rx = ox - src.x[s], ry = oy - src.y[s], rz = oz - src.z[s];
          const double r2 = rx * rx + ry * ry + rz * rz;
          if (r2 >= rc2) continue;
          if constexpr (KIND <= 1) {
            const double qs = q[s];
            if (r2 == 0.0) {
              a0 -= c * qs;
              continue;
            }
            const double r = std::sqrt(r2);
            const double ir = 1.0 / r;
            const double ec = std::erfc(xi * r) * ir;
            a0 += qs * ec;
            if constexpr (KIND == 1) {
              const double g = qs * (ec + c * std::exp(-xi2 * r2)) * ir * ir;
              a1 += g * rx;
              a2 += g * ry;
              a3 += g * rz;
            }
          } else {
            const double fx = q[3 * s], fy = q[3 * s + 1], fz = q[3 * s + 2];
            if (r2 == 0.0) {
              a0 -= 2.0 * c * fx;
              a1 -= 2.0 * c * fy;
              a2 -= 2.0 * c * fz;
              continue;
            }
            const double r = std::sqrt(r2);
            const double ir = 1.0 / r;
            const double ec = std::erfc(xi * r) * ir;
            const double ce = c * std::exp(-xi2 * r2);
            const double A = ec - ce;
            const double B = (ec + ce) * ir * ir;
            const double rf = B * (rx * fx + ry * fy + rz * fz);
            a0 += A * fx + rf * rx;
            a1 += A * fy + rf * ry;
            a2 += A * fz + rf * rz;
          }
        }
      }
      double* o = out.data() + static_cast<std::size_t>(t) * nout;
      o[0] = a0;
      if constexpr (nout >= 3) {
        o[1] = a1;
        o[2] = a2;
      }
      if constexpr (nout == 4) o[3] = a3;
    }
  }
}

}  // namespace

void p2p(Kernel k, bool field, const CellList& src, const std::vector<double>& strengths_sorted, const CellList& trg,
         double xi, double rc, const std::array<double, 3>& box, int threads, std::vector<double>& out_sorted) {
  if (k == Kernel::Stokeslet)
    p2p_impl<2>(src, strengths_sorted, trg, xi, rc, box, threads, out_sorted);
  else if (field)
    p2p_impl<1>(src, strengths_sorted, trg, xi, rc, box, threads, out_sorted);
  else
    p2p_impl<0>(src, strengths_sorted, trg, xi, rc, box, threads, out_sorted);
}

}  // namespace elliptica::ewald::detail
