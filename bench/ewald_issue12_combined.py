#!/usr/bin/env python3
"""Issue 12, item 2: the stokes-combined kernel (one pass) vs two separate plans (stokeslet +
stresslet) at equal tolerance, 1 thread.

    python3 bench/ewald_issue12_combined.py [--n 100000] [--eps 1e-6,1e-9] [--ref-eps 1e-11] [--repeats 3]

One process per eps (1 thread): the same points, forces f, dipoles q and normals nu; a plan for each
of stokeslet, stresslet, stokes-combined at eps (set_points, first evaluate, `repeats` evaluates,
best wall time of a repeated evaluate), and the same three at --ref-eps as references. Errors: relative
RMS of the combined result against the combined reference, and of stokeslet + stresslet against
the combined reference (also each separate one against its own reference). ratio = combined /
(stokeslet + stresslet), repeated-evaluate wall times (goal <= 0.6).
Output: bench/results/ewald_issue12/combined.{csv,md}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import ewald_issue12_common as C  # noqa: E402


def worker(n: int, eps: float, ref_eps: float, repeats: int) -> None:
    x, f, d, nu = C.data("stokes-combined", n)
    out = {"n": n, "eps": eps, "ref_eps": ref_eps}
    vals = {}
    for k in ("stokeslet", "stresslet", "stokes-combined"):
        v, rec = C.run_plan(k, x, f if k != "stresslet" else None, d if k != "stokeslet" else None,
                            nu if k != "stokeslet" else None, eps, threads=1, repeats=repeats)
        vals[k] = v
        for key in ("repeat_best_s", "repeat_median_s", "first_s", "P2P", "P2G", "FFT", "CNV", "IFFT", "G2P",
                    "rc", "grid", "P", "xi"):
            out[f"{k}_{key}"] = rec[key]
        benchlib.log(f"  {k} eps={eps:g}: {rec['repeat_best_s']:.3f} s")
    refs = {}
    for k in ("stokeslet", "stresslet", "stokes-combined"):
        v, rec = C.run_plan(k, x, f if k != "stresslet" else None, d if k != "stokeslet" else None,
                            nu if k != "stokeslet" else None, ref_eps, threads=1, repeats=0)
        refs[k] = v
        out[f"{k}_ref_first_s"] = rec["first_s"]
    out["err_combined"] = C.rel_rms(vals["stokes-combined"], refs["stokes-combined"])
    out["err_separate_sum"] = C.rel_rms(vals["stokeslet"] + vals["stresslet"], refs["stokes-combined"])
    out["err_stokeslet"] = C.rel_rms(vals["stokeslet"], refs["stokeslet"])
    out["err_stresslet"] = C.rel_rms(vals["stresslet"], refs["stresslet"])
    out["ref_consistency"] = C.rel_rms(refs["stokeslet"] + refs["stresslet"], refs["stokes-combined"])
    out["ratio_best"] = out["stokes-combined_repeat_best_s"] / (out["stokeslet_repeat_best_s"] + out["stresslet_repeat_best_s"])
    out["ratio_median"] = out["stokes-combined_repeat_median_s"] / (
        out["stokeslet_repeat_median_s"] + out["stresslet_repeat_median_s"])
    out["vmhwm_mib"] = C.vmhwm_mib()
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=4)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--eps", default="1e-6,1e-9")
    ap.add_argument("--ref-eps", type=float, default=1e-11)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.worker:
        n, e, r, rep = a.worker
        worker(int(n), float(e), float(r), int(rep))
        return
    info = benchlib.machine()
    rows = []
    for eps in [float(e) for e in a.eps.split(",")]:
        benchlib.log(f"eps={eps:g} load {benchlib.loadavg()}")
        rows.append(C.spawn(Path(__file__), [str(a.n), repr(eps), repr(a.ref_eps), str(a.repeats)], timeout=1800))
        benchlib.log(json.dumps(rows[-1]))
    info["loadavg_end"] = benchlib.loadavg()
    C.OUT.mkdir(parents=True, exist_ok=True)
    benchlib.write_csv(C.OUT / "combined.csv", rows)
    md = "# Issue 12, item 2: stokes-combined vs stokeslet + stresslet (1 thread)\n\n"
    md += C.header(info, "python3 " + " ".join(sys.argv))
    md += (f"\nN = {a.n} uniform in the unit cube, relative tolerance, double, 1 thread; times = best of "
           f"{a.repeats} repeated evaluates (plan already tuned); errors = relative RMS against the same "
           f"kernel at eps {a.ref_eps:g}.\n\n")
    md += benchlib.md_table(
        ["eps", "stokeslet s", "stresslet s", "combined s", "ratio combined/(sl+dl)", "ratio (medians)",
         "err combined", "err sl+dl (vs combined ref)", "err stokeslet", "err stresslet", "rc sl/dl/comb",
         "grid sl/dl/comb"],
        [[f"{r['eps']:g}", benchlib.fmt(r["stokeslet_repeat_best_s"]), benchlib.fmt(r["stresslet_repeat_best_s"]),
          benchlib.fmt(r["stokes-combined_repeat_best_s"]), f"{r['ratio_best']:.3f}", f"{r['ratio_median']:.3f}",
          f"{r['err_combined']:.2e}", f"{r['err_separate_sum']:.2e}", f"{r['err_stokeslet']:.2e}",
          f"{r['err_stresslet']:.2e}",
          f"{r['stokeslet_rc']:.3g}/{r['stresslet_rc']:.3g}/{r['stokes-combined_rc']:.3g}",
          f"{r['stokeslet_grid']}/{r['stresslet_grid']}/{r['stokes-combined_grid']}"] for r in rows])
    md += ("\nStage times (s) of the best repeat:\n\n" + benchlib.md_table(
        ["eps", "kernel", "P2P", "P2G", "FFT", "CNV", "IFFT", "G2P"],
        [[f"{r['eps']:g}", k] + [benchlib.fmt(r[f"{k}_{s}"]) for s in ("P2P", "P2G", "FFT", "CNV", "IFFT", "G2P")]
         for r in rows for k in ("stokeslet", "stresslet", "stokes-combined")]))
    cons = ", ".join("%.1e" % r["ref_consistency"] for r in rows)
    md += f"\nCheck: relative RMS of (stokeslet ref + stresslet ref) - combined ref: {cons}\n"
    benchlib.write_atomic(C.OUT / "combined.md", md)
    print(md)


if __name__ == "__main__":
    main()
