#pragma once
/// @file mg_sem_cmd.hpp
/// `elliptica mg sem` (issue 14, seed 003 sections 4-6): the spectral-element Poisson problem
/// -Laplace(u) = f, u = 0 on the boundary, on a hexahedral mesh (box, Kershaw or a Gmsh .msh
/// file; multigrid/sem_io.hpp) at order p, solved by PCG / FGMRES / GMRES preconditioned with one
/// p-multigrid V-cycle (multigrid::SemPoissonPlan, pmg.hpp; its defaults are the CLI's).
/// Writes OUT/solution.npy, OUT/nodes.npy, OUT/solution.vtu and OUT/summary.json as one set
/// (io::OutputSet: all or nothing).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "elliptica/krylov/krylov.hpp"
#include "boomeramg_flags.hpp"
#include "elliptica/multigrid/boomeramg.hpp"
#include "elliptica/multigrid/pmg.hpp"

namespace elliptica::cli {

/// The CLI's name of a Chebyshev kind (the inverse of multigrid::polynomial_from_string).
inline std::string polynomial_name(multigrid::Polynomial p) { return multigrid::to_string(p); }

/// The CLI's name of a Krylov method: "pcg" for cg, else krylov::to_string ("gmres", "fgmres").
inline std::string krylov_name(krylov::Method m) { return m == krylov::Method::Cg ? "pcg" : krylov::to_string(m); }

/// Raw command-line values of `elliptica mg sem`; interpreted and validated by run_mg_sem.
/// Defaults: multigrid::SemPoissonOptions{} (and BoomerAmgOptions{}).
struct MgSemArgs {
  std::string mesh;                 ///< box:NX,NY,NZ[:LX,LY,LZ] | kershaw:N,EPS | FILE.msh (required)
  int order = multigrid::SemPoissonOptions{}.order;
  std::string schedule;             ///< "P,...,1" (empty: default_pmg_schedule(order))
  std::string smoother = polynomial_name(multigrid::SemPoissonOptions{}.polynomial);
  std::string base = multigrid::to_string(multigrid::SemPoissonOptions{}.base);
  std::string order_per_level;      ///< "K" (every smoothed level) or "K1,K2,..." (one per smoothed level)
  int pre = multigrid::SemPoissonOptions{}.pre;
  int post = multigrid::SemPoissonOptions{}.post;
  int tune_iterations = multigrid::SemPoissonOptions{}.tune_iterations;  ///< 0: no Chebyshev order tuning
  std::string krylov = krylov_name(multigrid::SemPoissonOptions{}.method);  ///< pcg | fgmres | gmres
  double rtol = multigrid::SemPoissonOptions{}.rtol;
  double atol = multigrid::SemPoissonOptions{}.atol;
  int max_iter = multigrid::SemPoissonOptions{}.max_iterations;
  int restart = multigrid::SemPoissonOptions{}.restart;
  double lambda_safety = multigrid::SemPoissonOptions{}.lambda_safety;
  int lambda_iterations = multigrid::SemPoissonOptions{}.lambda_iterations;
  double lmin_ratio = multigrid::SemPoissonOptions{}.lmin_ratio;
  std::string schwarz_precision = multigrid::to_string(multigrid::SemPoissonOptions{}.schwarz_precision);
  int schwarz_element_max_order = multigrid::SemPoissonOptions{}.schwarz_element_max_order;  ///< 0: FDM everywhere
  std::string coarse_solver = multigrid::to_string(multigrid::SemPoissonOptions{}.coarse);
  // BoomerAMG of the order-1 level (multigrid::BoomerAmgOptions{}'s defaults)
  BoomerAmgFlags boomeramg;  ///< --boomeramg-* (boomeramg_flags.hpp; no --boomeramg-tol)
  int threads = multigrid::SemPoissonOptions{}.threads;
  std::string out;                  ///< output folder (required; created)
  bool manufactured = false;
  bool quiet = false;
  CLI::Option *o_pre = nullptr, *o_post = nullptr;
};

/// Registers `sem` on the `mg` subcommand; `args` must outlive parsing.
CLI::App* add_mg_sem_command(CLI::App& mg, MgSemArgs& args);

/// Runs `mg sem`. Returns 0 on success; throws elliptica::Error otherwise (InvalidArgument, exit 2:
/// bad option values, a malformed mesh spec, a non-hexahedral mesh or an inverted element;
/// IOError, exit 3: a missing / unreadable / malformed mesh file, an unwritable --out;
/// NumericalError, exit 4: hypre failing, a Krylov breakdown; NotConverged, exit 5). Nothing is
/// written unless the solve converged.
int run_mg_sem(const MgSemArgs& args);

}  // namespace elliptica::cli
