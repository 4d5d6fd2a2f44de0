#!/usr/bin/env python3
"""Issue 28, pair symmetry per kernel and precision: the P2P stage with pair_symmetry on and off
at the same parameters (the off plan tuned at the tolerance, the on plan given its xi, rc, grid
and P as overrides), N = 1e5 uniform points in the unit cube (ewald_issue12_common.data),
tolerance 1e-6 (double) / 1e-4 (single), one thread, medians of 5 interleaved evaluations.

    taskset -c 1 python3 bench/ewald_issue28_symmetry_p2p.py

Prints one line per (precision, kernel): r_c, P2P with and without pair symmetry, and their
ratio, and whether the plan applied it (info.p2p["pair_symmetry"]). Run at commit 34c2ad2 (pair
symmetry in both precisions) it decided which precisions keep it: results in
results/ewald_issue28/symmetry_p2p.md; since then float32 plans sum one-sided (applied False).
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402


def main() -> None:
    import elliptica

    info = benchlib.machine()
    print(f"CPU: {info.get('Model name', '?')}, flags {info.get('Flags', '?')}", flush=True)
    n = 100000
    x, f, d, nu = C.data("stokes-combined", n)
    q = f[:, 0] - f[:, 0].mean()
    cases = [("laplace", {}), ("laplace", {"field": True}), ("stokeslet", {}), ("stokeslet", {"pressure": True}),
             ("stresslet", {}), ("stokes-combined", {})]
    for prec, tol in (("double", 1e-6), ("single", 1e-4)):
        for k, kw in cases:
            def mk(sym, **over):
                p = elliptica.EwaldPlan(k, box=1.0, tol=tol, precision=prec, threads=1, pair_symmetry=sym, **kw, **over)
                p.set_points(x, normals=nu if k in ("stresslet", "stokes-combined") else None)
                return p

            def ev(p):
                if k == "laplace":
                    return p.evaluate(q)
                if k == "stokeslet":
                    return p.evaluate(f)
                if k == "stresslet":
                    return p.evaluate(dipoles=d)
                return p.evaluate(f, dipoles=d)

            off = mk(False)
            ev(off)
            pr = off.params
            on = mk(True, xi=pr["xi"], rc=pr["rc"], grid=tuple(int(m) for m in pr["grid"]), P=int(pr["P"]))
            applied = ev(on).info.p2p["pair_symmetry"]
            t = {True: [], False: []}
            for _ in range(5):
                for s, p in ((True, on), (False, off)):
                    t[s].append(ev(p).info.times["P2P"])
            a, b = np.median(t[True]), np.median(t[False])
            print(f"{prec:6s} {k:16s} {str(kw):18s} rc {pr['rc']:.4f} P2P on {a * 1e3:7.1f} ms off {b * 1e3:7.1f} ms "
                  f"on/off {a / b:.3f} applied {applied}", flush=True)


if __name__ == "__main__":
    main()
