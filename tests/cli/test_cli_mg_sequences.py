"""`elliptica mg solve --matrix --rhs B.npy` with an (n, k) array of k right-hand sides (issue 13,
time stepping): one set-up, the columns solved one after the other, the solution written with
the shape of --rhs and the summary listing one value per column; every hierarchy (sa, geometric,
none) and the constant null space with --atol. Solutions are checked against scipy's sparse
direct solve (the bound kappa(A) x tol on the relative error, kappa of the 5-point Laplacian).
"""
import re

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
sio = pytest.importorskip("scipy.io")
from sparse_problems import poisson2d  # noqa: E402
from mg_cli import run  # noqa: E402

INVALID, NOT_CONVERGED = 2, 5


def values(out, name):
    m = re.search(rf"^{re.escape(name)}:\s*(.*)$", out, re.M)
    assert m, f"no '{name}:' line in output:\n{out}"
    return m.group(1).split()


def kappa(n):
    h = np.pi / (2 * (n + 1))
    return (np.cos(h) / np.sin(h)) ** 2


@pytest.mark.parametrize("amg", ["sa", "geometric", "none"])
def test_k_columns_solved_and_written_as_n_by_k(cli, tmp_path, amg):
    n, k, tol = 63, 3, 1e-10
    A = poisson2d(n)
    sio.mmwrite(tmp_path / "A.mtx", A)
    B = np.random.default_rng(5).standard_normal((n * n, k))
    np.save(tmp_path / "B.npy", B)
    extra = ["--shape", f"{n},{n}"] if amg == "geometric" else []
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy",
            "--amg", amg, "--tol", tol, "--quiet", *extra)
    assert r.returncode == 0, r.stderr
    assert f"right-hand sides: {k}" in r.stdout
    assert values(r.stdout, "converged") == ["yes"] * k
    its = [int(v) for v in values(r.stdout, "iterations")]
    assert len(its) == k and all(i > 0 for i in its)
    res = [float(v) for v in values(r.stdout, "final relative residual")]
    assert len(res) == k and max(res) <= tol
    X = np.load(tmp_path / "X.npy")
    assert X.shape == (n * n, k)
    R = spla.spsolve(A.tocsc(), B)
    for c in range(k):
        assert np.linalg.norm(X[:, c] - R[:, c]) <= kappa(n) * tol * np.linalg.norm(R[:, c])
    # each column as a single solve gives the same result ((n, 1) in, (n, 1) out)
    np.save(tmp_path / "b1.npy", B[:, 1:2])
    r1 = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b1.npy", "--out",
             tmp_path / "x1.npy", "--amg", amg, "--tol", tol, "--quiet", *extra)
    assert r1.returncode == 0, r1.stderr
    x1 = np.load(tmp_path / "x1.npy")
    assert x1.shape == (n * n, 1)
    assert values(r1.stdout, "iterations") == [str(its[1])]
    np.testing.assert_array_equal(x1[:, 0], X[:, 1])


def test_constant_null_space_and_atol_per_column(cli, tmp_path):
    n = 40
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 1.0  # Neumann ends: the graph Laplacian of the grid
    t = t.tocsr()
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    sio.mmwrite(tmp_path / "A.mtx", A)
    i = np.arange(n * n)
    B = np.stack([np.sin(0.1 * i) + 3.0, np.zeros(n * n)], axis=1)  # inconsistent; zero
    np.save(tmp_path / "B.npy", B)
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy",
            "--null-space", "constant", "--tol", 1e-9, "--atol", 1e-12, "--quiet")
    assert r.returncode == 0, r.stderr
    assert values(r.stdout, "converged") == ["yes", "yes"]
    assert values(r.stdout, "iterations")[1] == "0"  # zero rhs: below atol at once
    X = np.load(tmp_path / "X.npy")
    assert X.shape == (n * n, 2)
    assert abs(X[:, 0].mean()) < 1e-12 and np.all(X[:, 1] == 0)
    bc = B[:, 0] - B[:, 0].mean()
    assert np.linalg.norm(bc - A @ X[:, 0]) <= 1e-9 * np.linalg.norm(bc) * (1 + 1e-6)


