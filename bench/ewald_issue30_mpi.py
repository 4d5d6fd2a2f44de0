#!/usr/bin/env python3
"""Issue 30: the distributed spectral Ewald sum under mpirun, stage by stage, and its
communication model.

    python3 bench/ewald_issue30_mpi.py                      # strong and weak scaling, 1-4 ranks
    python3 bench/ewald_issue30_mpi.py --n 50000 --ranks 1,2 --out /tmp/x   # smoke test

Runs `mpirun -n R elliptica ewald ... --summary` (the CLI's distributed plan: rank 0 reads the
points, MPI-SORT deals them to the slabs) for R = 1..4 ranks, one thread each, on
  - strong scaling: N points (default 2e5) uniform in the unit cube;
  - weak scaling: N points per rank in a box R x 1 x 1 (the grid grows along the slab axis, as
    the seed's 256 N_GPU x 692^2 grids);
for the laplace, stokeslet and stokes-combined kernels at relative tolerance 1e-6. The bytes of
the distributed FFTs (FFTW-MPI's transposes) are measured by the PMPI interposer
bench/mpi_bytes/mpi_bytes.c (built here with mpicc, loaded with LD_PRELOAD; it counts the bytes
each rank sends inside the phases the backend marks with MPI_Pcontrol) and compared, rank by
rank, with the model: rank r sends its planes' part of every other rank's spectrum rows,
n0(r) (M1 - n1(r)) (M2/2 + 1) complex values per R2C component, n1(r) (M0 - n0(r)) (M2/2 + 1)
per C2R component (the seed's combined kernel: 12 R2C + 3 C2R; ours 9 + 3: the stresslet's
q nu^T enters through its 6 symmetric components). Every number comes from the
summary's per-rank record: stage times (SORT, GHOST-SOURCE, P2P, P2G, GHOST-GRID, FFT, CNV, IFFT,
G2P, self; the slowest rank per stage) and the bytes each rank sent, beside the model's bytes
(docs/ewald_mpi.md). The machine has 2 cores: 3 and 4 ranks are oversubscribed, so their times
say nothing about scaling on a cluster (the bytes do); run this on >= 4 free cores for timings.

Then a model of weak scaling to 1000 nodes: the per-rank compute of the largest run, plus per
exchange alpha * messages + bytes / bandwidth, with alpha and the bandwidth as options (defaults
2 us, 12.5 GB/s: 100 Gb/s InfiniBand), for the slab decomposition (FFT all-to-all over all R
ranks, R <= M) and for a pencil decomposition (two all-to-alls over sqrt(R) ranks each, R <= M^2).

Writes mpi_scaling.csv, mpi_model.csv, mpi_scaling.png, mpi_model.png and README.md under --out
(default bench/results/ewald_issue30).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT_DEFAULT = ROOT / "bench" / "results" / "ewald_issue30"
STAGES = ["SORT", "GHOST-SOURCE", "P2P", "P2G", "GHOST-GRID", "FFT", "CNV", "IFFT", "G2P", "self"]


def build_interposer(workdir):
    """bench/mpi_bytes/mpi_bytes.c as a shared library (mpicc), or None without mpicc."""
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        benchlib.log("mpicc missing: the FFT's bytes are the model's only")
        return None
    so = workdir / "mpi_bytes.so"
    subprocess.run([mpicc, "-shared", "-fPIC", "-O2", "-o", str(so), str(ROOT / "bench" / "mpi_bytes" / "mpi_bytes.c")],
                   check=True)
    return so


def run(cli, ranks, kernel, n, box, tol, workdir, tag, interposer=None):
    rng = np.random.default_rng(11)
    x = rng.random((n, 3)) * np.asarray(box)
    np.save(workdir / f"{tag}_x.npy", x)
    dens = []
    if kernel == "laplace":
        q = rng.standard_normal(n)
        np.save(workdir / f"{tag}_s.npy", q - q.mean())
    elif kernel == "stresslet":
        dens = ["--dipoles", f"{tag}_d.npy", "--normals", f"{tag}_n.npy"]
    else:
        np.save(workdir / f"{tag}_s.npy", rng.standard_normal((n, 3)))
        if kernel == "stokes-combined":
            dens = ["--dipoles", f"{tag}_d.npy", "--normals", f"{tag}_n.npy"]
    if dens:
        nu = rng.standard_normal((n, 3))
        np.save(workdir / f"{tag}_n.npy", nu / np.linalg.norm(nu, axis=1)[:, None])
        np.save(workdir / f"{tag}_d.npy", rng.standard_normal((n, 3)))
    if kernel != "stresslet":
        dens = ["--strengths", f"{tag}_s.npy", *dens]
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_mpi_yield_when_idle="1")
    pre = []
    if interposer is not None and ranks > 1:  # the bytes per phase, FFTW-MPI's messages included
        env["LD_PRELOAD"] = str(interposer)
        env["ELLIPTICA_MPI_BYTES"] = str(workdir / f"{tag}_bytes")
        pre = ["-x", "LD_PRELOAD", "-x", "ELLIPTICA_MPI_BYTES"]
    cmd = [shutil.which("mpirun"), "-n", str(ranks), "--allow-run-as-root", "--oversubscribe", *pre, str(cli), "ewald",
           "--kernel", kernel, "--sources", f"{tag}_x.npy", *dens,
           "--box", ",".join(f"{b:g}" for b in box), "--tol", f"{tol:g}", "--threads", "1",
           "--out", f"{tag}_out.npy", "--summary", f"{tag}.json", "--quiet"]
    r = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    s = json.load(open(workdir / f"{tag}.json"))
    rec = {"kernel": kernel, "ranks": ranks, "n": n, "box": "x".join(f"{b:g}" for b in box),
           "grid": "x".join(str(m) for m in s["params"]["grid"]), "P": s["params"]["P"], "rc": s["params"]["rc"],
           "wall_s": s["wall_seconds"]}
    if ranks == 1 or s["mpi"] is None:  # one rank: the single-process plan's stages
        t = s["times"]
        for st in STAGES:
            rec[f"{st}_max_s"] = t.get(st, 0.0)
        rec.update({"bytes_sort": 0, "bytes_ghost_source": 0, "bytes_ghost_grid": 0, "model_ghost_grid": 0,
                    "model_fft_ifft": 0, "ghost_sources_max": 0, "fft_ifft_measured": "", "fft_model_exact": "",
                    "r2c": "", "c2r": ""})
    else:
        pr = s["mpi"]["per_rank"]
        for st in STAGES:
            rec[f"{st}_max_s"] = max(p["times"].get(st, 0.0) for p in pr)
        rec["bytes_sort"] = max(p["bytes_sent"]["sort"] for p in pr)
        rec["bytes_ghost_source"] = max(p["bytes_sent"]["ghost_source"] for p in pr)
        rec["bytes_ghost_grid"] = max(p["bytes_sent"]["ghost_grid"] for p in pr)
        m = s["mpi"]["model_bytes_per_rank"]
        rec["model_ghost_grid"] = m["ghost_grid_fold"] + m["ghost_grid_refresh"]
        rec["model_fft_ifft"] = m["fft"] + m["ifft"]
        rec["ghost_sources_max"] = max(p["ghost_sources"] for p in pr)
        rec["r2c"], rec["c2r"] = s["mpi"]["transforms"]["r2c"], s["mpi"]["transforms"]["c2r"]
        # the transposes per rank: the model (the summary's per-rank model_bytes) against the bytes
        # the PMPI interposer counted inside the FFT and IFFT phases (FFTW-MPI's own messages)
        model_rank = [p["model_bytes"]["fft"] + p["model_bytes"]["ifft"] for p in pr]
        rec["model_fft_ifft"] = max(model_rank)
        rec["fft_ifft_measured"] = rec["fft_model_exact"] = ""
        if interposer is not None:
            meas = []
            for p in pr:
                js = json.load(open(workdir / f"{tag}_bytes.{p['rank']}.json"))
                meas.append(js["phases"]["FFT"]["bytes"] + js["phases"]["IFFT"]["bytes"])
            rec["fft_ifft_measured"] = max(meas)
            rec["fft_model_exact"] = all(abs(a - b) < 0.5 for a, b in zip(meas, model_rank))
    rec["stages_sum_s"] = sum(rec[f"{st}_max_s"] for st in STAGES)
    benchlib.log(f"{kernel} R={ranks} N={n} box {rec['box']} grid {rec['grid']}: stages {rec['stages_sum_s']:.3f} s, "
                 f"ghost planes sent {rec['bytes_ghost_grid'] / 1e6:.2f} MB (model {rec['model_ghost_grid'] / 1e6:.2f}), "
                 f"FFT+IFFT sent {rec['fft_ifft_measured']} B (model {rec['model_fft_ifft']:.0f}, "
                 f"exact per rank: {rec['fft_model_exact']})")
    return rec


def model(recs, alpha, bw, nodes):
    """Weak scaling to `nodes` ranks from the largest measured run of each kernel: compute per
    rank fixed (the measured stages but the exchanges and the FFTs' communication), plus the
    exchanges: MPI-SORT / ghosts as measured bytes over 2 neighbour messages, ghost planes as
    measured, the transforms' all-to-all with R - 1 messages (slab) or 2 (sqrt(R) - 1) (pencil)."""
    rows = []
    for kernel in sorted({r["kernel"] for r in recs}):
        weak = [r for r in recs if r["kernel"] == kernel and r["mode"] == "weak"]
        base = max(weak, key=lambda r: r["ranks"])
        m0 = int(base["grid"].split("x")[0]) // base["ranks"]  # planes per rank
        m1, m2 = (int(v) for v in base["grid"].split("x")[1:])
        comps = {"laplace": 1 + 1, "stokeslet": 3 + 3, "stresslet": 6 + 3, "stokes-combined": 9 + 3}[kernel]
        compute = sum(base[f"{st}_max_s"] for st in ("P2P", "P2G", "CNV", "G2P", "self")) + \
            (base["FFT_max_s"] + base["IFFT_max_s"]) * (0.5 if base["ranks"] > 1 else 1.0)
        near = (base["bytes_ghost_source"] + base["bytes_ghost_grid"])
        for R in nodes:
            fft_bytes = comps * (1 - 1 / R) * m0 * m1 * (m2 // 2 + 1) * 16  # per rank, both transforms
            slab = compute + 4 * alpha + near / bw + (2 * (R - 1) * alpha + fft_bytes / bw if R > 1 else 0)
            q = max(1, int(round(math.sqrt(R))))
            pencil = compute + 4 * alpha + near / bw + (4 * (q - 1) * alpha + 2 * fft_bytes / bw if R > 1 else 0)
            rows.append({"kernel": kernel, "ranks": R, "compute_s": compute, "slab_s": slab, "pencil_s": pencil,
                         "slab_fft_latency_s": 2 * (R - 1) * alpha, "fft_bytes_per_rank": fft_bytes,
                         "slab_feasible": R <= m1,  # FFTW-MPI transposes onto axis 1: at most M1 ranks hold spectrum rows
                         "grid_at_R": f"{m0 * R}x{m1}x{m2}"})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200000, help="points (strong) and points per rank (weak / 2)")
    ap.add_argument("--ranks", default="1,2,3,4")
    ap.add_argument("--kernels", default="laplace,stokeslet,stokes-combined")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--alpha", type=float, default=2e-6, help="network latency per message [s]")
    ap.add_argument("--bandwidth", type=float, default=12.5e9, help="network bandwidth per rank [B/s]")
    ap.add_argument("--out", default=str(OUT_DEFAULT))
    ap.add_argument("--no-interposer", action="store_true", help="do not measure the FFT's bytes (PMPI interposer)")
    a = ap.parse_args()
    cli = Path(os.environ.get("ELLIPTICA_CLI", ROOT / "build" / "apps" / "elliptica")).resolve()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    info = benchlib.machine()
    ranks = [int(r) for r in a.ranks.split(",")]
    recs = []
    with tempfile.TemporaryDirectory() as td:
        wd = Path(td)
        so = None if a.no_interposer else build_interposer(wd)
        for kernel in a.kernels.split(","):
            for R in ranks:
                r = run(cli, R, kernel, a.n, (1.0, 1.0, 1.0), a.tol, wd, f"s{kernel}{R}", so)
                r["mode"] = "strong"
                recs.append(r)
            for R in ranks:
                r = run(cli, R, kernel, a.n // 2 * R, (float(R), 1.0, 1.0), a.tol, wd, f"w{kernel}{R}", so)
                r["mode"] = "weak"
                recs.append(r)
    benchlib.write_csv(out / "mpi_scaling.csv", recs)
    nodes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    mrows = model(recs, a.alpha, a.bandwidth, nodes)
    benchlib.write_csv(out / "mpi_model.csv", mrows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        short = {"laplace": "lap", "stokeslet": "slet", "stresslet": "dlet", "stokes-combined": "comb"}
        fig, axs = plt.subplots(1, 2, figsize=(14, 4.5))
        for ax, mode in zip(axs, ("strong", "weak")):
            for kernel in a.kernels.split(","):
                rs = [r for r in recs if r["mode"] == mode and r["kernel"] == kernel]
                bottom = np.zeros(len(rs))
                for st in STAGES:
                    v = np.array([r[f"{st}_max_s"] for r in rs])
                    ax.bar([f"{short.get(kernel, kernel)} {r['ranks']}" for r in rs], v, bottom=bottom,
                           label=st if kernel == a.kernels.split(",")[0] else None)
                    bottom += v
            ax.set_title(f"{mode} scaling: slowest rank per stage\n(this machine: 2 cores, 3-4 ranks oversubscribed)",
                         fontsize=10)
            ax.set_ylabel("s")
            ax.tick_params(axis="x", rotation=45)
        axs[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "mpi_scaling.png", dpi=120)
        fig, ax = plt.subplots(figsize=(6, 4))
        for kernel in a.kernels.split(","):
            rs = [r for r in mrows if r["kernel"] == kernel]
            ax.plot([r["ranks"] for r in rs], [r["slab_s"] for r in rs], "o-", label=f"{kernel} slab")
            ax.plot([r["ranks"] for r in rs], [r["pencil_s"] for r in rs], "s--", label=f"{kernel} pencil")
        ax.set_xscale("log")
        ax.set_xlabel("ranks (weak scaling)")
        ax.set_ylabel("modelled s per evaluation")
        ax.set_title(f"model: alpha {a.alpha * 1e6:g} us, {a.bandwidth / 1e9:g} GB/s")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "mpi_model.png", dpi=120)
    except ImportError:
        benchlib.log("matplotlib missing: no plots")
    cmd = "python3 bench/ewald_issue30_mpi.py " + " ".join(sys.argv[1:])
    md = [f"# Issue 30: distributed spectral Ewald under mpirun\n", f"Command: `{cmd}`\n", "Machine:\n"]
    md += [f"- {k}: {v}" for k, v in info.items()]
    md.append("\nEvery rank one thread; the machine has 2 cores, so 3 and 4 ranks are oversubscribed: their times "
              "are not scaling results (the bytes are).\n")
    md.append("| mode | kernel | ranks | N | box | grid | P | stages (s) | SORT | GHOST-SOURCE | P2P | P2G | GHOST-GRID | "
              "FFT | CNV | IFFT | G2P | ghost planes sent (MB) | model (MB) | R2C + C2R | FFT+IFFT sent, measured (MB) | "
              "model (MB) | model exact on every rank | ghost sources |")
    md.append("|" + "---|" * 24)
    for r in recs:
        md.append(f"| {r['mode']} | {r['kernel']} | {r['ranks']} | {r['n']} | {r['box']} | {r['grid']} | {r['P']} | "
                  f"{r['stages_sum_s']:.3f} | " + " | ".join(f"{r[f'{st}_max_s']:.3f}" for st in STAGES[:-1]) +
                  f" | {r['bytes_ghost_grid'] / 1e6:.2f} | {r['model_ghost_grid'] / 1e6:.2f} | "
                  f"{r['r2c']} + {r['c2r']} | "
                  f"{(r['fft_ifft_measured'] / 1e6) if r['fft_ifft_measured'] != '' else 0:.3f} | "
                  f"{r['model_fft_ifft'] / 1e6:.3f} | {r['fft_model_exact']} | {r['ghost_sources_max']} |")
    md.append("\n## Model of weak scaling (mpi_model.csv, mpi_model.png)\n")
    md.append(f"alpha = {a.alpha:g} s per message, bandwidth {a.bandwidth:g} B/s per rank; per-rank compute from the "
              "largest weak run. Slab: the FFT and IFFT all-to-alls over all R ranks (R - 1 messages each); pencil: "
              "two all-to-alls over sqrt(R) ranks each per transform.\n")
    md.append("| kernel | ranks | grid | compute (s) | slab (s) | of which FFT latency (s) | pencil (s) | slab feasible |")
    md.append("|---|---|---|---|---|---|---|---|")
    for r in mrows:
        md.append(f"| {r['kernel']} | {r['ranks']} | {r['grid_at_R']} | {r['compute_s']:.3f} | {r['slab_s']:.4f} | "
                  f"{r['slab_fft_latency_s']:.4f} | {r['pencil_s']:.4f} | {r['slab_feasible']} |")
    (out / "README.md").write_text("\n".join(md) + "\n")
    print(f"wrote {out}/README.md, mpi_scaling.csv, mpi_model.csv and the plots")


if __name__ == "__main__":
    main()
