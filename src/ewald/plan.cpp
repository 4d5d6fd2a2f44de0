// The spectral Ewald plan: validation, tuning (parameters from the tolerance) and the pipeline
// P2P + P2G -> FFT -> CNV -> IFFT -> G2P (seed 000, algorithm 1).
#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <sstream>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "ewald/internal.hpp"

namespace elliptica::ewald {

using namespace detail;

std::string to_string(Kernel k) { return k == Kernel::Laplace ? "laplace" : "stokeslet"; }

Kernel kernel_from_string(const std::string& s) {
  if (s == "laplace") return Kernel::Laplace;
  if (s == "stokeslet") return Kernel::Stokeslet;
  throw InvalidArgument("unknown kernel '" + s + "' (expected 'laplace' or 'stokeslet')");
}

int strength_components(Kernel k) { return k == Kernel::Laplace ? 1 : 3; }

std::string Params::describe() const {
  std::ostringstream os;
  os.precision(6);
  os << "spectral Ewald parameters\n"
     << "  xi (splitting)        " << xi << "\n"
     << "  r_c (cutoff)          " << rc << "\n"
     << "  near-field cells      " << cells[0] << " x " << cells[1] << " x " << cells[2] << "\n"
     << "  FFT grid M            " << grid[0] << " x " << grid[1] << " x " << grid[2] << "\n"
     << "  grid spacing h        " << h[0] << ", " << h[1] << ", " << h[2] << "\n"
     << "  window support P      " << P << "\n"
     << "  Kaiser-Bessel beta    " << beta << "\n"
     << "  polynomial degree nu  " << poly_degree << "\n"
     << "  absolute RMS target   " << eps_abs << "\n";
  if (result_rms > 0) os << "  RMS of result (pilot) " << result_rms << "\n";
  os << "  estimated RMS error   " << est_total << " (real " << est_real << ", Fourier " << est_fourier << ", window "
     << est_window << ")\n";
  if (est_relative > 0) os << "  estimated relative    " << est_relative << "\n";
  if (field_eps_abs > 0) {
    os << "  field: absolute target " << field_eps_abs << ", estimated RMS error " << field_est_total;
    if (field_rms > 0) os << " (relative " << field_est_total / field_rms << ")";
    os << "\n";
  }
  return os.str();
}

namespace {

std::mutex& fftw_mutex() {
  static std::mutex m;
  return m;
}

void fftw_threads_init() {
  static std::once_flag once;
  std::call_once(once, [] { fftw_init_threads(); });
}

struct FftwGrid {
  std::array<int, 3> M{0, 0, 0};
  int cin = 0, cout = 0, threads = 0;
  double* real = nullptr;
  fftw_complex* cplx = nullptr;
  fftw_plan fwd = nullptr, bwd = nullptr;
  std::size_t nreal() const { return std::size_t(M[0]) * M[1] * M[2]; }
  std::size_t ncplx() const { return std::size_t(M[0]) * M[1] * (M[2] / 2 + 1); }

  void release() {
    std::lock_guard<std::mutex> lk(fftw_mutex());
    if (fwd) fftw_destroy_plan(fwd);
    if (bwd) fftw_destroy_plan(bwd);
    if (real) fftw_free(real);
    if (cplx) fftw_free(cplx);
    fwd = bwd = nullptr;
    real = nullptr;
    cplx = nullptr;
    M = {0, 0, 0};
  }
  void ensure(const std::array<int, 3>& m, int ci, int co, int nth) {
    if (m == M && ci == cin && co == cout && nth == threads && fwd) return;
    release();
    fftw_threads_init();
    M = m;
    cin = ci;
    cout = co;
    threads = nth;
    const int nc = std::max(ci, co);
    std::lock_guard<std::mutex> lk(fftw_mutex());
    real = fftw_alloc_real(nreal() * nc);
    cplx = fftw_alloc_complex(ncplx() * nc);
    if (!real || !cplx) throw ResourceError("out of memory allocating the FFT grid");
    fftw_plan_with_nthreads(nth);
    const int n[3] = {M[0], M[1], M[2]};
    fwd = fftw_plan_many_dft_r2c(3, n, ci, real, nullptr, 1, int(nreal()), cplx, nullptr, 1, int(ncplx()),
                                 FFTW_ESTIMATE);
    bwd = fftw_plan_many_dft_c2r(3, n, co, cplx, nullptr, 1, int(ncplx()), real, nullptr, 1, int(nreal()),
                                 FFTW_ESTIMATE);
    if (!fwd || !bwd) throw NumericalError("FFTW could not create a plan for the grid");
  }
  ~FftwGrid() { release(); }
};

double rms(const std::vector<double>& v, int comps, int c0, int nc) {
  // RMS over points of the Euclidean norm of components [c0, c0+nc).
  const std::size_t n = v.size() / comps;
  if (n == 0) return 0;
  double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (int c = c0; c < c0 + nc; ++c) s += v[i * comps + c] * v[i * comps + c];
  return std::sqrt(s / n);
}

}  // namespace

struct EwaldPlan::Impl {
  // Lengths are computed in units of ls, a power of two (so exact) chosen when the box is far
  // from unit size: the sums scale as phi(s x; s L) = phi(x; L) / s (stokeslet alike), E as 1/s^2,
  // and intermediate quantities such as (h1 h2 h3)^2 / V or 1/k^4 then stay far from overflow and
  // underflow for every admissible box (lengths in [1e-100, 1e100]).
  Options user;  // as given (options())
  Options opt;   // the same with box, xi and rc in units of ls (used everywhere below)
  double ls = 1.0;
  Params params;
  Window window;
  bool tuned = false;
  std::size_t tuned_ns = 0, tuned_nt = 0;
  double tuned_q2 = 0;
  double qscale = 1.0;       // strengths are divided by this power of two before the sum (range safety)
  double tuned_scale = 1.0;  // qscale at the last tuning (an absolute tolerance depends on it)
  Params reported;           // params in the caller's units (scaled back by qscale)
  double eps_field_abs = 0;
  FftwGrid fft;
  std::vector<double> pad;  // padded, component-interleaved grid used by P2G and G2P
  int threads = 1;

