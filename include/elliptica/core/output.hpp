#pragma once
/// @file output.hpp
/// Safe output files: prepared before the work that produces their content (an unwritable
/// destination fails at once, not after the computation), written into a temporary file in the
/// destination's folder and renamed into place only when complete, so that a failure (disk full,
/// an exception, a signal) leaves the previous file untouched and no temporary behind.
///
/// What the destination may be:
///   - missing: created (its folder must exist), with mode 0666 & ~umask;
///   - a regular file: replaced atomically; the new file keeps the old one's permission bits
///     (and, when running as root, its owner and group);
///   - a symbolic link: followed (the link stays, the file it points to is replaced; a dangling
///     link is refused);
///   - a FIFO or a character device (/dev/null, /dev/stdout, a terminal): written through
///     directly, without a temporary or a rename (so not atomic: it cannot be);
///   - a directory, block device or socket: refused (IOError).
/// The temporary is "." + name + ".tmp.PID.HEX", the name shortened so that the whole stays
/// within the folder's NAME_MAX (an output name of 250 characters works).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace elliptica::io {

/// One output file (see the file comment). Not copyable; movable.
class OutputFile {
 public:
  /// Checks the destination and creates the temporary file now. Throws IOError naming the path
  /// and the reason (folder missing or not writable, destination a directory/block device/socket,
  /// dangling symbolic link, FIFO or device not writable).
  explicit OutputFile(const std::string& path);
  /// Removes the temporary if commit() was not reached.
  ~OutputFile();
  OutputFile(OutputFile&&) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Appends bytes (buffered). Throws IOError on a write error (e.g. disk full: ENOSPC).
  void write(const char* p, std::size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Flushes, syncs and closes the temporary: the content is complete (called by commit()).
  void finish();
  /// finish(), then renames the temporary onto the destination (keeping its mode). Throws IOError.
  void commit();
  /// Abandons the file: removes the temporary (also what the destructor does).
  void discard() noexcept;

  /// The destination as given, and the path actually written (a symbolic link's target).
  const std::string& path() const;
  const std::string& destination() const;
  /// True for a FIFO or character device, written through without a temporary.
  bool direct() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Output files committed together (e.g. the outputs of `elliptica bem`): each file is prepared
/// at add() (its temporary exists from then on) and written through the returned OutputFile;
/// commit() first finishes (writes and syncs) every file, and only then renames them into place
/// one after the other. A failure before the renames (disk full while writing any of them)
/// removes all the temporaries and leaves every previous file as it was.
class OutputSet {
 public:
  OutputFile& add(const std::string& path);
  void commit();
  std::size_t size() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<OutputFile>> files_;
};

/// Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGABRT that remove the temporaries
/// of the output files not yet committed (and the folders registered with
/// remove_folder_on_signal), then end the process by the same signal (default action). For
/// programs (the CLI): a library never changes process-wide state on its own, so nothing calls
/// this implicitly.
void install_signal_cleanup();

/// Removes, now, the temporaries of every output file not yet committed and the registered
/// folders (what the signal handler does), for a program that must end without unwinding its
/// stack (e.g. from an atexit handler). Async-signal-safe.
void remove_uncommitted_outputs() noexcept;

/// Registers an (empty) folder created by this process, removed (rmdir: only if still empty) when
/// a signal of install_signal_cleanup() ends the process; unregister when the folder is kept.
void remove_folder_on_signal(const std::string& path);
void keep_folder_on_signal(const std::string& path);

}  // namespace elliptica::io
