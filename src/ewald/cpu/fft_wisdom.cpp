// The FFT wisdom cache of FftPlanner::Wisdom (see fft_wisdom.hpp): state per process and the
// per-machine file ewald_fft_wisdom.json beside the cost model's cache:
//   {"format": "elliptica-ewald-fft-wisdom", "format_version": 1, "cpu": ..., "fftw": ...,
//    "wisdom_double": FFTW's wisdom text, "wisdom_single": ...,
//    "timings": [{"precision", "grid", "forward", "backward", "threads", "forward_seconds",
//                 "backward_seconds"}, ...]}
// A file of another CPU model or FFTW version, or one that does not parse, is ignored and
// replaced at the next write.
#include "ewald/cpu/fft_wisdom.hpp"

#include <fftw3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ewald/calibrate.hpp"

namespace elliptica::ewald {

std::string fft_wisdom_file() {
  const std::string costs = cost_cache_file();
  if (costs.empty()) return "";
  return (std::filesystem::path(costs).parent_path() / "ewald_fft_wisdom.json").string();
}

namespace detail {

namespace {
constexpr const char* kFormat = "elliptica-ewald-fft-wisdom";
int slot(Precision p) { return p == Precision::Single ? 1 : 0; }
std::string fftw_version_string() { return fftw_version; }
}  // namespace

bool same_problem(const FftTiming& a, const FftTiming& b) {
  return a.precision == b.precision && a.grid == b.grid && a.forward == b.forward && a.backward == b.backward &&
         a.threads == b.threads;
}

WisdomCache& WisdomCache::get() {
  static WisdomCache c;
  return c;
}

WisdomMode WisdomCache::mode() {
  if (!have_mode_) {
    const char* v = std::getenv("ELLIPTICA_EWALD_FFT_WISDOM");
    const std::string s = v ? v : "";
    mode_ = s == "off" ? WisdomMode::Off : s == "memory" ? WisdomMode::Memory : WisdomMode::File;
    have_mode_ = true;
  }
  return mode_;
}

void WisdomCache::load() {
  if (loaded_) return;
  loaded_ = true;
  if (mode() != WisdomMode::File) return;
  const std::string path = fft_wisdom_file();
  if (path.empty()) return;
  std::ifstream f(path, std::ios::binary);
  if (!f) return;
  std::ostringstream os;
  os << f.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(os.str());
    if (j.value("format", "") != kFormat || j.value("format_version", 0) != 1) return;
    if (j.value("cpu", "") != cpu_model_name() || j.value("fftw", "") != fftw_version_string()) return;
    file_wisdom_[0] = j.value("wisdom_double", "");
    file_wisdom_[1] = j.value("wisdom_single", "");
    for (const auto& e : j.at("timings")) {
      FftTiming t;
      t.precision = precision_from_string(e.at("precision").get<std::string>());
      t.grid = e.at("grid").get<std::array<int, 3>>();
      t.forward = e.at("forward").get<int>();
      t.backward = e.at("backward").get<int>();
      t.threads = e.at("threads").get<int>();
      t.forward_seconds = e.at("forward_seconds").get<double>();
      t.backward_seconds = e.at("backward_seconds").get<double>();
      if (t.forward_seconds > 0 && t.backward_seconds >= 0) record(t);
    }
  } catch (const std::exception&) {  // a corrupt file: ignored, replaced at the next write
    file_wisdom_[0].clear();
    file_wisdom_[1].clear();
    timings_.clear();
  }
}

std::string WisdomCache::take_file_wisdom(Precision p) {
  load();
  std::string w;
  w.swap(file_wisdom_[slot(p)]);
  return w;
}

const FftTiming* WisdomCache::find(const FftTiming& key) {
  load();
  for (const FftTiming& t : timings_)
    if (same_problem(t, key)) return &t;
  return nullptr;
}

void WisdomCache::record(const FftTiming& t) {
  for (FftTiming& e : timings_)
    if (same_problem(e, t)) {
      e = t;
      return;
    }
  timings_.push_back(t);
}

void WisdomCache::save(const std::string& wisdom_double, const std::string& wisdom_single) {
  if (mode() != WisdomMode::File) return;
  const std::string path = fft_wisdom_file();
  if (path.empty()) return;
  nlohmann::json j;
  j["format"] = kFormat;
  j["format_version"] = 1;
  j["cpu"] = cpu_model_name();
  j["fftw"] = fftw_version_string();
  j["wisdom_double"] = wisdom_double;
  j["wisdom_single"] = wisdom_single;
  nlohmann::json ts = nlohmann::json::array();
  for (const FftTiming& t : timings_)
    ts.push_back({{"precision", to_string(t.precision)},
                  {"grid", t.grid},
                  {"forward", t.forward},
                  {"backward", t.backward},
                  {"threads", t.threads},
                  {"forward_seconds", t.forward_seconds},
                  {"backward_seconds", t.backward_seconds}});
  j["timings"] = ts;
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    write_file_atomically(path, j.dump(1) + "\n");
  } catch (const std::exception&) {  // unwritable: the wisdom stays in this process
  }
}

std::vector<FftTiming> WisdomCache::entries() {
  load();
  return timings_;
}

void WisdomCache::reset() {
  loaded_ = false;
  have_mode_ = false;
  timings_.clear();
  file_wisdom_[0].clear();
  file_wisdom_[1].clear();
}

void WisdomCache::clear() {
  load();
  timings_.clear();
  file_wisdom_[0].clear();
  file_wisdom_[1].clear();
}

}  // namespace detail
}  // namespace elliptica::ewald