  int cin() const { return strength_components(opt.kernel); }
  int cout() const { return opt.kernel == Kernel::Stokeslet ? 3 : (opt.compute_field ? 4 : 1); }

  // The whole sum with the given parameters; out is (n_targets, cout()) in original target order.
  void compute(const Params& p, const Window& w, ConstMatrixView<double> src, ConstMatrixView<double> q,
               const ConstMatrixView<double>* trg, std::vector<double>& out, StageTimes& times);
  void p2g(const Params& p, const Window& w, const CellList& cl, const std::vector<double>& qs);
  void cnv(const Params& p);
  void g2p(const Params& p, const Window& w, const CellList& cl, std::vector<double>& acc);
  void tune(ConstMatrixView<double> src, ConstMatrixView<double> q, const ConstMatrixView<double>* trg,
            StageTimes& times);
  double density(ConstMatrixView<double> src, ConstMatrixView<double> q, const ConstMatrixView<double>* trg) const;
  Result evaluate(ConstMatrixView<double> src, ConstMatrixView<double> q, const ConstMatrixView<double>* trg);
  bool scale_strengths(ConstMatrixView<double> q_in, std::vector<double>& qv);
  // Coordinates in units of ls (a copy into buf when ls != 1).
  ConstMatrixView<double> scale_lengths(ConstMatrixView<double> a, std::vector<double>& buf) const;
  void report();
};

namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

void validate_options(const Options& o) {
  for (int d = 0; d < 3; ++d)
    if (!(o.box[d] >= 1e-100 && o.box[d] <= 1e100))
      throw InvalidArgument("box length L" + std::to_string(d + 1) + " must be positive, finite and in [1e-100, 1e100], got " +
                            num(o.box[d]));
  if (!std::isfinite(o.tolerance) || !(o.tolerance > 0) || !(o.tolerance < 1))
    throw InvalidArgument("tolerance eps must satisfy 0 < eps < 1, got " + num(o.tolerance));
  if (o.tolerance_kind == ToleranceKind::Relative && o.tolerance < 1e-14)
    throw InvalidArgument("relative tolerance " + num(o.tolerance) +
                          " is below double-precision round-off (use eps >= 1e-14)");
  if (!(o.viscosity > 0) || !std::isfinite(o.viscosity))
    throw InvalidArgument("viscosity mu must be positive and finite, got " + num(o.viscosity));
  if (o.compute_field && o.kernel != Kernel::Laplace)
    throw InvalidArgument("the field (compute_field) is only available for the laplace kernel");
  if (o.threads < 0 || o.threads > 1024)
    throw InvalidArgument("threads must be in [0, 1024] (0 = all available), got " + std::to_string(o.threads));
  const double Lmin = std::min({o.box[0], o.box[1], o.box[2]});
  const double Lmax = std::max({o.box[0], o.box[1], o.box[2]});
  if (o.xi && (!(*o.xi * Lmax >= 0.05) || !(*o.xi * Lmin <= 1e6)))
    throw InvalidArgument("xi override must satisfy 0.05 <= xi max(L) and xi min(L) <= 1e6, got xi = " + num(*o.xi));
  if (o.rc && (!(*o.rc > 0) || !(*o.rc <= Lmax * (1 + 1e-12)) || !(*o.rc >= 1e-6 * Lmin)))
    throw InvalidArgument("rc override must satisfy 1e-6 min(L) <= rc <= max(L) = " + num(Lmax) + ", got " +
                          num(*o.rc));
  if (o.grid)
    for (int d = 0; d < 3; ++d)
      if ((*o.grid)[d] < 4 || (*o.grid)[d] > 8192)
        throw InvalidArgument("grid override M must be in [4, 8192] per axis, got " + std::to_string((*o.grid)[d]));
  if (o.window_support && (*o.window_support < 2 || *o.window_support > kMaxWindowSupport))
    throw InvalidArgument("window support P override must be in [2, 32], got " + std::to_string(*o.window_support));
  if (o.grid && o.window_support &&
      *o.window_support > std::min({(*o.grid)[0], (*o.grid)[1], (*o.grid)[2]}))
    throw InvalidArgument("window support P must not exceed the grid size M");
  if (o.window_shape && (!(*o.window_shape > 0) || !(*o.window_shape <= 300)))
    throw InvalidArgument("window shape beta override must be in (0, 300], got " + num(*o.window_shape));
  if (o.poly_degree && (*o.poly_degree < 1 || *o.poly_degree > 30))
    throw InvalidArgument("polynomial degree override must be in [1, 30], got " + std::to_string(*o.poly_degree));
}

void validate_points(ConstMatrixView<double> a, const char* what, const std::array<double, 3>& box) {
  if (a.rows == 0) throw InvalidArgument(std::string(what) + ": no points (N = 0)");
  if (a.cols != 3)
    throw InvalidArgument(std::string(what) + " must have shape (N,3), got (" + std::to_string(a.rows) + "," +
                          std::to_string(a.cols) + ")");
  if (!a.data) throw InvalidArgument(std::string(what) + ": null data");
  require_finite(a, what);
  for (int d = 0; d < 3; ++d) {
    const double lim = kMaxBoxLengthsFromBox * box[d];
    for (std::size_t i = 0; i < a.rows; ++i)
      if (!(std::abs(a(i, d)) <= lim))
        throw InvalidArgument(std::string(what) + ": coordinate " + "xyz"[d] + " of point " + std::to_string(i) + " is " +
                              num(a(i, d)) + ", more than " + num(kMaxBoxLengthsFromBox) + " box lengths (L" +
                              std::to_string(d + 1) + " = " + num(box[d]) +
                              ") from the box: in double precision its periodic position is not determined");
  }
}

void validate_strengths(Kernel k, ConstMatrixView<double> src, ConstMatrixView<double> q) {
  const std::size_t need = strength_components(k);
  if (!q.data || q.rows == 0) throw InvalidArgument("strengths: no values (N = 0)");
  if (q.cols != need)
    throw InvalidArgument("strengths for the " + to_string(k) + " kernel must have shape (N," + std::to_string(need) +
                          ")" + (need == 1 ? " or (N,)" : "") + ", got (" + std::to_string(q.rows) + "," +
                          std::to_string(q.cols) + ")");
  if (q.rows != src.rows)
    throw InvalidArgument("number of strengths (" + std::to_string(q.rows) + ") does not match number of sources (" +
                          std::to_string(src.rows) + ")");
  require_finite(q, "strengths");
}

}  // namespace

