"""Tests of the elliptica Python package: spectral Ewald against an independent classical Ewald
sum (ewald_reference.py), input validation, determinism, array I/O.

Run: pip install /work/main && python -m pytest tests/python
"""

import math
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import elliptica
from ewald_reference import laplace_reference, stokeslet_reference

L = np.array([1.0, 1.3, 0.8])  # non-cubic box
N = 30
MU = 0.7
# Known lattice constants (independent checks of the reference itself):
WIGNER_SC = 2.8372974794806  # simple cubic lattice sum with background (Hasimoto's 2.8373)
MADELUNG_NACL = 1.747564594633182


def rel_rms(err, ref):
    return float(np.sqrt(np.mean(np.square(err))) / np.sqrt(np.mean(np.square(ref))))


@pytest.fixture(scope="module")
def system():
    rng = np.random.default_rng(20240601)
    x = rng.random((N, 3)) * L
    q = rng.standard_normal(N)  # non-neutral on purpose: exercises the background term
    f = rng.standard_normal((N, 3))
    t = rng.random((11, 3)) * L * 1.4 - 0.2 * L  # some outside the box: wrapped
    return x, q, f, t


@pytest.fixture(scope="module")
def refs(system):
    x, q, f, t = system
    xi = 5.0
    phi, E = laplace_reference(x, q, L, xi)
    phi_t, E_t = laplace_reference(x, q, L, xi, targets=t)
    u = stokeslet_reference(x, f, L, xi, mu=MU)
    u_t = stokeslet_reference(x, f, L, xi, mu=MU, targets=t)
    return dict(phi=phi, E=E, phi_t=phi_t, E_t=E_t, u=u, u_t=u_t)


# ---------------------------------------------------------------- the reference itself


def test_reference_independent_of_xi(system, refs):
    x, q, f, t = system
    for xi in (3.5, 7.0):
        phi, E = laplace_reference(x, q, L, xi)
        assert rel_rms(phi - refs["phi"], refs["phi"]) < 1e-12
        assert rel_rms(E - refs["E"], refs["E"]) < 1e-12
        phi_t, E_t = laplace_reference(x, q, L, xi, targets=t)
        assert rel_rms(phi_t - refs["phi_t"], refs["phi_t"]) < 1e-12
        assert rel_rms(E_t - refs["E_t"], refs["E_t"]) < 1e-12
        u = stokeslet_reference(x, f, L, xi, mu=MU)
        assert rel_rms(u - refs["u"], refs["u"]) < 1e-12
        u_t = stokeslet_reference(x, f, L, xi, mu=MU, targets=t)
        assert rel_rms(u_t - refs["u_t"], refs["u_t"]) < 1e-12


def test_reference_lattice_constants():
    # one unit charge / point force per cube of side 2: sum over the images only
    Lc = 2.0
    phi, _ = laplace_reference(np.zeros((1, 3)), [1.0], [Lc] * 3, 2.5)
    assert phi[0] * Lc == pytest.approx(-WIGNER_SC, rel=1e-12)
    u = stokeslet_reference(np.zeros((1, 3)), [[0.0, 1.0, 0.0]], [Lc] * 3, 2.5, mu=MU)
    assert u[0, 1] * 8 * math.pi * MU * Lc == pytest.approx(-4.0 / 3.0 * WIGNER_SC, rel=1e-12)
    assert abs(u[0, 0]) + abs(u[0, 2]) < 1e-14
    # rock salt: 8 ions of alternating sign in the unit cube, spacing a = 0.5
    pos, qs = nacl_cell()
    phi, _ = laplace_reference(pos, qs, [1.0] * 3, 6.0)
    np.testing.assert_allclose(phi * 0.5 * qs, -MADELUNG_NACL, rtol=1e-12)


def nacl_cell():
    pos, qs = [], []
    for i in range(2):
        for j in range(2):
            for k in range(2):
                pos.append([0.5 * i, 0.5 * j, 0.5 * k])
                qs.append((-1.0) ** (i + j + k))
    return np.array(pos), np.array(qs)


