"""Independent classical Ewald sums in NumPy (test reference, not part of the package).

Direct evaluation of the Ewald-split sums: real-space images summed explicitly with a cutoff
where erfc and the Gaussian are below 1e-18, the Fourier sum over every k != 0 with
|k| <= 2 xi c (c = 6.5, so exp(-k^2/(4 xi^2)) < 1e-18). Converged to ~1e-14 relative; the
result does not depend on xi (checked in the tests). O(N^2 * images + N * K): small N only.

Conventions as in elliptica: Laplace in Gaussian units, tin-foil (k = 0 excluded),
neutralising background -pi Q / (xi^2 V); stokeslet S(r) = I/r + r r^T/r^3 times 1/(8 pi mu),
k = 0 excluded. Without targets, the self-interaction (same point, zero shift) is excluded;
any target coinciding exactly with a source image also skips that one term.
"""

import math

import numpy as np
from scipy.special import erfc

C_CUT = 6.5  # xi * r_cut and |k| / (2 xi) cutoffs


def _images(L, rcut):
    # |t - x| components are < L, so shifts up to rcut + L are needed per axis.
    n = np.ceil(rcut / L).astype(int) + 1
    axes = [np.arange(-ni, ni + 1) for ni in n]
    g = np.meshgrid(*axes, indexing="ij")
    return np.stack([a.ravel() for a in g], axis=1) * L


def _kvectors(L, kmax):
    n = np.floor(kmax * L / (2 * math.pi)).astype(int)
    axes = [np.arange(-ni, ni + 1) for ni in n]
    g = np.meshgrid(*axes, indexing="ij")
    m = np.stack([a.ravel() for a in g], axis=1)
    k = 2 * math.pi * m / L
    k2 = np.einsum("ij,ij->i", k, k)
    keep = (k2 > 0) & (k2 <= kmax * kmax)
    return k[keep], k2[keep]


def _prep(x, targets, L, xi):
    x = np.asarray(x, dtype=float)
    L = np.asarray(L, dtype=float)
    t = x if targets is None else np.asarray(targets, dtype=float)
    rcut = C_CUT / xi
    return x, t, L, rcut


def laplace_reference(x, q, L, xi, targets=None):
    """Returns (phi (M,), E (M, 3)) of the periodic Coulomb sum."""
    x, t, L, rcut = _prep(x, targets, L, xi)
    q = np.asarray(q, dtype=float).ravel()
    V = float(np.prod(L))
    phi = np.zeros(len(t))
    E = np.zeros((len(t), 3))
    for p in _images(L, rcut):
        r = t[:, None, :] - x[None, :, :] + p
        d = np.sqrt(np.einsum("mnj,mnj->mn", r, r))
        mask = (d > 0) & (d < rcut)
        if not mask.any():
            continue
        ds = np.where(mask, d, 1.0)
        a = np.where(mask, erfc(xi * ds) / ds, 0.0)
        g = np.where(mask, (2 * xi / math.sqrt(math.pi)) * np.exp(-(xi * ds) ** 2), 0.0)
        phi += a @ q
        E += np.einsum("mn,mnj->mj", (a + g) / ds**2 * q[None, :], r)
    k, k2 = _kvectors(L, 2 * xi * C_CUT)
    coef = (4 * math.pi / V) * np.exp(-k2 / (4 * xi * xi)) / k2
    S = np.exp(-1j * (k @ x.T)) @ q  # (K,)
    et = np.exp(1j * (t @ k.T))  # (M, K)
    z = et * (coef * S)[None, :]
    phi += z.real.sum(axis=1)
    E += z.imag @ k
    if targets is None:
        phi -= (2 * xi / math.sqrt(math.pi)) * q
    phi -= math.pi * q.sum() / (xi * xi * V)
    return phi, E


def stokeslet_reference(x, f, L, xi, mu=1.0, targets=None):
    """Returns u (M, 3) of the periodic stokeslet sum, 1/(8 pi mu) included."""
    x, t, L, rcut = _prep(x, targets, L, xi)
    f = np.asarray(f, dtype=float)
    V = float(np.prod(L))
    u = np.zeros((len(t), 3))
    for p in _images(L, rcut):
        r = t[:, None, :] - x[None, :, :] + p
        d = np.sqrt(np.einsum("mnj,mnj->mn", r, r))
        mask = (d > 0) & (d < rcut)
        if not mask.any():
            continue
        ds = np.where(mask, d, 1.0)
        e = np.where(mask, erfc(xi * ds), 0.0)
        g = np.where(mask, (2 * xi / math.sqrt(math.pi)) * np.exp(-(xi * ds) ** 2), 0.0)
        rf = np.einsum("mnj,nj->mn", r, f)
        # erfc(xi r)(f/r + r (r.f)/r^3) + g (r (r.f)/r^2 - f)
        c_f = e / ds - g  # coefficient of f_n
        c_r = (e / ds**3 + g / ds**2) * rf  # coefficient of r
        u += c_f @ f + np.einsum("mn,mnj->mj", c_r, r)
    k, k2 = _kvectors(L, 2 * xi * C_CUT)
    s = k2 / (4 * xi * xi)
    coef = 8 * math.pi * (1 + s) * np.exp(-s) / (k2 * k2)
    F = np.exp(-1j * (k @ x.T)) @ f  # (K, 3)
    kF = np.einsum("kj,kj->k", k, F)
    BF = coef[:, None] * (k2[:, None] * F - k * kF[:, None])
    u += (np.exp(1j * (t @ k.T)) @ BF).real / V
    if targets is None:
        u -= (4 * xi / math.sqrt(math.pi)) * f
    return u / (8 * math.pi * mu)
