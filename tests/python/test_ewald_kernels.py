"""Tests of the Python front end of the spectral Ewald plan beyond Laplace/stokeslet one-shots:
the stresslet and stokes-combined kernels, set_points + evaluate, evaluation from several
threads at once, empty targets, the zero mode, single precision, the Laplace energy, forces and
exclusions, and the validation of each of these.

Accuracy of the kernels is checked by the C++ tests against an independent classical Ewald sum
(tests/test_ewald_stresslet.cpp, tests/test_ewald_accuracy.cpp); here the Laplace values are
checked against tests/python/ewald_reference.py and the Stokes kernels for consistency
(one-shot == set_points + evaluate, combined == stokeslet + stresslet, threads == serial).

Run: pip install /work/main && python -m pytest tests/python
"""

import inspect
import math
import threading

import numpy as np
import pytest

import elliptica
from ewald_reference import laplace_reference

L = np.array([1.0, 1.3, 0.8])  # non-cubic box
N = 24
MU = 0.7
WIGNER_SC = 2.8372974794806  # simple cubic lattice sum with background

KERNELS = ["laplace", "stokeslet", "stresslet", "stokes-combined"]
DOUBLE_LAYER = {"stresslet", "stokes-combined"}


def rel_rms(err, ref):
    return float(np.sqrt(np.mean(np.square(err))) / np.sqrt(np.mean(np.square(ref))))


def raises_invalid(match=None):
    return pytest.raises(elliptica.InvalidArgumentError, match=match)


