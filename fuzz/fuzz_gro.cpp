/// @file fuzz_gro.cpp
/// libFuzzer target: the GROMACS .gro reader (ewald::parse_gro, include/elliptica/ewald/gro.hpp).
#include <cmath>

#include "elliptica/ewald/gro.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::limit_library_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::accept_library_errors([&] {
    const elliptica::ewald::GroFile g = elliptica::ewald::parse_gro("fuzz.gro", text);
    fuzz::check(g.positions.cols == 3 || g.positions.rows == 0, "positions are (N, 3)");
    fuzz::check(g.positions.values.size() == g.positions.rows * g.positions.cols, "positions size");
    fuzz::check(g.atom_names.size() == g.positions.rows, "one atom name per position");
    fuzz::check(g.residue_names.size() == g.positions.rows, "one residue name per position");
  });
  return 0;
}
