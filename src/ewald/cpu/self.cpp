// The self stage of the CPU backend: the terms that are not pair sums over r < r_c or grids.
// - Own periodic images beyond r_c (targets = sources): a source's images p != 0 with |pL| >= r_c
//   are not at random positions; P2P holds the images within r_c, this adds the rest, a constant
//   matrix per kernel (decisive in thin boxes, where they sit just beyond a cutoff bounded by the
//   short side). The Laplace field's and the stresslet's sums vanish by symmetry (odd kernels).
// - Laplace: the uniform neutralising background -pi Q_tot / (xi^2 V) (Ewald's tin-foil sum of
//   a non-neutral system; makes the result independent of xi).
// - Stresslet (optional): the k = 0 term -(8 pi/V) sum_n (q_n . nu_n)(x_m - y_n), wrapped
//   coordinates (af Klinteberg & Tornberg 2016; ../shared/design FORMULAS).
// The self limit of coincident pairs is added in P2P (K::self_limit).
// Free axes (0P, 2P; BackendSetup::free_multiplier): no images along them (only the periodic
// axes' in 2P), no background (CNV keeps the k = 0 mode).
#include <cmath>
#include <string>

#include "elliptica/core/error.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

template <class K>
void self_images(const BackendSetup& s, double C[3][3]) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) C[i][j] = 0.0;
  if (!s.periodic[0] && !s.periodic[1] && !s.periodic[2]) return;  // free space (0P): no periodic images
  if constexpr (K::n_linear > 0) {
    const Params& p = s.params;
    const double xi = p.xi, rc = p.rc;
    const auto& box = s.box;
    const double reach = rc + 9.0 / xi;  // erfc(9) ~ 4e-37: farther images are negligible
    // The loop visits (2 R_0 + 1)(2 R_1 + 1)(2 R_2 + 1) images. Tuned parameters (xi r_c ~ 3-5,
    // r_c below the box) need at most a few thousand; an override of xi far below 1 / box length
    // would make it billions (a hang), so it is refused.
    constexpr double kMaxImages = 1e6;
    double count = 1.0;
    for (int d = 0; d < 3; ++d)
      if (s.periodic[std::size_t(d)]) count *= 2.0 * std::ceil(reach / box[d]) + 1.0;
    if (!(count <= kMaxImages))
      throw InvalidArgument("ewald: xi = " + std::to_string(xi) + " is too small for the box: the real-space tail of the "
                            "periodic self-images reaches r_c + 9/xi = " + std::to_string(reach) + ", " +
                            std::to_string(count) + " periodic images (at most 1e6); increase xi or let the tuner choose it");
    int R[3];
    for (int d = 0; d < 3; ++d) R[d] = s.periodic[std::size_t(d)] ? static_cast<int>(std::ceil(reach / box[d])) : 0;  // 2P: x, y only
    const double c = 2.0 * xi / kSqrtPi;
    for (int col = 0; col < K::n_linear; ++col) {
      double sv[K::n_src] = {};
      sv[col] = 1.0;
      double a[4] = {0, 0, 0, 0};
      // Summed from the farthest images inwards for accuracy.
      for (int x = R[0]; x >= -R[0]; --x)
        for (int y = R[1]; y >= -R[1]; --y)
          for (int z = R[2]; z >= -R[2]; --z) {
            if (x == 0 && y == 0 && z == 0) continue;
            const double r[3] = {x * box[0], y * box[1], z * box[2]};
            const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
            if (r2 < rc * rc || r2 > reach * reach) continue;
            const double rr = std::sqrt(r2);
            K::template real_space<double>(std::erfc(xi * rr) / rr, c * std::exp(-xi * xi * r2), 1.0 / rr, xi * xi, r[0], r[1], r[2],
                          sv, a[0], a[1], a[2], a[3]);
          }
      for (int row = 0; row < std::min(K::n_out, 3); ++row) C[row][col] = a[row];
    }
  }
}

