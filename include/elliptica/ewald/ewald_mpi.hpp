/// @file ewald_mpi.hpp
/// The distributed spectral Ewald sum over MPI (seed 000, section 6.5; issue 30): slabs of the box
/// and of the FFT grid along x, one per rank; MPI-SORT, MPI-GHOST-SOURCE, MPI-GHOST-GRID, FFTW-MPI
/// transforms (docs/ewald_mpi.md). This header needs no mpi.h: the communicator is passed as its
/// Fortran handle (MPI_Comm_c2f(comm) in C and C++, comm.py2f() in mpi4py), so that programs and
/// libraries built without MPI compile against it; without MPI the plan throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "elliptica/core/array.hpp"
#include "elliptica/core/timer.hpp"
#include "elliptica/ewald/ewald.hpp"

namespace elliptica::ewald {

/// Whether this build of elliptica has the distributed plan (MPI and FFTW-MPI were found).
bool mpi_available();

/// An MPI communicator as its Fortran handle (MPI_Comm_c2f(comm); mpi4py: comm.py2f()).
struct MpiComm {
  int fortran = 0;
};

/// What one rank did in the last evaluation (DistributedEwaldPlan::stats).
struct DistributedStats {
  int ranks = 1, rank = 0;
  std::size_t owned = 0;   ///< points whose slab is this rank's (after MPI-SORT)
  std::size_t ghosts = 0;  ///< ghost sources received (MPI-GHOST-SOURCE)
  int plane_start = 0, planes = 0;  ///< this rank's grid planes along x: [plane_start, plane_start + planes)
  /// Bytes sent to other ranks since the last set_points (whose exchanges are rebuilt at the next
  /// evaluate): MPI-SORT (coordinates once, then per evaluate the values out and the results back),
  /// MPI-GHOST-SOURCE (coordinates once, values per evaluate), MPI-GHOST-GRID (planes per evaluate).
  std::uint64_t bytes_sort = 0, bytes_ghost_source = 0, bytes_ghost_grid = 0;
  StageTimes times;  ///< seconds per stage of the last evaluate: SORT, GHOST-SOURCE, P2P, P2G, GHOST-GRID, FFT, CNV, IFFT, G2P, self
};

/// A spectral Ewald plan whose points, grid and work are distributed over the ranks of an MPI
/// communicator. Every call is collective (every rank calls it, in the same order); each rank
/// passes its own points (any number, none included: the global set is their union) and gets
/// the results at its own points, in its order. The parameters are those the single-process
/// EwaldPlan chooses for the global set (the tuner runs once, on rank 0, and its choice is
/// broadcast); results agree with EwaldPlan's on the gathered points to rounding (relative
/// 1e-13 in double precision).
///
/// Supported so far: targets = sources, every kernel and precision, compute_field and
/// compute_pressure; not yet: separate targets, compute_energy, exclusions, the baseline P2G.
/// Box lengths must lie in [2^-20, 2^20]. MPI must be initialised (MPI_Init_thread with at least
/// MPI_THREAD_FUNNELED when threads > 1) before the plan is made and finalised after it is gone.
///
/// Errors: InvalidArgument (on every rank, naming the first failing rank) for options the
/// single-process plan refuses, the unsupported options above, bad shapes or values on any rank;
/// InvalidArgument from the constructor when this build has no MPI (mpi_available() false).
class DistributedEwaldPlan {
 public:
  DistributedEwaldPlan(const Options& opts, MpiComm comm);
  ~DistributedEwaldPlan();
  DistributedEwaldPlan(const DistributedEwaldPlan&) = delete;
  DistributedEwaldPlan& operator=(const DistributedEwaldPlan&) = delete;

  /// This rank's sources (n, 3) and, for the stresslet and stokes-combined kernels, their unit
  /// normals (n, 3). Collective.
  void set_points(ConstMatrixView<double> sources, std::optional<ConstMatrixView<double>> normals = std::nullopt);
  /// This rank's densities (rows: its points); the result at its points (values, field, pressure
  /// as EwaldPlan::evaluate), params the global choice. Collective; the first call tunes.
  Result evaluate(const Densities& d);
  /// The parameters in use (after the first evaluate; empty before).
  Params params() const;
  /// This rank's counts, bytes and stage times (of the last evaluate; before the first: only
  /// ranks and rank are set).
  DistributedStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace elliptica::ewald
