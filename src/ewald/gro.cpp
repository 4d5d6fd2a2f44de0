/// @file gro.cpp
/// The GROMACS .gro reader of the Ewald front end (gro.hpp).
#include "elliptica/ewald/gro.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::ewald {

using text::parse_double;
using text::printable;
using text::split_lines;
using text::split_ws;
using text::trim;

GroFile read_gro(const std::string& path) { return parse_gro(path, io::read_file(path)); }

GroFile parse_gro(const std::string& path, const std::string& text) {
  const std::vector<std::string_view> lines = split_lines(text);
  if (lines.size() < 2) throw IOError(path + ": not a .gro file: missing title or atom-count line");
  const std::string_view count_s = trim(lines[1]);
  long long natoms = -1;
  {
    auto [p, ec] = std::from_chars(count_s.data(), count_s.data() + count_s.size(), natoms);
    if (ec != std::errc() || p != count_s.data() + count_s.size() || natoms < 0)
      throw IOError(path + ":2: not a .gro file: expected the number of atoms, found '" + printable(count_s) + "'");
  }
  const std::size_t n = static_cast<std::size_t>(natoms);
  if (lines.size() < n + 3)
    throw IOError(path + ": truncated .gro file: expected " + std::to_string(n) + " atom lines and a box line, found " +
                  std::to_string(lines.size() >= 2 ? lines.size() - 2 : 0) + " lines after the atom count");

  GroFile g;
  g.positions = Array2D(n, 3, 2);
  g.atom_names.reserve(n);
  g.residue_names.reserve(n);
  // Coordinate field width: GROMACS writes %8.3f by default but allows other precisions; the
  // width is the distance between the first two decimal points of the first atom line.
  // Every coordinate field is then checked to be a fixed-point number with its decimal point in
  // the same place as on that line (GROMACS writes %{p+5}.{p}f), so a misaligned or damaged field
  // (e.g. "-1e308" shifting the columns) is an error instead of a silently different number.
  std::size_t width = 8, dot = 4;
  if (n > 0) {
    const std::string_view l = lines[2];
    const std::size_t d1 = l.size() > 20 ? l.find('.', 20) : std::string_view::npos;
    const std::size_t d2 = d1 == std::string_view::npos ? d1 : l.find('.', d1 + 1);
    if (d1 == std::string_view::npos || d2 == std::string_view::npos)
      throw IOError(path + ":3: malformed atom line: no coordinates with decimal points after column 20");
    width = d2 - d1;
    dot = d1 - 20;
    if (width < 4) throw IOError(path + ":3: malformed atom line: coordinate fields too narrow");
    if (dot + 1 >= width)
      throw IOError(path + ":3: malformed atom line: the first coordinate has no digits after its decimal point");
  }
  // "   -1.234": spaces, an optional sign, digits, '.' at offset `dot`, digits to the end.
  auto fixed_point = [&](std::string_view f) {
    if (f.size() != width || f[dot] != '.') return false;
    for (std::size_t k = dot + 1; k < width; ++k)
      if (!std::isdigit(static_cast<unsigned char>(f[k]))) return false;
    std::size_t k = 0;
    while (k < dot && f[k] == ' ') ++k;
    if (k < dot && (f[k] == '-' || f[k] == '+')) ++k;
    for (; k < dot; ++k)
      if (!std::isdigit(static_cast<unsigned char>(f[k]))) return false;
    return true;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view l = lines[2 + i];
    const std::string where = path + ":" + std::to_string(i + 3) + ": ";
    if (l.size() < 20 + 3 * width)
      throw IOError(where + "malformed atom line: expected at least " + std::to_string(20 + 3 * width) +
                    " characters (fixed columns), found " + std::to_string(l.size()));
    g.residue_names.emplace_back(trim(l.substr(5, 5)));
    g.atom_names.emplace_back(trim(l.substr(10, 5)));
    for (int c = 0; c < 3; ++c) {
      const std::string_view field = l.substr(20 + c * width, width);
      const std::string_view tok = trim(field);
      double v;
      if (!fixed_point(field) || !parse_double(tok, v) || !std::isfinite(v))
        throw IOError(where + "malformed coordinate " + "xyz"[c] + ": field '" + printable(field) + "' (columns " +
                      std::to_string(21 + c * width) + "-" + std::to_string(20 + (c + 1) * width) +
                      ") is not a fixed-point number with its decimal point in column " +
                      std::to_string(21 + c * width + dot) + " as on line 3: misaligned or damaged line");
      g.positions.values[3 * i + c] = v;
    }
  }
  const std::string_view boxl = lines[2 + n];
  const std::vector<std::string_view> toks = split_ws(boxl);
  const std::string where = path + ":" + std::to_string(n + 3) + ": ";
  if (toks.size() != 3 && toks.size() != 9)
    throw IOError(where + "malformed box line: expected 3 (or 9) numbers, found " + std::to_string(toks.size()));
  double b[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (std::size_t k = 0; k < toks.size(); ++k) {
    if (!parse_double(toks[k], b[k]) || !std::isfinite(b[k]))
      throw IOError(where + "malformed box line: non-numeric value '" + printable(toks[k]) + "'");
  }
  for (int k = 3; k < 9; ++k)
    if (b[k] != 0.0)
      throw IOError(where + "triclinic box (nonzero off-diagonal box vector components) is not supported; "
                            "only rectangular boxes");
  for (int k = 0; k < 3; ++k) g.box[k] = b[k];
  return g;
}

}  // namespace elliptica::ewald
