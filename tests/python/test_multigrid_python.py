"""Python interface of the multigrid / Krylov modules (elliptica.poisson_fd, MultigridPlan,
chebyshev_cg, opt4_betas)."""

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")

import elliptica as el


def lap1d(n, length):
    """1D Dirichlet -d2/dx2 on n intervals of [0, length]: (n-1) x (n-1)."""
    h = length / n
    m = n - 1
    return sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1]) / h**2


def kron_laplacian(n, lengths):
    """Sum over axes of I x ... x T_d x ... x I, x fastest (so x is the LAST kron factor)."""
    dim = len(lengths)
    m = n - 1
    eye = sp.identity(m)
    A = None
    for d in range(dim):
        factors = [eye] * dim
        factors[dim - 1 - d] = lap1d(n, lengths[d])
        term = factors[0]
        for f in factors[1:]:
            term = sp.kron(term, f)
        A = term if A is None else A + term
    return sp.csr_matrix(A)


def rel_residual(A, x, b):
    return np.linalg.norm(b - A @ x) / np.linalg.norm(b)


@pytest.mark.parametrize("n,lengths", [(8, (1.0, 1.0)), (16, (8.0, 1.0)), (6, (1.0, 2.0, 3.0)), (10, (1.0,))])
def test_poisson_fd_matches_kron_assembly(n, lengths):
    A = el.poisson_fd(n, lengths)
    ref = kron_laplacian(n, lengths)
    assert sp.issparse(A) and A.format == "csr" and A.dtype == np.float64
    assert A.shape == ((n - 1) ** len(lengths),) * 2
    assert abs(A - ref).max() <= 1e-12 * abs(ref).max()


def test_poisson_fd_default_lengths_and_errors():
    assert abs(el.poisson_fd(8) - kron_laplacian(8, (1.0, 1.0))).max() < 1e-9
    with pytest.raises(el.InvalidArgumentError, match="n"):
        el.poisson_fd(1)
    with pytest.raises(el.InvalidArgumentError, match="positive"):
        el.poisson_fd(8, (1.0, -1.0))
    with pytest.raises(el.InvalidArgumentError, match="dim"):
        el.poisson_fd(8, (1.0, 1.0, 1.0, 1.0))
    with pytest.raises(el.InvalidArgumentError, match="one length per axis"):
        el.poisson_fd(8, 2.0)
    assert abs(el.poisson_fd(6, 2.0, dim=3) - kron_laplacian(6, (2.0, 2.0, 2.0))).max() < 1e-9


@pytest.mark.parametrize("coarsening", [2, 8])
@pytest.mark.parametrize("smoother", ["simple", "cheb1", "cheb1opt", "cheb4", "opt4"])
def test_multigrid_solve_converges_2d(smoother, coarsening):
    n = 64
    A, u, b = el.seed_problem_2d(n, 1.0)
    plan = el.MultigridPlan(A, shape=(n - 1, n - 1), coarsening=coarsening, smoother=smoother, order=(2, 2))
    assert plan.levels == (6 if coarsening == 2 else 2)
    assert len(plan.lambda_max) == plan.levels - 1
    x, info = plan.solve(b, tol=1e-6, maxiter=300)
    assert info["converged"], (smoother, coarsening, info["iterations"], info["rho"])
    hist = info["residual_history"]
    assert isinstance(hist, np.ndarray) and hist[0] == 1.0 and len(hist) == info["iterations"] + 1
    assert rel_residual(A, x, b) <= 1.0001e-6
    assert 0 < info["rho"] < 1
    assert info["matvecs"] >= info["iterations"] * 5  # a (2,2) cycle costs 5 fine-grid matvecs


def test_one_sided_cycle_and_krylov_variants():
    n = 64
    A, u, b = el.seed_problem_2d(n, 8.0)
    one_sided = el.MultigridPlan(problem="poisson2d", n=n, lx=8.0, smoother="opt4", order=(4, 0))
    assert abs(one_sided.A - A).max() == 0
    for krylov in ("none", "gmres", "fgmres"):
        x, info = one_sided.solve(b, krylov=krylov, tol=1e-8)
        assert info["converged"], krylov
        assert rel_residual(A, x, b) <= 1.0001e-8
        # the discrete solution is u itself; A's condition number ~ (n/pi)^2 (Lx/Ly)^2 bounds the error
        assert np.linalg.norm(x - u) / np.linalg.norm(u) < 1e-8 * 1e5
    with pytest.raises(el.InvalidArgumentError, match="symmetric"):
        one_sided.solve(b, krylov="pcg")
    sym = el.MultigridPlan(problem="poisson2d", n=n, lx=8.0, smoother="cheb4", order=(2, 2))
    x, info = sym.solve(b, krylov="pcg", tol=1e-8)
    assert info["converged"] and rel_residual(A, x, b) <= 1.0001e-8


