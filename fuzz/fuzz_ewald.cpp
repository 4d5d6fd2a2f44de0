/// @file fuzz_ewald.cpp
/// libFuzzer target: the numeric validation paths of the spectral Ewald plan: options (box,
/// tolerance, viscosity, overrides), points with extreme coordinates and strengths, decoded
/// from the input and run through ewald::EwaldPlan (constructor, tune, evaluate) with one thread.
///
/// Decoding (fuzz::Bytes, zeros past the end):
///   flags  bit 0 stokeslet, 1 absolute tolerance, 2 field, 3 separate targets, 4 xi override,
///          5 rc override, 6 automatic grid (with flags2 bit 3; else a grid override), 7 P override;
///          flags2 bit 0 beta override, 1 degree override, 2 odd viscosity, 3 see flags bit 6
///   tolerance  kTolerances[b % 12];  box  L0 = kBoxBase[b % 12], L_d = L0 * 2^(b_d % 7 - 3)
///   N sources 1 + b % 8, N targets 1 + b % 4 (when separate)
///   coordinate  tag < 0xe0: (tag / 224) L_d (inside the box); tag < 0xf8: (tag - 0xec) L_d
///               (images up to 12 boxes away); else a raw double, any value (beyond 1e15 box
///               lengths, NaN and Inf must be refused)
///   strength    tag < 0xf8: (tag - 124) / 31, else a raw double (huge values must end in an error)
///   overrides   xi = 2^(b % 40 - 20) / max L, rc = min L 2^(3 - b % 24), M_d = 2 + b % 30,
///               P = 1 + b % 12, beta = b / 2, degree = b % 34 (each range covers invalid values)
/// Per-execution cost is bounded: at most 8 sources and 4 targets, moderate tolerances, box
/// aspect ratios <= 64, grid overrides <= 31, and evaluate() runs only when the tuned grid has at
/// most 64^3 points. The automatic parameter choice searches (xi, r_c, M, P) with quadratures of
/// the error estimates, 15-30 ms per plan in a Release build and ~80 ms here; with a grid
/// override it takes ~10 ms here, hence the grid is overridden unless two flag bits ask otherwise
/// (about a quarter of the inputs).
#include <algorithm>
#include <cstdlib>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "elliptica/ewald/ewald.hpp"
#include "fuzz_common.hpp"

namespace {

namespace ew = elliptica::ewald;

// The default FFT planner (FftPlanner::Wisdom) measures each new grid with FFTW_MEASURE and writes
// the per-machine cache: off here (it plans as FFTW_ESTIMATE), as in the test suites; the cache's
// own reader is exercised by test_ewald_fft_wisdom. Set before the first plan.
[[maybe_unused]] const int kFftWisdomOff = setenv("ELLIPTICA_EWALD_FFT_WISDOM", "off", 1);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTolerances[12] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-6, 0.5, 0.0, -1e-3, 1.0, kNaN, 1e-15, 1e-14};
constexpr double kBoxBase[12] = {1.0, 2.5, 1e-3, 1e3, 1e-100, 1e100, 0.0, -1.0, kNaN, kInf, 1e-101, 1e101};

double coordinate(fuzz::Bytes& in, double L) {
  const std::uint8_t tag = in.byte();
  if (tag < 0xe0) return tag / 224.0 * L;
  if (tag < 0xf8) return (static_cast<int>(tag) - 0xec) * L;
  return in.raw_double();
}

double strength(fuzz::Bytes& in) {
  const std::uint8_t tag = in.byte();
  return tag < 0xf8 ? (static_cast<int>(tag) - 124) / 31.0 : in.raw_double();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  const std::uint8_t flags = in.byte(), flags2 = in.byte();
  ew::Options o;
  o.kernel = flags & 1 ? ew::Kernel::Stokeslet : ew::Kernel::Laplace;
  o.tolerance_kind = flags & 2 ? ew::ToleranceKind::Absolute : ew::ToleranceKind::Relative;
  o.compute_field = (flags & 4) != 0;
  o.threads = 1;
  o.tolerance = kTolerances[in.byte() % 12];
  const double L0 = kBoxBase[in.byte() % 12];
  for (int d = 0; d < 3; ++d) o.box[static_cast<std::size_t>(d)] = std::ldexp(L0, in.byte() % 7 - 3);
  if (flags2 & 4) o.viscosity = kBoxBase[in.byte() % 12];
  const double Lmin = std::min({o.box[0], o.box[1], o.box[2]}), Lmax = std::max({o.box[0], o.box[1], o.box[2]});
  if (flags & 16) {
    o.xi = std::ldexp(1.0, in.byte() % 40 - 20) / Lmax;  // xi max(L) = 2^-20 .. 2^19
  }
  if (flags & 32) {
    o.rc = std::ldexp(Lmin, 3 - in.byte() % 24);
  }
  if (!((flags & 64) && (flags2 & 8))) o.grid = std::array<int, 3>{2 + in.byte() % 30, 2 + in.byte() % 30, 2 + in.byte() % 30};
  if (flags & 128) o.window_support = 1 + in.byte() % 12;
  if (flags2 & 1) o.window_shape = in.byte() / 2.0;
  if (flags2 & 2) o.poly_degree = in.byte() % 34;

  const std::size_t ns = 1 + in.byte() % 8;
  const std::size_t nt = flags & 8 ? 1 + in.byte() % 4 : 0;
  const int sc = ew::strength_components(o.kernel);
  std::vector<double> src(3 * ns), q(static_cast<std::size_t>(sc) * ns), trg(3 * nt);
  for (std::size_t i = 0; i < ns; ++i)
    for (int d = 0; d < 3; ++d) src[3 * i + static_cast<std::size_t>(d)] = coordinate(in, o.box[static_cast<std::size_t>(d)]);
  for (double& x : q) x = strength(in);
  for (std::size_t i = 0; i < nt; ++i)
    for (int d = 0; d < 3; ++d) trg[3 * i + static_cast<std::size_t>(d)] = coordinate(in, o.box[static_cast<std::size_t>(d)]);

  fuzz::accept_library_errors([&] {
    ew::EwaldPlan plan(o);
    const elliptica::ConstMatrixView<double> S(src.data(), ns, 3), Q(q.data(), ns, static_cast<std::size_t>(sc)),
        T(trg.data(), nt, 3);
    const std::optional<elliptica::ConstMatrixView<double>> targets =
        nt ? std::optional<elliptica::ConstMatrixView<double>>(T) : std::nullopt;
    const ew::Params& p = plan.tune(S, Q, targets);
    fuzz::check(p.grid[0] >= 1 && p.grid[1] >= 1 && p.grid[2] >= 1, "a tuned plan has a grid");
    if (double(p.grid[0]) * p.grid[1] * p.grid[2] > 64.0 * 64 * 64) return;  // keep executions short
    const ew::Result r = nt ? plan.evaluate(S, Q, T) : plan.evaluate(S, Q);
    const std::size_t rows = nt ? nt : ns;
    fuzz::check(r.values.rows == rows, "one result row per target");
    fuzz::check(r.values.cols == (o.kernel == ew::Kernel::Stokeslet ? 3u : 1u), "result columns");
    for (double v : r.values.values) fuzz::check(std::isfinite(v), "finite result (else NumericalError)");
    if (o.compute_field) {
      fuzz::check(r.field.rows == rows && r.field.cols == 3, "field is (N_targets, 3)");
      for (double v : r.field.values) fuzz::check(std::isfinite(v), "finite field (else NumericalError)");
    }
  });
  return 0;
}
