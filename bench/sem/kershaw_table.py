"""Issue 33: the SEM Poisson solver on Kershaw meshes, measured on the issue's grid.

  python3 bench/sem/kershaw_table.py iterations --cli build/apps/elliptica [--out bench/results/sem_issue33]
  python3 bench/sem/kershaw_table.py errors --cli build/apps/elliptica [--out bench/results/sem_issue33]
  python3 bench/sem/kershaw_table.py order-sweep --cli build/apps/elliptica [--out ...]
  python3 bench/sem/kershaw_table.py element --cli build/apps/elliptica [--out ...]
  python3 bench/sem/kershaw_table.py plot-iterations | plot-errors | plot-order-sweep | plot-element
      (PNGs from the CSVs)

iterations: `elliptica mg sem --mesh kershaw:N,EPS --order P --threads 1` for n in {6, 12}, eps in
{1, 0.3, 0.05}, p in {3, 5, 7}: the default solver (PCG, opt4 over weighted ASM with fp32
fast-diagonalisation local solves, Chebyshev order tuned at set-up from 2 (--tune-iterations 30),
schedule p, p-2, ..., 1, BoomerAMG order-1 solve), the same at the fixed order (2,2)
(--tune-iterations 0), and Jacobi at (2,2) (--base jacobi --tune-iterations 0, the earlier
default), to a relative residual of 1e-8, f = 3 pi^2 sin sin sin, x0 = 0. Writes
OUT/kershaw_iterations.csv, .md (the tables of docs/multigrid.md) and .png.

element: the issue's grid at the fixed order (2,2) with three smoother bases, in one run: Jacobi,
weighted ASM over the fast-diagonalisation local solves (the library's default local solver), and
weighted ASM over exact local solves on the elements' own nodes on every level
(--schwarz-element-max-order P): PCG iterations, set-up and solve seconds and seconds per
iteration, OUT/element_local_solves.csv, .md and .png.

order-sweep: the same grid at the fixed Chebyshev orders k = 2, 3, 4, 6, 8 (--pre k --post k
--tune-iterations 0): iterations and solve seconds, OUT/chebyshev_order_sweep.csv and .png (p = 7).

errors: the manufactured-solution study, `--manufactured --rtol 1e-12 --max-iter 1000` (weighted
ASM, 1 thread) for n in {6, 12}, eps in {1, 0.3, 0.05}, p = 2..10 (n = 12: p <= 8): max and
relative L2 errors against u = sin(pi x) sin(pi y) sin(pi z) at the GLL nodes. Writes
OUT/kershaw_errors.csv, .md and .png. A run that stops at the 1000-iteration cap still reports its
errors (the CLI prints them before refusing to write); the cap is reached only where the residual
stagnates near 1e-11, far below the errors (checked: n = 12, eps = 0.05, p = 7 at rtol 1e-10
converges in 122 iterations with the same max error 4.779557e-06).

Iteration counts do not depend on the machine's load; times are one run each, for orientation.
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import benchlib  # noqa: E402


def field(out, name):
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def pyplot():
    """matplotlib.pyplot with the Agg backend, or None (logged) when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        benchlib.log("matplotlib missing: no PNG")
        return None
    return plt


def run(cli, mesh, p, extra):
    with tempfile.TemporaryDirectory() as d:
        cmd = [cli, "mg", "sem", "--mesh", mesh, "--order", str(p), "--threads", "1", "-q", "--out",
               str(Path(d) / "o")] + extra
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if r.returncode not in (0, 5):
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
    t = field(r.stdout, "time")  # "mesh A s, setup B s, solve C s"
    parts = {k.strip().split(" ")[0]: float(k.strip().split(" ")[1]) for k in t.split(",")}
    tuned = [ln for ln in r.stdout.splitlines() if ln.startswith("chebyshev order tuning")]
    order = int(tuned[0].rsplit("chose order ", 1)[1]) if tuned else 2
    tune_s = float(tuned[0].rsplit(" s; chose", 1)[0].rsplit("; ", 1)[1]) if tuned else 0.0
    return dict(iterations=int(field(r.stdout, "iterations")), converged=field(r.stdout, "converged") == "yes",
                chebyshev_order=order, tune_s=tune_s,
                final_rel_residual=float(field(r.stdout, "final relative residual")),
                setup_s=parts.get("setup", 0.0), solve_s=parts.get("solve", 0.0),
                max_error=field(r.stdout, "error max"),
                rel_l2_error=field(r.stdout, "error L2").split("relative ")[-1].rstrip(")") if field(r.stdout, "error L2") else "")


