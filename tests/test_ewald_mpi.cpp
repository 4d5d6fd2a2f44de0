// The MPI pieces of the distributed Ewald sum (issue 30), under mpirun with 1-4 ranks
// (tests/CMakeLists.txt: test_ewald_mpi_np<k>): MPI-SORT (PointExchange) and its reverse,
// MPI-GHOST-SOURCE against a brute-force neighbour search over all points, FFTW-MPI's slabs
// against our block rule, and the distributed FFT against the serial FFTW transform of the whole
// grid; the backend and the plan against the serial ones (slab axes, exchanges, time stepping,
// the split P2P). Every rank builds the same global data from one seed. Cost (2-core machine):
// 12-21 s per rank count in Release (1 -> 4 ranks), 7-12 s under ASan (fewer cases).
#include <fftw3.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <optional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/backend.hpp"
#include "ewald/internal.hpp"
#include "ewald/mpi/backend_mpi.hpp"
#include "elliptica/ewald/ewald_mpi.hpp"
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
std::vector<int> point_ranks(std::size_t N, int how, unsigned seed) {
  std::mt19937_64 rng(seed + 1);
  std::vector<int> r(N);
  for (std::size_t i = 0; i < N; ++i) r[i] = how == 0 ? 0 : how == 1 ? int(rng() % unsigned(size())) : int(i % std::size_t(size()));
  return r;
}
Points local_points(const std::vector<double>& all, int how, unsigned seed) {
  Points out;
  const std::size_t N = all.size() / 3;
  const std::vector<int> owner = point_ranks(N, how, seed);
  for (std::size_t i = 0; i < N; ++i) {
    if (owner[i] != rank()) continue;
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

// The distributed backend against the serial CPU backend with the same setup (parameters of a
// tuned serial plan on all points) and the same values in plan units: rounding apart (the order
// of the sums of P2G's folds, of the totals and of FFTW-MPI's transforms differ), relative 1e-13
// of the largest value. Points all on rank 0, or on random ranks; a non-cubic box whose slabs
// (axis 0) are thinner than r_c with 3-4 ranks; r_c from the tuner.
struct DistCase {
  elliptica::ewald::Kernel kernel;
  bool field, zero_mode;
  std::array<int, 3> grid;  // a grid override ({0, 0, 0}: tuned): M0 = 9 leaves rank 3 of 4 without planes
};

void check_distributed(const DistCase& dc, int how) {
  using namespace elliptica::ewald;
  using elliptica::ConstMatrixView;
  using elliptica::StageTimes;
  const std::array<double, 3> L{1.3, 0.9, 1.1};
  const std::size_t N = ELLIPTICA_SANITIZED_BUILD ? 300 : 1200;
  const std::vector<double> all = global_points(N, L, 31);
  Options o;
  o.kernel = dc.kernel;
  o.box = L;
  o.tolerance = dc.grid[0] > 0 ? 1e-3 : 1e-7;  // a small grid override meets a loose tolerance only
  o.threads = 1;
  o.compute_field = dc.field;
  o.stresslet_zero_mode = dc.zero_mode;
  if (dc.grid[0] > 0) o.grid = dc.grid;
  o.fft_planner = FftPlanner::Estimate;
  EwaldPlan plan(o);
  ConstMatrixView<double> pts(all.data(), N, 3);
  const bool dl = dc.kernel == Kernel::Stresslet || dc.kernel == Kernel::StokesCombined;
  std::mt19937_64 rng(37);
  std::normal_distribution<double> nd;
  std::vector<double> nrm(3 * N);
  for (std::size_t i = 0; i < N; ++i) {
    double a[3] = {nd(rng), nd(rng), nd(rng)}, r = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int d = 0; d < 3; ++d) nrm[3 * i + std::size_t(d)] = a[d] / r;
  }
  const int nsc = dc.kernel == Kernel::Laplace ? 1 : dc.kernel == Kernel::Stresslet ? 0 : 3;
  std::vector<double> f(N * std::size_t(std::max(nsc, 1))), dip(3 * N);
  for (double& x : f) x = nd(rng);
  for (double& x : dip) x = nd(rng);
  if (dl) plan.set_points(pts, std::nullopt, ConstMatrixView<double>(nrm.data(), N, 3));
  else plan.set_points(pts);
  Densities den;
  if (nsc > 0) den.strengths = ConstMatrixView<double>(f.data(), N, std::size_t(nsc));
  if (dl) den.dipoles = ConstMatrixView<double>(dip.data(), N, 3);
  plan.evaluate(den);
  const Params p = plan.params();
  detail::BackendSetup s;
  s.kernel = dc.kernel;
  s.field = dc.field;
  s.zero_mode = dc.zero_mode;
  s.erfc_target = 1e-15;
  s.box = L;
  s.threads = 1;
  s.fft_planner = FftPlanner::Estimate;
  s.p2g_variant = P2GVariant::CellOrdered;
  s.params = p;
  s.window = detail::make_window(p.P, p.beta, p.poly_degree, 1e-16);
  // values in plan units (n_src per point: strengths, then q and nu), the same on every rank
  const int ns = nsc + (dl ? 6 : 0);
  std::vector<double> v(N * std::size_t(ns));
  for (std::size_t i = 0; i < N; ++i) {
    for (int c = 0; c < nsc; ++c) v[i * ns + std::size_t(c)] = f[i * std::size_t(nsc) + std::size_t(c)];
    if (dl)
      for (int c = 0; c < 3; ++c) {
        v[i * ns + std::size_t(nsc + c)] = dip[3 * i + std::size_t(c)];
        v[i * ns + std::size_t(nsc + 3 + c)] = nrm[3 * i + std::size_t(c)];
      }
  }
  // the serial backend on all points
  detail::PointSet ps;
  ps.src = all;
  ps.ns = N;
  auto be = detail::make_cpu_backend(ps, s);
  auto ws = be->acquire();
  be->load(*ws, v.data());
  be->p2p(*ws);
  be->p2g(*ws);
  be->fft(*ws);
  be->cnv(*ws);
  be->ifft(*ws);
  be->g2p(*ws);
  be->self(*ws);
  const int no = dc.kernel == Kernel::Laplace ? (dc.field ? 4 : 1) : 3;
  std::vector<double> ref(N * std::size_t(no));
  be->store(*ws, ref.data());
  // the distributed backend on this rank's points
  const Points loc = local_points(all, how, 41);
  std::vector<double> lv(loc.id.size() * std::size_t(ns)), out(loc.id.size() * std::size_t(no) + 1);
  for (std::size_t k = 0; k < loc.id.size(); ++k)
    for (int c = 0; c < ns; ++c) lv[k * ns + std::size_t(c)] = v[std::size_t(loc.id[k]) * ns + std::size_t(c)];
  auto dist = detail::mpi::make_distributed_backend(MPI_COMM_WORLD, loc.x, s);
  StageTimes times;
  dist->evaluate(lv.data(), out.data(), times);
  double scale = 0, err = 0;
  for (double x : ref) scale = std::max(scale, std::abs(x));
  for (std::size_t k = 0; k < loc.id.size(); ++k)
    for (int c = 0; c < no; ++c)
      err = std::max(err, std::abs(out[k * no + std::size_t(c)] - ref[std::size_t(loc.id[k]) * no + std::size_t(c)]));
  EXPECT_LE(err, 1e-13 * scale) << "kernel " << int(dc.kernel) << " field " << dc.field << " how " << how << " grid "
                                << dc.grid[0] << " rc " << p.rc << " ranks " << size();
  EXPECT_GT(scale, 0.0);
  if (std::getenv("ELLIPTICA_TEST_VERBOSE"))
    std::printf("rank %d kernel %d how %d rc %.3f grid %d: max rel err %.2e over %zu points\n", rank(), int(dc.kernel), how, p.rc,
                p.grid[0], err / scale, loc.id.size());
}

TEST(MpiEwald, DistributedBackendEqualsSerialBackend) {
  using elliptica::ewald::Kernel;
  // sanitized builds (10-50x slower): the two cases of a rank without planes, points on random ranks
  const std::vector<DistCase> cases =
      ELLIPTICA_SANITIZED_BUILD
          ? std::vector<DistCase>{DistCase{Kernel::Laplace, true, false, {9, 12, 14}}, DistCase{Kernel::StokesCombined, false, false, {9, 10, 12}}}
          : std::vector<DistCase>{DistCase{Kernel::Laplace, false, false, {0, 0, 0}}, DistCase{Kernel::Laplace, true, false, {9, 12, 14}},
                                  DistCase{Kernel::Stokeslet, false, false, {0, 0, 0}}, DistCase{Kernel::Stresslet, false, true, {0, 0, 0}},
                                  DistCase{Kernel::StokesCombined, false, false, {9, 10, 12}}};
  for (const DistCase& dc : cases)
    for (int how : {0, 1})
      if (!ELLIPTICA_SANITIZED_BUILD || how == 1) check_distributed(dc, how);
}

// The public plan against EwaldPlan on the gathered points (in the order rank 0 gathers them:
// by rank, then each rank's order, so that both tuners see the same input and choose the same
// parameters): relative 1e-13 of the largest value in double precision, 1e-5 in single (sums in
// float32 in another order). Non-cubic boxes; points all on rank 0 or on random ranks.
struct PlanCase {
  elliptica::ewald::Kernel kernel;
  std::array<double, 3> box;
  bool field, pressure;
  elliptica::ewald::Precision precision;
  int slab_axis = -1;  // DistributedOptions: -1 the longest side
  elliptica::ewald::ExchangeMode exchange = elliptica::ewald::ExchangeMode::Auto;
  double rc = 0;  // an r_c override (0: tuned); < min(L)/2 gives P2P's pair symmetry with few points
  bool cluster = false;  // the points within the first 15% of the slab axis: ranks with planes but no points
  elliptica::ewald::Periodicity periodicity{true, true, true};  // free axes: box is the points' region there
};

bool pair_symmetry_seen = false;  // some case ran the split P2P (DistributedStats::pair_symmetry)

void check_plan(const PlanCase& pc, int how) {
  using namespace elliptica::ewald;
  using elliptica::ConstMatrixView;
  const std::size_t N = ELLIPTICA_SANITIZED_BUILD ? 300 : 1000;
  std::vector<double> all = global_points(N, pc.box, 43);
  if (pc.cluster) {
    const int a = pc.slab_axis >= 0 ? pc.slab_axis : int(std::max_element(pc.box.begin(), pc.box.end()) - pc.box.begin());
    for (std::size_t i = 0; i < N; ++i) all[3 * i + std::size_t(a)] *= 0.15;
  }
  const std::vector<int> owner = point_ranks(N, how, 47);
  std::vector<std::size_t> order;  // the gathered order
  for (int r = 0; r < size(); ++r)
    for (std::size_t i = 0; i < N; ++i)
      if (owner[i] == r) order.push_back(i);
  std::mt19937_64 rng(53);
  std::normal_distribution<double> nd;
  const bool dl = pc.kernel == Kernel::Stresslet || pc.kernel == Kernel::StokesCombined;
  const int nsc = pc.kernel == Kernel::Laplace ? 1 : pc.kernel == Kernel::Stresslet ? 0 : 3;
  std::vector<double> f(N * std::size_t(std::max(nsc, 1))), q(3 * N), nu(3 * N);
  for (double& x : f) x = nd(rng);
  for (double& x : q) x = nd(rng);
  for (std::size_t i = 0; i < N; ++i) {
    double a[3] = {nd(rng), nd(rng), nd(rng)}, l = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int d = 0; d < 3; ++d) nu[3 * i + std::size_t(d)] = a[d] / l;
  }
  auto rows = [](const std::vector<double>& a, int w, const std::vector<std::size_t>& idx) {
    std::vector<double> o(idx.size() * std::size_t(w) + 1);
    for (std::size_t k = 0; k < idx.size(); ++k)
      for (int c = 0; c < w; ++c) o[k * std::size_t(w) + std::size_t(c)] = a[idx[k] * std::size_t(w) + std::size_t(c)];
    return o;
  };
  Options o;
  o.kernel = pc.kernel;
  o.box = pc.box;
  o.tolerance = pc.precision == Precision::Single ? 1e-4 : 1e-8;
  o.precision = pc.precision;
  o.threads = 1;
  o.compute_field = pc.field;
  o.compute_pressure = pc.pressure;
  o.fft_planner = FftPlanner::Estimate;
  o.periodicity = pc.periodicity;
  if (pc.rc > 0) o.rc = pc.rc;
  auto run = [&](auto& plan, const std::vector<std::size_t>& idx) {
    const std::vector<double> x = rows(all, 3, idx), fs = rows(f, std::max(nsc, 1), idx), qs = rows(q, 3, idx),
                              ns = rows(nu, 3, idx);
    const std::size_t n = idx.size();
    if (dl) plan.set_points(ConstMatrixView<double>(x.data(), n, 3), ConstMatrixView<double>(ns.data(), n, 3));
    else plan.set_points(ConstMatrixView<double>(x.data(), n, 3));
    Densities den;
    if (nsc > 0) den.strengths = ConstMatrixView<double>(fs.data(), n, std::size_t(nsc));
    if (dl) den.dipoles = ConstMatrixView<double>(qs.data(), n, 3);
    return plan.evaluate(den);
  };
  EwaldPlan ref_plan(o);
  const Result ref = [&] {
    const std::vector<double> x = rows(all, 3, order), ns = rows(nu, 3, order);
    if (dl) ref_plan.set_points(ConstMatrixView<double>(x.data(), N, 3), std::nullopt, ConstMatrixView<double>(ns.data(), N, 3));
    else ref_plan.set_points(ConstMatrixView<double>(x.data(), N, 3));
    const std::vector<double> fs = rows(f, std::max(nsc, 1), order), qs = rows(q, 3, order);
    Densities den;
    if (nsc > 0) den.strengths = ConstMatrixView<double>(fs.data(), N, std::size_t(nsc));
    if (dl) den.dipoles = ConstMatrixView<double>(qs.data(), N, 3);
    return ref_plan.evaluate(den);
  }();
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < N; ++i)
    if (owner[i] == rank()) mine.push_back(i);
  std::vector<std::size_t> pos(N);  // global index -> row of the reference
  for (std::size_t k = 0; k < N; ++k) pos[order[k]] = k;
  DistributedOptions dopts;
  dopts.slab_axis = pc.slab_axis;
  dopts.exchange = pc.exchange;
  DistributedEwaldPlan plan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, dopts);
  const Result r = run(plan, mine);
  EXPECT_EQ(plan.params().grid, ref.params.grid);
  EXPECT_EQ(plan.params().rc, ref.params.rc);
  EXPECT_EQ(plan.params().P, ref.params.P);
  const double tol = pc.precision == Precision::Single ? 1e-5 : 1e-13;
  auto compare = [&](const elliptica::Array2D& a, const elliptica::Array2D& b, const char* what) {
    ASSERT_EQ(a.rows, mine.size()) << what;
    double scale = 0, err = 0;
    for (double x : b.values) scale = std::max(scale, std::abs(x));
    for (std::size_t k = 0; k < mine.size(); ++k)
      for (std::size_t c = 0; c < a.cols; ++c)
        err = std::max(err, std::abs(a.values[k * a.cols + c] - b.values[pos[mine[k]] * b.cols + c]));
    EXPECT_LE(err, tol * scale) << what << " kernel " << int(pc.kernel) << " how " << how << " ranks " << size();
    EXPECT_GT(scale, 0.0) << what;
  };
  compare(r.values, ref.values, "values");
  if (pc.field) compare(r.field, ref.field, "field");
  if (pc.pressure) compare(r.pressure, ref.pressure, "pressure");
  const DistributedStats st = plan.stats();
  std::size_t owned = st.owned, total = 0;
  MPI_Allreduce(&owned, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, N);
  EXPECT_EQ(st.ranks, size());
  // the slab axis: the one asked for, or the longest side (the first of equal ones)
  const int axis = pc.slab_axis >= 0 ? pc.slab_axis
                                     : int(std::max_element(pc.box.begin(), pc.box.end()) - pc.box.begin());
  EXPECT_EQ(st.slab_axis, axis);
  int planes = st.planes, all_planes = 0;
  MPI_Allreduce(&planes, &all_planes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(all_planes, ref.params.grid[std::size_t(axis)]);
  EXPECT_NEAR(st.slab_hi - st.slab_lo, planes * ref.params.h[std::size_t(axis)], 1e-12);
  // P2P's pair symmetry where the single-process plan has it (ranks with planes)
  if (st.planes > 0) {
    EXPECT_EQ(st.pair_symmetry, ref.p2p.pair_symmetry) << "kernel " << int(pc.kernel);
  }
  int sym = st.pair_symmetry ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &sym, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  pair_symmetry_seen = pair_symmetry_seen || sym == 1;
  if (pc.exchange == ExchangeMode::AllToAll) {
    EXPECT_FALSE(st.neighbour_sort || st.neighbour_ghost_source || st.neighbour_ghost_grid);
  } else if (size() <= 3) {  // every other rank is a neighbour
    EXPECT_TRUE(st.neighbour_sort && st.neighbour_ghost_source && st.neighbour_ghost_grid);
  }
}

