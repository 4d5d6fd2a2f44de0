#!/usr/bin/env python3
"""Plots of `elliptica mg study` (seed 003, section 3).

Usage: python3 scripts/mg_study_plots.py STUDY.csv OUTDIR

Reads the CSV written by `elliptica mg study` (columns lx, coarsening, mode, smoother, m, n, k,
iterations, matvecs, rho, final_rel_residual, converged, levels, op_complexity) and writes one PNG
per case (Lx, coarsening, mode = solver|gmres): OUTDIR/rho_Lx<Lx>_c<c>_<mode>.png, with one panel
per smoother kind showing the average convergence rate rho = (||r_N||/||r_0||)^(1/N) of the
symmetric (k,k) and the one-sided (2k,0) V-cycles against k. The k where the one-sided cycle has
the lower rho are shaded (the observed region where (2k,0) is preferred); the k where the seed's
two-level bound predicts it is preferred are hatched. Runs that failed (rho not finite) are left
out; runs that hit the iteration cap are drawn with open markers.

Predicted regions (seed 003, section 2, eqs. 28-31; Lottes 2023): with rho(SA) scaled to 1, the
symmetric (k,k) cycle is bounded by V(C, k) = C g_k / (1 + C g_k) and the one-sided (2k,0) cycle
by sqrt(V(C, 2k)), g_k = sup_{0<l<=1} l p_k(l)^2 / (1 - p_k(l)^2) of the smoother's error
polynomial p_k (closed forms below). (2k,0) is predicted better where sqrt(V(C,2k)) < V(C,k), i.e.
above a threshold C*(k). C, the approximation constant min_{e_c} ||e - P e_c||^2_{S^-1} <= C ||e||^2_A
(S^-1 = lambda_max D), is computed per case from the fine grid and its interpolation: the largest
eigenvalue of (I - Pi)^T S^-1 (I - Pi) v = C A v (Pi the S^-1-orthogonal projection on range P),
by power iteration with a sparse LU of A. (For n = 128 this gives C = 4.00 at Lx = 1, 127.5 at
Lx = 8 and 3666 at Lx = 64 with n_c = n/2; the seed quotes about 4, 132 and 3668.)
Also written: OUTDIR/predicted_regions_<mode>.png (as the seed's Fig. 2: C*(k) per smoother with
the observed winner of every case at its C) and OUTDIR/C_constants.csv; the agreement between
predicted and observed winners is printed. Needs numpy and scipy; opt4 needs the elliptica
package (opt4_betas), else its prediction is skipped.
Exit status 0 on success, 2 on a bad or empty CSV.
"""
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

REQUIRED = ["lx", "coarsening", "mode", "smoother", "m", "n", "k", "rho", "converged"]
BOUND_KINDS = ["simple", "cheb1", "cheb1opt", "cheb4", "opt4"]


# ---- two-level bound predictions ------------------------------------------------------------

def _cheb_t(k, x):
    """1st-kind Chebyshev T_k(x) by the three-term recurrence (valid for |x| > 1 too)."""
    t0, t1 = np.ones_like(x), x
    if k == 0:
        return t0
    for _ in range(k - 1):
        t0, t1 = t1, 2 * x * t1 - t0
    return t1


def _w4(i, x):
    """4th-kind Chebyshev W_i(x): W_0 = 1, W_1 = 2x + 1, W_{i+1} = 2x W_i - W_{i-1}."""
    w0, w1 = np.ones_like(x), 2 * x + 1
    if i == 0:
        return w0
    for _ in range(i - 1):
        w0, w1 = w1, 2 * x * w1 - w0
    return w1


_LGRID = None


def _lgrid():
    global _LGRID
    if _LGRID is None:
        _LGRID = np.concatenate([np.geomspace(1e-7, 1e-2, 400), np.linspace(1e-2, 1.0, 20000)])
    return _LGRID


def _gamma_of(p, lam):
    p2 = p * p
    if np.any(p2 >= 1.0):
        return math.inf
    return float(np.max(lam * p2 / (1.0 - p2)))


def _cheb1_gamma(k, r, lam):
    x0 = (1 + r) / (1 - r)
    return _gamma_of(_cheb_t(k, (1 + r - 2 * lam) / (1 - r)) / _cheb_t(k, np.array(x0)), lam)


