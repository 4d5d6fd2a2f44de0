"""`elliptica mg solve --matrix` with a hierarchy (issue 13): smoothed aggregation (the default),
the geometric hierarchy on a given grid shape, near-null-space vectors from a file, and the
refusals (a matrix too small for a hierarchy, options of the wrong hierarchy, a grid that cannot
be coarsened). Solutions are checked against scipy's sparse direct solve.
"""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
from sparse_problems import elasticity2d, poisson2d, rigid_body_modes_2d  # noqa: E402
from mg_cli import run, field, solve  # noqa: E402

INVALID, IOERR = 2, 3


def test_sa_is_the_default_and_solves(cli, tmp_path):
    A = poisson2d(120, 97)  # no 2^k m - 1 structure
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    r, out = solve(cli, tmp_path, A, b, "--tol", 1e-10)
    assert r.returncode == 0, r.stderr
    assert "hierarchy: smoothed aggregation" in r.stdout
    assert "krylov pcg" in r.stdout
    assert int(field(r.stdout, "levels").rstrip(",")) >= 3
    assert int(field(r.stdout, "iterations")) <= 20
    x = np.load(out)
    assert np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    xref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - xref) <= 1e-6 * np.linalg.norm(xref)  # cond(A) ~ 6e3


def test_singular_matrix_without_null_space_gets_a_hint(cli, tmp_path):
    # a periodic (singular) 5-point Laplacian: the breakdown names --null-space constant
    n = 24
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, n - 1] = t[n - 1, 0] = -1.0
    t = t.tocsr()
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    b = np.random.default_rng(3).standard_normal(n * n)
    b -= b.mean()
    r, out = solve(cli, tmp_path, A, b + 1.0, "--coarse-size", 50)  # inconsistent: cannot converge
    assert r.returncode == 4 and "--null-space constant" in r.stderr and not out.exists(), r.stdout + r.stderr
    r, out = solve(cli, tmp_path, A, b, "--coarse-size", 50, "--null-space", "constant")
    assert r.returncode == 0, r.stderr


def test_classical_strength_measure(cli, tmp_path):
    A = poisson2d(90, 77)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    r, out = solve(cli, tmp_path, A, b, "--strength-measure", "classical", "--tol", 1e-10)
    assert r.returncode == 0, r.stderr
    assert "strength 0.5 (classical)" in r.stdout, r.stdout  # the measure's own default threshold
    x = np.load(out)
    assert np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    out.unlink()
    r, out = solve(cli, tmp_path, A, b, "--strength-measure", "classical", "--strength", "0.3")
    assert r.returncode == 0 and "strength 0.3 (classical)" in r.stdout, r.stdout + r.stderr
    out.unlink()
    r, out = solve(cli, tmp_path, A, b, "--strength-measure", "evolution")
    assert r.returncode == INVALID and "--strength-measure" in r.stderr and not out.exists(), r.stderr


def test_sa_elasticity_with_near_null_file(cli, tmp_path):
    A, coords = elasticity2d(30)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    np.save(tmp_path / "rbm.npy", rigid_body_modes_2d(coords))
    r1, out1 = solve(cli, tmp_path, A, b, "--block-size", 2, "--near-null", tmp_path / "rbm.npy", "--tol", 1e-8,
                     name="x1.npy")
    assert r1.returncode == 0, r1.stderr
    assert "near-null vectors 3" in r1.stdout
    r2, _ = solve(cli, tmp_path, A, b, "--block-size", 2, "--tol", 1e-8, name="x2.npy")
    assert r2.returncode == 0, r2.stderr
    it1, it2 = int(field(r1.stdout, "iterations")), int(field(r2.stdout, "iterations"))
    assert it1 < it2, (it1, it2)
    x = np.load(out1)
    assert np.linalg.norm(A @ x - b) <= 1e-8 * np.linalg.norm(b) * 1.01


def test_geometric_on_a_given_shape(cli, tmp_path):
    A = poisson2d(63, 31)
    b = np.ones(A.shape[0])
    r, out = solve(cli, tmp_path, A, b, "--amg", "geometric", "--shape", "63,31", "--tol", 1e-9)
    assert r.returncode == 0, r.stderr
    assert "hierarchy: geometric" in r.stdout
    assert int(field(r.stdout, "levels").rstrip(",")) >= 4
    x = np.load(out)
    assert np.linalg.norm(A @ x - b) <= 1e-9 * np.linalg.norm(b) * 1.01
    # a grid that cannot be coarsened (every axis below --coarsening) is refused, not solved by
    # the coarse direct solve
    A7 = poisson2d(7, 5)
    r, out = solve(cli, tmp_path, A7, np.ones(35), "--amg", "geometric", "--shape", "7,5", "--coarsening", 8,
                   name="y.npy")
    assert r.returncode == INVALID and "one-level" in r.stderr and "--amg sa" in r.stderr, r.stderr
    assert not out.exists()
    A2 = poisson2d(60, 30)
    r, out = solve(cli, tmp_path, A2, np.ones(A2.shape[0]), "--amg", "geometric", "--shape", "60,31", name="z.npy")
    assert r.returncode == INVALID and "--shape" in r.stderr and "1800" in r.stderr, r.stderr


