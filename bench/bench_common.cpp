#include "bench_common.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <stdexcept>

#include "elliptica/core/text.hpp"

namespace elliptica::bench {

std::vector<double> uniform_points(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::vector<double> x(3 * n);
  for (auto& v : x) v = U(gen);
  return x;
}

std::vector<double> neutral_strengths(std::size_t n, int comps, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<double> q(n * comps);
  for (auto& v : q) v = U(gen);
  for (int c = 0; c < comps; ++c) {
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += q[i * comps + c];
    mean /= double(n);
    for (std::size_t i = 0; i < n; ++i) q[i * comps + c] -= mean;
  }
  return q;
}

double peak_rss_mib() {
  // VmHWM (the high-water mark of this process image's resident set) rather than ru_maxrss:
  // Linux carries ru_maxrss across execve, so a driver started by a big parent process (e.g. the
  // Python runner after a large FINUFFT transform) would report the parent's RSS at fork time.
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

Args::Args(int argc, char** argv, const std::vector<std::string>& valued, const std::vector<std::string>& flags) {
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "' (options are --key value)");
    std::string key = a.substr(2);
    if (in(flags, key)) {
      kv_[key] = std::string(1, '1');  // (not = "1": GCC 12 -Wrestrict false positive)
    } else if (in(valued, key)) {
      if (i + 1 >= argc) throw std::invalid_argument("option --" + key + " needs a value");
      kv_[key] = argv[++i];
    } else {
      std::string allowed;
      for (auto& k : valued) allowed += " --" + k + " VALUE";
      for (auto& k : flags) allowed += " --" + k;
      throw std::invalid_argument("unknown option --" + key + "; allowed:" + allowed);
    }
  }
}

std::string Args::str(const std::string& key, const std::string& def) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? def : it->second;
}

double Args::num(const std::string& key, double def) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return def;
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(it->second, &pos);
  } catch (...) {
    pos = 0;
  }
  if (pos != it->second.size() || !std::isfinite(v))
    throw std::invalid_argument("option --" + key + ": '" + it->second + "' is not a finite number");
  return v;
}

long long Args::integer(const std::string& key, long long def) const {
  const double v = num(key, double(def));
  if (v != std::floor(v) || std::abs(v) > 9e15)
    throw std::invalid_argument("option --" + key + ": '" + str(key, "") + "' is not an integer");
  return static_cast<long long>(v);
}

std::vector<int> Args::int_list(const std::string& key, const std::string& def) const {
  std::vector<int> out;
  std::string what = "--";
  what += key;
  for (const std::string& t : text::split(str(key, def), ',')) out.push_back(text::to_int(t, what));
  return out;
}

double best_seconds(const std::function<void()>& f, double seconds, int repeats) {
  f();
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    int k = 0;
    const double t0 = now_s();
    double el = 0;
    do {
      f();
      ++k;
      el = now_s() - t0;
    } while (el < seconds);
    best = std::min(best, el / k);
  }
  return best;
}

}  // namespace elliptica::bench
