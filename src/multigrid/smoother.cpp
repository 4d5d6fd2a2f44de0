/// @file smoother.cpp
/// Polynomial smoothers (seed 003 section 2; Lottes 2023). See smoother.hpp and smoother_detail.hpp.
#include "elliptica/multigrid/smoother.hpp"

// GCC 12 with -march=native (AVX-512) reports false -Wmaybe-uninitialized positives inside its own
// intrinsics headers when Eigen's packet code is inlined (the `__Y = __Y` idiom of
// _mm512_undefined_pd); silenced for this translation unit only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "elliptica/core/constants.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/text.hpp"
#include "elliptica/core/parallel.hpp"
#include "core/csr_kernels.hpp"
#include "elliptica/multigrid/hierarchy.hpp"
#include "multigrid/smoother_detail.hpp"

namespace elliptica::multigrid {

namespace {

// Lottes' optimal 4th-kind weights beta_1..beta_k for k = 1..16 (published table).
const std::vector<std::vector<double>>& betas_table() {
  static const std::vector<std::vector<double>> t = {
    {1.12500000000000},
    {1.02387287570313, 1.26408905371085},
    {1.00842544782028, 1.08867839208730, 1.33753125909618},
    {1.00391310427285, 1.04035811188593, 1.14863498546254, 1.38268869241000},
    {1.00212930146164, 1.02173711549260, 1.07872433192603, 1.19810065292663, 1.41322542791682},
    {1.00128517255940, 1.01304293035233, 1.04678215124113, 1.11616489419675, 1.23829020218444, 1.43524297106744},
    {1.00083464397912, 1.00843949430122, 1.03008707768713, 1.07408384092003, 1.15036186707366, 1.27116474046139, 1.45186658649364},
    {1.00057246631197, 1.00577427662415, 1.02050187922941, 1.05019803444565, 1.10115572984941, 1.18086042806856, 1.29838585382576, 1.46486073151099},
    {1.00040960072832, 1.00412439506106, 1.01460212148266, 1.03561113626671, 1.07139972529194, 1.12688273710962, 1.20785219140729, 1.32121930716746, 1.47529642820699},
    {1.00030312229652, 1.00304840660796, 1.01077022715387, 1.02619011597640, 1.05231724933755, 1.09255743207549, 1.15083376663972, 1.23172250870894, 1.34060802024460, 1.48386124407011},
    {1.00023058595209, 1.00231675024028, 1.00817245396304, 1.01982986566342, 1.03950210235324, 1.06965042700541, 1.11305754295742, 1.17290876275564, 1.25288300576792, 1.35725579919519, 1.49101672564139},
    {1.00017947200828, 1.00180189139619, 1.00634861907307, 1.01537864566306, 1.03056942830760, 1.05376019693943, 1.08699862592072, 1.13259183097913, 1.19316273358172, 1.27171293675110, 1.37169337969799, 1.49708418575562},
    {1.00014241921559, 1.00142906932629, 1.00503028986298, 1.01216910518495, 1.02414874342792, 1.04238158880820, 1.06842008128700, 1.10399010936759, 1.15102748242645, 1.21171811910125, 1.28854264865128, 1.38432619380991, 1.50229418757368},
    {1.00011490538261, 1.00115246376914, 1.00405357333264, 1.00979590573153, 1.01941300472994, 1.03401425035436, 1.05480599606629, 1.08311420301813, 1.12040891660892, 1.16833095655446, 1.22872122288238, 1.30365305707817, 1.39546814053678, 1.50681646209583},
    {1.00009404750752, 1.00094291696343, 1.00331449056444, 1.00800294833816, 1.01584236259140, 1.02772083317705, 1.04459535422831, 1.06750761206125, 1.09760092545889, 1.13613855366157, 1.18452361426236, 1.24432087304475, 1.31728069083392, 1.40536543893560, 1.51077872501845},
    {1.00007794828179, 1.00078126847253, 1.00274487974401, 1.00662291017015, 1.01309858836971, 1.02289448329337, 1.03678321409983, 1.05559875719896, 1.08024848405560, 1.11172607131497, 1.15112543431072, 1.19965584614973, 1.25865841744946, 1.32962412656664, 1.41421360695576, 1.51427891730346},
  };
  return t;
}

// p(l) = prod_j (1 - l / r_j).
double poly_from_roots(const std::vector<double>& roots, double l) {
  double p = 1.0;
  for (double r : roots) p *= 1.0 - l / r;
  return p;
}

// f(l) = l p^2 / (1 - p^2); +inf where |p| >= 1.
double gamma_integrand(const std::vector<double>& roots, double l) {
  const double p = poly_from_roots(roots, l);
  const double q = (1.0 - p) * (1.0 + p);
  if (!(q > 0.0)) return std::numeric_limits<double>::infinity();
  return l * p * p / q;
}

// max of f on [a, b] (sampling, then golden section around the best sample).
double interval_max(const std::vector<double>& roots, double a, double b) {
  if (!(b > a)) return 0.0;
  constexpr int ns = 32;
  double best = -1.0;
  int ib = 0;
  for (int i = 0; i <= ns; ++i) {
    const double l = a + (b - a) * i / ns;
    if (l <= 0.0) continue;
    const double f = gamma_integrand(roots, l);
    if (std::isinf(f)) return f;
    if (f > best) {
      best = f;
      ib = i;
    }
  }
  double lo = a + (b - a) * std::max(ib - 1, 0) / ns;
  double hi = a + (b - a) * std::min(ib + 1, ns) / ns;
  if (lo <= 0.0) lo = 1e-3 * (hi - lo);
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = gamma_integrand(roots, x1), f2 = gamma_integrand(roots, x2);
  for (int it = 0; it < 200 && hi - lo > 1e-14 * hi; ++it) {
    if (f1 < f2) {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = gamma_integrand(roots, x2);
    } else {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = gamma_integrand(roots, x1);
    }
  }
  return std::max({best, f1, f2});
}

// Local maxima of f on the k + 1 intervals cut by the roots in (0, 1]: M_0 on (0, r_1] (with the
// limit 1/(2|p'(0)|) at 0+), M_i on [r_i, r_{i+1}], M_k on [r_k, 1].
std::vector<double> local_maxima(const std::vector<double>& roots) {
  std::vector<double> br{0.0};
  for (double r : roots)
    if (r > 0.0 && r < 1.0) br.push_back(r);
  br.push_back(1.0);
  std::sort(br.begin(), br.end());
  double s = 0.0;
  for (double r : roots) s += 1.0 / r;
  std::vector<double> m;
  for (std::size_t i = 0; i + 1 < br.size(); ++i) m.push_back(interval_max(roots, br[i], br[i + 1]));
  m[0] = std::max(m[0], 0.5 / s);
  return m;
}

// 4th-kind error polynomials p_0..p_k at l (lmax = 1): W_i(1 - 2 l)/(2 i + 1).
std::vector<double> cheby4_polys(int k, double l) {
  const double x = 1.0 - 2.0 * l;
  std::vector<double> w(static_cast<std::size_t>(k) + 1);
  w[0] = 1.0;
  if (k >= 1) w[1] = 2.0 * x + 1.0;
  for (int i = 1; i < k; ++i) w[i + 1] = 2.0 * x * w[i] - w[i - 1];
  for (int i = 0; i <= k; ++i) w[i] /= (2.0 * i + 1.0);
  return w;
}

}  // namespace

namespace detail {

double two_level_gamma(const std::vector<double>& roots) {
  const auto m = local_maxima(roots);
  return *std::max_element(m.begin(), m.end());
}

std::vector<double> cheby1_roots(int k, double lmin) {
  const double theta = 0.5 * (1.0 + lmin), delta = 0.5 * (1.0 - lmin);
  std::vector<double> r(static_cast<std::size_t>(k));
  for (int j = 1; j <= k; ++j) r[j - 1] = theta - delta * std::cos((2.0 * j - 1.0) * kPi / (2.0 * k));
  std::sort(r.begin(), r.end());
  return r;
}

std::vector<double> cheby4_roots(int k) {
  std::vector<double> r(static_cast<std::size_t>(k));
  for (int j = 1; j <= k; ++j) {
    const double s = std::sin(j * kPi / (2.0 * k + 1.0));
    r[j - 1] = s * s;
  }
  return r;
}

double cheby4_poly(int k, double l) { return cheby4_polys(k, l)[k]; }

double cheby1_opt_lmin_ratio(int k) {
  if (k < 1) throw InvalidArgument("cheby1_opt_lmin_ratio: order k must be >= 1, got " + std::to_string(k));
  static std::mutex mu;
  static std::map<int, double> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(k);
    if (it != cache.end()) return it->second;
  }
  auto g = [k](double t) { return two_level_gamma(cheby1_roots(k, std::exp(t))); };
  // coarse scan in log(lmin) over [1e-4, 0.95], then golden section around the best sample
  const int ns = 60;
  const double t0 = std::log(1e-4), t1 = std::log(0.95);
  int ib = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i <= ns; ++i) {
    const double v = g(t0 + (t1 - t0) * i / ns);
    if (v < best) {
      best = v;
      ib = i;
    }
  }
  double lo = t0 + (t1 - t0) * std::max(ib - 1, 0) / ns, hi = t0 + (t1 - t0) * std::min(ib + 1, ns) / ns;
  const double gr = 0.5 * (std::sqrt(5.0) - 1.0);
  double x1 = hi - gr * (hi - lo), x2 = lo + gr * (hi - lo);
  double f1 = g(x1), f2 = g(x2);
  for (int it = 0; it < 200 && hi - lo > 1e-11; ++it) {
    if (f1 > f2) {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + gr * (hi - lo);
      f2 = g(x2);
    } else {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - gr * (hi - lo);
      f1 = g(x1);
    }
  }
  const double r = std::exp(0.5 * (lo + hi));
  std::lock_guard<std::mutex> lock(mu);
  cache[k] = r;
  return r;
}

