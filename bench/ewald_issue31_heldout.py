#!/usr/bin/env python3
"""Issue 31, held-out checks (data and references written for this script only, not used while
building the method):

  1. A 1P channel of point forces: N forces in a square channel cross-section (0.3 x 0.2, period
     L = 2 along z), random forces with a net force, viscosity 0.8, eps 1e-3 ... 1e-10, against
     an independent image sum: u = 1/(8 pi mu) lim_P [sum_{|p| <= P} S(x - y + p L e_z) f
     - (2 / L) ln(2 (P + 1/2) L) (I + e_z e_z^T) f] (the documented k_z = 0 convention), summed in
     numpy at P = P0, 2 P0, 4 P0 and extrapolated twice (Richardson in 1/P^2, then 1/P^4); the
     difference of the two extrapolations is reported as the reference's own error.
  2. 0P at N = 2e4: laplace (charges with a net charge), stokeslet (forces with a net force) and
     stresslet (dipoles with sum q.nu != 0, random unit normals) against the direct free-space sum
     at every point (numpy, O(N^2)), eps 1e-3 ... 1e-12.

    python3 bench/ewald_issue31_heldout.py [--channel-n 200] [--p0 1000] [--n0p 20000]

Output: bench/results/ewald_issue31/heldout.{csv,md}.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402

OUT = HERE / "results" / "ewald_issue31"


def log(msg):
    benchlib.log(time.strftime("%H:%M:%S ", time.gmtime()) + msg)


def channel_image_sum(x, f, L, P):
    """8 pi mu u: sum over |p| <= P of S(r + p L e_z) f minus the divergent (2/L) ln(2(P+1/2)L)(I + e_z e_z^T) f."""
    d = x[:, None, :] - x[None, :, :]  # (N, N, 3), target - source
    rho2 = d[..., 0] ** 2 + d[..., 1] ** 2
    u = np.zeros_like(x)
    for p in range(P, -P - 1, -1):  # farthest first (roughly)
        z = d[..., 2] + p * L
        r2 = rho2 + z * z
        with np.errstate(divide="ignore"):
            ir = np.where(r2 > 0, 1 / np.sqrt(r2), 0.0)
        ir3 = ir ** 3
        rf = d[..., 0] * f[None, :, 0] + d[..., 1] * f[None, :, 1] + z * f[None, :, 2]
        u[:, 0] += (ir * f[None, :, 0] + d[..., 0] * rf * ir3).sum(1)
        u[:, 1] += (ir * f[None, :, 1] + d[..., 1] * rf * ir3).sum(1)
        u[:, 2] += (ir * f[None, :, 2] + z * rf * ir3).sum(1)
    div = 2 / L * np.log(2 * (P + 0.5) * L)
    F = f.sum(0)
    return u - div * np.array([F[0], F[1], 2 * F[2]])[None, :]


def rel_rms(a, ref):
    return float(np.sqrt(np.sum((np.asarray(a) - ref) ** 2) / np.sum(ref ** 2)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channel-n", type=int, default=200)
    ap.add_argument("--p0", type=int, default=1000)
    ap.add_argument("--n0p", type=int, default=20000)
    a = ap.parse_args()
    import elliptica as el

    info = benchlib.machine()
    rows = []
    # 1. the 1P channel
    rng = np.random.default_rng(2026)
    L, mu, n = 2.0, 0.8, a.channel_n
    x = rng.random((n, 3)) * [0.3, 0.2, L] + [5.0, -3.0, 0.0]
    f = rng.standard_normal((n, 3)) + [0.3, -0.2, 0.5]  # a net force
    t = time.perf_counter()
    s = [channel_image_sum(x, f, L, P) for P in (a.p0, 2 * a.p0, 4 * a.p0)]
    r1 = [(4 * s[i + 1] - s[i]) / 3 for i in range(2)]  # 1/P^2 removed
    ref = (16 * r1[1] - r1[0]) / 15  # then 1/P^4
    ref_err = rel_rms(r1[1], ref)
    ref /= 8 * np.pi * mu
    log(f"1P channel: image sums in {time.perf_counter() - t:.1f} s; reference's own error ~{ref_err:.2e}")
    for eps in (1e-3, 1e-6, 1e-9, 1e-10):
        plan = el.EwaldPlan("stokeslet", box=(1.0, 1.0, L), periodicity="1P", viscosity=mu, tol=eps)
        t = time.perf_counter()
        u = plan.evaluate(x, f).velocity
        err = rel_rms(u, ref)
        rows.append(dict(check="1P channel of point forces (net force)", n=n, eps=eps, error=err,
                         reference="image sum, log removed, Richardson x2", reference_error=ref_err,
                         seconds=time.perf_counter() - t, passed=err < eps))
        log(f"1P channel eps {eps:g}: error {err:.3g}")
    # 2. 0P at N = 2e4 against the direct sum at every point
    n = a.n0p
    rng = np.random.default_rng(777)
    x = rng.random((n, 3)) * [1.0, 0.6, 1.4] - [0.2, 3.0, 0.5]
    q = rng.random(n) * 2 - 0.7  # net charge
    f = rng.random((n, 3)) * 2 - 0.8  # net force
    idx = np.arange(n)
    t = time.perf_counter()
    ref_l = 4 * np.pi * C.direct_fmm3d(x, idx, charges=q)
    ref_s = C.direct_fmm3d(x, idx, stoklet=f)  # 1/(8 pi) sum S f: viscosity 1
    dq = rng.random((n, 3)) * 2 - 0.7  # dipoles
    nu = rng.standard_normal((n, 3))
    nu /= np.linalg.norm(nu, axis=1)[:, None]
    ref_d = -C.direct_fmm3d(x, idx, strslet=dq, strsvec=nu)  # FMM3D's stresslet is the negative of ours
    log(f"0P: direct sums at {n} points in {time.perf_counter() - t:.1f} s")
    what = dict(laplace="net charge", stokeslet="net force", stresslet="sum q.nu != 0")
    for kernel, dens, ref in (("laplace", q, ref_l), ("stokeslet", f, ref_s), ("stresslet", dq, ref_d)):
        for eps in (1e-3, 1e-6, 1e-9, 1e-12):
            t = time.perf_counter()
            if kernel == "stresslet":
                res = el.ewald(kernel, x, periodicity="0P", dipoles=dens, normals=nu, tol=eps)
            else:
                res = el.ewald(kernel, x, dens, periodicity="0P", tol=eps)
            val = res.potential if kernel == "laplace" else res.velocity
            err = rel_rms(val, ref)
            rows.append(dict(check=f"0P {kernel} ({what[kernel]})", n=n, eps=eps,
                             error=err, reference="direct sum, every point", reference_error=0.0,
                             seconds=time.perf_counter() - t, passed=err < eps))
            log(f"0P {kernel} eps {eps:g}: error {err:.3g}")
    OUT.mkdir(parents=True, exist_ok=True)
    prefix = OUT / "heldout"
    benchlib.write_csv(prefix.with_suffix(".csv"), rows)
    header = ["check", "N", "eps", "relative RMS error", "below eps", "reference", "reference's own error",
              "one-shot s (2 threads)"]
    table = [[r["check"], r["n"], f"{r['eps']:g}", f"{r['error']:.2e}", "yes" if r["passed"] else "NO", r["reference"],
              f"{r['reference_error']:.1e}", benchlib.fmt(r["seconds"])] for r in rows]
    cmd = "python3 bench/ewald_issue31_heldout.py " + " ".join(sys.argv[1:])
    md = (f"# Issue 31 held-out checks: a 1P channel of point forces, 0P at N = {a.n0p}\n\n"
          f"Command: `{cmd}`\n\n{benchlib.md_machine(info)}\n\nelliptica {el.__version__}\n\n"
          + benchlib.md_table(header, table) + "\n")
    benchlib.write_atomic(prefix.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
