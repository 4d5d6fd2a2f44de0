"""Issue 13 benchmark: multigrid on users' assembled matrices (bench/mg/amg_matrices.py) to a
relative residual of 1e-8 with CG, elliptica's smoothed aggregation (MultigridPlan.from_matrix,
one thread) against pyamg SA and RS (serial) and PETSc 3.18 GAMG and hypre BoomerAMG (through
petsc4py, one process, bench/mg/petsc_matrix.py), side by side in one run, interleaved per
repeat; medians. Every solver's answer is checked here: the true relative residual
||b - A x|| / ||b|| is recomputed with scipy.

  PYTHONPATH=<elliptica package> taskset -c 1 python3 bench/mg/amg_users.py [--matrices a,b] [--repeats 3]
      [--solvers ours,ours_cl,ours_geo,ours_boomer,ours_hypre,pyamg_sa,pyamg_rs,gamg,boomeramg]
      [--out bench/results/amg_issue13/users]

ours_boomer / ours_hypre: elliptica's MultigridPlan.from_matrix(method="boomeramg") (a build with
hypre) with our cycle over BoomerAMG's levels / with hypre's own cycle (its Chebyshev relaxation).

Writes OUT.csv (every run) and OUT.md (medians, ratios ours / best peer, CPU model, load).
elliptica's geometric hierarchy (MultigridPlan.from_matrix(method="geometric")) runs where the
matrix lives on a grid (GEOMETRIC below: any size since the any-grid coarsening; the stretched mesh
with semi-coarsening, the pure-Neumann matrix cell-centred with the constant null space).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import amg_matrices  # noqa: E402
import benchlib  # noqa: E402

PETSC_PYTHON = "/usr/bin/python3"
PETSC_PYTHONPATH = "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real/lib/python3/dist-packages"
TOL = 1e-8
MAXITER = 1000


def write_petsc_mat(path, A):
    A = A.tocsr()
    A.sort_indices()
    with open(path, "wb") as f:
        np.array([1211216, A.shape[0], A.shape[1], A.nnz], dtype=">i4").tofile(f)
        np.diff(A.indptr).astype(">i4").tofile(f)
        A.indices.astype(">i4").tofile(f)
        A.data.astype(">f8").tofile(f)


def write_petsc_vec(path, v):
    with open(path, "wb") as f:
        np.array([1211214, len(v)], dtype=">i4").tofile(f)
        np.asarray(v, dtype=">f8").tofile(f)


def relres(A, b, x):
    return float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))


#: matrices on an n x n grid, with the geometric hierarchy's keywords for them
GEOMETRIC = {"poisson1023": {}, "poisson1000": {}, "stretched512": {"semi_coarsening": "auto"},
             "neumann1000": {"grid": "cell", "null_space": "constant"}}


def run_ours(A, b, B, bs, method="sa", boomeramg_cycle="ours", geo_kw=None, strength_measure="symmetric"):
    import elliptica
    t0 = time.perf_counter()
    if method == "sa":
        plan = elliptica.MultigridPlan.from_matrix(A, near_null=B, block_size=bs, threads=1,
                                                   strength_measure=strength_measure)
    elif method == "boomeramg":  # hypre's BoomerAMG (scalar: no near-null space) with our cycle or hypre's
        plan = elliptica.MultigridPlan.from_matrix(A, method="boomeramg", boomeramg_cycle=boomeramg_cycle, threads=1)
    else:
        n = int(round(A.shape[0] ** 0.5))
        plan = elliptica.MultigridPlan.from_matrix(A, method="geometric", shape=(n, n), threads=1,
                                                   **(geo_kw or {}))
    t1 = time.perf_counter()
    x, info = plan.solve(b, tol=TOL, maxiter=MAXITER)
    t2 = time.perf_counter()
    return dict(setup_s=t1 - t0, solve_s=t2 - t1, iterations=info.iterations, relres=relres(A, b, x),
                levels=plan.levels, op_complexity=plan.operator_complexity)


def run_pyamg(A, b, B, bs, kind):
    import pyamg
    t0 = time.perf_counter()
    if kind == "sa":
        ml = pyamg.smoothed_aggregation_solver(A, B=B)
    else:
        ml = pyamg.ruge_stuben_solver(A)
    t1 = time.perf_counter()
    res = []
    x = ml.solve(b, tol=TOL, accel="cg", maxiter=MAXITER, residuals=res)
    t2 = time.perf_counter()
    return dict(setup_s=t1 - t0, solve_s=t2 - t1, iterations=len(res) - 1, relres=relres(A, b, x),
                levels=len(ml.levels), op_complexity=ml.operator_complexity())


def run_petsc(files, pc, A, b, bs, singular):
    env = dict(os.environ, PYTHONPATH=PETSC_PYTHONPATH, OMP_NUM_THREADS="1")
    env.setdefault("PETSC_DIR", "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real")
    cmd = [PETSC_PYTHON, str(HERE / "petsc_matrix.py"), "--matrix", files["A"], "--rhs", files["b"], "--pc", pc,
           "--tol", str(TOL), "--maxiter", str(MAXITER), "--block-size", str(bs)]
    if files.get("B"):
        cmd += ["--near-null", *files["B"]]
    if singular:
        cmd += ["--singular"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"petsc ({pc}) failed: {p.stderr[-2000:]}")
    r = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    return dict(setup_s=r["setup_s"], solve_s=r["solve_s"], iterations=r["iterations"], relres=r["relres"],
                levels="", op_complexity="", reason=r["reason"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matrices", default=",".join(list(amg_matrices.MATRICES) + ["poisson1023"]))
    # ours_boomer: our cycle over hypre's BoomerAMG levels; ours_hypre: hypre's own cycle in our plan
    # ours_cl: smoothed aggregation with the classical strength measure (strength_measure="classical")
    ap.add_argument("--solvers", default="ours,ours_cl,ours_geo,ours_boomer,ours_hypre,pyamg_sa,pyamg_rs,gamg,boomeramg")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(benchlib.RESULTS / "amg_issue13" / "users"))
    a = ap.parse_args()
    solvers = a.solvers.split(",")
    info = benchlib.machine()
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="amg-bench-"))
    for name in a.matrices.split(","):
        if name == "poisson1023":
            A, b, B, bs, desc = amg_matrices.poisson2d(1023)
            desc = desc.replace("1023^2", "1023^2 (= 2^10 - 1: the geometric hierarchy applies)")
        else:
            A, b, B, bs, desc = amg_matrices.MATRICES[name]()
        singular = name.startswith("neumann")
        files = {"A": str(tmp / f"{name}.A"), "b": str(tmp / f"{name}.b")}
        write_petsc_mat(files["A"], A)
        write_petsc_vec(files["b"], b)
        if B is not None:
            files["B"] = []
            for c in range(B.shape[1]):
                files["B"].append(str(tmp / f"{name}.B{c}"))
                write_petsc_vec(files["B"][-1], B[:, c])
        benchlib.log(f"== {name}: {desc}: {A.shape[0]} unknowns, {A.nnz} nonzeros")
        for rep in range(a.repeats):
            for s in solvers:
                if s == "ours_geo" and name not in GEOMETRIC:
                    continue
                try:
                    if s == "ours":
                        r = run_ours(A, b, B, bs)
                    elif s == "ours_cl":  # smoothed aggregation with the classical strength measure
                        r = run_ours(A, b, B, bs, strength_measure="classical")
                    elif s == "ours_geo":
                        r = run_ours(A, b, B, bs, method="geometric", geo_kw=GEOMETRIC[name])
                    elif s in ("ours_boomer", "ours_hypre"):
                        r = run_ours(A, b, B, bs, method="boomeramg",
                                     boomeramg_cycle="ours" if s == "ours_boomer" else "hypre")
                    elif s.startswith("pyamg"):
                        r = run_pyamg(A, b, B, bs, s.split("_")[1])
                    else:
                        r = run_petsc(files, "gamg" if s == "gamg" else "hypre", A, b, bs, singular)
                    r["error"] = ""
                except Exception as e:  # recorded, the run goes on
                    r = dict(setup_s=float("nan"), solve_s=float("nan"), iterations=-1, relres=float("nan"),
                             levels="", op_complexity="", error=str(e)[:300].replace("\n", " "))
                r = dict(matrix=name, solver=s, repeat=rep, **r)
                r.setdefault("reason", "")
                r["total_s"] = r["setup_s"] + r["solve_s"]
                rows.append(r)
                benchlib.log(f"  {s:10s} rep {rep}: setup {r['setup_s']:.3f} s, solve {r['solve_s']:.3f} s, "
                             f"{r['iterations']} its, relres {r['relres']:.2e} {r['error']}")
    cols = ["matrix", "solver", "repeat", "setup_s", "solve_s", "total_s", "iterations", "relres", "levels",
            "op_complexity", "reason", "error"]
    rows = [{k: r.get(k, "") for k in cols} for r in rows]
    out = Path(a.out)
    benchlib.write_csv(out.with_suffix(".csv"), rows)
    # medians per (matrix, solver), converged runs only
    L = [f"# Multigrid on users' matrices (issue 13): time to a relative residual of {TOL:g}, CG", "",
         f"Command: `{' '.join(['python3'] + sys.argv)}` (pinned with taskset by the caller)", "",
         benchlib.md_machine(info), f"- load at end: {benchlib.loadavg()}", "",
         "Every solver on one thread / one process; medians of the repeats; relres recomputed here. "
         "ratio = ours / the best peer (total time, set-up + solve; and solve alone).", ""]
    head = ["matrix", "solver", "setup s", "solve s", "total s", "its", "relres", "levels", "op. compl."]
    table = []
    summary = []
    for name in dict.fromkeys(r["matrix"] for r in rows):
        med = {}
        for s in dict.fromkeys(r["solver"] for r in rows if r["matrix"] == name):
            rs = [r for r in rows if r["matrix"] == name and r["solver"] == s]
            ok = [r for r in rs if not r["error"] and r["relres"] <= 1.01 * TOL * 1.5]
            if not ok:
                table.append([name, s, "-", "-", "-", rs[0]["iterations"], f"{rs[0]['relres']:.1e}", "", "",
                              ])
                continue
            m = {k: statistics.median(float(r[k]) for r in ok) for k in ("setup_s", "solve_s", "total_s")}
            med[s] = m
            table.append([name, s, benchlib.fmt(m["setup_s"]), benchlib.fmt(m["solve_s"]), benchlib.fmt(m["total_s"]),
                          ok[0]["iterations"], f"{ok[0]['relres']:.1e}", ok[0]["levels"],
                          f"{float(ok[0]['op_complexity']):.2f}" if ok[0]["op_complexity"] != "" else ""])
        peers = {s: m for s, m in med.items() if not s.startswith("ours")}
        if "ours" in med and peers:
            bt = min(peers, key=lambda s: peers[s]["total_s"])
            bs_ = min(peers, key=lambda s: peers[s]["solve_s"])
            ours_all = {s: m for s, m in med.items() if s.startswith("ours")}
            bo = min(ours_all, key=lambda s: ours_all[s]["total_s"])
            summary.append([name, f"{med['ours']['total_s'] / peers[bt]['total_s']:.2f} ({bt})",
                            f"{med['ours']['solve_s'] / peers[bs_]['solve_s']:.2f} ({bs_})",
                            f"{ours_all[bo]['total_s'] / peers[bt]['total_s']:.2f} ({bo})",
                            f"{med['ours']['total_s'] / med['ours_geo']['total_s']:.2f}" if "ours_geo" in med else ""])
    L.append(benchlib.md_table(head, table))
    L.append("")
    L.append(benchlib.md_table(["matrix", "ours (SA default) / best peer, total", "ours / best peer, solve",
                                "best of ours / best peer, total", "ours SA / ours geometric, total"], summary))
    benchlib.write_atomic(out.with_suffix(".md"), "\n".join(L) + "\n")
    benchlib.log(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.csv')}")


if __name__ == "__main__":
    main()
