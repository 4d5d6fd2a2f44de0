// core/parallel.hpp: ParallelErrors (exceptions out of parallel regions) and with_threads (the
// team size of regions without a num_threads clause, which is how Eigen sizes its GEMM teams).
#include <gtest/gtest.h>
#include <omp.h>

#include <Eigen/Core>
#include <atomic>
#include <stdexcept>

#include "elliptica/core/parallel.hpp"

namespace {

using elliptica::ParallelErrors;
using elliptica::with_threads;

// The size of a team forked without num_threads clause at the current point.
int default_team_size() {
  int n = 0;
#pragma omp parallel
  {
#pragma omp single
    n = omp_get_num_threads();
  }
  return n;
}

TEST(WithThreads, SetsTheDefaultTeamSizeInsideOnly) {
  const int before = omp_get_max_threads();
  for (int t : {1, 2, 3}) {
    int inside = -1, team = -1, eigen = -1;
    with_threads(t, [&] {
      inside = omp_get_max_threads();
      team = default_team_size();
      eigen = Eigen::nbThreads();
    });
    EXPECT_EQ(inside, t);
    EXPECT_EQ(team, t) << "a region nested in with_threads must be able to fork (dynamic adjustment is off)";
    EXPECT_EQ(eigen, t) << "Eigen's GEMM sizes its team by omp_get_max_threads()";
    EXPECT_EQ(omp_get_max_threads(), before) << "with_threads leaked its team size to the caller";
  }
  int inside0 = -1;
  with_threads(0, [&] { inside0 = omp_get_max_threads(); });
  EXPECT_EQ(inside0, before) << "threads = 0 means omp_get_max_threads() of the caller";
}

TEST(WithThreads, EigenStaysSequentialInsideTheLibrarysOwnTeams) {
  // Inside a region of more than one thread, nested regions get one thread (max-active-levels 1).
  std::atomic<int> bigger{0};
  with_threads(2, [&] {
#pragma omp parallel num_threads(2)
    if (default_team_size() > 1) bigger.fetch_add(1);
  });
  EXPECT_EQ(bigger.load(), 0);
}

TEST(WithThreads, RethrowsOnTheCallingThread) {
  EXPECT_THROW(with_threads(2, [] { throw std::runtime_error("inside"); }), std::runtime_error);
  // a parallel region inside whose worker fails: ParallelErrors carries it out, with_threads on
  // (no pragma inside a macro argument: the lambda first)
  const auto failing = [] {
    ParallelErrors errors;
#pragma omp parallel for num_threads(2)
    for (int i = 0; i < 64; ++i)
      errors.run([&] {
        if (i == 37) throw std::invalid_argument("i = 37");
      });
    errors.rethrow();
  };
  EXPECT_THROW(with_threads(2, failing), std::invalid_argument);
}

TEST(ParallelErrors, KeepsTheFirstAndSkipsTheRest) {
  ParallelErrors errors;
  std::atomic<int> ran{0};
#pragma omp parallel for num_threads(2) schedule(static, 1)
  for (int i = 0; i < 1000; ++i)
    errors.run([&] {
      ran.fetch_add(1);
      throw std::runtime_error("fail");
    });
  EXPECT_TRUE(errors.failed());
  EXPECT_LT(ran.load(), 1000) << "work after the first failure must be skipped";
  EXPECT_THROW(errors.rethrow(), std::runtime_error);
}

}  // namespace
