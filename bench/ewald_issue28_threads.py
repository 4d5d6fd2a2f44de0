#!/usr/bin/env python3
"""Issue 28: parallel efficiency of every kernel on 2 threads, per stage, at the SAME parameters.

    python3 bench/ewald_issue28_threads.py [--n 100000] [--kernels all] [--precisions double,single]
                                           [--tol-double 1e-6] [--tol-single 1e-4] [--repeats 5]
                                           [--out DIR]

Kernels (--kernels, comma-separated, default all): laplace (potential), laplace-field (potential
and field, field=True), laplace-energy (energy and forces, energy=True; the potential too, the
library's default potential=True), stokeslet, stresslet, stokes-combined; on request also
laplace-energy-nopot (energy=True, potential=False). Precisions: double (tolerance --tol-double, default 1e-6) and single
(--tol-single, default 1e-4); relative tolerance.

Method. Each kernel/precision runs in its own process (C.spawn, OMP_NUM_THREADS=2: its own peak
memory, OpenMP and FFTW thread pools). In it: N points uniform in the unit cube with the densities
of ewald_issue12_common.data (seed 1). A plan with threads=1 is made, set_points, and evaluated
once (this tunes it); its parameters (plan.params: xi, rc, grid, P, beta, poly_degree) are then
given to a second plan with threads=2 as overrides (EwaldPlan keywords xi, rc, grid, P, beta,
degree), at the same tolerance, so both do the same work (same grid, window, cutoff and cell
list: 'params match' in the output checks xi, rc, grid, P, beta, poly_degree and cells, and
'max rel diff' compares the two plans' results). After a first evaluate of the 2-thread plan,
`repeats` rounds evaluate the 1-thread plan and the 2-thread plan alternately (a change of load
hits both alike). Per repeat: the stage times of info.times (P2P, P2G, FFT, CNV, IFFT, G2P, self)
and the wall time of the Python evaluate call ('total'); 'other' = total - the sum of the stages
(serial work outside the timed stages: for laplace-energy the energy and force assembly; the
result copy; the call overhead). Reported per stage: the MEDIAN over the repeats at 1 and 2
threads (t1, t2) and the efficiency t1 / (2 t2) (1 = perfect, 0.5 = no speed-up); the best
(minimum) times are in the CSV too.

FFT planning: --fft-planner wisdom|measure|estimate (default: the library's default, 'wisdom':
FFTW_MEASURE once per machine, grid, transform count and THREAD COUNT, kept in the per-machine
cache ~/.cache/elliptica/ewald_fft_wisdom.json, or $ELLIPTICA_CACHE_DIR; the 2-thread plan gets its
own 2-thread FFTW plan, measured at its first evaluate when not cached, outside the timed
repeats). The tuner ranks grids by these cached timings, so the chosen parameters depend on the
cache; set ELLIPTICA_CACHE_DIR to a fresh folder for a run independent of earlier ones.

Output: DIR/threads.csv (one row per kernel, precision and stage) and DIR/threads.md (command
line, CPU model, load before/after each configuration, the table kernel, precision, stage, t1,
t2, efficiency, and the parameters). Default DIR: bench/results/ewald_issue28. The efficiency
means something only on a machine with 2 free cores: check the load columns.
Smoke test: --n 5000 --repeats 1 --out /tmp/x.
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
# variant -> (EwaldPlan kernel, extra keywords)
VARIANTS = {
    "laplace": ("laplace", {}),
    "laplace-field": ("laplace", {"field": True}),
    "laplace-energy": ("laplace", {"energy": True}),
    "stokeslet": ("stokeslet", {}),
    "stresslet": ("stresslet", {}),
    "stokes-combined": ("stokes-combined", {}),
    # not in the default set: energy and forces without the potential (potential=False: E's 3
    # components only, the energy's Fourier part by Parseval), the molecular-dynamics case
    "laplace-energy-nopot": ("laplace", {"energy": True, "potential": False}),
}
DEFAULT_KERNELS = ["laplace", "laplace-field", "laplace-energy", "stokeslet", "stresslet", "stokes-combined"]
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"]
ROWS = STAGES + ["other", "total"]


def worker(variant: str, precision: str, n: int, tol: float, repeats: int, planner: str) -> None:
    import elliptica

    kernel, extra = VARIANTS[variant]
    if planner != "default":
        extra = dict(extra, fft_planner=planner)
    x, q, d, nu = C.data(kernel, n)

    def make(threads, overrides):
        plan = elliptica.EwaldPlan(kernel, box=1.0, tol=tol, tol_kind="relative", precision=precision,
                                   threads=threads, **extra, **overrides)
        plan.set_points(x, normals=nu)
        return plan

    def ev(plan):
        if kernel == "stresslet":
            return plan.evaluate(dipoles=d)
        if d is None:
            return plan.evaluate(q)
        return plan.evaluate(q, dipoles=d)

    def values(r):
        if variant.startswith("laplace-energy"):
            return np.concatenate([[r.energy], np.ravel(r.forces)])
        if variant == "laplace-field":
            return np.concatenate([r.potential, np.ravel(r.field)])
        return np.ravel(r.values)

    out = {"kernel": variant, "precision": precision, "n": n, "tol": tol, "repeats": repeats,
           "cost_model": elliptica.ewald_cost_constants(precision).get("source", "?"),
           "fft_planner": planner if planner != "default" else elliptica.ewald_defaults().fft_planner.name}
    p1 = make(1, {})
    t0 = time.perf_counter()
    ev(p1)
    out["first_1_s"] = time.perf_counter() - t0
    prm = dict(p1.params)
    ov = {"xi": prm["xi"], "rc": prm["rc"], "grid": tuple(int(m) for m in prm["grid"]), "P": int(prm["P"]),
          "beta": prm["beta"], "degree": int(prm["poly_degree"])}
    p2 = make(2, ov)
    t0 = time.perf_counter()
    ev(p2)
    out["first_2_s"] = time.perf_counter() - t0
    prm2 = dict(p2.params)
    keys = ("xi", "rc", "grid", "P", "beta", "poly_degree", "cells")
    out["params_match"] = all(np.allclose(np.asarray(prm[k], float), np.asarray(prm2[k], float), rtol=1e-12, atol=0)
                              for k in keys)
    if not out["params_match"]:
        benchlib.log("  parameters differ: " + ", ".join(f"{k} {prm[k]} vs {prm2[k]}" for k in keys))
    out.update(xi=prm["xi"], rc=prm["rc"], grid="x".join(str(int(m)) for m in prm["grid"]), P=int(prm["P"]),
               beta=prm["beta"], poly_degree=int(prm["poly_degree"]),
               cells="x".join(str(int(c)) for c in prm["cells"]), est_relative=prm["est_relative"])
    runs = {1: [], 2: []}
    last = {}
    for _ in range(max(1, repeats)):
        for thr, plan in ((1, p1), (2, p2)):
            t0 = time.perf_counter()
            r = ev(plan)
            wall = time.perf_counter() - t0
            st = {s: float(r.info.times.get(s, 0.0)) for s in STAGES}
            st["other"] = wall - sum(st.values())
            st["total"] = wall
            runs[thr].append(st)
            last[thr] = values(r)
    a, b = last[1], last[2]
    out["max_rel_diff"] = float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-300))
    for thr in (1, 2):
        for s in ROWS:
            v = [t[s] for t in runs[thr]]
            out[f"{s}_t{thr}_median"] = float(np.median(v))
            out[f"{s}_t{thr}_best"] = float(np.min(v))
        out[f"total_t{thr}_all"] = " ".join(f"{t['total']:.4f}" for t in runs[thr])
    out["vmhwm_mib"] = C.vmhwm_mib()
    print(json.dumps(out))


def rows_of(rec: dict) -> list[dict]:
    rows = []
    for s in ROWS:
        t1, t2 = rec[f"{s}_t1_median"], rec[f"{s}_t2_median"]
        b1, b2 = rec[f"{s}_t1_best"], rec[f"{s}_t2_best"]
        rows.append({"kernel": rec["kernel"], "precision": rec["precision"], "n": rec["n"], "tol": rec["tol"],
                     "stage": s, "t1_median_s": t1, "t2_median_s": t2,
                     "efficiency_median": t1 / (2 * t2) if t2 > 0 else float("nan"),
                     "t1_best_s": b1, "t2_best_s": b2,
                     "efficiency_best": b1 / (2 * b2) if b2 > 0 else float("nan"),
                     "share_t1": t1 / rec["total_t1_median"] if rec["total_t1_median"] > 0 else float("nan"),
                     "repeats": rec["repeats"], "grid": rec["grid"], "P": rec["P"], "rc": rec["rc"],
                     "xi": rec["xi"], "params_match": rec["params_match"], "max_rel_diff": rec["max_rel_diff"],
                     "load_before": rec["load_before"], "load_after": rec["load_after"]})
    return rows


def report(recs: list[dict], info: dict, a, command: str) -> str:
    F = benchlib.fmt
    md = "# Issue 28: parallel efficiency on 2 threads, per kernel and stage\n\n"
    md += C.header(info, command)
    md += (f"\nN = {a.n} uniform in the unit cube, relative tolerance {a.tol_double:g} (double) / {a.tol_single:g} "
           f"(single). Per kernel and precision, one process: a 1-thread plan tuned at its first evaluate, and a "
           f"2-thread plan given the same xi, rc, grid, P, beta and polynomial degree as overrides; then {a.repeats} "
           f"rounds evaluating the two alternately. t1, t2 = MEDIAN over the repeats of the stage time (s) at 1 and 2 "
           f"threads; efficiency = t1 / (2 t2) (1 = perfect, 0.5 = no speed-up). 'total' = wall time of the evaluate "
           f"call; 'other' = total - sum of the stages (serial work outside the timed stages, e.g. the energy and "
           f"forces assembly, the result copy). 'share' = the stage's part of the 1-thread total. Best-of-repeats "
           f"times are in threads.csv. Cost-model constants: "
           f"{', '.join(sorted({str(r['cost_model']) for r in recs}))}; FFT planner: "
           f"{', '.join(sorted({str(r['fft_planner']) for r in recs}))}.\n\n")
    body = []
    for rec in recs:
        for row in rows_of(rec):
            eff = row["efficiency_median"]
            e = f"{eff:.2f}" if np.isfinite(eff) else "-"
            if row["stage"] == "total":
                e = f"**{e}**"
            body.append([row["kernel"], row["precision"], row["stage"], F(row["t1_median_s"]), F(row["t2_median_s"]),
                         e, f"{100 * row['share_t1']:.0f}%"])
    md += benchlib.md_table(["kernel", "precision", "stage", "t1 s", "t2 s", "efficiency t1/(2 t2)", "share"], body)
    md += "\nParameters (the same for both plans) and checks:\n\n" + benchlib.md_table(
        ["kernel", "precision", "tol", "grid", "P", "rc", "xi", "cells", "est. rel. error", "params match",
         "max rel diff 1 vs 2 threads", "first eval 1 thr s", "peak MiB", "load before", "load after",
         "totals 1 thr", "totals 2 thr"],
        [[r["kernel"], r["precision"], f"{r['tol']:g}", r["grid"], r["P"], f"{r['rc']:.4g}", f"{r['xi']:.4g}",
          r["cells"], f"{r['est_relative']:.2e}", r["params_match"], f"{r['max_rel_diff']:.1e}", F(r["first_1_s"]),
          f"{r['vmhwm_mib']:.0f}", r["load_before"], r["load_after"], r["total_t1_all"], r["total_t2_all"]]
         for r in recs])
    return md


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=6, metavar=("KERNEL", "PRECISION", "N", "TOL", "REPEATS", "PLANNER"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=100000, help="number of points (default 100000)")
    ap.add_argument("--kernels", default="all",
                    help="comma-separated, from " + ", ".join(VARIANTS) + " (default all = "
                    + ",".join(DEFAULT_KERNELS) + ")")
    ap.add_argument("--precisions", default="double,single", help="comma-separated (default double,single)")
    ap.add_argument("--tol-double", type=float, default=1e-6, help="relative tolerance in double (default 1e-6)")
    ap.add_argument("--tol-single", type=float, default=1e-4, help="relative tolerance in single (default 1e-4)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats per plan, median taken (default 5, >= 3 advised)")
    ap.add_argument("--fft-planner", choices=["wisdom", "measure", "estimate"],
                    help="EwaldPlan fft_planner (default: the library's default)")
    ap.add_argument("--out", default=str(OUT_DEFAULT), help=f"results folder (default {OUT_DEFAULT})")
    a = ap.parse_args()
    if a.worker:
        k, p, n, tol, rep, planner = a.worker
        worker(k, p, int(n), float(tol), int(rep), planner)
        return
    kernels = DEFAULT_KERNELS if a.kernels == "all" else a.kernels.split(",")
    bad = [k for k in kernels if k not in VARIANTS]
    if bad:
        ap.error(f"unknown kernel(s) {bad}; choose from {', '.join(VARIANTS)}")
    precs = a.precisions.split(",")
    if any(p not in ("double", "single") for p in precs):
        ap.error("precisions: double and/or single")
    command = "python3 " + " ".join(shlex.quote(s) for s in sys.argv)
    info = benchlib.machine()
    out = Path(a.out)
    recs, rows = [], []
    for k in kernels:
        for p in precs:
            tol = a.tol_double if p == "double" else a.tol_single
            load0 = benchlib.loadavg()
            benchlib.log(f"{k} {p} tol {tol:g}: load {load0}")
            rec = C.spawn(Path(__file__), [k, p, str(a.n), repr(tol), str(a.repeats),
                                                a.fft_planner or "default"], threads=2, timeout=3600)
            rec["load_before"], rec["load_after"] = load0, benchlib.loadavg()
            recs.append(rec)
            rows += rows_of(rec)
            benchlib.log(f"  total t1 {rec['total_t1_median']:.4f} s t2 {rec['total_t2_median']:.4f} s efficiency "
                         f"{rec['total_t1_median'] / (2 * rec['total_t2_median']):.2f}; params match "
                         f"{rec['params_match']}, max rel diff {rec['max_rel_diff']:.1e}")
            benchlib.write_csv(out / "threads.csv", rows)  # partial results survive a crash
    info["loadavg_end"] = benchlib.loadavg()
    md = report(recs, info, a, command)
    benchlib.write_atomic(out / "threads.md", md)
    print(md)


if __name__ == "__main__":
    main()
