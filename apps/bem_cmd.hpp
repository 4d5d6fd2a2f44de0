#pragma once
/// @file bem_cmd.hpp
/// The `elliptica bem` subcommand (seed 001): exterior Helmholtz scattering by a closed
/// triangulated surface with the Burton-Miller collocation BEM (dense or FMM operator), GMRES with an optional
/// block-diagonal (octree) preconditioner; writes the surface field (.npy, .vtu), the far field
/// (CSV) and a bistatic cross-section plot (PNG).
#include <array>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"

namespace elliptica::cli {

/// The C++ defaults of the BEM plan, the only source of the CLI's default values.
inline const bem::HelmholtzBemOptions& bem_defaults() {
  static const bem::HelmholtzBemOptions d{};
  return d;
}

/// Raw command-line values of `elliptica bem`; interpreted and validated by run_bem.
struct BemArgs {
  std::string mesh;
  bool curve = false;     ///< --curve: curve a flat mesh by its vertex normals (bem::curve_by_vertex_normals)
  double crease = 45.0;   ///< --crease DEG: feature edges sharper than this stay straight (with --curve)
  int loop = -1;          ///< --loop N: the Loop limit surface at N levels (bem::loop_subdivision_surface); -1: off
  std::string k;  ///< --k RE[,IM] (1/length unit); excludes --frequency
  // acoustic units (--frequency: a frequency sweep in Hz, bem_acoustics_cmd.cpp)
  std::string frequency;  ///< F | F1,F2,... | FROM:TO:STEP (Hz)
  double sound_speed = bem::Medium{}.sound_speed;
  double density = bem::Medium{}.density;
  std::string problem = "scattering";  ///< scattering | radiation
  std::string velocity;                ///< radiation: uniform:V[,VIM] | translate:UX,UY,UZ | FILE
  std::string impedance;               ///< RE[,IM] Pa s/m: locally reacting surface (bc neumann)
  std::string field_points;            ///< FILE ((M,3)) | grid:PLANE=C,A0,A1,NA,B0,B1,NB
  bool resume = false;
  std::string ground;                  ///< AXIS=H[,rigid|soft]: a ground plane (half-space Green's function)
  std::vector<std::string> symmetry;   ///< AXIS=H[,symmetric|antisymmetric], repeatable: symmetry planes
  std::string bc = "neumann";
  std::string incident = "plane:0,0,1";
  bool incident_given = false;  ///< --incident on the command line (radiation: adds the incident field)
  std::string incident_file;  ///< --incident-file: (M,3) directions of a monostatic sweep
  std::string precond = bem::to_string(bem_defaults().precond.kind);
  std::string op = bem::to_string(bem_defaults().op.kind);
  int dense_max = static_cast<int>(bem_defaults().op.dense_max_elements);
  double fmm_tol = bem_defaults().op.fmm.tolerance;
  int bd_level = bem_defaults().precond.bd_level;
  int bd_leaf = bem_defaults().op.fmm.tree.max_leaf;
  double ifmm_eps = bem_defaults().precond.ifmm.ifmm.epsilon;
  int ifmm_sigma = bem_defaults().precond.ifmm.ifmm.sigma;
  int ifmm_top = bem_defaults().precond.ifmm.ifmm.top;
  int ifmm_bottom = bem_defaults().precond.ifmm.ifmm.bottom;
  int ifmm_order = bem_defaults().precond.ifmm.order;
  int ifmm_depth = bem_defaults().precond.ifmm.depth;
  double tol = bem_defaults().gmres.rtol;
  int restart = bem_defaults().gmres.restart;
  int max_iter = bem_defaults().gmres.max_iterations;
  std::string alpha;
  int threads = bem_defaults().threads;
  int far_field_points = 400;
  std::string out;
  bool no_plots = false;
  std::string plot_script;
  bool quiet = false;
};

/// Registers `bem` on `app`; `args` must outlive parsing.
CLI::App* add_bem_command(CLI::App& app, BemArgs& args);

/// Runs `elliptica bem`. Returns 0 on success; throws elliptica::Error on bad input
/// (InvalidArgument, exit 2), file problems (IOError, exit 3), numerical failure (exit 4) or no
/// convergence (NotConverged, exit 5). Output files are written atomically, only on success.
int run_bem(const BemArgs& args);

/// Internal to the bem command (bem_cmd.cpp, bem_acoustics_cmd.cpp).
namespace bem_detail {
/// "sphere:R,REF" (icosphere), "octasphere:R,REF", "ellipsoid:A,B,C,REF" or a mesh file
/// (.msh/.obj/.stl); `description` gets a one-line description. InvalidArgument / IOError.
bem::Mesh load_mesh(const std::string& spec, std::string& description);
/// load_mesh, then with a.curve the mesh validated, oriented and curved by its vertex normals, with
/// a.loop >= 0 validated, oriented and replaced by its Loop limit surface at a.loop levels
/// (InvalidArgument: --curve or --loop on a curved mesh or with --symmetry, both together, --loop
/// outside [0, 8]; --crease without --curve).
bem::Mesh load_mesh(const BemArgs& a, std::string& description);
/// --ground AXIS=H[,rigid|soft] (AXIS x, y or z; default rigid): InvalidArgument otherwise.
bem::GroundPlane parse_ground(const std::string& spec);
/// --symmetry AXIS=H[,symmetric|antisymmetric] (default symmetric): InvalidArgument otherwise.
bem::MirrorPlane parse_symmetry(const std::string& spec);
/// Set-up progress on stderr: one line per stage and per 10%.
std::function<void(const std::string&, double)> setup_progress();
/// The frequency sweep of `elliptica bem --frequency` (bem_acoustics_cmd.cpp): `ho` carries the
/// solver options already checked by run_bem; `script` the plot script ("" with --no-plots).
/// `directions` (may be empty): a monostatic sweep of plane waves at every frequency
/// (--incident sweep:... / --incident-file), with their sweep angles (empty for a file) and a
/// description.
struct AcousticDirections {
  std::vector<std::array<double, 3>> directions;
  std::vector<double> angles_deg;
  std::string description;
};
int run_acoustics(const BemArgs& a, bem::HelmholtzBemOptions ho, const std::string& script,
                  const AcousticDirections& directions);
}  // namespace bem_detail

}  // namespace elliptica::cli
