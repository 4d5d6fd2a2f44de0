/// @file hypre_mpi.cpp
/// MPI for hypre: lazy one-time initialisation (only when a BoomerAMG object is first made) and
/// hypre's error codes as elliptica errors. Compiled only with ELLIPTICA_HAVE_HYPRE.
#include <mpi.h>

#include <HYPRE_utilities.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "elliptica/core/error.hpp"
#include "multigrid/hypre_util.hpp"

namespace elliptica::multigrid::hypre_detail {

namespace {
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

void ensure_mpi() {
  static std::once_flag once;
  static int init_error = MPI_SUCCESS;
  std::call_once(once, [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;  // the host program owns MPI (initialisation and finalisation)
    int provided = 0;
    init_error = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (init_error == MPI_SUCCESS) std::atexit(finalize_at_exit);
  });
  if (init_error != MPI_SUCCESS)
    throw NumericalError("BoomerAMG: MPI_Init_thread failed (MPI error " + std::to_string(init_error) +
                         "); hypre needs MPI");
}

std::mutex& hypre_mutex() {
  static std::mutex m;
  return m;
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

void check(int err, const char* call) {
  if (err == 0) return;
  char descr[512] = {0};
  HYPRE_DescribeError(err, descr);
  HYPRE_ClearAllErrors();
  std::string d(descr);
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  throw NumericalError(std::string(call) + " failed: " + (d.empty() ? "unknown hypre error" : d) +
                       " (hypre error code " + std::to_string(err) + ")");
}

}  // namespace elliptica::multigrid::hypre_detail
