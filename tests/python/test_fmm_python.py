"""Python API of the Helmholtz FMM (elliptica.HelmholtzFMM) against direct NumPy sums."""
import numpy as np
import pytest

import elliptica


def sphere_points(n, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, 3))
    v /= np.linalg.norm(v, axis=1)[:, None]
    return v.copy(), v.copy(), rng


def direct(x, nrm, k, q, mu):
    """u_i = sum_j G q_j + dG/dn_y mu_j, du/dn_x; G = e^{ikr}/(4 pi r), pairs r = 0 skipped."""
    d = x[:, None, :] - x[None, :, :]  # x_i - y_j
    r = np.linalg.norm(d, axis=2)
    np.fill_diagonal(r, 1.0)
    G = np.exp(1j * k * r) / (4 * np.pi * r)
    g1 = G * (1j * k - 1 / r)  # dG/dr
    rh = d / r[:, :, None]
    rx = np.einsum("ijc,ic->ij", rh, nrm)
    ry = np.einsum("ijc,jc->ij", rh, nrm)
    nn = nrm @ nrm.T
    a = g1 / r
    b = G * ((1j * k - 1 / r) ** 2 + 1 / r**2) - g1 / r
    for M in (G, g1, a, b):
        np.fill_diagonal(M, 0.0)
    u = G @ q - (g1 * ry) @ mu
    dn = (g1 * rx) @ q - (a * nn + b * rx * ry) @ mu
    return u, dn


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_matches_direct_sum(tol):
    x, nrm, rng = sphere_points(2000, 1)
    k = 4.0
    q = rng.standard_normal(2000) + 1j * rng.standard_normal(2000)
    mu = rng.standard_normal(2000) + 1j * rng.standard_normal(2000)
    f = elliptica.HelmholtzFMM(x, nrm, k, tol=tol)
    assert f.order >= 3 and f.setup_seconds >= 0
    u_ref, dn_ref = direct(x, nrm, k, q, mu)
    u = f.apply(q, mu)
    assert u.shape == (2000,) and u.dtype == np.complex128
    assert rel(u, u_ref) < tol
    u2, dn = f.apply(charges=q, dipoles=mu, normal_derivative=True)
    assert rel(u2, u_ref) < tol and rel(dn, dn_ref) < tol
    # single layer only, double layer only, explicit max_leaf, complex k
    us = f.apply(charges=q)
    assert rel(us, direct(x, nrm, k, q, 0 * mu)[0]) < tol
    ud = f.apply(dipoles=mu)
    assert rel(ud, direct(x, nrm, k, 0 * q, mu)[0]) < tol
    g = elliptica.HelmholtzFMM(x, nrm, 3 + 0.5j, tol=tol, max_leaf=40)
    assert rel(g.apply(q, mu), direct(x, nrm, 3 + 0.5j, q, mu)[0]) < tol
    assert np.all(f.apply() == 0)


def test_no_normals_and_bad_inputs():
    x, nrm, rng = sphere_points(300, 2)
    q = rng.standard_normal(300) + 0j
    f = elliptica.HelmholtzFMM(x, None, 2.0)
    assert f.apply(q).shape == (300,)
    E = elliptica.InvalidArgumentError
    with pytest.raises(E):
        f.apply(dipoles=q)  # no normals
    with pytest.raises(E):
        f.apply(q, normal_derivative=True)
    with pytest.raises(E):
        f.apply(q[:10])
    bad = q.copy()
    bad[3] = np.nan
    with pytest.raises(E):
        f.apply(bad)
    with pytest.raises(E):
        elliptica.HelmholtzFMM(x[:, :2], None, 1.0)
    with pytest.raises(E):
        elliptica.HelmholtzFMM(x, nrm[:10], 1.0)
    xn = x.copy()
    xn[0, 0] = np.inf
    with pytest.raises(E):
        elliptica.HelmholtzFMM(xn, None, 1.0)
    for k in (0.0, 1.0 - 0.5j, np.nan, "a"):
        with pytest.raises(E):
            elliptica.HelmholtzFMM(x, nrm, k)
    for tol in (0.0, 0.7):
        with pytest.raises(E):
            elliptica.HelmholtzFMM(x, nrm, 1.0, tol=tol)
    with pytest.raises(E):
        elliptica.HelmholtzFMM(x, nrm, 1.0, max_leaf=0)
    with pytest.raises(E):
        elliptica.HelmholtzFMM(x, nrm, 500.0, max_leaf=10)  # beyond the low-frequency regime
    with pytest.raises(E):
        elliptica.HelmholtzFMM(np.zeros((0, 3)), None, 1.0)
    with pytest.raises(E, match="unit"):
        elliptica.HelmholtzFMM(x, 2 * nrm, 1.0)
    for k in ("1", True):
        with pytest.raises(E, match="k must be a number"):
            elliptica.HelmholtzFMM(x, nrm, k)


def test_fmm_keyword_options_and_threads():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 3))
    nrm = x / np.linalg.norm(x, axis=1)[:, None]
    x = nrm.copy()
    q = rng.normal(size=400) + 1j * rng.normal(size=400)
    with pytest.raises(TypeError):
        elliptica.HelmholtzFMM(x, nrm, 1.0, 1e-5)  # tol is keyword-only
    a = elliptica.HelmholtzFMM(x, nrm, 1.0, tol=1e-6, max_leaf=20, threads=1).apply(q, normal_derivative=True)
    b = elliptica.HelmholtzFMM(x, nrm, 1.0, tol=1e-6, max_leaf=20, threads=2).apply(q, normal_derivative=True)
    for u, v in zip(a, b):
        assert np.linalg.norm(u - v) <= 1e-13 * np.linalg.norm(u)
    with pytest.raises(elliptica.InvalidArgumentError, match="threads"):
        elliptica.HelmholtzFMM(x, nrm, 1.0, threads=-1)
