// Near field of the spectral Ewald sum: cell list C^N and P2P over the 27 colleague cells.
// Real-space kernels (Hasimoto splitting for the stokeslet, Lindbo & Tornberg 2010 eq. 2.6):
//   Laplace    G^R(r) = erfc(xi r)/r,  field -grad: r_vec (erfc(xi r)/r + (2 xi/sqrt(pi)) e^{-xi^2 r^2})/r^2
//   Stokeslet  S^R(r) = A(r) I + B(r) r r^T,  A = erfc(xi r)/r - c e,  B = erfc(xi r)/r^3 + c e/r^2,
//              c = 2 xi/sqrt(pi), e = exp(-xi^2 r^2).
// A pair at r = 0 contributes the limit of (real-space kernel - free-space kernel), which is the
// self term: -(2 xi/sqrt(pi)) q for Laplace, -(4 xi/sqrt(pi)) f for the stokeslet, 0 for the field.
#include <algorithm>
#include <cmath>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
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
      const double v = wrap_into_box(pts(i, d), box[d]);
      w[3 * i + d] = v;
      ci[d] = cell_index(v, cl.inv_width[d], n[d]);
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

std::array<int, 3> neighbour_reach(const CellList& cl, const std::array<double, 3>& box, double rc) {
  std::array<int, 3> K;
  for (int d = 0; d < 3; ++d) K[d] = std::max(1, static_cast<int>(std::ceil(rc * cl.n[d] / box[d] * (1 - 1e-12))));
  return K;
}

struct Neighbour {
  int cell;
  double sx, sy, sz;  // shift added to source coordinates (periodic image)
};

// The colleague cells of cell (i,j,k) with the periodic shifts of their sources: offsets
// o in [-K_d, K_d] per axis, K_d = ceil(r_c / cell width) (1 when the width is >= r_c, which gives
// the usual 27 colleagues). Offset o maps to source cell (c + o) mod n and periodic image
// floor((c + o)/n), so all (cell, image) pairs are distinct, and together they hold every image of
// every source within r_c (several images of one source when r_c exceeds a box length).
int colleagues(const CellList& cl, const std::array<double, 3>& box, const std::array<int, 3>& K, int i, int j, int k,
               std::vector<Neighbour>& nb) {
  const int c[3] = {i, j, k};
  std::vector<std::pair<int, double>> ax[3];
  for (int d = 0; d < 3; ++d)
    for (int o = -K[d]; o <= K[d]; ++o) {
      const int cc = c[d] + o;
      const int img = cc >= 0 ? cc / cl.n[d] : -((-cc + cl.n[d] - 1) / cl.n[d]);
      ax[d].emplace_back(cc - img * cl.n[d], img * box[d]);
    }
  nb.clear();
  for (const auto& [ii, sx] : ax[0])
    for (const auto& [jj, sy] : ax[1])
      for (const auto& [kk, sz] : ax[2]) nb.push_back({(ii * cl.n[1] + jj) * cl.n[2] + kk, sx, sy, sz});
  return static_cast<int>(nb.size());
}

// erfc(x) and (2/sqrt(pi)) exp(-x^2) on [0, X] as piecewise Chebyshev polynomials (degree 9 on
// 2^k equal intervals, k chosen so that the absolute error is at the rounding floor, ~2e-15),
// evaluated by Horner's
// rule; several times cheaper than the libm calls, which dominate P2P (seed 000, section 4,
// approximates erf(x)/x by a rational function for the same reason).
struct ErfcTable {
  static constexpr int kDeg = 9;
  double X = 0, scale = 0;
  int n = 0;
  std::vector<double> ce, cg;  // [n][kDeg + 1] monomial coefficients in the local variable t in [-1, 1]

  static void fit(double (*f)(double), double a, double b, double* out) {
    const std::vector<double> mono = chebyshev_monomial(f, a, b, kDeg);
    for (int d = 0; d <= kDeg; ++d) out[d] = mono[d];
  }
  static double gauss(double x) { return 2.0 / kSqrtPi * std::exp(-x * x); }
  static double erfc_fn(double x) { return std::erfc(x); }

