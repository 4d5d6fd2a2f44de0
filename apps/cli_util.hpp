#pragma once
/// @file cli_util.hpp
/// Small helpers shared by the CLI subcommands: timing, peak memory, parsing of
/// comma-separated option values into numbers with messages that name the option, and the
/// output folder (--out) of the commands that write files.
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "elliptica/core/error.hpp"
#include "elliptica/core/output.hpp"
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

/// Creates the output folder `out` of a command (--out; missing parents too), before the
/// command's work so that a bad folder fails early. `created`, when given, is set to whether `out`
/// did not exist yet (set before creating it). Throws InvalidArgument "--out: empty folder name"
/// for an empty name; IOError "<out>: --out exists and is not a folder" or "<out>: cannot create
/// the output folder (<reason>)" (exit code 3).
inline void create_output_folder(const std::string& out, bool* created = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (out.empty()) throw InvalidArgument("--out: empty folder name");
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw IOError(out + ": --out exists and is not a folder");
  if (created) *created = !fs::exists(out, ec);
  fs::create_directories(out, ec);
  if (ec) throw IOError(out + ": cannot create the output folder (" + ec.message() + ")");
}

/// The output folder of a command that writes one set of files (io::OutputSet): create() makes it
/// (create_output_folder) and, when this run created it, registers it with
/// io::remove_folder_on_signal; the destructor removes it again when this run created it and
/// did not set `done` (a failure before the outputs were written: the folder is then empty, and
/// only an empty folder is removed), and unregisters it from the signal cleanup.
struct RemoveIfEmptyOnFailure {
  std::filesystem::path path;
  bool created = false, done = false;
  void create() {
    create_output_folder(path.string(), &created);
    if (created) io::remove_folder_on_signal(path.string());
  }
  ~RemoveIfEmptyOnFailure() {
    std::error_code ec;
    if (created && !done) std::filesystem::remove(path, ec);  // removes an empty folder only
    if (created) io::keep_folder_on_signal(path.string());
  }
};

}  // namespace elliptica::cli