EwaldPlan::EwaldPlan(const Options& opts) : impl_(std::make_unique<Impl>()) {
  validate_options(opts);
  auto& I = *impl_;
  I.user = opts;
  I.opt = opts;
  const double Lmax = std::max({opts.box[0], opts.box[1], opts.box[2]});
  if (Lmax > 0x1p20 || Lmax < 0x1p-20) I.ls = std::ldexp(1.0, std::ilogb(Lmax));
  for (double& L : I.opt.box) L /= I.ls;
  if (I.opt.xi) *I.opt.xi *= I.ls;
  if (I.opt.rc) *I.opt.rc /= I.ls;
  I.threads = opts.threads > 0 ? opts.threads : omp_get_max_threads();
}
EwaldPlan::~EwaldPlan() = default;
EwaldPlan::EwaldPlan(EwaldPlan&&) noexcept = default;
EwaldPlan& EwaldPlan::operator=(EwaldPlan&&) noexcept = default;

const Options& EwaldPlan::options() const { return impl_->user; }
const Params& EwaldPlan::params() const { return impl_->reported; }
void EwaldPlan::retune() { impl_->tuned = false; }

double EwaldPlan::Impl::density(ConstMatrixView<double> src, ConstMatrixView<double> q,
                                const ConstMatrixView<double>* trg) const {
  // Effective strength density seen by the targets: sum |q|^2 per coarse cell (about 8 sources
  // per cell on average), averaged over the targets' cells; never below the mean Q/V.
  const auto& L = opt.box;
  const double V = L[0] * L[1] * L[2];
  const std::size_t N = src.rows;
  double Q = 0;
  for (std::size_t i = 0; i < q.size(); ++i) Q += q.data[i] * q.data[i];
  const double target_cells = std::max(1.0, double(N) / 8.0);
  const double cw = std::cbrt(V / target_cells);
  std::array<int, 3> n;
  for (int d = 0; d < 3; ++d) n[d] = std::clamp(static_cast<int>(L[d] / cw), 1, 256);
  const std::size_t nc = std::size_t(n[0]) * n[1] * n[2];
  std::vector<double> cell(nc, 0.0);
  auto index = [&](const double* x) {
    std::size_t c = 0;
    for (int d = 0; d < 3; ++d) {
      c = c * n[d] + cell_index(wrap_into_box(x[d], L[d]), n[d] / L[d], n[d]);
    }
    return c;
  };
  const int cq = int(q.cols);
  for (std::size_t i = 0; i < N; ++i) {
    double s = 0;
    for (int c = 0; c < cq; ++c) s += q(i, c) * q(i, c);
    cell[index(src.data + 3 * i)] += s;
  }
  const double cellvol = V / double(nc);
  const ConstMatrixView<double>& t = trg ? *trg : src;
  double acc = 0;
  for (std::size_t i = 0; i < t.rows; ++i) acc += cell[index(t.data + 3 * i)] / cellvol;
  return std::max(acc / double(t.rows), Q / V);
}

