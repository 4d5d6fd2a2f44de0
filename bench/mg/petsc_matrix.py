"""PETSc peer of bench/mg/amg_users.py: CG to a relative residual on an assembled matrix read from
PETSc binary files, preconditioned by GAMG (smoothed aggregation) or hypre's BoomerAMG.

Run with the interpreter that has petsc4py (Debian's python3-petsc4py, /usr/bin/python3):
  PYTHONPATH=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real/lib/python3/dist-packages \\
    /usr/bin/python3 bench/mg/petsc_matrix.py --matrix A.petsc --rhs b.petsc --pc gamg [--near-null B.petsc --block-size 2]

CG runs with the unpreconditioned residual norm (-ksp_norm_type unpreconditioned), so that
rtol means ||b - A x|| <= rtol ||b|| as for the other solvers. GAMG gets the near-null space
(MatSetNearNullSpace) and the block size when given; BoomerAMG gets the block size (nodal
systems: -pc_hypre_boomeramg_nodal_coarsen 4 -pc_hypre_boomeramg_vec_interp_variant 2 with the
near-null space when given). A singular (pure-Neumann) matrix gets the constant null space
(MatSetNullSpace). Prints one JSON line: setup_s, solve_s, iterations, relres (recomputed),
reason.
--opt KEY=VALUE (repeatable) adds PETSc options (without the leading dash), e.g.
--opt pc_hypre_boomeramg_coarsen_type=HMIS; --view prints KSPView to stderr (to check which
settings the solver really ran with).
"""
import argparse
import json
import sys
import time

import petsc4py

petsc4py.init(sys.argv[:1])
from petsc4py import PETSc  # noqa: E402


def load_mat(path):
    v = PETSc.Viewer().createBinary(path, "r")
    A = PETSc.Mat().create()
    A.setType(PETSc.Mat.Type.AIJ)
    A.load(v)
    return A


def load_vec(path):
    v = PETSc.Viewer().createBinary(path, "r")
    x = PETSc.Vec().create()
    x.load(v)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--rhs", required=True)
    ap.add_argument("--near-null", nargs="*", default=[], help="PETSc binary vectors of the near-null space")
    ap.add_argument("--block-size", type=int, default=1)
    ap.add_argument("--pc", choices=["gamg", "hypre"], required=True)
    ap.add_argument("--singular", action="store_true", help="constant null space (pure Neumann)")
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--maxiter", type=int, default=1000)
    ap.add_argument("--opt", action="append", default=[], help="extra PETSc option KEY=VALUE (no leading dash)")
    ap.add_argument("--view", action="store_true", help="KSPView to stderr after the solve")
    a = ap.parse_args()
    A = load_mat(a.matrix)
    b = load_vec(a.rhs)
    if a.block_size > 1:
        A.setBlockSize(a.block_size)
    if a.near_null:
        vecs = [load_vec(p) for p in a.near_null]
        # orthonormalise (MatNullSpace needs orthonormal vectors)
        Q = []
        for v in vecs:
            w = v.copy()
            for q in Q:
                w.axpy(-w.dot(q), q)
            w.scale(1.0 / w.norm())
            Q.append(w)
        A.setNearNullSpace(PETSc.NullSpace().create(vectors=Q))
    if a.singular:
        A.setNullSpace(PETSc.NullSpace().create(constant=True))
    opts = PETSc.Options()
    if a.pc == "hypre":
        opts["pc_hypre_type"] = "boomeramg"
        if a.block_size > 1:
            opts["pc_hypre_boomeramg_nodal_coarsen"] = 4
            opts["pc_hypre_boomeramg_vec_interp_variant"] = 2
    for kv in a.opt:
        k, _, v = kv.partition("=")
        opts[k.lstrip("-")] = v
    ksp = PETSc.KSP().create()
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=a.tol, atol=0.0, max_it=a.maxiter)
    ksp.getPC().setType(a.pc)
    ksp.setFromOptions()
    x = b.duplicate()
    x.set(0.0)
    t0 = time.perf_counter()
    ksp.setUp()
    t1 = time.perf_counter()
    ksp.solve(b, x)
    t2 = time.perf_counter()
    if a.view:
        ksp.view(PETSc.Viewer.STDERR())
    r = b.duplicate()
    A.mult(x, r)
    r.aypx(-1.0, b)
    print(json.dumps({"setup_s": t1 - t0, "solve_s": t2 - t1, "iterations": ksp.getIterationNumber(),
                      "relres": r.norm() / b.norm(), "reason": int(ksp.getConvergedReason())}))


if __name__ == "__main__":
    main()
