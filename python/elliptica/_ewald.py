"""Spectral Ewald summation: :class:`EwaldPlan`, :func:`ewald` and their :class:`EwaldResult`
(see the package docstring for the conventions)."""

import dataclasses
import numbers
import operator
from typing import Optional

import numpy as np

from . import _core
from ._core import InvalidArgumentError, Kernel, ToleranceKind

__all__ = ["EwaldPlan", "EwaldResult", "EwaldInfo", "ewald", "ewald_defaults"]

_KERNELS = {"laplace": Kernel.laplace, "stokeslet": Kernel.stokeslet}
_TOL_KINDS = {"relative": ToleranceKind.relative, "absolute": ToleranceKind.absolute}

# The defaults of every option come from the C++ library (elliptica::ewald::Options).
_DEFAULTS = _core.EwaldOptions()


def ewald_defaults():
    """The library's default options (a fresh ``elliptica._core.EwaldOptions``): ``kernel``,
    ``box``, ``tolerance``, ``tolerance_kind``, ``viscosity``, ``compute_field``, ``threads``
    and the overrides ``xi``, ``rc``, ``grid``, ``window_support``, ``window_shape``,
    ``poly_degree`` (None: chosen from the tolerance)."""
    return _core.EwaldOptions()


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


@dataclasses.dataclass(frozen=True)
class EwaldInfo:
    """What an evaluation used besides its values.

    Attributes
    ----------
    kernel : Kernel
        The kernel of the plan.
    params : dict
        The parameters used and their error estimates, as :attr:`EwaldPlan.params`.
    times : dict
        Wall-clock seconds per stage (P2P, P2G, FFT, CNV, IFFT, G2P, self, setup).
    """

    kernel: Kernel
    params: dict
    times: dict


@dataclasses.dataclass(frozen=True)
class EwaldResult:
    """Result of :meth:`EwaldPlan.evaluate` / :func:`ewald`: the same attributes whatever the
    kernel and options; those the plan does not compute are None. M is the number of targets
    (the number of sources without targets).

    Attributes
    ----------
    potential : ndarray((M,), float64) or None
        Laplace: the potential phi at the targets. None for the stokeslet.
    field : ndarray((M, 3), float64) or None
        Laplace with ``field=True``: the field E = -grad phi. None otherwise.
    velocity : ndarray((M, 3), float64) or None
        Stokeslet: the velocity u. None for Laplace.
    info : EwaldInfo
        Kernel, parameters and stage times of this evaluation.
    """

    potential: Optional[np.ndarray]
    field: Optional[np.ndarray]
    velocity: Optional[np.ndarray]
    info: EwaldInfo

    @property
    def values(self):
        """The kernel's primary result: :attr:`potential` (Laplace) or :attr:`velocity`
        (stokeslet)."""
        return self.potential if self.info.kernel == Kernel.laplace else self.velocity


def _options(kernel, box, tol, tol_kind, viscosity, field, threads, xi, rc, grid, P, beta, degree):
    o = _core.EwaldOptions()
    o.kernel = kernel
    o.box = _as_box(box)
    o.tolerance = _num(tol, "tol")
    o.tolerance_kind = _parse_enum(tol_kind, _TOL_KINDS, ToleranceKind, "tol_kind")
    o.viscosity = _num(viscosity, "viscosity")
    o.compute_field = bool(field)
    o.threads = _as_int(threads, "threads")
    o.xi = _opt_float(xi, "xi")
    o.rc = _opt_float(rc, "rc")
    o.grid = _as_grid(grid)
    o.window_support = None if P is None else _as_int(P, "P")
    o.window_shape = _opt_float(beta, "beta")
    o.poly_degree = None if degree is None else _as_int(degree, "degree")
    return o


