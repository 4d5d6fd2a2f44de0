#pragma once
/// @file helmholtz.hpp
/// Dense piecewise-constant collocation BEM for 3D exterior Helmholtz scattering (seed 001, which
/// follows Burton & Miller, Proc. R. Soc. Lond. A 323 (1971) 201, with P0 elements collocated at
/// the centroids of flat triangles). No fast multipole method yet: O(N^2) memory and work.
///
/// Conventions
/// - Time dependence e^{-i omega t}; G(x,y) = e^{ikr}/(4 pi r), r = |x - y|; k complex with
///   Re k >= 0, Im k >= 0, k != 0 (outgoing / decaying waves).
/// - n is the outward unit normal of the Mesh (it points into the exterior acoustic domain).
/// - Surface operators on P0 densities (row i: target x = centroid of element i, normal n_x;
///   column j: element T_j, normal n_y):
///     S [i,j] = int_Tj G(x,y) dy                                  (single layer)
///     K [i,j] = PV int_Tj dG/dn_y(x,y) dy                         (double layer)
///     K'[i,j] = PV int_Tj dG/dn_x(x,y) dy                         (adjoint double layer)
///     W [i,j] = FP int_Tj d^2G/(dn_x dn_y)(x,y) dy                (hypersingular)
///   W is the normal derivative of the double-layer potential, W phi = d/dn_x D phi, which is
///   continuous across the surface (NOTE: the opposite sign of the "hypersingular operator"
///   -d/dn D of Bempp and of design/FORMULAS.md). For G = 1/(4 pi r) on a closed surface:
///   K 1 = -1/2 (the double-layer potential of 1 is -1 inside, 0 outside, -1/2 on the surface),
///   W 1 = 0, and on the unit sphere S 1 = 1, K' 1 = -1/2.
/// - Jump relations (exterior traces, outward n): D phi -> (K + 1/2) phi,
///   dn S q -> (K' - 1/2) q (Colton & Kress, "Inverse Acoustic and Electromagnetic Scattering
///   Theory", Thm 3.1; same as Kress "Linear Integral Equations" ch. 6 with the 1/(4 pi) kernel).
/// - Representation (Colton & Kress Thm 2.5 plus Green's 2nd identity for the incident field
///   inside the scatterer), total field u = u_inc + u_sc, q = du/dn (total) on the surface:
///     u_sc(x) = int_Gamma [ u(y) dG/dn_y(x,y) - q(y) G(x,y) ] dy,   x in the exterior.
///   Exterior traces: (1/2 I - K) u + S q = u_inc                       (CBIE)
///                    -W u + (1/2 I + K') q = du_inc/dn                  (HBIE)
/// - Burton-Miller systems solved here (alpha default i/k; Im alpha != 0 removes the interior
///   resonances, Burton & Miller 1971):
///     sound-hard (Neumann, q = 0), unknown u:  (1/2 I - K - alpha W) u = u_inc + alpha du_inc/dn
///       (this is "1/2 I - K + alpha W_bempp" with W_bempp = -W, the form quoted in
///       design/FORMULAS.md and used by Bempp);
///     sound-soft (Dirichlet, u = 0), unknown q: (CBIE + alpha HBIE)/alpha, i.e. second kind
///       (1/2 I + K' + beta S) q = du_inc/dn + beta u_inc,  beta = 1/alpha (= -ik by default;
///       the "0.5 I + K' - i k S" combined form of Bempp / Colton & Kress with eta = k).
///   Both signs were confirmed against the Mie series (tests/test_bem_helmholtz.cpp); flipping
///   the sign of the W term makes the Neumann system inconsistent with its right-hand side.
/// - Accuracy on icosphere meshes (measured, unit sphere, ka = 1..5): sound-hard surface field
///   and far field converge at about O(h^1.5..2); sound-soft at O(h): the adjoint double layer K'
///   of flat P0 panels collocated at centroids is only O(h)-consistent (K' 1 on the inscribed
///   polyhedron differs from -1/2 by O(h)), independent of the quadrature accuracy. A smaller
///   coupling reduces that error (unit sphere, ka = 1, 1280 elements: rel. L2 error of q 3.4e-2
///   with alpha = i/k, 1.0e-2 with alpha = 0.2 i/k, 5.2e-3 for the CBIE alone) and stays robust
///   at the interior eigenvalue ka = pi (1.1e-2 with alpha = 0.2 i/k).
/// - Far field: u_sc(x) = e^{ik|x|}/|x| (u_inf(xhat) + O(1/|x|)), with
///     u_inf(xhat) = 1/(4 pi) int_Gamma [ -ik (xhat . n_y) u(y) - q(y) ] e^{-ik xhat.y} dy.
///   (For the unit plane wave on a sphere this equals (i/k) sum (2n+1) c_n P_n(cos theta).)
///
/// Quadrature (internal helpers: src/bem/quadrature.hpp)
/// - self term (i == j): the 1/r part of S analytically (sum over edges, design/FORMULAS.md;
///   e.g. Hess & Smith 1967 / Newman 1986 for constant panels), the Hadamard finite part of the
///   static hypersingular kernel analytically, FP int_T 1/r^3 = -sum_e (1/d_e)[t/R]_{t1}^{t2}
///   (polar coordinates about x: FP int_0^{R(theta)} r^-2 dr = -1/R(theta)); K, K' self terms
///   are exactly zero on a flat triangle ((x - y).n = 0); the bounded/weakly singular dynamic
///   remainders (e^{ikr} - 1)/(4 pi r) and [e^{ikr}(1 - ikr) - 1]/(4 pi r^3) ~ (k^2/(2r) +
///   i k^3/3)/(4 pi) are integrated with Duffy-transformed Gauss-Legendre rules on the three
///   sub-triangles (x, v_a, v_b) (Duffy, SIAM J. Numer. Anal. 19 (1982) 1260).
/// - other elements: a symmetric triangle rule (1, 3 or 7 points; 7 = Radon's degree-5 rule,
///   Stroud T2:5-1) when |x - c_j| >= near_factor * diam(T_j); otherwise the triangle is split into
///   4 recursively until every piece satisfies that criterion (or max_subdivision is reached).
#include <array>
#include <complex>
#include <cstddef>
#include <optional>
#include <vector>

