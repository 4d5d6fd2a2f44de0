// DistributedEwaldPlan (include/elliptica/ewald/ewald_mpi.hpp; issue 30): the options, checks,
// value scaling and results of EwaldPlan around the distributed backend (mpi/backend_mpi.cpp);
// the parameters from the single-process tuner on rank 0, broadcast. Without MPI
// (ELLIPTICA_HAVE_MPI undefined) the constructor throws.
#include "elliptica/ewald/ewald_mpi.hpp"

#include <exception>
#include <string>

#include "elliptica/core/error.hpp"

#ifdef ELLIPTICA_HAVE_MPI
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ewald/backend.hpp"
#include "ewald/internal.hpp"
#include "ewald/mpi/backend_mpi.hpp"
#include "ewald/mpi/exchange.hpp"
#endif

namespace elliptica::ewald {

#ifndef ELLIPTICA_HAVE_MPI

bool mpi_available() { return false; }
void mpi_agree(MpiComm, const std::exception_ptr& error) {
  if (error) std::rethrow_exception(error);
}
struct DistributedEwaldPlan::Impl {};
DistributedEwaldPlan::DistributedEwaldPlan(const Options&, MpiComm, const DistributedOptions&) {
  throw InvalidArgument("the distributed Ewald plan needs MPI: this elliptica was built without it (ELLIPTICA_MPI=OFF, "
                        "or MPI / FFTW-MPI (libopenmpi-dev, libfftw3-mpi-dev) not found at build time)");
}
DistributedEwaldPlan::~DistributedEwaldPlan() = default;
void DistributedEwaldPlan::set_points(ConstMatrixView<double>, std::optional<ConstMatrixView<double>>) {}
Result DistributedEwaldPlan::evaluate(const Densities&) { return {}; }
Params DistributedEwaldPlan::params() const { return {}; }
DistributedStats DistributedEwaldPlan::stats() const { return {}; }

#else

bool mpi_available() { return true; }
void mpi_agree(MpiComm comm, const std::exception_ptr& error) { detail::mpi::agree(MPI_Comm_f2c(comm.fortran), error); }

namespace {
bool double_layer(Kernel k) { return k == Kernel::Stresslet || k == Kernel::StokesCombined; }
int strength_cols(Kernel k) { return k == Kernel::Laplace ? 1 : k == Kernel::Stresslet ? 0 : 3; }
}  // namespace

struct DistributedEwaldPlan::Impl {
  Options user;
  DistributedOptions dist;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1, threads = 1;
  // The plan's box is the user's rotated so that the slab axis comes first: its axis d is the
  // user's axis perm[d] (a cyclic permutation). Vectors in and out are permuted with it.
  std::array<int, 3> perm{0, 1, 2};
  std::vector<double> pts, normals;  // this rank's wrapped coordinates and normals (user axes)
  // free axes (2P, 1P, 0P; Options::periodicity): the global minimum of the sources' coordinates,
  // subtracted there (EwaldPlan's shift: the data at the extended box's origin)
  std::array<double, 3> lo{0, 0, 0};
  bool free = false;
  std::vector<double> ipts;          // the wrapped coordinates in the plan's axes
  std::size_t n = 0;
  bool have_points = false;
  std::optional<Params> reported;
  detail::BackendSetup setup;
  std::unique_ptr<detail::mpi::DistributedBackend> backend;
  DistributedStats st;

