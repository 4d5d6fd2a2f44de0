#!/usr/bin/env python3
"""Issue 31: the cost of 2P, 1P and 0P relative to 3P (the oversampling of the free axes), one thread.

    python3 bench/ewald_issue31_periodicity_cost.py [--n 100000] [--eps 1e-3,1e-6,1e-9]
        [--kernels laplace,stokeslet,stresslet] [--periodicities 3P,2P,1P,0P] [--sample 2000] [--repeats 3]

The same N points uniform in the unit cube, strengths uniform in [-1, 1] (charges made neutral,
forces made force-free, the stresslet's dipoles of zero sum with random unit normals, so every
periodicity sums the same kind of system), box 1 along the periodic axes. For each kernel, periodicity and tolerance: the parameters the tuner chose, the
FFT grid, the time of `evaluate` on a plan whose points are set (the time-stepping use; best of
--repeats) and of a one-shot plan (tuning, kernel tables, FFT plans; FFTW_ESTIMATE), the stage
times, and the measured relative RMS error at --sample points against the same periodicity at
eps 1e-12 (a convergence reference, not an independent one: the tests check each periodicity
against independent sums). ratio = time / the 3P time at the same eps.
Output: bench/results/ewald_issue31/periodicity_cost.{csv,md,png}.
"""
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402

OUT = HERE / "results" / "ewald_issue31"


def log(msg):
    benchlib.log(time.strftime("%H:%M:%S ", time.gmtime()) + msg)


