/// @file mpi_env.cpp
/// MPI start-up and collective helpers of the CLI (mpi_env.hpp).
#include "mpi_env.hpp"

#include <cstdlib>
#include <string>

#include "elliptica/core/error.hpp"

#ifdef ELLIPTICA_HAVE_MPI
#include <mpi.h>
#endif

namespace elliptica::cli {

#ifndef ELLIPTICA_HAVE_MPI

bool mpi_start(int*, char***) { return false; }
void mpi_stop() {}
int mpi_rank() { return 0; }
int mpi_size() { return 1; }
ewald::MpiComm mpi_world() { return {}; }
void mpi_agree(const std::exception_ptr& e) {
  if (e) std::rethrow_exception(e);
}
std::vector<ewald::DistributedStats> mpi_gather_stats(const ewald::DistributedStats& s) { return {s}; }

#else

namespace {
bool g_started = false;
// Launched by an MPI launcher: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's hydra
// PMI_SIZE, other PMIx launchers (srun --mpi=pmix) PMIX_RANK. A process that made itself an MPI
// singleton (a Python program whose hypre or mpi4py called MPI_Init) leaves PMIX_RANK and
// OMPI_MCA_ess=singleton to its children, which are not launched: those are excluded, or every
// CLI run of such a parent would initialise MPI.
bool launched() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE")) return true;
  const char* ess = std::getenv("OMPI_MCA_ess");
  return std::getenv("PMIX_RANK") && !(ess && std::string(ess) == "singleton");
}
bool active() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}
}  // namespace

bool mpi_start(int* argc, char*** argv) {
  if (!launched()) return false;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_started = true;
  return true;
}

void mpi_stop() {
  if (g_started && active()) MPI_Finalize();
  g_started = false;
}

int mpi_rank() {
  int r = 0;
  if (active()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_size() {
  int s = 1;
  if (active()) MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

ewald::MpiComm mpi_world() { return {static_cast<int>(MPI_Comm_c2f(MPI_COMM_WORLD))}; }

void mpi_agree(const std::exception_ptr& e) {
  if (mpi_size() == 1) {
    if (e) std::rethrow_exception(e);
    return;
  }
  ewald::mpi_agree(mpi_world(), e);  // the library's: the same classes and messages on every rank
}

std::vector<ewald::DistributedStats> mpi_gather_stats(const ewald::DistributedStats& s) {
  // the stats as doubles: 16 fixed fields and the times of the stages below
  static const char* stages[] = {"SORT", "GHOST-SOURCE", "P2P", "P2G", "GHOST-GRID", "FFT", "CNV", "IFFT", "G2P", "self"};
  constexpr int nf = 16, nst = sizeof stages / sizeof stages[0], w = nf + nst;
  double mine[w] = {double(s.ranks), double(s.rank), double(s.owned), double(s.ghosts), double(s.plane_start),
                    double(s.planes), double(s.bytes_sort), double(s.bytes_ghost_source), double(s.bytes_ghost_grid),
                    double(s.slab_axis), s.slab_lo, s.slab_hi, double(s.neighbour_sort),
                    double(s.neighbour_ghost_source), double(s.neighbour_ghost_grid), double(s.pair_symmetry)};
  for (int k = 0; k < nst; ++k) mine[nf + k] = s.times.get(stages[k]);
  const int size = mpi_size(), rank = mpi_rank();
  std::vector<double> all(rank == 0 ? std::size_t(size) * w : 1);
  MPI_Gather(mine, w, MPI_DOUBLE, all.data(), w, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<ewald::DistributedStats> out;
  if (rank != 0) return out;
  for (int r = 0; r < size; ++r) {
    const double* a = &all[std::size_t(r) * w];
    ewald::DistributedStats t;
    t.ranks = int(a[0]);
    t.rank = int(a[1]);
    t.owned = std::size_t(a[2]);
    t.ghosts = std::size_t(a[3]);
    t.plane_start = int(a[4]);
    t.planes = int(a[5]);
    t.bytes_sort = std::uint64_t(a[6]);
    t.bytes_ghost_source = std::uint64_t(a[7]);
    t.bytes_ghost_grid = std::uint64_t(a[8]);
    t.slab_axis = int(a[9]);
    t.slab_lo = a[10];
    t.slab_hi = a[11];
    t.neighbour_sort = a[12] != 0;
    t.neighbour_ghost_source = a[13] != 0;
    t.neighbour_ghost_grid = a[14] != 0;
    t.pair_symmetry = a[15] != 0;
    for (int k = 0; k < nst; ++k)
      if (a[nf + k] > 0) t.times.add(stages[k], a[nf + k]);
    out.push_back(t);
  }
  return out;
}

#endif

}  // namespace elliptica::cli
