// FMA peak of one thread (issue 12): many independent FMA chains on the widest vectors the
// compiler targets (-O3 -march=native: AVX-512 when __AVX512F__, else AVX2/FMA, else SSE/scalar).
// Prints GFLOP/s for double and float (1 FMA = 2 flops), best of several timed runs.
// Usage: fma_peak [seconds_per_run=0.3] [runs=5]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

constexpr int kChains = 12;  // independent accumulators (FMA latency 4 cycles x 2 ports = 8 needed)

#if defined(__AVX512F__)
const char* kIsa = "AVX-512 (512-bit, _mm512_fmadd)";
struct D { using V = __m512d; static V set(double x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static double sum(V v) { alignas(64) double t[8]; _mm512_store_pd(t, v); double s = 0; for (double x : t) s += x; return s; } static constexpr int lanes = 8; };
struct F { using V = __m512; static V set(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) { alignas(64) float t[16]; _mm512_store_ps(t, v); float s = 0; for (float x : t) s += x; return s; } static constexpr int lanes = 16; };
#elif defined(__AVX2__) && defined(__FMA__)
const char* kIsa = "AVX2 (256-bit, _mm256_fmadd)";
struct D { using V = __m256d; static V set(double x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static double sum(V v) { alignas(32) double t[4]; _mm256_store_pd(t, v); return t[0] + t[1] + t[2] + t[3]; }
  static constexpr int lanes = 4; };
struct F { using V = __m256; static V set(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) { alignas(32) float t[8]; _mm256_store_ps(t, v); float s = 0; for (float x : t) s += x; return s; }
  static constexpr int lanes = 8; };
#else
const char* kIsa = "scalar (no AVX2/FMA at compile time)";
struct D { using V = double; static V set(double x) { return x; } static V fma(V a, V b, V c) { return a * b + c; }
  static double sum(V v) { return v; } static constexpr int lanes = 1; };
struct F { using V = float; static V set(float x) { return x; } static V fma(V a, V b, V c) { return a * b + c; }
  static float sum(V v) { return v; } static constexpr int lanes = 1; };
#endif

template <class T, class S>
double run(long iters, S seed, double* checksum) {
  using V = typename T::V;
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = T::set(seed * S(c + 1));
  const V a = T::set(S(0.999999));
  const V b = T::set(S(1e-7));
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = T::fma(acc[c], a, b);
  }
  auto t1 = std::chrono::steady_clock::now();
  S s = 0;
  for (int c = 0; c < kChains; ++c) s += T::sum(acc[c]);
  *checksum += double(s);
  double sec = std::chrono::duration<double>(t1 - t0).count();
  return 2.0 * T::lanes * kChains * double(iters) / sec / 1e9;
}

template <class T, class S>
double best(double seconds, int runs, double* checksum) {
  long iters = 1000000;
  for (;;) {  // calibrate
    auto t0 = std::chrono::steady_clock::now();
    run<T, S>(iters, S(1e-3), checksum);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sec > 0.05) { iters = long(double(iters) * seconds / sec) + 1; break; }
    iters *= 4;
  }
  double g = 0;
  for (int r = 0; r < runs; ++r) { double x = run<T, S>(iters, S(1e-3), checksum); if (x > g) g = x; }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.3;
  int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  double checksum = 0;
  double gd = best<D, double>(seconds, runs, &checksum);
  double gf = best<F, float>(seconds, runs, &checksum);
  std::printf("isa,chains,double_gflops,float_gflops,checksum\n");
  std::printf("\"%s\",%d,%.2f,%.2f,%.6g\n", kIsa, kChains, gd, gf, checksum);
  return 0;
}
