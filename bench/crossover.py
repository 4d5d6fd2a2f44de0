#!/usr/bin/env python3
"""Crossover with the direct O(N^2) sum (issue 2, "Performance").

Direct sum: bench/direct_sum, a plain pairwise minimum-image kernel sum over all pairs (OpenMP,
vectorised, double) - the cheapest possible O(N^2) pass. It is NOT a converged periodic sum, so the
crossover it gives is a LOWER bound on the crossover with any converged direct periodic method
(e.g. the classical Ewald reference tests/reference/direct_ewald.cpp, which costs more).
Ours: bench/ewald_scaling at eps 1e-6 and 1e-9 (relative), the per-evaluation time of the tuned
plan (best of the repeats) and the first call (with parameter choice + pilot).
Same points and strengths for both (same generator and seed), same number of threads.

    python3 bench/crossover.py [--build-dir build-bench] [--ns 1e3,2e3,5e3,1e4,2e4] [--threads 1]
                               [--kernels laplace,stokeslet] [--eps 1e-6,1e-9]

Output: bench/results/crossover.{csv,md,png}.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import benchlib as B


def crossing(ns: list[float], td: list[float], to: list[float]) -> tuple[float, str]:
    """N where the direct time equals ours, by log-log interpolation between the two measured N
    around the sign change (or extrapolation from the nearest pair if there is none)."""
    ld = [math.log(t) for t in td]
    lo = [math.log(t) for t in to]
    ln = [math.log(n) for n in ns]
    diff = [a - b for a, b in zip(ld, lo)]  # > 0: direct slower
    for i in range(len(ns) - 1):
        if diff[i] <= 0 < diff[i + 1]:
            f = -diff[i] / (diff[i + 1] - diff[i])
            return math.exp(ln[i] + f * (ln[i + 1] - ln[i])), "interpolated"
    i = 0 if diff[0] > 0 else len(ns) - 2
    slope = (diff[i + 1] - diff[i]) / (ln[i + 1] - ln[i])
    if slope <= 0:
        return float("nan"), "no crossing"
    return math.exp(ln[i] - diff[i] / slope), "extrapolated"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir")
    ap.add_argument("--out-dir", default=str(B.RESULTS))
    ap.add_argument("--ns", default="1e3,2e3,5e3,1e4,2e4")
    ap.add_argument("--eps", default="1e-6,1e-9")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kernels", default="laplace,stokeslet")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    dexe = B.find_exe(a.build_dir, "direct_sum")
    eexe = B.find_exe(a.build_dir, "ewald_scaling")
    out_dir = Path(a.out_dir)
    info = B.machine()
    cmd = (f"python3 bench/crossover.py --ns {a.ns} --eps {a.eps} --threads {a.threads} "
           f"--kernels {a.kernels} --repeats {a.repeats}")
    ns = [int(float(x)) for x in a.ns.split(",")]
    epss = [float(e) for e in a.eps.split(",")]
    rows = []
    for kern in a.kernels.split(","):
        for n in ns:
            reps = a.repeats if n <= 5000 else max(1, min(a.repeats, 2))
            d = B.run_driver(dexe, ["--kernel", kern, "--n", n, "--threads", a.threads, "--repeats", reps]).split(",")
            row = {"kernel": kern, "N": n, "threads": a.threads, "direct_s": float(d[4])}
            for eps in epss:
                rec = B.ewald_json(eexe, kern, n, eps, a.threads, a.repeats)
                row[f"ours_{eps:.0e}_s"] = rec["total_s"]
                row[f"ours_{eps:.0e}_first_s"] = rec["first_call_s"]
                row[f"M_{eps:.0e}"] = rec["M"][0]
            rows.append(row)
            B.write_csv(out_dir / "crossover.csv", rows)
    info["loadavg_end"] = B.loadavg()

    # Crossovers.
    cross = []
    for kern in a.kernels.split(","):
        sel = [r for r in rows if r["kernel"] == kern]
        N = [float(r["N"]) for r in sel]
        td = [r["direct_s"] for r in sel]
        for eps in epss:
            for what, key in (("tuned plan", f"ours_{eps:.0e}_s"), ("first call", f"ours_{eps:.0e}_first_s")):
                nx, how = crossing(N, td, [r[key] for r in sel])
                cross.append([kern, f"{eps:.0e}", what, f"{nx:.3g}" if nx == nx else "-", how])

    hdr = ["kernel", "N", "direct O(N^2)"] + sum(
        ([f"ours {e:.0e}", f"ours {e:.0e} first call", f"M ({e:.0e})"] for e in epss), [])
    body = [[r["kernel"], r["N"], B.fmt(r["direct_s"])] +
            sum(([B.fmt(r[f"ours_{e:.0e}_s"]), B.fmt(r[f"ours_{e:.0e}_first_s"]), r[f"M_{e:.0e}"]] for e in epss), [])
            for r in rows]
    md = (f"# Crossover with the direct O(N^2) sum\n\nCommand: `{cmd}`\n\nSeconds per evaluation "
          f"({a.threads} thread(s); best of repeats). Direct = plain pairwise minimum-image kernel sum "
          "(bench/direct_sum.cpp; a lower bound on any converged direct periodic sum). Ours = tuned plan "
          "per evaluation; 'first call' includes the parameter choice and the pilot evaluation.\n\n"
          "Machine:\n" + B.md_machine(info) + "\n" + B.md_table(hdr, body) +
          "\nCrossover N (direct slower above it):\n\n" +
          B.md_table(["kernel", "eps", "ours", "crossover N", "how"], cross))
    B.write_atomic(out_dir / "crossover.md", md)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kernels = a.kernels.split(",")
    fig, axes = plt.subplots(1, len(kernels), figsize=(6 * len(kernels), 4.5), squeeze=False)
    for ax, kern in zip(axes[0], kernels):
        sel = [r for r in rows if r["kernel"] == kern]
        N = [r["N"] for r in sel]
        ax.loglog(N, [r["direct_s"] for r in sel], "o-k", label="direct O(N^2) (min. image)")
        for i, eps in enumerate(epss):
            ax.loglog(N, [r[f"ours_{eps:.0e}_s"] for r in sel], "s-", color=f"C{i}", label=f"spectral Ewald {eps:.0e}")
            ax.loglog(N, [r[f"ours_{eps:.0e}_first_s"] for r in sel], "s:", color=f"C{i}",
                      label=f"spectral Ewald {eps:.0e}, first call")
        ax.set_title(f"{kern}, {a.threads} thread(s)")
        ax.set_xlabel("N")
        ax.set_ylabel("seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = out_dir / ".crossover.tmp.png"
    fig.savefig(tmp, dpi=110)
    tmp.replace(out_dir / "crossover.png")
    print(md)


if __name__ == "__main__":
    main()
