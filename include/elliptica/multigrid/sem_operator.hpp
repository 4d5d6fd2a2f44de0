#pragma once
/// @file sem_operator.hpp
/// The spectral-element (SEM) discretisation of the Poisson problem -Laplace(u) = f with
/// homogeneous Dirichlet conditions on the whole boundary, applied matrix-free (seed 003, sections
/// 4-5; Deville, Fischer & Mund, "High-Order Methods for Incompressible Fluid Flow", CUP 2002,
/// chapter 4): tensor-product Lagrange bases of order p on the Gauss-Lobatto-
/// Legendre (GLL) points of each hexahedron, GLL quadrature (the mass matrix is diagonal), the
/// trilinear map of each element, gather-scatter (direct stiffness summation) over the nodes
/// that elements share.
///
/// Conventions
/// - Order p, N = p + 1 GLL points per axis; element-local node (i, j, k) (i along r, j along s,
///   k along t, each 0..p in increasing GLL order) has local index q = i + N j + N^2 k (x
///   fastest). Reference point (x_i, x_j, x_k) of gll_rule(p); physical point by the element's
///   trilinear map (sem_mesh.hpp: corner order, faces).
/// - Global nodes: one per distinct GLL point of the mesh, shared between elements through the
///   mesh's vertex indices (vertices; edges by their two vertex indices; faces by their four),
///   never through coordinates. Numbering: the FREE nodes (not on the boundary) come first,
///   0 .. num_free() - 1, then the Dirichlet nodes num_free() .. num_nodes() - 1; within each
///   group in order of first appearance in the element loop. So a vector over the free nodes is
///   the first num_free() entries of a vector over all nodes.
/// - Boundary: the faces not shared by two elements (boundary_faces); every node on them is
///   Dirichlet (u = 0). The operators below are over the free nodes only (the Dirichlet rows and
///   columns are REMOVED, not kept as identity rows): size() = num_free().
///
/// Sources: stiffness a(u, v) = sum_e sum_q grad_r(v)^T G_q grad_r(u), with
/// G_q = w_i w_j w_k |J| J^-1 J^-T, J = dx/dr (Deville, Fischer & Mund 2002, chapter 4: the
/// deformed-element Laplacian of the SEM that seed 003 solves through nekRS, its section 4 and
/// reference [35]); mass B = w_i w_j w_k |J| (GLL quadrature on the nodes: diagonal).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/gll.hpp"
#include "elliptica/multigrid/sem_mesh.hpp"

namespace elliptica::multigrid {

/// Orders of the matrix-free kernels (compiled for each p, chosen at run time).
inline constexpr int kMinSemOrder = 1;
inline constexpr int kMaxSemOrder = 10;

/// A mesh with an order p: global numbering, coordinates, Dirichlet mask and the geometric
/// factors of every GLL point. Immutable after construction; all members are safe to read from
/// several threads.
class SemSpace {
 public:
  /// Checks the mesh (check_hex_mesh), then det(dx/dr) > 0 at every GLL point of every element.
  /// Memory: about ne N^3 (4 + 48) bytes (local-to-global map, geometric factors) plus 24 bytes
  /// per node (coordinates), checked with require_memory before allocating.
  /// Throws InvalidArgument for p outside [kMinSemOrder, kMaxSemOrder], for a bad mesh (the
  /// messages of check_hex_mesh; "element E (0-based) is inverted: Jacobian determinant D at GLL
  /// point (i, j, k)"), ResourceError when the space needs more memory than memory_limit_bytes()
  /// or more than 2^31 - 1 nodes (32-bit indices).
  /// `threads`: threads of the set-up loops over elements (0: omp_get_max_threads()).
  SemSpace(HexMesh mesh, int order, int threads = 0);

  int order() const { return p_; }
  /// N = p + 1.
  int points_1d() const { return p_ + 1; }
  /// N^3.
  std::size_t nodes_per_element() const { return n3_; }
  std::size_t num_elements() const { return mesh_.num_elements(); }
  const HexMesh& mesh() const { return mesh_; }
  /// All global nodes (free + Dirichlet).
  std::size_t num_nodes() const { return num_nodes_; }
  /// Free (non-Dirichlet) nodes: the global ids [0, num_free()).
  std::size_t num_free() const { return num_free_; }

