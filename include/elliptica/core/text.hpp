#pragma once
/// @file text.hpp
/// Text-parsing helpers shared by the file readers (core io, the .gro reader, the mesh readers)
/// and the command-line tool: trimming, splitting into fields or lines, strict number parsing,
/// and printable excerpts of bad input for error messages. All of them work on bytes (ASCII
/// whitespace, C locale); none allocates more than its result.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elliptica::text {

/// True for the ASCII whitespace of std::isspace in the C locale: ' ', \t, \n, \v, \f, \r.
constexpr bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/// `s` without leading and trailing whitespace (is_space).
std::string_view trim(std::string_view s);

/// The whitespace-separated fields of `s` (no empty fields).
std::vector<std::string_view> split_ws(std::string_view s);
/// The same, appended to `out` (a reused buffer).
void split_ws(std::string_view s, std::vector<std::string_view>& out);

/// The pieces of `s` between the separators `sep`, each trimmed; "" gives no piece, a trailing
/// separator a last empty piece ("a,b," -> {"a", "b", ""}), as does ",," between separators.
std::vector<std::string> split(std::string_view s, char sep);

/// The lines of `text` without their terminator ("\n" or "\r\n"); a last line without a
/// terminator counts, an empty text has no lines.
std::vector<std::string_view> split_lines(std::string_view text);

/// `s` fit for an error message: bytes outside printable ASCII as \xNN, cut after `max_len`
/// bytes (with "...").
std::string printable(std::string_view s, std::size_t max_len = 40);

/// `v` in its shortest round-trip decimal form (std::to_chars: "0.1", "1e+160", "-0", "inf") for
/// error messages, where std::to_string would print "0.000000" for 1e-7 and 160 digits for 1e160.
std::string shortest(double v);

/// Outcome of parse_number().
enum class NumberStatus { Ok, NotANumber, Overflow };

/// Parses all of `tok` as one decimal floating-point number (std::from_chars syntax: no
/// surrounding space, "inf"/"nan" accepted, no hexadecimal prefix) with an optional leading '+'
/// (not "+-1" or "++1"). A magnitude above the double range gives Overflow; one below the
/// smallest subnormal rounds to a signed zero (Ok), as strtod and NumPy do.
NumberStatus parse_number(std::string_view tok, double& v);

/// parse_number() == Ok.
bool parse_double(std::string_view tok, double& v);

/// Parses all of `tok` as a decimal integer with an optional sign ('+' or '-', not both) that
/// fits in int64; false otherwise (`v` unchanged then).
bool parse_int(std::string_view tok, std::int64_t& v);

/// parse_double() of a command-line value: throws InvalidArgument "<what>: '<tok>' is not a
/// number" when it is not one (or overflows).
double to_double(std::string_view tok, const std::string& what);

/// parse_int() of a command-line value that must fit in int: throws InvalidArgument "<what>:
/// '<tok>' is not an integer" otherwise.
int to_int(std::string_view tok, const std::string& what);

}  // namespace elliptica::text
