/// @file fuzz_mesh.cpp
/// libFuzzer target: the surface mesh readers (bem::detail::parse_mesh): Gmsh MSH 2.2 / 4.1
/// ASCII and binary, Wavefront OBJ, STL ASCII and binary. The first input byte chooses the format
/// ('m' or any byte = 0 mod 3: .msh, 'o' or = 1 mod 3: .obj, 's' or = 2 mod 3: .stl), the rest is
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
    default: ext = data[0] % 3 == 0 ? ".msh" : (data[0] % 3 == 1 ? ".obj" : ".stl");
  }
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::accept_library_errors([&] {
    elliptica::bem::Mesh m = elliptica::bem::detail::parse_mesh("fuzz.input", ext, bytes);
    fuzz::check(!m.triangles.empty(), "a mesh that is read has triangles");
    for (const auto& t : m.triangles)
      for (auto v : t) fuzz::check(v >= 0 && static_cast<std::size_t>(v) < m.vertices.size(), "vertex index in range");
    if (m.triangles.size() <= 20000) elliptica::bem::validate_and_orient(m);
  });
  return 0;
}
