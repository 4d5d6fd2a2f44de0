// Calibration of the parameter choice's cost model (seed 000, section 5: a performance model per
// stage whose constants are measured on the machine). The stages of the CPU backend are timed on
// one thread on small problems (uniform random points in the unit cube), and the constants of
// model_cost (params.cpp; the terms are listed at CostConstants in ewald.hpp) are fitted by
// non-negative least squares on relative residuals:
//   P2P, per kernel variant: eight cell-list layouts (0.75 to 28 sources per cell, r_c 1.85 and 2
//     cell widths) separate the per-cell, per-column (a target's run set-up), per-distance-test
//     and per-pair costs (the first two from Laplace, shared by the kernels); the distance tests
//     and pairs are the backend's own counts;
//   P2G / G2P: window supports P = 4 ... 10, 1 to 12 components, and a run with few points on a
//     large grid (the padded grid's fold / unfold);
//   FFT: per M log2 M and component at M = 32^3 ... 128^3 (its growth with the size);
//   CNV: per half-spectrum mode and component (1 + 1 to 12 + 3 components).
// About 2-4 s per precision (up to about 0.5 GB: the far field out of cache). The results are cached per machine in a JSON file keyed by the
// CPU model, the SIMD target, the library version, the build and the precision (written
// atomically: a temporary file renamed into place); ELLIPTICA_EWALD_COSTS chooses between the
// cache (auto), the built-in constants (builtin) and a file.
#include "ewald/calibrate.hpp"

#include "elliptica/core/resources.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <variant>

#include "elliptica/core/error.hpp"
#include "elliptica/core/record.hpp"
#include "ewald/backend.hpp"
#include "ewald/cpu/p2p_simd.hpp"
#include "ewald/internal.hpp"
#include "ewald/kernel_traits.hpp"

#ifndef ELLIPTICA_VERSION_STRING
#define ELLIPTICA_VERSION_STRING "unknown"
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ELLIPTICA_CAL_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define ELLIPTICA_CAL_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ELLIPTICA_CAL_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define ELLIPTICA_CAL_TSAN 1
#endif

namespace elliptica::ewald {

namespace {

constexpr const char* kVariantNames[kCostVariants] = {"laplace",           "laplace-field", "stokeslet",
                                                      "stokeslet-pressure", "stresslet",     "stokes-combined"};
constexpr const char* kFormatTag = "elliptica-ewald-costs";

Kernel variant_kernel(int v) {
  switch (v) {
    case 0:
    case 1: return Kernel::Laplace;
    case 2:
    case 3: return Kernel::Stokeslet;
    case 4: return Kernel::Stresslet;
    default: return Kernel::StokesCombined;
  }
}
bool variant_second(int v) { return v == 1 || v == 3; }

const char* build_flavour() {
#if defined(ELLIPTICA_CAL_TSAN)
  return "tsan";
#elif defined(ELLIPTICA_CAL_ASAN)
  return "asan";
#elif defined(NDEBUG)
  return "release";
#else
  return "debug";
#endif
}
constexpr bool kSanitized =
#if defined(ELLIPTICA_CAL_TSAN) || defined(ELLIPTICA_CAL_ASAN)
    true;
#else
    false;
#endif

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k == "model name" || k == "Model" || k == "cpu model") {
      std::string v = line.substr(colon + 1);
      const auto b = v.find_first_not_of(" \t");
      v = b == std::string::npos ? "" : v.substr(b);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
      if (!v.empty()) return v;
    }
  }
  return "unknown";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// ---- process state --------------------------------------------------------------------------
enum class Mode { Auto, Builtin, File };

Mode env_mode(std::string& path) {
  const char* e = std::getenv("ELLIPTICA_EWALD_COSTS");
  const std::string s = e ? e : "";
  if (s.empty() || s == "auto") return Mode::Auto;
  if (s == "builtin") return Mode::Builtin;
  path = s;
  return Mode::File;
}

struct State {
  std::mutex mu;
  std::optional<CostConstants> c[2];
};
State& state() {
  static State s;
  return s;
}
int slot(Precision p) { return p == Precision::Single ? 1 : 0; }

