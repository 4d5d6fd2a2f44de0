"""elliptica: fast solvers for elliptic PDEs (Python layer over the C++ library).

Spectral Ewald summation (triply periodic, rectangular box, CPU)
-----------------------------------------------------------------
:class:`EwaldPlan` and :func:`ewald` compute periodic sums of the Laplace kernel 1/r and of
the Stokes stokeslet, stresslet, or both in one pass (``stokes-combined``), with spectral
accuracy and O(N log N) cost: ``plan.set_points(sources, targets, normals)`` once, then
``plan.evaluate(strengths, dipoles)`` many times (thread-safe).

Conventions (identical to the C++ API, ``include/elliptica/ewald/ewald.hpp``):

* Box ``[0, L1) x [0, L2) x [0, L3)``, all ``L_i > 0`` (any aspect ratio). Points outside are
  wrapped into the box (the sums are periodic, so nothing changes). Lengths in any unit,
  used consistently.
* By default the targets are the sources and the singular self-interaction (same point, zero
  image shift) is excluded; with separate targets, a target that coincides exactly with a
  source also excludes that one singular term.
* **laplace** (Gaussian units, no ``1/(4 pi eps0)``)::

      phi(x_m) = sum_p sum_n' q_n / |x_m - y_n + p L|

  Ewald "tin-foil" convention: the k = 0 Fourier mode is excluded. A non-neutral system gets
  the uniform neutralising background, i.e. the shift ``-pi Q_tot / (xi^2 V)`` is included, so
  the result does not depend on the splitting parameter xi. Optionally the field
  ``E = -grad phi``. Units: ``[q] / [length]`` for phi, ``[q] / [length]^2`` for E.
* **stokeslet** (Hasimoto splitting), viscosity mu::

      u(x_m) = 1/(8 pi mu) sum_p sum_n' S(x_m - y_n + p L) f_n,  S(r) = I/|r| + r r^T/|r|^3

  The k = 0 mode is excluded: zero mean velocity over the box, a mean pressure gradient
  balancing the net force. Units: ``[f] / ([mu] [length])``.
* **stresslet** (double layer), dipole strengths q_n and normals nu_n (no viscosity factor)::

      u_j(x_m) = 1/(8 pi) sum_p sum_n' T_jlm(x_m - y_n + p L) q_{n,l} nu_{n,m},
      T_jlm(r) = -6 r_j r_l r_m / |r|^5

  The k = 0 term (it adds ``-(1/V) sum_n (q_n . nu_n)(x_m - y_n)`` to u, in wrapped
  coordinates) is dropped unless ``zero_mode=True``. **stokes-combined**: stokeslet of the forces + stresslet, one pass.
* Laplace with ``energy=True`` (targets = sources): ``U = 1/2 sum_n q_n phi(y_n)`` and the
  forces ``F_n = q_n E(y_n)``; ``set_exclusions`` / ``exclusions=`` removes the direct
  interaction of listed pairs (nearest image) from phi, E, U and F.
* ``precision="single"`` runs the stages in float32 (results float64) for tolerances above
  the library's single-precision floor.
* Tolerance: the DEFAULT tolerance is RELATIVE: ``tol`` bounds the RMS error divided by the
  RMS of the result over the targets (for the field, relative to the RMS of the field). The
  result's RMS is measured by a cheap pilot evaluation when parameters are chosen. With
  ``tol_kind="absolute"`` tol bounds the RMS error in the result's own units. The bound rests
  on RMS error estimates (real space, Fourier space, window), not on a worst-case guarantee.

Errors
------
Every error raised by the library is one of:

* :class:`InvalidArgumentError` (a :class:`ValueError`): wrong shapes or lengths, empty arrays,
  NaN/Inf, non-positive box, ``tol`` outside (0, 1), field requested with the stokeslet, bad
  overrides;
* :class:`FileError` (an :class:`OSError`): unreadable, truncated or malformed file, failed write;
* :class:`NumericalError` (a :class:`RuntimeError`): e.g. no parameters meet the tolerance;
* :class:`NotConvergedError` (a :class:`RuntimeError`): an iterative method stopped early;
* :class:`ResourceError` (a :class:`MemoryError`): the request needs more memory than the
  machine has, or exceeds a documented size limit (checked before anything is allocated).

Array I/O
---------
:func:`read_array` and :func:`write_array` read/write NumPy ``.npy`` and text (CSV) tables;
writes are atomic (temporary file + rename).

Multigrid and Krylov solvers
----------------------------
:func:`poisson_fd` assembles the 2D/3D (and 1D) finite-difference Dirichlet -Laplacian as a
scipy CSR matrix (``n`` intervals per axis, ``n - 1`` unknowns per axis, x fastest).
:class:`MultigridPlan` builds a geometric V-cycle (coarsening 2 or 8, linear interpolation,
Galerkin coarse operators, exact coarsest solve) with polynomial smoothers (simple, 1st-kind and
4th-kind Chebyshev, optimised variants; base Jacobi / ASM / RAS) from a scipy sparse matrix with
its grid ``shape`` or from a named problem; ``solve`` runs it as a stationary solver or as a
GMRES / FGMRES / PCG preconditioner, ``as_linear_operator`` hands one cycle to scipy's solvers.
:func:`chebyshev_cg` is Chebyshev-Jacobi preconditioned CG on any SPD sparse matrix;
:func:`opt4_betas` gives the optimised 4th-kind Chebyshev weights. Both solve calls return a
:class:`SolveResult` ``(x, info)``; options are keyword-only and default to the C++ plan's
defaults (:func:`multigrid_defaults`); ``MultigridPlan.solve`` calls the C++
``multigrid::MultigridPlan::solve``, as ``elliptica mg solve`` does.

Spectral elements with p-multigrid
----------------------------------
:class:`SemPoissonPlan` solves ``-Laplace(u) = f``, ``u = 0`` on the boundary of a hexahedral mesh
(``"box:NX,NY,NZ"``, ``"kershaw:N,EPS"``, a Gmsh ``.msh`` file, or vertex / element arrays) with
spectral elements of order p on Gauss-Lobatto-Legendre points, matrix-free, by PCG / FGMRES
preconditioned with a p-multigrid V-cycle (Chebyshev smoothing over Jacobi / ASM / RAS, BoomerAMG or
direct order-1 solve); ``load_vector(f)``, ``solve(b)`` -> ``(x, info)``, ``to_global(x)``; as
``elliptica mg sem``. Vectors are over the free (non-boundary) nodes.

Boundary element method (exterior Helmholtz scattering)
-------------------------------------------------------
:class:`HelmholtzBEM` solves the scattering of a plane wave or a point source by a closed
triangulated surface (sound-hard or sound-soft) with the Burton-Miller collocation BEM (dense
matrix or FMM-accelerated operator) and GMRES, optionally preconditioned by the block-diagonal
octree preconditioner; ``solve`` returns a :class:`BemSolution` (surface
field + solve information), from which ``far_field`` and ``scattered_field`` are evaluated. Conventions: ``e^{-i omega t}``, ``G = e^{ikr}/(4 pi r)``, outward normals, far field
``u_sc ~ e^{ik|x|}/|x| u_inf``. :func:`read_mesh` reads .msh/.obj/.stl/.off, :func:`curve_mesh`,
:func:`loop_surface` and :func:`refine_mesh` make curved 6-node elements and refine, :func:`icosphere` (and :func:`octasphere`) makes
sphere meshes.
"""

