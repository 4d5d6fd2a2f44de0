// Kaiser-Bessel window and its piecewise-polynomial approximation (see internal.hpp).
#include <cmath>
#include <functional>
#include <mutex>
#include <stdexcept>

#include "elliptica/core/error.hpp"
#include "ewald/internal.hpp"

namespace elliptica::ewald::detail {

namespace {
double bessel_i0(double x) { return std::cyl_bessel_i(0.0, x); }
}  // namespace

double Window::exact(double u) const {
  if (u < -1.0 || u > 1.0) return 0.0;
  return bessel_i0(beta * std::sqrt(std::max(0.0, 1.0 - u * u))) / bessel_i0(beta);
}

double window_hat(double k, double a, double beta) { return 2.0 * a / bessel_i0(beta) * window_hat_shape(k, a, beta); }

double window_hat_shape(double k, double a, double beta) {
  const double ka = k * a;
  const double d = beta * beta - ka * ka;
  const double norm = 1.0;
  if (d > 1e-12) {
    const double s = std::sqrt(d);
    return norm * std::sinh(s) / s;
  }
  if (d < -1e-12) {
    const double s = std::sqrt(-d);
    return norm * std::sin(s) / s;
  }
  return norm;
}

namespace {

// Chebyshev interpolation of f on [-1,1] at degree n, converted to monomial coefficients.
// cos(pi i (j + 1/2) / npts) for i, j < npts (Chebyshev nodes and the discrete cosine transform).
const std::vector<double>& cheb_cos(int npts) {
  static std::vector<std::vector<double>> tables(64);
  static std::mutex m;
  std::lock_guard<std::mutex> lk(m);
  auto& t = tables.at(npts);
  if (t.empty()) {
    t.resize(std::size_t(npts) * npts);
    for (int i = 0; i < npts; ++i)
      for (int j = 0; j < npts; ++j) t[std::size_t(i) * npts + j] = std::cos(kPi * i * (j + 0.5) / npts);
  }
  return t;
}

}  // namespace

std::vector<double> chebyshev_monomial(const std::function<double(double)>& f, double a, double b, int n) {
  const int npts = n + 1;
  const std::vector<double>& cs = cheb_cos(npts);
  std::vector<double> fv(npts), c(npts, 0.0);
  for (int j = 0; j < npts; ++j) fv[j] = f(0.5 * (a + b) + 0.5 * (b - a) * cs[std::size_t(npts) + j]);
  for (int i = 0; i < npts; ++i) {
    double s = 0;
    for (int j = 0; j < npts; ++j) s += fv[j] * cs[std::size_t(i) * npts + j];
    c[i] = (i == 0 ? 1.0 : 2.0) * s / npts;
  }
  // T_i in monomials via T_{i+1} = 2t T_i - T_{i-1}.
  std::vector<double> mono(npts, 0.0), tprev(npts, 0.0), tcur(npts, 0.0), tnext(npts, 0.0);
  tprev[0] = 1.0;  // T0
  mono[0] += c[0];
  if (n >= 1) {
    tcur[1] = 1.0;  // T1
    mono[1] += c[1];
  }
  for (int i = 1; i < n; ++i) {
    for (int d = 0; d < npts; ++d) tnext[d] = -tprev[d] + (d > 0 ? 2.0 * tcur[d - 1] : 0.0);
    for (int d = 0; d < npts; ++d) mono[d] += c[i + 1] * tnext[d];
    tprev.swap(tcur);
    tcur.swap(tnext);
  }
  return mono;
}

namespace {

Window build(int P, double beta, int degree) {
  Window w;
  w.P = P;
  w.beta = beta;
  w.degree = degree;
  w.coef.assign(static_cast<std::size_t>(degree + 1) * P, 0.0);
  const double half = 0.5 * P;
  for (int m = 0; m < P; ++m) {
    // s = (x + 1)/2, z/h = m + 1 - P/2 - s, u = z / (P/2)
    auto f = [&](double x) {
      const double s = 0.5 * (x + 1.0);
      return w.exact((m + 1 - half - s) / half);
    };
    std::vector<double> mono = chebyshev_monomial(f, -1.0, 1.0, degree);
    for (int d = 0; d <= degree; ++d) w.coef[static_cast<std::size_t>(d) * P + m] = mono[d];
  }
  // Measure the approximation error.
  std::vector<double> vals(P);
  double err = 0;
  const int ns = 64;
  for (int i = 0; i <= ns; ++i) {
    const double s = std::min(i / double(ns), 1.0 - 1e-15);
    w.weights(s, vals.data());
    for (int m = 0; m < P; ++m) err = std::max(err, std::abs(vals[m] - w.exact((m + 1 - half - s) / half)));
  }
  w.max_poly_error = err;
  return w;
}

}  // namespace

Window make_window(int P, double beta, int degree, double target) {
  if (P < 2 || P > 32) throw InvalidArgument("window support P must be in [2, 32], got " + std::to_string(P));
  if (!(beta > 0) || !std::isfinite(beta)) throw InvalidArgument("window shape beta must be positive");
  if (degree > 0) return build(P, beta, degree);
  Window best;
  for (int d = 3; d <= 24; ++d) {
    best = build(P, beta, d);
    if (best.max_poly_error <= target) return best;
  }
  return best;
}

}  // namespace elliptica::ewald::detail
