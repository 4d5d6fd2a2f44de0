"""Geometric multigrid with polynomial (Chebyshev) smoothers and Krylov solvers.

:func:`poisson_fd`, :class:`MultigridPlan`, :func:`chebyshev_cg`, :func:`opt4_betas` (see the
package docstring, section "Multigrid", for the conventions). Thin layer over the C++ modules
``include/elliptica/multigrid/*.hpp`` and ``include/elliptica/krylov/krylov.hpp``.
"""

import numbers

import numpy as np

from . import _core
from ._core import InvalidArgumentError
from ._format import show as _show
from ._record import Record

__all__ = ["poisson_fd", "seed_problem_2d", "MultigridPlan", "chebyshev_cg", "opt4_betas", "SolveResult", "SolveInfo",
           "multigrid_defaults"]

#: The library's multigrid defaults (C++ ``multigrid::MultigridOptions{}``, read through the bindings):
#: coarsening, max_levels, order, smoother, base, lmin_ratio, lambda_safety, lambda_iterations, omega,
#: subdomain, overlap, krylov, tol, maxiter, restart, threads; from_matrix's (strength, coarse_size, ...,
#: coarse_solver, boomeramg_cycle and the boomeramg_* BoomerAMG options) and have_boomeramg (whether this
#: build has hypre). The CLI's help shows the same values.
DEFAULTS = dict(_core._multigrid_defaults())


def multigrid_defaults():
    """The library's multigrid defaults (a copy of the module's ``DEFAULTS``, from the C++ ``MultigridOptions{}``)."""
    return dict(DEFAULTS)

_D = DEFAULTS

_SMOOTHERS = ("simple", "cheb1", "cheb1opt", "cheb4", "opt4")
_BASES = ("jacobi", "asm", "ras")
_KRYLOV = ("none", "gmres", "fgmres", "pcg")
_CG_KRYLOV = ("pcg", "gmres", "fgmres")
_PROBLEMS = ("poisson1d", "poisson2d", "poisson3d")
_COARSE_SOLVERS = ("direct", "boomeramg")
_BOOMERAMG_CYCLES = ("ours", "hypre")
_BOOMERAMG_RELAX = ("l1-jacobi", "chebyshev", "hybrid-sgs", "l1-sgs", "hybrid-gs")
_BOOMERAMG_COARSEN = ("hmis", "pmis", "falgout")
_BOOMERAMG_INTERP = ("ext+i", "classical", "direct", "standard", "extended")
_NO_HYPRE = ("elliptica was built without hypre: BoomerAMG is not available (install libhypre-dev and libopenmpi-dev, "
             "e.g. scripts/install-deps.sh, and rebuild); use method='sa'")


def _boomeramg_options_default():
    """The library's BoomerAMG options (``multigrid_defaults()``'s ``boomeramg_*``) as the bindings' dict."""
    return _boomeramg_options(*(_D["boomeramg_" + k] for k in (
        "relax", "coarsen", "interp", "strength", "pmax", "agg_levels", "max_levels", "coarse_size", "sweeps", "cycles",
        "tol", "print_level")))


def _boomeramg_options(relax, coarsen, interp, strength, pmax, agg_levels, max_levels, coarse_size, sweeps, cycles,
                       tol, print_level):
    """The dict of BoomerAMG options the bindings read (keys without the ``boomeramg_`` prefix)."""
    if not _D["have_boomeramg"]:
        raise InvalidArgumentError(_NO_HYPRE)
    return dict(relax=_choice(relax, _BOOMERAMG_RELAX, "boomeramg_relax"),
                coarsen=_choice(coarsen, _BOOMERAMG_COARSEN, "boomeramg_coarsen"),
                interp=_choice(interp, _BOOMERAMG_INTERP, "boomeramg_interp"),
                strength=_real(strength, "boomeramg_strength"), pmax=_int(pmax, "boomeramg_pmax", 0),
                agg_levels=_int(agg_levels, "boomeramg_agg_levels", 0),
                max_levels=_int(max_levels, "boomeramg_max_levels", 2),
                coarse_size=_int(coarse_size, "boomeramg_coarse_size", 1), sweeps=_int(sweeps, "boomeramg_sweeps", 1),
                cycles=_int(cycles, "boomeramg_cycles", 1), tol=_real(tol, "boomeramg_tol"),
                print_level=_int(print_level, "boomeramg_print_level", 0))


def _sparse():
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover - scipy is a test dependency
        raise ImportError("elliptica's multigrid interface needs scipy (pip install scipy)") from e
    return sp


def _choice(value, allowed, what):
    if isinstance(value, str) and value.strip().lower() in allowed:
        return value.strip().lower()
    raise InvalidArgumentError(f"{what} must be one of {list(allowed)}, got {_show(value)}")


