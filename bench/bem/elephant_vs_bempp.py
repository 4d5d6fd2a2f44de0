#!/usr/bin/env python3
"""A real body: sound-soft scattering by CGAL's elephant (data/meshes/elephant.off of CGAL 5.5,
Debian package libcgal-demo: 2775 vertices, 5558 triangles, about 0.72 x 1 x 0.6), flat against
curved elements, against Bempp-cl, side by side in one run on the same machine.

The body. CGAL's elephant is a flat triangulation whose vertices sample a smooth surface. Two
smooth surfaces can be put through it (--surface):
- loop (the default): the Loop subdivision limit surface of CGAL's mesh (C^2 except at its
  extraordinary vertices, C^1 there), a smoothed elephant (1.2% less volume). C_L =
  elliptica.loop_surface(elephant, levels=L) for L = 0, 1, 2 (5558, 22232, 88928 elements) puts
  every corner and midside node on that one surface, so the curved sequence converges to it.
- pn: the surface that `elliptica.curve_mesh` (PN-triangle midside nodes from the vertex normals,
  crease angle 45 degrees) puts through CGAL's vertices, C0 = curve_mesh(elephant), C1 =
  refine_mesh(C0), C2 = refine_mesh(C1). That surface has a normal jump at each of the coarse
  mesh's edges, which holds the observed order below 1 (the study of stop 46).
The flat meshes F0, F1, F2 are the triangles of C0, C1, C2 without their midside nodes:
polyhedra inscribed in the surface, as an STL export at finer and finer resolution would give
(with pn, F0 is CGAL's elephant itself).

The problem: plane wave e^{ik d.x}, d = (1, 0, 0),
k = 5 (k x length = 5, 17 flat elements per wavelength on F0), sound-soft (u = 0). Quantity: the
far field u_inf at 200 directions (a Fibonacci sphere); error: relative discrete L2 against the
reference, the Richardson extrapolation of the curved C1 and C2 far fields for O(h^2),
u_ref = u_C2 + (u_C2 - u_C1) / (2^p - 1), p the order observed from the differences of the three
curved far fields (clamped to [1, 2]; the estimated error of C2 itself is printed). The far fields
are saved to OUT_far_fields.npz.

elliptica: Burton-Miller collocation (P0, default coupling), FMM operator (fmm_tol 1e-7) + BD
preconditioner, GMRES 1e-8. Bempp-cl 0.4.2: the combined sound-soft formulation of its examples,
(1/2 I + K' - i k S) phi = du_inc/dn - i k u_inc, Galerkin with P1 (continuous piecewise linear)
on the flat mesh, dense numba assembler (its FMM needs exafmm-t, not on PyPI), GMRES 1e-8, far
field u_inf = -(far-field single layer) phi. Bempp runs on F0 only: its dense assembly of F1
(11106 P1 unknowns) would take longer than the rest of the study together on two cores and 2 x
2 GB of matrices. Bempp's numba JIT warm-up is excluded (it is reported). A self-check first
solves the unit sphere (320 elements) with both and compares with the Mie series, which fixes
the far-field normalisation of both harnesses.

Usage:
    bash bench/bem/get_cgal_elephant.sh /tmp/elephant.off
    python3 bench/bem/elephant_vs_bempp.py --mesh /tmp/elephant.off --out bench/results/bem_elephant_vs_bempp \
        [--threads 2] [--k 5] [--bempp-python /tmp/bvenv/bin/python]
Output: CSV and Markdown (mesh, elements, unknowns, far-field error, set-up, solve and total time,
GMRES iterations), a PNG (error against time).
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np


def fibonacci_sphere(n):
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    phi = np.pi * (1 + 5 ** 0.5) * i
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def mie_soft_far(k, cos_theta, terms=40):
    import scipy.special as sp
    from numpy.polynomial.legendre import legval
    s = 0
    for n in range(terms):
        h = sp.spherical_jn(n, k) + 1j * sp.spherical_yn(n, k)
        c = np.zeros(n + 1)
        c[n] = 1
        s = s + (2 * n + 1) * (-sp.spherical_jn(n, k) / h) * legval(cos_theta, c)
    return -1j / k * s


def meshes(path, surface):
    import elliptica as el
    flat = el.read_mesh(path)
    if surface == "loop":  # C_L: the Loop limit surface of the elephant at L levels (5558 x 4^L elements)
        c0, c1, c2 = (el.loop_surface(flat, levels=lv) for lv in (0, 1, 2))
    else:  # the PN-triangle surface through CGAL's vertices, refined on its own maps
        c0 = el.curve_mesh(flat)
        c1 = el.refine_mesh(c0)
        c2 = el.refine_mesh(c1)
    return {"C0": c0, "C1": c1, "C2": c2, "F0": c0[:2], "F1": c1[:2], "F2": c2[:2]}


def run_ours(args):
    import elliptica as el
    dirs = fibonacci_sphere(args.directions)
    rows = []
    # self-check on the unit sphere
    sph = el.icosphere(2, order=2)
    p = el.HelmholtzBEM(sph, 2.0, bc="dirichlet", tol=1e-10, operator="dense", threads=args.threads)
    u = p.solve((1, 0, 0)).far_field(dirs)
    ref = mie_soft_far(2.0, dirs[:, 0])
    check = float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
    print(f"ours: unit-sphere self-check (curved, 320 elements, ka 2): far-field error {check:.2e}", file=sys.stderr)
    ms = meshes(args.mesh, args.surface)
    far = {}
    for name in args.ours.split(","):
        t0 = time.perf_counter()
        plan = el.HelmholtzBEM(ms[name], args.k, bc="dirichlet", tol=1e-8, operator="fmm", fmm_tol=1e-7,
                               threads=args.threads)
        t1 = time.perf_counter()
        sol = plan.solve((1, 0, 0))
        t2 = time.perf_counter()
        far[name] = sol.far_field(dirs)
        rows.append(dict(library="elliptica", mesh=name, elements=int(ms[name][1].shape[0]),
                         unknowns=int(ms[name][1].shape[0]),
                         space="P0 collocation, " + ("curved 6-node" if name[0] == "C" else "flat"),
                         setup_s=t1 - t0, solve_s=t2 - t1, total_s=t2 - t0, iterations=int(sol.info["iterations"]),
                         jit_s=0.0, check=check))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows, {k: v.tolist() for k, v in far.items()}


def run_bempp(args):
    import bempp_cl.api as bempp
    import elliptica as el
    dirs = fibonacci_sphere(args.directions)
    k = args.k

    def solve(v, t, kk):
        t0 = time.perf_counter()
        grid = bempp.Grid(np.ascontiguousarray(v.T), np.ascontiguousarray(t.T.astype(np.uint32)))
        space = bempp.function_space(grid, "P", 1)
        ident = bempp.operators.boundary.sparse.identity(space, space, space)
        adlp = bempp.operators.boundary.helmholtz.adjoint_double_layer(space, space, space, kk,
                                                                      assembler="default_nonlocal")
        slp = bempp.operators.boundary.helmholtz.single_layer(space, space, space, kk, assembler="default_nonlocal")
        op = 0.5 * ident + adlp - 1j * kk * slp

        @bempp.complex_callable
        def data(x, n, domain_index, res):
            ui = np.exp(1j * kk * x[0])
            res[0] = 1j * kk * n[0] * ui - 1j * kk * ui

        rhs = bempp.GridFunction(space, fun=data)
        op.weak_form()
        t1 = time.perf_counter()
        sol, _, its = bempp.linalg.gmres(op, rhs, tol=1e-8, return_iteration_count=True)
        t2 = time.perf_counter()
        ff = bempp.operators.far_field.helmholtz.single_layer(space, np.ascontiguousarray(dirs.T), kk)
        u = -(ff * sol).ravel()
        return u, t1 - t0, t2 - t1, int(its), int(space.global_dof_count), int(grid.number_of_elements)

    sv, st = el.icosphere(2)
    t0 = time.perf_counter()
    solve(sv, st, 2.0)  # numba JIT warm-up (twice: some kernels compile on the second assembly)
    u, *_ = solve(sv, st, 2.0)
    jit = time.perf_counter() - t0
    ref = mie_soft_far(2.0, dirs[:, 0])
    check = float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
    print(f"bempp: unit-sphere self-check (P1, 320 elements, ka 2): far-field error {check:.2e}; JIT {jit:.0f} s",
          file=sys.stderr)
    ms = meshes(args.mesh, args.surface)
    rows, far = [], {}
    for name in args.bempp.split(","):
        v, t = ms[name]
        u, ts, tv, its, dofs, ne = solve(v, t, k)
        far[name] = u
        rows.append(dict(library="bempp-cl", mesh=name, elements=ne, unknowns=dofs, space="P1 Galerkin, flat",
                         setup_s=ts, solve_s=tv, total_s=ts + tv, iterations=its, jit_s=jit, check=check))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows, {k2: v2.tolist() for k2, v2 in far.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mesh", required=True, help="CGAL's elephant.off (bench/bem/get_cgal_elephant.sh)")
    ap.add_argument("--out", default="bench/results/bem_elephant_vs_bempp")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=float, default=5.0)
    ap.add_argument("--directions", type=int, default=200)
    ap.add_argument("--ours", default="F0,F1,F2,C0,C1,C2")
    ap.add_argument("--bempp", default="F0")
    ap.add_argument("--surface", choices=["pn", "loop"], default="loop",
                    help="the smooth surface: loop (the Loop subdivision limit surface of CGAL's mesh, smooth: "
                         "elliptica.loop_surface) or pn (PN triangles through CGAL's vertices, normal kinks at "
                         "the coarse edges: elliptica.curve_mesh + refine_mesh)")
    ap.add_argument("--bempp-python", default=sys.executable,
                    help="a Python with bempp-cl 0.4.2 and elliptica (e.g. a venv with system site packages)")
    ap.add_argument("--child", choices=["ours", "bempp"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        rows, far = run_ours(args) if args.child == "ours" else run_bempp(args)
        print(json.dumps(dict(rows=rows, far={k: [[z.real, z.imag] for z in v] for k, v in far.items()})))
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), NUMBA_NUM_THREADS=str(args.threads))
    rows, far = [], {}
    for lib, py in [("ours", sys.executable), ("bempp", args.bempp_python)]:
        cmd = [py, __file__, "--child", lib, "--mesh", args.mesh, "--k", str(args.k), "--threads", str(args.threads),
               "--directions", str(args.directions), "--ours", args.ours, "--bempp", args.bempp,
               "--surface", args.surface]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"{lib} run failed with exit code {p.returncode}")
        out = json.loads(p.stdout.strip().splitlines()[-1])
        for r in out["rows"]:
            r["key"] = ("ours " if lib == "ours" else "bempp ") + r["mesh"]
        rows += out["rows"]
        for name, v in out["far"].items():
            far[("ours " if lib == "ours" else "bempp ") + name] = np.array([a + 1j * b for a, b in v])
    np.savez(args.out + "_far_fields.npz", directions=fibonacci_sphere(args.directions),
             **{k.replace(" ", "_"): v for k, v in far.items()})
    c0, c1, c2 = far["ours C0"], far["ours C1"], far["ours C2"]
    # the observed order of the curved sequence, from its differences (independent of any reference)
    d01, d12 = float(np.linalg.norm(c1 - c0)), float(np.linalg.norm(c2 - c1))
    order = float(np.log2(d01 / d12))
    f0, f1, f2 = far["ours F0"], far["ours F1"], far["ours F2"]
    order_flat = float(np.log2(np.linalg.norm(f1 - f0) / np.linalg.norm(f2 - f1)))
    # Richardson with the observed order (at least 1, at most 2)
    p_r = min(2.0, max(1.0, order))
    ref = c2 + (c2 - c1) / (2 ** p_r - 1)
    ref_err = float(np.linalg.norm(c2 - c1) / (2 ** p_r - 1) / np.linalg.norm(ref))
    for r in rows:
        r["error"] = float(np.linalg.norm(far[r["key"]] - ref) / np.linalg.norm(ref))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    keys = ["library", "mesh", "elements", "unknowns", "space", "error", "setup_s", "solve_s", "total_s",
            "iterations", "jit_s"]
    with open(args.out + ".csv.tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in keys})
    os.replace(args.out + ".csv.tmp", args.out + ".csv")
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    jit = next((r["jit_s"] for r in rows if r["library"] == "bempp-cl"), 0.0)
    checks = {r["library"]: r["check"] for r in rows}
    lines = [f"# CGAL's elephant, sound-soft, k = {args.k:g}: far-field error against time", "",
             f"CPU: {cpu}; {args.threads} threads; load average {os.getloadavg()[0]:.2f}", "",
             f"Command: `python3 bench/bem/elephant_vs_bempp.py --mesh {args.mesh} --out {args.out} "
             f"--threads {args.threads} --k {args.k:g} --ours {args.ours} --bempp {args.bempp} --surface {args.surface}`", "",
             f"Surface: {'the Loop subdivision limit surface of CGAL elephant (loop_surface, levels 0, 1, 2)' if args.surface == 'loop' else 'PN triangles through CGAL elephant vertices (curve_mesh, refine_mesh)'}; "
             "F meshes: the same triangles without midside nodes.", "",
             f"Observed orders from the differences of successive far fields (no reference needed): curved "
             f"log2(|C1 - C0| / |C2 - C1|) = {order:.2f}, flat {order_flat:.2f}.", "",
             f"Reference: Richardson extrapolation of the curved C1 / C2 far fields with order {p_r:.2f}; "
             f"estimated error of C2 {ref_err:.1e}. Self-checks on the unit sphere (320 elements, ka 2, against Mie): elliptica curved "
             f"{checks.get('elliptica', float('nan')):.1e}, Bempp-cl P1 {checks.get('bempp-cl', float('nan')):.1e}. "
             f"Bempp-cl numba JIT warm-up (excluded): {jit:.0f} s.", "",
             "| library | mesh | elements | unknowns | discretisation | far-field error | set-up (s) | solve (s) | "
             "total (s) | GMRES its |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['library']} | {r['mesh']} | {r['elements']} | {r['unknowns']} | {r['space']} | "
                     f"{r['error']:.2e} | {r['setup_s']:.2f} | {r['solve_s']:.2f} | {r['total_s']:.2f} | "
                     f"{r['iterations']} |")
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for lab, sel, mk in [("elliptica flat P0", lambda r: r["library"] == "elliptica" and r["mesh"][0] == "F", "o-"),
                             ("elliptica curved P0", lambda r: r["library"] == "elliptica" and r["mesh"][0] == "C", "s-"),
                             ("Bempp-cl P1", lambda r: r["library"] == "bempp-cl", "^")]:
            pts = [(r["total_s"], r["error"]) for r in rows if sel(r) and r["mesh"] != "C2"]
            if pts:
                ax.loglog(*zip(*pts), mk, label=lab)
        ax.set_xlabel("set-up + solve time (s)")
        ax.set_ylabel("far-field error")
        ax.set_title(f"CGAL elephant ({args.surface} surface), sound-soft, k = {args.k:g}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out + ".png", dpi=120)
    except ImportError:
        print("matplotlib missing: no PNG", file=sys.stderr)


if __name__ == "__main__":
    main()
