"""elliptica.MultigridPlan.from_matrix (issue 13): smoothed aggregation over scipy matrices,
rigid-body modes, the geometric hierarchy on a given shape, and the refusals. Solutions are checked
against scipy's sparse direct solve."""
import numpy as np
import pytest

import elliptica

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
from sparse_problems import elasticity2d, neumann2d, poisson2d  # noqa: E402


def test_sa_poisson_any_size():
    A = poisson2d(137, 101)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    plan = elliptica.MultigridPlan.from_matrix(A)
    assert plan.method == "sa" and plan.levels >= 3 and plan.operator_complexity < 1.6
    x, info = plan.solve(b, tol=1e-10)
    assert info.converged and info.iterations <= 20
    assert np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    xref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - xref) <= 1e-6 * np.linalg.norm(xref)
    # h-independence: a 3x finer grid needs at most a few more iterations
    A3 = poisson2d(411, 303)
    b3 = np.ones(A3.shape[0])
    _, info3 = elliptica.MultigridPlan.from_matrix(A3).solve(b3, tol=1e-10)
    assert info3.converged and info3.iterations <= info.iterations + 3, (info.iterations, info3.iterations)


def test_right_hand_sides_of_extreme_size():
    # ||b|| = 1e-170 used to "converge" at x = 0 (squared norms underflowed), 1e160 to overflow
    A = poisson2d(40, 37)
    b = np.random.default_rng(8).standard_normal(A.shape[0])
    xref = spla.spsolve(A.tocsc(), b)
    plan = elliptica.MultigridPlan.from_matrix(A)
    for s in (1e-170, 1e160):
        x, info = plan.solve(s * b, tol=1e-10)
        assert info.converged and np.linalg.norm(x / s - xref) <= 1e-7 * np.linalg.norm(xref), s
        x, info = elliptica.chebyshev_cg(A, s * b, tol=1e-10)
        assert info.converged and np.linalg.norm(x / s - xref) <= 1e-7 * np.linalg.norm(xref), s
    proj = elliptica.SolutionProjection(plan)
    x, info = proj.solve(1e300 * b, tol=1e-10)
    assert info.converged and np.linalg.norm(x / 1e300 - xref) <= 1e-7 * np.linalg.norm(xref)


def test_classical_strength_measure():
    A = poisson2d(90, 77)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    d = elliptica.multigrid_defaults()
    assert d["strength_measure"] == "symmetric" and d["strength_classical"] == 0.5
    x, info = elliptica.MultigridPlan.from_matrix(A, strength_measure="classical").solve(b, tol=1e-10)
    assert info.converged and np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    with pytest.raises(elliptica.InvalidArgumentError, match="strength_measure"):
        elliptica.MultigridPlan.from_matrix(A, strength_measure="evolution")


def test_sa_elasticity_rigid_body_modes():
    A, coords = elasticity2d(30)
    B = elliptica.rigid_body_modes(coords)
    assert B.shape == (A.shape[0], 3)
    # rotation about the centroid: u = (-y, x) relative to it
    c = coords - coords.mean(axis=0)
    assert np.allclose(B[0::2, 2], -c[:, 1]) and np.allclose(B[1::2, 2], c[:, 0])
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    x1, i1 = elliptica.MultigridPlan.from_matrix(A, block_size=2, near_null=B).solve(b, tol=1e-8)
    x2, i2 = elliptica.MultigridPlan.from_matrix(A, block_size=2).solve(b, tol=1e-8)
    assert i1.converged and i2.converged
    assert i1.iterations < i2.iterations, (i1.iterations, i2.iterations)
    assert np.linalg.norm(A @ x1 - b) <= 1e-8 * np.linalg.norm(b) * 1.01


def test_sa_pure_neumann():
    A = neumann2d(90)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    b -= b.mean()  # consistent: orthogonal to the constants
    x, info = elliptica.MultigridPlan.from_matrix(A).solve(b, tol=1e-8)
    assert info.converged and info.iterations <= 25
    assert np.linalg.norm(A @ x - b) <= 1e-8 * np.linalg.norm(b) * 1.01


def test_geometric_from_matrix():
    A = poisson2d(63, 63)
    plan = elliptica.MultigridPlan.from_matrix(A, method="geometric", shape=(63, 63))
    assert plan.method == "geometric" and plan.levels >= 5
    x, info = plan.solve(np.ones(A.shape[0]), tol=1e-9)
    assert info.converged
    with pytest.raises(elliptica.InvalidArgumentError, match="one-level"):
        elliptica.MultigridPlan.from_matrix(poisson2d(7, 7), method="geometric", shape=(7, 7), coarsening=8)
    assert elliptica.MultigridPlan.from_matrix(poisson2d(60, 60), method="geometric", shape=(60, 60)).levels >= 5


