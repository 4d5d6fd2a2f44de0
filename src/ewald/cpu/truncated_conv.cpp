// periodic_kernel_table (truncated_conv.hpp): the cropped kernel's table of a free-space sum on a periodic grid.
#include "ewald/cpu/truncated_conv.hpp"

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <exception>
#include <mutex>
#include <string>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {
constexpr double kTwoPi = 6.283185307179586476925;

// frequency of FFT index j of n points of spacing h
double freq(int j, int n, double h) { return kTwoPi * double(j <= n / 2 ? j : j - n) / (double(n) * h); }

struct Plan {
  fftw_plan p = nullptr;
  ~Plan() {
    if (p) {
      std::lock_guard<std::mutex> lock(fftw_planner_mutex());
      fftw_destroy_plan(p);
    }
  }
};
}  // namespace

std::vector<double> periodic_kernel_table(const std::array<int, 3>& M, const std::array<double, 3>& h,
                                          const std::function<double(double, double, double)>& hat, double extent,
                                          const std::function<double(int, double)>& axis_factor, int threads, bool odd,
                                          const std::array<bool, 3>& periodic) {
  std::array<int, 3> N{};
  double total = 1;
  for (int a = 0; a < 3; ++a) {
    if (M[std::size_t(a)] < 2 || !(h[std::size_t(a)] > 0))
      throw InvalidArgument("periodic kernel table: grid points >= 2 and spacings > 0 per axis");
    // the upsampled grid's period N h keeps the kernel's images (reach `extent`) off the crop
    // |x| < M h / 2; any N >= M will do (same spacing h): the next FFT-friendly size
    const double need = std::ceil(0.5 * M[std::size_t(a)] + extent / h[std::size_t(a)] - 1e-9);
    if (!(need <= 65536)) throw ResourceError("periodic kernel table: more than 65536 upsampled points along an axis");
    // a periodic axis: its own grid (the kernel is periodic there: nothing to crop)
    N[std::size_t(a)] = periodic[std::size_t(a)] ? M[std::size_t(a)]
                                                  : fft_friendly(std::max(M[std::size_t(a)], static_cast<int>(need)));
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
          const double v = hat(kf[0][std::size_t(i)], kf[1][std::size_t(j)], kf[2][std::size_t(l)]) *
                           af[0][std::size_t(i)] * af[1][std::size_t(j)] * af[2][std::size_t(l)];
          // odd: the Nyquist planes dropped (their modes have no sign; they are of the size of the
          // Fourier truncation error)
          const bool nyq = (n0 % 2 == 0 && 2 * i == n0) || (n1 % 2 == 0 && 2 * j == n1) || (n2 % 2 == 0 && 2 * l == n2);
          spec[(std::size_t(i) * n1 + j) * n2c + l] =
              odd ? std::complex<double>(0.0, nyq ? 0.0 : v) : std::complex<double>(v, 0.0);
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
      p.p = fftw_plan_dft_c2r_3d(n0, n1, n2, reinterpret_cast<fftw_complex*>(spec.data()), ker.data(), FFTW_ESTIMATE);
    }
    fftw_execute(p.p);
  }
  const double w = 1.0 / (double(n0) * h[0] * double(n1) * h[1] * double(n2) * h[2]);
  const int m0 = M[0], m1 = M[1], m2 = M[2], m2c = m2 / 2 + 1;
  std::vector<double> crop(std::size_t(m0) * m1 * m2, 0.0);
  auto idx = [](int d, int n) { return d >= 0 ? d : d + n; };
  // separations |m| < M/2 along the free axes; every index along the periodic ones
  const int e0 = periodic[0] ? m0 / 2 : (m0 - 1) / 2, e1 = periodic[1] ? m1 / 2 : (m1 - 1) / 2,
            e2 = periodic[2] ? m2 / 2 : (m2 - 1) / 2;
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
