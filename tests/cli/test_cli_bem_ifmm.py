"""`elliptica bem --precond ifmm` (the inverse FMM preconditioner, seed 001): runs, records the
factorisation in summary.json, agrees with the BD-preconditioned solution, refuses bad options."""
import json
import subprocess

import numpy as np
import pytest

INVALID = 2


def run(cli, *args, timeout=600):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


COMMON = ["bem", "--mesh", "sphere:1,3", "--k", "2", "--operator", "fmm", "--tol", "1e-7", "--fmm-tol", "1e-6",
          "--threads", "2", "--no-plots"]


def test_ifmm_solution_matches_bd_and_summary(cli, tmp_path):
    r = run(cli, *COMMON, "--precond", "ifmm", "--ifmm-order", "4", "--ifmm-depth", "3", "--ifmm-eps", "1e-3",
            "--out", tmp_path / "ifmm")
    assert r.returncode == 0, r.stderr
    assert "ifmm factorise level 3" in r.stderr  # progress per level
    assert "nIFMMs3t3b3" in r.stdout
    s = json.loads((tmp_path / "ifmm" / "summary.json").read_text())
    assert s["precond"] == "ifmm"
    f = s["ifmm"]
    assert f["name"] == "nIFMMs3t3b3" and f["epsilon"] == 1e-3 and f["sigma"] == 3 and f["order"] == 4
    assert f["levels"][0]["level"] == 3 and f["levels"][0]["boxes"] > 0 and f["bytes"] > 0
    assert f["top_size"] > 0
    r2 = run(cli, *COMMON, "--precond", "bd", "--out", tmp_path / "bd")
    assert r2.returncode == 0, r2.stderr
    s2 = json.loads((tmp_path / "bd" / "summary.json").read_text())
    assert s["iterations"] < s2["iterations"]
    u1 = np.load(tmp_path / "ifmm" / "surface.npy")
    u2 = np.load(tmp_path / "bd" / "surface.npy")
    assert np.linalg.norm(u1 - u2) / np.linalg.norm(u2) < 1e-5


def test_ifmm_sequential_name(cli, tmp_path):
    r = run(cli, *COMMON, "--precond", "ifmm", "--ifmm-order", "3", "--ifmm-sigma", "0", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["ifmm"]["name"] == "mIFMMb3"


@pytest.mark.parametrize("args,needle", [
    (["--ifmm-eps", "0"], "--ifmm-eps"),
    (["--ifmm-eps", "1"], "--ifmm-eps"),
    (["--ifmm-sigma", "2"], "--ifmm-sigma"),
    (["--ifmm-top", "1"], "--ifmm-top"),
    (["--ifmm-bottom", "2"], "--ifmm-bottom"),
    (["--ifmm-order", "1"], "--ifmm-order"),
    (["--ifmm-depth", "2"], "--ifmm-depth"),
    (["--ifmm-bottom", "4"], "bottom level"),  # below the tree's leaf level 3
    (["--ifmm-depth", "9"], "depth"),
])
def test_ifmm_bad_options(cli, tmp_path, args, needle):
    r = run(cli, *COMMON, "--precond", "ifmm", *args, "--out", tmp_path / "o")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert needle in r.stderr
    assert not (tmp_path / "o" / "summary.json").exists()


def test_ifmm_needs_fmm_and_a_fine_enough_mesh(cli, tmp_path):
    r = run(cli, "bem", "--mesh", "sphere:1,3", "--k", "2", "--operator", "dense", "--precond", "ifmm",
            "--no-plots", "--out", tmp_path / "o")
    assert r.returncode == INVALID and "FMM operator" in r.stderr
    r = run(cli, "bem", "--mesh", "sphere:1,1", "--k", "1", "--precond", "ifmm", "--no-plots", "--out", tmp_path / "o")
    assert r.returncode == INVALID and "too coarse" in r.stderr, r.stderr
