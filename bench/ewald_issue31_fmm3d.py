#!/usr/bin/env python3
"""Issue 31: free-space (0P) spectral Ewald against FMM3D (PyPI fmm3dpy) at equal measured accuracy,
one thread, the like-for-like comparison (both sum in free space).

    python3 bench/ewald_issue31_fmm3d.py [--n 100000] [--eps 1e-3,1e-6,1e-9,1e-12]
        [--kernels laplace,stokeslet,stresslet] [--sample 1000] [--repeats 3] [--out-prefix fmm3d_0p]
        [--distribution cube|sphere]

Pairs: lfmm3d (potential of charges; FMM3D's pot is sum q / (4 pi r): times 4 pi) against our
laplace 0P; stfmm3d(stoklet) (u = 1/(8 pi) sum S f) against our stokeslet 0P (viscosity 1: the
same sum); stfmm3d(strslet, strsvec) (u = 3/(4 pi) sum r (r.q)(r.nu) / r^5, the negative of ours:
times -1) against our stresslet 0P, dipoles q uniform in [-1, 1]^3 and random unit normals nu. Points: N uniform in the unit cube (or on the unit sphere's surface, --distribution
sphere: a boundary-integral-like set, 1/8 of the extended box's grid is data); charges and forces
uniform in [-1, 1] per component (not neutral: free space needs no neutrality). Errors: the
relative RMS over K = --sample source points (seed 12345, without replacement) against the
direct free-space sum at those points (numpy, O(K N), self term excluded), the same reference
for both codes.

Times (best of --repeats, each in its own process with OMP_NUM_THREADS=1):
  FMM3D: one lfmm3d / stfmm3d call (tree, expansions, evaluation; nothing is kept between calls).
  ours, "evaluate": EwaldPlan.evaluate on a plan whose points are set and parameters chosen (a
    time-stepping or iterative-solver use: the same points, new strengths);
  ours, "one-shot": a new plan, set_points and evaluate (the parameter choice with its pilot
    evaluation, the free-space kernel tables and the FFT plans included; FFTW_ESTIMATE).
ratio = ours / the fastest FMM3D run of its (finer) sweep whose error is <= our measured error
(NaN when none is). The PyPI wheel of fmm3dpy is serial and built for baseline x86-64 (no AVX / FMA).
Output: bench/results/ewald_issue31/<out-prefix>.{csv,md,png}.
"""
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402

SAMPLE_SEED = 12345
OUT = HERE / "results" / "ewald_issue31"


def log(msg):
    benchlib.log(time.strftime("%H:%M:%S ", time.gmtime()) + msg)


def points(n, dist, seed=31):
    r = np.random.default_rng(seed)
    if dist == "sphere":
        v = r.standard_normal((n, 3))
        x = v / np.linalg.norm(v, axis=1)[:, None]
    else:
        x = r.random((n, 3))
    return x, r


def reference(kernel, x, dens, idx, nu=None):
    """Our normalisation: sum q / r; u = 1/(8 pi) sum S f (viscosity 1); u = 1/(8 pi) sum T q nu."""
    if kernel == "laplace":
        return 4 * np.pi * C.direct_fmm3d(x, idx, charges=dens)
    if kernel == "stresslet":
        return -C.direct_fmm3d(x, idx, strslet=dens, strsvec=nu)
    return C.direct_fmm3d(x, idx, stoklet=dens)


def rel_rms(a, ref):
    a, ref = np.asarray(a), np.asarray(ref)
    return float(np.sqrt(np.sum((a - ref) ** 2) / np.sum(ref ** 2)))


def fmm3d(kernel, x, dens, eps, nu=None):
    import fmm3dpy

    n = x.shape[0]
    s = np.ascontiguousarray(x.T)
    if kernel == "laplace":
        return 4 * np.pi * fmm3dpy.lfmm3d(eps=eps, sources=s, charges=dens, pg=1).pot.reshape(n)
    if kernel == "stresslet":
        return -fmm3dpy.stfmm3d(eps=eps, sources=s, strslet=np.ascontiguousarray(dens.T),
                                strsvec=np.ascontiguousarray(nu.T), ifppreg=1).pot.reshape(3, n).T
    return fmm3dpy.stfmm3d(eps=eps, sources=s, stoklet=np.ascontiguousarray(dens.T), ifppreg=1).pot.reshape(3, n).T


