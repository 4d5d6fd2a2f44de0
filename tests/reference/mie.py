"""Mie series of a sphere (independent Python reference for the BEM tests and studies).

Convention: time factor e^{-i omega t}, incident plane wave e^{ikz} (z along the incident
direction), radius a, sound-soft (bc "dirichlet": u = 0) or sound-hard ("neumann": du/dn = 0).
u_sc(r, theta) = sum_n i^n (2n+1) a_n h_n(kr) P_n(cos theta), h_n = j_n + i y_n, with
a_n = -j_n(ka)/h_n(ka) (sound-soft) or -j_n'(ka)/h_n'(ka) (sound-hard); the far field
u_inf(theta) = (-i/k) sum_n (2n+1) a_n P_n(cos theta) (u_sc ~ e^{ikr}/r u_inf). Colton & Kress,
Inverse Acoustic and Electromagnetic Scattering Theory, sections 2.4 and 3.3. The series is
truncated at nmax = ka + 4 (ka)^(1/3) + 20 (Wiscombe's rule plus margin), at least 30 terms.
Needs scipy.special.
"""
import numpy as np
import scipy.special as sp


def _nmax(ka):
    return max(30, int(ka + 4 * ka ** (1 / 3) + 20))


def mie_coefficients(k, a, bc, nmax=None):
    """(n, a_n): the orders 0..nmax-1 and the scattering coefficients (complex ndarray)."""
    n = np.arange(nmax or _nmax(k * a))
    if bc == "dirichlet":
        return n, -sp.spherical_jn(n, k * a) / (sp.spherical_jn(n, k * a) + 1j * sp.spherical_yn(n, k * a))
    if bc != "neumann":
        raise ValueError(f"bc must be 'dirichlet' or 'neumann', got {bc!r}")
    return n, -sp.spherical_jn(n, k * a, True) / (sp.spherical_jn(n, k * a, True) + 1j * sp.spherical_yn(n, k * a, True))


def mie_far_field(k, a, cos_theta, bc):
    """u_inf at the angle theta from the incident direction (cos_theta: scalar or ndarray)."""
    n, an = mie_coefficients(k, a, bc)
    return (-1j / k) * sum((2 * m + 1) * an[m] * sp.eval_legendre(m, cos_theta) for m in n)


def mie_scattered(k, a, r, cos_theta, bc):
    """u_sc at distance r >= a from the centre, angle theta from the incident direction."""
    n, an = mie_coefficients(k, a, bc)
    h = lambda m: sp.spherical_jn(m, k * r) + 1j * sp.spherical_yn(m, k * r)  # noqa: E731
    return sum(1j ** m * (2 * m + 1) * an[m] * h(m) * sp.eval_legendre(m, cos_theta) for m in n)
