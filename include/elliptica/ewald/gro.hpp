#pragma once
/// @file gro.hpp
/// GROMACS .gro configurations for the Ewald front ends (CLI `elliptica ewald --gro`): fixed
/// columns, positions in nm, a rectangular box.
#include <string>
#include <vector>

#include "elliptica/core/array.hpp"

namespace elliptica::ewald {

/// A molecular configuration from a GROMACS .gro file: positions in nm (N,3), atom names,
/// and the rectangular box (nm). Throws IOError on malformed files or triclinic boxes.
struct GroFile {
  Array2D positions;
  std::vector<std::string> atom_names;
  std::vector<std::string> residue_names;
  double box[3] = {0, 0, 0};
};

/// Reads the .gro file at `path` (IOError naming file:line and the problem).
GroFile read_gro(const std::string& path);

/// The same parser on the text of a file already read; `name` stands for the file in error
/// messages (the fuzz target uses it).
GroFile parse_gro(const std::string& name, const std::string& text);

}  // namespace elliptica::ewald