def test_cycle_reduces_error():
    n = 32
    A, u, b = el.seed_problem_2d(n, 1.0)
    plan = el.MultigridPlan(A, shape=(n - 1, n - 1), order=(2, 2))
    x = np.zeros_like(b)
    x1 = plan.cycle(b, x)
    assert np.all(x == 0)  # input untouched
    x2 = plan.cycle(b, x1)
    e0, e1, e2 = (np.linalg.norm(v - u) for v in (x, x1, x2))
    assert e1 < 0.3 * e0 and e2 < 0.3 * e1


def test_gmres_preconditioned_beats_unpreconditioned_cg():
    n = 64
    A, u, b = el.seed_problem_2d(n, 1.0)
    plan = el.MultigridPlan(A, shape=(n - 1, n - 1), smoother="opt4", order=(2, 2))
    _, info = plan.solve(b, krylov="gmres", restart=20, tol=1e-6)
    assert info["converged"]
    cg_iters = []
    x_cg, flag = spla.cg(A, b, rtol=1e-6, maxiter=5000, callback=lambda xk: cg_iters.append(1))
    assert flag == 0
    assert info["iterations"] < len(cg_iters) / 5, (info["iterations"], len(cg_iters))

    # the cycle as a scipy LinearOperator, in scipy's own solvers
    M = plan.as_linear_operator()
    assert M.shape == A.shape
    pcg_iters = []
    x, flag = spla.cg(A, b, rtol=1e-8, M=M, maxiter=200, callback=lambda xk: pcg_iters.append(1))
    assert flag == 0 and rel_residual(A, x, b) <= 1.0001e-8
    assert len(pcg_iters) < len(cg_iters) / 10


def test_operator_complexity_seed_values():
    n = 128
    A = el.poisson_fd(n, (1.0, 1.0))
    p2 = el.MultigridPlan(A, shape=(n - 1, n - 1), coarsening=2, lambda_max=2.0, order=(1, 1))
    p8 = el.MultigridPlan(A, shape=(n - 1, n - 1), coarsening=8, lambda_max=2.0, order=(1, 1))
    assert p2.levels == 7 and p8.levels == 3
    assert round(p2.operator_complexity, 3) == 1.568
    assert round(p8.operator_complexity, 3) == 1.023
    assert p2.level_shapes[0] == (127, 127) and p2.level_shapes[-1] == (1, 1)
    assert p2.lambda_max == [2.0] * 6


def test_three_d_problem():
    n = 16
    plan = el.MultigridPlan(problem="poisson3d", n=n, lx=2.0, smoother="opt4", order=(2, 2))
    assert plan.levels == 4
    rng = np.random.default_rng(1)
    b = rng.standard_normal(plan.size)
    x, info = plan.solve(b, tol=1e-8, krylov="gmres")
    assert info["converged"] and rel_residual(plan.A, x, b) <= 1.0001e-8


@pytest.mark.parametrize("smoother", ["cheb4", "opt4", "cheb1"])
def test_chebyshev_cg_random_spd(smoother):
    rng = np.random.default_rng(7)
    n = 40
    L = el.poisson_fd(n, (1.0, 3.0))
    m = L.shape[0]
    scale = sp.diags(rng.uniform(0.5, 2.0, m))
    A = (scale @ L @ scale + sp.diags(rng.uniform(0.0, 100.0, m))).tocoo()  # SPD, any sparse format
    b = rng.standard_normal(m)
    x, info = el.chebyshev_cg(A, b, smoother=smoother, order=4, tol=1e-10)
    ref = spla.spsolve(A.tocsc(), b)
    assert info["converged"] and info["lambda_max"] > 0
    assert rel_residual(A, x, b) <= 1.0001e-10
    # error <= cond(A) * residual; cond(A) < 1e5 here
    assert np.linalg.norm(x - ref) / np.linalg.norm(ref) < 1e-5
    _, plain = el.chebyshev_cg(A, b, smoother=smoother, order=1, tol=1e-10)
    x2, info2 = el.chebyshev_cg(A, b, smoother=smoother, tol=1e-10, x0=rng.standard_normal(m))
    assert info2["converged"] and np.linalg.norm(x2 - ref) / np.linalg.norm(ref) < 1e-5
    assert info["iterations"] < plain["iterations"]


def test_opt4_betas():
    b1 = el.opt4_betas(1)
    assert isinstance(b1, np.ndarray) and b1.shape == (1,)
    assert b1[0] == pytest.approx(1.125, abs=1e-12)
    np.testing.assert_allclose(el.opt4_betas(2), [1.02387287570313, 1.26408905371085], rtol=0, atol=1e-12)
    assert el.opt4_betas(20).shape == (20,)
    with pytest.raises(el.InvalidArgumentError, match="k"):
        el.opt4_betas(0)


