"""Tests of `elliptica mg solve` and `elliptica mg study` (issue 3).

The binary comes from ELLIPTICA_CLI (else PATH), as in test_cli.py. The numerics are tested by the
library's own tests; here we check the plumbing: convergence of each smoother kind on a small
problem (with the error vs the exact solution consistent with the residual), the refusal of PCG with
a non-symmetric cycle, the Matrix Market path (solution checked against a dense solve), clear errors
and no output on bad input, and the study's CSV, PNGs and findings lines.
"""
import csv
import re

import numpy as np
import pytest
from mg_cli import run, field  # noqa: E402

USAGE, INVALID, IOERR, NUMERICAL, NOTCONV = 1, 2, 3, 4, 5
KINDS = ["simple", "cheb1", "cheb1opt", "cheb4", "opt4"]


def error_vs_exact(out):
    m = re.search(r"error vs exact solution: relative 2-norm (\S+), max (\S+)", out)
    assert m, out
    return float(m.group(1)), float(m.group(2))


def write_mtx(path, A, symmetric=True):
    n = A.shape[0]
    entries = [(i, j, A[i, j]) for i in range(n) for j in range(n)
               if A[i, j] != 0 and (not symmetric or i >= j)]
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate real {'symmetric' if symmetric else 'general'}\n")
        f.write("% test matrix\n")
        f.write(f"{n} {n} {len(entries)}\n")
        for i, j, v in entries:
            f.write(f"{i + 1} {j + 1} {v:.17g}\n")


def spd_matrix(n=40, seed=3):
    """A sparse-ish SPD matrix: 1D Laplacian plus a random symmetric diagonally dominant part."""
    rng = np.random.default_rng(seed)
    A = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    for _ in range(n):
        i, j = rng.integers(0, n, 2)
        if i != j:
            v = rng.uniform(-0.3, 0.3)
            A[i, j] += v
            A[j, i] += v
            A[i, i] += abs(v)
            A[j, j] += abs(v)
    return A


# --------------------------------------------------------------------------------------------
# mg solve: Poisson problems
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("krylov,order", [("none", "2,2"), ("gmres20", "4,0")])
def test_solve_poisson2d_converges(cli, kind, krylov, order):
    tol = 1e-8
    r = run(cli, "mg", "solve", "--problem", "poisson2d", "--n", 32, "--lx", 2, "--smoother", kind, "--order", order,
            "--krylov", krylov, "--tol", tol, "--coarsening", 2)
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "converged") == "yes"
    assert field(r.stdout, "levels").rstrip(",") == "5"  # 32 -> 16 -> 8 -> 4 -> 2 intervals
    it = int(field(r.stdout, "iterations"))
    assert 1 <= it <= 100
    res = float(field(r.stdout, "final relative residual"))
    assert res <= tol
    rho = float(field(r.stdout, "rho"))
    assert rho == pytest.approx(res ** (1.0 / it), rel=1e-3)
    # ||e|| <= cond(A) ||r||/||b|| * ||u||: cond ~ 4 (n/pi)^2 (Lx^2) ~ 1700 here; keep a margin of 10.
    rel_err, _ = error_vs_exact(r.stdout)
    assert rel_err < 2e4 * tol
    # matvec convention: stationary = 1 + iters (m+n+2); GMRES counts more than the cycles alone.
    mv = int(field(r.stdout, "fine-grid matvecs"))
    if krylov == "none":
        assert mv == 1 + it * (4 + 2)
    else:
        assert mv >= it * (4 + 1 + 1)
    # progress per iteration on stderr
    assert len(re.findall(r"(cycle|iter)\s+\d+\s+rel\. residual", r.stderr)) >= it


def test_solve_reports_levels_and_complexity(cli):
    r = run(cli, "mg", "solve", "--n", 128, "--coarsening", 8, "--order", "2,2", "--krylov", "pcg", "-q")
    assert r.returncode == 0, r.stderr
    lv, opc = re.search(r"levels: (\d+), operator complexity: ([0-9.]+)", r.stdout).groups()
    assert (int(lv), round(float(opc), 3)) == (3, 1.023)  # seed: 3 levels, 1.023
    assert len(re.findall(r"^\s+\d+\s+\d+\s+\d+\s+[0-9.]+\s*$", r.stdout, re.M)) == 2  # lambda_max of 2 smoothed levels
    r = run(cli, "mg", "solve", "--n", 128, "--coarsening", 2, "--order", "2,2", "--krylov", "pcg", "-q")
    assert r.returncode == 0, r.stderr
    lv, opc = re.search(r"levels: (\d+), operator complexity: ([0-9.]+)", r.stdout).groups()
    assert (int(lv), round(float(opc), 3)) == (7, 1.568)  # seed: 7 levels, 1.568


def test_solve_poisson3d(cli):
    r = run(cli, "mg", "solve", "--problem", "poisson3d", "--n", 16, "--lz", 2, "--order", "3,3", "--krylov", "pcg", "-q")
    assert r.returncode == 0, r.stderr
    assert field(r.stdout, "converged") == "yes"
    assert "(3375 unknowns)" in r.stdout


