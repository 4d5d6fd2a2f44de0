/// @file mesh_io.cpp
/// Surface mesh readers (Gmsh MSH 2.2 / 4.1 ASCII and binary, Wavefront OBJ, STL ASCII and
/// binary) and an atomic OBJ writer.
#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "elliptica/bem/mesh.hpp"

#include "bem/mesh_io_detail.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::bem {

namespace {

using Vec3 = std::array<double, 3>;

[[noreturn]] void fail_line(const std::string& path, std::size_t line, const std::string& what) {
  throw IOError(path + ":" + std::to_string(line) + ": " + what);
}
[[noreturn]] void fail_byte(const std::string& path, std::size_t offset, const std::string& what) {
  throw IOError(path + ": byte " + std::to_string(offset) + ": " + what);
}

// Tokens and numbers: the shared helpers of core/text.hpp.
using text::parse_double;
using text::parse_int;
using text::trim;
std::vector<std::string_view> split(std::string_view s) { return text::split_ws(s); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string quoted(std::string_view s) {
  std::string t(s.substr(0, 40));
  for (char& ch : t)
    if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
  return "'" + t + (s.size() > 40 ? "...'" : "'");
}

/// Byte cursor over a file buffer that reads text lines (tracking the line number) and binary
/// values (tracking the byte offset).
struct Cursor {
  const std::string& buf;
  const std::string& path;
  std::size_t pos = 0;
  std::size_t line = 0;  ///< number of the line last returned by next_line()
  bool swap = false;     ///< binary data in the other byte order

  bool at_end() const { return pos >= buf.size(); }

  /// Next line without its terminator ("\n" or "\r\n"); false at end of file.
  bool next_line(std::string_view& out) {
    if (pos >= buf.size()) return false;
    const std::size_t nl = buf.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? buf.size() : nl;
    out = std::string_view(buf).substr(pos, end - pos);
    if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
    pos = nl == std::string::npos ? buf.size() : nl + 1;
    ++line;
    return true;
  }
  /// Next non-blank line, or an IOError saying `expected` at end of file.
  std::string_view expect_line(const std::string& expected) {
    std::string_view l;
    while (next_line(l))
      if (!trim(l).empty()) return trim(l);
    fail_line(path, line + 1, "unexpected end of file, expected " + expected);
  }

  void need(std::size_t bytes, const std::string& what) const {
    if (bytes > buf.size() || pos > buf.size() - bytes)
      fail_byte(path, pos,
                "truncated binary data: expected " + what + " (" + std::to_string(bytes) +
                    " bytes), only " + std::to_string(buf.size() - std::min(pos, buf.size())) +
                    " left");
  }
  /// Checks that `count` items of `per` bytes each remain (overflow-safe for corrupt counts).
  void need_items(std::uint64_t count, std::size_t per, const std::string& what) const {
    const std::size_t left = buf.size() - std::min(pos, buf.size());
    if (per > 0 && count > left / per)
      fail_byte(path, pos,
                "truncated binary data: expected " + what + " (" + std::to_string(count) + " x " +
                    std::to_string(per) + " bytes), only " + std::to_string(left) + " left");
  }
  template <class T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    std::array<unsigned char, sizeof(T)> raw;
    std::memcpy(raw.data(), buf.data() + pos, sizeof(T));
    if (swap) std::reverse(raw.begin(), raw.end());
    T v;
    std::memcpy(&v, raw.data(), sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::uint64_t get_size(int size_bytes, const std::string& what) {
    return size_bytes == 4 ? get<std::uint32_t>(what) : get<std::uint64_t>(what);
  }
};

// ---------------------------------------------------------------------------------------------
// Gmsh
// ---------------------------------------------------------------------------------------------

/// Nodes per element for the Gmsh element types (needed to walk binary element data).
int gmsh_nodes_per_element(std::int64_t type) {
  switch (type) {
    case 1: return 2;    // 2-node line
    case 2: return 3;    // 3-node triangle
    case 3: return 4;    // 4-node quadrangle
    case 4: return 4;    // 4-node tetrahedron
    case 5: return 8;    // 8-node hexahedron
    case 6: return 6;    // 6-node prism
    case 7: return 5;    // 5-node pyramid
    case 8: return 3;    // 3-node line
    case 9: return 6;    // 6-node triangle
    case 10: return 9;   // 9-node quadrangle
    case 11: return 10;  // 10-node tetrahedron
    case 12: return 27;  // 27-node hexahedron
    case 13: return 18;  // 18-node prism
    case 14: return 14;  // 14-node pyramid
    case 15: return 1;   // point
    case 16: return 8;   // 8-node quadrangle
    case 17: return 20;  // 20-node hexahedron
    case 18: return 15;  // 15-node prism
    case 19: return 13;  // 13-node pyramid
    case 20: return 9;   // 9-node incomplete triangle
    case 21: return 10;  // 10-node triangle
    case 22: return 12;  // 12-node incomplete triangle
    case 23: return 15;  // 15-node triangle
    case 24: return 15;  // 15-node incomplete triangle
    case 25: return 21;  // 21-node triangle
    case 26: return 4;   // 4-node edge
    case 27: return 5;   // 5-node edge
    case 28: return 6;   // 6-node edge
    case 29: return 20;  // 20-node tetrahedron
    case 30: return 35;  // 35-node tetrahedron
    case 31: return 56;  // 56-node tetrahedron
    case 92: return 64;  // 64-node hexahedron
    case 93: return 125; // 125-node hexahedron
    default: return -1;
  }
}

struct GmshData {
  std::vector<Vec3> nodes;
  std::unordered_map<std::int64_t, std::int32_t> tag_to_node;
  struct Tri {
    std::array<std::int64_t, 6> tags;  // corners, then (type 9) the midside nodes of edges 01, 12, 20
    std::string where;  // "line N" or "byte N", for error messages
    bool quadratic = false;
  };
  std::vector<Tri> tris;

  void add_node(const std::string& path, const std::string& where, std::int64_t tag, const Vec3& x) {
    if (nodes.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw IOError(path + ": " + where + ": too many nodes");
    auto [it, inserted] = tag_to_node.emplace(tag, static_cast<std::int32_t>(nodes.size()));
    if (!inserted)
      throw IOError(path + ": " + where + ": duplicate node tag " + std::to_string(tag));
    nodes.push_back(x);
  }
};

class GmshReader {
 public:
  GmshReader(const std::string& path, const std::string& buf) : c_{buf, path}, path_(path) {}

  Mesh read() {
    read_format();
    bool have_nodes = false, have_elements = false;
    std::string_view l;
    while (c_.next_line(l)) {
      const std::string_view t = trim(l);
      if (t.empty()) continue;
      if (t[0] != '$') fail_line(path_, c_.line, "expected a section header '$...', got " + quoted(t));
      const std::string name(t.substr(1));
      if (name == "Nodes") {
        if (have_nodes) fail_line(path_, c_.line, "second $Nodes section");
        have_nodes = true;
        if (v4_) read_nodes4(); else read_nodes2();
        expect_end("$EndNodes");
      } else if (name == "Elements") {
        if (have_elements) fail_line(path_, c_.line, "second $Elements section");
        have_elements = true;
        if (v4_) read_elements4(); else read_elements2();
        expect_end("$EndElements");
      } else {
        skip_section(name);
      }
    }
    if (!have_nodes) throw IOError(path_ + ": no $Nodes section");
    if (!have_elements) throw IOError(path_ + ": no $Elements section");
    return assemble();
  }

 private:
  Cursor c_;
  const std::string& path_;
  bool v4_ = false, binary_ = false;
  int dsize_ = 8;
  GmshData d_;

  std::string at_byte() const { return "byte " + std::to_string(c_.pos); }
  std::string at_line() const { return "line " + std::to_string(c_.line); }

  void read_format() {
    const std::string_view first = c_.expect_line("'$MeshFormat'");
    if (first != "$MeshFormat")
      fail_line(path_, c_.line, "expected '$MeshFormat', got " + quoted(first));
    const std::string_view fl = c_.expect_line("'version file-type data-size'");
    const auto tok = split(fl);
    std::int64_t type = 0, dsize = 0;
    if (tok.size() < 3 || !parse_int(tok[1], type) || !parse_int(tok[2], dsize))
      fail_line(path_, c_.line, "expected 'version file-type data-size', got " + quoted(fl));
    const std::string_view ver = tok[0];
    if (ver == "4.1") v4_ = true;
    else if (ver == "2" || ver.substr(0, 2) == "2.") v4_ = false;
    else fail_line(path_, c_.line, "unsupported MSH version " + quoted(ver) + " (supported: 2.2, 4.1)");
    if (type != 0 && type != 1)
      fail_line(path_, c_.line, "file-type must be 0 (ASCII) or 1 (binary), got " + std::to_string(type));
    binary_ = type == 1;
    dsize_ = static_cast<int>(dsize);
    if (binary_) {
      if (v4_ ? (dsize != 4 && dsize != 8) : dsize != 8)
        fail_line(path_, c_.line, "unsupported data-size " + std::to_string(dsize) +
                                      (v4_ ? " (expected 4 or 8)" : " (expected 8)"));
      const std::size_t off = c_.pos;
      c_.need(4, "the binary integer 1 (endianness marker)");
      std::uint32_t one;
      std::memcpy(&one, c_.buf.data() + c_.pos, 4);
      if (one == 1u) c_.swap = false;
      else if (one == 0x01000000u) c_.swap = true;
      else fail_byte(path_, off, "endianness marker: expected the integer 1 in either byte order");
      c_.pos += 4;
      std::string_view rest;
      c_.next_line(rest);  // remainder of the marker line (normally empty)
      if (!trim(rest).empty()) fail_byte(path_, off + 4, "expected a newline after the endianness marker");
    }
    expect_end("$EndMeshFormat");
  }

  void expect_end(const char* marker) {
    const std::string_view l = c_.expect_line(std::string("'") + marker + "'");
    if (l != marker)
      fail_line(path_, c_.line, std::string("expected '") + marker + "', got " + quoted(l));
  }

  void skip_section(const std::string& name) {
    const std::string end = "$End" + name;
    const std::size_t start = c_.line;
    std::string_view l;
    while (c_.next_line(l))
      if (trim(l) == end) return;
    fail_line(path_, start, "section $" + name + " has no '" + end + "'");
  }

  std::int64_t count_line(const char* what) {
    const std::string_view l = c_.expect_line(what);
    std::int64_t n;
    const auto tok = split(l);
    if (tok.size() != 1 || !parse_int(tok[0], n) || n < 0)
      fail_line(path_, c_.line, std::string("expected ") + what + ", got " + quoted(l));
    return n;
  }

  std::vector<std::int64_t> int_line(std::size_t min_count, const std::string& what) {
    const std::string_view l = c_.expect_line(what);
    const auto tok = split(l);
    std::vector<std::int64_t> v(tok.size());
    for (std::size_t i = 0; i < tok.size(); ++i)
      if (!parse_int(tok[i], v[i])) fail_line(path_, c_.line, "expected " + what + ", got " + quoted(l));
    if (v.size() < min_count) fail_line(path_, c_.line, "expected " + what + ", got " + quoted(l));
    return v;
  }

  Vec3 xyz(const std::vector<std::string_view>& tok, std::size_t first, std::string_view l) {
    Vec3 x;
    for (int d = 0; d < 3; ++d)
      if (first + static_cast<std::size_t>(d) >= tok.size() ||
          !parse_double(tok[first + static_cast<std::size_t>(d)], x[d]))
        fail_line(path_, c_.line, "expected node coordinates 'x y z', got " + quoted(l));
    return x;
  }

  // --- MSH 2.2 ---
  void read_nodes2() {
    const std::int64_t n = count_line("the number of nodes");
    if (binary_) {
      c_.need_items(static_cast<std::uint64_t>(n), 28u, std::to_string(n) + " binary nodes (int tag, 3 doubles)");
      for (std::int64_t i = 0; i < n; ++i) {
        const std::string where = at_byte();
        const auto tag = c_.get<std::int32_t>("node tag");
        Vec3 x;
        for (int dd = 0; dd < 3; ++dd) x[dd] = c_.get<double>("node coordinate");
        d_.add_node(path_, where, tag, x);
      }
      return;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const std::string_view l = c_.expect_line("a node line 'tag x y z'");
      const auto tok = split(l);
      std::int64_t tag;
      if (tok.size() < 4 || !parse_int(tok[0], tag))
        fail_line(path_, c_.line, "expected a node line 'tag x y z', got " + quoted(l));
      d_.add_node(path_, at_line(), tag, xyz(tok, 1, l));
    }
  }

  void read_elements2() {
    const std::int64_t m = count_line("the number of elements");
    if (binary_) {
      std::int64_t done = 0;
      while (done < m) {
        const std::size_t hdr = c_.pos;
        const auto type = c_.get<std::int32_t>("element block header (type)");
        const auto count = c_.get<std::int32_t>("element block header (count)");
        const auto ntags = c_.get<std::int32_t>("element block header (number of tags)");
        const int nn = gmsh_nodes_per_element(type);
        if (nn < 0) fail_byte(path_, hdr, "unknown element type " + std::to_string(type));
        if (count <= 0 || count > m - done || ntags < 0)
          fail_byte(path_, hdr, "invalid element block header (type " + std::to_string(type) +
                                    ", count " + std::to_string(count) + ", tags " +
                                    std::to_string(ntags) + ")");
        const std::size_t per = 4u * (1u + static_cast<std::size_t>(ntags) + static_cast<std::size_t>(nn));
        c_.need_items(static_cast<std::uint64_t>(count), per, std::to_string(count) + " elements of type " + std::to_string(type));
        for (std::int32_t i = 0; i < count; ++i) {
          const std::string where = at_byte();
          c_.get<std::int32_t>("element tag");
          for (std::int32_t t = 0; t < ntags; ++t) c_.get<std::int32_t>("element tag list");
          std::array<std::int64_t, 6> tri{};
          for (int k = 0; k < nn; ++k) {
            const auto v = c_.get<std::int32_t>("element node tag");
            if (type == 2 || type == 9) tri[static_cast<std::size_t>(k)] = v;
          }
          if (type == 2 || type == 9) d_.tris.push_back({tri, where, type == 9});
        }
        done += count;
      }
      return;
    }
    for (std::int64_t i = 0; i < m; ++i) {
      const auto v = int_line(3, "an element line 'tag type ntags tags... nodes...'");
      const std::int64_t type = v[1], ntags = v[2];
      if (ntags < 0 || static_cast<std::size_t>(ntags) + 3 > v.size())
        fail_line(path_, c_.line, "element line has fewer tags than its ntags " + std::to_string(ntags));
      if (type != 2 && type != 9) continue;
      const std::size_t nn = type == 9 ? 6 : 3;
      if (v.size() != static_cast<std::size_t>(3 + ntags) + nn)
        fail_line(path_, c_.line, std::string(type == 9 ? "a 6-node triangle (type 9)" : "a triangle (type 2)") +
                                      " needs exactly " + std::to_string(nn) + " node tags after its " +
                                      std::to_string(ntags) + " tags, got " +
                                      std::to_string(v.size() - 3 - static_cast<std::size_t>(ntags)));
      const std::size_t b = static_cast<std::size_t>(3 + ntags);
      std::array<std::int64_t, 6> tri{};
      for (std::size_t k = 0; k < nn; ++k) tri[k] = v[b + k];
      d_.tris.push_back({tri, at_line(), type == 9});
    }
  }

  // --- MSH 4.1 ---
  /// Wording of the errors of one MSH 4.1 block section ($Nodes or $Elements).
  struct Blocks4 {
    const char* section;       ///< "$Nodes"
    const char* item;          ///< "Node" (as in the header fields numNodes, minNodeTag, maxNodeTag)
    const char* header;        ///< the ASCII section header line, as named in "expected ..." errors
    const char* block_header;  ///< an ASCII block header line, likewise
    const char* count;         ///< name of the block's item count ("numNodesInBlock")
    const char* block_item;    ///< "node" (as in "node blocks hold ...")
    const char* items;         ///< "nodes"
  };
  static constexpr Blocks4 kNodes4{"$Nodes", "Node", "'numEntityBlocks numNodes minNodeTag maxNodeTag'",
                                   "a node block header 'entityDim entityTag parametric numNodesInBlock'",
                                   "numNodesInBlock", "node", "nodes"};
  static constexpr Blocks4 kElements4{"$Elements", "Element", "'numEntityBlocks numElements minElementTag maxElementTag'",
                                      "an element block header 'entityDim entityTag elementType numElementsInBlock'",
                                      "numElementsInBlock", "element", "elements"};

  std::string blocks_hold(const Blocks4& w, std::uint64_t total, std::uint64_t expected) const {
    return std::string(w.block_item) + " blocks hold " + std::to_string(total) + " " + w.items + ", header says " +
           std::to_string(expected);
  }

  /// MSH 4.1 binary section header: numEntityBlocks, numItems, minTag, maxTag; returns the first two.
  std::pair<std::uint64_t, std::uint64_t> header4_binary(const Blocks4& w) {
    const std::string h = std::string(w.section) + " header (";
    const std::uint64_t nblocks = c_.get_size(dsize_, h + "numEntityBlocks)");
    const std::uint64_t nitems = c_.get_size(dsize_, h + "num" + w.item + "s)");
    c_.get_size(dsize_, h + "min" + w.item + "Tag)");
    c_.get_size(dsize_, h + "max" + w.item + "Tag)");
    return {nblocks, nitems};
  }

  /// The layout both MSH 4.1 ASCII $Nodes and $Elements share: a header line
  /// 'numEntityBlocks numItems minTag maxTag', then numEntityBlocks blocks, each a header line of
  /// 4 integers whose last one is the block's item count n, followed by the items, which
  /// read_block(block_header, n) reads. Throws IOError (file:line) for a negative count in the
  /// header, a block count that is negative or exceeds what the header has left, or block counts
  /// that do not add up to numItems.
  template <class ReadBlock>
  void read_blocks4_ascii(const Blocks4& w, ReadBlock&& read_block) {
    const auto h = int_line(4, w.header);
    if (h[0] < 0 || h[1] < 0) fail_line(path_, c_.line, std::string("negative count in ") + w.section + " header");
    std::int64_t total = 0;
    for (std::int64_t b = 0; b < h[0]; ++b) {
      const auto bh = int_line(4, w.block_header);
      const std::int64_t n = bh[3];
      if (n < 0 || n > h[1] - total) fail_line(path_, c_.line, std::string("invalid ") + w.count + " " + std::to_string(n));
      read_block(bh, n);
      total += n;
    }
    if (total != h[1])
      fail_line(path_, c_.line, blocks_hold(w, static_cast<std::uint64_t>(total), static_cast<std::uint64_t>(h[1])));
  }

  void read_nodes4() {
    if (binary_) {
      const auto [nblocks, nnodes] = header4_binary(kNodes4);
      std::uint64_t total = 0;
      for (std::uint64_t b = 0; b < nblocks; ++b) {
        const std::size_t hdr = c_.pos;
        const auto dim = c_.get<std::int32_t>("node block header (entityDim)");
        c_.get<std::int32_t>("node block header (entityTag)");
        const auto param = c_.get<std::int32_t>("node block header (parametric)");
        const std::uint64_t n = c_.get_size(dsize_, "node block header (numNodesInBlock)");
        if (dim < 0 || dim > 3 || (param != 0 && param != 1) || n > nnodes - total)
          fail_byte(path_, hdr, "invalid node block header");
        const std::size_t ncoord = 3 + (param ? static_cast<std::size_t>(dim) : 0);
        c_.need_items(n, static_cast<std::size_t>(dsize_) + 8 * ncoord,
                      std::to_string(n) + " node tags and coordinates");
        std::vector<std::int64_t> tags(static_cast<std::size_t>(n));
        for (auto& t : tags) t = static_cast<std::int64_t>(c_.get_size(dsize_, "node tag"));
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::string where = at_byte();
          Vec3 x;
          for (int dd = 0; dd < 3; ++dd) x[dd] = c_.get<double>("node coordinate");
          for (std::size_t k = 3; k < ncoord; ++k) c_.get<double>("parametric coordinate");
          d_.add_node(path_, where, tags[static_cast<std::size_t>(i)], x);
        }
        total += n;
      }
      if (total != nnodes) fail_byte(path_, c_.pos, blocks_hold(kNodes4, total, nnodes));
      return;
    }
    read_blocks4_ascii(kNodes4, [&](const std::vector<std::int64_t>&, std::int64_t n) {
      std::vector<std::int64_t> tags;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto t = int_line(1, "a node tag");
        if (t.size() != 1) fail_line(path_, c_.line, "expected one node tag per line");
        tags.push_back(t[0]);
      }
      for (std::int64_t i = 0; i < n; ++i) {
        const std::string_view l = c_.expect_line("node coordinates 'x y z'");
        d_.add_node(path_, at_line(), tags[static_cast<std::size_t>(i)], xyz(split(l), 0, l));
      }
    });
  }

  void read_elements4() {
    if (binary_) {
      const auto [nblocks, nelem] = header4_binary(kElements4);
      std::uint64_t total = 0;
      for (std::uint64_t b = 0; b < nblocks; ++b) {
        const std::size_t hdr = c_.pos;
        c_.get<std::int32_t>("element block header (entityDim)");
        c_.get<std::int32_t>("element block header (entityTag)");
        const auto type = c_.get<std::int32_t>("element block header (elementType)");
        const std::uint64_t n = c_.get_size(dsize_, "element block header (numElementsInBlock)");
        const int nn = gmsh_nodes_per_element(type);
        if (nn < 0) fail_byte(path_, hdr, "unknown element type " + std::to_string(type));
        if (n > nelem - total) fail_byte(path_, hdr, "invalid numElementsInBlock " + std::to_string(n));
        c_.need_items(n, static_cast<std::size_t>(dsize_) * (1u + static_cast<std::size_t>(nn)),
                      std::to_string(n) + " elements of type " + std::to_string(type));
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::string where = at_byte();
          c_.get_size(dsize_, "element tag");
          std::array<std::int64_t, 6> tri{};
          for (int k = 0; k < nn; ++k) {
            const auto v = static_cast<std::int64_t>(c_.get_size(dsize_, "element node tag"));
            if (type == 2 || type == 9) tri[static_cast<std::size_t>(k)] = v;
          }
          if (type == 2 || type == 9) d_.tris.push_back({tri, where, type == 9});
        }
        total += n;
      }
      if (total != nelem) fail_byte(path_, c_.pos, blocks_hold(kElements4, total, nelem));
      return;
    }
    read_blocks4_ascii(kElements4, [&](const std::vector<std::int64_t>& bh, std::int64_t n) {
      const std::int64_t type = bh[2];
      for (std::int64_t i = 0; i < n; ++i) {
        const auto v = int_line(2, "an element line 'tag nodeTags...'");
        if (type != 2 && type != 9) continue;
        if (type == 2 && v.size() != 4)
          fail_line(path_, c_.line, "a triangle (type 2) needs 'tag n1 n2 n3', got " + std::to_string(v.size()) + " integers");
        if (type == 9 && v.size() != 7)
          fail_line(path_, c_.line, "a 6-node triangle (type 9) needs 'tag n1 ... n6', got " + std::to_string(v.size()) +
                                        " integers");
        std::array<std::int64_t, 6> tri{};
        for (std::size_t k = 1; k < v.size(); ++k) tri[k - 1] = v[k];
        d_.tris.push_back({tri, at_line(), type == 9});
      }
    });
  }

  Mesh assemble() {
    // keep only nodes used by triangles, in node-section order
    std::vector<std::int32_t> used(d_.nodes.size(), -1);
    std::vector<std::array<std::int32_t, 3>> tri_nodes;
    tri_nodes.reserve(d_.tris.size());
    bool curved = false;
    for (const auto& t : d_.tris) curved = curved || t.quadratic;
    std::vector<std::array<Vec3, 3>> midside;
    for (const auto& t : d_.tris) {
      if (curved) {  // a 3-node triangle among 6-node ones gets its edge midpoints (flat)
        std::array<Vec3, 3> ms;
        for (std::size_t k = 0; k < 3; ++k) {
          if (t.quadratic) {
            auto it = d_.tag_to_node.find(t.tags[3 + k]);
            if (it == d_.tag_to_node.end())
              throw IOError(path_ + ": " + t.where + ": triangle references undefined node tag " + std::to_string(t.tags[3 + k]));
            ms[k] = d_.nodes[static_cast<std::size_t>(it->second)];
          } else {
            ms[k] = {};  // filled below from the corners
          }
        }
        midside.push_back(ms);
      }
      std::array<std::int32_t, 3> tn;
      for (int k = 0; k < 3; ++k) {
        auto it = d_.tag_to_node.find(t.tags[static_cast<std::size_t>(k)]);
        if (it == d_.tag_to_node.end())
          throw IOError(path_ + ": " + t.where + ": triangle references undefined node tag " +
                        std::to_string(t.tags[static_cast<std::size_t>(k)]));
        tn[static_cast<std::size_t>(k)] = it->second;
        used[static_cast<std::size_t>(it->second)] = 0;
      }
      tri_nodes.push_back(tn);
    }
    Mesh m;
    for (std::size_t i = 0; i < d_.nodes.size(); ++i)
      if (used[i] == 0) {
        used[i] = static_cast<std::int32_t>(m.vertices.size());
        m.vertices.push_back(d_.nodes[i]);
      }
    m.triangles.reserve(tri_nodes.size());
    for (const auto& tn : tri_nodes)
      m.triangles.push_back({used[static_cast<std::size_t>(tn[0])], used[static_cast<std::size_t>(tn[1])],
                             used[static_cast<std::size_t>(tn[2])]});
    if (curved) {
      for (std::size_t e = 0; e < midside.size(); ++e)
        if (!d_.tris[e].quadratic)
          for (std::size_t k = 0; k < 3; ++k) {
            const Vec3& a = m.vertices[static_cast<std::size_t>(m.triangles[e][k])];
            const Vec3& b = m.vertices[static_cast<std::size_t>(m.triangles[e][(k + 1) % 3])];
            midside[e][k] = {0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2])};
          }
      m.midside = std::move(midside);
    }
    return m;
  }
};

