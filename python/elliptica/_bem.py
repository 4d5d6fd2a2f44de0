"""Exterior Helmholtz scattering with the Burton-Miller collocation BEM (C++ core), dense or
FMM-accelerated.

Conventions (identical to ``include/elliptica/bem/helmholtz.hpp``):

* time dependence ``e^{-i omega t}``; free-space Green's function ``G(x, y) = e^{ikr} / (4 pi r)``;
* closed triangulated surface, flat triangles with piecewise-constant (P0) elements collocated at
  the centroids; triangle ``(a, b, c)`` is counter-clockwise seen from outside, the unit normal
  ``n = (b - a) x (c - a) / |...|`` points OUT of the body (into the acoustic domain). Meshes are
  validated (closed, manifold, orientable) and re-oriented outward on construction;
* incident plane wave ``u_inc(x) = e^{ik d.x}`` with unit propagation direction ``d``;
* ``bc='neumann'`` (sound-hard, ``du/dn = 0``): the unknown is the TOTAL field ``u`` on the
  surface; ``bc='dirichlet'`` (sound-soft, ``u = 0``): the unknown is the total normal derivative
  ``q = du/dn``;
* far-field pattern: ``u_sc(x) = e^{ik|x|} / |x| (u_inf(xhat) + O(1/|x|))``, i.e.
  ``u_inf(xhat) = 1/(4 pi) int [ -ik (xhat . n_y) u(y) - q(y) ] e^{-ik xhat.y} dy``; the bistatic
  cross-section is ``4 pi |u_inf|^2`` (length unit^2);
* lengths in any unit, ``k`` in 1 / (that unit).

Accuracy (unit sphere against the Mie series, measured at ka = 1 and 2 on 320-20480 elements,
docs/bem.md): the far field converges at O(h^2) for sound-hard and O(h) for sound-soft, the
surface field at O(h) for both (sound-hard: observed orders 1.5, 1.1, 0.9 per refinement); 320
elements at ka = 1 give a few per cent in the far field. Both stay at that accuracy as k -> 0 (default coupling, below); sound-hard problems with
k D < 1e-10 (D = body size) are refused, sound-soft ones are solved down to the static limit.
"""

import os

import numpy as np

from . import _core
from ._core import InvalidArgumentError
from ._format import show as _show
from ._fmm import points3
from ._record import Record

__all__ = ["HelmholtzBEM", "BemSolution", "Record", "read_mesh", "icosphere", "octasphere", "BEM_DEFAULTS"]

#: The defaults of the C++ ``HelmholtzBemOptions`` (``include/elliptica/bem/plan.hpp``), read from
#: the extension: Python has no default values of its own. ``bd_level`` -1 means the leaf level.
BEM_DEFAULTS = dict(_core.bem_defaults())


def _points(a, what):
    """(M, 3) float64 points; a single 3-vector is accepted as one row."""
    return points3(a, what, single_row=True)


def _triangles(t):
    t = np.asarray(t)
    if t.dtype.kind not in "iu":
        if t.dtype.kind == "f" and t.size and np.all(t == np.round(t)):
            t = t.astype(np.int64)
        else:
            raise InvalidArgumentError(f"triangles must be an integer array, got dtype {t.dtype}")
    t = np.ascontiguousarray(t, dtype=np.int64)
    if t.ndim != 2 or t.shape[1] != 3:
        raise InvalidArgumentError(f"triangles must have shape (T, 3), got {t.shape}")
    return t


def read_mesh(path):
    """Reads a triangulated surface: Gmsh ``.msh`` (2.2/4.1, ASCII/binary), Wavefront ``.obj``
    or ``.stl`` (ASCII/binary), dispatching on the extension.

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)`` coordinates and
    ``ndarray((T, 3), int64)`` 0-based vertex indices, as in the file (no validation or re-orientation; :class:`HelmholtzBEM` does that).

    Raises FileError (an OSError) for a missing, unreadable, truncated or malformed file, and
    InvalidArgumentError (a ValueError) for an unknown extension or a file without triangles.
    """
    return _core.bem_read_mesh(os.fspath(path))


