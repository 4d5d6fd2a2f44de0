#!/usr/bin/env python3
"""Time to reach a given surface-field error on the unit sphere (default ka = 5, 1%): sound-hard
scattering (--problem hard) or radiation by the pulsating / oscillating sphere (--problem
pulsating / oscillating; references u = 1/(ik - 1) and h1(k) cos theta / (k h1'(k)) for unit
Neumann data):
elliptica's Burton-Miller collocation BEM (P0, FMM or dense operator + BD preconditioner) against
Bempp-cl's Burton-Miller formulation (P1 Galerkin: Bempp cannot pair its hypersingular operator
with piecewise-constant spaces), side by side in one run on the same machine.

Problem: incident plane wave e^{ikz}, sound-hard sphere of radius 1, total surface field u.
Reference: the Mie series u(theta) = sum_n i^n (2n+1) i / ((ka)^2 h_n'(ka)) P_n(cos theta)
(h_n = j_n + i y_n; Wronskian form of j_n - j_n' h_n / h_n'), evaluated with scipy.special.
Error: relative discrete L2 error of the surface field, at the element centroids (elliptica, P0)
or at the vertices (Bempp, P1 coefficients), each against the Mie series at those points.

Bempp-cl side (its Burton-Miller example, bempp-cl 0.4): P1 space on bempp's regular_sphere(r),
A = 1/2 I - K + eta W, rhs = u_inc + eta du_inc/dn, eta = i/k (Bempp's W = -d/dn of the double
layer, so this is the same combined equation as ours, eq. (4) of seed 001 with alpha = i/k); GMRES
(bempp.api.linalg.gmres) to the same relative tolerance. Assembler: "default_nonlocal" (dense,
numba) -- its FMM assembler needs exafmm-t, which is not on PyPI. Numba compiles its kernels on
the first assembly: a warm-up solve on the coarsest mesh is run first and its time reported
separately ("jit"; two warm-up solves, since some kernels compiled again on the second one).

Each library runs in its own subprocess with the same thread count (OMP_NUM_THREADS /
NUMBA_NUM_THREADS). Output: CSV and Markdown (per mesh: elements, unknowns, error, set-up,
solve, total time, GMRES iterations) plus, per library, the first mesh of its sequence reaching
the target error and the time it took; the ratio elliptica / Bempp of those times.

Usage:
    python3 bench/bem/vs_bempp.py --out bench/results/bem_vs_bempp [--threads 2] [--k 5]
        [--target 0.01] [--tol 1e-5] [--ours-refinements 3,4,5] [--bempp-refinements 3,4,5]
        [--operator dense,fmm] [--ours-order 1|2 (2: curved 6-node elements)]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy as np


def mie_surface_hard(k, a, cos_theta, nmax=None):
    from scipy import special as sp
    ka = k * a
    nmax = nmax or int(ka + 4 * ka ** (1 / 3) + 20)
    total = np.zeros_like(cos_theta, dtype=complex)
    for n in range(nmax):
        hp = sp.spherical_jn(n, ka, True) + 1j * sp.spherical_yn(n, ka, True)
        total += (1j ** n) * (2 * n + 1) * (1j / (ka * ka * hp)) * sp.eval_legendre(n, cos_theta)
    return total


def radiation_surface(problem, k, cos_theta):
    """Surface pressure of the unit sphere for unit Neumann data: pulsating (du/dr = 1),
    u = 1 / (ik - 1); oscillating (du/dr = cos theta), u = h1(k) cos theta / (k h1'(k))."""
    from scipy import special as sp
    if problem == "pulsating":
        return np.full_like(cos_theta, 1.0 / (1j * k - 1), dtype=complex)
    h1 = sp.spherical_jn(1, k) + 1j * sp.spherical_yn(1, k)
    h1p = sp.spherical_jn(1, k, True) + 1j * sp.spherical_yn(1, k, True)
    return h1 / (k * h1p) * cos_theta


def reference(args, cos_theta):
    if args.problem == "hard":
        return mie_surface_hard(args.k, 1.0, cos_theta)
    return radiation_surface(args.problem, args.k, cos_theta)


def run_ours(args):
    import elliptica
    rows = []
    for r, op in [(r, op) for r in args.refinements for op in args.operator.split(",")]:
        t0 = time.perf_counter()
        mesh = elliptica.icosphere(r, order=args.ours_order)
        plan = elliptica.HelmholtzBEM(mesh, args.k, bc="neumann", tol=args.tol, operator=op,
                                      precond="bd", leaf=args.leaf)
        t1 = time.perf_counter()
        if args.problem == "hard":
            sol = plan.solve((0, 0, 1))
        else:  # radiation: Neumann data 1 or n_z (the rigid sphere translating along z)
            g = np.ones(plan.triangles.shape[0]) if args.problem == "pulsating" else plan.normals[:, 2]
            sol = plan.solve_radiation(g.astype(complex))
        u, info = sol.surface, sol.info
        t2 = time.perf_counter()
        c = plan.centroids
        ref = reference(args, c[:, 2] / np.linalg.norm(c, axis=1))
        err = float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
        rows.append(dict(library="elliptica", refinement=r, elements=len(u), unknowns=len(u),
                         space="P0 collocation" + (", curved 6-node" if args.ours_order == 2 else ""), operator=info["operator"], error=err, setup_s=t1 - t0,
                         solve_s=t2 - t1, total_s=t2 - t0, iterations=info["iterations"], jit_s=0.0))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def run_bempp(args):
    import bempp_cl.api as bempp
    k = args.k
    eta = 1j / k

    def solve(r):
        t0 = time.perf_counter()
        grid = bempp.shapes.regular_sphere(r)
        space = bempp.function_space(grid, "P", 1)
        ident = bempp.operators.boundary.sparse.identity(space, space, space)
        dlp = bempp.operators.boundary.helmholtz.double_layer(space, space, space, k, assembler="default_nonlocal")
        hyp = bempp.operators.boundary.helmholtz.hypersingular(space, space, space, k, assembler="default_nonlocal")
        op = 0.5 * ident - dlp + eta * hyp

        if args.problem == "hard":
            @bempp.complex_callable
            def data(x, n, domain_index, res):
                ui = np.exp(1j * k * x[2])
                res[0] = ui + eta * 1j * k * n[2] * ui

            rhs = bempp.GridFunction(space, fun=data)
        else:
            # radiation: (1/2 I - K + eta H) p = -(S + eta (1/2 I + K')) g, the same combination
            # as ours (Bempp's H = -W)
            pulsating = args.problem == "pulsating"

            @bempp.complex_callable
            def neumann(x, n, domain_index, res):
                res[0] = 1.0 if pulsating else n[2]

            g = bempp.GridFunction(space, fun=neumann)
            slp = bempp.operators.boundary.helmholtz.single_layer(space, space, space, k, assembler="default_nonlocal")
            adlp = bempp.operators.boundary.helmholtz.adjoint_double_layer(space, space, space, k,
                                                                          assembler="default_nonlocal")
            rhs = -1.0 * ((slp + eta * (0.5 * ident + adlp)) * g)
        op.weak_form()  # assemble now, so that the set-up and solve times separate
        t1 = time.perf_counter()
        sol, _, its = bempp.linalg.gmres(op, rhs, tol=args.tol, return_iteration_count=True)
        t2 = time.perf_counter()
        v = grid.vertices
        ref = reference(args, v[2] / np.linalg.norm(v, axis=0))
        err = float(np.linalg.norm(sol.coefficients - ref) / np.linalg.norm(ref))
        return dict(library="bempp-cl", refinement=r, elements=int(grid.number_of_elements),
                    unknowns=int(space.global_dof_count), space="P1 Galerkin", operator="dense (numba)",
                    error=err, setup_s=t1 - t0, solve_s=t2 - t1, total_s=t2 - t0, iterations=int(its))

    t0 = time.perf_counter()
    # numba JIT warm-up: some kernels were observed to compile only on the second assembly, so the
    # coarsest problem is solved twice before anything is timed
    solve(min(args.refinements))
    solve(min(args.refinements))
    jit = time.perf_counter() - t0
    rows = []
    for r in args.refinements:
        row = solve(r)
        row["jit_s"] = jit
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def child(args):
    rows = run_ours(args) if args.child == "ours" else run_bempp(args)
    print(json.dumps(rows))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench/results/bem_vs_bempp")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=float, default=5.0)
    ap.add_argument("--problem", choices=["hard", "pulsating", "oscillating"], default="hard",
                    help="sound-hard scattering of e^{ikz} (default), or radiation by the pulsating / "
                         "oscillating unit sphere (Neumann data 1 / n_z)")
    ap.add_argument("--target", type=float, default=0.01)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--operator", default="dense,fmm",
                    help="elliptica operators to run on every mesh (comma-separated: auto, dense, fmm)")
    ap.add_argument("--leaf", type=int, default=64)
    ap.add_argument("--ours-refinements", default="3,4,5")
    ap.add_argument("--ours-order", type=int, choices=[1, 2], default=1,
                    help="element order of our icospheres: 1 flat, 2 curved 6-node triangles")
    ap.add_argument("--bempp-refinements", default="3,4,5")
    ap.add_argument("--child", choices=["ours", "bempp"], help=argparse.SUPPRESS)
    ap.add_argument("--refinements", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.refinements = [int(x) for x in args.refinements.split(",")]
        return child(args)

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), NUMBA_NUM_THREADS=str(args.threads))
    rows = []
    for lib, refs in [("ours", args.ours_refinements), ("bempp", args.bempp_refinements)]:
        cmd = [sys.executable, __file__, "--child", lib, "--refinements", refs, "--k", str(args.k),
               "--tol", str(args.tol), "--operator", args.operator, "--leaf", str(args.leaf),
               "--problem", args.problem, "--ours-order", str(args.ours_order)]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"{lib} run failed with exit code {p.returncode}")
        rows += json.loads(p.stdout.strip().splitlines()[-1])

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    keys = ["library", "refinement", "elements", "unknowns", "space", "operator", "error", "setup_s", "solve_s",
            "total_s", "iterations", "jit_s"]
    tmp = args.out + ".csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in keys})
    os.replace(tmp, args.out + ".csv")

    first = {}
    for lib in ["elliptica", "bempp-cl"]:
        hit = [r for r in rows if r["library"] == lib and r["error"] <= args.target]
        first[lib] = min(hit, key=lambda r: r["total_s"]) if hit else None
    title = {"hard": "Sound-hard sphere", "pulsating": "Pulsating sphere (radiation)",
             "oscillating": "Oscillating sphere (radiation)"}[args.problem]
    import platform
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    lines = [f"# {title}, ka = {args.k:g}: time to {100 * args.target:g}% surface-field error",
             "", f"CPU: {cpu}; load average {os.getloadavg()[0]:.2f}",
             "", f"Command: `python3 bench/bem/vs_bempp.py --problem {args.problem} --out {args.out} "
             f"--threads {args.threads} --k {args.k:g} "
             f"--target {args.target:g} --tol {args.tol:g} --ours-refinements {args.ours_refinements} "
             f"--bempp-refinements {args.bempp_refinements} --operator {args.operator} --ours-order {args.ours_order}`", "",
             f"Threads: {args.threads}; GMRES relative tolerance {args.tol:g} for both. Bempp-cl numba JIT warm-up "
             "(excluded from the times): " + (f"{rows[-1]['jit_s']:.1f} s" if rows else "-"), "",
             "| library | mesh refinement | elements | unknowns | discretisation | operator | surface error | "
             "set-up (s) | solve (s) | total (s) | GMRES its |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['library']} | {r['refinement']} | {r['elements']} | {r['unknowns']} | {r['space']} | "
                     f"{r['operator']} | {r['error']:.2e} | {r['setup_s']:.2f} | {r['solve_s']:.2f} | "
                     f"{r['total_s']:.2f} | {r['iterations']} |")
    lines.append("")
    for lib, r in first.items():
        lines.append(f"- {lib}: " + (f"first below {100 * args.target:g}%: {r['unknowns']} unknowns, error "
                                     f"{r['error']:.2e}, {r['total_s']:.2f} s" if r else "target not reached"))
    if first["elliptica"] and first["bempp-cl"]:
        lines.append(f"- ratio elliptica / Bempp-cl (time to {100 * args.target:g}%): "
                     f"{first['elliptica']['total_s'] / first['bempp-cl']['total_s']:.3f}")
    tmp = args.out + ".md.tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, args.out + ".md")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
