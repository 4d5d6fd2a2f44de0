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
from types import MappingProxyType

import numpy as np

from . import _core
from ._core import InvalidArgumentError
from ._format import show as _show
from ._fmm import points3
from ._record import Record

__all__ = ["HelmholtzBEM", "BemSolution", "Record", "read_mesh", "icosphere", "octasphere", "curve_mesh", "refine_mesh", "loop_surface",
           "BEM_DEFAULTS",
           "MEDIUM_DEFAULTS", "AcousticBEM", "acoustic_wavenumber", "normal_velocity_data",
           "admittance_from_impedance", "spl_db", "sphere_rule"]

#: The defaults of the C++ ``HelmholtzBemOptions`` (``include/elliptica/bem/plan.hpp``), read from
#: the extension: Python has no default values of its own. ``bd_level`` -1 means the leaf level.
BEM_DEFAULTS = dict(_core.bem_defaults())
#: The fluid of the acoustic helpers (C++ ``bem::Medium``: air at about 20 C) and the SPL
#: reference pressure in air (Pa).
MEDIUM_DEFAULTS = MappingProxyType(dict(_core.medium_defaults()))  # read-only: pass sound_speed= etc.


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
    """Reads a triangulated surface: Gmsh ``.msh`` (2.2/4.1, ASCII/binary), Wavefront ``.obj``,
    ``.stl`` (ASCII/binary) or ``.off`` (ASCII), dispatching on the extension.

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)`` coordinates and
    ``ndarray((T, 3), int64)`` 0-based vertex indices, as in the file (no validation or re-orientation; :class:`HelmholtzBEM` does that).
    A ``.msh`` file with 6-node triangles (Gmsh type 9, ``gmsh -2 -order 2``) gives the curved mesh
    ``(vertices, triangles, midside)``, ``midside`` an ``ndarray((T, 3, 3), float64)``: the nodes on
    the edges (t0, t1), (t1, t2), (t2, t0) of each triangle (the file decides, not a flag).

    Raises FileError (an OSError) for a missing, unreadable, truncated or malformed file, and
    InvalidArgumentError (a ValueError) for an unknown extension or a file without triangles.
    """
    return _mesh_tuple(_core.bem_read_mesh(os.fspath(path)))


def _mesh_tuple(m):
    """The C++ mesh arrays as the Python mesh tuple: midside (3T, 3) -> (T, 3, 3)."""
    if len(m) == 3:
        return m[0], m[1], m[2].reshape(-1, 3, 3)
    return m


def _mesh_arrays(mesh):
    """A mesh tuple (or file path) as (vertices, triangles, midside (3T, 3) or (0, 3)) for the extension."""
    if isinstance(mesh, (str, os.PathLike)):
        mesh = read_mesh(mesh)
    try:
        vertices, triangles, *rest = mesh
        if len(rest) > 1:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidArgumentError("mesh must be a file path, a (vertices, triangles) pair or a (vertices, "
                                   "triangles, midside) triple") from None
    vertices = _points(vertices, "vertices")
    triangles = _triangles(triangles)
    midside = np.zeros((0, 3))
    if rest:
        midside = np.asarray(rest[0], dtype=np.float64)
        if midside.shape != (triangles.shape[0], 3, 3):
            raise InvalidArgumentError(f"midside must have shape (T, 3, 3) = ({triangles.shape[0]}, 3, 3), "
                                       f"got {midside.shape}")
        midside = np.ascontiguousarray(midside.reshape(-1, 3))
    return vertices, triangles, midside


def curve_mesh(mesh, *, crease_degrees=45.0):
    """Curved 6-node version of a flat mesh whose vertices lie on a smooth surface (an STL / OBJ /
    OFF body): the midside node of every edge on the PN-triangle cubic through it, from the
    angle-weighted vertex normals; edges whose faces meet at more than ``crease_degrees`` (and
    the edges at such corners) stay straight. The mesh is validated and oriented outward first.
    C++ ``bem::curve_by_vertex_normals`` (docs/bem.md, "Curved elements").

    Returns ``(vertices, triangles, midside)`` (``midside`` ``ndarray((T, 3, 3), float64)``).
    InvalidArgumentError for an invalid or already curved mesh, ``crease_degrees`` outside (0, 180].
    """
    v, t, m = _mesh_arrays(mesh)
    if m.shape[0]:
        raise InvalidArgumentError("curve_mesh: the mesh is already curved")
    return _mesh_tuple(_core.bem_curve(v, t, float(crease_degrees)))