std::vector<double> opt4_roots(int k) {
  if (k < 1) throw InvalidArgument("opt4_roots: order k must be >= 1, got " + std::to_string(k));
  // The optimum equioscillates: the k + 1 local maxima of l p^2/(1 - p^2) are equal. Newton (finite-
  // difference Jacobian) on F_i = log M_i - log M_0, i = 1..k, over the k roots, from the 4th kind.
  std::vector<double> r = cheby4_roots(k);
  auto residual = [](const std::vector<double>& x) {
    const auto m = local_maxima(x);
    Eigen::VectorXd F(static_cast<Eigen::Index>(x.size()));
    if (m.size() != x.size() + 1) {
      F.setConstant(std::numeric_limits<double>::infinity());
      return F;
    }
    for (std::size_t i = 1; i < m.size(); ++i) F[static_cast<Eigen::Index>(i - 1)] = std::log(m[i] / m[0]);
    return F;
  };
  auto valid = [](const std::vector<double>& x) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!(x[i] > 0.0 && x[i] < 1.0)) return false;
      if (i > 0 && !(x[i] > x[i - 1])) return false;
    }
    return true;
  };
  const Eigen::Index n = k;
  Eigen::VectorXd F = residual(r);
  for (int it = 0; it < 100 && F.lpNorm<Eigen::Infinity>() > 1e-14; ++it) {
    Eigen::MatrixXd J(n, n);
    for (Eigen::Index j = 0; j < n; ++j) {
      auto rp = r;
      const double h = 1e-7 * r[j];
      rp[j] += h;
      J.col(j) = (residual(rp) - F) / h;
    }
    const Eigen::VectorXd step = J.colPivHouseholderQr().solve(-F);
    double t = 1.0;
    bool accepted = false;
    for (int ls = 0; ls < 40; ++ls, t *= 0.5) {
      std::vector<double> rn = r;
      for (Eigen::Index j = 0; j < n; ++j) rn[j] += t * step[j];
      if (!valid(rn)) continue;
      const Eigen::VectorXd Fn = residual(rn);
      if (Fn.allFinite() && Fn.norm() < F.norm()) {
        r = rn;
        F = Fn;
        accepted = true;
        break;
      }
    }
    if (!accepted) break;
  }
  if (!(F.lpNorm<Eigen::Infinity>() < 1e-9))
    throw NumericalError("opt4_roots: Newton for the optimal order-" + std::to_string(k) +
                         " polynomial did not converge (residual " + std::to_string(F.lpNorm<Eigen::Infinity>()) + ")");
  return r;
}

