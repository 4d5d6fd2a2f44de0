"""Spectral Ewald summation: :class:`EwaldPlan` and :func:`ewald` (see the package docstring
for the conventions)."""

import numbers
import operator

import numpy as np

from . import _core
from ._core import InvalidArgumentError, Kernel, ToleranceKind

__all__ = ["EwaldPlan", "ewald"]

_KERNELS = {"laplace": Kernel.laplace, "stokeslet": Kernel.stokeslet}
_TOL_KINDS = {"relative": ToleranceKind.relative, "absolute": ToleranceKind.absolute}


def _parse_enum(value, table, enum_type, what):
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.strip().lower() in table:
        return table[value.strip().lower()]
    raise InvalidArgumentError(
        f"{what} must be one of {sorted(table)} (or elliptica.{enum_type.__name__}), got {value!r}"
    )


def _as_float64(x, name):
    """C-contiguous float64 copy/view of an array-like; InvalidArgumentError if not numeric."""
    if np.iscomplexobj(x):
        raise InvalidArgumentError(f"{name} must be real, got a complex array")
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{name} is not a numeric array: {e}") from None


def _as_rows(x, name, cols, allow_flat=False):
    """(N, cols) float64 C-contiguous array (or (N,) when allow_flat and cols == 1)."""
    a = _as_float64(x, name)
    ok = a.ndim == 2 and a.shape[1] == cols
    if allow_flat and a.ndim == 1:
        ok = True
    if not ok:
        want = f"(N,) or (N, 1)" if allow_flat else f"(N, {cols})"
        raise InvalidArgumentError(f"{name} must have shape {want}, got shape {a.shape}")
    if a.shape[0] == 0:
        raise InvalidArgumentError(f"{name} is empty (shape {a.shape}): at least one point is needed")
    return a


def _as_box(box):
    if isinstance(box, numbers.Real):
        box = (box, box, box)
    try:
        b = tuple(float(v) for v in box)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"box must be a positive number or 3 positive lengths, got {box!r}") from None
    if len(b) != 3:
        raise InvalidArgumentError(f"box must have 3 lengths (L1, L2, L3), got {len(b)}: {box!r}")
    return b


def _as_int(v, name):
    try:
        return operator.index(v)
    except TypeError:
        raise InvalidArgumentError(f"{name} must be an integer, got {v!r}") from None


def _as_grid(grid):
    if grid is None:
        return None
    if isinstance(grid, numbers.Integral):
        g = _as_int(grid, "grid")
        return (g, g, g)
    try:
        g = tuple(_as_int(v, "grid") for v in grid)
    except TypeError:
        raise InvalidArgumentError(f"grid must be an integer or 3 integers, got {grid!r}") from None
    if len(g) != 3:
        raise InvalidArgumentError(f"grid must have 3 sizes (M1, M2, M3), got {len(g)}: {grid!r}")
    return g


def _opt_float(v, name):
    if v is None:
        return None
    return _num(v, name)


def _num(v, name):
    try:
        return float(v)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a number, got {v!r}") from None


