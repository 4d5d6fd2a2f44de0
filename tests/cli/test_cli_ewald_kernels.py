"""Tests of `elliptica ewald` for the stresslet and stokes-combined kernels, empty targets, the
zero mode, single precision, the JSON summary, and the Laplace energy, forces and exclusions:
shapes, Python == CLI, combined == stokeslet + stresslet, and that bad input gives the
documented exit code (2 invalid input, 1 usage), a message naming the problem, and no output
file (--out, --forces-out, --summary), an existing one unchanged.

The binding is taken from the environment (ELLIPTICA_CLI, see conftest.py); the Python package
must be importable (scripts/test.sh installs it before running pytest).
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import elliptica

USAGE, INVALID, IOERR, NUMERICAL = 1, 2, 3, 4
BOX = (1.0, 1.2, 0.9)
N = 18
KERNELS = ["laplace", "stokeslet", "stresslet", "stokes-combined"]
DOUBLE_LAYER = {"stresslet", "stokes-combined"}


def run(cli, *args, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def box_arg(box=BOX):
    return ",".join(repr(float(b)) for b in box)


def files_in(folder):
    return sorted(p.name for p in Path(folder).iterdir())


def rel_rms(err, ref):
    return float(np.sqrt(np.mean(np.square(err))) / np.sqrt(np.mean(np.square(ref))))


def write_system(d, n=N, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * np.asarray(BOX)
    q = rng.standard_normal(n)
    q -= q.mean()
    f = rng.standard_normal((n, 3))
    dip = rng.standard_normal((n, 3))
    nrm = rng.standard_normal((n, 3))
    nrm /= np.linalg.norm(nrm, axis=1)[:, None]
    t = rng.random((5, 3)) * np.asarray(BOX)
    for name, a in dict(x=x, q=q, f=f, d=dip, n=nrm, t=t).items():
        np.save(d / f"{name}.npy", a)
    return dict(x=x, q=q, f=f, d=dip, n=nrm, t=t)


def kernel_args(d, kernel):
    """The density options of a kernel (files of write_system)."""
    return {
        "laplace": ["--strengths", d / "q.npy"],
        "stokeslet": ["--strengths", d / "f.npy"],
        "stresslet": ["--dipoles", d / "d.npy", "--normals", d / "n.npy"],
        "stokes-combined": ["--strengths", d / "f.npy", "--dipoles", d / "d.npy", "--normals", d / "n.npy"],
    }[kernel]


def ewald_cli(cli, d, kernel, out, *extra, tol="1e-8"):
    r = run(cli, "ewald", "--kernel", kernel, "--box", box_arg(), "--tol", tol, "--sources", d / "x.npy",
            *kernel_args(d, kernel), "--out", out, *extra)
    assert r.returncode == 0, r.stderr
    return r


def python_result(s, kernel, **kw):
    strengths = {"laplace": s["q"], "stokeslet": s["f"], "stresslet": None, "stokes-combined": s["f"]}[kernel]
    dl = kernel in DOUBLE_LAYER
    return elliptica.ewald(kernel, s["x"], strengths, box=BOX, dipoles=s["d"] if dl else None,
                           normals=s["n"] if dl else None, **kw)


# --------------------------------------------------------------------------------------------
# Successful runs
# --------------------------------------------------------------------------------------------

def test_help_lists_the_new_options(cli):
    r = run(cli, "ewald", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for k in KERNELS:
        assert k in text
    for flag in ("--dipoles", "--normals", "--zero-mode", "--precision", "--summary", "--energy", "--forces-out",
                 "--exclusions"):
        assert flag in text, flag
    # the defaults shown are the library's
    d = elliptica.ewald_defaults()
    assert elliptica._core.precision_name(d.precision) in text


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_shapes_and_python_equals_cli(cli, tmp_path, kernel):
    s = write_system(tmp_path)
    r = ewald_cli(cli, tmp_path, kernel, tmp_path / "u.npy", "--summary", tmp_path / "s.json")
    assert f"kernel {kernel}" in r.stdout
    u = np.load(tmp_path / "u.npy")
    assert u.shape == ((N,) if kernel == "laplace" else (N, 3)) and u.dtype == np.float64
    py = python_result(s, kernel, tol=1e-8).values
    np.testing.assert_allclose(u, py, rtol=0, atol=1e-12 * np.abs(py).max())
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["kernel"] == kernel
    assert summary["params"]["xi"] == pytest.approx(python_result(s, kernel, tol=1e-8).info.params["xi"], rel=1e-15)
    # CSV: header and the same numbers
    ewald_cli(cli, tmp_path, kernel, tmp_path / "u.csv", "--quiet")
    lines = (tmp_path / "u.csv").read_text().splitlines()
    assert lines[0] == ("# phi" if kernel == "laplace" else "# ux,uy,uz")
    np.testing.assert_allclose(np.loadtxt(tmp_path / "u.csv", delimiter=","), u, rtol=0,
                               atol=1e-12 * np.abs(u).max())
    assert files_in(tmp_path) == sorted(["d.npy", "f.npy", "n.npy", "q.npy", "t.npy", "x.npy", "u.npy", "u.csv",
                                         "s.json"])


@pytest.mark.parametrize("kernel", ["stresslet", "stokes-combined"])
def test_double_layer_with_targets_and_viscosity(cli, tmp_path, kernel):
    s = write_system(tmp_path)
    extra = ["--viscosity", "2"] if kernel == "stokes-combined" else []
    ewald_cli(cli, tmp_path, kernel, tmp_path / "u.npy", "--targets", tmp_path / "t.npy", *extra, "-q")
    u = np.load(tmp_path / "u.npy")
    assert u.shape == (5, 3)
    py = python_result(s, kernel, tol=1e-8, targets=s["t"], **({"viscosity": 2.0} if extra else {})).velocity
    np.testing.assert_allclose(u, py, rtol=0, atol=1e-12 * np.abs(py).max())


def test_combined_equals_stokeslet_plus_stresslet(cli, tmp_path):
    write_system(tmp_path)
    tol = 1e-9
    out = {}
    for k in ("stokeslet", "stresslet", "stokes-combined"):
        ewald_cli(cli, tmp_path, k, tmp_path / f"{k}.npy", "-q", tol=str(tol))
        out[k] = np.load(tmp_path / f"{k}.npy")
    uc = out["stokes-combined"]
    assert rel_rms(uc - out["stokeslet"] - out["stresslet"], uc) < 10 * tol


def test_zero_mode_changes_the_double_layer(cli, tmp_path):
    s = write_system(tmp_path)
    ewald_cli(cli, tmp_path, "stresslet", tmp_path / "a.npy", "-q")
    r = ewald_cli(cli, tmp_path, "stresslet", tmp_path / "b.npy", "--zero-mode", "--summary", tmp_path / "s.json")
    assert "k = 0 term: included" in r.stdout
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    py = python_result(s, "stresslet", tol=1e-8, zero_mode=True).velocity
    np.testing.assert_allclose(b, py, rtol=0, atol=1e-12 * np.abs(py).max())
    assert np.abs(b - a).max() > 1e-6 * np.abs(a).max()
    assert json.loads((tmp_path / "s.json").read_text())["zero_mode"] is True


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("fmt", ["npy", "txt"])
def test_empty_targets_give_empty_output(cli, tmp_path, kernel, fmt):
    write_system(tmp_path)
    if fmt == "npy":
        np.save(tmp_path / "t0.npy", np.zeros((0, 3)))
    else:
        (tmp_path / "t0.npy").write_text("")  # an empty text file: 0 rows
    extra = ["--field"] if kernel == "laplace" else []
    r = ewald_cli(cli, tmp_path, kernel, tmp_path / "u.npy", "--targets", tmp_path / "t0.npy", *extra,
                  "--summary", tmp_path / "s.json")
    assert "0 targets" in r.stdout
    u = np.load(tmp_path / "u.npy")
    assert u.shape == ((0, 4) if kernel == "laplace" else (0, 3))
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["n_targets"] == 0 and summary["n_sources"] == N
    ewald_cli(cli, tmp_path, kernel, tmp_path / "u.csv", "--targets", tmp_path / "t0.npy", *extra, "-q")
    assert elliptica.read_array(tmp_path / "u.csv").shape == ((0, 4) if kernel == "laplace" else (0, 3))


def test_fft_planner_option(cli, tmp_path):
    # --fft-planner measure: FFTW_MEASURE plans, recorded in the summary, the same values to rounding
    write_system(tmp_path)
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "a.npy", "--summary", tmp_path / "a.json", "-q", "--threads", "1",
              "--fft-planner", "estimate")
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "b.npy", "--fft-planner", "measure", "--summary", tmp_path / "b.json",
              "-q", "--threads", "1")
    assert json.loads((tmp_path / "b.json").read_text())["fft_planner"] == "measure"
    assert json.loads((tmp_path / "a.json").read_text())["fft_planner"] == "estimate"
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max())
    r = run(cli, "ewald", "--kernel", "laplace", "--box", box_arg(), "--sources", tmp_path / "x.npy",
            "--strengths", tmp_path / "q.npy", "--out", tmp_path / "c.npy", "--fft-planner", "patient")
    assert r.returncode == USAGE and "--fft-planner" in r.stderr


def test_no_pair_symmetry_option(cli, tmp_path):
    # --no-pair-symmetry: P2P from both points of each pair; the summary says whether pair
    # symmetry applied; the same velocities to rounding (same parameters: absolute tolerance)
    write_system(tmp_path)
    common = ["--threads", "1", "--abs-tol", "-q", "--rc", "0.3"]
    ewald_cli(cli, tmp_path, "stokeslet", tmp_path / "a.npy", "--summary", tmp_path / "a.json", *common)
    ewald_cli(cli, tmp_path, "stokeslet", tmp_path / "b.npy", "--no-pair-symmetry", "--summary", tmp_path / "b.json",
              *common)
    ja, jb = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert ja["p2p"]["pair_symmetry"] is True and jb["p2p"]["pair_symmetry"] is False
    assert 2 * ja["p2p"]["pairs"] == jb["p2p"]["pairs"] > 0
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-13 * np.abs(b).max())


def test_no_potential_energy_and_field(cli, tmp_path):
    # --no-potential: E only through the far field (output (N,3)); with --energy the energy's
    # Fourier part by Parseval: the same energy as the full path to rounding
    write_system(tmp_path)
    common = ["--threads", "1", "--abs-tol", "-q"]
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "full.npy", "--field", "--energy", "--summary", tmp_path / "f.json",
              *common)
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "e.npy", "--field", "--energy", "--no-potential", "--summary",
              tmp_path / "n.json", *common)
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "F.npy", "--energy", "--no-potential", "--forces-out",
              tmp_path / "F2.npy", *common)
    full, e, F = np.load(tmp_path / "full.npy"), np.load(tmp_path / "e.npy"), np.load(tmp_path / "F.npy")
    assert full.shape == (N, 4) and e.shape == (N, 3) and F.shape == (N, 3)
    np.testing.assert_allclose(e, full[:, 1:], rtol=0, atol=1e-12 * np.abs(full[:, 1:]).max())
    np.testing.assert_array_equal(F, np.load(tmp_path / "F2.npy"))
    jf, jn = (json.loads((tmp_path / n).read_text()) for n in ("f.json", "n.json"))
    assert jf["potential"] is True and jn["potential"] is False
    assert abs(jn["energy"] - jf["energy"]) <= 1e-12 * abs(jf["energy"])
    for extra in (["--no-potential"], ["--no-potential", "--kernel", "stokeslet"]):
        r = run(cli, "ewald", "--box", box_arg(), "--sources", tmp_path / "x.npy", "--strengths",
                tmp_path / ("f.npy" if "stokeslet" in extra else "q.npy"), "--out", tmp_path / "bad.npy", *extra)
        assert r.returncode == INVALID and "--no-potential" in r.stderr
        assert not (tmp_path / "bad.npy").exists()


def test_fft_wisdom_command(cli, tmp_path):
    # `ewald fft-wisdom`: lists the cache (empty at first); a plan with the default planner (and
    # the cache on) adds its problem; --rebuild measures it and a --grid one again
    write_system(tmp_path)
    env = dict(os.environ, ELLIPTICA_EWALD_FFT_WISDOM="auto", ELLIPTICA_CACHE_DIR=str(tmp_path / "cache"))

    def go(*args):
        return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)

    r = go("ewald", "fft-wisdom")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["cache"] == str(tmp_path / "cache" / "ewald_fft_wisdom.json") and js["entries"] == []
    r = go("ewald", "--kernel", "laplace", "--box", box_arg(), "--sources", tmp_path / "x.npy", "--strengths",
           tmp_path / "q.npy", "--out", tmp_path / "a.npy", "--threads", "1", "--grid", "16", "-q")
    assert r.returncode == 0, r.stderr
    js = json.loads(go("ewald", "fft-wisdom").stdout)
    assert [(e["grid"], e["forward"], e["backward"], e["threads"]) for e in js["entries"]] == [([16, 16, 16], 1, 1, 1)]
    r = go("ewald", "fft-wisdom", "--rebuild", "--grid", "12,16,20", "--precision", "single", "--transforms", "1,3")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert len(js["entries"]) == 2 and all(e["forward_seconds"] > 0 for e in js["entries"])
    assert {tuple(e["grid"]) for e in js["entries"]} == {(16, 16, 16), (12, 16, 20)}
    r = go("ewald", "fft-wisdom", "--grid", "16")
    assert r.returncode == INVALID and "--rebuild" in r.stderr
    r = go("ewald", "fft-wisdom", "--rebuild", "--grid", "16", "--transforms", "1")
    assert r.returncode == INVALID and "--transforms" in r.stderr


def test_summary_fields(cli, tmp_path):
    s = write_system(tmp_path)
    ewald_cli(cli, tmp_path, "laplace", tmp_path / "phi.npy", "--field", "--summary", tmp_path / "s.json", "-q",
              "--threads", "1")
    js = json.loads((tmp_path / "s.json").read_text())
    for key in ("kernel", "n_sources", "n_targets", "targets_are_sources", "box", "tolerance", "tolerance_kind",
                "precision", "single_precision_floor", "viscosity", "field", "zero_mode", "threads", "fft_planner",
                "potential",
                "exclusions", "params", "times",
                "read_seconds", "wall_seconds", "peak_memory_bytes", "coincident_pairs", "energy", "inputs",
                "outputs"):
        assert key in js, key
    assert js["kernel"] == "laplace" and js["n_sources"] == N and js["n_targets"] == N
    assert js["targets_are_sources"] is True and js["field"] is True and js["threads"] == 1
    assert js["fft_planner"] == elliptica._core.fft_planner_name(elliptica.ewald_defaults().fft_planner) == "wisdom"
    assert js["potential"] is True
    assert js["box"] == list(BOX) and js["tolerance"] == 1e-8 and js["tolerance_kind"] == "relative"
    assert js["precision"] == elliptica._core.precision_name(elliptica.ewald_defaults().precision)
    assert js["viscosity"] is None  # laplace: no viscosity
    assert js["single_precision_floor"] is None  # double precision
    assert js["energy"] is None and js["coincident_pairs"] == 0 and js["exclusions"] == 0
    assert js["peak_memory_bytes"] > 1 << 20
    assert js["outputs"]["values"] == str(tmp_path / "phi.npy") and js["outputs"]["columns"] == "phi,Ex,Ey,Ez"
    # params: every field of the Python params dict (bar the text report), same values
    plan = elliptica.EwaldPlan("laplace", box=BOX, tol=1e-8, field=True)
    plan.set_points(s["x"])
    plan.evaluate(s["q"])
    py = plan.params
    assert set(js["params"]) == set(py) - {"describe"}
    for k, v in py.items():
        if k == "describe":
            continue
        if isinstance(v, tuple):
            assert js["params"][k] == pytest.approx(list(v), rel=1e-14), k
        else:
            assert js["params"][k] == pytest.approx(v, rel=1e-14, abs=0), k
    assert js["params"]["est_total"] > 0 and js["params"]["field_est_total"] > 0
    for stage in ("P2P", "P2G", "FFT", "CNV", "IFFT", "G2P"):
        assert js["times"][stage] >= 0


def test_coincident_pairs_are_reported(cli, tmp_path):
    s = write_system(tmp_path)
    np.save(tmp_path / "tc.npy", s["x"][:3] + np.asarray(BOX))  # sources + L: coincide modulo the period
    r = ewald_cli(cli, tmp_path, "stokeslet", tmp_path / "u.npy", "--targets", tmp_path / "tc.npy",
                  "--summary", tmp_path / "s.json")
    js = json.loads((tmp_path / "s.json").read_text())
    assert js["coincident_pairs"] == 3
    assert "coincident" in r.stdout


def test_single_precision(cli, tmp_path):
    s = write_system(tmp_path)
    tol = 1e-4
    r = ewald_cli(cli, tmp_path, "stokeslet", tmp_path / "u.npy", "--precision", "single", "--summary",
                  tmp_path / "s.json", tol=repr(tol))
    assert "precision: single" in r.stdout
    js = json.loads((tmp_path / "s.json").read_text())
    assert js["precision"] == "single"
    assert js["single_precision_floor"] == pytest.approx(
        elliptica.single_precision_floor(js["params"]["grid"], N), rel=1e-15)
    assert js["single_precision_floor"] < tol
    u = np.load(tmp_path / "u.npy")
    ref = python_result(s, "stokeslet", tol=1e-10).velocity
    assert rel_rms(u - ref, ref) < tol
    py = python_result(s, "stokeslet", tol=tol, precision="single").velocity
    np.testing.assert_allclose(u, py, rtol=0, atol=1e-6 * np.abs(py).max())


def test_energy_forces_and_exclusions(cli, tmp_path):
    s = write_system(tmp_path)
    pairs = np.array([[0, 1], [4, 2], [7, 9]])
    (tmp_path / "pairs.txt").write_text("".join(f"{i} {j}\n" for i, j in pairs))
    np.save(tmp_path / "pairs.npy", pairs.astype(np.int64))
    r = ewald_cli(cli, tmp_path, "laplace", tmp_path / "phi.npy", "--energy", "--forces-out", tmp_path / "F.npy",
                  "--summary", tmp_path / "s.json")
    assert "energy: U = " in r.stdout
    U = float(r.stdout.split("energy: U = ")[1].split()[0])
    F = np.load(tmp_path / "F.npy")
    assert F.shape == (N, 3)
    js = json.loads((tmp_path / "s.json").read_text())
    assert js["energy"] == U and js["outputs"]["forces"] == str(tmp_path / "F.npy")
    py = python_result(s, "laplace", tol=1e-8, energy=True)
    assert U == pytest.approx(py.energy, rel=1e-12)
    np.testing.assert_allclose(F, py.forces, rtol=0, atol=1e-12 * np.abs(py.forces).max())
    np.testing.assert_allclose(np.load(tmp_path / "phi.npy"), py.potential, rtol=0,
                               atol=1e-12 * np.abs(py.potential).max())
    # exclusions from a text file and from an int64 .npy: the same, and as Python's
    pye = python_result(s, "laplace", tol=1e-8, energy=True, exclusions=pairs)
    for name in ("pairs.txt", "pairs.npy"):
        r = ewald_cli(cli, tmp_path, "laplace", tmp_path / "phe.npy", "--energy", "--forces-out",
                      tmp_path / "Fe.csv", "--exclusions", tmp_path / name, "--summary", tmp_path / "se.json")
        assert "excluded pairs: 3" in r.stdout
        js = json.loads((tmp_path / "se.json").read_text())
        assert js["exclusions"] == 3
        assert js["energy"] == pytest.approx(pye.energy, rel=1e-12)
        assert (tmp_path / "Fe.csv").read_text().splitlines()[0] == "# Fx,Fy,Fz"
        np.testing.assert_allclose(np.loadtxt(tmp_path / "Fe.csv", delimiter=","), pye.forces, rtol=0,
                                   atol=1e-12 * np.abs(pye.forces).max())
        np.testing.assert_allclose(np.load(tmp_path / "phe.npy"), pye.potential, rtol=0,
                                   atol=1e-12 * np.abs(pye.potential).max())
    assert abs(pye.energy - py.energy) > 1e-6 * abs(py.energy)
    # --energy without --forces-out: the energy only; an empty exclusions file: no pairs
    (tmp_path / "none.txt").write_text("")
    r = ewald_cli(cli, tmp_path, "laplace", tmp_path / "p2.npy", "--energy", "--exclusions", tmp_path / "none.txt")
    assert float(r.stdout.split("energy: U = ")[1].split()[0]) == pytest.approx(py.energy, rel=1e-12)


def test_gro_with_energy(cli, tmp_path):
    gro = Path(__file__).resolve().parents[2] / "examples" / "water" / "spc216.gro"
    r = run(cli, "ewald", "--gro", gro, "--charges", "OW=-0.82,HW=0.41", "--tol", "1e-6", "--energy",
            "--forces-out", tmp_path / "F.npy", "--out", tmp_path / "phi.npy")
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "F.npy").shape == (648, 3)
    U = float(r.stdout.split("energy: U = ")[1].split()[0])
    assert U < 0  # water is bound


# --------------------------------------------------------------------------------------------
# Bad input: exit code, message, no output files
# --------------------------------------------------------------------------------------------

def _write_bad(d, name, array):
    np.save(d / name, array)
    return d / name


BAD = {
    # name: (kernel, extra args (replacing the kernel's defaults where given), code, keywords)
    "stresslet_missing_normals": ("stresslet", lambda d: ["--dipoles", d / "d.npy"], INVALID, ["--normals"]),
    "stresslet_missing_dipoles": ("stresslet", lambda d: ["--normals", d / "n.npy"], INVALID, ["--dipoles"]),
    "combined_missing_normals": ("stokes-combined", lambda d: ["--strengths", d / "f.npy", "--dipoles", d / "d.npy"],
                                 INVALID, ["--normals"]),
    "combined_missing_strengths": ("stokes-combined", lambda d: ["--dipoles", d / "d.npy", "--normals", d / "n.npy"],
                                   INVALID, ["--strengths"]),
    "stresslet_with_strengths": ("stresslet", lambda d: ["--strengths", d / "f.npy", "--dipoles", d / "d.npy",
                                                         "--normals", d / "n.npy"], INVALID,
                                 ["--strengths", "stresslet"]),
    "laplace_with_dipoles": ("laplace", lambda d: ["--strengths", d / "q.npy", "--dipoles", d / "d.npy"], INVALID,
                             ["--dipoles", "laplace"]),
    "stokeslet_with_normals": ("stokeslet", lambda d: ["--strengths", d / "f.npy", "--normals", d / "n.npy"],
                               INVALID, ["--normals"]),
    "dipoles_two_columns": ("stresslet", lambda d: ["--dipoles", _write_bad(d, "d2.npy", np.zeros((N, 2))),
                                                    "--normals", d / "n.npy"], INVALID, ["dipoles", "(N,3)"]),
    "normals_length_mismatch": ("stresslet", lambda d: ["--dipoles", d / "d.npy", "--normals",
                                                        _write_bad(d, "n2.npy", np.ones((N - 1, 3)))], INVALID,
                                ["mismatch", "normals"]),
    "normals_nan": ("stokes-combined", lambda d: ["--strengths", d / "f.npy", "--dipoles", d / "d.npy", "--normals",
                                                  _write_bad(d, "nn.npy", np.full((N, 3), np.nan))], INVALID,
                    ["normals", "nan"]),
    "combined_scalar_strengths": ("stokes-combined", lambda d: ["--strengths", d / "q.npy", "--dipoles",
                                                                d / "d.npy", "--normals", d / "n.npy"], INVALID,
                                  ["strengths", "(N,3)"]),
    "energy_with_stokeslet": ("stokeslet", lambda d: ["--strengths", d / "f.npy", "--energy"], INVALID,
                              ["--energy", "laplace"]),
    "energy_with_targets": ("laplace", lambda d: ["--strengths", d / "q.npy", "--energy", "--targets", d / "t.npy"],
                            INVALID, ["--energy", "--targets"]),
    "forces_out_without_energy": ("laplace", lambda d: ["--strengths", d / "q.npy", "--forces-out", d / "o" / "F.npy"],
                                  INVALID, ["--forces-out", "--energy"]),
    "exclusions_with_stokeslet": ("stokeslet", lambda d: ["--strengths", d / "f.npy", "--exclusions",
                                                          _write_bad(d, "p.npy", np.array([[0, 1]]))], INVALID,
                                  ["--exclusions", "laplace"]),
    "exclusions_with_targets": ("laplace", lambda d: ["--strengths", d / "q.npy", "--targets", d / "t.npy",
                                                      "--exclusions", _write_bad(d, "p.npy", np.array([[0, 1]]))],
                                INVALID, ["--exclusions", "--targets"]),
    "exclusions_out_of_range": ("laplace", lambda d: ["--strengths", d / "q.npy", "--exclusions",
                                                      _write_bad(d, "p.npy", np.array([[0, 1], [2, N]]))], INVALID,
                                ["--exclusions", "row 1", "out of range"]),
    "exclusions_negative": ("laplace", lambda d: ["--strengths", d / "q.npy", "--exclusions",
                                                  _write_bad(d, "p.npy", np.array([[-1, 1]]))], INVALID,
                            ["--exclusions", "out of range"]),
    "exclusions_self_pair": ("laplace", lambda d: ["--strengths", d / "q.npy", "--exclusions",
                                                   _write_bad(d, "p.npy", np.array([[3, 3]]))], INVALID,
                             ["--exclusions", "itself"]),
    "exclusions_not_integer": ("laplace", lambda d: ["--strengths", d / "q.npy", "--exclusions",
                                                     _write_bad(d, "p.npy", np.array([[0.5, 1.0]]))], INVALID,
                               ["--exclusions", "integer"]),
    "exclusions_three_columns": ("laplace", lambda d: ["--strengths", d / "q.npy", "--exclusions",
                                                       _write_bad(d, "p.npy", np.array([[0, 1, 2]]))], INVALID,
                                 ["--exclusions", "(K,2)"]),
    "zero_mode_with_laplace": ("laplace", lambda d: ["--strengths", d / "q.npy", "--zero-mode"], INVALID,
                               ["--zero-mode"]),
    "viscosity_with_stresslet": ("stresslet", lambda d: ["--dipoles", d / "d.npy", "--normals", d / "n.npy",
                                                         "--viscosity", "2"], INVALID, ["--viscosity"]),
    "field_with_stresslet": ("stresslet", lambda d: ["--dipoles", d / "d.npy", "--normals", d / "n.npy", "--field"],
                             INVALID, ["--field"]),
    "targets_two_columns_empty": ("laplace", lambda d: ["--strengths", d / "q.npy", "--targets",
                                                        _write_bad(d, "t2.npy", np.zeros((0, 2)))], INVALID,
                                  ["targets"]),
    "summary_is_out": ("laplace", lambda d: ["--strengths", d / "q.npy", "--summary", d / "o" / "result.npy"],
                       INVALID, ["--summary", "--out", "same file"]),
    "summary_is_input": ("laplace", lambda d: ["--strengths", d / "q.npy", "--summary", d / "q.npy"], INVALID,
                         ["--summary", "--strengths", "overwrite"]),
    "forces_out_is_input": ("laplace", lambda d: ["--strengths", d / "q.npy", "--energy", "--forces-out",
                                                  d / "x.npy"], INVALID, ["--forces-out", "--sources", "overwrite"]),
    "summary_folder_missing": ("laplace", lambda d: ["--strengths", d / "q.npy", "--summary",
                                                     d / "no" / "such" / "s.json"], IOERR, ["does not exist"]),
    "unknown_precision": ("laplace", lambda d: ["--strengths", d / "q.npy", "--precision", "quad"], USAGE,
                          ["precision"]),
    "unknown_kernel": ("stokes", lambda d: ["--strengths", d / "f.npy"], USAGE, ["kernel"]),
}


@pytest.mark.parametrize("preexisting", [False, True], ids=["no-old-output", "old-output-kept"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input(cli, tmp_path, case, preexisting):
    kernel, extra, code, keywords = BAD[case]
    write_system(tmp_path)
    outdir = tmp_path / "o"
    outdir.mkdir()
    out, summary, forces = outdir / "result.npy", outdir / "s.json", outdir / "F.npy"
    if preexisting:
        for p in (out, summary, forces):
            p.write_bytes(b"precious old result")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    args = [str(a) for a in extra(tmp_path)]
    if "--summary" not in args:
        args += ["--summary", str(summary)]
    if "--energy" in args and "--forces-out" not in args:
        args += ["--forces-out", str(forces)]
    r = run(cli, "ewald", "--kernel", kernel, "--box", box_arg(), "--tol", "1e-6", "--sources", tmp_path / "x.npy",
            *args, "--out", out)
    assert r.returncode == code, f"exit code {r.returncode}, expected {code}; stderr:\n{r.stderr}"
    err = r.stderr.lower()
    for k in keywords:
        assert k.lower() in err, f"{k!r} not in stderr:\n{r.stderr}"
    if code != USAGE:
        assert r.stderr.startswith("elliptica: error: "), r.stderr
    assert "P2P" not in r.stdout
    if preexisting:
        assert files_in(outdir) == ["F.npy", "result.npy", "s.json"]
        for p in (out, summary, forces):
            assert p.read_bytes() == b"precious old result"
    else:
        assert files_in(outdir) == []
    # inputs untouched
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name in before} == before


def test_single_precision_below_its_floor_exits_4(cli, tmp_path):
    write_system(tmp_path)
    (tmp_path / "o").mkdir()
    r = run(cli, "ewald", "--kernel", "stokeslet", "--box", box_arg(), "--tol", "1e-10", "--precision", "single",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "f.npy", "--summary", tmp_path / "o" / "s.json",
            "--out", tmp_path / "o" / "u.npy")
    assert r.returncode == NUMERICAL, (r.returncode, r.stderr)
    assert r.stderr.startswith("elliptica: error: ") and "single" in r.stderr
    assert files_in(tmp_path / "o") == []


def test_numerical_failure_writes_no_output_set(cli, tmp_path):
    """A failure after the temporaries exist (here: non-finite charges product) removes every
    output of the set (--out, --forces-out, --summary)."""
    x = np.array([[0.1, 0.1, 0.1], [0.1, 0.1, 0.1001], [0.6, 0.6, 0.6]])
    q = np.array([1.7e308, 1.7e308, -1.7e308])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q)
    (tmp_path / "o").mkdir()
    r = run(cli, "ewald", "--box", "1", "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy",
            "--energy", "--forces-out", tmp_path / "o" / "F.npy", "--summary", tmp_path / "o" / "s.json",
            "--out", tmp_path / "o" / "phi.npy")
    assert r.returncode == NUMERICAL, (r.returncode, r.stderr)
    assert files_in(tmp_path / "o") == []


# --------------------------------------------------------------------------------------------
# Stokeslet pressure
# --------------------------------------------------------------------------------------------

def test_stokeslet_pressure_column_equals_python(cli, tmp_path):
    s = write_system(tmp_path)
    out = tmp_path / "up.npy"
    ewald_cli(cli, tmp_path, "stokeslet", out, "--pressure", "--viscosity", "2.5")
    up = np.load(out)
    assert up.shape == (N, 4)
    r = python_result(s, "stokeslet", tol=1e-8, viscosity=2.5, pressure=True)
    assert r.pressure.shape == (N,)
    assert rel_rms(up[:, 3] - r.pressure, r.pressure) < 1e-12
    assert rel_rms(up[:, :3] - r.velocity, r.velocity) < 1e-12
    # the pressure does not depend on the viscosity, the velocity is proportional to 1/mu
    r1 = python_result(s, "stokeslet", tol=1e-8, viscosity=1.0, pressure=True)
    assert rel_rms(r1.pressure - r.pressure, r.pressure) < 1e-7
    assert rel_rms(r1.velocity / 2.5 - r.velocity, r.velocity) < 1e-7


@pytest.mark.parametrize("kernel", ["laplace", "stresslet", "stokes-combined"])
def test_pressure_refused_for_other_kernels(cli, tmp_path, kernel):
    write_system(tmp_path)
    out = tmp_path / "o.npy"
    r = run(cli, "ewald", "--kernel", kernel, "--box", box_arg(), "--sources", tmp_path / "x.npy",
            *kernel_args(tmp_path, kernel), "--out", out, "--pressure")
    assert r.returncode == INVALID, r.stderr
    assert "--pressure" in r.stderr
    assert not out.exists()
