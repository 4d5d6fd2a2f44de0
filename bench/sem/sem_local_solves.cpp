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
/// and optionally with the order-1 level replaced by the Galerkin product R A_q P of the next
/// finer level (--galerkin-coarse). This separates what the FDM's separable box approximation
/// costs from what the coarse level and the Chebyshev smoother cost.
///
/// Usage: sem_local_solves --n 6 --eps 0.3 --order 3 --base asm-weighted|asm|ras|jacobi
///          [--local fdm|exact] [--schedule 3,1] [--chebyshev 2] [--kind opt4] [--galerkin-coarse]
///          [--threads 1]
/// Prints one JSON line: n, eps, order, base, local, schedule, chebyshev, kind, galerkin_coarse,
/// unknowns, iterations, converged, setup_s, solve_s.
#include <Eigen/Dense>

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

/// Schwarz operator with exact local solves on the extended elements of a SemSchwarz:
/// weighted ASM z = W^1/2 sum_e R_e^T A_e^-1 R_e W^1/2 r (W = 1 / number of extended elements
/// holding the node), plain ASM (W = I), or RAS (each node's value from the element that owns it
/// among its own nodes: the first, as SemSchwarz does).
class ExactSchwarz final : public elliptica::LinearOperator<double> {
 public:
  ExactSchwarz(const mg::SemSchwarz& fdm, const CsrMatrix& A, mg::SchwarzKind kind) : kind_(kind), n_(A.rows) {
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
            ids_[e].push_back(g);
            const bool inside = a >= 1 && a <= N && b >= 1 && b <= N && c >= 1 && c <= N;
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
    else throw std::invalid_argument("unknown option " + a);
  }
  if (local != "fdm" && local != "exact") throw std::invalid_argument("--local must be fdm or exact");
  const auto t0 = std::chrono::steady_clock::now();
  mg::SemPoissonOptions o;
  o.order = order;
  o.pre = o.post = cheb;
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
      if (L.schwarz && local == "exact") {
        const auto sch = std::dynamic_pointer_cast<const mg::SemSchwarz>(L.schwarz);
        const CsrMatrix A = sch->laplacian().assemble();
        L.schwarz = std::make_shared<const ExactSchwarz>(*sch, A, sch->kind());
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