# ---------------------------------------------------------------- accuracy


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_laplace_potential_and_field(system, refs, tol):
    x, q, f, t = system
    plan = elliptica.EwaldPlan("laplace", box=L, tol=tol, field=True)
    r = plan.evaluate(x, q)
    assert isinstance(r, elliptica.EwaldResult) and r.velocity is None
    phi, E = r.potential, r.field
    assert phi.shape == (N,) and E.shape == (N, 3)
    assert phi.dtype == np.float64 and E.dtype == np.float64
    assert rel_rms(phi - refs["phi"], refs["phi"]) < tol
    assert rel_rms(E - refs["E"], refs["E"]) < tol
    p = plan.params
    assert p["xi"] > 0 and p["rc"] > 0 and min(p["grid"]) >= 4 and p["P"] >= 2
    assert "xi" in p["describe"]
    times = plan.last_times
    assert times and all(v >= 0 for v in times.values())
    assert r.info.kernel == elliptica.Kernel.laplace and r.info.params == p and r.info.times == times


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_laplace_potential_only(system, refs, tol):
    x, q, f, t = system
    r = elliptica.ewald("laplace", x, q.reshape(-1, 1), L, tol=tol)
    assert r.field is None and r.velocity is None  # no field asked for: the attribute is None
    phi = r.potential
    assert phi.shape == (N,) and r.values is phi
    assert rel_rms(phi - refs["phi"], refs["phi"]) < tol
    # P2P work: every pair within r_c is distance-tested; the degrees grow as the tolerance falls
    w = r.info.p2p
    assert set(w) == {"candidates", "pairs", "series_degree", "exp_degree", "pair_symmetry"}
    assert w["pair_symmetry"] == bool(r.info.params["rc"] < 0.5 * L.min())  # targets = sources
    assert 0 < w["pairs"] <= w["candidates"]
    assert 0 < w["series_degree"] <= 28 and 0 < w["exp_degree"] <= 16
    if tol < 1e-6:
        coarse = elliptica.ewald("laplace", x, q.reshape(-1, 1), L, tol=1e-3).info.p2p
        assert coarse["exp_degree"] < w["exp_degree"] and coarse["series_degree"] < w["series_degree"]


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_stokeslet(system, refs, tol):
    x, q, f, t = system
    plan = elliptica.EwaldPlan(elliptica.Kernel.stokeslet, box=tuple(L), tol=tol, viscosity=MU)
    r = plan.evaluate(x, f)
    assert r.potential is None and r.field is None
    u = r.velocity
    assert u.shape == (N, 3) and u.dtype == np.float64 and r.values is u
    assert rel_rms(u - refs["u"], refs["u"]) < tol


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_separate_targets(system, refs, tol):
    x, q, f, t = system
    r = elliptica.ewald("laplace", x, q, L, tol=tol, targets=t, field=True)
    phi, E = r.potential, r.field
    assert phi.shape == (len(t),) and E.shape == (len(t), 3)
    assert rel_rms(phi - refs["phi_t"], refs["phi_t"]) < tol
    assert rel_rms(E - refs["E_t"], refs["E_t"]) < tol
    u = elliptica.ewald("stokeslet", x, f, L, tol=tol, targets=t, viscosity=MU).velocity
    assert u.shape == (len(t), 3)
    assert rel_rms(u - refs["u_t"], refs["u_t"]) < tol


def test_absolute_tolerance(system, refs):
    x, q, f, t = system
    tol = 1e-7
    u = elliptica.ewald("stokeslet", x, f, L, tol=tol, tol_kind="absolute", viscosity=MU).velocity
    assert float(np.sqrt(np.mean(np.square(u - refs["u"])))) < tol


def test_madelung_constant():
    pos, qs = nacl_cell()
    phi = elliptica.ewald("laplace", pos, qs, 1.0, tol=1e-8).potential
    np.testing.assert_allclose(phi * 0.5 * qs, -MADELUNG_NACL, rtol=1e-8)


def test_points_outside_box_are_wrapped(system, refs):
    x, q, f, t = system
    shift = np.array([2, -1, 3]) * L
    opts = dict(tol=1e-8, viscosity=MU)
    u0 = elliptica.ewald("stokeslet", x, f, L, **opts).velocity
    u = elliptica.ewald("stokeslet", x + shift, f, L, **opts).velocity
    # same parameters, positions equal up to rounding: far below the tolerance
    assert rel_rms(u - u0, u0) < 1e-10


