#pragma once
/// @file acoustic_sweep.hpp
/// The acoustic BEM over a list of frequencies, in physical units (acoustics.hpp): the plan that
/// `elliptica bem --frequency` and Python's `AcousticBEM.sweep` are thin layers over.
///
/// Configured once (AcousticSweep's constructor): the mesh is validated and oriented, the body
/// size, the field points' inside flags, the normal velocity and the admittance of an impedance
/// surface are resolved, and every frequency's plan options are checked (HelmholtzBem::validate)
/// before anything is computed or written. Then each frequency i builds its HelmholtzBem at
/// k = 2 pi f_i / c (the operators depend on k) and solves (solve(i), reentrant), or run() goes
/// through the list, optionally in a run folder that an interrupted sweep resumes from.
///
/// Reuse across frequencies: the validated mesh and everything resolved on it; with the FMM
/// operator, the octree over the collocation points (and those of the ground / symmetry images)
/// is built at the first frequency computed and handed to the later plans
/// (fmm::HelmholtzFmmOptions::prebuilt_tree; in free space the BD preconditioner uses the same
/// tree). The k-dependent parts (the M2L operators, the near-field
/// quadrature, the BD blocks and their LU factors) are rebuilt at each frequency; they are
/// nearly all of a set-up (docs/bem.md, "Frequency sweeps from the CLI").
///
/// Problems (the incident fields have 1 Pa amplitude: the plane wave e^{ik d.x}; the point source
/// 4 pi G(x, x0) = e^{ik r} / r, 1 Pa at 1 m):
/// - radiation: `velocity` given (outward normal velocity, m/s; acoustics.hpp); bc Neumann; an
///   incident field may be added (radiation + scattering);
/// - scattering: `plane_wave` or `point_source`;
/// - monostatic: `monostatic` directions d_j (plane waves e^{ik d_j.x}, backscatter at -d_j), one
///   set-up and one GMRES per direction at each frequency.
///
/// Run folder (run(); the format `elliptica bem --frequency --out DIR` documents, docs/bem.md):
///   run.json         settings() (what defines the results: data digests, medium, solver) and the
///                    caller's labels; a resume continues only a folder with the same run.json
///   frequencies.csv  one row per finished frequency (kRowHeader), rewritten atomically after each
///   fNNNN/           per frequency (NNNN its index): surface.npy, surface.vtu, directivity.csv
///                    (with directions), field_points.csv and field.vtu (a grid), or
///                    monostatic.csv; written as one set when the frequency is finished
///   summary.json     totals, at the end
/// A run that fails before its first frequency is finished leaves no run.json behind.
#include <array>
#include <complex>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/core/record.hpp"

