/// @file mg_sem_study_cmd.cpp
/// `elliptica mg sem-study` (see mg_sem_study_cmd.hpp): parses the flags into
/// multigrid::SemStudyOptions, runs the study with progress on stderr, writes the CSV and the
/// report, runs scripts/sem_study_plots.py.
#include "mg_sem_study_cmd.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/output.hpp"
#include "plot_script.hpp"

namespace elliptica::cli {
namespace {

namespace fs = std::filesystem;
namespace mg = elliptica::multigrid;

std::vector<std::string> words(const std::string& s, const char* what) {
  std::vector<std::string> v;
  for (const auto& t : split(s, ',')) {
    if (t.empty()) throw InvalidArgument(std::string(what) + ": empty value in '" + s + "'");
    v.push_back(t);
  }
  if (v.empty()) throw InvalidArgument(std::string(what) + ": no values");
  return v;
}

template <class T>
std::string join(const std::vector<T>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

}  // namespace

CLI::App* add_mg_sem_study_command(CLI::App& mg_cmd, MgSemStudyArgs& a) {
  const mg::SemStudyOptions d{};
  CLI::App* st = mg_cmd.add_subcommand(
      "sem-study",
      "The seed's section-6 study: SEM Poisson on Kershaw meshes, pMG-preconditioned PCG/FGMRES for every Chebyshev kind x "
      "base (jacobi, asm, ras) x order x symmetric/one-sided cycle.");
  st->footer(
      "Problem: -Laplace(u) = 3 pi^2 sin(pi x) sin(pi y) sin(pi z) on the Kershaw mesh of n^3 elements (exact for n a multiple\n"
      "  of 6), order --order, u = 0 on the boundary, x0 = 0, stop at --rtol. Schedules: (p, p-2, ..., 1) for jacobi\n"
      "  ((7,5,3,1)), (p, p/2, 1) for the Schwarz bases ((7,3,1)). Cycles: symmetric (k,k) or one-sided (2k,0) (the seed's\n"
      "  'order 2k one-sided'). PCG for symmetric cycles over jacobi/asm, FGMRES(30) for ras and one-sided cycles.\n"
      "One hierarchy per (eps, base) is shared by its runs; set-up times are a plan's (hierarchy + cycle).\n"
      "Writes OUT/sem_study.csv, OUT/sem_study_report.txt and PNG plots (scripts/sem_study_plots.py, matplotlib); prints\n"
      "the best solver per eps (fastest converged solve, fewest iterations), the default cheb1 asm(2) V and the seed's\n"
      "best, and the seed's findings (HOLDS/DIFFERS). --quick: n = 3, order 4, eps 1,0.05, kinds cheb1,opt4, orders 1,2\n"
      "(unless given). Exit codes: 0 ok, 1 usage, 2 invalid input, 3 file error, 6 out of resources.");
  a.o_n = st->add_option("--n", a.n, "elements per axis of the Kershaw mesh, in [2,64]")->capture_default_str();
  st->add_option("--eps", a.eps, "comma-separated Kershaw parameters in (0,1] (default " + join(d.eps) + ")");
  a.o_order = st->add_option("--order", a.order, "polynomial order p in [2,10]")->capture_default_str();
  st->add_option("--kinds", a.kinds, "comma-separated Chebyshev kinds: cheb1|cheb1opt|cheb4|opt4 (default " + join(d.kinds) + ")");
  st->add_option("--bases", a.bases, "comma-separated bases: jacobi|asm|asm-weighted|ras (default " + join(d.bases) + ")");
  st->add_option("--cheb-orders", a.cheb_orders,
                 "comma-separated Chebyshev orders k in [1,30] (one-sided cycles use 2k; default " + join(d.cheb_orders) + ")");
  st->add_option("--cycles", a.cycles, "comma-separated: symmetric|one-sided (default " + join(d.cycles) + ")");
  st->add_option("--rtol", a.rtol, "relative residual reduction in (0,1)")->capture_default_str();
  st->add_option("--max-iter", a.max_iter, "Krylov iteration cap per solve (not converged: recorded)")->capture_default_str();
  st->add_option("--repeats", a.repeats, "solves per configuration, the fastest time kept, in [1,100]")->capture_default_str();
  st->add_option("--threads", a.threads, "OpenMP threads (0: all available)")->capture_default_str();
  st->add_option("--coarse-solver", a.coarse_solver, "boomeramg|direct: the order-1 solve")->capture_default_str();
  st->add_option("--out", a.out, "output folder (created)")->capture_default_str();
  st->add_flag("--quick", a.quick, "small study for tests (seconds)");
  st->add_flag("--no-plots", a.no_plots, "skip the PNG plots");
  st->add_option("--plot-script", a.plot_script, "path of sem_study_plots.py (default: found next to the sources)");
  return st;
}

int run_mg_sem_study(const MgSemStudyArgs& a) {
  mg::SemStudyOptions so;
  so.n = a.n;
  so.order = a.order;
  if (a.quick) {
    if (!a.o_n->count()) so.n = 3;
    if (!a.o_order->count()) so.order = 4;
    so.eps = {1.0, 0.05};
    so.kinds = {"cheb1", "opt4"};
    so.cheb_orders = {1, 2};
  }
  if (!a.eps.empty()) {
    so.eps.clear();
    for (const auto& t : words(a.eps, "--eps")) so.eps.push_back(to_double(t, "--eps"));
  }
  if (!a.kinds.empty()) so.kinds = words(a.kinds, "--kinds");
  if (!a.bases.empty()) so.bases = words(a.bases, "--bases");
  if (!a.cheb_orders.empty()) {
    so.cheb_orders.clear();
    for (const auto& t : words(a.cheb_orders, "--cheb-orders")) so.cheb_orders.push_back(to_int(t, "--cheb-orders"));
  }
  if (!a.cycles.empty()) so.cycles = words(a.cycles, "--cycles");
  so.rtol = a.rtol;
  so.max_iterations = a.max_iter;
  so.repeats = a.repeats;
  so.threads = a.threads;
  try {
    so.coarse = mg::pmg_coarse_solver_from_string(a.coarse_solver);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--coarse-solver: ") + e.what());
  }
  mg::validate_sem_study_options(so);
  create_output_folder(a.out);
  const std::string csv_path = (fs::path(a.out) / "sem_study.csv").string();
  const std::string report_path = (fs::path(a.out) / "sem_study_report.txt").string();
  // The temporaries are created now: an unwritable folder fails before the runs.
  io::OutputFile csv_file(csv_path);
  io::OutputFile report_file(report_path);
  const std::string script = a.no_plots ? std::string() : find_plot_script("sem_study_plots.py", a.plot_script);

  std::fprintf(stderr,
               "mg sem-study: Kershaw %d^3 elements, p = %d, eps = %s, kinds = %s, bases = %s, orders = %s, cycles = %s: "
               "%zu runs\n",
               so.n, so.order, join(so.eps).c_str(), join(so.kinds).c_str(), join(so.bases).c_str(),
               join(so.cheb_orders).c_str(), join(so.cycles).c_str(), mg::sem_study_size(so));
  const mg::SemStudyResult R =
      mg::run_sem_study(so, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  csv_file.write(mg::sem_study_csv(R));
  std::ostringstream rep;
  mg::write_sem_study_report(rep, R, csv_path);
  report_file.write(rep.str());
  csv_file.commit();
  report_file.commit();
  std::cout << rep.str();
  std::cout.flush();  // before the plotting script writes to the same stdout
  if (!a.no_plots) {
    const std::vector<std::string> args{csv_path, a.out};
    std::fprintf(stderr, "plotting: %s\n", plot_command_line(script, args).c_str());
    run_plot_script(script, args, "sem_study.csv was written; rerun the script or use --no-plots");
    std::cout << "plots written to " << a.out << "\n";
  }
  std::cout.flush();
  return 0;
}

}  // namespace elliptica::cli