// P2G: spreading into a padded, component-interleaved grid pad[px][py][pz][c] with
// px = j + P (no periodic wrap in the inner loops, so they vectorise), then folding the padding
// back periodically into the FFT input grid (component-major, M1 x M2 x M3 each).
// Threads: sources are grouped in slabs of W >= P padded x-planes; a source in slab s writes planes
// [sW, (s+1)W + P - 1), so slabs of one parity never overlap and run concurrently.
void EwaldPlan::Impl::p2g(const Params& p, const Window& w, const CellList& cl, const std::vector<double>& qs) {
  const int P = p.P, nc = cin();
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {M[0] + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  pad.assign(std::size_t(PM[0]) * S1, 0.0);
  const std::size_t N = cl.x.size();
  const double inv_h[3] = {1.0 / p.h[0], 1.0 / p.h[1], 1.0 / p.h[2]};
  // Window offsets of every source: j0 (padded) and fractional position s.
  std::vector<int> j0(3 * N);
  std::vector<double> frac(3 * N);
  const double* pos[3] = {cl.x.data(), cl.y.data(), cl.z.data()};
  for (std::size_t i = 0; i < N; ++i)
    for (int d = 0; d < 3; ++d) window_offset(pos[d][i], inv_h[d], M[d], P, j0[3 * i + d], frac[3 * i + d]);
  const int span = M[0] + P;  // range of padded j0 in x
  int nslab = threads > 1 ? std::max(1, span / P) : 1;
  const int W = (span + nslab - 1) / nslab;
  std::vector<int> slab_start(nslab + 1, 0), order(N);
  for (std::size_t i = 0; i < N; ++i) slab_start[std::min(j0[3 * i] / W, nslab - 1) + 1]++;
  for (int s = 0; s < nslab; ++s) slab_start[s + 1] += slab_start[s];
  {
    std::vector<int> fill(slab_start.begin(), slab_start.end() - 1);
    for (std::size_t i = 0; i < N; ++i) order[fill[std::min(j0[3 * i] / W, nslab - 1)]++] = static_cast<int>(i);
  }
  double* pg = pad.data();
  const int ncol = nslab > 1 ? 2 : 1;
  for (int colour = 0; colour < ncol; ++colour) {
#pragma omp parallel num_threads(threads)
    {
      // Fixed-size scratch (P <= kMaxWindowSupport, nc <= kMaxComponents): nothing in the region
      // allocates, so nothing can throw.
      double wx[kMaxWindowSupport], wy[kMaxWindowSupport], wz[kMaxWindowSupport];
      double qz[kMaxWindowSupport * kMaxComponents];
#pragma omp for schedule(dynamic, 1)
      for (int s = colour; s < nslab; s += ncol) {
        for (int o = slab_start[s]; o < slab_start[s + 1]; ++o) {
          const int i = order[o];
          w.weights(frac[3 * i], wx);
          w.weights(frac[3 * i + 1], wy);
          w.weights(frac[3 * i + 2], wz);
          const double* qi = qs.data() + std::size_t(i) * nc;
          for (int m = 0; m < P; ++m)
            for (int c = 0; c < nc; ++c) qz[m * nc + c] = wz[m] * qi[c];
          const int L = P * nc;
          double* base = pg + std::size_t(j0[3 * i]) * S1 + std::size_t(j0[3 * i + 1]) * S2 +
                         std::size_t(j0[3 * i + 2]) * nc;
          for (int mx = 0; mx < P; ++mx)
            for (int my = 0; my < P; ++my) {
              double* row = base + mx * S1 + my * S2;
              const double wxy = wx[mx] * wy[my];
#pragma omp simd
              for (int t = 0; t < L; ++t) row[t] += wxy * qz[t];
            }
        }
      }
    }
  }
  // Fold: grid[c][(px-P) mod M1][(py-P) mod M2][(pz-P) mod M3] += pad[px][py][pz][c].
  const std::size_t nreal = fft.nreal();
  double* g = fft.real;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int ix = 0; ix < M[0]; ++ix) {
    for (int c = 0; c < nc; ++c) std::fill(g + nreal * c + std::size_t(ix) * M[1] * M[2],
                                           g + nreal * c + std::size_t(ix + 1) * M[1] * M[2], 0.0);
    for (int px = ix + P - M[0] * ((ix + P) / M[0]); px < PM[0]; px += M[0]) {
      for (int py = 0; py < PM[1]; ++py) {
        const int iy = ((py - P) % M[1] + M[1]) % M[1];
        const double* src = pg + std::size_t(px) * S1 + std::size_t(py) * S2;
        for (int c = 0; c < nc; ++c) {
          double* dst = g + nreal * c + (std::size_t(ix) * M[1] + iy) * M[2];
          for (int pz = 0; pz < PM[2]; ++pz) {
            int iz = pz - P;
            if (iz < 0) iz += M[2];
            else if (iz >= M[2]) iz -= M[2];
            if (iz < 0 || iz >= M[2]) iz = ((pz - P) % M[2] + M[2]) % M[2];
            dst[iz] += src[std::size_t(pz) * nc + c];
          }
        }
      }
    }
  }
}

