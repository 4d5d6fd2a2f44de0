"""Assembled test matrices shared by the Python and CLI tests of the multigrid module (scipy
sparse, float64). On sys.path through tests/python/conftest.py and tests/cli/conftest.py."""
import numpy as np
import scipy.sparse as sp


def poisson2d(nx, ny=None):
    """5-point Laplacian (2 on the diagonal per axis, -1 off it; unit spacing, Dirichlet) on an
    nx x ny grid of unknowns, x fastest: CSR (nx ny, nx ny)."""
    ny = nx if ny is None else ny
    tx = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(nx, nx))
    ty = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(ny, ny))
    return (sp.kron(sp.eye(ny), tx) + sp.kron(ty, sp.eye(nx))).tocsr()


def neumann2d(n):
    """Pure-Neumann 5-point Laplacian on n x n (the graph Laplacian of the grid): singular, null
    space the constants."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 1.0
    t = t.tocsr()
    return (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()


def elasticity2d(n, E=1.0, nu=0.3):
    """Plane-strain bilinear (Q1) elasticity on [0,1]^2, n x n elements, 2 x 2 Gauss points,
    clamped at x = 0; (u_x, u_y) interleaved per free node. Returns (A, coords of the free nodes
    ndarray((m, 2), float64))."""
    h = 1.0 / n
    lam, mu = E * nu / ((1 + nu) * (1 - 2 * nu)), E / (2 * (1 + nu))
    g = 1 / np.sqrt(3)
    sx, sy = np.array([-1, 1, 1, -1.0]), np.array([-1, -1, 1, 1.0])
    D = np.array([[lam + 2 * mu, lam, 0], [lam, lam + 2 * mu, 0], [0, 0, mu]])
    Ke = np.zeros((8, 8))
    for s in (-g, g):
        for t in (-g, g):
            dx, dy = 0.25 * sx * (1 + sy * t) * 2 / h, 0.25 * sy * (1 + sx * s) * 2 / h
            Bm = np.zeros((3, 8))
            Bm[0, 0::2], Bm[1, 1::2], Bm[2, 0::2], Bm[2, 1::2] = dx, dy, dy, dx
            Ke += Bm.T @ D @ Bm * h * h / 4
    rows, cols, vals = [], [], []
    for j in range(n):
        for i in range(n):
            nodes = [(i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)]
            dofs = [-1 if a == 0 else 2 * ((a - 1) + n * b) + p for a, b in nodes for p in (0, 1)]
            for a, da in enumerate(dofs):
                for c, dc in enumerate(dofs):
                    if da >= 0 and dc >= 0:
                        rows.append(da), cols.append(dc), vals.append(Ke[a, c])
    m = n * (n + 1)
    A = sp.csr_matrix((vals, (rows, cols)), shape=(2 * m, 2 * m))
    coords = np.array([(i * h, j * h) for j in range(n + 1) for i in range(1, n + 1)])
    return A, coords


def rigid_body_modes_2d(coords):
    """The 3 rigid-body modes of 2D elasticity at coords (m, 2), unknowns interleaved: (2 m, 3)
    (an independent check of elliptica.rigid_body_modes)."""
    c = coords - coords.mean(axis=0)
    m = len(c)
    B = np.zeros((2 * m, 3))
    B[0::2, 0] = 1
    B[1::2, 1] = 1
    B[0::2, 2], B[1::2, 2] = -c[:, 1], c[:, 0]
    return B
