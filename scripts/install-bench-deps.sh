#!/usr/bin/env bash
# Extra dependencies of the benchmarks in bench/ (not needed to build, test or run the examples):
#   - Debian: libbenchmark-dev (Google Benchmark, for bench/ewald_micro; optional) and util-linux
#     (lscpu, for the machine description in the results);
#   - PyPI:   finufft (the non-uniform FFT the far field is compared against), matplotlib (plots),
#             numpy.
# Run scripts/install-deps.sh first (compiler, CMake, FFTW, ...). Idempotent.
set -euo pipefail

PYTHON=${PYTHON:-python3}

need=()
dpkg -s libbenchmark-dev >/dev/null 2>&1 || need+=(libbenchmark-dev)
command -v lscpu >/dev/null 2>&1 || need+=(util-linux)
if ((${#need[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
fi

"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  "finufft>=2.2" "matplotlib>=3.5" "numpy>=1.24"

echo "== install-bench-deps: done ($("$PYTHON" -c 'import finufft, matplotlib; print("finufft", finufft.__version__, "matplotlib", matplotlib.__version__)'))"
