"""The users' matrices of issue 13 (built with scipy and pyamg's gallery, as a user would), shared by
bench/mg/amg_users.py. Each entry: name -> function returning (A (scipy CSR), b, near_null or None,
block_size, description)."""
import numpy as np
import scipy.sparse as sp


def _lap1d(n, neumann=False):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    if neumann:
        t[0, 0] = t[n - 1, n - 1] = 1.0
    return t.tocsr()


def poisson2d(n=1000):
    t = _lap1d(n)
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    return A, np.ones(n * n), None, 1, f"2D Poisson {n}^2 (5-point, Dirichlet)"


def aniso_rotated(n=512, eps=0.001, theta=np.pi / 8):
    import pyamg
    st = pyamg.gallery.diffusion_stencil_2d(epsilon=eps, theta=theta, type="FD")
    A = pyamg.gallery.stencil_grid(st, (n, n), format="csr")
    return A, np.ones(n * n), None, 1, f"rotated anisotropic diffusion {n}^2 (eps {eps}, theta pi/8, pyamg gallery FD)"


def elasticity(n=250):
    import pyamg
    A, B = pyamg.gallery.linear_elasticity((n, n), format="bsr")
    A = A.tocsr()
    b = np.random.default_rng(7).standard_normal(A.shape[0])
    return A, b, np.asarray(B, dtype=np.float64), 2, f"2D linear elasticity {n}^2 (pyamg gallery, Q1), rigid-body modes"


def jump3d(n=64, jump=1e4):
    """-div(k grad u) on the unit cube, n^3 interior unknowns, 7-point with harmonic face means;
    k = jump in the cube [1/4, 3/4]^3, 1 elsewhere; Dirichlet boundary."""
    h = 1.0 / (n + 1)
    x = (np.arange(n + 2)) * h  # includes the boundary points
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    k = np.where((abs(X - 0.5) < 0.25) & (abs(Y - 0.5) < 0.25) & (abs(Z - 0.5) < 0.25), jump, 1.0)
    idx = -np.ones((n + 2,) * 3, dtype=np.int64)
    idx[1:-1, 1:-1, 1:-1] = np.arange(n ** 3).reshape((n, n, n))
    rows, cols, vals = [], [], []
    diag = np.zeros((n, n, n))
    inner = (slice(1, -1),) * 3
    for ax in range(3):
        for s in (-1, 1):
            sl = [slice(1, -1)] * 3
            sl[ax] = slice(1 + s, n + 1 + s)
            kn = k[tuple(sl)]
            kf = 2 * k[inner] * kn / (k[inner] + kn)  # harmonic mean on the face
            diag += kf
            nb = idx[tuple(sl)]
            me = idx[inner]
            m = nb >= 0
            rows.append(me[m]), cols.append(nb[m]), vals.append(-kf[m])
    rows.append(idx[inner].ravel()), cols.append(idx[inner].ravel()), vals.append(diag.ravel())
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n ** 3, n ** 3))
    return A, np.ones(n ** 3), None, 1, f"3D Poisson {n}^3 with a {jump:g} coefficient jump (cube [1/4,3/4]^3, harmonic means)"


def stretched(n=512, ratio=0.01):
    """-u_xx - u_yy on a mesh with hy = ratio hx (5-point, Dirichlet): couplings 1/hy^2 in y,
    1/hx^2 in x."""
    hx = 1.0 / (n + 1)
    hy = ratio * hx
    t = _lap1d(n)
    A = (sp.kron(sp.eye(n), t) / hx ** 2 + sp.kron(t, sp.eye(n)) / hy ** 2).tocsr()
    return A, np.ones(n * n), None, 1, f"stretched mesh {n}^2, hy = {ratio} hx (5-point)"


def neumann(n=1000):
    """Pure-Neumann 2D Poisson (the incompressible-flow pressure equation): singular, null space
    the constants; the right-hand side made consistent (zero mean)."""
    t = _lap1d(n, neumann=True)
    A = (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()
    rng = np.random.default_rng(11)
    b = rng.standard_normal(n * n)
    b -= b.mean()
    return A, b, None, 1, f"pure-Neumann pressure Poisson {n}^2 (consistent random rhs)"


MATRICES = {
    "poisson1000": poisson2d,
    "aniso512": aniso_rotated,
    "elasticity250": elasticity,
    "jump64": jump3d,
    "stretched512": stretched,
    "neumann1000": neumann,
}