std::vector<double> opt4_betas_computed(int k) {
  const auto r = opt4_roots(k);
  // collocation of 1 - p*(l) = sum_i beta_i (p_{i-1}(l) - p_i(l)) at k Chebyshev points of (0, 1)
  const Eigen::Index n = k;
  Eigen::MatrixXd M(n, n);
  Eigen::VectorXd rhs(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const double l = 0.5 * (1.0 - std::cos((2.0 * j + 1.0) * kPi / (2.0 * k)));
    const auto p = cheby4_polys(k, l);
    for (Eigen::Index i = 1; i <= n; ++i) M(j, i - 1) = p[i - 1] - p[i];
    rhs[j] = 1.0 - poly_from_roots(r, l);
  }
  const Eigen::VectorXd b = M.colPivHouseholderQr().solve(rhs);
  return std::vector<double>(b.data(), b.data() + n);
}

}  // namespace detail

std::vector<double> opt4_betas(int k) {
  if (k < 1) throw InvalidArgument("opt4_betas: order k must be >= 1, got " + std::to_string(k));
  const auto& t = betas_table();
  if (static_cast<std::size_t>(k) <= t.size()) return t[static_cast<std::size_t>(k) - 1];
  static std::mutex mu;
  static std::map<int, std::vector<double>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  auto b = detail::opt4_betas_computed(k);
  cache[k] = b;
  return b;
}

// ---------------------------------------------------------------------------------------------
// Smoother

struct Smoother::Impl {
  const CsrMatrix* A = nullptr;                 // the CSR matrix when there is one (fused sweeps, ASM/RAS)
  const LinearOperator<double>* op = nullptr;   // the operator (always set)
  std::unique_ptr<CsrOperator> own_op;          // op of the CsrMatrix constructor
  std::shared_ptr<const LinearOperator<double>> extS;  // an external base smoother S (matrix-free Schwarz)
  int nt = 1;                                   // resolved thread count
  SmootherOptions opt;
  std::size_t n = 0;
  std::vector<double> invdiag;                              // Jacobi
  std::vector<std::vector<std::int32_t>> sub;                 // ASM/RAS: subdomain unknowns (sorted)
  std::vector<std::vector<char>> owned;                       // RAS: owned (non-overlapping) part
  // Local factorisations, shared between subdomains with identical local matrices (e.g. the
  // interior boxes of a constant-coefficient operator): fact[sub_fact[q]] serves subdomain q.
  struct LocalSolver {
    Eigen::MatrixXd Aq;                        // kept to identify identical subdomain matrices
    Eigen::LLT<Eigen::MatrixXd> llt;           // SPD case
    Eigen::PartialPivLU<Eigen::MatrixXd> lu;   // used where Cholesky fails
    bool use_lu = false;
  };
  std::vector<LocalSolver> fact;
  std::vector<std::size_t> sub_fact;
  double lmax = 0.0;
  double cheby1_lmin = 0.0;  // Cheby1 (fixed ratio) lower bound
  mutable std::vector<double> res, d, z, t;
  mutable std::vector<double> coef_a, coef_c, coef_beta;  // recurrence coefficients of the last smooth()
  std::size_t maxm = 0;                                 // largest subdomain
  // Subdomains grouped so that the extended boxes within a group are disjoint (box-index parity
  // per axis, valid when subdomain > 2 overlap); ASM adds each group in parallel. One group
  // holding everything (serial ASM) otherwise.
  std::vector<std::vector<std::size_t>> groups;
  mutable std::vector<double> beta;  // Cheby4Opt weights of the last order used
  mutable int beta_k = 0;

  void setup(std::vector<double> diag, const GridShape& shape);
  void build_subdomains(const GridShape& shape);
  void apply_S(const double* r, double* zo) const;
  double estimate_lmax() const;
};

namespace {
void check_vec(const char* what, const double* p) {
  if (p == nullptr) throw InvalidArgument(std::string("Smoother: ") + what + " is a null pointer");
}
}  // namespace

