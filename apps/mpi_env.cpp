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
  int category = -1;  // -1: no error; else the ErrorCategory, or 99 for another exception
  std::string msg;
  if (e) {
    try {
      std::rethrow_exception(e);
    } catch (const Error& x) {
      category = static_cast<int>(x.category());
      msg = x.what();
    } catch (const std::exception& x) {
      category = 99;
      msg = x.what();
    }
  }
  const int rank = mpi_rank(), size = mpi_size();
  int mine = category >= 0 ? rank : size, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size) return;
  int head[2] = {category, static_cast<int>(msg.size())};
  MPI_Bcast(head, 2, MPI_INT, first, MPI_COMM_WORLD);
  msg.resize(std::size_t(head[1]));
  if (head[1] > 0) MPI_Bcast(msg.data(), head[1], MPI_CHAR, first, MPI_COMM_WORLD);
  if (first > 0) msg = "rank " + std::to_string(first) + ": " + msg;
  if (head[0] == 99) throw std::runtime_error(msg);
  switch (static_cast<ErrorCategory>(head[0])) {  // the same exception class on every rank
    case ErrorCategory::IO: throw IOError(msg);
    case ErrorCategory::Numerical: throw NumericalError(msg);
    case ErrorCategory::NotConverged: throw NotConverged(msg);
    case ErrorCategory::Resource: throw ResourceError(msg);
    default: throw InvalidArgument(msg);
  }
}

std::vector<ewald::DistributedStats> mpi_gather_stats(const ewald::DistributedStats& s) {
  // the stats as doubles: 11 fixed fields and the times of the stages below
  static const char* stages[] = {"SORT", "GHOST-SOURCE", "P2P", "P2G", "GHOST-GRID", "FFT", "CNV", "IFFT", "G2P", "self"};
  constexpr int nst = sizeof stages / sizeof stages[0], w = 10 + nst;
  double mine[w] = {double(s.ranks), double(s.rank), double(s.owned), double(s.ghosts), double(s.plane_start),
                    double(s.planes), double(s.bytes_sort), double(s.bytes_ghost_source), double(s.bytes_ghost_grid), 0.0};
  for (int k = 0; k < nst; ++k) mine[10 + k] = s.times.get(stages[k]);
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
    for (int k = 0; k < nst; ++k)
      if (a[10 + k] > 0) t.times.add(stages[k], a[10 + k]);
    out.push_back(t);
  }
  return out;
}

#endif

}  // namespace elliptica::cli
