"""`elliptica mg solve --matrix --amg boomeramg` (issue 13): hypre's BoomerAMG hierarchy with our
V-cycle or hypre's own cycle, the BoomerAMG coarse solver of --amg sa / geometric, and the
refusals by flag name. Solutions are checked against scipy's sparse direct solve. Without hypre in
the build the tests skip, except the one that checks the message saying so.
"""
import re

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")
from sparse_problems import poisson2d  # noqa: E402
from mg_cli import run, field, solve  # noqa: E402

INVALID = 2


@pytest.fixture(scope="module")
def has_hypre(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("probe")
    A = poisson2d(12, 12)
    r, _ = solve(cli, d, A, np.ones(A.shape[0]), "--amg", "boomeramg")
    if r.returncode == INVALID and "built without hypre" in r.stderr:
        return False
    assert r.returncode == 0, r.stderr
    return True


@pytest.fixture
def hypre(has_hypre):
    if not has_hypre:
        pytest.skip("elliptica was built without hypre")


def test_without_hypre_the_message_says_so(cli, tmp_path, has_hypre):
    if has_hypre:
        pytest.skip("this build has hypre")
    A = poisson2d(12, 12)
    for extra in (("--amg", "boomeramg"), ("--amg", "sa", "--coarse-solver", "boomeramg", "--coarse-size", "20")):
        r, out = solve(cli, tmp_path, A, np.ones(A.shape[0]), *extra)
        assert r.returncode == INVALID
        assert "built without hypre" in r.stderr
        assert not out.exists()


@pytest.mark.parametrize("cycle", ["ours", "hypre"])
def test_boomeramg_solves_against_a_direct_solve(cli, tmp_path, hypre, cycle):
    A = poisson2d(130, 111)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    r, out = solve(cli, tmp_path, A, b, "--amg", "boomeramg", "--boomeramg-cycle", cycle, "--tol", 1e-10)
    assert r.returncode == 0, r.stderr
    assert "hierarchy: BoomerAMG (hypre), coarsening hmis, interpolation ext+i" in r.stdout
    assert ("cycle hypre's (relaxation chebyshev" in r.stdout) == (cycle == "hypre")
    assert int(field(r.stdout, "levels").rstrip(",")) >= 4
    assert int(field(r.stdout, "iterations")) <= 15
    x = np.load(out)
    assert np.linalg.norm(A @ x - b) <= 1e-10 * np.linalg.norm(b) * 1.01
    xref = spla.spsolve(A.tocsc(), b)
    # ||e|| / ||x|| <= cond(A) ||r|| / ||b||, cond(A) <= 8 / (2 pi^2 h^2) ~ 7e3 (h = 1/131)
    assert np.linalg.norm(x - xref) <= 7e3 * 1.01e-10 * np.linalg.norm(xref)


def test_hypre_options_reach_hypre(cli, tmp_path, hypre):
    A = poisson2d(90, 90)
    b = np.ones(A.shape[0])
    r1, _ = solve(cli, tmp_path, A, b, "--amg", "boomeramg", "--boomeramg-cycle", "hypre", "--boomeramg-relax", "l1-jacobi",
                  "--boomeramg-coarsen", "pmis", "--boomeramg-sweeps", "2", "--tol", 1e-8, name="x1.npy")
    assert r1.returncode == 0, r1.stderr
    assert "coarsening pmis" in r1.stdout and "relaxation l1-jacobi, 2 sweep(s)" in r1.stdout
    # Falgout + classical interpolation makes another hierarchy (other level sizes)
    r2, _ = solve(cli, tmp_path, A, b, "--amg", "boomeramg", "--boomeramg-coarsen", "falgout", "--boomeramg-interp",
                  "classical", "--tol", 1e-8, name="x2.npy")
    assert r2.returncode == 0, r2.stderr
    assert field(r1.stdout, "levels") != field(r2.stdout, "levels") or \
        re.findall(r"^\s+1\s+(\d+)", r1.stdout, re.M) != re.findall(r"^\s+1\s+(\d+)", r2.stdout, re.M)
    # hybrid-gs is not symmetric: pcg refused, gmres solves
    r3, _ = solve(cli, tmp_path, A, b, "--amg", "boomeramg", "--boomeramg-cycle", "hypre", "--boomeramg-relax", "hybrid-gs",
                  name="x3.npy")
    assert r3.returncode == INVALID and "--boomeramg-relax hybrid-gs" in r3.stderr
    r4, _ = solve(cli, tmp_path, A, b, "--amg", "boomeramg", "--boomeramg-cycle", "hypre", "--boomeramg-relax", "hybrid-gs",
                  "--krylov", "gmres", name="x4.npy")
    assert r4.returncode == 0, r4.stderr


def test_boomeramg_as_the_coarse_solver_of_sa(cli, tmp_path, hypre):
    A = poisson2d(150, 120)
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    r, out = solve(cli, tmp_path, A, b, "--amg", "sa", "--coarse-size", "4000", "--coarse-solver", "boomeramg",
                   "--tol", 1e-9)
    assert r.returncode == 0, r.stderr
    assert "coarse solve: BoomerAMG" in r.stdout
    assert "(BoomerAMG coarse solve)" in r.stdout
    assert int(field(r.stdout, "iterations")) <= 20
    x = np.load(out)
    assert np.linalg.norm(A @ x - b) <= 1e-9 * np.linalg.norm(b) * 1.01


@pytest.mark.parametrize("extra, flag", [
    (("--amg", "boomeramg", "--boomeramg-strength", "1.5"), "--boomeramg-strength"),
    (("--amg", "boomeramg", "--boomeramg-sweeps", "0"), "--boomeramg-sweeps"),
    (("--amg", "boomeramg", "--boomeramg-pmax", "-1"), "--boomeramg-pmax"),
    (("--amg", "boomeramg", "--boomeramg-max-levels", "1"), "--boomeramg-max-levels"),
    (("--amg", "boomeramg", "--boomeramg-relax", "sor"), "--boomeramg-relax"),
    (("--amg", "boomeramg", "--boomeramg-coarsen", "rs"), "--boomeramg-coarsen"),
    (("--amg", "boomeramg", "--boomeramg-cycle", "w"), "--boomeramg-cycle"),
    (("--amg", "sa", "--coarse-solver", "lu"), "--coarse-solver"),
    (("--amg", "sa", "--boomeramg-relax", "l1-jacobi"), "--boomeramg-relax"),
    (("--amg", "sa", "--boomeramg-cycle", "hypre"), "--boomeramg-cycle"),
    (("--amg", "boomeramg", "--coarse-solver", "boomeramg"), "--coarse-solver"),
    (("--amg", "boomeramg", "--boomeramg-cycle", "hypre", "--null-space", "constant"), "--null-space"),
])
def test_bad_options_refused_by_flag_name(cli, tmp_path, hypre, extra, flag):
    A = poisson2d(20, 20)
    r, out = solve(cli, tmp_path, A, np.ones(A.shape[0]), *extra)
    assert r.returncode == INVALID, (r.stdout, r.stderr)
    assert flag in r.stderr
    assert not out.exists()
