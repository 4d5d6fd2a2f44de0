/// @file boomeramg.cpp
/// BoomerAMG's options and its set-up and V-cycle as an operator (boomeramg.hpp, roles 2 and 3):
/// our CSR matrix copied into a hypre IJ/ParCSR matrix on MPI_COMM_SELF, HYPRE_BoomerAMGSetup
/// with the options, apply() = HYPRE_BoomerAMGSolve from a zero guess with tol / max_iter set so
/// that it runs the requested cycles. Without hypre (no ELLIPTICA_HAVE_HYPRE) only the options
/// are here and the operator's constructor throws InvalidArgument.
#include "elliptica/multigrid/boomeramg.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "elliptica/core/error.hpp"

#ifdef ELLIPTICA_HAVE_HYPRE
#include <_hypre_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "multigrid/hypre_util.hpp"
#endif

namespace elliptica::multigrid {

bool have_boomeramg() {
#ifdef ELLIPTICA_HAVE_HYPRE
  return true;
#else
  return false;
#endif
}

BoomerAmgCoarsening boomeramg_coarsening_from_string(const std::string& s, const std::string& what) {
  if (s == "hmis") return BoomerAmgCoarsening::Hmis;
  if (s == "pmis") return BoomerAmgCoarsening::Pmis;
  if (s == "falgout") return BoomerAmgCoarsening::Falgout;
  throw InvalidArgument(what + ": unknown BoomerAMG coarsening '" + s + "' (expected hmis, pmis or falgout)");
}

BoomerAmgInterpolation boomeramg_interpolation_from_string(const std::string& s, const std::string& what) {
  if (s == "ext+i") return BoomerAmgInterpolation::ExtendedI;
  if (s == "classical") return BoomerAmgInterpolation::Classical;
  if (s == "direct") return BoomerAmgInterpolation::Direct;
  if (s == "standard") return BoomerAmgInterpolation::Standard;
  if (s == "extended") return BoomerAmgInterpolation::Extended;
  throw InvalidArgument(what + ": unknown BoomerAMG interpolation '" + s +
                        "' (expected ext+i, classical, direct, standard or extended)");
}

BoomerAmgRelaxation boomeramg_relaxation_from_string(const std::string& s, const std::string& what) {
  if (s == "l1-jacobi") return BoomerAmgRelaxation::L1Jacobi;
  if (s == "chebyshev") return BoomerAmgRelaxation::Chebyshev;
  if (s == "hybrid-sgs") return BoomerAmgRelaxation::HybridSymmetricGs;
  if (s == "l1-sgs") return BoomerAmgRelaxation::L1SymmetricGs;
  if (s == "hybrid-gs") return BoomerAmgRelaxation::HybridGsForward;
  throw InvalidArgument(what + ": unknown BoomerAMG relaxation '" + s +
                        "' (expected l1-jacobi, chebyshev, hybrid-sgs, l1-sgs or hybrid-gs)");
}

BoomerAmgCycle boomeramg_cycle_from_string(const std::string& s, const std::string& what) {
  if (s == "ours") return BoomerAmgCycle::Ours;
  if (s == "hypre") return BoomerAmgCycle::Hypre;
  throw InvalidArgument(what + ": unknown BoomerAMG cycle '" + s + "' (expected ours or hypre)");
}

std::string to_string(BoomerAmgCoarsening c) {
  switch (c) {
    case BoomerAmgCoarsening::Hmis: return "hmis";
    case BoomerAmgCoarsening::Pmis: return "pmis";
    case BoomerAmgCoarsening::Falgout: return "falgout";
  }
  return "?";
}

std::string to_string(BoomerAmgInterpolation i) {
  switch (i) {
    case BoomerAmgInterpolation::ExtendedI: return "ext+i";
    case BoomerAmgInterpolation::Classical: return "classical";
    case BoomerAmgInterpolation::Direct: return "direct";
    case BoomerAmgInterpolation::Standard: return "standard";
    case BoomerAmgInterpolation::Extended: return "extended";
  }
  return "?";
}

std::string to_string(BoomerAmgRelaxation r) {
  switch (r) {
    case BoomerAmgRelaxation::L1Jacobi: return "l1-jacobi";
    case BoomerAmgRelaxation::Chebyshev: return "chebyshev";
    case BoomerAmgRelaxation::HybridSymmetricGs: return "hybrid-sgs";
    case BoomerAmgRelaxation::L1SymmetricGs: return "l1-sgs";
    case BoomerAmgRelaxation::HybridGsForward: return "hybrid-gs";
  }
  return "?";
}

std::string to_string(BoomerAmgCycle c) { return c == BoomerAmgCycle::Ours ? "ours" : "hypre"; }

void check_boomeramg_options(const BoomerAmgOptions& o, const std::string& where) {
  const std::string w = where + ": ";
  if (!(o.strength_threshold >= 0.0 && o.strength_threshold < 1.0))
    throw InvalidArgument(w + "strength threshold must be in [0, 1), got " + std::to_string(o.strength_threshold));
  if (o.max_interp_elements < 0)
    throw InvalidArgument(w + "max interpolation elements must be >= 0, got " + std::to_string(o.max_interp_elements));
  if (o.aggressive_levels < 0)
    throw InvalidArgument(w + "aggressive coarsening levels must be >= 0, got " + std::to_string(o.aggressive_levels));
  if (o.max_levels < 2) throw InvalidArgument(w + "max levels must be >= 2, got " + std::to_string(o.max_levels));
  if (o.max_coarse_size < 1)
    throw InvalidArgument(w + "max coarse size must be >= 1, got " + std::to_string(o.max_coarse_size));
  if (o.sweeps < 1) throw InvalidArgument(w + "sweeps must be >= 1, got " + std::to_string(o.sweeps));
  if (o.cycles < 1) throw InvalidArgument(w + "cycles must be >= 1, got " + std::to_string(o.cycles));
  if (!(o.tolerance >= 0.0 && o.tolerance < 1.0))
    throw InvalidArgument(w + "tolerance must be in [0, 1) (0: a fixed number of cycles), got " +
                          std::to_string(o.tolerance));
  if (o.print_level < 0 || o.print_level > 3)
    throw InvalidArgument(w + "print level must be in 0..3, got " + std::to_string(o.print_level));
}

#ifdef ELLIPTICA_HAVE_HYPRE

namespace {
using hypre_detail::check;

int coarsen_type(BoomerAmgCoarsening c) {
  switch (c) {
    case BoomerAmgCoarsening::Hmis: return 10;
    case BoomerAmgCoarsening::Pmis: return 8;
    case BoomerAmgCoarsening::Falgout: return 6;
  }
  return 10;
}

int interp_type(BoomerAmgInterpolation i) {
  switch (i) {
    case BoomerAmgInterpolation::ExtendedI: return 6;
    case BoomerAmgInterpolation::Classical: return 0;
    case BoomerAmgInterpolation::Direct: return 3;
    case BoomerAmgInterpolation::Standard: return 8;
    case BoomerAmgInterpolation::Extended: return 14;
  }
  return 6;
}

int relax_type(BoomerAmgRelaxation r) {
  switch (r) {
    case BoomerAmgRelaxation::L1Jacobi: return 18;
    case BoomerAmgRelaxation::Chebyshev: return 16;
    case BoomerAmgRelaxation::HybridSymmetricGs: return 6;
    case BoomerAmgRelaxation::L1SymmetricGs: return 8;
    case BoomerAmgRelaxation::HybridGsForward: return 3;
  }
  return 16;
}

// A length-n IJ vector on MPI_COMM_SELF and its ParVector.
void make_vector(HYPRE_Int n, HYPRE_IJVector* ij, HYPRE_ParVector* par) {
  check(HYPRE_IJVectorCreate(MPI_COMM_SELF, 0, n - 1, ij), "HYPRE_IJVectorCreate");
  check(HYPRE_IJVectorSetObjectType(*ij, HYPRE_PARCSR), "HYPRE_IJVectorSetObjectType");
  check(HYPRE_IJVectorInitialize(*ij), "HYPRE_IJVectorInitialize");
  check(HYPRE_IJVectorAssemble(*ij), "HYPRE_IJVectorAssemble");
  void* obj = nullptr;
  check(HYPRE_IJVectorGetObject(*ij, &obj), "HYPRE_IJVectorGetObject");
  *par = static_cast<HYPRE_ParVector>(obj);
}

double* vector_data(HYPRE_ParVector v) {
  return hypre_VectorData(hypre_ParVectorLocalVector(reinterpret_cast<hypre_ParVector*>(v)));
}
}  // namespace

BoomerAmgPreconditioner::Impl::~Impl() {
  // After MPI_Finalize (objects alive at process exit) hypre's destroy functions must not run.
  if (hypre_detail::mpi_finalized()) return;
  const std::lock_guard<std::mutex> lock(hypre_detail::hypre_mutex());
  if (solver) HYPRE_BoomerAMGDestroy(solver);
  if (ij_x) HYPRE_IJVectorDestroy(ij_x);
  if (ij_b) HYPRE_IJVectorDestroy(ij_b);
  if (ij_A) HYPRE_IJMatrixDestroy(ij_A);
  HYPRE_ClearAllErrors();
}

BoomerAmgPreconditioner::BoomerAmgPreconditioner(const CsrMatrix& A, const BoomerAmgOptions& opt)
    : n_(A.rows), opt_(opt) {
  check_boomeramg_options(opt, "BoomerAMG");
  if (A.rows != A.cols)
    throw InvalidArgument("BoomerAMG: the matrix must be square, got " + std::to_string(A.rows) + " x " +
                          std::to_string(A.cols));
  if (A.rows == 0) throw InvalidArgument("BoomerAMG: the matrix is empty");
  if (A.rows >= static_cast<std::size_t>(std::numeric_limits<HYPRE_Int>::max()) ||
      A.nnz() >= static_cast<std::size_t>(std::numeric_limits<HYPRE_Int>::max()))
    throw InvalidArgument("BoomerAMG: " + std::to_string(A.rows) + " rows / " + std::to_string(A.nnz()) +
                          " nonzeros do not fit this hypre build's 32-bit indices");
  for (double v : A.val)
    if (!std::isfinite(v)) throw InvalidArgument("BoomerAMG: the matrix has a non-finite entry");
  hypre_detail::ensure_mpi();
  const std::lock_guard<std::mutex> lock(hypre_detail::hypre_mutex());
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  const auto n = static_cast<HYPRE_Int>(A.rows);

  // A as an IJ matrix: every row in one SetValues call.
  check(HYPRE_IJMatrixCreate(MPI_COMM_SELF, 0, n - 1, 0, n - 1, &m.ij_A), "HYPRE_IJMatrixCreate");
  check(HYPRE_IJMatrixSetObjectType(m.ij_A, HYPRE_PARCSR), "HYPRE_IJMatrixSetObjectType");
  std::vector<HYPRE_Int> ncols(A.rows), rows(A.rows);
  for (std::size_t i = 0; i < A.rows; ++i) {
    rows[i] = static_cast<HYPRE_Int>(i);
    ncols[i] = static_cast<HYPRE_Int>(A.row_ptr[i + 1] - A.row_ptr[i]);
  }
  check(HYPRE_IJMatrixSetRowSizes(m.ij_A, ncols.data()), "HYPRE_IJMatrixSetRowSizes");
  check(HYPRE_IJMatrixInitialize(m.ij_A), "HYPRE_IJMatrixInitialize");
  std::vector<HYPRE_BigInt> cols(A.col.begin(), A.col.end());
  std::vector<double> vals(A.val);
  check(HYPRE_IJMatrixSetValues(m.ij_A, n, ncols.data(), rows.data(), cols.data(), vals.data()),
        "HYPRE_IJMatrixSetValues");
  check(HYPRE_IJMatrixAssemble(m.ij_A), "HYPRE_IJMatrixAssemble");
  void* obj = nullptr;
  check(HYPRE_IJMatrixGetObject(m.ij_A, &obj), "HYPRE_IJMatrixGetObject");
  m.A = static_cast<HYPRE_ParCSRMatrix>(obj);
  make_vector(n, &m.ij_b, &m.b);
  make_vector(n, &m.ij_x, &m.x);

  check(HYPRE_BoomerAMGCreate(&m.solver), "HYPRE_BoomerAMGCreate");
  HYPRE_Solver s = m.solver;
  check(HYPRE_BoomerAMGSetPrintLevel(s, opt.print_level), "HYPRE_BoomerAMGSetPrintLevel");
  check(HYPRE_BoomerAMGSetCoarsenType(s, coarsen_type(opt.coarsening)), "HYPRE_BoomerAMGSetCoarsenType");
  check(HYPRE_BoomerAMGSetInterpType(s, interp_type(opt.interpolation)), "HYPRE_BoomerAMGSetInterpType");
  check(HYPRE_BoomerAMGSetStrongThreshold(s, opt.strength_threshold), "HYPRE_BoomerAMGSetStrongThreshold");
  check(HYPRE_BoomerAMGSetPMaxElmts(s, opt.max_interp_elements), "HYPRE_BoomerAMGSetPMaxElmts");
  check(HYPRE_BoomerAMGSetAggNumLevels(s, opt.aggressive_levels), "HYPRE_BoomerAMGSetAggNumLevels");
  check(HYPRE_BoomerAMGSetMaxLevels(s, opt.max_levels), "HYPRE_BoomerAMGSetMaxLevels");
  check(HYPRE_BoomerAMGSetMaxCoarseSize(s, opt.max_coarse_size), "HYPRE_BoomerAMGSetMaxCoarseSize");
  // Relaxation on both legs (lexicographic order, so that the symmetric kinds give a symmetric
  // cycle), Gaussian elimination on the coarsest level.
  check(HYPRE_BoomerAMGSetRelaxType(s, relax_type(opt.relaxation)), "HYPRE_BoomerAMGSetRelaxType");
  check(HYPRE_BoomerAMGSetCycleRelaxType(s, 9, 3), "HYPRE_BoomerAMGSetCycleRelaxType");
  check(HYPRE_BoomerAMGSetRelaxOrder(s, 0), "HYPRE_BoomerAMGSetRelaxOrder");
  check(HYPRE_BoomerAMGSetNumSweeps(s, opt.sweeps), "HYPRE_BoomerAMGSetNumSweeps");
  check(HYPRE_BoomerAMGSetCycleNumSweeps(s, 1, 3), "HYPRE_BoomerAMGSetCycleNumSweeps");
  check(HYPRE_BoomerAMGSetMaxIter(s, opt.cycles), "HYPRE_BoomerAMGSetMaxIter");
  check(HYPRE_BoomerAMGSetTol(s, opt.tolerance), "HYPRE_BoomerAMGSetTol");
  check(HYPRE_BoomerAMGSetup(s, m.A, m.b, m.x), "HYPRE_BoomerAMGSetup");
  // on a throw, `lock` is released before the member impl_ is destroyed (~Impl takes it again)
}

BoomerAmgPreconditioner::~BoomerAmgPreconditioner() = default;

void BoomerAmgPreconditioner::apply(const double* b, double* x) const {
  Impl& m = *impl_;
  double* hb = vector_data(m.b);
  double* hx = vector_data(m.x);
  std::memcpy(hb, b, n_ * sizeof(double));
  std::fill(hx, hx + n_, 0.0);
  const std::lock_guard<std::mutex> lock(hypre_detail::hypre_mutex());
  const int err = HYPRE_BoomerAMGSolve(m.solver, m.A, m.b, m.x);
  // With a tolerance, reaching max_iter cycles first is hypre's HYPRE_ERROR_CONV: not an error
  // of the preconditioner (it ran the cycles it was allowed).
  if (err == HYPRE_ERROR_CONV)
    HYPRE_ClearAllErrors();
  else
    check(err, "HYPRE_BoomerAMGSolve");
  HYPRE_Int it = 0;
  HYPRE_BoomerAMGGetNumIterations(m.solver, &it);
  m.last_cycles = static_cast<int>(it);
  std::memcpy(x, hx, n_ * sizeof(double));
}

bool BoomerAmgPreconditioner::is_symmetric() const {
  return is_fixed() && opt_.relaxation != BoomerAmgRelaxation::HybridGsForward;
}

int BoomerAmgPreconditioner::num_levels() const {
  const std::lock_guard<std::mutex> lock(hypre_detail::hypre_mutex());
  return hypre_ParAMGDataNumLevels(reinterpret_cast<hypre_ParAMGData*>(impl_->solver));
}

int BoomerAmgPreconditioner::last_cycles() const { return impl_->last_cycles; }

#else  // no hypre

struct BoomerAmgPreconditioner::Impl {};

BoomerAmgPreconditioner::BoomerAmgPreconditioner(const CsrMatrix&, const BoomerAmgOptions& opt) : opt_(opt) {
  throw InvalidArgument(
      "elliptica was built without hypre: BoomerAMG is not available (install libhypre-dev and an MPI, "
      "e.g. scripts/install-deps.sh, and rebuild; or use the smoothed-aggregation hierarchy)");
}
BoomerAmgPreconditioner::~BoomerAmgPreconditioner() = default;
void BoomerAmgPreconditioner::apply(const double*, double*) const {}
bool BoomerAmgPreconditioner::is_symmetric() const { return false; }
int BoomerAmgPreconditioner::num_levels() const { return 0; }
int BoomerAmgPreconditioner::last_cycles() const { return 0; }

#endif

}  // namespace elliptica::multigrid
