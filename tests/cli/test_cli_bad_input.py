"""Bad input to `elliptica mg solve --matrix` (issue 13, "Bad input"): each case is refused at
once, with the documented exit code (include/elliptica/core/error.hpp: 2 invalid input, 3 file
error), a message naming the file and the problem, and no output file or temporary left behind.

- A Matrix Market size line declaring 10^9 rows over a 3-line body: before, it allocated 7.8 GB
  and exited 1 after ~50 s, later it exited 2 on the right-hand side's length; now 3 (the size
  line cannot describe a nonsingular square system: fewer entries than rows).
- A directory as --matrix: before, "empty file".
- An unsymmetric matrix under PCG: before, 500 diverging iterations and exit 5; now exit 2 before
  any iteration, naming the worst pair (1-based) and suggesting --krylov gmres.
"""
import resource
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

INVALID, IOERR = 2, 3


def run(cli, *args, timeout=120, preexec_fn=None):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)


def limit_address_space(nbytes):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return f


def leftovers(folder):
    """Output files and temporaries of a refused run."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("x.npy") or ".tmp." in p.name)


def write_general(path, A):
    """A dense matrix as a coordinate real general Matrix Market file (its nonzeros)."""
    rows, cols = np.nonzero(A)
    lines = ["%%MatrixMarket matrix coordinate real general", f"{A.shape[0]} {A.shape[1]} {len(rows)}"]
    lines += [f"{i + 1} {j + 1} {A[i, j]:.17g}" for i, j in zip(rows, cols)]
    Path(path).write_text("\n".join(lines) + "\n")


def unsymmetric(n=50):
    """The issue's matrix: scipy.sparse.diags([-1, 2.5, -0.3], [-1, 0, 1]), n x n."""
    return 2.5 * np.eye(n) - np.eye(n, k=-1) - 0.3 * np.eye(n, k=1)


# --------------------------------------------------------------------------------------------
# 1. A size line the body cannot fill
# --------------------------------------------------------------------------------------------

def test_header_claiming_1e9_rows_over_a_3_line_body(cli, tmp_path):
    (tmp_path / "huge.mtx").write_text("%%MatrixMarket matrix coordinate real general\n"
                                       "1000000000 1000000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n")
    np.save(tmp_path / "b3.npy", np.ones(3))
    t0 = time.monotonic()
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "huge.mtx", "--rhs", tmp_path / "b3.npy",
            "--out", tmp_path / "x.npy", preexec_fn=limit_address_space(2 << 30))
    elapsed = time.monotonic() - t0
    assert r.returncode == IOERR, (r.returncode, r.stderr)
    assert "huge.mtx" in r.stderr and "1000000000 rows" in r.stderr and "3 entries" in r.stderr, r.stderr
    assert "length mismatch" not in r.stderr, r.stderr  # the file is at fault, not the rhs
    assert elapsed < 10, elapsed
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("storage,n,entries,code", [
    ("general", 3, ["1 1 1", "3 3 1"], IOERR),           # 2 entries < 3 rows
    ("symmetric", 5, ["2 1 1", "4 3 1"], IOERR),         # 2 entries cover at most 4 < 5 rows
    ("symmetric", 5, ["2 1 1", "4 3 1", "5 5 1"], None),  # 3 = ceil(5/2): the size line passes
])
def test_too_few_entries_for_a_nonsingular_matrix(cli, tmp_path, storage, n, entries, code):
    text = [f"%%MatrixMarket matrix coordinate real {storage}", f"{n} {n} {len(entries)}", *entries]
    (tmp_path / "a.mtx").write_text("\n".join(text) + "\n")
    np.save(tmp_path / "b.npy", np.ones(n + 1))  # also the wrong length: the file is checked first
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "a.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy")
    if code == IOERR:
        assert r.returncode == IOERR, (r.returncode, r.stderr)
        assert "a.mtx" in r.stderr and f"{n} rows" in r.stderr and f"{len(entries)} entries" in r.stderr, r.stderr
        assert "length mismatch" not in r.stderr
    else:
        # passes the entry count; then the right-hand side's length is the error
        assert r.returncode == INVALID and "length mismatch" in r.stderr, (r.returncode, r.stderr)
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------------------------
# 2. A directory as --matrix
# --------------------------------------------------------------------------------------------

def test_directory_as_matrix(cli, tmp_path):
    (tmp_path / "dir.mtx").mkdir()
    np.save(tmp_path / "b.npy", np.ones(4))
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "dir.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy")
    assert r.returncode == IOERR, (r.returncode, r.stderr)
    assert "dir.mtx: is a directory" in r.stderr and "empty file" not in r.stderr, r.stderr
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------------------------
# 3. An unsymmetric matrix under PCG
# --------------------------------------------------------------------------------------------

def test_unsymmetric_matrix_under_pcg_is_refused(cli, tmp_path):
    n = 50
    A = unsymmetric(n)
    write_general(tmp_path / "ns.mtx", A)
    b = np.ones(n)
    np.save(tmp_path / "b.npy", b)
    t0 = time.monotonic()
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "ns.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert ("ns.mtx: the matrix is not symmetric (a_ij = -0.3, a_ji = -1 at row 1, column 2, 1-based); "
            "PCG needs a symmetric positive definite matrix: use --krylov gmres") in r.stderr, r.stderr
    assert "iter" not in r.stderr and "positive definite (" not in r.stderr  # refused before any iteration
    assert time.monotonic() - t0 < 10
    assert leftovers(tmp_path) == []
    # the same refusal with every hierarchy (checked before the set-up)
    for amg in ("sa", "none"):
        r = run(cli, "mg", "solve", "--matrix", tmp_path / "ns.mtx", "--rhs", tmp_path / "b.npy", "--out",
                tmp_path / "x.npy", "--amg", amg, "--krylov", "pcg")
        assert r.returncode == INVALID and "the matrix is not symmetric" in r.stderr, (amg, r.returncode, r.stderr)
        assert "building" not in r.stderr and leftovers(tmp_path) == [], r.stderr
    # the suggested remedy works
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "ns.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy",
            "--krylov", "gmres", "--amg", "none", "--tol", "1e-10", "-q")
    assert r.returncode == 0, r.stderr
    x = np.load(tmp_path / "x.npy")
    assert np.linalg.norm(A @ x - b) <= 1.01e-10 * np.linalg.norm(b)


def test_structurally_unsymmetric_matrix_under_pcg_is_refused(cli, tmp_path):
    """An entry (1, 4) without (4, 1): a_ji counts 0."""
    n = 6
    A = 4.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    A[0, 3] = 0.5
    write_general(tmp_path / "s.mtx", A)
    np.save(tmp_path / "b.npy", np.ones(n))
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "s.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert "not symmetric (a_ij = 0.5, a_ji = 0 at row 1, column 4, 1-based)" in r.stderr, r.stderr
    assert leftovers(tmp_path) == []
    # the same matrix made symmetric passes the check and solves under PCG
    A[3, 0] = 0.5
    write_general(tmp_path / "s.mtx", A)
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "s.mtx", "--rhs", tmp_path / "b.npy", "--out", tmp_path / "x.npy",
            "--amg", "none", "-q")
    assert r.returncode == 0, r.stderr
    assert "krylov pcg" in r.stdout
