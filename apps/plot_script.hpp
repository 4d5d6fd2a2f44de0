#pragma once
/// @file plot_script.hpp
/// The CLI's plotting step: the PNG plots of `elliptica mg study` and `elliptica bem` are drawn by
/// Python scripts (scripts/mg_study_plots.py, scripts/bem_plots.py; matplotlib) from the CSV files
/// the commands have already written. The library itself never starts a process; the CLI starts
/// `python3 SCRIPT ARGS...` directly (posix_spawnp, no shell: arguments are passed verbatim, so
/// paths with spaces or quotes need no quoting) and waits for it.
#include <string>
#include <vector>

namespace elliptica::cli {

/// The script `name` (e.g. "bem_plots.py"): `given` when not empty (InvalidArgument
/// "--plot-script: PATH is not a file" unless it is a regular file), else the first existing of
/// ELLIPTICA_SCRIPTS_DIR/name (the source tree the CLI was built from) and
/// <exe>/../../../scripts/name; InvalidArgument "cannot find scripts/NAME; give --plot-script PATH
/// or --no-plots" when none exists.
std::string find_plot_script(const std::string& name, const std::string& given);

/// Runs `python3 script args...` and waits. Throws IOError naming the command line and why
/// (could not be started, exit code, signal) followed by `hint`, when it does not exit with 0.
void run_plot_script(const std::string& script, const std::vector<std::string>& args, const std::string& hint);

/// The command line as a person would type it (for progress messages).
std::string plot_command_line(const std::string& script, const std::vector<std::string>& args);

}  // namespace elliptica::cli
