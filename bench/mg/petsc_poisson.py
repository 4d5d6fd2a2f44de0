"""PETSc peer for the multigrid benchmark: FD Poisson on a DMDA, solved with CG preconditioned by
geometric PCMG (Galerkin coarse operators, Chebyshev/Jacobi smoothing) or by GAMG.

Run with the interpreter that has petsc4py (Debian's python3-petsc4py: /usr/bin/python3), e.g.
  PYTHONPATH=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real/lib/python3/dist-packages \
    mpiexec -n 2 /usr/bin/python3 bench/mg/petsc_poisson.py --dim 2 --n 1024 --rhs b.npy --pc mg

The grid has n + 1 points per axis including the Dirichlet boundary (DMDA coarsening needs
M = 2 (M_c - 1) + 1); boundary rows are scaled identity rows with b = 0 there, so the interior
unknowns, matrix rows and right-hand side are those of elliptica's problem (the same b.npy).
Prints one JSON line: setup_s, solve_s, iterations, relres (true ||b - A x|| / ||b||), levels.
"""
import argparse
import json
import sys
import time

import numpy as np
import petsc4py

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402


def assemble(da, dim, n, lengths):
    A = da.createMatrix()
    h = [L / n for L in lengths]
    w = [1.0 / hh**2 for hh in h]
    diag = 2.0 * sum(w)
    (xs, xe), (ys, ye), *rest = da.getRanges()
    zs, ze = rest[0] if rest else (0, 1)
    row = PETSc.Mat.Stencil()
    col = PETSc.Mat.Stencil()
    for k in range(zs, ze):
        for j in range(ys, ye):
            for i in range(xs, xe):
                idx = (i, j, k)[:dim]
                row.index = idx
                bnd = any(c == 0 or c == n for c in idx)
                if bnd:
                    A.setValueStencil(row, row, diag)
                    continue
                A.setValueStencil(row, row, diag)
                for ax in range(dim):
                    for s in (-1, 1):
                        c = list(idx)
                        c[ax] += s
                        if 0 < c[ax] < n:
                            col.index = tuple(c)
                            A.setValueStencil(row, col, -w[ax])
    A.assemble()
    return A


