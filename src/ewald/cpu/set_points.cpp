// The set_points stage of the CPU backend: points sorted into the near-field cell list of the
// chosen r_c, window weights of every source and target, the erfcx series, the FFT plans
// and the P2G slab order; and the backend object that runs the stages on per-call workspaces.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "elliptica/core/error.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/cpu/cpu.hpp"

namespace elliptica::ewald::detail {

template <class T>
CellList<T> build_cells(const double* wrapped, std::size_t N, const std::array<double, 3>& box,
                        const std::array<int, 3>& n) {
  CellList<T> cl;
  cl.n = n;
  double inv_width[3];
  for (int d = 0; d < 3; ++d) inv_width[d] = n[d] / box[d];
  const int nc = cl.ncells();
  std::vector<int> cell(N);
  for (std::size_t i = 0; i < N; ++i) {
    int ci[3];
    for (int d = 0; d < 3; ++d) ci[d] = cell_index(wrapped[3 * i + d], inv_width[d], n[d]);
    cell[i] = (ci[0] * n[1] + ci[1]) * n[2] + ci[2];
  }
  cl.start.assign(nc + 1, 0);
  for (std::size_t i = 0; i < N; ++i) cl.start[cell[i] + 1]++;
  for (int c = 0; c < nc; ++c) cl.start[c + 1] += cl.start[c];
  std::vector<int> fill(cl.start.begin(), cl.start.end() - 1);
  cl.perm.resize(N);
  cl.x.resize(N);
  cl.y.resize(N);
  cl.z.resize(N);
  for (std::size_t i = 0; i < N; ++i) {
    const int p = fill[cell[i]]++;
    cl.perm[p] = static_cast<int>(i);
    cl.x[p] = wrapped[3 * i];
    cl.y[p] = wrapped[3 * i + 1];
    cl.z[p] = wrapped[3 * i + 2];
  }
  return cl;
}

template <class T>
WindowCache<T> window_cache(const double* wrapped, const std::vector<int>& perm, const Params& p, const Window& w,
                            int threads) {
  WindowCache<T> wc;
  wc.P = p.P;
  const std::size_t N = perm.size();
  wc.j0.resize(3 * N);
  wc.w.resize(3 * N * std::size_t(p.P));
  const double inv_h[3] = {1.0 / p.h[0], 1.0 / p.h[1], 1.0 / p.h[2]};
  const long n = static_cast<long>(N);
#pragma omp parallel num_threads(threads)
  {
    double wd[kMaxWindowSupport];
#pragma omp for schedule(static)
    for (long i = 0; i < n; ++i)
      for (int d = 0; d < 3; ++d) {
        double s = 0;
        window_offset(wrapped[3 * std::size_t(perm[i]) + d], inv_h[d], p.grid[d], p.P, wc.j0[3 * i + d], s);
        w.weights(s, wd);
        T* out = &wc.w[(std::size_t(i) * 3 + d) * p.P];
        for (int m = 0; m < p.P; ++m) out[m] = static_cast<T>(wd[m]);
      }
  }
  return wc;
}

namespace {

template <class K, class T>
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(std::unique_ptr<CpuGeometry<T>> g) : g_(std::move(g)) {}
  std::unique_ptr<Workspace> workspace() const override { return std::make_unique<CpuWorkspace<T>>(); }
  void load(Workspace& w, const double* v) const override {
    CpuWorkspace<T>& ws = cast(w);
    const CellList<T>& s = g_->src;
    const std::size_t n = s.x.size();
    // one row of zeros past the last source: the padding of P2P's gathered pair lists reads it
    ws.values.resize((n + 1) * K::n_src);
    for (int c = 0; c < K::n_src; ++c) ws.values[n * K::n_src + c] = T(0);
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < K::n_src; ++c)
        ws.values[i * K::n_src + c] = static_cast<T>(v[std::size_t(s.perm[i]) * K::n_src + c]);
    ws.total[0] = ws.total[1] = 0;
    ws.moment[0] = ws.moment[1] = ws.moment[2] = 0;
    // Sums over the sources in a fixed (sorted) order: the same result run to run.
    if constexpr (K::kernel == Kernel::Laplace) {
      for (std::size_t i = 0; i < n; ++i) ws.total[0] += v[std::size_t(s.perm[i])];
    } else if constexpr (K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined) {
      if (src_wrapped_.empty()) return;  // the k = 0 term is not asked for
      constexpr int o = K::kernel == Kernel::Stresslet ? 0 : 3;  // q at o, nu at o + 3
      for (std::size_t i = 0; i < n; ++i) {  // in float64, from the caller's values and coordinates
        const std::size_t k = std::size_t(s.perm[i]);
        const double* qi = &v[k * K::n_src + o];
        const double qn = qi[0] * qi[3] + qi[1] * qi[4] + qi[2] * qi[5];
        ws.total[1] += qn;
        for (int d = 0; d < 3; ++d) ws.moment[d] += qn * src_wrapped_[3 * k + d];
      }
    }
  }
  void p2p(Workspace& w) const override { detail::p2p<K, T>(*g_, cast(w)); }
  void p2g(Workspace& w) const override {
    if (g_->setup.p2g_variant == P2GVariant::Baseline)
      detail::p2g_baseline<K, T>(*g_, cast(w));
    else
      detail::p2g<K, T>(*g_, cast(w));
  }
  void fft(Workspace& w) const override { fft_forward<T>(*g_, cast(w)); }
  void cnv(Workspace& w) const override { detail::cnv<K, T>(*g_, cast(w)); }
  void ifft(Workspace& w) const override { fft_backward<T>(*g_, cast(w)); }
  void g2p(Workspace& w) const override {
    if (g_->setup.p2g_variant == P2GVariant::Baseline)
      detail::g2p_baseline<K, T>(*g_, cast(w));
    else
      detail::g2p<K, T>(*g_, cast(w));
  }
  void self(Workspace& w) const override { self_term<K, T>(*g_, cast(w)); }
  void store(Workspace& w, double* out) const override {
    const CpuWorkspace<T>& ws = cast(w);
    const CellList<T>& t = g_->targets();
    const std::size_t n = t.x.size();
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < K::n_out; ++c)
        out[std::size_t(t.perm[i]) * K::n_out + c] = ws.acc[i * K::n_out + c] * K::final_scale;
  }
  std::size_t coincident_pairs(const Workspace& w) const override { return cast(w).coincident; }
  P2PCounts p2p_counts(const Workspace& w) const override {
    return {cast(w).p2p_candidates, cast(w).p2p_pairs, g_->series.degree, g_->series.exp_degree,
            uses_pair_symmetry<K, T>(*g_)};
  }
  double far_energy(const Workspace& w) const override {
    return g_->setup.energy_parseval ? cast(w).far_energy * K::final_scale : std::numeric_limits<double>::quiet_NaN();
  }

 private:
  static CpuWorkspace<T>& cast(Workspace& w) { return static_cast<CpuWorkspace<T>&>(w); }
  static const CpuWorkspace<T>& cast(const Workspace& w) { return static_cast<const CpuWorkspace<T>&>(w); }
  std::unique_ptr<CpuGeometry<T>> g_;
  std::vector<double> src_wrapped_;  // float64 wrapped source coordinates, caller order (k = 0 term)

 public:
  void keep_sources(const std::vector<double>& w) { src_wrapped_ = w; }
};

}  // namespace