TEST(MpiEwald, DistributedPlanEqualsEwaldPlan) {
  using elliptica::ewald::ExchangeMode;
  using elliptica::ewald::Kernel;
  using elliptica::ewald::Precision;
  const std::vector<PlanCase> all{PlanCase{Kernel::Laplace, {1.0, 1.0, 1.0}, false, false, Precision::Double},
                                   PlanCase{Kernel::Laplace, {1.5, 0.8, 1.1}, true, false, Precision::Double},
                                   PlanCase{Kernel::Stokeslet, {1.7, 1.0, 0.6}, false, false, Precision::Double},
                                   PlanCase{Kernel::Stokeslet, {0.8, 1.0, 2.2}, false, true, Precision::Double},
                                   PlanCase{Kernel::Stresslet, {1.2, 1.0, 0.9}, false, false, Precision::Double},
                                   PlanCase{Kernel::StokesCombined, {1.0, 1.1, 0.9}, false, false, Precision::Double},
                                   PlanCase{Kernel::Laplace, {1.3, 1.0, 1.0}, false, false, Precision::Single},
                                   // slabs along y and z: vectors in and out permuted with the axes
                                   PlanCase{Kernel::Stresslet, {0.9, 1.3, 1.1}, false, false, Precision::Double, -1,
                                            ExchangeMode::Auto, 0.3},
                                   PlanCase{Kernel::Laplace, {1.0, 1.2, 0.9}, true, false, Precision::Double, 2},
                                   PlanCase{Kernel::StokesCombined, {1.0, 1.0, 1.0}, false, false, Precision::Double, 1,
                                            ExchangeMode::AllToAll},
                                   // clustered: ranks with planes and no points, none near a face
                                   PlanCase{Kernel::Stokeslet, {1.6, 1.0, 1.0}, false, false, Precision::Double, -1,
                                            ExchangeMode::Auto, 0.3, true},
                                   // free axes (issue 31): a 1P channel in slabs along its axis (ParkiPy's
                                   // layout) with a net force, 2P with the field in slabs along a periodic
                                   // axis, 0P and 1P in slabs along a free axis (the extended box)
                                   PlanCase{Kernel::Stokeslet, {0.5, 0.4, 2.0}, false, true, Precision::Double, -1,
                                            ExchangeMode::Auto, 0, false, {false, false, true}},
                                   PlanCase{Kernel::Laplace, {1.2, 1.0, 0.6}, true, false, Precision::Double, 0,
                                            ExchangeMode::Auto, 0, false, {true, true, false}},
                                   PlanCase{Kernel::Stresslet, {0.9, 0.7, 1.1}, false, false, Precision::Double, -1,
                                            ExchangeMode::Auto, 0, false, {false, false, false}},
                                   PlanCase{Kernel::StokesCombined, {1.3, 0.6, 0.5}, false, false, Precision::Double, 1,
                                            ExchangeMode::Auto, 0, false, {true, false, false}}};
  // sanitized builds: the Laplace field, the stokeslet pressure and float32, points on random ranks
  for (std::size_t k = 0; k < all.size(); ++k)
    for (int how : {0, 1})
      if (!ELLIPTICA_SANITIZED_BUILD || (how == 1 && (k == 1 || k == 3 || k == 6 || k == 7 || k == 10 || k == 11 || k == 14)))
        check_plan(all[k], how);
  EXPECT_TRUE(pair_symmetry_seen);
}

