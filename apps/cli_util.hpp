#pragma once
/// @file cli_util.hpp
/// Small helpers shared by the CLI subcommands: timing, and parsing of comma-separated option
/// values into numbers with messages that name the option.
#include <chrono>
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

}  // namespace elliptica::cli