def _int(value, what, minimum=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{what} must be an integer, got {_show(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidArgumentError(f"{what} must be >= {minimum}, got {value}")
    return value


def _real(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{what} must be a real number, got {_show(value)}")
    value = float(value)
    if not np.isfinite(value):
        raise InvalidArgumentError(f"{what} must be finite, got {value}")
    return value


def _csr_arrays(A, name="A"):
    """(indptr int64, indices int32, data float64, n) of a square scipy sparse (or dense) matrix
    with at least as many stored entries as rows (checked before converting, so a huge declared
    shape over a few entries allocates nothing) and a positive diagonal (a necessary condition for
    SPD, checked here for a clear message)."""
    sp = _sparse()
    if not sp.issparse(A):
        if isinstance(A, np.ndarray) and A.ndim == 2:
            A = sp.csr_matrix(A)
        else:
            raise InvalidArgumentError(f"{name} must be a scipy.sparse matrix (or a 2-D numpy array), got {type(A).__name__}")
    if np.iscomplexobj(A.data if hasattr(A, "data") else A.tocsr().data):
        raise InvalidArgumentError(f"{name} must be real, got dtype {A.dtype}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InvalidArgumentError(f"{name} must be square, got shape {A.shape}")
    if A.shape[0] == 0:
        raise InvalidArgumentError(f"{name} is empty (shape {A.shape})")
    # Before the conversion below allocates for the declared shape: fewer stored entries than rows
    # leave a row empty, so the matrix is singular (a 10^9 x 10^9 matrix with 3 entries is refused
    # at once, as the CLI refuses such a Matrix Market size line).
    if A.nnz < A.shape[0]:
        raise InvalidArgumentError(
            f"{name} has {A.shape[0]} rows but only {A.nnz} stored entries: a nonsingular matrix needs at least "
            "one entry in every row"
        )
    try:
        A = sp.csr_matrix(A, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{name} cannot be converted to a float64 CSR matrix: {e}") from None
    if not np.all(np.isfinite(A.data)):
        raise InvalidArgumentError(f"{name} contains NaN or Inf entries")
    A.sum_duplicates()
    A.sort_indices()
    diag = A.diagonal()
    bad = np.flatnonzero(~(diag > 0))
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(
            f"{name} must be symmetric positive definite, but its diagonal entry at row {i} is {float(diag[i]):g} "
            f"(not > 0; {bad.size} such rows)"
        )
    if A.shape[0] >= 2**31:
        raise InvalidArgumentError(f"{name} is too large ({A.shape[0]} rows; at most 2^31 - 1)")
    indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(A.indices, dtype=np.int32)
    data = np.ascontiguousarray(A.data, dtype=np.float64)
    return indptr, indices, data, int(A.shape[0])


def _vector(v, n, name):
    if np.iscomplexobj(v):
        raise InvalidArgumentError(f"{name} must be real, got a complex array")
    try:
        a = np.ascontiguousarray(v, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{name} is not a numeric array: {e}") from None
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.ndim != 1 or a.shape[0] != n:
        raise InvalidArgumentError(f"{name} must have shape ({n},) to match the matrix, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidArgumentError(f"{name} contains NaN or Inf")
    return a


def _block(v, n, name, k=None):
    """v as ndarray((n, k), float64) when it is 2-D with n rows (k columns; k given: exactly k),
    None when it is not 2-D with n rows (a vector: _vector's business)."""
    if np.iscomplexobj(v):
        raise InvalidArgumentError(f"{name} must be real, got a complex array")
    if np.ndim(v) != 2 or np.shape(v)[0] != n:
        return None
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{name} is not a numeric array: {e}") from None
    if k is not None and a.shape[1] != k:
        raise InvalidArgumentError(f"{name} must have the shape of b, ({n}, {k}), got shape {a.shape}")
    if a.shape[1] < 1:
        raise InvalidArgumentError(f"{name} must have shape ({n}, k) with k >= 1, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise InvalidArgumentError(f"{name} contains NaN or Inf")
    return a


def _to_scipy(t):
    data, indices, indptr, rows, cols = t
    return _sparse().csr_matrix((data, indices, indptr), shape=(rows, cols))


def _lengths(lengths, dim):
    if lengths is None:
        return (1.0, 1.0, 1.0)
    if isinstance(lengths, numbers.Real):
        lengths = (lengths,) * dim
    try:
        L = [float(v) for v in lengths]
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"lengths must be {dim} positive numbers, got {_show(lengths)}") from None
    if len(L) != dim:
        raise InvalidArgumentError(f"lengths must have {dim} entries for a {dim}-D problem, got {len(L)}: {_show(lengths)}")
    if not all(np.isfinite(x) and x > 0 for x in L):
        raise InvalidArgumentError(f"lengths must be finite and positive, got {_show(lengths)}")
    return tuple(L + [1.0] * (3 - dim))


def poisson_fd(n, lengths=(1.0, 1.0), *, dim=None, grid="vertex", bc="dirichlet"):
    """Finite-difference -Laplacian with homogeneous Dirichlet boundary, as a scipy CSR matrix.

    The box ``[0, L_1] x ... x [0, L_dim]`` (``lengths``; its length sets the dimension 1, 2 or 3;
    a scalar with ``dim`` given means a square / cube) is split into ``n`` equal intervals per axis
    (spacing ``h_d = L_d / n``); the unknowns are the ``n - 1`` interior points per axis,
    ordered lexicographically with x fastest (index ``i + (n-1) (j + (n-1) k)``). Row ``p`` holds
    ``sum_d (2 u_p - u_{p-e_d} - u_{p+e_d}) / h_d^2`` (3/5/7-point stencil); SPD, size
    ``(n-1)^dim``.

    ``grid="cell"``: ``n`` cells per axis, unknowns at the centres ``(i + 1/2) h`` (the
    finite-volume pressure Laplacian), size ``n^dim``. ``bc``: ``"dirichlet"`` (u = 0 on the
    walls; on cells by the ghost value ``-u_0``), ``"neumann"`` (no flux; cells only) or
    ``"periodic"`` (``n`` points / cells per axis, neighbours wrapped; size ``n^dim``). Neumann and
    periodic matrices are singular with the constant null space (solve them with
    ``null_space="constant"``). C++ ``multigrid::poisson_fd`` (``poisson.hpp``).
    Raises InvalidArgumentError on ``n < 2``, a dimension outside {1, 2, 3}, a non-positive length,
    an unknown ``grid`` / ``bc`` or Neumann on a vertex grid.
    """
    n = _int(n, "n (intervals per axis)", 2)
    grid = _choice(grid, ("vertex", "cell"), "grid")
    bc = _choice(bc, ("dirichlet", "neumann", "periodic"), "bc")
    if grid == "vertex" and bc == "neumann":
        raise InvalidArgumentError("bc='neumann' needs grid='cell' (Neumann walls are cell-centred here)")
    if dim is None:
        if not hasattr(lengths, "__len__"):
            raise InvalidArgumentError(
                f"lengths must be a tuple with one length per axis (or give dim= with a scalar), got {_show(lengths)}"
            )
        dim = len(lengths)
    dim = _int(dim, "dim", 1)
    if dim > 3:
        raise InvalidArgumentError(f"dim must be 1, 2 or 3, got {dim}")
    L = _lengths(lengths, dim)
    return _to_scipy(_core._poisson_fd(dim, n, L, grid, bc))


def seed_problem_2d(n, lx=1.0, ly=1.0):
    """The seed's 2D test problem: returns ``(A, u, b)``.

    ``A = poisson_fd(n, (lx, ly))`` (scipy CSR), ``u`` the exact discrete solution
    ``sin(3 pi x / lx) sin(4 pi y / ly) + g`` (``g`` a fixed pseudo-random grid function uniform in
    [-1, 1)), ``b = A u``; ``u``, ``b`` of shape ``((n-1)^2,)``.
    """
    n = _int(n, "n (intervals per axis)", 2)
    A, u, b = _core._seed_problem_2d(n, _real(lx, "lx"), _real(ly, "ly"))
    return _to_scipy(A), u, b


def opt4_betas(k):
    """Optimised 4th-kind Chebyshev weights ``beta_1..beta_k`` (Lottes 2023), shape ``(k,)``.

    Tabulated for ``k <= 16``, computed beyond. Raises InvalidArgumentError on ``k < 1``.
    """
    return _core._opt4_betas(_int(k, "k", 1))


class SolveInfo(Record):
    """Statistics of a solve: ``converged``, ``iterations``, ``residual_history`` (numpy, relative,
    entry 0 is 1), ``matvecs`` (fine-grid matrix-vector products by the cost convention),
    ``operator_applications``, ``preconditioner_applications``, ``final_relative_residual``, ``rho``
    (average rate ``(||r_N|| / ||r_0||)^(1/N)``) and, for :func:`chebyshev_cg`, ``lambda_max``.

    Attributes, also readable as ``info["converged"]``; :meth:`to_dict` gives a plain dict.
    """

    __slots__ = ()

    def to_dict(self):
        """A copy of the values as a dict (as_dict())."""
        return self.as_dict()

    def __repr__(self):
        return (f"SolveInfo(converged={self._d['converged']}, iterations={self._d['iterations']}, "
                f"final_relative_residual={self._d['final_relative_residual']:.3e})")


class SolveResult(tuple):
    """The result of a solve: ``x`` (the solution, shape (n,)) and ``info`` (a :class:`SolveInfo`).
    Unpacks as ``x, info = plan.solve(b)``."""

    __slots__ = ()

    def __new__(cls, x, info):
        return super().__new__(cls, (x, info))

    @property
    def x(self):
        return self[0]

    @property
    def info(self):
        return self[1]

    def __repr__(self):
        return f"SolveResult(x=<array {self[0].shape}>, info={self[1]!r})"


def _smoother_args(smoother, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations, omega, subdomain, overlap):
    return dict(
        kind=_choice(smoother, _SMOOTHERS, "smoother"),
        base=_choice(base, _BASES, "base"),
        lmin_ratio=_real(lmin_ratio, "lmin_ratio"),
        lambda_max=None if lambda_max is None else _real(lambda_max, "lambda_max"),
        lambda_safety=_real(lambda_safety, "lambda_safety"),
        lambda_iterations=_int(lambda_iterations, "lambda_iterations", 1),
        omega=_real(omega, "omega"),
        subdomain=_int(subdomain, "subdomain", 1),
        overlap=_int(overlap, "overlap", 0),
    )


def _cycle_order(order):
    try:
        if isinstance(order, str) or len(order) != 2:
            raise ValueError
        m_pre = _int(order[0], "order[0] (pre)")
        n_post = _int(order[1], "order[1] (post)")
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"order must be (pre, post) smoothing orders, got {_show(order)}") from None
    if m_pre < 0 or n_post < 0 or m_pre + n_post < 1:
        raise InvalidArgumentError(f"order (pre, post) must be >= 0 with pre + post >= 1, got {_show(order)}")
    return m_pre, n_post


def rigid_body_modes(coords):
    """Rigid-body modes of linear elasticity, the near-null space of ``MultigridPlan.from_matrix``.

    ``coords``: ndarray((nodes, dim), float64), dim 2 or 3, the node coordinates in the order of
    the matrix's nodes, whose ``dim`` unknowns are interleaved (``block_size=dim``). Returns
    ndarray((nodes * dim, k), float64): k = 3 (dim 2: two translations, the rotation (-y, x)) or
    6 (dim 3: three translations, rotations about x, y, z), about the centroid. C++
    ``multigrid::rigid_body_modes``. Raises InvalidArgumentError for another shape.
    """
    try:
        c = np.asarray(coords, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"coords is not a numeric array: {e}") from None
    if c.ndim != 2 or c.shape[1] not in (2, 3) or c.shape[0] < 1:
        raise InvalidArgumentError(f"coords must have shape (nodes, 2) or (nodes, 3), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise InvalidArgumentError("coords contains NaN or Inf")
    flat, k = _core._MultigridPlan._rigid_body_modes(np.ascontiguousarray(c.ravel()), c.shape[1])
    return np.asarray(flat).reshape((k, c.shape[0] * c.shape[1])).T.copy()


class MultigridPlan:
    """Geometric multigrid V-cycle on a structured grid: hierarchy + polynomial smoothers.

    Build from a matrix ``A`` (any scipy sparse format or a dense 2-D array; converted to CSR
    float64) with ``shape=(nx, ny[, nz])`` unknowns per axis (lexicographic, x fastest; required:
    the coarsening is geometric), or from a named ``problem`` (``"poisson1d"``, ``"poisson2d"``,
    ``"poisson3d"``: :func:`poisson_fd` with ``n`` intervals per axis on ``[0,lx] x [0,ly] x [0,lz]``),
    whose matrix is then :attr:`A`.

    Every keyword defaults to the library's value (:func:`elliptica.multigrid_defaults`, the C++ ``MultigridOptions{}``).
    Parameters: ``coarsening`` 2 (n_c = n/2) or 8 (n_c = n/8), on grids of any size: each axis
    of at least that many unknowns is coarsened to floor(n / c) (C++ ``coarsening.hpp``);
    ``grid`` ``"vertex"`` (unknowns at interior grid points, Dirichlet points excluded) or
    ``"cell"`` (unknowns at cell centres; cell-centred linear interpolation, which reproduces
    constants: the choice for pure-Neumann and periodic matrices); ``semi_coarsening``
    ``"off"`` (every axis), ``"auto"`` (per level only the axes whose coupling is >= 0.25 x the
    largest: stretched meshes) or ``"on"`` (only the strongest axis per level);
    ``null_space="constant"``: A is singular with the constant null space (``solve`` projects b
    onto the range and returns the zero-mean solution; the coarsest solve keeps the null space);
    with ``problem=``, ``bc`` ``"dirichlet"``, ``"neumann"`` (needs ``grid="cell"``) or
    ``"periodic"`` picks the boundary of :func:`poisson_fd` (``n`` intervals or cells per axis; the
    singular ones are solved with the constant null space on the cell interpolation);
    ``smoother`` in {simple, cheb1, cheb1opt, cheb4, opt4}; ``base`` in {jacobi, asm, ras};
    ``order=(m, n)`` pre-/post-smoothing orders (``n = 0``: one-sided cycle); ``lambda_max``
    overrides the estimate of rho(S A) (else ``lambda_safety`` x the largest Ritz value of
    ``lambda_iterations`` Lanczos steps); ``lmin_ratio`` (cheb1), ``omega`` (simple; 0 means
    1/lambda_max), ``subdomain``/``overlap`` (asm/ras, grid points); ``max_levels`` (0: no cap); ``threads``
    (OpenMP threads of this plan's kernels, 0: all available; no global OpenMP state is changed).
    The coarsest level is solved exactly (banded Cholesky), so it must be SPD; ``coarse_solver="boomeramg"``:
    by one BoomerAMG V-cycle with the default BoomerAMG options instead (needs hypre; use
    :meth:`from_matrix` with ``method="geometric"`` for the ``boomeramg_*`` keywords).

    Attributes: ``levels``, ``operator_complexity`` (sum of nonzeros over levels / nonzeros of
    A_0), ``grid_complexity``, ``lambda_max`` (list, one per smoothed level), ``level_shapes``,
    ``size``, ``A``. Calls on one plan from several threads are serialised; the GIL is released
    while computing.

    Errors: InvalidArgumentError (ValueError) for bad shapes, NaN/Inf, unknown names, sizes not
    matching ``shape``, a grid no axis of which can be coarsened (a one-level hierarchy is a direct
    solve, not multigrid: use ``MultigridPlan.from_matrix(A, method="sa")``; ``max_levels=1``
    asks for it by name); NumericalError (RuntimeError) for an indefinite operator.
    """

    def __init__(self, A=None, *, shape=None, problem=None, n=None, lx=1.0, ly=1.0, lz=1.0,
                 coarsening=_D["coarsening"], smoother=_D["smoother"], base=_D["base"], order=tuple(_D["order"]),
                 lambda_max=None, lambda_safety=_D["lambda_safety"], lambda_iterations=_D["lambda_iterations"],
                 lmin_ratio=_D["lmin_ratio"], omega=_D["omega"], subdomain=_D["subdomain"], overlap=_D["overlap"],
                 max_levels=_D["max_levels"], threads=_D["threads"], coarse_solver=_D["coarse_solver"],
                 grid=_D["grid"], semi_coarsening=_D["semi_coarsening"], null_space=None, bc="dirichlet",
                 _boomeramg_options=None):
        if (A is None) == (problem is None):
            raise InvalidArgumentError("give exactly one of A (a sparse matrix, with shape=) or problem= (e.g. 'poisson2d')")
        if problem is not None:
            problem = _choice(problem, _PROBLEMS, "problem")
            if n is None:
                raise InvalidArgumentError(f"problem={problem!r} needs n (intervals per axis)")
            n = _int(n, "n (intervals per axis)", 2)
            dim = int(problem[-2])
            lengths = (_real(lx, "lx"), _real(ly, "ly"), _real(lz, "lz"))[:dim]
            grid = _choice(grid, ("vertex", "cell"), "grid")
            bc = _choice(bc, ("dirichlet", "neumann", "periodic"), "bc")
            unknowns = n - 1 if (grid == "vertex" and bc == "dirichlet") else n
            if shape is not None and tuple(shape) != (unknowns,) * dim:
                raise InvalidArgumentError(f"shape {_show(tuple(shape))} does not match problem {problem!r} with n = {n}")
            shape = (unknowns,) * dim
            A = poisson_fd(n, lengths, grid=grid, bc=bc)
            if bc != "dirichlet":  # singular: the constant null space, interpolation that keeps it
                null_space, grid = "constant", "cell"
        elif bc != "dirichlet":
            raise InvalidArgumentError("bc is only used with problem=")
        elif n is not None:
            raise InvalidArgumentError("n is only used with problem=; give shape= (unknowns per axis) with A")
        if shape is None:
            raise InvalidArgumentError(
                "shape=(nx, ny[, nz]) (unknowns per axis) is required with a matrix: the coarsening is geometric"
            )
        if isinstance(shape, numbers.Integral):
            shape = (shape,)
        try:
            shape = [_int(s, "shape entries", 1) for s in shape]
        except TypeError:
            raise InvalidArgumentError(f"shape must be a tuple of 1-3 positive integers, got {_show(shape)}") from None
        if not 1 <= len(shape) <= 3:
            raise InvalidArgumentError(f"shape must have 1, 2 or 3 entries, got {len(shape)}")
        if null_space not in (None, "constant"):
            raise InvalidArgumentError(f"null_space must be None or 'constant', got {null_space!r}")
        m_pre, n_post = _cycle_order(order)
        coarsening = _int(coarsening, "coarsening")
        if coarsening not in (2, 8):
            raise InvalidArgumentError(f"coarsening must be 2 or 8, got {coarsening}")
        indptr, indices, data, rows = _csr_arrays(A)
        if int(np.prod(shape)) != rows:
            raise InvalidArgumentError(
                f"shape {tuple(shape)} has {int(np.prod(shape))} unknowns but A has {rows} rows"
            )
        self._A = A if problem is not None else None
        self._order = (m_pre, n_post)
        self._plan = _core._MultigridPlan(
            indptr, indices, data, rows, shape, coarsening, _int(max_levels, "max_levels", 0), m_pre, n_post,
            **_smoother_args(smoother, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations, omega,
                             subdomain, overlap),
            threads=_int(threads, "threads", 0),
            coarse_solver=_choice(coarse_solver, _COARSE_SOLVERS, "coarse_solver"),
            boomeramg=(_boomeramg_options_default() if _boomeramg_options is None and coarse_solver == "boomeramg"
                       else _boomeramg_options),
            grid=_choice(grid, ("vertex", "cell"), "grid"),
            semi_coarsening=_choice(semi_coarsening, ("off", "auto", "on"), "semi_coarsening"),
            constant_null_space=null_space == "constant",
        )
        if self._A is None:
            self._A = _sparse().csr_matrix((data, indices, indptr), shape=(rows, rows))

    @classmethod
    def from_matrix(cls, A, *, method="sa", near_null=None, block_size=_D["block_size"], strength=None,
                    strength_measure=_D["strength_measure"],
                    prolongator_omega=_D["prolongator_omega"], coarse_size=_D["coarse_size"],
                    max_levels=_D["amg_max_levels"], null_space=None, shape=None, coarsening=_D["coarsening"], smoother=_D["smoother"],
                    base=_D["base"], order=tuple(_D["order"]), lambda_max=None, lambda_safety=_D["lambda_safety"],
                    lambda_iterations=_D["lambda_iterations"], lmin_ratio=_D["lmin_ratio"], omega=_D["omega"],
                    subdomain=_D["subdomain"], overlap=_D["overlap"], threads=_D["threads"],
                    coarse_solver=_D["coarse_solver"], boomeramg_cycle=_D["boomeramg_cycle"],
                    boomeramg_relax=_D["boomeramg_relax"], boomeramg_coarsen=_D["boomeramg_coarsen"],
                    boomeramg_interp=_D["boomeramg_interp"], boomeramg_strength=_D["boomeramg_strength"],
                    boomeramg_pmax=_D["boomeramg_pmax"], boomeramg_agg_levels=_D["boomeramg_agg_levels"],
                    boomeramg_max_levels=_D["boomeramg_max_levels"], boomeramg_coarse_size=_D["boomeramg_coarse_size"],
                    boomeramg_sweeps=_D["boomeramg_sweeps"], boomeramg_cycles=_D["boomeramg_cycles"],
                    boomeramg_tol=_D["boomeramg_tol"], boomeramg_print_level=_D["boomeramg_print_level"],
                    grid=_D["grid"], semi_coarsening=_D["semi_coarsening"]):
        """Multigrid for a user's matrix: a hierarchy built from ``A`` alone (``method="sa"``,
        smoothed aggregation, or ``method="boomeramg"``, hypre's BoomerAMG) or on a grid
        (``method="geometric"``, needs ``shape``), with the same cycle, smoothers and solves as the
        constructor's plans.

        ``A``: square symmetric positive (semi-)definite matrix, any scipy sparse format or a dense
        ndarray((n, n), float64) (converted to CSR float64).
        ``method="sa"`` (C++ ``MultigridPlan::smoothed_aggregation``, ``multigrid/amg.hpp``):
        ``near_null``: ndarray((n, k), float64) near-null-space vectors (default: the constants
        of each of the ``block_size`` unknowns per node; for elasticity the rigid-body modes,
        :func:`rigid_body_modes`); ``block_size`` unknowns per node, interleaved (node i owns
        rows ``b*i .. b*i+b-1``); ``strength_measure="symmetric"``: i, j strongly coupled when
        ``|a_ij| >= theta sqrt(|a_ii a_jj|)``, theta halved on each coarser level (Vanek et al.);
        ``"classical"``: when ``|a_ij| >= theta max_k |a_ik|`` (Ruge-Stueben; better for rotated
        anisotropy); ``strength`` theta in [0, 1) (None: the measure's default,
        ``multigrid_defaults()["strength"]`` = 0.08 symmetric, ``["strength_classical"]`` = 0.5); ``prolongator_omega`` (4/3; 0: unsmoothed
        aggregation); ``coarse_size``: coarsen until at most this many unknowns, factorised
        there (a sparse LDL^T that keeps a pure-Neumann null space); ``max_levels`` >= 2;
        ``null_space="constant"``: A is singular with the constant vector as its null space (pure
        Neumann / periodic pressure equation): ``solve`` projects b onto the range (b - mean(b))
        and returns the zero-mean solution (None: b as given).
        ``method="geometric"``: ``shape=(nx, ny[, nz])``, ``coarsening``, ``grid``,
        ``semi_coarsening`` and ``null_space`` as in the constructor (a grid that cannot be
        coarsened at all is an InvalidArgumentError, not a direct solve).
        ``method="boomeramg"`` (C++ ``MultigridPlan::boomeramg``, ``multigrid/boomeramg.hpp``; needs
        a build with hypre: ``multigrid_defaults()["have_boomeramg"]``): BoomerAMG's set-up on A;
        ``boomeramg_cycle="ours"``: our cycle (the smoother keywords) over hypre's levels A_l, P_l,
        the coarsest factorised; ``"hypre"``: hypre's own V-cycle with ``boomeramg_relax`` in
        {l1-jacobi, chebyshev, hybrid-sgs, l1-sgs, hybrid-gs} (hybrid-gs is not symmetric: no
        pcg). ``null_space="constant"`` only with ``boomeramg_cycle="ours"``.
        ``coarse_solver`` (``method="sa"`` / ``"geometric"``): ``"direct"`` (factorised) or
        ``"boomeramg"`` (``boomeramg_cycles`` BoomerAMG V-cycles, or to ``boomeramg_tol`` > 0: then
        use krylov="fgmres"), so that a larger ``coarse_size`` stops coarsening early.
        BoomerAMG keywords (used by method="boomeramg" and coarse_solver="boomeramg"; the CLI's
        ``--boomeramg-*`` flags): ``boomeramg_coarsen`` in {hmis, pmis, falgout},
        ``boomeramg_interp`` in {ext+i, classical, direct, standard, extended},
        ``boomeramg_strength`` in [0, 1) (0.25; hypre advises 0.5 in 3D), ``boomeramg_pmax``
        (entries per row of P, 0: no truncation), ``boomeramg_agg_levels`` (aggressive coarsening),
        ``boomeramg_max_levels`` >= 2, ``boomeramg_coarse_size`` >= 1, ``boomeramg_sweeps`` >= 1,
        ``boomeramg_cycles`` >= 1, ``boomeramg_tol`` in [0, 1), ``boomeramg_print_level`` 0..3
        (hypre's printing on stdout). The first BoomerAMG object initialises MPI (once, one rank;
        nothing when the host program already did): ``import elliptica`` alone does not.
        Cycle and smoother keywords as in the constructor. ``solve()`` of such a plan defaults to
        ``krylov="pcg"`` (as ``elliptica mg solve --matrix``).

        Raises InvalidArgumentError (ValueError) for bad keywords, a non-square or non-finite
        matrix, ``near_null`` of the wrong shape, a matrix too small for more than one level
        (``n <= coarse_size``: a one-level hierarchy is a direct solve, not multigrid) or one
        without strong couplings; NumericalError (RuntimeError) when the coarsest operator is found
        indefinite. The same C++ plan as ``elliptica mg solve --matrix A.mtx --amg sa``.
        """
        method = _choice(method, ("sa", "geometric", "boomeramg"), "method")
        coarse_solver = _choice(coarse_solver, _COARSE_SOLVERS, "coarse_solver")
        boomeramg_cycle = _choice(boomeramg_cycle, _BOOMERAMG_CYCLES, "boomeramg_cycle")
        bopts = None
        if method == "boomeramg" or coarse_solver == "boomeramg":
            bopts = _boomeramg_options(boomeramg_relax, boomeramg_coarsen, boomeramg_interp, boomeramg_strength,
                                       boomeramg_pmax, boomeramg_agg_levels, boomeramg_max_levels,
                                       boomeramg_coarse_size, boomeramg_sweeps, boomeramg_cycles, boomeramg_tol,
                                       boomeramg_print_level)
        if method != "boomeramg" and boomeramg_cycle != _D["boomeramg_cycle"]:
            raise InvalidArgumentError("boomeramg_cycle applies only to method='boomeramg'")
        # keywords of another method are refused, not ignored (as the CLI's flags)
        if method != "geometric":
            for name, value in (("grid", grid), ("semi_coarsening", semi_coarsening), ("coarsening", coarsening)):
                if value != _D[name]:
                    raise InvalidArgumentError(f"{name} applies only to method='geometric'")
        if method != "sa":
            if strength is not None or strength_measure != _D["strength_measure"]:
                raise InvalidArgumentError("strength and strength_measure apply only to method='sa' (BoomerAMG: "
                                           "boomeramg_strength)")
            for name, value, default in (("block_size", block_size, _D["block_size"]),
                                         ("prolongator_omega", prolongator_omega, _D["prolongator_omega"]),
                                         ("coarse_size", coarse_size, _D["coarse_size"])):
                if value != default:
                    raise InvalidArgumentError(f"{name} applies only to method='sa'")
        if method == "boomeramg":
            if coarse_solver != "direct":
                raise InvalidArgumentError("coarse_solver applies only to method='sa' or 'geometric' (BoomerAMG's "
                                           "hierarchy has its own coarsest solve)")
            for name, value in (("near_null", near_null), ("shape", shape)):
                if value is not None:
                    raise InvalidArgumentError(f"{name} does not apply to method='boomeramg'")
            if null_space not in (None, "constant"):
                raise InvalidArgumentError(f"null_space must be None or 'constant', got {null_space!r}")
            m_pre, n_post = _cycle_order(order)
            indptr, indices, data, rows = _csr_arrays(A)
            self = cls.__new__(cls)
            self._order = (m_pre, n_post)
            self._plan = _core._MultigridPlan._boomeramg(
                indptr, indices, data, rows, bopts, boomeramg_cycle, m_pre, n_post,
                **_smoother_args(smoother, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations, omega,
                                 subdomain, overlap),
                threads=_int(threads, "threads", 0), constant_null_space=null_space == "constant",
            )
            self._A = _sparse().csr_matrix((data, indices, indptr), shape=(rows, rows))
            # hypre's cycle run to a tolerance is not a fixed map: FGMRES by default
            self._default_krylov = "fgmres" if bopts["tol"] > 0 and boomeramg_cycle == "hypre" else "pcg"
            self._method = "boomeramg"
            return self
        if method == "geometric":
            if shape is None:
                raise InvalidArgumentError("method='geometric' needs shape=(nx, ny[, nz]) (unknowns per axis)")
            if near_null is not None:
                raise InvalidArgumentError("near_null applies only to method='sa'")
            plan = cls(A, shape=shape, coarsening=coarsening, smoother=smoother, base=base, order=order,
                       lambda_max=lambda_max, lambda_safety=lambda_safety, lambda_iterations=lambda_iterations,
                       lmin_ratio=lmin_ratio, omega=omega, subdomain=subdomain, overlap=overlap, threads=threads,
                       grid=grid, semi_coarsening=semi_coarsening, null_space=null_space,
                       coarse_solver=coarse_solver, _boomeramg_options=bopts)
            # a BoomerAMG coarse solve to a tolerance is not a fixed map: FGMRES by default
            plan._default_krylov = "fgmres" if bopts is not None and bopts["tol"] > 0 else "pcg"
            plan._method = "geometric"
            return plan
        if shape is not None:
            raise InvalidArgumentError("shape applies only to method='geometric' (smoothed aggregation needs no grid)")
        if null_space not in (None, "constant"):
            raise InvalidArgumentError(f"null_space must be None or 'constant', got {null_space!r}")
        m_pre, n_post = _cycle_order(order)
        indptr, indices, data, rows = _csr_arrays(A)
        block_size = _int(block_size, "block_size", 1)
        if near_null is None:
            nn, k = np.zeros(0), 0
        else:
            try:
                B = np.asarray(near_null, dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise InvalidArgumentError(f"near_null is not a numeric array: {e}") from None
            if B.ndim == 1:
                B = B[:, None]
            if B.ndim != 2 or B.shape[0] != rows or B.shape[1] < 1:
                raise InvalidArgumentError(
                    f"near_null must have shape ({rows}, k) (one row per unknown), got shape {B.shape}")
            if not np.all(np.isfinite(B)):
                raise InvalidArgumentError("near_null contains NaN or Inf")
            nn, k = np.ascontiguousarray(B.ravel(order="F")), B.shape[1]
        strength_measure = _choice(strength_measure, ("symmetric", "classical"), "strength_measure")
        if strength is None:
            strength = _D["strength_classical"] if strength_measure == "classical" else _D["strength"]
        strength = _real(strength, "strength")
        if not 0.0 <= strength < 1.0:
            raise InvalidArgumentError(f"strength must be in [0, 1), got {_show(strength)}")
        prolongator_omega = _real(prolongator_omega, "prolongator_omega")
        if not 0.0 <= prolongator_omega < 2.0:
            raise InvalidArgumentError(f"prolongator_omega must be in [0, 2), got {_show(prolongator_omega)}")
        self = cls.__new__(cls)
        self._order = (m_pre, n_post)
        self._plan = _core._MultigridPlan._smoothed_aggregation(
            indptr, indices, data, rows, nn, k, block_size, strength,
            prolongator_omega, _int(coarse_size, "coarse_size", 1),
            _int(max_levels, "max_levels", 2), m_pre, n_post,
            **_smoother_args(smoother, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations, omega,
                             subdomain, overlap),
            threads=_int(threads, "threads", 0), constant_null_space=null_space == "constant",
            strength_measure=strength_measure, coarse_solver=coarse_solver, boomeramg=bopts,
        )
        self._A = _sparse().csr_matrix((data, indices, indptr), shape=(rows, rows))
        self._default_krylov = "fgmres" if bopts is not None and bopts["tol"] > 0 else "pcg"
        self._method = "sa"
        return self

    @property
    def method(self):
        """The hierarchy: ``"geometric"``, ``"sa"`` (smoothed aggregation) or ``"boomeramg"``."""
        return getattr(self, "_method", "geometric")

    @property
    def A(self):
        """The fine-level matrix (scipy CSR, float64)."""
        return self._A

    @property
    def size(self):
        return self._plan.size

    @property
    def levels(self):
        return self._plan.levels

    @property
    def operator_complexity(self):
        return self._plan.operator_complexity

    @property
    def grid_complexity(self):
        return self._plan.grid_complexity

    @property
    def lambda_max(self):
        """Safety-scaled bound on rho(S A) used by each smoothed level (finest first)."""
        return list(self._plan.lambda_max)

    @property
    def level_shapes(self):
        return [tuple(s) for s in self._plan.level_shapes]

    @property
    def order(self):
        return self._order

    def cycle(self, b, x):
        """One V-cycle for ``A x = b`` from ``x``; returns the improved x as a new array (n,)."""
        n = self.size
        return self._plan.cycle(_vector(b, n, "b"), _vector(x, n, "x"))

    def solve(self, b, x0=None, *, tol=_D["tol"], maxiter=_D["maxiter"], krylov=None, restart=_D["restart"],
              atol=_D["atol"]):
        """Solves ``A x = b`` to ``||b - A x|| <= max(tol ||b - A x0||, atol)`` (``atol`` >= 0, default
        0: a warm start ``x0`` whose residual is already below ``atol`` returns at once, 0
        iterations); returns a :class:`SolveResult`
        (unpacks as ``x, info``).

        ``b``: ndarray((n,), float64), or ndarray((n, k), float64) for k right-hand sides at once
        (C++ ``MultigridPlan::solve(B, X, k)``: one set-up, the columns solved one after the other,
        each exactly as a single solve); ``x`` has the shape of ``b`` (``x0`` too, when given), and
        ``info`` is then a list of k :class:`SolveInfo`, one per column.
        ``krylov``: ``"none"`` (stationary V-cycle iteration, maxiter cycles), ``"gmres"``
        (GMRES(restart), right-preconditioned by one cycle), ``"fgmres"``, ``"pcg"`` (only for a
        symmetric cycle: pre == post and base jacobi/asm, and a symmetric A: an unsymmetric one
        raises InvalidArgumentError naming the worst pair, 0-based, before any iteration); None:
        ``"pcg"`` for plans from :meth:`from_matrix`, else the library's default. Defaults
        (:func:`elliptica.multigrid_defaults`): krylov, tol,
        maxiter, restart of the C++ plan. ``info``: a :class:`SolveInfo` (``converged``,
        ``iterations``, ``residual_history``, ``matvecs`` (a cycle costing pre + post + 1),
        ``rho``, ``final_relative_residual``). Does not raise when not converged: check
        ``info.converged``. Calls the C++ ``MultigridPlan::solve``, as ``elliptica mg solve`` does.
        """
        n = self.size
        maxiter = _int(maxiter, "maxiter", 0)
        if krylov is None:
            krylov = getattr(self, "_default_krylov", _D["krylov"])
        krylov = _choice(krylov, _KRYLOV, "krylov")
        opts = (_real(tol, "tol"), maxiter, krylov, _int(restart, "restart", 1), _real(atol, "atol"))
        B = _block(b, n, "b")
        if B is not None:  # k right-hand sides: the columns contiguous for C++
            k = B.shape[1]
            X0 = np.zeros((n, k)) if x0 is None else _block(x0, n, "x0", k)
            if X0 is None:
                raise InvalidArgumentError(f"x0 must have the shape of b, ({n}, {k}), got shape {np.shape(x0)}")
            X, infos = self._plan.solve_block(np.ascontiguousarray(B.T).ravel(), np.ascontiguousarray(X0.T).ravel(), k,
                                              *opts)
            return SolveResult(np.ascontiguousarray(X.reshape(k, n).T), [SolveInfo(i) for i in infos])
        b = _vector(b, n, "b")
        x0 = np.zeros(n) if x0 is None else _vector(x0, n, "x0")
        x, info = self._plan.solve(b, x0, *opts)
        return SolveResult(x, SolveInfo(info))

    def update(self, A, *, keep_prolongators=_D["keep_prolongators"]):
        """Numeric re-setup for ``A`` with the sparsity pattern of the plan's matrix and new values
        (a time-dependent coefficient, an implicit step's new dt): C++
        ``MultigridPlan::update_values``. Smoothed aggregation keeps its strength graphs,
        aggregates and tentative prolongators and recomputes the smoothed prolongators; the
        geometric hierarchy keeps P; both recompute the Galerkin coarse operators into the kept
        patterns, the coarsest factorisation and the smoothers (Lanczos estimates). The solves after
        it are those of ``A`` (:attr:`A` is then ``A``; a :class:`SolutionProjection` of this plan
        empties its basis at its next solve). ``keep_prolongators=True`` (C++
        ``UpdateOptions::keep_prolongators``) keeps smoothed aggregation's P as well: cheaper (no
        prolongator smoothing), still a Galerkin hierarchy of ``A``, but P no longer follows the new
        coefficients (more iterations after large changes).

        ``A``: scipy sparse or a dense ndarray((n, n), float64). Raises InvalidArgumentError
        (ValueError) for another size or sparsity pattern (set up a new plan for those), NaN/Inf, a
        non-positive diagonal; NumericalError (RuntimeError) for a coarsest operator that is not
        positive (semi-)definite. On an error the plan is unchanged.
        """
        indptr, indices, data, rows = _csr_arrays(A)
        if rows != self.size:
            raise InvalidArgumentError(
                f"A has {rows} rows but the plan {self.size}: update() keeps the pattern and changes the values; set up a "
                "new plan for another size")
        if not isinstance(keep_prolongators, (bool, np.bool_)):
            raise InvalidArgumentError(f"keep_prolongators must be True or False, got {_show(keep_prolongators)}")
        self._plan.update(indptr, indices, data, rows, bool(keep_prolongators))
        self._A = _sparse().csr_matrix((data, indices, indptr), shape=(rows, rows))

    @property
    def update_count(self):
        """How many times :meth:`update` succeeded on this plan."""
        return self._plan.update_count

    def as_linear_operator(self):
        """A scipy.sparse.linalg.LinearOperator applying one V-cycle from zero (an approximate
        inverse of A), e.g. as ``M=`` of scipy's gmres (or cg, for a symmetric cycle)."""
        from scipy.sparse.linalg import LinearOperator

        n = self.size
        plan = self._plan

        def matvec(r):
            return plan.apply(_vector(r, n, "r"))

        return LinearOperator((n, n), matvec=matvec, rmatvec=matvec if plan.is_symmetric else None, dtype=np.float64)

    def __repr__(self):
        return (f"MultigridPlan(size={self.size}, levels={self.levels}, order={self._order}, "
                f"operator_complexity={self.operator_complexity:.3f})")


def chebyshev_cg(A, b, *, smoother=_D["cg_smoother"], order=_D["cg_order"], tol=_D["cg_tol"],
                 maxiter=_D["cg_maxiter"], x0=None, base=_D["cg_base"], lambda_max=None,
                 lambda_safety=_D["lambda_safety"], lambda_iterations=_D["lambda_iterations"],
                 lmin_ratio=_D["lmin_ratio"], omega=_D["omega"], subdomain=_D["subdomain"], overlap=_D["overlap"],
                 threads=_D["threads"], krylov=_D["cg_krylov"], restart=_D["cg_restart"]):
    """Preconditioned CG on an SPD matrix with a polynomial smoother of order ``order`` as the
    preconditioner (no hierarchy): ``smoother`` in {simple, cheb1, cheb1opt, cheb4, opt4}, base
    jacobi (or asm with index blocks of ``subdomain``); ras is rejected under PCG (not symmetric).
    ``krylov``: ``"pcg"`` (the default), or ``"gmres"`` / ``"fgmres"`` (GMRES(``restart``), right
    preconditioned) for a matrix that is not symmetric, as ``--krylov`` of the CLI's ``--matrix`` mode.

    ``A``: square SPD scipy sparse matrix (converted to CSR float64); ``b``: shape (n,).
    Under ``"pcg"`` A is checked for symmetry first (pattern and values, ``|a_ij - a_ji| <= 1e-12
    sqrt(m_i m_j)`` with ``m_i`` the largest magnitude of row i; C++ ``check_symmetry``): an
    unsymmetric A raises InvalidArgumentError naming the worst pair (0-based) before any iteration.
    Returns a :class:`SolveResult` ``(x, info)`` with ``info`` as in :meth:`MultigridPlan.solve` plus ``lambda_max``
    (matvecs counts ``order`` per preconditioner application). Stops at
    ``||b - A x|| <= tol ||b - A x0||`` or ``maxiter`` iterations. Options are keyword-only; the
    defaults are the C++ ``multigrid::SmootherSolveOptions{}`` (:func:`multigrid_defaults`: keys
    ``cg_smoother``, ``cg_order``, ``cg_tol``, ``cg_maxiter``; the smoother's other parameters as
    for :class:`MultigridPlan`). Calls the C++ ``multigrid::smoother_solve``, as
    ``elliptica mg solve --matrix`` does. Raises InvalidArgumentError on bad input (an unsymmetric
    A under ``"pcg"`` included), NumericalError when A is found indefinite.
    """
    krylov = _choice(krylov, _CG_KRYLOV, "krylov")
    indptr, indices, data, n = _csr_arrays(A)
    b = _vector(b, n, "b")
    x0 = np.zeros(n) if x0 is None else _vector(x0, n, "x0")
    maxiter = _int(maxiter, "maxiter", 0)
    x, info = _core._chebyshev_cg(
        indptr, indices, data, n, b, x0, _int(order, "order", 1), _real(tol, "tol"), maxiter,
        **_smoother_args(smoother, base, lmin_ratio, lambda_max, lambda_safety, lambda_iterations, omega,
                         subdomain, overlap),
        threads=_int(threads, "threads", 0), krylov=krylov, restart=_int(restart, "restart", 1),
    )
    return SolveResult(x, SolveInfo(info))


class SolutionProjection:
    """Initial guesses for a sequence of solves with one plan's matrix and slowly varying
    right-hand sides (a time step's pressure or implicit diffusion solve): Fischer's projection
    onto previous solutions (P. F. Fischer, Comput. Methods Appl. Mech. Engrg. 163 (1998)
    193-204; C++ ``krylov::SolutionProjection``, ``MultigridPlan::solve(b, x, projection)``).

    Keeps an A-orthonormal basis {x_1..x_l} of previous solutions (l <= ``max_vectors``; when full
    it restarts from the latest solution). :meth:`solve` takes ``x0 = sum_i (x_i^T b) x_i`` (the
    best approximation of A^{-1} b in their span, in the A-norm), solves ``A dx = b - A x0`` with
    the plan's solver from zero to ``||b - A x|| <= max(tol ||b||, atol)`` (the rule of a solve
    from x = 0, so the projection saves iterations) and adds ``dx``, A-orthonormalised (Gram-Schmidt
    twice), to the basis unless what is left of it is below ``drop_tolerance`` x ||x||_A. Cost
    beyond the inner solve: one matvec (A dx) and O(l) vector operations of length n; memory
    2 ``max_vectors`` vectors. After ``plan.update(A)`` the basis is emptied at the next solve.

    ``plan``: a :class:`MultigridPlan` (SPD, or the pure-Neumann ``null_space="constant"``
    plans) or a :class:`SemPoissonPlan` (then ``plan.solve(b, projection=proj)`` or
    ``proj.solve(b)``, with the plan's own tolerances); ``max_vectors`` >= 1; ``drop_tolerance`` in (0, 1). Defaults: the C++
    ``krylov::ProjectionOptions{}`` (:func:`multigrid_defaults`, keys ``projection_*``).
    Raises InvalidArgumentError for bad keywords.
    """

    def __init__(self, plan, *, max_vectors=_D["projection_max_vectors"], drop_tolerance=_D["projection_drop_tolerance"],
                 threads=_D["threads"]):
        args = (_int(max_vectors, "max_vectors", 1), _real(drop_tolerance, "drop_tolerance"), _int(threads, "threads", 0))
        self._owner = plan
        if isinstance(plan, MultigridPlan):
            self._p = _core._SolutionProjection(plan.size, *args)
        elif hasattr(plan, "_new_projection"):  # elliptica.SemPoissonPlan (_sem.py)
            self._p = plan._new_projection(*args)
        else:
            raise InvalidArgumentError(
                f"plan must be an elliptica.MultigridPlan or SemPoissonPlan, got {type(plan).__name__}")

    @property
    def plan(self):
        return self._owner

    @property
    def basis_size(self):
        """l: solutions in the basis now."""
        return self._p.basis_size

    @property
    def basis(self):
        """The A-orthonormal basis, ndarray((n, l), float64) (a copy)."""
        n, l = self._owner.size, self._p.basis_size
        return np.ascontiguousarray(self._p.basis().reshape(l, n).T)

    def clear(self):
        """Empties the basis."""
        self._p.clear()

    def solve(self, b, *, tol=_D["tol"], maxiter=_D["maxiter"], krylov=None, restart=_D["restart"], atol=_D["atol"]):
        """Solves ``A x = b`` (``b``: ndarray((n,), float64)) from the projected initial guess with the
        plan's solver (keywords as :meth:`MultigridPlan.solve`); returns a :class:`SolveResult`
        whose ``info`` also has ``projected_residual`` (``||b - A x0|| / ||b||``, 1 for an empty
        basis), ``basis_before``, ``basis_after``, ``restarted``; ``residual_history`` and
        ``final_relative_residual`` are relative to ``||b||``, ``matvecs`` counts the extra A dx."""
        plan = self._owner
        if not isinstance(plan, MultigridPlan):  # a SemPoissonPlan: its own solver options
            if (tol, maxiter, krylov, restart, atol) != (_D["tol"], _D["maxiter"], None, _D["restart"], _D["atol"]):
                raise InvalidArgumentError("tol, maxiter, krylov, restart and atol are options of the SemPoissonPlan "
                                           "(set them when making the plan)")
            return plan.solve(b, projection=self)
        n = plan.size
        b = _vector(b, n, "b")
        if krylov is None:
            krylov = getattr(plan, "_default_krylov", _D["krylov"])
        krylov = _choice(krylov, _KRYLOV, "krylov")
        x, info = plan._plan.solve_projected(self._p, b, _real(tol, "tol"), _int(maxiter, "maxiter", 0), krylov,
                                             _int(restart, "restart", 1), _real(atol, "atol"))
        return SolveResult(x, SolveInfo(info))

    def __repr__(self):
        return f"SolutionProjection(size={self._owner.size}, basis_size={self.basis_size})"
