// Cost of special functions on one CPU thread, in flop-equivalents: the CPU analogue of seed 000
// Table 1 (section 4, "Special Function Evaluation"), used by bench/ewald_issue12_p2p.py for the
// seed-faithful P2P flop count (--special-costs).
//
// For double precision, the throughput cost per element (ns) of
//   fma, mul, add   register-only, many independent chains on the widest vector (like fma_peak.cpp)
//   div, sqrt       vdivpd / vsqrtpd on the widest vector, y[i] = 1 / x[i], y[i] = sqrt(x[i])
//   exp, erfc       glibc libmvec vector functions (_ZGVeN8v_* for AVX-512, _ZGVdN4v_* for AVX2),
//                   y[i] = exp(-x[i]) (the seed's e^{-x}) and y[i] = erfc(x[i])
//   *_scalar        the scalar glibc exp / erfc, for reference
//   *_256           (AVX-512 builds only) the 256-bit instruction / libmvec AVX2 variant, reference
//   copy            y[i] = x[i] with the same loop: the cost of the array harness alone
// over inputs x uniform in [1e-3, 7] (as in the seed), an array of 4096 (32 KiB) swept repeatedly,
// the results stored to a 4 KiB ring (all in L1); each number is the best of several timed runs. The flop-equivalent is
//   (ns per element of the function) / (ns per element of one FMA) x 2,
// the seed's normalisation ("millicycles of each operation divided by those of a DFMA, times 2").
// By that normalisation mul and add come out near 2 on CPUs where they have the FMA's throughput
// (the seed's flop counts still count them as 1).
//
// Build (no project library needed; -fno-math-errno is harmless, no -ffast-math so that the scalar
// rows stay scalar glibc calls):
//   g++ -O2 -march=native -fno-math-errno bench/special_function_cost.cpp -o /tmp/special_function_cost -lmvec -lm
// Usage: special_function_cost [out.csv] [seconds_per_run=0.05] [runs=7]
// Prints a Markdown table (CPU model, ISA) and writes the CSV if a path is given.
// GCC 12 warns (-Wall) about the deliberately undefined pass-through operand inside its own
// AVX-512 intrinsics (_mm512_undefined_pd); a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#if !(defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)))
#error "special_function_cost needs AVX2+FMA or AVX-512 (compile with -march=native on such a CPU)"
#endif

// glibc libmvec (x86_64 vector function ABI): 'e' = AVX-512, 'd' = AVX2; N8/N4 lanes; v = vector arg.
extern "C" {
#if defined(__AVX512F__)
__m512d _ZGVeN8v_exp(__m512d);
__m512d _ZGVeN8v_erfc(__m512d);
#endif
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_erfc(__m256d);
}

