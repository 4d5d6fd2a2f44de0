#!/usr/bin/env python3
"""Set-up and solve times and memory of `elliptica bem` against the number of elements (sound-hard
unit sphere, plane wave, default ka = 5), on the FMM operator with the block-diagonal
preconditioner (and the dense operator up to --dense-upto elements for comparison).

Each configuration runs the CLI in a subprocess (so that its peak resident memory can be read
from the kernel: ru_maxrss of the child) and reads the CLI's summary.json: operator set-up (FMM
part and near field), BD set-up, GMRES iterations and time, matvec time, stored near-field and BD
bytes. The surface error against the Mie series (the same formula as bench/bem/vs_bempp.py) is
computed from surface.npy at the centroids.

Output: <out>.csv, <out>.md and <out>.png (times and memory vs N, log-log).

Usage:
    python3 bench/bem/scaling.py --out bench/results/bem_scaling [--cli build/apps/elliptica]
        [--threads 2] [--k 5] [--meshes ico:3,ico:4,ico:5,ico:6,octa:7] [--dense-upto 5120] [--tol 1e-5]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_bempp import mie_surface_hard  # noqa: E402


def mesh_of(spec):
    """(CLI --mesh spec, vertices, triangles) for "ico:R" / "octa:R" (unit sphere, R refinements)."""
    import elliptica
    kind, r = spec.split(":")
    if kind == "ico":
        return f"sphere:1,{r}", *elliptica.icosphere(int(r))
    if kind == "octa":
        return f"octasphere:1,{r}", *elliptica.octasphere(int(r))
    raise SystemExit(f"unknown mesh spec {spec!r} (ico:R or octa:R)")


def run_one(cli, spec, op, args):
    mesh_spec, v, t = mesh_of(spec)
    with tempfile.TemporaryDirectory() as d:
        cmd = [cli, "bem", "--mesh", mesh_spec, "--k", str(args.k), "--operator", op, "--precond", "bd",
               "--tol", str(args.tol), "--leaf", str(args.leaf), "--threads", str(args.threads), "--out", d,
               "--no-plots", "--far-field-points", "100", "--quiet"]
        print("running:", " ".join(cmd), file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        with open(os.path.join(d, "log.txt"), "w") as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            _, status, ru = os.wait4(p.pid, 0)  # this child's own rusage: ru_maxrss in KiB
            p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n" + open(os.path.join(d, "log.txt")).read())
        rss = ru.ru_maxrss
        s = json.load(open(os.path.join(d, "summary.json")))
        u = np.load(os.path.join(d, "surface.npy"))
    c = v[t].mean(axis=1)
    ref = mie_surface_hard(args.k, 1.0, c[:, 2] / np.linalg.norm(c, axis=1))
    err = float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
    return dict(mesh=mesh_spec, elements=s["elements"], operator=s["operator"], fmm_order=s["fmm_order"],
                near_entries=s["near_entries"], leaf_level=s["leaf_level"], bd_blocks=s["bd_blocks"],
                setup_s=s["setup_seconds"], fmm_setup_s=s["fmm_seconds"],
                near_field_s=s["operator_seconds"] - s["fmm_seconds"] if s["operator"] == "fmm" else 0.0,
                bd_setup_s=s["precond_seconds"], iterations=s["iterations"], gmres_s=s["gmres_seconds"],
                matvec_s=s["matvec_seconds"] / max(1, s["matvecs"]), operator_mib=s["operator_bytes"] / 2 ** 20,
                bd_mib=s["precond_bytes"] / 2 ** 20,
                peak_rss_mib=rss / 1024.0, wall_s=wall, error=err)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for op, mk in [("fmm", "o-"), ("dense", "s--")]:
        rr = sorted([r for r in rows if r["operator"] == op], key=lambda r: r["elements"])
        if not rr:
            continue
        n = [r["elements"] for r in rr]
        ax[0].loglog(n, [r["setup_s"] for r in rr], mk, label=f"{op}: set-up")
        ax[0].loglog(n, [r["gmres_s"] for r in rr], mk, alpha=0.6, label=f"{op}: GMRES solve")
        ax[0].loglog(n, [r["matvec_s"] for r in rr], mk, alpha=0.35, label=f"{op}: one matvec")
        ax[1].loglog(n, [r["peak_rss_mib"] for r in rr], mk, label=f"{op}: peak RSS")
        ax[1].loglog(n, [r["operator_mib"] for r in rr], mk, alpha=0.5, label=f"{op}: operator storage")
    fm = sorted([r for r in rows if r["operator"] == "fmm"], key=lambda r: r["elements"])
    if len(fm) > 1:
        n = np.array([r["elements"] for r in fm], float)
        ax[0].loglog(n, n / n[0] * fm[0]["matvec_s"], "k:", lw=0.8, label="O(N) from the first FMM matvec")
    ax[0].set_xlabel("elements N")
    ax[0].set_ylabel("seconds")
    ax[0].legend(fontsize=7)
    ax[0].set_title("time (sound-hard sphere, BD preconditioner)")
    ax[1].set_xlabel("elements N")
    ax[1].set_ylabel("MiB")
    ax[1].legend(fontsize=7)
    ax[1].set_title("memory")
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench/results/bem_scaling")
    ap.add_argument("--cli", default="build/apps/elliptica")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=float, default=5.0)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--leaf", type=int, default=64)
    ap.add_argument("--meshes", default="ico:3,ico:4,ico:5,ico:6,octa:7",
                    help="unit-sphere meshes: ico:R (20*4^R elements) or octa:R (8*4^R)")
    ap.add_argument("--dense-upto", type=int, default=5120)
    ap.add_argument("--replot", action="store_true", help="only redraw <out>.png from <out>.csv")
    args = ap.parse_args()
    if args.replot:
        with open(args.out + ".csv") as f:
            rows = [{k: (v if k in ("mesh", "operator") else float(v)) for k, v in r.items()} for r in csv.DictReader(f)]
        plot(rows, args.out + ".png")
        return
    rows = []
    for spec in args.meshes.split(","):
        n = (20 if spec.startswith("ico") else 8) * 4 ** int(spec.split(":")[1])
        ops = ["fmm"] + (["dense"] if n <= args.dense_upto else [])
        for op in ops:
            row = run_one(args.cli, spec, op, args)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    keys = list(rows[0].keys())
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, args.out + ".csv")
    lines = [f"# `elliptica bem` set-up, solve and memory vs N (sound-hard sphere, ka = {args.k:g}, "
             f"{args.threads} threads, GMRES tol {args.tol:g}, BD at the leaf level)", "",
             f"Command: `python3 bench/bem/scaling.py --out {args.out} --threads {args.threads} --k {args.k:g} "
             f"--meshes {args.meshes} --dense-upto {args.dense_upto} --tol {args.tol:g}`", "",
             "| mesh | N | operator | p | near entries | set-up (s) | FMM set-up | near field | BD set-up | GMRES its | "
             "GMRES (s) | per matvec (s) | operator MiB | BD MiB | peak RSS MiB | error vs Mie |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mesh']} | {r['elements']} | {r['operator']} | {r['fmm_order']} | {r['near_entries']} | "
                     f"{r['setup_s']:.2f} | {r['fmm_setup_s']:.2f} | {r['near_field_s']:.2f} | {r['bd_setup_s']:.2f} | "
                     f"{r['iterations']} | {r['gmres_s']:.2f} | {r['matvec_s']:.3f} | {r['operator_mib']:.1f} | "
                     f"{r['bd_mib']:.1f} | {r['peak_rss_mib']:.0f} | {r['error']:.2e} |")
    tmp = args.out + ".md.tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, args.out + ".md")
    plot(rows, args.out + ".png")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
