/// @file test_bem_acoustic_sweep.cpp
/// bem::AcousticSweep (acoustic_sweep.hpp), the plan behind `elliptica bem --frequency` and
/// AcousticBEM.sweep: the pulsating sphere's power and field against the closed form, the sweep
/// against one plan per frequency, the FMM octree handed from one frequency to the next
/// (HelmholtzFmmOptions::prebuilt_tree), the run folder and its resume, and bad input.
/// Cost: about 5 s in Release (dense 320-element plans, 1280-element FMM plans), a few seconds sanitized
/// (320-element FMM plans).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "elliptica/bem/acoustic_sweep.hpp"
#include "elliptica/bem/acoustics.hpp"
#include "elliptica/bem/mesh.hpp"
#include "elliptica/bem/plan.hpp"
#include "elliptica/bem/vtu.hpp"
#include "elliptica/core/error.hpp"
#include "elliptica/core/io.hpp"
#include "elliptica/fmm/helmholtz_fmm.hpp"
#include "reference/sphere_acoustics.hpp"

namespace {

using namespace elliptica;
using namespace elliptica::bem;
using cd = std::complex<double>;
using V3 = std::array<double, 3>;
namespace fs = std::filesystem;
constexpr bool kSanitized = ELLIPTICA_SANITIZED_BUILD;

double rel_l2(const std::vector<cd>& a, const std::vector<cd>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(a[i] - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

/// A fresh, empty folder under the system's temporary directory.
fs::path temp_folder(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("elliptica_sweep_" + name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(p);
  return p;
}

AcousticSweepOptions pulsating(double v) {
  AcousticSweepOptions o;
  o.velocity = {cd(v)};
  o.solver.op.kind = OperatorKind::Dense;
  o.solver.gmres.rtol = 1e-10;
  o.directions = {{0, 0, 1}, {1, 0, 0}, {0.3, -0.4, 0.5}};
  o.field_points = {{0, 0, 2}, {1.5, 1.5, 0}, {0, 0, 0.2}};  // the last inside the body
  return o;
}

// The pulsating sphere of radius 1 (curved 6-node elements, 320): radiated power P = 2 pi a^2 rho
// c |v|^2 (ka)^2 / (1 + (ka)^2) and the field A e^{ikr}/r (sphere_acoustics.hpp). Its far field is
// 2.8e-4 accurate at 320 curved elements, ka = 2 (test_bem_curved); the power, a square, twice that.
TEST(AcousticSweep, PulsatingSpherePowerAndFieldAgainstTheClosedForm) {
  const double v = 1e-3;
  const std::vector<double> f = {27.3, 54.6, 109.2};
  const AcousticSweep sweep(icosphere(2, 1.0, {0, 0, 0}, 2), f, pulsating(v));
  EXPECT_NEAR(sweep.body_size(), 2.0, 1e-12);
  ASSERT_EQ(sweep.inside().size(), 3u);
  EXPECT_EQ(sweep.inside()[2], 1);
  const SweepSummary S = sweep.run();
  ASSERT_EQ(S.results.size(), 3u);
  EXPECT_EQ(S.computed, 3u);
  const Medium m;
  for (const auto& r : S.results) {
    const double k = wavenumber(r.frequency_hz, m);
    EXPECT_DOUBLE_EQ(r.k, k);
    const double ka = k;
    const double p_exact = 2 * std::numbers::pi * m.impedance() * v * v * ka * ka / (1 + ka * ka);
    EXPECT_NEAR(r.power_w / p_exact - 1, 0, 2e-3) << r.frequency_hz;
    EXPECT_NEAR(r.lw_db, 10 * std::log10(p_exact / 1e-12), 0.01);
    const cd g = cd(0, 2 * std::numbers::pi * r.frequency_hz * m.density) * v;  // dp/dn = i omega rho v
    std::vector<cd> pinf_ref(3, g * testref::pulsating_sphere_far_field(k, 1.0));
    EXPECT_LT(rel_l2(r.p_inf, pinf_ref), 1e-3) << r.frequency_hz;
    const std::vector<cd> field_ref = {g * testref::pulsating_sphere_field(k, 1.0, 2.0),
                                       g * testref::pulsating_sphere_field(k, 1.0, std::hypot(1.5, 1.5))};
    EXPECT_LT(rel_l2({r.field[0], r.field[1]}, field_ref), 1e-3);
    EXPECT_EQ(r.field[2], cd(0));  // inside
    EXPECT_TRUE(std::isnan(r.ts_db));
    EXPECT_NEAR(r.max_spl_1m_db, spl_db(r.p_inf[0]), 0.05);  // uniform far field
    EXPECT_TRUE(r.surface.empty());  // run() keeps it only when asked
  }
}

// Plane-wave scattering: every number of the sweep is that of one HelmholtzBem per frequency,
// built and evaluated here (the same computation, so to rounding).
TEST(AcousticSweep, EqualsOnePlanPerFrequency) {
  AcousticSweepOptions o;
  o.solver.op.kind = OperatorKind::Dense;
  o.solver.gmres.rtol = 1e-10;
  o.plane_wave = V3{0, 0, 2};  // normalised by the sweep
  o.directions = {{0, 0, -1}, {1, 0, 0}};
  o.field_points = {{0, 0, -2}, {2, 1, 0}};
  const Mesh mesh = icosphere(1, 1.0);
  const AcousticSweep sweep(mesh, {80.0}, o);
  const FrequencyResult r = sweep.solve(0);
  const Medium med;
  const double k = wavenumber(80.0, med);
  HelmholtzBemOptions ho = o.solver;
  const HelmholtzBem plan(sweep.mesh(), k, ho);
  const SurfaceSolution s = plan.solve(plan.plane_wave({0, 0, 1}));
  const std::vector<cd> pinf = plan.far_field(s, o.directions);
  EXPECT_LT(rel_l2(r.p_inf, pinf), 1e-13);
  EXPECT_NEAR(r.ts_db, 20 * std::log10(std::abs(pinf[0])), 1e-11);
  std::vector<cd> tot = plan.scattered_field(s, o.field_points);
  const std::vector<cd> inc = plan.plane_wave_at({0, 0, 1}, o.field_points);
  for (int j = 0; j < 2; ++j) tot[static_cast<std::size_t>(j)] += inc[static_cast<std::size_t>(j)];
  EXPECT_LT(rel_l2(r.field, tot), 1e-13);
  EXPECT_LT(rel_l2(r.surface, s.u), 1e-13);
  EXPECT_THROW(sweep.solve(1), InvalidArgument);
}

// The FMM's octree over the collocation points does not depend on k: a plan at k2 takes the one of
// a plan at k1 (the same object, not rebuilt) and gives the numbers of a plan with its own tree.
TEST(AcousticSweep, FmmTreeHandedToTheNextFrequency) {
  // the sanitized build (about 20x slower): 320 elements in leaves of at most 16
  const Mesh mesh = icosphere(kSanitized ? 2 : 3, 1.0);
  HelmholtzBemOptions ho;
  ho.op.kind = OperatorKind::Fmm;
  ho.op.fmm.tolerance = 1e-4;
  if (kSanitized) ho.op.fmm.tree.max_leaf = 16;
  ho.gmres.rtol = 1e-6;
  const HelmholtzBem p1(mesh, 2.0, ho);
  ASSERT_NE(p1.fmm_tree(), nullptr);
  HelmholtzBemOptions h2 = ho;
  h2.op.fmm.prebuilt_tree = p1.fmm_tree();
  const HelmholtzBem shared(mesh, 3.0, h2), own(mesh, 3.0, ho);
  EXPECT_EQ(shared.fmm_tree().get(), p1.fmm_tree().get());
  EXPECT_NE(own.fmm_tree().get(), p1.fmm_tree().get());
  const auto a = shared.solve_plane_wave({1, 0, 0}), b = own.solve_plane_wave({1, 0, 0});
  EXPECT_LT(rel_l2(a.u, b.u), 1e-12);
  EXPECT_EQ(a.iterations, b.iterations);
  // a tree over other points is refused
  HelmholtzBemOptions bad = ho;
  bad.op.fmm.prebuilt_tree = HelmholtzBem(icosphere(kSanitized ? 1 : 2, 1.0), 2.0, ho).fmm_tree();
  ASSERT_NE(bad.op.fmm.prebuilt_tree, nullptr);
  EXPECT_THROW(HelmholtzBem(mesh, 3.0, bad), InvalidArgument);
  // and through the sweep: its second frequency (with the first one's tree) has the numbers of the
  // plan with its own tree
  AcousticSweepOptions o;
  o.solver = ho;
  o.plane_wave = V3{1, 0, 0};
  o.directions = {{-1, 0, 0}, {0, 1, 0}};
  const Medium med;
  const std::vector<double> f = {2.0 * med.sound_speed / (2 * std::numbers::pi), 3.0 * med.sound_speed / (2 * std::numbers::pi)};
  const SweepSummary on = AcousticSweep(mesh, f, o).run();
  EXPECT_LT(rel_l2(on.results[1].p_inf, own.far_field(b, o.directions)), 1e-12);
}

// The run folder: files per frequency, a resume that reads the finished frequencies back (the
// numbers bit-identical: CSV with shortest round-trip decimals) and computes only the lost one;
// refusals of a folder without resume and of other settings.
TEST(AcousticSweep, RunFolderAndResume) {
  const fs::path dir = temp_folder("resume");
  const std::vector<double> f = {27.3, 54.6, 81.9};
  const Mesh mesh = icosphere(1, 1.0, {0, 0, 0}, 2);
  SweepRunOptions ro;
  ro.folder = dir.string();
  ro.keep_surface = true;
  ro.labels.set("who", "test");
  std::size_t calls = 0;
  ro.progress = [&](const FrequencyResult&, std::size_t done, std::size_t total) {
    ++calls;
    EXPECT_EQ(total, 3u);
    EXPECT_LE(done, 3u);
  };
  const AcousticSweep sweep(mesh, f, pulsating(1e-3));
  const SweepSummary first = sweep.run(ro);
  EXPECT_EQ(calls, 3u);
  for (const char* name : {"run.json", "frequencies.csv", "summary.json", "f0000/surface.npy", "f0001/surface.vtu",
                           "f0002/directivity.csv", "f0002/field_points.csv"})
    EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_NE(io::read_file((dir / "run.json").string()).find("\"who\": \"test\""), std::string::npos);
  // surface.npy holds the surface pressure
  const auto npy = read_npy_complex((dir / "f0001" / "surface.npy").string());
  ASSERT_TRUE(npy.has_value());
  EXPECT_EQ(*npy, first.results[1].surface);
  // without resume: refused, nothing touched
  EXPECT_THROW(sweep.run(ro), InvalidArgument);
  // an interrupted run: the last frequency lost
  fs::remove_all(dir / "f0002");
  ro.resume = true;
  calls = 0;
  const SweepSummary second = sweep.run(ro);
  EXPECT_EQ(second.computed, 1u);
  EXPECT_EQ(second.resumed, 2u);
  EXPECT_EQ(calls, 1u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto &a = first.results[i], &b = second.results[i];
    EXPECT_EQ(b.resumed, i < 2);
    EXPECT_EQ(a.p_inf, b.p_inf) << i;
    EXPECT_EQ(a.field, b.field) << i;
    EXPECT_EQ(a.surface, b.surface) << i;
    EXPECT_EQ(a.power_w, b.power_w) << i;
    EXPECT_EQ(a.iterations, b.iterations) << i;
  }
  // without keep_fields (the CLI) the results keep the scalars only
  SweepRunOptions lean = ro;
  lean.keep_fields = false;
  lean.keep_surface = false;
  lean.progress = {};
  const SweepSummary third = sweep.run(lean);
  EXPECT_EQ(third.resumed, 3u);
  EXPECT_TRUE(third.results[0].p_inf.empty() && third.results[0].field.empty() && third.results[0].surface.empty());
  EXPECT_EQ(third.results[2].power_w, first.results[2].power_w);
  // other settings: refused
  const AcousticSweep other(mesh, f, pulsating(2e-3));
  try {
    other.run(ro);
    ADD_FAILURE() << "other settings accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("other settings"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A sweep that fails at its first frequency leaves neither run.json nor the folder it created.
TEST(AcousticSweep, FailureAtTheFirstFrequencyLeavesNothing) {
  const fs::path dir = temp_folder("fail");
  AcousticSweepOptions o = pulsating(1e-3);
  o.solver.gmres.rtol = 1e-12;
  o.solver.gmres.max_iterations = 1;
  o.solver.gmres.restart = 1;
  const AcousticSweep sweep(icosphere(1, 1.0), {100.0}, o);
  SweepRunOptions ro;
  ro.folder = dir.string();
  EXPECT_THROW(sweep.run(ro), NotConverged);
  EXPECT_FALSE(fs::exists(dir / "run.json"));
  EXPECT_FALSE(fs::exists(dir));
}

TEST(AcousticSweep, RefusesBadInput) {
  const Mesh mesh = icosphere(1, 1.0);
  auto refuses = [&](std::vector<double> f, const AcousticSweepOptions& o, const std::string& words) {
    try {
      AcousticSweep s(mesh, std::move(f), o);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const AcousticSweepOptions ok = pulsating(1e-3);
  refuses({}, ok, "no frequencies");
  refuses({100, -1}, ok, "frequency 1");
  refuses({100, std::nan("")}, ok, "frequency 1");
  AcousticSweepOptions o = ok;
  o.velocity = {1.0, 2.0};
  refuses({100}, o, "velocity needs 1 value");
  o = ok;
  o.velocity = {};
  refuses({100}, o, "nothing to solve");
  o = ok;
  o.monostatic = {{1, 0, 0}};
  refuses({100}, o, "monostatic");
  o = ok;
  o.solver.bc = BoundaryCondition::Dirichlet;
  refuses({100}, o, "bc Neumann");
  o = ok;
  o.impedance = {cd(-5, 0)};
  refuses({100}, o, "impedance");
  o = ok;
  o.solver.admittance = {1.0};
  refuses({100}, o, "not solver.admittance");
  o = ok;
  o.grid_na = 2;
  o.grid_nb = 2;
  refuses({100}, o, "grid");
  o = ok;
  o.velocity = {};
  o.point_source = V3{0.1, 0, 0};
  refuses({100}, o, "inside the body");
  o = ok;
  o.directions = {{0, 0, 0}};
  refuses({100}, o, "direction 0");
  o = ok;
  o.direction_angles_deg = {1, 2};
  refuses({100}, o, "direction_angles_deg");
  // a half model (symmetry plane z = 0): an incident field without that symmetry is refused by the
  // constructor, before any frequency's set-up
  const Mesh whole = octasphere(1, 0.5);
  Mesh half = whole;
  half.triangles.clear();
  for (const auto& t : whole.triangles) {
    bool upper = true;
    for (auto v : t) upper = upper && whole.vertices[static_cast<std::size_t>(v)][2] >= 0;
    if (upper) half.triangles.push_back(t);
  }
  AcousticSweepOptions h;
  h.solver.symmetry = {MirrorPlane{2, 0.0, 1.0}};
  h.plane_wave = V3{0, 0, 1};
  try {
    AcousticSweep s(half, {100}, h);
    ADD_FAILURE() << "a plane wave along the symmetry plane's normal accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("not symmetric"), std::string::npos) << e.what();
  }
  h.plane_wave = V3{1, 0, 0};
  EXPECT_NO_THROW(AcousticSweep(half, {100}, h));
}

TEST(AcousticSweep, NpyComplexReader) {
  const fs::path dir = temp_folder("npy");
  fs::create_directories(dir);
  const std::vector<cd> v = {{1, 2}, {-3.5, 0.25}, {1e-300, -1e300}};
  write_npy_complex((dir / "a.npy").string(), v);
  const auto back = read_npy_complex((dir / "a.npy").string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, v);
  // truncated data: IOError; a text file: not a complex .npy
  const std::string bytes = io::read_file((dir / "a.npy").string());
  std::ofstream((dir / "t.npy").string(), std::ios::binary) << bytes.substr(0, bytes.size() - 8);
  EXPECT_THROW(read_npy_complex((dir / "t.npy").string()), IOError);
  std::ofstream((dir / "x.txt").string()) << "1,2\n";
  EXPECT_FALSE(read_npy_complex((dir / "x.txt").string()).has_value());
  fs::remove_all(dir);
}

}  // namespace
