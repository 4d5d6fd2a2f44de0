#!/usr/bin/env python3
"""Issue 12: P2G/G2P variants (baseline vs cell-ordered) and thread scaling of the whole evaluate,
with peak memory per point, driving the C++ program bench/ewald_p2g_variants (one configuration
per process).

    python3 bench/ewald_issue12_p2g_variants.py --exe build-h2/bench/ewald_p2g_variants
        [--part variants,scaling] [--repeats 5] [--quick]

variants: N = 1e5 and 1e6 uniform (and N = 1e5 clustered), (eps, P) = (1e-5, 6) and (1e-6, 8),
  laplace and stokes-combined, threads 1 and 2; inside each process the two variants' P2G and
  G2P are timed alternately, best of `repeats` each (ratios measured side by side).
scaling: every kernel at N = 1e5, laplace and stokeslet also at 1e6, eps 1e-6: plans with 1 and 2
  threads evaluated alternately, best of `repeats`; stage times; peak memory (VmHWM delta) per point.
Output: bench/results/ewald_issue12/{p2g_variants,thread_scaling}.{csv,md}.
ELLIPTICA_EWALD_COSTS=builtin is set: the parameter choice does not depend on a per-machine
calibration (the same parameters on every machine).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import io
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "results" / "ewald_issue12"


def machine() -> dict:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines() if l.startswith("Model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in lscpu.splitlines() if l.startswith("Flags")), [])
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    return {"model": model, "avx2": "avx2" in flags, "avx512f": "avx512f" in flags, "cpus": os.cpu_count(),
            "git": git, "kernel": platform.release()}


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def run(exe: str, args: list[str]) -> tuple[list[dict], str]:
    env = dict(os.environ, ELLIPTICA_EWALD_COSTS="builtin")
    p = subprocess.run([exe] + args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{exe} {' '.join(args)} failed:\n{p.stderr}")
    return p.stdout, p.stderr


def header(exe: str, mode: str) -> list[str]:
    out, _ = run(exe, ["--mode", mode, "--header"])
    return out.strip().split(",")


def rows(exe: str, mode: str, args: list[str]) -> tuple[list[dict], str]:
    out, err = run(exe, ["--mode", mode] + args)
    h = header(exe, mode)
    return [dict(zip(h, r)) for r in csv.reader(io.StringIO(out)) if r], err.strip()


def md_block(cmd: str, m: dict, t0: str, t1: str, la0: str, la1: str) -> str:
    return (f"- command: `{cmd}`\n- date (UTC): {t0} - {t1}\n- CPU: `lscpu` model name **{m['model']}**, "
            f"{m['cpus']} CPUs, avx2 {'yes' if m['avx2'] else 'no'}, avx512f {'yes' if m['avx512f'] else 'no'}; "
            f"git HEAD {m['git']} plus the uncommitted working tree\n- load average (1/5/15 min) before: {la0}, "
            f"after: {la1} (2 cores shared with other work)\n")


def variants(exe: str, repeats: int, quick: bool, cmd: str, m: dict) -> None:
    t0, la0 = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), loadavg()
    cases = []
    for n, dist in [(100000, "uniform"), (100000, "clustered"), (1000000, "uniform")]:
        for eps, P in [(1e-5, 6), (1e-6, 8)]:
            if dist == "clustered" and P != 8:
                continue
            for kernel in ["laplace", "stokes-combined"]:
                for threads in [1, 2]:
                    cases.append((kernel, n, dist, eps, P, threads))
    if quick:
        cases = [c for c in cases if c[1] == 100000]
    allrows, notes = [], []
    for kernel, n, dist, eps, P, threads in cases:
        r, err = rows(exe, "variants", ["--kernel", kernel, "--n", str(n), "--dist", dist, "--eps", str(eps),
                                        "--P", str(P), "--threads", str(threads), "--repeats", str(repeats)])
        for x in r:
            x["loadavg"] = loadavg().split()[0]
        allrows += r
        notes.append(err)
        print(err, flush=True)
    t1, la1 = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), loadavg()
    keys = list(allrows[0].keys())
    with open(OUT / "p2g_variants.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(allrows)
    # table: one line per configuration, both variants
    lines = ["# P2G/G2P variants: baseline vs cell-ordered (issue 12)", "", md_block(cmd, m, t0, t1, la0, la1),
             f"Best of {repeats} per variant, the variants timed alternately in one process (the order "
             "swapped every repeat); points/s = N / best time. Parameters: the plan's tuning for eps "
             "with the window support fixed to P (ELLIPTICA_EWALD_COSTS=builtin), unit box, double. "
             "Grid components: laplace 1 (P2G) / 1 (G2P); stokes-combined 12 / 3. "
             "Speed-up = baseline time / cell-ordered time (the cell-ordered variant is the best of the two "
             "in every row).", "",
             "| kernel | points | N | eps | P | M | threads | P2G base pts/s | P2G cell pts/s | P2G speed-up "
             "| G2P base pts/s | G2P cell pts/s | G2P speed-up | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for x in allrows:
        by.setdefault((x["kernel"], x["dist"], x["N"], x["eps"], x["P"], x["threads"]), {})[x["variant"]] = x
    for (k, d, n, e, P, t), v in by.items():
        b, c = v["baseline"], v["cell_ordered"]
        lines.append(
            f"| {k} | {d} | {int(n):.0e} | {e} | {P} | {c['M1']} | {t} | {float(b['p2g_points_per_s']):.3g} | "
            f"{float(c['p2g_points_per_s']):.3g} | **{float(b['p2g_s']) / float(c['p2g_s']):.2f}** | "
            f"{float(b['g2p_points_per_s']):.3g} | {float(c['g2p_points_per_s']):.3g} | "
            f"**{float(b['g2p_s']) / float(c['g2p_s']):.2f}** | {c['loadavg']} |")
    (OUT / "p2g_variants.md").write_text("\n".join(lines) + "\n")


def scaling(exe: str, repeats: int, quick: bool, cmd: str, m: dict) -> None:
    t0, la0 = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), loadavg()
    cases = [(k, 100000) for k in ["laplace", "stokeslet", "stresslet", "stokes-combined"]]
    if not quick:
        cases += [("laplace", 1000000), ("stokeslet", 1000000)]
    allrows = []
    for kernel, n in cases:
        r, err = rows(exe, "scaling", ["--kernel", kernel, "--n", str(n), "--eps", "1e-6", "--repeats", str(repeats)])
        for x in r:
            x["loadavg"] = loadavg().split()[0]
        allrows += r
        print(kernel, n, "done", flush=True)
    t1, la1 = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), loadavg()
    keys = list(allrows[0].keys())
    with open(OUT / "thread_scaling.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(allrows)
    st = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "self"]
    lines = ["# Thread scaling of the whole evaluate and peak memory per point (issue 12)", "",
             md_block(cmd, m, t0, t1, la0, la1),
             f"eps 1e-6 (relative), uniform points in the unit cube, double, default P2G/G2P (cell-ordered). Two "
             f"plans (threads 1 and 2) on the same points, evaluated alternately, best of {repeats} repeats each "
             "(after a first evaluate each: tuning, set_points, pilot); the stage times are those of the fastest "
             "repeat. Speed-up = 1-thread time / 2-thread time. Peak memory = VmHWM after the 1-thread plan's "
             "first evaluate minus VmHWM before the plan was made (inputs excluded; the measured process peak, "
             "not the plan's own estimate), divided by N.", "",
             "| kernel | N | M | P | threads | total s | " + " | ".join(st) + " | speed-up | peak MiB | bytes/point | load |",
             "|" + "---|" * (11 + len(st))]
    by = {}
    for x in allrows:
        by.setdefault((x["kernel"], x["N"]), {})[x["threads"]] = x
    for (k, n), v in by.items():
        for t in ["1", "2"]:
            x = v[t]
            sp = float(v["1"]["total_s"]) / float(x["total_s"])
            lines.append(f"| {k} | {int(n):.0e} | {x['M']} | {x['P']} | {t} | {float(x['total_s']):.3g} | " +
                         " | ".join(f"{float(x[s + '_s']):.3g}" for s in st) +
                         f" | {'' if t == '1' else f'**{sp:.2f}**'} | {x['peak_mib'] if t == '1' else ''} | "
                         f"{x['peak_bytes_per_point'] if t == '1' else ''} | {x['loadavg']} |")
    (OUT / "thread_scaling.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default=str(REPO / "build-h2" / "bench" / "ewald_p2g_variants"))
    ap.add_argument("--part", default="variants,scaling")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="N = 1e5 only")
    a = ap.parse_args()
    cmd = "python3 bench/ewald_issue12_p2g_variants.py " + " ".join(sys.argv[1:])
    m = machine()
    OUT.mkdir(parents=True, exist_ok=True)
    for part in a.part.split(","):
        (variants if part == "variants" else scaling)(a.exe, a.repeats, a.quick, cmd, m)


if __name__ == "__main__":
    main()
