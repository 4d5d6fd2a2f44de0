"""Spectral-element (SEM) Poisson solver with p-multigrid: :class:`SemPoissonPlan`.

Thin layer over the C++ ``multigrid::SemPoissonPlan`` (``include/elliptica/multigrid/pmg.hpp``)
and the mesh specifications of ``multigrid/sem_io.hpp``; ``elliptica mg sem`` runs the same plan.
"""

import numbers

import numpy as np

from . import _core
from ._core import InvalidArgumentError
from ._format import show as _show
from ._multigrid import (_BOOMERAMG_COARSEN, _BOOMERAMG_INTERP, _BOOMERAMG_RELAX, _NO_HYPRE, _choice, _int, _real,
                         SolveInfo, SolveResult, multigrid_defaults)

__all__ = ["SemPoissonPlan", "sem_defaults"]

#: The library's SEM defaults (C++ ``multigrid::SemPoissonOptions{}``): order, pre, post, smoother,
#: base, lambda_safety, lambda_iterations, lmin_ratio, coarse_solver, krylov, rtol, atol, maxiter,
#: restart, threads, max_order.
SEM_DEFAULTS = dict(_core._sem_defaults())
_D = SEM_DEFAULTS
_MG = multigrid_defaults()

_SMOOTHERS = ("cheb1", "cheb1opt", "cheb4", "opt4")
_BASES = ("jacobi", "asm", "asm-weighted", "ras")
_KRYLOV = ("pcg", "fgmres", "gmres")
_COARSE = ("boomeramg", "direct")


def sem_defaults():
    """The library's SEM defaults (a copy of ``SEM_DEFAULTS``, from the C++ ``SemPoissonOptions{}``)."""
    return dict(SEM_DEFAULTS)


def _int_list(value, what, allow_empty=True):
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidArgumentError(f"{what} must be a sequence of integers, got {_show(value)}")
    out = [_int(v, f"{what} entry") for v in value]
    if not out and not allow_empty:
        raise InvalidArgumentError(f"{what} must not be empty")
    return out