def test_refusals(cli, tmp_path):
    small = poisson2d(10, 10)
    r, out = solve(cli, tmp_path, small, np.ones(100))
    assert r.returncode == INVALID and "one level" in r.stderr and "--amg none" in r.stderr, r.stderr
    assert not out.exists()
    r, out = solve(cli, tmp_path, small, np.ones(100), "--amg", "none")
    assert r.returncode == 0, r.stderr
    out.unlink()
    A = poisson2d(30, 30)
    b = np.ones(900)
    for extra, needle in [(("--amg", "amgx"), "--amg"),
                          (("--amg", "none", "--near-null", "v.npy"), "--near-null"),
                          (("--amg", "none", "--block-size", "2"), "--block-size"),
                          (("--shape", "30,30"), "--shape"),
                          (("--coarsening", "8"), "--coarsening"),
                          (("--amg", "geometric"), "--shape"),
                          (("--block-size", "7"), "divisible"),
                          (("--strength", "1.5"), "--strength must be in [0, 1), got 1.5"),
                          (("--coarse-size", "-5"), "--coarse-size must be >= 1")]:
        r, out = solve(cli, tmp_path, A, b, *extra)
        assert r.returncode == INVALID, (extra, r.returncode, r.stderr)
        assert needle in r.stderr, (extra, r.stderr)
        assert not out.exists()
    np.save(tmp_path / "bad.npy", np.ones((899, 1)))
    r, _ = solve(cli, tmp_path, A, b, "--near-null", tmp_path / "bad.npy")
    assert r.returncode == INVALID and "899" in r.stderr, r.stderr
    r, _ = solve(cli, tmp_path, A, b, "--near-null", tmp_path / "missing.npy")
    assert r.returncode == IOERR and "missing.npy" in r.stderr, r.stderr
    np.save(tmp_path / "zero.npy", np.zeros((900, 1)))
    r, _ = solve(cli, tmp_path, A, b, "--near-null", tmp_path / "zero.npy")
    assert r.returncode == INVALID and "near-null vector 0 (0-based column) is zero" in r.stderr, r.stderr
    # a right-hand side file with no numbers (not .npy, a text line that reads as a header only): a file error
    sio = pytest.importorskip("scipy.io")
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    for content, needle in ((b"hello world\n", "no numbers"), (b"\x00\x01garbage\n", "non-numeric token")):
        (tmp_path / "b.txt").write_bytes(content)
        r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.txt", "--out", tmp_path / "x.npy")
        assert r.returncode == IOERR and "b.txt" in r.stderr and needle in r.stderr, r.stderr
        assert not (tmp_path / "x.npy").exists()
    # the --problem mode has its own (geometric) hierarchy: --matrix options are refused, not ignored
    for extra in (("--near-null", "v.npy"), ("--block-size", "2"), ("--strength", "0.1"), ("--coarse-size", "50"),
                  ("--amg", "sa"), ("--coarse-solver", "boomeramg"), ("--boomeramg-cycle", "hypre"),
                  ("--boomeramg-relax", "l1-jacobi")):
        r = run(cli, "mg", "solve", "--problem", "poisson2d", "--n", "16", *extra)
        assert r.returncode == INVALID and extra[0] in r.stderr and "--matrix mode" in r.stderr, (extra, r.stderr)


def test_atol(cli, tmp_path):
    A = poisson2d(40, 40)
    b = np.full(A.shape[0], 1e-6)
    # ||b|| = 4e-5 (x0 = 0): an absolute tolerance above it stops at once with x = 0
    r, out = solve(cli, tmp_path, A, b, "--atol", 1e-4, "--coarse-size", 50)
    assert r.returncode == 0, r.stderr
    assert int(field(r.stdout, "iterations")) == 0
    assert np.all(np.load(out) == 0)
    r, out = solve(cli, tmp_path, A, b, "--atol", 1e-8, "--tol", 1e-12, "--coarse-size", 50, name="y.npy")
    assert r.returncode == 0, r.stderr
    x = np.load(out)
    assert 0 < int(field(r.stdout, "iterations")) and np.linalg.norm(b - A @ x) <= 1e-8 * 1.01
    r, out = solve(cli, tmp_path, A, b, "--atol", -1, name="z.npy")
    assert r.returncode == INVALID and "--atol" in r.stderr and not out.exists()


