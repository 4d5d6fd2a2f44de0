#pragma once
/// @file fuzz_common.hpp
/// Shared pieces of the libFuzzer targets (docs/fuzzing.md). A target accepts the library's
/// documented exceptions (elliptica::Error and its subclasses) and nothing else: any other
/// exception leaves LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer reports the input
/// as a crash, like a sanitizer report, a failed check() or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "elliptica/core/error.hpp"

namespace fuzz {

/// Memory the library may plan to use (ELLIPTICA_MEMORY_LIMIT, read by memory_limit_bytes()):
/// 256 MiB, well below the -rss_limit_mb of scripts/fuzz.sh, so that a declared size the library
/// checks ends in ResourceError and an unchecked one in a libFuzzer out-of-memory report.
inline void limit_library_memory() { setenv("ELLIPTICA_MEMORY_LIMIT", "268435456", 1); }

/// An invariant of a successful result; a violation is a finding (aborts with a message).
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

/// Runs f(); elliptica::Error is the expected outcome of invalid input.
template <class F>
void accept_library_errors(F&& f) {
  try {
    f();
  } catch (const elliptica::Error&) {
  }
}

/// Reads the input as a sequence of fields; past the end every read gives zeros, so that every
/// input decodes to some problem.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  std::uint8_t byte() { return pos_ < n_ ? p_[pos_++] : 0; }
  double raw_double() {
    unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (auto& x : b) x = byte();
    double d;
    std::memcpy(&d, b, 8);
    return d;
  }
  std::size_t left() const { return n_ - pos_; }

 private:
  const std::uint8_t* p_;
  std::size_t n_, pos_ = 0;
};

}  // namespace fuzz
