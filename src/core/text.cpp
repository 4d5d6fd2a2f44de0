/// @file text.cpp
/// Shared text-parsing helpers (text.hpp).
#include "elliptica/core/text.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <system_error>

#include "elliptica/core/error.hpp"

namespace elliptica::text {

std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

void split_ws(std::string_view s, std::vector<std::string_view>& out) {
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t b = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  split_ws(s, out);
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.emplace_back(trim(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start)));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    pos = nl + 1;
  }
  return lines;
}

std::string shortest(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string printable(std::string_view s, std::size_t max_len) {
  std::string out;
  const bool cut = s.size() > max_len;
  if (cut) s = s.substr(0, max_len);
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (cut) out += "...";
  return out;
}

NumberStatus parse_number(std::string_view tok, double& v) {
  // from_chars takes no leading '+'; accept one (but not "+-1").
  if (tok.size() > 1 && tok.front() == '+' && tok[1] != '-' && tok[1] != '+') tok.remove_prefix(1);
  if (tok.empty()) return NumberStatus::NotANumber;
  const char* b = tok.data();
  const char* e = b + tok.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (p != e) return NumberStatus::NotANumber;
  if (ec == std::errc()) return NumberStatus::Ok;
  if (ec != std::errc::result_out_of_range) return NumberStatus::NotANumber;
  // Syntactically a number, but out of range: overflow or underflow? strtod tells (it sees
  // the same decimal syntax here, as from_chars accepted all of it).
  const std::string z(tok);
  errno = 0;
  const double r = std::strtod(z.c_str(), nullptr);
  if (std::isinf(r)) return NumberStatus::Overflow;
  v = r;  // underflow: 0 or a subnormal, with the sign of the input
  return NumberStatus::Ok;
}

bool parse_double(std::string_view tok, double& v) { return parse_number(tok, v) == NumberStatus::Ok; }

bool parse_int(std::string_view tok, std::int64_t& v) {
  if (tok.size() > 1 && tok.front() == '+' && tok[1] != '-' && tok[1] != '+') tok.remove_prefix(1);
  if (tok.empty()) return false;
  std::int64_t r = 0;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), r);
  if (ec != std::errc() || p != tok.data() + tok.size()) return false;
  v = r;
  return true;
}

double to_double(std::string_view tok, const std::string& what) {
  double v = 0;
  if (!parse_double(tok, v)) throw InvalidArgument(what + ": '" + std::string(tok) + "' is not a number");
  return v;
}

int to_int(std::string_view tok, const std::string& what) {
  std::int64_t v = 0;
  if (!parse_int(tok, v) || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw InvalidArgument(what + ": '" + std::string(tok) + "' is not an integer");
  return static_cast<int>(v);
}

}  // namespace elliptica::text
