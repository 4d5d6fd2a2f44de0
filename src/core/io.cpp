/// @file io.cpp
/// Array files (.npy and text tables), whole-file reads, and atomic writes.
///
/// .npy format (NumPy "NEP 1"): magic "\x93NUMPY", major/minor version bytes, a little-endian
/// header length (uint16 for 1.0, uint32 for 2.0/3.0), an ASCII (UTF-8 for 3.0) Python dict
/// literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and ended
/// by '\n', then the raw data. All decoding here is byte-wise, so it works on any host order.
#include "elliptica/core/io.hpp"

#include "core/io_detail.hpp"
#include "elliptica/core/output.hpp"
#include "elliptica/core/text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string_view>
#include <system_error>

namespace elliptica::io {
namespace {

using text::NumberStatus;
using text::parse_number;
using text::printable;

namespace fs = std::filesystem;

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicLen = 6;

std::string errno_text(int e) { return std::system_category().message(e); }

bool ends_with_npy(const std::string& path) {
  if (path.size() < 4) return false;
  std::string suf = path.substr(path.size() - 4);
  for (auto& c : suf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return suf == ".npy";
}

// ------------------------------------------------------------------------------------------
// .npy header dict parsing
// ------------------------------------------------------------------------------------------

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
  bool have_descr = false, have_fortran = false, have_shape = false;
};

/// A minimal parser of the Python literal NumPy writes: a dict with string keys whose values are
/// strings, True/False or tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& path) : s_(s), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          fail("unsupported dtype (structured or non-string 'descr'); only little-endian float64, "
               "float32, int32, int64 are supported");
        h.descr = parse_string();
        h.have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        h.have_fortran = true;
      } else if (key == "shape") {
        h.shape = parse_tuple();
        h.have_shape = true;
      } else {
        fail("unexpected key '" + printable(key) + "' in header");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect('}');
      break;
    }
    if (!h.have_descr || !h.have_fortran || !h.have_shape)
      fail("header lacks one of the keys 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw IOError(path_ + ": bad .npy header: " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "' at offset " + std::to_string(i_));
    ++i_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string at offset " + std::to_string(i_));
    ++i_;
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    std::string out(s_.substr(start, i_ - start));
    ++i_;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("'fortran_order' is neither True nor False");
  }
  std::vector<std::uint64_t> parse_tuple() {
    expect('(');
    std::vector<std::uint64_t> dims;
    for (;;) {
      skip_ws();
      if (peek() == ')') {
        ++i_;
        return dims;
      }
      std::uint64_t v = 0;
      const char* b = s_.data() + i_;
      const char* e = s_.data() + s_.size();
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec != std::errc() || p == b) fail("shape entries must be non-negative integers");
      i_ += static_cast<std::size_t>(p - b);
      // Python long suffix of old NumPy versions ("3L").
      if (peek() == 'L') ++i_;
      dims.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect(')');
      return dims;
    }
  }
};

enum class DType { F8, F4, I4, I8 };

DType parse_descr(const std::string& d, const std::string& path) {
  const std::string bad = path + ": unsupported dtype '" + printable(d) +
                          "'; supported: little-endian float64 '<f8', float32 '<f4', int32 '<i4', int64 '<i8'";
  if (d.size() != 3) throw IOError(bad);
  const char order = d[0];
  if (order == '>') throw IOError(bad + " (big-endian data is not supported)");
  if (order != '<' && order != '|' && order != '=') throw IOError(bad);
  if (order == '=' && std::endian::native != std::endian::little)
    throw IOError(bad + " (native byte order of a big-endian host)");
  const std::string t = d.substr(1);
  if (t == "f8") return DType::F8;
  if (t == "f4") return DType::F4;
  if (t == "i4") return DType::I4;
  if (t == "i8") return DType::I8;
  throw IOError(bad);
}

std::size_t dtype_size(DType t) { return (t == DType::F8 || t == DType::I8) ? 8 : 4; }