def test_bad_inputs():
    n = 16
    A = el.poisson_fd(n)
    shape = (n - 1, n - 1)
    b = np.ones(A.shape[0])
    with pytest.raises(el.InvalidArgumentError, match="square"):
        el.chebyshev_cg(A[:, :-1], b)
    with pytest.raises(el.InvalidArgumentError, match="shape"):
        el.chebyshev_cg(A, b[:-1])
    bad = A.copy()
    bad.data[3] = np.nan
    with pytest.raises(el.InvalidArgumentError, match="NaN"):
        el.chebyshev_cg(bad, b)
    with pytest.raises(el.InvalidArgumentError, match="NaN"):
        el.MultigridPlan(bad, shape=shape)
    b_nan = b.copy()
    b_nan[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        el.MultigridPlan(A, shape=shape).solve(b_nan)
    with pytest.raises(el.InvalidArgumentError, match="shape.*required"):
        el.MultigridPlan(A)
    with pytest.raises(el.InvalidArgumentError, match="unknowns"):
        el.MultigridPlan(A, shape=(n - 1, n))
    with pytest.raises(el.InvalidArgumentError, match="smoother"):
        el.MultigridPlan(A, shape=shape, smoother="cheb9")
    with pytest.raises(el.InvalidArgumentError, match="coarsening"):
        el.MultigridPlan(A, shape=shape, coarsening=3)
    with pytest.raises(el.InvalidArgumentError, match="order"):
        el.MultigridPlan(A, shape=shape, order=(0, 0))
    with pytest.raises(el.InvalidArgumentError, match="krylov"):
        el.MultigridPlan(A, shape=shape).solve(b, krylov="bicgstab")
    with pytest.raises(el.InvalidArgumentError, match="exactly one"):
        el.MultigridPlan()
    with pytest.raises(el.InvalidArgumentError, match="symmetric"):
        el.chebyshev_cg(A, b, base="ras")
    with pytest.raises(el.InvalidArgumentError, match="scipy.sparse"):
        el.chebyshev_cg([[1.0]], [1.0])
    with pytest.raises(el.InvalidArgumentError, match="diagonal entry at row 0"):
        el.chebyshev_cg(-A, b)
    indefinite = A - 100 * sp.identity(A.shape[0])  # positive diagonal, lambda_min ~ 2 pi^2 - 100 < 0
    with pytest.raises(el.NumericalError, match="positive definite"):
        el.chebyshev_cg(indefinite, b)
    with pytest.raises(el.NumericalError, match="positive definite"):
        el.MultigridPlan(indefinite, shape=shape)


def test_plan_threads_and_input_formats():
    """Concurrent calls on one plan are serialised (same results); any scipy sparse format or
    integer dtype is accepted."""
    from concurrent.futures import ThreadPoolExecutor

    n = 32
    A = el.poisson_fd(n)
    Ai = A.copy()
    Ai.data = np.rint(Ai.data / n**2)
    Ai = Ai.astype(np.int64)  # the 4, -1 stencil in integers
    assert Ai.dtype == np.int64 and Ai.diagonal()[0] == 4
    plan = el.MultigridPlan(sp.csr_array(A), shape=(n - 1, n - 1))
    rng = np.random.default_rng(3)
    bs = [rng.standard_normal(plan.size) for _ in range(4)]
    ref = [plan.solve(b, tol=1e-9)[0] for b in bs]
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(lambda b: plan.solve(b, tol=1e-9)[0], bs))
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    x, info = el.chebyshev_cg(Ai.tolil(), bs[0], tol=1e-9)
    assert info["converged"] and rel_residual(Ai.astype(float), x, bs[0]) <= 1.0001e-9


def test_results_are_objects_and_defaults_come_from_cpp():
    d = el.multigrid_defaults()
    assert d["order"] == (2, 2) and d["krylov"] == "gmres" and d["restart"] == 20 and d["tol"] == 1e-6
    n = 32
    A, u, b = el.seed_problem_2d(n, 1.0)
    plan = el.MultigridPlan(A, shape=(n - 1, n - 1))
    assert plan.order == d["order"]
    res = plan.solve(b)
    assert isinstance(res, el.SolveResult) and isinstance(res.info, el.SolveInfo)
    x, info = res
    assert x is res.x and info.converged and info["converged"] and info.iterations == info["iterations"]
    assert info.final_relative_residual <= d["tol"] and "rho" in info.keys() and info.to_dict()["matvecs"] > 0
    # threads: a plan option, the same answer with 1 and 2 threads
    x1 = el.MultigridPlan(A, shape=(n - 1, n - 1), threads=1).solve(b, krylov="pcg").x
    x2 = el.MultigridPlan(A, shape=(n - 1, n - 1), threads=2).solve(b, krylov="pcg").x
    np.testing.assert_allclose(x1, x2, rtol=0, atol=1e-12 * np.abs(x1).max())
    with pytest.raises(TypeError):
        plan.solve(b, None, 1e-6)  # options are keyword-only
    with pytest.raises(el.InvalidArgumentError, match="threads"):
        el.MultigridPlan(A, shape=(n - 1, n - 1), threads=-1)
    xc, ic = el.chebyshev_cg(A, b)
    assert isinstance(ic, el.SolveInfo) and ic.converged and ic.lambda_max > 0