template <class K, class T>
void self_term(const CpuGeometry<T>& g, CpuWorkspace<T>& ws) {
  const std::size_t nt = g.targets().x.size();
  constexpr int no = K::n_out, ns = K::n_src;
  if constexpr (K::n_linear > 0) {
    if (!g.separate || !g.own_source.empty()) {  // a slab's targets are its owned sources
      // the matrix and the arrays as locals: the compiler keeps C in registers (the stores to acc
      // could otherwise alias it) and vectorises over the targets
      constexpr int nr = std::min(no, K::n_linear == 1 ? 1 : 3), nl = K::n_linear;
      double C[nr][nl];
      for (int i = 0; i < nr; ++i)
        for (int j = 0; j < nl; ++j) C[i][j] = g.self_image[i][j];
      const T* __restrict vs = ws.values.data();
      double* __restrict acc = ws.acc.data();
      const int* own = g.own_source.empty() ? nullptr : g.own_source.data();
      for (std::size_t t = 0; t < nt; ++t) {
        const T* s = vs + (own ? std::size_t(own[t]) : t) * ns;
        double* a = acc + t * no;
        for (int i = 0; i < nr; ++i) {
          double sum = 0;
          for (int j = 0; j < nl; ++j) sum += C[i][j] * s[j];
          a[i] += sum;
        }
      }
    }
  }
  const Params& p = g.setup.params;
  const auto& L = g.setup.box;
  const double V = L[0] * L[1] * L[2];
  if (K::kernel == Kernel::Laplace && !g.setup.free_multiplier) {  // (0P keeps k = 0: no background)
    const double shift = -kPi * ws.total[0] / (p.xi * p.xi * V);  // neutralising background
    for (std::size_t t = 0; t < nt; ++t) ws.acc[t * no] += shift;
  }
  if (K::kernel == Kernel::Laplace && g.setup.free_multiplier) {
    // 1P: the zero mode's kernel was shifted to vanish at the truncation radius R
    // (truncated::laplace_1p_zero: -2 ln(rho / R) / L): undo it
    const auto& per = g.setup.periodic;
    const int np = int(per[0]) + int(per[1]) + int(per[2]);
    double cell = 1;  // A (2P) or L (1P): the periodic lengths' product
    for (int d = 0; d < 3; ++d)
      if (per[std::size_t(d)]) cell *= L[std::size_t(d)];
    const double R = p.truncation_radius;
    // (2P's zero mode is -2 pi |z| exactly, tapered beyond the data: no shift to undo)
    const double shift = np == 1 ? -2 * std::log(R) * ws.total[0] / cell : 0.0;
    if (shift != 0.0)
      for (std::size_t t = 0; t < nt; ++t) ws.acc[t * no] += shift;
  }
  if constexpr (K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined) {
    if (g.setup.zero_mode) {
      const CellList<T>& tc = g.targets();
      const double f = -8 * kPi / V;
      const double tot = ws.total[1], m[3] = {ws.moment[0], ws.moment[1], ws.moment[2]};
      const double* __restrict x[3] = {tc.x.data(), tc.y.data(), tc.z.data()};
      double* __restrict acc = ws.acc.data();
      for (std::size_t t = 0; t < nt; ++t)
        for (int j = 0; j < 3; ++j) acc[t * no + j] += f * (tot * x[j][t] - m[j]);
    }
  }
}

#define ELLIPTICA_EWALD_INSTANTIATE_IMAGES(K) template void self_images<K>(const BackendSetup&, double[3][3]);
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(LaplaceTraits)
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(LaplaceFieldTraits)
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(StokesletTraits)
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(StokesletPressureTraits)
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(StressletTraits)
ELLIPTICA_EWALD_INSTANTIATE_IMAGES(StokesCombinedTraits)
ELLIPTICA_EWALD_INSTANTIATE(self_term)

}  // namespace elliptica::ewald::detail
