#pragma once
/// @file cli_util.hpp
/// Small helpers shared by the CLI subcommands: timing, peak memory, and parsing of
/// comma-separated option values into numbers with messages that name the option.
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Option values are parsed by the shared helpers of core/text.hpp: split(s, ',') gives trimmed
// pieces, to_double / to_int throw InvalidArgument "<what>: '<tok>' is not a number|an integer".
using text::split;
using text::to_double;
using text::to_int;

inline std::string trim(std::string_view s) { return std::string(text::trim(s)); }

/// Peak resident memory of this process so far, in bytes: VmHWM of /proc/self/status (Linux),
/// else getrusage's ru_maxrss (kilobytes on Linux); 0 if neither is available.
inline std::uint64_t peak_memory_bytes() {
  std::ifstream st("/proc/self/status");
  std::string line;
  while (std::getline(st, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::uint64_t kb = 0;
    for (char c : line)
      if (c >= '0' && c <= '9') kb = 10 * kb + static_cast<std::uint64_t>(c - '0');
    if (kb > 0) return kb * 1024;
  }
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0) return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
  return 0;
}

}  // namespace elliptica::cli