namespace {
// P2P's erfcx series (degree from the tolerance) and colleague reach (cells per axis within r_c)
template <class T>
void set_p2p_parts(CpuGeometry<T>& g) {
  const Params& p = g.setup.params;
  g.series = ErfcSeries(p.xi * p.rc, g.setup.erfc_target);
  for (int d = 0; d < 3; ++d)
    g.reach[d] = std::max(1, static_cast<int>(std::ceil(p.rc * g.src.n[d] / g.setup.box[d] * (1 - 1e-12))));
}
}  // namespace

template <class K, class T>
std::unique_ptr<CpuGeometry<T>> make_geometry(const PointSet& pts, const BackendSetup& setup, const SlabPart* slab) {
  auto g = std::make_unique<CpuGeometry<T>>();
  g->setup = setup;
  const Params& p = setup.params;
  const int threads = setup.threads;
  g->src = build_cells<T>(pts.src.data(), pts.ns, setup.box, p.cells);
  g->separate = pts.separate || slab;
  if (slab) {
    // a slab: the targets are the owned sources, the first n_owned (P2P sums one-sided over the
    // owned and ghost sources; self_term adds the own images through own_source)
    if (setup.p2g_variant == P2GVariant::Baseline || pts.separate || slab->n_owned > pts.ns || slab->nx < 1)
      throw InvalidArgument("a distributed plan's slab needs the cell-ordered P2G, targets = sources and planes");
    g->trg = build_cells<T>(pts.src.data(), slab->n_owned, setup.box, p.cells);
    g->nx = slab->nx;
    g->x0 = slab->x0;
  } else if (pts.separate) {
    g->trg = build_cells<T>(pts.trg.data(), pts.nt, setup.box, p.cells);
  }
  const bool baseline = setup.p2g_variant == P2GVariant::Baseline;
  if (baseline) {
    // The baseline P2G/G2P visit the points in input order and evaluate the window on the fly:
    // no window cache, no slabs; only the input index -> sorted position maps.
    auto rank = [](const std::vector<int>& perm) {
      std::vector<int> r(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i) r[std::size_t(perm[i])] = static_cast<int>(i);
      return r;
    };
    g->src_rank = rank(g->src.perm);
    if (pts.separate) g->trg_rank = rank(g->trg.perm);
  } else {
    g->wsrc = window_cache<T>(pts.src.data(), g->src.perm, p, setup.window, threads);
    if (slab) {
      g->wtrg = window_cache<T>(pts.src.data(), g->trg.perm, p, setup.window, threads);
      // x-indices relative to the slab's first plane (ghost sources' are not used: not spread)
      for (std::size_t i = 0; i < g->wsrc.j0.size(); i += 3) g->wsrc.j0[i] -= slab->x0;
      for (std::size_t i = 0; i < g->wtrg.j0.size(); i += 3) g->wtrg.j0[i] -= slab->x0;
      std::vector<int> pos(pts.ns);
      for (std::size_t i = 0; i < pts.ns; ++i) pos[std::size_t(g->src.perm[i])] = static_cast<int>(i);
      g->own_source.resize(slab->n_owned);
      for (std::size_t t = 0; t < slab->n_owned; ++t) g->own_source[t] = pos[std::size_t(g->trg.perm[t])];
    } else if (pts.separate) {
      g->wtrg = window_cache<T>(pts.trg.data(), g->trg.perm, p, setup.window, threads);
    }
  }
  set_p2p_parts(*g);
  // P2G threading: sources in slabs of W >= P padded x-planes; a source in slab s writes planes
  // [sW, (s+1)W + P - 1), so slabs of one parity never overlap and run concurrently.
  if (!baseline) {
    const int span = g->slab_planes() + p.P;  // range of padded j0 in x
    g->nslab = threads > 1 ? std::max(1, span / p.P) : 1;
    const int W = (span + g->nslab - 1) / g->nslab;
    const std::size_t N = pts.ns;
    // the sources P2G spreads: all, or a slab's owned ones (sorted i with perm[i] < n_owned)
    auto spread = [&](std::size_t i) { return !slab || std::size_t(g->src.perm[i]) < slab->n_owned; };
    g->slab_start.assign(g->nslab + 1, 0);
    for (std::size_t i = 0; i < N; ++i)
      if (spread(i)) g->slab_start[std::min(g->wsrc.j0[3 * i] / W, g->nslab - 1) + 1]++;
    for (int s = 0; s < g->nslab; ++s) g->slab_start[s + 1] += g->slab_start[s];
    g->slab_order.resize(std::size_t(g->slab_start[g->nslab]));
    std::vector<int> fill(g->slab_start.begin(), g->slab_start.end() - 1);
    for (std::size_t i = 0; i < N; ++i)
      if (spread(i)) g->slab_order[fill[std::min(g->wsrc.j0[3 * i] / W, g->nslab - 1)]++] = static_cast<int>(i);
  }
  {
    // Before anything is allocated: the caches (sorted float64 coordinates and permutation, 28
    // bytes a point; window weights, 3 P values of T and 3 ints a point; the sorted strengths)
    // and, per evaluation, the FFT grids (real + half-spectrum, max(n_grid, n_out) components)
    // and the padded grid of P2G/G2P.
    const double npts = double(pts.ns) + (pts.separate ? double(pts.nt) : slab ? double(slab->n_owned) : 0.0);
    const double caches = npts * (28.0 + 3.0 * sizeof(T) * p.P + 12.0) + sizeof(T) * double(pts.ns) * K::n_src;
    const double m = double(g->slab_planes()) * p.grid[1] * p.grid[2], nc = std::max(K::n_grid, K::n_out);
    const double padded = double(g->slab_planes() + 2 * p.P) * (p.grid[1] + 2 * p.P) * (p.grid[2] + 2 * p.P) * nc;
    const double b = sizeof(T);
    require_memory(caches + b * m * nc + 2 * b * (m / p.grid[2]) * (p.grid[2] / 2 + 1) * nc + b * padded,
                   "the FFT grids (M = " + std::to_string(p.grid[0]) + " x " + std::to_string(p.grid[1]) + " x " +
                       std::to_string(p.grid[2]) + ") and the set_points caches (cell lists, window weights)");
  }
  if (!slab) g->fft = std::make_unique<FftPlans<T>>(p.grid, K::n_grid, g->far_out(K::n_out), threads, setup.fft_planner);
  self_images<K>(setup, g->self_image);
  return g;
}

