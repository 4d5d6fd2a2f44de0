// periodic_kernel_table (truncated_conv.hpp): the cropped kernel's table of a free-space sum on a periodic grid.
#include "ewald/cpu/truncated_conv.hpp"

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <exception>
#include <map>
#include <mutex>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {

/// Along one axis of a table of m points, a component even (odd = false) or odd (odd = true)
/// along it is stored on its octant only: table index t and m - t share the octant index
/// o = min(t, m - t) (odd: minus 1, its octant starting at 1), and an odd component flips sign
/// past m / 2 and vanishes at 0 and m / 2. Returns the sign (0: the entry is zero) and sets o.
double octant_index(int t, int m, bool odd, int& o) {
  const int f = t <= m / 2 ? t : m - t;
  if (odd) {
    if (f == 0 || 2 * f == m) return 0.0;
    o = f - 1;
    return t <= m / 2 ? 1.0 : -1.0;
  }
  o = f;
  return 1.0;
}

/// The real transform of a component's octant: DCT-I (even) or DST-I (odd).
fftw_r2r_kind octant_transform(bool odd) { return odd ? FFTW_RODFT00 : FFTW_REDFT00; }

constexpr double kTwoPi = 6.283185307179586476925;

// frequency of FFT index j of n points of spacing h
double freq(int j, int n, double h) { return kTwoPi * double(j <= n / 2 ? j : j - n) / (double(n) * h); }

struct Plan {
  fftw_plan p = nullptr;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (p) {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_destroy_plan(p);
    }
  }
};

