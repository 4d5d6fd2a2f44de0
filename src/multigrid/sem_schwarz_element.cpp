/// @file sem_schwarz_element.cpp
/// SemSchwarz with the Element local solver (SchwarzLocalSolver::Element, sem_schwarz.hpp): every
/// element's own free nodes are a subdomain, its local problem A_e = R_e A R_e^T solved exactly by
/// a dense inverse. A_e is assembled from the element's stiffness K_e (sem_element_stiffness) and,
/// on the nodes it shares with a neighbour f, the neighbour's K_f restricted to them (A = sum_f
/// R_f K_f R_f^T, so R_e A R_e^T = sum_f (R_e R_f^T) K_f (R_f R_e^T): only the shared nodes of f
/// contribute). Schwarz with exact local solves on non-overlapping element blocks (overlap only
/// through the shared boundary nodes): Smith, Bjorstad & Gropp, "Domain Decomposition", CUP 1996,
/// ch. 1; Cai & Sarkis 1999 for the restricted variant.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // Eigen's AVX-512 packets (gcc 12)
#endif
#include <Eigen/Cholesky>
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/core/parallel.hpp"
#include "elliptica/core/resources.hpp"
#include "elliptica/multigrid/sem_schwarz.hpp"
#include "sem_schwarz_apply.hpp"

