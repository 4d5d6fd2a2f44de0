#!/usr/bin/env python3
"""Issue 12, item 1: FMA peak of one thread (bench/fma_peak) and the P2P GFLOP/s of each kernel as
a fraction of it; P2G and G2P points per second; first vs repeated evaluate; peak memory per point.

    python3 bench/ewald_issue12_p2p.py [--n 100000] [--eps 1e-6,1e-9]
        [--kernels laplace,stokeslet,stresslet,stokes-combined] [--repeats 3] [--fma-peak PATH]

Each (kernel, eps) runs in its own process (1 thread, OMP_NUM_THREADS=1): plan, set_points, one
first evaluate (tuning + pilot + evaluation), `repeats` more; the stage times are those of the
fastest repeat (Result.info.times). Pairs within r_c: ordered (target, source) pairs, self
excluded, counted with scipy.spatial.cKDTree.count_neighbors on the periodic unit box with the
plan's r_c; the library's own counts (Result.info.p2p: distance tests, evaluated pairs, erfcx
series degree) are recorded too.

Flops, two counts:
- "stated" (the first count of this study): per pair within r_c, FMA = 2, division and sqrt 1,
  exp and erfc 10 flop-equivalents each: laplace 30, stokeslet 60, stresslet 70, combined 100.
- "seed" (seed 000 section 5.1: f = pairs * C_p2p + 14 * distance tests): C_p2p = the flops the
  SIMD code executes per pair (float64, p2p_simd.cpp, FMA = 2, every add/mul/approximation 1):
  1/sqrt (approximation + 3 Newton steps) 14, x = xi r 2, t = 1/(1 + x/2) and u (approximation +
  3 Newton steps) 14, Clenshaw 3 * degree + 4, exp(-x^2) 36 (Highway's Exp: range reduction,
  degree-10 Estrin polynomial, scaling), erfc/r and the Gaussian 4: 74 + 3 * degree in all, plus
  the kernel's arithmetic (KERNEL_FLOPS: laplace 2, stokeslet 21, stresslet 55, combined 76).
Output: bench/results/ewald_issue12/p2p.{csv,md}.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402

FLOPS = {"laplace": 30, "stokeslet": 60, "stresslet": 70, "stokes-combined": 100}
KERNEL_FLOPS = {"laplace": 2, "stokeslet": 21, "stresslet": 55, "stokes-combined": 76}


def seed_flops_per_pair(kernel: str, degree: int) -> int:
    return 74 + 3 * degree + KERNEL_FLOPS[kernel]


def worker(kernel: str, n: int, eps: float, repeats: int) -> None:
    x, q, d, nu = C.data(kernel, n)
    base = C.vmhwm_mib()
    _, rec = C.run_plan(kernel, x, q, d, nu, eps, threads=1, repeats=repeats)
    rec["vmhwm_mib"] = C.vmhwm_mib()
    rec["vmhwm_before_plan_mib"] = base
    print(json.dumps(rec))


def fma_peak(path: str | None) -> dict:
    cands = [path] if path else [str(benchlib.REPO / "build-bench" / "bench" / "fma_peak"), "/tmp/fma_peak"]
    for c in cands:
        if c and Path(c).is_file():
            out = subprocess.run([c, "0.3", "7"], capture_output=True, text=True, check=True).stdout
            line = out.strip().splitlines()[-1]
            isa, chains, gd, gf, _ = line.rsplit(",", 4)
            return {"exe": c, "isa": isa.strip('"'), "chains": int(chains), "double_gflops": float(gd),
                    "float_gflops": float(gf)}
    sys.exit("fma_peak not found: cmake --build build-bench --target fma_peak")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=4)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--eps", default="1e-6,1e-9")
    ap.add_argument("--kernels", default="laplace,stokeslet,stresslet,stokes-combined")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fma-peak")
    a = ap.parse_args()
    if a.worker:
        k, n, e, r = a.worker
        worker(k, int(n), float(e), int(r))
        return
    from scipy.spatial import cKDTree

    info = benchlib.machine()
    peak = fma_peak(a.fma_peak)
    benchlib.log(f"FMA peak: {peak}")
    rows = []
    x = C.data("laplace", a.n)[0]
    tree = cKDTree(x, boxsize=1.0)
    for eps in [float(e) for e in a.eps.split(",")]:
        for k in a.kernels.split(","):
            benchlib.log(f"{k} eps={eps:g} load {benchlib.loadavg()}")
            rec = C.spawn(Path(__file__), [k, str(a.n), repr(eps), str(a.repeats)])
            pairs = int(tree.count_neighbors(tree, rec["rc"])) - a.n  # ordered pairs, self excluded
            rec["pairs_within_rc"] = pairs
            rec["pairs_per_target"] = pairs / a.n
            rec["flops_per_pair"] = FLOPS[k]
            rec["p2p_gflops"] = pairs * FLOPS[k] / rec["P2P"] / 1e9 if rec["P2P"] > 0 else float("nan")
            rec["fma_peak_double_gflops"] = peak["double_gflops"]
            rec["p2p_fraction_of_peak"] = rec["p2p_gflops"] / peak["double_gflops"]
            if rec.get("p2p_pairs"):
                c = seed_flops_per_pair(k, rec["series_degree"])
                f = rec["p2p_pairs"] * c + 14 * rec["p2p_candidates"]
                rec["seed_c_p2p"] = c
                rec["candidates_per_pair"] = rec["p2p_candidates"] / rec["p2p_pairs"]
                rec["p2p_seed_gflops"] = f / rec["P2P"] / 1e9
                rec["p2p_seed_fraction_of_peak"] = rec["p2p_seed_gflops"] / peak["double_gflops"]
            rec["pairs_per_s"] = pairs / rec["P2P"] if rec["P2P"] > 0 else float("nan")
            rec["p2g_points_per_s"] = a.n / rec["P2G"] if rec["P2G"] > 0 else float("nan")
            rec["g2p_points_per_s"] = a.n / rec["G2P"] if rec["G2P"] > 0 else float("nan")
            rec["bytes_per_point_peak"] = rec["vmhwm_mib"] * 2**20 / a.n
            rows.append(rec)
            benchlib.log(json.dumps(rec))
    info["loadavg_end"] = benchlib.loadavg()
    C.OUT.mkdir(parents=True, exist_ok=True)
    benchlib.write_csv(C.OUT / "p2p.csv", rows)
    cmd = "python3 " + " ".join(sys.argv)
    md = "# Issue 12, item 1: FMA peak, P2P GFLOP/s, P2G/G2P rates, first vs repeat, memory\n\n"
    md += C.header(info, cmd)
    md += (f"\nFMA peak, 1 thread ({peak['exe']}, {peak['isa']}, {peak['chains']} chains, best of 7 x 0.3 s): "
           f"**{peak['double_gflops']:.1f} GFLOP/s double, {peak['float_gflops']:.1f} GFLOP/s float**.\n\n")
    md += ("N = %d uniform in the unit cube, 1 thread, double precision, relative tolerance. Flops per pair "
           "(stated count, see the script): %s. Pairs = ordered (target, source) pairs with |r| < r_c (periodic), "
           "self excluded. Stage times = fastest of %d repeats; peak = VmHWM of the whole Python process "
           "(inputs and interpreter included).\n\n" % (a.n, FLOPS, a.repeats))
    md += benchlib.md_table(
        ["kernel", "eps", "rc", "grid", "P", "pairs/target", "P2P s", "P2P GFLOP/s", "frac of peak",
         "P2G pts/s", "G2P pts/s", "first s", "repeat s", "peak MiB", "B/point"],
        [[r["kernel"], f"{r['eps']:g}", f"{r['rc']:.4g}", r["grid"], r["P"], f"{r['pairs_per_target']:.0f}",
          benchlib.fmt(r["P2P"]), f"{r['p2p_gflops']:.2f}", f"{r['p2p_fraction_of_peak']:.3f}",
          f"{r['p2g_points_per_s']:.3g}", f"{r['g2p_points_per_s']:.3g}", benchlib.fmt(r["first_s"]),
          benchlib.fmt(r["repeat_best_s"]), f"{r['vmhwm_mib']:.0f}", f"{r['bytes_per_point_peak']:.0f}"]
         for r in rows])
    md += ("\n\nSeed-style count (seed 000 section 5.1, f = pairs x C_p2p + 14 x distance tests; C_p2p = the "
           "flops our SIMD code executes per pair, see the script's docstring; pairs and distance tests as counted "
           "by the library, Result.info.p2p):\n\n")
    md += benchlib.md_table(
        ["kernel", "eps", "erfcx degree", "C_p2p", "pairs (library)", "tests / pair", "P2P s",
         "GFLOP/s (seed count)", "frac of peak"],
        [[r["kernel"], f"{r['eps']:g}", r.get("series_degree"), r.get("seed_c_p2p"), r.get("p2p_pairs"),
          f"{r.get('candidates_per_pair', float('nan')):.2f}", benchlib.fmt(r["P2P"]),
          f"{r.get('p2p_seed_gflops', float('nan')):.2f}", f"{r.get('p2p_seed_fraction_of_peak', float('nan')):.3f}"]
         for r in rows])
    benchlib.write_atomic(C.OUT / "p2p.md", md)
    print(md)


if __name__ == "__main__":
    main()
