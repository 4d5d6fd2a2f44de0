#pragma once
/// @file sem_schwarz.hpp
/// Overlapping Schwarz smoothers of the spectral-element p-multigrid (seed 003, sections 4-5;
/// nekRS / Nek5000 "ASM" and "RAS" smoothers): every element extended by one layer of GLL nodes
/// (overlap 1) is a subdomain; its local problem is solved approximately by the fast
/// diagonalisation method (FDM: Lynch, Rice & Thomas, Numer. Math. 6 (1964) 185; Deville, Fischer
/// & Mund, "High-Order Methods for Incompressible Fluid Flow", CUP 2002, section 4.4; Fischer,
/// Miller & Tufo 2000 / Lottes & Fischer, J. Sci. Comput. 24 (2005) 45 for the Schwarz smoother).
///
/// Extended grid of element e (order p, N = p + 1): N + 2 points per reference axis, extended
/// index a = 0 .. N + 1: a = 0 is the neighbour's node one GLL step beyond e's face (the
/// neighbour's local node p - 1 along its axis normal to the shared face), a = 1 .. N are e's nodes
/// 0 .. p, a = N + 1 the other neighbour's node 1 step inside. Extended node (a, b, c) has
/// extended local index a + (N+2) b + (N+2)^2 c (r fastest, as SemSpace's local order).
/// Overlap nodes across an edge or a vertex are found by crossing faces one axis at a time (r,
/// then s, then t): unique on meshes where 4 elements meet at an interior edge and 8 at an
/// interior vertex (box and Kershaw meshes); elsewhere this path is the documented choice.
///
/// FDM (the local operator replaced by that of a box): per element and axis d, the 1-D SEM
/// stiffness A_d and (diagonal GLL) mass B_d assembled over the three 1-D elements [left
/// neighbour, e, right neighbour] of lengths h_l, h_e, h_r (each element's length along the axis:
/// over its GLL lines along that axis, of lengths L_jk, the weighted harmonic mean of the squares
/// (sum w_j w_k / sum w_j w_k L_jk^-2)^(1/2), Nek5000's / nekRS's plane_space; a neighbour's along
/// its axis normal to the shared face; issue 33, before: the mean of the four edges), restricted
/// to the N + 2 extended points (so homogeneous Dirichlet one node beyond the overlap: the
/// restriction of the global operator). Where e's face is on the physical (Dirichlet) boundary
/// there is no neighbour: the extension point and e's boundary node are removed. Then
/// A_d S_d = B_d S_d Lambda_d (S_d^T B_d S_d = I; Eigen's GeneralizedSelfAdjointEigenSolver),
///   A_box = B_t x B_s x A_r + B_t x A_s x B_r + A_t x B_s x B_r,
///   A_box^-1 = (S_t x S_s x S_r) (I x I x Lambda_r + I x Lambda_s x I + Lambda_t x I x I)^-1
///              (S_t x S_s x S_r)^T,
/// applied by tensor contractions (4 (n_r + n_s + n_t) n^3 flops per element, n = N + 2).
/// On an axis-aligned box mesh of equal elements A_box is exactly R_e A R_e^T (the global
/// operator restricted to the extended nodes): the smoother is then the exact-local-solve ASM.
///
/// ASM: z = sum_e R_e^T A_box,e^-1 R_e r (symmetric positive definite).
/// RAS (Cai & Sarkis, SIAM J. Sci. Comput. 21 (1999) 792): z = sum_e Rt_e^T A_box,e^-1 R_e r with
/// Rt_e the restriction to the nodes that e OWNS: every free node is owned by the first element
/// (in element order) that has it among its own N^3 nodes, so each node's value is taken from
/// exactly one local solution (a 0/1 partition of unity, no averaging). (nekRS instead weights
/// the element's own nodes by the inverse multiplicity; we keep the owner rule because it is the
/// restricted method as defined by Cai & Sarkis, writes each node once (no accumulation), and
/// keeps each local solution unaveraged.) Not symmetric.
/// ASMWeighted: z = W^1/2 (sum_e R_e^T A_box,e^-1 R_e) W^1/2 r with W = diag(1 / m_g), m_g the
/// number of subdomains (extended grids) that contain free node g. nekRS / Nek5000 multiply the
/// ASM result by such counting weights on one side; splitting them symmetrically keeps S SPD
/// (Lanczos, PCG). Why weights: unweighted, the high-frequency modes of S A spread over
/// [~1, ~m_max] (a mode inside one element sees one subdomain, a mode at an element corner eight
/// and more: rho(S A) = 10.6 on a box at p = 3), and a Chebyshev smoother on [0, lambda_max] then
/// damps the modes near 1 little; weighted, they cluster near 1 (rho(S_w A) ~ 1.35).
///
/// Parallel application, batched and coloured (issue 33): the elements of a colour are solved
/// together, one element per SIMD lane, on the full (N+2)^3 grid (fdm_batch.hpp, as
/// SemLaplacian's kernel; an element next to the Dirichlet boundary has its factors embedded in
/// that size with identity blocks on the points it does not keep, which gather 0 and are never
/// written); the elements are coloured (greedily, in element order) so that the
/// extended grids of one colour share no free node, and colour by colour every batch adds its
/// local solutions into z directly: no atomics, every node receives its contributions in the
/// same order (colour, then batch), the result bitwise independent of the thread count.
/// SchwarzPrecision::Single runs the local solves in float.
///
/// Use in a p-multigrid (the V-cycle of vcycle.hpp over SEM levels): for every level j of order
/// >= 2 set Level::schwarz = std::make_shared<SemSchwarz>(laplacian_j, kind, threads) and
/// VCycleOptions::smoother.base = BaseSmoother::ASM (kind ASM or ASMWeighted) or RAS (kind RAS);
/// the cycle then builds that level's Chebyshev smoother over S (Smoother's external-S
/// constructor, smoother.hpp). ASMWeighted is the better Chebyshev base (see above). The order-1
/// coarse level keeps no Schwarz operator (its coarse solver replaces smoothing).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "elliptica/core/operator.hpp"
#include "elliptica/multigrid/sem_operator.hpp"

