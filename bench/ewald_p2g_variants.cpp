// Issue 12: P2G/G2P variants and thread scaling of the spectral Ewald plan (CPU backend).
//
//   ewald_p2g_variants --mode variants --kernel laplace --n 100000 --dist uniform --eps 1e-6 --P 8
//                      --threads 1 --repeats 7
//     Parameters tuned by the plan for eps with the window support fixed to P (P 0: tuned too); two CPU backends on the same points, P2GVariant::CellOrdered and ::Baseline; their
//     P2G and G2P stages timed alternately (cell-ordered, baseline, cell-ordered, ...), best of
//     `repeats` each, on one shared workspace (the G2P input is the P2G output: the time does
//     not depend on the values). One CSV row per variant: points per second of P2G and G2P, the
//     set_points time of the backend and its window-cache bytes per point.
//   ewald_p2g_variants --mode scaling --kernel stokeslet --n 100000 --eps 1e-6 --repeats 5
//     Two plans on the same points, threads 1 and 2, evaluated alternately `repeats` times after
//     a first (tuning) evaluate each; per thread count the stage times of the fastest repeat.
//     Peak memory: VmHWM after the 1-thread plan's first evaluate minus VmHWM before the plan
//     was made (the inputs excluded), per point. One CSV row per thread count.
// --dist clustered: 20 Gaussian clusters (standard deviation 0.02) at uniform random centres,
// wrapped into the unit box. The box is the unit cube; strengths uniform in [-1, 1], neutral.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/backend.hpp"
#include "ewald/cpu/cpu.hpp"
#include "ewald/internal.hpp"

using namespace elliptica;
using namespace elliptica::ewald;
using elliptica::bench::now_s;

namespace {

std::vector<double> clustered_points(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 0.02);
  std::vector<double> c(20 * 3);
  for (double& v : c) v = u(rng);
  std::vector<double> x(3 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = i % 20;
    for (int d = 0; d < 3; ++d) x[3 * i + d] = detail::wrap_into_box(c[3 * k + d] + g(rng), 1.0);
  }
  // input order: random (the clusters interleaved), as for the uniform points
  std::vector<std::size_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = i;
  std::shuffle(p.begin(), p.end(), rng);
  std::vector<double> y(3 * n);
  for (std::size_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) y[3 * i + d] = x[3 * p[i] + d];
  return y;
}

struct Data {
  std::vector<double> x, q, f, dip, nu;
  Densities densities(Kernel k) const {
    Densities d;
    if (k == Kernel::Laplace) d.strengths = ConstMatrixView<double>(q, 1);
    if (k == Kernel::Stokeslet || k == Kernel::StokesCombined) d.strengths = ConstMatrixView<double>(f, 3);
    if (has_double_layer(k)) d.dipoles = ConstMatrixView<double>(dip, 3);
    return d;
  }
  /// The backend's load() layout: the kernel's n_src values per source (plan.cpp's packing:
  /// Laplace q; stokeslet f; stresslet q nu; stokes-combined f q nu).
  std::vector<double> packed(Kernel k) const {
    const std::size_t n = x.size() / 3;
    std::vector<double> v;
    for (std::size_t i = 0; i < n; ++i) {
      if (k == Kernel::Laplace) v.push_back(q[i]);
      if (k == Kernel::Stokeslet || k == Kernel::StokesCombined)
        for (int a = 0; a < 3; ++a) v.push_back(f[3 * i + a]);
      if (has_double_layer(k)) {
        for (int a = 0; a < 3; ++a) v.push_back(dip[3 * i + a]);
        for (int a = 0; a < 3; ++a) v.push_back(nu[3 * i + a]);
      }
    }
    return v;
  }
};

Data make_data(std::size_t n, const std::string& dist) {
  Data d;
  d.x = dist == "clustered" ? clustered_points(n, 11) : bench::uniform_points(n, 11);
  d.q = bench::neutral_strengths(n, 1, 12);
  d.f = bench::neutral_strengths(n, 3, 13);
  d.dip = bench::neutral_strengths(n, 3, 14);
  d.nu = bench::neutral_strengths(n, 3, 15);
  return d;
}

void set_points(EwaldPlan& plan, Kernel k, const Data& d) {
  if (has_double_layer(k))
    plan.set_points(ConstMatrixView<double>(d.x, 3), std::nullopt, ConstMatrixView<double>(d.nu, 3));
  else
    plan.set_points(ConstMatrixView<double>(d.x, 3));
}

