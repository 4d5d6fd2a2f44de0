#!/usr/bin/env python3
"""Issue 12, item 1: FMA peak of one thread (bench/fma_peak) and the P2P GFLOP/s of each kernel as
a fraction of it; P2G and G2P points per second; first vs repeated evaluate; peak memory per point.

    python3 bench/ewald_issue12_p2p.py [--n 100000] [--eps 1e-6,1e-9]
        [--kernels laplace,stokeslet,stresslet,stokes-combined] [--repeats 3] [--fma-peak PATH]
        [--special-costs CSV]

Each (kernel, eps) runs in its own process (1 thread, OMP_NUM_THREADS=1): plan, set_points, one
first evaluate (tuning + pilot + evaluation), `repeats` more; the stage times are those of the
fastest repeat (Result.info.times). Pairs within r_c: ordered (target, source) pairs, self
excluded, counted with scipy.spatial.cKDTree.count_neighbors on the periodic unit box with the
plan's r_c; the library's own counts (Result.info.p2p: distance tests, evaluated pairs, erfcx
series degree) are recorded too.

Flops, three counts:
- "stated" (the first count of this study): per pair within r_c, FMA = 2, division and sqrt 1,
  exp and erfc 10 flop-equivalents each: laplace 30, stokeslet 60, stresslet 70, combined 100.
- "seed" (seed 000 section 5.1: f = pairs * C_p2p + 14 * distance tests): C_p2p = the flops the
  SIMD code executes per pair (float64 on AVX-512, p2p_simd.cpp, FMA = 2, every add/mul/
  approximation 1, integer ops not counted): 1/sqrt (14-bit estimate + 2 Newton steps) 10,
  x = xi r 2, t = 1/(1 + x/2) and u (FMA, 14-bit estimate + 2 Newton steps, FMA) 11, Clenshaw
  3 * degree + 4, exp(-x^2) 11 + 2 * exp_degree (-x^2, clamp, Cody-Waite reduction, Horner,
  scaling), erfc/r and the Gaussian 4: 42 + 3 * degree + 2 * exp_degree in all (degrees from
  Result.info.p2p), plus the kernel's arithmetic (KERNEL_FLOPS: laplace 2, stokeslet 21,
  stresslet 55, combined 76). This is what OUR code executes, not the seed's C_p2p.
- "seed flop-eq" (seed-faithful: seed 000 sections 4 and 5.1): the same f = pairs * C_p2p + 14 *
  distance tests, but C_p2p counts the arithmetic of the real-space kernel formulas as written
  (mul/add 1, FMA 2; listed per kernel in seed_flopeq_c_p2p) and prices each special function
  (sqrt for r, the division for 1/r, exp(-xi^2 r^2), erfc(xi r)) at its flop-equivalent measured
  on this machine, as the seed's Table 1 does on the GPU: flop-eq = (time per element of the
  function) / (time per element of one FMA) x 2. The costs come from bench/special_function_cost
  (a CSV, --special-costs; by default bench/results/ewald_issue12/special_function_cost.csv, or
  the program is run if found at build-bench/bench/ or /tmp/); the widest-vector rows (libmvec
  vector exp/erfc, vdivpd, vsqrtpd) are used. The Laplace potential erfc(xi r)/r has no exp; C_p2p
  includes the pair's offset and r^2 arithmetic (8 flops) although the 14 per distance test covers
  a test of every candidate too. This C_p2p does not depend on the erfcx degree. For
  its full Ewald kernel (Stokes single + double layer, i.e. our stokes-combined) the seed reports
  C_p2p = 318 on the A100 and 414 on the H200; ours is the same kind of number for this CPU.
  Without a cost CSV these columns are NaN.
Output: bench/results/ewald_issue12/p2p.{csv,md}.
"""
from __future__ import annotations

import argparse
import csv
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


def seed_flops_per_pair(kernel: str, degree: int, exp_degree: int) -> int:
    return 42 + 3 * degree + 2 * exp_degree + KERNEL_FLOPS[kernel]