def icosphere(refinements=2, radius=1.0):
    """Icosahedral sphere mesh centred at the origin: the icosahedron refined ``refinements`` times
    (``20 * 4**refinements`` triangles, ``10 * 4**refinements + 2`` vertices, outward orientation).

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)``, ``ndarray((T, 3), int64)``.
    ``refinements`` in [0, 10],
    ``radius`` finite and > 0 (InvalidArgumentError otherwise).
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {_show(refinements)}")
    return _core.bem_icosphere(int(refinements), float(radius))


def octasphere(refinements=2, radius=1.0):
    """Octahedral sphere mesh centred at the origin: the octahedron refined ``refinements`` times
    (``8 * 4**refinements`` triangles, outward orientation), vertices projected to the sphere.

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)``, ``ndarray((T, 3), int64)``;
    arguments as :func:`icosphere`.
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {_show(refinements)}")
    return _core.bem_octasphere(int(refinements), float(radius))


class BemSolution:
    """One solution of a :class:`HelmholtzBEM` plan (returned by :meth:`HelmholtzBEM.solve`).

    Attributes
    ----------
    surface : ndarray((N,), complex128)
        Per element (order of the plan's ``triangles``): the total field ``u`` for
        ``bc='neumann'``, the total normal derivative ``du/dn`` (1 / length unit) for
        ``bc='dirichlet'``.
    info : Record
        ``iterations``, ``converged``, ``residual_history`` (``ndarray((iterations + 1,),
        float64)``, relative GMRES residuals, entry 0 = 1), ``final_relative_residual``,
        ``solve_seconds`` (GMRES wall time), ``matvecs``, ``matvec_seconds``,
        ``precond_applications``, ``precond_apply_seconds``, ``assembly_seconds`` (operator
        set-up) and the entries of the plan's :attr:`HelmholtzBEM.setup`.
    bc : str
    k : complex
    plan : HelmholtzBEM
        The plan that computed it (far and scattered fields need its mesh and quadrature).

    The far field and the scattered field are computed from this object explicitly:
    :meth:`far_field` / :meth:`scattered_field` here, or the same methods of the plan with the
    solution as first argument.
    """

    __slots__ = ("_sol", "plan", "info")

    def __init__(self, plan, sol, info):
        self.plan = plan
        self._sol = sol
        self.info = info

    @property
    def surface(self):
        return self._sol.surface

    @property
    def bc(self):
        return self._sol.bc

    @property
    def k(self):
        return self._sol.k

    def far_field(self, directions):
        """``plan.far_field(self, directions)``."""
        return self.plan.far_field(self, directions)

    def scattered_field(self, points):
        """``plan.scattered_field(self, points)``."""
        return self.plan.scattered_field(self, points)

    def __repr__(self):
        return (f"BemSolution(N={self.surface.shape[0]}, bc={self.bc!r}, k={self.k}, "
                f"iterations={self.info.iterations}, converged={self.info.converged})")


_D = BEM_DEFAULTS