_GAMMA_CACHE = {}


def smoother_gamma(kind, k):
    """g_k of the smoother's error polynomial (lambda_max scaled to 1), or None if unavailable."""
    key = (kind, k)
    if key in _GAMMA_CACHE:
        return _GAMMA_CACHE[key]
    lam = _lgrid()
    g = None
    if kind == "simple":  # omega = 1/lambda_max
        g = _gamma_of((1 - lam) ** k, lam)
    elif kind == "cheb1":  # lambda_min = 0.1 lambda_max (the library's default)
        g = _cheb1_gamma(k, 0.1, lam)
    elif kind == "cheb1opt":  # lambda_min chosen to minimise g (golden section on log r)
        lo, hi = math.log(1e-4), math.log(0.9)
        f = lambda t: _cheb1_gamma(k, math.exp(t), lam)  # noqa: E731
        a, b = lo, hi
        gr = (math.sqrt(5) - 1) / 2
        c, d = b - gr * (b - a), a + gr * (b - a)
        fc, fd = f(c), f(d)
        for _ in range(60):
            if fc < fd:
                b, d, fd = d, c, fc
                c = b - gr * (b - a)
                fc = f(c)
            else:
                a, c, fc = c, d, fd
                d = a + gr * (b - a)
                fd = f(d)
        g = min(fc, fd)
    elif kind in ("cheb4", "opt4"):
        ps = [_w4(i, 1 - 2 * lam) / (2 * i + 1) for i in range(k + 1)]
        if kind == "cheb4":
            g = _gamma_of(ps[k], lam)
        else:
            try:
                import elliptica  # noqa: WPS433
                beta = elliptica.opt4_betas(k)
                g = _gamma_of(1 - sum(beta[i - 1] * (ps[i - 1] - ps[i]) for i in range(1, k + 1)), lam)
            except Exception:  # noqa: BLE001 - elliptica not importable: no opt4 prediction
                g = None
    _GAMMA_CACHE[key] = g
    return g


def one_sided_predicted(kind, k, C):
    """True if sqrt(V(C,2k)) < V(C,k); None when the bound is unavailable."""
    gk, g2k = smoother_gamma(kind, k), smoother_gamma(kind, 2 * k)
    if gk is None or g2k is None:
        return None
    V = lambda g: C * g / (1 + C * g)  # noqa: E731
    return math.sqrt(V(g2k)) < V(gk)


def threshold_C(kind, k, cs):
    """Smallest C on the grid cs from which (2k,0) is predicted better (nan: never; 0: always)."""
    flags = [one_sided_predicted(kind, k, C) for C in cs]
    if any(f is None for f in flags):
        return None
    if all(flags):
        return 0.0
    for C, f in zip(cs, flags):
        if f:
            return C
    return math.nan


def _fd_poisson_2d(n, lx, ly=1.0):
    def lap1(length):
        h = length / n
        return sp.diags([-np.ones(n - 2), 2 * np.ones(n - 1), -np.ones(n - 2)], [-1, 0, 1]) / h ** 2
    return (sp.kron(sp.eye(n - 1), lap1(lx)) + sp.kron(lap1(ly), sp.eye(n - 1))).tocsr()


def _interp_1d(nf, c):
    nc = (nf + 1) // c - 1
    rows, cols, vals = [], [], []
    for i in range(nf):
        g = i + 1
        J, r = g // c, g % c
        for Jc, w in ((J, 1 - r / c), (J + 1, r / c)):
            if 1 <= Jc <= nc and w != 0:
                rows.append(i)
                cols.append(Jc - 1)
                vals.append(w)
    return sp.csr_matrix((vals, (rows, cols)), shape=(nf, nc))


def approximation_constant(n, lx, c, iters=150):
    """Two-level C of the 2D FD Poisson problem with Jacobi (see the module docstring)."""
    A = _fd_poisson_2d(n, lx)
    P1 = _interp_1d(n - 1, c)
    P = sp.kron(P1, P1).tocsr()
    d = A.diagonal()
    lam_max = 1 + math.cos(math.pi / n)  # rho(D^-1 A) of the 5-point Laplacian, any aspect ratio
    Sinv = sp.diags(lam_max * d).tocsr()
    G = spla.splu((P.T @ Sinv @ P).tocsc())
    LA = spla.splu(A.tocsc())
    v = np.random.default_rng(1).standard_normal(A.shape[0])
    C = 0.0
    for _ in range(iters):
        w = Sinv @ v
        w = w - Sinv @ (P @ G.solve(P.T @ w))
        C = float(v @ w) / float(v @ (A @ v))
        v = LA.solve(w)
        v /= np.linalg.norm(v)
    return C
