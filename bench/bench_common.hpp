#pragma once
/// @file bench_common.hpp
/// Shared helpers of the benchmark programs in bench/: deterministic test data, peak memory,
/// a wall clock and a small "--key value" command-line parser with clear errors.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace elliptica::bench {

/// n points uniform in the unit cube [0,1)^3, row-major (n,3); std::mt19937_64(seed).
std::vector<double> uniform_points(std::size_t n, std::uint64_t seed);

/// n*comps strengths uniform in [-1,1] with the mean of each component subtracted (neutral
/// system / zero net force); std::mt19937_64(seed).
std::vector<double> neutral_strengths(std::size_t n, int comps, std::uint64_t seed);

/// Peak resident set size of this process image so far, in MiB (/proc/self/status VmHWM;
/// getrusage ru_maxrss where that is unavailable).
double peak_rss_mib();

/// Seconds on a monotonic clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Seconds per call of f: one warm-up call (pages, caches), then the best over `repeats` timings
/// of back-to-back calls for at least `seconds` each.
double best_seconds(const std::function<void()>& f, double seconds, int repeats);

/// "--key value" pairs and bare "--flag"s. Unknown keys are an error (listed with the allowed ones).
class Args {
 public:
  /// `valued`: keys that take a value; `flags`: keys without one. Throws std::invalid_argument.
  Args(int argc, char** argv, const std::vector<std::string>& valued, const std::vector<std::string>& flags);
  bool has(const std::string& key) const { return kv_.count(key) > 0; }
  std::string str(const std::string& key, const std::string& def) const;
  double num(const std::string& key, double def) const;
  long long integer(const std::string& key, long long def) const;
  /// The value of key as a comma-separated list of integers ("3,5,7"), def when absent; throws
  /// elliptica::InvalidArgument naming --key for a malformed entry.
  std::vector<int> int_list(const std::string& key, const std::string& def) const;

 private:
  std::map<std::string, std::string> kv_;
};

}  // namespace elliptica::bench
