"""Fast multipole method for the 3D Helmholtz kernel (C++ core:
``include/elliptica/fmm/helmholtz_fmm.hpp``, black-box Chebyshev FMM, low-frequency regime).

Sums computed over the same N points ``x_i`` (targets = sources) with unit normals ``n_i``::

    u(x_i)       = sum_{j: x_j != x_i} [ G(x_i, x_j) q_j + dG/dn_y(x_i, x_j) mu_j ]
    du/dn_x(x_i) = sum_{j: x_j != x_i} [ dG/dn_x q_j + d^2G/(dn_x dn_y) mu_j ]

with ``G(x, y) = e^{ik|x-y|} / (4 pi |x-y|)`` and ``dG/dn_y = n_y . grad_y G`` (the double-layer
kernel); pairs at distance exactly 0 are skipped. ``Im k >= 0``.
"""

import numpy as np

from . import _core
from ._core import InvalidArgumentError
from ._format import show as _show

__all__ = ["HelmholtzFMM"]

#: The C++ defaults of ``fmm::HelmholtzFmmOptions`` (``tol``, ``max_leaf`` 0 = automatic, ``threads``).
FMM_DEFAULTS = dict(_core.fmm_defaults())


def points3(a, what, single_row=False, allow_empty=True):
    """Checked contiguous float64 (M, 3) array (shared with _bem.py): InvalidArgumentError naming
    ``what`` for complex or non-numeric input, another shape, NaN/Inf, or (unless allow_empty) no
    rows. ``single_row``: a 1-D array of 3 numbers becomes one row."""
    if np.iscomplexobj(a):
        raise InvalidArgumentError(f"{what} must be real, got a complex array")
    try:
        x = np.ascontiguousarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what}: not a numeric array: {e}") from None
    if single_row and x.ndim == 1 and x.shape[0] == 3:
        x = x.reshape(1, 3)
    if x.ndim != 2 or x.shape[1] != 3:
        raise InvalidArgumentError(f"{what} must have shape (M, 3), got {x.shape}")
    if not allow_empty and x.shape[0] == 0:
        raise InvalidArgumentError(f"{what} is empty")
    if not np.all(np.isfinite(x)):
        raise InvalidArgumentError(f"{what} contains NaN or Inf")
    return x


def _points(a, what):
    return points3(a, what, allow_empty=False)