std::string read_text(const std::string& path, std::size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IOError("cannot open " + path);
  std::string s;
  char buf[4096];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    s.append(buf, static_cast<std::size_t>(f.gcount()));
    if (s.size() > max_bytes) throw IOError(path + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (f.bad()) throw IOError("cannot read " + path);
  return s;
}

// Entries of the file (valid ones), or nothing when it is missing or corrupt.
std::vector<CostConstants> read_entries_quietly(const std::string& path) {
  try {
    return detail::parse_cost_constants(read_text(path, 1 << 20));
  } catch (...) {
    return {};
  }
}

// Merges `c` into the cache file (replacing an entry with the same key); false when it cannot be
// written (the caller keeps the constants in memory).
bool write_cache_entry(const std::string& path, const CostConstants& c) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::vector<CostConstants> all = read_entries_quietly(path);
    all.erase(std::remove_if(all.begin(), all.end(), [&](const CostConstants& e) { return detail::same_key(e, c); }),
              all.end());
    all.push_back(c);
    if (all.size() > 64) all.erase(all.begin(), all.end() - 64);  // entries of other builds and versions
    write_cost_constants(path, all);
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

int cost_variant(Kernel k, bool second) {
  switch (k) {
    case Kernel::Laplace: return second ? 1 : 0;
    case Kernel::Stokeslet: return second ? 3 : 2;
    case Kernel::Stresslet: return 4;
    case Kernel::StokesCombined: return 5;
  }
  return 0;
}

std::string cost_variant_name(int v) {
  if (v < 0 || v >= kCostVariants)
    throw InvalidArgument("cost model variant must be in [0, " + std::to_string(kCostVariants) + "), got " +
                          std::to_string(v));
  return kVariantNames[v];
}

CostConstants builtin_cost_constants(Precision p) {
  // Seconds of one core per unit of work, float64, measured with calibrate_costs() on the
  // development machine (AMD EPYC, AVX-512, one thread; docs/ewald.md "Cost model"); float32
  // is taken as twice as fast in the stages that vectorise. Deterministic by design.
  CostConstants c;
  c.precision = p;
  c.source = "builtin";
  c.cpu = "any";
  c.simd_target = "any";
  c.version = ELLIPTICA_VERSION_STRING;
  c.build = build_flavour();
  const double f = p == Precision::Single ? 0.5 : 1.0;
  c.p2p_cell = 1e-9;  // scalar work: the same in both precisions
  c.p2p_column = 10e-9;
  for (int v = 0; v < kCostVariants; ++v) {
    detail::with_traits(variant_kernel(v), variant_second(v), [&](auto tr) {
      using K = decltype(tr);
      c.p2p_check[v] = f * K::check_seconds;
      c.p2p_pair[v] = f * K::pair_seconds;
    });
  }
  c.spread = f * 0.35e-9;
  c.interp = f * 0.35e-9;
  c.p2g_scale.fill(1.0);
  c.g2p_scale.fill(1.0);
  c.window_row = 2.0e-9;
  c.grid_pass = f * 1.5e-9;
  c.fft = f * 0.7e-9;
  c.fft_growth = 0.05;
  c.cnv_mode = 8e-9;
  c.cnv_component = 1.5e-9;
  c.window_eval = 15e-9;
  return c;
}

int cost_model_revision() { return detail::kCostModelRevision; }

std::string cost_cache_file() {
  namespace fs = std::filesystem;
  auto env = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v ? v : "";
  };
  fs::path dir;
  if (!env("ELLIPTICA_CACHE_DIR").empty())
    dir = env("ELLIPTICA_CACHE_DIR");
  else if (!env("XDG_CACHE_HOME").empty())
    dir = fs::path(env("XDG_CACHE_HOME")) / "elliptica";
  else if (!env("HOME").empty())
    dir = fs::path(env("HOME")) / ".cache" / "elliptica";
  else
    return "";
  return (dir / "ewald_costs.json").string();
}

std::string cost_constants_json(const CostConstants& c, int indent) {
  const std::string in(static_cast<std::size_t>(std::max(0, indent)), ' ');
  std::ostringstream os;
  auto kv = [&](const char* k, const std::string& v, bool last = false) {
    os << in << "  \"" << k << "\": " << v << (last ? "\n" : ",\n");
  };
  auto per_variant = [&](const std::array<double, kCostVariants>& a) {
    std::string s = "{";
    for (int v = 0; v < kCostVariants; ++v) s += std::string(v ? ", " : "") + "\"" + kVariantNames[v] + "\": " + jnum(a[v]);
    return s + "}";
  };
  os << "{\n";
  kv("precision", json_quote(to_string(c.precision)));
  kv("source", json_quote(c.source));
  kv("file", c.file.empty() ? "null" : json_quote(c.file));
  kv("cpu", json_quote(c.cpu));
  kv("simd_target", json_quote(c.simd_target));
  kv("version", json_quote(c.version));
  kv("build", json_quote(c.build));
  kv("model", std::to_string(detail::kCostModelRevision));
  kv("measured_at", json_quote(c.measured_at));
  kv("measure_seconds", jnum(c.measure_seconds));
  kv("p2p_cell", jnum(c.p2p_cell));
  kv("p2p_column", jnum(c.p2p_column));
  kv("p2p_check", per_variant(c.p2p_check));
  kv("p2p_pair", per_variant(c.p2p_pair));
  kv("spread", jnum(c.spread));
  kv("interp", jnum(c.interp));
  kv("p2g_scale", per_variant(c.p2g_scale));
  kv("g2p_scale", per_variant(c.g2p_scale));
  kv("window_row", jnum(c.window_row));
  kv("grid_pass", jnum(c.grid_pass));
  kv("fft", jnum(c.fft));
  kv("fft_growth", jnum(c.fft_growth));
  kv("cnv_mode", jnum(c.cnv_mode));
  kv("cnv_component", jnum(c.cnv_component));
  kv("window_eval", jnum(c.window_eval), true);
  os << in << "}";
  return os.str();
}

