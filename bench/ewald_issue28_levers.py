#!/usr/bin/env python3
"""Issue 28: the levers on the Laplace energy + forces of the water box, measured one at a time at
the same tolerance (the parameters each configuration's tuner picks), one core, interleaved.

    taskset -c 0 python3 bench/ewald_issue28_levers.py [--rep 5] [--tols 1e-3,7e-5,3e-5]
        [--precision single] [--repeats 9] [--out bench/results/ewald_issue28/levers]

Configurations (EwaldPlan("laplace", energy=True, threads=1, ...)):
  estimate+phi   fft_planner="estimate", potential=True   (the issue-12 default)
  wisdom+phi     fft_planner="wisdom",   potential=True   (good FFT plans; the tuner sees measured FFT times)
  estimate-phi   fft_planner="estimate", potential=False  (the energy's Fourier part by Parseval)
  wisdom-phi     fft_planner="wisdom",   potential=False  (both: the library's default with potential=False)
Each is tuned and evaluated once (wisdom: measured once per machine and grid; not timed), then the
configurations are evaluated in turn `repeats` times (A B C D A B C D ...); the table gives the
median wall time of one evaluate, its stage times (median), the grid and r_c chosen, and the
relative RMS force error against ours at tol 1e-12 double, fft_planner estimate (kJ/mol/nm).
Output: levers.{csv,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402
from ewald_issue12_openmm import water  # noqa: E402

CONFIGS = [("estimate+phi", "estimate", True), ("wisdom+phi", "wisdom", True),
           ("estimate-phi", "estimate", False), ("wisdom-phi", "wisdom", False)]
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"]


def main() -> None:
    import elliptica

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rep", type=int, default=5)
    ap.add_argument("--tols", default="1e-3,7e-5,3e-5")
    ap.add_argument("--precision", default="single")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default=str(benchlib.RESULTS / "ewald_issue28" / "levers"))
    a = ap.parse_args()
    info = benchlib.machine()
    info["affinity"] = sorted(os.sched_getaffinity(0))
    X, Q, box = water(a.rep)
    n = len(Q)
    benchlib.log(f"{n} atoms, load {benchlib.loadavg()}")
    ref = elliptica.EwaldPlan("laplace", box=box, tol=1e-12, threads=1, energy=True, fft_planner="estimate")
    ref.set_points(X)
    r = ref.evaluate(Q)
    Fref, Uref = np.asarray(r.forces), r.energy
    del ref
    rows = []
    for tol in [float(t) for t in a.tols.split(",")]:
        plans = {}
        for name, planner, pot in CONFIGS:
            p = elliptica.EwaldPlan("laplace", box=box, tol=tol, threads=1, energy=True, precision=a.precision,
                                    fft_planner=planner, potential=pot)
            p.set_points(X)
            t0 = time.perf_counter()
            p.evaluate(Q)
            plans[name] = (p, time.perf_counter() - t0)
        walls = {k: [] for k in plans}
        stages = {k: {s: [] for s in STAGES} for k in plans}
        last = {}
        for _ in range(a.repeats):
            for name, (p, _f) in plans.items():
                t0 = time.perf_counter()
                res = p.evaluate(Q)
                walls[name].append(time.perf_counter() - t0)
                for s in STAGES:
                    stages[name][s].append(res.info.times.get(s, 0.0))
                last[name] = res
        base = float(np.median(walls["estimate+phi"]))
        for name, (p, first) in plans.items():
            res = last[name]
            F = np.asarray(res.forces)
            rec = {"tol": tol, "precision": a.precision, "config": name, "first_s": first,
                   "median_s": float(np.median(walls[name])), "min_s": float(np.min(walls[name])),
                   "vs_estimate_phi": float(np.median(walls[name])) / base,
                   "grid": "x".join(str(int(m)) for m in p.params["grid"]), "rc": p.params["rc"], "P": p.params["P"],
                   "force_err": float(np.sqrt(np.sum((F - Fref) ** 2) / np.sum(Fref ** 2))),
                   "energy_rel_err": abs(res.energy - Uref) / abs(Uref)}
            for s in STAGES:
                rec[s] = float(np.median(stages[name][s]))
            rows.append(rec)
            benchlib.log(json.dumps(rec))
    info["loadavg_end"] = benchlib.loadavg()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    benchlib.write_csv(out.with_suffix(".csv"), rows)
    md = "# Issue 28: FFT planner and Parseval energy, water box, one core\n\n"
    md += C.header(info, ("taskset -c 0 " if len(info["affinity"]) == 1 else "") + "python3 " + " ".join(sys.argv))
    md += (f"\n{n} atoms, energy + forces, {a.precision} precision, median of {a.repeats} interleaved evaluations; "
           "stage times in ms (medians); force error: relative RMS against tol 1e-12 double.\n\n")
    md += benchlib.md_table(
        ["tol", "config", "grid", "r_c", "median s", "vs estimate+phi"] + STAGES + ["force err", "first s"],
        [[f"{r['tol']:g}", r["config"], r["grid"], f"{r['rc']:.4g}", benchlib.fmt(r["median_s"]),
          f"{r['vs_estimate_phi']:.3f}"] + [f"{1e3 * r[s]:.2f}" for s in STAGES] +
         [f"{r['force_err']:.2e}", f"{r['first_s']:.2f}"] for r in rows])
    benchlib.write_atomic(out.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
