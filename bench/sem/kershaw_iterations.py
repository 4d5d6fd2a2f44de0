"""Issue 14: why are our PCG iteration counts on Kershaw eps = 0.3 high? Iterations (and solve time)
of bench/sem/sem_solve for variations of one thing at a time around (2,2) opt4 PCG: the smoother
base x Chebyshev kind, the Chebyshev order, the schedule, the coarse solve (BoomerAMG V-cycle vs
sparse direct), the lambda_max safety factor / Lanczos steps, and the mesh (box, Kershaw eps = 1,
0.3, 0.05, n = 6 and 12) at p = 7 (and p = 3); and (group galerkin) the rediscretised coarse
operators of the plan against Galerkin ones (sem_solve --coarse-operators galerkin).

  taskset -c 1 python3 bench/sem/kershaw_iterations.py --build build [--groups base,order,...]
      [--out bench/results/sem_issue14/kershaw_iterations]

Writes OUT.csv (every run) and OUT.md (one table per group). Iteration counts do not depend on the
machine's load; times are one run each, for orientation only.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import benchlib  # noqa: E402

K03 = "kershaw:6,0.3"


def S(*q):
    return ",".join(str(x) for x in q)


def variants(groups):
    """(group, label, mesh, p, options) tuples."""
    out = []
    sch = {"jacobi": S(7, 5, 3, 1), "asm": S(7, 3, 1), "asm-weighted": S(7, 3, 1), "ras": S(7, 3, 1)}
    kry = {"ras": "fgmres"}
    if "base" in groups:  # base x kind x coarse solve, (2,2), p = 7
        for base in ("jacobi", "asm", "asm-weighted", "ras"):
            for kind in ("cheb1", "cheb4", "opt4"):
                for coarse in ("boomeramg", "direct"):
                    out.append(("base", f"{base} {kind} (2,2) {kry.get(base, 'cg')} coarse {coarse}", K03, 7,
                                ["--base", base, "--smoother", kind, "--schedule", sch[base],
                                 "--krylov", kry.get(base, "cg"), "--coarse-solver", coarse]))
    if "order" in groups:  # Chebyshev order k (k,k), opt4, direct coarse; one-sided (2k,0) under FGMRES
        for base in ("jacobi", "asm-weighted", "ras"):
            for k in (1, 2, 3, 4, 6):
                out.append(("order", f"{base} opt4 ({k},{k}) {kry.get(base, 'cg')}", K03, 7,
                            ["--base", base, "--smoother", "opt4", "--pre", k, "--post", k, "--schedule", sch[base],
                             "--krylov", kry.get(base, "cg"), "--coarse-solver", "direct"]))
            for k in (4, 8, 12):
                out.append(("order", f"{base} opt4 ({k},0) fgmres", K03, 7,
                            ["--base", base, "--smoother", "opt4", "--pre", k, "--post", 0, "--schedule", sch[base],
                             "--krylov", "fgmres", "--coarse-solver", "direct"]))
    if "schedule" in groups:  # schedules, opt4 (2,2), direct coarse
        for base in ("jacobi", "asm-weighted"):
            for s in (S(7, 6, 5, 4, 3, 2, 1), S(7, 5, 3, 1), S(7, 3, 1), S(7, 2, 1), S(7, 1)):
                out.append(("schedule", f"{base} opt4 (2,2) pcg schedule ({s})", K03, 7,
                            ["--base", base, "--smoother", "opt4", "--schedule", s, "--coarse-solver", "direct"]))
    if "lambda" in groups:  # the Chebyshev interval: lambda_max safety and Lanczos steps; cheb1 lambda_min ratio
        for base in ("jacobi", "asm-weighted"):
            for saf, its in ((1.1, 10), (1.1, 30), (1.05, 30), (1.3, 10), (1.5, 10)):
                out.append(("lambda", f"{base} opt4 (2,2) pcg safety {saf} lanczos {its}", K03, 7,
                            ["--base", base, "--smoother", "opt4", "--schedule", sch[base], "--coarse-solver", "direct",
                             "--lambda-safety", saf, "--lambda-iterations", its]))
            for lr in (0.03, 0.1, 0.3):
                out.append(("lambda", f"{base} cheb1 (2,2) pcg lmin/lmax {lr}", K03, 7,
                            ["--base", base, "--smoother", "cheb1", "--schedule", sch[base], "--coarse-solver", "direct",
                             "--lmin-ratio", lr]))
    if "mesh" in groups:  # the mesh: how much is the deformation, how much the resolution
        for mesh in ("box:6", "kershaw:6,1", "kershaw:6,0.3", "kershaw:6,0.05", "box:12", "kershaw:12,0.3"):
            for p in (3, 7):
                for base in ("jacobi", "asm-weighted"):
                    s = S(*range(p, 1, -2), 1) if base == "jacobi" else (S(7, 3, 1) if p == 7 else S(3, 1))
                    out.append(("mesh", f"{mesh} p {p} {base} opt4 (2,2) pcg", mesh, p,
                                ["--base", base, "--smoother", "opt4", "--schedule", s, "--coarse-solver", "direct"]))
    if "galerkin" in groups:  # rediscretised coarse operators (the plan's) vs Galerkin P^T A P (sem_solve's experiment)
        for p, base, s in ((3, "jacobi", S(3, 1)), (3, "asm-weighted", S(3, 1)), (7, "jacobi", S(7, 3, 1)),
                           (7, "jacobi", S(7, 5, 3, 1)), (7, "asm-weighted", S(7, 3, 1))):
            for ops in ("rediscretised", "galerkin"):
                out.append(("galerkin", f"p {p} {base} opt4 (2,2) pcg ({s}) {ops} coarse operators", K03, p,
                            ["--base", base, "--smoother", "opt4", "--schedule", s, "--coarse-solver", "direct",
                             "--coarse-operators", ops]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--groups", default="base,order,schedule,lambda,mesh")
    ap.add_argument("--out", default=str(benchlib.RESULTS / "sem_issue14" / "kershaw_iterations"))
    a = ap.parse_args()
    exe = Path(a.build) / "bench" / "sem_solve"
    if not exe.is_file():
        sys.exit(f"error: {exe} not found")
    groups = a.groups.split(",")
    info = benchlib.machine()
    rows = []
    for g, label, mesh, p, opts in variants(groups):
        cmd = [str(exe), "--mesh", mesh, "--order", str(p), "--threads", "1", "--max-iterations", "300"]
        cmd += [str(o) for o in opts]
        t = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"),
                           timeout=1800)
        if t.returncode != 0:
            r = dict(iterations=-1, relres=float("nan"), converged=False, setup_s=float("nan"), solve_s=float("nan"),
                     dofs="", error=t.stderr.strip()[-200:])
        else:
            r = json.loads(t.stdout.strip().splitlines()[-1])
            r["error"] = ""
            h = r.get("history", [])
            n = len(h) - 1
            # mean convergence factor per iteration
            r["rho"] = (h[-1] / h[0]) ** (1.0 / n) if n > 0 and h[0] > 0 else float("nan")
        row = dict(group=g, label=label, mesh=mesh, p=p, dofs=r.get("dofs", ""), iterations=r["iterations"],
                   rho=r.get("rho", float("nan")), relres=r["relres"], converged=r["converged"],
                   setup_s=r["setup_s"], solve_s=r["solve_s"], load=benchlib.loadavg(), error=r["error"])
        rows.append(row)
        benchlib.log(f"{g:8s} {label:60s} its {row['iterations']:4d} rho {row['rho']:.3f} relres {row['relres']:.1e} "
                     f"solve {row['solve_s']:.2f} s {row['error']}")
    out = Path(a.out)
    benchlib.write_csv(out.with_suffix(".csv"), rows)
    L = ["# SEM p-multigrid iterations to 1e-8 on Kershaw meshes (issue 14)", "",
         f"Command: `python3 {' '.join(sys.argv)}`", "", benchlib.md_machine(info), "",
         "Kershaw n = 6 (216 elements) unless the mesh says otherwise; rho = mean residual reduction per "
         "iteration; times: one run, one thread, for orientation.", ""]
    for g in dict.fromkeys(r["group"] for r in rows):
        L.append(f"## {g}")
        L.append("")
        L.append(benchlib.md_table(["variant", "dofs", "its", "rho", "relres", "setup s", "solve s"],
                                   [[r["label"], r["dofs"], r["iterations"] if r["converged"] else f"{r['iterations']} (not conv.)",
                                     f"{r['rho']:.3f}", f"{r['relres']:.1e}", benchlib.fmt(r["setup_s"]),
                                     benchlib.fmt(r["solve_s"])] for r in rows if r["group"] == g]))
    benchlib.write_atomic(out.with_suffix(".md"), "\n".join(L) + "\n")
    benchlib.log(f"wrote {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
