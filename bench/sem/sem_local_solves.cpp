/// @file sem_local_solves.cpp
/// Diagnostic study of the SEM p-multigrid smoothers on Kershaw meshes (issue 14): PCG / FGMRES
/// iterations to rtol 1e-8 of the pMG-preconditioned SEM Poisson problem
/// (f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), x0 = 0, direct order-1 solve) with the Schwarz
/// smoothers' local problems solved
///   fdm:   by fast diagonalisation of the element's box approximation (SemSchwarz, the library's
///          smoother), or
///   exact: by a dense Cholesky factor of the global operator restricted to the extended element
///          (R_e A R_e^T, from the assembled SemLaplacian; (p+3)^3 unknowns an element: p <= 5
///          and small meshes only),
///   exact-element: the same restricted to the element's own (p+1)^3 nodes (overlap: the shared
///          faces, edges and vertices only),
///   hybrid: the box operator of the extended grid with the element's own block replaced by its
///          exact SEM stiffness,
///   box-element: the box operator restricted to the element's own nodes (minimal overlap, the
///          FDM's box approximation),
///   lor:   by a dense Cholesky factor of the low-order refined matrix (trilinear finite elements
///          on the sub-hexahedra between neighbouring GLL nodes) restricted to the extended element,
/// and optionally with the order-1 level replaced by the Galerkin product R A_q P of the next
/// finer level (--galerkin-coarse). This separates what the FDM's separable box approximation
/// costs from what the coarse level and the Chebyshev smoother cost.
///
/// Usage: sem_local_solves --n 6 --eps 0.3 --order 3 --base asm-weighted|asm|ras|jacobi
///          [--local fdm|exact|exact-element|hybrid|box-element|lor] [--local-max-order Q] [--schedule 3,1]
///          [--chebyshev 2] [--kind opt4] [--galerkin-coarse] [--threads 1]
/// --local-max-order Q: the local solves of --local only on the levels of order <= Q (the FDM on
/// the others).
/// Prints one JSON line: n, eps, order, base, local, schedule, chebyshev, kind, galerkin_coarse,
/// unknowns, iterations, converged, setup_s, solve_s.
#include <Eigen/Dense>
#include <Eigen/Sparse>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "elliptica/core/sparse.hpp"
#include "elliptica/krylov/krylov.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/pmg.hpp"

namespace mg = elliptica::multigrid;
using elliptica::CsrMatrix;