class HelmholtzBEM:
    """Plane-wave or point-source scattering by a closed surface: Burton-Miller collocation BEM
    (dense matrix or fast multipole operator) solved with GMRES, optionally right-preconditioned
    by the block-diagonal (BD) preconditioner over octree boxes of the element centroids.

    ``HelmholtzBEM(mesh, k, *, bc, alpha, precond, operator, fmm_tol, dense_max, bd_level, leaf,
    tol, restart, max_iter, threads)``: every option is keyword-only and its default is the
    C++ default (:data:`BEM_DEFAULTS`, read from ``HelmholtzBemOptions``).

    Parameters
    ----------
    mesh : str / os.PathLike, or (vertices, triangles)
        A mesh file (see :func:`read_mesh`) or arrays: vertices ``ndarray((V, 3), float64)``,
        triangles ``ndarray((T, 3), int64)`` 0-based indices (other numeric dtypes converted).
        The mesh is validated (closed, 2-manifold, orientable, no degenerate triangles) and
        oriented outward; element order is kept, so the surface arrays of a solution follow the
        order of ``triangles``.
    k : float or complex
        Wavenumber (1 / length unit): finite, nonzero, ``Re k >= 0``, ``Im k >= 0``.
    bc : {'neumann', 'dirichlet'}
        Sound-hard (unknown: total field ``u``) or sound-soft (unknown: ``du/dn``).
    alpha : complex, optional
        Burton-Miller coupling (``Im alpha != 0`` avoids interior resonances). Default (defined in
        C++, ``default_alpha`` of ``include/elliptica/bem/helmholtz.hpp``): ``i / k`` for
        ``|k| D >= 4`` and ``i D / 4`` below, i.e. ``i / max(k, 4 / D)``, with ``D`` the body size
        (the largest component's ``2 max |vertex - centroid|``, the diameter for a sphere). The
        cap keeps the formulation accurate as ``k -> 0`` (with ``i / k`` the sound-soft far field
        of 1280 elements was 39% off at ka = 0.05); sources: Burton & Miller 1971, Kress 1985,
        Kreuzer 2024 (arXiv:2405.10722). The value used is :attr:`alpha`.
    precond : {'bd', 'ifmm', 'none'}
        Block-diagonal preconditioner (LU of the self blocks of the octree boxes), the inverse fast
        multipole method (``'ifmm'``: an approximate direct solver built on the FMM operator, which
        ``operator='auto'`` then selects; seed 001, ``include/elliptica/ifmm/ifmm.hpp``), or none.
    ifmm_eps : float
        IFMM relative compression tolerance in (0, 1) (seed: 1e-3; 1e-1 and 1e-2 are cheaper and
        weaker).
    ifmm_sigma : {3, 6, 0}
        IFMM colouring separation: 3 or 6 (nIFMM, boxes of one colour in parallel), 0 (sequential
        box order, mIFMM).
    ifmm_top, ifmm_bottom : int
        IFMM top level tau of the node-parallel levels (>= 2; 0: 3) and bottom level l (>= 3; -1:
        the leaf level of its tree).
    ifmm_order, ifmm_depth : int
        Chebyshev order of the IFMM's operators (0: from ``ifmm_eps``, at most 7) and leaf level of
        its octree (-1: the FMM's, at least 3; the mesh must be fine enough for 3 levels).
    operator : {'auto', 'dense', 'fmm'}
        ``'dense'``: the N x N matrix (16 N^2 bytes, O(N^2) set-up and matvec); ``'fmm'``: exact
        near-field entries of adjacent octree leaves + the Chebyshev black-box FMM for the rest
        (O(N) memory and matvec at fixed k; a low-frequency method: the level-2 octree boxes may be
        at most 2 wavelengths wide, about a body of 8 wavelengths across, and the Chebyshev order
        cap of 16 lowers that further at tight tolerances; beyond, the set-up refuses); ``'auto'``: dense up to ``dense_max`` elements.
    fmm_tol : float
        FMM relative accuracy; 0 (default): ``min(tol, 1e-3)``. The FMM's order is capped at 16
        Chebyshev nodes, which reaches about 5e-11 at small ``k x box width``: a smaller
        (automatic or explicit) FMM tolerance raises InvalidArgumentError naming the smallest one.
    dense_max : int
        ``operator='auto'``: the largest element count assembled densely.
    bd_level : int, optional
        Octree level of the BD blocks (0: one block = the whole matrix; None: the leaf level).
    leaf : int
        Maximum elements per octree leaf (mu) of the FMM and BD octree (sets the leaf level; the
        FMM may use a shallower tree so that leaves stay wider than the elements).
    tol : float
        GMRES relative residual tolerance in [1e-12, 1) (smaller values raise InvalidArgumentError:
        GMRES stalls at about 1e-15 in double precision). Sound-hard: relative to the residual of
        the best constant ``c``, GMRES solving for ``u - c`` (so that the tolerance applies to the
        O(kD) part of ``u`` that carries the scattered field at low frequency).
    restart, max_iter : int
        GMRES restart length and iteration cap (NotConvergedError when the cap is reached).
    threads : int
        OpenMP threads of the set-up, the matvecs, BD and GMRES (0: all available). Used through
        local clauses: the process-wide OpenMP setting is not changed.

    The operator is assembled (or the FMM set up) and the BD factorised in the constructor, with
    the GIL released (also in :meth:`solve`, :meth:`monostatic`, :meth:`far_field` and
    :meth:`scattered_field`); :meth:`monostatic` solves many incident directions with this one set-up;
    ``setup`` reports what was chosen, the times and the memory. The plan keeps no solution:
    each :meth:`solve` returns a :class:`BemSolution`.

    Attributes: ``vertices`` ``ndarray((V, 3), float64)``, ``triangles`` ``ndarray((N, 3),
    int64)`` (after validation/orientation), ``centroids`` ``ndarray((N, 3), float64)``,
    ``normals`` ``ndarray((N, 3), float64)`` (outward unit), ``areas`` ``ndarray((N,),
    float64)``, ``report`` (:class:`Record` of the mesh validation, elements per wavelength,
    resolution warning), ``setup`` (:class:`Record`: ``operator``, ``precond``,
    ``operator_seconds``, ``fmm_seconds``, ``precond_setup_seconds``, ``operator_bytes``,
    ``precond_bytes``, ``fmm_order``, ``fmm_tolerance``, ``near_entries``, ``leaf_level``, BD block
    counts, and with ``precond='ifmm'`` an ``ifmm`` dict: ``name`` (nIFMMs{sigma}t{tau}b{l} or
    mIFMMb{l}), ``epsilon``, ``order``, ``depth``, ``seconds``, ``bytes``, ``peak_bytes``,
    ``top_size``, per-level ``levels`` with boxes, colours, ranks, seconds, bytes), ``k``, ``alpha``.
    """

    def __init__(self, mesh, k, *, bc=_D["bc"], alpha=None, precond=_D["precond"], operator=_D["operator"],
                 fmm_tol=_D["fmm_tol"], dense_max=_D["dense_max"], bd_level=None, leaf=_D["leaf"], bd_leaf=None,
                 tol=_D["tol"], restart=_D["restart"], max_iter=_D["max_iter"], threads=_D["threads"],
                 ifmm_eps=_D["ifmm_eps"], ifmm_sigma=_D["ifmm_sigma"], ifmm_top=_D["ifmm_top"],
                 ifmm_bottom=_D["ifmm_bottom"], ifmm_order=_D["ifmm_order"], ifmm_depth=_D["ifmm_depth"]):
        if bd_leaf is not None:  # older name of ``leaf``
            leaf = bd_leaf
        if isinstance(mesh, (str, os.PathLike)):
            vertices, triangles = read_mesh(mesh)
        else:
            try:
                vertices, triangles = mesh
            except (TypeError, ValueError):
                raise InvalidArgumentError("mesh must be a file path or a (vertices, triangles) pair") from None
        vertices = _points(vertices, "vertices")
        triangles = _triangles(triangles)
        if vertices.shape[0] == 0 or triangles.shape[0] == 0:
            raise InvalidArgumentError("mesh is empty")
        if isinstance(k, (str, bytes, bool, np.bool_)):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}")
        try:
            k = complex(k)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}") from None
        # k itself is checked by the C++ plan (one rule for every caller)
        if bc not in ("neumann", "dirichlet"):
            raise InvalidArgumentError(f"bc must be 'neumann' or 'dirichlet', got {_show(bc)}")
        if precond not in ("bd", "ifmm", "none", None):
            raise InvalidArgumentError(f"precond must be 'bd', 'ifmm' or 'none', got {_show(precond)}")
        ifmm_eps = float(ifmm_eps)  # its range, and those of the other ifmm_* options: the C++ plan
        if alpha is not None:
            alpha = complex(alpha)
            if not (np.isfinite(alpha.real) and np.isfinite(alpha.imag)) or alpha == 0:
                raise InvalidArgumentError(f"alpha must be finite and nonzero, got {alpha}")
        tol = float(tol)
        if not (0 < tol < 1):
            raise InvalidArgumentError(f"tol must be in (0, 1), got {tol}")
        if operator not in ("auto", "dense", "fmm"):
            raise InvalidArgumentError(f"operator must be 'auto', 'dense' or 'fmm', got {_show(operator)}")
        fmm_tol = float(fmm_tol)
        if fmm_tol != 0 and not (1e-14 < fmm_tol < 0.5):
            raise InvalidArgumentError(f"fmm_tol must be in (1e-14, 0.5) or 0 (automatic), got {fmm_tol}")
        if int(leaf) < 1:
            raise InvalidArgumentError(f"leaf (bd_leaf) must be >= 1, got {leaf}")
        if int(restart) < 1:
            raise InvalidArgumentError(f"restart must be >= 1, got {restart}")
        if int(max_iter) < 1:
            raise InvalidArgumentError(f"max_iter must be >= 1, got {max_iter}")
        if int(dense_max) < 0:
            raise InvalidArgumentError(f"dense_max must be >= 0, got {dense_max}")
        if bd_level is not None and int(bd_level) < 0:
            raise InvalidArgumentError(f"bd_level must be >= 0 or None, got {bd_level}")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
            raise InvalidArgumentError(f"threads must be an integer >= 0 (0: all available), got {_show(threads)}")
        self.bc = bc
        self.precond = precond or "none"
        self._plan = _core._HelmholtzBEM(vertices, triangles, k, bc, alpha, self.precond,
                                         -1 if bd_level is None else int(bd_level), int(leaf), tol,
                                         int(restart), int(max_iter), operator, fmm_tol, int(dense_max),
                                         int(threads), ifmm_eps, int(ifmm_sigma), int(ifmm_top),
                                         int(ifmm_bottom), int(ifmm_order), int(ifmm_depth))

    def solve(self, direction=None, *, point_source=None):
        """Solves for the incident plane wave ``e^{ik d.x}``, ``d = direction / |direction|``
        (``direction``: 3 numbers, default ``(0, 0, 1)``), or, with ``point_source=(x, y, z)``
        (then no ``direction``), for the point source
        ``u_inc(x) = e^{ik|x - x0|} / (4 pi |x - x0|)`` at ``x0`` (outside the body; a source inside
        or on an element centroid raises InvalidArgumentError).

        Returns a :class:`BemSolution` (``.surface`` ``ndarray((N,), complex128)``, ``.info``).
        The GIL is released during the solve.

        Raises NotConvergedError (a RuntimeError) if GMRES misses ``tol`` within ``max_iter``.
        """
        if point_source is not None:
            if direction is not None:
                raise InvalidArgumentError("give either direction (plane wave) or point_source, not both")
            if np.size(point_source) != 3:
                raise InvalidArgumentError(f"point_source must be 3 numbers, got shape {np.shape(point_source)}")
            x0 = _points(point_source, "point_source")
            if x0.shape[0] != 1:
                raise InvalidArgumentError(f"point_source must be 3 numbers, got shape {np.shape(point_source)}")
            return self._solution(self._plan.solve(tuple(float(c) for c in x0[0]), True))
        if direction is None:
            direction = (0.0, 0.0, 1.0)
        if np.size(direction) != 3:
            raise InvalidArgumentError(f"direction must be 3 numbers, got shape {np.shape(direction)}")
        d = _points(direction, "direction")
        if d.shape[0] != 1:
            raise InvalidArgumentError(f"direction must be 3 numbers, got shape {np.shape(direction)}")
        if not np.any(d):
            raise InvalidArgumentError("direction must be nonzero")
        return self._solution(self._plan.solve(tuple(float(c) for c in d[0]), False))

    def monostatic(self, directions, *, keep_surface=False):
        """Monostatic (backscatter) sweep: solves the plane waves ``e^{ik d_j.x}`` for every row
        ``d_j`` of ``directions`` with this plan's one set-up (operator and preconditioner reused,
        nothing re-assembled or re-factorised; C++ ``HelmholtzBem::solve_monostatic``) and
        evaluates the backscattered far field ``u_inf(-d_j)``.

        Parameters
        ----------
        directions : ndarray((M, 3), float64)
            Propagation directions (any length, normalised internally; a single 3-vector is one
            row). A zero or non-finite row raises InvalidArgumentError naming the row, before any
            solve.
        keep_surface : bool, keyword-only
            Also return every surface solution (``surface``, ``M x N`` complex values).

        Returns
        -------
        Record
            ``directions`` ``ndarray((M, 3), float64)`` (unit rows), ``u_inf``
            ``ndarray((M,), complex128)`` = ``u_inf(-d_j)`` (length unit, far-field convention of
            the module docstring), ``sigma`` ``ndarray((M,), float64)`` = ``4 pi |u_inf(-d)|^2``
            (backscattering cross-section, length unit^2), ``ts_db`` ``ndarray((M,), float64)`` =
            ``10 log10(sigma / (4 pi)) = 20 log10 |u_inf(-d)|`` (target strength, dB re 1 length
            unit^2, as in underwater acoustics: MacLennan, Fernandes & Dalen, ICES J. Mar. Sci. 59
            (2002) 365; ``-inf`` for ``u_inf = 0``), ``iterations`` ``ndarray((M,), int64)``
            (GMRES), ``converged`` ``ndarray((M,), bool)``, ``final_relative_residual``,
            ``solve_seconds`` ``ndarray((M,), float64)`` (GMRES wall time of each direction),
            ``total_solve_seconds``, ``setup`` (the plan's :attr:`setup`), and with
            ``keep_surface`` ``surface`` ``ndarray((M, N), complex128)`` (row j as
            :attr:`BemSolution.surface` of direction j).

        The results equal separate ``solve(d_j)`` + ``far_field(sol, -d_j)`` calls. The GIL is
        released during the sweep. Raises NotConvergedError naming the direction when GMRES misses
        ``tol`` within ``max_iter``.
        """
        if not isinstance(keep_surface, (bool, np.bool_)):
            raise InvalidArgumentError(f"keep_surface must be True or False, got {_show(keep_surface)}")
        if np.iscomplexobj(directions):
            raise InvalidArgumentError("directions must be real, got a complex array")
        try:
            d = np.ascontiguousarray(directions, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"directions: not a numeric array: {e}") from None
        if d.ndim == 1 and d.shape[0] == 3:
            d = d.reshape(1, 3)
        if d.ndim != 2 or d.shape[1] != 3:
            raise InvalidArgumentError(f"directions must have shape (M, 3), got {d.shape}")
        if d.shape[0] == 0:
            raise InvalidArgumentError("directions is empty: give at least one direction")
        bad = ~np.all(np.isfinite(d), axis=1)
        if bad.any():
            raise InvalidArgumentError(f"directions: row {int(np.argmax(bad))} is not finite")
        zero = ~np.any(d != 0, axis=1)
        if zero.any():
            raise InvalidArgumentError(f"directions: row {int(np.argmax(zero))} is the zero vector")
        r = dict(self._plan.monostatic(d, bool(keep_surface)))
        r["converged"] = r["converged"].astype(bool)
        r["total_solve_seconds"] = float(np.sum(r["solve_seconds"]))
        r["setup"] = self.setup
        return Record(r)

    def _solution(self, sol):
        setup = self._plan.setup
        info = dict(setup)
        info.update(sol.info)
        info["assembly_seconds"] = setup["operator_seconds"]
        return BemSolution(self, sol, Record(info))

    def _check(self, solution):
        if not isinstance(solution, BemSolution):
            raise InvalidArgumentError("far_field / scattered_field need a BemSolution returned by solve() "
                                       f"as first argument, got {type(solution).__name__}")
        if solution.plan is not self:
            raise InvalidArgumentError("the solution belongs to another HelmholtzBEM plan")
        return solution._sol

    def far_field(self, solution, directions):
        """Far-field pattern ``u_inf`` (``ndarray((M,), complex128)``, same unit as ``u``) of
        ``solution`` (a :class:`BemSolution` of this plan) at ``directions``
        ``ndarray((M, 3), float64)`` (normalised internally; zero rows are rejected). Direct sum
        over the elements, O(N M), GIL released."""
        sol = self._check(solution)
        return self._plan.far_field(sol, _points(directions, "directions"))

    def scattered_field(self, solution, points):
        """Scattered field ``u_sc`` (``ndarray((M,), complex128)``) of ``solution`` at exterior
        ``points`` ``ndarray((M, 3), float64)``; the total field is ``u_sc + u_inc``. A point
        inside the body or on its surface raises InvalidArgumentError. GIL released."""
        sol = self._check(solution)
        return self._plan.scattered_field(sol, _points(points, "points"))

    @property
    def vertices(self):
        return self._plan.vertices

    @property
    def triangles(self):
        return self._plan.triangles

    @property
    def centroids(self):
        return self._plan.centroids

    @property
    def normals(self):
        return self._plan.normals

    @property
    def areas(self):
        return self._plan.areas

    @property
    def report(self):
        return Record(self._plan.report)

    @property
    def setup(self):
        return Record(self._plan.setup)

    @property
    def k(self):
        return self._plan.k

    @property
    def alpha(self):
        return self._plan.alpha
