#!/usr/bin/env python3
"""Before/after benchmark of a refactoring: two builds of the `elliptica` CLI, run in turn
(A B A B ...) on the same inputs in one session, so that the ratio of each pair is meaningful on a
shared, noisy machine. Cases (issue 10's list):

  ewald : Laplace spectral Ewald, N = 1e5 uniform random points in the unit cube, charges uniform
          in [-1, 1] with the mean removed, tolerance 1e-6 (relative), 2 threads; the figure is the
          wall time of the whole process (file input + plan + evaluation + output);
  mg    : FD multigrid, 2D Poisson, 1024 intervals per axis (1023^2 unknowns), V-cycle (2,2) with
          the optimised 4th-kind Chebyshev-Jacobi smoother, PCG to 1e-6, 2 threads; figure: the
          solve time the CLI reports (set-up excluded) and the whole-process wall time;
  bem   : Burton-Miller BEM with the FMM operator on the unit icosphere of 20480 elements (or
          20 4^R with --bem-refinement R)
          (sound-hard, ka = 5, BD preconditioner, GMRES to 1e-5); figure: seconds per FMM matvec
          from summary.json (matvec_seconds / matvecs), plus set-up seconds.

Usage: python3 bench/before_after.py --before OLD/elliptica --after NEW/elliptica
           [--cases ewald,mg,bem] [--pairs 5] [--out bench/results/before_after]
Writes OUT.csv (one row per run) and OUT.md (medians and pair ratios after/before, the CPU model).
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
            else:
                name = platform.processor()
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
        isa = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "no AVX2")
        return f"{name} ({isa}, {os.cpu_count()} logical CPUs)"
    except OSError:
        return platform.processor()


def run(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"command failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return wall, p.stdout + p.stderr


def case_ewald(exe, work):
    src = os.path.join(work, "src.npy")
    q = os.path.join(work, "q.npy")
    if not os.path.exists(src):
        rng = np.random.default_rng(1)
        np.save(src, rng.random((100000, 3)))
        c = rng.uniform(-1, 1, 100000)
        np.save(q, c - c.mean())
    out = os.path.join(work, "phi.npy")
    wall, _ = run([exe, "ewald", "--box", "1", "--sources", src, "--strengths", q, "--tol", "1e-6",
                   "--threads", "2", "--out", out, "-q"])
    return {"wall_s": wall}


def case_mg(exe, work):
    wall, text = run([exe, "mg", "solve", "--problem", "poisson2d", "--n", "1024", "--smoother", "opt4",
                      "--order", "2,2", "--krylov", "pcg", "--tol", "1e-6", "--threads", "2"])
    m = re.search(r"time: setup ([0-9.eE+-]+) s, solve ([0-9.eE+-]+) s", text)
    row = {"wall_s": wall}
    if m:
        row["setup_s"], row["solve_s"] = float(m.group(1)), float(m.group(2))
    it = re.search(r"iterations: (\d+)", text)
    if it:
        row["iterations"] = int(it.group(1))
    return row


BEM_REFINEMENT = 5


def case_bem(exe, work):
    out = os.path.join(work, "bem_" + str(abs(hash(exe)) % 10**6))
    wall, _ = run([exe, "bem", "--mesh", f"sphere:1,{BEM_REFINEMENT}", "--k", "5", "--operator", "fmm", "--threads", "2",
                   "--far-field-points", "20", "--no-plots", "--out", out, "-q"])
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)

    def find(d, key):
        if isinstance(d, dict):
            if key in d:
                return d[key]
            for v in d.values():
                r = find(v, key)
                if r is not None:
                    return r
        return None

    mv, ms = find(s, "matvecs"), find(s, "matvec_seconds")
    row = {"wall_s": wall}
    if mv and ms:
        row["matvec_s"] = ms / mv
        row["matvecs"] = mv
    st = find(s, "operator_seconds")
    if st is not None:
        row["setup_operator_s"] = st
    return row


CASES = {"ewald": case_ewald, "mg": case_mg, "bem": case_bem}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--cases", default="ewald,mg,bem")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--out", default="bench/results/before_after")
    ap.add_argument("--bem-refinement", type=int, default=5,
                    help="icosphere refinement of the bem case (5: 20480 elements)")
    ap.add_argument("--bem-pairs", type=int, default=2, help="pairs of the bem case (it is the slow one)")
    a = ap.parse_args()
    global BEM_REFINEMENT
    BEM_REFINEMENT = a.bem_refinement
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in a.cases.split(","):
            fn = CASES[name]
            pairs = a.pairs if name != "bem" else a.bem_pairs
            fn(a.after, work)  # warm-up (page cache, first-touch)
            for i in range(pairs):
                for label, exe in (("before", a.before), ("after", a.after)):
                    r = fn(exe, work)
                    r.update(case=name, build=label, pair=i)
                    rows.append(r)
                    print(name, label, i, {k: v for k, v in r.items() if k not in ("case", "build", "pair")},
                          file=sys.stderr, flush=True)
    keys = sorted({k for r in rows for k in r} - {"case", "build", "pair"})
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".csv", "w") as f:
        f.write("case,build,pair," + ",".join(keys) + "\n")
        for r in rows:
            f.write(f"{r['case']},{r['build']},{r['pair']}," + ",".join(str(r.get(k, "")) for k in keys) + "\n")
    lines = [f"# Before/after ({cpu_model()})", "",
             f"`python3 bench/before_after.py --before {a.before} --after {a.after} --cases {a.cases} --pairs {a.pairs} "
             f"--bem-refinement {a.bem_refinement} --bem-pairs {a.bem_pairs}`",
             "", "| case | figure | before median | after median | after/before per pair: median (min-max) |",
             "|---|---|---|---|---|"]
    for name in a.cases.split(","):
        for k in keys:
            b = [r[k] for r in rows if r["case"] == name and r["build"] == "before" and k in r]
            f_ = [r[k] for r in rows if r["case"] == name and r["build"] == "after" and k in r]
            if not b or not f_ or k in ("iterations", "matvecs"):
                continue
            ratios = [y / x for x, y in zip(b, f_) if x > 0]
            lines.append(f"| {name} | {k} | {statistics.median(b):.4g} | {statistics.median(f_):.4g} | "
                         f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