def loop_surface(mesh, *, levels=1):
    """Curved 6-node mesh on the Loop subdivision limit surface of a flat closed mesh (the control
    mesh, e.g. a scanned STL / OBJ / OFF body): ``levels`` Loop steps (``T * 4**levels`` triangles,
    the child order of :func:`refine_mesh`), every corner and midside node moved to its limit
    position. All levels lie on the SAME smooth surface (C2, C1 at vertices of valence other than
    6), so they form a convergence sequence beyond O(h); the surface approximates the control mesh,
    it does not pass through its vertices (convex parts shrink by O(h_control^2)). The mesh is
    validated and oriented outward first. C++ ``bem::loop_subdivision_surface`` (docs/bem.md,
    "Curved elements").

    Returns ``(vertices, triangles, midside)`` (``midside`` ``ndarray((T * 4**levels, 3, 3),
    float64)``; vertex i < V is the limit position of control vertex i after validation).
    InvalidArgumentError for an invalid, open, non-manifold or already curved mesh, ``levels`` not
    an integer in [0, 8], or more than 50 million resulting elements.
    """
    v, t, m = _mesh_arrays(mesh)
    if m.shape[0]:
        raise InvalidArgumentError("loop_surface: the mesh is already curved (it must be a flat control mesh)")
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)):
        raise InvalidArgumentError(f"levels must be an integer, got {_show(levels)}")
    if not 0 <= levels <= 8:
        raise InvalidArgumentError(f"levels must be in [0, 8], got {_show(levels)}")
    return _mesh_tuple(_core.bem_loop(v, t, int(levels)))


def refine_mesh(mesh):
    """Uniform refinement (every triangle split in 4, ``4 T`` triangles): flat meshes through their
    edge midpoints, curved ones through points of each element's quadratic map, so that the curved
    surface does not change (for convergence studies). C++ ``bem::refine``.

    Returns the mesh tuple of the same kind as ``mesh``.
    """
    return _mesh_tuple(_core.bem_refine(*_mesh_arrays(mesh)))


def _check_order(order):
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or int(order) not in (1, 2):
        raise InvalidArgumentError(f"order must be 1 (flat triangles) or 2 (curved 6-node triangles), got {_show(order)}")
    return int(order)


def icosphere(refinements=2, radius=1.0, *, order=1):
    """Icosahedral sphere mesh centred at the origin: the icosahedron refined ``refinements`` times
    (``20 * 4**refinements`` triangles, ``10 * 4**refinements + 2`` vertices, outward orientation).

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)``, ``ndarray((T, 3), int64)``;
    with ``order=2`` the curved mesh ``(vertices, triangles, midside)`` of 6-node triangles whose
    midside nodes (``ndarray((T, 3, 3), float64)``) lie on the sphere: far fields converge at
    O(h^2) instead of O(h) (docs/bem.md, "Curved elements"). Every function that takes a mesh
    takes either tuple.
    ``refinements`` in [0, 10],
    ``radius`` finite and > 0, ``order`` 1 or 2 (InvalidArgumentError otherwise).
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {_show(refinements)}")
    return _mesh_tuple(_core.bem_icosphere(int(refinements), float(radius), _check_order(order)))


def octasphere(refinements=2, radius=1.0, *, order=1):
    """Octahedral sphere mesh centred at the origin: the octahedron refined ``refinements`` times
    (``8 * 4**refinements`` triangles, outward orientation), vertices projected to the sphere.

    Returns ``(vertices, triangles)``: ``ndarray((V, 3), float64)``, ``ndarray((T, 3), int64)``;
    arguments as :func:`icosphere`.
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {_show(refinements)}")
    return _mesh_tuple(_core.bem_octasphere(int(refinements), float(radius), _check_order(order)))


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
    def u(self):
        """``ndarray((N,), complex128)``: the total field on the surface (pressure, Pa, in the
        acoustic units; zero for ``bc='dirichlet'``)."""
        return self._sol.u

    @property
    def dudn(self):
        """``ndarray((N,), complex128)``: the total normal derivative on the surface (zero for a
        rigid body's scattering; ``-i k beta u`` on an impedance surface; ``g + ...`` for
        radiation)."""
        return self._sol.dudn

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