  // Rank 0 tunes EwaldPlan on the gathered points and densities (user units); every rank gets
  // the parameters.
  void tune(const Densities& d) {
    const int nsc = strength_cols(user.kernel);
    const bool dl = double_layer(user.kernel);
    int mine = static_cast<int>(n);
    std::vector<int> counts(static_cast<std::size_t>(size)), displ(static_cast<std::size_t>(size));
    MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
    long long total = 0;  // rank 0 only (the other ranks' counts are not gathered)
    for (int r = 0; r < size; ++r) {
      displ[std::size_t(r)] = static_cast<int>(total);
      total += counts[std::size_t(r)];
    }
    detail::mpi::agree(comm, total * 3 < (1LL << 31), "distributed Ewald: the tuner's gather on rank 0 is limited to 7e8 points");
    auto gather = [&](const double* local, int width) {
      std::vector<int> c(counts), o(displ);
      for (int r = 0; r < size; ++r) {
        c[std::size_t(r)] *= width;
        o[std::size_t(r)] *= width;
      }
      std::vector<double> all(rank == 0 ? std::size_t(total) * std::size_t(width) + 1 : 1);
      double dummy = 0;
      MPI_Gatherv(n ? local : &dummy, mine * width, MPI_DOUBLE, all.data(), c.data(), o.data(), MPI_DOUBLE, 0, comm);
      return all;
    };
    const std::vector<double> x = gather(pts.data(), 3);
    const std::vector<double> nu = dl ? gather(normals.data(), 3) : std::vector<double>{};
    const std::vector<double> f = nsc ? gather(d.strengths.data, nsc) : std::vector<double>{};
    const std::vector<double> q = dl ? gather(d.dipoles.data, 3) : std::vector<double>{};
    Params p{};
    std::exception_ptr err;
    if (rank == 0) {
      try {
        EwaldPlan plan(user);
        const std::size_t N = std::size_t(total);
        if (dl) plan.set_points(ConstMatrixView<double>(x.data(), N, 3), std::nullopt, ConstMatrixView<double>(nu.data(), N, 3));
        else plan.set_points(ConstMatrixView<double>(x.data(), N, 3));
        Densities all;
        if (nsc) all.strengths = ConstMatrixView<double>(f.data(), N, std::size_t(nsc));
        if (dl) all.dipoles = ConstMatrixView<double>(q.data(), N, 3);
        p = plan.tune(all);
      } catch (...) {
        err = std::current_exception();
      }
    }
    detail::mpi::agree(comm, err);  // the tuner's NumericalError / ResourceError keep their category
    static_assert(std::is_trivially_copyable_v<Params>);
    MPI_Bcast(&p, static_cast<int>(sizeof(Params)), MPI_BYTE, 0, comm);
    reported = p;
    setup = detail::BackendSetup{};
    setup.kernel = user.kernel;
    setup.field = user.compute_field || user.compute_pressure;
    setup.zero_mode = user.stresslet_zero_mode;
    setup.precision = user.precision;
    // erfc to 1% of the relative tolerance, as EwaldPlan (eps_abs / result_scale is unit-free)
    setup.erfc_target = std::clamp(p.result_scale > 0 ? 0.01 * p.eps_abs / p.result_scale : 0.0, 1e-15, 1e-4);
    // the parameters on the rotated box: the grid and its spacing permuted, the near-field cells
    // chosen for the rotated box (the cell list runs along the last axis; the pairs within r_c
    // are the same, so results agree with EwaldPlan's to rounding)
    Params ip = p;
    for (int a = 0; a < 3; ++a) {
      // (free axes: the extended box EwaldPlan chose, Params::fft_box; the lengths are the
      // plan's: set_points refuses extents that would make EwaldPlan change its length unit)
      setup.box[std::size_t(a)] = free ? p.fft_box[std::size_t(perm[std::size_t(a)])] : user.box[std::size_t(perm[std::size_t(a)])];
      setup.periodic[std::size_t(a)] = user.periodicity[std::size_t(perm[std::size_t(a)])];
      ip.grid[std::size_t(a)] = p.grid[std::size_t(perm[std::size_t(a)])];
      ip.h[std::size_t(a)] = p.h[std::size_t(perm[std::size_t(a)])];
      ip.fft_box[std::size_t(a)] = setup.box[std::size_t(a)];
    }
    // free axes: CNV's tables on every rank, in the plan's (rotated) axes (the same as EwaldPlan's
    // up to the rotation: each rank's CNV reads its rows of the spectrum)
    if (free) setup.free_multiplier = detail::free_space_table(user.kernel, setup.field, setup.periodic, ip, setup.box, threads);
    // (the global count on every rank: `total` above is rank 0's alone, the gather's counts)
    unsigned long long n_local = n, n_global = 0;
    MPI_Allreduce(&n_local, &n_global, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    ip.cells = detail::cell_grid(setup.box, p.rc, 2 * std::size_t(n_global), user.precision);
    setup.threads = threads;
    setup.fft_planner = FftPlanner::Estimate;  // FFTW-MPI plans are not in the wisdom cache
    setup.p2g_variant = P2GVariant::CellOrdered;
    setup.energy_parseval = false;
    setup.pair_symmetry = user.pair_symmetry;
    setup.params = ip;
    setup.window = detail::make_window(p.P, p.beta, p.poly_degree, 1e-16);
  }
};

DistributedEwaldPlan::DistributedEwaldPlan(const Options& opts, MpiComm c, const DistributedOptions& dopts)
    : impl_(std::make_unique<Impl>()) {
  int init = 0;
  MPI_Initialized(&init);
  if (!init) throw InvalidArgument("DistributedEwaldPlan: MPI is not initialised (call MPI_Init_thread first)");
  auto& I = *impl_;
  MPI_Comm_dup(MPI_Comm_f2c(c.fortran), &I.comm);
  MPI_Comm_rank(I.comm, &I.rank);
  MPI_Comm_size(I.comm, &I.size);
  std::string err;
  try {
    EwaldPlan check(opts);  // the single-process plan's checks and messages
    for (double L : opts.box)
      if (!(L >= 0x1p-20 && L <= 0x1p20)) err = "distributed Ewald: box lengths must lie in [2^-20, 2^20] (for now)";
    if (opts.compute_energy) err = "distributed Ewald: compute_energy is not supported yet";

    if (opts.p2g_variant == P2GVariant::Baseline) err = "distributed Ewald: the baseline P2G is not supported";
    if (dopts.slab_axis < -1 || dopts.slab_axis > 2)
      err = "distributed Ewald: slab_axis must be -1 (the longest side), 0, 1 or 2, got " + std::to_string(dopts.slab_axis);
  } catch (const std::exception& e) {
    err = e.what();
  }
  try {
    detail::mpi::agree(I.comm, err.empty(), err);
    // every rank must pass the same options: rank 0's tuner decides for all, and a different
    // slab axis or exchange mode would pair unrelated collectives (a hang, or garbage)
    const double mine[] = {double(dopts.slab_axis), double(static_cast<int>(dopts.exchange)), opts.box[0], opts.box[1],
                           opts.box[2], double(static_cast<int>(opts.kernel)), double(static_cast<int>(opts.precision)),
                           double(opts.compute_field), double(opts.compute_pressure), double(opts.compute_potential),
                           double(opts.stresslet_zero_mode), opts.tolerance, opts.viscosity,
                           double(opts.periodicity[0] + 2 * opts.periodicity[1] + 4 * opts.periodicity[2])};
    constexpr int nv = sizeof mine / sizeof mine[0];
    double lo[nv], hi[nv];
    MPI_Allreduce(mine, lo, nv, MPI_DOUBLE, MPI_MIN, I.comm);
    MPI_Allreduce(mine, hi, nv, MPI_DOUBLE, MPI_MAX, I.comm);
    static const char* names[nv] = {"slab_axis", "exchange", "box", "box", "box", "kernel", "precision",
                                    "compute_field", "compute_pressure", "compute_potential", "stresslet_zero_mode",
                                    "tolerance", "viscosity", "periodicity"};
    for (int k = 0; k < nv; ++k)
      if (!(lo[k] == hi[k]) && !(std::isnan(lo[k]) && std::isnan(hi[k])))
        throw InvalidArgument(std::string("distributed Ewald: the ranks passed different options (") + names[k] +
                              "): every rank must construct the plan with the same Options and DistributedOptions");
  } catch (...) {
    MPI_Comm_free(&I.comm);
    throw;
  }
  I.user = opts;
  I.dist = dopts;
  I.free = !detail::is_triply_periodic(opts.periodicity);
  int axis = dopts.slab_axis;
  if (axis < 0) {  // the longest side, the first of equal ones
    axis = 0;
    for (int a = 1; a < 3; ++a)
      if (opts.box[std::size_t(a)] > opts.box[std::size_t(axis)]) axis = a;
  }
  for (int a = 0; a < 3; ++a) I.perm[std::size_t(a)] = (axis + a) % 3;
  I.st.slab_axis = axis;
  I.threads = opts.threads > 0 ? opts.threads : omp_get_max_threads();
  I.st.ranks = I.size;
  I.st.rank = I.rank;
}

DistributedEwaldPlan::~DistributedEwaldPlan() {
  if (impl_ && impl_->comm != MPI_COMM_NULL) {
    impl_->backend.reset();
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Comm_free(&impl_->comm);
  }
}

void DistributedEwaldPlan::set_points(ConstMatrixView<double> sources, std::optional<ConstMatrixView<double>> normals) {
  auto& I = *impl_;
  std::string err;
  const bool dl = double_layer(I.user.kernel);
  if (sources.cols != 3 || (!sources.data && sources.rows > 0))
    err = "sources must have shape (N,3), got (" + std::to_string(sources.rows) + "," + std::to_string(sources.cols) + ")";
  else if (!all_finite(sources.data, sources.size()))
    err = "sources contain NaN or Inf";
  else if (dl && (!normals || normals->rows != sources.rows || normals->cols != 3))
    err = "the " + to_string(I.user.kernel) + " kernel needs the normals (N,3) of the sources";
  else if (!dl && normals)
    err = "normals are only used by the stresslet and stokes-combined kernels";
  else if (normals && !all_finite(normals->data, normals->size()))
    err = "normals contain NaN or Inf";
  detail::mpi::agree(I.comm, err.empty(), err);
  const Periodicity& per = I.user.periodicity;
  if (I.free) {
    // the global bounding box along the free axes (EwaldPlan's shift and length unit)
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, nhi[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, glo[3], gnhi[3];
    for (std::size_t i = 0; i < sources.rows; ++i)
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::min(lo[d], sources(i, std::size_t(d)));
        nhi[d] = std::min(nhi[d], -sources(i, std::size_t(d)));
      }
    MPI_Allreduce(lo, glo, 3, MPI_DOUBLE, MPI_MIN, I.comm);
    MPI_Allreduce(nhi, gnhi, 3, MPI_DOUBLE, MPI_MIN, I.comm);
    double Dmax = 0, Dfree = 0, far = 0;
    for (int d = 0; d < 3; ++d) {
      I.lo[std::size_t(d)] = per[std::size_t(d)] ? 0.0 : glo[d];
      if (per[std::size_t(d)]) {
        Dmax = std::max(Dmax, I.user.box[std::size_t(d)]);
      } else {
        Dfree = std::max(Dfree, -gnhi[d] - glo[d]);
        far = std::max({far, std::abs(glo[d]), std::abs(gnhi[d])});
      }
    }
    Dmax = std::max(Dmax, Dfree);
    // (EwaldPlan computes in the caller's unit only for extents in [2^-20, 2^20]; the
    // distributed plan uses its parameters as they are)
    detail::mpi::agree(I.comm, Dfree > 0 && Dmax >= 0x1p-20 && Dmax <= 0x1p20 && far <= 1e15,
                       "distributed Ewald with periodicity " + to_string(per) +
                           ": the points' extent along the free axes must be positive and at most 2^20 (for now; "
                           "every length in [2^-20, 2^20]), their coordinates there within 1e15");
    I.reported.reset();  // the extended box follows the points: tuned again (rank 0, on the gathered points)
  }
  I.n = sources.rows;
  I.pts.resize(3 * I.n);
  for (std::size_t i = 0; i < I.n; ++i)
    for (int d = 0; d < 3; ++d)
      I.pts[3 * i + std::size_t(d)] = per[std::size_t(d)]
                                          ? detail::wrap_into_box(sources(i, std::size_t(d)), I.user.box[std::size_t(d)])
                                          : sources(i, std::size_t(d)) - I.lo[std::size_t(d)];
  if (dl) I.normals.assign(normals->data, normals->data + normals->size());
  I.ipts.resize(3 * I.n);
  for (std::size_t i = 0; i < I.n; ++i)
    for (int a = 0; a < 3; ++a) I.ipts[3 * i + std::size_t(a)] = I.pts[3 * i + std::size_t(I.perm[std::size_t(a)])];
  I.have_points = true;
  I.backend.reset();  // rebuilt at the next evaluate (the parameters are kept)
}

Result DistributedEwaldPlan::evaluate(const Densities& d) {
  auto& I = *impl_;
  const Kernel k = I.user.kernel;
  const int nsc = strength_cols(k);
  const bool dl = double_layer(k);
  std::string err;
  auto shape = [](ConstMatrixView<double> a) {
    std::string t = "(";
    t += std::to_string(a.rows);
    t += ",";
    t += std::to_string(a.cols);
    t += ")";
    return t;
  };
  if (!I.have_points) err = "evaluate: no points: call set_points first";
  else if (nsc > 0 && I.n > 0 && !d.strengths.data && d.strengths.rows == 0)
    err = "strengths are missing (" + to_string(k) + " needs " + (nsc == 1 ? "charges" : "forces (N,3)") + ")";
  else if (nsc > 0 && (d.strengths.rows != I.n || d.strengths.cols != std::size_t(nsc)))
    err = "strengths must have shape (" + std::to_string(I.n) + "," + std::to_string(nsc) + ")" +
          (nsc == 1 ? " or (" + std::to_string(I.n) + ",)" : "") + " (one row per point of this rank), got " +
          shape(d.strengths);
  else if (nsc == 0 && d.strengths.rows > 0)
    err = "the stresslet kernel takes no strengths";
  else if (dl && (d.dipoles.rows != I.n || d.dipoles.cols != 3))
    err = "dipoles must have shape (" + std::to_string(I.n) + ",3) (one row per point of this rank), got " + shape(d.dipoles);
  else if (!dl && d.dipoles.rows > 0)
    err = "dipoles are only used by the stresslet and stokes-combined kernels";
  else if ((nsc > 0 && !all_finite(d.strengths.data, d.strengths.size())) || (dl && !all_finite(d.dipoles.data, d.dipoles.size())))
    err = "the strengths or dipoles contain NaN or Inf";
  detail::mpi::agree(I.comm, err.empty(), err);
  StageTimes times;  // tune and set_points on the call that does them, as EwaldPlan
  if (!I.reported) {
    ScopedStage st(times, "tune");
    I.tune(d);
  }
  if (!I.backend) {
    ScopedStage st(times, "set_points");
    I.backend = detail::mpi::make_distributed_backend(I.comm, I.ipts, I.setup, I.dist.exchange);
  }
  // values in plan units (EwaldPlan::Impl::pack): f / mu, q, nu; divided by the power of two of
  // the global largest value
  const int ns = nsc + (dl ? 6 : 0);
  const double imu = k == Kernel::Laplace ? 1.0 : 1.0 / I.user.viscosity;
  double qmax = std::max(nsc ? max_abs(d.strengths.data, I.n * std::size_t(nsc)) * imu : 0.0,
                         dl ? max_abs(d.dipoles.data, I.n * 3) : 0.0), gmax = 0;
  MPI_Allreduce(&qmax, &gmax, 1, MPI_DOUBLE, MPI_MAX, I.comm);
  Result r;
  const int nv = k == Kernel::Laplace ? 1 : 3, no = k == Kernel::Laplace ? (I.setup.field ? 4 : 1)
                                                                          : (I.setup.field ? 4 : 3);
  r.values = I.user.compute_potential ? Array2D(I.n, std::size_t(nv), k == Kernel::Laplace ? 1 : 2) : Array2D(0, 1, 1);
  if (I.user.compute_field) r.field = Array2D(I.n, 3);
  if (I.user.compute_pressure) r.pressure = Array2D(I.n, 1, 1);
  r.params = *I.reported;
  detail::mpi::agree(I.comm, std::isfinite(gmax), "strengths divided by the viscosity overflow");
  if (gmax == 0) {  // all strengths zero: the sum is zero
    r.times = times;
    return r;
  }
  const double qscale = std::ldexp(1.0, std::ilogb(gmax)), iq = 1.0 / qscale;
  // values in the plan's axes: vectors (forces, dipoles, normals) permuted
  const std::array<int, 3>& pm = I.perm;
  std::vector<double> v(I.n * std::size_t(ns) + 1);
  for (std::size_t i = 0; i < I.n; ++i) {
    double* vi = v.data() + i * std::size_t(ns);
    if (nsc == 1) vi[0] = (d.strengths(i, 0) * imu) * iq;
    else
      for (int c = 0; c < nsc; ++c) vi[c] = (d.strengths(i, std::size_t(pm[std::size_t(c)])) * imu) * iq;
    if (dl)
      for (int c = 0; c < 3; ++c) {
        vi[nsc + c] = d.dipoles(i, std::size_t(pm[std::size_t(c)])) * iq;
        vi[nsc + 3 + c] = I.normals[3 * i + std::size_t(pm[std::size_t(c)])];
      }
  }
  std::vector<double> out(I.n * std::size_t(no) + 1);
  I.backend->evaluate(v.data(), out.data(), times);
  // results back in the user's axes: out holds (phi, E) for Laplace, (u, p) for Stokes
  const int vec0 = k == Kernel::Laplace ? 1 : 0;
  for (std::size_t i = 0; i < I.n; ++i) {
    const double* oi = out.data() + i * std::size_t(no);
    if (I.user.compute_potential) {
      if (nv == 1) r.values.values[i] = oi[0] * qscale;
      else
        for (int c = 0; c < 3; ++c) r.values.values[i * 3 + std::size_t(pm[std::size_t(c)])] = oi[c] * qscale;
    }
    if (I.user.compute_field)
      for (int c = 0; c < 3; ++c) r.field.values[i * 3 + std::size_t(pm[std::size_t(c)])] = oi[vec0 + c] * qscale;
    if (I.user.compute_pressure) r.pressure.values[i] = oi[3] * qscale * I.user.viscosity;
  }
  // 1P stokeslet (and stokes-combined's single layer): the k_z = 0 convention's constants
  // -2 ln R (across) and -4 ln R - 2 (along) times the global net force over 8 pi mu L, as
  // EwaldPlan::evaluate adds them (the table's kernel vanishes at the truncation radius R)
  const Periodicity& per = I.user.periodicity;
  if (I.user.compute_potential && (k == Kernel::Stokeslet || k == Kernel::StokesCombined) &&
      int(per[0]) + int(per[1]) + int(per[2]) == 1) {
    const int ax = per[0] ? 0 : per[1] ? 1 : 2;
    double F[3] = {0, 0, 0}, G[3];
    for (std::size_t i = 0; i < I.n; ++i)
      for (int c = 0; c < 3; ++c) F[c] += d.strengths(i, std::size_t(c));
    MPI_Allreduce(F, G, 3, MPI_DOUBLE, MPI_SUM, I.comm);
    const double lnR = std::log(I.reported->truncation_radius);
    const double w = 1.0 / (8 * kPi * I.user.viscosity * I.user.box[std::size_t(ax)]);
    for (std::size_t i = 0; i < I.n; ++i)
      for (int c = 0; c < 3; ++c) r.values.values[i * 3 + std::size_t(c)] += w * (c == ax ? -4 * lnR - 2 : -2 * lnR) * G[c];
  }
  r.times = times;
  const detail::mpi::DistributedCounts c = I.backend->counts();
  I.st.ranks = I.size;
  I.st.rank = I.rank;
  I.st.owned = c.owned;
  I.st.ghosts = c.ghosts;
  I.st.plane_start = c.plane_start;
  I.st.planes = c.planes;
  I.st.slab_lo = c.slab_lo;
  I.st.slab_hi = c.slab_hi;
  I.st.neighbour_sort = c.neighbour_sort;
  I.st.neighbour_ghost_source = c.neighbour_ghost_source;
  I.st.neighbour_ghost_grid = c.neighbour_ghost_grid;
  I.st.pair_symmetry = c.pair_symmetry;
  I.st.bytes_sort = c.bytes_sort;
  I.st.bytes_ghost_source = c.bytes_ghost_source;
  I.st.bytes_ghost_grid = c.bytes_ghost_grid;
  I.st.times = times;
  return r;
}

Params DistributedEwaldPlan::params() const { return impl_->reported ? *impl_->reported : Params{}; }
DistributedStats DistributedEwaldPlan::stats() const { return impl_->st; }

#endif

}  // namespace elliptica::ewald
