#!/usr/bin/env python3
"""Side-by-side benchmark: elliptica's multigrid vs pyamg vs PETSc (PCMG / GAMG) on FD Poisson.

Measures, in one run, the time to reduce the relative residual ||b - A x||_2 / ||b||_2 by 1e-8
from a zero initial guess, for
  * elliptica: the CLI (`elliptica mg solve`), several smoother/cycle/Krylov configurations;
  * pyamg: smoothed aggregation and Ruge-Stuben, with CG acceleration (a subprocess per run:
    `run_peers.py --worker pyamg ...`, OMP_NUM_THREADS/OPENBLAS_NUM_THREADS = threads);
  * PETSc 3.18 (Debian's python3-petsc4py under /usr/bin/python3): bench/mg/petsc_poisson.py,
    CG + geometric PCMG or GAMG; "threads" t means t MPI ranks (mpiexec -n t).

Usage (from the repository root):
  python3 bench/mg/run_peers.py --out bench/results/mg_peers [--quick] [--repeats 3] \
      [--threads 1,2] [--cases 2d,3d] [--elliptica build/apps/elliptica]

Cases: 2d = poisson2d n = 1024 (1023^2 unknowns), 3d = poisson3d n = 128 (127^3); --quick uses
n = 256 / 32 and one repeat (smoke test). Runs are interleaved (ours, pyamg, petsc, ours, ...)
to spread machine noise. Writes OUT.csv (one row per run) and OUT.md (summary), atomically.

Right-hand sides: 2D: elliptica.seed_problem_2d(n) -- the same problem the CLI's poisson2d
builds (u = sin(3 pi x) sin(4 pi y) + g, b = A u). 3D: b = A u with u = sin(3 pi x) sin(4 pi y)
sin(2 pi z) + g, g ~ U[-1, 1) from numpy's default_rng(RHS_SEED_3D), saved to a .npy used by
pyamg and PETSc; the CLI's poisson3d uses its own fixed g, so its b differs (same matrix).
"""
import argparse
import csv
import datetime
import io
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PETSC_SCRIPT = os.path.join(HERE, "petsc_poisson.py")
PETSC_PYTHON = "/usr/bin/python3"
PETSC_PYTHONPATH = "/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real/lib/python3/dist-packages"
TOL = 1e-8
RHS_SEED_3D = 20240601
CASES = {"2d": (2, 1024), "3d": (3, 128)}
QUICK_CASES = {"2d": (2, 256), "3d": (3, 32)}

# (name, extra CLI arguments)
OURS = [
    ("cheb4 (2,2) pcg", ["--smoother", "cheb4", "--order", "2,2", "--krylov", "pcg"]),
    ("opt4 (2,2) pcg", ["--smoother", "opt4", "--order", "2,2", "--krylov", "pcg"]),
    ("cheb4 (3,3) pcg", ["--smoother", "cheb4", "--order", "3,3", "--krylov", "pcg"]),
    ("opt4 (4,0) gmres20", ["--smoother", "opt4", "--order", "4,0", "--krylov", "gmres20"]),
    ("cheb4 (1,1) pcg", ["--smoother", "cheb4", "--order", "1,1", "--krylov", "pcg"]),
]
# pyamg configurations, resolved in the worker (see pyamg_build)
PYAMG = ["sa default", "sa cheb2", "sa jacobi2", "rs default", "rs cheb2"]
# (name, petsc_poisson.py arguments). PETSc 3.18 has no -ksp_chebyshev_kind (added in 3.19:
# the option is silently left unused), so the Chebyshev kind is not a configuration here.
PETSC = [
    ("mg cheb2", ["--pc", "mg", "--order", "2"]),
    ("mg cheb3", ["--pc", "mg", "--order", "3"]),
    ("gamg default", ["--pc", "gamg", "--order", "0"]),
    ("gamg cheb2", ["--pc", "gamg", "--order", "2"]),
]

