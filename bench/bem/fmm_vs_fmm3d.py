#!/usr/bin/env python3
"""Side-by-side timing of elliptica.HelmholtzFMM (black-box Chebyshev FMM) and FMM3D's hfmm3d.

Same sums on the same points: the element centroids of sphere meshes (icosphere: N = 20 * 4^r,
octasphere: N = 8 * 4^r, unit radius), unit normals, random complex charges q and dipoles mu along
the normals, potential only:

    u_i = sum_{j != i} G(x_i, x_j) q_j + dG/dn_y(x_i, x_j) mu_j,   G = e^{ikr} / (4 pi r)

FMM3D (fmm3dpy) includes the 1/(4 pi) and its dipole term with dipvec = n * mu equals +dG/dn_y mu
(checked here at start-up on a small problem against a direct sum).

NOTE: the PyPI wheel of fmm3dpy is SERIAL (built without OpenMP); its time does not change with the
thread count. Every configuration (N, tol, threads) runs in a fresh subprocess with
OMP_NUM_THREADS set. Reported: median over --repeats of ours set-up, ours apply, FMM3D (whole
call), the ratios FMM3D / ours (apply only, and set-up + apply), the relative difference between
the two results, and each one's relative error against a direct sum over a random subset of
targets (all N sources).

Usage:  python bench/bem/fmm_vs_fmm3d.py --sizes 20480 --tols 1e-3 1e-5 --threads 1 2
        (defaults: N = 20480 32768 81920 131072 327680; writes CSV + Markdown to --out)
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy as np


def sphere_mesh(n_elements):
    """(vertices, triangles) of an icosphere (20 * 4^r) or octasphere (8 * 4^r) with N elements."""
    for base, r in ((20, None), (8, None)):
        m = n_elements / base
        rr = int(round(np.log(m) / np.log(4))) if m >= 1 else -1
        if rr >= 0 and base * 4**rr == n_elements:
            if base == 20:
                import elliptica
                return elliptica.icosphere(rr)
            return octasphere(rr)
    raise SystemExit(f"N = {n_elements} is neither 20 * 4^r nor 8 * 4^r")


def octasphere(r):
    v = [np.array(p, float) for p in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))]
    f = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    for _ in range(r):
        cache, nf = {}, []

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in cache:
                m = v[a] + v[b]
                v.append(m / np.linalg.norm(m))
                cache[key] = len(v) - 1
            return cache[key]

        for a, b, c in f:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return np.array(v), np.array(f, dtype=np.int64)


def centroids_normals(n_elements):
    v, t = sphere_mesh(n_elements)
    c = v[t].mean(axis=1)
    n = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    n /= np.linalg.norm(n, axis=1)[:, None]
    if np.mean(np.einsum("ij,ij->i", n, c)) < 0:
        n = -n
    return np.ascontiguousarray(c), np.ascontiguousarray(n)


def direct_subset(x, n, k, q, mu, idx):
    out = np.zeros(len(idx), complex)
    for a, i in enumerate(idx):
        d = x[i] - x
        r = np.linalg.norm(d, axis=1)
        r[i] = 1.0
        G = np.exp(1j * k * r) / (4 * np.pi * r)
        g1 = G * (1j * k - 1 / r)
        ry = np.einsum("jc,jc->j", d, n) / r
        t = G * q - g1 * ry * mu
        t[i] = 0
        out[a] = t.sum()
    return out


def fmm3d_call(x, n, k, q, mu, tol):
    import fmm3dpy
    out = fmm3dpy.hfmm3d(eps=tol, zk=k, sources=x.T.copy(), charges=q,
                         dipvec=np.ascontiguousarray((n * mu[:, None]).T), pg=1)
    return out.pot


def check_fmm3d_convention():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 3))
    n = rng.standard_normal((300, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    q = rng.standard_normal(300) + 1j * rng.standard_normal(300)
    mu = rng.standard_normal(300) + 1j * rng.standard_normal(300)
    ref = direct_subset(x, n, 3.0, q, mu, np.arange(300))
    got = fmm3d_call(x, n, 3.0, q, mu, 1e-12)
    e = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    if e > 1e-8:
        raise SystemExit(f"FMM3D convention check failed: relative difference {e:.2e}")
    return e


def worker(a):
    import elliptica
    x, n = centroids_normals(a.n)
    rng = np.random.default_rng(1)
    q = rng.standard_normal(a.n) + 1j * rng.standard_normal(a.n)
    mu = rng.standard_normal(a.n) + 1j * rng.standard_normal(a.n)
    setups, applies, f3 = [], [], []
    u = v = None
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        f = elliptica.HelmholtzFMM(x, n, a.k, tol=a.tol)
        t1 = time.perf_counter()
        u = f.apply(q, mu)
        t2 = time.perf_counter()
        setups.append(t1 - t0)
        applies.append(t2 - t1)
        del f
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        v = fmm3d_call(x, n, a.k, q, mu, a.tol)
        f3.append(time.perf_counter() - t0)
    idx = np.random.default_rng(2).choice(a.n, size=min(a.subset, a.n), replace=False)
    ref = direct_subset(x, n, a.k, q, mu, idx)
    f = elliptica.HelmholtzFMM(x, n, a.k, tol=a.tol)
    res = dict(N=a.n, k=a.k, tol=a.tol, threads=int(os.environ.get("OMP_NUM_THREADS", "0")), order=f.order,
               leaf_level=f.leaf_level, ours_setup=float(np.median(setups)), ours_apply=float(np.median(applies)),
               fmm3d=float(np.median(f3)),
               rel_diff=float(np.linalg.norm(u - v) / np.linalg.norm(v)),
               ours_err=float(np.linalg.norm(u[idx] - ref) / np.linalg.norm(ref)),
               fmm3d_err=float(np.linalg.norm(v[idx] - ref) / np.linalg.norm(ref)))
    # both meet tol (relative) -> they differ by at most ~2 tol
    res["agree"] = bool(res["rel_diff"] <= 2 * a.tol and res["ours_err"] <= a.tol)
    res["ratio_apply"] = res["fmm3d"] / res["ours_apply"]
    res["ratio_total"] = res["fmm3d"] / (res["ours_setup"] + res["ours_apply"])
    print("RESULT " + json.dumps(res), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[20480, 32768, 81920, 131072, 327680])
    p.add_argument("--tols", type=float, nargs="+", default=[1e-3, 1e-5])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--k", type=float, default=5.0, help="wave number (unit sphere; k = 5: diameter ~1.6 wavelengths)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--subset", type=int, default=200, help="targets of the direct-sum check")
    p.add_argument("--out", default="fmm_vs_fmm3d", help="output prefix (.csv, .md)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--tol", type=float, help=argparse.SUPPRESS)
    p.add_argument("--merge", nargs="+", metavar="CSV",
                   help="only write the report (--out) from the rows of earlier runs' CSV files")
    a = p.parse_args()
    if a.merge:
        rows = []
        for f in a.merge:
            with open(f) as fh:
                rows += list(csv.DictReader(fh))
        rows.sort(key=lambda r: (int(r["N"]), float(r["tol"]), int(r["threads"])))
        write_report(rows, a, " ".join(sys.argv[1:]))
        return
    if a.worker:
        worker(a)
        return
    e = check_fmm3d_convention()
    print(f"FMM3D convention (charges=q, dipvec=n*mu -> G q + dG/dn_y mu) verified: rel. diff {e:.1e}")
    print("NOTE: the PyPI fmm3dpy wheel is serial (no OpenMP); its time does not depend on the threads.")
    rows = []
    for n in a.sizes:
        for tol in a.tols:
            for th in a.threads:
                env = dict(os.environ, OMP_NUM_THREADS=str(th))
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--n", str(n), "--tol", str(tol),
                       "--k", str(a.k), "--repeats", str(a.repeats), "--subset", str(a.subset)]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                line = [s for s in out.stdout.splitlines() if s.startswith("RESULT ")]
                if out.returncode != 0 or not line:
                    print(out.stdout, out.stderr, file=sys.stderr)
                    raise SystemExit(f"worker failed for N={n} tol={tol} threads={th}")
                r = json.loads(line[0][7:])
                rows.append(r)
                print(f"N={n:7d} tol={tol:.0e} thr={th} p={r['order']:2d} L={r['leaf_level']} "
                      f"ours setup {r['ours_setup']:.3f}s apply {r['ours_apply']:.3f}s | FMM3D {r['fmm3d']:.3f}s | "
                      f"FMM3D/ours apply {r['ratio_apply']:.2f} total {r['ratio_total']:.2f} | diff {r['rel_diff']:.1e} "
                      f"err ours {r['ours_err']:.1e} FMM3D {r['fmm3d_err']:.1e}"
                      + ("" if r["agree"] else "  WARNING: results do not agree to the tolerance"), flush=True)
    write_report(rows, a, " ".join(sys.argv[1:]))


KEYS = ["N", "tol", "threads", "order", "leaf_level", "ours_setup", "ours_apply", "fmm3d", "ratio_apply",
        "ratio_total", "rel_diff", "ours_err", "fmm3d_err", "agree", "k"]


def write_report(rows, a, args_text):
    """CSV (all fields) and Markdown with the ratios ours / FMM3D (< 1: elliptica faster), atomically."""
    tmp = a.out + ".csv.tmp"
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=KEYS)
        w.writeheader()
        for r in rows:
            w.writerow({key: r[key] for key in KEYS})
    os.replace(tmp, a.out + ".csv")
    k = rows[0]["k"] if rows else a.k
    tmp = a.out + ".md.tmp"
    with open(tmp, "w") as fh:
        fh.write(f"# elliptica.HelmholtzFMM vs FMM3D hfmm3d (unit-sphere element centroids, k = {k})\n\n")
        fh.write(f"Command: `python3 bench/bem/fmm_vs_fmm3d.py {args_text}`\n\n")
        fh.write("Same sums on the same points: potential of charges + dipoles along the normals. FMM3D: PyPI "
                 "fmm3dpy wheel, SERIAL (no OpenMP) - its time is the same for every thread count. Times: median "
                 "of the repeats. Ratios ours / FMM3D (< 1: elliptica faster; the issue's goal is <= 1): "
                 "'apply' = one evaluation of an existing plan, 'set-up + apply' = a plan built and applied once "
                 "(FMM3D has no separate set-up). Errors: relative 2-norm vs a direct sum on the random target "
                 "subset.\n\n")
        fh.write("| N | tol | threads | p | ours set-up (s) | ours apply (s) | FMM3D (s) | ours/FMM3D apply | "
                 "ours/FMM3D set-up+apply | rel. diff | err ours | err FMM3D | agree |\n")
        fh.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            fh.write(f"| {r['N']} | {float(r['tol']):.0e} | {r['threads']} | {r['order']} | "
                     f"{float(r['ours_setup']):.3f} | {float(r['ours_apply']):.3f} | {float(r['fmm3d']):.3f} | "
                     f"{1 / float(r['ratio_apply']):.2f} | {1 / float(r['ratio_total']):.2f} | "
                     f"{float(r['rel_diff']):.1e} | {float(r['ours_err']):.1e} | {float(r['fmm3d_err']):.1e} | "
                     f"{'yes' if str(r['agree']) in ('True', 'true', '1') else 'NO'} |\n")
    os.replace(tmp, a.out + ".md")
    print(f"wrote {a.out}.csv and {a.out}.md")

if __name__ == "__main__":
    main()