namespace elliptica::multigrid {
namespace {

/// One entry K_f(a, b) of element f's stiffness matrix (sem_element_stiffness's sum, evaluated for
/// one pair of local nodes a = (a_r, a_s, a_t), b): sum_q sum_XY g_X(a, q) G_XY(q) g_Y(b, q),
/// g_X(a, q) = D[q_X][a_X] where q agrees with a off axis X, else 0. Same axis X = Y: a and b
/// agree off X, q runs along X (N terms). X != Y (third axis Z): a_Z = b_Z and the single point
/// q_X = b_X, q_Y = a_Y, q_Z = a_Z. G: the element's 6 x N^3 factors (rr, rs, rt, ss, st, tt).
double stiffness_entry(const double* G, const double* D, int N, std::size_t n3, const int* a, const int* b) {
  static constexpr int gi[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
  auto at = [N](const int* q) { return static_cast<std::size_t>(q[0] + N * (q[1] + N * q[2])); };
  double s = 0.0;
  for (int X = 0; X < 3; ++X)
    for (int Y = 0; Y < 3; ++Y) {
      const double* g = G + static_cast<std::size_t>(gi[X][Y]) * n3;
      if (X == Y) {
        const int k1 = (X + 1) % 3, k2 = (X + 2) % 3;
        if (a[k1] != b[k1] || a[k2] != b[k2]) continue;
        int q[3] = {a[0], a[1], a[2]};
        for (int m = 0; m < N; ++m) {
          q[X] = m;
          s += D[m * N + a[X]] * g[at(q)] * D[m * N + b[X]];
        }
      } else {
        const int Z = 3 - X - Y;
        if (a[Z] != b[Z]) continue;
        int q[3];
        q[X] = b[X];
        q[Y] = a[Y];
        q[Z] = a[Z];
        s += D[b[X] * N + a[X]] * g[at(q)] * D[a[Y] * N + b[Y]];
      }
    }
  return s;
}

}  // namespace

SchwarzLocalSolver schwarz_local_solver_from_string(const std::string& s) {
  if (s == "fdm") return SchwarzLocalSolver::FDM;
  if (s == "element") return SchwarzLocalSolver::Element;
  throw InvalidArgument("unknown Schwarz local solver '" + s + "' (expected fdm or element)");
}

std::string to_string(SchwarzLocalSolver l) { return l == SchwarzLocalSolver::Element ? "element" : "fdm"; }

void SemSchwarz::build_element_solves() {
  const SemSpace& V = A_->space();
  const int N = V.points_1d();
  const std::size_t n3 = V.nodes_per_element();
  const auto& l2g = V.local_to_global();
  const auto& D = V.derivative();
  const int nt = resolve_threads(threads_);
  const double tbytes = precision_ == SchwarzPrecision::Single ? 4.0 : 8.0;

  // Node lists (free own nodes, local order) and the node -> elements incidence.
  eoff_.assign(ne_ + 1, 0);
  std::vector<std::int64_t> ptr(n_ + 1, 0);
  for (std::size_t e = 0; e < ne_; ++e) {
    std::size_t m = 0;
    for (std::size_t q = 0; q < n3; ++q)
      if (static_cast<std::size_t>(l2g[e * n3 + q]) < n_) {
        ++m;
        ++ptr[static_cast<std::size_t>(l2g[e * n3 + q]) + 1];
      }
    eoff_[e + 1] = eoff_[e] + m;
  }
  double mat_values = 0.0;
  for (std::size_t e = 0; e < ne_; ++e) {
    const auto m = static_cast<double>(eoff_[e + 1] - eoff_[e]);
    mat_values += m * m;
  }
  require_memory(mat_values * tbytes + static_cast<double>(eoff_[ne_]) * (4.0 + 4.0 + 4.0) +
                     static_cast<double>(n_) * (8.0 + 2.0 * tbytes + (kind_ == SchwarzKind::ASMWeighted ? 8.0 : 0.0)) +
                     // per thread: K_e, and A_e, its Cholesky factor, the inverse and its symmetric part
                     static_cast<double>(nt) * (5.0 * static_cast<double>(n3) * static_cast<double>(n3) * 8.0),
                 "SemSchwarz, element local solves (" + std::to_string(ne_) + " elements, order " +
                     std::to_string(V.order()) + ")");
  eidx_.resize(eoff_[ne_]);
  for (std::size_t g = 0; g < n_; ++g) ptr[g + 1] += ptr[g];
  std::vector<std::int32_t> inc(static_cast<std::size_t>(ptr[n_]));
  {
    std::vector<std::int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (std::size_t e = 0; e < ne_; ++e) {
      std::size_t i = eoff_[e];
      for (std::size_t q = 0; q < n3; ++q) {
        const std::int32_t g = l2g[e * n3 + q];
        if (static_cast<std::size_t>(g) >= n_) continue;
        eidx_[i++] = g;
        inc[static_cast<std::size_t>(fill[static_cast<std::size_t>(g)]++)] = static_cast<std::int32_t>(e);
      }
    }
  }
  emat_off_.assign(ne_ + 1, 0);
  for (std::size_t e = 0; e < ne_; ++e) {
    const std::size_t m = eoff_[e + 1] - eoff_[e];
    emat_off_[e + 1] = emat_off_[e] + m * m;
  }
  if (precision_ == SchwarzPrecision::Single)
    ematf_.assign(emat_off_[ne_], 0.0F);
  else
    emat_.assign(emat_off_[ne_], 0.0);

  // A_e and its inverse, element by element.
  ParallelErrors errors;
  const auto nel = static_cast<std::int64_t>(ne_);
#pragma omp parallel num_threads(nt)
  {
    std::vector<double> K;
    std::vector<std::pair<std::int32_t, int>> sorted;  // (global id, row of A_e)
    std::vector<std::int32_t> nbrs;
    std::vector<std::pair<int, int>> shared;  // (row of A_e, local node of the neighbour)
    std::vector<std::size_t> loc;             // local nodes of e's rows
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t ie = 0; ie < nel; ++ie)
      errors.run([&] {
        const auto e = static_cast<std::size_t>(ie);
        const auto m = static_cast<Eigen::Index>(eoff_[e + 1] - eoff_[e]);
        if (m == 0) return;
        const std::int32_t* ids = eidx_.data() + eoff_[e];
        K.resize(n3 * n3);
        sem_element_stiffness(V, e, K.data());
        loc.clear();
        for (std::size_t q = 0; q < n3; ++q)
          if (static_cast<std::size_t>(l2g[e * n3 + q]) < n_) loc.push_back(q);
        Eigen::MatrixXd Ae(m, m);
        for (Eigen::Index i = 0; i < m; ++i)
          for (Eigen::Index j = 0; j < m; ++j)
            Ae(i, j) = K[loc[static_cast<std::size_t>(i)] * n3 + loc[static_cast<std::size_t>(j)]];
        sorted.clear();
        for (Eigen::Index i = 0; i < m; ++i) sorted.emplace_back(ids[i], static_cast<int>(i));
        std::sort(sorted.begin(), sorted.end());
        nbrs.clear();
        for (Eigen::Index i = 0; i < m; ++i) {
          const auto g = static_cast<std::size_t>(ids[i]);
          for (std::int64_t t = ptr[g]; t < ptr[g + 1]; ++t)
            if (static_cast<std::size_t>(inc[static_cast<std::size_t>(t)]) != e) nbrs.push_back(inc[static_cast<std::size_t>(t)]);
        }
        std::sort(nbrs.begin(), nbrs.end());
        nbrs.erase(std::unique(nbrs.begin(), nbrs.end()), nbrs.end());
        for (const std::int32_t f : nbrs) {
          const auto uf = static_cast<std::size_t>(f);
          shared.clear();
          for (std::size_t q = 0; q < n3; ++q) {
            const std::int32_t g = l2g[uf * n3 + q];
            if (static_cast<std::size_t>(g) >= n_) continue;
            const auto it = std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(g, -1));
            if (it != sorted.end() && it->first == g) shared.emplace_back(it->second, static_cast<int>(q));
          }
          const double* G = V.geometric_factors().data() + uf * 6 * n3;
          for (const auto& [i, qa] : shared) {
            const int a[3] = {qa % N, (qa / N) % N, qa / (N * N)};
            for (const auto& [j, qb] : shared) {
              const int b[3] = {qb % N, (qb / N) % N, qb / (N * N)};
              Ae(i, j) += stiffness_entry(G, D.data(), N, n3, a, b);
            }
          }
        }
        const Eigen::LLT<Eigen::MatrixXd> llt(Ae);
        if (llt.info() != Eigen::Success)
          throw NumericalError("SemSchwarz: the local matrix R_e A R_e^T of element " + std::to_string(e) +
                               " is not positive definite (Cholesky failed)");
        Eigen::MatrixXd inv = llt.solve(Eigen::MatrixXd::Identity(m, m));
        const Eigen::MatrixXd sym = 0.5 * (inv + inv.transpose());
        const std::size_t off = emat_off_[e];
        for (Eigen::Index j = 0; j < m; ++j)
          for (Eigen::Index i = 0; i < m; ++i) {
            const std::size_t at = off + static_cast<std::size_t>(i + m * j);
            if (precision_ == SchwarzPrecision::Single)
              ematf_[at] = static_cast<float>(sym(i, j));
            else
              emat_[at] = sym(i, j);
          }
      });
  }
  errors.rethrow();