def test_null_space_constant(cli, tmp_path):
    n = 60
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 1.0
    t = t.tocsr()
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    b = np.random.default_rng(5).standard_normal(n * n) + 0.3
    r, out = solve(cli, tmp_path, A, b, "--null-space", "constant", "--tol", 1e-9)
    assert r.returncode == 0, r.stderr
    assert "constant null space" in r.stdout
    x = np.load(out)
    bp = b - b.mean()
    assert abs(x.mean()) < 1e-12 and np.linalg.norm(bp - A @ x) <= 1e-9 * np.linalg.norm(bp) * 1.01
    r, out = solve(cli, tmp_path, A, b, "--null-space", "linear", name="y.npy")
    assert r.returncode == INVALID and "--null-space" in r.stderr and not out.exists()
    r, out = solve(cli, tmp_path, A, b, "--amg", "none", "--null-space", "constant", name="z.npy")
    assert r.returncode == INVALID and "--null-space" in r.stderr


def test_geometric_any_size_cell_and_semi_coarsening(cli, tmp_path):
    # even unknown counts (60 x 30: no interval count divisible by 2 on the first level) coarsen now
    A = poisson2d(60, 30)
    b = np.cos(np.arange(A.shape[0]))
    r, out = solve(cli, tmp_path, A, b, "--amg", "geometric", "--shape", "60,30", "--tol", 1e-10)
    assert r.returncode == 0, r.stderr
    assert int(field(r.stdout, "levels").rstrip(",")) >= 5
    x = np.load(out)
    assert np.linalg.norm(x - spla.spsolve(A.tocsc(), b)) <= 1e-7 * np.linalg.norm(x)
    # a cell-centred pure-Neumann matrix (singular): --grid cell --null-space constant
    n = 40
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 1.0
    t = t.tocsr()
    N = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    bn = np.sin(np.arange(n * n))
    bn -= bn.mean()
    r, out = solve(cli, tmp_path, N, bn, "--amg", "geometric", "--shape", f"{n},{n}", "--grid", "cell",
                   "--null-space", "constant", "--tol", 1e-10, name="n.npy")
    assert r.returncode == 0, r.stderr
    assert "grid cell" in r.stdout and "constant null space" in r.stdout
    xn = np.load(out)
    assert abs(xn.mean()) <= 1e-12 * np.abs(xn).max()
    assert np.linalg.norm(N @ xn - bn) <= 1e-9 * np.linalg.norm(bn)
    # a stretched mesh (hy = 0.01 hx): semi-coarsening converges in few iterations, full does not
    m = 63
    tx = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    S = (sp.kron(sp.eye(m), tx) + 1e4 * sp.kron(tx, sp.eye(m))).tocsr()
    bs = np.ones(m * m)
    r, out = solve(cli, tmp_path, S, bs, "--amg", "geometric", "--shape", f"{m},{m}", "--semi-coarsening", "auto",
                   "--tol", 1e-8, name="s.npy")
    assert r.returncode == 0, r.stderr
    it_semi = int(field(r.stdout, "iterations"))
    r, _ = solve(cli, tmp_path, S, bs, "--amg", "geometric", "--shape", f"{m},{m}", "--tol", 1e-8, name="f.npy")
    it_full = int(field(r.stdout, "iterations"))
    assert it_semi <= 15 and it_full >= 3 * it_semi, (it_semi, it_full)
    # bad values are named by their flag; --grid / --semi-coarsening belong to --amg geometric
    r, _ = solve(cli, tmp_path, A, b, "--amg", "geometric", "--shape", "60,30", "--grid", "edge", name="e.npy")
    assert r.returncode == INVALID and "--grid" in r.stderr, r.stderr
    r, _ = solve(cli, tmp_path, A, b, "--amg", "geometric", "--shape", "60,30", "--semi-coarsening", "yes",
                 name="e.npy")
    assert r.returncode == INVALID and "--semi-coarsening" in r.stderr, r.stderr
    r, _ = solve(cli, tmp_path, A, b, "--grid", "cell", name="e.npy")
    assert r.returncode == INVALID and "--grid applies only to --amg geometric" in r.stderr, r.stderr