LABELS = {"simple": "simple iteration", "cheb1": "1st-kind Chebyshev", "cheb1opt": "1st-kind, opt. lambda_min",
          "cheb4": "4th-kind Chebyshev", "opt4": "opt. 4th-kind Chebyshev"}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path, outdir = argv[1], argv[2]
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"mg_study_plots: cannot read {path}: {e}", file=sys.stderr)
        return 2
    if not rows or any(c not in rows[0] for c in REQUIRED):
        print(f"mg_study_plots: {path} is empty or lacks the columns {REQUIRED}", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    # data[(lx, c, mode)][smoother][(m, n)] = (rho, converged)
    data = defaultdict(lambda: defaultdict(dict))
    grid_n = int(rows[0]["grid_n"]) if "grid_n" in rows[0] else None
    for r in rows:
        rho = float(r["rho"])
        if not math.isfinite(rho):
            continue
        key = (float(r["lx"]), int(r["coarsening"]), r["mode"])
        data[key][r["smoother"]][(int(r["m"]), int(r["n"]))] = (rho, r["converged"] == "1")
    written = []
    # Approximation constants per case (lx, coarsening); needs the grid size (column grid_n).
    Cs = {}
    if grid_n is not None:
        for lx, c in sorted({(k[0], k[1]) for k in data}):
            print(f"mg_study_plots: approximation constant C for Lx = {lx:g}, n_c = n/{c} ...", file=sys.stderr, flush=True)
            Cs[(lx, c)] = approximation_constant(grid_n, lx, c)
        lines = ["lx,coarsening,grid_n,C"] + [f"{lx:g},{c},{grid_n},{C:.6g}" for (lx, c), C in sorted(Cs.items())]
        _write_text_atomic(os.path.join(outdir, "C_constants.csv"), "\n".join(lines) + "\n")
    else:
        print("mg_study_plots: no grid_n column: predicted regions are not drawn", file=sys.stderr)
    for (lx, c, mode), per_kind in sorted(data.items()):
        kinds = [k for k in LABELS if k in per_kind] + [k for k in per_kind if k not in LABELS]
        fig, axes = plt.subplots(1, len(kinds), figsize=(3.6 * len(kinds), 3.4), squeeze=False, sharey=True)
        for ax, kind in zip(axes[0], kinds):
            runs = per_kind[kind]
            kmax = max((m + n) // 2 for (m, n) in runs)
            ks, sym, one = [], [], []
            for k in range(1, kmax + 1):
                if (k, k) in runs and (2 * k, 0) in runs:
                    ks.append(k)
                    sym.append(runs[(k, k)])
                    one.append(runs[(2 * k, 0)])
            for k, s, o in zip(ks, sym, one):
                if o[0] < s[0]:
                    ax.axvspan(k - 0.5, k + 0.5, color="tab:orange", alpha=0.12, lw=0)
                if (lx, c) in Cs and one_sided_predicted(kind, k, Cs[(lx, c)]):
                    ax.axvspan(k - 0.5, k + 0.5, facecolor="none", edgecolor="tab:red", hatch="///", alpha=0.35, lw=0)
            for series, label, color, marker in ((sym, "(k,k)", "tab:blue", "o"), (one, "(2k,0)", "tab:orange", "s")):
                ax.plot(ks, [v[0] for v in series], color=color, label=label)
                conv = [(k, v[0]) for k, v in zip(ks, series) if v[1]]
                capped = [(k, v[0]) for k, v in zip(ks, series) if not v[1]]
                if conv:
                    ax.plot(*zip(*conv), marker, color=color)
                if capped:
                    ax.plot(*zip(*capped), marker, color=color, mfc="none")
            ax.set_title(LABELS.get(kind, kind), fontsize=9)
            ax.set_xlabel("k")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("rho")
        axes[0][0].legend(fontsize=8, title="shaded: (2k,0) observed better\nhatched: predicted (bound)",
                          title_fontsize=7)
        ctext = f", C = {Cs[(lx, c)]:.4g}" if (lx, c) in Cs else ""
        fig.suptitle(f"2D FD Poisson, Lx = {lx:g}, n_c = n/{c}{ctext}, multigrid as "
                     f"{'solver' if mode == 'solver' else 'GMRES(20) preconditioner'}", fontsize=10)
        fig.tight_layout()
        name = os.path.join(outdir, f"rho_Lx{lx:g}_c{c}_{mode}.png")
        _save_png_atomic(fig, name)
        written.append(name)
    if not written:
        print(f"mg_study_plots: no finite rho values in {path}", file=sys.stderr)
        return 2
    if Cs:
        written += predicted_region_plots(data, Cs, outdir)
    print(f"mg_study_plots: wrote {len(written)} PNG files to {outdir}", file=sys.stderr)
    return 0


def _write_text_atomic(name, text):
    tmp = name + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, name)


def _save_png_atomic(fig, name):
    """Saves fig as the PNG name (dpi 110) through a temporary file and an atomic rename, so
    that a reader never sees a half-written plot; closes fig."""
    tmp = name + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, name)


