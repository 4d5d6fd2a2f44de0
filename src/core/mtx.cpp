/// @file mtx.cpp
/// Matrix Market reader (coordinate real/integer/pattern, general/symmetric; array real general).
/// Format reference: Boisvert, Pozo, Remington, "The Matrix Market Exchange Formats: Initial
/// Design", NIST IR 5935 (1996).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/sparse.hpp"

namespace elliptica::io {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> t;
  std::string w;
  while (is >> w) t.push_back(w);
  return t;
}

bool blank_or_comment(const std::string& line) {
  for (char ch : line) {
    if (ch == '%') return true;
    if (!std::isspace(static_cast<unsigned char>(ch))) return false;
  }
  return true;
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path) {
    if (!in_) throw IOError(path + ": cannot open Matrix Market file");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw IOError(path_ + ":" + std::to_string(line_no_) + ": " + what);
  }
  /// Next raw line; false at end of file.
  bool raw(std::string& line) {
    if (!std::getline(in_, line)) return false;
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  }
  /// Next line that is neither blank nor a comment; false at end of file.
  bool data(std::string& line) {
    while (raw(line))
      if (!blank_or_comment(line)) return true;
    return false;
  }
  long long integer(const std::string& s, const char* what) const {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || errno == ERANGE) fail(std::string("non-numeric ") + what + " '" + s + "'");
    return v;
  }
  double real(const std::string& s) const {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') fail("non-numeric value '" + s + "'");
    if (!std::isfinite(v)) fail("non-finite value '" + s + "'");
    return v;
  }
  int line_no() const { return line_no_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ifstream in_;
  int line_no_ = 0;
};

}  // namespace

CsrMatrix read_matrix_market(const std::string& path) {
  Reader rd(path);
  std::string line;
  if (!rd.raw(line)) rd.fail("empty file (expected a '%%MatrixMarket' banner)");
  const auto ban = tokens(line);
  if (ban.size() != 5 || ban[0] != "%%MatrixMarket")
    rd.fail("bad banner '" + line + "' (expected '%%MatrixMarket matrix <format> <field> <symmetry>')");
  const std::string object = lower(ban[1]), format = lower(ban[2]), field = lower(ban[3]), sym = lower(ban[4]);
  if (object != "matrix") rd.fail("unsupported object '" + ban[1] + "' (only 'matrix')");
  if (format != "coordinate" && format != "array")
    rd.fail("unsupported format '" + ban[2] + "' (expected 'coordinate' or 'array')");
  if (field != "real" && field != "integer" && field != "pattern")
    rd.fail("unsupported field '" + ban[3] + "' (supported: real, integer, pattern)");
  if (sym != "general" && sym != "symmetric")
    rd.fail("unsupported symmetry '" + ban[4] + "' (supported: general, symmetric)");
  if (format == "array" && (field == "pattern" || sym != "general"))
    rd.fail("unsupported array matrix '" + field + " " + sym + "' (only 'array real general' / 'array integer general')");
  const bool pattern = field == "pattern", symmetric = sym == "symmetric";

  if (!rd.data(line)) rd.fail("truncated file: missing the size line");
  const auto sz = tokens(line);
  const std::size_t expect_sz = format == "coordinate" ? 3 : 2;
  if (sz.size() != expect_sz)
    rd.fail("size line must hold " + std::to_string(expect_sz) + " integers, found '" + line + "'");
  const long long M = rd.integer(sz[0], "row count"), N = rd.integer(sz[1], "column count");
  const long long imax = std::numeric_limits<std::int32_t>::max();
  if (M < 0 || N < 0 || M > imax || N > imax) rd.fail("matrix size " + sz[0] + " x " + sz[1] + " out of range");
  if (symmetric && M != N) rd.fail("symmetric matrix must be square, got " + sz[0] + " x " + sz[1]);
  long long L = format == "coordinate" ? rd.integer(sz[2], "entry count") : M * N;
  if (L < 0) rd.fail("negative entry count " + sz[2]);
  if (format == "coordinate" && L > M * N) rd.fail("entry count " + sz[2] + " exceeds rows x columns");

  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  const std::size_t reserve = static_cast<std::size_t>(std::min<long long>(L, 1LL << 26)) * (symmetric ? 2 : 1);
  r.reserve(reserve);
  c.reserve(reserve);
  v.reserve(reserve);
  for (long long k = 0; k < L; ++k) {
    if (!rd.data(line))
      rd.fail("truncated file: expected " + std::to_string(L) + " entries, found " + std::to_string(k));
    const auto t = tokens(line);
    if (format == "array") {
      if (t.size() != 1) rd.fail("expected one value per line in array format, found '" + line + "'");
      const double x = rd.real(t[0]);
      if (x != 0.0) {
        r.push_back(k % M);  // column-major
        c.push_back(k / M);
        v.push_back(x);
      }
      continue;
    }
    const std::size_t want = pattern ? 2 : 3;
    if (t.size() != want)
      rd.fail("expected " + std::to_string(want) + " fields (row column" + (pattern ? "" : " value") + "), found '" +
              line + "'");
    const long long i = rd.integer(t[0], "row index"), j = rd.integer(t[1], "column index");
    if (i < 1 || i > M || j < 1 || j > N)
      rd.fail("index (" + t[0] + ", " + t[1] + ") out of range for a " + std::to_string(M) + " x " + std::to_string(N) +
              " matrix (indices are 1-based)");
    if (symmetric && j > i) rd.fail("entry (" + t[0] + ", " + t[1] + ") above the diagonal in a symmetric matrix");
    const double x = pattern ? 1.0 : rd.real(t[2]);
    r.push_back(i - 1);
    c.push_back(j - 1);
    v.push_back(x);
    if (symmetric && i != j) {
      r.push_back(j - 1);
      c.push_back(i - 1);
      v.push_back(x);
    }
  }
  if (rd.data(line))
    rd.fail("wrong entry count: more entries than the " + std::to_string(L) + " declared ('" + line + "')");
  return CsrMatrix::from_triplets(static_cast<std::size_t>(M), static_cast<std::size_t>(N), r, c, v);
}

}  // namespace elliptica::io
