/// @file mtx.cpp
/// Matrix Market reader (coordinate real/integer/pattern, general/symmetric; array real general).
/// Format reference: Boisvert, Pozo, Remington, "The Matrix Market Exchange Formats: Initial
/// Design", NIST IR 5935 (1996).
///
/// Declared sizes are checked before anything is allocated: the entry count against the bytes
/// that follow the size line (an entry line takes at least 4 bytes, "i j\n"; an array value 2),
/// and the memory of the triplets and of the CSR matrix against memory_limit_bytes().
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/io_detail.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::io {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::vector<std::string> tokens(std::string_view line) {
  const std::vector<std::string_view> t = text::split_ws(line);  // core/text.hpp
  return {t.begin(), t.end()};
}

bool blank_or_comment(std::string_view line) {
  for (char ch : line) {
    if (ch == '%') return true;
    if (!std::isspace(static_cast<unsigned char>(ch))) return false;
  }
  return true;
}

/// Lines of a Matrix Market text held in memory, with the line number and the bytes consumed.
class Reader {
 public:
  Reader(const std::string& name, std::string_view text) : name_(name), text_(text) {}
  [[noreturn]] void fail(const std::string& what) const { throw IOError(name_ + ":" + std::to_string(line_no_) + ": " + what); }
  /// Next raw line; false at end of text.
  bool raw(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    std::size_t nl = text_.find('\n', pos_);
    if (nl == std::string_view::npos) nl = text_.size();
    line = text_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  }
  /// Next line that is neither blank nor a comment; false at end of text.
  bool data(std::string_view& line) {
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
  std::size_t remaining_bytes() const { return pos_ >= text_.size() ? 0 : text_.size() - pos_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string_view text_;
  std::size_t pos_ = 0;
  int line_no_ = 0;
};

/// Banner and size line. `body_bytes`: the rest of the file after the size line; the declared
/// entries that it cannot hold are an error when `fail_if_truncated` (read_matrix_market_info),
/// else they are only not reserved (the body then ends as "truncated" where it ends). Checks the
/// memory that the declared sizes need.
MatrixMarketInfo parse_header(Reader& rd, std::size_t body_bytes, bool fail_if_truncated) {
  std::string_view line;
  if (!rd.raw(line)) rd.fail("empty file (expected a '%%MatrixMarket' banner)");
  const auto ban = tokens(line);
  if (ban.size() != 5 || ban[0] != "%%MatrixMarket")
    rd.fail("bad banner '" + std::string(line) + "' (expected '%%MatrixMarket matrix <format> <field> <symmetry>')");
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
  MatrixMarketInfo info;
  info.pattern = field == "pattern";
  info.symmetric = sym == "symmetric";
  info.array = format == "array";

  if (!rd.data(line)) rd.fail("truncated file: missing the size line");
  const auto sz = tokens(line);
  const std::size_t expect_sz = info.array ? 2 : 3;
  if (sz.size() != expect_sz)
    rd.fail("size line must hold " + std::to_string(expect_sz) + " integers, found '" + std::string(line) + "'");
  const long long M = rd.integer(sz[0], "row count"), N = rd.integer(sz[1], "column count");
  const long long imax = std::numeric_limits<std::int32_t>::max();
  if (M < 0 || N < 0 || M > imax || N > imax) rd.fail("matrix size " + sz[0] + " x " + sz[1] + " out of range");
  if (info.symmetric && M != N) rd.fail("symmetric matrix must be square, got " + sz[0] + " x " + sz[1]);
  const long long L = info.array ? M * N : rd.integer(sz[2], "entry count");
  if (L < 0) rd.fail("negative entry count " + sz[2]);
  if (!info.array && L > M * N) rd.fail("entry count " + sz[2] + " exceeds rows x columns");
  info.rows = static_cast<std::size_t>(M);
  info.cols = static_cast<std::size_t>(N);
  info.entries = static_cast<std::size_t>(L);
  info.stored_max = info.symmetric ? 2 * info.entries : info.entries;
  // What the body can hold: "i j\n" (4 bytes) per coordinate entry, "v\n" (2 bytes) per array
  // value; the last line may lack its newline.
  const std::size_t min_line = info.array ? 2 : 4;
  const double can_hold = (double(body_bytes) + 1.0) / double(min_line);
  if (fail_if_truncated && double(L) > can_hold)
    rd.fail("the size line declares " + std::to_string(L) + (info.array ? " values" : " entries") + " but the rest of the file (" +
            std::to_string(body_bytes) + " bytes) can hold at most " + std::to_string(std::size_t(can_hold)) +
            ": truncated or corrupt file");
  // Only what the body can hold is reserved; a shorter body ends as "truncated" while reading.
  const double stored = std::min(double(info.stored_max), (info.symmetric ? 2.0 : 1.0) * can_hold);
  info.stored_max = static_cast<std::size_t>(stored);
  // Triplets (row, col, value: 24 bytes) + CSR (8 bytes per row pointer, 12 per entry).
  require_memory(36.0 * stored + 8.0 * (double(M) + 1.0), rd.name() + ": the " + sz[0] + " x " + sz[1] + " matrix it declares");
  return info;
}

CsrMatrix parse_body(Reader& rd, const MatrixMarketInfo& info) {
  const long long M = static_cast<long long>(info.rows), N = static_cast<long long>(info.cols);
  const long long L = static_cast<long long>(info.entries);
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  r.reserve(info.stored_max);
  c.reserve(info.stored_max);
  v.reserve(info.stored_max);
  std::string_view line;
  for (long long k = 0; k < L; ++k) {
    if (!rd.data(line))
      rd.fail("truncated file: expected " + std::to_string(L) + " entries, found " + std::to_string(k));
    const auto t = tokens(line);
    if (info.array) {
      if (t.size() != 1) rd.fail("expected one value per line in array format, found '" + std::string(line) + "'");
      const double x = rd.real(t[0]);
      if (x != 0.0) {
        r.push_back(k % M);  // column-major
        c.push_back(k / M);
        v.push_back(x);
      }
      continue;
    }
    const std::size_t want = info.pattern ? 2 : 3;
    if (t.size() != want)
      rd.fail("expected " + std::to_string(want) + " fields (row column" + (info.pattern ? "" : " value") + "), found '" +
              std::string(line) + "'");
    const long long i = rd.integer(t[0], "row index"), j = rd.integer(t[1], "column index");
    if (i < 1 || i > M || j < 1 || j > N)
      rd.fail("index (" + t[0] + ", " + t[1] + ") out of range for a " + std::to_string(M) + " x " + std::to_string(N) +
              " matrix (indices are 1-based)");
    if (info.symmetric && j > i) rd.fail("entry (" + t[0] + ", " + t[1] + ") above the diagonal in a symmetric matrix");
    const double x = info.pattern ? 1.0 : rd.real(t[2]);
    r.push_back(i - 1);
    c.push_back(j - 1);
    v.push_back(x);
    if (info.symmetric && i != j) {
      r.push_back(j - 1);
      c.push_back(i - 1);
      v.push_back(x);
    }
  }
  if (rd.data(line))
    rd.fail("wrong entry count: more entries than the " + std::to_string(L) + " declared ('" + std::string(line) + "')");
  return CsrMatrix::from_triplets(info.rows, info.cols, r, c, v);
}

std::string read_all(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw IOError(path + ": is a directory, not a Matrix Market file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(path + ": cannot open Matrix Market file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IOError(path + ": read error");
  return std::move(ss).str();
}

}  // namespace

MatrixMarketInfo read_matrix_market_info(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw IOError(path + ": is a directory, not a Matrix Market file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(path + ": cannot open Matrix Market file");
  const auto size = std::filesystem::file_size(path, ec);
  // The banner, comments and size line: read line by line up to the size line (comments may be
  // long, so no fixed prefix).
  std::string head, line;
  bool sized = false;
  int lines = 0;
  while (!sized && std::getline(in, line)) {
    head += line;
    head += '\n';
    if (++lines > 1 && !blank_or_comment(line)) sized = true;
  }
  Reader rd(path, head);
  if (ec) throw IOError(path + ": cannot determine the file size: " + ec.message());
  const std::size_t body = size > head.size() ? static_cast<std::size_t>(size) - head.size() : 0;
  return parse_header(rd, body, true);
}

CsrMatrix read_matrix_market(const std::string& path) { return detail::parse_matrix_market(path, read_all(path)); }

CsrMatrix detail::parse_matrix_market(const std::string& name, const std::string& text) {
  Reader rd(name, text);
  // The body's size is known only after the size line: parse the header on a first reader to
  // find where it ends, then check against the rest.
  Reader probe(name, text);
  std::string_view l;
  probe.raw(l);
  probe.data(l);
  const MatrixMarketInfo info = parse_header(rd, probe.remaining_bytes(), false);
  return parse_body(rd, info);
}

}  // namespace elliptica::io
