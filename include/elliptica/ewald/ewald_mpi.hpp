/// @file ewald_mpi.hpp
/// The distributed spectral Ewald sum over MPI (seed 000, section 6.5; issue 30): slabs of the box
/// and of the FFT grid along one axis (the longest by default), one per rank; MPI-SORT, MPI-GHOST-SOURCE, MPI-GHOST-GRID, FFTW-MPI
/// transforms (docs/ewald_mpi.md). This header needs no mpi.h: the communicator is passed as its
/// Fortran handle (MPI_Comm_c2f(comm) in C and C++, comm.py2f() in mpi4py), so that programs and
/// libraries built without MPI compile against it; without MPI the plan throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
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

/// Collective over comm: when `error` is set on any rank, every rank throws the error of the
/// lowest failing rank, with its class (InvalidArgument, IOError, NumericalError, NotConverged,
/// ResourceError; std::bad_alloc becomes ResourceError, any other exception std::runtime_error),
/// its message prefixed "rank K: " when K > 0; returns normally on every rank otherwise. For a
/// caller's own checks before a collective call (a rank that threw alone would leave the others
/// waiting). Without MPI in the build: rethrows `error` if set.
void mpi_agree(MpiComm comm, const std::exception_ptr& error);

/// How the point and plane exchanges (MPI-SORT, MPI-GHOST-SOURCE, MPI-GHOST-GRID) send their
/// messages.
enum class ExchangeMode {
  /// Neighbour-only messages (to the ranks of the slabs before and after the rank's own,
  /// periodically; ranks without planes have none) for each exchange in which every rank sends
  /// only to its neighbours (decided by one MPI_Allreduce when the exchange is built: at the
  /// first evaluate after set_points); MPI_Alltoallv otherwise. Time stepping whose points stay
  /// within a slab of their last owner gets the neighbour-only MPI-SORT without asking.
  Auto,
  /// Always MPI_Alltoall (counts) and MPI_Alltoallv (values), over all ranks.
  AllToAll,
  /// MPI-SORT neighbour-only, required: the first evaluate after set_points (where the exchanges
  /// are built) throws InvalidArgument (on every rank, naming the point) when a point's slab is
  /// neither its rank's nor a neighbour's. The ghost exchanges as Auto.
  Neighbour,
};

/// The distributed plan's own options (the numerical ones are Options, as EwaldPlan's).
struct DistributedOptions {
  /// The axis the slabs cut (0, 1, 2 = x, y, z), or -1: the longest side of the box (the first
  /// of equal longest sides), which gives the most grid planes and so the most ranks with work.
  /// The plan works in a box rotated so that this axis comes first (a cyclic permutation of
  /// the axes; vectors in and out are permuted with it); results do not depend on the choice
  /// beyond rounding.
  int slab_axis = -1;
  /// How MPI-SORT, MPI-GHOST-SOURCE and MPI-GHOST-GRID send (ExchangeMode).
  ExchangeMode exchange = ExchangeMode::Auto;
};

/// What one rank did in the last evaluation (DistributedEwaldPlan::stats).
struct DistributedStats {
  int ranks = 1, rank = 0;
  std::size_t owned = 0;   ///< points whose slab is this rank's (after MPI-SORT)
  std::size_t ghosts = 0;  ///< ghost sources received (MPI-GHOST-SOURCE)
  int slab_axis = 0;                ///< the axis the slabs cut (0, 1, 2 = x, y, z)
  int plane_start = 0, planes = 0;  ///< this rank's grid planes along slab_axis: [plane_start, plane_start + planes)
  /// This rank's slab along slab_axis in box coordinates, [slab_lo, slab_hi): the points there
  /// (wrapped into the box) are this rank's after MPI-SORT; empty (slab_lo = slab_hi) for a rank
  /// without planes. A time-stepping caller that keeps its points on their owner (or a
  /// neighbour) gets the neighbour-only MPI-SORT (ExchangeMode).
  double slab_lo = 0, slab_hi = 0;
  /// Whether each exchange sent neighbour-only messages (ExchangeMode): MPI-SORT,
  /// MPI-GHOST-SOURCE, MPI-GHOST-GRID (both ways).
  bool neighbour_sort = false, neighbour_ghost_source = false, neighbour_ghost_grid = false;
  /// Whether P2P used pair symmetry (where the single-process plan would: Options::pair_symmetry,
  /// double precision, r_c < min(L)/2): the pairs of owned points once for both, the owned
  /// targets against the ghost sources one-sided (a pair across a slab face is evaluated on both
  /// sides); otherwise every pair from both of its points.
  bool pair_symmetry = false;
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
/// compute_pressure, every periodicity (Options::periodicity: 2P, 1P, 0P on the extended box
/// EwaldPlan chooses, its kernel tables built on every rank; e.g. a 1P channel cut into slabs
/// along its axis, ParkiPy's layout); not yet: separate targets, compute_energy, exclusions, the
/// baseline P2G. Box lengths must lie in [2^-20, 2^20], with free axes also the points' extent
/// along them, and each set_points tunes again there (the extended box follows the points). MPI must be initialised (MPI_Init_thread with at least
/// MPI_THREAD_FUNNELED when threads > 1) before the plan is made and finalised after it is gone.
///
/// Errors: InvalidArgument (on every rank, naming the first failing rank) for options the
/// single-process plan refuses, the unsupported options above, bad shapes or values on any rank;
/// InvalidArgument from the constructor when this build has no MPI (mpi_available() false).
class DistributedEwaldPlan {
 public:
  /// Throws InvalidArgument (on every rank) for options EwaldPlan refuses, the unsupported
  /// options above, dopts.slab_axis outside -1..2, or options (box, kernel, precision, outputs,
  /// tolerance, viscosity, slab axis, exchange) that differ between ranks.
  DistributedEwaldPlan(const Options& opts, MpiComm comm, const DistributedOptions& dopts = {});
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
  /// ranks, rank and slab_axis are set).
  DistributedStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace elliptica::ewald