@pytest.fixture(scope="module")
def system():
    rng = np.random.default_rng(20250101)
    x = rng.random((N, 3)) * L
    q = rng.standard_normal(N)
    f = rng.standard_normal((N, 3))
    d = rng.standard_normal((N, 3))
    n = rng.standard_normal((N, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    t = rng.random((9, 3)) * L * 1.4 - 0.2 * L
    return dict(x=x, q=q, f=f, d=d, n=n, t=t)


def densities(kernel, s):
    """(strengths, dipoles) of a kernel."""
    return {
        "laplace": (s["q"], None),
        "stokeslet": (s["f"], None),
        "stresslet": (None, s["d"]),
        "stokes-combined": (s["f"], s["d"]),
    }[kernel]


def one_shot(kernel, s, **kw):
    strengths, dipoles = densities(kernel, s)
    normals = s["n"] if kernel in DOUBLE_LAYER else None
    return elliptica.ewald(kernel, s["x"], strengths, box=L, dipoles=dipoles, normals=normals, **kw)


def values(r):
    return r.values


# ---------------------------------------------------------------- shapes and forms


@pytest.mark.parametrize("kernel", KERNELS)
def test_shapes(system, kernel):
    r = one_shot(kernel, system, tol=1e-6)
    v = r.values
    assert v.dtype == np.float64 and np.all(np.isfinite(v))
    if kernel == "laplace":
        assert v.shape == (N,) and r.velocity is None and r.potential is v
    else:
        assert v.shape == (N, 3) and r.potential is None and r.field is None and r.velocity is v
    assert r.energy is None and r.forces is None
    assert r.info.kernel == elliptica._core.kernel_from_string(kernel)
    assert r.info.coincident_pairs == 0 and r.coincident_pairs == 0
    assert r.info.params["xi"] > 0 and r.info.times
    # separate targets
    rt = one_shot(kernel, system, tol=1e-6, targets=system["t"])
    assert rt.values.shape == ((9,) if kernel == "laplace" else (9, 3))


@pytest.mark.parametrize("kernel", KERNELS)
def test_one_shot_equals_set_points_then_evaluate(system, kernel):
    s = system
    r1 = one_shot(kernel, s, tol=1e-8, targets=s["t"])
    plan = elliptica.EwaldPlan(kernel, box=L, tol=1e-8)
    plan.set_points(s["x"], targets=s["t"], normals=s["n"] if kernel in DOUBLE_LAYER else None)
    strengths, dipoles = densities(kernel, s)
    r2 = plan.evaluate(strengths, dipoles)
    assert r2.info.params == r1.info.params
    np.testing.assert_allclose(r2.values, r1.values, rtol=0, atol=1e-13 * np.abs(r1.values).max())
    # keyword form, evaluated again on the same plan: the same numbers
    r3 = plan.evaluate(strengths=strengths, dipoles=dipoles)
    np.testing.assert_allclose(r3.values, r2.values, rtol=0, atol=1e-13 * np.abs(r1.values).max())
    assert "tune" not in r3.info.times  # parameters chosen once


@pytest.mark.parametrize("kernel", ["laplace", "stokeslet"])
def test_legacy_one_shot_evaluate_equals_set_points(system, kernel):
    s = system
    strengths, _ = densities(kernel, s)
    old = elliptica.EwaldPlan(kernel, box=L, tol=1e-8)
    a = old.evaluate(s["x"], strengths).values  # the former evaluate(sources, strengths)
    b = old.evaluate(s["x"], strengths, targets=s["t"]).values
    c = old.evaluate(sources=s["x"], strengths=strengths, targets=s["t"]).values
    new = elliptica.EwaldPlan(kernel, box=L, tol=1e-8)
    new.set_points(s["x"])
    a2 = new.evaluate(strengths).values
    scale = np.abs(a).max()
    np.testing.assert_allclose(a2, a, rtol=0, atol=1e-7 * scale)
    new.set_points(s["x"], s["t"])
    b2 = new.evaluate(strengths).values
    np.testing.assert_allclose(b2, b, rtol=0, atol=1e-7 * np.abs(b).max())
    np.testing.assert_allclose(c, b, rtol=0, atol=1e-13 * np.abs(b).max())


@pytest.mark.parametrize("kernel", KERNELS)
def test_tune_then_evaluate(system, kernel):
    s = system
    plan = elliptica.EwaldPlan(kernel, box=L, tol=1e-7)
    assert plan.params["xi"] == 0
    plan.set_points(s["x"], normals=s["n"] if kernel in DOUBLE_LAYER else None)
    strengths, dipoles = densities(kernel, s)
    p = plan.tune(strengths, dipoles)
    assert p["xi"] > 0 and p == plan.params
    assert {"result_scale", "field_scale", "est_relative"} <= set(p)
    r = plan.evaluate(strengths, dipoles)
    assert r.info.params == p and "tune" not in r.info.times


@pytest.mark.parametrize("kernel", KERNELS)
def test_threads_evaluate_one_plan_at_once(system, kernel):
    """evaluate is thread-safe: 4 Python threads on one plan, each with its own densities and
    several calls, give the serial results."""
    s = system
    plan = elliptica.EwaldPlan(kernel, box=L, tol=1e-7, threads=1)
    plan.set_points(s["x"], normals=s["n"] if kernel in DOUBLE_LAYER else None)
    strengths, dipoles = densities(kernel, s)
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(4):
        w = 1.0 + 0.1 * rng.standard_normal(N)  # similar distribution: the parameters stay
        sc = None if strengths is None else (strengths * (w if strengths.ndim == 1 else w[:, None]))
        dp = None if dipoles is None else dipoles * w[:, None]
        jobs.append((sc, dp))
    plan.tune(*jobs[0])
    expected = [plan.evaluate(sc, dp).values for sc, dp in jobs]
    out = [[None] * 3 for _ in range(4)]
    errors = []
    barrier = threading.Barrier(4)

    def work(i):
        try:
            barrier.wait()
            for k in range(3):
                out[i][k] = plan.evaluate(*jobs[i]).values
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for i in range(4):
        for k in range(3):
            np.testing.assert_allclose(out[i][k], expected[i], rtol=0, atol=1e-14 * np.abs(expected[i]).max())
    assert plan.last_times  # the binding's own state stays consistent


def test_combined_equals_stokeslet_plus_stresslet(system):
    s = system
    tol = 1e-9
    kw = dict(tol=tol, viscosity=MU, targets=s["t"])
    u_c = one_shot("stokes-combined", s, **kw).velocity
    u_s = elliptica.ewald("stokeslet", s["x"], s["f"], box=L, **kw).velocity
    u_d = elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"], normals=s["n"], tol=tol,
                          targets=s["t"]).velocity
    assert rel_rms(u_c - (u_s + u_d), u_c) < 10 * tol
    # the viscosity scales only the single layer
    u_c2 = one_shot("stokes-combined", s, tol=tol, viscosity=2 * MU, targets=s["t"]).velocity
    assert rel_rms(u_c2 - (0.5 * u_s + u_d), u_c2) < 10 * tol


def test_stresslet_is_bilinear(system):
    s = system
    tol = 1e-9
    u = one_shot("stresslet", s, tol=tol).velocity
    u2 = elliptica.ewald("stresslet", s["x"], box=L, dipoles=-2.0 * s["d"], normals=s["n"], tol=tol).velocity
    assert rel_rms(u2 + 2.0 * u, u) < 10 * tol
    u3 = elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"], normals=3.0 * s["n"], tol=tol).velocity
    assert rel_rms(u3 - 3.0 * u, u) < 10 * tol


@pytest.mark.parametrize("kernel", ["stresslet", "stokes-combined"])
def test_zero_mode_is_the_linear_k0_term(system, kernel):
    """zero_mode adds a term linear in the (wrapped) target position: the difference of two
    targets' velocities is proportional to their separation, the same for every pair, and it
    is proportional to sum (q . nu)."""
    s = system
    tol = 1e-10
    kw = dict(tol=tol, targets=s["t"] % L)
    off = one_shot(kernel, s, **kw).velocity
    on = one_shot(kernel, s, zero_mode=True, **kw).velocity
    diff = on - off
    V = float(np.prod(L))
    qn = np.sum(s["d"] * s["n"], axis=1)  # q_n . nu_n
    tw, xw = s["t"] % L, s["x"] % L  # wrapped coordinates
    shape = -(qn.sum() * tw - qn @ xw) / V  # -(1/V) sum_n (q_n . nu_n)(x_m - y_n)
    # diff = c * shape; the docs give the term as -(8 pi/V) sum ... before the 1/(8 pi) of the
    # stresslet, so c = 1 (c = 8 pi would mean the prefactor is applied twice or not at all).
    c = float(np.sum(diff * shape) / np.sum(shape * shape))
    assert rel_rms(diff - c * shape, diff) < 1e-6
    assert c == pytest.approx(1.0, rel=1e-6), c
    plan = elliptica.EwaldPlan(kernel, box=L, zero_mode=True)
    assert plan.zero_mode


@pytest.mark.parametrize("kernel", KERNELS)
def test_empty_targets_give_empty_results(system, kernel):
    s = system
    r = one_shot(kernel, s, tol=1e-6, targets=np.zeros((0, 3)), **({"field": True} if kernel == "laplace" else {}))
    if kernel == "laplace":
        assert r.potential.shape == (0,) and r.field.shape == (0, 3)
    else:
        assert r.velocity.shape == (0, 3)
    assert r.values.dtype == np.float64
    r = one_shot(kernel, s, tol=1e-6, targets=[])  # an empty list is an empty set of targets too
    assert r.values.shape[0] == 0


# ---------------------------------------------------------------- Laplace: field, energy, exclusions


def test_single_charge_reproducer():
    """A single charge in a cube: the field vanishes by symmetry, the potential is the Wigner
    constant of the simple cubic lattice with the neutralising background."""
    r = elliptica.ewald("laplace", [[0.31, 0.22, 0.17]], [1.0], box=1.0, tol=1e-8, field=True)
    assert r.potential.shape == (1,) and r.field.shape == (1, 3)
    assert np.linalg.norm(r.field[0]) < 1e-6
    ref, _ = laplace_reference(np.array([[0.31, 0.22, 0.17]]), [1.0], [1.0] * 3, 6.0)
    assert ref[0] == pytest.approx(-WIGNER_SC, rel=1e-12)
    assert r.potential[0] == pytest.approx(ref[0], rel=1e-7)


def energy_close(u, u_ref, phi, q, tol):
    """|u - u_ref| within tol times the scale of the sum 1/2 sum q phi."""
    return abs(u - u_ref) <= tol * 0.5 * float(np.sqrt(np.mean(phi**2))) * float(np.abs(q).sum())


def minimum_image(a, b, box):
    r = a - b
    return r - box * np.round(r / box)


def test_energy_and_forces(system):
    s = system
    tol = 1e-9
    r = elliptica.ewald("laplace", s["x"], s["q"], box=L, tol=tol, field=True, energy=True)
    assert isinstance(r.energy, float) and r.forces.shape == (N, 3) and r.forces.dtype == np.float64
    phi_ref, E_ref = laplace_reference(s["x"], s["q"], L, 5.0)
    U_ref = 0.5 * float(np.dot(s["q"], phi_ref))
    assert energy_close(r.energy, U_ref, phi_ref, s["q"], 10 * tol)
    F_ref = s["q"][:, None] * E_ref
    assert rel_rms(r.forces - F_ref, F_ref) < 10 * tol
    # consistent with the same evaluation's potential and field
    assert r.energy == pytest.approx(0.5 * float(np.dot(s["q"], r.potential)), rel=1e-12)
    np.testing.assert_allclose(r.forces, s["q"][:, None] * r.field, rtol=0, atol=1e-12 * np.abs(r.forces).max())
    plan = elliptica.EwaldPlan("laplace", box=L, energy=True)
    assert plan.energy
    assert plan.evaluate(s["x"], s["q"]).energy is not None  # the former one-shot form too


def test_exclusions_remove_the_direct_pair_terms(system):
    s = system
    tol = 1e-9
    pairs = np.array([[0, 1], [2, 5], [7, 3], [10, 11]])
    base = elliptica.ewald("laplace", s["x"], s["q"], box=L, tol=tol, field=True, energy=True)
    ex = elliptica.ewald("laplace", s["x"], s["q"], box=L, tol=tol, field=True, energy=True, exclusions=pairs)
    x, q = s["x"], s["q"]
    phi, E, U = base.potential.copy(), base.field.copy(), base.energy
    for i, j in pairs:
        rij = minimum_image(x[i], x[j], L)
        d = np.linalg.norm(rij)
        phi[i] -= q[j] / d
        phi[j] -= q[i] / d
        E[i] -= q[j] * rij / d**3
        E[j] += q[i] * rij / d**3
        U -= q[i] * q[j] / d
    assert rel_rms(ex.potential - phi, phi) < 10 * tol
    assert rel_rms(ex.field - E, E) < 10 * tol
    assert energy_close(ex.energy, U, phi, q, 10 * tol)
    F = q[:, None] * E
    assert rel_rms(ex.forces - F, F) < 10 * tol
    # set_exclusions on a plan: the same; an empty list removes them again
    plan = elliptica.EwaldPlan("laplace", box=L, tol=tol, field=True, energy=True)
    plan.set_points(x)
    plan.set_exclusions(pairs.astype(np.float64))  # integral floats (as read from a text file)
    r = plan.evaluate(q)
    assert rel_rms(r.potential - ex.potential, ex.potential) < 1e-12
    plan.set_exclusions(np.zeros((0, 2), dtype=np.int64))
    r = plan.evaluate(q)
    assert rel_rms(r.potential - base.potential, base.potential) < 10 * tol


# ---------------------------------------------------------------- precision


@pytest.mark.parametrize("kernel", KERNELS)
def test_single_precision(system, kernel):
    s = system
    tol = 1e-4
    r64 = one_shot(kernel, s, tol=1e-10)
    r32 = one_shot(kernel, s, tol=tol, precision="single")
    assert r32.values.dtype == np.float64
    assert rel_rms(r32.values - r64.values, r64.values) < tol
    assert elliptica.single_precision_floor(r32.info.params["grid"], N) < tol
    plan = elliptica.EwaldPlan(kernel, box=L, precision=elliptica.Precision.single)
    assert plan.precision == elliptica.Precision.single


def test_single_precision_floor():
    u = 2.0**-24
    assert elliptica.single_precision_floor((64, 64, 64), 10000) == pytest.approx(
        2 * u * math.sqrt(math.log2(64**3) + math.log2(10000)), rel=1e-12)
    assert elliptica.single_precision_floor(32, 100) == elliptica.single_precision_floor((32, 32, 32), 100)


def test_single_precision_below_the_floor_is_a_numerical_error(system):
    with pytest.raises(elliptica.NumericalError, match=r"(?i)single|float32"):
        one_shot("laplace", system, tol=1e-10, precision="single")


def test_bad_precision():
    with raises_invalid(r"(?i)precision"):
        elliptica.EwaldPlan("laplace", precision="quad")
    with raises_invalid(r"(?i)precision"):
        elliptica.EwaldPlan("laplace", precision=32)


# ---------------------------------------------------------------- defaults and call shape


def test_defaults_come_from_the_library():
    d = elliptica.ewald_defaults()
    for fn in (elliptica.EwaldPlan.__init__, elliptica.ewald):
        sig = inspect.signature(fn)
        assert sig.parameters["precision"].default == d.precision
        assert sig.parameters["zero_mode"].default == d.stresslet_zero_mode
        assert sig.parameters["energy"].default == d.compute_energy
        assert sig.parameters["tol"].default == d.tolerance
        assert sig.parameters["viscosity"].default == d.viscosity
        assert sig.parameters["field"].default == d.compute_field
        assert sig.parameters["threads"].default == d.threads
    sig = inspect.signature(elliptica.ewald)
    for name in ("dipoles", "normals", "targets", "exclusions", "precision", "zero_mode", "energy", "tol"):
        assert sig.parameters[name].kind == inspect.Parameter.KEYWORD_ONLY
    plan = elliptica.EwaldPlan()
    assert plan.kernel == d.kernel and plan.precision == d.precision


def test_kernel_names():
    for name, k in [("laplace", elliptica.Kernel.laplace), ("stokeslet", elliptica.Kernel.stokeslet),
                    ("stresslet", elliptica.Kernel.stresslet), ("stokes-combined", elliptica.Kernel.stokes_combined),
                    ("stokes_combined", elliptica.Kernel.stokes_combined), (" Stresslet ", elliptica.Kernel.stresslet)]:
        assert elliptica.EwaldPlan(k).kernel == k
        assert elliptica.EwaldPlan(name).kernel == k


def test_box_is_required(system):
    with pytest.raises(TypeError, match="box"):
        elliptica.ewald("laplace", system["x"], system["q"])


# ---------------------------------------------------------------- bad input


def test_missing_normals(system):
    s = system
    for kernel in DOUBLE_LAYER:
        with raises_invalid(r"(?i)normals"):
            elliptica.ewald(kernel, s["x"], densities(kernel, s)[0], box=L, dipoles=s["d"])
        plan = elliptica.EwaldPlan(kernel, box=L)
        with raises_invalid(r"(?i)normals"):
            plan.set_points(s["x"])


def test_missing_dipoles_or_strengths(system):
    s = system
    with raises_invalid(r"(?i)dipoles"):
        elliptica.ewald("stresslet", s["x"], box=L, normals=s["n"])
    with raises_invalid(r"(?i)dipoles"):
        elliptica.ewald("stokes-combined", s["x"], s["f"], box=L, normals=s["n"])
    with raises_invalid(r"(?i)strengths"):
        elliptica.ewald("stokes-combined", s["x"], box=L, dipoles=s["d"], normals=s["n"])
    with raises_invalid(r"(?i)strengths"):
        elliptica.ewald("laplace", s["x"], box=L)


def test_strengths_given_to_stresslet(system):
    s = system
    with raises_invalid(r"(?i)stresslet.*no strengths"):
        elliptica.ewald("stresslet", s["x"], s["f"], box=L, dipoles=s["d"], normals=s["n"])


def test_dipoles_or_normals_given_to_single_layer(system):
    s = system
    with raises_invalid(r"(?i)dipoles"):
        elliptica.ewald("laplace", s["x"], s["q"], box=L, dipoles=s["d"])
    with raises_invalid(r"(?i)normals"):
        elliptica.ewald("laplace", s["x"], s["q"], box=L, normals=s["n"])
    with raises_invalid(r"(?i)normals"):
        elliptica.ewald("stokeslet", s["x"], s["f"], box=L, normals=s["n"])


def test_wrong_shapes_of_the_double_layer(system):
    s = system
    with raises_invalid(r"dipoles.*\(N, 3\)"):
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"][:, :2], normals=s["n"])
    with raises_invalid(r"normals.*\(N, 3\)"):
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"], normals=s["n"][:, :2])
    with raises_invalid(r"(?i)mismatched.*24 sources.*23 normals"):
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"], normals=s["n"][:-1])
    with raises_invalid(r"(?i)mismatched.*24 sources.*23 dipoles"):
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"][:-1], normals=s["n"])
    with raises_invalid(r"strengths.*\(N, 3\)"):
        elliptica.ewald("stokes-combined", s["x"], s["q"], box=L, dipoles=s["d"], normals=s["n"])
    with raises_invalid(r"(?i)nan|finite|inf"):
        bad = s["n"].copy()
        bad[2, 1] = np.nan
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=s["d"], normals=bad)
    with raises_invalid(r"(?i)nan|finite|inf"):
        bad = s["d"].copy()
        bad[4, 0] = np.inf
        elliptica.ewald("stresslet", s["x"], box=L, dipoles=bad, normals=s["n"])


