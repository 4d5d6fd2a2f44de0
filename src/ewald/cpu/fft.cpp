// FFT and IFFT stages of the CPU backend (FFTW r2c / c2r, unnormalised; seed 000 algorithm 1,
// steps FFT and IFFT). Plans are made once per prepared geometry; every evaluation executes
// them on its own arrays (the new-array execute functions are thread-safe; FFTW's planner is
// not, so planning and destruction hold one process-wide lock).
#include <mutex>

#include "elliptica/core/error.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

namespace {
std::mutex& fftw_mutex() {
  static std::mutex m;
  return m;
}
// The float / double entry points of FFTW.
template <class T> struct Api;
template <> struct Api<double> {
  static double* alloc_real(std::size_t n) { return fftw_alloc_real(n); }
  static fftw_complex* alloc_complex(std::size_t n) { return fftw_alloc_complex(n); }
  static void free(void* p) { fftw_free(p); }
  static void init_threads() { fftw_init_threads(); }
  static void plan_with_nthreads(int n) { fftw_plan_with_nthreads(n); }
  static fftw_plan r2c(const int* n, int how, double* in, fftw_complex* out, int dr, int dc, unsigned flags) {
    return fftw_plan_many_dft_r2c(3, n, how, in, nullptr, 1, dr, out, nullptr, 1, dc, flags);
  }
  static fftw_plan c2r(const int* n, int how, fftw_complex* in, double* out, int dc, int dr, unsigned flags) {
    return fftw_plan_many_dft_c2r(3, n, how, in, nullptr, 1, dc, out, nullptr, 1, dr, flags);
  }
  static void destroy(fftw_plan p) { fftw_destroy_plan(p); }
};
template <> struct Api<float> {
  static float* alloc_real(std::size_t n) { return fftwf_alloc_real(n); }
  static fftwf_complex* alloc_complex(std::size_t n) { return fftwf_alloc_complex(n); }
  static void free(void* p) { fftwf_free(p); }
  static void init_threads() { fftwf_init_threads(); }
  static void plan_with_nthreads(int n) { fftwf_plan_with_nthreads(n); }
  static fftwf_plan r2c(const int* n, int how, float* in, fftwf_complex* out, int dr, int dc, unsigned flags) {
    return fftwf_plan_many_dft_r2c(3, n, how, in, nullptr, 1, dr, out, nullptr, 1, dc, flags);
  }
  static fftwf_plan c2r(const int* n, int how, fftwf_complex* in, float* out, int dc, int dr, unsigned flags) {
    return fftwf_plan_many_dft_c2r(3, n, how, in, nullptr, 1, dc, out, nullptr, 1, dr, flags);
  }
  static void destroy(fftwf_plan p) { fftwf_destroy_plan(p); }
};

template <class T>
void threads_init() {
  static std::once_flag once;
  std::call_once(once, [] { Api<T>::init_threads(); });
}

}  // namespace

template <class T>
FftPlans<T>::FftPlans(const std::array<int, 3>& m, int n_grid, int n_out, int threads, bool measure) : M(m) {
  threads_init<T>();
  ncomp = std::max(n_grid, n_out);
  std::lock_guard<std::mutex> lk(fftw_mutex());
  T* real = Api<T>::alloc_real(nreal() * ncomp);
  auto* cplx = Api<T>::alloc_complex(ncplx() * ncomp);
  if (!real || !cplx) {
    Api<T>::free(real);
    Api<T>::free(cplx);
    throw ResourceError("out of memory allocating the FFT grid");
  }
  Api<T>::plan_with_nthreads(threads);
  const int n[3] = {M[0], M[1], M[2]};
  // FFTW_MEASURE overwrites the arrays while it times candidate plans: these scratch ones
  const unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  fwd = Api<T>::r2c(n, n_grid, real, cplx, int(nreal()), int(ncplx()), flags);
  bwd = Api<T>::c2r(n, n_out, cplx, real, int(ncplx()), int(nreal()), flags);
  Api<T>::free(real);
  Api<T>::free(cplx);
  if (!fwd || !bwd) {
    if (fwd) Api<T>::destroy(fwd);
    if (bwd) Api<T>::destroy(bwd);
    throw NumericalError("FFTW could not create a plan for the grid");
  }
}

template <class T>
FftPlans<T>::~FftPlans() {
  std::lock_guard<std::mutex> lk(fftw_mutex());
  if (fwd) Api<T>::destroy(fwd);
  if (bwd) Api<T>::destroy(bwd);
}

template <class T>
void FftArrays<T>::allocate(const FftPlans<T>& plans) {
  if (real) return;
  real = Api<T>::alloc_real(plans.nreal() * plans.ncomp);
  cplx = Api<T>::alloc_complex(plans.ncplx() * plans.ncomp);
  if (!real || !cplx) throw ResourceError("out of memory allocating the FFT grid");
}

template <class T>
FftArrays<T>::~FftArrays() {
  Api<T>::free(real);
  Api<T>::free(cplx);
}

template <>
void fft_forward<double>(const CpuGeometry<double>& g, CpuWorkspace<double>& ws) {
  fftw_execute_dft_r2c(g.fft->fwd, ws.grid.real, ws.grid.cplx);
}
template <>
void fft_backward<double>(const CpuGeometry<double>& g, CpuWorkspace<double>& ws) {
  fftw_execute_dft_c2r(g.fft->bwd, ws.grid.cplx, ws.grid.real);
}
template <>
void fft_forward<float>(const CpuGeometry<float>& g, CpuWorkspace<float>& ws) {
  fftwf_execute_dft_r2c(g.fft->fwd, ws.grid.real, ws.grid.cplx);
}
template <>
void fft_backward<float>(const CpuGeometry<float>& g, CpuWorkspace<float>& ws) {
  fftwf_execute_dft_c2r(g.fft->bwd, ws.grid.cplx, ws.grid.real);
}

template struct FftPlans<float>;
template struct FftPlans<double>;
template struct FftArrays<float>;
template struct FftArrays<double>;

}  // namespace elliptica::ewald::detail
