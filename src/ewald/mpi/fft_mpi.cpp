// SlabFft (fft_mpi.hpp): FFTW-MPI r2c / c2r plans with transposed spectra, float64 and float32.
#include "ewald/mpi/fft_mpi.hpp"

#include <fftw3-mpi.h>

#include <mutex>
#include <string>

#include "elliptica/core/error.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail::mpi {

namespace {

template <class T>
struct MpiApi;

template <>
struct MpiApi<double> {
  using plan = fftw_plan;
  using complex = fftw_complex;
  static void init() {
    static std::once_flag once;
    std::call_once(once, [] {
      fftw_init_threads();  // before fftw_mpi_init (FFTW manual, "Combining MPI and Threads")
      fftw_mpi_init();
    });
  }
  static std::ptrdiff_t local_size(const std::ptrdiff_t n[3], MPI_Comm c, std::ptrdiff_t* n0, std::ptrdiff_t* s0,
                                   std::ptrdiff_t* n1, std::ptrdiff_t* s1) {
    return fftw_mpi_local_size_3d_transposed(n[0], n[1], n[2], c, n0, s0, n1, s1);
  }
  static double* alloc(std::ptrdiff_t n) { return fftw_alloc_real(std::size_t(n)); }
  static void free(void* p) { fftw_free(p); }
  static void threads(int k) { fftw_plan_with_nthreads(k); }
  static plan r2c(const int M[3], double* a, MPI_Comm c, unsigned f) {
    return fftw_mpi_plan_dft_r2c_3d(M[0], M[1], M[2], a, reinterpret_cast<complex*>(a), c, f | FFTW_MPI_TRANSPOSED_OUT);
  }
  static plan c2r(const int M[3], double* a, MPI_Comm c, unsigned f) {
    return fftw_mpi_plan_dft_c2r_3d(M[0], M[1], M[2], reinterpret_cast<complex*>(a), a, c, f | FFTW_MPI_TRANSPOSED_IN);
  }
  static void run_r2c(void* p, double* a) { fftw_mpi_execute_dft_r2c(plan(p), a, reinterpret_cast<complex*>(a)); }
  static void run_c2r(void* p, double* a) { fftw_mpi_execute_dft_c2r(plan(p), reinterpret_cast<complex*>(a), a); }
  static void destroy(void* p) { fftw_destroy_plan(plan(p)); }
};

template <>
struct MpiApi<float> {
  using plan = fftwf_plan;
  using complex = fftwf_complex;
  static void init() {
    static std::once_flag once;
    std::call_once(once, [] {
      fftwf_init_threads();
      fftwf_mpi_init();
    });
  }
  static std::ptrdiff_t local_size(const std::ptrdiff_t n[3], MPI_Comm c, std::ptrdiff_t* n0, std::ptrdiff_t* s0,
                                   std::ptrdiff_t* n1, std::ptrdiff_t* s1) {
    return fftwf_mpi_local_size_3d_transposed(n[0], n[1], n[2], c, n0, s0, n1, s1);
  }
  static float* alloc(std::ptrdiff_t n) { return fftwf_alloc_real(std::size_t(n)); }
  static void free(void* p) { fftwf_free(p); }
  static void threads(int k) { fftwf_plan_with_nthreads(k); }
  static plan r2c(const int M[3], float* a, MPI_Comm c, unsigned f) {
    return fftwf_mpi_plan_dft_r2c_3d(M[0], M[1], M[2], a, reinterpret_cast<complex*>(a), c, f | FFTW_MPI_TRANSPOSED_OUT);
  }
  static plan c2r(const int M[3], float* a, MPI_Comm c, unsigned f) {
    return fftwf_mpi_plan_dft_c2r_3d(M[0], M[1], M[2], reinterpret_cast<complex*>(a), a, c, f | FFTW_MPI_TRANSPOSED_IN);
  }
  static void run_r2c(void* p, float* a) { fftwf_mpi_execute_dft_r2c(plan(p), a, reinterpret_cast<complex*>(a)); }
  static void run_c2r(void* p, float* a) { fftwf_mpi_execute_dft_c2r(plan(p), reinterpret_cast<complex*>(a), a); }
  static void destroy(void* p) { fftwf_destroy_plan(plan(p)); }
};

}  // namespace

template <class T>
SlabFft<T>::SlabFft(MPI_Comm comm, const std::array<int, 3>& M, int threads, unsigned flags) : M_(M) {
  using A = MpiApi<T>;
  A::init();
  // the complex dimensions give the local sizes of the r2c (FFTW manual, "Multi-dimensional MPI
  // DFTs of Real Data"); the returned count is in complex values
  const std::ptrdiff_t n[3] = {M[0], M[1], M[2] / 2 + 1};
  alloc_ = A::local_size(n, comm, &n0_, &s0_, &n1_, &s1_);
  // planning is collective: every rank plans even with no planes, on a scratch array (MEASURE
  // overwrites it); the planner is not thread-safe: the serial backend's lock
  T* scratch = A::alloc(2 * std::max<std::ptrdiff_t>(alloc_, 1));
  bool ok = scratch != nullptr;
  if (ok) {
    std::lock_guard<std::mutex> lk(fftw_planner_mutex());
    A::threads(threads);
    const int m[3] = {M[0], M[1], M[2]};
    fwd_ = reinterpret_cast<void*>(A::r2c(m, scratch, comm, flags));
    bwd_ = reinterpret_cast<void*>(A::c2r(m, scratch, comm, flags));
    A::threads(1);
  }
  A::free(scratch);
  if (!fwd_ || !bwd_) {
    if (fwd_) A::destroy(fwd_);
    if (bwd_) A::destroy(bwd_);
    throw ResourceError("distributed FFT: FFTW-MPI could not plan the " + std::to_string(M[0]) + "x" + std::to_string(M[1]) +
                        "x" + std::to_string(M[2]) + " transform (out of memory?)");
  }
}

template <class T>
SlabFft<T>::~SlabFft() {
  std::lock_guard<std::mutex> lk(fftw_planner_mutex());
  MpiApi<T>::destroy(fwd_);
  MpiApi<T>::destroy(bwd_);
}

template <class T>
void SlabFft<T>::forward(T* data) const {
  MpiApi<T>::run_r2c(fwd_, data);
}

template <class T>
void SlabFft<T>::backward(T* data) const {
  MpiApi<T>::run_c2r(bwd_, data);
}

template class SlabFft<double>;
template class SlabFft<float>;

}  // namespace elliptica::ewald::detail::mpi