std::string cost_constants_file_json(const std::vector<CostConstants>& entries) {
  std::ostringstream os;
  os << "{\n  \"format\": \"" << kFormatTag << "\",\n  \"format_version\": 1,\n  \"entries\": [";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CostConstants e = entries[i];
    e.file.clear();
    os << (i ? ",\n    " : "\n    ") << cost_constants_json(e, 4);
  }
  os << (entries.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return os.str();
}

void write_cost_constants(const std::string& path, const std::vector<CostConstants>& entries) {
  detail::write_file_atomically(path, cost_constants_file_json(entries));
}

namespace detail {

void write_file_atomically(const std::string& path, const std::string& text) {
  // temporary file in the same directory, renamed into place (atomic on POSIX file systems)
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw IOError("cannot write " + tmp);
    f << text;
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw IOError("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw IOError("cannot rename " + tmp + " to " + path);
  }
}

std::string cpu_model_name() { return cpu_model(); }

CostConstants machine_key(Precision p) {
  CostConstants c = builtin_cost_constants(p);
  c.source = "measured";
  c.cpu = cpu_model();
  c.simd_target = simd_target();
  return c;
}

bool same_key(const CostConstants& a, const CostConstants& b) {
  return a.precision == b.precision && a.cpu == b.cpu && a.simd_target == b.simd_target && a.version == b.version &&
         a.build == b.build;
}

bool valid_constants(const CostConstants& c) {
  auto ok = [](double v) { return std::isfinite(v) && v > 0; };
  for (int v = 0; v < kCostVariants; ++v)
    if (!ok(c.p2p_check[v]) || !ok(c.p2p_pair[v]) || !ok(c.p2g_scale[v]) || !ok(c.g2p_scale[v])) return false;
  for (double v : {c.p2p_cell, c.p2p_column, c.spread, c.interp, c.window_row, c.grid_pass, c.fft, c.cnv_mode,
                   c.cnv_component, c.window_eval})
    if (!ok(v)) return false;
  return std::isfinite(c.fft_growth) && c.fft_growth >= 0;
}

std::vector<CostConstants> parse_cost_constants(const std::string& text) {
  using nlohmann::json;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw IOError(std::string("cost-constants file is not valid JSON: ") + e.what());
  }
  if (!root.is_object() || !root.contains("format") || root["format"] != kFormatTag)
    throw IOError(std::string("not an elliptica cost-constants file (no \"format\": \"") + kFormatTag + "\")");
  if (!root.contains("entries") || !root["entries"].is_array())
    throw IOError("cost-constants file without an \"entries\" array");
  std::vector<CostConstants> out;
  for (const json& e : root["entries"]) {
    if (!e.is_object()) continue;
    CostConstants c;
    auto str = [&](const char* k, std::string& dst) {
      const auto it = e.find(k);
      if (it == e.end() || !it->is_string()) return false;
      dst = it->get<std::string>();
      return true;
    };
    auto number = [](const json& v, double& dst) {
      if (!v.is_number()) return false;
      dst = v.get<double>();
      return true;
    };
    auto num = [&](const char* k, double& dst) {
      const auto it = e.find(k);
      return it != e.end() && number(*it, dst);
    };
    std::string prec;
    if (!str("precision", prec) || (prec != "single" && prec != "double")) continue;
    c.precision = prec == "single" ? Precision::Single : Precision::Double;
    double model = -1;
    if (!num("model", model) || model != kCostModelRevision) continue;
    bool ok = str("cpu", c.cpu) && str("simd_target", c.simd_target) && str("version", c.version) &&
              str("build", c.build);
    str("source", c.source);
    str("measured_at", c.measured_at);
    num("measure_seconds", c.measure_seconds);
    ok = ok && num("p2p_cell", c.p2p_cell) && num("p2p_column", c.p2p_column) && num("spread", c.spread) &&
         num("interp", c.interp) && num("window_row", c.window_row) && num("grid_pass", c.grid_pass) &&
         num("fft", c.fft) && num("fft_growth", c.fft_growth) && num("cnv_mode", c.cnv_mode) &&
         num("cnv_component", c.cnv_component) && num("window_eval", c.window_eval);
    for (auto [k, dst] : {std::pair<const char*, std::array<double, kCostVariants>*>{"p2p_check", &c.p2p_check},
                          {"p2p_pair", &c.p2p_pair},
                          {"p2g_scale", &c.p2g_scale},
                          {"g2p_scale", &c.g2p_scale}}) {
      const auto it = e.find(k);
      if (it == e.end() || !it->is_object()) ok = false;
      for (int v = 0; v < kCostVariants && ok; ++v) {
        const auto x = it->find(kVariantNames[v]);
        ok = x != it->end() && number(*x, (*dst)[v]);
      }
    }
    if (ok && valid_constants(c)) {
      for (int v = 0; v < kCostVariants; ++v) {  // the measurement's range (measure_into)
        c.p2g_scale[v] = std::clamp(c.p2g_scale[v], kFarScaleMin, kFarScaleMax);
        c.g2p_scale[v] = std::clamp(c.g2p_scale[v], kFarScaleMin, kFarScaleMax);
      }
      out.push_back(c);
    }
  }
  return out;
}