void EwaldPlan::Impl::cnv(const Params& p) {
  // Diagonal convolution over the half spectrum: X(k) = c G_hat(k) H_hat(k) / w_hat(k)^2 with
  // c = (h1 h2 h3)^2 / V (P2G and G2P approximate integrals by grid sums), k = 0 set to zero.
  const int M1 = p.grid[0], M2 = p.grid[1], M3 = p.grid[2], M3h = M3 / 2 + 1;
  const auto& L = opt.box;
  const double V = L[0] * L[1] * L[2];
  const double scale = std::pow(p.h[0] * p.h[1] * p.h[2], 2) / V;
  const double xi2i = 1.0 / (4.0 * p.xi * p.xi);
  std::vector<double> kv[3], iw2[3];
  const int Ms[3] = {M1, M2, M3};
  for (int d = 0; d < 3; ++d) {
    const int n = d == 2 ? M3h : Ms[d];
    kv[d].resize(n);
    iw2[d].resize(n);
    const double a = 0.5 * p.P * p.h[d];
    for (int i = 0; i < n; ++i) {
      const int fi = (d < 2 && i > Ms[d] / 2) ? i - Ms[d] : i;
      kv[d][i] = 2 * kPi / L[d] * fi;
      const double wh = window_hat(kv[d][i], a, p.beta);
      iw2[d][i] = 1.0 / (wh * wh);
    }
  }
  const std::size_t ncplx = fft.ncplx();
  fftw_complex* X = fft.cplx;
  const bool stokes = opt.kernel == Kernel::Stokeslet;
  const bool field = opt.compute_field;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int i = 0; i < M1; ++i) {
    const double k1 = kv[0][i];
    const bool nyq1 = (M1 % 2 == 0) && i == M1 / 2;
    for (int j = 0; j < M2; ++j) {
      const double k2 = kv[1][j];
      const bool nyq2 = (M2 % 2 == 0) && j == M2 / 2;
      for (int l = 0; l < M3h; ++l) {
        const std::size_t idx = (std::size_t(i) * M2 + j) * M3h + l;
        const double k3 = kv[2][l];
        const double ksq = k1 * k1 + k2 * k2 + k3 * k3;
        if (ksq == 0.0) {
          for (int c = 0; c < cout(); ++c) X[idx + c * ncplx][0] = X[idx + c * ncplx][1] = 0.0;
          continue;
        }
        const double e = std::exp(-ksq * xi2i);
        const double wfac = scale * iw2[0][i] * iw2[1][j] * iw2[2][l];
        if (!stokes) {
          const double g = 4 * kPi * e / ksq * wfac;
          const double re = X[idx][0] * g, im = X[idx][1] * g;
          X[idx][0] = re;
          X[idx][1] = im;
          if (field) {
            // E = -grad phi: multiply by -i k (odd derivative: Nyquist modes dropped).
            const double kk[3] = {nyq1 ? 0.0 : k1, nyq2 ? 0.0 : k2, (M3 % 2 == 0 && l == M3 / 2) ? 0.0 : k3};
            for (int d = 0; d < 3; ++d) {
              X[idx + (d + 1) * ncplx][0] = kk[d] * im;
              X[idx + (d + 1) * ncplx][1] = -kk[d] * re;
            }
          }
        } else {
          // B(k) f = 8 pi (1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)} (k^2 f - k (k.f)) / k^4
          const double b = 8 * kPi * (1 + ksq * xi2i) * e / (ksq * ksq) * wfac;
          const double kk[3] = {k1, k2, k3};
          double fr[3], fi[3];
          for (int c = 0; c < 3; ++c) {
            fr[c] = X[idx + c * ncplx][0];
            fi[c] = X[idx + c * ncplx][1];
          }
          const double kfr = k1 * fr[0] + k2 * fr[1] + k3 * fr[2];
          const double kfi = k1 * fi[0] + k2 * fi[1] + k3 * fi[2];
          for (int c = 0; c < 3; ++c) {
            X[idx + c * ncplx][0] = b * (ksq * fr[c] - kk[c] * kfr);
            X[idx + c * ncplx][1] = b * (ksq * fi[c] - kk[c] * kfi);
          }
        }
      }
    }
  }
}

// G2P: the IFFT output is unfolded into the padded, component-interleaved grid, then every target
// gathers its P^3 neighbourhood with contiguous (vectorisable) rows.
void EwaldPlan::Impl::g2p(const Params& p, const Window& w, const CellList& cl, std::vector<double>& acc) {
  const int P = p.P, nc = cout();
  const int M[3] = {p.grid[0], p.grid[1], p.grid[2]};
  const int PM[3] = {M[0] + 2 * P, M[1] + 2 * P, M[2] + 2 * P};
  const std::size_t S2 = std::size_t(PM[2]) * nc, S1 = std::size_t(PM[1]) * S2;
  pad.resize(std::size_t(PM[0]) * S1);
  const std::size_t nreal = fft.nreal();
  const double* g = fft.real;
  double* pg = pad.data();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int px = 0; px < PM[0]; ++px) {
    const int ix = ((px - P) % M[0] + M[0]) % M[0];
    for (int py = 0; py < PM[1]; ++py) {
      const int iy = ((py - P) % M[1] + M[1]) % M[1];
      double* dst = pg + std::size_t(px) * S1 + std::size_t(py) * S2;
      for (int c = 0; c < nc; ++c) {
        const double* src = g + nreal * c + (std::size_t(ix) * M[1] + iy) * M[2];
        for (int pz = 0; pz < PM[2]; ++pz) {
          const int iz = ((pz - P) % M[2] + M[2]) % M[2];
          dst[std::size_t(pz) * nc + c] = src[iz];
        }
      }
    }
  }
  const double inv_h[3] = {1.0 / p.h[0], 1.0 / p.h[1], 1.0 / p.h[2]};
  const long N = static_cast<long>(cl.x.size());
