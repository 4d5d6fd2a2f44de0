#!/usr/bin/env python3
"""IFMM preconditioner study: `elliptica bem` (Burton-Miller, FMM operator, GMRES) with no
preconditioner, block-diagonal (BD, BDb<l>) and inverse-FMM preconditioners (nIFMMs3/s6, mIFMM; naming
of seed 001), over a matrix of meshes, ka, epsilon, configurations and threads. Each run is its own
process (`/usr/bin/time -v` for the peak resident set); results go to
bench/results/ifmm_study/<tag>.csv (one row a run), <tag>_*.png and <tag>.md (generated from the CSV).

    python3 bench/ifmm_study.py [--exe build/apps/elliptica] [--tag TAG] [--body sphere]
        [--sizes 5120,20480] [--ka 5] [--eps 1e-3] [--configs none,bd,bd-1,s3,s6,m]
        [--threads 2] [--sweep 0] [--append] [--quick] [--report-only]

Configurations (--configs, comma-separated):
  none        no preconditioner
  bd          BD at the leaf level;  bd-D: BD at leaf level - D (BDb<l>);  bd=L: BD at level L
  s3, s6, m   IFMM with colouring separation 3, 6 (nIFMMs3/s6, node-parallel) or sequential (mIFMM);
              each runs for every --eps unless it carries its own: s3@1e-1. Modifiers :tT :bB :oP :dD
              set --ifmm-top/-bottom/-order/-depth, e.g. s3@1e-3:t4.
Sizes are element counts of the body's icosphere-type refinement, 20*4^REF (1280, 5120, 20480, 81920).
--body sphere (radius 1), ellipsoid:A,B,C or file:PATH (a mesh file read by `elliptica bem --mesh`, e.g.
the gmsh submarine of bench/bodies/submarine.py; --sizes is then ignored); ka uses a = 1 as the
length: k = ka. For the sphere the column mie_err is the relative far-field error against the Mie
series (tests/reference/mie.py): max |u_inf - u_mie| / max |u_mie| over the 400 far-field
directions, or over the sweep's backscatter values.
A run that fails (refused input, not converged, killed for memory/time) becomes a row with its
rc and the message in 'note'. --append adds rows to an existing <tag>.csv (a study built in steps);
the md lists every invocation of the script that contributed.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import benchlib as B

OUT_DIR = B.RESULTS / "ifmm_study"
FIELDS = ["body", "mesh", "N", "ka", "k", "config", "family", "precond", "eps", "sigma", "top", "bottom",
          "bd_level", "leaf_level", "threads", "incident", "sweep_n", "iterations", "max_iterations",
          "setup_s", "operator_s", "precond_s", "solve_s", "total_s", "wall_s", "matvecs", "mie_err",
          "peak_rss_mib", "precond_bytes", "precond_mib", "ifmm_peak_mib", "operator_mib", "ifmm_ranks",
          "loadavg", "rc", "note", "cmd"]


def log(msg: str) -> None:
    B.log(msg)


# ----------------------------------------------------------------------------------------------- matrix
def parse_config(tok: str, eps_list: list[float]) -> list[dict]:
    tok = tok.strip()
    if tok == "none":
        return [{"kind": "none"}]
    if tok == "bd":
        return [{"kind": "bd", "rel": 0}]
    m = re.fullmatch(r"bd-(\d+)", tok)
    if m:
        return [{"kind": "bd", "rel": int(m.group(1))}]
    m = re.fullmatch(r"bd=(\d+)", tok)
    if m:
        return [{"kind": "bd", "level": int(m.group(1))}]
    m = re.fullmatch(r"(s3|s6|m)(@[0-9.eE+-]+)?((?::[tbod]-?\d+)*)", tok)
    if not m:
        sys.exit(f"error: unknown configuration '{tok}'")
    sigma = {"s3": 3, "s6": 6, "m": 0}[m.group(1)]
    mods = {"t": "top", "b": "bottom", "o": "order", "d": "depth"}
    extra = {mods[x[0]]: int(x[1:]) for x in m.group(3).split(":") if x}
    epss = [float(m.group(2)[1:])] if m.group(2) else eps_list
    return [dict(kind="ifmm", sigma=sigma, eps=e, **extra) for e in epss]


def mesh_spec(body: str, n: int) -> str:
    if body.startswith("file:"):
        return body[len("file:"):]
    ref = round(math.log(n / 20.0, 4))
    if 20 * 4 ** ref != n:
        sys.exit(f"error: size {n} is not 20*4^REF")
    if body == "sphere":
        return f"sphere:1,{ref}"
    if body.startswith("ellipsoid:"):
        return f"{body},{ref}"
    sys.exit(f"error: unknown body '{body}'")


def family(cfg: dict) -> str:
    if cfg["kind"] == "none":
        return "none"
    if cfg["kind"] == "bd":
        if "level" in cfg:
            return f"BDb{cfg['level']}"
        return "BD" if cfg["rel"] == 0 else f"BDb(leaf-{cfg['rel']})"
    base = "mIFMM" if cfg["sigma"] == 0 else f"nIFMMs{cfg['sigma']}"
    mods = "".join(f" {k}={cfg[k]}" for k in ("top", "bottom", "order", "depth") if k in cfg)
    return f"{base} eps={cfg['eps']:.0e}{mods}"


# ----------------------------------------------------------------------------------------------- one run
def child_pid(pid: int) -> int | None:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return int(kids[0]) if kids else None
    except (OSError, ValueError):
        return None


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_one(exe: Path, args: list[str], out: Path, max_rss_gib: float, timeout: float) -> dict:
    """Runs `time -v exe bem args`; returns rc, stderr tail, peak RSS MiB, wall seconds, note."""
    timev = Path("/usr/bin/time")
    cmd = ([str(timev), "-v"] if timev.exists() else []) + [str(exe), "bem"] + args
    out.mkdir(parents=True, exist_ok=True)
    errf = open(out / "stderr.txt", "w+")
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True)
    note, peak_poll, ru = "", 0, None
    while True:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            break
        target = child_pid(p.pid) if timev.exists() else p.pid
        if target:
            peak_poll = max(peak_poll, rss_kib(target))
        if peak_poll > max_rss_gib * 1024 ** 2 and not note:
            note = f"killed: RSS {peak_poll / 1024:.0f} MiB above the --max-rss-gib {max_rss_gib} limit"
            os.killpg(p.pid, signal.SIGKILL)
        elif time.time() - t0 > timeout and not note:
            note = f"killed: wall time above --timeout {timeout:.0f} s"
            os.killpg(p.pid, signal.SIGKILL)
        time.sleep(0.25)
    wall = time.time() - t0
    errf.seek(0)
    err = errf.read()
    errf.close()
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    peak = int(m.group(1)) / 1024 if m else (ru.ru_maxrss / 1024 if ru else peak_poll / 1024)
    tool_lines = [l for l in err.splitlines() if l.strip() and not l.startswith("\t")
                  and not l.startswith("Command ")]
    if p.returncode != 0 and not note:
        msgs = [l.strip() for l in tool_lines if "error" in l.lower() or "refus" in l.lower()]
        note = (msgs[-1] if msgs else (tool_lines[-1].strip() if tool_lines else f"exit {p.returncode}"))
    return {"rc": p.returncode, "wall": wall, "peak_mib": peak, "note": note, "cmd": cmd}


def mie_error(body: str, rdir: Path, ka: float, incident: str) -> str:
    """Relative far-field error against the Mie series (sphere of radius 1, sound-hard)."""
    if body != "sphere":
        return ""
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "reference"))
        from mie import mie_far_field
        import numpy as np
        if incident.startswith("sweep:"):
            m = np.loadtxt(rdir / "monostatic.csv", delimiter=",", skiprows=1, ndmin=2)
            u = m[:, 5] + 1j * m[:, 6]
            ref = mie_far_field(ka, 1.0, -1.0, "neumann") * np.ones(len(u))
        else:  # plane:0,0,1: the angle from the incident direction has cosine z
            f = np.loadtxt(rdir / "far_field.csv", delimiter=",", skiprows=1, ndmin=2)
            u = f[:, 5] + 1j * f[:, 6]
            ref = mie_far_field(ka, 1.0, f[:, 4], "neumann")
        return f"{np.max(np.abs(u - ref)) / np.max(np.abs(ref)):.3e}"
    except (OSError, ValueError, ImportError) as e:
        log(f"mie error not computed: {e}")
        return ""


def row_from(summary: dict | None, base: dict) -> dict:
    r = {f: "" for f in FIELDS}
    r.update(base)
    if not summary:
        return r
    s = summary
    r["N"] = s.get("elements", r["N"])
    r["leaf_level"] = s.get("leaf_level", "")
    r["bd_level"] = s.get("bd_level", "") if s.get("precond") == "bd" else ""
    r["setup_s"] = s.get("setup_seconds", "")
    r["operator_s"] = s.get("operator_seconds", "")
    r["precond_s"] = s.get("precond_seconds", "")
    r["precond_bytes"] = s.get("precond_bytes", "")
    r["precond_mib"] = f"{s.get('precond_bytes', 0) / 2**20:.1f}"
    r["operator_mib"] = f"{s.get('operator_bytes', 0) / 2**20:.1f}"
    if "sweep" in s:
        sw = s["sweep"]
        r["iterations"] = sw.get("mean_iterations", "")
        r["max_iterations"] = sw.get("max_iterations", "")
        r["solve_s"] = sw.get("total_solve_seconds", "")
        r["matvecs"] = sw.get("matvecs", "")
    else:
        r["iterations"] = s.get("iterations", "")
        r["max_iterations"] = s.get("iterations", "")
        r["solve_s"] = s.get("gmres_seconds", "")
        r["matvecs"] = s.get("matvecs", "")
    if r["setup_s"] != "" and r["solve_s"] != "":
        r["total_s"] = float(r["setup_s"]) + float(r["solve_s"])
    if "ifmm" in s:
        f = s["ifmm"]
        r["config"] = f.get("name", r["config"])
        r["top"], r["bottom"] = f.get("top", ""), f.get("bottom", "")
        r["ifmm_peak_mib"] = f"{f.get('peak_bytes', 0) / 2**20:.1f}"
        r["ifmm_ranks"] = " ".join(f"l{lv['level']}:{lv['max_rank']}/{lv['mean_rank']:.1f}"
                                   for lv in f.get("levels", []))
    elif s.get("precond") == "bd":
        r["config"] = "BD" if s.get("bd_level") == s.get("leaf_level") else f"BDb{s.get('bd_level')}"
    return r


# ----------------------------------------------------------------------------------------------- report
def num(x, default=math.nan) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def ok(r: dict) -> bool:
    return str(r["rc"]) == "0" and r["total_s"] != ""


def plot_all(rows: list[dict], out: Path, tag: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pngs = []
    sel = [r for r in rows if ok(r) and str(r["sweep_n"]) in ("", "0")]
    groups: dict = {}
    for r in sel:
        groups.setdefault((r["body"], num(r["ka"]), int(num(r["threads"]))), []).append(r)
    # the main group: the (body, ka, threads) with the most sizes
    def spread(g):
        return (len({r["N"] for r in g}), len(g))
    if groups:
        key = max(groups, key=lambda k: spread(groups[k]))
        g = groups[key]
        fams = sorted({r["family"] for r in g})
        for what, col, fname, ylab, logy in (("iterations", "iterations", "iterations", "GMRES iterations", False),
                                             ("total time", "total_s", "total", "set-up + solve (s)", True)):
            fig, ax = plt.subplots(figsize=(7, 4.8))
            for i, fam in enumerate(fams):
                pts = sorted(((num(r["N"]), num(r[col])) for r in g if r["family"] == fam))
                # 20 distinct colours (more families than the default cycle's 10); BD and no
                # preconditioner dashed with square / triangle markers, the IFMM solid with circles
                base = fam.startswith("BD") or fam == "none"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=plt.get_cmap("tab20")(i % 20),
                        marker="^" if fam == "none" else "s" if base else "o",
                        linestyle="--" if base else "-", label=fam)
            ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.set_xlabel("N (elements)")
            ax.set_ylabel(ylab)
            ax.set_title(f"{what} vs N: {key[0]}, ka = {key[1]:g}, {key[2]} threads")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            p = out / f"{tag}_{fname}_vs_N.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            pngs.append(p.name)
        # set-up vs solve bars, one bar per run of the main group
        g2 = sorted(g, key=lambda r: (num(r["N"]), r["family"]))
        fig, ax = plt.subplots(figsize=(max(7, 0.55 * len(g2) + 2), 5))
        x = list(range(len(g2)))
        op = [num(r["operator_s"]) for r in g2]
        pc = [num(r["precond_s"]) for r in g2]
        so = [num(r["solve_s"]) for r in g2]
        ax.bar(x, op, color="C7", label="operator (FMM + near field) set-up")
        ax.bar(x, pc, bottom=op, color="C1", label="preconditioner set-up")
        ax.bar(x, so, bottom=[a + b for a, b in zip(op, pc)], color="C0", label="GMRES solve")
        ax.set_xticks(x)
        ax.set_xticklabels([f"{r['config']} {('eps=' + format(num(r['eps']), '.0e')) if r['eps'] != '' else ''}"
                            f"\nN={int(num(r['N']))}" for r in g2], rotation=70, fontsize=7)
        ax.set_ylabel("seconds")
        ax.set_title(f"set-up vs solve: {key[0]}, ka = {key[1]:g}, {key[2]} threads")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        p = out / f"{tag}_setup_vs_solve.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p.name)
    return pngs


def md_report(rows: list[dict], meta: dict, pngs: list[str], tag: str) -> str:
    hdr = ["body", "N", "ka", "config", "eps", "thr", "incident", "its (max)", "set-up s", "precond s",
           "solve s", "total s", "wall s", "Mie err", "peak RSS MiB", "precond MiB", "load", "rc / note"]
    body = []
    for r in rows:
        its = "" if r["iterations"] == "" else (f"{num(r['iterations']):.3g}" +
                                                (f" ({r['max_iterations']})" if str(r["sweep_n"]) not in ("", "0") else ""))
        body.append([r["body"], r["N"], f"{num(r['ka']):g}", r["config"],
                     "" if r["eps"] == "" else f"{num(r['eps']):.0e}", r["threads"],
                     r["incident"], its] +
                    [("" if r[c] == "" else B.fmt(r[c])) for c in ("setup_s", "precond_s", "solve_s", "total_s", "wall_s")] +
                    [r.get("mie_err", "")] +
                    [("" if r["peak_rss_mib"] == "" else f"{num(r['peak_rss_mib']):.0f}"), r["precond_mib"],
                     r["loadavg"].split(" ")[0],
                     ("ok" if str(r["rc"]) == "0" else f"rc {r['rc']}: {r['note']}")])
    out = [f"# IFMM preconditioner study `{tag}`\n",
           "Generated by `bench/ifmm_study.py` from `" + tag + ".csv` (one row a run; every run its own process).\n",
           "Sound-hard body (Neumann), Burton-Miller collocation BEM with the FMM operator, GMRES(50) rtol 1e-5. "
           "Set-up = operator set-up (FMM + near field) + preconditioner set-up; solve = GMRES (for a sweep: the sum "
           "over all directions); total = set-up + solve (far field excluded); wall = the whole process. "
           "Peak RSS = `/usr/bin/time -v` maximum resident set. ka with the radius (ellipsoid: semi-axis a) 1, k = ka. "
           "Configuration names: seed 001 (BD, BDb<l>, nIFMMs<sigma>t<top>b<bottom>, mIFMMb<bottom>). "
           "'load' = the 1-minute load average when the run started (the machine has "
           f"{meta['machine'].get('CPU(s)', '?')} CPUs; a load above the thread count means the times include "
           "contention with other processes).\n",
           "## Machine\n", B.md_machine(meta["machine"]),
           "## Invocations of the script\n"] + [f"- `{c}`" for c in meta["invocations"]] + [
           "\nThe exact `elliptica` command of each run is in the `cmd` column of the CSV; e.g. the first one:\n",
           "```\n" + (rows[0]["cmd"] if rows else "") + "\n```\n",
           "## All runs\n", B.md_table(hdr, body)]
    out.append(summary_md(rows))
    if pngs:
        out.append("## Plots\n\n" + "\n".join(f"![{p}]({p})" for p in pngs) + "\n")
    return "\n".join(out)


def summary_md(rows: list[dict]) -> str:
    """Derived comparisons: best BD vs best IFMM per N, thread speed-up, sweeps."""
    s = ["## Comparisons (derived from the table)\n"]
    single = [r for r in rows if ok(r) and str(r["sweep_n"]) in ("", "0")]
    keyset = sorted({(r["body"], num(r["ka"]), int(num(r["threads"])), int(num(r["N"]))) for r in single})
    lines = ["| body | ka | thr | N | best BD (total s, its) | best IFMM (total s, its) | IFMM / BD total |",
             "|---|---|---|---|---|---|---|"]
    for body, ka, thr, n in keyset:
        g = [r for r in single if (r["body"], num(r["ka"]), int(num(r["threads"])), int(num(r["N"]))) == (body, ka, thr, n)]
        bd = [r for r in g if r["precond"] == "bd"]
        ifm = [r for r in g if r["precond"] == "ifmm"]
        if not bd or not ifm:
            continue
        b = min(bd, key=lambda r: num(r["total_s"]))
        f = min(ifm, key=lambda r: num(r["total_s"]))
        lines.append(f"| {body} | {ka:g} | {thr} | {n} | {b['config']}: {B.fmt(b['total_s'])}, {b['iterations']} | "
                     f"{f['config']} eps={num(f['eps']):.0e}: {B.fmt(f['total_s'])}, {f['iterations']} | "
                     f"{num(f['total_s']) / num(b['total_s']):.2f} |")
    s.append("Best BD vs best IFMM by total time (same body, ka, threads, N):\n\n" + "\n".join(lines) + "\n")
    # thread speed-up
    lines = ["| body | N | ka | config | eps | 1 thr total s | 2 thr total s | speed-up total | speed-up set-up | speed-up solve |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    key = lambda r: (r["body"], r["N"], num(r["ka"]), r["config"], r["eps"], r["incident"])
    by = {}
    for r in single:
        by.setdefault(key(r), {})[int(num(r["threads"]))] = r
    for k, d in by.items():
        if 1 in d and 2 in d:
            a, b = d[1], d[2]
            lines.append(f"| {k[0]} | {k[1]} | {k[2]:g} | {k[3]} | {k[4]} | {B.fmt(a['total_s'])} | {B.fmt(b['total_s'])} | "
                         f"{num(a['total_s']) / num(b['total_s']):.2f} | {num(a['setup_s']) / num(b['setup_s']):.2f} | "
                         f"{num(a['solve_s']) / num(b['solve_s']):.2f} |")
    if len(lines) > 2:
        s.append("Thread speed-up (1 vs 2 threads):\n\n" + "\n".join(lines) + "\n")
    sw = [r for r in rows if ok(r) and str(r["sweep_n"]) not in ("", "0")]
    if sw:
        lines = ["| body | N | ka | config | eps | directions | mean (max) its | set-up s | sweep solve s | total s | per direction s |",
                 "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sw:
            lines.append(f"| {r['body']} | {r['N']} | {num(r['ka']):g} | {r['config']} | {r['eps']} | {r['sweep_n']} | "
                         f"{num(r['iterations']):.3g} ({r['max_iterations']}) | {B.fmt(r['setup_s'])} | {B.fmt(r['solve_s'])} | "
                         f"{B.fmt(r['total_s'])} | {num(r['solve_s']) / int(r['sweep_n']):.3g} |")
        s.append("Monostatic sweeps (one set-up, many right-hand sides):\n\n" + "\n".join(lines) + "\n")
    # memory growth per family (for extrapolating to larger N)
    lines = ["| body | ka | thr | family | N | precond MiB | IFMM peak MiB | peak RSS MiB | growth of RSS vs previous N (exponent) |",
             "|---|---|---|---|---|---|---|---|---|"]
    fam = {}
    for r in single:
        if r["precond"] in ("bd", "ifmm"):
            fam.setdefault((r["body"], num(r["ka"]), r["threads"], r["family"]), []).append(r)
    for k, g in sorted(fam.items()):
        g.sort(key=lambda r: num(r["N"]))
        if len({r["N"] for r in g}) < 2:
            continue
        prev = None
        for r in g:
            e = ""
            if prev is not None and num(r["N"]) > num(prev["N"]):
                e = f"{math.log(num(r['peak_rss_mib']) / num(prev['peak_rss_mib'])) / math.log(num(r['N']) / num(prev['N'])):.2f}"
            lines.append(f"| {k[0]} | {k[1]:g} | {k[2]} | {k[3]} | {r['N']} | {r['precond_mib']} | {r['ifmm_peak_mib']} | "
                         f"{num(r['peak_rss_mib']):.0f} | {e} |")
            prev = r
    if len(lines) > 2:
        s.append("Memory vs N:\n\n" + "\n".join(lines) + "\n")
    bad = [r for r in rows if str(r["rc"]) != "0"]
    if bad:
        s.append("Refused / failed / killed runs:\n\n" + "\n".join(
            f"- {r['mesh']} ka={num(r['ka']):g} {r['family']} thr={r['threads']}: rc {r['rc']}: {r['note']}" for r in bad) + "\n")
    return "\n".join(s)


def write_report(out: Path, tag: str) -> None:
    rows = B.read_csv(out / f"{tag}.csv")
    meta = json.loads((out / f"{tag}.meta.json").read_text())
    pngs = plot_all(rows, out, tag)
    B.write_atomic(out / f"{tag}.md", md_report(rows, meta, pngs, tag))


# ----------------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default=os.environ.get("ELLIPTICA_EXE", str(B.REPO / "build" / "apps" / "elliptica")))
    ap.add_argument("--tag", default="study")
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--body", default="sphere", help="sphere | ellipsoid:A,B,C | file:PATH")
    ap.add_argument("--sizes", default="5120,20480")
    ap.add_argument("--ka", default="5")
    ap.add_argument("--eps", default="1e-3")
    ap.add_argument("--configs", default="none,bd,bd-1,s3,s6,m")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--sweep", type=int, default=0, help="N > 0: a monostatic sweep sweep:theta,0,180,N per run")
    ap.add_argument("--none-max", type=int, default=5120, help="largest N run without a preconditioner")
    ap.add_argument("--max-rss-gib", type=float, default=18.0, help="kill a run whose RSS exceeds this")
    ap.add_argument("--timeout", type=float, default=1800.0, help="kill a run after this many seconds")
    ap.add_argument("--append", action="store_true", help="add rows to an existing <tag>.csv")
    ap.add_argument("--quick", action="store_true", help="smoke test: N=1280, ka=5, none,bd,s3@1e-1, 2 threads")
    ap.add_argument("--report-only", action="store_true", help="regenerate the md and plots from the CSV")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the run folders (default: removed)")
    a = ap.parse_args()
    out = Path(a.out_dir)
    if a.report_only:
        write_report(out, a.tag)
        print(out / f"{a.tag}.md")
        return
    if a.quick:
        a.sizes, a.ka, a.configs, a.threads = "1280", "5", "none,bd,s3@1e-1", "2"
    exe = Path(a.exe)
    if not exe.is_file():
        sys.exit(f"error: {exe} not found (build the CLI or pass --exe)")
    eps_list = [float(e) for e in a.eps.split(",")]
    cfgs = [c for tok in a.configs.split(",") for c in parse_config(tok, eps_list)]
    cases = [(n, float(ka), c, int(t)) for n in [int(float(x)) for x in a.sizes.split(",")]
             for ka in a.ka.split(",") for c in cfgs for t in a.threads.split(",")]
    cases = [c for c in cases if not (c[2]["kind"] == "none" and c[0] > a.none_max)]
    # leaf-relative BD levels need the leaf level: run them after another run of the same mesh
    cases.sort(key=lambda c: 1 if (c[2]["kind"] == "bd" and c[2].get("rel", 0) > 0) else 0)
    csv_path, meta_path = out / f"{a.tag}.csv", out / f"{a.tag}.meta.json"
    rows = B.read_csv(csv_path) if a.append and csv_path.exists() else []
    meta = json.loads(meta_path.read_text()) if a.append and meta_path.exists() else {"machine": B.machine(), "invocations": []}
    meta["invocations"].append("python3 bench/ifmm_study.py " + " ".join(shlex.quote(x) for x in sys.argv[1:]))
    leaf = {(r["mesh"]): int(r["leaf_level"]) for r in rows if r.get("leaf_level")}
    work = B.tmpdir()
    incident = f"sweep:theta,0,180,{a.sweep}" if a.sweep > 0 else "plane:0,0,1"
    log(f"ifmm_study: {len(cases)} runs -> {csv_path}")
    try:
        for i, (n, ka, cfg, thr) in enumerate(cases):
            mesh = mesh_spec(a.body, n)
            args = ["--mesh", mesh, "--k", f"{ka:g}", "--operator", "fmm", "--incident", incident, "--threads", str(thr),
                    "-q"] + ([] if a.sweep > 0 else ["--no-plots"])  # a sweep's plot: its target-strength curve
            if cfg["kind"] == "none":
                args += ["--precond", "none"]
            elif cfg["kind"] == "bd":
                lvl = cfg.get("level")
                if lvl is None and cfg["rel"] > 0:
                    if mesh not in leaf:  # probe: the leaf level from a loose-tolerance BD solve
                        pr = work / "probe"
                        run_one(exe, ["--mesh", mesh, "--k", f"{ka:g}", "--operator", "fmm", "--tol", "0.9", "--threads", str(thr),
                                      "--no-plots", "-q", "--out", str(pr)], pr, a.max_rss_gib, a.timeout)
                        leaf[mesh] = json.loads((pr / "summary.json").read_text())["leaf_level"]
                    lvl = leaf[mesh] - cfg["rel"]
                args += ["--precond", "bd"] + (["--bd-level", str(lvl)] if lvl is not None else [])
            else:
                args += ["--precond", "ifmm", "--ifmm-eps", f"{cfg['eps']:g}", "--ifmm-sigma", str(cfg["sigma"])]
                for k in ("top", "bottom", "order", "depth"):
                    if k in cfg:
                        args += [f"--ifmm-{k}", str(cfg[k])]
            rdir = work / f"run{i}"
            args += ["--out", str(rdir)]
            fam = family(cfg)
            if a.dry_run:
                log(f"[{i + 1}/{len(cases)}] {exe} bem {' '.join(args)}")
                continue
            la = B.loadavg()
            res = run_one(exe, args, rdir, a.max_rss_gib, a.timeout)
            summ = None
            if res["rc"] == 0 and (rdir / "summary.json").exists():
                summ = json.loads((rdir / "summary.json").read_text())
            base = {"body": a.body, "mesh": mesh, "N": n, "ka": ka, "k": ka, "config": fam.split(" ")[0],
                    "family": fam, "precond": cfg["kind"], "eps": cfg.get("eps", ""),
                    "sigma": cfg.get("sigma", ""), "threads": thr, "incident": incident,
                    "sweep_n": a.sweep, "wall_s": f"{res['wall']:.3f}", "peak_rss_mib": f"{res['peak_mib']:.1f}",
                    "loadavg": la, "rc": res["rc"], "note": res["note"],
                    "cmd": " ".join(shlex.quote(x) for x in [str(exe), "bem"] + args)}
            r = row_from(summ, base)
            if summ:
                r["mie_err"] = mie_error(a.body, rdir, ka, incident)
            if r["leaf_level"] != "":
                leaf[mesh] = int(r["leaf_level"])
            rows.append(r)
            B.write_csv(csv_path, [{f: x.get(f, "") for f in FIELDS} for x in rows])  # partial results survive a crash
            meta["machine"]["loadavg_end"] = B.loadavg()
            B.write_atomic(meta_path, json.dumps(meta, indent=1))
            if ok(r):
                log(f"[{i + 1}/{len(cases)}] {mesh} N={r['N']} ka={ka:g} {r['config']} "
                    f"{'eps=' + format(cfg['eps'], '.0e') if 'eps' in cfg else ''} thr={thr}: its {r['iterations']}, "
                    f"set-up {B.fmt(r['setup_s'])} s, solve {B.fmt(r['solve_s'])} s, total {B.fmt(r['total_s'])} s, "
                    f"RSS {num(r['peak_rss_mib']):.0f} MiB")
            else:
                log(f"[{i + 1}/{len(cases)}] {mesh} ka={ka:g} {fam} thr={thr}: FAILED rc {res['rc']}: {res['note']}")
            if ok(r) and incident.startswith("sweep:"):  # the target-strength curve itself is a result
                stem = f"{a.tag}_sweep_{Path(mesh).stem if a.body.startswith('file:') else a.body}_N{r['N']}_ka{ka:g}_{r['config']}"
                if cfg.get("eps"):
                    stem += f"_eps{cfg['eps']:.0e}"
                for ext in ("csv", "png"):
                    if (rdir / f"monostatic.{ext}").exists():
                        shutil.copyfile(rdir / f"monostatic.{ext}", out / f"{stem}_monostatic.{ext}")
            if not a.keep:
                B.rmtree(rdir)
    finally:
        if not a.keep:
            B.rmtree(work)
    if rows and not a.dry_run:
        B.write_atomic(meta_path, json.dumps(meta, indent=1))
        write_report(out, a.tag)
        log(f"written: {csv_path}, {out / (a.tag + '.md')}")


if __name__ == "__main__":
    main()
