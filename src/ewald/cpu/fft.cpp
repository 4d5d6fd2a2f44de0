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
void fftw_threads_init() {
  static std::once_flag once;
  std::call_once(once, [] { fftw_init_threads(); });
}
}  // namespace

FftPlans::FftPlans(const std::array<int, 3>& m, int n_grid, int n_out, int threads) : M(m) {
  fftw_threads_init();
  ncomp = std::max(n_grid, n_out);
  std::lock_guard<std::mutex> lk(fftw_mutex());
  double* real = fftw_alloc_real(nreal() * ncomp);
  fftw_complex* cplx = fftw_alloc_complex(ncplx() * ncomp);
  if (!real || !cplx) {
    fftw_free(real);
    fftw_free(cplx);
    throw ResourceError("out of memory allocating the FFT grid");
  }
  fftw_plan_with_nthreads(threads);
  const int n[3] = {M[0], M[1], M[2]};
  fwd = fftw_plan_many_dft_r2c(3, n, n_grid, real, nullptr, 1, int(nreal()), cplx, nullptr, 1, int(ncplx()),
                               FFTW_ESTIMATE);
  bwd = fftw_plan_many_dft_c2r(3, n, n_out, cplx, nullptr, 1, int(ncplx()), real, nullptr, 1, int(nreal()),
                               FFTW_ESTIMATE);
  fftw_free(real);
  fftw_free(cplx);
  if (!fwd || !bwd) {
    if (fwd) fftw_destroy_plan(fwd);
    if (bwd) fftw_destroy_plan(bwd);
    throw NumericalError("FFTW could not create a plan for the grid");
  }
}

FftPlans::~FftPlans() {
  std::lock_guard<std::mutex> lk(fftw_mutex());
  if (fwd) fftw_destroy_plan(fwd);
  if (bwd) fftw_destroy_plan(bwd);
}

void FftArrays::allocate(const FftPlans& plans) {
  if (real) return;
  real = fftw_alloc_real(plans.nreal() * plans.ncomp);
  cplx = fftw_alloc_complex(plans.ncplx() * plans.ncomp);
  if (!real || !cplx) throw ResourceError("out of memory allocating the FFT grid");
}

FftArrays::~FftArrays() {
  fftw_free(real);
  fftw_free(cplx);
}

void fft_forward(const CpuGeometry& g, CpuWorkspace& ws) { fftw_execute_dft_r2c(g.fft->fwd, ws.grid.real, ws.grid.cplx); }

void fft_backward(const CpuGeometry& g, CpuWorkspace& ws) { fftw_execute_dft_c2r(g.fft->bwd, ws.grid.cplx, ws.grid.real); }

}  // namespace elliptica::ewald::detail
