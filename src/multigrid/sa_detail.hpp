#pragma once
/// @file sa_detail.hpp
/// Steps of the smoothed-aggregation set-up (smoothed_aggregation.cpp) that the numeric re-setup
/// (numeric_setup.cpp) runs again with a matrix's new values.
#include <cstddef>

#include "elliptica/core/sparse.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/hierarchy.hpp"

namespace elliptica::multigrid::detail {

/// Step 4 of amg.hpp on level f (f.matrix, f.diagonal; sets f.jacobi_lambda when it estimates
/// rho(D^-1 A) on A itself): P = (I - omega / lambda D_F^-1 A_F) T with the filtered matrix of the
/// strength graph S (nodes of bl unknowns) and near-null space B of the level; theta is the level's
/// strength threshold (0: no filtering). omega = 0: P = T. Throws NumericalError from the Lanczos estimate.
CsrMatrix sa_prolongator(Level& f, const CsrMatrix& S, CsrMatrix T, const NearNullSpace& B, std::size_t bl,
                         double theta, const AmgOptions& opt);

/// Coarse unknowns from zero columns of T have empty rows in P^T A P (no nonzero value): they get
/// a unit diagonal (and nothing else).
void unit_diagonal_on_empty_rows(CsrMatrix& A);

}  // namespace elliptica::multigrid::detail
