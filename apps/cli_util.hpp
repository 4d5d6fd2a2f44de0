#pragma once
/// @file cli_util.hpp
/// Small helpers shared by the CLI subcommands: timing, and parsing of comma-separated option
/// values into numbers with messages that name the option.
#include <charconv>
#include <chrono>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "elliptica/core/error.hpp"

namespace elliptica::cli {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(trim(cur));
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

inline double to_double(const std::string& tok, const std::string& what) {
  double v = 0;
  std::string t = tok;
  if (t.size() > 1 && t[0] == '+') t.erase(0, 1);
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    throw InvalidArgument(what + ": '" + tok + "' is not a number");
  return v;
}

inline int to_int(const std::string& tok, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size())
    throw InvalidArgument(what + ": '" + tok + "' is not an integer");
  return v;
}

}  // namespace elliptica::cli
