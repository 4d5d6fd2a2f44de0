"""Tests of the monostatic sweeps of `elliptica bem` (--incident sweep:ANGLE,FROM,TO,N and
--incident-file FILE): many plane waves with one plan set-up, monostatic.csv, summary.json's
"sweep", monostatic.png, and the refusal of bad specifications (exit 2 invalid input, 3 file error,
1 usage).

Backscatter reference: the Mie series of the unit sphere (scipy.special, as in test_cli_bem.py),
u_inf at the backscatter direction (cos theta = -1 between the incident direction and xhat).
"""
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

USAGE, INVALID, IOERR = 1, 2, 3
COLUMNS = "index,angle_deg,dx,dy,dz,re,im,sigma,ts_db,gmres_iterations,solve_seconds"
FILE_COLUMNS = "index,dx,dy,dz,re,im,sigma,ts_db,gmres_iterations,solve_seconds"
BASE = ["bem", "--mesh", "sphere:1,2", "--k", "1"]


def run(cli, *args, timeout=600):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def read_csv(path):
    with open(path) as f:
        header = f.readline().lstrip("# ").strip()
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def mie_backscatter(k, bc="neumann"):
    sp = pytest.importorskip("scipy.special")
    n = np.arange(0, 30)
    if bc == "dirichlet":
        an = -sp.spherical_jn(n, k) / (sp.spherical_jn(n, k) + 1j * sp.spherical_yn(n, k))
    else:
        an = -sp.spherical_jn(n, k, True) / (sp.spherical_jn(n, k, True) + 1j * sp.spherical_yn(n, k, True))
    return (-1j / k) * np.sum((2 * n + 1) * an * (-1.0) ** n)