# Seed-faithful count (seed 000, sections 4 and 5.1): arithmetic of the real-space formulas as
# written (kernel_traits.hpp; mul/add 1 flop, FMA 2), ec = erfc(xi r)/r, ce = (2 xi/sqrt(pi))
# e^{-xi^2 r^2}; constants (xi, xi^2, 2 xi/sqrt(pi), 2 xi^2) precomputed, not counted.
_SEED_COMMON = [  # every Stokes kernel: r, r^2, ec, ce (special functions priced separately)
    ("r = x_t - x_s: 3 sub", 3),
    ("r^2 = rx^2 + ry^2 + rz^2: 3 mul + 2 add", 5),
    ("xi r (erfc argument): 1 mul", 1),
    ("ec = erfc(xi r) * (1/r): 1 mul", 1),
    ("xi^2 r^2 (exp argument): 1 mul", 1),
    ("ce = (2 xi/sqrt(pi)) exp(-xi^2 r^2): 1 mul", 1),
]
_SEED_STOKESLET = [  # S^R f = A f + B r (r.f), A = ec - ce, B = (ec + ce)/r^2
    ("A = ec - ce: 1 add", 1),
    ("B = (ec + ce) (1/r)(1/r): 1 add + 2 mul", 3),
    ("r.f: 3 mul + 2 add", 5),
    ("B (r.f): 1 mul", 1),
    ("u_i += A f_i + [B (r.f)] r_i, i = 1..3: 2 FMA each", 12),
]
_SEED_STRESSLET = [  # T^R = A (r.q)(r.nu) r + B [(q.nu) r + (r.nu) q + (r.q) nu]
    ("1/r^2, 1/r^4, -2/r^4: 3 mul", 3),
    ("A = (-2/r^4)[3 ec + ce (3 + 2 xi^2 r^2)]: 2 xi^2 r^2, 3 ec, ce(..), A: 4 mul; 2 add", 6),
    ("B = 2 xi^2 ce: 1 mul", 1),
    ("r.q, r.nu, q.nu: 3 x (3 mul + 2 add)", 15),
    ("A (r.q)(r.nu) + B (q.nu): 3 mul + 1 add", 4),
    ("B (r.nu), B (r.q): 2 mul", 2),
    ("u_i += [..] r_i + [B r.nu] q_i + [B r.q] nu_i, i = 1..3: 3 FMA each", 18),
]
SEED_ARITH = {
    "laplace": [
        ("r = x_t - x_s: 3 sub", 3),
        ("r^2: 3 mul + 2 add", 5),
        ("xi r (erfc argument): 1 mul", 1),
        ("phi += q [erfc(xi r) / r]: 1 FMA (the division is a special function)", 2),
    ],
    "stokeslet": _SEED_COMMON + _SEED_STOKESLET,
    "stresslet": _SEED_COMMON + _SEED_STRESSLET,
    # stokeslet + stresslet sharing r, r^2, 1/r, 1/r^2, exp, erfc, ec, ce
    "stokes-combined": _SEED_COMMON + _SEED_STOKESLET + _SEED_STRESSLET
    + [("1/r^2 shared by the two parts: -1 mul", -1)],
}
# Special functions per pair, priced at their measured flop-equivalents. The Laplace potential
# erfc(xi r)/r has no Gaussian term: no exp, and erfc/r is the one division.
SEED_SPECIAL = {
    "laplace": ["sqrt", "div", "erfc"],
    "stokeslet": ["sqrt", "div", "exp", "erfc"],
    "stresslet": ["sqrt", "div", "exp", "erfc"],
    "stokes-combined": ["sqrt", "div", "exp", "erfc"],
}


