#pragma once
/// @file io.hpp
/// Array files: NumPy .npy (format 1.0/2.0/3.0, little-endian float64/float32/int32/int64, C or
/// Fortran order; read is converted to C-order float64) and whitespace/comma separated text
/// ('#' starts a comment; one optional header line of column names). The format is detected by
/// content: a file that starts with the .npy magic string is .npy, anything else is text, whatever
/// its suffix. Writers go through a temporary file in the target's folder that is renamed into
/// place, so a failed write leaves nothing behind (output.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "elliptica/core/array.hpp"

namespace elliptica::io {

/// What read_array() found besides the numbers.
struct ReadInfo {
  std::size_t header_line = 0;            ///< 1-based line of a skipped header of column names, 0: none
  std::vector<std::string> column_names;  ///< the names of that header line
};

/// Reads a .npy file (by magic string) or a text table. A 1-D array comes back with
/// ndim == 1, cols == 1. A text table's first line is taken as a header of column names (and
/// skipped) only when every field is a name: it starts with a letter, '_' or a quote and is not a
/// number in any common notation (a first row "(U+2212)1.5 2 3", "1.0D+00 ..." or "1;2;3" is an
/// error naming the token, never a silently dropped header); `info` (if given) reports a skipped
/// header so that callers can say so. Throws IOError naming the file and the problem (missing,
/// unreadable, truncated, bad header, unsupported dtype or rank, ragged text rows, non-numeric
/// token, a value out of the double range).
Array2D read_array(const std::string& path, ReadInfo* info = nullptr);

class OutputFile;  // output.hpp

/// Writes `a` as .npy (if `path` ends in .npy) or as CSV text (the shortest round-trip decimal of each value, one row a
/// line) otherwise, through an OutputFile (output.hpp): temporary file + rename, a FIFO or a
/// character device written through, the mode of a replaced file kept. Throws InvalidArgument for
/// an inconsistent array, IOError on failure (nothing is left behind).
void write_array(const std::string& path, const Array2D& a);
void write_npy(const std::string& path, const Array2D& a);
void write_csv(const std::string& path, const Array2D& a, const std::string& header = "");
/// The same into an OutputFile prepared earlier (before the computation); the caller commits.
void write_array(OutputFile& out, const Array2D& a);
void write_npy(OutputFile& out, const Array2D& a);
void write_csv(OutputFile& out, const Array2D& a, const std::string& header = "");

/// Writes `text` to `path` atomically (OutputFile: temporary file in the same folder, then rename).
void write_text_atomic(const std::string& path, const std::string& text);

/// The bytes of the file at `path`. Throws IOError naming the file when it is missing ("no such
/// file"), a folder, unreadable or fails mid-read.
std::string read_file(const std::string& path);

}  // namespace elliptica::io