def test_array_likes_are_accepted(system, refs):
    x, q, f, t = system
    # lists, float32 and non-contiguous views all go through ascontiguousarray(float64)
    phi = elliptica.ewald("laplace", x.tolist(), list(q), list(L), tol=1e-4).potential
    assert rel_rms(phi - refs["phi"], refs["phi"]) < 1e-4
    xt = np.asfortranarray(x)
    phi = elliptica.ewald("laplace", xt, np.stack([q, q], axis=1)[:, 0], L, tol=1e-4).potential
    assert rel_rms(phi - refs["phi"], refs["phi"]) < 1e-4
    phi32 = elliptica.ewald("laplace", x.astype(np.float32), q, L, tol=1e-4).potential
    assert phi32.dtype == np.float64


# ---------------------------------------------------------------- plans


def test_plan_evaluated_twice_is_identical(system):
    x, q, f, t = system
    plan = elliptica.EwaldPlan("stokeslet", box=L, tol=1e-6)
    u1 = plan.evaluate(x, f).velocity
    p1 = plan.params
    u2 = plan.evaluate(x, f).velocity
    assert np.array_equal(u1, u2)
    assert plan.params == p1
    lap = elliptica.EwaldPlan("laplace", box=L, tol=1e-6, field=True)
    r1, r2 = lap.evaluate(x, q), lap.evaluate(x, q)
    a1, e1, a2, e2 = r1.potential, r1.field, r2.potential, r2.field
    assert np.array_equal(a1, a2) and np.array_equal(e1, e2)


def test_tune_and_overrides(system, refs):
    x, q, f, t = system
    plan = elliptica.EwaldPlan("laplace", box=L, tol=1e-6)
    assert plan.params["xi"] == 0
    p = plan.tune(x, q)
    assert p["xi"] > 0 and p == plan.params
    # fixed parameters reproduce the tuned ones exactly
    fixed = elliptica.EwaldPlan(
        "laplace", box=L, tol=1e-6, xi=p["xi"], rc=p["rc"], grid=p["grid"], P=p["P"], beta=p["beta"],
        degree=p["poly_degree"],
    )
    phi_fixed = fixed.evaluate(x, q).potential
    assert fixed.params["grid"] == p["grid"] and fixed.params["xi"] == p["xi"]
    assert rel_rms(phi_fixed - refs["phi"], refs["phi"]) < 1e-6
    plan.retune()
    phi = plan.evaluate(x, q).potential
    assert rel_rms(phi - refs["phi"], refs["phi"]) < 1e-6


def test_overrides_without_degree(system, refs):
    """Fixing xi, rc, grid and P (degree left automatic) keeps the requested accuracy."""
    x, q, f, t = system
    tol = 1e-8
    p = elliptica.EwaldPlan("laplace", box=L, tol=tol)
    p.tune(x, q)
    p = p.params
    fixed = elliptica.EwaldPlan("laplace", box=L, tol=tol, xi=p["xi"], rc=p["rc"], grid=p["grid"], P=p["P"])
    phi = fixed.evaluate(x, q).potential
    assert fixed.params["eps_abs"] == pytest.approx(p["eps_abs"], rel=0.01)
    assert fixed.params["poly_degree"] >= p["poly_degree"]
    assert rel_rms(phi - refs["phi"], refs["phi"]) < tol


def test_threads_share_a_plan(system):
    """The GIL is released during evaluate; concurrent one-shot calls (which set the points) on
    one plan are serialised and give the serial result (set_points + concurrent evaluate:
    test_ewald_kernels.py)."""
    x, q, f, t = system
    plan = elliptica.EwaldPlan("stokeslet", box=L, tol=1e-6)
    expected = plan.evaluate(x, f).velocity
    out = [None] * 4

    def work(i):
        out[i] = plan.evaluate(x, f).velocity

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for o in out:
        np.testing.assert_allclose(o, expected, rtol=0, atol=1e-14 * np.abs(expected).max())


# ---------------------------------------------------------------- bad input


def raises_invalid(match):
    return pytest.raises(elliptica.InvalidArgumentError, match=match)


def test_error_hierarchy():
    assert issubclass(elliptica.InvalidArgumentError, ValueError)
    assert issubclass(elliptica.FileError, OSError)
    assert issubclass(elliptica.NumericalError, RuntimeError)
    assert issubclass(elliptica.NotConvergedError, RuntimeError)