FIELDS = ["case", "n", "threads", "solver", "config", "repeat", "setup_s", "solve_s", "total_s",
          "iterations", "relres", "converged", "error"]


# ----------------------------------------------------------------------------- worker: pyamg
def pyamg_build(A, name):
    import pyamg
    sa_cheb = ("chebyshev", {"degree": 2})
    jac2 = ("jacobi", {"iterations": 2, "omega": 2.0 / 3.0})
    if name == "sa default":
        return pyamg.smoothed_aggregation_solver(A)
    if name == "sa cheb2":
        return pyamg.smoothed_aggregation_solver(A, presmoother=sa_cheb, postsmoother=sa_cheb)
    if name == "sa jacobi2":
        return pyamg.smoothed_aggregation_solver(A, presmoother=jac2, postsmoother=jac2)
    if name == "rs default":
        return pyamg.ruge_stuben_solver(A)
    if name == "rs cheb2":
        return pyamg.ruge_stuben_solver(A, presmoother=sa_cheb, postsmoother=sa_cheb)
    raise SystemExit("unknown pyamg configuration %r" % name)


def worker_pyamg(a):
    import numpy as np
    import elliptica as el
    dim, n = a.dim, a.n
    A = el.poisson_fd(n, (1.0,) * dim).tocsr()
    b = np.load(a.rhs)
    t0 = time.perf_counter()
    ml = pyamg_build(A, a.config)
    t1 = time.perf_counter()
    res = []
    x = ml.solve(b, tol=a.tol, accel="cg", residuals=res, maxiter=500)
    t2 = time.perf_counter()
    relres = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    print(json.dumps({"setup_s": t1 - t0, "solve_s": t2 - t1, "iterations": max(len(res) - 1, 0),
                      "relres": relres, "converged": relres <= a.tol,
                      "levels": len(ml.levels)}))


# ----------------------------------------------------------------------------- right-hand sides
def make_rhs(dim, n, path):
    import numpy as np
    import elliptica as el
    if dim == 2:
        _, _, b = el.seed_problem_2d(n)
    else:
        A = el.poisson_fd(n, (1.0, 1.0, 1.0))
        x = np.arange(1, n) / n  # interior points x_i = i h, i = 1..n-1
        Z, Y, X = np.meshgrid(x, x, x, indexing="ij")  # [k][j][i] -> ravel is x fastest
        u = (np.sin(3 * np.pi * X) * np.sin(4 * np.pi * Y) * np.sin(2 * np.pi * Z)).ravel()
        u += np.random.default_rng(RHS_SEED_3D).uniform(-1.0, 1.0, u.size)
        b = A @ u
    np.save(path, np.ascontiguousarray(b, dtype=np.float64))
    return path


# ----------------------------------------------------------------------------- runners
def _run(cmd, env=None, timeout=1800):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout,
                       cwd=REPO)
    return p.returncode, p.stdout, p.stderr


def _thread_env(t):
    t = str(t)
    return {"OMP_NUM_THREADS": t, "OPENBLAS_NUM_THREADS": t, "MKL_NUM_THREADS": t}


def _last_json(out):
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in output")


def run_ours(a, cfg, dim, n, threads, rhs):
    prob = "poisson2d" if dim == 2 else "poisson3d"
    cmd = [a.elliptica, "mg", "solve", "--problem", prob, "--n", str(n), *cfg, "--tol", str(TOL),
           "--threads", str(threads), "-q"]
    rc, out, err = _run(cmd, env=_thread_env(threads), timeout=a.timeout)
    m_it = re.search(r"^iterations:\s*(\d+)", out, re.M)
    m_rr = re.search(r"^final relative residual:\s*([0-9.eE+-]+)", out, re.M)
    m_t = re.search(r"^time: setup\s*([0-9.eE+-]+)\s*s, solve\s*([0-9.eE+-]+)\s*s", out, re.M)
    m_c = re.search(r"^converged:\s*(\w+)", out, re.M)
    if not (m_it and m_rr and m_t and m_c):
        raise RuntimeError("rc=%d, unparsable output: %s" % (rc, (out + err)[-400:]))
    return {"setup_s": float(m_t.group(1)), "solve_s": float(m_t.group(2)),
            "iterations": int(m_it.group(1)), "relres": float(m_rr.group(1)),
            "converged": m_c.group(1) == "yes" and rc == 0,
            "error": "" if rc == 0 else "exit code %d" % rc}