// ---- measurement ------------------------------------------------------------------------------
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Non-negative least squares for a few unknowns (<= 5): the best (relative residuals) among the
// solutions of every subset of free unknowns whose values are all >= 0.
std::vector<double> nnls(const std::vector<std::vector<double>>& A, const std::vector<double>& b) {
  const std::size_t m = A.size(), n = m ? A[0].size() : 0;
  std::vector<double> best(n, 0.0);
  double best_res = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<int> idx;
    for (std::size_t j = 0; j < n; ++j)
      if (mask & (1u << j)) idx.push_back(static_cast<int>(j));
    const std::size_t k = idx.size();
    // normal equations of the weighted rows (weight 1 / b_i: relative residuals)
    std::vector<double> N(k * k, 0.0), r(k, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      const double w = 1.0 / std::max(b[i], 1e-12);
      for (std::size_t p = 0; p < k; ++p) {
        r[p] += A[i][idx[p]] * w * b[i] * w;
        for (std::size_t q = 0; q < k; ++q) N[p * k + q] += A[i][idx[p]] * w * A[i][idx[q]] * w;
      }
    }
    // Gaussian elimination with partial pivoting
    bool singular = false;
    for (std::size_t c = 0; c < k && !singular; ++c) {
      std::size_t piv = c;
      for (std::size_t rr = c + 1; rr < k; ++rr)
        if (std::abs(N[rr * k + c]) > std::abs(N[piv * k + c])) piv = rr;
      if (!(std::abs(N[piv * k + c]) > 1e-300)) {
        singular = true;
        break;
      }
      if (piv != c) {
        for (std::size_t q = 0; q < k; ++q) std::swap(N[c * k + q], N[piv * k + q]);
        std::swap(r[c], r[piv]);
      }
      for (std::size_t rr = c + 1; rr < k; ++rr) {
        const double f = N[rr * k + c] / N[c * k + c];
        for (std::size_t q = c; q < k; ++q) N[rr * k + q] -= f * N[c * k + q];
        r[rr] -= f * r[c];
      }
    }
    if (singular) continue;
    std::vector<double> x(k);
    for (std::size_t c = k; c-- > 0;) {
      double s = r[c];
      for (std::size_t q = c + 1; q < k; ++q) s -= N[c * k + q] * x[q];
      x[c] = s / N[c * k + c];
    }
    if (std::any_of(x.begin(), x.end(), [](double v) { return !(v >= 0) || !std::isfinite(v); })) continue;
    std::vector<double> full(n, 0.0);
    for (std::size_t p = 0; p < k; ++p) full[idx[p]] = x[p];
    double res = 0;
    for (std::size_t i = 0; i < m; ++i) {
      double s = 0;
      for (std::size_t j = 0; j < n; ++j) s += A[i][j] * full[j];
      const double e = (s - b[i]) / std::max(b[i], 1e-12);
      res += e * e;
    }
    if (res < best_res * (1 - 1e-9)) {
      best_res = res;
      best = full;
    }
  }
  return best;
}

// Median of measured / modelled-with-builtin-constants: the machine's speed relative to the
// built-in constants, used for a constant the fit could not determine (it came out 0).
double median_ratio(const std::vector<std::vector<double>>& A, const std::vector<double>& b, const std::vector<double>& x0) {
  std::vector<double> r;
  for (std::size_t i = 0; i < A.size(); ++i) {
    double s = 0;
    for (std::size_t j = 0; j < x0.size(); ++j) s += A[i][j] * x0[j];
    if (s > 0 && b[i] > 0) r.push_back(b[i] / s);
  }
  if (r.empty()) return 1.0;
  std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
  return r[r.size() / 2];
}

// x = fit. A term the fit sets to 0 costs (next to) nothing on this machine: it keeps 1e-3 of
// the built-in value times the speed ratio (the constants stay > 0); when the fit failed
// altogether (all 0), the built-in values times the speed ratio.
void fill_undetermined(std::vector<double>& x, const std::vector<double>& x0, double ratio) {
  const bool all_zero = std::none_of(x.begin(), x.end(), [](double v) { return v > 0; });
  for (std::size_t j = 0; j < x.size(); ++j)
    if (!(x[j] > 0)) x[j] = x0[j] * ratio * (all_zero ? 1.0 : 1e-3);
}