def test_nan_coordinates(system):
    x, q, f, t = system
    bad = x.copy()
    bad[7, 1] = np.nan
    with raises_invalid(r"(?i)(nan|finite|inf)") as ei:
        elliptica.ewald("laplace", bad, q, L)
    assert isinstance(ei.value, ValueError)
    badq = q.copy()
    badq[3] = np.inf
    with raises_invalid(r"(?i)(nan|finite|inf)"):
        elliptica.ewald("laplace", x, badq, L)
    badt = t.copy()
    badt[0, 0] = np.nan
    with raises_invalid(r"(?i)(nan|finite|inf)"):
        elliptica.ewald("stokeslet", x, f, L, targets=badt)


def test_wrong_shapes(system):
    x, q, f, t = system
    with raises_invalid(r"sources.*\(N, 3\)"):
        elliptica.ewald("laplace", x[:, :2], q, L)
    with raises_invalid(r"strengths.*\(N, 3\)"):
        elliptica.ewald("stokeslet", x, q, L)
    with raises_invalid(r"strengths"):
        elliptica.ewald("laplace", x, f, L)
    with raises_invalid(r"targets.*\(N, 3\)"):
        elliptica.ewald("laplace", x, q, L, targets=t[:, :2])
    with raises_invalid(r"sources"):
        elliptica.ewald("laplace", x[None], q, L)
    with raises_invalid(r"numeric"):
        elliptica.ewald("laplace", [["a", "b", "c"]], [1.0], L)


def test_mismatched_lengths(system):
    x, q, f, t = system
    with raises_invalid(r"(?i)mismatched.*30 sources.*29 strengths"):
        elliptica.ewald("laplace", x, q[:-1], L)
    with raises_invalid(r"(?i)mismatched"):
        elliptica.ewald("stokeslet", x[:-2], f, L)


def test_empty_arrays(system):
    x, q, f, t = system
    with raises_invalid(r"(?i)sources.*empty"):
        elliptica.ewald("laplace", np.zeros((0, 3)), np.zeros(0), L)
    with raises_invalid(r"(?i)strengths.*empty"):
        elliptica.ewald("laplace", x, np.zeros(0), L)
    # zero targets are allowed (the C++ plan returns empty results): empty arrays, not an error
    r = elliptica.ewald("laplace", x, q, L, targets=np.zeros((0, 3)), field=True)
    assert r.potential.shape == (0,) and r.field.shape == (0, 3)
    assert elliptica.ewald("stokeslet", x, f, L, targets=np.zeros((0, 3))).velocity.shape == (0, 3)
    with raises_invalid(r"targets.*\(N, 3\)"):
        elliptica.ewald("laplace", x, q, L, targets=np.zeros((0, 2)))


@pytest.mark.parametrize("box", [(1.0, 0.0, 1.0), (1.0, 1.0, -2.0), (np.inf, 1.0, 1.0), (np.nan, 1, 1)])
def test_bad_box(box):
    with raises_invalid(r"(?i)box"):
        elliptica.EwaldPlan("laplace", box=box)


def test_box_wrong_length():
    with raises_invalid(r"(?i)box"):
        elliptica.EwaldPlan("laplace", box=(1.0, 1.0))


@pytest.mark.parametrize("tol", [0.0, -1e-6, 1.0, 2.0, float("nan")])
def test_bad_tolerance(tol):
    with raises_invalid(r"(?i)tol"):
        elliptica.EwaldPlan("laplace", tol=tol)


def test_field_with_stokeslet():
    with raises_invalid(r"(?i)field") as ei:
        elliptica.EwaldPlan("stokeslet", field=True)
    assert isinstance(ei.value, ValueError)


def test_bad_options():
    with raises_invalid(r"(?i)kernel"):
        elliptica.EwaldPlan("helmholtz")
    with raises_invalid(r"(?i)tol_kind"):
        elliptica.EwaldPlan("laplace", tol_kind="sideways")
    with raises_invalid(r"(?i)viscosity"):
        elliptica.EwaldPlan("stokeslet", viscosity=0.0)
    with raises_invalid(r"(?i)xi"):
        elliptica.EwaldPlan("laplace", xi=-1.0)
    with raises_invalid(r"(?i)grid"):
        elliptica.EwaldPlan("laplace", grid=2)


# ---------------------------------------------------------------- I/O


