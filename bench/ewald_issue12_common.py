"""Shared helpers of the issue-12 spectral Ewald benchmarks (bench/ewald_issue12_*.py):
test data for the four kernels, one plan evaluation timed (first + best repeat), relative RMS
errors, the peak resident set, and the results folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

OUT = benchlib.RESULTS / "ewald_issue12"
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "setup", "self"]


def data(kernel: str, n: int, seed: int = 1):
    """Points uniform in the unit cube; strengths uniform in [-1, 1], mean removed; for the double
    layer dipoles likewise and random unit normals. Returns (x, strengths, dipoles, normals)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    q = rng.uniform(-1, 1, (n, 1 if kernel == "laplace" else 3))
    q -= q.mean(axis=0)
    d = rng.uniform(-1, 1, (n, 3))
    d -= d.mean(axis=0)
    nu = rng.normal(size=(n, 3))
    nu /= np.linalg.norm(nu, axis=1)[:, None]
    if kernel == "laplace":
        return x, q[:, 0].copy(), None, None
    if kernel == "stokeslet":
        return x, q, None, None
    if kernel == "stresslet":
        return x, None, d, nu
    return x, q, d, nu


def vmhwm_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    return float("nan")


def rel_rms(a, ref) -> float:
    a = np.asarray(a, float)
    ref = np.asarray(ref, float)
    return float(np.sqrt(np.sum((a - ref) ** 2) / np.sum(ref ** 2)))


def run_plan(kernel, x, q, d, nu, eps, threads=1, repeats=3, precision="double", energy=False,
             box=1.0, tol_kind="relative"):
    """Creates a plan, set_points, first evaluate (wall, includes tuning + pilot), then `repeats`
    evaluates; returns (values of the last evaluate, record dict). Stage times are those of the
    repeat with the smallest wall time."""
    import elliptica

    kw = dict(box=box, tol=eps, threads=threads, precision=precision, tol_kind=tol_kind)
    if energy:
        kw["energy"] = True
    plan = elliptica.EwaldPlan(kernel, **kw)
    t0 = time.perf_counter()
    plan.set_points(x, normals=nu)
    t_set = time.perf_counter() - t0
    args = (q,) if d is None else ((d,) if q is None and kernel == "stresslet" else (q, d))

    def ev():
        if kernel == "stresslet":
            return plan.evaluate(dipoles=d)
        if d is None:
            return plan.evaluate(q)
        return plan.evaluate(q, dipoles=d)

    t0 = time.perf_counter()
    r = ev()
    first = time.perf_counter() - t0
    best, best_times, best_p2p = float("inf"), None, {}
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = ev()
        w = time.perf_counter() - t0
        walls.append(w)
        if w < best:
            best, best_times = w, dict(r.info.times)
            best_p2p = dict(getattr(r.info, "p2p", {}) or {})
    p = plan.params
    rec = {"kernel": kernel, "eps": eps, "precision": precision, "n": x.shape[0], "threads": threads,
           "set_points_s": t_set, "first_s": first, "repeat_best_s": best,
           "repeat_median_s": float(np.median(walls)) if walls else float("nan"),
           "xi": p["xi"], "rc": p["rc"], "grid": "x".join(str(int(m)) for m in p["grid"]), "P": p["P"],
           "est_relative": p["est_relative"],
           "p2p_candidates": best_p2p.get("candidates"), "p2p_pairs": best_p2p.get("pairs"),
           "series_degree": best_p2p.get("series_degree")}
    if best_times is None:  # repeats = 0: the first evaluate's stage times
        best_times = dict(r.info.times)
    for s in STAGES:
        rec[s] = best_times.get(s, 0.0)
    vals = r.forces if energy else (r.potential if kernel == "laplace" else r.velocity)
    del args
    return np.array(vals, copy=True), rec


def spawn(script: Path, args: list[str], threads: int = 1, timeout: float = 900, taskset: str | None = None):
    """Runs `python3 script --worker args...` in its own process (own peak memory); returns the JSON
    it prints on its last stdout line."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = ([] if taskset is None else ["taskset", "-c", taskset]) + [sys.executable, str(script), "--worker"] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


def header(info: dict, command: str, extra: str = "") -> str:
    return (f"Command: `{command}`\n\nMachine:\n\n{benchlib.md_machine(info)}\n{extra}")