#pragma omp parallel num_threads(threads)
  {
    // Fixed-size scratch, as in P2G: nothing in the region allocates.
    double wx[kMaxWindowSupport], wy[kMaxWindowSupport], wz[kMaxWindowSupport];
    double wze[kMaxWindowSupport * kMaxComponents], sum[kMaxWindowSupport * kMaxComponents];
#pragma omp for schedule(static)
    for (long i = 0; i < N; ++i) {
      const double pos[3] = {cl.x[i], cl.y[i], cl.z[i]};
      int j0[3];
      double* wts[3] = {wx, wy, wz};
      for (int d = 0; d < 3; ++d) {
        double s = 0;
        window_offset(pos[d], inv_h[d], M[d], P, j0[d], s);
        w.weights(s, wts[d]);
      }
      const int L = P * nc;
      for (int m = 0; m < P; ++m)
        for (int c = 0; c < nc; ++c) wze[m * nc + c] = wz[m];
      std::fill(sum, sum + L, 0.0);
      const double* base = pg + std::size_t(j0[0]) * S1 + std::size_t(j0[1]) * S2 + std::size_t(j0[2]) * nc;
      for (int mx = 0; mx < P; ++mx)
        for (int my = 0; my < P; ++my) {
          const double* row = base + mx * S1 + my * S2;
          const double wxy = wx[mx] * wy[my];
#pragma omp simd
          for (int t = 0; t < L; ++t) sum[t] += wxy * row[t];
        }
      for (int c = 0; c < nc; ++c) {
        double s = 0;
        for (int m = 0; m < P; ++m) s += sum[m * nc + c] * wze[m * nc + c];
        acc[std::size_t(i) * nc + c] += s;
      }
    }
  }
}

void EwaldPlan::Impl::compute(const Params& p, const Window& w, ConstMatrixView<double> src,
                              ConstMatrixView<double> q, const ConstMatrixView<double>* trg, std::vector<double>& out,
                              StageTimes& times) {
  const int ci = cin(), co = cout();
  CellList scl, tcl;
  std::vector<double> qs;
  {
    ScopedStage st(times, "setup");
    scl = build_cells(src, opt.box, p.cells);
    if (trg) tcl = build_cells(*trg, opt.box, p.cells);
    qs.resize(src.rows * ci);
    for (std::size_t s = 0; s < src.rows; ++s)
      for (int c = 0; c < ci; ++c) qs[s * ci + c] = q.data[std::size_t(scl.perm[s]) * ci + c];
    {
      // FFT grids (real + half-spectrum, max(cin, cout) components) and the padded P2G/G2P grid.
      const double m = double(p.grid[0]) * p.grid[1] * p.grid[2], nc = std::max(ci, co);
      const double padded = double(p.grid[0] + 2 * p.P) * (p.grid[1] + 2 * p.P) * (p.grid[2] + 2 * p.P) * nc;
      require_memory(8.0 * m * nc + 16.0 * (m / p.grid[2]) * (p.grid[2] / 2 + 1) * nc + 8.0 * padded,
                     "the FFT grids (M = " + std::to_string(p.grid[0]) + " x " + std::to_string(p.grid[1]) + " x " +
                         std::to_string(p.grid[2]) + ")");
    }
    fft.ensure(p.grid, ci, co, threads);
  }
  const CellList& tc = trg ? tcl : scl;
  std::vector<double> acc;
  {
    ScopedStage st(times, "P2P");
    p2p(opt.kernel, opt.compute_field, scl, qs, tc, p.xi, p.rc, opt.box, threads, acc);
  }
  {
    ScopedStage st(times, "P2G");
    p2g(p, w, scl, qs);
  }
  {
    ScopedStage st(times, "FFT");
    fftw_execute(fft.fwd);
  }
  {
    ScopedStage st(times, "CNV");
    cnv(p);
  }
  {
    ScopedStage st(times, "IFFT");
    fftw_execute(fft.bwd);
  }
  {
    ScopedStage st(times, "G2P");
    g2p(p, w, tc, acc);
  }
  {
    ScopedStage st(times, "self");
    const std::size_t nt = tc.x.size();
    if (!trg) {  // own periodic images beyond r_c (see self_images)
      double C[9];
      self_images(opt.kernel, p.xi, p.rc, opt.box, C);
      for (std::size_t t = 0; t < nt; ++t) {
        if (opt.kernel == Kernel::Laplace) {
          acc[t * co] += C[0] * qs[t];
        } else {
          const double* f = &qs[t * 3];
          for (int i = 0; i < 3; ++i) acc[t * co + i] += C[3 * i] * f[0] + C[3 * i + 1] * f[1] + C[3 * i + 2] * f[2];
        }
      }
    }
    out.assign(nt * co, 0.0);
    double shift = 0, scale = 1;
    if (opt.kernel == Kernel::Laplace) {
      double Qtot = 0;
      for (std::size_t s = 0; s < src.rows; ++s) Qtot += q.data[s];
      const auto& L = opt.box;
      shift = -kPi * Qtot / (p.xi * p.xi * L[0] * L[1] * L[2]);  // neutralising background
    } else {
      scale = 1.0 / (8 * kPi * opt.viscosity);
    }
    for (std::size_t t = 0; t < nt; ++t) {
      const std::size_t o = std::size_t(tc.perm[t]) * co;
      for (int c = 0; c < co; ++c) out[o + c] = acc[t * co + c] * scale;
      if (opt.kernel == Kernel::Laplace) out[o] += shift;
    }
  }
}

