#!/usr/bin/env bash
# Builds mpi_bytes.so and test_mpi_bytes into DIR (default /tmp/mpi_bytes) and checks the
# interposer's counts with 1..4 ranks: two FFT grids with FFTW_ESTIMATE (what the backend uses),
# plus the first grid with FFTW_MEASURE and FFTW_PATIENT (other transpose algorithms). Exits non-zero on any FAIL.
# Usage: bench/mpi_bytes/check.sh [DIR] [RANKS...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/mpi_bytes}
shift || true
ranks=${*:-1 2 3 4}
mkdir -p "$out"
mpicc -shared -fPIC -O2 -Wall -Wextra -o "$out/mpi_bytes.so" "$here/mpi_bytes.c"
mpicc -O2 -Wall -Wextra -o "$out/test_mpi_bytes" "$here/test_mpi_bytes.c" -lfftw3_mpi -lfftw3 -lm
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
asroot=()
[ "$(id -u)" = 0 ] && asroot=(--allow-run-as-root)
status=0
for grid in "32 24 20 estimate" "10 7 9 estimate" "32 24 20 measure" "10 7 9 patient"; do
  for p in $ranks; do
    prefix="$out/run.p$p.g${grid// /x}"
    rm -f "$prefix".*.json
    mpirun -n "$p" "${asroot[@]}" --oversubscribe -x LD_PRELOAD="$out/mpi_bytes.so" \
      -x ELLIPTICA_MPI_BYTES="$prefix" -x OMPI_MCA_btl_vader_single_copy_mechanism \
      "$out/test_mpi_bytes" "$prefix" $grid
    python3 "$here/check.py" "$prefix" "$p" || status=1
  done
done
[ $status = 0 ] && echo "ALL PASS" || echo "SOME FAILED"
exit $status