def seed_flopeq_c_p2p(kernel: str, costs: dict | None) -> float:
    """Seed-faithful C_p2p of `kernel` (seed 000 sections 4 and 5.1): the arithmetic of the
    real-space formula as written plus, per pair, each special function at its measured
    flop-equivalent (costs: name -> flop-eq, from special_function_cost's CSV). NaN without costs.

    Arithmetic (mul/add 1, FMA 2; ec = erfc(xi r)/r, ce = (2 xi/sqrt(pi)) exp(-xi^2 r^2)):
      laplace 11: r = x_t - x_s 3 sub; r^2 3 mul + 2 add; xi r 1 mul; phi += q erfc(xi r)/r 1 FMA.
        Special: sqrt (r), div (erfc / r), erfc. No exp.
      common part of the Stokes kernels 12: r 3; r^2 5; xi r 1; ec = erfc * (1/r) 1 mul;
        xi^2 r^2 1 mul; ce 1 mul. Special: sqrt (r), div (1/r), exp, erfc.
      stokeslet 12 + 22 = 34: A = ec - ce 1 add; B = (ec + ce)/r^2 1 add + 2 mul; r.f 3 mul +
        2 add; B (r.f) 1 mul; u_i += A f_i + B (r.f) r_i 2 FMA x 3 = 12.
      stresslet 12 + 49 = 61: 1/r^2, 1/r^4, -2/r^4 3 mul; A = (-2/r^4)[3 ec + ce (3 + 2 xi^2
        r^2)] 4 mul + 2 add; B = 2 xi^2 ce 1 mul; r.q, r.nu, q.nu 3 x 5 = 15; A (r.q)(r.nu) +
        B (q.nu) 3 mul + 1 add; B (r.nu), B (r.q) 2 mul; u_i += .. r_i + .. q_i + .. nu_i
        3 FMA x 3 = 18.
      stokes-combined 12 + 22 + 49 - 1 = 82: both parts sharing r, r^2, 1/r, 1/r^2, exp, erfc.
    The 14 flops per distance test (seed's f) are added separately for every candidate."""
    arith = sum(f for _, f in SEED_ARITH[kernel])
    if not costs:
        return float("nan")
    return arith + sum(costs[s] for s in SEED_SPECIAL[kernel])


def special_costs(path: str | None, cpu: str | None) -> dict | None:
    """Flop-equivalents per special function from bench/special_function_cost's CSV: `path`, else
    bench/results/ewald_issue12/special_function_cost.csv, else the program (build-bench/bench/ or
    /tmp/special_function_cost) is run and writes that CSV. None (with a warning) if none is found."""
    default = C.OUT / "special_function_cost.csv"
    if path is None and not default.is_file():
        for exe in [benchlib.REPO / "build-bench" / "bench" / "special_function_cost",
                    Path("/tmp/special_function_cost")]:
            if exe.is_file():
                C.OUT.mkdir(parents=True, exist_ok=True)
                benchlib.log(f"running {exe} -> {default}")
                subprocess.run([str(exe), str(default)], stdout=subprocess.DEVNULL, check=True)
                break
    src = Path(path) if path else default
    if not src.is_file():
        benchlib.log("special-function costs not found (build bench/special_function_cost.cpp, see bench/README.md, "
                     "and pass --special-costs CSV): the seed flop-eq columns are NaN")
        return None
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    byname = {r["name"]: r for r in rows}
    out = {"csv": str(src), "isa": rows[0]["isa"], "cpu": rows[0]["cpu"],
           "fma_gflops": 2.0 / float(rows[0]["fma_ns_per_element"]), "rows": rows}
    for k in ["sqrt", "div", "exp", "erfc"]:
        out[k] = float(byname[k]["flop_equivalent"])
    if cpu and out["cpu"] != cpu:
        benchlib.log(f"warning: {src} was measured on '{out['cpu']}', this machine is '{cpu}'")
    return out