template <class T>
std::unique_ptr<CpuGeometry<T>> make_p2p_geometry(const double* sources, std::size_t n_src, const double* targets,
                                                  std::size_t n_trg, const BackendSetup& setup) {
  auto g = std::make_unique<CpuGeometry<T>>();
  g->setup = setup;
  const Params& p = setup.params;
  g->src = build_cells<T>(sources, n_src, setup.box, p.cells);
  g->separate = targets != nullptr;
  if (targets) g->trg = build_cells<T>(targets, n_trg, setup.box, p.cells);
  set_p2p_parts(*g);
  return g;
}
template std::unique_ptr<CpuGeometry<float>> make_p2p_geometry<float>(const double*, std::size_t, const double*,
                                                                      std::size_t, const BackendSetup&);
template std::unique_ptr<CpuGeometry<double>> make_p2p_geometry<double>(const double*, std::size_t, const double*,
                                                                        std::size_t, const BackendSetup&);

namespace {

template <class K, class T>
std::unique_ptr<Backend> make(const PointSet& pts, const BackendSetup& setup) {
  std::unique_ptr<CpuGeometry<T>> g = make_geometry<K, T>(pts, setup, nullptr);
  auto b = std::make_unique<CpuBackend<K, T>>(std::move(g));
  if constexpr (K::kernel == Kernel::Stresslet || K::kernel == Kernel::StokesCombined)
    if (setup.zero_mode) b->keep_sources(pts.src);
  return b;
}

}  // namespace