namespace elliptica::multigrid {

/// ASM: additive; ASMWeighted: additive with symmetric inverse-multiplicity weights; RAS:
/// restricted additive (file docstring).
enum class SchwarzKind { ASM, ASMWeighted, RAS };

/// The arithmetic of the local solves (SemSchwarz): Double; or Single, the fast-diagonalisation
/// factors, the local arrays, the gathered W^1/2 r and the sums over the extended grids in float
/// (twice the elements per SIMD vector, half the bytes gathered and scattered; as nekRS, which
/// runs its Schwarz smoother in FP32); the weights and z = W^1/2 (sums) in double.
/// Single makes S a perturbation of the Double S by about 1e-7 relative (float rounding of the
/// input, the local solves and the at most 27 terms of a sum): not exactly symmetric, harmless in
/// a preconditioner (tested: the same PCG iteration counts), not for tests of S itself.
enum class SchwarzPrecision { Double, Single };
/// "fp64" / "fp32"; InvalidArgument naming the value otherwise. And back.
SchwarzPrecision schwarz_precision_from_string(const std::string& s);
std::string to_string(SchwarzPrecision p);

/// How SemSchwarz solves its local problems.
/// - FDM: subdomain = the element extended by one GLL layer (overlap 1), its operator replaced by
///   a box's and solved by fast diagonalisation (the file docstring; nekRS's smoother). Cheap
///   ((N+2)^4 flops and O((N+2)^2) factors an element) but blind to shear: on an element sheared by
///   a slope s no box is closer than (1 + |c|) / (1 - |c|) spectrally, c = s / (1 + s^2)^1/2
///   (262 at the Kershaw slope 8.06 of eps = 0.05; docs/multigrid.md, issue 33).
/// - Element: subdomain = the element's own N^3 nodes (the free ones; neighbours overlap only on
///   shared faces, edges and vertices), local problem A_e = R_e A R_e^T solved exactly, by a dense
///   inverse computed at set-up (Cholesky) and applied as a matrix-vector product. Exact for any
///   geometry; (N^3)^2 values an element (p = 3: 16 KB in fp32; p = 5: 187 KB; p = 7: 1 MB), so
///   for low orders or small meshes. A_e is assembled from the element stiffness matrices of e and
///   of its neighbours on the shared nodes (sem_element_stiffness, sem_operator.hpp).
enum class SchwarzLocalSolver { FDM, Element };
/// "fdm" / "element"; InvalidArgument naming the value otherwise. And back.
SchwarzLocalSolver schwarz_local_solver_from_string(const std::string& s);
std::string to_string(SchwarzLocalSolver l);

/// The 1-D operators of one axis of one element's extended grid and their generalized
/// eigen-decomposition (fdm.cpp).
struct FdmAxis {
  int lo = 0;                  ///< first extended index kept (0, or 2 at a Dirichlet face)
  int n = 0;                   ///< number of extended points kept (N + 2 minus 2 per Dirichlet face)
  std::vector<double> A;       ///< n x n 1-D stiffness, row-major
  std::vector<double> B;       ///< n diagonal 1-D GLL mass
  std::vector<double> S;       ///< n x n eigenvectors (columns), S^T B S = I, row-major
  std::vector<double> lambda;  ///< n eigenvalues (> 0)
};

/// The 1-D stiffness and mass of an extended grid (see the file docstring): the reference GLL
/// stiffness Ahat = D^T W D and mass W (order p) scaled by 2/h and h/2 for the three 1-D elements
/// of lengths h_left, h_mid, h_right, assembled on the N + 2 extended points, then rows and
/// columns [lo, lo + n) kept, lo = 2 when left_dirichlet (else 0), n = N + 2 - 2 left_dirichlet -
/// 2 right_dirichlet; the lengths of absent neighbours are ignored. Then the generalized
/// eigenproblem A S = B S Lambda. Requires p >= 2 (for p = 1 the overlap point is a vertex
/// shared with the next element, whose contribution this 3-element assembly lacks).
/// InvalidArgument for p < 2 or p > kMaxSemOrder, or a used length that is not finite and > 0;
/// NumericalError when the eigensolver fails.
FdmAxis fdm_axis(int order, double h_left, double h_mid, double h_right, bool left_dirichlet,
                 bool right_dirichlet);

/// u <- A_box^-1 u for the box operator of three axes (r, s, t), by fast diagonalisation:
/// u holds n_r n_s n_t values, r fastest. work: at least n_r n_s n_t doubles. Does not throw.
void fdm_solve(const FdmAxis& r, const FdmAxis& s, const FdmAxis& t, double* u, double* work);

/// The overlapping Schwarz operator S ~ A^-1 of a SemLaplacian (over its free nodes).
class SemSchwarz final : public LinearOperator<double> {
 public:
  /// Builds the extended-grid maps, the FDM factors of every element (3 generalized eigenproblems
  /// of size <= N + 2 each), the colouring and the batches. Memory about ne (N+2)^3 (4 + 4, RAS
  /// + 4) bytes (extended grids, batch maps) plus ne 3 (N+2)^2 40 bytes (FDM factors and their
  /// batched copies, half of the latter in fp32) plus 2 n values of the precision (the gathered
  /// input and the sums), checked with require_memory before allocating
  /// (ResourceError). `threads`: team size of the set-up loops and of apply() (0:
  /// omp_get_max_threads() at the call). `precision`: the local solves' arithmetic.
  /// Throws InvalidArgument for a null operator, order p < 2 (the p = 1 level of a p-multigrid is
  /// the coarse level, solved by AMG), threads < 0; NumericalError when a 1-D eigenproblem fails.
  /// `local` = Element (SchwarzLocalSolver): no extended grids and no FDM factors; instead the
  /// dense inverse of every element's A_e (ne (N^3)^2 values of the precision, checked with
  /// require_memory: ResourceError) and the node lists; colours are SemSpace::colours() (no two
  /// elements of a colour share a node). NumericalError when an A_e is not positive definite
  /// (cannot happen for a valid mesh: A_e is a principal submatrix of the SPD A).
  SemSchwarz(std::shared_ptr<const SemLaplacian> A, SchwarzKind kind, int threads = 0,
             SchwarzPrecision precision = SchwarzPrecision::Double,
             SchwarzLocalSolver local = SchwarzLocalSolver::FDM);

