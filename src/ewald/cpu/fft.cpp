// FFT and IFFT stages of the CPU backend (FFTW r2c / c2r, unnormalised; seed 000 algorithm 1,
// steps FFT and IFFT). Plans are made once per prepared geometry; every evaluation executes
// them on its own arrays (the new-array execute functions are thread-safe; FFTW's planner is
// not, so planning, destruction and the wisdom cache hold one process-wide lock).
// FftPlanner::Wisdom (the default): a plan is first asked of FFTW's wisdom (FFTW_WISDOM_ONLY);
// a problem the wisdom lacks is planned with FFTW_MEASURE, timed, and the wisdom and timing are
// written to the per-machine cache (fft_wisdom.cpp), so each problem is measured once per machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"
#include "ewald/cpu/fft_wisdom.hpp"

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
  static void execute_r2c(fftw_plan p, double* in, fftw_complex* out) { fftw_execute_dft_r2c(p, in, out); }
  static void execute_c2r(fftw_plan p, fftw_complex* in, double* out) { fftw_execute_dft_c2r(p, in, out); }
  static void import_wisdom(const std::string& w) { fftw_import_wisdom_from_string(w.c_str()); }
  static std::string export_wisdom() {
    char* w = fftw_export_wisdom_to_string();
    std::string s = w ? w : "";
    std::free(w);
    return s;
  }
  static void forget_wisdom() { fftw_forget_wisdom(); }
  static constexpr Precision precision = Precision::Double;
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
  static void execute_r2c(fftwf_plan p, float* in, fftwf_complex* out) { fftwf_execute_dft_r2c(p, in, out); }
  static void execute_c2r(fftwf_plan p, fftwf_complex* in, float* out) { fftwf_execute_dft_c2r(p, in, out); }
  static void import_wisdom(const std::string& w) { fftwf_import_wisdom_from_string(w.c_str()); }
  static std::string export_wisdom() {
    char* w = fftwf_export_wisdom_to_string();
    std::string s = w ? w : "";
    std::free(w);
    return s;
  }
  static void forget_wisdom() { fftwf_forget_wisdom(); }
  static constexpr Precision precision = Precision::Single;
};

template <class T>
void threads_init() {
  static std::once_flag once;
  std::call_once(once, [] { Api<T>::init_threads(); });
}

// With the lock held: the cache file's wisdom of both precisions imported (once per process),
// so that an export of either precision carries everything the file had.
void import_file_wisdom() {
  WisdomCache& c = WisdomCache::get();
  const std::string wd = c.take_file_wisdom(Precision::Double), ws = c.take_file_wisdom(Precision::Single);
  if (!wd.empty()) Api<double>::import_wisdom(wd);
  if (!ws.empty()) Api<float>::import_wisdom(ws);
}

void save_wisdom() { WisdomCache::get().save(Api<double>::export_wisdom(), Api<float>::export_wisdom()); }

// Wall seconds of one execution of each plan: best of 3 after one warm-up.
template <class T>
std::pair<double, double> time_plans(typename Fftw<T>::plan fwd, typename Fftw<T>::plan bwd, T* real,
                                     typename Fftw<T>::complex* cplx, std::size_t nreal_total) {
  using clock = std::chrono::steady_clock;
  std::fill(real, real + nreal_total, T(0));  // MEASURE left garbage (possibly NaN) in the arrays
  double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = clock::now();
    Api<T>::execute_r2c(fwd, real, cplx);
    auto t1 = clock::now();
    Api<T>::execute_c2r(bwd, cplx, real);
    auto t2 = clock::now();
    if (rep == 0) continue;
    best[0] = std::min(best[0], std::chrono::duration<double>(t1 - t0).count());
    best[1] = std::min(best[1], std::chrono::duration<double>(t2 - t1).count());
  }
  return {best[0], best[1]};
}

// The cache key of a plan's problem (the *_seconds left 0).
template <class T>
FftTiming problem_key(const std::array<int, 3>& M, int n_grid, int n_out, int threads) {
  FftTiming key;
  key.precision = Api<T>::precision;
  key.grid = M;
  key.forward = n_grid;
  key.backward = n_out;
  key.threads = threads;
  return key;
}

}  // namespace

std::mutex& fftw_planner_mutex() { return fftw_mutex(); }

void fftw_plan_serially() {
  threads_init<double>();  // (FFTW's threads are set up once, before any thread count is set)
  Api<double>::plan_with_nthreads(1);
}