  /// Local-to-global map, ne x N^3 (row e: the global ids of element e's nodes in local order
  /// q = i + N j + N^2 k). An id >= num_free() is a Dirichlet node.
  const std::vector<std::int32_t>& local_to_global() const { return l2g_; }
  /// Node coordinates, num_nodes() x 3 (the trilinear map at the GLL points).
  const std::vector<double>& coordinates() const { return coords_; }
  /// 1 for a Dirichlet node, 0 for a free one; length num_nodes() (= (id >= num_free()), made
  /// explicit for callers that work on all nodes).
  std::vector<std::uint8_t> dirichlet_mask() const;

  /// GLL nodes and weights of order p.
  const GllRule& gll() const { return gll_; }
  /// 1-D differentiation matrix D (N x N, row-major, D_ij = l_j'(x_i), gll.hpp).
  const std::vector<double>& derivative() const { return D_; }
  /// Geometric factors, STORED (not recomputed): ne x 6 x N^3, element-major, then factor
  /// c = 0..5 = (G_rr, G_rs, G_rt, G_ss, G_st, G_tt) of the symmetric
  /// G = w_i w_j w_k |J| J^-1 J^-T, then the local node q. 6 N^3 doubles per element.
  const std::vector<double>& geometric_factors() const { return G_; }
  /// Assembled diagonal GLL mass matrix over all nodes (length num_nodes()): B = sum_e of
  /// w_i w_j w_k |J| at the element's copies of the node. sum(B) = volume of the mesh exactly for
  /// p >= 2 (|J| of a trilinear map has degree <= 2 in each reference variable; GLL is exact to
  /// degree 2p - 1) and for affine elements at any p. The right-hand side of -Laplace u = f is b = (B f)[0 .. num_free()).
  std::vector<double> mass() const;
  /// Jacobian determinant |dx/dr| of element e at its local node q.
  double jacobian_determinant(std::size_t e, std::size_t q) const;

  /// Element colours for the race-free scatter: colour c holds elements no two of which share a
  /// vertex (hence no global node); greedy colouring in element order over vertex adjacency (8
  /// colours on a structured box). Every element is in exactly one colour.
  const std::vector<std::vector<std::int32_t>>& colours() const { return colours_; }

