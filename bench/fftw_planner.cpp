// FFTW planner effort for the spectral Ewald grids (issue 12, Options::fft_measure): time of 4
// float32 r2c and 4 c2r transforms of M^3 (the Laplace field's 4 components) planned with
// FFTW_ESTIMATE (the default) and FFTW_MEASURE, as one plan of howmany = 4 (what the library
// makes) and as 4 plans of one, best of 5, one thread; and the planning time of each.
//   build-bench/bench/fftw_planner > bench/results/ewald_issue12/fftw_planner.txt
#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <initializer_list>

int main() {
  using clock = std::chrono::steady_clock;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("M howmany planner plan_s r2c4_ms c2r4_ms\n");
  for (int M : {64, 84, 90, 96, 100, 108, 128}) {
    for (int how : {4, 1}) {
      for (unsigned fl : {unsigned(FFTW_ESTIMATE), unsigned(FFTW_MEASURE)}) {
        int n[3] = {M, M, M};
        const size_t nr = size_t(M) * M * M, nc = size_t(M) * M * (M / 2 + 1);
        float* r = fftwf_alloc_real(nr * 4);
        fftwf_complex* c = fftwf_alloc_complex(nc * 4);
        fftwf_forget_wisdom();  // every planning from scratch
        const auto t0 = clock::now();
        fftwf_plan pf = fftwf_plan_many_dft_r2c(3, n, how, r, nullptr, 1, int(nr), c, nullptr, 1, int(nc), fl);
        fftwf_plan pb = fftwf_plan_many_dft_c2r(3, n, how, c, nullptr, 1, int(nc), r, nullptr, 1, int(nr), fl);
        const double plan_s = secs(t0, clock::now());
        for (size_t i = 0; i < nr * 4; ++i) r[i] = float(i * 7919 % 1000) * 1e-3f;
        double bf = 1e9, bb = 1e9;
        for (int rep = 0; rep < 5; ++rep) {
          const auto a = clock::now();
          for (int k = 0; k < 4 / how; ++k) fftwf_execute_dft_r2c(pf, r + k * nr, c + k * nc);
          const auto b = clock::now();
          for (int k = 0; k < 4 / how; ++k) fftwf_execute_dft_c2r(pb, c + k * nc, r + k * nr);
          const auto e = clock::now();
          bf = std::min(bf, secs(a, b));
          bb = std::min(bb, secs(b, e));
        }
        std::printf("%d %d %s %.3f %.2f %.2f\n", M, how, fl == FFTW_ESTIMATE ? "estimate" : "measure", plan_s, bf * 1e3,
                    bb * 1e3);
        std::fflush(stdout);
        fftwf_destroy_plan(pf);
        fftwf_destroy_plan(pb);
        fftwf_free(r);
        fftwf_free(c);
      }
    }
  }
}