// A periodic mode's table on the free axes (1P: a plane, 2P: a line): the transform of the
// effective kernel at that mode, band-limited on an upsampled free-axis grid of its own size
// (the smallest FFT-friendly N_f >= M_f / 2 + extent(|k_p|) / h_f), cropped to |m_f| < M_f / 2 and
// transformed back on the M grid's free axes. Along the periodic axes nothing is upsampled or
// cropped, so the 3-D construction factors into these independent lower-dimensional ones. With
// the parities known, the free axes' transforms are DCT-I / DST-I of one half (2P) or quadrant
// (1P) of each mode's grid, as in octant_table (below): 2x / 4x fewer points, real transforms.
std::vector<double> per_mode_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                   const std::function<double(double, double, double)>& hat,
                                   const std::function<double(double)>& mode_extent,
                                   const std::function<double(int, double)>& axis_factor, int threads, bool odd,
                                   const std::array<bool, 3>& periodic, const std::array<int, 3>& parity) {
  std::vector<int> fa, pa;  // free and periodic axes
  for (int a = 0; a < 3; ++a) {
    if (M[std::size_t(a)] < 2 || !(h[std::size_t(a)] > 0))
      throw InvalidArgument("periodic kernel table: grid points >= 2 and spacings > 0 per axis");
    (periodic[std::size_t(a)] ? pa : fa).push_back(a);
  }
  const int nf = static_cast<int>(fa.size());
  const int m2c = M[2] / 2 + 1;
  // the parities known (and the free axes' M even): the free axes' transforms are DCT-I / DST-I
  // of one half (2P) or quadrant (1P), as octant_table's (below), else complex
  bool sym = parity[0] >= 0 && parity[1] >= 0 && parity[2] >= 0;
  for (int a : fa) sym = sym && M[std::size_t(a)] % 2 == 0 && M[std::size_t(a)] >= 4;
  auto fodd = [&](int f) { return parity[std::size_t(fa[std::size_t(f)])] == 1; };
  // the octant's length along free axis f of a grid of n points (odd: n/2 - 1, even: n/2 + 1)
  auto half = [&](int f, int n) { return fodd(f) ? n / 2 - 1 : n / 2 + 1; };
  auto kind = [&](int f) { return octant_transform(fodd(f)); };
  // the periodic modes: every index along periodic axes 0 / 1, the half spectrum along axis 2
  std::vector<std::array<int, 3>> modes;
  {
    std::array<int, 3> cnt{1, 1, 1};
    for (int a : pa) cnt[std::size_t(a)] = a == 2 ? m2c : M[std::size_t(a)];
    for (int i = 0; i < cnt[0]; ++i)
      for (int j = 0; j < cnt[1]; ++j)
        for (int l = 0; l < cnt[2]; ++l) modes.push_back({i, j, l});
  }
  auto mode_k = [&](const std::array<int, 3>& md, std::array<double, 3>& k) {
    double k2 = 0;
    for (int a : pa) {
      k[std::size_t(a)] = freq(md[std::size_t(a)], M[std::size_t(a)], h[std::size_t(a)]);
      k2 += k[std::size_t(a)] * k[std::size_t(a)];
    }
    return std::sqrt(k2);
  };
  // each mode's upsampled free-axis grid; one FFTW plan per distinct grid (made here, executed
  // from several threads on their own buffers: FFTW's new-array execute is thread safe)
  std::vector<std::array<int, 2>> mode_n(modes.size(), {1, 1});
  std::map<std::array<int, 2>, std::size_t> plan_of;
  double biggest = 0;
  for (std::size_t q = 0; q < modes.size(); ++q) {
    std::array<double, 3> k{};
    const double ext = mode_extent(mode_k(modes[q], k));
    for (int f = 0; f < nf; ++f) {
      const int a = fa[std::size_t(f)];
      const double need = std::ceil(0.5 * M[std::size_t(a)] + ext / h[std::size_t(a)] - 1e-9);
      if (!(need <= 65536))
        throw ResourceError("periodic kernel table: more than 65536 upsampled points along a free axis");
      mode_n[q][std::size_t(f)] = fft_friendly(std::max(M[std::size_t(a)], static_cast<int>(need)));
    }
    plan_of.emplace(mode_n[q], 0);
    biggest = std::max(biggest, double(mode_n[q][0]) * mode_n[q][1]);
  }
  const int nthreads = std::max(1, std::min(threads, static_cast<int>(modes.size())));
  const double mfree = nf == 1 ? M[std::size_t(fa[0])] : double(M[std::size_t(fa[0])]) * M[std::size_t(fa[1])];
  require_memory(double(M[0]) * M[1] * m2c * 8.0 + nthreads * (biggest + mfree) * 16.0,
                 "the kernel table (largest upsampled free-axis grid " + std::to_string(static_cast<long long>(biggest)) +
                     " points per thread)");
  std::vector<Plan> plans(plan_of.size());
  // per distinct grid: its free axes' frequencies and separable factors (the window's 1 / w^2,
  // costly), computed once, read by every mode on that grid
  std::vector<std::array<std::vector<double>, 2>> grid_k(plan_of.size()), grid_f(plan_of.size());
  Plan forward;
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    fftw_plan_serially();
    std::size_t id = 0;
    for (auto& [n, slot] : plan_of) {
      slot = id;
      for (int f = 0; f < nf; ++f) {
        const int a = fa[std::size_t(f)], nn = n[std::size_t(f)];
        // (sym: the octant's indices j, frequency index j + 1 along an odd axis)
        const int len = sym ? half(f, nn) : nn, j0 = sym && fodd(f) ? 1 : 0;
        auto& kv = grid_k[id][std::size_t(f)];
        auto& fv = grid_f[id][std::size_t(f)];
        kv.resize(std::size_t(len));
        fv.assign(std::size_t(len), 1.0);
        for (int j = 0; j < len; ++j) {
          kv[std::size_t(j)] = freq(j + j0, nn, h[std::size_t(a)]);
          if (axis_factor) fv[std::size_t(j)] = axis_factor(a, kv[std::size_t(j)]);
        }
      }
      if (sym) {
        const int l0 = half(0, n[0]), l1 = nf == 2 ? half(1, n[1]) : 1;
        std::vector<double> tmp(std::size_t(l0) * std::size_t(l1));
        plans[id++].p = nf == 1 ? fftw_plan_r2r_1d(l0, tmp.data(), tmp.data(), kind(0), FFTW_ESTIMATE | FFTW_UNALIGNED)
                                : fftw_plan_r2r_2d(l0, l1, tmp.data(), tmp.data(), kind(0), kind(1),
                                                   FFTW_ESTIMATE | FFTW_UNALIGNED);
        continue;
      }
      std::vector<std::complex<double>> tmp(std::size_t(n[0]) * std::size_t(n[1]));
      auto* b = reinterpret_cast<fftw_complex*>(tmp.data());
      plans[id++].p = nf == 1 ? fftw_plan_dft_1d(n[0], b, b, FFTW_BACKWARD, FFTW_ESTIMATE | FFTW_UNALIGNED)
                              : fftw_plan_dft_2d(n[0], n[1], b, b, FFTW_BACKWARD, FFTW_ESTIMATE | FFTW_UNALIGNED);
    }
    if (sym) {
      const int r0 = half(0, M[std::size_t(fa[0])]), r1 = nf == 2 ? half(1, M[std::size_t(fa[1])]) : 1;
      std::vector<double> tmp(std::size_t(r0) * std::size_t(r1));
      forward.p = nf == 1 ? fftw_plan_r2r_1d(r0, tmp.data(), tmp.data(), kind(0), FFTW_ESTIMATE | FFTW_UNALIGNED)
                          : fftw_plan_r2r_2d(r0, r1, tmp.data(), tmp.data(), kind(0), kind(1),
                                             FFTW_ESTIMATE | FFTW_UNALIGNED);
    } else {
      std::vector<std::complex<double>> tmp(static_cast<std::size_t>(mfree));
      auto* b = reinterpret_cast<fftw_complex*>(tmp.data());
      forward.p = nf == 1 ? fftw_plan_dft_1d(M[std::size_t(fa[0])], b, b, FFTW_FORWARD, FFTW_ESTIMATE | FFTW_UNALIGNED)
                          : fftw_plan_dft_2d(M[std::size_t(fa[0])], M[std::size_t(fa[1])], b, b, FFTW_FORWARD,
                                             FFTW_ESTIMATE | FFTW_UNALIGNED);
    }
  }
  // the separable factors along the periodic axes (their own grid)
  std::vector<double> pf[3];
  for (int a : pa) {
    pf[a].assign(std::size_t(M[std::size_t(a)]), 1.0);
    if (axis_factor)
      for (int j = 0; j < M[std::size_t(a)]; ++j)
        pf[a][std::size_t(j)] = axis_factor(a, freq(j, M[std::size_t(a)], h[std::size_t(a)]));
  }
  std::vector<double> table(std::size_t(M[0]) * M[1] * m2c, 0.0);
  std::exception_ptr err;
