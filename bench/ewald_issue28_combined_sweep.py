#!/usr/bin/env python3
"""Issue 28, how far the tuner's choice for stokes-combined is from the best parameters: the plan
tuned by itself beside plans given (r_c, M) as overrides (the tuner then takes the smallest window
support P that meets the tolerance on that grid), N = 1e5 uniform points in the unit cube
(ewald_issue12_common.data), relative tolerance, double, one thread; 3 evaluations per plan,
interleaved, medians of the wall time and of each stage.

    taskset -c 1 python3 bench/ewald_issue28_combined_sweep.py --eps 1e-9
    taskset -c 1 python3 bench/ewald_issue28_combined_sweep.py --eps 1e-6

Writes combined_sweep_<eps>.{md,csv} under --out (default results/ewald_issue28). A grid that
cannot meet the tolerance at that r_c is reported and skipped. The r_c values are the tuner's own
candidates (0.95 * 0.87^k of the box); the grids the FFT-friendly sizes around its choice.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402

OUT_DEFAULT = Path(__file__).resolve().parent / "results" / "ewald_issue28"
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"]


def main() -> None:
    import elliptica

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eps", type=float, default=1e-9, help="relative tolerance (default 1e-9)")
    ap.add_argument("--n", type=int, default=100000, help="points (default 100000)")
    ap.add_argument("--repeats", type=int, default=3, help="evaluations per plan (default 3)")
    ap.add_argument("--out", default=str(OUT_DEFAULT), help=f"results folder (default {OUT_DEFAULT})")
    a = ap.parse_args()
    info = benchlib.machine()
    load0 = benchlib.loadavg()
    x, f, d, nu = C.data("stokes-combined", a.n)
    if a.eps < 1e-8:
        cands = [(rc, M) for rc in (0.1023, 0.1176, 0.1352) for M in (144, 150, 160)]
    else:
        cands = [(rc, M) for rc in (0.0775, 0.089, 0.1023) for M in (108, 120, 128)]
    plans, skipped = [], []
    for cnd in [None] + cands:
        kw = {} if cnd is None else {"rc": cnd[0], "grid": (cnd[1],) * 3}
        try:
            p = elliptica.EwaldPlan("stokes-combined", box=1.0, tol=a.eps, threads=1, **kw)
            p.set_points(x, normals=nu)
            p.evaluate(f, dipoles=d)
        except (elliptica.NumericalError, elliptica.ResourceError) as e:
            skipped.append((cnd, str(e).split(";")[0][:120]))
            benchlib.log(f"{cnd}: skipped ({e})")
            continue
        plans.append((cnd, p))
        benchlib.log(f"{'tuner' if cnd is None else cnd}: rc {p.params['rc']:.4g} M {p.params['grid'][0]} P {p.params['P']}")
    runs = {id(p): [] for _, p in plans}
    for _ in range(a.repeats):
        for _, p in plans:
            t0 = time.perf_counter()
            r = p.evaluate(f, dipoles=d)
            runs[id(p)].append((time.perf_counter() - t0, r.info.times))
    rows = []
    for cnd, p in plans:
        L = runs[id(p)]
        rec = {"plan": "tuner" if cnd is None else "override", "rc": p.params["rc"], "M": p.params["grid"][0],
               "P": p.params["P"], "wall_s": statistics.median(w for w, _ in L)}
        for s in STAGES:
            rec[s] = statistics.median(t.get(s, 0.0) for _, t in L)
        rows.append(rec)
    best = min(r["wall_s"] for r in rows)
    tuned = next(r for r in rows if r["plan"] == "tuner")
    for r in rows:
        r["wall_over_best"] = r["wall_s"] / best
    tag = f"{a.eps:g}"
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    benchlib.write_csv(out / f"combined_sweep_{tag}.csv", rows)
    cmd = "taskset -c 1 python3 bench/ewald_issue28_combined_sweep.py " + " ".join(sys.argv[1:])
    table = benchlib.md_table(
        ["plan", "r_c", "M", "P", "wall s", "wall / best", *[f"{s} s" for s in STAGES]],
        [[r["plan"], f"{r['rc']:.4g}", r["M"], r["P"], f"{r['wall_s']:.3f}", f"{r['wall_over_best']:.3f}",
          *[f"{r[s]:.3f}" for s in STAGES]] for r in rows])
    text = (f"# stokes-combined at eps {tag}: the tuner's choice against (r_c, M) overrides\n\n"
            f"Command: `{cmd}`\n\n{benchlib.md_machine(info)}\n- loadavg_start: {load0}\n"
            f"- loadavg_end: {benchlib.loadavg()}\n\n"
            f"N = {a.n} uniform points, relative tolerance {tag}, double, 1 thread, medians of {a.repeats} "
            f"interleaved evaluations. The tuner's plan: r_c {tuned['rc']:.4g}, M {tuned['M']}, P {tuned['P']}, "
            f"**{tuned['wall_over_best']:.3f} x the best wall time** of the sweep.\n\n{table}\n")
    if skipped:
        text += "\nSkipped (no P meets the tolerance on that grid at that r_c):\n\n"
        text += "".join(f"- {c}: {m}\n" for c, m in skipped)
    benchlib.write_atomic(out / f"combined_sweep_{tag}.md", text)
    print(text)


if __name__ == "__main__":
    main()