std::uint64_t load_le(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(p[k]) << (8 * k);
  return v;
}

Array2D parse_npy(const std::string& path, const std::string& bytes) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kNpyMagicLen + 2)
    throw IOError(path + ": truncated .npy file: no version bytes after the magic string");
  const int major = u[6], minor = u[7];
  std::size_t len_bytes;
  if (major == 1 && minor == 0) {
    len_bytes = 2;
  } else if ((major == 2 || major == 3) && minor == 0) {
    len_bytes = 4;
  } else {
    throw IOError(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                  std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const std::size_t pre = kNpyMagicLen + 2 + len_bytes;
  if (bytes.size() < pre) throw IOError(path + ": truncated .npy file: incomplete header length");
  const std::uint64_t hlen = load_le(u + 8, len_bytes);
  if (bytes.size() - pre < hlen)
    throw IOError(path + ": truncated .npy file: header of " + std::to_string(hlen) + " bytes, found " +
                  std::to_string(bytes.size() - pre));
  const std::string_view header(bytes.data() + pre, static_cast<std::size_t>(hlen));
  const NpyHeader h = HeaderParser(header, path).parse();

  const DType dt = parse_descr(h.descr, path);
  if (h.shape.empty())
    throw IOError(path + ": rank-0 (scalar) arrays are not supported; expected a 1-D or 2-D array");
  if (h.shape.size() > 2)
    throw IOError(path + ": arrays of rank " + std::to_string(h.shape.size()) +
                  " are not supported; expected a 1-D or 2-D array");

  const std::uint64_t rows = h.shape[0];
  const std::uint64_t cols = h.shape.size() == 2 ? h.shape[1] : 1;
  const std::size_t isz = dtype_size(dt);
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() / 8;
  if (cols != 0 && rows > limit / cols) throw IOError(path + ": shape in header is too large");
  const std::uint64_t count = rows * cols;
  const std::uint64_t expected = count * isz;
  const std::uint64_t found = bytes.size() - pre - hlen;
  if (found < expected)
    throw IOError(path + ": truncated: expected " + std::to_string(expected) + " bytes of data, found " +
                  std::to_string(found));
  if (found > expected)
    throw IOError(path + ": corrupt .npy file: " + std::to_string(found - expected) +
                  " unexpected bytes after the data (expected " + std::to_string(expected) + ")");

  Array2D a(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), h.shape.size() == 1 ? 1 : 2);
  const unsigned char* p = u + pre + hlen;
  // Fortran (column-major) order stores element (i, j) of an (R, C) array at j*R + i; the
  // transposition into our row-major layout happens here. For rank 1 both orders coincide.
  const bool transpose = h.fortran_order && h.shape.size() == 2;
  const std::size_t R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
  for (std::size_t k = 0; k < count; ++k, p += isz) {
    const std::uint64_t raw = load_le(p, isz);
    double v = 0;
    switch (dt) {
      case DType::F8: v = std::bit_cast<double>(raw); break;
      case DType::F4: v = static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(raw))); break;
      case DType::I4: v = static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(raw))); break;
      case DType::I8: v = static_cast<double>(static_cast<std::int64_t>(raw)); break;
    }
    a.values[transpose ? (k % R) * C + k / R : k] = v;
  }
  return a;
}

// ------------------------------------------------------------------------------------------
// Text tables
// ------------------------------------------------------------------------------------------