def test_refusals():
    E = elliptica.InvalidArgumentError
    with pytest.raises(E, match="one level"):
        elliptica.MultigridPlan.from_matrix(poisson2d(10, 10))
    A = poisson2d(30, 30)
    with pytest.raises(E, match="near_null must have shape"):
        elliptica.MultigridPlan.from_matrix(A, near_null=np.ones((899, 1)))
    with pytest.raises(E, match="NaN"):
        elliptica.MultigridPlan.from_matrix(A, near_null=np.full((900, 1), np.nan))
    with pytest.raises(E, match=r"^strength must be in \[0, 1\), got 1.5$"):
        elliptica.MultigridPlan.from_matrix(A, strength=1.5)
    with pytest.raises(E, match=r"^prolongator_omega must be in \[0, 2\)"):
        elliptica.MultigridPlan.from_matrix(A, prolongator_omega=-1)
    with pytest.raises(E, match=r"near-null vector 0 \(0-based column\) is zero"):
        elliptica.MultigridPlan.from_matrix(A, near_null=np.zeros(900))
    with pytest.raises(E, match="linear combination"):
        elliptica.MultigridPlan.from_matrix(A, near_null=np.ones((900, 2)))
    # keywords of another method are refused, not ignored
    for kw, name in ((dict(grid="cell"), "grid"), (dict(semi_coarsening="auto"), "semi_coarsening"),
                     (dict(coarsening=8), "coarsening")):
        with pytest.raises(E, match=f"{name} applies only to method='geometric'"):
            elliptica.MultigridPlan.from_matrix(A, **kw)
    with pytest.raises(E, match="strength and strength_measure apply only to method='sa'"):
        elliptica.MultigridPlan.from_matrix(A, method="geometric", shape=(30, 30), strength_measure="classical")
    with pytest.raises(E, match="divisible"):
        elliptica.MultigridPlan.from_matrix(A, block_size=7)
    with pytest.raises(E, match="shape applies only"):
        elliptica.MultigridPlan.from_matrix(A, shape=(30, 30))
    with pytest.raises(E, match="needs shape"):
        elliptica.MultigridPlan.from_matrix(A, method="geometric")
    with pytest.raises(E, match="method"):
        elliptica.MultigridPlan.from_matrix(A, method="amgx")
    with pytest.raises(E, match="no coarser level"):
        elliptica.MultigridPlan.from_matrix(sp.identity(1000, format="csr") * 2.0)
    with pytest.raises(E, match="coords must have shape"):
        elliptica.rigid_body_modes(np.ones((5, 4)))


def test_defaults_come_from_cpp():
    d = elliptica.multigrid_defaults()
    for key in ("strength", "block_size", "prolongator_omega", "coarse_size", "amg_max_levels"):
        assert key in d
    assert d["coarse_size"] >= 1 and d["amg_max_levels"] >= 2


def test_atol_warm_start():
    A = poisson2d(120, 110)
    u = np.random.default_rng(3).standard_normal(A.shape[0])
    b = A @ u
    x0 = u.copy()
    x0[::7] += 1e-9
    r0 = np.linalg.norm(b - A @ x0)
    plan = elliptica.MultigridPlan.from_matrix(A)
    for krylov in ("pcg", "gmres", "fgmres", "none"):
        x, info = plan.solve(b, x0, tol=1e-8, atol=2 * r0, krylov=krylov)
        assert info.converged and info.iterations == 0, krylov
        assert np.array_equal(x, x0)
        x, info = plan.solve(b, x0, tol=1e-12, atol=0.5 * r0, krylov=krylov)
        assert info.converged and info.iterations >= 1, krylov
        assert np.linalg.norm(b - A @ x) <= 0.5 * r0 * 1.01
    with pytest.raises(elliptica.InvalidArgumentError, match="atol"):
        plan.solve(b, atol=-1.0)
    assert elliptica.multigrid_defaults()["atol"] == 0.0


def test_constant_null_space():
    A = neumann2d(70)
    b = np.random.default_rng(4).standard_normal(A.shape[0]) + 0.3  # inconsistent
    x, info = elliptica.MultigridPlan.from_matrix(A, null_space="constant").solve(b, tol=1e-8)
    assert info.converged and abs(x.mean()) < 1e-12
    bp = b - b.mean()
    assert np.linalg.norm(bp - A @ x) <= 1e-8 * np.linalg.norm(bp) * 1.01
    with pytest.raises(elliptica.InvalidArgumentError, match="null_space"):
        elliptica.MultigridPlan.from_matrix(A, null_space="linear")