def run_pyamg(a, cfg, dim, n, threads, rhs):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "pyamg", "--dim", str(dim),
           "--n", str(n), "--rhs", rhs, "--config", cfg, "--tol", str(TOL)]
    rc, out, err = _run(cmd, env=_thread_env(threads), timeout=a.timeout)
    if rc != 0:
        raise RuntimeError("rc=%d: %s" % (rc, err[-400:]))
    return _last_json(out)


def petsc_env(threads=1):
    env = _thread_env(1)  # one BLAS/OpenMP thread per MPI rank
    env["PYTHONPATH"] = PETSC_PYTHONPATH
    return env


def run_petsc(a, cfg, dim, n, threads, rhs):
    cmd = [PETSC_PYTHON, PETSC_SCRIPT, "--dim", str(dim), "--n", str(n), "--rhs", rhs,
           "--tol", str(TOL), *cfg]
    if threads > 1:
        cmd = ["mpiexec", "--allow-run-as-root", "-n", str(threads), *cmd]
    rc, out, err = _run(cmd, env=petsc_env(), timeout=a.timeout)
    if rc != 0:
        raise RuntimeError("rc=%d: %s" % (rc, err[-400:]))
    r = _last_json(out)
    if r.get("ranks") != threads:
        raise RuntimeError("expected %d MPI ranks, PETSc ran on %s" % (threads, r.get("ranks")))
    return r


# ----------------------------------------------------------------------------- environment info
def _cmd_out(cmd, env=None):
    try:
        rc, out, err = _run(cmd, env=env, timeout=60)
        return out.strip() if rc == 0 else "unknown (%s)" % err.strip()[-200:]
    except Exception as e:  # noqa: BLE001
        return "unknown (%s)" % e


def environment():
    info = {}
    cpu = _cmd_out(["lscpu"])
    m = re.search(r"^Model name:\s*(.+)$", cpu, re.M)
    info["cpu"] = m.group(1).strip() if m else "unknown"
    m = re.search(r"^CPU\(s\):\s*(\d+)", cpu, re.M)
    info["cpus"] = m.group(1) if m else "?"
    info["pyamg"] = _cmd_out([sys.executable, "-c", "import pyamg; print(pyamg.__version__)"])
    info["petsc"] = _cmd_out([PETSC_PYTHON, "-c", "import petsc4py; petsc4py.init([]); "
                              "from petsc4py import PETSc; "
                              "print('%d.%d.%d' % PETSc.Sys.getVersion())"], env=petsc_env())
    info["git"] = _cmd_out(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    info["elliptica_py"] = _cmd_out([sys.executable, "-c",
                                     "import elliptica; print(getattr(elliptica, '__version__', '?'))"])
    return info


# ----------------------------------------------------------------------------- output
def atomic_write(path, text):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_csv(path, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in FIELDS})
    atomic_write(path, buf.getvalue())


def ok_run(r):
    return (not r.get("error")) and bool(r.get("converged")) and r.get("relres") is not None \
        and r["relres"] <= TOL