  std::size_t size() const override { return n_; }
  /// z = S r (lengths size()). Not reentrant (work arrays of the operator). Throws only
  /// std::bad_alloc, when called with more threads than the constructor sized its per-thread
  /// scratch for (threads = 0 and omp_get_max_threads() grown since) and the scratch cannot grow.
  void apply(const double* r, double* z) const override;
  /// ASM, ASMWeighted: true (symmetric positive definite). RAS: false.
  bool is_symmetric() const override { return kind_ != SchwarzKind::RAS; }

  SchwarzKind kind() const { return kind_; }
  SchwarzPrecision precision() const { return precision_; }
  SchwarzLocalSolver local_solver() const { return local_; }
  /// Number of colours of apply()'s schedule: elements of one colour have disjoint extended grids
  /// (greedy colouring in element order; 8 on a structured mesh at p >= 3, more at p = 2 where
  /// the overlaps of elements two apart meet); Element local solver: SemSpace::colours() (no
  /// shared vertex; 8 on a structured mesh).
  std::size_t num_colours() const { return colour_batch_.size() - 1; }
  int threads() const { return threads_; }
  const SemLaplacian& laplacian() const { return *A_; }

  /// Global ids of element e's extended grid ((N+2)^3, extended local order of the file
  /// docstring): a free node id, or -1 for a point outside the mesh or on the Dirichlet boundary.
  /// InvalidArgument for e out of range, or for the Element local solver (no extended grids).
  std::vector<std::int32_t> extended_nodes(std::size_t e) const;
  /// The FDM factors of element e along axis d (0 = r, 1 = s, 2 = t). InvalidArgument when out of
  /// range, or for the Element local solver (no FDM factors).
  const FdmAxis& fdm(std::size_t e, int d) const;
  /// Element local solver: the free global ids of element e's own nodes in local order (q = i +
  /// N j + N^2 k, Dirichlet nodes skipped): the rows and columns of its A_e. InvalidArgument for e
  /// out of range or for the FDM local solver.
  std::vector<std::int32_t> element_nodes(std::size_t e) const;

