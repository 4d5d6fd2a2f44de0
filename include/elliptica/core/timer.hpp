#pragma once
/// @file timer.hpp
/// Wall-clock timing of named stages (P2P, P2G, FFT, CNV, IFFT, G2P, ...).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace elliptica {

/// Accumulated wall-clock seconds per named stage, in first-seen order.
struct StageTimes {
  std::vector<std::pair<std::string, double>> stages;

  void add(const std::string& name, double seconds) {
    for (auto& s : stages)
      if (s.first == name) {
        s.second += seconds;
        return;
      }
    stages.emplace_back(name, seconds);
  }
  double get(const std::string& name) const {
    for (auto& s : stages)
      if (s.first == name) return s.second;
    return 0.0;
  }
  double total() const {
    double t = 0;
    for (auto& s : stages) t += s.second;
    return t;
  }
  void clear() { stages.clear(); }
};

/// RAII timer: adds the elapsed time of its scope to `times` under `name`.
class ScopedStage {
 public:
  ScopedStage(StageTimes& times, std::string name)
      : times_(times), name_(std::move(name)), t0_(std::chrono::steady_clock::now()) {}
  ~ScopedStage() {
    times_.add(name_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  StageTimes& times_;
  std::string name_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace elliptica
