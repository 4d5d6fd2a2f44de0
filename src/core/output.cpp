/// @file output.cpp
/// Output files written through a temporary and a rename, prepared before the work (output.hpp),
/// and the signal handler that removes uncommitted temporaries.
#include "elliptica/core/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "elliptica/core/error.hpp"

namespace elliptica::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int e) { return std::system_category().message(e); }

// ------------------------------------------------------------------------------------------
// Registry of paths to remove when a signal ends the process. Only lock-free atomics and
// fixed arrays, so the handler is async-signal-safe (it calls unlink, rmdir and raise only).
// ------------------------------------------------------------------------------------------

constexpr int kSlots = 128;
constexpr int kFree = 0, kBusy = 1, kFile = 2, kFolder = 3;
struct Slot {
  std::atomic<int> state{kFree};
  char path[4096];
};
Slot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int register_path(const std::string& p, int kind) {
  if (p.size() + 1 > sizeof(Slot::path)) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) {
      std::memcpy(g_slots[i].path, p.c_str(), p.size() + 1);
      g_slots[i].state.store(kind, std::memory_order_release);
      return i;
    }
  }
  return -1;  // full: this path is simply not cleaned up on a signal
}

void unregister_path(int slot) noexcept {
  if (slot >= 0) g_slots[slot].state.store(kFree, std::memory_order_release);
}

void remove_registered() noexcept {
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kFile) ::unlink(s.path);
  for (auto& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kFolder) ::rmdir(s.path);
}

extern "C" void cleanup_on_signal(int sig) {
  const int saved = errno;
  remove_registered();
  errno = saved;
  // SA_RESETHAND restored the default action; the signal is delivered again on return (it is
  // blocked while the handler runs), which ends the process as the sender meant.
  ::raise(sig);
}

std::string temp_name_for(const fs::path& dir, const std::string& base) {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32)};
  char tail[48];
  std::snprintf(tail, sizeof tail, ".tmp.%ld.%08llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(rng() & 0xffffffffULL));
  long name_max = ::pathconf(dir.empty() ? "." : dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = 255;
  const std::size_t room = static_cast<std::size_t>(name_max) - 1 - std::strlen(tail);  // "." prefix
  std::string stem = base.substr(0, std::min(base.size(), room));
  return (dir / ("." + stem + tail)).string();
}

}  // namespace

struct OutputFile::State {
  std::string path;         // as given
  std::string destination;  // what is written (a symbolic link's target)
  std::string tmp;          // temporary (empty for direct output)
  bool direct = false, existed = false, finished = false, committed = false;
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int fd = -1;
  int slot = -1;
  std::string buf;

