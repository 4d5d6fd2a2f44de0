#!/usr/bin/env python3
"""Plots of `elliptica mg sem-study` (seed 003, section 6).

Usage: python3 scripts/sem_study_plots.py SEM_STUDY.csv OUTDIR

Reads the CSV written by `elliptica mg sem-study` (columns eps, kind, base, schedule, cheb_order,
cycle, iterations, converged, solve_s, ...) and writes, per (eps, base), one PNG
OUTDIR/sem_eps<eps>_<base>.png with two panels: Krylov iterations and solve time [s] against the
Chebyshev order k (the one-sided (2k,0) cycle drawn at the same k: it costs what (k,k) costs), one
colour per smoother kind, solid lines with filled circles for the symmetric cycle and dashed lines
with triangles for the one-sided one. Runs that failed are left out; runs that did not converge
are drawn with open markers. Also OUTDIR/sem_best.png: per eps, the fastest solve time of each
(base, cycle). Needs matplotlib. Exit status 0 on success, 2 on a bad or empty CSV.
"""
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

REQUIRED = ["eps", "kind", "base", "cheb_order", "cycle", "iterations", "converged", "solve_s", "failure"]
KIND_ORDER = ["simple", "cheb1", "cheb1opt", "cheb4", "opt4"]
COLOURS = {"simple": "tab:gray", "cheb1": "tab:blue", "cheb1opt": "tab:orange", "cheb4": "tab:green",
           "opt4": "tab:red"}
BASE_COLOURS = {"jacobi": "tab:blue", "asm": "tab:orange", "asm-weighted": "tab:olive", "ras": "tab:green"}


def fail(msg):
    print(f"sem_study_plots.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (rd.fieldnames or [])]
            if missing:
                fail(f"{path}: missing columns {', '.join(missing)}")
            rows = []
            for r in rd:
                try:
                    rows.append({
                        "eps": float(r["eps"]), "kind": r["kind"], "base": r["base"],
                        "k": int(r["cheb_order"]), "cycle": r["cycle"],
                        "it": int(r["iterations"]), "conv": r["converged"] == "1",
                        "t": float(r["solve_s"]), "failed": bool(r["failure"]),
                    })
                except ValueError as e:
                    fail(f"{path}: bad value ({e})")
    except OSError as e:
        fail(f"{path}: {e}")
    if not rows:
        fail(f"{path}: no runs")
    return rows


def kind_key(k):
    return KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = read_rows(argv[1])
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    cases = defaultdict(list)
    for r in rows:
        if not r["failed"]:
            cases[(r["eps"], r["base"])].append(r)
    written = []
    for (eps, base), rs in sorted(cases.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for kind in sorted({r["kind"] for r in rs}, key=kind_key):
            for cyc, ls, mk in (("symmetric", "-", "o"), ("one-sided", "--", "^")):
                sel = sorted((r for r in rs if r["kind"] == kind and r["cycle"] == cyc), key=lambda r: r["k"])
                if not sel:
                    continue
                c = COLOURS.get(kind, "black")
                ks = [r["k"] for r in sel]
                for ax, key in ((axes[0], "it"), (axes[1], "t")):
                    ax.plot(ks, [r[key] for r in sel], ls, color=c, label=f"{kind} {cyc}")
                    conv = [r for r in sel if r["conv"]]
                    unconv = [r for r in sel if not r["conv"]]
                    ax.plot([r["k"] for r in conv], [r[key] for r in conv], mk, color=c)
                    ax.plot([r["k"] for r in unconv], [r[key] for r in unconv], mk, color=c, mfc="none")
        axes[0].set_ylabel("iterations to rel. residual")
        axes[1].set_ylabel("solve time [s]")
        for ax in axes:
            ax.set_xlabel("Chebyshev order k (symmetric (k,k); one-sided (2k,0))")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        axes[1].set_yscale("log")
        axes[0].legend(fontsize=7, ncol=2)
        fig.suptitle(f"SEM pMG, Kershaw eps = {eps:g}, base {base}")
        fig.tight_layout()
        name = os.path.join(out, f"sem_eps{eps:g}_{base}.png")
        fig.savefig(name, dpi=110)
        plt.close(fig)
        written.append(name)

    # Fastest converged solve per (eps, base, cycle).
    best = {}
    for r in rows:
        if r["failed"] or not r["conv"]:
            continue
        key = (r["eps"], r["base"], r["cycle"])
        if key not in best or r["t"] < best[key]["t"]:
            best[key] = r
    if best:
        eps_list = sorted({k[0] for k in best}, reverse=True)
        combos = sorted({(k[1], k[2]) for k in best})
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(eps_list) * len(combos) / 3), 4.2))
        w = 0.8 / max(1, len(combos))
        for j, (base, cyc) in enumerate(combos):
            xs, ys = [], []
            for i, eps in enumerate(eps_list):
                r = best.get((eps, base, cyc))
                if r:
                    xs.append(i + (j - (len(combos) - 1) / 2) * w)
                    ys.append(r["t"])
                    ax.annotate(f"{r['kind']}({r['k'] if cyc == 'symmetric' else 2 * r['k']})", (xs[-1], ys[-1]),
                                rotation=90, fontsize=6, ha="center", va="bottom")
            ax.bar(xs, ys, width=w, label=f"{base} {cyc}", color=BASE_COLOURS.get(base, "tab:gray"),
                   alpha=1.0 if cyc == "symmetric" else 0.55, hatch="//" if cyc == "one-sided" else None,
                   edgecolor="black", linewidth=0.5)
        ax.set_xticks(range(len(eps_list)))
        ax.set_xticklabels([f"eps = {e:g}" for e in eps_list])
        ax.set_ylabel("fastest solve time [s]")
        top = max(r["t"] for r in best.values())
        ax.set_ylim(0, top * 1.35 if math.isfinite(top) and top > 0 else 1)
        ax.legend(fontsize=7, ncol=2)
        ax.set_title("fastest converged solve per base and cycle (label: kind(order))")
        fig.tight_layout()
        name = os.path.join(out, "sem_best.png")
        fig.savefig(name, dpi=110)
        plt.close(fig)
        written.append(name)
    for n in written:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