void Smoother::Impl::build_subdomains(const GridShape& shape) {
  std::array<std::int64_t, 3> nn{static_cast<std::int64_t>(n), 1, 1};
  if (shape.dim != 0) {
    if (shape.dim < 1 || shape.dim > 3)
      throw InvalidArgument("Smoother: GridShape.dim must be 0, 1, 2 or 3, got " + std::to_string(shape.dim));
    std::int64_t prod = 1;
    for (int a = 0; a < 3; ++a) {
      nn[a] = a < shape.dim ? shape.n[a] : 1;
      if (nn[a] < 1) throw InvalidArgument("Smoother: GridShape.n[" + std::to_string(a) + "] must be >= 1");
      prod *= nn[a];
    }
    if (static_cast<std::size_t>(prod) != n)
      throw InvalidArgument("Smoother: GridShape has " + std::to_string(prod) + " points but the matrix has " +
                            std::to_string(n) + " rows");
  }
  const std::int64_t s = opt.subdomain, ov = opt.overlap;
  std::vector<int> colour;
  std::array<std::int64_t, 3> nb{};
  for (int a = 0; a < 3; ++a) nb[a] = nn[a] == 1 ? 1 : (nn[a] + s - 1) / s;
  auto lo = [&](int a, std::int64_t b) { return nn[a] == 1 ? std::int64_t{0} : b * s; };
  auto hi = [&](int a, std::int64_t b) { return nn[a] == 1 ? std::int64_t{1} : std::min(nn[a], (b + 1) * s); };
  for (std::int64_t bz = 0; bz < nb[2]; ++bz)
    for (std::int64_t by = 0; by < nb[1]; ++by)
      for (std::int64_t bx = 0; bx < nb[0]; ++bx) {
        const std::array<std::int64_t, 3> b{bx, by, bz};
        std::array<std::int64_t, 3> elo{}, ehi{}, olo{}, ohi{};
        for (int a = 0; a < 3; ++a) {
          olo[a] = lo(a, b[a]);
          ohi[a] = hi(a, b[a]);
          elo[a] = std::max<std::int64_t>(0, olo[a] - ov);
          ehi[a] = std::min<std::int64_t>(nn[a], ohi[a] + ov);
        }
        std::vector<std::int32_t> idx;
        std::vector<char> own;
        for (std::int64_t z3 = elo[2]; z3 < ehi[2]; ++z3)
          for (std::int64_t y = elo[1]; y < ehi[1]; ++y)
            for (std::int64_t x = elo[0]; x < ehi[0]; ++x) {
              idx.push_back(static_cast<std::int32_t>(x + nn[0] * (y + nn[1] * z3)));
              own.push_back(x >= olo[0] && x < ohi[0] && y >= olo[1] && y < ohi[1] && z3 >= olo[2] && z3 < ohi[2]);
            }
        sub.push_back(std::move(idx));
        owned.push_back(std::move(own));
        colour.push_back(static_cast<int>((bx & 1) | ((by & 1) << 1) | ((bz & 1) << 2)));
      }
  if (s > 2 * ov) {
    groups.assign(8, {});
    for (std::size_t q = 0; q < sub.size(); ++q) groups[static_cast<std::size_t>(colour[q])].push_back(q);
  } else {
    groups.assign(1, {});
    for (std::size_t q = 0; q < sub.size(); ++q) groups[0].push_back(q);
  }
  // dense local matrices, factorised once
  std::vector<std::int32_t> pos(n, -1);
  std::multimap<std::uint64_t, std::size_t> by_hash;  // hash of a local matrix -> index in fact
  sub_fact.resize(sub.size());
  std::size_t largest = 0;
  for (std::size_t q = 0; q < sub.size(); ++q) {
    const auto& idx = sub[q];
    const auto m = static_cast<Eigen::Index>(idx.size());
    largest = std::max(largest, idx.size());
    for (Eigen::Index i = 0; i < m; ++i) pos[idx[i]] = static_cast<std::int32_t>(i);
    Eigen::MatrixXd Aq = Eigen::MatrixXd::Zero(m, m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const std::int64_t row = idx[i];
      for (std::int64_t e = A->row_ptr[row]; e < A->row_ptr[row + 1]; ++e) {
        const std::int32_t c = pos[A->col[e]];
        if (c >= 0) Aq(i, c) += A->val[e];
      }
    }
    for (Eigen::Index i = 0; i < m; ++i) pos[idx[i]] = -1;
    std::uint64_t h = 1469598103934665603ULL ^ static_cast<std::uint64_t>(m);  // FNV-1a over the bytes
    const auto* bytes = reinterpret_cast<const unsigned char*>(Aq.data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(m * m) * sizeof(double); ++i) {
      h ^= bytes[i];
      h *= 1099511628211ULL;
    }
    bool found = false;
    for (auto [it, end] = by_hash.equal_range(h); it != end; ++it) {
      const auto& other = fact[it->second].Aq;
      if (other.rows() == m && other == Aq) {
        sub_fact[q] = it->second;
        found = true;
        break;
      }
    }
    if (found) continue;
    LocalSolver ls;
    ls.llt.compute(Aq);
    if (ls.llt.info() != Eigen::Success) {
      ls.use_lu = true;
      ls.lu.compute(Aq);
      const double det = ls.lu.determinant();
      if (!(std::abs(det) > 0.0) || !std::isfinite(det))
        throw NumericalError("Smoother: subdomain " + std::to_string(q) + " matrix is singular");
      ls.llt = Eigen::LLT<Eigen::MatrixXd>();
    }
    ls.Aq = std::move(Aq);
    sub_fact[q] = fact.size();
    by_hash.emplace(h, fact.size());
    fact.push_back(std::move(ls));
  }
  maxm = largest;
}

void Smoother::Impl::apply_S(const double* r, double* zo) const {
  if (extS) {
    extS->apply(r, zo);
    return;
  }
  const auto nn = static_cast<std::int64_t>(n);
  if (opt.base == BaseSmoother::Jacobi) {
#pragma omp parallel for schedule(static) num_threads(nt) if (nn > kParallelMinRows)
    for (std::int64_t i = 0; i < nn; ++i) zo[i] = invdiag[i] * r[i];
    return;
  }
  std::fill(zo, zo + n, 0.0);
  const bool ras = opt.base == BaseSmoother::RAS;
  // local solve of subdomain q, written (RAS: owned part) or added (ASM) into zo
  auto local = [&](std::size_t q, Eigen::VectorXd& lr_buf, Eigen::VectorXd& lz_buf) {
    const auto& idx = sub[q];
    const auto m = static_cast<Eigen::Index>(idx.size());
    auto lr = lr_buf.head(m);
    auto lz = lz_buf.head(m);
    for (Eigen::Index i = 0; i < m; ++i) lr[i] = r[idx[i]];
    const LocalSolver& ls = fact[sub_fact[q]];
    if (ls.use_lu)
      lz = ls.lu.solve(lr);
    else
      lz = ls.llt.solve(lr);
    if (ras) {
      const auto& own = owned[q];
      for (Eigen::Index i = 0; i < m; ++i)
        if (own[i]) zo[idx[i]] = lz[i];
    } else {
      for (Eigen::Index i = 0; i < m; ++i) zo[idx[i]] += lz[i];
    }
  };
  const auto M = static_cast<Eigen::Index>(maxm);
  const bool par = nn > kParallelMinRows;
  ParallelErrors errors;  // the per-thread buffers allocate: nothing may escape the regions
  // the local solves of the subdomains ids[0..count-1] (ids null: 0..count-1), in parallel when
  // in_parallel (each thread with its own buffers of maxm entries); rethrows the first failure.
  // (Not a generic lambda: clang 14 rejects an OpenMP region in one that uses outer locals.)
  auto solve_all = [&](std::int64_t count, bool in_parallel, const std::size_t* ids) {
#pragma omp parallel num_threads(nt) if (in_parallel)
    {
      Eigen::VectorXd lr, lz;
      errors.run([&] {
        lr.resize(M);
        lz.resize(M);
      });
#pragma omp for schedule(static)
      for (std::int64_t g = 0; g < count; ++g)
        errors.run([&] { local(ids != nullptr ? ids[g] : static_cast<std::size_t>(g), lr, lz); });
    }
    errors.rethrow();
  };
  if (ras) {  // owned parts are disjoint: all subdomains in parallel
    solve_all(static_cast<std::int64_t>(sub.size()), par, nullptr);
    return;
  }
  const bool par_groups = par && groups.size() > 1;
  for (const auto& grp : groups) solve_all(static_cast<std::int64_t>(grp.size()), par_groups, grp.data());
}