class EwaldPlan:
    """A spectral Ewald plan: configured once, evaluated many times.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet"} or Kernel
        ``laplace``: periodic 1/r potential (Gaussian units, tin-foil, neutralising background).
        ``stokeslet``: periodic Stokes velocity ``1/(8 pi mu) sum S(r) f`` (k = 0 excluded).
    box : float or (3,) sequence of float
        Box lengths (L1, L2, L3) > 0; a single number gives a cube.
    tol : float
        Requested RMS error, 0 < tol < 1 (default 1e-6), read as ``tol_kind`` says.
    tol_kind : {"relative", "absolute"} or ToleranceKind
        ``relative`` (default): RMS error / RMS of the result (of the field for ``E``).
        ``absolute``: RMS error in the result's units.
    viscosity : float
        mu > 0 (stokeslet only; default 1).
    field : bool
        Laplace only: also compute ``E = -grad phi``.
    threads : int
        OpenMP threads; 0 (default) uses all available.
    xi, rc, grid, P, beta, degree : optional overrides
        Ewald parameter xi [1/length], real-space cutoff rc [length] (<= min(L)), FFT grid
        (int or 3 ints, >= 4), window support P (2..32 grid points, <= M), Kaiser-Bessel shape
        beta (default 2.5 P), piecewise polynomial degree of the window. Unset ones are chosen
        from ``tol`` at the first evaluation (see :attr:`params`).

    Raises
    ------
    InvalidArgumentError
        Non-positive or non-finite box, tol outside (0, 1), viscosity <= 0, ``field=True`` with
        the stokeslet, unknown kernel, invalid overrides.

    Notes
    -----
    Parameters are chosen at the first :meth:`evaluate` (they depend on N and the strengths)
    and kept while N stays within a factor 2 and the sum of squared strengths within a factor
    4; :meth:`retune` forces a new choice. The GIL is released during the computation; calls on
    one plan from several threads are serialised.
    """

    def __init__(
        self,
        kernel="laplace",
        box=(1.0, 1.0, 1.0),
        tol=1e-6,
        tol_kind="relative",
        viscosity=1.0,
        field=False,
        threads=0,
        xi=None,
        rc=None,
        grid=None,
        P=None,
        beta=None,
        degree=None,
    ):
        self._kernel = _parse_enum(kernel, _KERNELS, Kernel, "kernel")
        self._field = bool(field)
        self._plan = _core._EwaldPlan(
            self._kernel,
            _as_box(box),
            _num(tol, "tol"),
            _parse_enum(tol_kind, _TOL_KINDS, ToleranceKind, "tol_kind"),
            _num(viscosity, "viscosity"),
            self._field,
            _as_int(threads, "threads"),
            _opt_float(xi, "xi"),
            _opt_float(rc, "rc"),
            _as_grid(grid),
            None if P is None else _as_int(P, "P"),
            _opt_float(beta, "beta"),
            None if degree is None else _as_int(degree, "degree"),
        )

    @property
    def kernel(self):
        """The kernel (:class:`Kernel`)."""
        return self._kernel

    @property
    def field(self):
        """True when evaluate also returns the Laplace field E = -grad phi."""
        return self._field

    def _check(self, sources, strengths, targets):
        src = _as_rows(sources, "sources", 3)
        if self._kernel == Kernel.laplace:
            q = _as_rows(strengths, "strengths", 1, allow_flat=True)
        else:
            q = _as_rows(strengths, "strengths", 3)
        if q.shape[0] != src.shape[0]:
            raise InvalidArgumentError(
                f"mismatched lengths: {src.shape[0]} sources but {q.shape[0]} strengths"
            )
        tgt = None if targets is None else _as_rows(targets, "targets", 3)
        return src, q, tgt

    def evaluate(self, sources, strengths, targets=None):
        """Evaluates the periodic sum.

        Parameters
        ----------
        sources : array_like, shape (N, 3)
            Source positions (any real values; wrapped into the box).
        strengths : array_like
            Laplace: charges, shape (N,) or (N, 1). Stokeslet: forces, shape (N, 3).
        targets : array_like, shape (M, 3), optional
            Evaluation points. Default: the sources themselves, self-interaction excluded.

        Returns
        -------
        Laplace: ``phi`` of shape (M,), or ``(phi, E)`` with ``E`` of shape (M, 3) when the plan
        was made with ``field=True``. Stokeslet: velocity ``u`` of shape (M, 3). float64 arrays.
        M = N without targets.

        Raises
        ------
        InvalidArgumentError
            Wrong shapes, mismatched lengths, empty arrays, NaN or Inf values, a coordinate
            farther than 1e15 box lengths from the box (nearer ones are wrapped exactly).
        NumericalError
            No parameters meet the tolerance.
        ResourceError
            No parameters fit the size limits (FFT grids <= 8 GiB, <= 1e12 pair checks: a box of
            extreme aspect ratio), or the grids exceed the machine's memory; checked before
            anything is allocated.
        """
        src, q, tgt = self._check(sources, strengths, targets)
        values, field = self._plan.evaluate(src, q, tgt)
        if self._field:
            return values, field
        return values

    __call__ = evaluate

    def tune(self, sources, strengths, targets=None):
        """Chooses the parameters for these inputs now (normally done by the first
        :meth:`evaluate`) and returns them as :attr:`params` does. Same arguments and errors
        as :meth:`evaluate`."""
        src, q, tgt = self._check(sources, strengths, targets)
        return self._plan.tune(src, q, tgt)

    def retune(self):
        """Forces a new choice of parameters at the next evaluation."""
        self._plan.retune()

    @property
    def params(self):
        """Parameters in use, a dict: ``xi`` [1/length], ``rc`` [length], ``grid`` (M1, M2, M3),
        ``h`` grid spacings, ``cells`` near-field cells per axis, ``P`` window support,
        ``beta`` window shape, ``poly_degree``, ``eps_abs`` absolute RMS target, ``result_rms``,
        the estimated RMS errors ``est_real``, ``est_fourier``, ``est_window``, ``est_total``,
        ``est_relative``, and ``describe`` (a human-readable report). All zero before the
        first evaluate/tune."""
        return self._plan.params

    @property
    def last_times(self):
        """Wall-clock seconds per stage of the last evaluation (dict, e.g. P2P, P2G, FFT, CNV,
        IFFT, G2P, self, setup)."""
        return self._plan.last_times

    def __repr__(self):
        return f"EwaldPlan(kernel={self._kernel.name!r}, field={self._field})"


def ewald(kernel, sources, strengths, box, tol=1e-6, targets=None, **options):
    """One-shot spectral Ewald sum: ``EwaldPlan(kernel, box, tol, **options).evaluate(...)``.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet"} or Kernel
    sources : array_like, shape (N, 3)
    strengths : array_like, shape (N,) / (N, 1) (laplace) or (N, 3) (stokeslet)
    box : float or (3,) sequence, box lengths > 0
    tol : float, requested RMS error (relative by default), 0 < tol < 1
    targets : array_like, shape (M, 3), optional (default: the sources, self excluded)
    **options : tol_kind, viscosity, field, threads, xi, rc, grid, P, beta, degree
        (see :class:`EwaldPlan`).

    Returns
    -------
    As :meth:`EwaldPlan.evaluate`: phi (M,), or (phi, E (M, 3)) with ``field=True``; u (M, 3)
    for the stokeslet.

    Raises
    ------
    InvalidArgumentError, NumericalError, ResourceError (see :class:`EwaldPlan`).
    """
    return EwaldPlan(kernel, box, tol, **options).evaluate(sources, strengths, targets)
