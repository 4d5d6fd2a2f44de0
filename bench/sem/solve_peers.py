"""Issue 14, "Performance" (2nd bullet): time to a relative residual of 1e-8 of the SEM Poisson
problem on Kershaw meshes, our matrix-free p-multigrid (bench/sem/sem_solve, SemPoissonPlan)
against PETSc 3.18 CG + GAMG and CG + hypre BoomerAMG (PETSc's -pc_type hypre) on the ASSEMBLED
matrix of the same problem (SemLaplacian::assemble() on the free nodes, the same b), side by side
in one run, interleaved per repeat, one thread / one process each, best of --repeats.

  taskset -c 1 python3 bench/sem/solve_peers.py --build build [--cases 'kershaw:6,0.3:7;...']
      [--configs "name;name;..."] [--repeats 3] [--out bench/results/sem_issue14/solve_vs_amg]

Every run is pinned by the caller (taskset: the driver's children inherit the CPU set).
Problem: f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), b = B f (GLL mass), x0 = 0; every solver
stops at ||b - A x|| <= 1e-8 ||b|| (PETSc: CG with the unpreconditioned norm, petsc_matrix.py;
ours: PCG / FGMRES on its own residual from x0 = 0), and every answer's relative residual is
recomputed (ours with the matrix-free operator, PETSc's with the assembled matrix: sem_solve
checks that the two operators agree to rounding, "assembled_vs_matrix_free").
Times: set-up (ours: spaces, operators, diagonals, transfers, order-1 matrix, BoomerAMG / direct
coarse set-up, Schwarz FDM, Lanczos estimates; PETSc: KSPSetUp = the AMG hierarchy) + solve. The
peers' matrix is given to them: its assembly by SemLaplacian::assemble() (sequential, reported as
"assemble s") and the file read are NOT counted in their times; ours never assembles the order-p
matrix. Writes OUT.csv (every run) and OUT.md (best of the repeats per solver, ratios ours / each
peer, CPU model, load, git).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import benchlib  # noqa: E402

PETSC_PYTHON = "/usr/bin/python3"
PETSC_DIR = "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real"
PETSC_PYTHONPATH = PETSC_DIR + "/lib/python3/dist-packages"
TOL = 1e-8


def schwarz_schedule(p):
    """The seed's schedule for Schwarz smoothing, (7, 3, 1) at p = 7: p, 3, 1 for p >= 5, else p, 1."""
    return [p, 3, 1] if p >= 5 else [p, 1]


def jacobi_schedule(p):
    """(7, 5, 3, 1): p, p - 2, ... > 1, then 1 (default_pmg_schedule)."""
    s = list(range(p, 1, -2))
    return s + [1]


def sched(s):
    return ",".join(str(q) for q in s)


#: our configurations: name -> function of p giving sem_solve's options
OURS = {
    "jacobi opt4 (2,2) pcg": lambda p: ["--base", "jacobi", "--smoother", "opt4", "--pre", 2, "--post", 2,
                                        "--schedule", sched(jacobi_schedule(p)), "--krylov", "cg"],
    "asm-w opt4 (2,2) pcg": lambda p: ["--base", "asm-weighted", "--smoother", "opt4", "--pre", 2, "--post", 2,
                                       "--schedule", sched(schwarz_schedule(p)), "--krylov", "cg"],
    "asm opt4 (2,2) pcg": lambda p: ["--base", "asm", "--smoother", "opt4", "--pre", 2, "--post", 2,
                                     "--schedule", sched(schwarz_schedule(p)), "--krylov", "cg"],
    "ras opt4 (2,2) fgmres": lambda p: ["--base", "ras", "--smoother", "opt4", "--pre", 2, "--post", 2,
                                        "--schedule", sched(schwarz_schedule(p)), "--krylov", "fgmres"],
    # nekRS's default pressure preconditioner: 1st-kind Chebyshev (lambda_min = 0.1 lambda_max) of order 2
    # over ASM, (p, 3, 1); ours with the symmetric counting weights so that PCG applies
    "nek-like cheb1 asm-w (2,2) pcg": lambda p: ["--base", "asm-weighted", "--smoother", "cheb1", "--pre", 2,
                                                 "--post", 2, "--schedule", sched(schwarz_schedule(p)),
                                                 "--krylov", "cg"],
}

