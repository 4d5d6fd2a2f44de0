"""Shared helpers of the benchmark scripts in bench/ (driver discovery, running one
configuration of the C++ driver, test data, machine description, tables and atomic writes)."""
from __future__ import annotations

import csv
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
STAGES = ["P2P", "P2G", "FFT", "CNV", "IFFT", "G2P", "setup", "self"]
FAR = ["P2G", "FFT", "CNV", "IFFT", "G2P"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def find_exe(build_dir: str | None, name: str) -> Path:
    """The bench executable `name` in build_dir/bench (default: $ELLIPTICA_BENCH_BUILD or
    build-bench). Exits with a clear message if it is missing."""
    bd = Path(build_dir or os.environ.get("ELLIPTICA_BENCH_BUILD", REPO / "build-bench"))
    exe = bd / "bench" / name
    if not exe.is_file():
        sys.exit(f"error: {exe} not found; build it first:\n"
                 f"  cmake -S {REPO} -B {bd} -DCMAKE_BUILD_TYPE=Release -DELLIPTICA_BUILD_BENCH=ON "
                 f"&& cmake --build {bd} -j2")
    return exe


def run_driver(exe: Path, args: list[str], timeout: float = 1800) -> str:
    """Runs a driver; stderr (progress) passes through; returns stdout. Raises on failure."""
    cmd = [str(exe)] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {p.returncode}")
    return p.stdout


def ewald_json(exe: Path, kernel: str, n: int, eps: float, threads: int, repeats: int,
               sources: Path | None = None, strengths: Path | None = None, seed: int = 1) -> dict:
    args = ["--kernel", kernel, "--n", n, "--eps", repr(eps), "--threads", threads,
            "--repeats", repeats, "--seed", seed, "--format", "json"]
    if sources is not None:
        args += ["--sources", sources, "--strengths", strengths]
    return json.loads(run_driver(exe, args))


def flatten(rec: dict) -> dict:
    """A driver JSON record as one flat CSV row."""
    row = {k: rec[k] for k in ["kernel", "N", "eps", "threads", "repeats", "first_call_s", "tune_s"]}
    for s in STAGES:
        row[s] = rec["times"][s]
    for k in ["total_s", "far_s", "far_best_s", "xi", "rc"]:
        row[k] = rec[k]
    row["M1"], row["M2"], row["M3"] = rec["M"]
    for k in ["P", "beta", "poly_degree", "cells", "est_relative", "peak_rss_mib", "input_mib"]:
        row[k] = rec[k]
    return row


def test_data(n: int, comps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n uniform points in the unit cube (n,3) and strengths uniform in [-1,1] with the mean of
    each component removed, (n,comps); numpy default_rng(seed)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    q = rng.uniform(-1.0, 1.0, (n, comps))
    q -= q.mean(axis=0)
    return x, q


def machine() -> dict:
    """CPU model, cores, memory, load, compiler and library versions."""
    info = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host_python": platform.python_version()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "L2 cache", "L3 cache", "Flags"):
                v = v.strip()
                if k.strip() == "Flags":
                    v = " ".join(f for f in v.split() if f in ("avx2", "avx512f", "fma"))
                info[k.strip()] = v
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            info["MemTotal"] = f.readline().split(":")[1].strip()
    except OSError:
        pass
    info["loadavg_start"] = " ".join(open("/proc/loadavg").read().split()[:3])
    try:
        info["git"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    try:
        info["g++"] = subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_csv(path: Path, rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    write_atomic(path, buf.getvalue())


def read_csv(path: Path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def md_table(header: list[str], rows: list[list]) -> str:
    out = "| " + " | ".join(header) + " |\n|" + "|".join("---" for _ in header) + "|\n"
    for r in rows:
        out += "| " + " | ".join(str(c) for c in r) + " |\n"
    return out


def md_machine(info: dict) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in info.items()) + "\n"


def fmt(t: float) -> str:
    """Seconds with 3 significant digits."""
    return f"{float(t):.3g}"


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="elliptica-bench-"))


def rmtree(p: Path) -> None:
    shutil.rmtree(p, ignore_errors=True)