// ---------------------------------------------------------------------------------------------
// OBJ
// ---------------------------------------------------------------------------------------------

Mesh read_obj(const std::string& path, const std::string& buf) {
  Cursor c{buf, path};
  Mesh m;
  std::string_view l;
  std::vector<std::int32_t> face;
  while (c.next_line(l)) {
    const std::size_t hash = l.find('#');
    if (hash != std::string_view::npos) l = l.substr(0, hash);
    const auto tok = split(l);
    if (tok.empty()) continue;
    if (tok[0] == "v") {
      Vec3 x;
      if (tok.size() < 4)  // extra values (w, or r g b vertex colours) are ignored
        fail_line(path, c.line, "expected 'v x y z [w]', got " + quoted(trim(l)));
      for (int d = 0; d < 3; ++d)
        if (!parse_double(tok[static_cast<std::size_t>(d) + 1], x[d]))
          fail_line(path, c.line, "expected a number for vertex coordinate " + std::to_string(d + 1) +
                                      ", got " + quoted(tok[static_cast<std::size_t>(d) + 1]));
      if (m.vertices.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        fail_line(path, c.line, "too many vertices");
      m.vertices.push_back(x);
    } else if (tok[0] == "f") {
      if (tok.size() < 4)
        fail_line(path, c.line, "a face needs at least 3 vertices, got " + std::to_string(tok.size() - 1));
      face.clear();
      for (std::size_t i = 1; i < tok.size(); ++i) {
        const std::string_view vi = tok[i].substr(0, tok[i].find('/'));
        std::int64_t idx;
        if (!parse_int(vi, idx) || idx == 0)
          fail_line(path, c.line, "expected a non-zero vertex index in face vertex " + quoted(tok[i]));
        const auto nv = static_cast<std::int64_t>(m.vertices.size());
        const std::int64_t z = idx > 0 ? idx - 1 : nv + idx;
        if (z < 0 || z >= nv)
          fail_line(path, c.line, "face vertex index " + std::to_string(idx) + " out of range (" +
                                      std::to_string(nv) + " vertices defined so far)");
        face.push_back(static_cast<std::int32_t>(z));
      }
      for (std::size_t i = 1; i + 1 < face.size(); ++i) m.triangles.push_back({face[0], face[i], face[i + 1]});
    }
    // vt, vn, vp, g, o, s, usemtl, mtllib, l, p, ...: ignored
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// STL
// ---------------------------------------------------------------------------------------------

class VertexMerger {
 public:
  std::int32_t add(Mesh& m, const Vec3& x) {
    std::array<std::uint64_t, 3> key;
    for (int d = 0; d < 3; ++d) {
      const double v = x[d] + 0.0;  // -0.0 -> +0.0
      std::memcpy(&key[static_cast<std::size_t>(d)], &v, 8);
    }
    auto [it, inserted] = map_.emplace(key, static_cast<std::int32_t>(m.vertices.size()));
    if (inserted) m.vertices.push_back(x);
    return it->second;
  }

 private:
  std::map<std::array<std::uint64_t, 3>, std::int32_t> map_;
};

// ---------------------------------------------------------------------------------------------
// OFF (Geomview Object File Format, as written by CGAL, MeshLab, Geomview)
// ---------------------------------------------------------------------------------------------

Mesh read_off(const std::string& path, const std::string& buf) {
  Cursor c{buf, path};
  std::string_view l;
  // the next non-empty line without its '#' comment, split into tokens
  auto next = [&](const std::string& what) {
    while (c.next_line(l)) {
      const std::size_t hash = l.find('#');
      if (hash != std::string_view::npos) l = l.substr(0, hash);
      auto tok = split(l);
      if (!tok.empty()) return tok;
    }
    throw IOError(path + ": unexpected end of file, expected " + what);
  };
  auto tok = next("the 'OFF' header");
  if (tok[0] != "OFF")
    fail_line(path, c.line, "expected the header 'OFF' (plain OFF; COFF / NOFF / 4OFF and binary OFF are not read), got " +
                                quoted(tok[0]));
  tok.erase(tok.begin());
  if (tok.empty()) tok = next("the counts 'vertices faces edges'");
  std::int64_t nv = 0, nf = 0;
  if (tok.size() < 2 || !parse_int(tok[0], nv) || !parse_int(tok[1], nf) || nv < 0 || nf < 0)
    fail_line(path, c.line, "expected the counts 'vertices faces edges'");
  if (nv >= std::numeric_limits<std::int32_t>::max()) fail_line(path, c.line, "too many vertices");
  Mesh m;
  m.vertices.reserve(static_cast<std::size_t>(std::min<std::int64_t>(nv, 1 << 24)));
  for (std::int64_t i = 0; i < nv; ++i) {
    tok = next("vertex " + std::to_string(i) + " of " + std::to_string(nv));
    Vec3 x;
    if (tok.size() < 3) fail_line(path, c.line, "expected a vertex 'x y z', got " + quoted(trim(l)));
    for (std::size_t d = 0; d < 3; ++d)
      if (!parse_double(tok[d], x[d])) fail_line(path, c.line, "expected a number for vertex coordinate " + std::to_string(d + 1) + ", got " + quoted(tok[d]));
    m.vertices.push_back(x);
  }
  std::vector<std::int32_t> face;
  for (std::int64_t i = 0; i < nf; ++i) {
    tok = next("face " + std::to_string(i) + " of " + std::to_string(nf));
    std::int64_t n = 0;
    if (!parse_int(tok[0], n) || n < 3)
      fail_line(path, c.line, "a face needs its vertex count (>= 3) first, got " + quoted(tok[0]));
    if (static_cast<std::int64_t>(tok.size()) < 1 + n)
      fail_line(path, c.line, "face with " + std::to_string(n) + " vertices lists only " + std::to_string(tok.size() - 1));
    face.clear();
    for (std::int64_t j = 1; j <= n; ++j) {
      std::int64_t idx;
      if (!parse_int(tok[static_cast<std::size_t>(j)], idx) || idx < 0 || idx >= nv)
        fail_line(path, c.line, "face vertex index " + quoted(tok[static_cast<std::size_t>(j)]) + " is not in [0, " +
                                    std::to_string(nv) + ")");
      face.push_back(static_cast<std::int32_t>(idx));
    }
    for (std::size_t k = 1; k + 1 < face.size(); ++k) m.triangles.push_back({face[0], face[k], face[k + 1]});
  }
  return m;
}

Mesh read_stl_binary(const std::string& path, const std::string& buf, std::uint32_t n) {
  Cursor c{buf, path};
  c.swap = std::endian::native == std::endian::big;
  c.pos = 84;
  Mesh m;
  VertexMerger merge;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) c.get<float>("facet normal");
    std::array<std::int32_t, 3> t;
    for (int k = 0; k < 3; ++k) {
      Vec3 x;
      for (int d = 0; d < 3; ++d) x[d] = static_cast<double>(c.get<float>("facet vertex coordinate"));
      t[static_cast<std::size_t>(k)] = merge.add(m, x);
    }
    c.get<std::uint16_t>("facet attribute byte count");
    m.triangles.push_back(t);
  }
  return m;
}

Mesh read_stl_ascii(const std::string& path, const std::string& buf) {
  // token stream with line numbers
  struct Tok {
    std::string_view s;
    std::size_t line;
  };
  std::vector<Tok> toks;
  {
    Cursor c{buf, path};
    std::string_view l;
    while (c.next_line(l))
      for (auto t : split(l)) toks.push_back({t, c.line});
  }
  const std::size_t last_line = toks.empty() ? 1 : toks.back().line;
  std::size_t i = 0;
  auto fail_tok = [&](const std::string& expected) -> void {
    if (i >= toks.size()) fail_line(path, last_line, "unexpected end of file, expected " + expected);
    fail_line(path, toks[i].line, "expected " + expected + ", got " + quoted(toks[i].s));
  };
  auto keyword = [&](std::string_view kw) {
    if (i >= toks.size() || !iequals(toks[i].s, kw)) fail_tok("'" + std::string(kw) + "'");
    ++i;
  };
  auto number = [&](const char* what) {
    double v = 0;  // fail_tok() always throws; clang cannot see that through the lambda
    if (i >= toks.size() || !parse_double(toks[i].s, v)) fail_tok(what);
    ++i;
    return v;
  };
  Mesh m;
  VertexMerger merge;
  bool any_solid = false;
  while (i < toks.size()) {
    keyword("solid");
    any_solid = true;
    const std::size_t solid_line = toks[i - 1].line;
    while (i < toks.size() && toks[i].line == solid_line) ++i;  // solid name
    while (true) {
      if (i < toks.size() && iequals(toks[i].s, "endsolid")) {
        ++i;
        const std::size_t l = toks[i - 1].line;
        while (i < toks.size() && toks[i].line == l) ++i;  // name after endsolid
        break;
      }
      if (i >= toks.size() || !iequals(toks[i].s, "facet")) fail_tok("'facet' or 'endsolid'");
      ++i;
      keyword("normal");
      for (int k = 0; k < 3; ++k) number("a facet normal component");
      keyword("outer");
      keyword("loop");
      std::vector<std::int32_t> poly;
      while (i < toks.size() && iequals(toks[i].s, "vertex")) {
        ++i;
        Vec3 x;
        for (int d = 0; d < 3; ++d) x[d] = number("a vertex coordinate");
        poly.push_back(merge.add(m, x));
      }
      if (poly.size() < 3) fail_tok("'vertex' (a facet needs at least 3 vertices)");
      keyword("endloop");
      keyword("endfacet");
      for (std::size_t k = 1; k + 1 < poly.size(); ++k) m.triangles.push_back({poly[0], poly[k], poly[k + 1]});
    }
  }
  if (!any_solid) fail_line(path, 1, "expected 'solid' (empty ASCII STL file)");
  return m;
}

std::uint32_t le_u32(const std::string& buf, std::size_t at) {
  std::uint32_t n = 0;
  for (int k = 3; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(buf[at + static_cast<std::size_t>(k)]);
  return n;
}

Mesh read_stl(const std::string& path, const std::string& buf) {
  if (buf.size() >= 84) {
    const std::uint32_t n = le_u32(buf, 80);
    if (static_cast<std::uint64_t>(buf.size()) == 84ull + 50ull * n) return read_stl_binary(path, buf, n);
  }
  // ASCII only if it starts with "solid" AND is text: a binary file may also start with "solid"
  // (its 80-byte header is free-form), but its float data almost surely contain control bytes.
  const std::string_view head = trim(std::string_view(buf).substr(0, 512));
  const bool is_text = std::none_of(buf.begin(), buf.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u == 0 || u == 0x7f || (u < 32 && !std::isspace(u));
  });
  if (is_text && iequals(head.substr(0, 5), "solid") &&
      (head.size() == 5 || std::isspace(static_cast<unsigned char>(head[5]))))
    return read_stl_ascii(path, buf);
  if (buf.size() < 84)
    fail_byte(path, buf.size(), "truncated binary STL: expected an 80-byte header and a uint32 triangle count (84 bytes)");
  const std::uint32_t n = le_u32(buf, 80);
  fail_byte(path, buf.size(), "binary STL size mismatch: header declares " + std::to_string(n) +
                                  " triangles, so expected 84 + 50 * " + std::to_string(n) + " = " +
                                  std::to_string(84ull + 50ull * n) + " bytes, file has " +
                                  std::to_string(buf.size()));
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext;
}

}  // namespace

