#!/usr/bin/env python3
"""Side-by-side benchmark: elliptica's SEM operator and SEM solve vs deal.II 9.4's matrix-free ones.

Builds nothing. Runs, in one run and interleaved (ours, deal.II, ours, deal.II, ... --rounds
times, best of each):
  * operator: bench/sem_operator_throughput (SemLaplacian::apply) and bench/sem/dealii's
    dealii_sem_peer operator (MatrixFree + FEEvaluation<3,p,p+1>, Gauss and GLL quadrature) on the
    same mesh (box or Kershaw eps = 0.3 with n^3 elements; n chosen by ours for ~--dofs DOFs), order
    p and thread count; DOF/s = free DOFs ((n p - 1)^3) per second of one y = A x;
  * solve: bench/sem_solve (SemPoissonPlan: PCG + pMG, --ours configurations) and dealii_sem_peer
    solve (CG + matrix-free geometric MG, and p-multigrid by global coarsening, Chebyshev
    (--dealii-degree) over the inverse diagonal, Chebyshev coarse solve) on Kershaw eps = 0.3, 12^3 elements (deal.II: 6^3 refined once), to
    relative residual 1e-8 from zero, f = 3 pi^2 sin sin sin;
  * the machine's STREAM triad (bench/mg_throughput, 1 and 2 threads) and FMA peak
    (bench/fma_peak, one thread, double), for the fractions of our kernel's model traffic and flops.
1-thread runs are pinned with `taskset -c 1`; the load average is recorded with every row.

Usage (from the repository root; ours built with -DELLIPTICA_BUILD_BENCH=ON, deal.II's peer with
`cmake -S bench/sem/dealii -B build-dealii -DCMAKE_BUILD_TYPE=Release && cmake --build build-dealii`):
  python3 bench/sem/run_dealii_peer.py [--build build] [--dealii build-dealii/dealii_sem_peer]
      [--out bench/results/sem_issue14] [--meshes box,kershaw] [--orders 3,4,5,6,7,8] [--threads 1,2]
      [--dofs 1.5e6] [--seconds 0.3] [--repeats 3] [--rounds 2] [--solve-orders 7] [--solve-threads 1]
      [--dealii-mg h,p] [--skip-operator] [--skip-solve] [--skip-machine]
Writes OUT/operator_vs_dealii.{csv,md} and OUT/solve_vs_dealii.{csv,md} (atomically).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import benchlib as bl  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent

# Our solve configurations: (name, sem_solve arguments beyond mesh / order / threads).
OURS = [
    ("pMG opt4(2,2) Jacobi, BoomerAMG (defaults)", []),
    ("pMG opt4(2,2) weighted ASM, BoomerAMG", ["--base", "asm-weighted"]),
]


def run(cmd: list[str], threads: int, timeout: float = 1200) -> str:
    if threads == 1:
        cmd = ["taskset", "-c", "1"] + cmd
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def ours_operator(exe: Path, mesh: str, p: int, t: int, a) -> dict:
    out = run([str(exe), "--mesh", mesh, "--dofs", str(a.dofs), "--orders", str(p), "--threads", str(t),
               "--seconds", str(a.seconds), "--repeats", str(a.repeats)], t)
    for line in out.splitlines():
        f = line.split()
        if len(f) == 11 and f[0] == str(p):
            keys = ["p", "n", "elements", "dofs", "threads", "seconds_per_apply", "dofs_per_s", "flops_per_dof",
                    "bytes_per_dof", "gflops", "gbs"]
            return {k: float(v) for k, v in zip(keys, f)}
    raise RuntimeError(f"no result line in sem_operator_throughput's output:\n{out}")


def machine_peaks(build: Path) -> dict:
    """STREAM triad GB/s (1 and 2 threads) and FMA GFLOP/s (1 thread, double)."""
    peaks = {}
    exe = build / "bench" / "mg_throughput"
    out = subprocess.run([str(exe), "--benchmark_filter=StreamTriad", "--benchmark_format=json",
                          "--benchmark_repetitions=3", "--benchmark_min_time=0.2"],
                         capture_output=True, text=True, timeout=600).stdout
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        m = re.search(r"threads:(\d+)", b["run_name"])
        key = f"triad_GBs_{m.group(1)}t"
        peaks[key] = max(peaks.get(key, 0.0), b["bytes_per_second"] / 1e9)
    out = run([str(build / "bench" / "fma_peak")], 1)
    # CSV: isa,chains,double_gflops,float_gflops,checksum (the isa quoted, with commas)
    rows = list(csv.reader(io.StringIO(out)))
    peaks["fma_GFLOPs_1t"] = float(rows[1][rows[0].index("double_gflops")])
    peaks["fma_output"] = " ".join(out.split())[:200]
    return peaks


def operator_study(a, build: Path, dealii: Path, peaks: dict) -> list[dict]:
    rows = []
    ours_exe = build / "bench" / "sem_operator_throughput"
    for mesh in a.meshes.split(","):
        for p in [int(x) for x in a.orders.split(",")]:
            for t in [int(x) for x in a.threads.split(",")]:
                best_o, best_d = None, {}
                for _ in range(a.rounds):
                    o = ours_operator(ours_exe, mesh, p, t, a)
                    if best_o is None or o["seconds_per_apply"] < best_o["seconds_per_apply"]:
                        best_o = o
                    out = run([str(dealii), "operator", "--mesh", mesh, "--n", str(int(o["n"])), "--p", str(p),
                               "--threads", str(t), "--quadrature", "both", "--eps", "0.3",
                               "--seconds", str(a.seconds), "--repeats", str(a.repeats)], t)
                    for d in json_lines(out):
                        q = d["quadrature"]
                        if q not in best_d or d["seconds_per_apply"] < best_d[q]["seconds_per_apply"]:
                            best_d[q] = d
                o = best_o
                g, l = best_d["gauss"], best_d["gll"]
                if int(g["dofs"]) != int(o["dofs"]):
                    raise RuntimeError(f"DOF counts differ: ours {o['dofs']}, deal.II {g['dofs']}")
                triad = peaks.get(f"triad_GBs_{t}t", float("nan"))
                fma = peaks.get("fma_GFLOPs_1t", float("nan")) * t
                row = {
                    "mesh": mesh, "p": p, "n": int(o["n"]), "dofs": int(o["dofs"]), "threads": t,
                    "ours_dofs_per_s": f"{o['dofs_per_s']:.4g}",
                    "dealii_gauss_dofs_per_s": f"{g['dofs_per_s']:.4g}",
                    "dealii_gll_dofs_per_s": f"{l['dofs_per_s']:.4g}",
                    "ours_over_dealii_gauss": round(o["dofs_per_s"] / g["dofs_per_s"], 2),
                    "ours_over_dealii_gll": round(o["dofs_per_s"] / l["dofs_per_s"], 2),
                    "ours_flops_per_dof": o["flops_per_dof"], "ours_bytes_per_dof": o["bytes_per_dof"],
                    "ours_GFLOPs": o["gflops"], "ours_GBs": o["gbs"],
                    "ours_fraction_of_triad": round(o["gbs"] / triad, 3),
                    "ours_fraction_of_fma_peak": round(o["gflops"] / fma, 3),
                    "dealii_energy_gauss": g["energy"], "dealii_energy_gll": l["energy"],
                    "dealii_vector_width": g["vector_width"],
                    "loadavg": bl.loadavg(),
                }
                bl.log(f"operator {mesh} p={p} t={t}: ours {row['ours_dofs_per_s']} DOF/s, deal.II gauss "
                       f"{row['dealii_gauss_dofs_per_s']}, gll {row['dealii_gll_dofs_per_s']} (load {row['loadavg']})")
                rows.append(row)
    return rows


def solve_study(a, build: Path, dealii: Path) -> list[dict]:
    rows = []
    for p in [int(x) for x in a.solve_orders.split(",")]:
        for t in [int(x) for x in a.solve_threads.split(",")]:
            for name, extra in OURS:
                out = run([str(build / "bench" / "sem_solve"), "--mesh", "kershaw:12,0.3", "--order", str(p),
                           "--threads", str(t), "--solves", str(a.solves)] + extra, t)
                d = json_lines(out)[-1]
                rows.append({"solver": "elliptica " + name, "p": p, "n": 12, "dofs": d["dofs"], "threads": t,
                             "setup_s": bl.fmt(d["setup_s"]), "solve_s": bl.fmt(d["solve_s"]),
                             "iterations": d["iterations"], "relres": f"{d['relres']:.2e}",
                             "loadavg": bl.loadavg()})
                bl.log(f"solve ours {name} p={p} t={t}: {rows[-1]}")
            for mg in a.dealii_mg.split(","):
                out = run([str(dealii), "solve", "--mg", mg, "--coarse", "6", "--refinements", "1", "--eps", "0.3",
                           "--p", str(p), "--threads", str(t), "--degree", str(a.dealii_degree),
                           "--repeats", str(a.solves)], t)
                d = json_lines(out)[-1]
                name = ("deal.II CG + matrix-free GMG (h: 6^3 -> 12^3)" if mg == "h" else
                        f"deal.II CG + matrix-free pMG ({d.get('schedule', '')} on 12^3)")
                rows.append({"solver": f"{name}, Chebyshev({a.dealii_degree}) over diag^-1, Chebyshev coarse solve",
                             "p": p, "n": d["n"], "dofs": d["dofs"], "threads": t, "setup_s": bl.fmt(d["setup_s"]),
                             "solve_s": bl.fmt(d["solve_s"]), "iterations": d["iterations"],
                             "relres": f"{d['relres']:.2e}", "loadavg": bl.loadavg()})
                bl.log(f"solve deal.II --mg {mg} p={p} t={t}: {rows[-1]} (err_max {d['err_max']})")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(REPO / "build"), help="our build directory (bench/ inside)")
    ap.add_argument("--dealii", default=str(REPO / "build-dealii" / "dealii_sem_peer"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sem_issue14"))
    ap.add_argument("--meshes", default="box,kershaw")
    ap.add_argument("--orders", default="3,4,5,6,7,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dofs", default="1.5e6")
    ap.add_argument("--seconds", default="0.3")
    ap.add_argument("--repeats", default="3")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved ours/deal.II rounds per point (best of)")
    ap.add_argument("--solve-orders", default="7")
    ap.add_argument("--solve-threads", default="1")
    ap.add_argument("--solves", type=int, default=2, help="solves per process (best of)")
    ap.add_argument("--dealii-degree", type=int, default=5, help="deal.II's Chebyshev smoother degree")
    ap.add_argument("--dealii-mg", default="h,p", help="deal.II's multigrid: h (geometric), p (global coarsening)")
    ap.add_argument("--skip-operator", action="store_true")
    ap.add_argument("--skip-solve", action="store_true")
    ap.add_argument("--skip-machine", action="store_true", help="no STREAM / FMA runs (fractions left NaN)")
    a = ap.parse_args()
    build, dealii, out = Path(a.build), Path(a.dealii), Path(a.out)
    needed = [build / "bench" / "sem_operator_throughput", dealii] + ([] if a.skip_solve else [build / "bench" / "sem_solve"])
    for exe in needed:
        if not exe.exists():
            sys.exit(f"run_dealii_peer: {exe} not found (build it first: see the docstring)")
    info = bl.machine()
    info["dealii"] = "9.4 (Debian libdeal.ii-dev)"
    cmd = "python3 bench/sem/run_dealii_peer.py " + " ".join(sys.argv[1:])
    peaks = {} if a.skip_machine else machine_peaks(build)
    if peaks:
        bl.log(f"machine: {peaks}")
    if not a.skip_operator:
        rows = operator_study(a, build, dealii, peaks)
        bl.write_csv(out / "operator_vs_dealii.csv", rows)
        hdr = ["mesh", "p", "n", "DOFs", "threads", "ours DOF/s", "deal.II Gauss DOF/s", "deal.II GLL DOF/s",
               "ours / Gauss", "ours / GLL", "flops/DOF", "bytes/DOF", "GFLOP/s", "GB/s", "of triad",
               "of FMA peak", "load"]
        table = bl.md_table(hdr, [[r["mesh"], r["p"], r["n"], r["dofs"], r["threads"], r["ours_dofs_per_s"],
                                   r["dealii_gauss_dofs_per_s"], r["dealii_gll_dofs_per_s"],
                                   r["ours_over_dealii_gauss"], r["ours_over_dealii_gll"], r["ours_flops_per_dof"],
                                   r["ours_bytes_per_dof"], r["ours_GFLOPs"], r["ours_GBs"],
                                   r["ours_fraction_of_triad"], r["ours_fraction_of_fma_peak"], r["loadavg"]]
                                  for r in rows])
        md = ["# SEM operator throughput: elliptica vs deal.II 9.4 (issue 14)", "", f"Command: `{cmd}`", "",
              bl.md_machine(info), f"- peaks: {json.dumps(peaks)}", "- loadavg_end: " + bl.loadavg(), "",
              OPERATOR_NOTES, "", table, ""]
        bl.write_atomic(out / "operator_vs_dealii.md", "\n".join(md))
    if not a.skip_solve:
        rows = solve_study(a, build, dealii)
        bl.write_csv(out / "solve_vs_dealii.csv", rows)
        hdr = ["solver", "p", "n", "DOFs", "threads", "set-up s", "solve s", "iterations", "relres", "load"]
        table = bl.md_table(hdr, [[r["solver"], r["p"], r["n"], r["dofs"], r["threads"], r["setup_s"], r["solve_s"],
                                   r["iterations"], r["relres"], r["loadavg"]] for r in rows])
        md = ["# SEM Poisson solve to 1e-8: elliptica vs deal.II 9.4 (issue 14)", "", f"Command: `{cmd}`", "",
              bl.md_machine(info), "- loadavg_end: " + bl.loadavg(), "", SOLVE_NOTES, "", table, ""]
        bl.write_atomic(out / "solve_vs_dealii.md", "\n".join(md))
    return 0


OPERATOR_NOTES = """\
DOF/s = free DOFs ((n p - 1)^3, the same for both) / seconds per y = A x, best of --repeats timings of
--seconds of back-to-back applies, best over --rounds interleaved rounds. Ours: SemLaplacian::apply
(GLL collocation, 6 geometric factors per point stored, or 6 constants per affine element: all of a box,
layers 0 and 5 of Kershaw). deal.II: MatrixFree<3,double> + FEEvaluation<3,p,p+1>, FE_Q(p) on GLL
points, homogeneous Dirichlet by AffineConstraints, MappingQ1; 'Gauss': (p+1)^3 Gauss points
(deal.II's default; not the same matrix as ours), 'GLL': (p+1)^3 Gauss-Lobatto points (collocated,
the same matrix as ours). deal.II stores one Jacobian per cell for Cartesian cells (box) and J^-1 and
det J w per point for general cells (Kershaw). Debian's deal.II is configured WITHOUT SIMD
(DEAL_II_VECTORIZATION_WIDTH_IN_BITS 0: VectorizedArray<double> holds 1 double; dealii_vector_width
column), so its cell batches are single cells and its kernels run on what the compiler
auto-vectorises (-O3 -march=native in bench/sem/dealii); a deal.II built with AVX-512 would batch 8
cells per SIMD vector and be considerably faster than this packaged one.
Our cost model (sem_apply_cost, src/multigrid/sem_operator.cpp; printed by sem_operator_throughput):
flops per element 6 N^4 + 23 N^3 - (18 N^2 for odd N) (N = p + 1; 26 N^3 affine; even-odd contractions,
batched kernel; until then 12 N^4 + 17 N^3), bytes streamed per element 48 N^3 (6
stored doubles per point; 48 for an affine element) + 4 N^3 (int32 local-to-global map), plus 32
bytes per global node (x read, y zeroed, y read + written); per free DOF these are the flops/DOF and
bytes/DOF columns. 'of triad' = the model's GB/s over this machine's STREAM triad at the same thread
count; 'of FMA peak' = GFLOP/s over the FMA peak (bench/fma_peak, one thread, x threads).
The deal.II 'energy' columns of the CSV (u^T A u for u = sin sin sin interpolated, -> 3 pi^2 / 8 =
3.7011) check that deal.II's operator is the Laplacian on the same geometry."""

