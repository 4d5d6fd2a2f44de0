/// @file mpi_env.hpp
/// The CLI under mpirun (issue 30): MPI is initialised by main() when the build has MPI and the
/// process was launched by an MPI launcher (Open MPI's, PMIx or PMI environment variables), so
/// that `mpirun -n 4 elliptica ewald ...` runs the distributed Ewald plan; a plain `elliptica`
/// never touches MPI. Without MPI in the build every rank is 0 of 1.
#pragma once

#include <exception>
#include <vector>

#include "elliptica/ewald/ewald_mpi.hpp"

namespace elliptica::cli {

/// Initialises MPI (MPI_THREAD_FUNNELED) when launched by an MPI launcher; returns whether it did.
bool mpi_start(int* argc, char*** argv);
/// MPI_Finalize when mpi_start initialised it.
void mpi_stop();
int mpi_rank();
int mpi_size();
/// MPI_COMM_WORLD as the distributed plan takes it.
ewald::MpiComm mpi_world();
/// Collective: if `e` is set on any rank, every rank throws the error (same category) of the
/// lowest failing rank, its message prefixed with "rank K: " when K > 0. No-op on one rank.
void mpi_agree(const std::exception_ptr& e);
/// Collective: every rank's stats, on rank 0 (empty elsewhere).
std::vector<ewald::DistributedStats> mpi_gather_stats(const ewald::DistributedStats& s);

}  // namespace elliptica::cli