def iterations(cli, out):
    rows = []
    for n in (6, 12):
        for eps in (1, 0.3, 0.05):
            for p in (3, 5, 7):
                for label, extra in (("default", []), ("asm2", ["--tune-iterations", "0"]),
                                     ("jacobi2", ["--base", "jacobi", "--tune-iterations", "0"])):
                    r = run(cli, f"kershaw:{n},{eps}", p, extra + ["--max-iter", "500"])
                    rows.append(dict(n=n, eps=eps, p=p, solver=label, **{k: r[k] for k in (
                        "iterations", "converged", "final_rel_residual", "chebyshev_order", "tune_s", "setup_s",
                        "solve_s")}))
                    benchlib.log(f"n {n} eps {eps} p {p} {label}: {r['iterations']} it (order "
                                 f"{r['chebyshev_order']}), setup {r['setup_s']:.3g} s, solve {r['solve_s']:.3g} s")
    benchlib.write_csv(out / "kershaw_iterations.csv", rows)
    get = {(r["n"], r["eps"], r["p"], r["solver"]): r for r in rows}
    def col(n, eps, solver, key, fmt=str):
        return " / ".join(fmt(get[(n, eps, p, solver)][key]) for p in (3, 5, 7))

    table, times = [], []
    for n in (6, 12):
        for eps in (1, 0.3, 0.05):
            d = [get[(n, eps, p, "default")]["iterations"] for p in (3, 5, 7)]
            a = [get[(n, eps, p, "asm2")]["iterations"] for p in (3, 5, 7)]
            j = [get[(n, eps, p, "jacobi2")]["iterations"] for p in (3, 5, 7)]
            table.append([f"kershaw:{n},{eps}", " / ".join(map(str, d)), col(n, eps, "default", "chebyshev_order"),
                          f"{max(d) / min(d):.2f}", "yes" if max(d) <= 40 else "no", " / ".join(map(str, a)),
                          " / ".join(map(str, j)), " / ".join(f"{y / x:.2f}" for x, y in zip(a, j))])
            f = lambda v: f"{float(v):.2f}"  # noqa: E731
            times.append([f"kershaw:{n},{eps}", col(n, eps, "default", "tune_s", f), col(n, eps, "default", "setup_s", f),
                          col(n, eps, "default", "solve_s", f), col(n, eps, "asm2", "setup_s", f),
                          col(n, eps, "asm2", "solve_s", f)])
    md = benchlib.md_table(["mesh", "default: PCG iterations p = 3 / 5 / 7", "tuned Chebyshev order", "max / min",
                            "<= 40", "weighted ASM (2,2)", "Jacobi (2,2)", "Jacobi / ASM at (2,2)"], table)
    md += "\n\nSeconds (one run each, 1 thread), p = 3 / 5 / 7:\n\n" + benchlib.md_table(
        ["mesh", "default: tuning", "default: set-up (with the tuning)", "default: solve", "(2,2): set-up",
         "(2,2): solve"], times)
    benchlib.write_atomic(out / "kershaw_iterations.md", md + "\n\n" + benchlib.md_machine(benchlib.machine()) + "\n")
    plot_iterations(rows, out)


ELEMENT_SOLVERS = (("jacobi2", ["--base", "jacobi"]), ("fdm2", []), ("element2", None))
ELEMENT_LABELS = {"jacobi2": "Jacobi (2,2)", "fdm2": "weighted ASM, fdm (2,2)", "element2": "weighted ASM, element (2,2)"}