struct Problem {
  PointSet pts;
  std::vector<double> values;  // (N, n_src) caller order
};

Problem uniform_problem(std::size_t n, int n_src, bool double_layer, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), s(-1.0, 1.0);
  Problem p;
  p.pts.ns = p.pts.nt = n;
  p.pts.src.resize(3 * n);
  for (double& x : p.pts.src) x = std::min(u(rng), std::nextafter(1.0, 0.0));
  p.values.resize(n * n_src);
  for (double& v : p.values) v = s(rng);
  if (double_layer)
    for (std::size_t i = 0; i < n; ++i) {  // the last three values are the normal: unit length
      double* nu = &p.values[i * n_src + n_src - 3];
      const double l = std::sqrt(nu[0] * nu[0] + nu[1] * nu[1] + nu[2] * nu[2]) + 1e-3;
      for (int d = 0; d < 3; ++d) nu[d] /= l;
    }
  return p;
}

struct KernelShape {
  int n_src = 1, n_grid = 1, n_out = 1;
};
// Whether variant v's sources carry normals (stresslet, stokes-combined).
bool double_layer(int v) { return variant_kernel(v) == Kernel::Stresslet || variant_kernel(v) == Kernel::StokesCombined; }
KernelShape shape(int v) {
  return with_traits(variant_kernel(v), variant_second(v), [](auto tr) {
    using K = decltype(tr);
    return KernelShape{K::n_src, K::n_grid, K::n_out};
  });
}

BackendSetup setup_for(int v, Precision prec, const Params& p, double erfc_target) {
  BackendSetup s;
  s.kernel = variant_kernel(v);
  s.field = variant_second(v);
  s.precision = prec;
  s.erfc_target = erfc_target;
  s.box = {1, 1, 1};
  s.threads = 1;
  s.params = p;
  s.window = make_window(p.P, p.beta, 0, 1e-9);
  s.params.poly_degree = s.window.degree;
  return s;
}

Params make_params(double xi, double rc, int ncells, int M, int P) {
  Params p;
  p.xi = xi;
  p.rc = rc;
  p.cells = {ncells, ncells, ncells};
  p.grid = {M, M, M};
  for (int d = 0; d < 3; ++d) p.h[d] = 1.0 / M;
  p.P = P;
  p.beta = 2.5 * P;
  return p;
}

template <class F>
double best_of(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, seconds(t0, Clock::now()));
  }
  return best;
}

// The P2P work of a cell layout: occupied target cells and targets x columns of colleague cells
// counted on the points; distance tests and pairs as the backend counted them (Result::p2p).
struct P2PWork {
  double cells = 0, columns = 0, checks = 0, pairs = 0;
};
P2PWork count_p2p(const PointSet& pts, const std::array<int, 3>& n, double rc, const P2PCounts& done) {
  std::vector<char> occ(std::size_t(n[0]) * n[1] * n[2], 0);
  for (std::size_t i = 0; i < pts.ns; ++i) {
    int c[3];
    for (int d = 0; d < 3; ++d) c[d] = cell_index(pts.src[3 * i + d], double(n[d]), n[d]);
    occ[(std::size_t(c[0]) * n[1] + c[1]) * n[2] + c[2]] = 1;
  }
  const int Kx = std::max(1, static_cast<int>(std::ceil(rc * n[0] * (1 - 1e-12))));
  const int Ky = std::max(1, static_cast<int>(std::ceil(rc * n[1] * (1 - 1e-12))));
  P2PWork r;
  for (char o : occ) r.cells += o;
  r.columns = double(pts.ns) * (2.0 * Kx + 1) * (2.0 * Ky + 1);
  r.checks = double(done.candidates);
  r.pairs = double(done.pairs);
  return r;
}