 private:
  HexMesh mesh_;
  int p_ = 0;
  std::size_t n3_ = 0, num_nodes_ = 0, num_free_ = 0;
  GllRule gll_;
  std::vector<double> D_;
  std::vector<std::int32_t> l2g_;
  std::vector<double> coords_;
  std::vector<double> G_;
  std::vector<std::vector<std::int32_t>> colours_;
};

/// The SEM stiffness matrix A (the weak Laplacian) over the free nodes, applied matrix-free.
///
/// y = A x: for each element, gather x into the local vector (Dirichlet nodes read as 0), the
/// local gradient by sum factorisation (D along r, s, t), multiplication by the 6 geometric
/// factors (15 N^3 flops), the transposed derivatives, scatter-add into y (direct stiffness
/// summation; Dirichlet nodes dropped). For affine elements (affine_elements()) the factors are
/// w_i w_j w_k times 6 constants of the element, read instead of the 6 N^3 stored ones.
///
/// Kernel (templates on N, p = 1..10, run-time dispatch; every N-loop compile-time):
/// - vectorised ACROSS elements (Kronbichler & Kormann 2012, "A generic interface for parallel
///   cell-based finite element operator application", Comput. Fluids 63): W elements (a batch;
///   W = 4 doubles with AVX2, 8 where __AVX512F__ is defined) at once, every local array
///   interleaved [q][lane] (node q of the W elements in one SIMD register), so the 1-D
///   contractions are register-blocked scalar-times-vector FMAs and short lines (p = 3: N = 4) waste
///   no lane. Sum factorisation in the slab-fused order (Deville, Fischer & Mund 2002, ch. 4):
///   t-derivative of the whole element, then per t-slab the r- and s-derivatives, the geometric
///   factors and the transposed r, s contractions, finally the transposed t contraction (2 N^3 + 2 N^2
///   vectors of work space);
/// - contractions in the even-odd form (D is centro-antisymmetric, D[N-1-i][N-1-j] = -D[i][j]:
///   Solomonoff 1992; Kronbichler & Kormann 2019, ACM TOMS 45(3)): N^2/2 + O(N) multiply-adds per
///   line instead of N^2;
/// - factors: an affine batch uses 6 constants per lane; the other batches read a copy of their
///   stored factors made by the constructor, interleaved [q][factor][lane] (48 N^3 bytes per
///   non-affine element more memory, one stream of aligned loads instead of 6 W strided ones);
/// - schedule (fixed by the constructor): blocks of consecutive elements (about 8192 local nodes,
///   at least ~32 blocks), greedily coloured so that no two blocks of a colour share a node; each
///   block's elements, affine ones first, cut into batches (the last padded with empty lanes);
///   gather/scatter branch-free, lane by lane, the next batch's x and y entries prefetched.
/// Parallel (above kParallelMinRows free nodes, core/parallel.hpp; one thread below): colour by
/// colour, `omp for` over the blocks of the colour, the batches of a block in order, so no two
/// threads ever add into the same y entry (no atomics, no per-thread copies of y, no reduction
/// pass); the schedule is the same for every thread count, so every y entry sums its contributions
/// in the same order and y is bitwise the same with 1 or n threads. (Per-thread copies of y would
/// cost threads x n extra memory traffic per apply.) Blocks rather than element colours: an
/// element colour spreads over the whole mesh, and the gather/scatter then streamed x and y from
/// memory once per colour (measured: ~70% of the time at p = 3); a block's nodes stay in cache.
/// apply() is const and reentrant; nothing in it throws (no OpenMP region can leak an exception).
class SemLaplacian final : public LinearOperator<double> {
 public:
  /// `threads`: team size of apply() (0: omp_get_max_threads() at the call). Builds apply()'s
  /// schedule and the interleaved copy of the non-affine elements' factors (48 N^3 bytes per
  /// non-affine element, padded to whole batches). Throws InvalidArgument for a null space or
  /// threads < 0, ResourceError when that copy needs more than memory_limit_bytes().
  explicit SemLaplacian(std::shared_ptr<const SemSpace> space, int threads = 0);

  std::size_t size() const override { return space_->num_free(); }
  void apply(const double* x, double* y) const override;
  bool is_symmetric() const override { return true; }

  const SemSpace& space() const { return *space_; }
  std::shared_ptr<const SemSpace> space_ptr() const { return space_; }
  int threads() const { return threads_; }

  /// The exact diagonal of A (length size()), from the geometric factors (not by applying A to
  /// unit vectors): for local node (i, j, k),
  ///   a_qq = sum_a D_ai^2 G_rr(a,j,k) + sum_b D_bj^2 G_ss(i,b,k) + sum_c D_ck^2 G_tt(i,j,c)
  ///          + 2 D_ii D_jj G_rs(i,j,k) + 2 D_ii D_kk G_rt(i,j,k) + 2 D_jj D_kk G_st(i,j,k),
  /// summed over the elements sharing the node (as nekRS's exact SEM Jacobi diagonal).
  std::vector<double> diagonal() const;

  /// The assembled matrix of A (size() x size(), CSR; for tests and the p = 1 coarse level of the
  /// p-multigrid). Element matrices by quadrature from the geometric factors,
  /// A_e = sum_q B_q^T G_q B_q with B_q the 3 x N^3 reference gradient at q (3N - 2 nonzero
  /// columns; 9 N^5 flops per element), independent of the sum-factorisation kernel of apply(),
  /// then summed into the free rows/columns. Sequential. ResourceError when the matrix (at most
  /// (2p + 1)^3 entries a row) needs more than memory_limit_bytes().
  CsrMatrix assemble() const;