#include "elliptica/bem/mesh.hpp"
#include "elliptica/krylov/krylov.hpp"

namespace elliptica::bem {

using cplx = std::complex<double>;

/// Dense complex matrix, row-major: (i, j) = data[i * cols + j].
struct CMatrix {
  std::size_t rows = 0, cols = 0;
  std::vector<cplx> data;
  CMatrix() = default;
  CMatrix(std::size_t r, std::size_t c) : rows(r), cols(c), data(r * c) {}
  cplx& operator()(std::size_t i, std::size_t j) { return data[i * cols + j]; }
  const cplx& operator()(std::size_t i, std::size_t j) const { return data[i * cols + j]; }
  bool empty() const { return data.empty(); }
  /// y = A x (x of length cols, y of length rows).
  std::vector<cplx> apply(const std::vector<cplx>& x) const;
};

/// A square CMatrix as a Krylov operator (y = A x), for GMRES on the dense Burton-Miller matrix.
/// Keeps a reference: the matrix must outlive the operator. apply() is row-parallel (OpenMP)
/// for n > 256; each row is summed sequentially, so the result does not depend on the threads.
class DenseMatrixOperator final : public krylov::LinearOperator<cplx> {
 public:
  /// InvalidArgument if A is not square.
  explicit DenseMatrixOperator(const CMatrix& A);
  std::size_t size() const override { return A_.rows; }
  void apply(const cplx* x, cplx* y) const override;