// Time stepping: after a first step on random ranks, every rank takes the points of its own
// slab (DistributedStats::slab_lo / slab_hi), moves them by less than a slab and sets them
// again: MPI-SORT then goes neighbour-only by itself (ExchangeMode::Auto), with the results of
// the all-to-all plan to rounding; ExchangeMode::Neighbour refuses a point two slabs away.
TEST(MpiEwald, TimeSteppingSortsNeighbourOnly) {
  using namespace elliptica::ewald;
  using elliptica::ConstMatrixView;
  const std::size_t N = ELLIPTICA_SANITIZED_BUILD ? 300 : 1500;
  const std::array<double, 3> box{1.0, 2.4, 1.0};  // slabs along y
  std::vector<double> all = global_points(N, box, 71);
  std::mt19937_64 rng(73);
  std::normal_distribution<double> nd;
  std::vector<double> f(3 * N);
  for (double& x : f) x = nd(rng);
  Options o;
  o.kernel = Kernel::Stokeslet;
  o.box = box;
  o.tolerance = 1e-7;
  o.threads = 1;
  o.fft_planner = FftPlanner::Estimate;
  DistributedOptions auto_opts, a2a_opts;
  a2a_opts.exchange = ExchangeMode::AllToAll;
  DistributedEwaldPlan plan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, auto_opts);
  DistributedEwaldPlan ref(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, a2a_opts);
  auto step = [&](DistributedEwaldPlan& p, const std::vector<std::size_t>& idx) {
    std::vector<double> x, fs;
    for (std::size_t i : idx) {
      x.insert(x.end(), all.begin() + std::ptrdiff_t(3 * i), all.begin() + std::ptrdiff_t(3 * i + 3));
      fs.insert(fs.end(), f.begin() + std::ptrdiff_t(3 * i), f.begin() + std::ptrdiff_t(3 * i + 3));
    }
    p.set_points(ConstMatrixView<double>(x.data(), idx.size(), 3));
    Densities den;
    den.strengths = ConstMatrixView<double>(fs.data(), idx.size(), 3);
    return p.evaluate(den);
  };
  const std::vector<int> owner = point_ranks(N, 1, 79);
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < N; ++i)
    if (owner[i] == rank()) mine.push_back(i);
  step(plan, mine);
  step(ref, mine);
  const DistributedStats s0 = plan.stats();
  ASSERT_EQ(s0.slab_axis, 1);
  // the next step: this rank's slab's points, moved by up to a third of the thinnest slab
  double thinnest = s0.planes > 0 ? s0.slab_hi - s0.slab_lo : box[1];
  MPI_Allreduce(MPI_IN_PLACE, &thinnest, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  mine.clear();
  for (std::size_t i = 0; i < N; ++i)
    if (all[3 * i + 1] >= s0.slab_lo && all[3 * i + 1] < s0.slab_hi) mine.push_back(i);
  std::uniform_real_distribution<double> ud(-thinnest / 3, thinnest / 3);
  for (std::size_t i = 0; i < N; ++i) all[3 * i + 1] = std::fmod(all[3 * i + 1] + ud(rng) + box[1], box[1]);
  const Result r = step(plan, mine), e = step(ref, mine);
  const DistributedStats s1 = plan.stats(), s1ref = ref.stats();
  EXPECT_TRUE(s1.neighbour_sort);
  EXPECT_FALSE(s1ref.neighbour_sort);
  double err = 0, scale = 0;
  for (std::size_t k = 0; k < e.values.values.size(); ++k) {
    err = std::max(err, std::abs(r.values.values[k] - e.values.values[k]));
    scale = std::max(scale, std::abs(e.values.values[k]));
  }
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &scale, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LE(err, 1e-13 * scale);
  EXPECT_GT(scale, 0.0);
  // the same step's bytes: the neighbour-only MPI-SORT sends what the all-to-all sends
  EXPECT_EQ(s1.bytes_sort, s1ref.bytes_sort);
  if (size() >= 4) {  // rank 0 holds a point of rank 2's slab: not a neighbour's
    std::vector<double> lohi(2 * std::size_t(size()));
    const double mine_lohi[2] = {s0.slab_lo, s0.slab_hi};
    MPI_Allgather(mine_lohi, 2, MPI_DOUBLE, lohi.data(), 2, MPI_DOUBLE, MPI_COMM_WORLD);
    const int at = rank() == 0 ? 2 : rank();
    std::vector<double> x{0.5, 0.5 * (lohi[2 * std::size_t(at)] + lohi[2 * std::size_t(at) + 1]), 0.5}, fs{1.0, -0.5, 0.25};
    DistributedOptions nb;
    nb.exchange = ExchangeMode::Neighbour;
    DistributedEwaldPlan strict(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, nb);
    strict.set_points(ConstMatrixView<double>(x.data(), 1, 3));
    Densities den;
    den.strengths = ConstMatrixView<double>(fs.data(), 1, 3);
    EXPECT_THROW(strict.evaluate(den), elliptica::InvalidArgument);  // the exchanges are built at evaluate
    x[1] = 0.5 * (lohi[2 * std::size_t(rank())] + lohi[2 * std::size_t(rank()) + 1]);
    strict.set_points(ConstMatrixView<double>(x.data(), 1, 3));
    EXPECT_NO_THROW(strict.evaluate(den));
    EXPECT_TRUE(strict.stats().neighbour_sort);
  }
  DistributedOptions bad;
  bad.slab_axis = 3;
  EXPECT_THROW(DistributedEwaldPlan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, bad), elliptica::InvalidArgument);
}