@pytest.mark.parametrize("name", ["a.npy", "a.csv"])
def test_array_io_roundtrip(tmp_path, name):
    a = np.random.default_rng(3).standard_normal((5, 3))
    path = tmp_path / name
    elliptica.write_array(path, a)
    b = elliptica.read_array(path)
    assert b.shape == (5, 3)
    np.testing.assert_array_equal(a, b)  # .npy exact, CSV with 17 significant digits
    v = np.arange(4.0)
    elliptica.write_array(str(path), v)
    assert elliptica.read_array(str(path)).shape == (4,)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary left behind


def test_read_missing_file(tmp_path):
    with pytest.raises(elliptica.FileError) as ei:
        elliptica.read_array(tmp_path / "missing.npy")
    assert isinstance(ei.value, OSError)
    assert "missing.npy" in str(ei.value)


def test_read_malformed_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1 2 3\n4 five 6\n")
    with pytest.raises(elliptica.FileError):
        elliptica.read_array(path)


def test_write_bad_array(tmp_path):
    with raises_invalid(r"1-D or 2-D"):
        elliptica.write_array(tmp_path / "x.npy", np.zeros((2, 2, 2)))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- call shape


def test_options_are_keyword_only(system):
    x, q, f, t = system
    with pytest.raises(TypeError):
        elliptica.EwaldPlan("laplace", L)
    with pytest.raises(TypeError):
        elliptica.ewald("laplace", x, q, L, 1e-4)
    with pytest.raises(TypeError):
        elliptica.ewald("laplace", x, q, L, tolerance=1e-4)


def test_defaults_come_from_the_library():
    import inspect

    d = elliptica.ewald_defaults()
    assert d.tolerance == 1e-6 and d.viscosity == 1.0 and d.threads == 0 and not d.compute_field
    assert tuple(d.box) == (1.0, 1.0, 1.0) and d.kernel == elliptica.Kernel.laplace
    assert d.xi is None and d.grid is None and d.poly_degree is None
    for fn in (elliptica.EwaldPlan.__init__,):
        sig = inspect.signature(fn)
        assert sig.parameters["tol"].default == d.tolerance
        assert sig.parameters["viscosity"].default == d.viscosity
        assert sig.parameters["threads"].default == d.threads
        assert sig.parameters["fft_planner"].default == d.fft_planner == elliptica.FftPlanner.wisdom
        assert sig.parameters["potential"].default == d.compute_potential is True


@pytest.mark.parametrize("planner", ["measure", "wisdom", elliptica.FftPlanner.estimate])
def test_fft_planners_give_the_estimate_plans_results(system, planner):
    # FFTW_MEASURE times candidate plans on scratch arrays; the wisdom planner plans as estimate
    # here (ELLIPTICA_EWALD_FFT_WISDOM=off from conftest): same sums to rounding, same parameters
    x, q, f, t = system
    plans = [elliptica.EwaldPlan("laplace", box=L, tol=1e-8, field=True, fft_planner=m, threads=1)
             for m in ("estimate", planner)]
    for p in plans:
        p.set_points(x)
    a, b = (p.evaluate(q) for p in plans)
    assert a.info.params["grid"] == b.info.params["grid"]
    np.testing.assert_allclose(b.potential, a.potential, rtol=0, atol=1e-12 * np.abs(a.potential).max())
    np.testing.assert_allclose(b.field, a.field, rtol=0, atol=1e-12 * np.abs(a.field).max())
    with pytest.raises(elliptica.InvalidArgumentError, match="fft_planner"):
        elliptica.EwaldPlan("laplace", fft_planner="patient")


def test_energy_without_the_potential(system):
    # potential=False: the energy's Fourier part by Parseval, E only through the far field; the
    # same energy and forces as the full path to rounding (same parameters: absolute tolerance)
    x, q, f, t = system
    r = [elliptica.ewald("laplace", x, q, L, energy=True, potential=p, tol=1e-9, tol_kind="absolute", threads=1)
         for p in (False, True)]
    assert r[0].potential is None and r[1].potential.shape == (len(x),)
    assert r[0].info.params["grid"] == r[1].info.params["grid"]
    assert abs(r[0].energy - r[1].energy) <= 1e-12 * abs(r[1].energy)
    np.testing.assert_allclose(r[0].forces, r[1].forces, rtol=0, atol=1e-12 * np.abs(r[1].forces).max())
    with pytest.raises(elliptica.InvalidArgumentError, match="compute_potential"):
        elliptica.EwaldPlan("laplace", potential=False)
    with pytest.raises(elliptica.InvalidArgumentError, match="compute_potential"):
        elliptica.EwaldPlan("stokeslet", potential=False)