@pytest.mark.parametrize("order,base", [("4,0", "jacobi"), ("3,1", "jacobi"), ("2,2", "ras")])
def test_pcg_refuses_nonsymmetric_cycle(cli, order, base):
    r = run(cli, "mg", "solve", "--n", 16, "--order", order, "--base", base, "--krylov", "pcg")
    assert r.returncode == INVALID
    assert "pcg" in r.stderr and "symmetric" in r.stderr


def test_pcg_accepts_symmetric_cycle(cli):
    r = run(cli, "mg", "solve", "--n", 16, "--order", "2,2", "--base", "asm", "--krylov", "pcg", "-q")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,needle", [
    (["--n", "1"], "--n"),
    (["--lx", "-1"], "--lx"),
    (["--order", "0,0"], "--order"),
    (["--order", "4"], "--order"),
    (["--coarsening", "4"], "--coarsening"),
    (["--smoother", "cheb9"], "--smoother"),
    (["--krylov", "bicg"], "--krylov"),
    (["--tol", "2"], "--tol"),
])
def test_solve_bad_options(cli, args, needle):
    base = [] if "--n" in args else ["--n", 16]
    r = run(cli, "mg", "solve", *base, *args)
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert needle in r.stderr


def test_solve_not_converged_exit_code(cli):
    r = run(cli, "mg", "solve", "--n", 32, "--lx", 64, "--order", "1,0", "--krylov", "none", "--max-iter", 3, "-q")
    assert r.returncode == NOTCONV
    assert "did not reach" in r.stderr
    assert field(r.stdout, "converged") == "no"


# --------------------------------------------------------------------------------------------
# mg solve --matrix
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("symmetric_storage", [True, False])
@pytest.mark.parametrize("kind", ["cheb4", "opt4", "cheb1"])
def test_matrix_pcg_solves(cli, tmp_path, kind, symmetric_storage):
    A = spd_matrix()
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    write_mtx(tmp_path / "A.mtx", A, symmetric=symmetric_storage)
    np.save(tmp_path / "b.npy", b)
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy",
            "--smoother", kind, "--order", 3, "--tol", 1e-10, "--amg", "none")
    assert r.returncode == 0, r.stderr
    x = np.load(tmp_path / "x.npy")
    assert x.shape == b.shape
    assert np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    xref = np.linalg.solve(A, b)
    assert np.linalg.norm(x - xref) <= 1e-10 * np.linalg.cond(A) * np.linalg.norm(xref)
    assert "krylov pcg" in r.stdout


def test_matrix_malformed_file(cli, tmp_path):
    np.save(tmp_path / "b.npy", np.ones(3))
    cases = {
        "banner.mtx": "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1 0\n",
        "value.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 2.0\n2 2 abc\n",
        "index.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 2.0\n",
        "short.mtx": "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 2.0\n",
        "garbage.mtx": "hello\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        out = tmp_path / ("x_" + name + ".npy")
        r = run(cli, "mg", "solve", "--matrix", tmp_path / name, "--rhs", tmp_path / "b.npy", "--out", out)
        assert r.returncode == IOERR, (name, r.returncode, r.stderr)
        assert name in r.stderr, (name, r.stderr)
        assert not out.exists()
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "missing.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy")
    assert r.returncode == IOERR and "missing.mtx" in r.stderr


def test_matrix_rhs_length_mismatch(cli, tmp_path):
    A = spd_matrix(10)
    write_mtx(tmp_path / "A.mtx", A)
    np.save(tmp_path / "b.npy", np.ones(11))
    out = tmp_path / "x.npy"
    out.write_bytes(b"keep")
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.npy", "--out", out)
    assert r.returncode == INVALID
    assert "length mismatch" in r.stderr and "11" in r.stderr and "10" in r.stderr
    assert out.read_bytes() == b"keep"  # untouched


def test_matrix_rejects_problem_options(cli, tmp_path):
    write_mtx(tmp_path / "A.mtx", spd_matrix(10))
    np.save(tmp_path / "b.npy", np.ones(10))
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy",
            "--coarsening", 8)
    assert r.returncode == INVALID and "--coarsening" in r.stderr
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.npy")
    assert r.returncode == INVALID and "--out" in r.stderr


# --------------------------------------------------------------------------------------------
# mg study --quick
# --------------------------------------------------------------------------------------------

COLUMNS = ["lx", "coarsening", "mode", "smoother", "m", "n", "k", "iterations", "matvecs", "rho",
           "final_rel_residual", "converged", "levels", "op_complexity", "grid_n"]


