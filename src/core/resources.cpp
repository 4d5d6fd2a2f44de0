/// @file resources.cpp
/// Memory limit of the machine and the check made before large allocations (resources.hpp).
#include "elliptica/core/resources.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "elliptica/core/error.hpp"

namespace elliptica {

std::size_t memory_limit_bytes() {
  if (const char* env = std::getenv("ELLIPTICA_MEMORY_LIMIT")) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (errno == 0 && end != env && *end == '\0' && v > 0) return static_cast<std::size_t>(v);
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    const double b = double(pages) * double(page);
    if (b < double(std::numeric_limits<std::size_t>::max())) return static_cast<std::size_t>(b);
  }
  return std::size_t(1) << 63;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

void require_memory(double bytes, const std::string& what) {
  const double limit = double(memory_limit_bytes());
  if (!(bytes <= limit))  // also catches NaN and +Inf estimates
    throw ResourceError(what + " would take " + format_bytes(bytes) + " of memory, more than the " + format_bytes(limit) +
                        " this machine has" +
                        (std::getenv("ELLIPTICA_MEMORY_LIMIT") ? " (ELLIPTICA_MEMORY_LIMIT)" : ""));
}

}  // namespace elliptica
