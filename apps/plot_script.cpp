/// @file plot_script.cpp
/// See plot_script.hpp.
#include "plot_script.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "elliptica/core/error.hpp"

extern char** environ;

namespace elliptica::cli {

namespace fs = std::filesystem;

std::string find_plot_script(const std::string& name, const std::string& given) {
  std::error_code ec;
  if (!given.empty()) {
    if (!fs::is_regular_file(given, ec)) throw InvalidArgument("--plot-script: " + given + " is not a file");
    return given;
  }
  std::vector<fs::path> cands;
  if (std::string(ELLIPTICA_SCRIPTS_DIR).size()) cands.push_back(fs::path(ELLIPTICA_SCRIPTS_DIR) / name);
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) cands.push_back(self.parent_path().parent_path().parent_path() / "scripts" / name);
  for (const auto& p : cands)
    if (fs::is_regular_file(p, ec)) return p.string();
  throw InvalidArgument("cannot find scripts/" + name + "; give --plot-script PATH or --no-plots");
}

namespace {
std::string quoted(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;!#~") == std::string::npos) return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}
}  // namespace

std::string plot_command_line(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd("python3 ");
  cmd += quoted(script);
  for (const auto& a : args) {
    cmd += ' ';
    cmd += quoted(a);
  }
  return cmd;
}

void run_plot_script(const std::string& script, const std::vector<std::string>& args, const std::string& hint) {
  std::vector<std::string> argv_s{"python3", script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string cmd = plot_command_line(script, args);
  // What this process printed so far comes before the script's own output (a pipe or file
  // buffers stdout fully).
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, "python3", nullptr, nullptr, argv.data(), environ);
  if (err != 0)
    throw IOError("plotting failed (" + cmd + " could not be started: " + std::strerror(err) + "); " + hint);
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w == -1 && errno == EINTR);
  if (w == -1) throw IOError("plotting failed (waiting for " + cmd + ": " + std::strerror(errno) + "); " + hint);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string why = WIFEXITED(status)     ? "exited with code " + std::to_string(WEXITSTATUS(status))
                          : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "failed with status " + std::to_string(status);
  throw IOError("plotting failed (" + cmd + " " + why + "); " + hint);
}

}  // namespace elliptica::cli