namespace {

constexpr int kN = 4096;     // inputs per sweep
constexpr int kChains = 12;  // independent chains for fma/mul/add (latency 4 x 2 ports = 8 needed)

#if defined(__AVX512F__)
const char* kIsa = "AVX-512";
constexpr int kBits = 512;
struct W {
  using V = __m512d;
  static constexpr int lanes = 8;
  static V set(double x) { return _mm512_set1_pd(x); }
  static V load(const double* p) { return _mm512_load_pd(p); }
  static void store(double* p, V v) { _mm512_store_pd(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V div(V a, V b) { return _mm512_div_pd(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_pd(a); }
  static V exp(V a) { return _ZGVeN8v_exp(a); }
  static V erfc(V a) { return _ZGVeN8v_erfc(a); }
  static double sum(V v) { return _mm512_reduce_add_pd(v); }
  static constexpr const char* fma_name = "vfmadd231pd zmm";
  static constexpr const char* mul_name = "vmulpd zmm";
  static constexpr const char* add_name = "vaddpd zmm";
  static constexpr const char* div_name = "vdivpd zmm";
  static constexpr const char* sqrt_name = "vsqrtpd zmm";
  static constexpr const char* exp_name = "libmvec _ZGVeN8v_exp";
  static constexpr const char* erfc_name = "libmvec _ZGVeN8v_erfc";
  static constexpr const char* copy_name = "vmovapd zmm load + store";
};
#endif

// 256-bit (AVX2): the main width on AVX2-only CPUs, a reference row on AVX-512 ones.
struct Y {
  using V = __m256d;
  static constexpr int lanes = 4;
  static V set(double x) { return _mm256_set1_pd(x); }
  static V load(const double* p) { return _mm256_load_pd(p); }
  static void store(double* p, V v) { _mm256_store_pd(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_pd(a); }
  static V exp(V a) { return _ZGVdN4v_exp(a); }
  static V erfc(V a) { return _ZGVdN4v_erfc(a); }
  static double sum(V v) {
    alignas(32) double t[4];
    _mm256_store_pd(t, v);
    return t[0] + t[1] + t[2] + t[3];
  }
  static constexpr const char* fma_name = "vfmadd231pd ymm";
  static constexpr const char* mul_name = "vmulpd ymm";
  static constexpr const char* add_name = "vaddpd ymm";
  static constexpr const char* div_name = "vdivpd ymm";
  static constexpr const char* sqrt_name = "vsqrtpd ymm";
  static constexpr const char* exp_name = "libmvec _ZGVdN4v_exp";
  static constexpr const char* erfc_name = "libmvec _ZGVdN4v_erfc";
  static constexpr const char* copy_name = "vmovapd ymm load + store";
};

#if !defined(__AVX512F__)
const char* kIsa = "AVX2";
constexpr int kBits = 256;
using W = Y;
#endif

double g_checksum = 0;  // printed, so that no result can be optimised away

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Calibrates the repeat count `iters` of body(iters) (returns elements processed) to about
// `seconds` per timed run, then returns the best ns per element of `runs` timed runs.
template <class Body>
double best_ns(Body body, double seconds, int runs) {
  long iters = 16;
  for (;;) {
    auto t0 = Clock::now();
    body(iters);
    const double s = seconds_since(t0);
    if (s > 0.02) {
      iters = long(double(iters) * seconds / s) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    const double elems = body(iters);
    const double ns = seconds_since(t0) * 1e9 / elems;
    if (ns < best) best = ns;
  }
  return best;
}

enum class ChainOp { Fma, Mul, Add };

// kChains independent dependency chains of one operation in registers: throughput, not latency.
template <class T, ChainOp op>
double chain_body(long iters) {
  using V = typename T::V;
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = T::set(1.0 + 1e-3 * c);
  const V a = T::set(0.999999), b = T::set(1e-7), ainv = T::set(1.0 / 0.999999);
  for (long i = 0; i < iters; ++i) {
    if constexpr (op == ChainOp::Fma) {
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = T::fma(acc[c], a, b);
    } else if constexpr (op == ChainOp::Mul) {  // a then 1/a: the values stay near 1
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = T::mul(acc[c], a);
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = T::mul(acc[c], ainv);
    } else {
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = T::add(acc[c], b);
    }
  }
  double s = 0;
  for (int c = 0; c < kChains; ++c) s += T::sum(acc[c]);
  g_checksum += s;
  const double per_iter = op == ChainOp::Mul ? 2.0 : 1.0;
  return per_iter * kChains * T::lanes * double(iters);
}

// y[i mod kOut] = f(x[i]) over the array, `iters` sweeps: 32 KiB of inputs and a 4 KiB output
// ring stay in L1, so that the harness (one load and one store per vector) costs little. The
// empty asm with a memory clobber after each block keeps the compiler from merging or dropping
// the stores.
constexpr int kOut = 512;
template <class T, class F>
double array_body(long iters, const double* x, double* y, F f) {
  for (long it = 0; it < iters; ++it) {
    for (int i0 = 0; i0 < kN; i0 += kOut) {
      for (int i = 0; i < kOut; i += T::lanes) T::store(y + i, f(T::load(x + i0 + i)));
      asm volatile("" : : "r"(y) : "memory");
    }
  }
  double s = 0;
  for (int i = 0; i < kOut; i += 37) s += y[i];
  g_checksum += s;
  return double(kN) * double(iters);
}

// Scalar glibc calls (no -ffast-math: GCC does not turn these into libmvec calls).
__attribute__((noinline)) double scalar_exp_body(long iters, const double* xn, double* y) {
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < kN; ++i) y[i & (kOut - 1)] = std::exp(xn[i]);
    asm volatile("" : : "r"(y) : "memory");
  }
  g_checksum += y[kOut / 3];
  return double(kN) * double(iters);
}
__attribute__((noinline)) double scalar_erfc_body(long iters, const double* x, double* y) {
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < kN; ++i) y[i & (kOut - 1)] = std::erfc(x[i]);
    asm volatile("" : : "r"(y) : "memory");
  }
  g_checksum += y[kOut / 3];
  return double(kN) * double(iters);
}

struct Row {
  std::string name, function, impl;
  int bits, lanes;
  double ns;
};

template <class T>
void vector_rows(std::vector<Row>& rows, const std::string& suffix, int bits, const double* x, const double* xn,
                 double* y, double sec, int runs) {
  using V = typename T::V;
  const V one = T::set(1.0);
  auto add_row = [&](const char* name, const char* fn, const char* impl, double ns) {
    rows.push_back({std::string(name) + suffix, fn, impl, bits, T::lanes, ns});
  };
  add_row("div", "division 1/x", T::div_name,
          best_ns([&](long n) { return array_body<T>(n, x, y, [&](V v) { return T::div(one, v); }); }, sec, runs));
  add_row("sqrt", "square root", T::sqrt_name,
          best_ns([&](long n) { return array_body<T>(n, x, y, [](V v) { return T::sqrt(v); }); }, sec, runs));
  add_row("exp", "exp(-x)", T::exp_name,
          best_ns([&](long n) { return array_body<T>(n, xn, y, [](V v) { return T::exp(v); }); }, sec, runs));
  add_row("erfc", "erfc(x)", T::erfc_name,
          best_ns([&](long n) { return array_body<T>(n, x, y, [](V v) { return T::erfc(v); }); }, sec, runs));
  add_row("copy", "harness: y = x", T::copy_name,
          best_ns([&](long n) { return array_body<T>(n, x, y, [](V v) { return v; }); }, sec, runs));
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) {
        std::string s = line.substr(p + 1);
        while (!s.empty() && s.front() == ' ') s.erase(0, 1);
        return s;
      }
    }
  return "unknown";
}