void measure_into(CostConstants& c, Precision prec) {
  const CostConstants b0 = builtin_cost_constants(prec);
  const double erfc_target = 1e-9;  // the series degree of a tolerance ~1e-7 (erfc to 1% of it)
  // ---- P2P -------------------------------------------------------------------------------------
  const std::size_t N = 6000;
  struct Layout {
    int n;            // cells along x and y (and kCellsPerRcZ / cells_per_rc_xy times as many along z)
    double rc_cells;  // r_c in cell widths along x and y
  };
  // The tuner's cell lists (cell_grid) have columns of width >= r_c / cells_per_rc_xy(prec) and
  // cells of r_c / kCellsPerRcZ along z: the layouts are of that kind, 0.8 to 12 sources per cell.
  const double xy = cells_per_rc_xy(prec), lo = 0.92 * xy;
  const Layout layouts[] = {{12, xy * 0.999}, {12, lo}, {9, xy * 0.999}, {9, lo},
                            {7, xy * 0.999},  {7, lo},  {5, xy * 0.999}, {5, lo}};
  const int zf = static_cast<int>(std::lround(kCellsPerRcZ / xy));
  for (int v = 0; v < kCostVariants; ++v) {
    const KernelShape ks = shape(v);
    const bool dl = double_layer(v);
    const Problem pr = uniform_problem(N, ks.n_src, dl, 1234 + v);
    std::vector<std::vector<double>> A;
    std::vector<double> bt;
    for (const Layout& L : layouts) {
      const double rc = L.rc_cells / L.n;
      Params p = make_params(3.5 / rc, rc, L.n, 8, 4);
      p.cells = {L.n, L.n, zf * L.n};
      auto be = make_cpu_backend(pr.pts, setup_for(v, prec, p, erfc_target));
      auto ws = be->workspace();
      be->load(*ws, pr.values.data());
      be->p2p(*ws);  // warm-up (buffers, caches)
      const double t = best_of(v == 0 ? 3 : 2, [&] { be->p2p(*ws); });
      const P2PWork k = count_p2p(pr.pts, p.cells, rc, be->p2p_counts(*ws));
      A.push_back({k.cells, k.columns, k.checks, k.pairs});
      bt.push_back(t);
    }
    if (v == 0) {
      const std::vector<double> x0{b0.p2p_cell, b0.p2p_column, b0.p2p_check[0], b0.p2p_pair[0]};
      std::vector<double> x = nnls(A, bt);
      fill_undetermined(x, x0, median_ratio(A, bt, x0));
      c.p2p_cell = x[0];
      c.p2p_column = x[1];
      c.p2p_check[0] = x[2];
      c.p2p_pair[0] = x[3];
    } else {
      std::vector<std::vector<double>> A2;
      std::vector<double> b2;
      for (std::size_t i = 0; i < A.size(); ++i) {
        const double rest = bt[i] - c.p2p_cell * A[i][0] - c.p2p_column * A[i][1];
        A2.push_back({A[i][2], A[i][3]});
        b2.push_back(std::max(rest, 0.2 * bt[i]));
      }
      const std::vector<double> x0{b0.p2p_check[v], b0.p2p_pair[v]};
      std::vector<double> x = nnls(A2, b2);
      fill_undetermined(x, x0, median_ratio(A2, b2, x0));
      c.p2p_check[v] = x[0];
      c.p2p_pair[v] = x[1];
    }
  }
  // ---- far field -------------------------------------------------------------------------------
  struct Far {
    int v;
    std::size_t n;
    int M, P;
  };
  const Far fars[] = {{0, 20000, 48, 4}, {0, 20000, 48, 10}, {2, 20000, 48, 8}, {0, 1000, 128, 8}, {5, 4000, 32, 6}};
  std::vector<std::vector<double>> Aw;  // P2G and G2P rows: [row, spread, interp, pass]
  std::vector<double> bw;
  std::vector<std::vector<double>> Ac;  // CNV rows: [mode, component]
  std::vector<double> bc;
  std::vector<double> fft_lm, fft_c, fft_w;  // per M log2 M and transform, at log2 M
  for (const Far& f : fars) {
    const KernelShape ks = shape(f.v);
    const bool dl = double_layer(f.v);
    const Problem pr = uniform_problem(f.n, ks.n_src, dl, 99 + f.M + f.P);
    const double rc = 0.03;
    Params p = make_params(3.5 / rc, rc, 1, f.M, f.P);
    p.cells = cell_grid({1, 1, 1}, rc, 2 * f.n, prec);
    auto be = make_cpu_backend(pr.pts, setup_for(f.v, prec, p, erfc_target));
    auto ws = be->workspace();
    be->load(*ws, pr.values.data());
    be->p2p(*ws);
    double t[5];
    std::fill(t, t + 5, std::numeric_limits<double>::infinity());
    const int reps = 2;
    for (int r = 0; r < reps + 1; ++r) {  // the first round warms up (allocations, page faults)
      Clock::time_point q[6];
      q[0] = Clock::now();
      be->p2g(*ws);
      q[1] = Clock::now();
      be->fft(*ws);
      q[2] = Clock::now();
      be->cnv(*ws);
      q[3] = Clock::now();
      be->ifft(*ws);
      q[4] = Clock::now();
      be->g2p(*ws);
      q[5] = Clock::now();
      if (r == 0) continue;
      for (int s = 0; s < 5; ++s) t[s] = std::min(t[s], seconds(q[s], q[s + 1]));
    }
    const double P2 = double(f.P) * f.P, n = double(f.n);
    const double padded = std::pow(double(f.M + 2 * f.P), 3);
    Aw.push_back({n * P2, n * P2 * f.P * ks.n_grid, 0.0, ks.n_grid * padded});
    bw.push_back(t[0]);
    Aw.push_back({n * P2, 0.0, n * P2 * f.P * ks.n_out, ks.n_out * padded});
    bw.push_back(t[4]);
    const double m = std::pow(double(f.M), 3), lm = std::log2(m);
    fft_lm.push_back(lm);
    fft_c.push_back(t[1] / (ks.n_grid * m * lm));
    fft_w.push_back(1.0);
    fft_lm.push_back(lm);
    fft_c.push_back(t[3] / (ks.n_out * m * lm));
    fft_w.push_back(1.0);
    const double modes = double(f.M) * f.M * (f.M / 2 + 1);
    Ac.push_back({modes, modes * (ks.n_grid + ks.n_out)});
    bc.push_back(t[2]);
  }
  {
    const std::vector<double> x0{b0.window_row, b0.spread, b0.interp, b0.grid_pass};
    std::vector<double> x = nnls(Aw, bw);
    fill_undetermined(x, x0, median_ratio(Aw, bw, x0));
    c.window_row = x[0];
    c.spread = x[1];
    c.interp = x[2];
    c.grid_pass = x[3];
  }
  {
    const std::vector<double> x0{b0.cnv_mode, b0.cnv_component};
    std::vector<double> x = nnls(Ac, bc);
    fill_undetermined(x, x0, median_ratio(Ac, bc, x0));
    c.cnv_mode = x[0];
    c.cnv_component = x[1];
  }
  {
    // c(lm) = a + g (lm - 18), least squares; fft = a, fft_growth = g / a in [0, 0.5]
    double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
    for (std::size_t i = 0; i < fft_lm.size(); ++i) {
      const double x = fft_lm[i] - 18, w = fft_w[i] / (fft_c[i] * fft_c[i]);
      s0 += w;
      s1 += w * x;
      s2 += w * x * x;
      t0 += w * fft_c[i];
      t1 += w * x * fft_c[i];
    }
    const double det = s0 * s2 - s1 * s1;
    double a = det > 0 ? (s2 * t0 - s1 * t1) / det : 0, g = det > 0 ? (s0 * t1 - s1 * t0) / det : 0;
    if (!(a > 0) || !std::isfinite(a)) {
      a = t0 / s0;
      g = 0;
    }
    c.fft = a > 0 && std::isfinite(a) ? a : b0.fft;
    c.fft_growth = std::clamp(g / c.fft, 0.0, 0.5);
    if (!std::isfinite(c.fft_growth)) c.fft_growth = 0;
  }
  // ---- far field out of cache, per kernel variant ----------------------------------------------
  // The fit above uses grids that stay in cache; the plans whose far field costs something spread
  // onto grids of 10-500 MB with few points per grid point, where window rows miss the caches
  // (measured: 1.3-2.3x the in-cache point work at N = 1e5, M = 128-192, more with fewer windows
  // per grid point, less on grids of 96^3). One problem of that kind per variant (1e5 points on
  // 128^3, P = 8) gives the scales of the point terms: the choice among the candidates of plans
  // of 0.1-1 s is what they are for; smaller plans get their far field over-priced by up to the
  // scale, which costs them little time.
  for (int v = 0; v < kCostVariants; ++v) {
    const KernelShape ks = shape(v);
    const bool dl = double_layer(v);
    const std::size_t n = 100000;
    const int M = 128, P = 8;  // 24 windows overlap at a grid point, as in the tuned plans (15-40)
    // up to about 0.5 GB (stokes-combined: 9 components): on a machine with less than 8x that
    // (memory_limit_bytes()) the step is left out and the scales stay 1 (the in-cache fit alone)
    const double tb = prec == Precision::Single ? 4.0 : 8.0;
    const double need = std::pow(double(M), 3) * std::max(ks.n_grid, ks.n_out) * tb * 2.0 +
                        std::pow(double(M + 2 * P), 3) * ks.n_grid * tb +
                        double(n) * (8.0 * (6 + ks.n_src + ks.n_out) + 3.0 * P * tb + 16.0);
    if (need * 8.0 > double(memory_limit_bytes())) continue;
    const Problem pr = uniform_problem(n, ks.n_src, dl, 4321 + v);
    const double rc = 0.02;
    Params p = make_params(3.5 / rc, rc, 1, M, P);
    // the points in the cell order of a plan of this size (r_c ~ 0.1): P2G and G2P visit them in it
    p.cells = cell_grid({1, 1, 1}, 0.1, 2 * n, prec);
    auto be = make_cpu_backend(pr.pts, setup_for(v, prec, p, erfc_target));
    auto ws = be->workspace();
    be->load(*ws, pr.values.data());
    be->p2p(*ws);  // sizes the accumulators G2P adds to (few pairs at this r_c)
    be->p2g(*ws);  // warm-up (allocations, page faults) and the grid G2P reads
    be->g2p(*ws);
    const double t2g = best_of(2, [&] { be->p2g(*ws); });
    const double tg2p = best_of(2, [&] { be->g2p(*ws); });
    const double P2 = double(P) * P, padded = std::pow(double(M + 2 * P), 3);
    const double pg = double(n) * P2 * (c.window_row + c.spread * P * ks.n_grid);
    const double pi = double(n) * P2 * (c.window_row + c.interp * P * ks.n_out);
    c.p2g_scale[v] = std::clamp((t2g - c.grid_pass * ks.n_grid * padded) / pg, kFarScaleMin, kFarScaleMax);
    c.g2p_scale[v] = std::clamp((tg2p - c.grid_pass * ks.n_out * padded) / pi, kFarScaleMin, kFarScaleMax);
    if (!std::isfinite(c.p2g_scale[v])) c.p2g_scale[v] = 1.0;
    if (!std::isfinite(c.g2p_scale[v])) c.g2p_scale[v] = 1.0;
  }
  // ---- window evaluation (set_points: P weights per point and axis) -----------------------------
  {
    const Window w = make_window(8, 20.0, 0, 1e-10);
    double out[kMaxWindowSupport], sink = 0;
    const int n = 60000;
    const double t = best_of(2, [&] {
      for (int i = 0; i < n; ++i) {
        w.weights((i % 997) / 997.0, out);
        sink += out[3];
      }
    });
    c.window_eval = t / n;
    if (!(sink == sink)) c.window_eval = b0.window_eval;  // keeps the loop
  }
}

}  // namespace

