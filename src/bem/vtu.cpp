/// @file vtu.cpp
/// VTK .vtu (ASCII XML UnstructuredGrid) and complex .npy writers (see vtu.hpp).
#include "elliptica/bem/vtu.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/core/output.hpp"

namespace elliptica::bem {

namespace {
void put(std::string& s, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  s += buf;
}
std::string xml_escape(const std::string& in) {
  std::string o;
  for (char c : in) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

/// The <Points> element of a VTU piece.
void append_points(std::string& s, const std::vector<std::array<double, 3>>& pts) {
  s += "      <Points>\n        <DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">\n";
  for (const auto& v : pts) {
    s += "          ";
    put(s, v[0]);
    s += ' ';
    put(s, v[1]);
    s += ' ';
    put(s, v[2]);
    s += '\n';
  }
  s += "        </DataArray>\n      </Points>\n";
}

/// One Float64 DataArray per field (count tuples of f.components values each).
void append_fields(std::string& s, const std::vector<CellField>& fields, std::size_t count) {
  for (const auto& f : fields) {
    s += "        <DataArray type=\"Float64\" Name=\"" + xml_escape(f.name) + "\" NumberOfComponents=\"" +
         std::to_string(f.components) + "\" format=\"ascii\">\n";
    for (std::size_t e = 0; e < count; ++e) {
      s += "          ";
      for (int c = 0; c < f.components; ++c) {
        if (c) s += ' ';
        put(s, f.values[e * static_cast<std::size_t>(f.components) + static_cast<std::size_t>(c)]);
      }
      s += '\n';
    }
    s += "        </DataArray>\n";
  }
}

/// InvalidArgument for an empty or duplicate name, or a field without count x components values
/// (`what`: "write_vtu: cell field" / "write_vtu_grid: point field").
void check_fields(const std::vector<CellField>& fields, std::size_t count, const std::string& what) {
  std::set<std::string> names;
  for (const auto& f : fields) {
    if (f.name.empty()) throw InvalidArgument(what + " has an empty name");
    if (!names.insert(f.name).second) throw InvalidArgument(what + " name '" + f.name + "' appears twice");
    if (f.components < 1 || f.values.size() != count * static_cast<std::size_t>(f.components))
      throw InvalidArgument(what + " '" + f.name + "' has " + std::to_string(f.values.size()) + " values, expected " +
                            std::to_string(count) + " x " + std::to_string(f.components));
  }
}

std::string vtu_text(const Mesh& mesh, const std::vector<CellField>& cells) {
  const std::size_t ne = mesh.num_elements(), nv = mesh.vertices.size();
  check_fields(cells, ne, "write_vtu: cell field");
  for (const auto& t : mesh.triangles)
    for (auto i : t)
      if (i < 0 || static_cast<std::size_t>(i) >= nv) throw InvalidArgument("write_vtu: vertex index out of range");
  std::string s;
  s.reserve(64 * (nv + ne * (1 + cells.size())) + 1024);
  s += "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n";
  s += "  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"" + std::to_string(nv) + "\" NumberOfCells=\"" +
       std::to_string(ne) + "\">\n";
  append_points(s, mesh.vertices);
  s += "      <Cells>\n";
  s += "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">\n";
  for (const auto& t : mesh.triangles)
    s += "          " + std::to_string(t[0]) + ' ' + std::to_string(t[1]) + ' ' + std::to_string(t[2]) + '\n';
  s += "        </DataArray>\n        <DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">\n";
  for (std::size_t e = 0; e < ne; ++e) s += "          " + std::to_string(3 * (e + 1)) + '\n';
  s += "        </DataArray>\n        <DataArray type=\"UInt8\" Name=\"types\" format=\"ascii\">\n";
  for (std::size_t e = 0; e < ne; ++e) s += "          5\n";
  s += "        </DataArray>\n      </Cells>\n      <CellData>\n";
  append_fields(s, cells, ne);
  s += "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n";
  return s;
}

std::string vtu_grid_text(std::size_t na, std::size_t nb, const std::vector<std::array<double, 3>>& pts,
                          const std::vector<CellField>& fields) {
  if (na < 2 || nb < 2) throw InvalidArgument("write_vtu_grid: the grid needs at least 2 x 2 points");
  const std::size_t np = na * nb, nc = (na - 1) * (nb - 1);
  if (pts.size() != np)
    throw InvalidArgument("write_vtu_grid: " + std::to_string(pts.size()) + " points for a " + std::to_string(na) + " x " +
                          std::to_string(nb) + " grid");
  check_fields(fields, np, "write_vtu_grid: point field");
  std::string s;
  s.reserve(64 * (np * (1 + fields.size()) + nc * 2) + 1024);
  s += "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" byte_order=\"LittleEndian\">\n";
  s += "  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"" + std::to_string(np) + "\" NumberOfCells=\"" +
       std::to_string(nc) + "\">\n";
  append_points(s, pts);
  s += "      <Cells>\n";
  s += "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">\n";
  for (std::size_t i = 0; i + 1 < na; ++i)
    for (std::size_t j = 0; j + 1 < nb; ++j) {
      const std::size_t a = i * nb + j;
      s += "          " + std::to_string(a) + ' ' + std::to_string(a + nb) + ' ' + std::to_string(a + nb + 1) + ' ' +
           std::to_string(a + 1) + '\n';
    }
  s += "        </DataArray>\n        <DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">\n";
  for (std::size_t c = 0; c < nc; ++c) s += "          " + std::to_string(4 * (c + 1)) + '\n';
  s += "        </DataArray>\n        <DataArray type=\"UInt8\" Name=\"types\" format=\"ascii\">\n";
  for (std::size_t c = 0; c < nc; ++c) s += "          9\n";
  s += "        </DataArray>\n      </Cells>\n      <PointData>\n";
  append_fields(s, fields, np);
  s += "      </PointData>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n";
  return s;
}

std::string npy_complex_bytes(const std::vector<std::complex<double>>& v) {
  std::string header = "{'descr': '<c16', 'fortran_order': False, 'shape': (" + std::to_string(v.size()) + ",), }";
  // magic (6) + version (2) + header length (2) + header + '\n', padded to a multiple of 64.
  const std::size_t base = 10 + header.size() + 1;
  header.append((64 - base % 64) % 64, ' ');
  header += '\n';
  std::string s = std::string("\x93NUMPY", 6);
  s += '\x01';
  s += '\x00';
  const auto hl = static_cast<std::uint16_t>(header.size());
  s += static_cast<char>(hl & 0xff);
  s += static_cast<char>(hl >> 8);
  s += header;
  const std::size_t off = s.size();
  s.resize(off + 16 * v.size());
  // x86/ARM little-endian hosts: std::complex<double> is two IEEE doubles (re, im).
  static_assert(sizeof(std::complex<double>) == 16);
  if (!v.empty()) std::memcpy(s.data() + off, v.data(), 16 * v.size());
  return s;
}

}  // namespace

void write_vtu(const std::string& path, const Mesh& mesh, const std::vector<CellField>& cells) {
  io::write_text_atomic(path, vtu_text(mesh, cells));
}
void write_vtu(io::OutputFile& out, const Mesh& mesh, const std::vector<CellField>& cells) {
  out.write(vtu_text(mesh, cells));
}
void write_vtu_grid(io::OutputFile& out, std::size_t na, std::size_t nb, const std::vector<std::array<double, 3>>& points,
                    const std::vector<CellField>& fields) {
  out.write(vtu_grid_text(na, nb, points, fields));
}
void write_npy_complex(const std::string& path, const std::vector<std::complex<double>>& v) {
  io::write_text_atomic(path, npy_complex_bytes(v));
}
void write_npy_complex(io::OutputFile& out, const std::vector<std::complex<double>>& v) {
  out.write(npy_complex_bytes(v));
}

std::optional<std::vector<std::complex<double>>> read_npy_complex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  if (!in.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY") return std::nullopt;
  std::size_t hl = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) return std::nullopt;
    hl = b[0] | (std::size_t(b[1]) << 8);
  } else {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) return std::nullopt;
    hl = b[0] | (std::size_t(b[1]) << 8) | (std::size_t(b[2]) << 16) | (std::size_t(b[3]) << 24);
  }
  if (hl > 65536) return std::nullopt;
  std::string header(hl, ' ');
  if (!in.read(header.data(), static_cast<std::streamsize>(hl))) return std::nullopt;
  if (header.find("'<c16'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos)
    return std::nullopt;
  const auto sp = header.find("'shape': (");
  if (sp == std::string::npos) return std::nullopt;
  const auto close = header.find(')', sp);
  if (close == std::string::npos) return std::nullopt;
  std::string shape = header.substr(sp + 10, close - sp - 10);  // "N," or "N"
  while (!shape.empty() && (shape.back() == ',' || shape.back() == ' ')) shape.pop_back();
  if (shape.empty() || shape.find_first_not_of("0123456789") != std::string::npos || shape.size() > 15)
    return std::nullopt;
  const std::size_t n = static_cast<std::size_t>(std::stoull(shape));
  // the data must be there before anything is allocated for it
  const auto data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const auto file_end = in.tellg();
  in.seekg(data_start);
  if (data_start < 0 || file_end < data_start || static_cast<std::size_t>(file_end - data_start) / 16 < n)
    throw IOError(path + ": truncated complex128 .npy file (shape (" + shape + ",))");
  std::vector<std::complex<double>> v(n);
  if (n > 0 && !in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(16 * n)))
    throw IOError(path + ": truncated complex128 .npy file");
  return v;
}

}  // namespace elliptica::bem