double Smoother::Impl::estimate_lmax() const {
  const int m = opt.lambda_iterations;
  // Work vectors: the smoother's own (res, d, z, t), allocated once by setup(): no fresh pages.
  std::vector<double>& v = res;
  std::vector<double>& w = z;
  std::vector<double>& q = t;
  const auto N = static_cast<std::int64_t>(n);
  const bool par = N > kParallelMinRows;
  {
    std::mt19937_64 gen(20230217ULL);
    std::uniform_real_distribution<double> U(-1.0, 1.0);
    for (auto& x : v) x = U(gen);
  }
  auto dot = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(nt) if (par)
    for (std::int64_t i = 0; i < N; ++i) s += a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)];
    return s;
  };
  // A breakdown of the Lanczos process below shows that A or S is not positive definite, or that
  // the matrix is not symmetric (Lanczos assumes it is): with the CSR matrix at hand, say which.
  auto breakdown = [&](const std::string& what) {
    if (A != nullptr) {
      const SymmetryReport sym = check_symmetry(*A);
      if (!sym.symmetric)
        throw InvalidArgument("Smoother: lambda_max estimate: " + describe_asymmetry(sym) +
                              "; the Lanczos estimate needs a symmetric positive definite matrix (give lambda_max, or "
                              "use base ras, whose estimate is Arnoldi's)");
    }
    throw NumericalError("Smoother: lambda_max estimate: " + what);
  };
  if (opt.base != BaseSmoother::RAS) {
    // Lanczos on S A in the S^{-1} inner product, run as PCG with preconditioner S (the CG
    // coefficients give the Lanczos tridiagonal matrix: Saad, Iterative Methods for Sparse Linear
    // Systems, 2nd ed., section 6.7.3). With Jacobi, S r is never stored: a step is three passes,
    // (1) q = A p with p.q, (2) r -= a q with r.(D^-1 r), (3) p = D^-1 r + b p.
    const bool jac = opt.base == BaseSmoother::Jacobi;
    const double* dinv = jac ? invdiag.data() : nullptr;
    double* r = v.data();
    double* zz = w.data();  // S r (ASM only)
    double* p = d.data();
    double* qq = jac ? z.data() : q.data();  // Jacobi: z is free (t is not allocated for a CSR level)
    double rz = 0.0;
    if (jac) {
#pragma omp parallel for schedule(static) reduction(+ : rz) num_threads(nt) if (par)
      for (std::int64_t i = 0; i < N; ++i) {
        const double zi = dinv[i] * r[i];
        p[i] = zi;
        rz += r[i] * zi;
      }
    } else {
      apply_S(r, zz);
      std::copy(zz, zz + n, p);
      rz = dot(v, w);
    }
    const double rz0 = rz;
    if (!(rz0 > 0.0))
      breakdown("the smoother S is not positive definite (r^T S r = " + std::to_string(rz0) +
                " for the start vector); the matrix is not symmetric positive definite");
    std::vector<double> alpha, beta;
    for (int j = 0; j < m && rz > 1e-28 * rz0; ++j) {
      double pq = 0.0;
      if (A != nullptr) {
        pq = elliptica::detail::row_sweep_sum(
            *A, [p](std::int64_t j) { return p[j]; },
            [p, qq](std::int64_t i, double s) {
              qq[i] = s;
              return p[i] * s;
            },
            nt);
      } else {
        op->apply(p, qq);
#pragma omp parallel for schedule(static) reduction(+ : pq) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < N; ++i) pq += p[i] * qq[i];
      }
      if (!(pq > 0.0)) breakdown("A is not positive definite (p^T A p <= 0)");
      const double a = rz / pq;
      double rzn = 0.0;
      if (jac) {
#pragma omp parallel for schedule(static) reduction(+ : rzn) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < N; ++i) {
          const double ri = r[i] - a * qq[i];
          r[i] = ri;
          rzn += ri * (dinv[i] * ri);
        }
      } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < N; ++i) r[i] -= a * qq[i];
        apply_S(r, zz);
        rzn = dot(v, w);
      }
      if (rzn < 0.0) breakdown("smoother S is not positive definite");
      const double b = rzn / rz;
      alpha.push_back(a);
      beta.push_back(b);
      if (jac) {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < N; ++i) p[i] = dinv[i] * r[i] + b * p[i];
      } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < N; ++i) p[i] = zz[i] + b * p[i];
      }
      rz = rzn;
    }
    const auto ms = static_cast<Eigen::Index>(alpha.size());
    if (ms == 0) throw NumericalError("Smoother: lambda_max estimate failed (zero start vector)");
    Eigen::MatrixXd T = Eigen::MatrixXd::Zero(ms, ms);
    for (Eigen::Index j = 0; j < ms; ++j) {
      T(j, j) = 1.0 / alpha[j] + (j > 0 ? beta[j - 1] / alpha[j - 1] : 0.0);
      if (j + 1 < ms) T(j, j + 1) = T(j + 1, j) = std::sqrt(beta[j]) / alpha[j];
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(T, Eigen::EigenvaluesOnly);
    return es.eigenvalues().maxCoeff();
  }
  // RAS: S A is not symmetric; Arnoldi (modified Gram-Schmidt), largest |Ritz value|.
  std::vector<std::vector<double>> V;
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(m + 1, m);
  double nv = std::sqrt(dot(v, v));
  for (auto& x : v) x /= nv;
  V.push_back(v);
  int ms = 0;
  for (int j = 0; j < m; ++j) {
    op->apply(V[j].data(), q.data());
    apply_S(q.data(), w.data());
    for (int i = 0; i <= j; ++i) {
      const double h = dot(V[i], w);
      H(i, j) = h;
      for (std::size_t l = 0; l < n; ++l) w[l] -= h * V[i][l];
    }
    ms = j + 1;
    const double hn = std::sqrt(dot(w, w));
    H(j + 1, j) = hn;
    if (hn < 1e-14) break;
    for (auto& x : w) x /= hn;
    V.push_back(w);
  }
  Eigen::EigenSolver<Eigen::MatrixXd> es(H.topLeftCorner(ms, ms), false);
  return es.eigenvalues().cwiseAbs().maxCoeff();
}