void reset_cost_constants() {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.c[0].reset();
  s.c[1].reset();
}

}  // namespace detail

namespace {

CostConstants measure(Precision p) {
  CostConstants c = detail::machine_key(p);
  const auto t0 = std::chrono::steady_clock::now();
  detail::measure_into(c, p);
  c.measure_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  c.measured_at = utc_now();
  c.source = "measured";
  // Never hand the tuner a constant it cannot use (a clock that did not advance, say).
  const CostConstants b = builtin_cost_constants(p);
  auto fix = [](double& v, double d) {
    if (!(std::isfinite(v) && v > 0)) v = d;
  };
  fix(c.p2p_cell, b.p2p_cell);
  fix(c.p2p_column, b.p2p_column);
  for (int v = 0; v < kCostVariants; ++v) {
    fix(c.p2p_check[v], b.p2p_check[v]);
    fix(c.p2p_pair[v], b.p2p_pair[v]);
    fix(c.p2g_scale[v], b.p2g_scale[v]);
    fix(c.g2p_scale[v], b.g2p_scale[v]);
  }
  for (auto [x, d] : {std::pair{&c.spread, b.spread}, {&c.interp, b.interp}, {&c.window_row, b.window_row},
                      {&c.grid_pass, b.grid_pass}, {&c.fft, b.fft}, {&c.cnv_mode, b.cnv_mode},
                      {&c.cnv_component, b.cnv_component}, {&c.window_eval, b.window_eval}})
    fix(*x, d);
  if (!(std::isfinite(c.fft_growth) && c.fft_growth >= 0)) c.fft_growth = 0;
  return c;
}

CostConstants resolve(Precision p) {
  std::string path;
  const Mode mode = env_mode(path);
  if (mode == Mode::Builtin) return builtin_cost_constants(p);
  if (mode == Mode::File) {
    const std::vector<CostConstants> all = detail::parse_cost_constants(read_text(path, 1 << 20));
    for (const CostConstants& e : all)
      if (e.precision == p) {
        CostConstants c = e;
        c.source = "file";
        c.file = path;
        return c;
      }
    CostConstants c = builtin_cost_constants(p);
    c.file = path;  // no entry for this precision in the file
    return c;
  }
  // auto: sanitizer builds run 10-50x slower, so a measurement there means nothing
  if (kSanitized) return builtin_cost_constants(p);
  const CostConstants key = detail::machine_key(p);
  const std::string cache = cost_cache_file();
  if (!cache.empty())
    for (const CostConstants& e : read_entries_quietly(cache))
      if (detail::same_key(e, key)) {
        CostConstants c = e;
        c.source = "cache";
        c.file = cache;
        return c;
      }
  CostConstants c = measure(p);
  if (!cache.empty() && write_cache_entry(cache, c)) c.file = cache;
  return c;
}

}  // namespace

CostConstants cost_constants(Precision p) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);  // the first use measures (about a second) while others wait
  auto& c = s.c[slot(p)];
  if (!c) c = resolve(p);
  return *c;
}

CostConstants calibrate_costs(Precision p, bool write_cache) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  CostConstants c = measure(p);
  if (write_cache) {
    const std::string cache = cost_cache_file();
    if (!cache.empty() && write_cache_entry(cache, c)) c.file = cache;
  }
  std::string path;
  if (env_mode(path) == Mode::Auto && !kSanitized) s.c[slot(p)] = c;
  return c;
}

}  // namespace elliptica::ewald