int variants(const bench::Args& a) {
  const Kernel k = kernel_from_string(a.str("kernel", "laplace"));
  const std::size_t n = static_cast<std::size_t>(a.integer("n", 100000));
  const std::string dist = a.str("dist", "uniform");
  const double eps = a.num("eps", 1e-6);
  const int P = static_cast<int>(a.integer("P", 6));
  const int threads = static_cast<int>(a.integer("threads", 1));
  const int repeats = static_cast<int>(a.integer("repeats", 7));
  const Data data = make_data(n, dist);
  Options o;
  o.kernel = k;
  o.tolerance = eps;
  if (P > 0) if (P > 0) if (P > 0) if (P > 0) o.window_support = P;
  o.threads = threads;
  EwaldPlan plan(o);
  set_points(plan, k, data);
  const Params p = plan.tune(data.densities(k));  // unit box: plan units = caller units
  // The backends (set_points stage of each variant) on the plan's parameters.
  detail::PointSet pts;
  pts.src = data.x;
  pts.ns = pts.nt = n;
  if (has_double_layer(k)) pts.normals = data.nu;
  detail::BackendSetup s;
  s.kernel = k;
  s.box = {1, 1, 1};
  s.threads = threads;
  s.params = p;
  s.window = detail::make_window(p.P, p.beta, p.poly_degree, 0.0);
  const std::vector<double> values = data.packed(k);
  const char* names[2] = {"cell_ordered", "baseline"};
  std::unique_ptr<detail::Backend> b[2];
  double setup_s[2];
  for (int v = 0; v < 2; ++v) {
    s.p2g_variant = v == 0 ? P2GVariant::CellOrdered : P2GVariant::Baseline;
    const double t0 = now_s();
    b[v] = detail::make_cpu_backend(pts, s);
    setup_s[v] = now_s() - t0;
  }
  // One workspace for both (the same sorted order: the cell lists do not depend on the variant).
  auto ws = b[0]->workspace();
  b[0]->load(*ws, values.data());
  auto& cws = dynamic_cast<detail::CpuWorkspace<double>&>(*ws);
  int n_out = value_components(k);
  if (k == Kernel::Laplace && o.compute_field) n_out = 4;
  cws.acc.assign(n * std::size_t(n_out), 0.0);
  double best_p2g[2], best_g2p[2];
  for (int v = 0; v < 2; ++v) best_p2g[v] = best_g2p[v] = std::numeric_limits<double>::infinity();
  b[0]->p2g(*ws);  // warm-up: first touch of the grids (shared by both variants)
  b[0]->g2p(*ws);
  for (int r = 0; r < repeats; ++r)
    for (int v0 = 0; v0 < 2; ++v0) {
      const int v = (v0 + r) % 2;  // alternate which variant goes first
      double t0 = now_s();
      b[v]->p2g(*ws);
      best_p2g[v] = std::min(best_p2g[v], now_s() - t0);
      t0 = now_s();
      b[v]->g2p(*ws);
      best_g2p[v] = std::min(best_g2p[v], now_s() - t0);
    }
  const int nc = k == Kernel::Laplace ? 1 : k == Kernel::Stokeslet ? 3 : k == Kernel::Stresslet ? 9 : 12;
  for (int v = 0; v < 2; ++v) {
    const double cache = v == 0 ? 3.0 * (8.0 * p.P + 4.0) : 4.0;  // window cache / rank bytes per point
    std::printf("%s,%s,%zu,%g,%d,%d,%d,%d,%d,%s,%.6g,%.6g,%.4g,%.4g,%.4g,%g\n", to_string(k).c_str(), dist.c_str(), n,
                eps, p.P, p.grid[0], p.grid[1], p.grid[2], threads, names[v], best_p2g[v], best_g2p[v],
                n / best_p2g[v], n / best_g2p[v], setup_s[v], cache);
  }
  std::fprintf(stderr, "%s %s N=%zu eps=%g P=%d M=%d grid components %d threads=%d: P2G speed-up %.2f, G2P %.2f\n",
               to_string(k).c_str(), dist.c_str(), n, eps, p.P, p.grid[0], nc, threads, best_p2g[1] / best_p2g[0],
               best_g2p[1] / best_g2p[0]);
  return 0;
}

int scaling(const bench::Args& a) {
  const Kernel k = kernel_from_string(a.str("kernel", "laplace"));
  const std::size_t n = static_cast<std::size_t>(a.integer("n", 100000));
  const double eps = a.num("eps", 1e-6);
  const int repeats = static_cast<int>(a.integer("repeats", 5));
  const Data data = make_data(n, a.str("dist", "uniform"));
  const Densities d = data.densities(k);
  const double rss0 = bench::peak_rss_mib();
  std::unique_ptr<EwaldPlan> plan[2];
  double first[2], peak_mib = 0;
  for (int t = 0; t < 2; ++t) {
    Options o;
    o.kernel = k;
    o.tolerance = eps;
    o.threads = t + 1;
    plan[t] = std::make_unique<EwaldPlan>(o);
    const double t0 = now_s();
    set_points(*plan[t], k, data);
    plan[t]->evaluate(d);
    first[t] = now_s() - t0;
    if (t == 0) peak_mib = bench::peak_rss_mib() - rss0;
  }
  Result best[2];
  double best_total[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int r = 0; r < repeats; ++r)
    for (int t0 = 0; t0 < 2; ++t0) {
      const int t = (t0 + r) % 2;
      const double s = now_s();
      Result res = plan[t]->evaluate(d);
      const double e = now_s() - s;
      if (e < best_total[t]) {
        best_total[t] = e;
        best[t] = std::move(res);
      }
    }
  const char* stages[] = {"P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"};
  for (int t = 0; t < 2; ++t) {
    const Params& p = best[t].params;
    std::printf("%s,%zu,%g,%d,%d,%d,%.4g,%.4g", to_string(k).c_str(), n, eps, t + 1, p.grid[0], p.P, p.rc,
                best_total[t]);
    for (const char* st : stages) std::printf(",%.4g", best[t].times.get(st));
    std::printf(",%.4g,%.1f,%.0f\n", first[t], peak_mib, peak_mib * 1048576.0 / double(n));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const bench::Args a(argc, argv, {"mode", "kernel", "n", "dist", "eps", "P", "threads", "repeats"}, {"header"});
    const std::string mode = a.str("mode", "variants");
    if (a.has("header")) {
      if (mode == "variants")
        std::printf("kernel,dist,N,eps,P,M1,M2,M3,threads,variant,p2g_s,g2p_s,p2g_points_per_s,g2p_points_per_s,"
                    "set_points_s,cache_bytes_per_point\n");
      else
        std::printf("kernel,N,eps,threads,M,P,rc,total_s,P2P_s,P2G_s,FFT_s,CNV_s,IFFT_s,G2P_s,self_s,first_s,"
                    "peak_mib,peak_bytes_per_point\n");
      return 0;
    }
    return mode == "variants" ? variants(a) : scaling(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ewald_p2g_variants: %s\n", e.what());
    return 1;
  }
}