Mesh read_mesh(const std::string& path) {
  {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw IOError("'" + path + "' is a folder, not a mesh file");
    if (!std::filesystem::exists(path, ec)) throw IOError("mesh file '" + path + "' not found");
  }
  const std::string ext = lower_extension(path);
  if (ext != ".msh" && ext != ".obj" && ext != ".stl" && ext != ".off")
    throw InvalidArgument("read_mesh: unknown mesh file extension '" + ext + "' of '" + path +
                          "' (supported: .msh, .obj, .stl, .off)");
  return detail::parse_mesh(path, ext, io::read_file(path));  // core/io.hpp: IOError naming the file
}

Mesh detail::parse_mesh(const std::string& path, const std::string& ext, const std::string& buf) {
  if (buf.empty()) throw IOError("mesh file '" + path + "' is empty");
  Mesh m;
  if (ext == ".msh") m = GmshReader(path, buf).read();
  else if (ext == ".obj") m = read_obj(path, buf);
  else if (ext == ".stl") m = read_stl(path, buf);
  else if (ext == ".off") m = read_off(path, buf);
  else throw InvalidArgument("read_mesh: unknown mesh format '" + ext + "' (supported: .msh, .obj, .stl, .off)");
  if (m.triangles.empty()) throw InvalidArgument("read_mesh: '" + path + "' contains no triangles");
  return m;
}

