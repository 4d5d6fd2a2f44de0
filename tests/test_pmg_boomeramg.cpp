// The p-multigrid's BoomerAMG coarse solve (pmg.hpp, issue 14): PCG + pMG with one hypre
// BoomerAMG V-cycle on the order-1 level against the same with the direct order-1 solve. A test
// of its own, not PARALLEL (hypre is sequential here and OpenMPI is not TSan-instrumented, as
// tests/test_boomeramg.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/pmg.hpp"

#include "common/mpi_lsan.hpp"

namespace mg = elliptica::multigrid;

#define REQUIRE_HYPRE() \
  if (!mg::have_boomeramg()) GTEST_SKIP() << "elliptica was built without hypre (ELLIPTICA_HYPRE=OFF or libhypre-dev missing)"

namespace {

const double kPi = std::acos(-1.0);
constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD != 0;

double exact_u(double x, double y, double z) { return std::sin(kPi * x) * std::sin(kPi * y) * std::sin(kPi * z); }

struct SolveRun {
  int iterations = 0;
  double max_error = 0, residual = 0;
};

SolveRun pmg_solve(const mg::HexMesh& mesh, const mg::SemPoissonOptions& o) {
  mg::SemPoissonPlan plan(mesh, o);
  const auto b = plan.load_vector([](double x, double y, double z) { return 3 * kPi * kPi * exact_u(x, y, z); });
  std::vector<double> x(plan.size(), 0.0), r(plan.size());
  const auto res = plan.solve(b.data(), x.data());
  EXPECT_TRUE(res.converged);
  SolveRun out;
  out.iterations = res.iterations;
  plan.op().apply(x.data(), r.data());
  double rr = 0, bb = 0;
  for (std::size_t i = 0; i < r.size(); ++i) rr += (b[i] - r[i]) * (b[i] - r[i]), bb += b[i] * b[i];
  out.residual = std::sqrt(rr / bb);
  for (std::size_t g = 0; g < x.size(); ++g) {
    const double* c = &plan.space().coordinates()[3 * g];
    out.max_error = std::max(out.max_error, std::abs(x[g] - exact_u(c[0], c[1], c[2])));
  }
  return out;
}

}  // namespace

TEST(SemPoissonPlan, BoomerAmgCoarseSolve) {
  REQUIRE_HYPRE();
  const int p = kSanitized ? 3 : 5;
  const int n = kSanitized ? 4 : 6;
  const mg::HexMesh mesh = mg::box_mesh(n, n, n);
  mg::SemPoissonOptions o;
  o.order = p;
  o.threads = 1;
  EXPECT_EQ(o.coarse, mg::PmgCoarseSolver::BoomerAmg);  // the default with hypre
  const SolveRun amg = pmg_solve(mesh, o);
  o.coarse = mg::PmgCoarseSolver::Direct;
  const SolveRun dir = pmg_solve(mesh, o);
  std::printf("  box n=%d p=%d: BoomerAMG coarse %d iterations, direct coarse %d; max error %.3e / %.3e\n", n, p,
              amg.iterations, dir.iterations, amg.max_error, dir.max_error);
  EXPECT_LE(amg.residual, 1.01e-8);
  EXPECT_LE(amg.iterations, dir.iterations + 3);
  EXPECT_NEAR(amg.max_error, dir.max_error, 1e-3 * dir.max_error + 1e-9);
}


TEST(SemPoissonPlan, BoomerAmgUnsymmetricRelaxationNeedsFgmres) {
  REQUIRE_HYPRE();
  mg::SemPoissonOptions o;
  o.order = 3;
  o.threads = 1;
  o.boomeramg.relaxation = mg::BoomerAmgRelaxation::HybridGsForward;
  const mg::HexMesh mesh = mg::box_mesh(4, 4, 4);
  try {
    mg::SemPoissonPlan plan(mesh, o);
    ADD_FAILURE() << "PCG accepted an unsymmetric coarse cycle";
  } catch (const elliptica::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not symmetric"), std::string::npos) << e.what();
  }
  o.method = elliptica::krylov::Method::Fgmres;
  const SolveRun r = pmg_solve(mesh, o);
  EXPECT_LE(r.residual, 1.01e-8);
}
