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
from ._fmm import points3

__all__ = ["HelmholtzBEM", "read_mesh", "icosphere", "octasphere"]


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

    Returns ``(vertices, triangles)``: float64 (V, 3) coordinates and int64 (T, 3) 0-based vertex
    indices, as in the file (no validation or re-orientation; :class:`HelmholtzBEM` does that).

    Raises FileError (an OSError) for a missing, unreadable, truncated or malformed file, and
    InvalidArgumentError (a ValueError) for an unknown extension or a file without triangles.
    """
    return _core.bem_read_mesh(os.fspath(path))


def icosphere(refinements=2, radius=1.0):
    """Icosahedral sphere mesh centred at the origin: the icosahedron refined ``refinements`` times
    (``20 * 4**refinements`` triangles, ``10 * 4**refinements + 2`` vertices, outward orientation).

    Returns ``(vertices (V, 3) float64, triangles (T, 3) int64)``. ``refinements`` in [0, 10],
    ``radius`` finite and > 0 (InvalidArgumentError otherwise).
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {refinements!r}")
    return _core.bem_icosphere(int(refinements), float(radius))


def octasphere(refinements=2, radius=1.0):
    """Octahedral sphere mesh centred at the origin: the octahedron refined ``refinements`` times
    (``8 * 4**refinements`` triangles, outward orientation), vertices projected to the sphere.

    Returns ``(vertices (V, 3) float64, triangles (T, 3) int64)``; arguments as :func:`icosphere`.
    """
    if isinstance(refinements, bool) or not isinstance(refinements, (int, np.integer)):
        raise InvalidArgumentError(f"refinements must be an integer, got {refinements!r}")
    return _core.bem_octasphere(int(refinements), float(radius))


