/// @file fuzz_hexmesh.cpp
/// libFuzzer target: the hexahedral Gmsh reader of the spectral-element path
/// (multigrid::parse_gmsh_hex, ASCII .msh 2.2 / 4.1). The input is the file. A mesh that is read
/// must have 8 in-range vertex indices per element (check_hex_mesh has passed inside the reader,
/// so every corner Jacobian is positive); its boundary faces are then listed.
#include "elliptica/multigrid/sem_mesh.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::limit_library_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fuzz::accept_library_errors([&] {
    const elliptica::multigrid::HexMesh m = elliptica::multigrid::parse_gmsh_hex("fuzz.msh", bytes);
    fuzz::check(m.num_elements() > 0 && m.elements.size() % 8 == 0, "a mesh that is read has hexahedra");
    for (auto v : m.elements)
      fuzz::check(v >= 0 && static_cast<std::size_t>(v) < m.num_vertices(), "vertex index in range");
    if (m.num_elements() <= 20000) (void)elliptica::multigrid::boundary_faces(m);
  });
  return 0;
}