def element(cli, out):
    rows = []
    for n in (6, 12):
        for eps in (1, 0.3, 0.05):
            for p in (3, 5, 7):
                for label, extra in ELEMENT_SOLVERS:
                    extra = ["--schwarz-element-max-order", str(p)] if extra is None else extra
                    r = run(cli, f"kershaw:{n},{eps}", p, extra + ["--tune-iterations", "0", "--max-iter", "500"])
                    rows.append(dict(n=n, eps=eps, p=p, solver=label, **{k: r[k] for k in (
                        "iterations", "converged", "final_rel_residual", "setup_s", "solve_s")},
                        s_per_iteration=r["solve_s"] / max(r["iterations"], 1)))
                    benchlib.log(f"n {n} eps {eps} p {p} {label}: {r['iterations']} it, setup {r['setup_s']:.3g} s, "
                                 f"solve {r['solve_s']:.3g} s")
    benchlib.write_csv(out / "element_local_solves.csv", rows)
    get = {(r["n"], r["eps"], r["p"], r["solver"]): r for r in rows}
    table = []
    for n in (6, 12):
        for eps in (1, 0.3, 0.05):
            for p in (3, 5, 7):
                j, f, e = (get[(n, eps, p, s)] for s in ("jacobi2", "fdm2", "element2"))
                table.append([f"kershaw:{n},{eps}", p, j["iterations"], f["iterations"], e["iterations"],
                              f"{j['iterations'] / f['iterations']:.2f}", f"{j['iterations'] / e['iterations']:.2f}",
                              f"{f['s_per_iteration'] / j['s_per_iteration']:.2f}",
                              f"{e['s_per_iteration'] / j['s_per_iteration']:.2f}",
                              " / ".join(f"{x['solve_s']:.3f}" for x in (j, f, e)),
                              " / ".join(f"{x['setup_s']:.2f}" for x in (j, f, e))])
    md = benchlib.md_table(["mesh", "p", "Jacobi it", "fdm it", "element it", "Jacobi / fdm", "Jacobi / element",
                            "s/it fdm / Jacobi", "s/it element / Jacobi", "solve s (J / fdm / el)",
                            "set-up s (J / fdm / el)"], table)
    benchlib.write_atomic(out / "element_local_solves.md", md + "\n\n" + benchlib.md_machine(benchlib.machine()) + "\n")
    plot_element(rows, out)


def plot_element(rows, out):
    plt = pyplot()
    if plt is None:
        return
    get = {(int(r["n"]), float(r["eps"]), int(r["p"]), r["solver"]): r for r in rows}
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for col, n in enumerate((6, 12)):
        for eps, c in zip((1, 0.3, 0.05), ("C0", "C1", "C3")):
            for label, ls in zip(ELEMENT_LABELS, ("--", ":", "-")):
                it = [int(get[(n, eps, p, label)]["iterations"]) for p in (3, 5, 7)]
                axes[0][col].plot((3, 5, 7), it, ls, color=c, marker="o", label=f"eps {eps}, {ELEMENT_LABELS[label]}")
                t = [float(get[(n, eps, p, label)]["solve_s"]) for p in (3, 5, 7)]
                axes[1][col].semilogy((3, 5, 7), t, ls, color=c, marker="o")
        axes[0][col].set_title(f"Kershaw n = {n}: PCG iterations to 1e-8")
        axes[1][col].set_title(f"Kershaw n = {n}: solve seconds (1 thread)")
        for r in (0, 1):
            axes[r][col].set_xlabel("order p")
            axes[r][col].set_xticks((3, 5, 7))
    axes[0][0].legend(fontsize=6, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / "element_local_solves.png", dpi=120)


LABELS = {"default": "default (tuned order)", "asm2": "weighted ASM (2,2)", "jacobi2": "Jacobi (2,2)"}


def plot_iterations(rows, out):
    plt = pyplot()
    if plt is None:
        return
    get = {(int(r["n"]), float(r["eps"]), int(r["p"]), r["solver"]): int(r["iterations"]) for r in rows}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, n in zip(axes, (6, 12)):
        for eps, c in zip((1, 0.3, 0.05), ("C0", "C1", "C3")):
            for label, ls in (("default", "-"), ("asm2", ":"), ("jacobi2", "--")):
                ax.plot((3, 5, 7), [get[(n, eps, p, label)] for p in (3, 5, 7)], ls, color=c, marker="o",
                        label=f"eps {eps}, {LABELS[label]}")
        ax.axhline(40, color="grey", lw=0.8)
        ax.set_title(f"Kershaw n = {n}: PCG iterations to 1e-8 (grey: 40)")
        ax.set_xlabel("order p")
        ax.set_xticks((3, 5, 7))
    axes[0].set_ylabel("PCG iterations")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / "kershaw_iterations.png", dpi=120)