#pragma omp parallel num_threads(nthreads)
  {
    std::vector<std::complex<double>> up, crop;
    std::vector<double> rup, rcrop;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t q = 0; q < modes.size(); ++q) {
      try {
        const std::array<int, 3>& md = modes[q];
        std::array<double, 3> k{};
        mode_k(md, k);
        double pfac = 1.0;
        bool nyq_p[3] = {false, false, false};  // the mode is a periodic axis' Nyquist index
        for (int a : pa) {
          pfac *= pf[a][std::size_t(md[std::size_t(a)])];
          nyq_p[a] = M[std::size_t(a)] % 2 == 0 && 2 * md[std::size_t(a)] == M[std::size_t(a)];
        }
        const std::array<int, 2> n = mode_n[q];
        const int n0 = n[0], n1 = nf == 2 ? n[1] : 1;
        const std::size_t g = plan_of.at(n);
        const std::array<std::vector<double>, 2>& kf = grid_k[g];
        const std::array<std::vector<double>, 2>& af = grid_f[g];
        // the wavevector and the separable factor at free-axis grid indices (i0, i1)
        auto free_point = [&](int i0, int i1, std::array<double, 3>& kk) {
          kk = k;
          kk[std::size_t(fa[0])] = kf[0][std::size_t(i0)];
          double fac = pfac * af[0][std::size_t(i0)];
          if (nf == 2) {
            kk[std::size_t(fa[1])] = kf[1][std::size_t(i1)];
            fac *= af[1][std::size_t(i1)];
          }
          return fac;
        };
        if (sym) {
          // a periodic axis' Nyquist index: the mean over +-k, 0 for a component odd along it
          bool zero = false;
          for (int a : pa) zero = zero || (nyq_p[a] && parity[std::size_t(a)] == 1);
          if (zero) continue;  // (the table is 0 there already)
          const int l0 = half(0, n0), l1 = nf == 2 ? half(1, n1) : 1;
          rup.assign(std::size_t(l0) * std::size_t(l1), 0.0);
          for (int i0 = 0; i0 < l0; ++i0)
            for (int i1 = 0; i1 < l1; ++i1) {
              std::array<double, 3> kk;
              const double fac = free_point(i0, i1, kk);
              rup[std::size_t(i0) * l1 + std::size_t(i1)] = fac * hat(kk[0], kk[1], kk[2]);
            }
          fftw_execute_r2r(plans[g].p, rup.data(), rup.data());
          // the crop j < M_f / 2 (even: j = 0 .. M_f/2 - 1 and 0 at M_f/2; odd: octant index j - 1)
          const int m0 = M[std::size_t(fa[0])], m1 = nf == 2 ? M[std::size_t(fa[1])] : 1;
          const int r0 = half(0, m0), r1 = nf == 2 ? half(1, m1) : 1;
          rcrop.assign(std::size_t(r0) * std::size_t(r1), 0.0);
          for (int c0 = 0; c0 < r0; ++c0)
            for (int c1 = 0; c1 < r1; ++c1)
              if ((fodd(0) || c0 < m0 / 2) && (nf == 1 || fodd(1) || c1 < m1 / 2))
                rcrop[std::size_t(c0) * r1 + std::size_t(c1)] = rup[std::size_t(c0) * l1 + std::size_t(c1)];
          fftw_execute_r2r(forward.p, rcrop.data(), rcrop.data());
          const double w = 1.0 / (double(n0) * double(n1));
          // table index t along free axis f from the octant (+- by the parity)
          auto unfold = [&](int f, int t, int m, int& o) { return octant_index(t, m, fodd(f), o); };
          for (int t0 = 0; t0 < m0; ++t0) {
            int o0 = 0;
            const double s0 = unfold(0, t0, m0, o0);
            if (s0 == 0.0) continue;
            for (int t1 = 0; t1 < m1; ++t1) {
              int o1 = 0;
              const double s1 = nf == 2 ? unfold(1, t1, m1, o1) : 1.0;
              if (s1 == 0.0) continue;
              std::array<int, 3> t = md;
              t[std::size_t(fa[0])] = t0;
              if (nf == 2) t[std::size_t(fa[1])] = t1;
              if (t[2] >= m2c) continue;  // (a free axis 2: its half spectrum)
              table[(std::size_t(t[0]) * M[1] + std::size_t(t[1])) * m2c + std::size_t(t[2])] =
                  w * s0 * s1 * rcrop[std::size_t(o0) * r1 + std::size_t(o1)];
            }
          }
          continue;
        }
        up.assign(std::size_t(n0) * std::size_t(n1), {0.0, 0.0});
        for (int i0 = 0; i0 < n0; ++i0)
          for (int i1 = 0; i1 < n1; ++i1) {
            std::array<double, 3> kk;
            const double fac = free_point(i0, i1, kk);
            // a Nyquist index stands for +k and -k at once: the mean of hat over those signs (a
            // component odd along that axis, a stokeslet xz or a field table, gets 0 there; taking
            // one sign made the table depend on the axes' order: 2e-10 at eps 1e-10)
            bool flip[3] = {nyq_p[0], nyq_p[1], nyq_p[2]};
            flip[fa[0]] = n0 % 2 == 0 && 2 * i0 == n0;
            if (nf == 2) flip[fa[1]] = n1 % 2 == 0 && 2 * i1 == n1;
            double v = 0;
            int terms = 0;
            for (int sx = 0; sx <= int(flip[0]); ++sx)
              for (int sy = 0; sy <= int(flip[1]); ++sy)
                for (int sz = 0; sz <= int(flip[2]); ++sz, ++terms)
                  v += hat(sx ? -kk[0] : kk[0], sy ? -kk[1] : kk[1], sz ? -kk[2] : kk[2]);
            v *= fac / terms;
            up[std::size_t(i0) * n1 + std::size_t(i1)] = odd ? std::complex<double>(0.0, v) : std::complex<double>(v, 0.0);
          }
        fftw_execute_dft(plans[g].p, reinterpret_cast<fftw_complex*>(up.data()),
                         reinterpret_cast<fftw_complex*>(up.data()));
        // crop to |m_f| < M_f / 2, scaled by 1 / (N_f h_f) per free axis
        const int m0 = M[std::size_t(fa[0])], m1 = nf == 2 ? M[std::size_t(fa[1])] : 1;
        double w = 1.0 / (double(n0) * h[std::size_t(fa[0])]);
        if (nf == 2) w /= double(n1) * h[std::size_t(fa[1])];
        crop.assign(std::size_t(m0) * std::size_t(m1), {0.0, 0.0});
        auto idx = [](int d, int nn) { return d >= 0 ? d : d + nn; };
        const int e1 = nf == 2 ? (m1 - 1) / 2 : 0;
        for (int a0 = -(m0 - 1) / 2; a0 <= (m0 - 1) / 2; ++a0)
          for (int a1 = -e1; a1 <= e1; ++a1)
            crop[std::size_t(idx(a0, m0)) * m1 + std::size_t(idx(a1, m1))] =
                w * up[std::size_t(idx(a0, n0)) * n1 + std::size_t(idx(a1, n1))];
        fftw_execute_dft(forward.p, reinterpret_cast<fftw_complex*>(crop.data()),
                         reinterpret_cast<fftw_complex*>(crop.data()));
        double hf = h[std::size_t(fa[0])];
        if (nf == 2) hf *= h[std::size_t(fa[1])];
        for (int i0 = 0; i0 < m0; ++i0)
          for (int i1 = 0; i1 < m1; ++i1) {
            std::array<int, 3> t = md;
            t[std::size_t(fa[0])] = i0;
            if (nf == 2) t[std::size_t(fa[1])] = i1;
            if (t[2] >= m2c) continue;  // (a free axis 2: its half spectrum)
            const std::complex<double> c = crop[std::size_t(i0) * m1 + std::size_t(i1)] * hf;
            table[(std::size_t(t[0]) * M[1] + std::size_t(t[1])) * m2c + std::size_t(t[2])] = odd ? c.imag() : c.real();
          }
      } catch (...) {
#pragma omp critical(elliptica_kernel_table)
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
  return table;
}

// 0P with every component's parity along each axis known (parity[a]: 0 even, 1 odd in k_a, and
// so in x_a): the same table from one octant. Per axis the upsampled sum over k in [-N/2, N/2)
// of hat(k) e^{i k x_j} is, for j in [0, N/2], hat(0) + 2 sum_{m=1}^{N/2-1} hat(m) cos(2 pi m j / N)
// + hat(N/2) (-1)^j (even: a DCT-I of N/2 + 1 points, FFTW's REDFT00) or 2 i sum_{m=1}^{N/2-1}
// hat(m) sin(2 pi m j / N) (odd: a DST-I of N/2 - 1 points, RODFT00; the Nyquist mean over +-k is
// 0); the crop keeps |j| < M/2 (M even: fft_friendly), and the forward sum on the M grid is again
// a DCT-I (M/2 + 1 points, the crop's zero at M/2 included) or -i times a DST-I (M/2 - 1). The
// factors i (backward) and -i (forward) per odd axis cancel, and so does the odd table's i:
// table = h1 h2 h3 / (N1 h1 N2 h2 N3 h3) x R_M(crop(R_N(hat))), filled out by the parities
// (value at M - m: +- the value at m). 8x fewer points per transform and per kernel evaluation
// than the complex path (tested against it: tests/test_ewald_truncated_green.cpp, KernelTable).
std::vector<double> octant_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                 const std::function<double(double, double, double)>& hat, double extent,
                                 const std::function<double(int, double)>& axis_factor, int threads,
                                 const std::array<int, 3>& parity) {
  std::array<int, 3> N{}, nq{}, mq{};  // upsampled points; the octant's lengths along N and M
  double total = 1;
  for (int a = 0; a < 3; ++a) {
    const double need = std::ceil(0.5 * M[std::size_t(a)] + extent / h[std::size_t(a)] - 1e-9);
    if (!(need <= 65536)) throw ResourceError("periodic kernel table: more than 65536 upsampled points along an axis");
    N[std::size_t(a)] = fft_friendly(std::max(M[std::size_t(a)], static_cast<int>(need)));  // (even)
    const bool odd = parity[std::size_t(a)] == 1;
    nq[std::size_t(a)] = odd ? N[std::size_t(a)] / 2 - 1 : N[std::size_t(a)] / 2 + 1;
    mq[std::size_t(a)] = odd ? M[std::size_t(a)] / 2 - 1 : M[std::size_t(a)] / 2 + 1;
    total *= nq[std::size_t(a)];
  }
  if (total > double(1u << 31)) throw ResourceError("periodic kernel table: more than 2^31 upsampled grid points");
  const int m2c = M[2] / 2 + 1;
  require_memory(total * 8.0 + double(mq[0]) * mq[1] * mq[2] * 8.0 + double(M[0]) * M[1] * m2c * 8.0,
                 "the free-space kernel table (upsampled octant " + std::to_string(nq[0]) + "x" + std::to_string(nq[1]) +
                     "x" + std::to_string(nq[2]) + ")");
  // per axis: the octant's frequencies (odd: m = 1 .. N/2 - 1) and separable factors
  std::vector<double> kf[3], af[3];
  for (int a = 0; a < 3; ++a) {
    const int n = N[std::size_t(a)], m0 = parity[std::size_t(a)] == 1 ? 1 : 0;
    kf[a].resize(std::size_t(nq[std::size_t(a)]));
    af[a].assign(std::size_t(nq[std::size_t(a)]), 1.0);
    for (int j = 0; j < nq[std::size_t(a)]; ++j) {
      kf[a][std::size_t(j)] = freq(j + m0, n, h[std::size_t(a)]);
      if (axis_factor) af[a][std::size_t(j)] = axis_factor(a, kf[a][std::size_t(j)]);
    }
  }
  const int q0 = nq[0], q1 = nq[1], q2 = nq[2];
  std::vector<double> oct(std::size_t(q0) * q1 * q2);
  std::exception_ptr err;
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads))
  for (int i = 0; i < q0; ++i) {
    try {
      for (int j = 0; j < q1; ++j)
        for (int l = 0; l < q2; ++l)
          oct[(std::size_t(i) * q1 + j) * q2 + l] = hat(kf[0][std::size_t(i)], kf[1][std::size_t(j)], kf[2][std::size_t(l)]) *
                                                     af[0][std::size_t(i)] * af[1][std::size_t(j)] * af[2][std::size_t(l)];
    } catch (...) {
#pragma omp critical(elliptica_kernel_table)
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
  auto kind = [&](int a) { return octant_transform(parity[std::size_t(a)] == 1); };
  {
    Plan p;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_plan_serially();
      p.p = fftw_plan_r2r_3d(q0, q1, q2, oct.data(), oct.data(), kind(0), kind(1), kind(2), FFTW_ESTIMATE);
    }
    fftw_execute(p.p);
  }
  // the crop: j < M/2 (even: j = 0 .. M/2 - 1, and 0 at M/2; odd: j = 1 .. M/2 - 1, the octant's
  // index j - 1 on both grids)
  const int r0 = mq[0], r1 = mq[1], r2 = mq[2];
  std::vector<double> crop(std::size_t(r0) * r1 * r2, 0.0);
  auto keep = [&](int a, int j) { return parity[std::size_t(a)] == 1 || j < M[std::size_t(a)] / 2; };
  for (int i = 0; i < r0; ++i)
    for (int j = 0; j < r1; ++j)
      for (int l = 0; l < r2; ++l)
        if (keep(0, i) && keep(1, j) && keep(2, l))
          crop[(std::size_t(i) * r1 + j) * r2 + l] = oct[(std::size_t(i) * q1 + j) * q2 + l];
  {
    Plan p;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_plan_serially();
      p.p = fftw_plan_r2r_3d(r0, r1, r2, crop.data(), crop.data(), kind(0), kind(1), kind(2), FFTW_ESTIMATE);
    }
    fftw_execute(p.p);
  }
  const double w = 1.0 / (double(N[0]) * double(N[1]) * double(N[2]));  // h1 h2 h3 / (N1 h1 N2 h2 N3 h3)
  // per axis and table index t: the octant's index and sign (-1: not in the octant, the table is 0)
  auto unfold = [&](int a, int t, int& o) { return octant_index(t, M[std::size_t(a)], parity[std::size_t(a)] == 1, o); };
  std::vector<double> table(std::size_t(M[0]) * M[1] * m2c, 0.0);
  for (int i = 0; i < M[0]; ++i) {
    int oi = 0;
    const double si = unfold(0, i, oi);
    if (si == 0.0) continue;
    for (int j = 0; j < M[1]; ++j) {
      int oj = 0;
      const double sj = unfold(1, j, oj);
      if (sj == 0.0) continue;
      for (int l = 0; l < m2c; ++l) {
        int ol = 0;
        const double sl = unfold(2, l, ol);
        if (sl == 0.0) continue;
        table[(std::size_t(i) * M[1] + j) * m2c + l] = w * si * sj * sl * crop[(std::size_t(oi) * r1 + oj) * r2 + ol];
      }
    }
  }
  return table;
}
}  // namespace