class EwaldPlan:
    """A spectral Ewald plan: configured once, evaluated many times.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet"} or Kernel
        ``laplace``: periodic 1/r potential (Gaussian units, tin-foil, neutralising background).
        ``stokeslet``: periodic Stokes velocity ``1/(8 pi mu) sum S(r) f`` (k = 0 excluded).

    All further parameters are keyword-only; their defaults are the C++ library's
    (:func:`ewald_defaults`).

    box : float or sequence of 3 float
        Box lengths (L1, L2, L3) > 0; a single number gives a cube. Default (1, 1, 1).
    tol : float
        Requested RMS error, 0 < tol < 1 (default 1e-6), read as ``tol_kind`` says.
    tol_kind : {"relative", "absolute"} or ToleranceKind
        ``relative`` (default): RMS error / RMS of the result (of the field for ``E``).
        ``absolute``: RMS error in the result's units.
    viscosity : float
        mu > 0 (stokeslet only; default 1).
    field : bool
        Laplace only: also compute ``E = -grad phi`` (:attr:`EwaldResult.field`).
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
        kernel=_DEFAULTS.kernel,
        *,
        box=tuple(_DEFAULTS.box),
        tol=_DEFAULTS.tolerance,
        tol_kind=_DEFAULTS.tolerance_kind,
        viscosity=_DEFAULTS.viscosity,
        field=_DEFAULTS.compute_field,
        threads=_DEFAULTS.threads,
        xi=_DEFAULTS.xi,
        rc=_DEFAULTS.rc,
        grid=_DEFAULTS.grid,
        P=_DEFAULTS.window_support,
        beta=_DEFAULTS.window_shape,
        degree=_DEFAULTS.poly_degree,
    ):
        self._kernel = _parse_enum(kernel, _KERNELS, Kernel, "kernel")
        self._field = bool(field)
        self._plan = _core._EwaldPlan(
            _options(self._kernel, box, tol, tol_kind, viscosity, field, threads, xi, rc, grid, P, beta, degree)
        )

    @property
    def kernel(self):
        """The kernel (:class:`Kernel`)."""
        return self._kernel

    @property
    def field(self):
        """True when evaluate also computes the Laplace field E = -grad phi."""
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
        sources : array_like, ndarray((N, 3), float64)
            Source positions (any real values; wrapped into the box).
        strengths : array_like
            Laplace: charges, ndarray((N,), float64) or ((N, 1), float64). Stokeslet: forces,
            ndarray((N, 3), float64).
        targets : array_like, ndarray((M, 3), float64), optional
            Evaluation points. Default: the sources themselves (M = N), self-interaction
            excluded.

        Inputs of another real dtype or layout are converted (copied) to C-contiguous float64.

        Returns
        -------
        EwaldResult
            ``potential`` ndarray((M,), float64) and, with ``field=True``, ``field``
            ndarray((M, 3), float64) for Laplace; ``velocity`` ndarray((M, 3), float64) for the
            stokeslet; ``info`` (parameters and stage times). The attributes do not depend on
            the options: what is not computed is None.

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
        values, field, params, times = self._plan.evaluate(src, q, tgt)
        info = EwaldInfo(kernel=self._kernel, params=params, times=times)
        if self._kernel == Kernel.laplace:
            return EwaldResult(potential=values, field=field, velocity=None, info=info)
        return EwaldResult(potential=None, field=None, velocity=values, info=info)

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


def ewald(kernel, sources, strengths, box, *, targets=None, **options):
    """One-shot spectral Ewald sum: ``EwaldPlan(kernel, box=box, **options).evaluate(sources,
    strengths, targets)``.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet"} or Kernel
    sources : array_like, ndarray((N, 3), float64)
    strengths : array_like, ndarray((N,), float64) / ((N, 1), float64) (laplace) or
        ndarray((N, 3), float64) (stokeslet)
    box : float or sequence of 3 float, box lengths > 0
    targets : array_like, ndarray((M, 3), float64), optional, keyword-only
        Default: the sources, self-interaction excluded.
    **options : keyword-only tol, tol_kind, viscosity, field, threads, xi, rc, grid, P, beta, degree
        As :class:`EwaldPlan` (defaults from the C++ library, :func:`ewald_defaults`); an
        unknown name is a TypeError.

    Returns
    -------
    EwaldResult
        As :meth:`EwaldPlan.evaluate`.

    Raises
    ------
    InvalidArgumentError, NumericalError, ResourceError (see :class:`EwaldPlan`).
    """
    return EwaldPlan(kernel, box=box, **options).evaluate(sources, strengths, targets)