void write_mesh_obj(const Mesh& m, const std::string& path) {
  if (m.curved())
    throw InvalidArgument("write_mesh_obj: the mesh has curved 6-node elements, which OBJ cannot hold");
  const auto nv = m.vertices.size();
  for (std::size_t e = 0; e < m.triangles.size(); ++e)
    for (auto v : m.triangles[e])
      if (v < 0 || static_cast<std::size_t>(v) >= nv)
        throw InvalidArgument("write_mesh_obj: element " + std::to_string(e) + " has vertex index " +
                              std::to_string(v) + " out of range");
  std::string out;
  out.reserve(nv * 60 + m.triangles.size() * 30 + 64);
  out += "# elliptica surface mesh: " + std::to_string(nv) + " vertices, " +
         std::to_string(m.triangles.size()) + " triangles\n";
  char tmp[64];
  for (const auto& x : m.vertices) {
    out += 'v';
    for (double c : x) {
      out += ' ';
      auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, c);
      (void)ec;
      out.append(tmp, p);
    }
    out += '\n';
  }
  for (const auto& t : m.triangles)
    out += "f " + std::to_string(t[0] + 1) + ' ' + std::to_string(t[1] + 1) + ' ' + std::to_string(t[2] + 1) + '\n';

  io::write_text_atomic(path, out);  // core/output.hpp: temporary + rename, nothing left on failure
}

}  // namespace elliptica::bem