Smoother::Smoother(const CsrMatrix& A, const SmootherOptions& opt, const GridShape& shape)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  if (A.rows != A.cols)
    throw InvalidArgument("Smoother: matrix must be square, got " + std::to_string(A.rows) + " x " + std::to_string(A.cols));
  if (A.rows == 0) throw InvalidArgument("Smoother: matrix is empty");
  if (A.row_ptr.size() != A.rows + 1) throw InvalidArgument("Smoother: matrix row_ptr has the wrong size");
  if (opt.threads < 0) throw InvalidArgument("Smoother: threads must be >= 0, got " + std::to_string(opt.threads));
  I.A = &A;
  I.own_op = std::make_unique<CsrOperator>(A, opt.threads, true);
  I.op = I.own_op.get();
  I.opt = opt;
  I.n = A.rows;
  I.setup(A.diagonal(), shape);
}

Smoother::Smoother(const LinearOperator<double>& A, std::vector<double> diagonal, const SmootherOptions& opt,
                   const GridShape& shape)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  if (A.size() == 0) throw InvalidArgument("Smoother: operator is empty");
  if (diagonal.size() != A.size())
    throw InvalidArgument("Smoother: diagonal has length " + std::to_string(diagonal.size()) +
                          " but the operator has size " + std::to_string(A.size()));
  if (opt.threads < 0) throw InvalidArgument("Smoother: threads must be >= 0, got " + std::to_string(opt.threads));
  I.A = csr_of(A);
  if (I.A && (I.A->rows != A.size() || I.A->row_ptr.size() != I.A->rows + 1))
    throw InvalidArgument("Smoother: the operator's matrix is inconsistent");
  if (!I.A && opt.base != BaseSmoother::Jacobi)
    throw InvalidArgument("Smoother: ASM/RAS local solves need the level's CSR matrix; this operator is matrix-free "
                          "(use base jacobi)");
  I.op = &A;
  I.opt = opt;
  I.n = A.size();
  I.setup(std::move(diagonal), shape);
}

Smoother::Smoother(const LinearOperator<double>& A, std::shared_ptr<const LinearOperator<double>> S,
                   const SmootherOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  if (A.size() == 0) throw InvalidArgument("Smoother: operator is empty");
  if (!S) throw InvalidArgument("Smoother: the base smoother S is a null pointer");
  if (S->size() != A.size())
    throw InvalidArgument("Smoother: the base smoother S has size " + std::to_string(S->size()) +
                          " but the operator has size " + std::to_string(A.size()));
  if (opt.base == BaseSmoother::Jacobi)
    throw InvalidArgument("Smoother: an external base smoother S is a Schwarz method: give base asm (S symmetric) or "
                          "ras, not jacobi");
  if (opt.base == BaseSmoother::ASM && !S->is_symmetric())
    throw InvalidArgument("Smoother: base asm needs a symmetric S (the Lanczos estimate and PCG assume it); this S is "
                          "not symmetric: give base ras");
  if (opt.threads < 0) throw InvalidArgument("Smoother: threads must be >= 0, got " + std::to_string(opt.threads));
  I.A = csr_of(A);
  if (I.A && (I.A->rows != A.size() || I.A->row_ptr.size() != I.A->rows + 1))
    throw InvalidArgument("Smoother: the operator's matrix is inconsistent");
  I.op = &A;
  I.extS = std::move(S);
  I.opt = opt;
  I.n = A.size();
  I.setup({}, {});
}

void Smoother::Impl::setup(std::vector<double> dg, const GridShape& shape) {
  Impl& I = *this;
  I.nt = resolve_threads(opt.threads);
  if (opt.kind == Polynomial::Cheby1 && !(opt.lmin_ratio > 0.0 && opt.lmin_ratio < 1.0))
    throw InvalidArgument("Smoother: lmin_ratio must be in (0, 1), got " + std::to_string(opt.lmin_ratio));
  if (!(opt.lambda_safety > 0.0) || !std::isfinite(opt.lambda_safety))
    throw InvalidArgument("Smoother: lambda_safety must be positive, got " + std::to_string(opt.lambda_safety));
  if (opt.lambda_iterations < 1)
    throw InvalidArgument("Smoother: lambda_iterations must be >= 1, got " + std::to_string(opt.lambda_iterations));
  if (opt.lambda_max && !(*opt.lambda_max > 0.0 && std::isfinite(*opt.lambda_max)))
    throw InvalidArgument("Smoother: lambda_max override must be positive and finite");
  if (!(opt.omega >= 0.0) || !std::isfinite(opt.omega))
    throw InvalidArgument("Smoother: omega must be >= 0 (0 means 1/lambda_max), got " + std::to_string(opt.omega));
  // Chebyshev smoothing needs the spectrum of S A in (0, lambda_max] and the lambda_max estimate
  // runs Lanczos in the S^{-1} inner product: both fail for a non-positive diagonal entry.
  for (std::size_t i = 0; i < dg.size(); ++i)
    if (std::isfinite(dg[i]) && dg[i] < 0.0)
      throw InvalidArgument("Smoother: the matrix has a negative diagonal entry (row " + std::to_string(i) + ", 0-based: " +
                            text::shortest(dg[i]) + "); Chebyshev smoothing and PCG need a symmetric positive definite "
                            "matrix (for a negative definite system A x = b, solve -A x = -b)");
  if (I.extS) {
    // the external S: nothing to build
  } else if (opt.base == BaseSmoother::Jacobi) {
    I.invdiag = std::move(dg);  // the diagonal, inverted in place
    for (std::size_t i = 0; i < I.n; ++i) {
      if (!(I.invdiag[i] != 0.0) || !std::isfinite(I.invdiag[i]))
        throw InvalidArgument("Smoother: Jacobi needs a nonzero diagonal; row " + std::to_string(i) + " has " +
                              std::to_string(I.invdiag[i]));
      I.invdiag[i] = 1.0 / I.invdiag[i];
    }
  } else {
    if (opt.subdomain < 1) throw InvalidArgument("Smoother: subdomain must be >= 1, got " + std::to_string(opt.subdomain));
    if (opt.overlap < 0) throw InvalidArgument("Smoother: overlap must be >= 0, got " + std::to_string(opt.overlap));
    I.build_subdomains(shape);
  }
  // Work vectors of smooth() and of the lambda_max estimate (which uses res, d, z and, for ASM/RAS,
  // t); t holds A v for a matrix-free level and ASM/RAS only.
  I.res.resize(I.n);
  I.d.resize(I.n);
  I.z.resize(I.n);
  if (opt.base != BaseSmoother::Jacobi || I.A == nullptr) I.t.resize(I.n);
  I.lmax = opt.lambda_max ? *opt.lambda_max : opt.lambda_safety * I.estimate_lmax();
  if (!(I.lmax > 0.0) || !std::isfinite(I.lmax)) throw NumericalError("Smoother: lambda_max estimate is not positive");
}

