"""Free-space (0P) spectral Ewald from Python (issue 31): the ``periodicity`` keyword, the laplace
potential and the stokeslet velocity against direct sums in numpy, the keyword's forms and
refusals, the one-shot ``ewald`` without a box; the stresslet's double layer on a sphere in every
periodicity (its analytic value). Cost: about 6 s."""
import numpy as np
import pytest

import elliptica as el


def direct_laplace(x, q, t):
    d = np.linalg.norm(t[:, None] - x[None], axis=2)
    with np.errstate(divide="ignore"):
        w = np.where(d > 0, 1.0 / d, 0.0)
    return w @ q


def direct_stokeslet(x, f, t, mu=1.0):
    r = t[:, None] - x[None]
    d = np.linalg.norm(r, axis=2)
    d[d == 0] = np.inf
    u = (f[None] / d[..., None]).sum(1) + (r * (np.einsum("mnk,nk->mn", r, f) / d ** 3)[..., None]).sum(1)
    return u / (8 * np.pi * mu)


def rel_rms(a, ref):
    return float(np.sqrt(np.sum((a - ref) ** 2) / np.sum(ref ** 2)))


@pytest.fixture(scope="module")
def cloud():
    r = np.random.default_rng(31)
    x = r.random((500, 3)) * [1.0, 0.6, 1.4] + [5.0, -2.0, 0.0]
    q = r.random(500) - 0.3  # a net charge
    f = r.random((500, 3)) - 0.3  # a net force
    t = r.random((60, 3)) * 3 + [4.0, -3.0, -1.0]  # around and inside the sources
    return x, q, f, t


@pytest.mark.parametrize("tol", [1e-4, 1e-8, 1e-11])
def test_laplace_meets_the_tolerance(cloud, tol):
    x, q, _, _ = cloud
    plan = el.EwaldPlan("laplace", periodicity="0P", tol=tol)
    plan.set_points(x)
    res = plan.evaluate(q)
    assert rel_rms(res.potential, direct_laplace(x, q, x)) < tol
    p = plan.params
    assert p["truncation_radius"] > 0 and all(b > 0 for b in p["fft_box"])
    assert plan.periodicity == "0P"


@pytest.mark.parametrize("tol", [1e-4, 1e-9])
def test_stokeslet_with_targets_meets_the_tolerance(cloud, tol):
    x, _, f, t = cloud
    plan = el.EwaldPlan("stokeslet", periodicity=(False, False, False), tol=tol, viscosity=2.5)
    plan.set_points(x, targets=t)
    res = plan.evaluate(f)
    assert res.velocity.shape == (60, 3)
    assert rel_rms(res.velocity, direct_stokeslet(x, f, t, 2.5)) < tol


def test_field_energy_forces(cloud):
    x, q, _, _ = cloud
    r = x[:, None] - x[None]
    d = np.linalg.norm(r, axis=2)
    np.fill_diagonal(d, np.inf)
    E = (q[None, :, None] * r / d[..., None] ** 3).sum(1)
    phi = direct_laplace(x, q, x)
    res = el.ewald("laplace", x, q, periodicity="0P", tol=1e-9, field=True, energy=True)
    assert rel_rms(res.field, E) < 1e-9
    assert abs(res.energy - 0.5 * q @ phi) < 1e-9 * 0.5 * np.abs(q).sum() * np.sqrt(np.mean(phi ** 2))
    assert np.allclose(res.forces, q[:, None] * res.field, rtol=1e-12, atol=0)


def test_one_shot_needs_no_box(cloud):
    x, q, _, _ = cloud
    res = el.ewald("laplace", x, q, periodicity="none", tol=1e-7)
    assert rel_rms(res.potential, direct_laplace(x, q, x)) < 1e-7
    with pytest.raises(TypeError, match="box"):
        el.ewald("laplace", x, q)  # 3P still needs its box


def test_refusals():
    with pytest.raises(el.InvalidArgumentError, match="box does not apply"):
        el.EwaldPlan("laplace", periodicity="0P", box=2.0)
    for per in ["0P", "1P", "2P", "xz"]:
        with pytest.raises(el.InvalidArgumentError, match=f"stresslet_zero_mode\\) is a 3P term; with periodicity {per}"):
            el.EwaldPlan("stresslet", periodicity=per, zero_mode=True)

    with pytest.raises(el.InvalidArgumentError, match="grid override"):
        el.EwaldPlan("laplace", periodicity="0P", grid=32)
    for bad in ["4P", "", (1, 0, 0), (True, False), 3]:
        with pytest.raises(el.InvalidArgumentError, match="periodicity"):
            el.EwaldPlan("laplace", periodicity=bad)


def test_periodic_default_unchanged():
    plan = el.EwaldPlan("laplace", box=1.0)
    assert plan.periodicity == "3P"
    assert "periodicity='3P'" in repr(plan)
    assert el.ewald_defaults().periodicity == (True, True, True) or list(el.ewald_defaults().periodicity) == [True] * 3


def test_doubly_and_singly_periodic_madelung_constants():
    # 2P: the rock-salt (100) monolayer, -M2 q / a with M2 = 1.6155426267128247 (Zucker 1974)
    a = 0.4
    x = np.array([[0, 0, 0], [a, 0, 0], [0, a, 0], [a, a, 0]], float)
    q = np.array([1.0, -1.0, -1.0, 1.0])
    res = el.ewald("laplace", x, q, box=(2 * a, 2 * a, 1.0), periodicity="2P", tol=1e-11, tol_kind="absolute")
    assert np.allclose(res.potential, -1.6155426267128247 * q / a, rtol=0, atol=1e-10)
    # 1P: the alternating chain along z, -2 ln 2 q / a; the axis may be any (here y: "y")
    x = np.array([[0.1, 0.0, 0.3], [0.1, a, 0.3]])
    q = np.array([1.0, -1.0])
    res = el.ewald("laplace", x, q, box=(1.0, 2 * a, 1.0), periodicity="y", tol=1e-11, tol_kind="absolute")
    assert np.allclose(res.potential, -2 * np.log(2) * q / a, rtol=0, atol=1e-10)