std::vector<double> periodic_kernel_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                          const std::function<double(double, double, double)>& hat, double extent,
                                          const std::function<double(int, double)>& axis_factor, int threads, bool odd,
                                          const std::array<bool, 3>& periodic,
                                          const std::function<double(double)>& mode_extent,
                                          const std::array<int, 3>& parity) {
  if (parity[0] >= 0 && parity[1] >= 0 && parity[2] >= 0 && odd != ((parity[0] + parity[1] + parity[2]) % 2 == 1))
    throw InvalidArgument("periodic kernel table: an odd table needs an odd number of odd axes (parity)");
  if (periodic[0] || periodic[1] || periodic[2])
    return per_mode_table(M, h, hat, mode_extent ? mode_extent : [extent](double) { return extent; }, axis_factor,
                          threads, odd, periodic, parity);
  if (parity[0] >= 0 && parity[1] >= 0 && parity[2] >= 0 && M[0] % 2 == 0 && M[1] % 2 == 0 && M[2] % 2 == 0 &&
      M[0] >= 4 && M[1] >= 4 && M[2] >= 4 && h[0] > 0 && h[1] > 0 && h[2] > 0) {
    return octant_table(M, h, hat, extent, axis_factor, threads, parity);
  }
  std::array<int, 3> N{};
  double total = 1;
  for (int a = 0; a < 3; ++a) {
    if (M[std::size_t(a)] < 2 || !(h[std::size_t(a)] > 0))
      throw InvalidArgument("periodic kernel table: grid points >= 2 and spacings > 0 per axis");
    // the upsampled grid's period N h keeps the kernel's images (reach `extent`) off the crop
    // |x| < M h / 2; any N >= M will do (same spacing h): the next FFT-friendly size
    const double need = std::ceil(0.5 * M[std::size_t(a)] + extent / h[std::size_t(a)] - 1e-9);
    if (!(need <= 65536)) throw ResourceError("periodic kernel table: more than 65536 upsampled points along an axis");
    N[std::size_t(a)] = fft_friendly(std::max(M[std::size_t(a)], static_cast<int>(need)));
    total *= N[std::size_t(a)];
  }
  if (total > double(1u << 31)) throw ResourceError("periodic kernel table: more than 2^31 upsampled grid points");
  const int n0 = N[0], n1 = N[1], n2 = N[2], n2c = n2 / 2 + 1;
  // the upsampled half spectrum and its real transform, then the M grid's (checked before allocating)
  require_memory(total * 8.0 + double(n0) * n1 * n2c * 16.0 + double(M[0]) * M[1] * M[2] * 16.0,
                 "the free-space kernel table (upsampled grid " + std::to_string(n0) + "x" + std::to_string(n1) + "x" +
                     std::to_string(n2) + ")");
  std::vector<std::complex<double>> spec(std::size_t(n0) * n1 * n2c);
  // per-axis frequencies and separable factors, evaluated once per index
  std::vector<double> kf[3], af[3];
  for (int a = 0; a < 3; ++a) {
    const int n = N[std::size_t(a)];
    kf[a].resize(std::size_t(n));
    af[a].assign(std::size_t(n), 1.0);
    for (int j = 0; j < n; ++j) {
      kf[a][std::size_t(j)] = freq(j, n, h[std::size_t(a)]);
      if (axis_factor) af[a][std::size_t(j)] = axis_factor(a, kf[a][std::size_t(j)]);
    }
  }
  // hat is called from several threads (it must be pure); no exception may leave the region
  std::exception_ptr err;
#pragma omp parallel for schedule(static) num_threads(std::max(1, threads))
  for (int i = 0; i < n0; ++i) {
    try {
      for (int j = 0; j < n1; ++j)
        for (int l = 0; l < n2c; ++l) {
          // a Nyquist index stands for +k and -k at once: the mean of hat over those signs (a
          // component odd along that axis gets 0 there; taking one sign made the stokeslet's
          // result depend on the axes' order: 4e-10 at eps 1e-6)
          const bool flip[3] = {n0 % 2 == 0 && 2 * i == n0, n1 % 2 == 0 && 2 * j == n1, n2 % 2 == 0 && 2 * l == n2};
          const double k0 = kf[0][std::size_t(i)], k1 = kf[1][std::size_t(j)], k2 = kf[2][std::size_t(l)];
          double v = 0;
          int terms = 0;
          for (int sx = 0; sx <= int(flip[0]); ++sx)
            for (int sy = 0; sy <= int(flip[1]); ++sy)
              for (int sz = 0; sz <= int(flip[2]); ++sz, ++terms) v += hat(sx ? -k0 : k0, sy ? -k1 : k1, sz ? -k2 : k2);
          v *= af[0][std::size_t(i)] * af[1][std::size_t(j)] * af[2][std::size_t(l)] / terms;
          spec[(std::size_t(i) * n1 + j) * n2c + l] = odd ? std::complex<double>(0.0, v) : std::complex<double>(v, 0.0);
        }
    } catch (...) {
#pragma omp critical(elliptica_kernel_table)
      if (!err) err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
  std::vector<double> ker(std::size_t(n0) * n1 * n2);
  {
    Plan p;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_plan_serially();
      p.p = fftw_plan_dft_c2r_3d(n0, n1, n2, reinterpret_cast<fftw_complex*>(spec.data()), ker.data(), FFTW_ESTIMATE);
    }
    fftw_execute(p.p);
  }
  const double w = 1.0 / (double(n0) * h[0] * double(n1) * h[1] * double(n2) * h[2]);
  const int m0 = M[0], m1 = M[1], m2 = M[2], m2c = m2 / 2 + 1;
  std::vector<double> crop(std::size_t(m0) * m1 * m2, 0.0);
  auto idx = [](int d, int n) { return d >= 0 ? d : d + n; };
  // separations |m| < M/2 along every axis (free space)
  const int e0 = (m0 - 1) / 2, e1 = (m1 - 1) / 2, e2 = (m2 - 1) / 2;
  for (int a = -(m0 - 1) / 2; a <= e0; ++a)
    for (int b = -(m1 - 1) / 2; b <= e1; ++b)
      for (int c = -(m2 - 1) / 2; c <= e2; ++c)
        crop[(std::size_t(idx(a, m0)) * m1 + std::size_t(idx(b, m1))) * m2 + std::size_t(idx(c, m2))] =
            w * ker[(std::size_t(idx(a, n0)) * n1 + std::size_t(idx(b, n1))) * n2 + std::size_t(idx(c, n2))];
  std::vector<std::complex<double>> khat(std::size_t(m0) * m1 * m2c);
  {
    Plan p;
    {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_plan_serially();
      p.p = fftw_plan_dft_r2c_3d(m0, m1, m2, crop.data(), reinterpret_cast<fftw_complex*>(khat.data()), FFTW_ESTIMATE);
    }
    fftw_execute(p.p);
  }
  std::vector<double> table(khat.size());
  const double h3 = h[0] * h[1] * h[2];
  for (std::size_t k = 0; k < khat.size(); ++k) table[k] = (odd ? khat[k].imag() : khat[k].real()) * h3;
  return table;
}

}  // namespace elliptica::ewald::detail