Smoother::~Smoother() = default;
Smoother::Smoother(Smoother&&) noexcept = default;
Smoother& Smoother::operator=(Smoother&&) noexcept = default;

double Smoother::lambda_max() const { return impl_->lmax; }
const SmootherOptions& Smoother::options() const { return impl_->opt; }
std::size_t Smoother::size() const { return impl_->n; }

void Smoother::smooth(const double* b, double* x, int k) const { smooth(b, x, k, false); }

void Smoother::smooth(const double* b, double* x, int k, bool x_is_zero) const {
  if (k < 1) throw InvalidArgument("Smoother::smooth: order k must be >= 1, got " + std::to_string(k));
  check_vec("b", b);
  check_vec("x", x);
  const Impl& I = *impl_;
  const double lmax = I.lmax;
  // Every kind is the same three-term recurrence (seed 003, algorithms 1 and 2):
  //   r_0 = b - A x_0,  d_0 = c0 S r_0,
  //   for i = 1..k-1:  x += beta_i d_{i-1},  r_i = r_{i-1} - A d_{i-1},  d_i = a_i d_{i-1} + c_i S r_i,
  //   x += beta_k d_{k-1}.
  // Simple: c0 = c_i = omega, a_i = 0, beta = 1. 1st kind (Adams et al. 2003): c0 = 1/theta,
  // a_i = rho_i rho_{i-1}, c_i = 2 rho_i/delta. 4th kind (Lottes): c0 = 4/(3 lmax),
  // a_i = (2i-1)/(2i+3), c_i = (8i+4)/((2i+3) lmax); optimised 4th kind: beta_i from opt4_betas.
  double c0 = 0.0;
  auto& a = I.coef_a;
  auto& c = I.coef_c;
  auto& beta = I.coef_beta;
  a.assign(static_cast<std::size_t>(k), 0.0);
  c.assign(static_cast<std::size_t>(k), 0.0);
  beta.assign(static_cast<std::size_t>(k) + 1, 1.0);
  switch (I.opt.kind) {
    case Polynomial::Simple: {
      const double w = I.opt.omega > 0.0 ? I.opt.omega : 1.0 / lmax;
      c0 = w;
      for (int i = 1; i < k; ++i) c[static_cast<std::size_t>(i)] = w;
      break;
    }
    case Polynomial::Cheby1:
    case Polynomial::Cheby1Opt: {
      const double ratio = I.opt.kind == Polynomial::Cheby1 ? I.opt.lmin_ratio : detail::cheby1_opt_lmin_ratio(k);
      const double lmin = ratio * lmax;
      const double theta = 0.5 * (lmax + lmin), delta = 0.5 * (lmax - lmin), sigma = theta / delta;
      double rho = 1.0 / sigma;
      c0 = 1.0 / theta;
      for (int i = 1; i < k; ++i) {
        const double rho_new = 1.0 / (2.0 * sigma - rho);
        a[static_cast<std::size_t>(i)] = rho_new * rho;
        c[static_cast<std::size_t>(i)] = 2.0 * rho_new / delta;
        rho = rho_new;
      }
      break;
    }
    case Polynomial::Cheby4:
    case Polynomial::Cheby4Opt: {
      c0 = 4.0 / (3.0 * lmax);
      for (int i = 1; i < k; ++i) {
        a[static_cast<std::size_t>(i)] = (2.0 * i - 1.0) / (2.0 * i + 3.0);
        c[static_cast<std::size_t>(i)] = (8.0 * i + 4.0) / ((2.0 * i + 3.0) * lmax);
      }
      if (I.opt.kind == Polynomial::Cheby4Opt) {
        if (I.beta_k != k) {
          I.beta = opt4_betas(k);
          I.beta_k = k;
        }
        for (int i = 1; i <= k; ++i) beta[static_cast<std::size_t>(i)] = I.beta[static_cast<std::size_t>(i) - 1];
      }
      break;
    }
    default:
      throw InvalidArgument("Smoother::smooth: unknown polynomial kind");
  }
  const auto n = static_cast<std::int64_t>(I.n);
  double* res = I.res.data();
  double* d = I.d.data();
  double* d2 = I.z.data();
  const bool par = n > kParallelMinRows;
  const int nt = I.nt;
  if (I.opt.base == BaseSmoother::Jacobi) {
    // The Jacobi recurrence over a row sweep: sweep(v, store) calls store(i, (A v)_i) for every
    // row i, and each step's vector updates live in its store, so with a CSR level a step is one
    // fused pass over the matrix and the vectors (the matvec, the residual update, the Jacobi
    // scaling, the direction update and the x update: 12 nnz + 8 (row pointer) + 7 x 8 (x r/w,
    // r r/w, d, d', D^-1) bytes per row); a matrix-free level applies its operator first and
    // then makes one vector pass.
    const double* dinv = I.invdiag.data();
    // From x = 0 over a CSR level with k >= 2: r_0 = b and d_0 = c0 D^-1 b are not stored; the
    // first step's sweep multiplies A by d_0 formed on the fly from b (the same products, so the
    // same values): one pass over the vectors fewer.
    const bool fused_start = x_is_zero && k >= 2 && I.A != nullptr;
    auto jacobi_recurrence = [&](auto&& sweep) {
      if (fused_start) {
        // nothing: the first step below starts from b
      } else if (x_is_zero) {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < n; ++i) {
          res[i] = b[i];
          d[i] = c0 * dinv[i] * b[i];
        }
      } else {
        sweep(x, [&](std::int64_t i, double s) {
          const double r = b[i] - s;
          res[i] = r;
          d[i] = c0 * dinv[i] * r;
        });
      }
      const double bk = beta[static_cast<std::size_t>(k)];
      int it0 = 1;
      if (fused_start) {
        const double bi = beta[1], ai = a[1], cc = c[1];
        const bool last = k == 2;
        auto d0 = [c0, dinv, b](std::int64_t j) { return c0 * dinv[j] * b[j]; };
        elliptica::detail::row_sweep(*I.A, d0, [&](std::int64_t i, double s) {
          const double di = c0 * dinv[i] * b[i];
          const double r = b[i] - s;
          const double dn = ai * di + cc * dinv[i] * r;
          if (last) {
            x[i] = (0.0 + bi * di) + bk * dn;
          } else {
            res[i] = r;
            x[i] = 0.0 + bi * di;
            d2[i] = dn;
          }
        }, nt);
        std::swap(d, d2);
        it0 = 2;
      }
      for (int it = it0; it < k; ++it) {
        const double bi = beta[static_cast<std::size_t>(it)], ai = a[static_cast<std::size_t>(it)],
                     cc = c[static_cast<std::size_t>(it)];
        const bool first_write = x_is_zero && it == 1;
        if (it + 1 < k) {
          sweep(d, [&](std::int64_t i, double s) {
            const double r = res[i] - s;
            res[i] = r;
            const double di = d[i];
            x[i] = (first_write ? 0.0 : x[i]) + bi * di;
            d2[i] = ai * di + cc * dinv[i] * r;
          });
        } else {
          // The last step also makes the final update x += beta_k d_k with the row's new d_k: the
          // sweep reads d only, so x and d_k are row-local (one pass over x fewer). The residual
          // is not needed after this step.
          sweep(d, [&](std::int64_t i, double s) {
            const double r = res[i] - s;
            const double di = d[i];
            const double dk = ai * di + cc * dinv[i] * r;
            x[i] = ((first_write ? 0.0 : x[i]) + bi * di) + bk * dk;
          });
        }
        std::swap(d, d2);
      }
      if (k == 1) {
        if (x_is_zero) {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
          for (std::int64_t i = 0; i < n; ++i) x[i] = bk * d[i];
        } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
          for (std::int64_t i = 0; i < n; ++i) x[i] += bk * d[i];
        }
      }
    };
    if (I.A != nullptr) {
      jacobi_recurrence([&](const double* v, auto&& store) { elliptica::detail::csr_row_sweep(*I.A, v, store, nt); });
    } else {
      double* t = I.t.data();
      jacobi_recurrence([&](const double* v, auto&& store) {
        I.op->apply(v, t);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
        for (std::int64_t i = 0; i < n; ++i) store(i, t[i]);
      });
    }
    return;
  }
  // ASM / RAS: the same recurrence with S applied by local solves.
  double* z = d2;
  double* t = I.t.data();
  // A t: the CSR matrix's kernel, or the operator (an external S over a matrix-free level)
  auto multiply = [&](const double* v, double* out) {
    if (I.A != nullptr)
      I.A->multiply(v, out, nt);
    else
      I.op->apply(v, out);
  };
  if (x_is_zero) {
    std::copy(b, b + n, res);
    std::fill(x, x + n, 0.0);
  } else {
    multiply(x, t);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (std::int64_t i = 0; i < n; ++i) res[i] = b[i] - t[i];
  }
  I.apply_S(res, z);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (std::int64_t i = 0; i < n; ++i) d[i] = c0 * z[i];
  for (int it = 1; it < k; ++it) {
    const double bi = beta[static_cast<std::size_t>(it)], ai = a[static_cast<std::size_t>(it)],
                 cc = c[static_cast<std::size_t>(it)];
    multiply(d, t);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] += bi * d[i];
      res[i] -= t[i];
    }
    I.apply_S(res, z);
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
    for (std::int64_t i = 0; i < n; ++i) d[i] = ai * d[i] + cc * z[i];
  }
  const double bk = beta[static_cast<std::size_t>(k)];
