"""Spectral Ewald summation: :class:`EwaldPlan`, :func:`ewald` and their :class:`EwaldResult`
(see the package docstring for the conventions)."""

import dataclasses
import json
import numbers
import operator
from typing import Optional

import numpy as np

from . import _core
from ._core import FftPlanner, InvalidArgumentError, Kernel, Precision, ToleranceKind
from ._format import show as _show

__all__ = ["EwaldPlan", "DistributedEwaldPlan", "mpi_available", "EwaldResult", "EwaldInfo", "ewald", "ewald_defaults", "single_precision_floor",
           "ewald_calibrate", "ewald_cost_constants", "ewald_fft_wisdom"]

_TOL_KINDS = {"relative": ToleranceKind.relative, "absolute": ToleranceKind.absolute}
_KERNEL_NAMES = ["laplace", "stokeslet", "stresslet", "stokes-combined"]

# The defaults of every option come from the C++ library (elliptica::ewald::Options).
_DEFAULTS = _core.EwaldOptions()


class _Required:
    def __repr__(self):
        return "<required>"


_REQUIRED = _Required()


def ewald_defaults():
    """The library's default options (a fresh ``elliptica._core.EwaldOptions``): ``kernel``,
    ``box``, ``tolerance``, ``tolerance_kind``, ``viscosity``, ``compute_field``,
    ``stresslet_zero_mode``, ``precision``, ``compute_energy``, ``compute_potential``, ``threads``, ``fft_planner``, ``pair_symmetry`` and the overrides
    ``xi``, ``rc``, ``grid``, ``window_support``, ``window_shape``, ``poly_degree`` (None: chosen
    from the tolerance)."""
    return _core.EwaldOptions()


def single_precision_floor(grid, n_points):
    """Smallest relative tolerance a ``precision="single"`` plan accepts with this FFT grid and
    number of points: ``2 u sqrt(log2(M1 M2 M3) + log2(N))``, u = 2^-24 (the C++
    ``ewald::single_precision_floor``). A single-precision plan whose chosen grid puts the
    tolerance below it raises :class:`NumericalError`.

    Parameters
    ----------
    grid : int or sequence of 3 int
        FFT grid (M1, M2, M3), e.g. ``plan.params["grid"]``.
    n_points : int
        Number of points (the larger of the numbers of sources and targets).

    Returns
    -------
    float
    """
    return _core.single_precision_floor(_as_grid(grid), _as_int(n_points, "n_points"))


def _parse_enum(value, table, enum_type, what):
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.strip().lower() in table:
        return table[value.strip().lower()]
    raise InvalidArgumentError(
        f"{what} must be one of {sorted(table)} (or elliptica.{enum_type.__name__}), got {_show(value)}"
    )


def _parse_kernel(value):
    """A Kernel, or its name as the C++ library spells it ("stokes-combined"; "stokes_combined"
    is accepted too), parsed by the library."""
    if isinstance(value, Kernel):
        return value
    if isinstance(value, str):
        try:
            return _core.kernel_from_string(value.strip().lower().replace("_", "-"))
        except InvalidArgumentError:
            pass
    raise InvalidArgumentError(f"kernel must be one of {_KERNEL_NAMES} (or elliptica.Kernel), got {_show(value)}")


def _parse_precision(value):
    """A Precision, or "single"/"float32"/"double"/"float64" (parsed by the library)."""
    if isinstance(value, Precision):
        return value
    if isinstance(value, str):
        try:
            return _core.precision_from_string(value.strip().lower())
        except InvalidArgumentError:
            pass
    raise InvalidArgumentError(
        f"precision must be 'single' or 'double' (or elliptica.Precision), got {_show(value)}"
    )


def ewald_calibrate(precision="double", *, write_cache=True):
    """Measures the constants of the cost model that chooses the parameters (the C++
    ``ewald::calibrate_costs``): small evaluations of every kernel on one thread, about 2-4 s per precision.

    Parameters
    ----------
    precision : "double" (default), "single" or :class:`Precision`
        The precision whose constants are measured.
    write_cache : bool, keyword-only
        Write them to the per-machine cache file (``$ELLIPTICA_CACHE_DIR/ewald_costs.json``, else
        ``$XDG_CACHE_HOME/elliptica/...``, else ``~/.cache/elliptica/...``); a cache that cannot be
        written is not an error (``"file"`` is then None).

    Returns
    -------
    dict
        ``precision``, ``source`` ("measured"), ``file``, ``cpu``, ``simd_target``, ``version``,
        ``build``, ``model``, ``measured_at``, ``measure_seconds`` and the constants in seconds of one
        core per unit of work: ``p2p_cell``, ``p2p_column``, ``p2p_check`` and ``p2p_pair`` (dicts by
        kernel variant: laplace, laplace-field, stokeslet, stokeslet-pressure, stresslet,
        stokes-combined), ``spread``, ``interp``, ``window_row``, ``grid_pass``, ``fft``,
        ``fft_growth`` (relative, per doubling of M), ``cnv_mode``, ``cnv_component``,
        ``window_eval``; and ``p2g_scale`` and ``g2p_scale`` (dicts by kernel variant, plain
        ratios in [0.5, 4]: the P2G / G2P point work on a grid out of cache over the in-cache fit,
        1 when the machine has too little memory to measure it). Unless
        ``ELLIPTICA_EWALD_COSTS`` is "builtin" or a file, later plans of this process use them.

    Raises
    ------
    InvalidArgumentError
        An unknown precision.
    """
    p = _parse_precision(precision)
    return json.loads(_core.ewald_calibrate_json(p, bool(write_cache)))


def ewald_cost_constants(precision="double"):
    """The cost model's constants plans of this process use for ``precision`` (a dict as
    :func:`ewald_calibrate` returns; ``source`` says where they come from: "builtin", "cache",
    "measured" or "file"), chosen on first use by ``ELLIPTICA_EWALD_COSTS`` (unset or "auto": the
    per-machine cache, measured and written when missing; "builtin"; or a file name)."""
    return json.loads(_core.ewald_cost_constants_json(_parse_precision(precision)))


