#!/usr/bin/env python3
"""Scaling study (issue 2, "Performance"): per-stage times and peak memory of the spectral Ewald
plan for N uniform points in the unit cube, each configuration in its own process
(bench/ewald_scaling), written to bench/results/scaling.{csv,md,png}.

    python3 bench/run_scaling.py [--build-dir build-bench] [--ns 1e4,1e5,1e6] [--eps 1e-6,1e-9]
                                 [--threads 1,2] [--kernels laplace,stokeslet] [--repeats 3]

The plotting/table functions are also used by vs_finufft.py --scaling-out (run_all.sh), which
measures the same configurations once for both studies.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import benchlib as B


def scaling_md(rows: list[dict], info: dict, cmd: str) -> str:
    hdr = ["kernel", "eps", "thr", "N", "first call", "total", "P2P", "P2G", "FFT", "CNV", "IFFT", "G2P",
           "setup", "self", "xi", "rc", "M", "P", "peak MiB"]
    body = []
    for r in rows:
        body.append([r["kernel"], f"{float(r['eps']):.0e}", r["threads"], f"{int(float(r['N'])):.0e}",
                     B.fmt(r["first_call_s"]), B.fmt(r["total_s"])] + [B.fmt(r[s]) for s in B.STAGES] +
                    [f"{float(r['xi']):.4g}", f"{float(r['rc']):.4g}", f"{r['M1']}x{r['M2']}x{r['M3']}",
                     r["P"], f"{float(r['peak_rss_mib']):.0f}"])
    return (f"# Scaling study\n\nCommand: `{cmd}`\n\nTimes in seconds: 'first call' = first evaluate "
            "(parameter choice + pilot + evaluation), other columns = the best of the repeated evaluations "
            "of the tuned plan. Peak MiB = VmHWM (peak resident set) of the driver process, one configuration per "
            "process, input arrays included.\n\nMachine:\n" + B.md_machine(info) + "\n" + B.md_table(hdr, body) +
            "\n" + growth_md(rows))


def growth_md(rows: list[dict]) -> str:
    """Growth exponents of the total time between successive N (ideal N log N ~ 1.1-1.2)."""
    out = ["| kernel | eps | thr | N1 -> N2 | t2/t1 | exponent log(t2/t1)/log(N2/N1) |", "|---|---|---|---|---|---|"]
    key = lambda r: (r["kernel"], float(r["eps"]), int(r["threads"]))
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    for k, g in groups.items():
        g.sort(key=lambda r: float(r["N"]))
        for a, b in zip(g, g[1:]):
            ta, tb, na, nb = float(a["total_s"]), float(b["total_s"]), float(a["N"]), float(b["N"])
            out.append(f"| {k[0]} | {k[1]:.0e} | {k[2]} | {na:.0e} -> {nb:.0e} | {tb / ta:.3g} | "
                       f"{math.log(tb / ta) / math.log(nb / na):.3f} |")
    return "Growth of the total time per evaluation (N log N from 1e4 to 1e5 would give exponent 1.2):\n\n" + \
        "\n".join(out) + "\n"


def plot_scaling(rows: list[dict], png: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = sorted({r["kernel"] for r in rows})
    epss = sorted({float(r["eps"]) for r in rows}, reverse=True)
    fig, axes = plt.subplots(len(kernels), len(epss), figsize=(6 * len(epss), 4.6 * len(kernels)),
                             squeeze=False, sharex=True)
    colors = {"P2P": "C0", "P2G": "C1", "FFT": "C2", "CNV": "C3", "IFFT": "C4", "G2P": "C5", "total": "k"}
    for i, kern in enumerate(kernels):
        for j, eps in enumerate(epss):
            ax = axes[i][j]
            for thr, ls in ((1, "-"), (2, "--")):
                sel = sorted((r for r in rows if r["kernel"] == kern and float(r["eps"]) == eps
                              and int(r["threads"]) == thr), key=lambda r: float(r["N"]))
                if not sel:
                    continue
                N = [float(r["N"]) for r in sel]
                for st in ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "total"]:
                    if thr == 2 and st != "total":
                        continue
                    t = [float(r["total_s" if st == "total" else st]) for r in sel]
                    ax.loglog(N, t, ls, marker="o", color=colors[st], ms=4,
                              label=f"{st} ({thr} thr)" if st == "total" else st)
                if thr == 1:  # N log N reference through the smallest-N total
                    t0, n0 = float(sel[0]["total_s"]), N[0]
                    ref = [t0 * (n * math.log(n)) / (n0 * math.log(n0)) for n in N]
                    ax.loglog(N, ref, ":", color="gray", lw=2, label="N log N")
            ax.set_title(f"{kern}, eps = {eps:.0e}")
            ax.set_xlabel("N")
            ax.set_ylabel("seconds per evaluation")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
    fig.suptitle("Spectral Ewald: per-stage time vs N (1 thread; total also for 2 threads)")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    tmp = png.with_name("." + png.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(png)
    plt.close(fig)


def write_scaling(rows: list[dict], out_dir: Path, info: dict, cmd: str) -> None:
    B.write_csv(out_dir / "scaling.csv", rows)
    B.write_atomic(out_dir / "scaling.md", scaling_md(rows, info, cmd))
    plot_scaling(rows, out_dir / "scaling.png")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir")
    ap.add_argument("--out-dir", default=str(B.RESULTS))
    ap.add_argument("--ns", default="1e4,1e5,1e6")
    ap.add_argument("--eps", default="1e-6,1e-9")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--kernels", default="laplace,stokeslet")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--merge", action="store_true",
                    help="replace only the measured configurations in an existing scaling.csv (e.g. to "
                         "remeasure ones disturbed by other load), keeping the others")
    a = ap.parse_args()
    exe = B.find_exe(a.build_dir, "ewald_scaling")
    info = B.machine()
    cmd = "python3 bench/run_scaling.py " + " ".join(
        f"--{k} {v}" for k, v in [("ns", a.ns), ("eps", a.eps), ("threads", a.threads),
                                  ("kernels", a.kernels), ("repeats", a.repeats)])
    rows = []
    old = B.read_csv(Path(a.out_dir) / "scaling.csv") if a.merge and (Path(a.out_dir) / "scaling.csv").exists() else []
    for kern in a.kernels.split(","):
        for eps in [float(e) for e in a.eps.split(",")]:
            for n in [int(float(x)) for x in a.ns.split(",")]:
                for thr in [int(t) for t in a.threads.split(",")]:
                    rec = B.ewald_json(exe, kern, n, eps, thr, a.repeats if n < 10**6 else min(a.repeats, 2))
                    rows.append(B.flatten(rec))
                    if not a.merge:
                        B.write_csv(Path(a.out_dir) / "scaling.csv", rows)  # partial results survive a crash
    info["loadavg_end"] = B.loadavg()
    if old:
        key = lambda r: (r["kernel"], int(float(r["N"])), float(r["eps"]), int(float(r["threads"])))
        new = {key(r): r for r in rows}
        rows = [new.pop(key(r), r) for r in old] + list(new.values())
        cmd += " --merge (remeasured configurations replaced in the previous table)"
    write_scaling(rows, Path(a.out_dir), info, cmd)
    print((Path(a.out_dir) / "scaling.md").read_text())


if __name__ == "__main__":
    main()