def test_pair_symmetry_same_velocities_half_the_pairs(system, refs):
    # pair_symmetry (default True): each P2P pair evaluated once for both points; the same
    # velocities as the one-sided sum to rounding (same parameters: absolute tolerance), half the
    # pairs, and against the independent reference at the tolerance; not applied with separate targets
    x, q, f, t = system
    r = [elliptica.ewald("stokeslet", x, f, L, viscosity=MU, pair_symmetry=s, tol=1e-9, tol_kind="absolute",
                         threads=2, rc=0.35) for s in (True, False)]
    assert r[0].info.p2p["pair_symmetry"] is True and r[1].info.p2p["pair_symmetry"] is False
    assert r[0].info.params["grid"] == r[1].info.params["grid"]
    assert 2 * r[0].info.p2p["pairs"] == r[1].info.p2p["pairs"] > 0
    np.testing.assert_allclose(r[0].velocity, r[1].velocity, rtol=0, atol=1e-13 * np.abs(r[1].velocity).max())
    assert np.sqrt(np.mean(np.square(r[0].velocity - refs["u"]))) <= 1e-9
    s = elliptica.ewald("stokeslet", x, f, L, viscosity=MU, targets=t, tol=1e-9, tol_kind="absolute", threads=1)
    assert s.info.p2p["pair_symmetry"] is False
    assert elliptica.EwaldPlan.__init__.__kwdefaults__["pair_symmetry"] is elliptica.ewald_defaults().pair_symmetry


def test_fft_wisdom_cache_in_a_fresh_process(tmp_path):
    # the default planner with the cache on (the suite runs with it off): a plan measures and
    # writes its problem once, ewald_fft_wisdom lists it, rebuild measures it and a new one again
    script = tmp_path / "w.py"
    script.write_text(
        "import json, numpy as np, elliptica\n"
        "rng = np.random.default_rng(1)\n"
        "x = rng.random((200, 3)); q = rng.uniform(-1, 1, 200); q -= q.mean()\n"
        "r = elliptica.ewald('laplace', x, q, 1.0, tol=1e-6, threads=1, grid=20)\n"
        "w = elliptica.ewald_fft_wisdom()\n"
        "b = elliptica.ewald_fft_wisdom(rebuild=True, problems=[dict(precision='single', grid=(16, 16, 16),"
        " forward=3, backward=3, threads=1)])\n"
        "print(json.dumps({'file': w['file'], 'n': len(w['entries']), 'e': w['entries'][0], 'nb': len(b['entries'])}))\n")
    env = dict(os.environ, ELLIPTICA_EWALD_FFT_WISDOM="auto", ELLIPTICA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout.strip().splitlines()[-1])
    assert js["file"] == str(tmp_path / "cache" / "ewald_fft_wisdom.json")
    assert (tmp_path / "cache" / "ewald_fft_wisdom.json").exists()
    assert js["n"] == 1 and js["nb"] == 2
    e = js["e"]
    assert e["precision"] == "double" and tuple(e["grid"]) == (20, 20, 20) and e["forward"] == 1
    assert e["backward"] == 1 and e["threads"] == 1 and e["forward_seconds"] > 0 and e["backward_seconds"] > 0
    with pytest.raises(elliptica.InvalidArgumentError, match="rebuild"):
        elliptica.ewald_fft_wisdom(problems=[{}])


def test_result_attributes_do_not_depend_on_flags(system):
    x, q, f, t = system
    names = {fld.name for fld in __import__("dataclasses").fields(elliptica.EwaldResult)}
    assert names == {"potential", "field", "velocity", "info", "energy", "forces", "pressure"}
    plain = elliptica.ewald("laplace", x, q, L, tol=1e-4)
    with_field = elliptica.ewald("laplace", x, q, L, tol=1e-4, field=True)
    assert plain.field is None and with_field.field.shape == (N, 3)
    np.testing.assert_allclose(plain.potential, with_field.potential, rtol=0, atol=1e-3 * np.abs(plain.potential).max())
    assert plain.info.params["xi"] > 0 and plain.info.times
    assert plain.energy is None and plain.forces is None and plain.pressure is None and plain.info.coincident_pairs == 0