def ewald_fft_wisdom(*, rebuild=False, problems=()):
    """The per-machine FFT wisdom cache of ``fft_planner="wisdom"`` (the C++
    ``ewald::fft_wisdom_entries`` / ``rebuild_fft_wisdom``).

    Parameters
    ----------
    rebuild : bool, keyword-only
        Forget FFTW's wisdom and the timings (this process's and the cache file's) and measure
        every known problem, and those of ``problems``, again (0.2-1 s each).
    problems : sequence of dict, keyword-only
        With ``rebuild``: further problems, each with ``precision`` ("single"/"double"),
        ``grid`` (3 ints), ``forward`` and ``backward`` (transform counts, 1..12) and
        ``threads``.

    Returns
    -------
    dict
        ``file`` (the cache file, None if no location is known; ``ELLIPTICA_CACHE_DIR`` and as
        for :func:`ewald_calibrate`) and ``entries``: a list of dicts with ``precision``,
        ``grid``, ``forward``, ``backward``, ``threads``, ``forward_seconds``,
        ``backward_seconds`` (wall seconds of one execution of each batched plan).

    Raises
    ------
    InvalidArgumentError
        A problem with a grid outside [4, 8192], counts outside [1, 12], threads outside
        [1, 1024] or an unknown precision.
    """
    if rebuild:
        ps = []
        for p in problems:
            ps.append((_parse_precision(p["precision"]), _as_grid(p["grid"]), _as_int(p["forward"], "forward"),
                       _as_int(p["backward"], "backward"), _as_int(p.get("threads", 1), "threads")))
        entries = _core.ewald_rebuild_fft_wisdom(ps)
    else:
        if problems:
            raise InvalidArgumentError("ewald_fft_wisdom: problems are measured only with rebuild=True")
        entries = _core.ewald_fft_wisdom_entries()
    f = _core.ewald_fft_wisdom_file()
    return {"file": f or None, "entries": [dict(e, grid=tuple(e["grid"])) for e in entries]}


def _kernel_name(kernel):
    return _core.kernel_name(kernel)


def _as_float64(x, name):
    """C-contiguous float64 copy/view of an array-like; InvalidArgumentError if not numeric."""
    if np.iscomplexobj(x):
        raise InvalidArgumentError(f"{name} must be real, got a complex array")
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{name} is not a numeric array: {e}") from None


def _as_rows(x, name, cols, allow_flat=False, allow_empty=False):
    """(N, cols) float64 C-contiguous array (or (N,) when allow_flat and cols == 1); N >= 1
    unless allow_empty (then an empty array of any shape gives (0, cols))."""
    a = _as_float64(x, name)
    if allow_empty and a.size == 0 and (a.ndim == 1 or (a.ndim == 2 and a.shape[1] in (0, cols))):
        return np.zeros((0, cols))
    ok = a.ndim == 2 and a.shape[1] == cols
    if allow_flat and a.ndim == 1:
        ok = True
    if not ok:
        want = "(N,) or (N, 1)" if allow_flat else f"(N, {cols})"
        raise InvalidArgumentError(f"{name} must have shape {want}, got shape {a.shape}")
    if a.shape[0] == 0:
        raise InvalidArgumentError(f"{name} is empty (shape {a.shape}): at least one point is needed")
    return a


def _as_pairs(pairs):
    """(K, 2) int64 C-contiguous array of index pairs; integral floats are accepted (as read
    from a text file), anything else is an InvalidArgumentError."""
    try:
        a = np.asarray(pairs)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"exclusions is not an array of index pairs: {e}") from None
    if a.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise InvalidArgumentError(f"exclusions must have shape (K, 2) (source index pairs), got shape {a.shape}")
    if a.dtype == np.bool_ or not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise InvalidArgumentError(f"exclusions must be integer source indices, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating):
        if not (np.all(np.isfinite(a)) and np.all(a == np.floor(a))):
            raise InvalidArgumentError("exclusions must be integer source indices, got non-integral values")
        if np.any(np.abs(a) >= 2.0**63):
            raise InvalidArgumentError("exclusions: index out of range")
    elif a.dtype == np.uint64 and np.any(a > np.iinfo(np.int64).max):
        raise InvalidArgumentError("exclusions: index out of range")
    return np.ascontiguousarray(a, dtype=np.int64)


def _as_box(box):
    if isinstance(box, numbers.Real):
        box = (box, box, box)
    try:
        b = tuple(float(v) for v in box)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"box must be a positive number or 3 positive lengths, got {_show(box)}") from None
    if len(b) != 3:
        raise InvalidArgumentError(f"box must have 3 lengths (L1, L2, L3), got {len(b)}: {_show(box)}")
    return b


def _as_int(v, name):
    try:
        return operator.index(v)
    except TypeError:
        raise InvalidArgumentError(f"{name} must be an integer, got {_show(v)}") from None


def _as_grid(grid):
    if grid is None:
        return None
    if isinstance(grid, numbers.Integral):
        g = _as_int(grid, "grid")
        return (g, g, g)
    try:
        g = tuple(_as_int(v, "grid") for v in grid)
    except TypeError:
        raise InvalidArgumentError(f"grid must be an integer or 3 integers, got {_show(grid)}") from None
    if len(g) != 3:
        raise InvalidArgumentError(f"grid must have 3 sizes (M1, M2, M3), got {len(g)}: {_show(grid)}")
    return g


def _opt_float(v, name):
    if v is None:
        return None
    return _num(v, name)


