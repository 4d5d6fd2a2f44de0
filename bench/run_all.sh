#!/usr/bin/env bash
# Runs every benchmark study of bench/ (NOT part of CI; ~20-30 min on a 2-core machine):
#   1. scaling + FINUFFT comparison, measured once per configuration (vs_finufft.py --scaling-out)
#      -> bench/results/{scaling,vs_finufft}.{csv,md} and scaling.png
#   2. crossover with the direct O(N^2) sum -> bench/results/crossover.{csv,md,png}
#   3. Google Benchmark per-evaluation microbenchmarks -> bench/results/micro.json (if built)
# Usage: bench/run_all.sh [BUILD_DIR]   (default: build-bench in the repository root)
# Needs: scripts/install-deps.sh and scripts/install-bench-deps.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-bench}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DELLIPTICA_BUILD_BENCH=ON \
  -DELLIPTICA_BUILD_TESTS=OFF -DELLIPTICA_BUILD_APPS=OFF >/dev/null
cmake --build "$BUILD" -j2
export ELLIPTICA_BENCH_BUILD=$BUILD
mkdir -p "$ROOT/bench/results/logs"
cd "$ROOT/bench"
python3 vs_finufft.py --scaling-out 2> >(tee results/logs/vs_finufft.stderr >&2) | tee results/logs/vs_finufft.stdout
python3 crossover.py 2> >(tee results/logs/crossover.stderr >&2) | tee results/logs/crossover.stdout
if [ -x "$BUILD/bench/ewald_micro" ]; then
  "$BUILD/bench/ewald_micro" --benchmark_filter='/(1000|10000)/' --benchmark_out="$ROOT/bench/results/micro.json" \
    --benchmark_out_format=json
fi
echo "== run_all: results in $ROOT/bench/results"
