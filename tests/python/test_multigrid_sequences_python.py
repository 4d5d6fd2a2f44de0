"""Sequences of solves with one elliptica.MultigridPlan (issue 13, time stepping): several
right-hand sides in one call (b of shape (n, k) gives x of shape (n, k)), Fischer's projection onto
previous solutions (elliptica.SolutionProjection), and the numeric re-setup plan.update(A) for new
values on the same pattern. The reference is scipy's sparse direct solve; an iterative solution's
relative error is bounded by kappa(A) times its relative residual (kappa of the 5-point
Laplacian times the coefficient contrast)."""
import numpy as np
import pytest

import elliptica

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")


def diffusion2d(n, scale=1.0):
    """-div(k grad u) on n x n interior points of [0,1]^2 (harmonic face means), k = scale in
    [0.25, 0.5]^2 and 1 elsewhere: the pattern does not depend on scale."""
    h = 1.0 / (n + 1)
    xs = (np.arange(n) + 1) * h
    X, Y = np.meshgrid(xs, xs, indexing="xy")
    k = np.where((X >= 0.25) & (X <= 0.5) & (Y >= 0.25) & (Y <= 0.5), scale, 1.0)
    kp = np.pad(k, 1, mode="edge")
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals, diag = [], [], [], np.zeros((n, n))
    for dy, dx in ((0, 1), (0, -1), (1, 0), (-1, 0)):
        kn = kp[1 + dy:1 + dy + n, 1 + dx:1 + dx + n]
        w = 2 * k * kn / (k + kn) / h**2
        diag += w
        ii = np.arange(n)[:, None] + dy
        jj = np.arange(n)[None, :] + dx
        ok = (ii >= 0) & (ii < n) & (jj >= 0) & (jj < n)
        ok = np.broadcast_to(ok, (n, n))
        src = idx[ok]
        dst = (np.broadcast_to(ii, (n, n)) * n + np.broadcast_to(jj, (n, n)))[ok]
        rows.append(src), cols.append(dst), vals.append(-w[ok])
    rows.append(idx.ravel()), cols.append(idx.ravel()), vals.append(diag.ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n * n, n * n))


def kappa(n):
    h = np.pi / (2 * (n + 1))
    return (np.cos(h) / np.sin(h)) ** 2


def source(n, xc):
    h = 1.0 / (n + 1)
    xs = (np.arange(n) + 1) * h
    X, Y = np.meshgrid(xs, xs, indexing="xy")
    return np.exp(-((X - xc) ** 2 + (Y - 0.5) ** 2) / 0.01).ravel()


N = 63


@pytest.fixture(scope="module")
def A():
    return diffusion2d(N)


@pytest.mark.parametrize("method", ["sa", "geometric"])
def test_block_of_right_hand_sides(A, method):
    kw = {"shape": (N, N)} if method == "geometric" else {}
    plan = elliptica.MultigridPlan.from_matrix(A, method=method, **kw)
    B = np.stack([source(N, 0.2), source(N, 0.5), np.random.default_rng(3).standard_normal(N * N)], axis=1)
    X, infos = plan.solve(B, tol=1e-10)
    assert X.shape == B.shape and isinstance(infos, list) and len(infos) == 3
    R = spla.spsolve(A.tocsc(), B)
    for c in range(3):
        assert infos[c].converged
        assert np.linalg.norm(X[:, c] - R[:, c]) <= kappa(N) * 1e-10 * np.linalg.norm(R[:, c])
        x1, i1 = plan.solve(B[:, c], tol=1e-10)  # each column as a single solve
        assert x1.shape == (N * N,)
        np.testing.assert_array_equal(x1, X[:, c])
        assert i1.iterations == infos[c].iterations
    x, infos = plan.solve(B[:, :1], tol=1e-10)  # (n, 1) stays (n, 1)
    assert x.shape == (N * N, 1) and len(infos) == 1
    with pytest.raises(elliptica.InvalidArgumentError, match=r"x0 must have the shape of b"):
        plan.solve(B, x0=np.zeros((N * N, 2)))
    with pytest.raises(elliptica.InvalidArgumentError, match="NaN"):
        plan.solve(np.full((N * N, 2), np.nan))


def test_block_with_constant_null_space_and_atol():
    n = 40
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 1.0
    t = t.tocsr()
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    plan = elliptica.MultigridPlan.from_matrix(A, null_space="constant")
    B = np.stack([np.sin(0.1 * np.arange(n * n)) + 3.0, np.zeros(n * n)], axis=1)
    X, infos = plan.solve(B, tol=1e-9, atol=1e-12)
    assert [i.converged for i in infos] == [True, True] and infos[1].iterations == 0
    bc = B[:, 0] - B[:, 0].mean()
    assert abs(X[:, 0].mean()) < 1e-12 and np.all(X[:, 1] == 0)
    assert np.linalg.norm(bc - A @ X[:, 0]) <= 1e-9 * np.linalg.norm(bc) * (1 + 1e-6)


