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
           "series_degree": best_p2p.get("series_degree"), "exp_degree": best_p2p.get("exp_degree")}
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


def direct_fmm3d(x, idx, charges=None, stoklet=None, strslet=None, strsvec=None, block=1 << 16):
    """FMM3D's free-space sums evaluated directly (numpy, O(K N)) at the sources x[idx], the self
    term excluded, with fmm3dpy 2.1.0's conventions (verified numerically against lfmm3d / stfmm3d
    at eps 1e-12, N = 2000: rel. diff. < 1e-12), r = target - source:
      lfmm3d pot                 = sum q / (4 pi |r|)
      stfmm3d stoklet f          : u = 1/(8 pi) sum (f / |r| + r (r . f) / |r|^3)
      stfmm3d strslet mu, strsvec nu : u = +3/(4 pi) sum r (r . mu)(r . nu) / |r|^5
    (the stresslet is the NEGATIVE of ours, -6/(8 pi) r r r / |r|^5). Returns (K,) for the
    charges, (K, 3) for the Stokes densities (stoklet and strslet may be given together).
    Targets in blocks of 8, sources in blocks of `block` / 8 (the temporaries stay in cache)."""
    x = np.asarray(x, float)
    t = x[np.asarray(idx)]
    n, k = x.shape[0], t.shape[0]
    stokes = stoklet is not None or strslet is not None
    out = np.zeros((k, 3) if stokes else k)
    bt = 8
    bs = max(1, block // bt)
    c_lap, c_slet, c_dlet = 1.0 / (4 * np.pi), 1.0 / (8 * np.pi), 3.0 / (4 * np.pi)
    for a in range(0, k, bt):
        tb = t[a:a + bt]
        acc = np.zeros((tb.shape[0], 3) if stokes else tb.shape[0])
        for s0 in range(0, n, bs):
            y = x[s0:s0 + bs]
            dx = tb[:, 0:1] - y[:, 0]
            dy = tb[:, 1:2] - y[:, 1]
            dz = tb[:, 2:3] - y[:, 2]
            r2 = dx * dx + dy * dy + dz * dz
            r2[r2 == 0.0] = np.inf  # the self term (and any coincident source) excluded
            ri = 1.0 / np.sqrt(r2)
            if charges is not None:
                acc += c_lap * (ri @ charges[s0:s0 + bs])
                continue
            ri2 = ri * ri
            w = np.zeros_like(ri)
            if stoklet is not None:
                f = stoklet[s0:s0 + bs]
                acc += c_slet * (ri @ f)
                w += c_slet * (dx * f[:, 0] + dy * f[:, 1] + dz * f[:, 2]) * ri2 * ri
            if strslet is not None:
                m, v = strslet[s0:s0 + bs], strsvec[s0:s0 + bs]
                w += (c_dlet * (dx * m[:, 0] + dy * m[:, 1] + dz * m[:, 2])
                      * (dx * v[:, 0] + dy * v[:, 1] + dz * v[:, 2]) * (ri2 * ri2 * ri))
            acc[:, 0] += np.einsum("ij,ij->i", dx, w)
            acc[:, 1] += np.einsum("ij,ij->i", dy, w)
            acc[:, 2] += np.einsum("ij,ij->i", dz, w)
        out[a:a + bt] = acc
    return out


def plan_at_targets(kernel, x, q, d, nu, targets, eps, threads=1, overrides=None, box=1.0):
    """Our plan with x as sources and separate `targets` (a target coinciding with a source
    excludes that singular term, as the targets = sources evaluation does): one evaluate.
    `overrides`: EwaldPlan keyword overrides (xi, rc, grid, P, beta, degree). Returns (values at
    the targets, record with set_points_s, first_s and the parameters)."""
    import elliptica

    plan = elliptica.EwaldPlan(kernel, box=box, tol=eps, threads=threads, **(overrides or {}))
    t0 = time.perf_counter()
    plan.set_points(x, np.asarray(targets, float), normals=nu)
    t_set = time.perf_counter() - t0
    t0 = time.perf_counter()
    if kernel == "stresslet":
        r = plan.evaluate(dipoles=d)
    elif d is None:
        r = plan.evaluate(q)
    else:
        r = plan.evaluate(q, dipoles=d)
    first = time.perf_counter() - t0
    p = plan.params
    rec = {"kernel": kernel, "eps": eps, "n": x.shape[0], "m": len(targets), "set_points_s": t_set,
           "first_s": first, "xi": p["xi"], "rc": p["rc"], "grid": "x".join(str(int(v)) for v in p["grid"]),
           "P": p["P"], "beta": p["beta"], "poly_degree": p["poly_degree"]}
    vals = r.potential if kernel == "laplace" else r.velocity
    return np.array(vals, copy=True), rec