template <class T>
FftPlans<T>::FftPlans(const std::array<int, 3>& m, int n_grid, int n_out, int threads, FftPlanner planner) : M(m) {
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
  WisdomCache& cache = WisdomCache::get();
  if (planner == FftPlanner::Wisdom && cache.mode() == WisdomMode::Off) planner = FftPlanner::Estimate;
  auto make = [&](unsigned flags) {
    // FFTW_MEASURE overwrites the arrays while it times candidate plans: these scratch ones
    fwd = Api<T>::r2c(n, n_grid, real, cplx, int(nreal()), int(ncplx()), flags);
    bwd = Api<T>::c2r(n, n_out, cplx, real, int(ncplx()), int(nreal()), flags);
  };
  auto drop = [&] {
    if (fwd) Api<T>::destroy(fwd);
    if (bwd) Api<T>::destroy(bwd);
    fwd = nullptr;
    bwd = nullptr;
  };
  if (planner == FftPlanner::Wisdom) {
    import_file_wisdom();
    make(FFTW_MEASURE | FFTW_WISDOM_ONLY);
    bool changed = false;
    if (!fwd || !bwd) {  // not in the wisdom: measured now, once per machine
      drop();
      make(FFTW_MEASURE);
      changed = true;
    }
    FftTiming key = problem_key<T>(M, n_grid, n_out, threads);
    if (fwd && bwd && !cache.find(key)) {
      const auto [tf, tb] = time_plans<T>(fwd, bwd, real, cplx, nreal() * ncomp);
      key.forward_seconds = tf;
      key.backward_seconds = tb;
      cache.record(key);
      changed = true;
    }
    if (changed) save_wisdom();
  } else {
    make(planner == FftPlanner::Measure ? FFTW_MEASURE : FFTW_ESTIMATE);
  }
  Api<T>::free(real);
  Api<T>::free(cplx);
  if (!fwd || !bwd) {
    drop();
    throw NumericalError("FFTW could not create a plan for the grid");
  }
}

template <class T>
double measured_fft_seconds(const std::array<int, 3>& M, int n_grid, int n_out, int threads) {
  {
    std::lock_guard<std::mutex> lk(fftw_mutex());
    WisdomCache& cache = WisdomCache::get();
    if (cache.mode() == WisdomMode::Off) return std::numeric_limits<double>::quiet_NaN();
    if (const FftTiming* t = cache.find(problem_key<T>(M, n_grid, n_out, threads)))
      return t->forward_seconds + t->backward_seconds;
  }
  // not known: plan it (measured, timed and cached by the constructor), then read the timing
  const double m = double(M[0]) * M[1] * M[2];
  require_memory(double(sizeof(T)) * std::max(n_grid, n_out) * (m + 2.0 * (m / M[2]) * (M[2] / 2 + 1)),
                 "the FFT arrays of a candidate grid");
  FftPlans<T> plans(M, n_grid, n_out, threads, FftPlanner::Wisdom);
  std::lock_guard<std::mutex> lk(fftw_mutex());
  const FftTiming* t = WisdomCache::get().find(problem_key<T>(M, n_grid, n_out, threads));
  return t ? t->forward_seconds + t->backward_seconds : std::numeric_limits<double>::quiet_NaN();
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
template double measured_fft_seconds<float>(const std::array<int, 3>&, int, int, int);
template double measured_fft_seconds<double>(const std::array<int, 3>&, int, int, int);
template struct FftArrays<float>;
template struct FftArrays<double>;

void reset_fft_wisdom() {
  std::lock_guard<std::mutex> lk(fftw_mutex());
  Api<double>::forget_wisdom();
  Api<float>::forget_wisdom();
  WisdomCache::get().reset();
}

bool cpu_fft_wisdom_on() {
  std::lock_guard<std::mutex> lk(fftw_mutex());
  return WisdomCache::get().mode() != WisdomMode::Off;
}

double cpu_fft_seconds(Precision p, const std::array<int, 3>& M, int n_grid, int n_out, int threads) {
  return p == Precision::Single ? measured_fft_seconds<float>(M, n_grid, n_out, threads)
                                : measured_fft_seconds<double>(M, n_grid, n_out, threads);
}

}  // namespace elliptica::ewald::detail

namespace elliptica::ewald {

std::vector<FftTiming> fft_wisdom_entries() {
  std::lock_guard<std::mutex> lk(detail::fftw_planner_mutex());
  return detail::WisdomCache::get().entries();
}

std::vector<FftTiming> rebuild_fft_wisdom(const std::vector<FftTiming>& problems) {
  for (const FftTiming& p : problems) {
    for (int d = 0; d < 3; ++d)
      if (p.grid[d] < 4 || p.grid[d] > 8192)
        throw InvalidArgument("FFT wisdom problem: grid sizes must be in [4, 8192], got " + std::to_string(p.grid[d]));
    if (p.forward < 1 || p.forward > 12 || p.backward < 1 || p.backward > 12)
      throw InvalidArgument("FFT wisdom problem: forward and backward transform counts must be in [1, 12]");
    if (p.threads < 1 || p.threads > 1024)
      throw InvalidArgument("FFT wisdom problem: threads must be in [1, 1024], got " + std::to_string(p.threads));
  }
  std::vector<FftTiming> todo;
  {
    std::lock_guard<std::mutex> lk(detail::fftw_planner_mutex());
    detail::WisdomCache& c = detail::WisdomCache::get();
    todo = c.entries();
    for (const FftTiming& p : problems)
      if (std::none_of(todo.begin(), todo.end(), [&](const FftTiming& t) { return detail::same_problem(t, p); }))
        todo.push_back(p);
    c.clear();
    detail::Api<double>::forget_wisdom();
    detail::Api<float>::forget_wisdom();
    detail::save_wisdom();
  }
  for (const FftTiming& p : todo) {
    if (p.precision == Precision::Single)
      detail::FftPlans<float>(p.grid, p.forward, p.backward, p.threads, FftPlanner::Wisdom);
    else
      detail::FftPlans<double>(p.grid, p.forward, p.backward, p.threads, FftPlanner::Wisdom);
  }
  return fft_wisdom_entries();
}

}  // namespace elliptica::ewald