def run(kernel, per, x, dens, eps, repeats, normals=None):
    import elliptica as el

    def evaluate(plan):
        return plan.evaluate(dipoles=dens) if kernel == "stresslet" else plan.evaluate(dens)

    kw = dict(tol=eps, threads=1, fft_planner="estimate", periodicity=per)
    if per != "0P":
        kw["box"] = 1.0
    best_one = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        plan = el.EwaldPlan(kernel, **kw)
        plan.set_points(x, normals=normals)
        res = evaluate(plan)
        best_one = min(best_one, time.perf_counter() - t)
    best_eval, times = np.inf, {}
    for _ in range(repeats):
        t = time.perf_counter()
        res = evaluate(plan)
        dt = time.perf_counter() - t
        if dt < best_eval:
            best_eval, times = dt, dict(res.info.times)
    val = res.potential if kernel == "laplace" else res.velocity
    return np.array(val), best_eval, best_one, plan.params, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--eps", default="1e-3,1e-6,1e-9")
    ap.add_argument("--kernels", default="laplace,stokeslet,stresslet")
    ap.add_argument("--periodicities", default="3P,2P,1P,0P")
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import elliptica as el

    info = benchlib.machine()
    rng = np.random.default_rng(31)
    x = rng.random((a.n, 3))
    idx = np.sort(np.random.default_rng(12345).choice(a.n, size=min(a.sample, a.n), replace=False))
    rows = []
    for kernel in a.kernels.split(","):
        dens = 2 * rng.random(a.n) - 1 if kernel == "laplace" else 2 * rng.random((a.n, 3)) - 1
        dens = dens - dens.mean(axis=0)
        nu = None
        if kernel == "stresslet":
            nu = np.random.default_rng(7).normal(size=(a.n, 3))
            nu /= np.linalg.norm(nu, axis=1)[:, None]
        for per in a.periodicities.split(","):
            ref, t_ref, _, _, _ = run(kernel, per, x, dens, 1e-12, 1, nu)
            log(f"{kernel} {per}: reference (eps 1e-12) in {t_ref:.2f} s")
            for eps in [float(e) for e in a.eps.split(",")]:
                val, t_eval, t_one, p, times = run(kernel, per, x, dens, eps, a.repeats, nu)
                err = float(np.sqrt(np.sum((val[idx] - ref[idx]) ** 2) / np.sum(ref[idx] ** 2)))
                grid = p["grid"]
                rows.append(dict(kernel=kernel, periodicity=per, eps=eps, n=a.n, error=err, evaluate_s=t_eval,
                                 one_shot_s=t_one, grid="x".join(map(str, grid)), fft_points=int(np.prod(grid)),
                                 P=p["P"], xi=p["xi"], rc=p["rc"],
                                 **{f"{k}_s": round(times.get(k, 0.0), 5) for k in
                                    ("P2P", "P2G", "FFT", "CNV", "IFFT", "G2P")}))
                log(f"{kernel} {per} eps {eps:g}: err {err:.3g}, evaluate {t_eval:.3f} s, one-shot {t_one:.3f} s, "
                    f"grid {grid} P {p['P']}")
    for r in rows:
        base = [b for b in rows if b["kernel"] == r["kernel"] and b["eps"] == r["eps"] and b["periodicity"] == "3P"]
        r["ratio_evaluate"] = r["evaluate_s"] / base[0]["evaluate_s"] if base else float("nan")
        r["ratio_one_shot"] = r["one_shot_s"] / base[0]["one_shot_s"] if base else float("nan")
        r["ratio_fft_points"] = r["fft_points"] / base[0]["fft_points"] if base else float("nan")
    OUT.mkdir(parents=True, exist_ok=True)
    prefix = OUT / "periodicity_cost"
    benchlib.write_csv(prefix.with_suffix(".csv"), rows)
    header = ["kernel", "periodicity", "eps", "error", "evaluate s", "one-shot s", "grid", "P", "FFT+CNV+IFFT s",
              "P2G+G2P s", "P2P s", "ratio evaluate", "ratio one-shot", "ratio FFT points"]
    table = [[r["kernel"], r["periodicity"], f"{r['eps']:g}", f"{r['error']:.2e}", benchlib.fmt(r["evaluate_s"]),
              benchlib.fmt(r["one_shot_s"]), r["grid"], r["P"],
              benchlib.fmt(r["FFT_s"] + r["CNV_s"] + r["IFFT_s"]), benchlib.fmt(r["P2G_s"] + r["G2P_s"]),
              benchlib.fmt(r["P2P_s"]), f"{r['ratio_evaluate']:.2f}", f"{r['ratio_one_shot']:.2f}",
              f"{r['ratio_fft_points']:.2f}"] for r in rows]
    cmd = "python3 bench/ewald_issue31_periodicity_cost.py " + " ".join(sys.argv[1:])
    md = (f"# Spectral Ewald: 2P, 1P and 0P against 3P, N = {a.n} uniform in the unit cube, one thread\n\n"
          f"Command: `{cmd}`\n\n{benchlib.md_machine(info)}\n\nelliptica {el.__version__}; load average at the end: "
          f"{benchlib.loadavg()}\n\nerror: relative RMS at {len(idx)} points against the same periodicity at eps "
          f"1e-12; ratio: against 3P at the same eps.\n\n" + benchlib.md_table(header, table) + "\n")
    benchlib.write_atomic(prefix.with_suffix(".md"), md)
    plot(rows, prefix.with_suffix(".png"), a)
    print(md)


def plot(rows, path, a):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = sorted({r["kernel"] for r in rows})
    fig, axes = plt.subplots(1, len(kernels), figsize=(5.5 * len(kernels), 4.2), squeeze=False)
    for ax, k in zip(axes[0], kernels):
        for per, mk in zip(["3P", "2P", "1P", "0P"], "osd^"):
            o = [r for r in rows if r["kernel"] == k and r["periodicity"] == per]
            if not o:
                continue
            ax.loglog([r["error"] for r in o], [r["evaluate_s"] for r in o], mk + "-", label=f"{per}: evaluate")
            ax.loglog([r["error"] for r in o], [r["one_shot_s"] for r in o], mk + "--", alpha=0.5,
                      label=f"{per}: one-shot")
        ax.set_xlabel("relative RMS error (against eps 1e-12)")
        ax.set_ylabel("seconds, one thread")
        ax.set_title(f"{k}, N = {a.n}, unit cube")
        ax.invert_xaxis()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