/// True if `tok` can be a column name of a header line, i.e. it cannot be a number in any
/// common notation: it does not parse as one, it starts with an ASCII letter, '_' or a quote, or
/// with a non-ASCII UTF-8 character that is not a minus sign, dash or full-width digit (so
/// "(U+2212)1.5", "1.0D+00", "1;2;3", ".5" and "-x" are never taken for names), and it holds no
/// control characters (binary junk is not a header either).
bool is_name_token(std::string_view tok) {
  double v;
  if (tok.empty() || parse_number(tok, v) != NumberStatus::NotANumber) return false;
  for (unsigned char c : tok)
    if (c < 0x20 || c == 0x7f) return false;
  const unsigned char c0 = static_cast<unsigned char>(tok[0]);
  if (std::isalpha(c0) || c0 == '_' || c0 == '"' || c0 == '\'') return true;
  if (c0 < 0xC2) return false;  // digits, signs, '.', punctuation, stray continuation bytes
  // U+2212 minus, U+2010..U+2015 hyphens and dashes, U+FE63 small and U+FF0D full-width
  // hyphen-minus, U+FF10..U+FF19 full-width digits: number-like, never a name.
  if (tok.starts_with("\xE2\x88\x92")) return false;
  if (tok.size() >= 3 && c0 == 0xE2 && static_cast<unsigned char>(tok[1]) == 0x80 &&
      static_cast<unsigned char>(tok[2]) >= 0x90 && static_cast<unsigned char>(tok[2]) <= 0x95)
    return false;
  if (tok.starts_with("\xEF\xB9\xA3") || tok.starts_with("\xEF\xBC\x8D")) return false;
  if (tok.size() >= 3 && c0 == 0xEF && static_cast<unsigned char>(tok[1]) == 0xBC &&
      static_cast<unsigned char>(tok[2]) >= 0x90 && static_cast<unsigned char>(tok[2]) <= 0x99)
    return false;
  return true;
}

/// Why a token that looks like a number in another notation is not one here ("" if no guess).
std::string number_hint(std::string_view tok) {
  if (tok.find("\xE2\x88\x92") != std::string_view::npos)
    return " (U+2212 is a typographic minus sign: write an ASCII '-')";
  for (std::string_view dash : {"\xE2\x80\x90", "\xE2\x80\x91", "\xE2\x80\x92", "\xE2\x80\x93",
                                "\xE2\x80\x94", "\xE2\x80\x95", "\xEF\xB9\xA3", "\xEF\xBC\x8D"})
    if (tok.find(dash) != std::string_view::npos) return " (a Unicode dash is not a minus sign: write an ASCII '-')";
  if (tok.find(';') != std::string_view::npos)
    return " (';' is not a column separator: use commas and/or whitespace)";
  const std::size_t d = tok.find_first_of("dDqQ");
  if (d != std::string_view::npos && d > 0 && std::isdigit(static_cast<unsigned char>(tok[d - 1])) != 0) {
    std::string t(tok);
    t[d] = 'e';
    double v;
    if (parse_number(t, v) == NumberStatus::Ok) return " (Fortran 'D' exponents are not read: write 'E')";
  }
  return {};
}

/// Splits one data line (comment and '\n' already removed) into fields separated by whitespace
/// and/or commas. Returns false if a comma-separated field is empty.
bool split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  // Each comma-delimited piece (the whole line when it has no comma) holds one or more
  // whitespace-separated tokens.
  std::size_t start = 0;
  const bool has_comma = line.find(',') != std::string_view::npos;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    const std::size_t before = out.size();
    text::split_ws(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start), out);
    if (has_comma && out.size() == before) return false;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

