#pragma once
/// @file constants.hpp
/// Mathematical constants shared by the modules (one definition each).
#include <numbers>

namespace elliptica {

inline constexpr double kPi = std::numbers::pi;
inline constexpr double kSqrtPi = 1.77245385090551602729816748334114518;  ///< sqrt(pi)

}  // namespace elliptica