#: PETSc configurations: name -> (pc, extra options)
PEERS = {
    "petsc gamg default": ("gamg", []),
    # GAMG's graph threshold: 3.18's default (-1: keep every entry) vs dropping the weak couplings that
    # the high-order matrix has many of
    "petsc gamg thr0.05": ("gamg", ["pc_gamg_threshold=0.05"]),
    # PETSc's hypre defaults: Falgout coarsening, classical interpolation, threshold 0.25, no truncation,
    # symmetric-SOR/Jacobi relaxation
    "petsc hypre default": ("hypre", []),
    # nekRS's / the seed's coarse settings: HMIS, ext+i, P_max 4; threshold 0.5 (hypre's advice for 3D)
    "petsc hypre hmis ext+i": ("hypre", ["pc_hypre_boomeramg_coarsen_type=HMIS",
                                         "pc_hypre_boomeramg_interp_type=ext+i",
                                         "pc_hypre_boomeramg_P_max=4",
                                         "pc_hypre_boomeramg_strong_threshold=0.5"]),
}


def parse_case(c):
    """'kershaw:6,0.3:7' -> (mesh spec, p)."""
    mesh, _, p = c.rpartition(":")
    return mesh, int(p)


def run_ours(exe, mesh, p, opts, threads):
    cmd = [str(exe), "--mesh", mesh, "--order", str(p), "--threads", str(threads), "--rtol", str(TOL)]
    cmd += [str(o) for o in opts]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    t = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if t.returncode != 0:
        raise RuntimeError(f"sem_solve failed ({t.returncode}): {t.stderr[-1000:]}")
    r = json.loads(t.stdout.strip().splitlines()[-1])
    return dict(setup_s=r["setup_s"], solve_s=r["solve_s"], iterations=r["iterations"], relres=r["relres"],
                converged=r["converged"], rss_mib=r["peak_rss_mib"])


def run_petsc(files, pc, extra):
    env = dict(os.environ, PYTHONPATH=PETSC_PYTHONPATH, OMP_NUM_THREADS="1", PETSC_DIR=PETSC_DIR)
    cmd = [PETSC_PYTHON, str(HERE.parent / "mg" / "petsc_matrix.py"), "--matrix", files["A"], "--rhs", files["b"],
           "--pc", pc, "--tol", str(TOL), "--maxiter", "2000"]
    for o in extra:
        cmd += ["--opt", o]
    # peak RSS of the child via /usr/bin/time when present
    tv = ["/usr/bin/time", "-f", "RSSKB %M"] if Path("/usr/bin/time").exists() else []
    t = subprocess.run(tv + cmd, capture_output=True, text=True, env=env, timeout=3600)
    if t.returncode != 0:
        raise RuntimeError(f"petsc ({pc}) failed: {t.stderr[-1500:]}")
    r = json.loads([ln for ln in t.stdout.splitlines() if ln.startswith("{")][-1])
    rss = ""
    for ln in t.stderr.splitlines():
        if ln.startswith("RSSKB"):
            rss = float(ln.split()[1]) / 1024
    return dict(setup_s=r["setup_s"], solve_s=r["solve_s"], iterations=r["iterations"], relres=r["relres"],
                converged=r["reason"] > 0, rss_mib=rss)