namespace {

/// The hybrid local matrix of element e on its kept extended grid (ids: the free ids in fdm_solve's
/// local order, -1 entries excluded the same way as ExactSchwarz's): the FDM box operator
/// A_box = B_t x B_s x A_r + B_t x A_s x B_r + A_t x B_s x B_r with the element's own box part
/// (the middle 1-D element of every axis) replaced by the element's exact SEM stiffness K_e
/// (its geometric factors: K_e = sum_q grad(phi_i)^T G(q) grad(phi_j)). Exact inside the
/// element, the box on the overlap layers.
Eigen::MatrixXd hybrid_matrix(const mg::SemSchwarz& S, std::size_t e, const std::vector<int>& ids,
                              bool box_own_only = false) {
  const mg::SemSpace& V = S.laplacian().space();
  const int p = V.order(), N = p + 1, M = N + 2;
  const mg::FdmAxis* f[3] = {&S.fdm(e, 0), &S.fdm(e, 1), &S.fdm(e, 2)};
  const mg::GllRule& g = V.gll();
  const std::vector<double>& D = V.derivative();
  // reference 1-D stiffness Ahat_ij = sum_a D_ai w_a D_aj
  std::vector<double> Ahat(std::size_t(N * N), 0.0);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      for (int a = 0; a < N; ++a) Ahat[std::size_t(i * N + j)] += D[std::size_t(a * N + i)] * g.weights[std::size_t(a)] * D[std::size_t(a * N + j)];
  // h_mid of each axis from B at an interior point of the element (extended index 2: e's node 1)
  double h[3];
  for (int d = 0; d < 3; ++d) h[d] = 2.0 * f[d]->B[std::size_t(2 - f[d]->lo)] / g.weights[1];
  // kept points: extended (a, b, c) for a in [lo, lo + n)
  const int nr = f[0]->n, ns = f[1]->n, nt = f[2]->n;
  const int m = nr * ns * nt;
  Eigen::MatrixXd Ab = Eigen::MatrixXd::Zero(m, m);
  auto idx = [&](int i, int j, int k) { return i + nr * (j + ns * k); };
  for (int k = 0; k < nt; ++k)
    for (int j = 0; j < ns; ++j)
      for (int i = 0; i < nr; ++i) {
        const int row = idx(i, j, k);
        for (int i2 = 0; i2 < nr; ++i2) Ab(row, idx(i2, j, k)) += f[2]->B[std::size_t(k)] * f[1]->B[std::size_t(j)] * f[0]->A[std::size_t(i * nr + i2)];
        for (int j2 = 0; j2 < ns; ++j2) Ab(row, idx(i, j2, k)) += f[2]->B[std::size_t(k)] * f[0]->B[std::size_t(i)] * f[1]->A[std::size_t(j * ns + j2)];
        for (int k2 = 0; k2 < nt; ++k2) Ab(row, idx(i, j, k2)) += f[1]->B[std::size_t(j)] * f[0]->B[std::size_t(i)] * f[2]->A[std::size_t(k * nt + k2)];
      }
  if (box_own_only) {  // the box operator restricted to the element's own nodes (no replacement)
    std::vector<int> keep;
    const auto ext = S.extended_nodes(e);
    for (int k = 0; k < nt; ++k)
      for (int j = 0; j < ns; ++j)
        for (int i = 0; i < nr; ++i) {
          const int a = i + f[0]->lo, b = j + f[1]->lo, c = k + f[2]->lo;
          const bool inside = a >= 1 && a <= N && b >= 1 && b <= N && c >= 1 && c <= N;
          if (inside && ext[std::size_t(a + M * (b + M * c))] >= 0) keep.push_back(idx(i, j, k));
        }
    if (keep.size() != ids.size()) throw std::runtime_error("box_own_only: kept points do not match the ids");
    Eigen::MatrixXd out(Eigen::Index(keep.size()), Eigen::Index(keep.size()));
    for (std::size_t a = 0; a < keep.size(); ++a)
      for (std::size_t b = 0; b < keep.size(); ++b) out(Eigen::Index(a), Eigen::Index(b)) = Ab(keep[a], keep[b]);
    return out;
  }
  // the element's own box part, subtracted, and its exact stiffness, added (own node (x, y, z) =
  // extended (x + 1, ...), kept index x + 1 - lo)
  const auto N3 = std::size_t(N) * N * N;
  const double* G = V.geometric_factors().data() + e * 6 * N3;
  std::vector<double> Ke(N3 * N3, 0.0);
  for (std::size_t jn = 0; jn < N3; ++jn) {
    const int jx = int(jn % N), jy = int((jn / N) % N), jz = int(jn / (N * N));
    // gradient of phi_j at every node q, times G, then the transposed gradient: column jn of K_e
    for (std::size_t q = 0; q < N3; ++q) {
      const int qx = int(q % N), qy = int((q / N) % N), qz = int(q / (N * N));
      const double gr = (qy == jy && qz == jz) ? D[std::size_t(qx * N + jx)] : 0.0;
      const double gs = (qx == jx && qz == jz) ? D[std::size_t(qy * N + jy)] : 0.0;
      const double gt = (qx == jx && qy == jy) ? D[std::size_t(qz * N + jz)] : 0.0;
      if (gr == 0.0 && gs == 0.0 && gt == 0.0) continue;
      const double Grr = G[0 * N3 + q], Grs = G[1 * N3 + q], Grt = G[2 * N3 + q], Gss = G[3 * N3 + q], Gst = G[4 * N3 + q], Gtt = G[5 * N3 + q];
      const double fr = Grr * gr + Grs * gs + Grt * gt, fs = Grs * gr + Gss * gs + Gst * gt, ft = Grt * gr + Gst * gs + Gtt * gt;
      for (int a = 0; a < N; ++a) {  // test functions phi_i with D along one axis through q
        Ke[std::size_t(a + N * (qy + N * qz)) * N3 + jn] += D[std::size_t(qx * N + a)] * fr;
        Ke[std::size_t(qx + N * (a + N * qz)) * N3 + jn] += D[std::size_t(qy * N + a)] * fs;
        Ke[std::size_t(qx + N * (qy + N * a)) * N3 + jn] += D[std::size_t(qz * N + a)] * ft;
      }
    }
  }
  auto kept = [&](int x, int d) { return x + 1 - f[d]->lo; };  // own index -> kept index (may be out of range)
  for (std::size_t in = 0; in < N3; ++in) {
    const int ix = kept(int(in % N), 0), iy = kept(int((in / N) % N), 1), iz = kept(int(in / (N * N)), 2);
    if (ix < 0 || ix >= nr || iy < 0 || iy >= ns || iz < 0 || iz >= nt) continue;
    for (std::size_t jn = 0; jn < N3; ++jn) {
      const int jx = kept(int(jn % N), 0), jy = kept(int((jn / N) % N), 1), jz = kept(int(jn / (N * N)), 2);
      if (jx < 0 || jx >= nr || jy < 0 || jy >= ns || jz < 0 || jz >= nt) continue;
      const int ox = int(in % N), oy = int((in / N) % N), oz = int(in / (N * N));
      const int px = int(jn % N), py = int((jn / N) % N), pz = int(jn / (N * N));
      const double hx = h[0] / 2.0, hy = h[1] / 2.0, hz = h[2] / 2.0;
      double box = 0.0;  // the element's box stiffness entry
      if (oy == py && oz == pz) box += hz * g.weights[std::size_t(oz)] * hy * g.weights[std::size_t(oy)] * Ahat[std::size_t(ox * N + px)] / hx;
      if (ox == px && oz == pz) box += hz * g.weights[std::size_t(oz)] * hx * g.weights[std::size_t(ox)] * Ahat[std::size_t(oy * N + py)] / hy;
      if (ox == px && oy == py) box += hy * g.weights[std::size_t(oy)] * hx * g.weights[std::size_t(ox)] * Ahat[std::size_t(oz * N + pz)] / hz;
      Ab(idx(ix, iy, iz), idx(jx, jy, jz)) += Ke[in * N3 + jn] - box;
    }
  }
  // keep the rows / columns of ids (the kept points whose id is a free node), in order
  std::vector<int> keep;
  const auto ext = S.extended_nodes(e);
  for (int k = 0; k < nt; ++k)
    for (int j = 0; j < ns; ++j)
      for (int i = 0; i < nr; ++i)
        if (ext[std::size_t((i + f[0]->lo) + M * ((j + f[1]->lo) + M * (k + f[2]->lo)))] >= 0) keep.push_back(idx(i, j, k));
  if (keep.size() != ids.size()) throw std::runtime_error("hybrid_matrix: kept points do not match the ids");
  Eigen::MatrixXd out(Eigen::Index(keep.size()), Eigen::Index(keep.size()));
  for (std::size_t a = 0; a < keep.size(); ++a)
    for (std::size_t b = 0; b < keep.size(); ++b) out(Eigen::Index(a), Eigen::Index(b)) = Ab(keep[a], keep[b]);
  return out;
}

/// The low-order refined (LOR) matrix of the SEM space: trilinear (Q1) finite elements on the
/// sub-hexahedra that neighbouring GLL nodes of every element span, 2x2x2 Gauss quadrature,
/// assembled over the free nodes (the SEM's Dirichlet nodes dropped).
CsrMatrix lor_matrix(const mg::SemSpace& S) {
  const int N = S.points_1d(), p = S.order();
  const std::size_t nf = S.num_free();
  const auto& l2g = S.local_to_global();
  const auto& X = S.coordinates();
  std::vector<Eigen::Triplet<double>> trip;
  const double g = 1.0 / std::sqrt(3.0);
  for (std::size_t e = 0; e < S.num_elements(); ++e)
    for (int k = 0; k < p; ++k)
      for (int j = 0; j < p; ++j)
        for (int i = 0; i < p; ++i) {
          int id[8];
          double x[8][3];
          for (int c = 0; c < 8; ++c) {
            const int a = c & 1, b = (c >> 1) & 1, d = (c >> 2) & 1;
            id[c] = l2g[e * S.nodes_per_element() + static_cast<std::size_t>((i + a) + N * ((j + b) + N * (k + d)))];
            for (int t = 0; t < 3; ++t) x[c][t] = X[3 * static_cast<std::size_t>(id[c]) + static_cast<std::size_t>(t)];
          }
          double K[8][8] = {};
          for (int q = 0; q < 8; ++q) {
            const double r[3] = {(q & 1) ? g : -g, ((q >> 1) & 1) ? g : -g, ((q >> 2) & 1) ? g : -g};
            double dN[8][3];
            for (int c = 0; c < 8; ++c) {
              const double s0 = (c & 1) ? 1 : -1, s1 = ((c >> 1) & 1) ? 1 : -1, s2 = ((c >> 2) & 1) ? 1 : -1;
              dN[c][0] = 0.125 * s0 * (1 + s1 * r[1]) * (1 + s2 * r[2]);
              dN[c][1] = 0.125 * s1 * (1 + s0 * r[0]) * (1 + s2 * r[2]);
              dN[c][2] = 0.125 * s2 * (1 + s0 * r[0]) * (1 + s1 * r[1]);
            }
            Eigen::Matrix3d J = Eigen::Matrix3d::Zero();  // J(t, d) = dx_t / dr_d
            for (int c = 0; c < 8; ++c)
              for (int t = 0; t < 3; ++t)
                for (int d = 0; d < 3; ++d) J(t, d) += x[c][t] * dN[c][d];
            const double det = J.determinant();
            const Eigen::Matrix3d Ji = J.inverse();
            Eigen::Vector3d gr[8];
            for (int c = 0; c < 8; ++c) gr[c] = Ji.transpose() * Eigen::Vector3d(dN[c][0], dN[c][1], dN[c][2]);
            for (int a = 0; a < 8; ++a)
              for (int b = 0; b < 8; ++b) K[a][b] += det * gr[a].dot(gr[b]);
          }
          for (int a = 0; a < 8; ++a)
            for (int b = 0; b < 8; ++b)
              if (static_cast<std::size_t>(id[a]) < nf && static_cast<std::size_t>(id[b]) < nf) trip.emplace_back(id[a], id[b], K[a][b]);
        }
  Eigen::SparseMatrix<double, Eigen::RowMajor> M(static_cast<Eigen::Index>(nf), static_cast<Eigen::Index>(nf));
  M.setFromTriplets(trip.begin(), trip.end());
  M.makeCompressed();
  CsrMatrix A;
  A.rows = A.cols = nf;
  A.row_ptr.assign(M.outerIndexPtr(), M.outerIndexPtr() + nf + 1);
  A.col.assign(M.innerIndexPtr(), M.innerIndexPtr() + M.nonZeros());
  A.val.assign(M.valuePtr(), M.valuePtr() + M.nonZeros());
  return A;
}

/// Schwarz operator with exact local solves on the extended elements of a SemSchwarz:
/// weighted ASM z = W^1/2 sum_e R_e^T A_e^-1 R_e W^1/2 r (W = 1 / number of extended elements
/// holding the node), plain ASM (W = I), or RAS (each node's value from the element that owns it
/// among its own nodes: the first, as SemSchwarz does).
class ExactSchwarz final : public elliptica::LinearOperator<double> {
 public:
  ExactSchwarz(const mg::SemSchwarz& fdm, const CsrMatrix& A, mg::SchwarzKind kind, bool hybrid = false, bool own_only = false)
      : kind_(kind), n_(A.rows) {
    const mg::SemLaplacian& lap = fdm.laplacian();
    const std::size_t ne = lap.space().num_elements();
    const int N = lap.space().order() + 1, M = N + 2;
    ids_.resize(ne);
    own_.resize(ne);
    std::vector<double> mult(n_, 0.0);
    std::vector<char> taken(n_, 0);
    for (std::size_t e = 0; e < ne; ++e) {
      const auto ext = fdm.extended_nodes(e);
      for (int c = 0; c < M; ++c)
        for (int b = 0; b < M; ++b)
          for (int a = 0; a < M; ++a) {
            const int g = ext[static_cast<std::size_t>(a + M * (b + M * c))];
            if (g < 0) continue;
            const bool inside = a >= 1 && a <= N && b >= 1 && b <= N && c >= 1 && c <= N;
            if (own_only && !inside) continue;
            ids_[e].push_back(g);
            const bool owns = inside && !taken[static_cast<std::size_t>(g)];
            if (owns) taken[static_cast<std::size_t>(g)] = 1;
            own_[e].push_back(owns);
            mult[static_cast<std::size_t>(g)] += 1;
          }
    }
    w_.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) w_[i] = kind == mg::SchwarzKind::ASMWeighted ? 1.0 / std::sqrt(mult[i]) : 1.0;
    fac_.resize(ne);
    std::vector<int> pos(n_, -1);
    for (std::size_t e = 0; e < ne; ++e) {
      const auto& id = ids_[e];
      for (std::size_t i = 0; i < id.size(); ++i) pos[static_cast<std::size_t>(id[i])] = static_cast<int>(i);
      Eigen::MatrixXd Ae = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(id.size()), static_cast<Eigen::Index>(id.size()));
      for (std::size_t i = 0; i < id.size(); ++i)
        for (auto q = A.row_ptr[static_cast<std::size_t>(id[i])]; q < A.row_ptr[static_cast<std::size_t>(id[i]) + 1]; ++q) {
          const int j = pos[static_cast<std::size_t>(A.col[static_cast<std::size_t>(q)])];
          if (j >= 0) Ae(static_cast<Eigen::Index>(i), j) = A.val[static_cast<std::size_t>(q)];
        }
      if (hybrid) Ae = hybrid_matrix(fdm, e, id, own_only);
      fac_[e].compute(Ae);
      if (fac_[e].info() != Eigen::Success) throw std::runtime_error("local matrix not SPD");
      for (const int g : id) pos[static_cast<std::size_t>(g)] = -1;
    }
  }
  std::size_t size() const override { return n_; }
  bool is_symmetric() const override { return kind_ != mg::SchwarzKind::RAS; }
  void apply(const double* r, double* z) const override {
    for (std::size_t i = 0; i < n_; ++i) z[i] = 0.0;
    for (std::size_t e = 0; e < ids_.size(); ++e) {
      const auto& id = ids_[e];
      Eigen::VectorXd v(static_cast<Eigen::Index>(id.size()));
      for (std::size_t i = 0; i < id.size(); ++i) v[static_cast<Eigen::Index>(i)] = r[id[i]] * w_[static_cast<std::size_t>(id[i])];
      v = fac_[e].solve(v);
      for (std::size_t i = 0; i < id.size(); ++i)
        if (kind_ != mg::SchwarzKind::RAS || own_[e][i]) z[id[i]] += v[static_cast<Eigen::Index>(i)] * w_[static_cast<std::size_t>(id[i])];
    }
  }

 private:
  mg::SchwarzKind kind_;
  std::size_t n_;
  std::vector<std::vector<int>> ids_;
  std::vector<std::vector<char>> own_;
  std::vector<double> w_;
  std::vector<Eigen::LLT<Eigen::MatrixXd>> fac_;
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t q = s.find(',', pos);
    if (q == std::string::npos) q = s.size();
    v.push_back(std::stoi(s.substr(pos, q - pos)));
    pos = q + 1;
  }
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  int n = 6, order = 3, cheb = 2, threads = 1;
  double eps = 0.3;
  std::string base = "asm-weighted", local = "fdm", sched, kind = "opt4";
  bool galerkin = false;
  int local_max_order = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--n") n = std::stoi(next());
    else if (a == "--eps") eps = std::stod(next());
    else if (a == "--order") order = std::stoi(next());
    else if (a == "--base") base = next();
    else if (a == "--local") local = next();
    else if (a == "--schedule") sched = next();
    else if (a == "--chebyshev") cheb = std::stoi(next());
    else if (a == "--kind") kind = next();
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--galerkin-coarse") galerkin = true;
    else if (a == "--local-max-order") local_max_order = std::stoi(next());
    else throw std::invalid_argument("unknown option " + a);
  }
  if (local != "fdm" && local != "exact" && local != "hybrid" && local != "lor" && local != "exact-element" &&
      local != "box-element") throw std::invalid_argument("--local must be fdm, exact, hybrid or lor");
  const auto t0 = std::chrono::steady_clock::now();
  mg::SemPoissonOptions o;
  o.order = order;
  o.pre = o.post = cheb;
  o.tune_iterations = 0;  // the order given by --chebyshev
  o.threads = threads;
  o.coarse = mg::PmgCoarseSolver::Direct;
  if (!sched.empty()) o.schedule = parse_list(sched);
  o.polynomial = mg::polynomial_from_string(kind);
  o.base = mg::sem_smoother_base_from_string(base);
  if (o.base == mg::SemSmootherBase::RAS) o.method = elliptica::krylov::Method::Fgmres;
  mg::SemPoissonPlan plan(mg::kershaw_mesh(n, eps), o);
  const auto f = [](double x, double y, double z) {
    return 3 * M_PI * M_PI * std::sin(M_PI * x) * std::sin(M_PI * y) * std::sin(M_PI * z);
  };
  const std::vector<double> b = plan.load_vector(f);
  std::vector<double> x(plan.size(), 0.0);
  elliptica::krylov::Result r;
  double solve_s = 0;
  if (local == "fdm" && !galerkin) {
    const auto res = plan.solve(b.data(), x.data());
    r = res;
    solve_s = res.solve_seconds;
  } else {
    // The plan's hierarchy with exact local solves and / or a Galerkin order-1 level.
    const mg::Hierarchy& h = plan.hierarchy();
    std::vector<mg::Level> lv;
    for (std::size_t j = 0; j < h.num_levels(); ++j) {
      mg::Level L = h.level(j);
      if (L.schwarz && local != "fdm" &&
          std::dynamic_pointer_cast<const mg::SemSchwarz>(L.schwarz)->laplacian().space().order() <= local_max_order) {
        const auto sch = std::dynamic_pointer_cast<const mg::SemSchwarz>(L.schwarz);
        const CsrMatrix A = local == "lor" ? lor_matrix(sch->laplacian().space()) : sch->laplacian().assemble();
        L.schwarz = std::make_shared<const ExactSchwarz>(*sch, A, sch->kind(), local == "hybrid" || local == "box-element",
                                                          local == "exact-element" || local == "box-element");
      }
      lv.push_back(L);
    }
    auto coarse = std::shared_ptr<const elliptica::LinearOperator<double>>(h.coarse_solver(), [](auto*) {});
    if (galerkin) {
      const std::size_t L = lv.size() - 1;
      const auto Sq = mg::pmg_level_space(h, L - 1);
      const mg::SemSpace S1(Sq->mesh(), 1, threads);
      const CsrMatrix Aq = std::dynamic_pointer_cast<const mg::SemLaplacian>(lv[L - 1].A)->assemble();
      CsrMatrix P = mg::pmg_prolongation(S1, *Sq, threads);
      CsrMatrix R = P.transpose();
      CsrMatrix Ac = elliptica::triple_product(R, Aq, P, threads);
      lv[L] = mg::Level::from_matrix(Ac, mg::GridShape{}, threads);
      lv[L - 1].transfer.reset();
      lv[L - 1].P = std::move(P);
      lv[L - 1].R = std::move(R);
      coarse = std::make_shared<const mg::SparseDirect>(Ac);
    }
    auto h2 = std::make_shared<const mg::Hierarchy>(std::move(lv), coarse);
    mg::VCycleOptions vo = mg::sem_vcycle_options(o);
    vo.pre = vo.post = cheb;
    vo.threads = threads;
    const mg::VCycle cyc(h2, vo);
    elliptica::krylov::Options ko;
    ko.rtol = o.rtol;
    ko.max_iterations = o.max_iterations;
    const auto t1 = std::chrono::steady_clock::now();
    const auto solver = elliptica::krylov::make_solver<double>(o.method, plan.op(), &cyc, ko);
    r = solver->solve(b.data(), x.data());
    solve_s = seconds_since(t1);
  }
  std::printf("{\"n\": %d, \"eps\": %g, \"order\": %d, \"base\": \"%s\", \"local\": \"%s\", \"schedule\": \"%s\", "
              "\"chebyshev\": %d, \"kind\": \"%s\", \"galerkin_coarse\": %s, \"unknowns\": %zu, \"iterations\": %d, "
              "\"converged\": %s, \"setup_s\": %.3f, \"solve_s\": %.3f}\n",
              n, eps, order, base.c_str(), local.c_str(), sched.c_str(), cheb, kind.c_str(), galerkin ? "true" : "false",
              plan.size(), r.iterations, r.converged ? "true" : "false", seconds_since(t0) - solve_s, solve_s);
  return r.converged ? 0 : 5;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sem_local_solves: %s\n", e.what());
  return 2;
}