def test_singly_periodic_line_of_equal_forces_and_charges():
    # one charge / force per period L on a line along z: the image sum with the divergent
    # (2 / L) ln(2 (P + 1/2) L) per unit charge (times I + e_z e_z^T per unit force) removed is
    # sum_{p != 0} 1 / |p L| - ... -> (2 / L)(gamma - ln(2 L)) (harmonic numbers); for a force along
    # z the kernel I / r + r r^T / r^3 doubles it, across the line it is the same
    L, mu, gamma = 0.7, 1.3, 0.5772156649015329
    c = 2 / L * (gamma - np.log(2 * L))
    x = np.array([[0.2, -0.1, 0.3]])
    res = el.ewald("laplace", x, np.array([1.5]), box=(1.0, 1.0, L), periodicity="1P", tol=1e-11,
                   tol_kind="absolute")
    assert abs(res.potential[0] - 1.5 * c) < 1e-10
    f = np.array([[0.4, -0.3, 0.9]])
    res = el.ewald("stokeslet", x, f, box=(1.0, 1.0, L), periodicity="1P", viscosity=mu, tol=1e-11,
                   tol_kind="absolute")
    want = c * f[0] * np.array([1.0, 1.0, 2.0]) / (8 * np.pi * mu)
    assert np.allclose(res.velocity[0], want, rtol=0, atol=1e-10)


def test_free_space_pressure():
    # p = 1/(4 pi) sum f . r / r^3 (a net force), against numpy's direct sum
    r = np.random.default_rng(3)
    x = r.random((200, 3)) * [1.0, 0.5, 0.8]
    f = r.random((200, 3)) - 0.3
    d = x[:, None] - x[None]
    rr = np.linalg.norm(d, axis=2)
    np.fill_diagonal(rr, np.inf)
    ref = (np.einsum("mnk,nk->mn", d, f) / rr ** 3).sum(1) / (4 * np.pi)
    res = el.ewald("stokeslet", x, f, periodicity="0P", tol=1e-9, pressure=True)
    assert np.sqrt(np.mean((res.pressure - ref) ** 2) / np.mean(ref ** 2)) < 1e-9


def sphere(nt, a, c):
    """Gauss-Legendre (nt) x trapezoid (2 nt) quadrature of the sphere |x - c| = a: points,
    outward normals, weights (spectral: 2e-14 at nt = 40 for targets within 0.6 a of the centre
    or beyond 1.5 a, measured against the exact value with a direct sum)."""
    t, w = np.polynomial.legendre.leggauss(nt)
    m = 2 * nt
    ph = 2 * np.pi * np.arange(m) / m
    ct = np.repeat(t, m)
    st = np.sqrt(1 - ct ** 2)
    pp = np.tile(ph, nt)
    nu = np.stack([st * np.cos(pp), st * np.sin(pp), ct], 1)
    return np.asarray(c) + a * nu, nu, np.repeat(w, m) * (2 * np.pi / m) * a * a


@pytest.mark.parametrize("periodicity", ["0P", "2P", "1P", "3P"])
def test_stresslet_double_layer_of_a_sphere(periodicity):
    """A constant double-layer density q on a closed surface: (1/8 pi) int T(x - y) q nu(y) dS(y)
    = q inside, 0 outside (with T = -6 r r r / r^5, r = target - source: at the centre of a unit
    sphere 6 int n n dS / 8 pi = I). The surface's stresslet moment q int nu^T dS vanishes, so
    the images' lattice sums converge absolutely and every free-axis periodicity gives the same:
    q inside each sphere, 0 outside them, whatever the k = 0 convention. 3P drops k = 0 (the
    velocity's mean over the cell is zero): q (chi - 4 pi a^3 / (3 L^3)), the ball's volume
    fraction subtracted."""
    a, L = 1.0, 3.5
    y, nu, w = sphere(40, a, (1.0, 1.2, 1.4))
    q = np.array([0.3, -0.7, 0.5])
    r = np.random.default_rng(5)
    d = r.normal(size=(40, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    inside = (1.0, 1.2, 1.4) + d[:20] * r.uniform(0, 0.6 * a, (20, 1))
    # outside: beyond 1.5 a from the sphere and its images (the cell's far corner region)
    outside = (1.0, 1.2, 1.4) + d[20:] * 1.5 * a
    far = np.array([[1.0 + 0.5 * L, 1.2 + 0.5 * L, 1.4 + 0.5 * L], [1.0 + 0.5 * L, 1.2, 1.4 + 0.5 * L]])
    trg = np.vstack([inside, outside, far])
    res = el.ewald("stresslet", y, box=None if periodicity == "0P" else L, periodicity=periodicity,
                   dipoles=q[None] * w[:, None], normals=nu, targets=trg, tol=1e-10)
    want = np.vstack([np.tile(q, (20, 1)), np.zeros((22, 3))])
    if periodicity == "3P":
        want -= q * 4 * np.pi * a ** 3 / (3 * L ** 3)
    err = np.abs(res.velocity - want).max()
    assert err < 1e-9, (periodicity, err)