def _complex_values(x, what):
    """``ndarray((n,), complex128)`` of a number or a 1-D array (n = 0 for None);
    InvalidArgumentError naming ``what`` otherwise."""
    if x is None:
        return np.zeros(0, dtype=np.complex128)
    try:
        a = np.ascontiguousarray(np.atleast_1d(np.asarray(x, dtype=np.complex128)))
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what} must be a number or an (N,) array, got {_show(x)}") from None
    if a.ndim != 1:
        raise InvalidArgumentError(f"{what} must be a number or an (N,) array, got shape {a.shape}")
    return a


def _plan_options(*, bc=_D["bc"], alpha=None, precond=_D["precond"], operator=_D["operator"],
                  fmm_tol=_D["fmm_tol"], dense_max=_D["dense_max"], bd_level=None, leaf=_D["leaf"], tol=_D["tol"],
                  restart=_D["restart"], max_iter=_D["max_iter"], threads=_D["threads"], ifmm_eps=_D["ifmm_eps"],
                  ifmm_sigma=_D["ifmm_sigma"], ifmm_top=_D["ifmm_top"], ifmm_bottom=_D["ifmm_bottom"],
                  ifmm_order=_D["ifmm_order"], ifmm_depth=_D["ifmm_depth"], admittance=None, ground_plane=None,
                  symmetry=None):
    """The C++ options of a plan (``_core._BemOptions``) from :class:`HelmholtzBEM`'s keywords, checked
    here with messages in Python's terms (the C++ plan checks the values again)."""
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
    adm = _complex_values(admittance, "admittance")
    gaxis, gheight, grefl = _ground(ground_plane)
    sym = []
    for plane in (symmetry or []):
        ax, h, r = _plane(plane, "symmetry plane", ("symmetric", "antisymmetric"))
        sym.append((float(ax), h, r))
    return _core._BemOptions(bc, alpha, precond or "none", -1 if bd_level is None else int(bd_level), int(leaf), tol,
                             int(restart), int(max_iter), operator, fmm_tol, int(dense_max), int(threads), ifmm_eps,
                             int(ifmm_sigma), int(ifmm_top), int(ifmm_bottom), int(ifmm_order), int(ifmm_depth), adm,
                             gaxis, gheight, grefl, sym)


