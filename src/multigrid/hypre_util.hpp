#pragma once
/// @file hypre_util.hpp
/// Private to the multigrid module (built only with ELLIPTICA_HAVE_HYPRE): the lazy MPI
/// initialisation hypre needs and the translation of hypre's error codes into elliptica's errors.
/// See boomeramg.hpp for the one process-wide effect (MPI_Init) and why.

#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <HYPRE_parcsr_ls.h>
#include <HYPRE_parcsr_mv.h>

#include "elliptica/multigrid/boomeramg.hpp"

#include <mutex>

namespace elliptica::multigrid {

/// The hypre objects of a BoomerAmgPreconditioner (all on MPI_COMM_SELF): A as an IJ/ParCSR
/// matrix, the right-hand side and solution vectors of the cycles, and the BoomerAMG solver after
/// its set-up. boomeramg.cpp makes it; boomeramg_hierarchy.cpp reads the levels out of `solver`.
struct BoomerAmgPreconditioner::Impl {
  HYPRE_IJMatrix ij_A = nullptr;
  HYPRE_ParCSRMatrix A = nullptr;  ///< owned by ij_A
  HYPRE_IJVector ij_b = nullptr, ij_x = nullptr;
  HYPRE_ParVector b = nullptr, x = nullptr;  ///< owned by ij_b, ij_x
  HYPRE_Solver solver = nullptr;
  int last_cycles = 0;
  ~Impl();
};

}  // namespace elliptica::multigrid

namespace elliptica::multigrid::hypre_detail {

/// Initialises MPI once per process if the host program has not (MPI_Initialized): MPI_Init_thread
/// with MPI_THREAD_SERIALIZED (a singleton start without mpirun), then std::atexit(MPI_Finalize).
/// When the host initialised MPI, nothing is done and nothing is finalised. Thread-safe
/// (std::call_once). Throws NumericalError when MPI_Init_thread fails.
void ensure_mpi();

/// The process-wide lock around every hypre call (set-up, cycles, level copies, destruction):
/// hypre keeps global state (its error flag, memory bookkeeping) and MPI is initialised with
/// MPI_THREAD_SERIALIZED, so BoomerAMG objects used from several threads take turns.
std::mutex& hypre_mutex();

/// Whether MPI has been finalised (hypre objects still alive at exit are then not destroyed:
/// their destroy functions may call MPI).
bool mpi_finalized();

/// Throws NumericalError("<call> failed: <hypre's description> (hypre error code <err>)") when
/// err != 0, after clearing hypre's global error flag; err == 0: nothing.
void check(int err, const char* call);

}  // namespace elliptica::multigrid::hypre_detail
