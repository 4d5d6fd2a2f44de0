// One rank's part of the distributed spectral Ewald sum for given parameters (seed 000,
// section 6.5; issue 30): the stages of the CPU backend on the rank's slab, joined by the MPI
// exchanges (mpi/exchange.hpp), MPI-GHOST-GRID (slab.hpp) and the distributed FFT
// (mpi/fft_mpi.hpp). Compiled only with MPI.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "elliptica/ewald/ewald.hpp"
#include "elliptica/ewald/ewald_mpi.hpp"
#include "ewald/backend.hpp"

namespace elliptica::ewald::detail::mpi {

/// Per rank: the points it received (MPI-SORT), the ghost sources and planes it exchanged.
struct DistributedCounts {
  std::size_t owned = 0, ghosts = 0;
  int plane_start = 0, planes = 0;
  double slab_lo = 0, slab_hi = 0;  ///< the rank's interval along axis 0
  std::uint64_t bytes_sort = 0, bytes_ghost_source = 0, bytes_ghost_grid = 0;
  bool neighbour_sort = false, neighbour_ghost_source = false, neighbour_ghost_grid = false;
  bool pair_symmetry = false;  ///< P2P split: owned pairs once for both points, ghosts one-sided
};

/// MPI_Pcontrol levels that mark the backend's communication for a PMPI profiler (the MPI
/// standard leaves levels other than 0, 1, 2 to profilers; a plain MPI ignores the call):
/// bench/mpi_bytes/ counts the bytes each rank sends inside every phase, FFTW-MPI's own messages
/// included. A phase starts with MPI_Pcontrol(level) and ends with MPI_Pcontrol(kPhaseNone).
enum PcontrolPhase : int {
  kPhaseNone = 1000,
  kPhaseSetup = 1001,        ///< set_points' exchanges: MPI-SORT and MPI-GHOST-SOURCE of the coordinates, the slab layout
  kPhaseSort = 1002,         ///< MPI-SORT of the values and of the results back
  kPhaseGhostSource = 1003,  ///< MPI-GHOST-SOURCE of the values
  kPhaseGhostGrid = 1004,    ///< MPI-GHOST-GRID, both ways
  kPhaseFft = 1005,          ///< the distributed R2C FFT (FFTW-MPI's transposes)
  kPhaseIfft = 1006,         ///< the distributed C2R FFT
  kPhaseReduce = 1007,       ///< the self stage's global sums
};

class DistributedBackend {
 public:
  virtual ~DistributedBackend() = default;
  /// Collective. v: (n_local, n_src) values of this rank's points in the caller's order (plan
  /// units, as Backend::load takes them); out: (n_local, n_out) results in the caller's order
  /// (K::final_scale applied, as Backend::store). Stage times added to `times` (SORT,
  /// GHOST-SOURCE, P2P, P2G, GHOST-GRID, FFT, CNV, IFFT, G2P, self).
  virtual void evaluate(const double* v, double* out, StageTimes& times) const = 0;
  virtual DistributedCounts counts() const = 0;
};

/// Collective over comm (every rank the same setup). points: this rank's (n_local, 3) wrapped
/// coordinates in [0, L) (any rank may hold any points, or none); the slab axis is axis 0.
/// The targets are the sources. mode: how the exchanges send (ExchangeMode; Neighbour applies to
/// MPI-SORT, the ghost exchanges then go as Auto). setup.energy_parseval and the baseline P2G
/// are not supported (InvalidArgument on every rank).
std::unique_ptr<DistributedBackend> make_distributed_backend(MPI_Comm comm, const std::vector<double>& points,
                                                             const BackendSetup& setup,
                                                             ExchangeMode mode = ExchangeMode::Auto);

}  // namespace elliptica::ewald::detail::mpi