def worker(kernel: str, n: int, eps: float, repeats: int) -> None:
    x, q, d, nu = C.data(kernel, n)
    base = C.vmhwm_mib()
    _, rec = C.run_plan(kernel, x, q, d, nu, eps, threads=1, repeats=repeats)
    rec["vmhwm_mib"] = C.vmhwm_mib()
    rec["vmhwm_before_plan_mib"] = base
    print(json.dumps(rec))


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


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
    ap.add_argument("--special-costs", metavar="CSV",
                    help="CSV of bench/special_function_cost (flop-equivalents of sqrt, div, exp, erfc) "
                         "for the seed-faithful C_p2p; default: bench/results/ewald_issue12/special_function_cost.csv")
    a = ap.parse_args()
    if a.worker:
        k, n, e, r = a.worker
        worker(k, int(n), float(e), int(r))
        return
    from scipy.spatial import cKDTree

    info = benchlib.machine()
    peak = fma_peak(a.fma_peak)
    benchlib.log(f"FMA peak: {peak}")
    costs = special_costs(a.special_costs, cpu_model())
    if costs:
        benchlib.log("special-function flop-eq: " + ", ".join(f"{k} {costs[k]:.1f}" for k in ["sqrt", "div", "exp", "erfc"]))
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
                c = seed_flops_per_pair(k, rec["series_degree"], rec["exp_degree"])
                f = rec["p2p_pairs"] * c + 14 * rec["p2p_candidates"]
                rec["seed_c_p2p"] = c
                rec["candidates_per_pair"] = rec["p2p_candidates"] / rec["p2p_pairs"]
                rec["p2p_seed_gflops"] = f / rec["P2P"] / 1e9
                rec["p2p_seed_fraction_of_peak"] = rec["p2p_seed_gflops"] / peak["double_gflops"]
                ce = seed_flopeq_c_p2p(k, costs)
                fe = rec["p2p_pairs"] * ce + 14 * rec["p2p_candidates"]
                rec["seed_flopeq_c_p2p"] = round(ce, 2)
                rec["p2p_seed_flopeq_gflops"] = fe / rec["P2P"] / 1e9
                rec["p2p_seed_flopeq_fraction_of_peak"] = rec["p2p_seed_flopeq_gflops"] / peak["double_gflops"]
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
    md += ("\n\nSeed-style count (seed 000 section 5.1, f = pairs x C_p2p + 14 x distance tests; pairs and "
           "distance tests as counted by the library, Result.info.p2p). Two C_p2p: 'C_p2p' = the flops our SIMD "
           "code executes per pair; 'C_p2p (seed, flop-eq)' = the seed's own way (its section 4): the kernel "
           "formula's arithmetic plus sqrt, division, exp, erfc at their flop-equivalents measured on this "
           "CPU (seed: 318 on the A100, 414 on the H200 for its full Ewald kernel); see the script's "
           "docstring:\n\n")
    nan = float("nan")
    md += benchlib.md_table(
        ["kernel", "eps", "erfcx / exp degree", "C_p2p", "C_p2p (seed, flop-eq)", "pairs (library)", "tests / pair",
         "P2P s", "GFLOP/s (seed count)", "GFLOP/s (seed flop-eq)", "frac of peak", "frac of peak (seed flop-eq)"],
        [[r["kernel"], f"{r['eps']:g}", f"{r.get('series_degree')} / {r.get('exp_degree')}", r.get("seed_c_p2p"),
          f"{r.get('seed_flopeq_c_p2p', nan):.1f}", r.get("p2p_pairs"),
          f"{r.get('candidates_per_pair', nan):.2f}", benchlib.fmt(r["P2P"]),
          f"{r.get('p2p_seed_gflops', nan):.2f}", f"{r.get('p2p_seed_flopeq_gflops', nan):.2f}",
          f"{r.get('p2p_seed_fraction_of_peak', nan):.3f}", f"{r.get('p2p_seed_flopeq_fraction_of_peak', nan):.3f}"]
         for r in rows])
    if costs:
        md += (f"\n\nSpecial-function costs ({costs['csv']}; {costs['cpu']}, {costs['isa']}; one thread, double, "
               f"inputs uniform in [1e-3, 7]; flop-eq = ns/element / ns/element of one FMA x 2, FMA = "
               f"{costs['fma_gflops']:.1f} GFLOP/s):\n\n")
        md += benchlib.md_table(
            ["name", "implementation", "ns/element", "flop-eq"],
            [[c["name"], c["implementation"], f"{float(c['ns_per_element']):.4g}", f"{float(c['flop_equivalent']):.1f}"]
             for c in costs["rows"]])
        md += "\n\nSeed flop-eq C_p2p per kernel = arithmetic (flops) + special functions (flop-eq):\n\n"
        md += benchlib.md_table(
            ["kernel", "arithmetic", "special functions", "C_p2p (seed, flop-eq)"],
            [[k, sum(f for _, f in SEED_ARITH[k]),
              " + ".join(f"{s} {costs[s]:.1f}" for s in SEED_SPECIAL[k]), f"{seed_flopeq_c_p2p(k, costs):.1f}"]
             for k in a.kernels.split(",")])
    benchlib.write_atomic(C.OUT / "p2p.md", md)
    print(md)


if __name__ == "__main__":
    main()