class HelmholtzBEM:
    """Plane-wave or point-source scattering by a closed surface: Burton-Miller collocation BEM
    (dense matrix or fast multipole operator) solved with GMRES, optionally right-preconditioned
    by the block-diagonal (BD) preconditioner over octree boxes of the element centroids.

    ``HelmholtzBEM(mesh, k, *, bc, alpha, precond, operator, fmm_tol, dense_max, bd_level, leaf,
    tol, restart, max_iter, threads)``: every option is keyword-only and its default is the
    C++ default (:data:`BEM_DEFAULTS`, read from ``HelmholtzBemOptions``).

    Parameters
    ----------
    mesh : str / os.PathLike, (vertices, triangles) or (vertices, triangles, midside)
        A mesh file (see :func:`read_mesh`) or arrays: vertices ``ndarray((V, 3), float64)``,
        triangles ``ndarray((T, 3), int64)`` 0-based indices (other numeric dtypes converted);
        for curved 6-node elements midside ``ndarray((T, 3, 3), float64)``, the nodes on the edges
        (t0, t1), (t1, t2), (t2, t0) (``icosphere(order=2)``; docs/bem.md, "Curved elements").
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
    admittance : complex or ndarray((N,), complex), optional
        Locally reacting (impedance) surface, ``bc='neumann'``: the normalised admittance
        ``beta = rho c / Z`` per element (or one value), boundary condition ``du/dn = -i k beta
        u``; ``Re beta >= 0``. :func:`admittance_from_impedance` converts an impedance in Pa s/m.
        Default None: rigid.
    ground_plane : (axis, height[, kind]), optional
        A rigid (``'rigid'``, default) or pressure-release (``'soft'``) plane ``x[axis] = height``
        (axis ``'x'``, ``'y'``, ``'z'``) bounding the fluid half-space the body lies in (method of
        images; dense or FMM operator, not ``precond='ifmm'``). Incident fields get their reflection, far and scattered fields
        their image. Default None: free space.
    symmetry : list of (axis, position[, kind]), optional
        Symmetry planes of the body (at most 3 with the ground, distinct axes): the mesh is the
        part with ``x[axis] >= position`` (its cut edges exactly on the planes), kind
        ``'symmetric'`` (default: the field is even across the plane) or ``'antisymmetric'``
        (odd). The plan solves the whole body (the mesh and its mirror images) with N unknowns;
        incident fields must share the symmetry. Dense or FMM operator (the FMM works on the whole
        body). Default None.
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
                 ifmm_bottom=_D["ifmm_bottom"], ifmm_order=_D["ifmm_order"], ifmm_depth=_D["ifmm_depth"],
                 admittance=None, ground_plane=None, symmetry=None):
        vertices, triangles, midside = _mesh_arrays(mesh)
        if vertices.shape[0] == 0 or triangles.shape[0] == 0:
            raise InvalidArgumentError("mesh is empty")
        if isinstance(k, (str, bytes, bool, np.bool_)):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}")
        try:
            k = complex(k)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"k must be a number, got {_show(k)}") from None
        # k itself is checked by the C++ plan (one rule for every caller)
        options = _plan_options(bc=bc, alpha=alpha, precond=precond, operator=operator, fmm_tol=fmm_tol,
                                dense_max=dense_max, bd_level=bd_level, leaf=leaf if bd_leaf is None else bd_leaf,
                                tol=tol, restart=restart, max_iter=max_iter, threads=threads, ifmm_eps=ifmm_eps,
                                ifmm_sigma=ifmm_sigma, ifmm_top=ifmm_top, ifmm_bottom=ifmm_bottom,
                                ifmm_order=ifmm_order, ifmm_depth=ifmm_depth, admittance=admittance,
                                ground_plane=ground_plane, symmetry=symmetry)
        self.bc = bc
        self.precond = precond or "none"
        self.symmetry = symmetry
        self.ground_plane = ground_plane
        self._plan = _core._HelmholtzBEM(vertices, triangles, midside, k, options)

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

    def solve_radiation(self, dudn, *, direction=None, point_source=None):
        """Radiation (and radiation + scattering) on a ``bc='neumann'`` plan, rigid or impedance:
        the prescribed source ``g`` of the normal derivative, ``du/dn = g - i k beta u``
        (``dudn``: ``ndarray((N,), complex)``, element order; for a surface vibrating with
        outward normal velocity ``v_n`` (m/s): ``g = normal_velocity_data(v_n, frequency)``),
        plus the incident plane wave ``direction`` or ``point_source`` when given (else none).
        The first call builds the sound-soft companion operator (C++ ``solve_radiation``,
        reported in ``setup``). Returns a :class:`BemSolution` (``.u`` the surface pressure,
        ``.dudn`` its normal derivative). GIL released.

        Raises InvalidArgumentError for ``bc='dirichlet'``, a wrong length or non-finite data.
        """
        g = np.ascontiguousarray(np.asarray(dudn, dtype=np.complex128))
        if g.ndim != 1:
            raise InvalidArgumentError(f"dudn must be an (N,) array, got shape {g.shape}")
        if direction is not None and point_source is not None:
            raise InvalidArgumentError("give either direction (plane wave) or point_source, not both")
        kind, v = 0, (0.0, 0.0, 1.0)
        for i, what in ((1, direction), (2, point_source)):
            if what is not None:
                p = _points(what, "direction" if i == 1 else "point_source")
                if p.shape[0] != 1:
                    raise InvalidArgumentError("direction / point_source must be 3 numbers")
                if i == 1 and not np.any(p):
                    raise InvalidArgumentError("direction must be nonzero")
                kind, v = i, tuple(float(c) for c in p[0])
        return self._solution(self._plan.solve_radiation(g, v, kind))

    def surface_power(self, solution, frequency, *, sound_speed=None, density=None):
        """Power (W) through the surface of a solution in acoustic units (u = pressure in Pa,
        ``frequency`` in Hz): ``1/2 Re sum_e A_e p_e conj(v_e)``, ``v_e = dudn_e / (i omega
        rho)`` (C++ ``surface_power``, acoustics.hpp). Defaults: :data:`MEDIUM_DEFAULTS`. With
        symmetry planes: the whole body's power (the part's times its 2, 4 or 8 copies)."""
        self._check(solution)
        c = MEDIUM_DEFAULTS["sound_speed"] if sound_speed is None else float(sound_speed)
        rho = MEDIUM_DEFAULTS["density"] if density is None else float(density)
        copies = 2 ** len(self.symmetry or [])
        return copies * self._plan.surface_power(solution._sol, float(frequency), c, rho)

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

    def incident_field(self, points, *, direction=None, point_source=None, amplitude=1.0):
        """The incident field (``ndarray((M,), complex128)``) at ``points`` ``(M, 3)``: the plane
        wave ``e^{ik d.x}`` (``direction``) or the point source ``amplitude G(x, x0)``
        (``point_source`` = x0), with its reflection in the plane's ground plane, as
        :meth:`solve` uses it; the total field at exterior points is
        ``scattered_field(sol, points) + incident_field(points, ...)``. Exactly one of
        ``direction`` and ``point_source``; InvalidArgumentError for a zero direction or a point
        at the source. C++ ``HelmholtzBem::plane_wave_at`` / ``point_source_at``. GIL released."""
        if (direction is None) == (point_source is None):
            raise InvalidArgumentError("give exactly one of direction and point_source")
        v = _points(direction if point_source is None else point_source,
                    "direction" if point_source is None else "point_source")
        if v.shape[0] != 1:
            raise InvalidArgumentError("direction / point_source must be one 3-vector")
        return self._plan.incident_at(tuple(v[0]), point_source is not None, complex(amplitude),
                                      _points(points, "points"))

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


def _plane(g, what, kinds):
    """A mirror plane ``(axis, position[, kind])``: axis ``'x'``/``'y'``/``'z'`` (or 0/1/2), kind
    ``kinds[0]`` (reflection +1, the default) or ``kinds[1]`` (-1) -> (axis, position, reflection)."""
    try:
        axis, height, *rest = g
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{what} must be (axis, position[, {kinds[0]!r}|{kinds[1]!r}]), "
                                   f"got {_show(g)}") from None
    axes = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}
    if axis not in axes or len(rest) > 1 or (rest and rest[0] not in kinds):
        raise InvalidArgumentError(f"{what} must be (axis x|y|z, position[, {kinds[0]!r}|{kinds[1]!r}]), "
                                   f"got {_show(g)}")
    return axes[axis], float(height), (-1.0 if rest and rest[0] == kinds[1] else 1.0)


def _ground(g):
    """``ground_plane``: None (-1, 0, 1) or ``(axis, height[, 'rigid'|'soft'])``."""
    return (-1, 0.0, 1.0) if g is None else _plane(g, "ground_plane", ("rigid", "soft"))


def _medium(sound_speed, density):
    c = MEDIUM_DEFAULTS["sound_speed"] if sound_speed is None else float(sound_speed)
    rho = MEDIUM_DEFAULTS["density"] if density is None else float(density)
    return c, rho


def acoustic_wavenumber(frequency, *, sound_speed=None, density=None):
    """``k = 2 pi f / c`` (1/m) for a frequency in Hz (C++ ``bem::wavenumber``)."""
    c, rho = _medium(sound_speed, density)
    return _core.acoustic_wavenumber(float(frequency), c, rho)


def normal_velocity_data(velocity, frequency, *, sound_speed=None, density=None):
    """``dp/dn = i omega rho v_n``: ``ndarray((N,), complex128)`` (Pa/m) for outward normal
    velocities ``velocity`` (m/s, ``(N,)``, peak amplitudes), the Neumann data of
    :meth:`HelmholtzBEM.solve_radiation` (C++ ``normal_velocity_data``; convention e^{-i omega t})."""
    c, rho = _medium(sound_speed, density)
    v = np.ascontiguousarray(np.atleast_1d(np.asarray(velocity, dtype=np.complex128)))
    if v.ndim != 1:
        raise InvalidArgumentError(f"velocity must be an (N,) array, got shape {v.shape}")
    return _core.normal_velocity_data(v, float(frequency), c, rho)


def admittance_from_impedance(impedance, *, sound_speed=None, density=None):
    """Normalised admittance ``beta = rho c / Z`` of a specific acoustic impedance ``Z`` (Pa s/m,
    ``Re Z >= 0``), the ``admittance`` of :class:`HelmholtzBEM`."""
    c, rho = _medium(sound_speed, density)
    return _core.admittance_from_impedance(complex(impedance), c, rho)


def spl_db(pressure, *, p_ref=None):
    """Sound pressure level ``20 log10(|p| / (sqrt(2) p_ref))`` (dB) of complex peak amplitudes
    ``pressure`` (Pa, any shape); ``p_ref`` default 20 uPa (air). ``-inf`` where ``p = 0``."""
    pr = MEDIUM_DEFAULTS["reference_pressure"] if p_ref is None else float(p_ref)
    if not (pr > 0 and np.isfinite(pr)):
        raise InvalidArgumentError(f"p_ref must be finite and > 0, got {p_ref}")
    with np.errstate(divide="ignore"):
        return 20 * np.log10(np.abs(np.asarray(pressure)) / (np.sqrt(2.0) * pr))


def sphere_rule(n_theta, *, hemisphere_axis=None):
    """``(directions ndarray((M, 3), float64), weights ndarray((M,), float64))``: Gauss-Legendre
    in cos(theta) x trapezoid in phi, ``M = 2 n_theta^2``, weights summing to 4 pi, exact for
    spherical harmonics of degree < 2 n_theta. With ``hemisphere_axis`` (0, 1, 2 or 'x', 'y',
    'z') the same rule on the half sphere ``d[axis] > 0`` (weights sum to 2 pi): the far field
    above a ground plane."""
    if hemisphere_axis is None:
        return _core.sphere_rule(int(n_theta), -1)
    axes = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}
    if hemisphere_axis not in axes:
        raise InvalidArgumentError(f"hemisphere_axis must be x, y, z or 0, 1, 2, got {_show(hemisphere_axis)}")
    return _core.sphere_rule(int(n_theta), axes[hemisphere_axis])


class AcousticBEM:
    """The acoustic BEM in physical units over a frequency sweep: one mesh, a fluid
    (``sound_speed`` m/s, ``density`` kg/m^3; :data:`MEDIUM_DEFAULTS`), an optional locally
    reacting surface of specific acoustic ``impedance`` Z (Pa s/m; scalar or ``(N,)``), and the
    :class:`HelmholtzBEM` options (``**options``: keyword-only, as there) of the plan built at
    each frequency (the operators depend on k). A thin layer over the C++ plan
    ``bem::AcousticSweep``, the same computation and run folder as ``elliptica bem --frequency``
    (docs/bem.md, "Radiation, impedance surfaces and physical units").

    :meth:`sweep` returns a :class:`Record` of arrays over the frequencies, and with ``out`` keeps
    a run folder that an interrupted sweep resumes from (``resume=True``).
    """

    def __init__(self, mesh, *, sound_speed=None, density=None, impedance=None, **options):
        self.sound_speed, self.density = _medium(sound_speed, density)
        if "admittance" in options:
            raise InvalidArgumentError("AcousticBEM takes impedance (Pa s/m), not admittance")
        import inspect
        known = set(inspect.signature(_plan_options).parameters) - {"admittance"}
        unknown = sorted(set(options) - known - {"bd_leaf"})
        if unknown:
            raise InvalidArgumentError(f"AcousticBEM: unknown HelmholtzBEM option(s) {', '.join(unknown)}; "
                                       f"known: {', '.join(sorted(known))}")
        if "bd_leaf" in options:  # older name of ``leaf``
            options["leaf"] = options.pop("bd_leaf")
        self._options = _plan_options(**options)  # checked now
        self._impedance = _complex_values(impedance, "impedance")
        for v in self._impedance:  # the values now (the C++ plan checks them again, naming the element)
            admittance_from_impedance(v, sound_speed=self.sound_speed, density=self.density)
        if isinstance(mesh, (str, os.PathLike)):
            mesh = read_mesh(mesh)
        self._mesh = _mesh_arrays(mesh)  # the shapes now

    def sweep(self, frequencies, *, velocity=None, direction=None, point_source=None, field_points=None,
              directions=None, monostatic=None, progress=None, out=None, resume=False, keep_surface=False,
              reuse_tree=True):
        """Solves at every frequency (Hz) of ``frequencies`` and returns a :class:`Record`:

        - ``frequency`` ``ndarray((F,), float64)`` Hz, ``k`` 1/m, ``ka`` (k times half the body
          size), ``iterations`` int64, ``setup_seconds``, ``solve_seconds``, ``field_seconds``,
          ``resumed`` bool (read back from ``out``, not computed by this call);
        - ``power_w``: radiated (``velocity`` given) or scattered power, the far-field integral
          ``1/(2 rho c) int |p_inf|^2`` over the sphere (the half sphere above a ground plane),
          W; ``lw_db`` (dB re 1 pW);
        - ``p_inf`` ``ndarray((F, D), complex128)`` (Pa m) at ``directions`` (``(D, 3)``, default
          none), ``max_spl_1m_db`` ``(F,)`` the largest SPL at 1 m over them, and ``field``
          ``ndarray((F, M), complex128)`` (Pa; total pressure, 0 inside the body) at
          ``field_points`` ``(M, 3)`` (default none), ``spl_db`` of it;
        - ``ts_db`` ``(F,)``: the target strength ``20 log10 |p_inf(-d)|`` for a plane wave;
        - with ``monostatic`` (``(J, 3)`` incident directions d_j, one set-up and J solves per
          frequency): ``backscatter`` ``ndarray((F, J), complex128)`` ``p_inf(-d_j)`` (Pa m) and
          ``monostatic_ts_db`` ``(F, J)``; ``ts_db`` is then the largest over the directions;
        - ``surface`` ``ndarray((F, N), complex128)`` with ``keep_surface``: the surface pressure
          (Pa; dp/dn in Pa/m for bc 'dirichlet').

        ``velocity``: outward normal velocity (m/s, ``(N,)`` in the element order of the plans'
        ``triangles``, or a scalar for a pulsating body): radiation; ``direction`` /
        ``point_source``: the incident field (1 Pa amplitude plane wave; point source of 1 Pa at
        1 m), alone (scattering) or added to the radiation. At least one of velocity, direction,
        point_source, monostatic.

        ``out``: a run folder (run.json, frequencies.csv, fNNNN/ per frequency, summary.json; the
        format of ``elliptica bem --frequency --out``), each frequency's files written when it
        finishes; ``resume=True`` continues a folder with the same settings (run.json), reading the
        finished frequencies back instead of computing them; without it a folder holding a sweep
        is refused. ``reuse_tree``: the FMM's octree of the first frequency is reused by the later
        ones. ``progress(i, F, frequency, row)`` after each computed frequency (``row``: a dict of
        its scalars). GIL released during the work.
        """
        try:
            f = np.atleast_1d(np.asarray(frequencies, dtype=np.float64))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"frequencies must be numbers, got {_show(frequencies)}") from None
        if f.ndim != 1 or f.size == 0 or not np.all(np.isfinite(f)) or np.any(f <= 0):
            raise InvalidArgumentError("frequencies must be a non-empty list of finite frequencies > 0 Hz")
        if velocity is None and direction is None and point_source is None and monostatic is None:
            raise InvalidArgumentError("give velocity (radiation), direction, point_source or monostatic (scattering)")
        if direction is not None and point_source is not None:
            raise InvalidArgumentError("give either direction (plane wave) or point_source, not both")
        empty = np.zeros((0, 3))
        vel = _complex_values(velocity, "velocity")
        kind, where = 0, (0.0, 0.0, 0.0)
        if direction is not None:
            kind, where = 1, tuple(float(x) for x in _points(np.reshape(direction, (1, -1)), "direction")[0])
        if point_source is not None:
            kind, where = 2, tuple(float(x) for x in _points(np.reshape(point_source, (1, -1)), "point_source")[0])
        dirs = empty if directions is None else _points(directions, "directions")
        pts = empty if field_points is None else _points(field_points, "field_points")
        mono = empty if monostatic is None else _points(monostatic, "monostatic")
        if out is None and resume:
            raise InvalidArgumentError("resume=True needs the run folder out")
        v, t, m = self._mesh
        plan = _core._AcousticSweep(v, t, m, [float(x) for x in f], self.sound_speed, self.density, self._options,
                                    self._impedance, vel, kind, where, mono, dirs, pts, bool(reuse_tree))
        d = plan.run("" if out is None else os.fspath(out), bool(resume), bool(keep_surface), progress)
        d["resumed"] = d["resumed"].astype(bool)
        for key in ("computed", "resumed_count", "sweep_seconds"):
            d.pop(key)
        if "field" in d:
            d["spl_db"] = spl_db(d["field"])
        return Record(d)
