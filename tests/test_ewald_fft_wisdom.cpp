// The FFT wisdom cache of FftPlanner::Wisdom (src/ewald/cpu/fft.cpp, fft_wisdom.cpp): the modes of
// ELLIPTICA_EWALD_FFT_WISDOM, the cache file's round trip (measured once, read back without
// measuring), the same results with and without the cache, corrupt and foreign files, the rebuild,
// and the tuner ranking its candidate grids by the measured times (a grid recorded as slow is not
// chosen). No assertion depends on how long anything took (the machines are shared).
// Cost: about 5-15 s (FFTW_MEASURE of a few grids up to 40^3).
#include <fftw3.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "elliptica/core/error.hpp"
#include "elliptica/ewald/ewald.hpp"
#include "ewald/calibrate.hpp"
#include "ewald/cpu/fft_wisdom.hpp"
#include "common/env_scope.hpp"
#include "reference/direct_ewald.hpp"

namespace fs = std::filesystem;
using namespace elliptica;
using namespace elliptica::ewald;
using namespace elliptica::testref;

namespace {

/// Environment variables for the test's scope (nullptr unsets), with a fresh cache state of the
/// process (FFTW's wisdom forgotten) before and after.
class WisdomEnv : public testcommon::EnvScope {
 public:
  WisdomEnv(std::initializer_list<std::pair<std::string, const char*>> vars)
      : testcommon::EnvScope(vars, [] { detail::reset_fft_wisdom(); }) {}
};

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("elliptica_fft_wisdom_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

struct Problem {
  std::vector<double> x, q;
  std::size_t n = 0;
};
Problem laplace_problem(std::size_t n = 300) {
  Problem p;
  p.n = n;
  p.x = make_points(Distribution::Uniform, n, {1.0, 1.0, 1.0}, 5);
  p.q = make_strengths(n, 1, 6, true);
  return p;
}

Result run(const Problem& p, FftPlanner planner, Precision prec = Precision::Double, double tol = 1e-8,
           std::optional<std::array<int, 3>> grid = std::nullopt) {
  Options o;
  o.tolerance = tol;
  o.tolerance_kind = ToleranceKind::Absolute;  // the same parameters for every planner
  o.compute_field = true;
  o.precision = prec;
  o.threads = 1;
  o.fft_planner = planner;
  o.grid = grid;
  EwaldPlan plan(o);
  return plan.evaluate(ConstMatrixView<double>(p.x, 3), ConstMatrixView<double>(p.q, 1));
}

TEST(EwaldFftWisdom, MeasuredOnceWrittenAndReadBack) {
  const fs::path dir = fresh_dir("roundtrip");
  WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", nullptr}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
  const Problem p = laplace_problem();
  const Result est = run(p, FftPlanner::Estimate);
  EXPECT_FALSE(fs::exists(fft_wisdom_file()));  // the estimate planner neither measures nor writes
  const Result w1 = run(p, FftPlanner::Wisdom, Precision::Double, 1e-8, est.params.grid);
  ASSERT_EQ(fft_wisdom_file(), (dir / "ewald_fft_wisdom.json").string());
  ASSERT_TRUE(fs::exists(fft_wisdom_file()));
  const std::vector<FftTiming> e1 = fft_wisdom_entries();
  bool found = false;
  for (const FftTiming& t : e1)
    if (t.grid == est.params.grid && t.precision == Precision::Double && t.forward == 1 && t.backward == 4 &&
        t.threads == 1) {
      found = true;
      EXPECT_GT(t.forward_seconds, 0);
      EXPECT_GT(t.backward_seconds, 0);
    }
  EXPECT_TRUE(found) << "the plan's problem (1 forward, 4 backward transforms) is in the cache";
  // the file: the format, this machine's key, FFTW's wisdom text
  const nlohmann::json j = nlohmann::json::parse(slurp(fft_wisdom_file()));
  EXPECT_EQ(j.at("format"), "elliptica-ewald-fft-wisdom");
  EXPECT_EQ(j.at("cpu"), detail::cpu_model_name());
  EXPECT_EQ(j.at("fftw"), std::string(fftw_version));
  EXPECT_NE(j.at("wisdom_double").get<std::string>().find("fftw_wisdom"), std::string::npos);
  // results: the estimate plan's to rounding
  EXPECT_LT(rel_rms_err(w1.values.values, est.values.values), 1e-13);
  EXPECT_LT(rel_rms_err(w1.field.values, est.field.values), 1e-13);
  // a new process state: read back from the file, nothing measured or written again, and the
  // same plan from the same wisdom, so the same bits
  const std::string before = slurp(fft_wisdom_file());
  detail::reset_fft_wisdom();
  const Result w2 = run(p, FftPlanner::Wisdom, Precision::Double, 1e-8, est.params.grid);
  EXPECT_EQ(slurp(fft_wisdom_file()), before);
  EXPECT_EQ(w2.values.values, w1.values.values);
  EXPECT_EQ(w2.field.values, w1.field.values);
  EXPECT_EQ(fft_wisdom_entries().size(), e1.size());
  // float32 adds its own entry; the double wisdom is kept in the file
  const Result s1 = run(p, FftPlanner::Wisdom, Precision::Single, 1e-4, std::array<int, 3>{24, 24, 24});
  const nlohmann::json j2 = nlohmann::json::parse(slurp(fft_wisdom_file()));
  EXPECT_NE(j2.at("wisdom_single").get<std::string>().find("fftwf_wisdom"), std::string::npos);
  // (FFTW writes its wisdom from a hash table: the same entries, in any order)
  auto lines = [](const std::string& w) {
    std::multiset<std::string> l;
    std::istringstream is(w);
    for (std::string x; std::getline(is, x);) l.insert(x);
    return l;
  };
  EXPECT_EQ(lines(j2.at("wisdom_double")), lines(j.at("wisdom_double")));
  EXPECT_EQ(j2.at("timings").size(), e1.size() + 1);
  // rebuild: every problem measured again, plus a new one
  FftTiming extra;
  extra.precision = Precision::Single;
  extra.grid = {16, 20, 18};
  extra.forward = 3;
  extra.backward = 3;
  extra.threads = 1;
  const std::vector<FftTiming> rebuilt = rebuild_fft_wisdom({extra});
  EXPECT_EQ(rebuilt.size(), e1.size() + 2);
  for (const FftTiming& t : rebuilt) EXPECT_GT(t.forward_seconds, 0);
  EXPECT_EQ(nlohmann::json::parse(slurp(fft_wisdom_file())).at("timings").size(), e1.size() + 2);
  FftTiming bad = extra;
  bad.grid = {2, 16, 16};
  EXPECT_THROW(rebuild_fft_wisdom({bad}), InvalidArgument);
  bad = extra;
  bad.backward = 13;
  EXPECT_THROW(rebuild_fft_wisdom({bad}), InvalidArgument);
  fs::remove_all(dir);
}

TEST(EwaldFftWisdom, OffPlansAsEstimateAndMemoryWritesNoFile) {
  const Problem p = laplace_problem(200);
  std::array<int, 3> grid{};
  Result est;
  {
    const fs::path dir = fresh_dir("off");
    WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", "off"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
    est = run(p, FftPlanner::Estimate);
    grid = est.params.grid;
    const Result off = run(p, FftPlanner::Wisdom);
    EXPECT_EQ(off.values.values, est.values.values);  // the same FFTW_ESTIMATE plan
    EXPECT_TRUE(fft_wisdom_entries().empty());
    EXPECT_FALSE(fs::exists(dir / "ewald_fft_wisdom.json"));
    fs::remove_all(dir);
  }
  {
    const fs::path dir = fresh_dir("memory");
    WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", "memory"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
    const Result mem = run(p, FftPlanner::Wisdom, Precision::Double, 1e-8, grid);
    EXPECT_LT(rel_rms_err(mem.values.values, est.values.values), 1e-13);
    EXPECT_FALSE(fft_wisdom_entries().empty());
    EXPECT_FALSE(fs::exists(dir / "ewald_fft_wisdom.json"));
    fs::remove_all(dir);
  }
}

TEST(EwaldFftWisdom, CorruptOrForeignFilesAreReplaced) {
  const Problem p = laplace_problem(200);
  for (const std::string& text :
       {std::string("{ not json"), std::string("{\"format\": \"something else\", \"format_version\": 1}"),
        std::string("{\"format\": \"elliptica-ewald-fft-wisdom\", \"format_version\": 1, \"cpu\": \"another CPU\", "
                    "\"fftw\": \"x\", \"wisdom_double\": \"\", \"wisdom_single\": \"\", \"timings\": []}"),
        std::string("{\"format\": \"elliptica-ewald-fft-wisdom\", \"format_version\": 1, \"cpu\": \"") +
            detail::cpu_model_name() + "\", \"fftw\": \"" + fftw_version +
            "\", \"wisdom_double\": \"(garbage\", \"timings\": [{\"grid\": 5}]}"}) {
    const fs::path dir = fresh_dir("corrupt");
    WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", "auto"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
    { std::ofstream(dir / "ewald_fft_wisdom.json") << text; }
    const Result r = run(p, FftPlanner::Wisdom, Precision::Double, 1e-6, std::array<int, 3>{20, 20, 20});
    EXPECT_EQ(r.params.grid, (std::array<int, 3>{20, 20, 20}));
    const nlohmann::json j = nlohmann::json::parse(slurp(dir / "ewald_fft_wisdom.json"));
    EXPECT_EQ(j.at("format"), "elliptica-ewald-fft-wisdom") << text;
    EXPECT_EQ(j.at("timings").size(), 1u) << text;
    fs::remove_all(dir);
  }
  // an unwritable cache folder: the wisdom stays in the process, no error
  WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", nullptr}, {"ELLIPTICA_CACHE_DIR", "/proc/elliptica-no-such-dir"}});
  EXPECT_NO_THROW(run(p, FftPlanner::Wisdom, Precision::Double, 1e-6, std::array<int, 3>{20, 20, 20}));
  EXPECT_EQ(fft_wisdom_entries().size(), 1u);
}

// The tuner ranks its best candidates by the measured FFT times: the grid the cost model prefers,
// recorded in the cache as taking 100 s, is not chosen, and the choice still meets the tolerance
// against the independent direct Ewald sum.
TEST(EwaldFftWisdom, TunerAvoidsAGridMeasuredAsSlow) {
  const std::size_t n = 400;
  const std::array<double, 3> box{1.0, 1.0, 1.0};
  const auto x = make_points(Distribution::Uniform, n, box, 7);
  const auto q = make_strengths(n, 1, 8, true);
  auto tune = [&] {
    Options o;
    o.tolerance = 1e-7;
    o.tolerance_kind = ToleranceKind::Absolute;
    o.threads = 1;
    EwaldPlan plan(o);
    Result r = plan.evaluate(ConstMatrixView<double>(x, 3), ConstMatrixView<double>(q, 1));
    return r;
  };
  std::array<int, 3> g0{};
  {
    WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", "off"}});
    g0 = tune().params.grid;  // the cost model's choice
  }
  const fs::path dir = fresh_dir("tuner");
  nlohmann::json j;
  j["format"] = "elliptica-ewald-fft-wisdom";
  j["format_version"] = 1;
  j["cpu"] = detail::cpu_model_name();
  j["fftw"] = std::string(fftw_version);
  j["wisdom_double"] = "";
  j["wisdom_single"] = "";
  j["timings"] = nlohmann::json::array({{{"precision", "double"},
                                         {"grid", g0},
                                         {"forward", 1},
                                         {"backward", 1},
                                         {"threads", 1},
                                         {"forward_seconds", 50.0},
                                         {"backward_seconds", 50.0}}});
  { std::ofstream(dir / "ewald_fft_wisdom.json") << j.dump(); }
  WisdomEnv env({{"ELLIPTICA_EWALD_FFT_WISDOM", "auto"}, {"ELLIPTICA_CACHE_DIR", dir.c_str()}});
  // ELLIPTICA_EWALD_TRACE: the candidates with the measured times, the slow grid among them, and the choice
  Result r;
  {
    WisdomEnv trace({{"ELLIPTICA_EWALD_TRACE", "1"}});
    ::testing::internal::CaptureStderr();
    r = tune();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("elliptica ewald tuner: laplace, double, 400 sources, 400 targets"), std::string::npos) << err;
    const std::string slow = "M " + std::to_string(g0[0]) + "x" + std::to_string(g0[1]) + "x" + std::to_string(g0[2]);
    EXPECT_NE(err.find(slow), std::string::npos) << err;
    EXPECT_NE(err.find("100 s measured"), std::string::npos) << err;  // 50 s forward + 50 s backward
    const std::string chosen = "chosen: r_c";
    ASSERT_NE(err.find(chosen), std::string::npos) << err;
    const std::string grid = std::to_string(r.params.grid[0]) + "x" + std::to_string(r.params.grid[1]) + "x" +
                             std::to_string(r.params.grid[2]) + " P " + std::to_string(r.params.P);
    EXPECT_NE(err.find(grid, err.find(chosen)), std::string::npos) << err;
  }
  {
    WisdomEnv trace({{"ELLIPTICA_EWALD_TRACE", "0"}});  // "0" (or empty): off
    ::testing::internal::CaptureStderr();
    const Result r0 = tune();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(r0.params.grid, r.params.grid);
  }
  EXPECT_NE(r.params.grid, g0);
  // the other candidates were measured and cached
  EXPECT_GE(fft_wisdom_entries().size(), 2u);
  RefOptions ro;
  ro.box = box;
  const RefResult ref = direct_ewald(ro, x, q);
  EXPECT_LT(rms_diff(r.values.values, ref.values), 1e-7);
  fs::remove_all(dir);
}

}  // namespace
