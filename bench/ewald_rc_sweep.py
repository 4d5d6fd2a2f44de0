#!/usr/bin/env python3
"""Issue 12: is the cut-off r_c that the tuner chooses (its cost model, with the constants
measured on this machine: `elliptica ewald calibrate`) close to the fastest one?

For each kernel, tolerance and N (uniform points in the unit cube, one thread): the tuner's
choice (r_c, xi, M, P) and the median wall time of `repeats` evaluates after the first; then r_c
swept over factors around the chosen one (the `rc` override: the tuner picks xi, M, P for the
tolerance at that r_c), each timed the same way. Reported: the fastest swept r_c (and the minimum
of a parabola through the three fastest points in log r_c, less sensitive to noise), the ratio
chosen / best r_c, and the time ratio t(chosen) / t(best).

Run it pinned to one core (the timings are one-thread timings):

    ELLIPTICA_CLI=... PYTHONPATH=/tmp/h1-py taskset -c 1 python3 bench/ewald_rc_sweep.py

Outputs bench/results/ewald_issue12/rc_sweep.{csv,md,png} (--out-dir, --name)."""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import elliptica

HERE = Path(__file__).resolve().parent
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"]


def data(kernel, n, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    q = rng.uniform(-1, 1, (n, 1 if kernel == "laplace" else 3))
    q -= q.mean(axis=0)
    return x, (q[:, 0].copy() if kernel == "laplace" else q)


def timed(kernel, x, q, eps, rc, repeats):
    """Plan (rc override or None), set_points, first evaluate (tunes), then `repeats` evaluates:
    (params, median evaluate seconds, all times, median stage times)."""
    plan = elliptica.EwaldPlan(kernel, box=1.0, tol=eps, threads=1, rc=rc)
    plan.set_points(x)
    plan.evaluate(q)
    walls, stages = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        plan.evaluate(q)
        walls.append(time.perf_counter() - t0)
        stages.append(dict(plan.last_times))
    med = {s: float(np.median([st.get(s, 0.0) for st in stages])) for s in STAGES}
    return dict(plan.params), float(np.median(walls)), walls, med


def best_of_sweep(rcs, ts):
    """Discrete best and the vertex of a parabola in log(rc) through the fastest point and its
    neighbours (clamped to their range); the discrete best where it is at an end of the sweep."""
    order = np.argsort(rcs)
    r = np.asarray(rcs)[order]
    t = np.asarray(ts)[order]
    i = int(np.argmin(t))
    best = float(r[i])
    if 0 < i < len(r) - 1:
        lx = np.log(r[i - 1:i + 2])
        a, b, _ = np.polyfit(lx, t[i - 1:i + 2], 2)
        if a > 0:
            v = -b / (2 * a)
            return best, float(np.exp(np.clip(v, lx[0], lx[2])))
    return best, best


def cpu_info():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except Exception:  # noqa: BLE001
        return "unknown", ""
    model, flags = "unknown", ""
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k.strip() == "Model name":
            model = v.strip()
        if k.strip() == "Flags":
            flags = " ".join(f for f in v.split() if f.startswith(("avx", "fma", "sse4")))
    return model, flags


def git_state():
    def run(*a):
        try:
            return subprocess.run(["git", "-C", str(HERE.parent), *a], capture_output=True, text=True).stdout.strip()
        except Exception:  # noqa: BLE001
            return ""
    head = run("log", "--oneline", "-1")
    dirty = run("status", "--short", "src/ewald")
    p2p = (HERE.parent / "src/ewald/cpu/p2p_simd.cpp").read_text(errors="replace")
    compact = "compact" in p2p and "TableLookupLanes" in p2p
    return head, dirty, compact


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default="laplace,stokeslet")
    ap.add_argument("--eps", default="1e-6")
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--factors", default="0.6,0.7,0.8,0.9,1.0,1.12,1.25,1.4,1.6",
                    help="r_c / chosen r_c values of the sweep")
    ap.add_argument("--factors-large", default="0.7,0.82,0.91,1.0,1.1,1.22,1.4",
                    help="the sweep for N >= 1e6 (fewer: each evaluate takes seconds)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-large", type=int, default=2)
    ap.add_argument("--out-dir", default=str(HERE / "results" / "ewald_issue12"))
    ap.add_argument("--name", default="rc_sweep")
    a = ap.parse_args()

    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kernels = a.kernels.split(",")
    epss = [float(e) for e in a.eps.split(",")]
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    costs = elliptica.ewald_cost_constants("double")
    rows, summary = [], []
    t_start = time.time()
    cases = [(k, e, n) for n in sizes for k in kernels for e in epss]  # the small sizes of every kernel first
    for kernel, eps, n in cases:
            if True:
                large = n >= 1_000_000
                reps = a.repeats_large if large else a.repeats
                factors = [float(f) for f in (a.factors_large if large else a.factors).split(",")]
                x, q = data(kernel, n)
                p0, t0, w0, s0 = timed(kernel, x, q, eps, None, reps)
                rc0 = p0["rc"]
                print(f"{kernel} eps {eps:g} N {n}: chosen rc {rc0:.5g} xi {p0['xi']:.4g} M {p0['grid'][0]} "
                      f"P {p0['P']}: {t0:.4g} s", flush=True)
                rows.append(dict(kernel=kernel, eps=eps, n=n, chosen=1, factor=1.0, rc=rc0, xi=p0["xi"],
                                 M=p0["grid"][0], P=p0["P"], seconds=t0, all=";".join(f"{w:.5g}" for w in w0),
                                 **{f"t_{s}": s0[s] for s in STAGES}))
                sweep_rc, sweep_t = [rc0], [t0]
                for f in factors:
                    if abs(f - 1.0) < 1e-9:
                        continue
                    rc = rc0 * f
                    try:
                        p, t, w, s = timed(kernel, x, q, eps, rc, reps)
                    except (elliptica.NumericalError, elliptica.ResourceError, ValueError) as e:
                        print(f"  rc {rc:.5g}: {type(e).__name__}: {e}", flush=True)
                        continue
                    print(f"  rc {rc:.5g} (x{f:g}) xi {p['xi']:.4g} M {p['grid'][0]} P {p['P']}: {t:.4g} s",
                          flush=True)
                    rows.append(dict(kernel=kernel, eps=eps, n=n, chosen=0, factor=f, rc=rc, xi=p["xi"],
                                     M=p["grid"][0], P=p["P"], seconds=t, all=";".join(f"{v:.5g}" for v in w),
                                     **{f"t_{k}": s[k] for k in STAGES}))
                    sweep_rc.append(rc)
                    sweep_t.append(t)
                best, best_fit = best_of_sweep(sweep_rc, sweep_t)
                tbest = min(sweep_t)
                summary.append(dict(kernel=kernel, eps=eps, n=n, rc_chosen=rc0, rc_best=best, rc_best_fit=best_fit,
                                    ratio=rc0 / best, ratio_fit=rc0 / best_fit, t_chosen=t0, t_best=tbest,
                                    time_ratio=t0 / tbest, points=len(sweep_t)))
                print(f"  best rc {best:.5g} (parabola {best_fit:.5g}): chosen/best {rc0 / best:.3f} "
                      f"({rc0 / best_fit:.3f}), time ratio {t0 / tbest:.3f}", flush=True)
                write_outputs(a, out, rows, summary, costs, kernels, epss, sizes, t_start)


