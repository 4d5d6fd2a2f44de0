// Classical Ewald sum used as the independent reference of the test suite (see direct_ewald.hpp).
#include "reference/direct_ewald.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace elliptica::testref {
namespace {

using ld = long double;
constexpr ld kPi = 3.141592653589793238462643383279502884L;

struct Cx {
  ld re = 0, im = 0;
};
inline Cx mul(Cx a, Cx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

/// Wraps x into [0, L).
double wrap(double x, double L) {
  double y = x - L * std::floor(x / L);
  if (y >= L) y -= L;
  if (y < 0) y = 0;
  return y;
}

/// Per point and axis, e^{i n (2 pi / L) x} for n = -nmax..nmax, each evaluated directly in long
/// double (no recurrence, so no accumulated rounding).
struct PhaseTable {
  int nmax = 0;
  std::size_t n_points = 0;
  std::vector<Cx> t;  // [point][n + nmax]
  void build(const std::vector<double>& xw, std::size_t npts, int axis, double L, int nm) {
    nmax = nm;
    n_points = npts;
    const std::size_t w = 2 * static_cast<std::size_t>(nm) + 1;
    t.assign(npts * w, Cx{});
    const ld k0 = 2 * kPi / static_cast<ld>(L);
    for (std::size_t j = 0; j < npts; ++j) {
      const ld x = xw[3 * j + axis];
      for (int n = -nm; n <= nm; ++n) {
        const ld a = k0 * n * x;
        t[j * w + static_cast<std::size_t>(n + nm)] = {std::cos(a), std::sin(a)};
      }
    }
  }
  const Cx& at(std::size_t j, int n) const {
    return t[j * (2 * static_cast<std::size_t>(nmax) + 1) + static_cast<std::size_t>(n + nmax)];
  }
};

}  // namespace

double balanced_xi(std::size_t ns, std::size_t nt, const std::array<double, 3>& box) {
  const double V = box[0] * box[1] * box[2];
  const double pi = static_cast<double>(kPi);
  const double a = 2.0 * pi * pi * pi * static_cast<double>(ns) * static_cast<double>(nt) /
                   (static_cast<double>(ns + nt) * V * V);
  return std::pow(a, 1.0 / 6.0);
}

RefResult direct_ewald(const RefOptions& opt, const std::vector<double>& sources,
                       const std::vector<double>& strengths, const std::vector<double>* targets) {
  const bool stokes = opt.kernel == RefKernel::Stokeslet;
  const int sc = stokes ? 3 : 1;
  if (sources.empty() || sources.size() % 3 != 0)
    throw std::invalid_argument("direct_ewald: sources must be a non-empty multiple of 3 values");
  const std::size_t ns = sources.size() / 3;
  if (strengths.size() != ns * static_cast<std::size_t>(sc))
    throw std::invalid_argument("direct_ewald: strengths must have " + std::to_string(ns * sc) + " values");
  const std::vector<double>& tg = targets ? *targets : sources;
  if (tg.empty() || tg.size() % 3 != 0)
    throw std::invalid_argument("direct_ewald: targets must be a non-empty multiple of 3 values");
  if (opt.field && stokes) throw std::invalid_argument("direct_ewald: field only for Laplace");
  for (double L : opt.box)
    if (!(L > 0) || !std::isfinite(L)) throw std::invalid_argument("direct_ewald: bad box");
  const std::size_t nt = tg.size() / 3;

  const auto& L = opt.box;
  const ld V = static_cast<ld>(L[0]) * L[1] * L[2];

  RefResult res;
  res.xi = opt.xi > 0 ? opt.xi : balanced_xi(ns, nt, L);
  res.rc = opt.c / res.xi;
  res.kc = 2.0 * opt.c * res.xi;
  const ld xi = res.xi;
  const ld rc2 = static_cast<ld>(res.rc) * res.rc;
  const ld kc2 = static_cast<ld>(res.kc) * res.kc;
  const ld two_xi_sqrtpi = 2 * xi / std::sqrt(kPi);

  std::vector<double> yw(3 * ns), xw(3 * nt);
  for (std::size_t j = 0; j < ns; ++j)
    for (int a = 0; a < 3; ++a) yw[3 * j + a] = wrap(sources[3 * j + a], L[a]);
  for (std::size_t j = 0; j < nt; ++j)
    for (int a = 0; a < 3; ++a) xw[3 * j + a] = wrap(tg[3 * j + a], L[a]);

  std::vector<ld> val(nt * sc, 0.0L);
  std::vector<ld> fld(opt.field ? nt * 3 : 0, 0.0L);

  // ---- real space (+ self term when a target coincides with a source) ----
  for (std::size_t m = 0; m < nt; ++m) {
    for (std::size_t n = 0; n < ns; ++n) {
      ld d[3];
      int plo[3], phh[3];
      for (int a = 0; a < 3; ++a) {
        d[a] = static_cast<ld>(xw[3 * m + a]) - static_cast<ld>(yw[3 * n + a]);
        plo[a] = static_cast<int>(std::ceil((-res.rc - static_cast<double>(d[a])) / L[a])) - 1;
        phh[a] = static_cast<int>(std::floor((res.rc - static_cast<double>(d[a])) / L[a])) + 1;
      }
      for (int p0 = plo[0]; p0 <= phh[0]; ++p0)
        for (int p1 = plo[1]; p1 <= phh[1]; ++p1)
          for (int p2 = plo[2]; p2 <= phh[2]; ++p2) {
            const ld r[3] = {d[0] + static_cast<ld>(p0) * L[0], d[1] + static_cast<ld>(p1) * L[1],
                             d[2] + static_cast<ld>(p2) * L[2]};
            const ld r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
            if (r2 > rc2) continue;
            if (r2 == 0) {  // excluded singular term: subtract the Gaussian's self contribution
              if (stokes) {
                for (int a = 0; a < 3; ++a) val[3 * m + a] -= 2 * two_xi_sqrtpi * strengths[3 * n + a];
              } else {
                val[m] -= two_xi_sqrtpi * strengths[n];
              }
              continue;
            }
            const ld rr = std::sqrt(r2);
            const ld ec = std::erfc(xi * rr);
            const ld g = two_xi_sqrtpi * std::exp(-xi * xi * r2);
            if (stokes) {
              const ld fx = strengths[3 * n], fy = strengths[3 * n + 1], fz = strengths[3 * n + 2];
              const ld c1 = ec / rr - g;
              const ld c2 = (ec / rr + g) / r2;
              const ld rf = r[0] * fx + r[1] * fy + r[2] * fz;
              val[3 * m + 0] += c1 * fx + c2 * rf * r[0];
              val[3 * m + 1] += c1 * fy + c2 * rf * r[1];
              val[3 * m + 2] += c1 * fz + c2 * rf * r[2];
            } else {
              const ld q = strengths[n];
              val[m] += q * ec / rr;
              if (opt.field) {
                const ld c2 = (ec / rr + g) / r2;
                for (int a = 0; a < 3; ++a) fld[3 * m + a] += q * c2 * r[a];
              }
            }
          }
    }
  }

  // ---- Fourier space: half space of k (k and -k give complex-conjugate terms) ----
  int nmax[3];
  for (int a = 0; a < 3; ++a) nmax[a] = static_cast<int>(std::floor(res.kc * L[a] / (2 * M_PI)));
  PhaseTable ts[3], tt[3];
  for (int a = 0; a < 3; ++a) {
    ts[a].build(yw, ns, a, L[a], nmax[a]);
    tt[a].build(xw, nt, a, L[a], nmax[a]);
  }
  const ld k0[3] = {2 * kPi / L[0], 2 * kPi / L[1], 2 * kPi / L[2]};
  std::vector<Cx> ps12(ns), pt12(nt);
  for (int n0 = 0; n0 <= nmax[0]; ++n0) {
    for (int n1 = -nmax[1]; n1 <= nmax[1]; ++n1) {
      if (n0 == 0 && n1 < 0) continue;
      const ld k01 = (k0[0] * n0) * (k0[0] * n0) + (k0[1] * n1) * (k0[1] * n1);
      if (k01 > kc2) continue;
      for (std::size_t j = 0; j < ns; ++j) ps12[j] = mul(ts[0].at(j, n0), ts[1].at(j, n1));
      for (std::size_t j = 0; j < nt; ++j) pt12[j] = mul(tt[0].at(j, n0), tt[1].at(j, n1));
      for (int n2 = -nmax[2]; n2 <= nmax[2]; ++n2) {
        if (n0 == 0 && n1 == 0 && n2 <= 0) continue;
        const ld kv[3] = {k0[0] * n0, k0[1] * n1, k0[2] * n2};
        const ld k2 = k01 + kv[2] * kv[2];
        if (k2 > kc2) continue;
        ++res.n_kvectors;
        const ld gauss = std::exp(-k2 / (4 * xi * xi));
        if (stokes) {
          // F(k) = sum_n f_n e^{-ik.y_n}
          Cx F[3];
          for (std::size_t j = 0; j < ns; ++j) {
            const Cx e = mul(ps12[j], ts[2].at(j, n2));  // e^{+ik.y}
            for (int a = 0; a < 3; ++a) {
              const ld f = strengths[3 * j + a];
              F[a].re += f * e.re;
              F[a].im -= f * e.im;
            }
          }
          // G = B(k) F = coef (k^2 F - k (k.F))
          const ld coef = 2 * 8 * kPi * (1 + k2 / (4 * xi * xi)) * gauss / (k2 * k2) / V;
          const Cx kF = {kv[0] * F[0].re + kv[1] * F[1].re + kv[2] * F[2].re,
                         kv[0] * F[0].im + kv[1] * F[1].im + kv[2] * F[2].im};
          Cx G[3];
          for (int a = 0; a < 3; ++a)
            G[a] = {coef * (k2 * F[a].re - kv[a] * kF.re), coef * (k2 * F[a].im - kv[a] * kF.im)};
          for (std::size_t m = 0; m < nt; ++m) {
            const Cx e = mul(pt12[m], tt[2].at(m, n2));
            for (int a = 0; a < 3; ++a) val[3 * m + a] += G[a].re * e.re - G[a].im * e.im;
          }
        } else {
          Cx S;
          for (std::size_t j = 0; j < ns; ++j) {
            const Cx e = mul(ps12[j], ts[2].at(j, n2));
            const ld q = strengths[j];
            S.re += q * e.re;
            S.im -= q * e.im;
          }
          const ld coef = 2 * 4 * kPi * gauss / k2 / V;
          for (std::size_t m = 0; m < nt; ++m) {
            const Cx e = mul(pt12[m], tt[2].at(m, n2));
            const Cx se = mul(S, e);
            val[m] += coef * se.re;
            if (opt.field)
              for (int a = 0; a < 3; ++a) fld[3 * m + a] += coef * kv[a] * se.im;
          }
        }
      }
    }
  }

  // ---- background (Laplace, non-neutral) and normalisation ----
  if (!stokes) {
    ld Q = 0;
    for (double q : strengths) Q += q;
    const ld shift = -kPi * Q / (xi * xi * V);
    for (auto& v : val) v += shift;
  }
  const ld scale = stokes ? 1 / (8 * kPi * static_cast<ld>(opt.viscosity)) : 1;
  res.values.resize(val.size());
  for (std::size_t i = 0; i < val.size(); ++i) res.values[i] = static_cast<double>(val[i] * scale);
  res.field.resize(fld.size());
  for (std::size_t i = 0; i < fld.size(); ++i) res.field[i] = static_cast<double>(fld[i]);
  return res;
}

std::string to_string(Distribution d) {
  switch (d) {
    case Distribution::Uniform: return "uniform";
    case Distribution::Clustered: return "clustered";
    case Distribution::Surface: return "surface";
  }
  return "?";
}

std::vector<double> make_points(Distribution d, std::size_t n, const std::array<double, 3>& box,
                                std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::normal_distribution<double> G(0.0, 1.0);
  std::vector<double> x(3 * n);
  const double Lmin = std::min(box[0], std::min(box[1], box[2]));
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case Distribution::Uniform:
        for (int a = 0; a < 3; ++a) x[3 * i + a] = U(gen) * box[a];
        break;
      case Distribution::Clustered:
        for (int a = 0; a < 3; ++a) x[3 * i + a] = 0.5 * box[a] + 0.1 * box[a] * G(gen);
        break;
      case Distribution::Surface: {
        double v[3], nv = 0;
        do {
          nv = 0;
          for (double& c : v) {
            c = G(gen);
            nv += c * c;
          }
        } while (nv < 1e-12);
        nv = std::sqrt(nv);
        for (int a = 0; a < 3; ++a) x[3 * i + a] = 0.5 * box[a] + 0.3 * Lmin * v[a] / nv;
        break;
      }
    }
  }
  return x;
}

std::vector<double> make_strengths(std::size_t n, int comps, std::uint64_t seed, bool neutral) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<double> s(n * static_cast<std::size_t>(comps));
  for (double& v : s) v = U(gen);
  if (neutral) {
    for (int c = 0; c < comps; ++c) {
      double mean = 0;
      for (std::size_t i = 0; i < n; ++i) mean += s[i * comps + c];
      mean /= static_cast<double>(n);
      for (std::size_t i = 0; i < n; ++i) s[i * comps + c] -= mean;
    }
  }
  return s;
}

double rms(const std::vector<double>& a) {
  long double s = 0;
  for (double v : a) s += static_cast<long double>(v) * v;
  return a.empty() ? 0.0 : static_cast<double>(std::sqrt(s / a.size()));
}

double rms_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("rms_diff: size mismatch");
  long double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const long double d = static_cast<long double>(a[i]) - b[i];
    s += d * d;
  }
  return a.empty() ? 0.0 : static_cast<double>(std::sqrt(s / a.size()));
}

double rel_rms_err(const std::vector<double>& a, const std::vector<double>& ref) {
  return rms_diff(a, ref) / rms(ref);
}

}  // namespace elliptica::testref