std::string csv_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  const char* csv = argc > 1 && std::strcmp(argv[1], "-") != 0 ? argv[1] : nullptr;
  const double sec = argc > 2 ? std::atof(argv[2]) : 0.05;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 7;
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf("usage: %s [out.csv|-] [seconds_per_run=0.05] [runs=7]\n", argv[0]);
    return 0;
  }

  alignas(64) static double x[kN], xn[kN], y[kOut];
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> u(1e-3, 7.0);
  for (int i = 0; i < kN; ++i) {
    x[i] = u(rng);
    xn[i] = -x[i];
  }

  std::vector<Row> rows;
  const double fma_ns = best_ns(chain_body<W, ChainOp::Fma>, sec, runs);
  rows.push_back({"fma", "fused multiply-add", W::fma_name, kBits, W::lanes, fma_ns});
  rows.push_back({"mul", "multiply", W::mul_name, kBits, W::lanes, best_ns(chain_body<W, ChainOp::Mul>, sec, runs)});
  rows.push_back({"add", "add", W::add_name, kBits, W::lanes, best_ns(chain_body<W, ChainOp::Add>, sec, runs)});
  vector_rows<W>(rows, "", kBits, x, xn, y, sec, runs);
  rows.push_back({"exp_scalar", "exp(-x)", "glibc exp (scalar)", 64, 1,
                  best_ns([&](long n) { return scalar_exp_body(n, xn, y); }, sec, runs)});
  rows.push_back({"erfc_scalar", "erfc(x)", "glibc erfc (scalar)", 64, 1,
                  best_ns([&](long n) { return scalar_erfc_body(n, x, y); }, sec, runs)});
#if defined(__AVX512F__)
  vector_rows<Y>(rows, "_256", 256, x, xn, y, sec, runs);
#endif

  const std::string cpu = cpu_model();
  std::printf("# Special-function cost, one thread, double precision (CPU analogue of seed 000 Table 1)\n\n");
  std::printf("CPU: %s; widest vector ISA used: %s (%d-bit, %d doubles); inputs uniform in [1e-3, 7], "
              "%d per sweep; best of %d runs of ~%.3g s. flop-eq = ns/element / ns/element of FMA x 2 "
              "(FMA: %.4g ns/element = %.1f GFLOP/s).\n\n",
              cpu.c_str(), kIsa, kBits, W::lanes, kN, runs, sec, fma_ns, 2.0 / fma_ns);
  std::printf("| name | function | implementation | bits | ns/element | flop-eq |\n|---|---|---|---|---|---|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %s | %d | %.4g | %.1f |\n", r.name.c_str(), r.function.c_str(), r.impl.c_str(), r.bits,
                r.ns, r.ns / fma_ns * 2.0);
  std::printf("\nchecksum %.6g\n", g_checksum);
  if (csv) {
    std::ofstream f(csv);
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", csv);
      return 1;
    }
    f << "name,function,implementation,width_bits,lanes,ns_per_element,flop_equivalent,fma_ns_per_element,isa,cpu\n";
    char buf[64];
    for (const Row& r : rows) {
      f << r.name << ',' << csv_quote(r.function) << ',' << csv_quote(r.impl) << ',' << r.bits << ',' << r.lanes << ',';
      std::snprintf(buf, sizeof buf, "%.6g,%.6g,%.6g", r.ns, r.ns / fma_ns * 2.0, fma_ns);
      f << buf << ',' << csv_quote(kIsa) << ',' << csv_quote(cpu) << '\n';
    }
    std::fprintf(stderr, "wrote %s\n", csv);
  }
  return 0;
}