from ._core import (
    FileError,
    InvalidArgumentError,
    Kernel,
    NotConvergedError,
    NumericalError,
    Precision,
    FftPlanner,
    ResourceError,
    ToleranceKind,
)
from ._ewald import (DistributedEwaldPlan, EwaldInfo, EwaldPlan, EwaldResult, mpi_available, ewald, ewald_calibrate, ewald_cost_constants, ewald_defaults,
                     ewald_fft_wisdom, single_precision_floor)
from ._io import read_array, write_array

__version__ = "0.1.0"

__all__ = [
    "EwaldPlan",
    "DistributedEwaldPlan",
    "mpi_available",
    "EwaldResult",
    "EwaldInfo",
    "ewald",
    "ewald_defaults",
    "ewald_calibrate",
    "ewald_cost_constants",
    "ewald_fft_wisdom",
    "FftPlanner",
    "single_precision_floor",
    "Kernel",
    "ToleranceKind",
    "Precision",
    "read_array",
    "write_array",
    "InvalidArgumentError",
    "FileError",
    "NumericalError",
    "NotConvergedError",
    "ResourceError",
    "__version__",
]

from ._multigrid import (MultigridPlan, SolveInfo, SolveResult, chebyshev_cg, multigrid_defaults, opt4_betas,
                         rigid_body_modes, SolutionProjection,
                         poisson_fd, seed_problem_2d)

__all__ += ["poisson_fd", "seed_problem_2d", "MultigridPlan", "chebyshev_cg", "opt4_betas", "multigrid_defaults",
            "rigid_body_modes", "SolutionProjection",
            "SolveInfo", "SolveResult"]

from ._bem import (BEM_DEFAULTS, MEDIUM_DEFAULTS, AcousticBEM, BemSolution, HelmholtzBEM, acoustic_wavenumber,
                   admittance_from_impedance, curve_mesh, icosphere, loop_surface, normal_velocity_data, octasphere,
                   read_mesh, refine_mesh, sphere_rule, spl_db)

__all__ += ["HelmholtzBEM", "BemSolution", "BEM_DEFAULTS", "read_mesh", "icosphere", "octasphere", "curve_mesh",
            "refine_mesh", "loop_surface", "MEDIUM_DEFAULTS",
            "AcousticBEM", "acoustic_wavenumber", "admittance_from_impedance", "normal_velocity_data", "spl_db",
            "sphere_rule"]

from ._sem import SemPoissonPlan, sem_defaults  # noqa: E402  SEM Poisson with p-multigrid (_sem.py)
__all__ += ["SemPoissonPlan", "sem_defaults"]

from ._fmm import HelmholtzFMM  # noqa: E402  Helmholtz FMM (_fmm.py)
__all__ += ["HelmholtzFMM"]