#define ELLIPTICA_EWALD_GEOMETRY(K)                                                                            \
  template std::unique_ptr<CpuGeometry<float>> make_geometry<K, float>(const PointSet&, const BackendSetup&,   \
                                                                       const SlabPart*);                       \
  template std::unique_ptr<CpuGeometry<double>> make_geometry<K, double>(const PointSet&, const BackendSetup&, \
                                                                         const SlabPart*);
ELLIPTICA_EWALD_GEOMETRY(LaplaceTraits)
ELLIPTICA_EWALD_GEOMETRY(LaplaceFieldTraits)
ELLIPTICA_EWALD_GEOMETRY(StokesletTraits)
ELLIPTICA_EWALD_GEOMETRY(StokesletPressureTraits)
ELLIPTICA_EWALD_GEOMETRY(StressletTraits)
ELLIPTICA_EWALD_GEOMETRY(StokesCombinedTraits)

std::unique_ptr<Backend> make_cpu_backend(const PointSet& pts, const BackendSetup& setup) {
  return with_traits(setup.kernel, setup.field, [&](auto tr) -> std::unique_ptr<Backend> {
    if (setup.precision == Precision::Single) return make<decltype(tr), float>(pts, setup);
    return make<decltype(tr), double>(pts, setup);
  });
}

}  // namespace elliptica::ewald::detail
