/// @file test_bem_bd.cpp
/// Block-diagonal preconditioner of the BEM system (include/elliptica/bem/block_diagonal.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include "elliptica/bem/block_diagonal.hpp"
#include "elliptica/bem/helmholtz.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/fmm/octree.hpp"

namespace {

using namespace elliptica;
using namespace elliptica::bem;
using cd = std::complex<double>;

// The sanitizer build (10-50x slower) runs the GMRES study on a smaller mesh (see below).
constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;

std::vector<cd> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  std::vector<cd> v(n);
  for (auto& x : v) x = cd(d(g), d(g));
  return v;
}

double rel_diff(const std::vector<cd>& a, const std::vector<cd>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(a[i] - b[i]);
    den += std::norm(b[i]);
  }
  return std::sqrt(num / den);
}

TEST(BemBlockDiagonal, LevelZeroIsTheExactInverse) {
  for (auto bc : {BoundaryCondition::Neumann, BoundaryCondition::Dirichlet}) {
    HelmholtzBemOptions o;
    o.bc = bc;
    HelmholtzBemDense plan(icosphere(2), 1.0, o);
    fmm::OctreeOptions to;
    to.max_leaf = 16;
    fmm::Octree tree(centroids(plan.mesh()), to);
    ASSERT_GE(tree.leaf_level(), 1);
    BlockDiagonalPreconditioner M(tree, dense_block_function(plan.matrix()), 0);
    EXPECT_EQ(M.num_blocks(), 1u);
    EXPECT_EQ(M.largest_block(), 320u);
    EXPECT_EQ(M.size(), 320u);
    const auto x = random_vector(320, 7);
    const auto b = plan.matrix().apply(x);
    std::vector<cd> z(320);
    M.apply(b.data(), z.data());
    EXPECT_LT(rel_diff(z, x), 1e-11);
    // GMRES with the exact inverse converges in one iteration.
    PreconditionedSolveOptions po;
    po.bd_level = 0;
    po.tree = to;
    PreconditionedSolveInfo info;
    const auto s = solve_preconditioned(plan, plane_wave(plan.mesh(), 1.0, {0, 0, 1}), po, &info);
    EXPECT_TRUE(s.converged);
    EXPECT_LE(s.iterations, 1);
    EXPECT_EQ(info.blocks, 1u);
  }
}

TEST(BemBlockDiagonal, BlocksFollowTheOctreeAndTheCallback) {
  const Mesh m = icosphere(2);
  fmm::OctreeOptions to;
  to.max_leaf = 8;
  fmm::Octree tree(centroids(m), to);
  const int leaf = tree.leaf_level();
  // Callback-supplied diagonal matrix diag(1 + i): M^{-1} r = r / (1 + i) at every level.
  long calls = 0;
  BlockFunction diag = [&calls](const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& cols, cd* out) {
#pragma omp atomic
    ++calls;
    for (std::size_t a = 0; a < rows.size(); ++a)
      for (std::size_t b = 0; b < cols.size(); ++b) out[a * cols.size() + b] = rows[a] == cols[b] ? cd(1 + rows[a], 1) : 0.0;
  };
  for (int l = 0; l <= leaf; ++l) {
    calls = 0;
    BlockDiagonalPreconditioner M(tree, diag, l);
    EXPECT_EQ(M.level(), l);
    EXPECT_EQ(M.num_blocks(), tree.level_nodes(l).size());
    EXPECT_EQ(static_cast<std::size_t>(calls), M.num_blocks());
    const auto r = random_vector(m.num_elements(), 3);
    std::vector<cd> z(r.size());
    M.apply(r.data(), z.data());
    for (std::size_t i = 0; i < r.size(); ++i) EXPECT_LT(std::abs(z[i] * cd(1.0 + double(i), 1) - r[i]), 1e-12);
  }
  BlockDiagonalPreconditioner Mleaf(tree, diag);
  EXPECT_EQ(Mleaf.level(), leaf);
  EXPECT_THROW(BlockDiagonalPreconditioner(tree, diag, leaf + 1), InvalidArgument);
  EXPECT_THROW(BlockDiagonalPreconditioner(tree, BlockFunction{}, 0), InvalidArgument);
  BlockFunction zero = [](const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c, cd* out) {
    for (std::size_t p = 0; p < r.size() * c.size(); ++p) out[p] = 0.0;
  };
  EXPECT_THROW(BlockDiagonalPreconditioner(tree, zero, leaf), NumericalError);
}

TEST(BemBlockDiagonal, ReducesGmresIterationsAtKa5) {
  // Unit sphere, ka = 5, 1280 elements (about 8 elements per wavelength); measured: 19 iterations
  // without, 16 with mu = 64 (level 2), 12 with mu = 256 (level 1). The sanitizer build uses
  // octasphere(3), 512 elements (1/6 of the dense work), with mu = 16 and 64 so that the blocks
  // are again those of octree levels 2 and 1; measured: 17, 15, 11 iterations.
  HelmholtzBemOptions o;
  o.gmres.rtol = 1e-6;
  HelmholtzBemDense plan(kSanitized ? octasphere(3) : icosphere(3), 5.0, o);
  const auto inc = plane_wave(plan.mesh(), 5.0, {0, 0, 1});
  PreconditionedSolveOptions none;
  none.kind = PreconditionerKind::None;
  PreconditionedSolveInfo i0;
  const auto s0 = solve_preconditioned(plan, inc, none, &i0);
  const auto ref = plan.solve(inc);
  EXPECT_EQ(s0.iterations, ref.iterations);
  std::printf("  assembly %.2f s; no preconditioner: %d iterations, GMRES %.3f s\n", plan.assembly_seconds(),
              s0.iterations, i0.gmres_seconds);
  int prev = s0.iterations;
  for (int mu : kSanitized ? std::vector<int>{16, 64} : std::vector<int>{64, 256}) {
    PreconditionedSolveOptions bd;
    bd.tree.max_leaf = mu;
    PreconditionedSolveInfo info;
    const auto s = solve_preconditioned(plan, inc, bd, &info);
    std::printf("  BD (mu = %d, level %d of leaf %d): %zu blocks (largest %zu), %d iterations, set-up %.3f s, "
                "GMRES %.3f s, %ld applications %.4f s\n",
                mu, info.bd_level, info.leaf_level, info.blocks, info.largest_block, s.iterations, info.setup_seconds,
                info.gmres_seconds, info.precond_applications, info.precond_apply_seconds);
    EXPECT_TRUE(s.converged);
    EXPECT_LT(s.iterations, s0.iterations);
    EXPECT_LE(s.iterations, prev);
    prev = s.iterations;
    EXPECT_LT(rel_diff(s.u, s0.u), 1e-4);
  }
}

}  // namespace