def assemble_fast(da, dim, n, lengths):
    """Same matrix as assemble(), built with numpy and one MatSetValuesLocal per row in C
    (setValuesLocalCSR with the DMDA's ghosted local numbering): the Python loop above takes
    tens of seconds at 127^3 unknowns. assemble() is kept as the readable reference
    (--slow-assembly)."""
    A = da.createMatrix()
    h = [L / n for L in lengths]
    w = [1.0 / hh**2 for hh in h]
    diag = 2.0 * sum(w)
    ranges = list(da.getRanges())
    gs, gm = da.getGhostCorners()
    gs, gm = list(gs)[:dim], list(gm)[:dim]
    axes = [np.arange(r0, r1) for r0, r1 in ranges]  # x, y, z
    grids = np.meshgrid(*reversed(axes), indexing="ij")  # slowest first -> ravel is x fastest
    coords = [g.ravel() for g in reversed(grids)]  # coords[ax] for ax = x, y, z
    npts = coords[0].size

    def local(cs):
        idx = np.zeros(npts, dtype=np.int64)
        stride = 1
        for ax in range(dim):
            idx += (cs[ax] - gs[ax]) * stride
            stride *= gm[ax]
        return idx

    bnd = np.zeros(npts, dtype=bool)
    for c in coords:
        bnd |= (c == 0) | (c == n)
    cols = [local(coords)]
    vals = [np.full(npts, diag)]
    mask = [np.ones(npts, dtype=bool)]
    for ax in range(dim):
        for s in (-1, 1):
            cs = list(coords)
            cs[ax] = coords[ax] + s
            ok = (~bnd) & (cs[ax] > 0) & (cs[ax] < n)
            cols.append(np.where(ok, local(cs), 0))
            vals.append(np.full(npts, -w[ax]))
            mask.append(ok)
    cols, vals, mask = (np.stack(v, axis=1) for v in (cols, vals, mask))
    # setValuesLocalCSR inserts CSR row r as ghosted local row r, so lay the CSR over the whole
    # ghosted box (ghost rows empty): one MatSetValuesLocal per row, all in C.
    counts = np.zeros(int(np.prod(gm)), dtype=np.int64)
    counts[local(coords)] = mask.sum(axis=1)
    indptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    order = np.argsort(local(coords), kind="stable")  # rows in ghosted-local order (already sorted)
    it = PETSc.IntType
    A.setValuesLocalCSR(indptr.astype(it), cols[order][mask[order]].astype(it),
                        vals[order][mask[order]])
    A.assemble()
    return A


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--lx", type=float, default=1.0)
    ap.add_argument("--rhs", required=True, help="interior right-hand side, (n-1)^dim, x fastest")
    ap.add_argument("--pc", choices=["mg", "gamg"], default="mg")
    ap.add_argument("--cheb-kind", default=None,
                    help="first|fourth|opt_fourth: -mg_levels_ksp_chebyshev_kind, PETSc >= 3.19 only "
                         "(3.18 has no such option: it would be silently ignored, so it is refused)")
    ap.add_argument("--order", type=int, default=2,
                    help="Chebyshev steps per smoothing; 0: leave the level smoothers at PETSc's defaults")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--slow-assembly", action="store_true", help="reference Python-loop assembly")
    ap.add_argument("--save-x", default=None, help="write the interior solution (.npy, x fastest) for checks")
    a = ap.parse_args()
    if a.cheb_kind is not None and PETSc.Sys.getVersion() < (3, 19, 0):
        sys.exit("--cheb-kind needs PETSc >= 3.19 (KSPChebyshevSetKind); this is %d.%d.%d"
                 % PETSc.Sys.getVersion())
    n, dim = a.n, a.dim
    lengths = [a.lx] + [1.0] * (dim - 1)
    sizes = (n + 1,) * dim
    da = PETSc.DMDA().create(sizes, dof=1, stencil_width=1, stencil_type=PETSc.DMDA.StencilType.STAR)
    da.setUp()
    A = (assemble if a.slow_assembly else assemble_fast)(da, dim, n, lengths)
    b = da.createGlobalVec()
    interior = np.load(a.rhs).reshape((n - 1,) * dim)  # C order, x fastest: [k][j][i]
    # global natural ordering, x fastest: array index [k][j][i]
    ranges = da.getRanges()
    barr = da.getVecArray(b)
    sl = tuple(slice(r0, r1) for r0, r1 in ranges)
    full = np.zeros(tuple(reversed(sizes)))
    full[tuple([slice(1, n)] * dim)] = interior
    barr[sl] = full.T[sl]  # DMDA arrays are indexed [i, j, k]
    del barr
    x = da.createGlobalVec()

    opts = PETSc.Options()
    ksp = PETSc.KSP().create()
    ksp.setDM(da)
    ksp.setDMActive(False)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=a.tol, atol=0.0, max_it=500)
    if a.pc == "mg":
        levels = int(round(np.log2(n)))  # down to 3 points per axis = 1 interior unknown
        opts["pc_type"] = "mg"
        opts["pc_mg_levels"] = levels
        opts["pc_mg_galerkin"] = "both"
        opts["mg_levels_ksp_type"] = "chebyshev"
        opts["mg_levels_ksp_max_it"] = a.order
        opts["mg_levels_pc_type"] = "jacobi"
        if a.cheb_kind is not None:
            opts["mg_levels_ksp_chebyshev_kind"] = a.cheb_kind
        opts["mg_coarse_pc_type"] = "redundant"
        opts["mg_coarse_redundant_pc_type"] = "lu"
    else:
        opts["pc_type"] = "gamg"
        opts["pc_gamg_type"] = "agg"
        if a.order > 0:
            opts["mg_levels_ksp_type"] = "chebyshev"
            opts["mg_levels_pc_type"] = "jacobi"
            opts["mg_levels_ksp_max_it"] = a.order
        if a.cheb_kind is not None:
            opts["mg_levels_ksp_chebyshev_kind"] = a.cheb_kind
    ksp.setFromOptions()
    comm = PETSc.COMM_WORLD
    comm.barrier()
    t0 = time.perf_counter()
    ksp.setUp()
    comm.barrier()
    t1 = time.perf_counter()
    ksp.solve(b, x)
    comm.barrier()
    t2 = time.perf_counter()
    r = b.duplicate()
    A.mult(x, r)
    r.aypx(-1.0, b)
    relres = r.norm() / b.norm()
    if a.save_x:
        nat = da.createNaturalVec()
        da.globalToNatural(x, nat)
        sc, x0 = PETSc.Scatter.toZero(nat)
        sc.scatter(nat, x0, addv=PETSc.InsertMode.INSERT, mode=PETSc.ScatterMode.FORWARD)
        if comm.getRank() == 0:
            full_x = x0.getArray().reshape(tuple(reversed(sizes)))  # [k][j][i], x fastest
            np.save(a.save_x, full_x[tuple([slice(1, n)] * dim)].ravel())
    nlev = ksp.getPC().getMGLevels() if a.pc == "mg" else -1
    if comm.getRank() == 0:
        print(json.dumps({"setup_s": t1 - t0, "solve_s": t2 - t1, "iterations": ksp.getIterationNumber(),
                          "relres": relres, "levels": nlev, "converged": ksp.getConvergedReason() > 0,
                          "ranks": comm.getSize()}))


if __name__ == "__main__":
    main()
