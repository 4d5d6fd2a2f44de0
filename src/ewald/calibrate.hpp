#pragma once
// Internal parts of the cost-model calibration (calibrate.cpp; not installed). The public entry
// points are in include/elliptica/ewald/ewald.hpp (CostConstants, cost_constants, calibrate_costs).
#include <string>
#include <vector>

#include "elliptica/ewald/ewald.hpp"

namespace elliptica::ewald::detail {

/// Revision of the cost model's terms (params.cpp, model_cost). Part of the cache key: a change of
/// the terms makes older cache entries stale (they are measured again).
inline constexpr int kCostModelRevision = 7;  // 3: P2P columns of r_c/1.25, z-cells of r_c/5, target blocks; 4: float32 columns of r_c; 5: P2G/G2P with compile-time P (2-3x cheaper spreading: earlier constants are stale); 6: P2P by pair symmetry (float64 Stokes: the per-pair constants are per pair evaluated once for both points); 7: P2G / G2P point work scaled per variant by a measurement out of cache

/// The range of CostConstants::p2g_scale and g2p_scale, measured (calibrate.cpp) or read from a file.
inline constexpr double kFarScaleMin = 0.5, kFarScaleMax = 4.0;

/// Forgets the constants this process uses, so that the next cost_constants() reads
/// ELLIPTICA_EWALD_COSTS (and the cache) again. For tests.
void reset_cost_constants();

/// The key of this process and machine for precision p (precision, cpu, simd_target, version,
/// build filled in; the constants are the built-in ones).
CostConstants machine_key(Precision p);

/// True when two entries have the same key (precision, cpu, simd_target, version, build).
bool same_key(const CostConstants& a, const CostConstants& b);

/// The valid entries of a constants file's text (entries with a missing or non-positive constant
/// or another model revision are skipped; p2g_scale and g2p_scale are clamped to [0.5, 4]). Throws
/// IOError when the text is not such a file (not JSON, wrong format tag).
std::vector<CostConstants> parse_cost_constants(const std::string& text);

/// True when every constant is finite and > 0 (fft_growth finite and >= 0).
bool valid_constants(const CostConstants& c);

/// Writes text to path atomically: a temporary file in the same folder, renamed into place.
/// Throws IOError when it cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

/// The CPU model name of /proc/cpuinfo ("unknown" when not found).
std::string cpu_model_name();

}  // namespace elliptica::ewald::detail