@pytest.fixture(scope="module")
def quick_study(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    r = run(cli, "mg", "study", "--quick", "--out", out, timeout=120)
    return r, out


def test_study_quick_csv(quick_study):
    r, out = quick_study
    assert r.returncode == 0, r.stderr
    with open(out / "study.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == COLUMNS
    # 2 Lx x 2 coarsenings x 5 smoothers x sum_{k=1..4} (2k+1) = 24 splits x 2 modes
    assert len(rows) == 2 * 2 * 5 * 24 * 2
    assert {float(x["lx"]) for x in rows} == {1.0, 64.0}
    assert {x["coarsening"] for x in rows} == {"2", "8"}
    assert {x["mode"] for x in rows} == {"solver", "gmres"}
    assert {x["smoother"] for x in rows} == set(KINDS)
    for x in rows:
        m, n, k = int(x["m"]), int(x["n"]), int(x["k"])
        assert m + n == 2 * k and 1 <= k <= 4
        if x["converged"] == "1":
            it, rho, res = int(x["iterations"]), float(x["rho"]), float(x["final_rel_residual"])
            assert res <= 1e-6
            assert rho == pytest.approx(res ** (1 / it), rel=1e-6)
            if x["mode"] == "solver":
                assert int(x["matvecs"]) == 1 + it * (m + n + 2)
    # Every 2D n/2 Lx = 1 configuration with a Chebyshev smoother converges as a GMRES preconditioner.
    for x in rows:
        if x["lx"] == "1" and x["coarsening"] == "2" and x["mode"] == "gmres" and x["smoother"] != "simple":
            assert x["converged"] == "1", x


def test_study_quick_pngs(quick_study):
    r, out = quick_study
    assert r.returncode == 0, r.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) == 10, pngs  # (Lx, coarsening, mode) + predicted_regions_{solver,gmres}
    assert (out / "C_constants.csv").is_file()
    for p in out.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob("*.tmp*"))


def test_study_quick_output(quick_study):
    r, out = quick_study
    assert r.returncode == 0, r.stderr
    s = r.stdout
    assert "best configuration per case" in s
    assert len(re.findall(r"^\s+(1|64)\s+n/[28]\s+(solver|gmres)\s+\S+\s+\(\d+,\d+\)", s, re.M)) == 8
    for tag in ("[1]", "[2]", "[3]"):
        lines = [ln for ln in s.splitlines() if ln.strip().startswith(tag)]
        assert lines, tag
        for ln in lines:
            assert ("PASS" in ln) or ("DIFFERS" in ln), ln
    # the symmetry finding quotes its numbers
    assert re.search(r"\[1\].*median rel\. difference [0-9.]+, max [0-9.]+", s)
    # progress on stderr
    assert "case Lx = 64, coarsening 8" in r.stderr


def test_study_bad_options(cli, tmp_path):
    r = run(cli, "mg", "study", "--quick", "--coarsening", "3", "--out", tmp_path / "s")
    assert r.returncode == INVALID and "--coarsening" in r.stderr
    f = tmp_path / "file"
    f.write_text("x")
    r = run(cli, "mg", "study", "--quick", "--out", f)
    assert r.returncode == IOERR and "not a folder" in r.stderr


def test_one_level_hierarchy_refused(cli, tmp_path):
    # n = 63 intervals (62 unknowns) coarsens like any size now; 7 unknowns cannot be coarsened
    # by 8: the "hierarchy" would be the coarse direct solve alone, refused.
    r = run(cli, "mg", "solve", "--n", "63", "-q")
    assert r.returncode == 0, r.stderr
    assert int(field(r.stdout, "levels").rstrip(",")) == 6
    r = run(cli, "mg", "solve", "--n", "8", "--coarsening", "8", "-q")
    assert r.returncode == INVALID and "one-level" in r.stderr, r.stderr
    # in this mode's flags (not the --matrix mode's --amg sa)
    assert "--n 8 with --coarsening 8" in r.stderr and "--amg" not in r.stderr, r.stderr
    # the study would measure direct solves: refused before any run, nothing written
    out = tmp_path / "s"
    r = run(cli, "mg", "study", "--n", "8", "--no-plots", "--out", out)
    assert r.returncode == INVALID and "one-level hierarchy" in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("grid,bc", [("cell", "dirichlet"), ("cell", "neumann"), ("cell", "periodic"),
                                     ("vertex", "periodic")])
def test_generated_cell_and_periodic_problems(cli, grid, bc):
    # --n intervals (cells) per axis, odd and even; error against the exact discrete solution
    for n in (63, 64):
        r = run(cli, "mg", "solve", "--n", n, "--grid", grid, "--bc", bc, "--krylov", "pcg", "--tol", "1e-10", "-q")
        assert r.returncode == 0, r.stderr
        assert f"grid: {grid}, boundary {bc}" in r.stdout
        assert ("constant null space" in r.stdout) == (bc != "dirichlet")
        assert int(field(r.stdout, "iterations")) <= 20
        err = float(re.search(r"relative 2-norm (\S+),", r.stdout).group(1))
        assert err <= 1e-7, r.stdout


def test_generated_problem_refusals(cli):
    r = run(cli, "mg", "solve", "--n", "32", "--bc", "neumann", "-q")
    assert r.returncode == INVALID and "--bc neumann needs --grid cell" in r.stderr, r.stderr
    r = run(cli, "mg", "solve", "--n", "32", "--bc", "robin", "-q")
    assert r.returncode == INVALID and "--bc" in r.stderr, r.stderr
    r = run(cli, "mg", "solve", "--n", "32", "--grid", "edge", "-q")
    assert r.returncode == INVALID and "--grid" in r.stderr, r.stderr