def write_outputs(a, out, rows, summary, costs, kernels, epss, sizes, t_start):
    """CSV, markdown and plot of the cases done so far (rewritten after every case)."""
    with open(out / f"{a.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)

    model, flags = cpu_info()
    head, dirty, compact = git_state()
    cmd = " ".join(shlex.quote(c) for c in [sys.executable, *sys.argv])
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:
        affinity = []
    md = [f"# r_c chosen by the cost model vs the fastest r_c (issue 12)", "",
          f"- command: `{cmd}` (CPU affinity {affinity}; run under `taskset -c 1`)",
          f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, "
          f"{time.time() - t_start:.0f} s",
          f"- CPU: {model} ({platform.machine()}); SIMD flags: {flags}",
          f"- P2P SIMD target: {costs['simd_target']}; git: {head}; src/ewald changes not committed: "
          f"{'yes' if dirty else 'no'}; P2P compaction (lane permutation) in the tree: {'yes' if compact else 'NO'}",
          f"- cost constants: source {costs['source']} ({costs.get('file')}), measured {costs['measured_at']}",
          f"- one thread (threads=1), uniform points in the unit cube, relative tolerance, median of "
          f"{a.repeats} evaluates ({a.repeats_large} for N >= 1e6) after the first (which tunes and sets up)",
          "", "| kernel | eps | N | chosen r_c | best r_c (sweep) | chosen/best | best r_c (parabola) | "
          "chosen/best (parabola) | t chosen [s] | t best [s] | time ratio | r_c values |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in summary:
        md.append(f"| {s['kernel']} | {s['eps']:g} | {s['n']:.0e} | {s['rc_chosen']:.4g} | {s['rc_best']:.4g} | "
                  f"{s['ratio']:.3f} | {s['rc_best_fit']:.4g} | {s['ratio_fit']:.3f} | {s['t_chosen']:.4g} | "
                  f"{s['t_best']:.4g} | {s['time_ratio']:.3f} | {s['points']} |")
    within = [s for s in summary if abs(math.log(s["ratio"])) <= math.log(1.2) or s["time_ratio"] <= 1.0]
    md += ["", f"Chosen r_c within 20% of the fastest swept r_c (or itself the fastest): {len(within)} of {len(summary)}.",
           "", "Cost constants used (seconds of one core per unit of work):", "", "```json",
           json.dumps(costs, indent=1), "```", ""]
    (out / f"{a.name}.md").write_text("\n".join(md))
    (out / f"{a.name}_summary.json").write_text(json.dumps(summary, indent=1))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(kernels) * len(epss), figsize=(6 * len(kernels) * len(epss), 4.5),
                                 squeeze=False)
        for j, (kernel, eps) in enumerate([(k, e) for k in kernels for e in epss]):
            ax = axes[0][j]
            for n in sizes:
                rs = sorted((r for r in rows if r["kernel"] == kernel and r["eps"] == eps and r["n"] == n),
                            key=lambda r: r["rc"])
                if not rs:
                    continue
                rc0 = next(r["rc"] for r in rs if r["chosen"])
                tb = min(r["seconds"] for r in rs)
                line, = ax.plot([r["rc"] / rc0 for r in rs], [r["seconds"] / tb for r in rs], "o-", label=f"N = {n:.0e}")
                c0 = next(r for r in rs if r["chosen"])
                ax.plot([1.0], [c0["seconds"] / tb], "*", ms=14, color=line.get_color())
            ax.axvspan(1 / 1.2, 1.2, color="0.9", zorder=0)
            ax.set_xscale("log")
            ax.set_xlabel("r_c / chosen r_c")
            ax.set_ylabel("evaluate time / fastest")
            ax.set_title(f"{kernel}, eps {eps:g} (star: the tuner's choice)")
            ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"{a.name}.png", dpi=110)
        plt.close(fig)
    except ImportError:
        print("matplotlib not found: no plot", file=sys.stderr)
    print(f"wrote {out / (a.name + '.csv')}, .md, .png", flush=True)


if __name__ == "__main__":
    main()