  /// y_e = A_e u_e for element e, the UNMASKED local stiffness (N^3 local values in, N^3 out,
  /// local order): the element-local operator of the Schwarz smoothers. The one-element form of
  /// apply()'s kernel (same factors, full N x N contractions vectorised along the element's own
  /// lines): equal to apply()'s local result to rounding, not bit for bit.
  /// InvalidArgument for e out of range.
  void apply_element(std::size_t e, const double* u, double* y) const;

  /// Elements found affine (parallelepipeds: J constant, so G(q) = w_i w_j w_k C with 6
  /// constants C per element, to 1e-13 relative): apply() reads those 6 numbers instead of the
  /// 6 N^3 stored factors (all elements of a box, the layers 0 and 5 of a Kershaw mesh).
  std::size_t affine_elements() const { return num_affine_; }

 private:
  std::shared_ptr<const SemSpace> space_;
  int threads_ = 0;
  std::vector<double> Dt_;           // D transposed
  std::vector<double> w3_;           // w_i w_j w_k, N^3
  std::vector<std::uint8_t> affine_; // per element
  std::vector<double> C_;            // 6 per element (meaningful where affine_)
  std::size_t num_affine_ = 0;
  // apply()'s schedule: blocks of consecutive elements, sorted by block colour; each block's
  // elements (affine ones first) in batches of W (the SIMD width in doubles), padded with -1.
  // Block b = batches [block_batches_[b], block_batches_[b + 1]); colour c = blocks
  // [colour_blocks_[c], colour_blocks_[c + 1]); batch_affine_[i]: every element of batch i affine.
  std::vector<std::int32_t> batch_elements_;
  std::vector<std::size_t> block_batches_;
  std::vector<std::size_t> colour_blocks_;
  std::vector<std::uint8_t> batch_affine_;
  std::vector<double> Gi_;              // non-affine batches' factors interleaved [q][c][lane]
  std::vector<std::size_t> batch_goff_; // batch i's offset in Gi_
};

/// Flops and bytes of one SemLaplacian::apply per element, as counted from the kernel (for the
/// throughput benchmark): flops = 6 N^4 + 23 N^3 (- 18 N^2 for odd N): the six contractions in
/// the even-odd form, N^2 + N flops per line (N^2 + N - 3 for odd N) on 6 N^2 lines, 2 N^3 adds
/// of the two accumulating ones, geometric factors 15 N^3 (a multiply-add counts 2); 3 N^3 more
/// for an affine element (the weights). (Until the batched kernel: 12 N^4 + 17 N^3, full N x N
/// contractions.) Bytes streamed per element = 48 N^3 (the factors; 48 for an affine element's
/// 6 constants) + 4 N^3 (local-to-global map); and per global node 32 bytes (x read, y zeroed,
/// y read + written by the scatter, in the ideal cache case).
struct SemApplyCost {
  double flops_per_element = 0;
  double element_bytes = 0;  ///< streamed per element (factors + map)
  double vector_bytes_per_node = 32;  ///< x read, y zeroed, y read + written by the scatter
};
/// InvalidArgument for an order outside [kMinSemOrder, kMaxSemOrder].
SemApplyCost sem_apply_cost(int order, bool affine = false);

/// The element stiffness matrix of element e: K_e(m, n) = sum_q grad phi_m(q)^T G(q) grad phi_n(q)
/// over the element's GLL points q, G = w_i w_j w_k |J| J^-1 J^-T (geometric_factors(); the
/// reference gradients of the Lagrange basis at GLL points: d/dr phi_(m,b,c)(a,b,c) = D[a][m],
/// Deville, Fischer & Mund 2002, section 4.3). K_e is N^3 x N^3, row-major, both indices in the
/// local order q = i + N j + N^2 k, Dirichlet nodes included: SemLaplacian's operator is
/// A = sum_e R_e K_e R_e^T restricted to the free nodes. out: N^6 doubles, overwritten. 9 N^5
/// multiply-adds. InvalidArgument for e out of range or a null out.
void sem_element_stiffness(const SemSpace& V, std::size_t e, double* out);

}  // namespace elliptica::multigrid
