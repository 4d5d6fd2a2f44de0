#pragma once
/// @file error.hpp
/// The one exception hierarchy of elliptica. Every error the library throws derives from
/// elliptica::Error and carries a category; the CLI maps categories to exit codes and the
/// Python layer maps them to ValueError / OSError / RuntimeError / MemoryError subclasses.
///
/// CLI exit codes (documented in README.md and every subcommand's --help):
///   0 success, 1 command-line usage (CLI11), 2 invalid input, 3 file error, 4 numerical failure,
///   5 not converged, 6 out of resources (memory, threads, or a size limit of the library).
#include <stdexcept>
#include <string>

namespace elliptica {

enum class ErrorCategory {
  InvalidArgument,  ///< bad input: shapes, NaN/Inf, out-of-range parameters (CLI exit 2, Python ValueError)
  IO,               ///< unreadable, truncated or malformed file; failed write (CLI exit 3, Python OSError)
  Numerical,        ///< numerical breakdown, e.g. no parameters meet a tolerance (CLI exit 4, Python RuntimeError)
  NotConverged,     ///< an iterative method stopped before its tolerance (CLI exit 5, Python RuntimeError)
  Resource          ///< the request needs more memory or threads than there are, or than a documented
                    ///< size limit allows (CLI exit 6, Python MemoryError)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCategory c, const std::string& what) : std::runtime_error(what), category_(c) {}
  ErrorCategory category() const noexcept { return category_; }

 private:
  ErrorCategory category_;
};

struct InvalidArgument : Error {
  explicit InvalidArgument(const std::string& w) : Error(ErrorCategory::InvalidArgument, w) {}
};
struct IOError : Error {
  explicit IOError(const std::string& w) : Error(ErrorCategory::IO, w) {}
};
struct NumericalError : Error {
  explicit NumericalError(const std::string& w) : Error(ErrorCategory::Numerical, w) {}
};
struct NotConverged : Error {
  explicit NotConverged(const std::string& w) : Error(ErrorCategory::NotConverged, w) {}
};
struct ResourceError : Error {
  explicit ResourceError(const std::string& w) : Error(ErrorCategory::Resource, w) {}
};

/// Exit code the CLI uses for an error of this category (0 is success, 1 is reserved for
/// command-line usage errors reported by CLI11; std::bad_alloc also exits with 6).
inline int exit_code(ErrorCategory c) {
  switch (c) {
    case ErrorCategory::InvalidArgument: return 2;
    case ErrorCategory::IO: return 3;
    case ErrorCategory::Numerical: return 4;
    case ErrorCategory::NotConverged: return 5;
    case ErrorCategory::Resource: return 6;
  }
  return 1;
}

}  // namespace elliptica
