#pragma once
// The FFT wisdom cache of FftPlanner::Wisdom (not installed): FFTW's wisdom text of both
// precisions and the measured time of every FFT problem, kept per process and in the per-machine
// cache file (fft_wisdom_file()). The FFTW calls (planning, import/export of wisdom, timing) are
// in fft.cpp; this unit keeps the state and reads and writes the file. Every function here must be
// called with the FFTW planner lock held (fft.cpp, fftw_mutex()): FFTW's planner and wisdom are
// process-wide and not thread-safe, and this state changes with them.
#include <string>
#include <vector>

#include "elliptica/ewald/ewald.hpp"

namespace elliptica::ewald::detail {

/// Where the wisdom lives (ELLIPTICA_EWALD_FFT_WISDOM, read once per process).
enum class WisdomMode {
  Off,     ///< "off": FftPlanner::Wisdom plans as Estimate; nothing measured, no file
  Memory,  ///< "memory": measured once per process, no file
  File,    ///< unset or "auto": the cache file (kept in memory when it cannot be written)
};

class WisdomCache {
 public:
  static WisdomCache& get();
  WisdomMode mode();
  /// The wisdom text of precision p read from the file ("" if none). The first call per process
  /// reads the file; every later call returns "" (the wisdom has been imported by then).
  std::string take_file_wisdom(Precision p);
  /// The timing of the problem (precision, grid, forward, backward, threads), or nullptr.
  const FftTiming* find(const FftTiming& key);
  /// Records (replaces) a measured problem.
  void record(const FftTiming& t);
  /// Writes the cache file with this wisdom text of each precision (File mode; quietly does
  /// nothing when no folder is known or it cannot be written).
  void save(const std::string& wisdom_double, const std::string& wisdom_single);
  std::vector<FftTiming> entries();
  /// Forgets the timings (the caller forgets FFTW's wisdom).
  void clear();
  /// Forgets everything, the mode included: the next use reads ELLIPTICA_EWALD_FFT_WISDOM and the
  /// file again (the caller forgets FFTW's wisdom). For tests.
  void reset();

 private:
  void load();
  bool loaded_ = false, have_mode_ = false;
  WisdomMode mode_ = WisdomMode::File;
  std::string file_wisdom_[2];
  std::vector<FftTiming> timings_;
};

/// Forgets FFTW's wisdom of both precisions and the cache state of this process (not the file),
/// so that the next plan reads ELLIPTICA_EWALD_FFT_WISDOM and the cache file again. For tests
/// (takes the FFTW planner lock itself; cpu/fft.cpp).
void reset_fft_wisdom();

/// Same problem: precision, grid, counts and threads equal.
bool same_problem(const FftTiming& a, const FftTiming& b);

}  // namespace elliptica::ewald::detail