class HelmholtzBEM:
    """Plane-wave scattering by a closed surface: Burton-Miller collocation BEM (dense matrix or
    fast multipole operator) solved with GMRES, optionally right-preconditioned by the
    block-diagonal (BD) preconditioner over octree boxes of the element centroids.

    Parameters
    ----------
    mesh : str / os.PathLike, or (vertices, triangles)
        A mesh file (see :func:`read_mesh`) or arrays: vertices (V, 3) float, triangles (T, 3)
        integer 0-based indices. The mesh is validated (closed, 2-manifold, orientable, no
        degenerate triangles) and oriented outward; element order is kept, so the surface arrays
        returned by :meth:`solve` follow the order of ``triangles``.
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
    precond : {'bd', 'none'}
        Block-diagonal preconditioner (LU of the self blocks of the octree boxes) or none.
    operator : {'auto', 'dense', 'fmm'}
        ``'dense'``: the N x N matrix (16 N^2 bytes, O(N^2) set-up and matvec); ``'fmm'``: exact
        near-field entries of adjacent octree leaves + the Chebyshev black-box FMM for the rest
        (O(N) memory and matvec at fixed k, low frequency: the sphere up to a few tens of
        wavelengths); ``'auto'``: dense up to ``dense_max`` elements.
    fmm_tol : float
        FMM relative accuracy; 0 (default): ``min(tol, 1e-3)``. The FMM's order is capped at 16
        Chebyshev nodes, which reaches about 5e-11 at small ``k x box width``: a smaller
        (automatic or explicit) FMM tolerance raises InvalidArgumentError naming the smallest one.
    dense_max : int
        ``operator='auto'``: the largest element count assembled densely (default 4000).
    bd_level : int, optional
        Octree level of the BD blocks (0: one block = the whole matrix; default: the leaf level).
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

    The operator is assembled (or the FMM set up) and the BD factorised in the constructor, with
    the GIL released; ``setup`` reports what was chosen, the times and the memory.

    Attributes: ``vertices``, ``triangles`` (after validation/orientation), ``centroids`` (N, 3),
    ``normals`` (N, 3, outward unit), ``areas`` (N,), ``report`` (dict of the mesh validation,
    elements per wavelength, resolution warning), ``setup`` (dict: ``operator``, ``precond``,
    ``operator_seconds``, ``fmm_seconds``, ``precond_setup_seconds``, ``operator_bytes``,
    ``precond_bytes``, ``fmm_order``, ``fmm_tolerance``, ``near_entries``, ``leaf_level``, BD block
    counts), ``k``, ``alpha``.
    """

    def __init__(self, mesh, k, bc="neumann", alpha=None, precond="bd", tol=1e-5, *, operator="auto",
                 fmm_tol=0.0, dense_max=4000, bd_level=None, leaf=64, bd_leaf=None, restart=200,
                 max_iter=1000):
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
            raise InvalidArgumentError(f"k must be a number, got {k!r}")
        try:
            k = complex(k)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"k must be a number, got {k!r}") from None
        if not (np.isfinite(k.real) and np.isfinite(k.imag)) or k == 0 or k.real < 0 or k.imag < 0:
            raise InvalidArgumentError(f"k must be finite, nonzero, with Re k >= 0 and Im k >= 0, got {k}")
        if bc not in ("neumann", "dirichlet"):
            raise InvalidArgumentError(f"bc must be 'neumann' or 'dirichlet', got {bc!r}")
        if precond not in ("bd", "none", None):
            raise InvalidArgumentError(f"precond must be 'bd' or 'none', got {precond!r}")
        if alpha is not None:
            alpha = complex(alpha)
            if not (np.isfinite(alpha.real) and np.isfinite(alpha.imag)) or alpha == 0:
                raise InvalidArgumentError(f"alpha must be finite and nonzero, got {alpha}")
        tol = float(tol)
        if not (0 < tol < 1):
            raise InvalidArgumentError(f"tol must be in (0, 1), got {tol}")
        if operator not in ("auto", "dense", "fmm"):
            raise InvalidArgumentError(f"operator must be 'auto', 'dense' or 'fmm', got {operator!r}")
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
        self.bc = bc
        self.precond = precond or "none"
        self._plan = _core._HelmholtzBEM(vertices, triangles, k, bc, alpha, self.precond,
                                         -1 if bd_level is None else int(bd_level), int(leaf), tol,
                                         int(restart), int(max_iter), operator, fmm_tol, int(dense_max))

    def solve(self, direction=None, *, point_source=None):
        """Solves for the incident plane wave ``e^{ik d.x}``, ``d = direction / |direction|``
        (default ``(0, 0, 1)``), or, with ``point_source=(x, y, z)`` (then no ``direction``), for
        the point source
        ``u_inc(x) = e^{ik|x - x0|} / (4 pi |x - x0|)`` at ``x0`` (outside the body; a source inside
        or on an element centroid raises InvalidArgumentError).

        Returns ``(surface, info)``: ``surface`` complex128 (N,) per element (total ``u`` for
        Neumann, ``du/dn`` for Dirichlet); ``info`` dict with ``iterations``, ``converged``,
        ``residual_history`` (relative GMRES residuals, entry 0 = 1), ``final_relative_residual``,
        ``solve_seconds`` (GMRES), ``assembly_seconds`` (operator set-up), ``matvecs``,
        ``matvec_seconds``, ``precond_applications``, ``precond_apply_seconds`` and the entries
        of :attr:`setup`. The solution is kept for :meth:`far_field` and :meth:`scattered_field`.

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
            return self._plan.solve(tuple(float(c) for c in x0[0]), True)
        if direction is None:
            direction = (0.0, 0.0, 1.0)
        if np.size(direction) != 3:
            raise InvalidArgumentError(f"direction must be 3 numbers, got shape {np.shape(direction)}")
        d = _points(direction, "direction")
        if d.shape[0] != 1:
            raise InvalidArgumentError(f"direction must be 3 numbers, got shape {np.shape(direction)}")
        if not np.any(d):
            raise InvalidArgumentError("direction must be nonzero")
        return self._plan.solve(tuple(float(c) for c in d[0]), False)

    def far_field(self, directions):
        """Far-field pattern ``u_inf`` (complex128 (M,)) of the last solution at the given
        directions (M, 3) (normalised internally; zero rows are rejected)."""
        return self._plan.far_field(_points(directions, "directions"))

    def scattered_field(self, points):
        """Scattered field ``u_sc`` (complex128 (M,)) of the last solution at exterior points
        (M, 3); the total field is ``u_sc + u_inc``. A point inside the body or on its surface
        raises InvalidArgumentError."""
        return self._plan.scattered_field(_points(points, "points"))

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
        return self._plan.report

    @property
    def setup(self):
        return self._plan.setup

    @property
    def k(self):
        return self._plan.k

    @property
    def alpha(self):
        return self._plan.alpha