#pragma omp parallel for schedule(static) num_threads(nt) if (par)
  for (std::int64_t i = 0; i < n; ++i) x[i] += bk * d[i];
}

void SmootherPreconditioner::apply(const double* r, double* z) const {
  s_.smooth(r, z, k_, true);
}

bool SmootherPreconditioner::is_symmetric() const { return s_.options().base != BaseSmoother::RAS; }

Polynomial polynomial_from_string(const std::string& s) {
  if (s == "simple") return Polynomial::Simple;
  if (s == "cheb1") return Polynomial::Cheby1;
  if (s == "cheb1opt") return Polynomial::Cheby1Opt;
  if (s == "cheb4") return Polynomial::Cheby4;
  if (s == "opt4") return Polynomial::Cheby4Opt;
  throw InvalidArgument("unknown smoother polynomial '" + s + "' (expected simple, cheb1, cheb1opt, cheb4 or opt4)");
}

std::string to_string(Polynomial p) {
  switch (p) {
    case Polynomial::Simple: return "simple";
    case Polynomial::Cheby1: return "cheb1";
    case Polynomial::Cheby1Opt: return "cheb1opt";
    case Polynomial::Cheby4: return "cheb4";
    case Polynomial::Cheby4Opt: return "opt4";
  }
  return "?";
}

std::string to_string(BaseSmoother b) {
  switch (b) {
    case BaseSmoother::Jacobi: return "jacobi";
    case BaseSmoother::ASM: return "asm";
    case BaseSmoother::RAS: return "ras";
  }
  return "?";
}

BaseSmoother base_from_string(const std::string& s) {
  if (s == "jacobi") return BaseSmoother::Jacobi;
  if (s == "asm") return BaseSmoother::ASM;
  if (s == "ras") return BaseSmoother::RAS;
  throw InvalidArgument("unknown base smoother '" + s + "' (expected jacobi, asm or ras)");
}

}  // namespace elliptica::multigrid
