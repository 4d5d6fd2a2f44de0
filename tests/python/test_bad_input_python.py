"""Bad input through Python (issue 13, "Bad input"), the counterparts of tests/cli/test_cli_bad_input.py.

- A matrix declaring 10^9 rows with 3 entries is refused at once, before anything of its size is
  allocated (the CLI's Matrix Market size-line check; here a scipy matrix of that shape).
- A directory given as a file raises FileError (an OSError) saying so.
- An unsymmetric matrix under PCG: before, chebyshev_cg returned a diverged x without raising;
  now InvalidArgumentError naming the worst pair (0-based) and suggesting krylov='gmres', which
  then solves it.
- Messages show numbers as plain Python values, never NumPy 2's ``np.float64(0.0)``.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

import elliptica as el


def unsymmetric(n=50):
    """The issue's matrix: scipy.sparse.diags([-1, 2.5, -0.3], [-1, 0, 1]), n x n."""
    return sp.diags([-1.0, 2.5, -0.3], [-1, 0, 1], shape=(n, n), format="csr")


# --------------------------------------------------------------------------------------------
# 1. A huge declared shape over a few entries
# --------------------------------------------------------------------------------------------

def test_matrix_declaring_1e9_rows_with_3_entries_is_refused_at_once():
    # In a child with a 3 GB address-space limit: converting the matrix to CSR would need 4-8 GB.
    code = (
        "import resource, time, numpy as np, scipy.sparse as sp, elliptica as el\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "A = sp.coo_matrix((np.ones(3), ([0, 1, 2], [0, 1, 2])), shape=(10**9, 10**9))\n"
        "t0 = time.monotonic()\n"
        "try:\n"
        "    el.chebyshev_cg(A, np.ones(3))\n"
        "except el.InvalidArgumentError as e:\n"
        "    print('refused:', e, '| seconds', time.monotonic() - t0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout, r.stdout
    assert "1000000000 rows" in r.stdout and "3 stored entries" in r.stdout, r.stdout
    assert float(r.stdout.rsplit("seconds", 1)[1]) < 5


def test_too_few_entries_is_refused_by_the_plan_too():
    A = sp.diags([2.0, 2.0, 0.0, 2.0]).tocsr()
    A.eliminate_zeros()
    with pytest.raises(el.InvalidArgumentError, match="4 rows but only 3 stored entries"):
        el.MultigridPlan(A, shape=(4,))


# --------------------------------------------------------------------------------------------
# 2. A directory where a file is expected
# --------------------------------------------------------------------------------------------

def test_directory_as_a_file_is_a_file_error(tmp_path):
    d = tmp_path / "b.npy"
    d.mkdir()
    with pytest.raises(el.FileError, match="is a directory") as e:
        el.read_array(d)
    assert isinstance(e.value, OSError)
    assert "empty file" not in str(e.value)


# --------------------------------------------------------------------------------------------
# 3. An unsymmetric matrix under PCG
# --------------------------------------------------------------------------------------------

def test_chebyshev_cg_refuses_an_unsymmetric_matrix():
    n = 50
    A = unsymmetric(n)
    b = np.ones(n)
    t0 = time.monotonic()
    with pytest.raises(el.InvalidArgumentError) as e:
        el.chebyshev_cg(A, b)
    assert time.monotonic() - t0 < 5
    msg = str(e.value)
    assert ("A: the matrix is not symmetric (a_ij = -0.3, a_ji = -1 at row 0, column 1, 0-based); "
            "krylov='pcg' needs a symmetric positive definite matrix: use krylov='gmres'") in msg, msg
    assert "np." not in msg
    # explicit krylov="pcg" too, and the suggested remedy solves it
    with pytest.raises(el.InvalidArgumentError, match="not symmetric"):
        el.chebyshev_cg(A, b, krylov="pcg")
    for krylov in ("gmres", "fgmres"):
        x, info = el.chebyshev_cg(A, b, krylov=krylov, tol=1e-10)
        assert info.converged
        assert np.linalg.norm(A @ x - b) <= 1.01e-10 * np.linalg.norm(b)
    with pytest.raises(el.InvalidArgumentError, match="krylov"):
        el.chebyshev_cg(A, b, krylov="bicgstab")
    with pytest.raises(el.InvalidArgumentError, match="restart"):
        el.chebyshev_cg(A, b, krylov="gmres", restart=0)


def test_chebyshev_cg_refuses_a_structurally_unsymmetric_matrix():
    n = 6
    A = sp.lil_matrix(sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n)))
    A[0, 3] = 0.5
    with pytest.raises(el.InvalidArgumentError, match=r"a_ij = 0\.5, a_ji = 0 at row 0, column 3"):
        el.chebyshev_cg(A, np.ones(n))
    A[3, 0] = 0.5  # symmetric again: PCG runs
    x, info = el.chebyshev_cg(A, np.ones(n), tol=1e-10)
    assert info.converged


def test_symmetric_matrices_still_run_under_pcg():
    A = el.poisson_fd(16)
    b = np.ones(A.shape[0])
    x, info = el.chebyshev_cg(A, b, tol=1e-8)
    assert info.converged and el.multigrid_defaults()["cg_krylov"] == "pcg"


def test_plan_solve_with_pcg_refuses_an_unsymmetric_matrix():
    # 3 unknowns on 2 levels: the 1 x 1 coarse operator is symmetric, the fine matrix is not.
    A = unsymmetric(3)
    plan = el.MultigridPlan(A, shape=(3,))
    assert plan.levels == 2
    b = np.ones(3)
    with pytest.raises(el.InvalidArgumentError) as e:
        plan.solve(b, krylov="pcg")
    msg = str(e.value)
    assert "not symmetric (a_ij = -0.3, a_ji = -1 at row 0, column 1, 0-based)" in msg and "krylov='gmres'" in msg, msg
    x, info = plan.solve(b, krylov="gmres", tol=1e-10)
    assert info.converged and np.linalg.norm(A @ x - b) <= 1.01e-10 * np.linalg.norm(b)


# --------------------------------------------------------------------------------------------
# 4. No NumPy scalar reprs in messages
# --------------------------------------------------------------------------------------------

def test_messages_show_plain_numbers():
    A = el.poisson_fd(8)
    b = np.ones(A.shape[0])
    shape = (7, 7)
    cases = [
        (lambda: el.chebyshev_cg(A - sp.diags(A.diagonal()), b), "diagonal entry at row 0 is 0 "),
        (lambda: el.MultigridPlan(A, shape=shape, coarsening=np.float64(2.0)), "got 2.0"),
        (lambda: el.MultigridPlan(A, shape=shape, smoother=np.int64(3)), "got 3"),
        (lambda: el.MultigridPlan(A, shape=shape, order=(np.int64(0), np.int64(0))), "got (0, 0)"),
        (lambda: el.MultigridPlan(problem="poisson2d", n=8, shape=(np.int64(6), np.int64(6))), "shape (6, 6)"),
        (lambda: el.poisson_fd(8, (np.float64(1.0), np.float64(-1.0))), "got (1.0, -1.0)"),
        (lambda: el.chebyshev_cg(A, b, tol=np.complex128(1e-6)), "got (1e-06+0j)"),
        (lambda: el.icosphere(np.float64(2.0)), "got 2.0"),
    ]
    for call, needle in cases:
        with pytest.raises(el.InvalidArgumentError) as e:
            call()
        msg = str(e.value)
        assert needle in msg, msg
        assert "np." not in msg and "float64(" not in msg and "int64(" not in msg, msg