def test_theta_sweep_csv_summary_and_progress(cli, tmp_path):
    out = tmp_path / "s"
    r = run(cli, *BASE, "--incident", "sweep:theta,0,180,5", "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    header, t = read_csv(out / "monostatic.csv")
    assert header == COLUMNS
    assert t.shape == (5, 11)
    np.testing.assert_array_equal(t[:, 0], np.arange(5))
    np.testing.assert_allclose(t[:, 1], [0, 45, 90, 135, 180])
    th = np.radians(t[:, 1])  # theta: d = (sin t, 0, cos t)
    np.testing.assert_allclose(t[:, 2:5], np.column_stack([np.sin(th), 0 * th, np.cos(th)]), atol=1e-15)
    u = t[:, 5] + 1j * t[:, 6]
    np.testing.assert_allclose(t[:, 7], 4 * np.pi * np.abs(u) ** 2, rtol=1e-12)
    np.testing.assert_allclose(t[:, 8], 10 * np.log10(t[:, 7] / (4 * np.pi)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t[:, 8], 20 * np.log10(np.abs(u)), rtol=1e-12, atol=1e-12)
    assert np.all(t[:, 9] >= 1) and np.all(t[:, 10] >= 0)
    # a sphere: the same backscatter for every direction, the Mie value to the discretisation error
    mie = mie_backscatter(1.0)
    assert np.max(np.abs(u - mie)) < 0.04 * abs(mie)
    assert np.ptp(t[:, 8]) < 0.3
    s = json.loads((out / "summary.json").read_text())
    sw = s["sweep"]
    assert sw["count"] == 5 and sw["source"] == "sweep" and sw["angle"] == "theta"
    assert sw["from_deg"] == 0 and sw["to_deg"] == 180
    assert sw["max_iterations"] == int(t[:, 9].max())
    assert abs(sw["mean_iterations"] - t[:, 9].mean()) < 1e-9
    assert abs(sw["total_solve_seconds"] - t[:, 10].sum()) < 1e-6 + 1e-6 * sw["total_solve_seconds"]
    assert s["incident"] == "sweep:theta,0,180,5" and s["elements"] == 320
    # one set-up, a line per direction on stderr; only the sweep's files
    assert r.stderr.count("set-up done") == 1
    assert "direction 1/5 (theta 0 deg)" in r.stderr and "direction 5/5 (theta 180 deg)" in r.stderr
    assert "sweep: 5 directions" in r.stdout
    assert sorted(p.name for p in out.iterdir()) == ["monostatic.csv", "summary.json"]
    # --quiet: no progress
    r = run(cli, *BASE, "--incident", "sweep:theta,0,180,5", "--out", out, "--no-plots", "--quiet")
    assert r.returncode == 0 and "direction" not in r.stderr


def test_phi_sweep_single_direction_and_the_files_of_one_run(cli, tmp_path):
    out = tmp_path / "p"
    r = run(cli, *BASE, "--out", out, "--no-plots")  # a single incident field first
    assert r.returncode == 0, r.stderr
    assert (out / "surface.npy").is_file()
    r = run(cli, *BASE, "--incident", "sweep:phi,90,90,1", "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    _, t = read_csv(out / "monostatic.csv")
    assert t.shape == (1, 11)
    np.testing.assert_allclose(t[0, 2:5], [0, 1, 0], atol=1e-15)  # phi 90: +y
    # the single-incident files of the earlier run are gone (one run's files in the folder) ...
    assert sorted(p.name for p in out.iterdir()) == ["monostatic.csv", "summary.json"]
    # ... and a single run removes the sweep's
    r = run(cli, *BASE, "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    assert not (out / "monostatic.csv").exists() and (out / "far_field.csv").is_file()
    assert "sweep" not in json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("suffix", [".npy", ".txt"])
def test_incident_file_equals_sweep(cli, tmp_path, suffix):
    d = np.array([[0, 0, 2.0], [1, 1, 0], [0.3, -0.2, -0.9]])
    f = tmp_path / ("dirs" + suffix)
    if suffix == ".npy":
        np.save(f, d)
    else:
        f.write_text("dx dy dz\n" + "\n".join(" ".join(map(str, row)) for row in d) + "\n")
    out = tmp_path / "f"
    r = run(cli, *BASE, "--incident-file", f, "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    header, t = read_csv(out / "monostatic.csv")
    assert header == FILE_COLUMNS and t.shape == (3, 10)
    np.testing.assert_allclose(t[:, 1:4], d / np.linalg.norm(d, axis=1)[:, None], atol=1e-15)
    s = json.loads((out / "summary.json").read_text())
    assert s["sweep"]["source"] == "file" and s["sweep"]["count"] == 3 and "angle" not in s["sweep"]
    if suffix == ".txt":
        assert "header" in r.stderr  # the skipped line of names is reported
    # the first row (+z) is the theta-0 direction of a sweep: the same numbers
    r = run(cli, *BASE, "--incident", "sweep:theta,0,0,1", "--out", tmp_path / "g", "--no-plots")
    assert r.returncode == 0, r.stderr
    _, g = read_csv(tmp_path / "g" / "monostatic.csv")
    np.testing.assert_allclose(g[0, 5:7], t[0, 4:6], rtol=1e-12, atol=1e-14)


def test_plot_written(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot"
    r = run(cli, *BASE, "--incident", "sweep:theta,0,360,9", "--out", out)
    assert r.returncode == 0, r.stderr
    assert (out / "monostatic.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "bistatic.png").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    d = np.array([[0, 0, 1.0], [1, 0, 0]])
    np.save(tmp_path / "d.npy", d)
    r = run(cli, *BASE, "--incident-file", tmp_path / "d.npy", "--out", tmp_path / "plot2")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "plot2" / "monostatic.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("spec,needle", [
    ("sweep:theta,0,180,0", "N must be"), ("sweep:theta,0,180,-2", "N must be"), ("sweep:theta,0,180,2.5", "N"),
    ("sweep:theta,0,nan,4", "finite"), ("sweep:phi,inf,10,4", "finite"), ("sweep:psi,0,180,4", "ANGLE"),
    ("sweep:theta,0,180", "4 values"), ("sweep:theta,0,x,3", "TO"), ("sweep:theta,0,180,2000000", "N must be"),
])
def test_bad_sweep_specs(cli, tmp_path, spec, needle):
    out = tmp_path / "o"
    r = run(cli, *BASE, "--incident", spec, "--out", out, "--no-plots")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert needle in r.stderr and "--incident" in r.stderr
    assert not out.exists()  # refused before the output folder and the set-up


def test_bad_incident_files(cli, tmp_path):
    out = tmp_path / "o"
    r = run(cli, *BASE, "--incident-file", tmp_path / "missing.npy", "--out", out, "--no-plots")
    assert r.returncode == IOERR, (r.returncode, r.stderr)
    assert "missing.npy" in r.stderr
    cases = [(np.ones((3, 2)), "(M,3)"), (np.ones(3), "(M,3)"), (np.zeros((0, 3)), "no directions"),
             (np.array([[0, 0, 1.0], [0, 0, 0]]), "direction 1 is the zero vector"),
             (np.array([[0, 0, 1.0], [1, 0, 0], [np.nan, 0, 1]]), "direction 2 is not finite")]
    for i, (a, needle) in enumerate(cases):
        f = tmp_path / f"bad{i}.npy"
        np.save(f, a)
        r = run(cli, *BASE, "--incident-file", f, "--out", out, "--no-plots")
        assert r.returncode == INVALID, (i, r.returncode, r.stderr)
        assert needle in r.stderr, (i, r.stderr)
        assert not out.exists()
    # --incident-file excludes --incident (a usage error)
    np.save(tmp_path / "ok.npy", np.array([[0, 0, 1.0]]))
    r = run(cli, *BASE, "--incident", "plane:1,0,0", "--incident-file", tmp_path / "ok.npy", "--out", out, "--no-plots")
    assert r.returncode == USAGE, (r.returncode, r.stderr)


def test_help_documents_the_sweep(cli):
    r = run(cli, "bem", "--help")
    assert r.returncode == 0
    assert "sweep:ANGLE,FROM,TO,N" in r.stdout and "--incident-file" in r.stdout and "monostatic.csv" in r.stdout
