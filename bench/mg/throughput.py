"""Multigrid kernel throughput as a fraction of the measured memory bandwidth.

Runs bench/mg_throughput (Google Benchmark; build with -DELLIPTICA_BUILD_BENCH=ON) with
repetitions, takes the best rate of each benchmark (the STREAM convention: best of the trials),
and divides the bytes-per-second of the matvec, the residual and the Chebyshev/Jacobi smoothing
(bytes-moved model in bench/mg_throughput.cpp) by the STREAM triad rate of the same thread count.

  python3 bench/mg/throughput.py [--build build-bench] [--out bench/results/mg_throughput]
                                 [--repetitions 5] [--filter REGEX]

Writes OUT.csv and OUT.md (atomically) and prints the table.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import benchlib as bl  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=None, help="build directory with bench/mg_throughput (default build-bench)")
    ap.add_argument("--out", default=str(bl.RESULTS / "mg_throughput"))
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--filter", default=".", help="Google Benchmark filter")
    a = ap.parse_args()
    exe = bl.find_exe(a.build, "mg_throughput")
    bl.log(f"running {exe} ({a.repetitions} repetitions; the STREAM arrays take 3 GiB)")
    out = bl.run_driver(exe, [f"--benchmark_filter={a.filter}", "--benchmark_format=json",
                              f"--benchmark_repetitions={a.repetitions}", "--benchmark_min_time=0.2"],
                        timeout=3600)
    data = json.loads(out)
    best: dict[str, dict] = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"]
        if name not in best or b["bytes_per_second"] > best[name]["bytes_per_second"]:
            best[name] = b
    triad = {}
    for name, b in best.items():
        m = re.match(r"BM_StreamTriad/threads:(\d+)", name)
        if m:
            triad[int(m.group(1))] = b["bytes_per_second"]
    rows = []
    for name, b in best.items():
        m = re.search(r"threads:(\d+)", name)
        t = int(m.group(1)) if m else 1
        kernel = name.split("/")[0].replace("BM_", "")
        if kernel == "Smoother":
            kernel = "smoothing " + name.split("/")[1]
        dims = re.search(r"dim:(\d)/n:(\d+)", name)
        problem = f"{dims.group(1)}D n={dims.group(2)}" if dims else "-"
        gbs = b["bytes_per_second"] / 1e9
        rows.append({
            "kernel": kernel, "problem": problem, "threads": t,
            "rows": int(b.get("rows", 0)), "bytes_per_row": round(b.get("bytes_per_row", 0.0), 1),
            "GB_per_s": round(gbs, 2),
            "fraction_of_triad": round(b["bytes_per_second"] / triad[t], 3) if t in triad else "",
            "time_ms": round(b["real_time"], 3),
        })
    rows.sort(key=lambda r: (r["threads"], r["kernel"], r["problem"]))
    outp = Path(a.out)
    outp.parent.mkdir(parents=True, exist_ok=True)
    bl.write_csv(outp.with_suffix(".csv"), rows)
    info = bl.machine()
    hdr = ["kernel", "problem", "threads", "rows", "bytes/row", "GB/s", "fraction of triad"]
    table = bl.md_table(hdr, [[r["kernel"], r["problem"], r["threads"], r["rows"], r["bytes_per_row"], r["GB_per_s"],
                               r["fraction_of_triad"]] for r in rows])
    md = ["# Multigrid kernel throughput vs measured memory bandwidth", "",
          f"Command: `python3 bench/mg/throughput.py {' '.join(sys.argv[1:])}`", "",
          bl.md_machine(info), "",
          "STREAM triad a = b + s c over 1 GiB arrays (24 B/element), best of the repetitions; every "
          "kernel's rate is its bytes-moved model (bench/mg_throughput.cpp header) over its best time. "
          "Write-allocate traffic is not counted, for STREAM and the kernels alike.", "", table, ""]
    bl.write_atomic(outp.with_suffix(".md"), "\n".join(md))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
