#!/usr/bin/env python3
"""Ground plane on the FMM operator against the dense one: a sphere of radius 0.5 centred 0.7
above a rigid ground z = 0, plane wave d = (0.6, 0, -0.8), sound-hard, k = 5, GMRES 1e-8.

For each mesh: set-up, solve and total time and memory of the dense operator with the image
entries and of the FMM operator over the body and its image (fmm_tol 1e-7, BD), and the relative
L2 difference of their surface fields (where both run). The dense matrix of the largest mesh is
not built (16 N^2 bytes).

Usage: python3 bench/bem/ground_fmm.py [--threads 2] [--refinements 3,4,5] [--dense-max 5120]
       [--out bench/results/bem_ground_fmm]
"""
import argparse
import os
import platform
import time

import numpy as np

import elliptica as el


def diff_text(x):
    return "" if np.isnan(x) else f"{x:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--refinements", default="3,4,5")
    ap.add_argument("--dense-max", type=int, default=5120)
    ap.add_argument("--out", default="bench/results/bem_ground_fmm")
    args = ap.parse_args()
    k, d = 5.0, (0.6, 0.0, -0.8)
    rows = []
    for ref in (int(r) for r in args.refinements.split(",")):
        v, t = el.icosphere(ref, 0.5)
        mesh = (v + np.array([0.0, 0.0, 0.7]), t)
        n = t.shape[0]
        res = {}
        for op in ("dense", "fmm"):
            if op == "dense" and n > args.dense_max:
                continue
            t0 = time.perf_counter()
            plan = el.HelmholtzBEM(mesh, k, ground_plane=("z", 0.0, "rigid"), operator=op, dense_max=10**7,
                                   fmm_tol=1e-7, tol=1e-8, threads=args.threads)
            t1 = time.perf_counter()
            sol = plan.solve(d)
            t2 = time.perf_counter()
            res[op] = sol.u
            s = plan.setup
            rows.append(dict(elements=n, operator=op, setup_s=t1 - t0, solve_s=t2 - t1, total_s=t2 - t0,
                             iterations=sol.info.iterations,
                             mbytes=(s["operator_bytes"] + s["precond_bytes"]) / 2**20, diff=float("nan")))
            print(rows[-1], flush=True)
        if "dense" in res:
            rows[-1]["diff"] = float(np.linalg.norm(res["fmm"] - res["dense"]) / np.linalg.norm(res["dense"]))
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    lines = ["# Ground plane: the FMM operator (body + image) against the dense operator with images", "",
             f"CPU: {cpu}; {args.threads} threads; load average {os.getloadavg()[0]:.2f}", "",
             f"Command: `python3 bench/bem/ground_fmm.py --threads {args.threads} --refinements {args.refinements} "
             f"--dense-max {args.dense_max}`", "",
             "Sphere r = 0.5 centred 0.7 above a rigid ground z = 0, sound-hard, k = 5, plane wave (0.6, 0, -0.8), "
             "GMRES 1e-8, BD; FMM tolerance 1e-7.", "",
             "| elements | operator | set-up (s) | solve (s) | total (s) | GMRES its | operator + BD memory (MiB) | "
             "surface field vs dense |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['elements']} | {r['operator']} | {r['setup_s']:.2f} | {r['solve_s']:.2f} | {r['total_s']:.2f} | "
                     f"{r['iterations']} | {r['mbytes']:.0f} | {diff_text(r['diff'])} |")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