def test_evaluate_before_set_points(system):
    plan = elliptica.EwaldPlan("stresslet", box=L)
    with raises_invalid():
        plan.evaluate(dipoles=system["d"])


def test_one_shot_form_refused_for_double_layer(system):
    s = system
    plan = elliptica.EwaldPlan("stresslet", box=L)
    with raises_invalid(r"set_points"):
        plan.evaluate(sources=s["x"], targets=s["t"])


@pytest.mark.parametrize(
    "pairs, match",
    [
        ([[0, 24]], r"(?i)range|index"),
        ([[-1, 2]], r"(?i)range|index|negative"),
        ([[3, 3]], r"(?i)itself|i == j|same|distinct|equal"),
        ([[0, 1, 2]], r"\(K, 2\)"),
        ([0, 1], r"\(K, 2\)"),
        ([[0.5, 1]], r"(?i)integer"),
        ([[True, False]], r"(?i)integer"),
        ([["a", "b"]], r"(?i)integer"),
    ],
)
def test_bad_exclusions(system, pairs, match):
    s = system
    with raises_invalid(match):
        elliptica.ewald("laplace", s["x"], s["q"], box=L, exclusions=pairs)


def test_exclusions_need_laplace_with_targets_the_sources(system):
    s = system
    with raises_invalid():
        elliptica.ewald("stokeslet", s["x"], s["f"], box=L, exclusions=[[0, 1]])
    with raises_invalid():
        elliptica.ewald("laplace", s["x"], s["q"], box=L, targets=s["t"], exclusions=[[0, 1]])


def test_energy_needs_laplace_with_targets_the_sources(system):
    s = system
    for kernel in ("stokeslet", "stresslet", "stokes-combined"):
        with raises_invalid(r"(?i)energy"):
            elliptica.EwaldPlan(kernel, energy=True)
    with raises_invalid():
        elliptica.ewald("laplace", s["x"], s["q"], box=L, targets=s["t"], energy=True)


def test_zero_mode_needs_a_double_layer():
    for kernel in ("laplace", "stokeslet"):
        with raises_invalid(r"(?i)zero"):
            elliptica.EwaldPlan(kernel, zero_mode=True)


def test_field_with_stokes_kernels():
    for kernel in ("stresslet", "stokes-combined"):
        with raises_invalid(r"(?i)field"):
            elliptica.EwaldPlan(kernel, field=True)