  void open_direct() {
    fd = ::open(destination.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw IOError(path + ": cannot open for writing: " + errno_text(errno));
  }
  void raw_write(const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw IOError(path + ": write failed: " + errno_text(errno));
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  void flush() {
    if (buf.empty()) return;
    if (fd < 0 && direct) open_direct();
    raw_write(buf.data(), buf.size());
    buf.clear();
  }
  void remove_temp() noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (!tmp.empty() && !committed) ::unlink(tmp.c_str());
    unregister_path(slot);
    slot = -1;
  }
};

OutputFile::OutputFile(const std::string& path) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.path = path;
  if (path.empty()) throw IOError("output path is empty");
  std::string dest = path;
  struct stat st {};
  if (::lstat(dest.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::canonical(dest, ec);
    if (ec) throw IOError(path + ": is a symbolic link to a missing file or folder (" + ec.message() + "); refusing to replace the link");
    dest = target.string();
  }
  s.destination = dest;
  if (::stat(dest.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw IOError(path + ": cannot write: is a directory");
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
      if (::access(dest.c_str(), W_OK) != 0) throw IOError(path + ": cannot write: " + errno_text(errno));
      s.direct = true;  // written through (opened at the first write: a FIFO blocks until a reader)
      return;
    }
    if (!S_ISREG(st.st_mode))
      throw IOError(path + ": is " + std::string(S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file") +
                    "; refusing to write there (give a regular file, a FIFO or a character device)");
    s.existed = true;
    s.mode = st.st_mode & 07777;
    s.uid = st.st_uid;
    s.gid = st.st_gid;
  } else if (errno != ENOENT) {
    throw IOError(path + ": cannot access: " + errno_text(errno));
  }
  const fs::path p(dest);
  const fs::path dir = p.parent_path();
  {
    std::error_code ec;
    if (!dir.empty() && !fs::is_directory(dir, ec))
      throw IOError(path + ": cannot write: folder '" + dir.string() + "' does not exist");
  }
  for (int attempt = 0; attempt < 16 && s.fd < 0; ++attempt) {
    s.tmp = temp_name_for(dir, p.filename().string());
    s.fd = ::open(s.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (s.fd < 0 && errno != EEXIST)
      throw IOError(path + ": cannot write into folder '" + (dir.empty() ? std::string(".") : dir.string()) +
                    "': " + errno_text(errno));
  }
  if (s.fd < 0) throw IOError(path + ": cannot create a unique temporary file");
  s.slot = register_path(s.tmp, kFile);
  s.buf.reserve(1 << 16);
}

OutputFile::~OutputFile() {
  if (s_) s_->remove_temp();
}
OutputFile::OutputFile(OutputFile&&) noexcept = default;

void OutputFile::write(const char* p, std::size_t n) {
  State& s = *s_;
  if (s.finished) throw IOError(s.path + ": write after the file was finished");
  constexpr std::size_t kCap = 1 << 20;
  if (s.buf.size() + n > kCap) s.flush();
  if (n >= kCap) {
    if (s.fd < 0 && s.direct) s.open_direct();
    s.raw_write(p, n);
  } else {
    s.buf.append(p, n);
  }
}

void OutputFile::finish() {
  State& s = *s_;
  if (s.finished) return;
  try {
    if (s.direct && s.fd < 0) s.open_direct();
    s.flush();
    if (!s.direct) {
      if (s.existed) {
        if (::fchmod(s.fd, s.mode) != 0) throw IOError(s.path + ": cannot set the file mode: " + errno_text(errno));
        if (::geteuid() == 0) (void)!::fchown(s.fd, s.uid, s.gid);
      }
      if (::fsync(s.fd) != 0 && errno != EINVAL && errno != EROFS)
        throw IOError(s.path + ": fsync failed: " + errno_text(errno));
    }
    const int rc = ::close(s.fd);
    s.fd = -1;
    if (rc != 0) throw IOError(s.path + ": close failed: " + errno_text(errno));
    s.finished = true;
  } catch (...) {
    s.remove_temp();
    throw;
  }
}

void OutputFile::commit() {
  State& s = *s_;
  if (s.committed) return;
  finish();
  if (!s.direct) {
    if (::rename(s.tmp.c_str(), s.destination.c_str()) != 0) {
      const int e = errno;
      s.remove_temp();
      throw IOError(s.path + ": cannot rename the temporary file into place: " + errno_text(e));
    }
    // Make the rename durable too (best effort).
    const fs::path dir = fs::path(s.destination).parent_path();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      (void)::fsync(dfd);
      ::close(dfd);
    }
  }
  s.committed = true;
  unregister_path(s.slot);
  s.slot = -1;
}

void OutputFile::discard() noexcept {
  if (s_) s_->remove_temp();
}

const std::string& OutputFile::path() const { return s_->path; }
const std::string& OutputFile::destination() const { return s_->destination; }
bool OutputFile::direct() const { return s_->direct; }

OutputFile& OutputSet::add(const std::string& path) {
  files_.push_back(std::make_unique<OutputFile>(path));
  return *files_.back();
}

void OutputSet::commit() {
  try {
    for (auto& f : files_) f->finish();
  } catch (...) {
    for (auto& f : files_) f->discard();
    throw;
  }
  for (std::size_t i = 0; i < files_.size(); ++i) {
    try {
      files_[i]->commit();
    } catch (const IOError& e) {
      std::string done;
      for (std::size_t j = 0; j < i; ++j) done += (j ? ", " : "") + files_[j]->path();
      throw IOError(std::string(e.what()) + (i ? " (already replaced: " + done + "; the others are unchanged)"
                                               : " (no file was replaced)"));
    }
  }
}

void install_signal_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = cleanup_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

void remove_uncommitted_outputs() noexcept { remove_registered(); }

void remove_folder_on_signal(const std::string& path) { register_path(path, kFolder); }

void keep_folder_on_signal(const std::string& path) {
  for (int i = 0; i < kSlots; ++i)
    if (g_slots[i].state.load(std::memory_order_acquire) == kFolder && path == g_slots[i].path) unregister_path(i);
}

}  // namespace elliptica::io