def order_sweep(cli, out):
    rows = []
    for n in (6, 12):
        for eps in (1, 0.3, 0.05):
            for p in (3, 5, 7):
                for k in (2, 3, 4, 6, 8):
                    r = run(cli, f"kershaw:{n},{eps}", p, ["--pre", str(k), "--post", str(k), "--tune-iterations", "0"])
                    rows.append(dict(n=n, eps=eps, p=p, k=k, iterations=r["iterations"], solve_s=r["solve_s"]))
                    benchlib.log(f"n {n} eps {eps} p {p} k {k}: {r['iterations']} it, solve {r['solve_s']:.3g} s")
    benchlib.write_csv(out / "chebyshev_order_sweep.csv", rows)
    plot_order_sweep(rows, out)


def plot_order_sweep(rows, out):
    plt = pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for n, ls in ((6, "--"), (12, "-")):
        for eps, c in zip((1, 0.3, 0.05), ("C0", "C1", "C3")):
            r = [x for x in rows if int(x["n"]) == n and float(x["eps"]) == eps and int(x["p"]) == 7]
            ks = [int(x["k"]) for x in r]
            axes[0].plot(ks, [int(x["iterations"]) for x in r], ls, color=c, marker="o", label=f"n {n}, eps {eps}")
            t2 = float(r[0]["solve_s"])
            axes[1].plot(ks, [float(x["solve_s"]) / t2 for x in r], ls, color=c, marker="o", label=f"n {n}, eps {eps}")
    axes[0].set_title("p = 7: PCG iterations to 1e-8")
    axes[1].set_title("p = 7: solve time / solve time at k = 2")
    for ax in axes:
        ax.set_xlabel("Chebyshev order k (pre = post, opt4 over weighted ASM)")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "chebyshev_order_sweep.png", dpi=120)


def errors(cli, out):
    rows = []
    for eps in (1, 0.3, 0.05):
        for n in (6, 12):
            for p in range(2, 11):
                if n == 12 and p > 8:
                    continue
                r = run(cli, f"kershaw:{n},{eps}", p,
                        ["--rtol", "1e-12", "--max-iter", "1000", "--manufactured", "--base", "asm-weighted"])
                rows.append(dict(eps=eps, n=n, p=p, iterations=r["iterations"], max_error=r["max_error"],
                                 rel_l2_error=r["rel_l2_error"]))
                benchlib.log(f"eps {eps} n {n} p {p}: max error {r['max_error']}")
    benchlib.write_csv(out / "kershaw_errors.csv", rows)
    plot_errors(rows, out)


def plot_errors(rows, out):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for eps, c in zip((1, 0.3, 0.05), ("C0", "C1", "C3")):
        for n, ls in ((6, "--"), (12, "-")):
            r = [x for x in rows if float(x["eps"]) == eps and int(x["n"]) == n]
            ax.semilogy([int(x["p"]) for x in r], [float(x["max_error"]) for x in r], ls, color=c, marker="o",
                        label=f"eps {eps}, n = {n}")
    ax.axhline(1e-6, color="grey", lw=0.8)
    ax.set_xlabel("order p")
    ax.set_ylabel("max error at the GLL nodes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "kershaw_errors.png", dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["iterations", "errors", "order-sweep", "element", "plot-iterations",
                                     "plot-errors", "plot-order-sweep", "plot-element"])
    ap.add_argument("--cli", default=str(benchlib.REPO / "build" / "apps" / "elliptica"))
    ap.add_argument("--out", default=str(benchlib.RESULTS / "sem_issue33"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.what == "iterations":
        iterations(a.cli, out)
    elif a.what == "errors":
        errors(a.cli, out)
    elif a.what == "order-sweep":
        order_sweep(a.cli, out)
    elif a.what == "element":
        element(a.cli, out)
    elif a.what == "plot-element":
        plot_element(benchlib.read_csv(out / "element_local_solves.csv"), out)
    elif a.what == "plot-order-sweep":
        plot_order_sweep(benchlib.read_csv(out / "chebyshev_order_sweep.csv"), out)
    elif a.what == "plot-iterations":
        plot_iterations(benchlib.read_csv(out / "kershaw_iterations.csv"), out)
    else:
        plot_errors(benchlib.read_csv(out / "kershaw_errors.csv"), out)


if __name__ == "__main__":
    main()
