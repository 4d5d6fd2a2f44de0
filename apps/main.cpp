/// @file main.cpp
/// `elliptica`: command-line front end of the elliptica library. One subcommand per capability
/// (now: `ewald`, `mg`, `bem`). Errors print "elliptica: error: <message>" to stderr and exit with the code of
/// the error's category (2 invalid input, 3 file error, 4 numerical, 5 not converged); command-
/// line usage errors are reported by CLI11 and exit with 1.
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "elliptica/core/error.hpp"
#include "bem_cmd.hpp"
#include "ewald_cmd.hpp"
#include "mg_cmd.hpp"

#ifndef ELLIPTICA_VERSION
#define ELLIPTICA_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"elliptica: fast solvers for elliptic PDEs (spectral Ewald summation)", "elliptica"};
  app.set_version_flag("--version", std::string("elliptica ") + ELLIPTICA_VERSION);
  app.require_subcommand(1);

  elliptica::cli::EwaldArgs ewald_args;
  CLI::App* ewald = elliptica::cli::add_ewald_command(app, ewald_args);
  elliptica::cli::MgArgs mg_args;
  CLI::App* mg = elliptica::cli::add_mg_command(app, mg_args);
  elliptica::cli::BemArgs bem_args;
  CLI::App* bem = elliptica::cli::add_bem_command(app, bem_args);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help/version text); usage errors all exit with 1.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }

  try {
    if (ewald->parsed()) return elliptica::cli::run_ewald(ewald_args);
    if (mg->parsed()) return elliptica::cli::run_mg(mg_args);
    if (bem->parsed()) return elliptica::cli::run_bem(bem_args);
    std::cerr << "elliptica: error: no subcommand given\n";
    return 1;
  } catch (const elliptica::Error& e) {
    std::cerr << "elliptica: error: " << e.what() << "\n";
    return elliptica::exit_code(e.category());
  } catch (const std::bad_alloc&) {
    std::cerr << "elliptica: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "elliptica: error: " << e.what() << "\n";
    return 1;
  }
}