SOLVE_NOTES = """\
Kershaw eps = 0.3, 12^3 elements (the map is trilinear on every cell of the 6^3 grid: deal.II's
global refinement of the 6^3 mesh reproduces our 12^3 mesh exactly), order p, u = 0 on the boundary,
f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), from x = 0 to ||b - A x|| <= 1e-8 ||b||; DOFs = free nodes.
Ours: bench/sem_solve (SemPoissonPlan, PCG + one pMG V-cycle, schedule p, p-2, ..., 1, 4th-kind
optimised Chebyshev order (2,2) over Jacobi or weighted ASM, BoomerAMG V-cycle on p = 1; GLL
quadrature rhs). deal.II: dealii_sem_peer solve: CG + PreconditionMG with MGTransferMatrixFree on
the two levels 6^3 and 12^3 (h-multigrid at fixed p), PreconditionChebyshev of the given degree over
the inverse diagonal (smoothing range 15, 10 CG steps for the eigenvalue estimate) as pre- and
post-smoother, coarse level: Chebyshev to a 1e-3 reduction (degree from the estimate), Gauss
quadrature (p + 1 points, deal.II's default; rhs by Gauss quadrature); deal.II without SIMD (see
operator_vs_dealii.md). set-up s: from the DoF distribution to the multigrid ready (for deal.II
including the lazy Chebyshev eigenvalue estimates, by one preconditioner application); the mesh
generation is not timed for either. solve s: best of --solves solves in one process.
deal.II pMG (--mg p): MGTransferGlobalCoarsening with polynomial transfers, levels p, p - 2, ..., 1
on the 12^3 mesh (our default schedule), the same Chebyshev smoothers, the p = 1 level (1331 DOFs)
solved by Chebyshev to a 1e-3 reduction."""

if __name__ == "__main__":
    sys.exit(main())
