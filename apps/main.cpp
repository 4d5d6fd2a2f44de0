/// @file main.cpp
/// `elliptica`: command-line front end of the elliptica library. One subcommand per capability
/// (now: `ewald`, `mg`, `bem`). Errors print "elliptica: error: <message>" to stderr and exit with
/// the code of the error's category, the same for every subcommand:
///   0 success, 1 command-line usage (reported by CLI11), 2 invalid input, 3 file error,
///   4 numerical failure, 5 not converged, 6 out of resources (memory, threads, size limits).
/// Exit 6 covers elliptica::ResourceError (a size checked before allocating), std::bad_alloc, and a
/// runtime library that ends the process from inside the computation (libgomp calls exit(1) when it
/// cannot create its threads): an atexit hook turns that exit into 6 with a message. SIGINT,
/// SIGTERM, SIGHUP, SIGQUIT and SIGABRT remove the temporary files of outputs not yet written
/// (core/output.hpp) before the process ends by the signal.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <system_error>

#include <CLI/CLI.hpp>

#include "elliptica/core/error.hpp"
#include "elliptica/core/output.hpp"
#include "bem_cmd.hpp"
#include "ewald_cmd.hpp"
#include "mg_cmd.hpp"
#include "mpi_env.hpp"

#ifndef ELLIPTICA_VERSION
#define ELLIPTICA_VERSION "unknown"
#endif

namespace {

constexpr int kResourceExit = 6;
std::atomic<bool> g_running{false};

/// Runs when something calls exit() while a subcommand is running (our own code returns from
/// main instead): a runtime library giving up, e.g. "libgomp: Thread creation failed".
extern "C" void exit_during_run() {
  if (!g_running.load()) return;
  static const char msg[] =
      "elliptica: error: out of resources: a runtime library ended the process during the computation "
      "(above: most likely the OpenMP runtime could not create its threads; lower --threads or free memory)\n";
  (void)!::write(2, msg, sizeof msg - 1);
  elliptica::io::remove_uncommitted_outputs();
  ::_exit(kResourceExit);
}

int report(const char* what, int code) {
  // under mpirun the errors of the distributed run are agreed (every rank has the same): rank 0
  // prints it
  if (elliptica::cli::mpi_rank() == 0) std::cerr << "elliptica: error: " << what << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // under mpirun (a build with MPI): MPI for the distributed Ewald plan (apps/mpi_env.hpp)
  elliptica::cli::mpi_start(&argc, &argv);
  struct Stop {
    ~Stop() { elliptica::cli::mpi_stop(); }
  } stop_mpi;
  CLI::App app{"elliptica: fast solvers for elliptic PDEs (spectral Ewald, multigrid, Helmholtz BEM)", "elliptica"};
  app.set_version_flag("--version", std::string("elliptica ") + ELLIPTICA_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes (every subcommand): 0 ok, 1 command-line usage, 2 invalid input, 3 file error, "
      "4 numerical failure, 5 not converged, 6 out of resources (memory, threads, size limits).");

  elliptica::cli::EwaldArgs ewald_args;
  CLI::App* ewald = elliptica::cli::add_ewald_command(app, ewald_args);
  elliptica::cli::MgArgs mg_args;
  CLI::App* mg = elliptica::cli::add_mg_command(app, mg_args);
  elliptica::cli::BemArgs bem_args;
  CLI::App* bem = elliptica::cli::add_bem_command(app, bem_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help/version text); usage errors all exit with 1. Under
    // mpirun every rank parses the same command line: rank 0 prints.
    if (elliptica::cli::mpi_rank() != 0) return e.get_exit_code() == 0 ? 0 : 1;
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }

  elliptica::io::install_signal_cleanup();
  std::atexit(exit_during_run);
  g_running = true;
  int rc = 1;
  try {
    if (ewald->parsed())
      rc = elliptica::cli::run_ewald(ewald_args);
    else if (mg->parsed())
      rc = elliptica::cli::run_mg(mg_args);
    else if (bem->parsed())
      rc = elliptica::cli::run_bem(bem_args);
    else
      rc = report("no subcommand given", 1);
  } catch (const elliptica::Error& e) {
    rc = report(e.what(), elliptica::exit_code(e.category()));
  } catch (const std::bad_alloc&) {
    rc = report("out of resources: out of memory (a memory allocation failed)", kResourceExit);
  } catch (const std::system_error& e) {
    // std::thread / std::mutex failures (EAGAIN: no more threads).
    const bool resource = e.code() == std::errc::resource_unavailable_try_again ||
                          e.code() == std::errc::not_enough_memory;
    rc = report(e.what(), resource ? kResourceExit : 1);
  } catch (const std::exception& e) {
    rc = report((std::string("internal error: ") + e.what()).c_str(), 1);
  }
  g_running = false;
  return rc;
}