def write_results(a, info, cases, rows):
    """OUT.csv and OUT.md from the runs so far (rewritten after every case)."""
    cols = ["case", "solver", "config", "repeat", "setup_s", "solve_s", "total_s", "iterations", "relres",
            "converged", "rss_mib", "load", "error"]
    out = Path(a.out)
    benchlib.write_csv(out.with_suffix(".csv"), [{k: r.get(k, "") for k in cols} for r in rows])
    L = ["# SEM Poisson on Kershaw meshes: our matrix-free p-multigrid vs PETSc GAMG / hypre BoomerAMG on the "
         "assembled matrix (issue 14)", "",
         f"Command: `taskset -c {info.get('affinity', '?')} python3 {' '.join(sys.argv)}`", "",
         benchlib.md_machine(info) + f"- load at end: {benchlib.loadavg()}", "",
         f"f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), x0 = 0, stop at ||b - A x|| <= {TOL:g} ||b|| (recomputed: "
         "relres). One thread / one process. Best (minimum total) of the repeats per configuration (`runs`: how "
         "many; a configuration slower than --max-repeat-s in its first run is run once). The peers' "
         "matrix assembly (`assemble s`, SemLaplacian::assemble, sequential) and file read are NOT counted in their "
         "times; ours never assembles the order-p matrix. ratio = best of ours / that peer (total); < 1: ours "
         "faster.", "",
         benchlib.md_table(["case", "dofs", "elements", "nnz", "nnz/row", "max row", "matrix MiB", "assemble s",
                            "assembled vs matrix-free (rel. diff.)"],
                           [[c["case"], c["dofs"], c["elements"], c["nnz"], f"{c['nnz_per_row']:.0f}",
                             c["max_row_nnz"], f"{c['matrix_mib']:.0f}", benchlib.fmt(c["assemble_s"]),
                             f"{c['check']:.1e}"] for c in cases]), ""]
    for c in cases:
        rs = [r for r in rows if r["case"] == c["case"]]
        best = {}
        for cfg in dict.fromkeys(r["config"] for r in rs):
            ok = [r for r in rs if r["config"] == cfg and not r["error"] and r["converged"]
                  and r["relres"] <= 1.5 * TOL]
            if ok:
                best[cfg] = min(ok, key=lambda r: r["total_s"])
        ours = {k: v for k, v in best.items() if k in OURS}
        bo = min(ours, key=lambda k: ours[k]["total_s"]) if ours else None
        table = []
        for cfg in dict.fromkeys(r["config"] for r in rs):
            if cfg not in best:
                r0 = [r for r in rs if r["config"] == cfg][0]
                table.append([cfg, "-", "-", "-", r0["iterations"], f"{r0['relres']:.1e}", "", "",
                              len([r for r in rs if r["config"] == cfg]), r0["error"][:80] or "not converged"])
                continue
            r = best[cfg]
            ratio = ""
            if bo and cfg not in OURS:
                ratio = f"{ours[bo]['total_s'] / r['total_s']:.2f} (solve {ours[bo]['solve_s'] / r['solve_s']:.2f})"
            table.append([cfg, benchlib.fmt(r["setup_s"]), benchlib.fmt(r["solve_s"]), benchlib.fmt(r["total_s"]),
                          r["iterations"], f"{r['relres']:.1e}", f"{float(r['rss_mib']):.0f}" if r["rss_mib"] != "" else "",
                          ratio, len([q for q in rs if q["config"] == cfg]), r["load"]])
        L.append(f"## {c['case']} (p = {c['p']}, {c['dofs']} dofs; best of ours: {bo})")
        L.append("")
        L.append(benchlib.md_table(["config", "setup s", "solve s", "total s", "its", "relres", "peak RSS MiB",
                                    "best ours / this (total)", "runs", "load"], table))
    benchlib.write_atomic(out.with_suffix(".md"), "\n".join(L) + "\n")
    benchlib.log(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.csv')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory with bench/sem_solve")
    ap.add_argument("--cases", default="kershaw:6,0.3:7;kershaw:12,0.3:3;kershaw:6,1:7",
                    help="';'-separated MESH:ORDER, MESH as sem_solve's --mesh")
    ap.add_argument("--configs", default=";".join(list(OURS) + list(PEERS)), help="';'-separated names")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-repeat-s", type=float, default=0,
                    help="a configuration whose first run took longer than this (total s) is not repeated (0: all)")
    ap.add_argument("--out", default=str(benchlib.RESULTS / "sem_issue14" / "solve_vs_amg"))
    a = ap.parse_args()
    exe = Path(a.build) / "bench" / "sem_solve"
    if not exe.is_file():
        sys.exit(f"error: {exe} not found (cmake -DELLIPTICA_BUILD_BENCH=ON, target sem_solve)")
    configs = [c.strip() for c in a.configs.split(";") if c.strip()]
    for c in configs:
        if c not in OURS and c not in PEERS:
            sys.exit(f"error: unknown config '{c}'; known: {', '.join(list(OURS) + list(PEERS))}")
    info = benchlib.machine()
    try:
        info["affinity"] = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    except OSError:
        pass
    rows, cases = [], []
    tmp = Path(tempfile.mkdtemp(prefix="sem-peers-"))
    try:
        for case in a.cases.split(";"):
            mesh, p = parse_case(case.strip())
            prefix = tmp / f"case{len(cases)}"
            t = subprocess.run([str(exe), "--mesh", mesh, "--order", str(p), "--threads", "1", "--no-solve",
                                "--write-petsc", str(prefix)], capture_output=True, text=True, timeout=3600)
            if t.returncode != 0:
                sys.exit(f"error: writing the matrix of {case} failed: {t.stderr}")
            w = json.loads(t.stdout.strip().splitlines()[-1])
            if not w["assembled_vs_matrix_free"] < 1e-12:
                sys.exit(f"error: assembled and matrix-free operators differ ({w['assembled_vs_matrix_free']})")
            files = {"A": str(prefix) + ".A", "b": str(prefix) + ".b"}
            cinfo = dict(case=case.strip(), mesh=mesh, p=p, dofs=w["dofs"], elements=w["elements"], nnz=w["nnz"],
                         nnz_per_row=w["nnz"] / w["dofs"], max_row_nnz=w["max_row_nnz"], matrix_mib=w["matrix_mib"],
                         assemble_s=w["assemble_s"], check=w["assembled_vs_matrix_free"])
            cases.append(cinfo)
            benchlib.log(f"== {case}: {w['dofs']} dofs, {w['elements']} elements, nnz {w['nnz']} "
                         f"({w['nnz'] / w['dofs']:.0f}/row, max {w['max_row_nnz']}), {w['matrix_mib']:.0f} MiB, "
                         f"assembly {w['assemble_s']:.2f} s, |A_asm v - A v|/|A v| = {w['assembled_vs_matrix_free']:.1e}")
            for rep in range(a.repeats):
                for c in configs:
                    if rep > 0 and a.max_repeat_s > 0:
                        first = [r for r in rows if r["case"] == case.strip() and r["config"] == c]
                        if first and not first[0]["total_s"] <= a.max_repeat_s:
                            continue
                    load = benchlib.loadavg()
                    try:
                        if c in OURS:
                            r = run_ours(exe, mesh, p, OURS[c](p), a.threads)
                        else:
                            r = run_petsc(files, *PEERS[c])
                        r["error"] = ""
                    except Exception as e:  # recorded, the run goes on
                        r = dict(setup_s=float("nan"), solve_s=float("nan"), iterations=-1, relres=float("nan"),
                                 converged=False, rss_mib="", error=str(e)[:300].replace("\n", " "))
                    r = dict(case=case.strip(), solver="ours" if c in OURS else "petsc", config=c, repeat=rep,
                             load=load, **r)
                    r["total_s"] = r["setup_s"] + r["solve_s"]
                    rows.append(r)
                    benchlib.log(f"  {c:32s} rep {rep}: setup {r['setup_s']:.3f} s, solve {r['solve_s']:.3f} s, "
                                 f"{r['iterations']} its, relres {r['relres']:.2e}, load {load} {r['error']}")
            write_results(a, info, cases, rows)
            for ext in (".A", ".b", ".x", ".y", ".z"):
                Path(str(prefix) + ext).unlink(missing_ok=True)
    finally:
        benchlib.rmtree(tmp)


if __name__ == "__main__":
    main()