void EwaldPlan::Impl::tune(ConstMatrixView<double> src, ConstMatrixView<double> q, const ConstMatrixView<double>* trg,
                           StageTimes& times) {
  ScopedStage st(times, "tune");
  const bool stokes = opt.kernel == Kernel::Stokeslet;
  // Work in the kernel's raw units (no 1/(8 pi mu) for the stokeslet).
  const double unit = stokes ? 1.0 / (8 * kPi * opt.viscosity) : 1.0;
  TuneInput in;
  in.kernel = opt.kernel;
  in.box = opt.box;
  in.n_sources = src.rows;
  in.n_targets = trg ? trg->rows : src.rows;
  in.q2_density = density(src, q, trg);
  if (!trg) {
    double q2 = 0;
    for (std::size_t i = 0; i < q.size(); ++i) q2 += q.data[i] * q.data[i];
    in.self_q2 = q2 / double(src.rows);
  }
  in.field = opt.compute_field;
  in.threads = threads;
  in.overrides = &opt;
  auto finish = [&](Params p, double rms_phi) {
    const double poly_target = std::clamp(0.05 * in.eps_phi / std::max(rms_phi / unit, in.eps_phi), 1e-16, 1e-3);
    window = make_window(p.P, p.beta, opt.poly_degree ? *opt.poly_degree : 0, poly_target);
    if (opt.poly_degree && window.max_poly_error > std::max(poly_target, 1e-14))
      throw NumericalError("polynomial degree override nu = " + std::to_string(*opt.poly_degree) +
                           " approximates the window with error " + num(window.max_poly_error) + ", above the " +
                           num(poly_target) + " that the tolerance needs; raise it or leave it automatic");
    p.poly_degree = window.degree;
    p.eps_abs *= unit;
    p.est_real *= unit;
    p.est_fourier *= unit;
    p.est_window *= unit;
    p.est_total *= unit;
    return p;
  };
  double result_rms = 0, field_rms = 0;
  if (opt.tolerance_kind == ToleranceKind::Absolute) {
    in.eps_phi = opt.tolerance / unit / qscale * ls;
    in.eps_field = opt.tolerance / qscale * ls * ls;
    params = finish(choose_params(in), typical_magnitude(in.kernel, false, in.q2_density, in.box, in.n_sources) * unit);
  } else {
    // Pilot: a low-accuracy evaluation measures the RMS of the result, which turns the relative
    // tolerance into an absolute one.
    const double u0 = typical_magnitude(in.kernel, false, in.q2_density, in.box, in.n_sources);
    const double e0 = typical_magnitude(in.kernel, true, in.q2_density, in.box, in.n_sources);
    // Tolerances above 1e-2 are met as 1e-2 (the error estimates are asymptotic forms).
    const double pilot_rel = std::clamp(opt.tolerance, 1e-3, 1e-2);
    in.eps_phi = pilot_rel * u0;
    in.eps_field = pilot_rel * e0;
    Params pilot = finish(choose_params(in), u0 * unit);
    std::vector<double> out;
    StageTimes pt;
    compute(pilot, window, src, q, trg, out, pt);
    const int co = cout();
    const double rphi = rms(out, co, 0, stokes ? 3 : 1);
    const double rfield = opt.compute_field ? rms(out, co, 1, 3) : 0.0;
    result_rms = rphi;
    field_rms = rfield;
    const double eps = std::min(opt.tolerance, 1e-2);
    in.eps_phi = eps * (rphi > 0 ? rphi / unit : u0);
    in.eps_field = eps * (rfield > 0 ? rfield : e0);
    params = finish(choose_params(in), rphi);
  }
  // Overrides can make the tolerance unreachable: say so instead of returning a poor result.
  const bool any_override = opt.xi || opt.rc || opt.grid || opt.window_support || opt.window_shape;
  if (any_override && (params.est_total > params.eps_abs * (1 + 1e-9) ||
                       (opt.compute_field && params.field_est_total > params.field_eps_abs * (1 + 1e-9)))) {
    std::ostringstream os;
    const double u = qscale / ls;  // back to the caller's units
    os << "the parameter overrides cannot meet the tolerance: estimated RMS error " << params.est_total * u
       << " (real space " << params.est_real * u << ", Fourier " << params.est_fourier * u << ", window "
       << params.est_window * u << ") exceeds the target " << params.eps_abs * u << " with xi = " << params.xi / ls
       << ", rc = " << params.rc * ls << ", M = " << params.grid[0] << "x" << params.grid[1]
       << "x" << params.grid[2] << ", P = " << params.P << "; remove or change an override, or loosen the tolerance";
    throw NumericalError(os.str());
  }
  params.result_rms = result_rms;
  params.field_rms = field_rms;
  params.est_relative = result_rms > 0 ? params.est_total / result_rms : 0.0;
  tuned = true;
  tuned_scale = qscale;
  tuned_ns = in.n_sources;
  tuned_nt = in.n_targets;
  tuned_q2 = in.q2_density;
}

const Params& EwaldPlan::tune(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                              std::optional<ConstMatrixView<double>> targets) {
  validate_points(sources, "sources", impl_->user.box);
  if (targets) validate_points(*targets, "targets", impl_->user.box);
  validate_strengths(impl_->opt.kernel, sources, strengths);
  std::vector<double> qv, sbuf, tbuf;
  if (!impl_->scale_strengths(strengths, qv))
    throw InvalidArgument("strengths are all zero: there is nothing to tune for");
  const ConstMatrixView<double> src = impl_->scale_lengths(sources, sbuf);
  ConstMatrixView<double> tv;
  if (targets) tv = impl_->scale_lengths(*targets, tbuf);
  StageTimes t;
  impl_->tune(src, ConstMatrixView<double>(qv.data(), strengths.rows, strengths.cols), targets ? &tv : nullptr, t);
  impl_->report();
  return impl_->reported;
}