 private:
  const CMatrix& A_;
};

/// Which operators assemble_dense builds (bit mask).
enum OperatorSet : unsigned {
  kSingleLayer = 1u,
  kDoubleLayer = 2u,
  kAdjointDoubleLayer = 4u,
  kHypersingular = 8u,
  kAllOperators = 15u
};

struct QuadratureOptions {
  int far_points = 7;           ///< triangle rule for well-separated elements: 1, 3 or 7 points
  double near_factor = 2.5;     ///< subdivide while |x - c| < near_factor * diam (> 0)
  int max_subdivision = 12;     ///< recursion depth cap of the near-field subdivision (>= 0)
  int singular_order = 8;       ///< Gauss-Legendre points per direction of the Duffy rules (>= 1)
};

struct DenseOperators {
  unsigned which = 0;  ///< OperatorSet bits that were assembled; the others are empty
  CMatrix S, K, Kp, W;
  double seconds = 0;  ///< wall time of the assembly
};

/// Assemble the collocation matrices (see the file comment for definitions and conventions).
/// Throws InvalidArgument on an empty mesh, bad vertex indices, degenerate triangles, a k that is
/// NaN/Inf, zero, or has Re k < 0 or Im k < 0, or bad quadrature options.
DenseOperators assemble_dense(const Mesh& mesh, cplx k, unsigned which = kAllOperators,
                              const QuadratureOptions& q = {});

enum class BoundaryCondition { Neumann, Dirichlet };  ///< sound-hard, sound-soft

struct HelmholtzOptions {
  BoundaryCondition bc = BoundaryCondition::Neumann;
  std::optional<cplx> alpha;      ///< Burton-Miller coupling; default i/k (must be finite, != 0)
  QuadratureOptions quadrature;
  double gmres_rtol = 1e-5;
  int gmres_restart = 50;
  int gmres_max_iterations = 1000;
  bool throw_if_not_converged = true;  ///< throw NotConverged when GMRES misses gmres_rtol
};

/// Incident data at the collocation points.
struct IncidentField {
  std::vector<cplx> u;     ///< u_inc(x_i)
  std::vector<cplx> dudn;  ///< du_inc/dn(x_i) with the element's outward normal
};

/// Plane wave u_inc(x) = e^{ik d.x} (d normalised here; InvalidArgument for a zero/non-finite d),
/// du_inc/dn = i k (d . n) u_inc, sampled at the centroids.
IncidentField plane_wave(const Mesh& mesh, cplx k, std::array<double, 3> direction);

struct SurfaceSolution {
  BoundaryCondition bc = BoundaryCondition::Neumann;
  cplx k{};
  std::vector<cplx> u;     ///< total field on the surface (zero for Dirichlet)
  std::vector<cplx> dudn;  ///< total normal derivative on the surface (zero for Neumann)
  bool converged = false;
  int iterations = 0;
  std::vector<double> residual_history;  ///< GMRES relative residuals
  double final_relative_residual = 0;
  double solve_seconds = 0;
};

/// u_inf(xhat) for each direction (normalised internally), normalisation as in the file comment.
std::vector<cplx> far_field(const Mesh& mesh, const SurfaceSolution& sol,
                            const std::vector<std::array<double, 3>>& directions,
                            const QuadratureOptions& q = {});
/// u_sc(x) at exterior points (near-surface points use the subdivided rule). InvalidArgument for
/// a point inside the scatterer or on its surface (locate_point, mesh.hpp), where the
/// representation formula does not give the exterior field.
std::vector<cplx> scattered_field(const Mesh& mesh, const SurfaceSolution& sol,
                                  const std::vector<std::array<double, 3>>& points,
                                  const QuadratureOptions& q = {});

/// Plan: assembles the Burton-Miller matrix once; solve() may be called for many incident fields.
class HelmholtzBemDense {
 public:
  HelmholtzBemDense(Mesh mesh, cplx k, HelmholtzOptions opt = {});
  const Mesh& mesh() const { return mesh_; }
  cplx k() const { return k_; }
  cplx alpha() const { return alpha_; }
  const HelmholtzOptions& options() const { return opt_; }
  const CMatrix& matrix() const { return A_; }
  double assembly_seconds() const { return assembly_seconds_; }
  /// Right-hand side of the system for the given incident data (see file comment).
  std::vector<cplx> rhs(const IncidentField& inc) const;
  SurfaceSolution solve(const IncidentField& inc) const;
  SurfaceSolution solve_plane_wave(std::array<double, 3> direction) const {
    return solve(plane_wave(mesh_, k_, direction));
  }
  std::vector<cplx> far_field(const SurfaceSolution& s, const std::vector<std::array<double, 3>>& d) const {
    return bem::far_field(mesh_, s, d, opt_.quadrature);
  }
  std::vector<cplx> scattered_field(const SurfaceSolution& s, const std::vector<std::array<double, 3>>& p) const {
    return bem::scattered_field(mesh_, s, p, opt_.quadrature);
  }

 private:
  Mesh mesh_;
  cplx k_;
  cplx alpha_;
  HelmholtzOptions opt_;
  CMatrix A_;
  double assembly_seconds_ = 0;
};

}  // namespace elliptica::bem