def _num(v, name):
    try:
        return float(v)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a number, got {_show(v)}") from None


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
        Wall-clock seconds per stage (P2P, P2G, FFT, CNV, IFFT, G2P, self; tune and set_points
        on the call that did them).
    coincident_pairs : int
        Number of (target, source) pairs coincident modulo the period (closer than 1e-13 times
        the longest box length), other than a source with itself: their singular p = 0 term was
        excluded.
    p2p : dict
        Work of the P2P stage: ``candidates`` (distance tests), ``pairs`` (pairs within r_c whose
        kernel was evaluated; once per pair with ``pair_symmetry``), ``series_degree`` (degree of
        the erfcx series), ``exp_degree`` (degree of the Taylor polynomial of the Gaussian
        exp(-xi^2 r^2)) and ``pair_symmetry`` (bool: each pair evaluated once for both points,
        see :class:`EwaldPlan`).
    """

    kernel: Kernel
    params: dict
    times: dict
    coincident_pairs: int = 0
    p2p: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class EwaldResult:
    """Result of :meth:`EwaldPlan.evaluate` / :func:`ewald`: the same attributes whatever the
    kernel and options; those the plan does not compute are None. M is the number of targets
    (the number of sources N without separate targets; M may be 0).

    Attributes
    ----------
    potential : ndarray((M,), float64) or None
        Laplace: the potential phi at the targets [charge/length]. None for the Stokes kernels.
    field : ndarray((M, 3), float64) or None
        Laplace with ``field=True``: the field E = -grad phi [charge/length^2]. None otherwise.
    velocity : ndarray((M, 3), float64) or None
        Stokeslet, stresslet, stokes_combined: the velocity u. None for Laplace.
    info : EwaldInfo
        Kernel, parameters, stage times and coincident pairs of this evaluation.
    energy : float or None
        Laplace with ``energy=True``: U = 1/2 sum_n q_n phi(y_n) [charge^2/length, Gaussian
        units], excluded pairs removed. None otherwise.
    forces : ndarray((N, 3), float64) or None
        Laplace with ``energy=True``: F_n = q_n E(y_n) [charge^2/length^2], excluded pairs
        removed. None otherwise.
    pressure : ndarray((M,), float64) or None
        Stokeslet with ``pressure=True``: p = 1/(4 pi) sum f.r/|r|^3 [force/length^2], k = 0
        excluded (zero mean), independent of the viscosity. None otherwise.
    """

    potential: Optional[np.ndarray]
    field: Optional[np.ndarray]
    velocity: Optional[np.ndarray]
    info: EwaldInfo
    energy: Optional[float] = None
    forces: Optional[np.ndarray] = None
    pressure: Optional[np.ndarray] = None

    @property
    def values(self):
        """The kernel's primary result: :attr:`potential` (Laplace) or :attr:`velocity`
        (the Stokes kernels)."""
        return self.potential if self.info.kernel == Kernel.laplace else self.velocity

    @property
    def coincident_pairs(self):
        """Shortcut for ``info.coincident_pairs``."""
        return self.info.coincident_pairs


def _parse_fft_planner(value):
    if isinstance(value, FftPlanner):
        return value
    if isinstance(value, str):
        try:
            return _core.fft_planner_from_string(value)
        except InvalidArgumentError:
            pass
    raise InvalidArgumentError(
        f"fft_planner must be 'wisdom', 'measure' or 'estimate' (or elliptica.FftPlanner), got {_show(value)}")


def _parse_periodicity(value):
    """A periodicity name ("3P", "2P", "1P", "0P", axis letters) or 3 bools -> (bool, bool, bool)."""
    if isinstance(value, str):
        return tuple(_core.periodicity_from_string(value.strip()))
    try:
        items = tuple(value)
    except TypeError:
        items = None
    if items is None or len(items) != 3 or not all(isinstance(v, (bool, np.bool_)) for v in items):
        raise InvalidArgumentError(
            "periodicity must be '3P', '2P', '1P', '0P', the periodic axes' letters (e.g. 'xy') or 3 bools "
            f"(x, y, z periodic), got {_show(value)}")
    return tuple(bool(v) for v in items)


def _options(kernel, box, tol, tol_kind, viscosity, field, zero_mode, precision, energy, threads, xi, rc, grid, P,
             beta, degree, pressure=False, fft_planner=_DEFAULTS.fft_planner, potential=True,
             pair_symmetry=_DEFAULTS.pair_symmetry, periodicity=tuple(_DEFAULTS.periodicity)):
    o = _core.EwaldOptions()
    o.kernel = kernel
    o.periodicity = _parse_periodicity(periodicity)
    if not any(o.periodicity) and box is not None:
        raise InvalidArgumentError("box does not apply to periodicity '0P' (free space: the points' bounding box is "
                                   "the domain); leave it out")
    o.box = _as_box(tuple(_DEFAULTS.box) if box is None else box)
    o.tolerance = _num(tol, "tol")
    o.tolerance_kind = _parse_enum(tol_kind, _TOL_KINDS, ToleranceKind, "tol_kind")
    o.viscosity = _num(viscosity, "viscosity")
    o.compute_field = bool(field)
    o.stresslet_zero_mode = bool(zero_mode)
    o.precision = _parse_precision(precision)
    o.compute_energy = bool(energy)
    o.compute_pressure = bool(pressure)
    o.threads = _as_int(threads, "threads")
    o.fft_planner = _parse_fft_planner(fft_planner)
    o.compute_potential = bool(potential)
    o.pair_symmetry = bool(pair_symmetry)
    o.xi = _opt_float(xi, "xi")
    o.rc = _opt_float(rc, "rc")
    o.grid = _as_grid(grid)
    o.window_support = None if P is None else _as_int(P, "P")
    o.window_shape = _opt_float(beta, "beta")
    o.poly_degree = None if degree is None else _as_int(degree, "degree")
    return o


class EwaldPlan:
    """A spectral Ewald plan: configured once, points set once, evaluated many times.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet", "stresslet", "stokes-combined"} or Kernel
        ``laplace``: periodic 1/r potential (Gaussian units, tin-foil, neutralising background),
        strengths = charges q.
        ``stokeslet``: periodic Stokes velocity ``u = 1/(8 pi mu) sum S(r) f`` (k = 0 excluded),
        strengths = forces f.
        ``stresslet``: periodic double layer
        ``u_j = 1/(8 pi) sum T_jlm(r) q_l nu_m``, ``T_jlm = -6 r_j r_l r_m / |r|^5``,
        ``r = target - source`` (no viscosity factor), dipoles = q, normals = nu; no strengths.
        ``stokes-combined`` (also ``"stokes_combined"``, ``Kernel.stokes_combined``): stokeslet
        of the forces plus stresslet of the dipoles and normals, in one pass.

    All further parameters are keyword-only; their defaults are the C++ library's
    (:func:`ewald_defaults`).

    box : float or sequence of 3 float
        Box lengths (L1, L2, L3) > 0; a single number gives a cube. Default (1, 1, 1). Not with
        ``periodicity="0P"``; along a free axis of 2P / 1P its length is not used.
    periodicity : {"3P", "2P", "1P", "0P"}, str or (bool, bool, bool)
        Periodic axes (x, y, z). ``"3P"`` (default): triply periodic in ``box``. ``"0P"``: free
        space, every kernel: ``phi(x_m) = sum_n' q_n / |x_m - y_n|`` (and the Stokes sums) with no images and no neutrality needed; no ``box`` (the points' bounding box is the domain; the
        FFT grid covers twice it, :attr:`params` ``fft_box``), by the truncated-kernel method
        (Vico, Greengard & Ferrando 2016). ``"2P"``: x and y periodic with periods ``box[0]``,
        ``box[1]`` (``box[2]`` is not used), z free; the k_par = 0 term is ``-2 pi |z| / A``
        per charge (the classical 2P Ewald sum's convention; no neutrality needed), for the
        stokeslet the force sheet's shear flow ``-4 pi |z| (I - e_z e_z^T) / A`` (times
        ``1 / (8 pi mu)``). ``"1P"``: z periodic with period ``box[2]`` (``box[0]``, ``box[1]``
        not used); the k_z = 0 term is ``-2 ln(rho) / L`` per charge, for the stokeslet
        ``(-2 ln(rho) I_perp + 2 rho^ rho^^T) / L`` across the line and ``(-4 ln(rho) - 2) / L``
        along it (rho the distance from the line in the caller's length unit: a net line
        charge's or force's result depends on that unit). Axis letters (``"xz"``, ``"y"``) name
        the periodic axes. Not 3P: every kernel (the stokeslet's pressure: its k_p = 0 term is the
        Laplace field's of the force components, over 4 pi; the stresslet's: the dipole sheet's
        ``-4 pi sign(z) / A`` on T_zzz, T_zaa in 2P, the line integral of T in 1P, no constants);
        ``zero_mode`` is refused (a 3P term).
    tol : float
        Requested RMS error, 0 < tol < 1 (default 1e-6), read as ``tol_kind`` says.
    tol_kind : {"relative", "absolute"} or ToleranceKind
        ``relative`` (default): RMS error / RMS of the result (of the field for ``E``).
        ``absolute``: RMS error in the result's units.
    viscosity : float
        mu > 0 (stokeslet and the single layer of stokes-combined; default 1).
    field : bool
        Laplace only: also compute ``E = -grad phi`` (:attr:`EwaldResult.field`).
    zero_mode : bool
        Stresslet and stokes-combined only: add the stresslet's k = 0 term, which adds
        ``-(1/V) sum_n (q_n . nu_n)(x_m - y_n)`` to u (``-(8 pi/V) sum ...`` before the
        stresslet's 1/(8 pi); wrapped coordinates, so not periodic). Default off, as in the
        seed paper and the reference codes.
    precision : {"single", "double"} or Precision
        Arithmetic of the stages (P2P, P2G, FFT, CNV, IFFT, G2P); coordinates are wrapped in
        double precision and results are float64 either way. Single precision accepts only
        tolerances above the float32 floor of the chosen grid (:func:`single_precision_floor`,
        about 1e-6; below it evaluate raises NumericalError). Default double.
    energy : bool
        Laplace only, targets = sources: also compute the energy
        ``U = 1/2 sum_n q_n phi(y_n)`` and the forces ``F_n = q_n E(y_n)``
        (:attr:`EwaldResult.energy`, :attr:`EwaldResult.forces`).
    pressure : bool
        Stokeslet only: also compute the pressure ``p = 1/(4 pi) sum f.r/|r|^3`` (k = 0
        excluded) at the targets (:attr:`EwaldResult.pressure`).
    threads : int
        OpenMP threads; 0 (default) uses all available.
    potential : bool
        Laplace with ``field=True`` or ``energy=True``: ``False`` leaves the potential out
        (:attr:`EwaldResult.potential` is None): the far field transforms and interpolates E's 3
        components instead of 4, and the energy's Fourier part is summed by Parseval on the
        spread grid (equal to the full path's to rounding). For molecular dynamics, which needs
        the energy and forces only. Default True.
    fft_planner : {"wisdom", "measure", "estimate"} or FftPlanner
        How the FFTs are planned. ``wisdom`` (default): FFTW_MEASURE once per machine, grid,
        precision, transform count and thread count (0.2-1 s the first time), kept in the
        per-machine wisdom cache (:func:`ewald_fft_wisdom`), read back in ~1 ms afterwards; the
        parameter choice ranks its best grids by these measured times. ``measure``: FFTW_MEASURE
        at every :meth:`set_points`, nothing cached. ``estimate``: FFTW_ESTIMATE (~1 ms; up to 2x
        slower transforms at some sizes, e.g. 96^3). Results agree to rounding.
    pair_symmetry : bool
        P2P by Newton's third law: in double precision, with the targets the sources and rc
        below half the shortest box side, each pair within rc is evaluated once for both points
        (every kernel; P2P in 0.6-0.8 of the one-sided time; the same values to rounding, the
        same bits on every run with the same ``threads``). Single precision sums one-sided
        (there it did not pay). ``False``: each target sums over all of its sources (for
        benchmarks). Ignored where it does not apply (``info.p2p["pair_symmetry"]`` says whether
        it did). Default True.
    xi, rc, grid, P, beta, degree : optional overrides
        Ewald parameter xi [1/length], real-space cutoff rc [length], FFT grid (int or 3 ints,
        >= 4), window support P (2..32 grid points, <= M), Kaiser-Bessel shape beta (default
        2.5 P), piecewise polynomial degree of the window. Unset ones are chosen from ``tol`` at
        the first evaluation (see :attr:`params`).

    Raises
    ------
    InvalidArgumentError
        Non-positive or non-finite box, tol outside (0, 1), viscosity <= 0, ``field=True`` or
        ``energy=True`` with a Stokes kernel, ``zero_mode=True`` with a kernel without a
        stresslet, unknown kernel or precision, invalid overrides; with a free axis (0P, 2P,
        1P) another kernel than laplace and stokeslet or a grid override; in 0P a box.

    Notes
    -----
    Use: :meth:`set_points` (sources, targets, normals), optionally :meth:`set_exclusions`, then
    :meth:`evaluate` with the densities, as often as needed. Parameters are chosen at the first
    :meth:`evaluate` or by :meth:`tune` (they depend on N and the strengths) and kept while N
    stays within a factor 2 and the strength density within a factor 4; :meth:`retune` forces a
    new choice. The GIL is released during the computation. :meth:`evaluate` may be called from
    several Python threads at once on one plan (the C++ evaluate is const and thread-safe):
    the calls run concurrently. :meth:`set_points`, :meth:`set_exclusions`, :meth:`tune`,
    :meth:`retune` and the one-shot form of :meth:`evaluate` change the plan and wait for the
    evaluations in progress.
    """

    def __init__(
        self,
        kernel=_DEFAULTS.kernel,
        *,
        box=None,
        periodicity=tuple(_DEFAULTS.periodicity),
        tol=_DEFAULTS.tolerance,
        tol_kind=_DEFAULTS.tolerance_kind,
        viscosity=_DEFAULTS.viscosity,
        field=_DEFAULTS.compute_field,
        zero_mode=_DEFAULTS.stresslet_zero_mode,
        precision=_DEFAULTS.precision,
        energy=_DEFAULTS.compute_energy,
        pressure=_DEFAULTS.compute_pressure,
        threads=_DEFAULTS.threads,
        potential=_DEFAULTS.compute_potential,
        fft_planner=_DEFAULTS.fft_planner,
        pair_symmetry=_DEFAULTS.pair_symmetry,
        xi=_DEFAULTS.xi,
        rc=_DEFAULTS.rc,
        grid=_DEFAULTS.grid,
        P=_DEFAULTS.window_support,
        beta=_DEFAULTS.window_shape,
        degree=_DEFAULTS.poly_degree,
    ):
        self._kernel = _parse_kernel(kernel)
        self._double_layer = _core.has_double_layer(self._kernel)
        self._ncomp = _core.strength_components(self._kernel)
        self._plan = _core._EwaldPlan(
            _options(self._kernel, box, tol, tol_kind, viscosity, field, zero_mode, precision, energy, threads,
                     xi, rc, grid, P, beta, degree, pressure, fft_planner, potential, pair_symmetry, periodicity)
        )
        o = self._plan.options
        self._periodicity = _core.periodicity_name(tuple(o.periodicity))
        self._field = bool(o.compute_field)
        self._energy = bool(o.compute_energy)
        self._precision = o.precision
        self._zero_mode = bool(o.stresslet_zero_mode)
        self._n_sources = None  # set by set_points (for the messages of evaluate)

    # ------------------------------------------------------------------ properties

    @property
    def kernel(self):
        """The kernel (:class:`Kernel`)."""
        return self._kernel

    @property
    def field(self):
        """True when evaluate also computes the Laplace field E = -grad phi."""
        return self._field

    @property
    def energy(self):
        """True when evaluate also computes the Laplace energy and forces."""
        return self._energy

    @property
    def precision(self):
        """Arithmetic of the stages (:class:`Precision`)."""
        return self._precision

    @property
    def periodicity(self):
        """The periodicity's name: "3P", "2P", "1P", "0P" or the periodic axes' letters (see the
        ``periodicity`` keyword)."""
        return self._periodicity

    @property
    def zero_mode(self):
        """True when the stresslet's k = 0 term is added."""
        return self._zero_mode

    @property
    def params(self):
        """Parameters in use, a dict: ``xi`` [1/length], ``rc`` [length], ``grid`` (M1, M2, M3),
        ``h`` grid spacings, ``cells`` near-field cells per axis, ``P`` window support,
        ``beta`` window shape, ``poly_degree``, ``eps_abs`` absolute RMS target, ``result_rms``
        (pilot RMS of the result), ``result_scale`` (the scale a relative tol multiplies), the
        estimated RMS errors ``est_real``, ``est_fourier``, ``est_window``, ``est_total``,
        ``est_relative``, the Laplace field's ``field_eps_abs``, ``field_rms``, ``field_scale``,
        ``field_est_total``, and ``describe`` (a human-readable report). All zero before the
        first evaluate/tune."""
        return self._plan.params

    @property
    def last_times(self):
        """Wall-clock seconds per stage of the last evaluation (dict, e.g. P2P, P2G, FFT, CNV,
        IFFT, G2P, self; tune and set_points when that evaluation did them). With several
        threads evaluating at once: the one that finished last."""
        return self._plan.last_times

    # ------------------------------------------------------------------ geometry

    def set_points(self, sources, targets=None, normals=None):
        """Sets the geometry; the coordinates are copied and wrapped into the box (3P; in 0P shifted
        so that the points' bounding box starts at the origin, no wrapping).

        Parameters
        ----------
        sources : array_like, ndarray((N, 3), float64)
            Source positions y_n, N >= 1 (any real values; wrapped into the box in 3P).
        targets : array_like, ndarray((M, 3), float64), optional
            Evaluation points x_m; M may be 0 (every evaluation then returns empty results).
            Default: the sources themselves (M = N), self-interaction excluded.
        normals : array_like, ndarray((N, 3), float64)
            Stresslet and stokes-combined only, and required there: the normals nu_n at the
            sources (normally unit vectors; the sum is bilinear in the dipoles and normals).

        Inputs of another real dtype or layout are converted (copied) to C-contiguous float64.
        Exclusions (:meth:`set_exclusions`) are forgotten. The parameters are kept when N and M
        stay within a factor 2.

        Raises
        ------
        InvalidArgumentError
            Wrong shapes, N = 0, NaN or Inf, normals missing (stresslet, stokes-combined) or
            given to another kernel, a coordinate farther than 1e15 box lengths from the box.
        """
        src = _as_rows(sources, "sources", 3)
        tgt = None if targets is None else _as_rows(targets, "targets", 3, allow_empty=True)
        nrm = None
        if self._double_layer:
            if normals is None:
                raise InvalidArgumentError(
                    f"normals (N, 3) are required for the {_kernel_name(self._kernel)} kernel: "
                    "set_points(sources, targets=None, normals=...)"
                )
            nrm = _as_rows(normals, "normals", 3)
            if nrm.shape[0] != src.shape[0]:
                raise InvalidArgumentError(
                    f"mismatched lengths: {src.shape[0]} sources but {nrm.shape[0]} normals"
                )
        elif normals is not None:
            raise InvalidArgumentError(
                f"normals apply only to the stresslet and stokes-combined kernels, not {_kernel_name(self._kernel)}"
            )
        self._plan.set_points(src, tgt, nrm)
        self._n_sources = src.shape[0]

    def set_exclusions(self, pairs):
        """Excluded pairs (Laplace, targets = the sources, after :meth:`set_points`).

        For each pair (i, j), i != j, the direct interaction of the nearest periodic images is
        removed: q_j / |r_ij| from phi(y_i) and q_i / |r_ij| from phi(y_j), and likewise from
        the field, the energy and the forces (as PME codes do for bonded atoms). A pair listed
        twice is removed twice. Kept until the next :meth:`set_points` or :meth:`set_exclusions`.

        Parameters
        ----------
        pairs : array_like, ndarray((K, 2), int64)
            0-based source indices; K may be 0 (no exclusions). Integral floats are accepted.

        Raises
        ------
        InvalidArgumentError
            Another kernel than Laplace, separate targets, no set_points, a wrong shape or dtype,
            an index out of range, or i == j.
        """
        self._plan.set_exclusions(_as_pairs(pairs))

    # ------------------------------------------------------------------ evaluation

    def _densities(self, strengths, dipoles):
        name = _kernel_name(self._kernel)
        q = d = None
        if self._ncomp == 0:
            if strengths is not None:
                raise InvalidArgumentError(
                    f"the {name} kernel takes no strengths, only dipoles (N, 3) (and the normals of set_points)"
                )
        elif strengths is None:
            what = "charges (N,)" if self._kernel == Kernel.laplace else "forces (N, 3)"
            raise InvalidArgumentError(f"strengths ({what}) are required for the {name} kernel")
        elif self._kernel == Kernel.laplace:
            q = _as_rows(strengths, "strengths", 1, allow_flat=True)
        else:
            q = _as_rows(strengths, "strengths", 3)
        if self._double_layer:
            if dipoles is None:
                raise InvalidArgumentError(f"dipoles (N, 3) are required for the {name} kernel")
            d = _as_rows(dipoles, "dipoles", 3)
        elif dipoles is not None:
            raise InvalidArgumentError(f"dipoles apply only to the stresslet and stokes-combined kernels, not {name}")
        n = self._n_sources
        if n is not None:
            for arr, what in ((q, "strengths"), (d, "dipoles")):
                if arr is not None and arr.shape[0] != n:
                    raise InvalidArgumentError(f"mismatched lengths: {n} sources but {arr.shape[0]} {what}")
        return q, d

    def _check_oneshot(self, sources, strengths, targets):
        if self._double_layer:
            raise InvalidArgumentError(
                f"the one-shot form evaluate(sources, strengths, targets) is for laplace and stokeslet; for "
                f"{_kernel_name(self._kernel)} call set_points(sources, targets, normals) then "
                "evaluate(strengths, dipoles)"
            )
        src = _as_rows(sources, "sources", 3)
        if strengths is None:
            raise InvalidArgumentError("strengths are required")
        if self._kernel == Kernel.laplace:
            q = _as_rows(strengths, "strengths", 1, allow_flat=True)
        else:
            q = _as_rows(strengths, "strengths", 3)
        if q.shape[0] != src.shape[0]:
            raise InvalidArgumentError(
                f"mismatched lengths: {src.shape[0]} sources but {q.shape[0]} strengths"
            )
        tgt = None if targets is None else _as_rows(targets, "targets", 3, allow_empty=True)
        return src, q, tgt

    def _split(self, name, args, kwargs):
        """Sorts the arguments of evaluate/tune into one of the two forms: (False, (strengths,
        dipoles)) after set_points, or (True, (sources, strengths, targets)) for the one-shot
        form, which is chosen when ``sources`` or ``targets`` is given, for three positional
        arrays, or for two positional arrays (the second not None) given to laplace or
        stokeslet (the former ``evaluate(sources, strengths)``; those kernels take no
        dipoles)."""
        unknown = set(kwargs) - {"strengths", "dipoles", "targets", "sources"}
        if unknown:
            raise TypeError(f"{name}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        one_shot = ("sources" in kwargs or "targets" in kwargs or len(args) >= 3
                    or (len(args) == 2 and args[1] is not None and not self._double_layer))
        names = ("sources", "strengths", "targets") if one_shot else ("strengths", "dipoles")
        if len(args) > len(names):
            raise TypeError(f"{name}() takes at most {len(names)} positional arrays ({len(args)} given)")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in values:
                raise TypeError(f"{name}() got multiple values for argument {k!r}")
            if k not in names:
                form = "evaluate(sources, strengths, targets=None)" if one_shot else "evaluate(strengths, dipoles)"
                raise InvalidArgumentError(f"{k} does not apply to the form {form}" + (
                    " (dipoles go with set_points(..., normals=...) and evaluate(strengths, dipoles))"
                    if one_shot else " (targets and sources are set by set_points)"))
            values[k] = v
        return one_shot, tuple(values.get(k) for k in names)

    def _result(self, out):
        values, field, params, times, energy, forces, coincident, pressure, p2p = out
        p2p = {"candidates": int(p2p[0]), "pairs": int(p2p[1]), "series_degree": int(p2p[2]),
               "exp_degree": int(p2p[3]), "pair_symmetry": bool(p2p[4])}
        info = EwaldInfo(kernel=self._kernel, params=params, times=times, coincident_pairs=int(coincident), p2p=p2p)
        if self._kernel == Kernel.laplace:
            return EwaldResult(potential=values, field=field, velocity=None, info=info, energy=energy, forces=forces)
        return EwaldResult(potential=None, field=None, velocity=values, info=info, pressure=pressure)

    def evaluate(self, *args, **kwargs):
        """evaluate(strengths=None, dipoles=None)

        Evaluates the periodic sum at the targets of :meth:`set_points`. Thread-safe: calls
        from several threads on one plan run at once (the GIL is released).

        The one-shot form ``evaluate(sources, strengths, targets=None)`` (laplace and stokeslet
        only, the form of earlier versions) sets the points first (serialised with other
        calls); it is used when ``sources=`` or ``targets=`` is given, for three positional
        arrays, or for two positional arrays (the second not None) given to laplace or
        stokeslet.

        Parameters
        ----------
        strengths : array_like, optional
            Laplace: charges q, ndarray((N,), float64) or ((N, 1), float64). Stokeslet and
            stokes-combined: forces f, ndarray((N, 3), float64). Stresslet: must be None.
        dipoles : array_like, ndarray((N, 3), float64), optional
            Stresslet and stokes-combined (required there): dipole strengths q (a density
            times a quadrature weight). Must be None for laplace and stokeslet.

        Inputs of another real dtype or layout are converted (copied) to C-contiguous float64.

        Returns
        -------
        EwaldResult
            ``potential`` ndarray((M,), float64), with ``field=True`` ``field``
            ndarray((M, 3), float64), with ``energy=True`` ``energy`` (float) and ``forces``
            ndarray((N, 3), float64) for Laplace; ``velocity`` ndarray((M, 3), float64) for the
            Stokes kernels; ``info`` (parameters, stage times, coincident pairs). The
            attributes do not depend on the options: what is not computed is None. M = 0 gives
            empty arrays.

        Raises
        ------
        InvalidArgumentError
            No set_points, wrong shapes, mismatched lengths, strengths given to the stresslet,
            dipoles given to laplace or stokeslet, missing strengths or dipoles, NaN or Inf
            values.
        NumericalError
            No parameters meet the tolerance (or the single-precision floor), or the result is
            not finite.
        ResourceError
            No parameters fit the size limits (FFT grids <= 8 GiB, <= 1e12 pair checks: a box of
            extreme aspect ratio), or the grids exceed the machine's memory; checked before
            anything is allocated.
        TypeError
            More positional arrays than the form takes, an unknown keyword.
        """
        one_shot, args = self._split("evaluate", args, kwargs)
        if one_shot:
            src, q, tgt = self._check_oneshot(*args)
            out = self._plan.evaluate_oneshot(src, q, tgt)
            self._n_sources = src.shape[0]
            return self._result(out)
        return self._evaluate(*args)

    def _evaluate(self, strengths, dipoles):
        q, d = self._densities(strengths, dipoles)
        return self._result(self._plan.evaluate(q, d))

    __call__ = evaluate

    def tune(self, *args, **kwargs):
        """tune(strengths=None, dipoles=None)

        Chooses the parameters for these densities now (normally done by the first
        :meth:`evaluate`), prepares the caches of the points, and returns the parameters as
        :attr:`params` does. Same arguments (and the same one-shot form
        ``tune(sources, strengths, targets=None)``) and errors as :meth:`evaluate`; also
        InvalidArgumentError when all strengths are zero."""
        one_shot, args = self._split("tune", args, kwargs)
        if one_shot:
            src, q, tgt = self._check_oneshot(*args)
            p = self._plan.tune_oneshot(src, q, tgt)
            self._n_sources = src.shape[0]
            return p
        q, d = self._densities(*args)
        return self._plan.tune(q, d)

    def retune(self):
        """Forces a new choice of parameters at the next evaluation."""
        self._plan.retune()

    def __repr__(self):
        return (f"EwaldPlan(kernel={_kernel_name(self._kernel)!r}, periodicity={self._periodicity!r}, "
                f"field={self._field}, energy={self._energy}, precision={_core.precision_name(self._precision)!r})")


def mpi_available():
    """Whether this build has :class:`DistributedEwaldPlan` (MPI and FFTW-MPI were found when the
    package was built)."""
    return bool(_core.mpi_available())


class DistributedEwaldPlan:
    """The spectral Ewald sum distributed over the ranks of an MPI communicator (slabs of the box
    and of the FFT grid along one axis, the longest by default; MPI-SORT, MPI-GHOST-SOURCE, MPI-GHOST-GRID, FFTW-MPI transforms;
    seed 000 section 6.5, docs/ewald_mpi.md).

    Every method is collective: every rank of ``comm`` calls it, in the same order. Each rank
    passes its own points (any number, none included: the global set is their union) and gets the
    results at its own points, in its order. The parameters are those :class:`EwaldPlan` chooses
    for the global set (tuned once on rank 0, broadcast); the results agree with EwaldPlan's on
    the gathered points to rounding (relative 1e-13 in double precision).

    Parameters
    ----------
    kernel, box, periodicity, tol, tol_kind, viscosity, field, zero_mode, precision, pressure, threads,
    potential, xi, rc, grid, P, beta, degree
        As :class:`EwaldPlan` (the same defaults). With free axes (``periodicity`` "2P", "1P",
        "0P" or axis letters; e.g. a 1P channel cut into slabs along its axis) the points' extent
        along the free axes must lie in [2^-20, 2^20], and each ``set_points`` tunes again (the
        extended box follows the points).
    comm : mpi4py.MPI.Comm
        The communicator (keyword only, required): the plan uses its Fortran handle (``py2f()``)
        and its ``allgather`` (to agree on the input checks of this layer).
    slab_axis : None, 0, 1, 2, 'x', 'y' or 'z'
        The axis the slabs cut; None (default): the longest side of the box (the first of equal
        ones). Results do not depend on it beyond rounding.
    exchange : 'auto', 'all-to-all' or 'neighbour'
        How MPI-SORT, MPI-GHOST-SOURCE and MPI-GHOST-GRID send. 'auto' (default): neighbour-only
        messages (with the ranks of the slabs before and after this rank's, periodically; ranks
        without planes are skipped) for each exchange in which every rank sends only
        to its neighbours, all-to-all otherwise: a time-stepping caller that keeps each point on
        the rank of its slab (``stats()['slab']``) or a neighbour gets the neighbour-only
        MPI-SORT. 'all-to-all': always MPI_Alltoallv. 'neighbour': MPI-SORT neighbour-only,
        InvalidArgumentError at the next evaluate when a point lies in the slab of neither its
        rank nor a neighbour. Every rank must pass the same options (checked: InvalidArgumentError).

    Supported so far: targets = the sources, every kernel and precision, ``field`` and
    ``pressure``; not yet: separate targets, ``energy``, exclusions. Box lengths in [2^-20, 2^20].

    Raises
    ------
    InvalidArgumentError
        This build has no MPI (:func:`mpi_available` is False), options :class:`EwaldPlan`
        refuses, the options not supported yet; on every rank, with the message of the first
        failing rank, for bad input on any rank (set_points, evaluate).
    """

    def __init__(self, kernel=_DEFAULTS.kernel, *, comm, box=None, periodicity=tuple(_DEFAULTS.periodicity),
                 tol=_DEFAULTS.tolerance,
                 tol_kind=_DEFAULTS.tolerance_kind, viscosity=_DEFAULTS.viscosity, field=_DEFAULTS.compute_field,
                 zero_mode=_DEFAULTS.stresslet_zero_mode, precision=_DEFAULTS.precision,
                 pressure=_DEFAULTS.compute_pressure, threads=_DEFAULTS.threads, potential=_DEFAULTS.compute_potential,
                 xi=_DEFAULTS.xi, rc=_DEFAULTS.rc, grid=_DEFAULTS.grid, P=_DEFAULTS.window_support,
                 beta=_DEFAULTS.window_shape, degree=_DEFAULTS.poly_degree, slab_axis=None, exchange="auto"):
        if not mpi_available():
            raise InvalidArgumentError("DistributedEwaldPlan needs MPI: this elliptica was built without it "
                                       "(MPI and FFTW-MPI, Debian libopenmpi-dev and libfftw3-mpi-dev, not found)")
        if not hasattr(comm, "py2f"):
            raise InvalidArgumentError(f"comm must be an MPI communicator (mpi4py.MPI.Comm), got {_show(comm)}")
        self._kernel = _parse_kernel(kernel)
        self._double_layer = _core.has_double_layer(self._kernel)
        self._ncomp = _core.strength_components(self._kernel)
        opts = _options(self._kernel, box, tol, tol_kind, viscosity, field, zero_mode, precision, False, threads,
                        xi, rc, grid, P, beta, degree, pressure, _DEFAULTS.fft_planner, potential,
                        periodicity=periodicity)
        axes = {None: -1, 0: 0, 1: 1, 2: 2, "x": 0, "y": 1, "z": 2}
        if isinstance(slab_axis, np.integer):
            slab_axis = int(slab_axis)
        err = None
        if isinstance(slab_axis, bool) or not isinstance(slab_axis, (type(None), int, str)) or slab_axis not in axes:
            err = f"slab_axis must be None (the longest side), 0, 1, 2, 'x', 'y' or 'z', got {_show(slab_axis)}"
        elif exchange not in ("auto", "all-to-all", "neighbour"):
            err = f"exchange must be 'auto', 'all-to-all' or 'neighbour', got {_show(exchange)}"
        self._comm = comm
        self._agree(err)  # every rank raises, or none (the plan's constructor is collective)
        self._plan = _core._DistributedEwaldPlan(opts, int(comm.py2f()), axes[slab_axis], exchange)
        self._n_sources = None

    def _agree(self, error):
        """Collective: the checks of this layer run on each rank alone, so their outcome is shared
        before the collective C++ call: every rank raises the error of the lowest failing rank
        (a rank that raised alone would leave the others waiting in the call)."""
        errors = self._comm.allgather(None if error is None else str(error))
        for r, e in enumerate(errors):
            if e is not None:
                raise InvalidArgumentError(f"rank {r}: {e}" if r else e)

    @property
    def kernel(self):
        """The kernel (:class:`Kernel`)."""
        return self._kernel

    @property
    def params(self):
        """The parameters in use (as :attr:`EwaldPlan.params`; zero before the first evaluate)."""
        return self._plan.params

    def stats(self):
        """This rank's part of the last evaluation, a dict: ``ranks``, ``rank``, ``points`` (its
        points after MPI-SORT), ``ghost_sources``, ``slab_axis`` (0, 1, 2), ``plane_start`` and
        ``planes`` (its grid planes along the slab axis), ``slab`` ((lo, hi): its interval along
        the slab axis; the points there are its own after MPI-SORT), ``neighbour_only`` (dict:
        ``sort``, ``ghost_source``, ``ghost_grid``: whether each exchange sent to the neighbours
        only), ``p2p_pair_symmetry`` (whether P2P summed the pairs of its own points once for
        both, as :class:`EwaldPlan` does where it can), ``bytes_sent`` (``sort``: coordinates, values out and results back;
        ``ghost_source``; ``ghost_grid``: to other ranks since the last :meth:`set_points`) and ``times`` (seconds per stage: SORT, GHOST-SOURCE, P2P, P2G, GHOST-GRID, FFT, CNV,
        IFFT, G2P, self)."""
        return self._plan.stats()

    def set_points(self, sources, normals=None):
        """This rank's sources, ndarray((n, 3), float64) (n may be 0), and for the stresslet and
        stokes-combined kernels their normals ndarray((n, 3), float64). Collective."""
        src = nrm = err = None
        try:
            src = _as_rows(sources, "sources", 3, allow_empty=True)
            if normals is not None:
                nrm = _as_rows(normals, "normals", 3, allow_empty=True)
        except InvalidArgumentError as e:
            err = e
        self._agree(err)
        self._plan.set_points(src, nrm)
        self._n_sources = src.shape[0]

    def evaluate(self, strengths=None, dipoles=None):
        """The sum at this rank's points: strengths ndarray((n,), float64) (Laplace) or
        ndarray((n, 3), float64) (stokeslet, stokes-combined), dipoles ndarray((n, 3), float64)
        (stresslet, stokes-combined). Returns an :class:`EwaldResult` of this rank's points.
        Collective; the first call chooses the parameters."""
        q = d = err = None
        try:
            if strengths is not None:
                q = _as_rows(strengths, "strengths", 1, allow_flat=True, allow_empty=True) if self._ncomp == 1 else \
                    _as_rows(strengths, "strengths", 3, allow_empty=True)
            d = None if dipoles is None else _as_rows(dipoles, "dipoles", 3, allow_empty=True)
        except InvalidArgumentError as e:
            err = e
        self._agree(err)
        values, field, params, times, _, _, _, pressure, _ = self._plan.evaluate(q, d)
        info = EwaldInfo(kernel=self._kernel, params=params, times=times)
        if self._kernel == Kernel.laplace:
            return EwaldResult(potential=values, field=field, velocity=None, info=info)
        return EwaldResult(potential=None, field=None, velocity=values, info=info, pressure=pressure)

    __call__ = evaluate


def ewald(
    kernel,
    sources,
    strengths=None,
    box=_REQUIRED,
    *,
    periodicity=tuple(_DEFAULTS.periodicity),
    dipoles=None,
    normals=None,
    targets=None,
    exclusions=None,
    tol=_DEFAULTS.tolerance,
    tol_kind=_DEFAULTS.tolerance_kind,
    viscosity=_DEFAULTS.viscosity,
    field=_DEFAULTS.compute_field,
    zero_mode=_DEFAULTS.stresslet_zero_mode,
    precision=_DEFAULTS.precision,
    energy=_DEFAULTS.compute_energy,
    pressure=_DEFAULTS.compute_pressure,
    threads=_DEFAULTS.threads,
    potential=_DEFAULTS.compute_potential,
    fft_planner=_DEFAULTS.fft_planner,
    pair_symmetry=_DEFAULTS.pair_symmetry,
    xi=_DEFAULTS.xi,
    rc=_DEFAULTS.rc,
    grid=_DEFAULTS.grid,
    P=_DEFAULTS.window_support,
    beta=_DEFAULTS.window_shape,
    degree=_DEFAULTS.poly_degree,
):
    """One-shot spectral Ewald sum: ``EwaldPlan(kernel, box=box, ...)``, then
    ``set_points(sources, targets, normals)``, ``set_exclusions(exclusions)`` if given, and
    ``evaluate(strengths, dipoles)``.

    Parameters
    ----------
    kernel : {"laplace", "stokeslet", "stresslet", "stokes-combined"} or Kernel
        As :class:`EwaldPlan`.
    sources : array_like, ndarray((N, 3), float64)
        Source positions (wrapped into the box in 3P).
    strengths : array_like, optional
        Laplace: charges ndarray((N,), float64) or ((N, 1), float64); stokeslet and
        stokes-combined: forces ndarray((N, 3), float64); stresslet: None.
    box : float or sequence of 3 float
        Box lengths > 0 (required unless ``periodicity="0P"``; keyword, or the 4th positional
        argument).
    periodicity : {"3P", "2P", "1P", "0P"}, str or (bool, bool, bool), keyword-only
        As :class:`EwaldPlan` (default "3P").
    dipoles : array_like, ndarray((N, 3), float64), keyword-only
        Stresslet and stokes-combined (required there): dipole strengths q.
    normals : array_like, ndarray((N, 3), float64), keyword-only
        Stresslet and stokes-combined (required there): normals nu at the sources.
    targets : array_like, ndarray((M, 3), float64), keyword-only, optional
        Default: the sources, self-interaction excluded. M = 0 gives empty results.
    exclusions : array_like, ndarray((K, 2), int64), keyword-only, optional
        Laplace, targets = sources: source index pairs whose direct interaction is removed
        (:meth:`EwaldPlan.set_exclusions`).
    tol, tol_kind, viscosity, field, zero_mode, precision, energy, pressure, threads, potential, fft_planner, pair_symmetry, xi, rc, grid, P, beta, degree
        Keyword-only, as :class:`EwaldPlan` (defaults from the C++ library,
        :func:`ewald_defaults`); an unknown name is a TypeError.

    Returns
    -------
    EwaldResult
        As :meth:`EwaldPlan.evaluate`.

    Raises
    ------
    TypeError
        ``box`` missing, an unknown keyword, or options given positionally.
    InvalidArgumentError, NumericalError, ResourceError
        See :class:`EwaldPlan`, :meth:`EwaldPlan.set_points`, :meth:`EwaldPlan.set_exclusions`
        and :meth:`EwaldPlan.evaluate`.
    """
    free = not any(_parse_periodicity(periodicity))
    if box is _REQUIRED and not free:
        raise TypeError("ewald() missing required argument: 'box'")
    plan = EwaldPlan(kernel, box=None if box is _REQUIRED else box, periodicity=periodicity, tol=tol, tol_kind=tol_kind, viscosity=viscosity, field=field,
                     zero_mode=zero_mode, precision=precision, energy=energy, pressure=pressure, threads=threads,
                     potential=potential, fft_planner=fft_planner, pair_symmetry=pair_symmetry, xi=xi, rc=rc,
                     grid=grid, P=P, beta=beta, degree=degree)
    plan.set_points(sources, targets=targets, normals=normals)
    if exclusions is not None:
        plan.set_exclusions(exclusions)
    return plan._evaluate(strengths, dipoles)
