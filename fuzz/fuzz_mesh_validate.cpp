/// @file fuzz_mesh_validate.cpp
/// libFuzzer target: mesh validation (bem::validate_and_orient, with its self-intersection and
/// nesting checks) on vertices and triangles decoded from the input.
///
/// Decoding (Bytes gives zeros past the end): byte 0: vertices nv = 1 + b % 64; byte 1: triangles
/// nt = 1 + b % 128; byte 2: scale 2^(b % 128 - 64); then per vertex coordinate one tag byte:
/// tag < 0xf0: the grid value (tag - 120) / 16 times the scale (exact: many coincident, collinear
/// and coplanar points, which exercise the exact predicates), else the next 8 bytes as a double
/// (any bit pattern: NaN, Inf, subnormals, 1e308); then per triangle 3 index bytes b: b < 250:
/// b % nv, 250: -1, else nv + (b - 251) (out of range).
///
/// Oracles besides "only elliptica::Error": (1) the verdict does not depend on the numbering:
/// the same mesh with the triangles in reverse order and their vertices rotated is accepted or
/// refused alike (except by the two relative thresholds, see threshold_refusal()), with the same
/// volume when accepted; (2) an accepted mesh of at most 64
/// elements has no intersecting pair of elements by the all-pairs test (both orders), which checks
/// the bounding-volume hierarchy's candidate search.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "bem/mesh_intersect.hpp"
#include "elliptica/bem/mesh.hpp"
#include "fuzz_common.hpp"

namespace {

using elliptica::bem::Mesh;

bool validates(Mesh& m, elliptica::bem::MeshReport& rep, std::string& error) {
  try {
    rep = elliptica::bem::validate_and_orient(m);
    return true;
  } catch (const elliptica::Error& e) {
    error = e.what();
    return false;
  }
}

/// Bounding box of the vertices the triangles use.
struct Vec3Bounds {
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  explicit Vec3Bounds(const Mesh& m) {
    for (const auto& t : m.triangles)
      for (auto vi : t)
        for (int d = 0; d < 3; ++d) {
          lo[d] = std::min(lo[d], m.vertices[static_cast<std::size_t>(vi)][d]);
          hi[d] = std::max(hi[d], m.vertices[static_cast<std::size_t>(vi)][d]);
        }
  }
  double diag2() const {
    double s = 0;
    for (int d = 0; d < 3; ++d) s += (hi[d] - lo[d]) * (hi[d] - lo[d]);
    return s;
  }
};

/// Refusals by a relative threshold (near-zero element area, zero enclosed volume) evaluate
/// rounded expressions whose rounding depends on the numbering: a borderline case may go either
/// way. Every other check is exact or combinatorial.
bool threshold_refusal(const std::string& error) {
  return error.find("degenerate") != std::string::npos || error.find("encloses zero volume") != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  const int nv = 1 + in.byte() % 64;
  const int nt = 1 + in.byte() % 128;
  const double scale = std::ldexp(1.0, static_cast<int>(in.byte() % 128) - 64);
  Mesh m;
  m.vertices.resize(static_cast<std::size_t>(nv));
  for (auto& v : m.vertices)
    for (double& x : v) {
      const std::uint8_t tag = in.byte();
      x = tag < 0xf0 ? (static_cast<int>(tag) - 120) / 16.0 * scale : in.raw_double();
    }
  m.triangles.resize(static_cast<std::size_t>(nt));
  for (auto& t : m.triangles)
    for (auto& i : t) {
      const std::uint8_t b = in.byte();
      i = b < 250 ? b % nv : (b == 250 ? -1 : nv + (b - 251));
    }

  Mesh renumbered = m;
  std::reverse(renumbered.triangles.begin(), renumbered.triangles.end());
  for (auto& t : renumbered.triangles) std::rotate(t.begin(), t.begin() + 1, t.end());

  elliptica::bem::MeshReport rep, rep2;
  std::string err, err2;
  const bool ok = validates(m, rep, err);
  const bool ok2 = validates(renumbered, rep2, err2);
  if (ok != ok2 && !threshold_refusal(err + err2)) {
    std::fprintf(stderr, "as given: %s\nrenumbered: %s\n", ok ? "accepted" : err.c_str(), ok2 ? "accepted" : err2.c_str());
    fuzz::check(false, "the verdict of validate_and_orient does not depend on the element numbering");
  }
  if (!ok || !ok2) return 0;
  fuzz::check(rep.components == rep2.components, "same number of components");
  // The signed volume sums one triple product per element about the component's bounding-box
  // centre: its rounding is ~ eps x elements x diag^3 (diag: the mesh's bounding-box diagonal),
  // whatever the volume; a wrong orientation changes it by O(volume).
  double diag2 = 0;
  {
    Vec3Bounds b(m);
    diag2 = b.diag2();
  }
  const double round_bound = 1e-12 * static_cast<double>(m.triangles.size()) * diag2 * std::sqrt(diag2);
  fuzz::check(std::abs(rep.volume - rep2.volume) <= 1e-9 * std::abs(rep.volume) + round_bound, "same volume");
  fuzz::check(rep.volume > 0, "an accepted mesh encloses a positive volume");
  if (m.triangles.size() <= 64) {
    // the all-pairs test on the validated mesh, on the coordinates the library's search uses
    const std::vector<elliptica::bem::detail::Vec3> v = elliptica::bem::detail::predicate_coordinates(m);
    for (std::size_t e = 0; e < m.triangles.size(); ++e)
      for (std::size_t f = e + 1; f < m.triangles.size(); ++f) {
        fuzz::check(!elliptica::bem::detail::triangles_intersect(v, m.triangles[e], m.triangles[f]),
                    "no intersecting pair in an accepted mesh (e, f)");
        fuzz::check(!elliptica::bem::detail::triangles_intersect(v, m.triangles[f], m.triangles[e]),
                    "no intersecting pair in an accepted mesh (f, e)");
      }
  }
  return 0;
}
