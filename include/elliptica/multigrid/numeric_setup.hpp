#pragma once
/// @file numeric_setup.hpp
/// Numeric re-setup of a hierarchy for a matrix with the same sparsity pattern and new values (a
/// time-dependent coefficient, an implicit time step whose dt changes): everything that depends on
/// the pattern only is kept, the numbers are computed again.
///
/// Kept: the transfer operators' patterns (geometric: P itself, which does not depend on A), the
/// aggregation (smoothed aggregation: strength graph, aggregates, tentative prolongator T, see
/// AggregationPattern), the coarse operators' patterns and the coarsest level's fill-reducing
/// ordering. Computed again: smoothed aggregation's prolongator P = (I - omega/lambda D_F^-1 A_F) T
/// (new lambda by Lanczos, new filtered matrix A_F), the Galerkin operators A_{j+1} = R_j A_j P_j
/// into the existing patterns (galerkin_values: A P by multiply(), R (A P) numerically, with no
/// symbolic phase), and the coarsest factorisation (banded Cholesky again; the sparse LDL^T with the
/// kept ordering, SparseDirect(A, analysed)). The smoothers' set-up (Lanczos
/// estimates, local factorisations) belongs to the V-cycle, which the plan builds again.
/// When P's pattern changes with the values (an entry of the smoothed prolongator that is exactly
/// zero for one set of values and not for the other), the coarse operators from that level down
/// get a full triple_product (and the coarsest a new ordering): the result is the same hierarchy a
/// fresh set-up with the kept aggregates would build, only slower.
#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"

namespace elliptica::multigrid {

/// True when a and b have the same shape and the same stored pattern (row_ptr and col).
bool same_pattern(const CsrMatrix& a, const CsrMatrix& b);

/// C = R (A P) numerically into C's existing pattern (C.rows = R.rows, C.cols = P.cols; C.val
/// overwritten): A P by multiply() as triple_product forms it, then R (A P) row by row with a
/// column -> position map of C's row in place of a symbolic phase (no sort, no allocation of C);
/// `threads` as everywhere. Returns false (C's values then unspecified) when a nonzero term falls
/// outside C's pattern. Throws InvalidArgument for sizes that do not chain.
bool galerkin_values(const CsrMatrix& R, const CsrMatrix& A, const CsrMatrix& P, CsrMatrix& C, int threads = 0);

/// The hierarchy h set up again for A_new with every P_j (and R_j) kept: Galerkin values of the
/// coarse operators, coarsest factorisation again (BandedCholesky or SparseDirect; the geometric
/// hierarchy's numeric re-setup). Throws InvalidArgument when h's finest level has no CSR matrix,
/// A_new's pattern or size differs from it (the message says so), A_new has a non-finite value, or
/// the coarse solver is of another kind (it cannot be set up again here); NumericalError from the
/// coarsest factorisation (A_new not SPD). h is not modified.
Hierarchy update_values(const Hierarchy& h, CsrMatrix A_new, int threads = 0);

/// The smoothed-aggregation hierarchy h (built by smoothed_aggregation(A, opt, B, &pattern)) set up
/// again for A_new with pattern's aggregation kept: P_j recomputed from T_j (its lambda by
/// Lanczos), Galerkin values, the coarsest SparseDirect with the kept ordering. opt: the options h
/// was built with. Throws InvalidArgument as update_values above, for a non-symmetric A_new or a
/// non-positive diagonal entry (as smoothed_aggregation), and for a pattern record that does not
/// belong to h; NumericalError from the Lanczos estimate or the coarsest factorisation.
Hierarchy update_values(const Hierarchy& h, const AggregationPattern& pattern, CsrMatrix A_new, const AmgOptions& opt);

}  // namespace elliptica::multigrid