 private:
  template <typename T>
  void apply_in(const double* r, double* z) const;  // apply() with local solves in precision T
  // The Element local solver (sem_schwarz_element.cpp): set-up and apply() in precision T.
  void build_element_solves();
  template <typename T>
  void apply_element(const double* r, double* z) const;
  // The coloured gather / local solve / scatter loop both apply with (sem_schwarz_apply.hpp).
  template <typename T, typename Local>
  void apply_coloured(const double* r, double* z, std::size_t scratch_values, Local&& local) const;

  std::shared_ptr<const SemLaplacian> A_;
  SchwarzKind kind_;
  int threads_ = 0;
  SchwarzPrecision precision_ = SchwarzPrecision::Double;
  SchwarzLocalSolver local_ = SchwarzLocalSolver::FDM;
  std::size_t n_ = 0, ne_ = 0, m3_ = 0;  // free nodes, elements, (N+2)^3
  // Element local solver: element e's free own nodes eidx_[eoff_[e] .. eoff_[e+1]) (RAS: edst_,
  // the node an entry writes, n_ where e does not own it), its dense A_e^-1 (m_e x m_e,
  // symmetric) at emat_off_[e] in emat_ or ematf_; the elements in colour order in batch_elems_,
  // colour c's at [colour_batch_[c], colour_batch_[c+1]) (lanes_ = 1).
  std::vector<std::size_t> eoff_, emat_off_;
  std::vector<std::int32_t> eidx_, edst_;
  std::vector<double> emat_;
  std::vector<float> ematf_;
  std::vector<std::int32_t> ext_;        // ne x (N+2)^3 global free ids or -1
  std::vector<FdmAxis> fdm_;             // ne x 3
  std::vector<double> wsqrt_;            // ASMWeighted: 1 / sqrt(multiplicity) per free node
  // Batches of the local solves (fdm_batch.hpp): elements of one colour, one per SIMD lane, on the
  // full (N+2)^3 grid; elements of one colour have disjoint extended grids.
  int lanes_ = 1;                          // elements per batch (SIMD lanes)
  std::vector<std::int32_t> batch_elems_;  // nb x lanes_ element ids, -1 = padded lane
  std::size_t fac_stride_ = 0;             // values of bfac_ / bfacf_ per batch: 3 (2 (N+2)^2 + N+2) lanes_
  std::size_t buf_stride_ = 0;             // entries of bidx_ / sidx_ per batch: (N+2)^3 lanes_
  std::vector<std::size_t> colour_batch_;  // colours + 1: the batches of colour c
  std::vector<double> bfac_;               // per batch and axis: S, S^T (n^2 lanes_), lambda (n lanes_)
  std::vector<float> bfacf_;               // the same in float (SchwarzPrecision::Single)
  std::vector<std::int32_t> bidx_;         // per batch entry: the free node it gathers from / adds to (n: none)
  std::vector<std::int32_t> sidx_;         // RAS: the node an entry writes (its element owns it; n: none)
  mutable std::vector<double> scratch_;    // per thread: 2 (N+2)^3 lanes_ (+ alignment) values of the precision
  mutable std::vector<double> rx_;         // n + 1: W^1/2 r (index n: the sentinel, 0)
  mutable std::vector<double> zx_;         // n: the sums (the scatter skips the sentinel)
  mutable std::vector<float> rxf_, zxf_;   // rx_, zx_ of fp32 local solves (only these allocated)
};

}  // namespace elliptica::multigrid