// FFTW-MPI's trailing empty ranks (M0 = 9 on 4 ranks: planes 3, 3, 3, 0): the neighbour-only
// MPI-SORT partners are the slabs' neighbours (rank 2 and rank 0 across the periodic boundary),
// not ranks r +- 1; points kept on their slab's rank and moved a little sort neighbour-only, with
// the all-to-all plan's results.
TEST(MpiEwald, NeighbourSortSkipsRanksWithoutPlanes) {
  using namespace elliptica::ewald;
  using elliptica::ConstMatrixView;
  const std::size_t N = 400;
  const std::array<double, 3> box{1.5, 1.0, 1.0};
  std::vector<double> all = global_points(N, box, 91);
  std::vector<double> q(N);
  std::mt19937_64 rng(93);
  std::normal_distribution<double> nd;
  for (double& v : q) v = nd(rng);
  Options o;
  o.kernel = Kernel::Laplace;
  o.box = box;
  o.tolerance = 1e-3;
  o.threads = 1;
  o.grid = std::array<int, 3>{9, 12, 12};
  o.fft_planner = FftPlanner::Estimate;
  DistributedOptions a2a;
  a2a.exchange = ExchangeMode::AllToAll;
  DistributedEwaldPlan plan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}), ref(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, a2a);
  auto step = [&](DistributedEwaldPlan& p, const std::vector<std::size_t>& idx) {
    std::vector<double> x, qs;
    for (std::size_t i : idx) {
      x.insert(x.end(), all.begin() + std::ptrdiff_t(3 * i), all.begin() + std::ptrdiff_t(3 * i + 3));
      qs.push_back(q[i]);
    }
    p.set_points(ConstMatrixView<double>(x.data(), idx.size(), 3));
    Densities den;
    den.strengths = ConstMatrixView<double>(qs.data(), idx.size(), 1);
    return p.evaluate(den);
  };
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < N; ++i)
    if (int(i % std::size_t(size())) == rank()) mine.push_back(i);
  step(plan, mine);
  step(ref, mine);
  const DistributedStats s0 = plan.stats();
  mine.clear();
  for (std::size_t i = 0; i < N; ++i)
    if (all[3 * i] >= s0.slab_lo && all[3 * i] < s0.slab_hi) mine.push_back(i);
  std::uniform_real_distribution<double> ud(-0.05, 0.05);  // a third of a 3-plane slab is 0.167
  for (std::size_t i = 0; i < N; ++i) all[3 * i] = std::fmod(all[3 * i] + ud(rng) + box[0], box[0]);
  const Result r = step(plan, mine), e = step(ref, mine);
  EXPECT_TRUE(plan.stats().neighbour_sort);
  if (size() == 4) {
    EXPECT_EQ(plan.stats().planes, rank() == 3 ? 0 : 3);
  }
  double err = 0, scale = 0;
  for (std::size_t k = 0; k < e.values.values.size(); ++k) {
    err = std::max(err, std::abs(r.values.values[k] - e.values.values[k]));
    scale = std::max(scale, std::abs(e.values.values[k]));
  }
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &scale, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LE(err, 1e-13 * scale);
  EXPECT_GT(scale, 0.0);
}

