#pragma once
/// @file resources.hpp
/// Resource checks made BEFORE a large allocation, so that an impossible request ends with a
/// ResourceError (CLI exit 6, Python elliptica.ResourceError) naming what needed the memory,
/// instead of std::bad_alloc part-way through, a process killed by the kernel's OOM killer, or an
/// exception escaping an OpenMP region.
#include <cstddef>
#include <string>

namespace elliptica {

/// Total physical memory of the machine in bytes (sysconf(_SC_PHYS_PAGES) * page size), or the
/// value of the environment variable ELLIPTICA_MEMORY_LIMIT (bytes, for tests and for sharing a
/// machine) when it is set to a positive integer. Never 0 (falls back to 2^63 when unknown).
std::size_t memory_limit_bytes();

/// Throws ResourceError "WHAT would take N GiB of memory, more than the M GiB this machine has
/// (memory_limit_bytes())" when bytes > memory_limit_bytes(). `bytes` is the caller's estimate
/// of what it is about to allocate, as a double so that products of declared sizes cannot wrap
/// around (NaN and +Inf are refused too).
void require_memory(double bytes, const std::string& what);

/// Human-readable size, e.g. "3.2 GiB", "512 MiB", "18 KiB", "12 B".
std::string format_bytes(double bytes);

}  // namespace elliptica