@pytest.mark.parametrize("method", ["sa", "geometric"])
def test_projection_saves_iterations_with_the_same_accuracy(A, method):
    kw = {"shape": (N, N)} if method == "geometric" else {}
    plan = elliptica.MultigridPlan.from_matrix(A, method=method, **kw)
    proj = elliptica.SolutionProjection(plan, max_vectors=6)
    assert proj.basis_size == 0
    lu = spla.splu(A.tocsc())
    plain = projected = 0
    for t in range(14):
        b = source(N, 0.3 + 0.005 * t)
        x, info = plan.solve(b, tol=1e-8)
        y, pinfo = proj.solve(b, tol=1e-8)
        assert info.converged and pinfo.converged
        assert pinfo.restarted == (t in (6, 12))
        assert pinfo.basis_after == (1 if pinfo.restarted else min(t % 6 + 1, 6))
        assert pinfo.residual_history[0] == pytest.approx(pinfo.projected_residual, rel=1e-12)
        ref = lu.solve(b)
        for z in (x, y):
            assert np.linalg.norm(b - A @ z) <= 1e-8 * np.linalg.norm(b) * (1 + 1e-6)
            assert np.linalg.norm(z - ref) <= kappa(N) * 1e-8 * np.linalg.norm(ref)
        if t >= 2:
            plain += info.iterations
            projected += pinfo.iterations
    assert projected * 10 <= plain * 7, (projected, plain)
    V = proj.basis
    assert V.shape == (N * N, proj.basis_size)
    np.testing.assert_allclose(V.T @ (A @ V), np.eye(V.shape[1]), atol=1e-8)
    proj.clear()
    assert proj.basis_size == 0


def test_projection_bad_input(A):
    plan = elliptica.MultigridPlan.from_matrix(A)
    with pytest.raises(elliptica.InvalidArgumentError, match="max_vectors"):
        elliptica.SolutionProjection(plan, max_vectors=0)
    with pytest.raises(elliptica.ResourceError, match="max_vectors"):
        elliptica.SolutionProjection(plan, max_vectors=2**62)
    with pytest.raises(elliptica.InvalidArgumentError, match="drop_tolerance"):
        elliptica.SolutionProjection(plan, drop_tolerance=1.5)
    with pytest.raises(elliptica.InvalidArgumentError, match="MultigridPlan"):
        elliptica.SolutionProjection(A)
    d = elliptica.multigrid_defaults()
    assert d["projection_max_vectors"] == 8 and d["projection_drop_tolerance"] > 0


@pytest.mark.parametrize("method", ["sa", "geometric"])
def test_update_matches_a_fresh_plan(method):
    kw = {"shape": (N, N)} if method == "geometric" else {}
    A0, A1 = diffusion2d(N, 1.0), diffusion2d(N, 100.0)
    plan = elliptica.MultigridPlan.from_matrix(A0, method=method, **kw)
    proj = elliptica.SolutionProjection(plan)
    proj.solve(source(N, 0.4))
    assert proj.basis_size == 1
    fresh = elliptica.MultigridPlan.from_matrix(A1, method=method, **kw)
    plan.update(A1)
    assert plan.update_count == 1 and (plan.A != A1).nnz == 0
    b = source(N, 0.4)
    x, info = plan.solve(b, tol=1e-8)
    xf, infof = fresh.solve(b, tol=1e-8)
    assert info.converged and info.iterations <= infof.iterations + 2
    ref = spla.spsolve(A1.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 100 * kappa(N) * 1e-8 * np.linalg.norm(ref)
    # the projection's basis belonged to A0: emptied, then rebuilt with A1
    y, pinfo = proj.solve(b, tol=1e-8)
    assert pinfo.basis_before == 0 and pinfo.basis_after == 1
    assert np.linalg.norm(y - ref) <= 100 * kappa(N) * 1e-8 * np.linalg.norm(ref)


def test_update_refuses_another_pattern_or_size(A):
    plan = elliptica.MultigridPlan.from_matrix(A)
    B = A.tolil()
    B[0, 40] = B[40, 0] = -0.1
    with pytest.raises(elliptica.InvalidArgumentError, match="different sparsity pattern"):
        plan.update(B.tocsr())
    with pytest.raises(elliptica.InvalidArgumentError, match="new plan"):
        plan.update(diffusion2d(N - 2))
    assert plan.update_count == 0
    b = source(N, 0.5)
    x, info = plan.solve(b, tol=1e-8)  # unchanged
    assert info.converged and np.linalg.norm(b - A @ x) <= 1e-8 * np.linalg.norm(b) * (1 + 1e-6)


def test_update_keeping_the_prolongators():
    A0, A1 = diffusion2d(N, 1.0), diffusion2d(N, 100.0)
    plan = elliptica.MultigridPlan.from_matrix(A0)
    assert elliptica.multigrid_defaults()["keep_prolongators"] is False
    plan.update(A1, keep_prolongators=True)
    b = source(N, 0.4)
    x, info = plan.solve(b, tol=1e-8)
    assert info.converged
    ref = spla.spsolve(A1.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 100 * kappa(N) * 1e-8 * np.linalg.norm(ref)
    with pytest.raises(elliptica.InvalidArgumentError, match="keep_prolongators"):
        plan.update(A1, keep_prolongators="yes")