/// Text table: rows of numbers separated by whitespace and/or commas; '#' starts a comment.
/// The first non-blank, non-comment line may be ONE header line of column names (every token a
/// name by is_name_token, so never a row of numbers in another notation); it is skipped but
/// fixes the column count, so a header-only file is an empty (0, ncols) table, and it is
/// reported through `info`. Any other non-numeric token is an error naming file:line and column.
Array2D parse_text(const std::string& path, std::string_view text, ReadInfo* info) {
  Array2D a;
  a.ndim = 2;
  std::size_t ncols = 0, first_line = 0, line_no = 0, rows = 0;
  bool have_header = false, seen_content = false;
  std::vector<std::string_view> fields;
  const std::string_view all(text);
  std::size_t pos = all.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // UTF-8 byte-order mark
  while (pos < all.size()) {
    std::size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    std::string_view line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    if (!split_fields(line, fields))
      throw IOError(path + ":" + std::to_string(line_no) + ": empty field between commas");
    if (fields.empty()) continue;
    const auto here = [&] { return path + ":" + std::to_string(line_no) + ": "; };
    if (!seen_content) {
      seen_content = true;
      ncols = fields.size();
      first_line = line_no;
      if (std::all_of(fields.begin(), fields.end(), is_name_token)) {
        have_header = true;  // a line of column names: skip it, and say so
        if (info) {
          info->header_line = line_no;
          info->column_names.assign(fields.begin(), fields.end());
        }
        continue;
      }
    } else if (fields.size() != ncols) {
      throw IOError(here() + "ragged rows: this row has " + std::to_string(fields.size()) + " values, " +
                    (have_header ? "the header (line " + std::to_string(first_line) + ") names "
                                 : "line " + std::to_string(first_line) + " has ") +
                    std::to_string(ncols));
    }
    for (std::size_t j = 0; j < fields.size(); ++j) {
      double v;
      switch (parse_number(fields[j], v)) {
        case NumberStatus::Ok: break;
        case NumberStatus::Overflow:
          throw IOError(here() + "value '" + printable(fields[j]) + "' (column " + std::to_string(j + 1) +
                        ") is out of the double range (magnitude above 1.8e308)");
        case NumberStatus::NotANumber:
          throw IOError(here() + "non-numeric token '" + printable(fields[j]) + "' (column " +
                        std::to_string(j + 1) + ")" + number_hint(fields[j]) +
                        (have_header || line_no != first_line
                             ? std::string()
                             : std::string(" (a first line of column names is accepted only if every "
                                           "field is a name: it starts with a letter, '_' or a quote)")));
      }
      a.values.push_back(v);
    }
    ++rows;
  }
  a.rows = rows;
  a.cols = seen_content ? ncols : 0;
  if (seen_content && ncols == 1) a.ndim = 1;
  return a;
}

void check_array(const Array2D& a, const std::string& path) {
  if (a.values.size() != a.rows * a.cols)
    throw InvalidArgument(path + ": inconsistent array: " + std::to_string(a.values.size()) +
                          " values for shape (" + std::to_string(a.rows) + "," + std::to_string(a.cols) + ")");
  if (a.ndim == 1 && a.cols != 1)
    throw InvalidArgument(path + ": inconsistent array: ndim 1 with " + std::to_string(a.cols) + " columns");
  if (a.ndim != 1 && a.ndim != 2)
    throw InvalidArgument(path + ": only arrays of rank 1 or 2 can be written, got ndim " + std::to_string(a.ndim));
}

/// The shortest decimal text that reads back as the same double (std::to_chars without a
/// precision): 27.1, not 27.100000000000001.
std::string format_double(double v) {
  char buf[40];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  return std::string(buf, p);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Public API
// ------------------------------------------------------------------------------------------

std::string read_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw IOError(path + ": cannot access file: " + ec.message());
    throw IOError(path + ": no such file");
  }
  if (fs::is_directory(st)) throw IOError(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(path + ": cannot open file for reading: " + errno_text(errno));
  std::string data;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    data.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw IOError(path + ": read error: " + errno_text(errno));
  return data;
}


Array2D read_array(const std::string& path, ReadInfo* info) { return detail::parse_array(path, read_file(path), info); }

Array2D detail::parse_array(const std::string& path, const std::string& bytes, ReadInfo* info) {
  if (info) *info = ReadInfo{};
  // The content decides, not the name: the NumPy magic string means .npy, anything else is
  // read as a text table (whatever the suffix).
  if (bytes.compare(0, kNpyMagicLen, kNpyMagic, kNpyMagicLen) == 0) return parse_npy(path, bytes);
  try {
    return parse_text(path, bytes, info);
  } catch (const IOError& e) {
    if (!ends_with_npy(path)) throw;
    // Most likely a damaged or mislabelled binary file: say why it was read as text.
    throw IOError(std::string(e.what()) +
                  " (the file does not start with the .npy magic string \\x93NUMPY, so it was read as a text "
                  "table)");
  }
}

