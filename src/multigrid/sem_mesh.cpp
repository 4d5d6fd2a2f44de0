/// @file sem_mesh.cpp
/// Hexahedral meshes: box and Kershaw generators, Gmsh .msh 2.2 / 4.1 reader, checks (sem_mesh.hpp).
#include "elliptica/multigrid/sem_mesh.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/core/text.hpp"

namespace elliptica::multigrid {
namespace {

/// Jacobian determinant of the trilinear map at corner c: the three edges leaving c along +r, +s,
/// +t (or -r... where c sits at the upper end, with the sign restored), i.e. det of the columns
/// dx/dr, dx/ds, dx/dt at that corner (up to the positive factor 1/8).
double corner_jacobian(const HexMesh& m, std::size_t e, int c) {
  const std::int64_t* v = &m.elements[8 * e];
  double J[3][3];
  for (int d = 0; d < 3; ++d) {
    const int bit = 1 << d;
    const int lo = c & ~bit, hi = c | bit;
    for (int a = 0; a < 3; ++a) J[a][d] = m.vertices[3 * v[hi] + a] - m.vertices[3 * v[lo] + a];
  }
  return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) - J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
         J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

void check_mesh_impl(const HexMesh& m, const std::vector<std::int64_t>* tags, const std::string& where) {
  auto name = [&](std::size_t e) {
    std::string s = "element " + std::to_string(e) + " (0-based)";
    if (tags) s += " (Gmsh element tag " + std::to_string((*tags)[e]) + ")";
    return s;
  };
  const std::string pre = where.empty() ? "hexahedral mesh: " : where + ": ";
  if (m.vertices.size() % 3 != 0) throw InvalidArgument(pre + "vertex array length is not a multiple of 3");
  if (m.elements.size() % 8 != 0) throw InvalidArgument(pre + "element array length is not a multiple of 8");
  if (m.num_elements() == 0) throw InvalidArgument(pre + "no elements");
  for (std::size_t i = 0; i < m.vertices.size(); ++i)
    if (!std::isfinite(m.vertices[i]))
      throw InvalidArgument(pre + "vertex " + std::to_string(i / 3) + " has a non-finite coordinate");
  const auto nv = static_cast<std::int64_t>(m.num_vertices());
  for (std::size_t e = 0; e < m.num_elements(); ++e) {
    const std::int64_t* v = &m.elements[8 * e];
    for (int c = 0; c < 8; ++c) {
      if (v[c] < 0 || v[c] >= nv)
        throw InvalidArgument(pre + name(e) + ": vertex index " + std::to_string(v[c]) + " out of range [0, " +
                              std::to_string(nv) + ")");
      for (int d = 0; d < c; ++d)
        if (v[d] == v[c])
          throw InvalidArgument(pre + name(e) + ": corners " + std::to_string(d) + " and " + std::to_string(c) +
                                " are the same vertex " + std::to_string(v[c]));
    }
    for (int c = 0; c < 8; ++c) {
      const double det = corner_jacobian(m, e, c);
      if (!(det > 0.0))
        throw InvalidArgument(pre + name(e) + " is inverted or degenerate: Jacobian determinant " +
                              text::shortest(det / 8.0) + " at corner " + std::to_string(c) +
                              " (corners in tensor order, sem_mesh.hpp)");
    }
  }
  (void)boundary_faces(m);  // a face shared by three or more elements is refused there
}

using FaceKey = std::array<std::int64_t, 4>;

FaceKey face_key(const HexMesh& m, std::size_t e, int f) {
  const auto c = hex_face_corners(f);
  FaceKey k{};
  for (int i = 0; i < 4; ++i) k[i] = m.elements[8 * e + c[i]];
  std::sort(k.begin(), k.end());
  return k;
}

}  // namespace

std::array<int, 4> hex_face_corners(int face) {
  if (face < 0 || face > 5) throw InvalidArgument("hex_face_corners: face must be in [0, 5], got " + std::to_string(face));
  const int axis = face / 2, side = face % 2;
  std::array<int, 4> out{};
  int n = 0;
  for (int c = 0; c < 8; ++c)
    if (((c >> axis) & 1) == side) out[n++] = c;
  return out;
}

HexMesh box_mesh(int nx, int ny, int nz, std::array<double, 3> lengths) {
  const int n[3] = {nx, ny, nz};
  for (int d = 0; d < 3; ++d) {
    if (n[d] < 1)
      throw InvalidArgument("box_mesh: element count along axis " + std::to_string(d) + " must be >= 1, got " +
                            std::to_string(n[d]));
    if (!(std::isfinite(lengths[d]) && lengths[d] > 0.0))
      throw InvalidArgument("box_mesh: length along axis " + std::to_string(d) + " must be finite and > 0, got " +
                            text::shortest(lengths[d]));
  }
  const double nv = double(nx + 1) * (ny + 1) * (nz + 1), ne = double(nx) * ny * nz;
  require_memory(nv * 24.0 + ne * 64.0, "box_mesh: the mesh");
  if (nv > 2.0e9) throw ResourceError("box_mesh: more than 2e9 vertices");
  HexMesh m;
  m.vertices.resize(std::size_t(nv) * 3);
  m.elements.resize(std::size_t(ne) * 8);
  std::size_t i = 0;
  for (int k = 0; k <= nz; ++k)
    for (int j = 0; j <= ny; ++j)
      for (int l = 0; l <= nx; ++l) {
        // i / n exactly 1 at the end (no rounding of L * n / n).
        m.vertices[3 * i + 0] = lengths[0] * (double(l) / nx);
        m.vertices[3 * i + 1] = lengths[1] * (double(j) / ny);
        m.vertices[3 * i + 2] = lengths[2] * (double(k) / nz);
        ++i;
      }
  auto vid = [&](int l, int j, int k) { return std::int64_t(l) + std::int64_t(nx + 1) * (j + std::int64_t(ny + 1) * k); };
  std::size_t e = 0;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int l = 0; l < nx; ++l) {
        for (int c = 0; c < 8; ++c) m.elements[8 * e + c] = vid(l + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
        ++e;
      }
  return m;
}

namespace {
double kershaw_right(double e, double t) { return t <= 0.5 ? (2.0 - e) * t : 1.0 + e * (t - 1.0); }
double kershaw_left(double e, double t) { return 1.0 - kershaw_right(e, 1.0 - t); }
double kershaw_step(double a, double b, double s) { return s <= 0.0 ? a : (s >= 1.0 ? b : a + (b - a) * s); }
double kershaw_1d(double e, int layer, double lambda, double t) {
  switch (layer) {
    case 0: return kershaw_left(e, t);
    case 1:
    case 4: return kershaw_step(kershaw_left(e, t), kershaw_right(e, t), lambda);
    case 2: return kershaw_step(kershaw_right(e, t), kershaw_left(e, t), lambda / 2.0);
    case 3: return kershaw_step(kershaw_right(e, t), kershaw_left(e, t), (1.0 + lambda) / 2.0);
    default: return kershaw_right(e, t);
  }
}
}  // namespace

void kershaw_map(double eps, double x, double y, double z, double out[3]) {
  if (!(eps > 0.0 && eps <= 1.0)) throw InvalidArgument("kershaw_map: eps must be in (0, 1], got " + text::shortest(eps));
  // layer = int(6 x) as in nekRS; 6 x within 1e-12 of an integer is rounded to it, so that the
  // vertices k/6 of a mesh with n a multiple of 6 fall on the layer they start (the map is
  // continuous across layers, so this changes nothing but rounding).
  double s = 6.0 * x;
  const double r = std::round(s);
  if (std::abs(s - r) <= 1e-12) s = r;
  const int layer = static_cast<int>(std::floor(s));
  const double lambda = s - layer;
  out[0] = x;
  out[1] = kershaw_1d(eps, layer, lambda, y);
  out[2] = kershaw_1d(eps, layer, lambda, z);
}

HexMesh kershaw_mesh(int n, double eps) {
  if (n < 1) throw InvalidArgument("kershaw_mesh: element count per axis must be >= 1, got " + std::to_string(n));
  if (!(eps > 0.0 && eps <= 1.0)) throw InvalidArgument("kershaw_mesh: eps must be in (0, 1], got " + text::shortest(eps));
  HexMesh m = box_mesh(n, n, n);
  for (std::size_t v = 0; v < m.num_vertices(); ++v) {
    double out[3];
    kershaw_map(eps, m.vertices[3 * v], m.vertices[3 * v + 1], m.vertices[3 * v + 2], out);
    for (int d = 0; d < 3; ++d) m.vertices[3 * v + d] = out[d];
  }
  check_hex_mesh(m);
  return m;
}

void check_hex_mesh(const HexMesh& mesh) { check_mesh_impl(mesh, nullptr, ""); }

std::vector<ElementFace> boundary_faces(const HexMesh& m) {
  std::map<FaceKey, std::pair<ElementFace, int>> faces;
  for (std::size_t e = 0; e < m.num_elements(); ++e)
    for (int f = 0; f < 6; ++f) {
      auto [it, inserted] = faces.try_emplace(face_key(m, e, f), ElementFace{std::int64_t(e), f}, 0);
      if (++it->second.second > 2)
        throw InvalidArgument("hexahedral mesh: face " + std::to_string(f) + " of element " + std::to_string(e) +
                              " (vertices " + std::to_string(it->first[0]) + ", " + std::to_string(it->first[1]) +
                              ", " + std::to_string(it->first[2]) + ", " + std::to_string(it->first[3]) +
                              ") is shared by more than two elements");
    }
  std::vector<ElementFace> out;
  for (const auto& [k, v] : faces)
    if (v.second == 1) out.push_back(v.first);
  std::sort(out.begin(), out.end(), [](const ElementFace& a, const ElementFace& b) {
    return a.element != b.element ? a.element < b.element : a.face < b.face;
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Gmsh reader

namespace {

/// 3-D element types of Gmsh (tetrahedra, hexahedra, prisms, pyramids of any order, from Gmsh's
/// GmshDefines.h MSH_TET_*, MSH_HEX_*, MSH_PRI_*, MSH_PYR_*); only type 5 (MSH_HEX_8) is kept.
bool gmsh_type_is_3d(std::int64_t t) {
  static const int k3d[] = {4,   5,   6,   7,   11,  12,  13,  14,  17,  18,  19,  29,  30,  31,  92,  93,
                            94,  95,  96,  97,  98,  71,  72,  73,  74,  75,  79,  80,  81,  82,  83,  106,
                            107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122,
                            123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138,
                            139, 140};
  for (int v : k3d)
    if (v == t) return true;
  return false;
}

struct GmshParser {
  std::string path;
  std::vector<std::string_view> lines;
  std::size_t pos = 0;  // next line (0-based)

  [[noreturn]] void fail(std::size_t line0, const std::string& what) const {
    throw IOError(path + ":" + std::to_string(line0 + 1) + ": " + what);
  }
  bool at_end() const { return pos >= lines.size(); }
  std::string_view next(const char* expecting) {
    if (at_end()) fail(lines.size() == 0 ? 0 : lines.size() - 1, std::string("truncated file: expected ") + expecting);
    return text::trim(lines[pos++]);
  }
  std::vector<std::string_view> fields(const char* expecting, std::size_t min_fields) {
    const std::size_t l = pos;
    auto f = text::split_ws(next(expecting));
    if (f.size() < min_fields)
      fail(l, std::string("expected ") + expecting + " (" + std::to_string(min_fields) + " fields), got " +
                  std::to_string(f.size()) + " field(s)");
    return f;
  }
  std::int64_t integer(std::string_view tok, std::size_t l, const char* what) const {
    std::int64_t v = 0;
    if (!text::parse_int(tok, v)) fail(l, std::string(what) + ": '" + text::printable(tok) + "' is not an integer");
    return v;
  }
  std::int64_t count(std::string_view tok, std::size_t l, const char* what) const {
    const std::int64_t v = integer(tok, l, what);
    if (v < 0) fail(l, std::string(what) + " is negative: " + std::to_string(v));
    // Each entry takes at least one line: a count the rest of the file cannot hold is malformed
    // (and must not drive an allocation).
    if (std::uint64_t(v) > lines.size()) fail(l, std::string(what) + " " + std::to_string(v) + " exceeds what the file can hold");
    return v;
  }
  double number(std::string_view tok, std::size_t l, const char* what) const {
    double v = 0;
    if (!text::parse_double(tok, v) || !std::isfinite(v))
      fail(l, std::string(what) + ": '" + text::printable(tok) + "' is not a finite number");
    return v;
  }
  void expect_end(const char* section) {
    const std::size_t l = pos;
    const auto s = next(section);
    if (s != std::string("$End") + section) fail(l, std::string("expected $End") + section + ", got '" + text::printable(s) + "'");
  }
};

}  // namespace

HexMesh read_gmsh_hex(const std::string& path) { return parse_gmsh_hex(path, io::read_file(path)); }

HexMesh parse_gmsh_hex(const std::string& path, std::string_view bytes) {
  GmshParser P{path, text::split_lines(bytes), 0};
  double version = 0;
  bool have_format = false, have_nodes = false, have_elements = false;
  std::vector<double> coords;
  std::unordered_map<std::int64_t, std::int64_t> node_index;
  std::vector<std::int64_t> hex_nodes, hex_tags;
  std::vector<std::size_t> hex_lines;  // 0-based line of each hexahedron
  std::int64_t other_3d_type = -1, other_3d_tag = -1;
  std::size_t other_3d_line = 0;

  auto add_node = [&](std::int64_t tag, double x, double y, double z, std::size_t l) {
    if (!node_index.emplace(tag, std::int64_t(coords.size() / 3)).second) P.fail(l, "duplicate node tag " + std::to_string(tag));
    coords.push_back(x);
    coords.push_back(y);
    coords.push_back(z);
  };
  auto add_element = [&](std::int64_t tag, std::int64_t type, const std::vector<std::string_view>& f, std::size_t first,
                         std::size_t l) {
    if (type == 5) {
      if (f.size() - first != 8)
        P.fail(l, "hexahedron (type 5) " + std::to_string(tag) + " has " + std::to_string(f.size() - first) +
                      " node tags, expected 8");
      for (std::size_t i = first; i < f.size(); ++i) hex_nodes.push_back(P.integer(f[i], l, "node tag"));
      hex_tags.push_back(tag);
      hex_lines.push_back(l);
    } else if (gmsh_type_is_3d(type) && other_3d_type < 0) {
      other_3d_type = type;
      other_3d_tag = tag;
      other_3d_line = l;
    }
  };

  while (!P.at_end()) {
    const std::size_t l = P.pos;
    const std::string_view s = P.next("a section");
    if (s.empty()) continue;
    if (s == "$MeshFormat") {
      const std::size_t lf = P.pos;
      auto f = P.fields("version file-type data-size", 3);
      version = P.number(f[0], lf, "format version");
      if (P.integer(f[1], lf, "file type") != 0) P.fail(lf, "binary .msh files are not supported (save as ASCII)");
      if (version != 2.2 && version != 4.1)
        P.fail(lf, "unsupported .msh format version " + std::string(f[0]) + " (2.2 and 4.1 are read)");
      P.expect_end("MeshFormat");
      have_format = true;
    } else if (s == "$Nodes") {
      if (!have_format) P.fail(l, "$Nodes before $MeshFormat");
      if (version == 2.2) {
        const std::size_t lc = P.pos;
        const std::int64_t n = P.count(P.fields("the node count", 1)[0], lc, "node count");
        require_memory(double(n) * 64.0, P.path + ": the nodes");
        coords.reserve(3 * n);
        for (std::int64_t i = 0; i < n; ++i) {
          const std::size_t ln = P.pos;
          auto f = P.fields("a node line 'tag x y z'", 4);
          add_node(P.integer(f[0], ln, "node tag"), P.number(f[1], ln, "x"), P.number(f[2], ln, "y"), P.number(f[3], ln, "z"), ln);
        }
      } else {
        const std::size_t lc = P.pos;
        auto h = P.fields("'numEntityBlocks numNodes minNodeTag maxNodeTag'", 4);
        const std::int64_t blocks = P.count(h[0], lc, "entity block count");
        const std::int64_t n = P.count(h[1], lc, "node count");
        require_memory(double(n) * 64.0, P.path + ": the nodes");
        coords.reserve(3 * n);
        for (std::int64_t b = 0; b < blocks; ++b) {
          const std::size_t lb = P.pos;
          auto bh = P.fields("'entityDim entityTag parametric numNodesInBlock'", 4);
          const std::int64_t param = P.integer(bh[2], lb, "parametric flag");
          const std::int64_t m = P.count(bh[3], lb, "nodes in block");
          std::vector<std::int64_t> tags(m);
          std::vector<std::size_t> tag_lines(m);
          for (std::int64_t i = 0; i < m; ++i) {
            tag_lines[i] = P.pos;
            tags[i] = P.integer(P.fields("a node tag", 1)[0], tag_lines[i], "node tag");
          }
          for (std::int64_t i = 0; i < m; ++i) {
            const std::size_t ln = P.pos;
            auto f = P.fields("node coordinates 'x y z'", 3);
            if (param == 0 && f.size() != 3) P.fail(ln, "expected 3 coordinates, got " + std::to_string(f.size()));
            add_node(tags[i], P.number(f[0], ln, "x"), P.number(f[1], ln, "y"), P.number(f[2], ln, "z"), ln);
          }
        }
        if (std::int64_t(coords.size() / 3) != n)
          P.fail(lc, "the header declares " + std::to_string(n) + " nodes, the blocks hold " + std::to_string(coords.size() / 3));
      }
      P.expect_end("Nodes");
      have_nodes = true;
    } else if (s == "$Elements") {
      if (!have_format) P.fail(l, "$Elements before $MeshFormat");
      if (version == 2.2) {
        const std::size_t lc = P.pos;
        const std::int64_t n = P.count(P.fields("the element count", 1)[0], lc, "element count");
        for (std::int64_t i = 0; i < n; ++i) {
          const std::size_t le = P.pos;
          auto f = P.fields("an element line 'tag type ntags tags... nodes...'", 3);
          const std::int64_t tag = P.integer(f[0], le, "element tag");
          const std::int64_t type = P.integer(f[1], le, "element type");
          const std::int64_t ntags = P.integer(f[2], le, "tag count");
          if (ntags < 0 || std::size_t(3 + ntags) > f.size()) P.fail(le, "tag count " + std::to_string(ntags) + " does not fit the line");
          add_element(tag, type, f, std::size_t(3 + ntags), le);
        }
      } else {
        const std::size_t lc = P.pos;
        auto h = P.fields("'numEntityBlocks numElements minElementTag maxElementTag'", 4);
        const std::int64_t blocks = P.count(h[0], lc, "entity block count");
        const std::int64_t n = P.count(h[1], lc, "element count");
        std::int64_t seen = 0;
        for (std::int64_t b = 0; b < blocks; ++b) {
          const std::size_t lb = P.pos;
          auto bh = P.fields("'entityDim entityTag elementType numElementsInBlock'", 4);
          const std::int64_t dim = P.integer(bh[0], lb, "entity dimension");
          const std::int64_t type = P.integer(bh[2], lb, "element type");
          const std::int64_t m = P.count(bh[3], lb, "elements in block");
          for (std::int64_t i = 0; i < m; ++i) {
            const std::size_t le = P.pos;
            auto f = P.fields("an element line 'tag nodes...'", 2);
            const std::int64_t tag = P.integer(f[0], le, "element tag");
            if (dim == 3 && type != 5 && other_3d_type < 0) {
              other_3d_type = type;
              other_3d_tag = tag;
              other_3d_line = le;
            }
            add_element(tag, type, f, 1, le);
          }
          seen += m;
        }
        if (seen != n) P.fail(lc, "the header declares " + std::to_string(n) + " elements, the blocks hold " + std::to_string(seen));
      }
      P.expect_end("Elements");
      have_elements = true;
    } else if (s.size() > 1 && s[0] == '$' && s.substr(0, 4) != "$End") {
      // Another section ($PhysicalNames, $Entities, $NodeData, ...): skipped to its end.
      const std::string end = "$End" + std::string(s.substr(1));
      bool closed = false;
      while (!P.at_end())
        if (text::trim(P.lines[P.pos++]) == end) {
          closed = true;
          break;
        }
      if (!closed) P.fail(l, "section " + std::string(s) + " has no " + end);
    } else {
      P.fail(l, "expected a section ($MeshFormat, $Nodes, $Elements, ...), got '" + text::printable(s) + "'");
    }
  }
  if (!have_format) P.fail(0, "no $MeshFormat section (not a Gmsh .msh file)");
  if (!have_nodes) P.fail(P.lines.empty() ? 0 : P.lines.size() - 1, "no $Nodes section");
  if (!have_elements) P.fail(P.lines.empty() ? 0 : P.lines.size() - 1, "no $Elements section");
  if (other_3d_type >= 0)
    throw InvalidArgument(path + ": not a hexahedral mesh: element " + std::to_string(other_3d_tag) + " (line " +
                          std::to_string(other_3d_line + 1) + ") is of Gmsh type " + std::to_string(other_3d_type) +
                          "; only order-1 hexahedra (type 5) are supported");
  if (hex_tags.empty()) throw InvalidArgument(path + ": not a hexahedral mesh: no hexahedra (Gmsh type 5) in the file");
  HexMesh m;
  m.vertices = std::move(coords);
  m.elements.resize(hex_nodes.size());
  static constexpr int kFromGmsh[8] = {0, 1, 3, 2, 4, 5, 7, 6};  // ours[c] = gmsh[kFromGmsh[c]]
  for (std::size_t e = 0; e < hex_tags.size(); ++e)
    for (int c = 0; c < 8; ++c) {
      const std::int64_t tag = hex_nodes[8 * e + kFromGmsh[c]];
      const auto it = node_index.find(tag);
      if (it == node_index.end())
        P.fail(hex_lines[e], "hexahedron " + std::to_string(hex_tags[e]) + " uses node tag " + std::to_string(tag) +
                                 ", which $Nodes does not define");
      m.elements[8 * e + c] = it->second;
    }
  check_mesh_impl(m, &hex_tags, path);
  return m;
}

}  // namespace elliptica::multigrid