ConstMatrixView<double> EwaldPlan::Impl::scale_lengths(ConstMatrixView<double> a, std::vector<double>& buf) const {
  if (ls == 1.0) return a;
  buf.resize(a.size());
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = a.data[i] / ls;  // a power of two: exact
  return {buf.data(), a.rows, a.cols};
}

bool EwaldPlan::Impl::scale_strengths(ConstMatrixView<double> q_in, std::vector<double>& qv) {
  // The sum is linear in the strengths: work with strengths of size ~1 (a power-of-two scale, so
  // exact), which keeps sums of squares and grid values far from under- and overflow.
  double qmax = 0;
  for (std::size_t i = 0; i < q_in.size(); ++i) qmax = std::max(qmax, std::abs(q_in.data[i]));
  if (qmax == 0) return false;
  qscale = std::ldexp(1.0, std::ilogb(qmax));
  qv.resize(q_in.size());
  for (std::size_t i = 0; i < qv.size(); ++i) qv[i] = q_in.data[i] / qscale;
  return true;
}

void EwaldPlan::Impl::report() {
  // Back to the caller's units: strengths (qscale) and lengths (ls; potential and velocity scale
  // as 1/length, the field as 1/length^2).
  reported = params;
  for (double* v : {&reported.eps_abs, &reported.result_rms, &reported.est_real, &reported.est_fourier,
                    &reported.est_window, &reported.est_total})
    *v *= qscale / ls;
  for (double* v : {&reported.field_eps_abs, &reported.field_rms, &reported.field_est_total}) *v *= qscale / (ls * ls);
  reported.xi /= ls;
  reported.rc *= ls;
  for (double& h : reported.h) h *= ls;
}


Result EwaldPlan::Impl::evaluate(ConstMatrixView<double> src_in, ConstMatrixView<double> q_in,
                                 const ConstMatrixView<double>* trg_in) {
  validate_points(src_in, "sources", user.box);
  if (trg_in) validate_points(*trg_in, "targets", user.box);
  validate_strengths(opt.kernel, src_in, q_in);
  std::vector<double> sbuf, tbuf;
  const ConstMatrixView<double> src = scale_lengths(src_in, sbuf);
  ConstMatrixView<double> tv;
  if (trg_in) tv = scale_lengths(*trg_in, tbuf);
  const ConstMatrixView<double>* trg = trg_in ? &tv : nullptr;
  Result r;
  const std::size_t nt = trg ? trg->rows : src.rows;
  const bool stokes = opt.kernel == Kernel::Stokeslet;
  r.values = Array2D(nt, stokes ? 3 : 1, stokes ? 2 : 1);
  if (opt.compute_field) r.field = Array2D(nt, 3);
  std::vector<double> qv;
  if (!scale_strengths(q_in, qv)) {  // all strengths zero: the sum is zero
    r.params = reported;
    return r;
  }
  const ConstMatrixView<double> q(qv.data(), q_in.rows, q_in.cols);
  if (tuned) {
    const double qd = density(src, q, trg);
    const auto ratio = [](double a, double b) { return std::max(a, b) / std::max(std::min(a, b), 1e-300); };
    if (ratio(double(src.rows), double(tuned_ns)) > 2.0 || ratio(double(nt), double(tuned_nt)) > 2.0 ||
        ratio(qd, tuned_q2) > 4.0 ||
        (opt.tolerance_kind == ToleranceKind::Absolute && ratio(qscale, tuned_scale) > 1.5))
      tuned = false;
  }
  if (!tuned) tune(src, q, trg, r.times);
  report();  // parameters in the caller's units
  std::vector<double> out;
  compute(params, window, src, q, trg, out, r.times);
  const int co = cout();
  const double u = qscale / ls, uf = qscale / (ls * ls);  // back to the caller's units
  for (std::size_t t = 0; t < nt; ++t) {
    if (stokes) {
      for (int c = 0; c < 3; ++c) r.values.values[t * 3 + c] = out[t * co + c] * u;
    } else {
      r.values.values[t] = out[t * co] * u;
      if (opt.compute_field)
        for (int c = 0; c < 3; ++c) r.field.values[t * 3 + c] = out[t * co + 1 + c] * uf;
    }
  }
  for (const Array2D* a : {&r.values, &r.field})
    for (std::size_t i = 0; i < a->values.size(); ++i)
      if (!std::isfinite(a->values[i]))
        throw NumericalError("the result contains a non-finite value (at target " + std::to_string(i / a->cols) +
                             "); the strengths or the parameter overrides are out of range");
  r.params = reported;
  return r;
}

Result EwaldPlan::evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths) {
  return impl_->evaluate(sources, strengths, nullptr);
}

Result EwaldPlan::evaluate(ConstMatrixView<double> sources, ConstMatrixView<double> strengths,
                           ConstMatrixView<double> targets) {
  return impl_->evaluate(sources, strengths, &targets);
}

}  // namespace elliptica::ewald