def test_one_level_hierarchy_refused():
    # any size coarsens (n = 63 intervals: 62 unknowns per axis); nothing to coarsen is an error
    assert el.MultigridPlan(problem="poisson2d", n=63).levels == 6
    with pytest.raises(el.InvalidArgumentError, match="one-level"):
        el.MultigridPlan(problem="poisson2d", n=8, coarsening=8)
    assert el.MultigridPlan(problem="poisson2d", n=8, coarsening=8, max_levels=1).levels == 1  # asked for


def _direct(A, b):
    return spla.spsolve(A.tocsc(), b)


@pytest.mark.parametrize("n", [127, 128, 255, 256])
def test_any_size_grid_independent(n):
    A = el.poisson_fd(n + 1, (1.0, 1.0))
    b = np.cos(np.arange(A.shape[0]))
    plan = el.MultigridPlan(A, shape=(n, n))
    x, info = plan.solve(b, krylov="pcg", tol=1e-8)
    assert info.converged and info.iterations <= 12
    assert np.linalg.norm(A @ x - b) <= 1.01e-8 * np.linalg.norm(b)


def test_cell_centred_neumann_and_periodic():
    for bc in ("neumann", "periodic", "dirichlet"):
        for n in (50, 51):
            A = el.poisson_fd(n, (1.0, 2.0), grid="cell", bc=bc)
            assert A.shape == (n * n, n * n)
            b = np.sin(np.arange(n * n) * 0.7)
            if bc != "dirichlet":
                b -= b.mean()
                assert np.abs(A @ np.ones(n * n)).max() <= 1e-9 * abs(A).max()
            ns = None if bc == "dirichlet" else "constant"
            plan = el.MultigridPlan(A, shape=(n, n), grid="cell", null_space=ns)
            x, info = plan.solve(b, krylov="pcg", tol=1e-10)
            assert info.converged and info.iterations <= 20, (bc, n, info.iterations)
            if bc == "dirichlet":
                xd = _direct(A, b)
            else:  # the zero-mean solution: direct solve with the first unknown pinned, then shifted
                Ap = A.tolil()
                Ap[0, :] = 0
                Ap[0, 0] = 1
                bp = b.copy()
                bp[0] = 0
                xd = _direct(Ap.tocsr(), bp)
                xd -= xd.mean()
                assert abs(x.mean()) <= 1e-12 * np.abs(x).max()
            assert np.linalg.norm(x - xd) <= 1e-7 * np.linalg.norm(xd), (bc, n)
    # problem= with bc: the singular ones get the constant null space automatically
    p = el.MultigridPlan(problem="poisson2d", n=40, grid="cell", bc="neumann")
    assert p.size == 1600 and p.levels >= 4
    with pytest.raises(el.InvalidArgumentError, match="grid='cell'"):
        el.poisson_fd(16, (1.0, 1.0), bc="neumann")
    with pytest.raises(el.InvalidArgumentError, match="grid"):
        el.MultigridPlan(el.poisson_fd(16, (1.0, 1.0)), shape=(15, 15), grid="edge")
    with pytest.raises(el.InvalidArgumentError, match="semi_coarsening"):
        el.MultigridPlan(el.poisson_fd(16, (1.0, 1.0)), shape=(15, 15), semi_coarsening="yes")


def test_semi_coarsening_stretched_mesh():
    n = 127
    A = el.poisson_fd(n + 1, (1.0, 0.01))
    b = np.ones(n * n)
    semi = el.MultigridPlan.from_matrix(A, method="geometric", shape=(n, n), semi_coarsening="auto")
    full = el.MultigridPlan.from_matrix(A, method="geometric", shape=(n, n))
    assert semi.level_shapes[1] == (n, n // 2)  # only the strongly coupled y axis coarsened
    xs, i_s = semi.solve(b, tol=1e-8)
    xf, i_f = full.solve(b, tol=1e-8, maxiter=300)
    assert i_s.converged and i_s.iterations <= 15
    assert i_f.iterations >= 3 * i_s.iterations
    assert np.linalg.norm(A @ xs - b) <= 1.01e-8 * np.linalg.norm(b)


def test_grid_defaults_from_cpp():
    d = el.multigrid_defaults()
    assert d["grid"] == "vertex" and d["semi_coarsening"] == "off" and d["semi_coarsening_threshold"] == 0.25