// Options that differ between ranks are refused on every rank (they would pair unrelated
// collectives).
TEST(MpiEwald, DifferentOptionsOnTheRanksAreRefused) {
  using namespace elliptica::ewald;
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  Options o;
  o.kernel = Kernel::Laplace;
  o.threads = 1;
  DistributedOptions d;
  d.exchange = rank() == 1 ? ExchangeMode::AllToAll : ExchangeMode::Auto;
  EXPECT_THROW(DistributedEwaldPlan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}, d), elliptica::InvalidArgument);
  Options b = o;
  if (rank() == 1) b.box = {1.0, 1.0, 1.5};
  EXPECT_THROW(DistributedEwaldPlan(b, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}), elliptica::InvalidArgument);
  b = o;
  if (rank() == 1) b.periodicity = {true, true, false};
  EXPECT_THROW(DistributedEwaldPlan(b, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}), elliptica::InvalidArgument);
  EXPECT_NO_THROW(DistributedEwaldPlan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}));
}

TEST(MpiEwald, BadInputOnOneRankThrowsOnEveryRank) {
  using namespace elliptica::ewald;
  Options o;
  o.kernel = Kernel::Laplace;
  o.threads = 1;
  DistributedEwaldPlan plan(o, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)});
  std::vector<double> x{0.1, 0.2, 0.3, 0.6, 0.5, 0.4};
  const bool last = rank() == size() - 1;
  // the last rank passes 2 columns
  EXPECT_THROW(plan.set_points(elliptica::ConstMatrixView<double>(x.data(), last ? 3 : 2, last ? 2 : 3)), elliptica::InvalidArgument);
  plan.set_points(elliptica::ConstMatrixView<double>(x.data(), 2, 3));
  std::vector<double> qv{1.0, -1.0};
  Densities den;
  den.strengths = elliptica::ConstMatrixView<double>(qv.data(), last ? 1 : 2, 1);  // wrong count on the last rank
  EXPECT_THROW(plan.evaluate(den), elliptica::InvalidArgument);
  // the tuner's failure on rank 0 keeps its category on every rank (NumericalError: no parameters
  // meet 1e-9 in single precision)
  Options tight = o;
  tight.precision = Precision::Single;
  tight.tolerance = 1e-9;
  DistributedEwaldPlan tplan(tight, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)});
  tplan.set_points(elliptica::ConstMatrixView<double>(x.data(), 2, 3));
  den.strengths = elliptica::ConstMatrixView<double>(qv.data(), 2, 1);
  EXPECT_THROW(tplan.evaluate(den), elliptica::NumericalError);
  EXPECT_EQ(tplan.stats().ranks, size());  // before any evaluate succeeded
  Options bad = o;
  bad.compute_energy = true;
  EXPECT_THROW(DistributedEwaldPlan(bad, MpiComm{MPI_Comm_c2f(MPI_COMM_WORLD)}), elliptica::InvalidArgument);
  EXPECT_TRUE(mpi_available());
}

}  // namespace