def _mesh_arrays(vertices, elements):
    try:
        V = np.ascontiguousarray(vertices, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"vertices is not a numeric array: {e}") from None
    if V.ndim != 2 or V.shape[1] != 3 or V.shape[0] < 8:
        raise InvalidArgumentError(f"vertices must have shape (nv, 3) with nv >= 8, got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise InvalidArgumentError("vertices contains NaN or Inf")
    E = np.asarray(elements)
    if E.ndim != 2 or E.shape[1] != 8 or E.shape[0] < 1:
        raise InvalidArgumentError(f"elements must have shape (ne, 8) with ne >= 1, got shape {E.shape}")
    if not np.issubdtype(E.dtype, np.integer):
        raise InvalidArgumentError(f"elements must hold integer vertex indices, got dtype {E.dtype}")
    if E.min() < 0 or E.max() >= V.shape[0]:
        raise InvalidArgumentError(
            f"elements: vertex indices must be in [0, {V.shape[0] - 1}] (0-based), got [{int(E.min())}, {int(E.max())}]")
    return V.ravel(), np.ascontiguousarray(E, dtype=np.int64).ravel()


class SemPoissonPlan:
    """The SEM Poisson problem ``-Laplace(u) = f``, ``u = 0`` on the boundary of a hexahedral mesh,
    at order ``p``, solved by PCG / FGMRES / GMRES preconditioned with one p-multigrid V-cycle
    (Chebyshev smoothing over Jacobi / ASM / weighted ASM / RAS, order-1 coarse solve by BoomerAMG or
    a sparse direct solve). Set up once, :meth:`solve` many times. C++ ``multigrid::SemPoissonPlan``.

    Parameters
    ----------
    mesh : str, or tuple (vertices, elements)
        ``"box:NX,NY,NZ"`` (unit cube; ``"box:NX,NY,NZ:LX,LY,LZ"``), ``"kershaw:N,EPS"`` (the Kershaw
        map of the unit cube, EPS in (0, 1]) or the path of a Gmsh ``.msh`` file (ASCII 2.2 / 4.1,
        order-1 hexahedra); or ``vertices``: ndarray((nv, 3), float64) and ``elements``:
        ndarray((ne, 8), int64), 0-based vertex indices in tensor order (corner ``a + 2 b + 4 c`` at
        reference point ``(2a-1, 2b-1, 2c-1)``; Gmsh's order is ours ``[0, 1, 3, 2, 4, 5, 7, 6]``).
    order : int
        p in [2, 10] (default 7).
    schedule : sequence of int, optional
        p-multigrid orders, finest first, strictly decreasing, from ``order`` to 1 (default
        ``p, p-2, ..., 1``).
    smoother : {"cheb1", "cheb1opt", "cheb4", "opt4"}
        Chebyshev kind.
    base : {"jacobi", "asm", "asm-weighted", "ras"}
        What the polynomial runs over on the levels of order >= 2 (RAS is not symmetric: krylov
        ``"fgmres"`` / ``"gmres"``).
    pre, post : int
        Chebyshev orders before / after the coarse correction (``post=0``: one-sided; PCG needs
        ``pre == post``); with ``tune_iterations > 0`` the starting order of the tuning.
    tune_iterations : int
        Chebyshev order tuning at set-up, in [0, 1000] (default 30; 0: keep ``pre`` / ``post``).
        With ``pre == post`` and no ``level_orders``, the set-up raises ``pre = post`` (at most 12)
        until the Krylov method solves the sub-problem of the last smoothed level (orders ``q, 1``)
        from a random right-hand side to ``rtol`` in at most this many iterations. The order chosen:
        :attr:`pre`; the trials: :attr:`tuning`. On distorted meshes (Kershaw eps = 0.05) it keeps
        the iterations at most 40 and flat in p, at about two solves of the order-q problem of
        set-up time; an undistorted mesh keeps order 2.
    level_orders : int or sequence of int, optional
        Chebyshev order per smoothed level (one per level of the schedule but the last, or one for
        all), replacing ``pre`` / ``post`` there (a level still pre-smooths only when ``pre > 0``).
    schwarz_precision : {"fp64", "fp32"}
        Arithmetic of the Schwarz smoothers' local solves (base ``"asm"``, ``"asm-weighted"``,
        ``"ras"``): ``"fp32"`` (default, as nekRS) keeps the fast-diagonalisation factors, the local
        arrays, the gathered input and the sums in float (1.5x faster local solves, the same
        iterations; the weights and the result stay double); ``"fp64"`` all in double.
    schwarz_element_max_order : int
        Schwarz bases: the levels of order <= this solve their local problems exactly on the
        elements' own nodes (a dense inverse of ``R_e A R_e^T`` per element, ``(N^3)^2`` values:
        16 KB at p = 3, 1 MB at p = 7 in fp32; exact on sheared elements, where the default
        fast-diagonalisation (box) solves are not), the others by fast diagonalisation. In
        [0, 10]; default 0 (fast diagonalisation everywhere). On Kershaw eps = 0.05 meshes it takes
        2.5-3x fewer iterations than Jacobi where fast diagonalisation takes about as many; it pays
        in time where the inverses stay in cache (docs/multigrid.md).
    lambda_safety, lambda_iterations, lmin_ratio : float, int, float
        Spectral bound ``lambda_max = lambda_safety x`` the Lanczos estimate (``lambda_iterations``
        steps); cheb1's ``lambda_min / lambda_max``.
    coarse_solver : {"boomeramg", "direct"}
        Order-1 solve (default BoomerAMG when this build has hypre); ``boomeramg_*``: its settings,
        as :class:`MultigridPlan`'s (defaults the C++ ``BoomerAmgOptions{}``).
    krylov : {"pcg", "fgmres", "gmres"}; rtol, atol, maxiter, restart
        Outer solver: stop at ``||b - A x|| <= max(rtol ||b - A x0||, atol)`` or ``maxiter``.
    threads : int
        Threads of every kernel (0: all).

    Defaults: the C++ ``SemPoissonOptions{}`` (:func:`sem_defaults`). Raises InvalidArgumentError
    (ValueError) naming the keyword for a bad value, a malformed mesh spec, a mesh that is not
    hexahedral or has an inverted element; FileError for a missing or malformed mesh file;
    NumericalError when hypre fails.
    """

    def __init__(self, mesh, *, order=_D["order"], schedule=None, smoother=_D["smoother"], base=_D["base"],
                 pre=_D["pre"], post=_D["post"], level_orders=None, lambda_safety=_D["lambda_safety"],
                 lambda_iterations=_D["lambda_iterations"], lmin_ratio=_D["lmin_ratio"],
                 schwarz_precision=_D["schwarz_precision"],
                 schwarz_element_max_order=_D["schwarz_element_max_order"], coarse_solver=_D["coarse_solver"], krylov=_D["krylov"], rtol=_D["rtol"], atol=_D["atol"],
                 maxiter=_D["maxiter"], restart=_D["restart"], threads=_D["threads"],
                 tune_iterations=_D["tune_iterations"], boomeramg_relax=_MG["boomeramg_relax"], boomeramg_coarsen=_MG["boomeramg_coarsen"],
                 boomeramg_interp=_MG["boomeramg_interp"], boomeramg_strength=_MG["boomeramg_strength"],
                 boomeramg_pmax=_MG["boomeramg_pmax"], boomeramg_agg_levels=_MG["boomeramg_agg_levels"],
                 boomeramg_max_levels=_MG["boomeramg_max_levels"], boomeramg_coarse_size=_MG["boomeramg_coarse_size"],
                 boomeramg_sweeps=_MG["boomeramg_sweeps"], boomeramg_cycles=_MG["boomeramg_cycles"],
                 boomeramg_print_level=_MG["boomeramg_print_level"]):
        order = _int(order, "order")
        if not 2 <= order <= _D["max_order"]:
            raise InvalidArgumentError(f"order must be in [2, {_D['max_order']}], got {order}")
        schedule = _int_list(schedule, "schedule")
        if schedule and schedule[0] != order:
            raise InvalidArgumentError(f"schedule {schedule} must start at order={order}")
        n_smoothed = (len(schedule) if schedule else len(range(order, 1, -2)) + 1) - 1
        if isinstance(level_orders, numbers.Integral) and not isinstance(level_orders, bool):
            level_orders = [int(level_orders)] * n_smoothed
        level_orders = _int_list(level_orders, "level_orders")
        if level_orders and len(level_orders) != n_smoothed:
            raise InvalidArgumentError(
                f"level_orders must have one Chebyshev order per smoothed level ({n_smoothed} for the schedule "
                f"{schedule or 'default'}), got {len(level_orders)}: {level_orders}")
        if any(k < 1 for k in level_orders):
            raise InvalidArgumentError(f"level_orders must be >= 1, got {level_orders}")
        krylov = _choice(krylov, _KRYLOV, "krylov")
        base = _choice(base, _BASES, "base")
        pre, post = _int(pre, "pre", 0), _int(post, "post", 0)
        if krylov == "pcg" and pre != post:
            raise InvalidArgumentError(
                f"krylov='pcg' needs a symmetric cycle: pre ({pre}) and post ({post}) differ; use krylov='fgmres'")
        if krylov == "pcg" and base == "ras":
            raise InvalidArgumentError("krylov='pcg' needs a symmetric cycle, but base='ras' is not symmetric; use "
                                       "krylov='fgmres' or base='asm' / 'asm-weighted'")
        coarse_solver = _choice(coarse_solver, _COARSE, "coarse_solver")
        bopts = None
        if coarse_solver == "boomeramg":
            if not _MG["have_boomeramg"]:
                raise InvalidArgumentError(_NO_HYPRE.replace("use method='sa'", "use coarse_solver='direct'"))
            bopts = dict(relax=_choice(boomeramg_relax, _BOOMERAMG_RELAX, "boomeramg_relax"),
                         coarsen=_choice(boomeramg_coarsen, _BOOMERAMG_COARSEN, "boomeramg_coarsen"),
                         interp=_choice(boomeramg_interp, _BOOMERAMG_INTERP, "boomeramg_interp"),
                         strength=_real(boomeramg_strength, "boomeramg_strength"),
                         pmax=_int(boomeramg_pmax, "boomeramg_pmax", 0),
                         agg_levels=_int(boomeramg_agg_levels, "boomeramg_agg_levels", 0),
                         max_levels=_int(boomeramg_max_levels, "boomeramg_max_levels", 2),
                         coarse_size=_int(boomeramg_coarse_size, "boomeramg_coarse_size", 1),
                         sweeps=_int(boomeramg_sweeps, "boomeramg_sweeps", 1),
                         cycles=_int(boomeramg_cycles, "boomeramg_cycles", 1),
                         print_level=_int(boomeramg_print_level, "boomeramg_print_level", 0))
            if krylov == "pcg" and bopts["relax"] == "hybrid-gs":
                raise InvalidArgumentError("krylov='pcg' needs a symmetric coarse solve: boomeramg_relax='hybrid-gs' "
                                           "is not; use a symmetric relaxation or krylov='fgmres'")
        opts = dict(order=order, schedule=schedule, pre=pre, post=post, level_orders=level_orders,
                    smoother=_choice(smoother, _SMOOTHERS, "smoother"), base=base,
                    lambda_safety=_real(lambda_safety, "lambda_safety"),
                    lambda_iterations=_int(lambda_iterations, "lambda_iterations", 1),
                    lmin_ratio=_real(lmin_ratio, "lmin_ratio"),
                    schwarz_precision=_choice(schwarz_precision, ("fp64", "fp32"), "schwarz_precision"),
                    schwarz_element_max_order=_int(schwarz_element_max_order, "schwarz_element_max_order", 0),
                    coarse_solver=coarse_solver, krylov=krylov,
                    rtol=_real(rtol, "rtol"), atol=_real(atol, "atol"), maxiter=_int(maxiter, "maxiter", 1),
                    restart=_int(restart, "restart", 1), threads=_int(threads, "threads", 0),
                    tune_iterations=_int(tune_iterations, "tune_iterations", 0), boomeramg=bopts)
        if opts["schwarz_element_max_order"] > _D["max_order"]:
            raise InvalidArgumentError(f"schwarz_element_max_order must be in [0, {_D['max_order']}] (0: fast "
                                       f"diagonalisation on every level), got {opts['schwarz_element_max_order']}")
        if opts["tune_iterations"] > 1000:
            raise InvalidArgumentError(f"tune_iterations must be in [0, 1000] (0: no tuning), got {opts['tune_iterations']}")
        if not 0 < opts["rtol"] < 1:
            raise InvalidArgumentError(f"rtol must be in (0, 1), got {opts['rtol']}")
        if opts["atol"] < 0:
            raise InvalidArgumentError(f"atol must be >= 0, got {opts['atol']}")
        if isinstance(mesh, str):
            self._plan = _core._SemPoissonPlan._from_spec(mesh, opts)
            self._mesh_spec = mesh
        elif isinstance(mesh, tuple) and len(mesh) == 2:
            V, E = _mesh_arrays(*mesh)
            self._plan = _core._SemPoissonPlan._from_arrays(V, E, opts)
            self._mesh_spec = None
        else:
            raise InvalidArgumentError(
                f"mesh must be a spec string (box:..., kershaw:..., FILE.msh) or a tuple (vertices, elements), got "
                f"{_show(mesh)}")
        self._options = opts
        self._coords = None
        self._mass = None

    # --- sizes and hierarchy -----------------------------------------------------------------
    @property
    def size(self):
        """n: unknowns (the free nodes of the order-p space)."""
        return self._plan.size

    @property
    def num_nodes(self):
        """All global nodes (free first, then the Dirichlet nodes)."""
        return self._plan.num_nodes

    @property
    def num_elements(self):
        return self._plan.num_elements

    @property
    def order(self):
        return self._plan.order

    @property
    def options(self):
        """The plan's options (a copy of the dict passed to C++)."""
        return dict(self._options)

    @property
    def setup_seconds(self):
        """Wall time of the set-up (spaces, operators, transfers, coarse solver, smoother estimates)."""
        return self._plan.setup_seconds

    @property
    def pre(self):
        """The pre-smoothing Chebyshev order in use (after the set-up's tuning)."""
        return self._plan.pre

    @property
    def post(self):
        """The post-smoothing Chebyshev order in use (after the set-up's tuning)."""
        return self._plan.post

    @property
    def tuning(self):
        """The Chebyshev order tuning's trials in order: list of dict (``order``, ``iterations``,
        ``converged``, ``seconds``); empty when it did not run (``tune_iterations=0``, ``pre != post``
        or ``level_orders`` given). C++ ``SemPoissonPlan::tuning``."""
        return list(self._plan.tuning)

    @property
    def orders(self):
        """The p-multigrid schedule actually used, finest first (list of int, ending at 1)."""
        return list(self._plan.orders)

    @property
    def level_sizes(self):
        """Unknowns of each level, finest first (list of int)."""
        return list(self._plan.level_sizes)

    @property
    def lambda_max(self):
        """The Chebyshev upper bounds of the smoothed levels, finest first."""
        return list(self._plan.lambda_max)

    @property
    def mesh(self):
        """(vertices ndarray((nv, 3), float64), elements ndarray((ne, 8), int64)) of the plan's mesh."""
        return self._plan.mesh()

    def _all_coordinates(self):
        if self._coords is None:
            self._coords = self._plan.coordinates()
            self._coords.setflags(write=False)
        return self._coords

    @property
    def node_coordinates(self):
        """Coordinates of all nodes, ndarray((num_nodes, 3), float64) (read-only)."""
        return self._all_coordinates()

    @property
    def coordinates(self):
        """Coordinates of the free nodes (the unknowns), ndarray((n, 3), float64) (read-only view)."""
        return self._all_coordinates()[: self.size]

    @property
    def mass(self):
        """The assembled diagonal GLL mass matrix over all nodes, ndarray((num_nodes,), float64)."""
        if self._mass is None:
            self._mass = self._plan.mass()
            self._mass.setflags(write=False)
        return self._mass

    # --- vectors -----------------------------------------------------------------------------
    def _vec(self, v, name):
        if np.iscomplexobj(v):
            raise InvalidArgumentError(f"{name} must be real, got a complex array")
        try:
            a = np.ascontiguousarray(v, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"{name} is not a numeric array: {e}") from None
        if a.ndim != 1 or a.shape[0] != self.size:
            raise InvalidArgumentError(f"{name} must have shape ({self.size},) (the free nodes), got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise InvalidArgumentError(f"{name} contains NaN or Inf")
        return a

    def load_vector(self, f):
        """The right-hand side ``b = B f`` of ``-Laplace(u) = f`` (GLL quadrature; B the diagonal
        mass matrix), ndarray((n,), float64), from ``f``: a vectorised callable ``f(x, y, z)``
        called once with the free-node coordinates (three ndarray((n,), float64)), or the values at
        the free nodes, ndarray((n,), float64). C++ ``SemPoissonPlan::load_vector``.
        Raises InvalidArgumentError for a wrong shape or NaN/Inf values."""
        if callable(f):
            c = self.coordinates
            vals = f(c[:, 0], c[:, 1], c[:, 2])
            vals = np.broadcast_to(np.asarray(vals, dtype=np.float64), (self.size,))
            vals = self._vec(vals, "f(x, y, z)")
        else:
            vals = self._vec(f, "f")
        return self.mass[: self.size] * vals

    def to_global(self, x):
        """``x`` over the free nodes, ndarray((n,), float64) -> over all nodes, ndarray((num_nodes,),
        float64), with 0 at the Dirichlet nodes (their global ids follow the free ones)."""
        x = self._vec(x, "x")
        u = np.zeros(self.num_nodes)
        u[: self.size] = x
        return u

    def apply(self, x):
        """``A x``: the SEM stiffness matrix (matrix-free), x and result ndarray((n,), float64)."""
        return self._plan.apply(self._vec(x, "x"))

    def assemble(self):
        """The assembled stiffness matrix A, scipy.sparse CSR (n, n) (for small cases and tests;
        C++ ``SemLaplacian::assemble``)."""
        import scipy.sparse as sp

        data, indices, indptr, rows, cols = self._plan.assemble()
        return sp.csr_matrix((data, indices, indptr), shape=(rows, cols))

    # --- solves ------------------------------------------------------------------------------
    def solve(self, b, x0=None, *, projection=None):
        """Solves ``A x = b`` with the plan's Krylov method and tolerances; returns a
        :class:`SolveResult` ``(x, info)``: x ndarray((n,), float64), info a :class:`SolveInfo`
        (``converged``, ``iterations``, ``residual_history`` (relative, entry 0 is 1),
        ``final_relative_residual``, ``operator_applications``, ``preconditioner_applications``,
        ``rho``, ``solve_seconds``). Not converging is reported (``info.converged``), not raised.

        ``b``: ndarray((n,), float64) (e.g. :meth:`load_vector`); ``x0``: initial guess (default 0).
        ``projection``: an :class:`elliptica.SolutionProjection` of this plan: the initial guess is
        Fischer's projection of the solution onto the previous solutions (x0 must then be None);
        the solve stops at ``rtol ||b||``; info also has ``projected_residual``, ``basis_before``,
        ``basis_after``, and ``residual_history`` relative to ``||b||``.
        """
        b = self._vec(b, "b")
        if projection is not None:
            if x0 is not None:
                raise InvalidArgumentError("x0 and projection exclude each other (the projection makes the initial guess)")
            p = getattr(projection, "_p", None)
            if getattr(projection, "plan", None) is not self or not isinstance(p, _core._SemProjection):
                raise InvalidArgumentError("projection must be an elliptica.SolutionProjection made for this plan")
            x, info = self._plan.solve_projected(p, b)
            return SolveResult(x, SolveInfo(info))
        x0 = np.zeros(self.size) if x0 is None else self._vec(x0, "x0")
        x, info = self._plan.solve(b, x0)
        return SolveResult(x, SolveInfo(info))

    def _new_projection(self, max_vectors, drop_tolerance, threads):
        """The C++ projection object of :class:`elliptica.SolutionProjection` for this plan."""
        return _core._SemProjection(self.size, max_vectors, drop_tolerance, threads)

    def __repr__(self):
        return (f"SemPoissonPlan(elements={self.num_elements}, order={self.order}, size={self.size}, "
                f"orders={self.orders})")