def _strengths(a, n, what):
    if a is None:
        return None
    try:
        v = np.ascontiguousarray(a, dtype=np.complex128)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what}: not a numeric array: {e}") from None
    if v.ndim != 1 or v.shape[0] != n:
        raise InvalidArgumentError(f"{what} must have shape ({n},), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise InvalidArgumentError(f"{what} contains NaN or Inf")
    return v


class HelmholtzFMM:
    """FMM plan for Helmholtz single- and double-layer sums on a fixed point set.

    ``HelmholtzFMM(points, normals, k, *, tol=1e-5, max_leaf=None, threads=0)`` (the keyword
    defaults are those of the C++ ``HelmholtzFmmOptions``, ``FMM_DEFAULTS``)

    * ``points``: ``ndarray((N, 3), float64)``, the sources and targets;
    * ``normals``: ``ndarray((N, 3), float64)`` unit normals, or ``None`` (then no dipoles and no
      normal derivatives);
    * ``k``: wave number (real or complex with ``Im k >= 0``, nonzero). The FMM is for the
      low-frequency regime: the level-2 boxes (a quarter of the bounding cube) may be at most 2
      wavelengths wide, otherwise InvalidArgumentError -- unless the tree has fewer than 3
      levels (few points or a large ``max_leaf``), when nearly everything is summed directly and
      any ``k`` is accepted;
    * ``tol``: target relative accuracy (RMS error over the targets divided by the RMS of the
      result), in (1e-14, 0.5); it sets the Chebyshev order ``p`` (``.order``);
    * ``max_leaf``: maximum points per leaf box of the octree; ``None`` chooses the depth
      automatically (from ``p``);
    * ``threads``: OpenMP threads of the set-up and of ``apply`` (0: all available); used locally,
      the process-wide OpenMP setting is not changed.

    The set-up (tree, translation operators) happens here; ``.setup_seconds`` is its wall time.
    ``apply(charges=None, dipoles=None, normal_derivative=False)`` evaluates, for complex
    ``charges`` q ``ndarray((N,), complex128)`` and/or ``dipoles`` mu ``ndarray((N,), complex128)``
    (``None`` = zero; other numeric dtypes are converted)::

        u_i = sum_{j, x_j != x_i} e^{ik r_ij}/(4 pi r_ij) q_j + n_j . grad_y(e^{ik r}/(4 pi r))(x_i, x_j) mu_j

    and returns ``u`` (``ndarray((N,), complex128)``), or ``(u, du/dn_x)`` when
    ``normal_derivative``. The GIL is released during the set-up and ``apply``.
    The dipole term is ``+dG/dn_y = n_j . grad_y G``. FMM3D's ``hfmm3d`` (fmm3dpy 2.1.0, which
    includes the 1/(4 pi)) computes the same ``u`` with ``charges=q, dipvec=(normals * mu[:, None]).T``
    (checked numerically against a direct sum).

    Errors: InvalidArgumentError (a ValueError) for wrong shapes, NaN/Inf, bad ``k`` or ``tol``,
    dipoles or normal derivatives without normals, a problem outside the low-frequency regime.
    """

    def __init__(self, points, normals, k, *, tol=FMM_DEFAULTS["tol"], max_leaf=None,
                 threads=FMM_DEFAULTS["threads"]):
        x = _points(points, "points")
        nrm = None
        if normals is not None:
            nrm = _points(normals, "normals")
            if nrm.shape != x.shape:
                raise InvalidArgumentError(f"normals must have shape {x.shape}, got {nrm.shape}")
            bad = np.flatnonzero(np.abs(np.linalg.norm(nrm, axis=1) - 1.0) > 1e-6)
            if bad.size:
                raise InvalidArgumentError(f"normals must be unit vectors: row {bad[0]} has length "
                                           f"{np.linalg.norm(nrm[bad[0]]):.6g}")
        if isinstance(k, (str, bytes, bool, np.bool_)):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}")
        try:
            kc = complex(k)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}") from None
        if not (np.isfinite(kc.real) and np.isfinite(kc.imag)) or kc == 0 or kc.imag < 0:
            raise InvalidArgumentError(f"k must be finite, nonzero, with Im k >= 0, got {_show(k)}")
        tol = float(tol)
        if not (1e-14 < tol < 0.5):
            raise InvalidArgumentError(f"tol must be in (1e-14, 0.5), got {tol}")
        if max_leaf is None:
            ml = 0
        else:
            ml = int(max_leaf)
            if ml < 1:
                raise InvalidArgumentError(f"max_leaf must be >= 1 or None, got {max_leaf}")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
            raise InvalidArgumentError(f"threads must be an integer >= 0 (0: all available), got {_show(threads)}")
        self._n = x.shape[0]
        self._has_normals = nrm is not None
        self._impl = _core._HelmholtzFMM(x, nrm, kc, tol, ml, int(threads))

    def apply(self, charges=None, dipoles=None, normal_derivative=False):
        q = _strengths(charges, self._n, "charges")
        mu = _strengths(dipoles, self._n, "dipoles")
        if (mu is not None or normal_derivative) and not self._has_normals:
            raise InvalidArgumentError("dipoles and normal derivatives need normals")
        return self._impl.apply(q, mu, bool(normal_derivative))

    @property
    def order(self):
        """Chebyshev nodes per axis p."""
        return self._impl.order

    @property
    def setup_seconds(self):
        """Wall time of the set-up (seconds)."""
        return self._impl.setup_seconds

    @property
    def leaf_level(self):
        return self._impl.leaf_level

    @property
    def k(self):
        return self._impl.k

    def __repr__(self):
        return f"HelmholtzFMM(N={self._n}, k={self.k}, order={self.order}, leaf_level={self.leaf_level})"