def test_a_column_not_converged_names_it_and_writes_nothing(cli, tmp_path):
    n = 63
    A = poisson2d(n)
    sio.mmwrite(tmp_path / "A.mtx", A)
    B = np.stack([np.zeros(n * n), np.random.default_rng(1).standard_normal(n * n)], axis=1)
    np.save(tmp_path / "B.npy", B)
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy",
            "--tol", 1e-12, "--max-iter", 1, "--quiet")
    assert r.returncode == NOT_CONVERGED, (r.returncode, r.stderr)
    assert "column 2 of 2" in r.stderr and "nothing was written" in r.stderr
    assert not (tmp_path / "X.npy").exists()
    # several columns fail: every one is named, with the residual it reached
    rng = np.random.default_rng(2)
    B = np.stack([rng.standard_normal(n * n), np.zeros(n * n), rng.standard_normal(n * n)], axis=1)
    np.save(tmp_path / "B.npy", B)
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy",
            "--tol", 1e-12, "--max-iter", 1, "--quiet")
    assert r.returncode == NOT_CONVERGED, (r.returncode, r.stderr)
    assert "columns 1, 3 of 3" in r.stderr, r.stderr
    assert re.search(r"reached \d\.\d+e[-+]\d+, \d\.\d+e[-+]\d+\)", r.stderr), r.stderr
    assert not (tmp_path / "X.npy").exists()


def test_rows_of_the_array_must_match(cli, tmp_path):
    A = poisson2d(20)
    sio.mmwrite(tmp_path / "A.mtx", A)
    np.save(tmp_path / "B.npy", np.ones((399, 2)))
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy")
    assert r.returncode == INVALID and "length mismatch" in r.stderr and "(n, k)" in r.stderr, r.stderr


@pytest.mark.parametrize("amg", ["sa", "geometric"])
def test_projection_over_the_columns_saves_iterations(cli, tmp_path, amg):
    n, k, tol = 63, 10, 1e-8
    A = poisson2d(n)
    sio.mmwrite(tmp_path / "A.mtx", A)
    h = 1.0 / (n + 1)
    xs = (np.arange(n) + 1) * h
    X, Y = np.meshgrid(xs, xs)
    B = np.stack([np.exp(-((X - 0.3 - 0.005 * t) ** 2 + (Y - 0.5) ** 2) / 0.01).ravel() for t in range(k)], axis=1)
    np.save(tmp_path / "B.npy", B)
    extra = ["--shape", f"{n},{n}"] if amg == "geometric" else []
    base = ["mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--amg", amg, "--tol", tol,
            "--quiet", *extra]
    r0 = run(cli, *base, "--out", tmp_path / "X0.npy")
    r1 = run(cli, *base, "--out", tmp_path / "X1.npy", "--projection", 6)
    assert r0.returncode == 0 and r1.returncode == 0, (r0.stderr, r1.stderr)
    it0 = [int(v) for v in values(r0.stdout, "iterations")]
    it1 = [int(v) for v in values(r1.stdout, "iterations")]
    pr = [float(v) for v in values(r1.stdout, "projected residual")]
    assert pr[0] == 1.0 and max(pr[2:6]) < 1e-2  # the projected guesses leave small residuals
    assert sum(it1[2:]) * 10 <= sum(it0[2:]) * 7, (it0, it1)
    R = spla.spsolve(A.tocsc(), B)
    for f in ("X0.npy", "X1.npy"):
        Xs = np.load(tmp_path / f)
        for c in range(k):
            assert np.linalg.norm(B[:, c] - A @ Xs[:, c]) <= tol * np.linalg.norm(B[:, c]) * (1 + 1e-6)
            assert np.linalg.norm(Xs[:, c] - R[:, c]) <= kappa(n) * tol * np.linalg.norm(R[:, c])


@pytest.mark.parametrize("extra, message", [
    (["--amg", "none", "--projection", "4"], "--projection applies with a hierarchy"),
    (["--projection", "0"], "--projection: need 1 <= L"),
])
def test_projection_refusals(cli, tmp_path, extra, message):
    A = poisson2d(20)
    sio.mmwrite(tmp_path / "A.mtx", A)
    np.save(tmp_path / "B.npy", np.ones((400, 2)))
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "B.npy", "--out", tmp_path / "X.npy",
            *extra)
    assert r.returncode == INVALID and message in r.stderr, r.stderr
    assert not (tmp_path / "X.npy").exists()


def test_projection_belongs_to_the_matrix_mode(cli):
    r = run(cli, "mg", "solve", "--problem", "poisson2d", "--n", 16, "--projection", 4)
    assert r.returncode == INVALID and "--projection" in r.stderr, r.stderr