  // Schedule: SemSpace's colours (no two elements of a colour share a vertex, hence a node).
  lanes_ = 1;
  batch_elems_.clear();
  colour_batch_.assign(1, 0);
  for (const auto& col : V.colours()) {
    batch_elems_.insert(batch_elems_.end(), col.begin(), col.end());
    colour_batch_.push_back(batch_elems_.size());
  }
  if (kind_ == SchwarzKind::RAS) {
    // The owner of a node: the first element having it (the FDM variant's rule).
    edst_.assign(eidx_.size(), static_cast<std::int32_t>(n_));
    std::vector<char> taken(n_, 0);
    for (std::size_t i = 0; i < eidx_.size(); ++i) {
      const auto g = static_cast<std::size_t>(eidx_[i]);
      if (!taken[g]) {
        taken[g] = 1;
        edst_[i] = eidx_[i];
      }
    }
  }
  if (kind_ == SchwarzKind::ASMWeighted) {
    wsqrt_.resize(n_);
    for (std::size_t g = 0; g < n_; ++g) wsqrt_[g] = 1.0 / std::sqrt(static_cast<double>(ptr[g + 1] - ptr[g]));
  }
  if (precision_ == SchwarzPrecision::Single) {
    rxf_.assign(n_ + 1, 0.0F);
    zxf_.assign(n_, 0.0F);
  } else {
    rx_.assign(n_ + 1, 0.0);
    zx_.assign(n_, 0.0);
  }
  scratch_.assign(static_cast<std::size_t>(nt) * (2 * n3 + 16), 0.0);
}

std::vector<std::int32_t> SemSchwarz::element_nodes(std::size_t e) const {
  if (local_ != SchwarzLocalSolver::Element)
    throw InvalidArgument("SemSchwarz::element_nodes: the local solver is fdm (extended grids: extended_nodes)");
  if (e >= ne_)
    throw InvalidArgument("SemSchwarz::element_nodes: element " + std::to_string(e) + " out of range (" +
                          std::to_string(ne_) + " elements)");
  return {eidx_.begin() + static_cast<std::ptrdiff_t>(eoff_[e]), eidx_.begin() + static_cast<std::ptrdiff_t>(eoff_[e + 1])};
}

template <typename T>
void SemSchwarz::apply_element(const double* r, double* z) const {
  const std::int32_t* add_to = kind_ == SchwarzKind::RAS ? edst_.data() : eidx_.data();
  const std::size_t n3 = A_->space().nodes_per_element();
  const T* mats = nullptr;
  if constexpr (std::is_same_v<T, float>)
    mats = ematf_.data();
  else
    mats = emat_.data();
  const auto n32 = static_cast<std::int32_t>(n_);
  using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  // The units are elements (colours: SemSpace::colours(), no two elements of a colour share a
  // node); scratch: the gathered input v and the local solution y, N^3 values each.
  apply_coloured<T>(r, z, 2 * n3, [&](std::size_t i, T* v, const T* rx, T* zx) {
    T* y = v + n3;
    const auto e = static_cast<std::size_t>(batch_elems_[i]);
    const auto m = static_cast<Eigen::Index>(eoff_[e + 1] - eoff_[e]);
    const std::int32_t* idx = eidx_.data() + eoff_[e];
    const std::int32_t* dst = add_to + eoff_[e];
    for (Eigen::Index q = 0; q < m; ++q) v[q] = rx[idx[q]];
    Eigen::Map<Vec>(y, m).noalias() = Eigen::Map<const Mat>(mats + emat_off_[e], m, m) * Eigen::Map<const Vec>(v, m);
    for (Eigen::Index q = 0; q < m; ++q)
      if (dst[q] != n32) zx[dst[q]] += y[q];
  });
}

template void SemSchwarz::apply_element<double>(const double*, double*) const;
template void SemSchwarz::apply_element<float>(const double*, double*) const;

}  // namespace elliptica::multigrid