  explicit ErfcTable(double xmax) {
    X = xmax * (1 + 1e-12) + 1e-300;
    // Refine until the error reaches the rounding floor of the monomial Horner form (~2e-15,
    // i.e. ~1e-15 relative to the kernel): stop at 4e-15 or when refining no longer helps.
    double prev = 1.0;
    for (int k = 4; k <= 12; ++k) {
      n = 1 << k;
      build();
      const double e = max_error();
      if (e < 4e-15) break;
      if (e > 0.7 * prev) {  // stagnated: keep the previous, smaller table
        n = 1 << (k - 1);
        build();
        break;
      }
      prev = e;
    }
  }
  void build() {
    scale = n / X;
    ce.assign(std::size_t(n) * (kDeg + 1), 0.0);
    cg.assign(std::size_t(n) * (kDeg + 1), 0.0);
    for (int i = 0; i < n; ++i) {
      fit(erfc_fn, i / scale, (i + 1) / scale, &ce[std::size_t(i) * (kDeg + 1)]);
      fit(gauss, i / scale, (i + 1) / scale, &cg[std::size_t(i) * (kDeg + 1)]);
    }
  }
  double max_error() const {
    double e = 0;
    for (int i = 0; i <= 4000; ++i) {
      const double x = X * i / 4000.0;
      double a, b;
      eval(x, a, b);
      e = std::max({e, std::abs(a - std::erfc(x)), std::abs(b - gauss(x))});
    }
    return e;
  }
  inline void eval(double x, double& erfc_v, double& gauss_v) const {
    int i = static_cast<int>(x * scale);
    i = i < 0 ? 0 : (i >= n ? n - 1 : i);
    const double t = 2.0 * (x * scale - i) - 1.0;
    const double* a = &ce[std::size_t(i) * (kDeg + 1)];
    const double* b = &cg[std::size_t(i) * (kDeg + 1)];
    double u = a[kDeg], v = b[kDeg];
    for (int d = kDeg - 1; d >= 0; --d) {
      u = u * t + a[d];
      v = v * t + b[d];
    }
    erfc_v = u;
    gauss_v = v;
  }
};

