#!/usr/bin/env python3
"""Issue 28, the pair-symmetry lever: P2P with each pair evaluated once for both points
(EwaldPlan pair_symmetry=True, the default) against each target summing over all of its sources
(pair_symmetry=False), for the stokeslet, stresslet and stokes-combined kernels.

    python3 bench/ewald_issue28_symmetry.py [--n 100000] [--eps 1e-6,1e-9] [--ref-eps 1e-11]
                                           [--repeats 5] [--threads 1] [--out DIR]

Method. One process per (kernel, eps) (C.spawn; OMP_NUM_THREADS = --threads). N points uniform in
the unit cube with the data of ewald_issue12_common.data (seed 1), double precision, relative
tolerance eps. Two plans, each tuned to its own parameters (the cost model halves the pair work
of the symmetric one, so it may choose a larger r_c): on = pair_symmetry True, off = False.
After a first (tuning) evaluate of each, `repeats` rounds evaluate the two one after the other
(interleaved). Per plan: the median wall time of the evaluate call and the median P2P stage
time, the pairs evaluated (info.p2p), r_c, and the relative RMS error against the same kernel
at --ref-eps. Then the off plan is evaluated once more with the on plan's parameters (overrides
xi, rc, grid, P): 'P2P same params' is that P2P time over the on plan's, the lever alone.

Output: DIR/symmetry.csv, DIR/symmetry.md (command line, CPU model, load, table). Default DIR:
bench/results/ewald_issue28. Smoke test: --n 5000 --eps 1e-4 --repeats 1 --out /tmp/x.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402

OUT_DEFAULT = benchlib.RESULTS / "ewald_issue28"
KERNELS = ("stokeslet", "stresslet", "stokes-combined")


def make_plan(kernel, x, nu, eps, threads, sym, **over):
    import elliptica

    plan = elliptica.EwaldPlan(kernel, box=1.0, tol=eps, tol_kind="relative", threads=threads,
                               precision="double", pair_symmetry=sym, **over)
    plan.set_points(x, normals=None if kernel == "stokeslet" else nu)
    return plan


def evaluate(plan, kernel, f, d):
    if kernel == "stokeslet":
        return plan.evaluate(f)
    if kernel == "stresslet":
        return plan.evaluate(dipoles=d)
    return plan.evaluate(f, dipoles=d)


def worker(kernel: str, n: int, eps: float, ref_eps: float, repeats: int, threads: int) -> None:
    x, f, d, nu = C.data("stokes-combined", n)
    out = {"kernel": kernel, "n": n, "eps": eps, "ref_eps": ref_eps, "threads": threads, "repeats": repeats}
    plans, vals, walls, p2p = {}, {}, {}, {}
    for tag, sym in (("on", True), ("off", False)):
        plan = make_plan(kernel, x, nu, eps, threads, sym)
        t0 = time.perf_counter()
        r = evaluate(plan, kernel, f, d)
        out[f"{tag}_first_s"] = time.perf_counter() - t0
        p = plan.params
        out[f"{tag}_rc"] = p["rc"]
        out[f"{tag}_grid"] = "x".join(str(int(m)) for m in p["grid"])
        out[f"{tag}_P"] = p["P"]
        out[f"{tag}_pairs"] = r.info.p2p["pairs"]
        out[f"{tag}_applied"] = r.info.p2p["pair_symmetry"]
        plans[tag] = plan
        walls[tag], p2p[tag] = [], []
    for _ in range(max(1, repeats)):
        for tag in ("on", "off"):
            t0 = time.perf_counter()
            r = evaluate(plans[tag], kernel, f, d)
            walls[tag].append(time.perf_counter() - t0)
            p2p[tag].append(float(r.info.times["P2P"]))
            vals[tag] = np.array(r.velocity, copy=True)
    for tag in ("on", "off"):
        out[f"{tag}_wall_s"] = float(np.median(walls[tag]))
        out[f"{tag}_p2p_s"] = float(np.median(p2p[tag]))
    # the lever alone: the off plan at the on plan's parameters
    p = plans["on"].params
    same = make_plan(kernel, x, nu, eps, threads, False, xi=p["xi"], rc=p["rc"], grid=tuple(int(m) for m in p["grid"]),
                     P=int(p["P"]))
    evaluate(same, kernel, f, d)
    ts = []
    for _ in range(max(1, repeats)):
        ts.append(float(evaluate(same, kernel, f, d).info.times["P2P"]))
    out["off_same_p2p_s"] = float(np.median(ts))
    del plans, same
    ref = make_plan(kernel, x, nu, ref_eps, threads, True)
    rv = np.array(evaluate(ref, kernel, f, d).velocity, copy=True)
    for tag in ("on", "off"):
        out[f"{tag}_err"] = C.rel_rms(vals[tag], rv)
    out["wall_ratio"] = out["on_wall_s"] / out["off_wall_s"]
    out["p2p_ratio"] = out["on_p2p_s"] / out["off_p2p_s"]
    out["p2p_same_ratio"] = out["on_p2p_s"] / out["off_same_p2p_s"]
    print(json.dumps(out))


def report(rows, info, a, command):
    F = benchlib.fmt
    md = f"# Issue 28: pair symmetry in P2P, on vs off ({a.threads} thread{'s' if a.threads > 1 else ''})\n\n"
    md += C.header(info, command)
    md += (f"\nN = {a.n} uniform in the unit cube, double, relative tolerance; each plan tuned to its own parameters; "
           f"medians of {a.repeats} interleaved evaluates; errors = relative RMS against the same kernel at eps "
           f"{a.ref_eps:g}. 'P2P same params': P2P of the symmetric plan over P2P of the one-sided one at the "
           "symmetric plan's parameters (the lever alone).\n\n")
    md += benchlib.md_table(
        ["kernel", "eps", "wall on s", "wall off s", "wall on/off", "P2P on s", "P2P off s", "P2P on/off",
         "P2P same params on/off", "pairs on/off", "rc on/off", "grid on/off", "err on", "err off"],
        [[r["kernel"], f"{r['eps']:g}", F(r["on_wall_s"]), F(r["off_wall_s"]), f"**{r['wall_ratio']:.3f}**",
          F(r["on_p2p_s"]), F(r["off_p2p_s"]), f"{r['p2p_ratio']:.3f}", f"{r['p2p_same_ratio']:.3f}",
          f"{r['on_pairs']}/{r['off_pairs']}", f"{r['on_rc']:.4g}/{r['off_rc']:.4g}",
          f"{r['on_grid']}/{r['off_grid']}", f"{r['on_err']:.2e}", f"{r['off_err']:.2e}"] for r in rows])
    return md


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=6, metavar=("KERNEL", "N", "EPS", "REF_EPS", "REPEATS", "THREADS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=100000, help="number of points (default 100000)")
    ap.add_argument("--eps", default="1e-6,1e-9", help="comma-separated tolerances (default 1e-6,1e-9)")
    ap.add_argument("--ref-eps", type=float, default=1e-11, help="tolerance of the references (default 1e-11)")
    ap.add_argument("--repeats", type=int, default=5, help="repeated evaluates per plan (default 5)")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads of every plan (default 1)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated kernels (default all three)")
    ap.add_argument("--out", default=str(OUT_DEFAULT), help=f"results folder (default {OUT_DEFAULT})")
    a = ap.parse_args()
    if a.worker:
        k, n, e, r, rep, thr = a.worker
        worker(k, int(n), float(e), float(r), int(rep), int(thr))
        return
    command = "python3 " + " ".join(shlex.quote(s) for s in sys.argv)
    info = benchlib.machine()
    rows = []
    for eps in [float(e) for e in a.eps.split(",")]:
        for k in a.kernels.split(","):
            benchlib.log(f"{k} eps={eps:g} load {benchlib.loadavg()}")
            rec = C.spawn(Path(__file__), [k, str(a.n), repr(eps), repr(a.ref_eps), str(a.repeats), str(a.threads)],
                          threads=a.threads, timeout=3600)
            rows.append(rec)
            print(f"{k} eps={eps:g} wall on/off {rec['wall_ratio']:.3f} P2P on/off {rec['p2p_ratio']:.3f} "
                  f"(same params {rec['p2p_same_ratio']:.3f}) err on {rec['on_err']:.2e} off {rec['off_err']:.2e}",
                  flush=True)
    info["loadavg_end"] = benchlib.loadavg()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if a.threads == 1 else f"_{a.threads}t"
    benchlib.write_csv(out / f"symmetry{suffix}.csv", rows)
    benchlib.write_atomic(out / f"symmetry{suffix}.md", report(rows, info, a, command))
    benchlib.log(f"wrote {out / f'symmetry{suffix}.csv'} and {out / f'symmetry{suffix}.md'}")


if __name__ == "__main__":
    main()