def predicted_region_plots(data, Cs, outdir):
    """The seed's Fig. 2: per smoother, the predicted threshold C*(k) above which (2k,0) beats
    (k,k), and each case's observed winner at its C. Prints the agreement per smoother."""
    written = []
    cgrid = np.geomspace(1e-2, 1e7, 400)
    for mode in sorted({key[2] for key in data}):
        kinds = [k for k in BOUND_KINDS if any(k in data[key] for key in data if key[2] == mode)]
        fig, axes = plt.subplots(1, len(kinds), figsize=(3.6 * len(kinds), 3.4), squeeze=False, sharey=True)
        summary = []
        for ax, kind in zip(axes[0], kinds):
            kmax = max((m + n) // 2 for key in data if key[2] == mode for (m, n) in data[key].get(kind, {}))
            ks = list(range(1, kmax + 1))
            th = [threshold_C(kind, k, cgrid) for k in ks]
            agree = total = 0
            if all(t is not None for t in th):
                ylo, yhi = cgrid[0], cgrid[-1]
                upper = [yhi] * len(ks)
                lower = [ylo if t == 0.0 else (yhi if math.isnan(t) else t) for t in th]
                ax.fill_between(ks, lower, upper, step="mid", color="tab:orange", alpha=0.15, lw=0,
                                label="predicted (2k,0)")
                ax.step(ks, lower, where="mid", color="tab:red", lw=1)
            for (lx, c, md), per_kind in sorted(data.items()):
                if md != mode or kind not in per_kind or (lx, c) not in Cs:
                    continue
                C = Cs[(lx, c)]
                for k in ks:
                    runs = per_kind[kind]
                    if (k, k) not in runs or (2 * k, 0) not in runs:
                        continue
                    obs = runs[(2 * k, 0)][0] < runs[(k, k)][0]
                    pred = one_sided_predicted(kind, k, C)
                    if pred is not None:
                        total += 1
                        agree += pred == obs
                    ax.plot([k], [C], "s" if obs else "o", color="tab:orange" if obs else "tab:blue",
                            mfc="tab:orange" if obs else "none", ms=5)
            if total:
                summary.append(f"{kind} {agree}/{total}")
            ax.set_title(LABELS.get(kind, kind), fontsize=9)
            ax.set_xscale("linear")
            ax.set_yscale("log")
            ax.set_xlabel("k")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("C")
        axes[0][0].legend(fontsize=7, title="squares: (2k,0) observed better\ncircles: (k,k) better",
                          title_fontsize=7, loc="lower right")
        fig.suptitle(f"Predicted (shaded, above the red line) vs observed one-sided regions, multigrid as "
                     f"{'solver' if mode == 'solver' else 'GMRES(20) preconditioner'}", fontsize=10)
        fig.tight_layout()
        name = os.path.join(outdir, f"predicted_regions_{mode}.png")
        _save_png_atomic(fig, name)
        written.append(name)
        print(f"mg_study_plots: predicted vs observed winner of (2k,0) vs (k,k), {mode}: " + ", ".join(summary),
              file=sys.stderr)
    return written


if __name__ == "__main__":
    sys.exit(main(sys.argv))
