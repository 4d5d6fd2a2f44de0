// The cost model's constants (src/ewald/calibrate.cpp): the modes of ELLIPTICA_EWALD_COSTS, the
// per-machine cache (round trip, corrupt files, unwritable folders), the file format, thread
// safety of the first use, and the parameter choice with measured constants still meeting the
// tolerance against the independent direct Ewald sum. No assertion depends on timings (the
// machines are shared): only that the measured constants are finite and positive.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/calibrate.hpp"
#include "ewald/internal.hpp"
#include "common/env_scope.hpp"
#include "reference/direct_ewald.hpp"

namespace fs = std::filesystem;
using namespace elliptica;
using namespace elliptica::ewald;
using namespace elliptica::testref;

namespace {

/// Environment variables for the test's scope; the process reads ELLIPTICA_EWALD_COSTS again
/// before and after.
class EnvScope : public testcommon::EnvScope {
 public:
  EnvScope(const char* key, const char* value) : EnvScope({{key, value}}) {}
  EnvScope(std::initializer_list<std::pair<std::string, const char*>> vars)
      : testcommon::EnvScope(vars, [] { detail::reset_cost_constants(); }) {}
};

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() /
                     ("elliptica_cal_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
  fs::create_directories(d);
  return d;
}

void expect_valid(const CostConstants& c) {
  EXPECT_TRUE(detail::valid_constants(c)) << cost_constants_json(c);
  for (int v = 0; v < kCostVariants; ++v) {
    EXPECT_TRUE(std::isfinite(c.p2p_check[v]) && c.p2p_check[v] > 0) << cost_variant_name(v);
    EXPECT_TRUE(std::isfinite(c.p2p_pair[v]) && c.p2p_pair[v] > 0) << cost_variant_name(v);
    EXPECT_LT(c.p2p_check[v], 1e-5);  // seconds per distance test: far below 10 us on any machine
    EXPECT_LT(c.p2p_pair[v], 1e-4);
    // the out-of-cache scales of the far-field point work: clamped to [0.5, 4] (1 built in)
    EXPECT_TRUE(c.p2g_scale[v] >= 0.5 && c.p2g_scale[v] <= 4.0) << cost_variant_name(v) << " " << c.p2g_scale[v];
    EXPECT_TRUE(c.g2p_scale[v] >= 0.5 && c.g2p_scale[v] <= 4.0) << cost_variant_name(v) << " " << c.g2p_scale[v];
  }
  for (double x : {c.p2p_cell, c.p2p_column, c.spread, c.interp, c.window_row, c.grid_pass, c.fft, c.cnv_mode,
                   c.cnv_component, c.window_eval}) {
    EXPECT_TRUE(std::isfinite(x) && x > 0) << cost_constants_json(c);
    EXPECT_LT(x, 1e-4);
  }
  EXPECT_TRUE(std::isfinite(c.fft_growth) && c.fft_growth >= 0 && c.fft_growth <= 0.5);
}

bool same_values(const CostConstants& a, const CostConstants& b) {
  bool eq = a.p2p_cell == b.p2p_cell && a.p2p_column == b.p2p_column && a.spread == b.spread && a.interp == b.interp &&
            a.window_row == b.window_row && a.grid_pass == b.grid_pass && a.fft == b.fft &&
            a.fft_growth == b.fft_growth && a.cnv_mode == b.cnv_mode && a.cnv_component == b.cnv_component &&
            a.window_eval == b.window_eval;
  for (int v = 0; v < kCostVariants; ++v)
    eq = eq && a.p2p_check[v] == b.p2p_check[v] && a.p2p_pair[v] == b.p2p_pair[v] && a.p2g_scale[v] == b.p2g_scale[v] &&
         a.g2p_scale[v] == b.g2p_scale[v];
  return eq;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A cache entry for this machine's key with recognisable values (no measurement needed).
CostConstants fake_entry(Precision p, double scale) {
  CostConstants c = detail::machine_key(p);
  const CostConstants b = builtin_cost_constants(p);
  c.p2p_cell = b.p2p_cell * scale;
  c.p2p_column = b.p2p_column * scale;
  for (int v = 0; v < kCostVariants; ++v) {
    c.p2p_check[v] = b.p2p_check[v] * scale;
    c.p2p_pair[v] = b.p2p_pair[v] * scale * 1.0000000000000002;  // a value that needs 17 digits
    c.p2g_scale[v] = 1.0 + 0.125 * v;
    c.g2p_scale[v] = 1.5 + 0.0625 * v;
  }
  c.spread = b.spread * scale;
  c.interp = b.interp * scale;
  c.window_row = b.window_row * scale;
  c.grid_pass = b.grid_pass * scale;
  c.fft = b.fft * scale;
  c.fft_growth = 0.125;
  c.cnv_mode = b.cnv_mode * scale;
  c.cnv_component = b.cnv_component * scale;
  c.window_eval = b.window_eval * scale;
  c.measured_at = "2000-01-01T00:00:00Z";
  return c;
}

}  // namespace

// Sanitizer builds take the built-in constants in auto mode (a measurement there means
// nothing): the tests of measuring, caching and using measured constants are skipped there.
static bool measures_in_auto() {
  const std::string b = builtin_cost_constants(Precision::Double).build;
  return b != "asan" && b != "tsan";
}
#define ELLIPTICA_SKIP_IF_SANITIZED() \
  if (!measures_in_auto()) GTEST_SKIP() << "sanitizer build: auto mode uses the built-in constants"

TEST(EwaldCalibrate, VariantsAndBuiltinConstants) {
  EXPECT_EQ(cost_variant(Kernel::Laplace, false), 0);
  EXPECT_EQ(cost_variant(Kernel::Laplace, true), 1);
  EXPECT_EQ(cost_variant(Kernel::Stokeslet, false), 2);
  EXPECT_EQ(cost_variant(Kernel::Stokeslet, true), 3);
  EXPECT_EQ(cost_variant(Kernel::Stresslet, false), 4);
  EXPECT_EQ(cost_variant(Kernel::StokesCombined, false), 5);
  std::set<std::string> names;
  for (int v = 0; v < kCostVariants; ++v) names.insert(cost_variant_name(v));
  EXPECT_EQ(names.size(), std::size_t(kCostVariants));
  EXPECT_THROW(cost_variant_name(kCostVariants), InvalidArgument);
  for (Precision p : {Precision::Double, Precision::Single}) {
    const CostConstants b = builtin_cost_constants(p);
    expect_valid(b);
    EXPECT_EQ(b.source, "builtin");
    EXPECT_EQ(b.precision, p);
  }
}

TEST(EwaldCalibrate, MeasuredConstantsArePositiveAndFinite) {
  EnvScope env("ELLIPTICA_EWALD_COSTS", "builtin");  // calibrate_costs measures whatever the mode
  for (Precision p : {Precision::Double, Precision::Single}) {
    // sanitized builds: float64 only (the float32 measurement runs the same code, 30 s under ASan)
    if (ELLIPTICA_SANITIZED_BUILD && p == Precision::Single) continue;
    const CostConstants c = calibrate_costs(p, /*write_cache=*/false);
    expect_valid(c);
    EXPECT_EQ(c.source, "measured");
    EXPECT_EQ(c.precision, p);
    EXPECT_TRUE(c.file.empty());
    EXPECT_GT(c.measure_seconds, 0.0);
    EXPECT_FALSE(c.measured_at.empty());
    EXPECT_FALSE(c.cpu.empty());
    EXPECT_FALSE(c.simd_target.empty());
    // builtin mode: the process keeps the built-in constants
    EXPECT_EQ(cost_constants(p).source, "builtin");
  }
}

TEST(EwaldCalibrate, BuiltinModeIsDeterministic) {
  EnvScope env("ELLIPTICA_EWALD_COSTS", "builtin");
  const CostConstants c = cost_constants(Precision::Double);
  EXPECT_EQ(c.source, "builtin");
  EXPECT_TRUE(same_values(c, builtin_cost_constants(Precision::Double)));
  // two plans, the same choice
  const std::size_t n = 400;
  const auto x = make_points(Distribution::Uniform, n, {1, 1, 1}, 7);
  const auto q = make_strengths(n, 1, 8, true);
  Params first;
  for (int rep = 0; rep < 2; ++rep) {
    if (rep == 1) detail::reset_cost_constants();
    Options o;
    o.tolerance = 1e-8;
    o.threads = 1;
    EwaldPlan plan(o);
    plan.set_points({x.data(), n, 3});
    const Params p = plan.tune(Densities{{q.data(), n, 1}, {}});
    if (rep == 0) {
      first = p;
    } else {
      EXPECT_EQ(p.rc, first.rc);
      EXPECT_EQ(p.xi, first.xi);
      EXPECT_EQ(p.grid, first.grid);
      EXPECT_EQ(p.P, first.P);
    }
  }
}

TEST(EwaldCalibrate, CacheRoundTripAndThreadSafeFirstUse) {
  ELLIPTICA_SKIP_IF_SANITIZED();
  const fs::path dir = temp_dir("cache");
  EnvScope env({{"ELLIPTICA_EWALD_COSTS", "auto"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
  const fs::path file = dir / "ewald_costs.json";
  EXPECT_EQ(cost_cache_file(), file.string());
  // first use: measured once (several threads at once see the same values) and written
  std::vector<CostConstants> seen(4);
  std::vector<std::thread> th;
  for (int i = 0; i < 4; ++i) th.emplace_back([&, i] { seen[i] = cost_constants(Precision::Double); });
  for (auto& t : th) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(seen[i].source, "measured");
    EXPECT_EQ(seen[i].measured_at, seen[0].measured_at);
    EXPECT_TRUE(same_values(seen[i], seen[0]));
  }
  expect_valid(seen[0]);
  EXPECT_EQ(seen[0].file, file.string());
  ASSERT_TRUE(fs::exists(file));
  for (const auto& e : fs::directory_iterator(dir))  // no temporary left behind
    EXPECT_EQ(e.path().filename(), "ewald_costs.json");
  // a later process (simulated: forget the in-memory values) reads the same values back
  detail::reset_cost_constants();
  const CostConstants again = cost_constants(Precision::Double);
  EXPECT_EQ(again.source, "cache");
  EXPECT_EQ(again.file, file.string());
  EXPECT_TRUE(same_values(again, seen[0])) << cost_constants_json(again) << "\n" << cost_constants_json(seen[0]);
  EXPECT_EQ(again.measured_at, seen[0].measured_at);
  // another precision's entry is added beside it, not in its place
  const std::vector<CostConstants> entries = detail::parse_cost_constants(slurp(file));
  ASSERT_EQ(entries.size(), 1u);
  fs::remove_all(dir);
}

TEST(EwaldCalibrate, CacheEntriesAreKeyedAndExactlyReadBack) {
  ELLIPTICA_SKIP_IF_SANITIZED();
  const fs::path dir = temp_dir("keyed");
  EnvScope env({{"ELLIPTICA_EWALD_COSTS", nullptr}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
  const fs::path file = dir / "ewald_costs.json";
  CostConstants other = fake_entry(Precision::Double, 3.0);
  other.cpu = "some other CPU";
  CostConstants old_version = fake_entry(Precision::Double, 5.0);
  old_version.version = "0.0.0-old";
  const CostConstants mine_d = fake_entry(Precision::Double, 2.0);
  const CostConstants mine_s = fake_entry(Precision::Single, 4.0);
  write_cost_constants(file.string(), {other, old_version, mine_d, mine_s});
  const CostConstants d = cost_constants(Precision::Double);
  const CostConstants s = cost_constants(Precision::Single);
  EXPECT_EQ(d.source, "cache");
  EXPECT_EQ(s.source, "cache");
  EXPECT_TRUE(same_values(d, mine_d)) << cost_constants_json(d);
  EXPECT_TRUE(same_values(s, mine_s)) << cost_constants_json(s);
  EXPECT_EQ(d.fft_growth, 0.125);
  // the file's other entries are kept when an entry is replaced
  calibrate_costs(Precision::Double);
  const std::vector<CostConstants> entries = detail::parse_cost_constants(slurp(file));
  EXPECT_EQ(entries.size(), 4u);
  int replaced = 0;
  for (const auto& e : entries)
    if (detail::same_key(e, mine_d)) {
      ++replaced;
      EXPECT_EQ(e.source, "measured");
      EXPECT_NE(e.measured_at, mine_d.measured_at);
    }
  EXPECT_EQ(replaced, 1);
  // auto mode: the process now uses the new measurement
  EXPECT_EQ(cost_constants(Precision::Double).source, "measured");
  fs::remove_all(dir);
}

TEST(EwaldCalibrate, CorruptCacheIsIgnoredAndReplaced) {
  ELLIPTICA_SKIP_IF_SANITIZED();
  const fs::path dir = temp_dir("corrupt");
  EnvScope env({{"ELLIPTICA_EWALD_COSTS", "auto"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
  const fs::path file = dir / "ewald_costs.json";
  // every kind of damage is rejected by the reader (no crash, nothing read)
  const std::string valid = cost_constants_file_json({fake_entry(Precision::Double, 2.0)});
  EXPECT_EQ(detail::parse_cost_constants(valid).size(), 1u);
  for (const std::string& bad : {std::string(""), std::string("{"), valid.substr(0, valid.size() / 2),
                                 std::string("\x00\xff\xfe garbage", 12), std::string("[1, 2, 3]"),
                                 std::string("{\"format\": \"something-else\", \"entries\": []}"),
                                 std::string(100, '['), std::string("{\"format\": \"elliptica-ewald-costs\"}")})
    EXPECT_THROW(detail::parse_cost_constants(bad), IOError) << bad;
  // entries with a missing, negative, infinite or zero constant are skipped
  for (const std::string field : {"\"p2p_cell\": ", "\"fft\": ", "\"laplace\": "}) {
    std::string t = valid;
    const auto at = t.find(field);
    ASSERT_NE(at, std::string::npos);
    const auto end = t.find_first_of(",}", at + field.size());
    for (const char* v : {"-1", "0", "1e999", "\"x\""}) {
      std::string u = t;
      u.replace(at + field.size(), end - at - field.size(), v);
      // an overflowing number makes the whole file unreadable (IOError); the others skip the entry
      try {
        EXPECT_TRUE(detail::parse_cost_constants(u).empty()) << field << v;
      } catch (const IOError&) {
        EXPECT_EQ(std::string(v), "1e999") << field;
      }
    }
  }
  // a corrupt cache file: measured again and the file replaced by a valid one
  { std::ofstream(file) << valid.substr(0, valid.size() / 3); }
  const CostConstants c = cost_constants(Precision::Double);
  EXPECT_EQ(c.source, "measured");
  expect_valid(c);
  const auto entries = detail::parse_cost_constants(slurp(file));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(same_values(entries[0], c));
  fs::remove_all(dir);
}

TEST(EwaldCalibrate, UnwritableOrMissingCacheFallsBackToMemory) {
  ELLIPTICA_SKIP_IF_SANITIZED();
  const fs::path dir = temp_dir("ro");
  const fs::path blocker = dir / "a_file";
  { std::ofstream(blocker) << "not a folder"; }
  // a cache folder below a regular file cannot be created (even by root)
  const std::string bad = (blocker / "cache").string();
  {
    EnvScope env({{"ELLIPTICA_EWALD_COSTS", nullptr}, {"ELLIPTICA_CACHE_DIR", bad.c_str()}});
    CostConstants c;
    EXPECT_NO_THROW(c = cost_constants(Precision::Single));
    EXPECT_EQ(c.source, "measured");
    EXPECT_TRUE(c.file.empty());
    expect_valid(c);
  }
  {
    // no location at all: no ELLIPTICA_CACHE_DIR, XDG_CACHE_HOME or HOME
    EnvScope env({{"ELLIPTICA_EWALD_COSTS", "auto"}, {"ELLIPTICA_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", nullptr},
                  {"HOME", nullptr}});
    EXPECT_EQ(cost_cache_file(), "");
    CostConstants c;
    EXPECT_NO_THROW(c = cost_constants(Precision::Single));
    EXPECT_EQ(c.source, "measured");
    EXPECT_TRUE(c.file.empty());
  }
  {
    EnvScope env({{"ELLIPTICA_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}});
    EXPECT_EQ(cost_cache_file(), "/xdg/elliptica/ewald_costs.json");
  }
  {
    EnvScope env({{"ELLIPTICA_CACHE_DIR", nullptr}, {"XDG_CACHE_HOME", nullptr}, {"HOME", "/home/u"}});
    EXPECT_EQ(cost_cache_file(), "/home/u/.cache/elliptica/ewald_costs.json");
  }
  fs::remove_all(dir);
}

TEST(EwaldCalibrate, ConstantsFileMode) {
  const fs::path dir = temp_dir("file");
  const fs::path file = dir / "costs.json";
  CostConstants d = fake_entry(Precision::Double, 1.5);
  d.cpu = "whatever machine";  // a file's entries are used whatever their key
  write_cost_constants(file.string(), {d});
  {
    EnvScope env("ELLIPTICA_EWALD_COSTS", file.c_str());
    const CostConstants c = cost_constants(Precision::Double);
    EXPECT_EQ(c.source, "file");
    EXPECT_EQ(c.file, file.string());
    EXPECT_TRUE(same_values(c, d));
    const CostConstants s = cost_constants(Precision::Single);  // no single-precision entry
    EXPECT_EQ(s.source, "builtin");
    EXPECT_TRUE(same_values(s, builtin_cost_constants(Precision::Single)));
  }
  {
    const std::string missing = (dir / "missing.json").string();
    EnvScope env("ELLIPTICA_EWALD_COSTS", missing.c_str());
    EXPECT_THROW(cost_constants(Precision::Double), IOError);
  }
  {
    { std::ofstream(dir / "bad.json") << "{ not json"; }
    const std::string bad = (dir / "bad.json").string();
    EnvScope env("ELLIPTICA_EWALD_COSTS", bad.c_str());
    EXPECT_THROW(cost_constants(Precision::Double), IOError);
  }
  EXPECT_THROW(write_cost_constants((dir / "no" / "such" / "folder.json").string(), {d}), IOError);
  fs::remove_all(dir);
}

TEST(EwaldCalibrate, FileEntriesOfAnotherRevisionOrOutOfRangeScales) {
  // An entry of another model revision, or without the far-field scales (an older file), is
  // skipped; scales outside the measurement's range [0.5, 4] are clamped.
  EXPECT_EQ(cost_model_revision(), detail::kCostModelRevision);
  CostConstants d = fake_entry(Precision::Double, 1.5);
  auto json_of = [](const CostConstants& c) { return nlohmann::json::parse(cost_constants_file_json({c})); };
  nlohmann::json j = json_of(d);
  ASSERT_EQ(detail::parse_cost_constants(j.dump()).size(), 1u);
  j["entries"][0]["model"] = detail::kCostModelRevision - 1;
  EXPECT_TRUE(detail::parse_cost_constants(j.dump()).empty());
  j = json_of(d);
  j["entries"][0].erase("p2g_scale");
  EXPECT_TRUE(detail::parse_cost_constants(j.dump()).empty());
  j = json_of(d);
  j["entries"][0]["g2p_scale"]["stokeslet"] = 0.0;  // not positive: invalid
  EXPECT_TRUE(detail::parse_cost_constants(j.dump()).empty());
  j = json_of(d);
  j["entries"][0]["p2g_scale"]["laplace"] = 1e6;
  j["entries"][0]["g2p_scale"]["stresslet"] = 0.01;
  const std::vector<CostConstants> e = detail::parse_cost_constants(j.dump());
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].p2g_scale[0], 4.0);
  EXPECT_EQ(e[0].g2p_scale[4], 0.5);
  EXPECT_EQ(e[0].p2g_scale[1], d.p2g_scale[1]);
}

TEST(EwaldCalibrate, ModelCostTerms) {
  // The P2P part grows with r_c (pairs, checks) and the far field shrinks with the grid: the
  // model has an interior minimum in r_c for a fixed tolerance.
  detail::TuneInput in;
  in.costs = builtin_cost_constants(Precision::Double);
  in.cost_variant = 0;
  in.n_sources = in.n_targets = 100000;
  const std::array<int, 3> M{64, 64, 64};
  double prev = 0;
  for (double rc : {0.05, 0.1, 0.2}) {
    const auto cells = detail::cell_grid(in.box, rc, 2 * in.n_sources);
    const double c = detail::model_cost(in, rc, cells, M, 8);
    EXPECT_GT(c, prev);
    prev = c;
  }
  const auto cells = detail::cell_grid(in.box, 0.1, 2 * in.n_sources);
  EXPECT_LT(detail::model_cost(in, 0.1, cells, {32, 32, 32}, 8), detail::model_cost(in, 0.1, cells, {128, 128, 128}, 8));
  in.threads = 4;
  const double c4 = detail::model_cost(in, 0.1, cells, M, 8);
  in.threads = 1;
  EXPECT_NEAR(detail::model_cost(in, 0.1, cells, M, 8), 4 * c4, 1e-12 * c4);
}

TEST(EwaldCalibrate, ModelFarFieldScales) {
  // p2g_scale / g2p_scale multiply the point work of P2G / G2P of their variant only (the padded
  // grid's fold / unfold and the other stages unchanged): the stage terms by hand.
  detail::TuneInput in;
  in.costs = builtin_cost_constants(Precision::Double);
  in.cost_variant = 2;
  in.n_grid = in.n_out = 3;
  in.n_sources = in.n_targets = 50000;
  const std::array<int, 3> M{64, 64, 64};
  const int P = 8;
  const auto cells = detail::cell_grid(in.box, 0.1, 2 * in.n_sources);
  const detail::ModelStages a = detail::model_stages(in, 0.1, cells, M, P);
  const CostConstants& c = in.costs;
  const double pad = 80.0 * 80.0 * 80.0, P2 = 64.0;
  EXPECT_NEAR(a.p2g, 50000 * P2 * (c.window_row + c.spread * P * 3) + c.grid_pass * 3 * pad, 1e-12 * a.p2g);
  EXPECT_NEAR(a.g2p, 50000 * P2 * (c.window_row + c.interp * P * 3) + c.grid_pass * 3 * pad, 1e-12 * a.g2p);
  EXPECT_NEAR(a.total(), detail::model_cost(in, 0.1, cells, M, P), 1e-12 * a.total());
  in.costs.p2g_scale[2] = 2.0;
  in.costs.g2p_scale[2] = 3.0;
  in.costs.p2g_scale[0] = in.costs.g2p_scale[0] = 4.0;  // another variant's: no effect
  const detail::ModelStages b = detail::model_stages(in, 0.1, cells, M, P);
  EXPECT_NEAR(b.p2g - a.p2g, 50000 * P2 * (c.window_row + c.spread * P * 3), 1e-9 * a.p2g);
  EXPECT_NEAR(b.g2p - a.g2p, 2.0 * 50000 * P2 * (c.window_row + c.interp * P * 3), 1e-9 * a.g2p);
  EXPECT_EQ(b.p2p, a.p2p);
  EXPECT_EQ(b.fft, a.fft);
  EXPECT_EQ(b.cnv, a.cnv);
}

// The parameters chosen with this machine's measured constants still meet the tolerance.
// (One cache folder for the suite: the first case measures, the others read the cache.)
class EwaldCalibratedAccuracy : public ::testing::TestWithParam<std::tuple<RefKernel, double>> {
 protected:
  static void SetUpTestSuite() { dir_ = new fs::path(temp_dir("acc")); }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path* dir_;
};
fs::path* EwaldCalibratedAccuracy::dir_ = nullptr;

TEST_P(EwaldCalibratedAccuracy, MeetsToleranceAgainstDirectSum) {
  ELLIPTICA_SKIP_IF_SANITIZED();
  const auto [kernel, eps] = GetParam();
  EnvScope env({{"ELLIPTICA_EWALD_COSTS", "auto"}, {"ELLIPTICA_CACHE_DIR", dir_->c_str()}});
  const std::size_t n = ELLIPTICA_SANITIZED_BUILD ? 150 : 600;
  const std::array<double, 3> box{1.0, 1.3, 0.8};
  const int comps = kernel == RefKernel::Laplace ? 1 : 3;
  const auto x = make_points(Distribution::Uniform, n, box, 11);
  const auto q = make_strengths(n, comps, 12, true);
  RefOptions ro;
  ro.kernel = kernel;
  ro.box = box;
  const RefResult ref = direct_ewald(ro, x, q);
  Options o;
  o.kernel = kernel == RefKernel::Laplace ? Kernel::Laplace : Kernel::Stokeslet;
  o.box = box;
  o.tolerance = eps;
  o.threads = 1;
  EwaldPlan plan(o);
  plan.set_points({x.data(), n, 3});
  const Result r = plan.evaluate(ConstMatrixView<double>(q.data(), n, std::size_t(comps)));
  const CostConstants used = cost_constants(Precision::Double);
  EXPECT_NE(used.source, "builtin");  // measured (or read from this test's cache)
  const double err = rel_rms_err(r.values.values, ref.values);
  EXPECT_LT(err, eps) << "rc " << r.params.rc << " xi " << r.params.xi << " M " << r.params.grid[0] << " P "
                      << r.params.P;
}

INSTANTIATE_TEST_SUITE_P(KernelsAndTolerances, EwaldCalibratedAccuracy,
                         ::testing::Combine(::testing::Values(RefKernel::Laplace, RefKernel::Stokeslet),
                                            ::testing::Values(1e-6, 1e-9)));