namespace elliptica::bem {

/// At most this many frequencies in one sweep, and field points.
inline constexpr std::size_t kMaxSweepFrequencies = 100000;
inline constexpr std::size_t kMaxFieldPoints = 10000000;

struct AcousticSweepOptions {
  Medium medium;  ///< sound speed (m/s) and density (kg/m^3)
  /// The options of every frequency's plan (operator, preconditioner, GMRES, symmetry and ground
  /// planes, threads). Its admittance must be empty: give `impedance` instead.
  HelmholtzBemOptions solver;
  /// Specific acoustic impedance Z (Pa s/m) of a locally reacting surface: empty (rigid, or
  /// pressure release with bc Dirichlet), one value (the whole surface) or one per element. Needs
  /// bc Neumann and no IFMM preconditioner.
  std::vector<cplx> impedance;
  /// Outward normal velocity (m/s): empty (no radiation), one value (a pulsating body) or one
  /// per element: radiation, bc Neumann.
  std::vector<cplx> velocity;
  /// The incident field: a plane wave of this direction (any length > 0), or a point source at
  /// this location (outside the body, above a ground plane). At most one of them; none for pure
  /// radiation.
  std::optional<std::array<double, 3>> plane_wave;
  std::optional<std::array<double, 3>> point_source;
  /// Monostatic sweep: incident directions d_j (any length > 0) at every frequency; excludes
  /// velocity, plane_wave, point_source and field_points. monostatic_angles_deg: empty or one
  /// label per direction (monostatic.csv's first column; else the index).
  std::vector<std::array<double, 3>> monostatic;
  std::vector<double> monostatic_angles_deg;
  /// Far-field directions (any length > 0; normalised) where p_inf (Pa m) is reported, e.g. a
  /// polar cut; direction_angles_deg: empty or one label per direction (directivity.csv's first
  /// column; else the index).
  std::vector<std::array<double, 3>> directions;
  std::vector<double> direction_angles_deg;
  /// Field points (m) where the total pressure is reported (0 inside the body, on its surface or
  /// below a ground plane). grid_na x grid_nb > 0: they form a plane grid, row-major (point
  /// i * grid_nb + j), also written as field.vtu; 0: a list.
  std::vector<std::array<double, 3>> field_points;
  std::size_t grid_na = 0, grid_nb = 0;
  /// Hand the octree of the first frequency's FMM to the later plans (see the file comment).
  bool reuse_tree = true;
};

/// The results of one frequency.
struct FrequencyResult {
  std::size_t index = 0;     ///< in frequencies()
  double frequency_hz = 0;
  double k = 0;              ///< 2 pi f / c, 1/m
  double ka = 0;             ///< k D / 2, D = body_size of the whole body
  int iterations = 0;        ///< GMRES iterations (monostatic: the largest over the directions)
  double setup_seconds = 0;  ///< the plan (and the radiation companion operator)
  double solve_seconds = 0;  ///< GMRES (monostatic: summed over the directions)
  double field_seconds = 0;  ///< far field, power, field points
  /// Radiated (radiation) or scattered power (W): 1/(2 rho c) int |p_inf|^2 dOmega over the
  /// sphere (the half sphere above a ground plane), a product rule exact for degree <
  /// 2 n_theta, n_theta = clamp(ceil(ka) + 12, 12, 200). NaN for monostatic sweeps.
  double power_w = 0;
  double lw_db = 0;          ///< sound power level 10 log10(P / 1 pW); NaN for P <= 0
  /// Plane-wave scattering: target strength 20 log10 |p_inf(-d)| / (1 Pa m) (dB re 1 m^2);
  /// monostatic: the largest over the directions; else NaN.
  double ts_db = 0;
  double max_spl_1m_db = 0;  ///< largest SPL at 1 m (|p_inf| / 1 m) over `directions`; NaN without
  /// The surface pressure (Pa, one per element: u of bc Neumann) or, for bc Dirichlet, dp/dn
  /// (Pa/m). Empty when run() does not keep it.
  std::vector<cplx> surface;
  std::vector<cplx> p_inf;   ///< Pa m, at options' directions
  std::vector<cplx> field;   ///< Pa, total pressure at the field points (0 where inside)
  std::vector<MonostaticResult> monostatic;  ///< per monostatic direction (u_inf in Pa m)
  bool resumed = false;      ///< read back from the run folder, not computed by this run
};

/// The columns of frequencies.csv.
inline constexpr const char* kFrequencyRowHeader =
    "index,frequency_hz,k,ka,gmres_iterations,setup_seconds,solve_seconds,field_seconds,power_w,lw_db,ts_db,"
    "max_spl_1m_db";

/// Where and how run() works.
struct SweepRunOptions {
  std::string folder;          ///< run folder; empty: no files, every frequency computed
  bool resume = false;         ///< continue the sweep in `folder` (same run.json); else a folder
                               ///< holding a run.json is refused
  Record labels;               ///< the caller's own settings, written into run.json as "labels"
  bool keep_surface = false;   ///< keep FrequencyResult::surface (N values per frequency)
  /// keep p_inf, field and monostatic results of every frequency in the summary (and read them
  /// back on resume); false (the CLI: they are in the files) drops them after each frequency's
  /// files and progress. What is kept is checked against the memory first (OutOfResources).
  bool keep_fields = true;
  /// After every frequency computed, with the number finished (resumed included) and the total.
  std::function<void(const FrequencyResult&, std::size_t, std::size_t)> progress;
  /// One-line messages (e.g. how many frequencies a resume found); may be empty.
  std::function<void(const std::string&)> log;
};

/// What run() did.
struct SweepSummary {
  std::vector<FrequencyResult> results;  ///< one per frequency, in frequencies() order
  std::size_t computed = 0, resumed = 0;
  double setup_seconds = 0, solve_seconds = 0, sweep_seconds = 0;  ///< of the computed frequencies
  int max_iterations = 0;
};

class AcousticSweep {
 public:
  /// Checks everything before any work (InvalidArgument naming the problem): frequencies (1 to
  /// kMaxSweepFrequencies, finite, > 0 Hz), the medium, the mesh (validate_and_orient with the
  /// symmetry planes), the problem (velocity / incident field / monostatic rules above; sizes 1 or
  /// N), the impedances (admittance_from_impedance per value, naming the element), the point
  /// source (outside the body, above the ground), the field points (finite, at most
  /// kMaxFieldPoints, grid dimensions), the plan options at the lowest and highest frequency
  /// (HelmholtzBem::validate: its k-dependent rules are monotone in k) and the symmetry of the
  /// incident fields (check_symmetric_incidence). The FMM's own limits (box size in wavelengths,
  /// tolerance at the order cap) need its octree and are met at the first frequency beyond them.
  AcousticSweep(Mesh mesh, std::vector<double> frequencies_hz, AcousticSweepOptions opt);
  ~AcousticSweep();
  AcousticSweep(AcousticSweep&&) noexcept;

  const std::vector<double>& frequencies() const;
  const Mesh& mesh() const;        ///< validated and oriented (the part, with symmetry planes)
  const MeshReport& report() const;
  double body_size() const;        ///< D of the whole body (m)
  const std::vector<char>& inside() const;  ///< per field point: 1 inside / on / below the ground
  const AcousticSweepOptions& options() const;
  /// Empty, or mesh_resolution_warning at the highest frequency.
  std::string resolution_warning() const;
  /// The settings that define the results (run.json): counts, digests (FNV-1a, 64 bit) of the
  /// mesh, frequencies, velocities, impedances, directions and field points, the medium, the
  /// problem, the incident field and the solver options.
  Record settings() const;

  /// Frequency i alone (no files; p_inf, field, surface filled). Reentrant. Throws what the plan
  /// throws (NotConverged when GMRES misses its tolerance and the options throw).
  FrequencyResult solve(std::size_t i) const;
  /// Every frequency, in order; with a folder, the run folder of the file comment (IOError when
  /// it cannot be written; InvalidArgument for a folder holding another sweep's run.json, or one
  /// without resume). Frequencies a resume finds finished are read back, not recomputed.
  SweepSummary run(const SweepRunOptions& ro = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace elliptica::bem
