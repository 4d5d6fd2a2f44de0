/// @file fuzz_mesh.cpp
/// libFuzzer target: the surface mesh readers (bem::detail::parse_mesh): Gmsh MSH 2.2 / 4.1
/// ASCII and binary (3- and 6-node triangles), Wavefront OBJ, STL ASCII and binary, OFF. The first
/// input byte chooses the format ('m' .msh, 'o' .obj, 's' .stl, 'f' .off; any other byte by its
/// value mod 4 in that order), the rest is
/// the file. A mesh that is read must have in-range vertex indices; it is then validated
/// (validate_and_orient, which may refuse it) when small enough to keep executions short.
#include "bem/mesh_io_detail.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::limit_library_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* ext = nullptr;
  switch (data[0]) {
    case 'm': ext = ".msh"; break;
    case 'o': ext = ".obj"; break;
    case 's': ext = ".stl"; break;
    case 'f': ext = ".off"; break;
    default: {
      static const char* const kByValue[4] = {".msh", ".obj", ".stl", ".off"};
      ext = kByValue[data[0] % 4];
    }
  }
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::accept_library_errors([&] {
    elliptica::bem::Mesh m = elliptica::bem::detail::parse_mesh("fuzz.input", ext, bytes);
    fuzz::check(!m.triangles.empty(), "a mesh that is read has triangles");
    for (const auto& t : m.triangles)
      for (auto v : t) fuzz::check(v >= 0 && static_cast<std::size_t>(v) < m.vertices.size(), "vertex index in range");
    fuzz::check(m.midside.empty() || m.midside.size() == m.triangles.size(), "one midside triple per triangle");
    if (m.triangles.size() <= 20000) elliptica::bem::validate_and_orient(m);
  });
  return 0;
}