def summarize(rows):
    """{(case, threads): {(solver, config): stats}}"""
    groups = {}
    for r in rows:
        groups.setdefault((r["case"], r["threads"]), {}).setdefault((r["solver"], r["config"]),
                                                                    []).append(r)
    out = {}
    for key, cfgs in groups.items():
        out[key] = {}
        for sc, rs in cfgs.items():
            good = [r for r in rs if r.get("total_s") is not None]
            st = {"runs": len(rs), "ok": all(ok_run(r) for r in rs),
                  "errors": sorted({r["error"] for r in rs if r.get("error")})}
            for f in ("setup_s", "solve_s", "total_s"):
                v = [r[f] for r in good]
                st[f + "_min"] = min(v) if v else None
                st[f + "_med"] = statistics.median(v) if v else None
            its = [r["iterations"] for r in good]
            st["iterations"] = "%d" % its[0] if its and min(its) == max(its) else \
                ("%d-%d" % (min(its), max(its)) if its else "-")
            rr = [r["relres"] for r in good if r.get("relres") is not None]
            st["relres_max"] = max(rr) if rr else None
            out[key][sc] = st
    return out


def _f(x, fmt="%.4g"):
    return "-" if x is None else fmt % x


def write_md(path, a, info, rows, meta):
    summ = summarize(rows)
    L = []
    L.append("# Multigrid peers: elliptica vs pyamg vs PETSc\n")
    L.append("Time to reduce ||b - A x||_2 / ||b||_2 by %g from x0 = 0 (setup + solve, wall "
             "clock, median over repeats).\n" % TOL)
    L.append("- command: `%s`" % meta["command"])
    L.append("- date: %s (finished %s)" % (meta["start"], meta.get("end", "(in progress)")))
    L.append("- CPU: %s (%s logical CPUs per lscpu)" % (info["cpu"], info["cpus"]))
    L.append("- versions: elliptica git %s (CLI `%s`), pyamg %s, PETSc %s (petsc4py, Debian)"
             % (info["git"], a.elliptica, info["pyamg"], info["petsc"]))
    L.append("- repeats: %d, interleaved (ours, pyamg, petsc, ours, ...); %s"
             % (a.repeats, "QUICK smoke-test sizes" if a.quick else "full sizes"))
    L.append("- threads t: elliptica `--threads t`; pyamg OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=t "
             "(pyamg's kernels are serial, so t mostly does not matter); PETSc t MPI ranks "
             "(mpiexec -n t), one BLAS thread each.")
    L.append("- matrices: identical FD Laplacians (5/7-point, Dirichlet, unit box). "
             "Right-hand sides: 2D: elliptica's seed problem for all three (the CLI's poisson2d "
             "is the same problem as `seed_problem_2d`). 3D: pyamg and PETSc share b = A u, u = "
             "sin(3 pi x) sin(4 pi y) sin(2 pi z) + g (numpy default_rng(%d)); **the elliptica "
             "CLI's poisson3d uses its own b** (same form, its own random g; same matrix)."
             % RHS_SEED_3D)
    L.append("- timings: elliptica as printed by the CLI (`time: setup, solve`), relres = its "
             "`final relative residual`; pyamg setup = `*_solver(A)`, solve = `ml.solve(b, "
             "tol, accel='cg')`, relres recomputed as the true ||b - A x|| / ||b||; PETSc setup "
             "= KSPSetUp (after assembly), solve = KSPSolve (CG, unpreconditioned norm), relres "
             "true. Matrix assembly / loading is not timed for any solver.")
    L.append("- PETSc 3.18 has no `-ksp_chebyshev_kind` option (first-kind Chebyshev only; the "
             "option exists from 3.19 and 3.18 leaves it unused), so no Chebyshev-kind variants "
             "are run for PETSc.")
    L.append("- ratio = elliptica best / peer best, on median total time: **ratio < 1 means "
             "elliptica is faster**.\n")

    bad = [r for r in rows if not ok_run(r)]
    if bad:
        L.append("## !!! CONVERGENCE / RUN FAILURES: %d run(s) did not reach relres <= %g !!!\n"
                 % (len(bad), TOL))
        L.append("| case | threads | solver | config | repeat | relres | converged | error |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in bad:
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["case"], r["threads"], r["solver"], r["config"], r["repeat"],
                _f(r.get("relres"), "%.3g"), r.get("converged"), r.get("error", "")))
        L.append("")
    else:
        L.append("All %d runs converged to relres <= %g.\n" % (len(rows), TOL))

    for (case, threads), cfgs in sorted(summ.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        n = meta["sizes"][case][1]
        dim = meta["sizes"][case][0]
        L.append("## %s, n = %d (%d^%d unknowns), threads = %d\n" % (case, n, n - 1, dim, threads))
        best = {}
        for (solver, config), st in cfgs.items():
            if st["total_s_med"] is None:
                continue
            # prefer configurations whose every run converged
            cand = (not st["ok"], st["total_s_med"])
            if solver not in best or cand < best[solver][0]:
                best[solver] = (cand, config, st)
        ours = best.get("elliptica")
        L.append("| solver | best config | median total s | min total s | median setup s | "
                 "median solve s | iterations | max relres | ratio ours/peer |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for solver in ("elliptica", "pyamg", "petsc"):
            if solver not in best:
                continue
            _, config, st = best[solver]
            ratio = "-" if solver == "elliptica" or ours is None else \
                "%.3f" % (ours[2]["total_s_med"] / st["total_s_med"])
            flag = "" if st["ok"] else " **FAILED**"
            L.append("| %s | %s%s | %s | %s | %s | %s | %s | %s | %s |" % (
                solver, config, flag, _f(st["total_s_med"]), _f(st["total_s_min"]),
                _f(st["setup_s_med"]), _f(st["solve_s_med"]), st["iterations"],
                _f(st["relres_max"], "%.2e"), ratio))
        L.append("\nAll configurations:\n")
        L.append("| solver | config | runs | setup s (min / med) | solve s (min / med) | "
                 "total s (min / med) | iterations | max relres | converged |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for (solver, config), st in sorted(cfgs.items(), key=lambda kv: (
                ["elliptica", "pyamg", "petsc"].index(kv[0][0]),
                kv[1]["total_s_med"] if kv[1]["total_s_med"] is not None else 1e300)):
            conv = "yes" if st["ok"] else "**NO** %s" % "; ".join(st["errors"])[:200]
            L.append("| %s | %s | %d | %s / %s | %s / %s | %s / %s | %s | %s | %s |" % (
                solver, config, st["runs"], _f(st["setup_s_min"]), _f(st["setup_s_med"]),
                _f(st["solve_s_min"]), _f(st["solve_s_med"]), _f(st["total_s_min"]),
                _f(st["total_s_med"]), st["iterations"], _f(st["relres_max"], "%.2e"), conv))
        L.append("")
    atomic_write(path, "\n".join(L) + "\n")


# ----------------------------------------------------------------------------- driver
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench/results/mg_peers", help="output prefix (.csv, .md)")
    ap.add_argument("--quick", action="store_true", help="2D n=256, 3D n=32, 1 repeat")
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--cases", default="2d,3d")
    ap.add_argument("--elliptica", default="build/apps/elliptica")
    ap.add_argument("--solvers", default="elliptica,pyamg,petsc", help="subset to run")
    ap.add_argument("--configs", default="",
                    help="semicolon-separated configuration names to keep (e.g. 'cheb4 (2,2) pcg;rs default;mg cheb2'); "
                         "default: all")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per single run")
    # worker mode (internal)
    ap.add_argument("--worker", choices=["pyamg"], help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rhs", help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--tol", type=float, default=TOL, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "pyamg":
        return worker_pyamg(a)

    a.repeats = a.repeats if a.repeats is not None else (1 if a.quick else 3)
    if not os.path.exists(a.elliptica):  # relative paths: from the cwd, else the repository root
        a.elliptica = os.path.join(REPO, a.elliptica)
    a.elliptica = os.path.abspath(a.elliptica)
    threads = [int(t) for t in a.threads.split(",") if t.strip()]
    cases = [c.strip() for c in a.cases.split(",") if c.strip()]
    sizes = QUICK_CASES if a.quick else CASES
    for c in cases:
        if c not in sizes:
            ap.error("unknown case %r (2d, 3d)" % c)
    solvers = [s.strip() for s in a.solvers.split(",") if s.strip()]
    if "elliptica" in solvers and not os.access(a.elliptica, os.X_OK):
        ap.error("elliptica binary not found: %s (build it or pass --elliptica)" % a.elliptica)

    meta = {"command": " ".join(shlex.quote(x) for x in ["python3"] + sys.argv),
            "start": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "sizes": sizes}
    info = environment()
    print("versions: elliptica %s, pyamg %s, PETSc %s; CPU %s" % (
        info["git"], info["pyamg"], info["petsc"], info["cpu"]), file=sys.stderr)

    table = {"elliptica": (OURS, run_ours), "pyamg": ([(c, c) for c in PYAMG], run_pyamg),
             "petsc": (PETSC, run_petsc)}
    table = {k: v for k, v in table.items() if k in solvers}
    if a.configs:
        keep = {c.strip() for c in a.configs.split(";") if c.strip()}
        table = {k: ([c for c in v[0] if c[0] in keep], v[1]) for k, v in table.items()}
        table = {k: v for k, v in table.items() if v[0]}
    width = max(len(v[0]) for v in table.values())
    total = len(cases) * len(threads) * a.repeats * sum(len(v[0]) for v in table.values())
    rows, k = [], 0
    tmpdir = tempfile.mkdtemp(prefix="mg_peers_")
    try:
        for case in cases:
            dim, n = sizes[case]
            rhs = make_rhs(dim, n, os.path.join(tmpdir, "b_%s_%d.npy" % (case, n)))
            for t in threads:
                for rep in range(a.repeats):
                    for i in range(width):
                        for solver, (cfgs, runner) in table.items():
                            if i >= len(cfgs):
                                continue
                            name, cfg = cfgs[i]
                            k += 1
                            print("[%d/%d] %s %s %s t=%d rep=%d ..." % (
                                k, total, solver, name, case, t, rep + 1), end=" ",
                                file=sys.stderr, flush=True)
                            row = {"case": case, "n": n, "threads": t, "solver": solver,
                                   "config": name, "repeat": rep + 1, "error": ""}
                            try:
                                r = runner(a, cfg, dim, n, t, rhs)
                                row.update({kk: r.get(kk) for kk in
                                            ("setup_s", "solve_s", "iterations", "relres",
                                             "converged")})
                                row["error"] = r.get("error", "") or ""
                                row["total_s"] = row["setup_s"] + row["solve_s"]
                                row["converged"] = bool(row["converged"])
                                print("total %.4g s (setup %.4g, solve %.4g), it %s, relres %.2e%s"
                                      % (row["total_s"], row["setup_s"], row["solve_s"],
                                         row["iterations"], row["relres"],
                                         "" if ok_run(row) else "  <-- NOT CONVERGED"),
                                      file=sys.stderr, flush=True)
                            except Exception as e:  # noqa: BLE001
                                row.update({"converged": False, "error": str(e)[:300]})
                                print("FAILED: %s" % str(e)[:300], file=sys.stderr, flush=True)
                            rows.append(row)
                # checkpoint after each (case, threads) block
                write_csv(a.out + ".csv", rows)
                write_md(a.out + ".md", a, info, rows, meta)
    finally:
        for f in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)
    meta["end"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    write_csv(a.out + ".csv", rows)
    write_md(a.out + ".md", a, info, rows, meta)
    nbad = sum(not ok_run(r) for r in rows)
    print("wrote %s.csv and %s.md (%d runs, %d not converged / failed)"
          % (a.out, a.out, len(rows), nbad), file=sys.stderr)
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
