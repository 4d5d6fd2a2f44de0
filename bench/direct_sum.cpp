/// @file direct_sum.cpp
/// The direct O(N^2) sum for the crossover study: a plain pairwise minimum-image kernel sum in the
/// unit cube (every target against every other source, nearest periodic image only), OpenMP over
/// the targets, double precision, vectorisable inner loop.
///
///   direct_sum --kernel laplace|stokeslet --n N --threads T [--repeats R] [--seed S] [--header]
///
/// Laplace: phi_i = sum_{j != i} q_j / r_ij. Stokeslet: u_i = 1/(8 pi) sum_{j != i} (f_j/r + r (r.f_j)/r^3).
/// This is NOT the periodic Ewald sum (which needs many images or a split); it is the cheapest
/// possible direct O(N^2) pass, so the crossover N it gives is a LOWER bound on the crossover with
/// any converged direct periodic sum (e.g. the classical Ewald reference in tests/reference/).
/// Prints one CSV row: kernel,N,threads,repeats,best_s,checksum,peak_rss_mib (progress on stderr).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"

using namespace elliptica::bench;

namespace {

// Minimum image in the unit cube for d in (-1, 1).
inline double min_image(double d) {
  d -= (d > 0.5) ? 1.0 : 0.0;
  d += (d < -0.5) ? 1.0 : 0.0;
  return d;
}

void laplace(const std::vector<double>& x, const std::vector<double>& q, std::vector<double>& out, int threads) {
  const std::size_t n = q.size();
  std::vector<double> X(n), Y(n), Z(n);
  for (std::size_t j = 0; j < n; ++j) X[j] = x[3 * j], Y[j] = x[3 * j + 1], Z[j] = x[3 * j + 2];
  out.assign(n, 0.0);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = X[i], yi = Y[i], zi = Z[i];
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = min_image(xi - X[j]), dy = min_image(yi - Y[j]), dz = min_image(zi - Z[j]);
      const double r2 = dx * dx + dy * dy + dz * dz;
      const double inv = r2 > 0 ? 1.0 / std::sqrt(r2) : 0.0;  // j == i excluded
      s += q[j] * inv;
    }
    out[i] = s;
  }
}

void stokeslet(const std::vector<double>& x, const std::vector<double>& f, std::vector<double>& out, int threads) {
  const std::size_t n = f.size() / 3;
  std::vector<double> X(n), Y(n), Z(n), F0(n), F1(n), F2(n);
  for (std::size_t j = 0; j < n; ++j) {
    X[j] = x[3 * j], Y[j] = x[3 * j + 1], Z[j] = x[3 * j + 2];
    F0[j] = f[3 * j], F1[j] = f[3 * j + 1], F2[j] = f[3 * j + 2];
  }
  out.assign(3 * n, 0.0);
  const double scale = 1.0 / (8.0 * M_PI);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = X[i], yi = Y[i], zi = Z[i];
    double u0 = 0, u1 = 0, u2 = 0;
#pragma omp simd reduction(+ : u0, u1, u2)
    for (std::size_t j = 0; j < n; ++j) {
      const double dx = min_image(xi - X[j]), dy = min_image(yi - Y[j]), dz = min_image(zi - Z[j]);
      const double r2 = dx * dx + dy * dy + dz * dz;
      const double inv = r2 > 0 ? 1.0 / std::sqrt(r2) : 0.0;
      const double inv3 = inv * inv * inv;
      const double rf = (dx * F0[j] + dy * F1[j] + dz * F2[j]) * inv3;
      u0 += F0[j] * inv + dx * rf;
      u1 += F1[j] * inv + dy * rf;
      u2 += F2[j] * inv + dz * rf;
    }
    out[3 * i] = u0 * scale, out[3 * i + 1] = u1 * scale, out[3 * i + 2] = u2 * scale;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string kernel;
  std::size_t n = 0;
  int threads = 1, repeats = 1;
  unsigned long long seed = 1;
  bool header = false;
  try {
    Args a(argc, argv, {"kernel", "n", "threads", "repeats", "seed"}, {"header"});
    kernel = a.str("kernel", "laplace");
    n = static_cast<std::size_t>(a.integer("n", 1000));
    threads = static_cast<int>(a.integer("threads", 1));
    repeats = static_cast<int>(a.integer("repeats", 3));
    seed = static_cast<unsigned long long>(a.integer("seed", 1));
    header = a.has("header");
    if (kernel != "laplace" && kernel != "stokeslet")
      throw std::invalid_argument("--kernel must be laplace or stokeslet, got '" + kernel + "'");
    if (n < 2) throw std::invalid_argument("--n must be >= 2");
    if (threads < 1 || repeats < 1) throw std::invalid_argument("--threads and --repeats must be >= 1");
  } catch (const std::exception& e) {
    std::cerr << "direct_sum: " << e.what() << "\n";
    return 2;
  }
  const int comps = kernel == "laplace" ? 1 : 3;
  // Same data as ewald_scaling with the same seed.
  const std::vector<double> x = uniform_points(n, seed);
  const std::vector<double> q = neutral_strengths(n, comps, seed + 1000003ULL);
  std::vector<double> out;
  double best = std::numeric_limits<double>::infinity();
  std::cerr << "[direct_sum] " << kernel << " N=" << n << " threads=" << threads << ":" << std::flush;
  for (int rep = 0; rep < repeats; ++rep) {
    const double t0 = now_s();
    if (comps == 1)
      laplace(x, q, out, threads);
    else
      stokeslet(x, q, out, threads);
    const double t = now_s() - t0;
    best = std::min(best, t);
    std::cerr << " " << t << " s" << std::flush;
  }
  std::cerr << "\n";
  double checksum = 0;
  for (double v : out) checksum += v * v;
  if (header) std::cout << "kernel,N,threads,repeats,best_s,checksum,peak_rss_mib\n";
  std::cout << kernel << "," << n << "," << threads << "," << repeats << "," << best << ","
            << std::sqrt(checksum / double(out.size())) << "," << peak_rss_mib() << "\n";
  return 0;
}