void write_npy(OutputFile& w, const Array2D& a) {
  const std::string& path = w.path();
  check_array(a, path);
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (";
  dict += std::to_string(a.rows);
  if (a.ndim == 1)
    dict += ",), }";
  else
    dict += ", " + std::to_string(a.cols) + "), }";
  // Pad with spaces so that magic + version + length + dict + '\n' is a multiple of 64 bytes.
  const std::size_t pre = kNpyMagicLen + 2 + 2;
  std::size_t total = pre + dict.size() + 1;
  const std::size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict.push_back('\n');
  if (dict.size() > 0xffff) throw IOError(path + ": .npy header too long");
  char head[10];
  std::memcpy(head, kNpyMagic, kNpyMagicLen);
  head[6] = 1;
  head[7] = 0;
  head[8] = static_cast<char>(dict.size() & 0xff);
  head[9] = static_cast<char>((dict.size() >> 8) & 0xff);
  w.write(head, 10);
  w.write(dict);
  char chunk[8 * 1024];
  std::size_t k = 0;
  const std::size_t n = a.values.size();
  while (k < n) {
    const std::size_t m = std::min<std::size_t>(n - k, sizeof chunk / 8);
    for (std::size_t t = 0; t < m; ++t) {
      const std::uint64_t raw = std::bit_cast<std::uint64_t>(a.values[k + t]);
      for (int b = 0; b < 8; ++b) chunk[8 * t + b] = static_cast<char>((raw >> (8 * b)) & 0xff);
    }
    w.write(chunk, 8 * m);
    k += m;
  }
}

void write_csv(OutputFile& w, const Array2D& a, const std::string& header) {
  check_array(a, w.path());
  if (!header.empty()) {
    std::istringstream hs(header);
    std::string line;
    while (std::getline(hs, line)) {
      if (line.empty() || line[0] != '#') w.write("# ");
      w.write(line);
      w.write("\n");
    }
  }
  if (a.rows == 0 && a.cols > 0) {
    // No data rows: a line of column names keeps the shape, as read_array takes a first line
    // of names as a header, so (0, C) reads back as (0, C) ((0, 1) as (0,)).
    std::string names;
    for (std::size_t j = 0; j < a.cols; ++j) names += (j ? ",col" : "col") + std::to_string(j + 1);
    names.push_back('\n');
    w.write(names);
  }
  std::string row;
  for (std::size_t i = 0; i < a.rows; ++i) {
    row.clear();
    for (std::size_t j = 0; j < a.cols; ++j) {
      if (j) row.push_back(',');
      row += format_double(a.values[i * a.cols + j]);
    }
    row.push_back('\n');
    w.write(row);
  }
}

void write_array(OutputFile& w, const Array2D& a) {
  if (ends_with_npy(w.path()))
    write_npy(w, a);
  else
    write_csv(w, a);
}

void write_npy(const std::string& path, const Array2D& a) {
  check_array(a, path);
  OutputFile f(path);
  write_npy(f, a);
  f.commit();
}

void write_csv(const std::string& path, const Array2D& a, const std::string& header) {
  check_array(a, path);
  OutputFile f(path);
  write_csv(f, a, header);
  f.commit();
}

void write_array(const std::string& path, const Array2D& a) {
  if (ends_with_npy(path))
    write_npy(path, a);
  else
    write_csv(path, a);
}

void write_text_atomic(const std::string& path, const std::string& text) {
  OutputFile f(path);
  f.write(text);
  f.commit();
}

}  // namespace elliptica::io