template <int KIND>  // 0 Laplace potential, 1 Laplace potential + field, 2 stokeslet
void p2p_impl(const CellList& src, const std::vector<double>& q, const CellList& trg, double xi, double rc,
              const std::array<double, 3>& box, int threads, std::vector<double>& out) {
  constexpr int nout = KIND == 0 ? 1 : (KIND == 1 ? 4 : 3);
  constexpr int nq = KIND == 2 ? 3 : 1;
  const double rc2 = rc * rc;
  const double c = 2.0 * xi / kSqrtPi;
  const ErfcTable tab(xi * rc);
  const std::array<int, 3> K = neighbour_reach(src, box, rc);
  const int ncells = trg.ncells();
  {
    // The tuner keeps within these limits; overrides and a changed point count are checked here
    // again, before the lists are allocated.
    const NearFieldLoad load = near_field_load(box, src.x.size(), trg.x.size(), rc, src.n, nq, threads);
    if (load.pair_checks > kMaxPairChecks || load.bytes > kMaxNearFieldBytes)
      throw ResourceError("P2P: the real-space cutoff r_c = " + std::to_string(rc) + " reaches " +
                          std::to_string(static_cast<long long>(load.colleagues)) + " (cell, image) pairs per cell, " +
                          std::to_string(load.pair_checks) + " pair checks in all, beyond the near-field limits (" +
                          std::to_string(kMaxPairChecks) + " checks, " + format_bytes(kMaxNearFieldBytes) + " of lists)");
    require_memory(load.bytes, "P2P pair lists");
  }
  out.assign(trg.x.size() * nout, 0.0);
  ParallelErrors errors;
#pragma omp parallel num_threads(threads)
  {
    // Pairs within r_c of the current target, compacted so the kernel loop has no branches.
    std::vector<double> br, bx, by, bz, bq;
    std::vector<Neighbour> nb;
#pragma omp for schedule(dynamic, 4)
    for (int cellid = 0; cellid < ncells; ++cellid) {
      const int t0 = trg.start[cellid], t1 = trg.start[cellid + 1];
      if (t0 == t1 || errors.failed()) continue;
      try {  // the buffers grow here: a failure is kept and rethrown after the region
        const int i = cellid / (trg.n[1] * trg.n[2]);
        const int j = (cellid / trg.n[2]) % trg.n[1];
        const int k = cellid % trg.n[2];
        const int nn = colleagues(src, box, K, i, j, k, nb);
        std::size_t cap = 1;
        for (int b = 0; b < nn; ++b) cap += src.start[nb[b].cell + 1] - src.start[nb[b].cell];
        if (br.size() < cap) {
          br.resize(cap);
          bx.resize(cap);
          by.resize(cap);
          bz.resize(cap);
          bq.resize(cap * nq);
        }
        for (int t = t0; t < t1; ++t) {
          const double tx = trg.x[t], ty = trg.y[t], tz = trg.z[t];
          double self[3] = {0, 0, 0};
          std::size_t m = 0;
          for (int b = 0; b < nn; ++b) {
            const int s0 = src.start[nb[b].cell], s1 = src.start[nb[b].cell + 1];
            const double ox = tx - nb[b].sx, oy = ty - nb[b].sy, oz = tz - nb[b].sz;
            for (int s = s0; s < s1; ++s) {
              // Branch-free compaction: always store, advance only for 0 < r < r_c.
              const double rx = ox - src.x[s], ry = oy - src.y[s], rz = oz - src.z[s];
              const double r2 = rx * rx + ry * ry + rz * rz;
              br[m] = r2;
              bx[m] = rx;
              by[m] = ry;
              bz[m] = rz;
              for (int d = 0; d < nq; ++d) bq[m * nq + d] = q[std::size_t(s) * nq + d];
              // coincident point: the self limit of (real-space - free-space) kernel
              const double is_self = r2 == 0.0 ? 1.0 : 0.0;
              for (int d = 0; d < nq; ++d) self[d] -= is_self * (KIND == 2 ? 2.0 : 1.0) * c * q[std::size_t(s) * nq + d];
              m += (r2 < rc2) & (r2 > 0.0);
            }
          }
          double a0 = self[0], a1 = (KIND == 2 ? self[1] : 0.0), a2 = (KIND == 2 ? self[2] : 0.0), a3 = 0;
  #pragma omp simd reduction(+ : a0, a1, a2, a3)
          for (std::size_t p = 0; p < m; ++p) {
            const double r = std::sqrt(br[p]);
            const double ir = 1.0 / r;
            double ef, ga;
            tab.eval(xi * r, ef, ga);
            const double ec = ef * ir;  // erfc(xi r)/r
            if constexpr (KIND <= 1) {
              const double qs = bq[p];
              a0 += qs * ec;
              if constexpr (KIND == 1) {
                const double g = qs * (ec + xi * ga) * ir * ir;  // ga = (2/sqrt(pi)) e^{-xi^2 r^2}
                a1 += g * bx[p];
                a2 += g * by[p];
                a3 += g * bz[p];
              }
            } else {
              const double fx = bq[3 * p], fy = bq[3 * p + 1], fz = bq[3 * p + 2];
              const double ce = xi * ga;
              const double A = ec - ce;
              const double B = (ec + ce) * ir * ir;
              const double rf = B * (bx[p] * fx + by[p] * fy + bz[p] * fz);
              a0 += A * fx + rf * bx[p];
              a1 += A * fy + rf * by[p];
              a2 += A * fz + rf * bz[p];
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
      } catch (...) {
        errors.record(std::current_exception());
      }
    }
  }
  errors.rethrow();
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

void self_images(Kernel k, double xi, double rc, const std::array<double, 3>& box, double out[9]) {
  for (int i = 0; i < 9; ++i) out[i] = 0.0;
  const double reach = rc + 9.0 / xi;  // erfc(9) ~ 4e-37: farther images are negligible
  int K[3];
  for (int d = 0; d < 3; ++d) K[d] = static_cast<int>(std::ceil(reach / box[d]));
  const double c = 2.0 * xi / kSqrtPi;
  // Summed from the farthest images inwards for accuracy.
  for (int a = K[0]; a >= -K[0]; --a)
    for (int b = K[1]; b >= -K[1]; --b)
      for (int e = K[2]; e >= -K[2]; --e) {
        if (a == 0 && b == 0 && e == 0) continue;
        const double r[3] = {a * box[0], b * box[1], e * box[2]};
        const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        if (r2 < rc * rc || r2 > reach * reach) continue;
        const double rr = std::sqrt(r2);
        const double ec = std::erfc(xi * rr) / rr;
        if (k == Kernel::Laplace) {
          out[0] += ec;
        } else {
          const double ce = c * std::exp(-xi * xi * r2);
          const double A = ec - ce, B = (ec + ce) / r2;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) out[3 * i + j] += (i == j ? A : 0.0) + B * r[i] * r[j];
        }
      }
}

}  // namespace elliptica::ewald::detail