def ours(kernel, x, dens, eps, repeats, nu=None):
    import elliptica as el

    def evaluate(plan):
        return plan.evaluate(dipoles=dens) if kernel == "stresslet" else plan.evaluate(dens)

    best_one = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        plan = el.EwaldPlan(kernel, periodicity="0P", tol=eps, threads=1, fft_planner="estimate")
        plan.set_points(x, normals=nu)
        res = evaluate(plan)
        best_one = min(best_one, time.perf_counter() - t)
    best_eval = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        res = evaluate(plan)
        best_eval = min(best_eval, time.perf_counter() - t)
    val = res.potential if kernel == "laplace" else res.velocity
    return val, best_eval, best_one, plan.params, res.info.times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--eps", default="1e-3,1e-6,1e-9,1e-12", help="our tolerances")
    ap.add_argument("--fmm-eps", default="1e-3,1e-4,1e-5,1e-6,1e-7,1e-8,1e-9,1e-10,1e-11,1e-12,1e-13",
                    help="FMM3D's tolerances (a finer sweep: the ratio takes the fastest run at or below our error)")
    ap.add_argument("--kernels", default="laplace,stokeslet,stresslet")
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--distribution", default="cube", choices=["cube", "sphere"])
    ap.add_argument("--out-prefix", default="fmm3d_0p")
    a = ap.parse_args()
    import fmm3dpy  # noqa: F401  (fails early when the peer is missing)
    import elliptica as el

    eps_list = [float(e) for e in a.eps.split(",")]
    info = benchlib.machine()
    rows = []
    for kernel in a.kernels.split(","):
        x, r = points(a.n, a.distribution)
        dens = 2 * r.random(a.n) - 1 if kernel == "laplace" else 2 * r.random((a.n, 3)) - 1
        nu = None
        if kernel == "stresslet":
            nu = r.standard_normal((a.n, 3))
            nu /= np.linalg.norm(nu, axis=1)[:, None]
        idx = np.sort(np.random.default_rng(SAMPLE_SEED).choice(a.n, size=min(a.sample, a.n), replace=False))
        t = time.perf_counter()
        ref = reference(kernel, x, dens, idx, nu)
        log(f"{kernel}: direct reference at {len(idx)} points in {time.perf_counter() - t:.1f} s")
        for eps in [float(e) for e in a.fmm_eps.split(",")]:
            best, val = np.inf, None
            for _ in range(a.repeats):
                t = time.perf_counter()
                val = fmm3d(kernel, x, dens, eps, nu)
                best = min(best, time.perf_counter() - t)
            err = rel_rms(val[idx], ref)
            rows.append(dict(kernel=kernel, code="fmm3d", eps=eps, n=a.n, distribution=a.distribution, error=err,
                             seconds=best, one_shot_seconds=best, grid="", P="", tune_s="", set_points_s="",
                             fmm3d_at_equal_error_s="", ratio_evaluate="", ratio_one_shot=""))
            log(f"{kernel} fmm3d eps {eps:g}: err {err:.3g}, {best:.3f} s")
        for eps in eps_list:
            val, t_eval, t_one, p, times = ours(kernel, x, dens, eps, a.repeats, nu)
            err = rel_rms(val[idx], ref)
            rows.append(dict(kernel=kernel, code="elliptica-0P", eps=eps, n=a.n, distribution=a.distribution, error=err,
                             seconds=t_eval, one_shot_seconds=t_one, grid="x".join(map(str, p["grid"])), P=p["P"],
                             tune_s=round(times.get("tune", 0.0), 4), set_points_s=round(times.get("set_points", 0.0), 4)))
            log(f"{kernel} ours eps {eps:g}: err {err:.3g}, evaluate {t_eval:.3f} s, one-shot {t_one:.3f} s, "
                f"grid {p['grid']} P {p['P']}")
    # ratios at equal measured accuracy
    for row in rows:
        if row["code"] != "elliptica-0P":
            continue
        ok = [f for f in rows if f["code"] == "fmm3d" and f["kernel"] == row["kernel"] and f["error"] <= row["error"]]
        fast = min((f["seconds"] for f in ok), default=float("nan"))
        row["fmm3d_at_equal_error_s"] = fast
        row["ratio_evaluate"] = row["seconds"] / fast
        row["ratio_one_shot"] = row["one_shot_seconds"] / fast
    OUT.mkdir(parents=True, exist_ok=True)
    prefix = OUT / a.out_prefix
    benchlib.write_csv(prefix.with_suffix(".csv"), rows)
    header = ["kernel", "code", "eps", "error", "evaluate s", "one-shot s", "grid", "P", "FMM3D s at <= error",
              "ratio evaluate", "ratio one-shot"]
    table = []
    for row in rows:
        ours_row = row["code"] == "elliptica-0P"
        table.append([row["kernel"], row["code"], f"{row['eps']:g}", f"{row['error']:.2e}", benchlib.fmt(row["seconds"]),
                      benchlib.fmt(row["one_shot_seconds"]), row["grid"], row["P"],
                      benchlib.fmt(row["fmm3d_at_equal_error_s"]) if ours_row else "",
                      f"{row['ratio_evaluate']:.2f}" if ours_row else "", f"{row['ratio_one_shot']:.2f}" if ours_row else ""])
    cmd = "python3 bench/ewald_issue31_fmm3d.py " + " ".join(sys.argv[1:])
    md = (f"# Free-space spectral Ewald (0P) vs FMM3D, N = {a.n}, {a.distribution}, one thread\n\n"
          f"Command: `{cmd}`\n\n{benchlib.md_machine(info)}\n\nfmm3dpy {fmm3dpy_version()}, elliptica "
          f"{el.__version__}; load average at the end: {benchlib.loadavg()}\n\n" + benchlib.md_table(header, table) + "\n")
    benchlib.write_atomic(prefix.with_suffix(".md"), md)
    plot(rows, prefix.with_suffix(".png"), a)
    print(md)


def fmm3dpy_version():
    try:
        from importlib.metadata import version

        return version("fmm3dpy")
    except Exception:
        return "unknown"


def plot(rows, path, a):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = sorted({r["kernel"] for r in rows})
    fig, axes = plt.subplots(1, len(kernels), figsize=(5.5 * len(kernels), 4.2), squeeze=False)
    for ax, k in zip(axes[0], kernels):
        f = [r for r in rows if r["kernel"] == k and r["code"] == "fmm3d"]
        o = [r for r in rows if r["kernel"] == k and r["code"] == "elliptica-0P"]
        ax.loglog([r["error"] for r in f], [r["seconds"] for r in f], "s-", label="FMM3D (fmm3dpy, serial)")
        ax.loglog([r["error"] for r in o], [r["seconds"] for r in o], "o-", label="elliptica 0P: evaluate")
        ax.loglog([r["error"] for r in o], [r["one_shot_seconds"] for r in o], "o--", label="elliptica 0P: one-shot")
        ax.set_xlabel("relative RMS error (direct sum at sampled points)")
        ax.set_ylabel("seconds, one thread")
        ax.set_title(f"{k}, N = {a.n}, {a.distribution}")
        ax.invert_xaxis()
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
