/// @file boomeramg_hierarchy.cpp
/// BoomerAMG's hierarchy as ours (boomeramg.hpp, role 1): after HYPRE_BoomerAMGSetup the level
/// matrices A_l and interpolations P_l are read from hypre's internal AMG data
/// (hypre_ParAMGDataAArray / PArray / NumLevels of _hypre_parcsr_ls.h); with one MPI rank the
/// diag block of each ParCSR matrix is the whole matrix (the offd block is empty, checked). hypre
/// stores each row's diagonal entry first: the columns are sorted here. R_l = P_l^T; the coarsest
/// level is factorised by SparseDirect.
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/multigrid/amg.hpp"
#include "elliptica/multigrid/boomeramg.hpp"

#ifdef ELLIPTICA_HAVE_HYPRE
#include <_hypre_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>

#include "multigrid/hypre_util.hpp"
#include "plan_detail.hpp"
#endif

namespace elliptica::multigrid {

#ifdef ELLIPTICA_HAVE_HYPRE

namespace {
/// Our CsrMatrix (sorted columns) from the diag block of a one-rank ParCSR matrix; NumericalError
/// when the offd block holds entries (cannot happen on MPI_COMM_SELF).
CsrMatrix from_parcsr(hypre_ParCSRMatrix* M, const char* what, std::size_t level) {
  const hypre_CSRMatrix* offd = hypre_ParCSRMatrixOffd(M);
  if (offd != nullptr && hypre_CSRMatrixNumNonzeros(offd) > 0)
    throw NumericalError(std::string("BoomerAMG: ") + what + " of level " + std::to_string(level) +
                         " has entries outside the local block (more than one MPI rank?)");
  const hypre_CSRMatrix* d = hypre_ParCSRMatrixDiag(M);
  const HYPRE_Int* I = hypre_CSRMatrixI(d);
  const HYPRE_Int* J = hypre_CSRMatrixJ(d);
  const HYPRE_Complex* V = hypre_CSRMatrixData(d);
  CsrMatrix C;
  C.rows = static_cast<std::size_t>(hypre_CSRMatrixNumRows(d));
  C.cols = static_cast<std::size_t>(hypre_CSRMatrixNumCols(d));
  C.row_ptr.assign(C.rows + 1, 0);
  const std::size_t nnz = C.rows > 0 ? static_cast<std::size_t>(I[C.rows]) : 0;
  C.col.resize(nnz);
  C.val.resize(nnz);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < C.rows; ++i) {
    const auto b = static_cast<std::size_t>(I[i]), e = static_cast<std::size_t>(I[i + 1]);
    C.row_ptr[i + 1] = static_cast<std::int64_t>(e);
    order.resize(e - b);
    std::iota(order.begin(), order.end(), b);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return J[x] < J[y]; });
    for (std::size_t k = 0; k < order.size(); ++k) {
      C.col[b + k] = static_cast<std::int32_t>(J[order[k]]);
      C.val[b + k] = V[order[k]];
    }
  }
  C.validate();
  return C;
}
}  // namespace

std::vector<Level> BoomerAmgPreconditioner::levels(const CsrMatrix& A, int threads) const {
  if (A.rows != n_)
    throw InvalidArgument("BoomerAmgPreconditioner::levels: the matrix has " + std::to_string(A.rows) +
                          " rows, the set-up " + std::to_string(n_));
  const std::lock_guard<std::mutex> lock(hypre_detail::hypre_mutex());
  auto* data = reinterpret_cast<hypre_ParAMGData*>(impl_->solver);
  const int L = hypre_ParAMGDataNumLevels(data);
  hypre_ParCSRMatrix** As = hypre_ParAMGDataAArray(data);
  hypre_ParCSRMatrix** Ps = hypre_ParAMGDataPArray(data);
  std::vector<Level> out;
  out.reserve(static_cast<std::size_t>(L));
  out.push_back(Level::from_matrix(A, GridShape{}, threads));
  for (int l = 1; l < L; ++l) {
    CsrMatrix P = from_parcsr(Ps[l - 1], "P", static_cast<std::size_t>(l - 1));
    CsrMatrix Al = from_parcsr(As[l], "A", static_cast<std::size_t>(l));
    Level& f = out.back();
    if (P.rows != f.rows() || P.cols != Al.rows)
      throw NumericalError("BoomerAMG: interpolation of level " + std::to_string(l - 1) + " is " +
                           std::to_string(P.rows) + " x " + std::to_string(P.cols) + ", levels have " +
                           std::to_string(f.rows()) + " and " + std::to_string(Al.rows) + " unknowns");
    f.R = P.transpose();
    f.P = std::move(P);
    out.push_back(Level::from_matrix(std::move(Al), GridShape{}, threads));
  }
  return out;
}

Hierarchy boomeramg_hierarchy(const CsrMatrix& A, const BoomerAmgOptions& opt, int threads) {
  if (threads < 0) throw InvalidArgument("BoomerAMG: threads must be >= 0, got " + std::to_string(threads));
  std::vector<Level> levels;
  {
    const BoomerAmgPreconditioner amg(A, opt);
    levels = amg.levels(A, threads);
  }  // hypre's objects freed here: the hierarchy is ours
  if (levels.size() < 2) detail::throw_one_level_boomeramg(A, "BoomerAMG");
  auto coarse = std::make_shared<const SparseDirect>(*levels.back().matrix);
  return Hierarchy(std::move(levels), std::move(coarse), 0);
}

#else  // no hypre: the constructor of BoomerAmgPreconditioner throws before any of this runs

std::vector<Level> BoomerAmgPreconditioner::levels(const CsrMatrix&, int) const { return {}; }

Hierarchy boomeramg_hierarchy(const CsrMatrix& A, const BoomerAmgOptions& opt, int threads) {
  const BoomerAmgPreconditioner amg(A, opt);  // throws InvalidArgument: built without hypre
  (void)threads;
  return Hierarchy({}, nullptr, 0);
}

#endif

}  // namespace elliptica::multigrid
