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

int strength_components(RefKernel k) {
  switch (k) {
    case RefKernel::Laplace: return 1;
    case RefKernel::Stokeslet: return 3;
    case RefKernel::Stresslet: return 6;
    case RefKernel::StokesCombined: return 9;
  }
  throw std::invalid_argument("strength_components: unknown kernel");
}

RefResult direct_ewald(const RefOptions& opt, const std::vector<double>& sources,
                       const std::vector<double>& strengths, const std::vector<double>* targets) {
  // Which parts are summed: the stokeslet (f at column fo) and the stresslet (q at column qo,
  // nu at qo + 3) are accumulated separately (different prefactors) and added at the end.
  const bool laplace = opt.kernel == RefKernel::Laplace;
  const bool stokes = opt.kernel == RefKernel::Stokeslet || opt.kernel == RefKernel::StokesCombined;
  const bool stress = opt.kernel == RefKernel::Stresslet || opt.kernel == RefKernel::StokesCombined;
  const int sc = strength_components(opt.kernel);
  const int oc = laplace ? 1 : 3;  // output components
  const std::size_t fo = 0, qo = opt.kernel == RefKernel::StokesCombined ? 3 : 0;
  if (sources.empty() || sources.size() % 3 != 0)
    throw std::invalid_argument("direct_ewald: sources must be a non-empty multiple of 3 values");
  const std::size_t ns = sources.size() / 3;
  if (strengths.size() != ns * static_cast<std::size_t>(sc))
    throw std::invalid_argument("direct_ewald: strengths must have " + std::to_string(ns * sc) + " values");
  const std::vector<double>& tg = targets ? *targets : sources;
  if (tg.empty() || tg.size() % 3 != 0)
    throw std::invalid_argument("direct_ewald: targets must be a non-empty multiple of 3 values");
  if (opt.field && !laplace) throw std::invalid_argument("direct_ewald: field only for Laplace");
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

  // val: Laplace potential or stokeslet sum (no 1/(8 pi mu)); vdl: stresslet sum (no 1/(8 pi)).
  std::vector<ld> val(laplace || stokes ? nt * oc : 0, 0.0L);
  std::vector<ld> vdl(stress ? nt * 3 : 0, 0.0L);
  std::vector<ld> fld(opt.field ? nt * 3 : 0, 0.0L);
  const auto sw = [&](std::size_t n, std::size_t col) -> ld { return strengths[n * sc + col]; };

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
              // (the stresslet has none: its Fourier-space kernel is smooth and odd, zero at 0)
              if (stokes) {
                for (int a = 0; a < 3; ++a) val[3 * m + a] -= 2 * two_xi_sqrtpi * sw(n, fo + a);
              } else if (laplace) {
                val[m] -= two_xi_sqrtpi * sw(n, 0);
              }
              continue;
            }
            const ld rr = std::sqrt(r2);
            const ld ec = std::erfc(xi * rr);
            const ld ex = std::exp(-xi * xi * r2);
            const ld g = two_xi_sqrtpi * ex;
            if (stokes) {
              const ld fx = sw(n, fo), fy = sw(n, fo + 1), fz = sw(n, fo + 2);
              const ld c1 = ec / rr - g;
              const ld c2 = (ec / rr + g) / r2;
              const ld rf = r[0] * fx + r[1] * fy + r[2] * fz;
              val[3 * m + 0] += c1 * fx + c2 * rf * r[0];
              val[3 * m + 1] += c1 * fy + c2 * rf * r[1];
              val[3 * m + 2] += c1 * fz + c2 * rf * r[2];
            }
            if (stress) {
              const ld q[3] = {sw(n, qo), sw(n, qo + 1), sw(n, qo + 2)};
              const ld nu[3] = {sw(n, qo + 3), sw(n, qo + 4), sw(n, qo + 5)};
              const ld A = -2 / (r2 * r2) * (3 * ec / rr + g * (3 + 2 * xi * xi * r2));
              const ld B = 2 * xi * xi * g;  // 4 xi^3/sqrt(pi) e^{-xi^2 r^2}
              const ld rq = r[0] * q[0] + r[1] * q[1] + r[2] * q[2];
              const ld rn = r[0] * nu[0] + r[1] * nu[1] + r[2] * nu[2];
              const ld qn = q[0] * nu[0] + q[1] * nu[1] + q[2] * nu[2];
              for (int a = 0; a < 3; ++a)
                vdl[3 * m + a] += A * rq * rn * r[a] + B * (qn * r[a] + rn * q[a] + rq * nu[a]);
            }
            if (laplace) {
              const ld q = sw(n, 0);
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
  std::vector<Cx> ps12(ns), pt12(nt), ps(ns);
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
        for (std::size_t j = 0; j < ns; ++j) ps[j] = mul(ps12[j], ts[2].at(j, n2));  // e^{+ik.y}
        if (stokes || stress) {
          // G[a]: the k-th Fourier coefficient of the velocity, doubled for the -k partner
          // (real part of G e^{ikx} taken below). Gs: stokeslet, Gd: stresslet.
          Cx Gs[3], Gd[3];
          if (stokes) {
            // F(k) = sum_n f_n e^{-ik.y_n}
            Cx F[3];
            for (std::size_t j = 0; j < ns; ++j)
              for (int a = 0; a < 3; ++a) {
                const ld f = sw(j, fo + a);
                F[a].re += f * ps[j].re;
                F[a].im -= f * ps[j].im;
              }
            // G = B(k) F = coef (k^2 F - k (k.F))
            const ld coef = 2 * 8 * kPi * (1 + k2 / (4 * xi * xi)) * gauss / (k2 * k2) / V;
            const Cx kF = {kv[0] * F[0].re + kv[1] * F[1].re + kv[2] * F[2].re,
                           kv[0] * F[0].im + kv[1] * F[1].im + kv[2] * F[2].im};
            for (int a = 0; a < 3; ++a)
              Gs[a] = {coef * (k2 * F[a].re - kv[a] * kF.re), coef * (k2 * F[a].im - kv[a] * kF.im)};
          }
          if (stress) {
            // F_lm(k) = sum_n q_{n,l} nu_{n,m} e^{-ik.y_n}
            Cx F[3][3];
            for (std::size_t j = 0; j < ns; ++j)
              for (int l = 0; l < 3; ++l) {
                const ld ql = sw(j, qo + l);
                for (int mm = 0; mm < 3; ++mm) {
                  const ld w = ql * sw(j, qo + 3 + mm);
                  F[l][mm].re += w * ps[j].re;
                  F[l][mm].im -= w * ps[j].im;
                }
              }
            // P_j = -(k_m F_jm + k_m F_mj + k_j F_mm) k^2 + 2 k_j k_l k_m F_lm
            Cx trF, kFk;
            for (int l = 0; l < 3; ++l) {
              trF.re += F[l][l].re;
              trF.im += F[l][l].im;
              for (int mm = 0; mm < 3; ++mm) {
                kFk.re += kv[l] * kv[mm] * F[l][mm].re;
                kFk.im += kv[l] * kv[mm] * F[l][mm].im;
              }
            }
            // G = 2 (+i) c P / V, c = (-8 pi/k^4)(1 + k^2/(4 xi^2)) e^{-k^2/(4 xi^2)}
            const ld c = -2 * 8 * kPi * (1 + k2 / (4 * xi * xi)) * gauss / (k2 * k2) / V;
            for (int a = 0; a < 3; ++a) {
              Cx P;
              for (int mm = 0; mm < 3; ++mm) {
                P.re -= (kv[mm] * (F[a][mm].re + F[mm][a].re)) * k2;
                P.im -= (kv[mm] * (F[a][mm].im + F[mm][a].im)) * k2;
              }
              P.re += -kv[a] * trF.re * k2 + 2 * kv[a] * kFk.re;
              P.im += -kv[a] * trF.im * k2 + 2 * kv[a] * kFk.im;
              Gd[a] = {-c * P.im, c * P.re};  // i c P
            }
          }
          for (std::size_t m = 0; m < nt; ++m) {
            const Cx e = mul(pt12[m], tt[2].at(m, n2));
            if (stokes)
              for (int a = 0; a < 3; ++a) val[3 * m + a] += Gs[a].re * e.re - Gs[a].im * e.im;
            if (stress)
              for (int a = 0; a < 3; ++a) vdl[3 * m + a] += Gd[a].re * e.re - Gd[a].im * e.im;
          }
        } else {
          Cx S;
          for (std::size_t j = 0; j < ns; ++j) {
            const ld q = sw(j, 0);
            S.re += q * ps[j].re;
            S.im -= q * ps[j].im;
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
  if (laplace) {
    ld Q = 0;
    for (double q : strengths) Q += q;
    const ld shift = -kPi * Q / (xi * xi * V);
    for (auto& v : val) v += shift;
  }
  res.values.assign(nt * oc, 0.0);
  const ld scale = laplace ? 1 : 1 / (8 * kPi * static_cast<ld>(opt.viscosity));
  const ld scale_dl = 1 / (8 * kPi);
  for (std::size_t i = 0; i < res.values.size(); ++i) {
    ld v = 0;
    if (!val.empty()) v += val[i] * scale;
    if (!vdl.empty()) v += vdl[i] * scale_dl;
    res.values[i] = static_cast<double>(v);
  }
  res.field.resize(fld.size());
  for (std::size_t i = 0; i < fld.size(); ++i) res.field[i] = static_cast<double>(fld[i]);
  return res;
}

SphereQuadrature sphere_quadrature(int n_theta, int n_phi, double radius, std::array<double, 3> centre) {
  if (n_theta < 1 || n_phi < 1)
    throw std::invalid_argument("sphere_quadrature: n_theta and n_phi must be >= 1");
  if (!(radius > 0) || !std::isfinite(radius))
    throw std::invalid_argument("sphere_quadrature: radius must be positive and finite");
  // Gauss-Legendre on [-1,1]: Newton on P_n from the Chebyshev-like initial guess, in long double.
  const int nt = n_theta;
  std::vector<ld> t(nt), wt(nt);
  for (int i = 0; i < (nt + 1) / 2; ++i) {
    ld x = std::cos(kPi * (i + 0.75L) / (nt + 0.5L));
    ld dp = 0;
    for (int it = 0; it < 100; ++it) {
      ld p0 = 1, p1 = x;  // P_0, P_1
      for (int k = 2; k <= nt; ++k) {
        const ld p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      // p1 = P_n(x), p0 = P_{n-1}(x); P_n' = n (x P_n - P_{n-1}) / (x^2 - 1)
      dp = nt * (x * p1 - p0) / (x * x - 1);
      const ld dx = p1 / dp;
      x -= dx;
      if (std::fabs(dx) < 1e-19L) break;
    }
    {  // derivative at the converged node
      ld p0 = 1, p1 = x;
      for (int k = 2; k <= nt; ++k) {
        const ld p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = nt * (x * p1 - p0) / (x * x - 1);
    }
    const ld w = 2 / ((1 - x * x) * dp * dp);
    t[i] = x;
    t[nt - 1 - i] = -x;
    wt[i] = wt[nt - 1 - i] = w;
  }
  if (nt % 2 == 1) t[nt / 2] = 0;  // exact middle node
  SphereQuadrature q;
  const std::size_t n = static_cast<std::size_t>(n_theta) * static_cast<std::size_t>(n_phi);
  q.nodes.resize(3 * n);
  q.normals.resize(3 * n);
  q.weights.resize(n);
  const ld R = radius;
  const ld dphi = 2 * kPi / n_phi;
  for (int i = 0; i < n_theta; ++i) {
    const ld ct = t[i], st = std::sqrt((1 - t[i]) * (1 + t[i]));
    for (int j = 0; j < n_phi; ++j) {
      const ld ph = dphi * j;
      const ld nv[3] = {st * std::cos(ph), st * std::sin(ph), ct};
      const std::size_t r = static_cast<std::size_t>(i) * n_phi + j;
      for (int a = 0; a < 3; ++a) {
        q.normals[3 * r + a] = static_cast<double>(nv[a]);
        q.nodes[3 * r + a] = static_cast<double>(centre[a] + R * nv[a]);
      }
      q.weights[r] = static_cast<double>(R * R * wt[i] * dphi);
    }
  }
  return q;
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
