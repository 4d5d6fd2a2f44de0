// main() of the GoogleTest executables that run under mpirun (tests/CMakeLists.txt,
// elliptica_add_mpi_test): MPI initialised (FUNNELED: MPI is called outside OpenMP regions only),
// GoogleTest's printer on rank 0 only, and one exit status for all ranks (a failure on any rank
// fails every rank), so that mpirun reports it and no rank waits in a collective for another.
// Every test runs the same collectives on every rank, in the same order, before it checks.
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int mine = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank != 0 && mine) std::fprintf(stderr, "rank %d: a test failed\n", rank);
  MPI_Finalize();
  return any;
}
