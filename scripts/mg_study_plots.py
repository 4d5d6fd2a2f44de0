#!/usr/bin/env python3
"""Plots of `elliptica mg study` (seed 003, section 3).

Usage: python3 scripts/mg_study_plots.py STUDY.csv OUTDIR

Reads the CSV written by `elliptica mg study` (columns lx, coarsening, mode, smoother, m, n, k,
iterations, matvecs, rho, final_rel_residual, converged, levels, op_complexity) and writes one PNG
per case (Lx, coarsening, mode = solver|gmres): OUTDIR/rho_Lx<Lx>_c<c>_<mode>.png, with one panel
per smoother kind showing the average convergence rate rho = (||r_N||/||r_0||)^(1/N) of the
symmetric (k,k) and the one-sided (2k,0) V-cycles against k. The k where the one-sided cycle has
the lower rho are shaded (the observed region where (2k,0) is preferred). Runs that failed (rho
not finite) are left out; runs that hit the iteration cap are drawn with open markers.
Exit status 0 on success, 2 on a bad or empty CSV.
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

REQUIRED = ["lx", "coarsening", "mode", "smoother", "m", "n", "k", "rho", "converged"]
LABELS = {"simple": "simple iteration", "cheb1": "1st-kind Chebyshev", "cheb1opt": "1st-kind, opt. lambda_min",
          "cheb4": "4th-kind Chebyshev", "opt4": "opt. 4th-kind Chebyshev"}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path, outdir = argv[1], argv[2]
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"mg_study_plots: cannot read {path}: {e}", file=sys.stderr)
        return 2
    if not rows or any(c not in rows[0] for c in REQUIRED):
        print(f"mg_study_plots: {path} is empty or lacks the columns {REQUIRED}", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    # data[(lx, c, mode)][smoother][(m, n)] = (rho, converged)
    data = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        rho = float(r["rho"])
        if not math.isfinite(rho):
            continue
        key = (float(r["lx"]), int(r["coarsening"]), r["mode"])
        data[key][r["smoother"]][(int(r["m"]), int(r["n"]))] = (rho, r["converged"] == "1")
    written = []
    for (lx, c, mode), per_kind in sorted(data.items()):
        kinds = [k for k in LABELS if k in per_kind] + [k for k in per_kind if k not in LABELS]
        fig, axes = plt.subplots(1, len(kinds), figsize=(3.6 * len(kinds), 3.4), squeeze=False, sharey=True)
        for ax, kind in zip(axes[0], kinds):
            runs = per_kind[kind]
            kmax = max((m + n) // 2 for (m, n) in runs)
            ks, sym, one = [], [], []
            for k in range(1, kmax + 1):
                if (k, k) in runs and (2 * k, 0) in runs:
                    ks.append(k)
                    sym.append(runs[(k, k)])
                    one.append(runs[(2 * k, 0)])
            for k, s, o in zip(ks, sym, one):
                if o[0] < s[0]:
                    ax.axvspan(k - 0.5, k + 0.5, color="tab:orange", alpha=0.12, lw=0)
            for series, label, color, marker in ((sym, "(k,k)", "tab:blue", "o"), (one, "(2k,0)", "tab:orange", "s")):
                ax.plot(ks, [v[0] for v in series], color=color, label=label)
                conv = [(k, v[0]) for k, v in zip(ks, series) if v[1]]
                capped = [(k, v[0]) for k, v in zip(ks, series) if not v[1]]
                if conv:
                    ax.plot(*zip(*conv), marker, color=color)
                if capped:
                    ax.plot(*zip(*capped), marker, color=color, mfc="none")
            ax.set_title(LABELS.get(kind, kind), fontsize=9)
            ax.set_xlabel("k")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("rho")
        axes[0][0].legend(fontsize=8, title="shaded: (2k,0) better", title_fontsize=7)
        fig.suptitle(f"2D FD Poisson, Lx = {lx:g}, n_c = n/{c}, multigrid as {'solver' if mode == 'solver' else 'GMRES(20) preconditioner'}",
                     fontsize=10)
        fig.tight_layout()
        name = os.path.join(outdir, f"rho_Lx{lx:g}_c{c}_{mode}.png")
        tmp = name + ".tmp.png"
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        os.replace(tmp, name)  # atomic
        written.append(name)
    if not written:
        print(f"mg_study_plots: no finite rho values in {path}", file=sys.stderr)
        return 2
    print(f"mg_study_plots: wrote {len(written)} PNG files to {outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
