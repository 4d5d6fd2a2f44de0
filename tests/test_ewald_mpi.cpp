// The MPI pieces of the distributed Ewald sum (issue 30), under mpirun with 1-4 ranks
// (tests/CMakeLists.txt: test_ewald_mpi_np<k>): MPI-SORT (PointExchange) and its reverse,
// MPI-GHOST-SOURCE against a brute-force neighbour search over all points, FFTW-MPI's slabs
// against our block rule, and the distributed FFT against the serial FFTW transform of the whole
// grid. Every rank builds the same global data from one seed. Cost: about 1 s per run.
#include <fftw3.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "ewald/mpi/exchange.hpp"
#include "ewald/mpi/fft_mpi.hpp"
#include "ewald/slab.hpp"

namespace {

using elliptica::ewald::detail::block_slabs;
using elliptica::ewald::detail::ghost_ranks;
using elliptica::ewald::detail::SlabLayout;
using elliptica::ewald::detail::mpi::agree;
using elliptica::ewald::detail::mpi::PointExchange;
using elliptica::ewald::detail::mpi::SlabFft;

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// The global points: N points in the box, each given to one rank by `how`: 0 all on rank 0,
// 1 a random rank each, 2 round robin. Returns this rank's points (x, y, z) and global ids.
struct Points {
  std::vector<double> x;
  std::vector<std::int64_t> id;
};
std::vector<double> global_points(std::size_t N, const std::array<double, 3>& L, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> p(3 * N);
  for (std::size_t i = 0; i < N; ++i)
    for (int d = 0; d < 3; ++d) p[3 * i + std::size_t(d)] = std::uniform_real_distribution<double>(0.0, L[std::size_t(d)])(rng);
  return p;
}
Points local_points(const std::vector<double>& all, int how, unsigned seed) {
  std::mt19937_64 rng(seed + 1);
  Points out;
  const std::size_t N = all.size() / 3;
  for (std::size_t i = 0; i < N; ++i) {
    const int r = how == 0 ? 0 : how == 1 ? int(rng() % unsigned(size())) : int(i % std::size_t(size()));
    if (r != rank()) continue;
    out.x.insert(out.x.end(), all.begin() + std::ptrdiff_t(3 * i), all.begin() + std::ptrdiff_t(3 * i + 3));
    out.id.push_back(std::int64_t(i));
  }
  return out;
}

// MPI-SORT of the local points to their slab owners: (owned coordinates, owned ids), the exchange.
struct Sorted {
  std::vector<double> x;
  std::vector<std::int64_t> id;
};
Sorted sort_points(const SlabLayout& s, const Points& p, std::unique_ptr<PointExchange>& ex) {
  std::vector<std::pair<std::size_t, int>> moves;
  for (std::size_t i = 0; i < p.id.size(); ++i) moves.emplace_back(i, s.owner(p.x[3 * i]));
  ex = std::make_unique<PointExchange>(MPI_COMM_WORLD, p.id.size(), moves);
  Sorted o;
  o.x.resize(3 * ex->received());
  o.id.resize(ex->received());
  ex->forward(p.x.data(), 3, o.x.data());
  ex->forward(p.id.data(), 1, o.id.data());
  return o;
}

TEST(MpiSort, EveryPointToItsOwnerAndBack) {
  const std::array<double, 3> L{1.7, 1.0, 0.6};
  const std::size_t N = 700;
  const std::vector<double> all = global_points(N, L, 5);
  for (int M : {9, 16, 3})
    for (int how : {0, 1, 2}) {
      const SlabLayout s = block_slabs(M, L[0], size());
      const Points p = local_points(all, how, 7);
      std::unique_ptr<PointExchange> ex;
      const Sorted o = sort_points(s, p, ex);
      EXPECT_TRUE(ex->one_to_one());
      // every received point is this rank's, with its global coordinates
      for (std::size_t k = 0; k < o.id.size(); ++k) {
        EXPECT_EQ(s.owner(o.x[3 * k]), rank());
        for (int d = 0; d < 3; ++d) EXPECT_EQ(o.x[3 * k + std::size_t(d)], all[3 * std::size_t(o.id[k]) + std::size_t(d)]);
      }
      // every point arrives exactly once somewhere
      std::vector<int> seen(N, 0), total(N, 0);
      for (std::int64_t i : o.id) ++seen[std::size_t(i)];
      MPI_Allreduce(seen.data(), total.data(), int(N), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_TRUE(std::all_of(total.begin(), total.end(), [](int c) { return c == 1; })) << "M " << M << " how " << how;
      // results computed at the owners come back to the callers, in their order
      std::vector<double> res(2 * o.id.size()), back(2 * p.id.size(), -1.0);
      for (std::size_t k = 0; k < o.id.size(); ++k) {
        res[2 * k] = 0.5 + double(o.id[k]);
        res[2 * k + 1] = -double(rank());
      }
      ex->reverse(res.data(), 2, back.data());
      for (std::size_t i = 0; i < p.id.size(); ++i) {
        EXPECT_EQ(back[2 * i], 0.5 + double(p.id[i]));
        EXPECT_EQ(back[2 * i + 1], -double(s.owner(p.x[3 * i])));
      }
      if (size() > 1 && how == 0 && rank() == 0) {
        EXPECT_GT(ex->bytes_sent(), 0u);
      }
    }
}

TEST(MpiGhostSource, EveryNeighbourWithinCutoffIsHeld) {
  // after MPI-SORT and MPI-GHOST-SOURCE a rank holds every source within r_c (periodic, 3-D) of
  // each of its points: checked against all points by brute force; also thin slabs (r_c over
  // several ranks), a rank without planes (M = 9), r_c near half the box
  const std::array<double, 3> L{1.3, 0.9, 1.1};
  const std::size_t N = 600;
  const std::vector<double> all = global_points(N, L, 9);
  for (int M : {9, 24})
    for (double rc : {0.07, 0.3, 0.6}) {
      const SlabLayout s = block_slabs(M, L[0], size());
      const Points p = local_points(all, 1, 13);
      std::unique_ptr<PointExchange> ex;
      const Sorted o = sort_points(s, p, ex);
      std::vector<std::pair<std::size_t, int>> moves;
      std::vector<int> dest;
      for (std::size_t k = 0; k < o.id.size(); ++k) {
        dest.clear();
        ghost_ranks(s, o.x[3 * k], rc, dest);
        for (int r : dest) moves.emplace_back(k, r);
      }
      const PointExchange gx(MPI_COMM_WORLD, o.id.size(), moves);
      std::vector<std::int64_t> gid(gx.received());
      gx.forward(o.id.data(), 1, gid.data());
      std::set<std::int64_t> held(o.id.begin(), o.id.end());
      for (std::int64_t g : gid) {
        EXPECT_EQ(held.count(g), 0u) << "ghost " << g << " is owned or received twice";
        held.insert(g);
      }
      auto dist2 = [&](std::size_t a, std::size_t b) {
        double r2 = 0;
        for (int d = 0; d < 3; ++d) {
          double u = all[3 * a + std::size_t(d)] - all[3 * b + std::size_t(d)];
          u -= L[std::size_t(d)] * std::round(u / L[std::size_t(d)]);
          r2 += u * u;
        }
        return r2;
      };
      std::size_t missing = 0;
      for (std::int64_t t : o.id)
        for (std::size_t j = 0; j < N; ++j)
          if (dist2(std::size_t(t), j) < rc * rc && !held.count(std::int64_t(j))) ++missing;
      EXPECT_EQ(missing, 0u) << "M " << M << " rc " << rc << " rank " << rank();
    }
}

TEST(MpiExchange, ErrorsOnOneRankReachEveryRank) {
  // a move out of range on the last rank only: every rank throws, none hangs
  std::vector<std::pair<std::size_t, int>> moves;
  if (rank() == size() - 1) moves.emplace_back(0, size());  // rank out of range
  EXPECT_THROW(PointExchange(MPI_COMM_WORLD, 1, moves), elliptica::InvalidArgument);
  try {
    agree(MPI_COMM_WORLD, rank() != size() - 1, "rank-local problem");
    FAIL() << "no throw";
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(size() - 1) + ": rank-local problem"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(agree(MPI_COMM_WORLD, true, "unused"));
}

template <class T>
void check_fft(const std::array<int, 3>& M, double tol) {
  SlabFft<T> f(MPI_COMM_WORLD, M, 1, FFTW_ESTIMATE);
  // FFTW's slabs are our block rule (the plan's ownership relies on it); FFTW reports start 0
  // for a rank without planes
  long long mine[2] = {f.local_0_start(), f.local_n0()};
  std::vector<long long> all(2 * std::size_t(size()), 0);
  MPI_Allgather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, MPI_COMM_WORLD);
  const SlabLayout s = block_slabs(M[0], 1.0, size());
  for (int r = 0; r < size(); ++r) {
    EXPECT_EQ(all[2 * std::size_t(r) + 1], s.planes(r)) << "rank " << r;
    if (s.planes(r) > 0) {
      EXPECT_EQ(all[2 * std::size_t(r)], s.start[std::size_t(r)]) << "rank " << r;
    }
  }
  // the same random grid on every rank; each fills its planes
  std::mt19937_64 rng(21);
  const std::size_t n = std::size_t(M[0]) * M[1] * M[2];
  std::vector<double> g(n);
  for (double& v : g) v = std::uniform_real_distribution<double>(-1, 1)(rng);
  const std::size_t nd = std::size_t(2 * std::max<std::ptrdiff_t>(f.alloc(), 1));
  T* a = static_cast<T*>(fftw_malloc(nd * sizeof(T)));
  std::fill(a, a + nd, T(0));
  const int rr = f.real_row(), cr = f.complex_row();
  for (std::ptrdiff_t i = 0; i < f.local_n0(); ++i)
    for (int j = 0; j < M[1]; ++j)
      for (int l = 0; l < M[2]; ++l)
        a[(std::size_t(i) * M[1] + std::size_t(j)) * std::size_t(rr) + std::size_t(l)] =
            T(g[(std::size_t(f.local_0_start() + i) * M[1] + std::size_t(j)) * M[2] + std::size_t(l)]);
  f.forward(a);
  // the serial float64 transform of the whole grid
  std::vector<fftw_complex> ref(std::size_t(M[0]) * M[1] * std::size_t(cr));
  std::vector<double> gin(g);
  fftw_plan p = fftw_plan_dft_r2c_3d(M[0], M[1], M[2], gin.data(), ref.data(), FFTW_ESTIMATE);
  fftw_execute(p);
  fftw_destroy_plan(p);
  double err = 0, scale = 0;
  for (const fftw_complex& c : ref) scale = std::max(scale, std::hypot(c[0], c[1]));
  for (std::ptrdiff_t jj = 0; jj < f.local_n1(); ++jj)
    for (int i = 0; i < M[0]; ++i)
      for (int l = 0; l < cr; ++l) {
        const std::size_t loc = (std::size_t(jj) * M[0] + std::size_t(i)) * std::size_t(cr) + std::size_t(l);
        const fftw_complex& c = ref[(std::size_t(i) * M[1] + std::size_t(f.local_1_start() + jj)) * std::size_t(cr) + std::size_t(l)];
        err = std::max(err, std::hypot(double(a[2 * loc]) - c[0], double(a[2 * loc + 1]) - c[1]));
      }
  EXPECT_LE(err, tol * scale) << "forward, M " << M[0] << "x" << M[1] << "x" << M[2];
  f.backward(a);
  double berr = 0;
  for (std::ptrdiff_t i = 0; i < f.local_n0(); ++i)
    for (int j = 0; j < M[1]; ++j)
      for (int l = 0; l < M[2]; ++l) {
        const double want = double(n) * g[(std::size_t(f.local_0_start() + i) * M[1] + std::size_t(j)) * M[2] + std::size_t(l)];
        berr = std::max(berr, std::abs(double(a[(std::size_t(i) * M[1] + std::size_t(j)) * std::size_t(rr) + std::size_t(l)]) - want));
      }
  EXPECT_LE(berr, tol * double(n)) << "backward";
  fftw_free(a);
}

TEST(MpiFft, DistributedEqualsSerial) {
  // FFT error ~ eps log(n) relative to the largest coefficient: 1e-13 (float64), 1e-5 (float32)
  for (const std::array<int, 3>& M : {std::array<int, 3>{9, 8, 10}, std::array<int, 3>{12, 6, 7}, std::array<int, 3>{16, 16, 16},
                                      std::array<int, 3>{3, 5, 4}}) {
    check_fft<double>(M, 1e-13);
    check_fft<float>(M, 1e-5);
  }
}

}  // namespace
