#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang++, AddressSanitizer + UndefinedBehaviorSanitizer,
# in build-fuzz/) and runs each for a fixed time on a copy of its seed corpus. Fails (non-zero
# exit) on any finding: a crash, a sanitizer report, an exception other than elliptica::Error, a
# violated invariant, an input slower than the per-input timeout, or more memory than the limit;
# the reproducer is printed (see docs/fuzzing.md for how to replay and minimise it).
#
# Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET]
#   SECONDS_PER_TARGET (or FUZZ_SECONDS) defaults to 20; e.g. FUZZ_SECONDS=600 bash scripts/fuzz.sh
#   for a longer local run.
# Environment: FUZZ_TARGETS (space-separated subset of: array gro mtx mesh mesh_validate ewald hexmesh),
#   FUZZ_TIMEOUT (seconds per input, default 10), FUZZ_RSS_MB (memory limit, default 2048),
#   ELLIPTICA_FUZZ_BUILD_DIR (default build-fuzz), ELLIPTICA_JOBS (compile jobs, default nproc),
#   CC / CXX for the fuzz build (default clang / clang++), OMP_NUM_THREADS (default 1).
# Outputs per target under BUILD_DIR/fuzz-runs/TARGET/: corpus/ (the seeds plus what the run
# found interesting), artifacts/ (reproducers of findings), log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_EACH=${1:-${FUZZ_SECONDS:-20}}
BUILD_DIR=${ELLIPTICA_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
JOBS=${ELLIPTICA_JOBS:-$(nproc)}
TARGETS=${FUZZ_TARGETS:-"array gro mtx mesh mesh_validate ewald hexmesh"}
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS_MB=${FUZZ_RSS_MB:-2048}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

[[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -gt 0 ]] || { echo "fuzz.sh: seconds per target must be a positive integer, got '$SECONDS_EACH'" >&2; exit 2; }
CXX_BIN=${CXX:-clang++}
command -v "$CXX_BIN" >/dev/null || { echo "fuzz.sh: $CXX_BIN not found (scripts/install-deps.sh installs clang)" >&2; exit 1; }

echo "== fuzz: configure $BUILD_DIR ($CXX_BIN, ASan + UBSan + libFuzzer)"
# -O2 -gline-tables-only: file:line in the stack traces of a finding, at less compile time than -g
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="$CXX_BIN" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DELLIPTICA_FUZZ=ON -DELLIPTICA_BUILD_TESTS=OFF -DELLIPTICA_BUILD_APPS=OFF -DELLIPTICA_NATIVE=OFF >/dev/null
echo "== fuzz: build with $JOBS jobs"
exes=()
for t in $TARGETS; do exes+=("fuzz_$t"); done
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${exes[@]}"

# Leaks are findings too (libFuzzer checks for them when ASan is linked); UBSan reports stop
# the run (the targets are compiled with -fno-sanitize-recover=undefined).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for t in $TARGETS; do
  exe="$BUILD_DIR/fuzz/fuzz_$t"
  seeds="$ROOT/fuzz/corpus/$t"
  run="$BUILD_DIR/fuzz-runs/$t"
  [[ -d $seeds ]] || { echo "fuzz.sh: no seed corpus $seeds" >&2; exit 1; }
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/artifacts"
  cp -R "$seeds/." "$run/corpus/"
  dict=()
  [[ -f $ROOT/fuzz/dict/$t.dict ]] && dict=("-dict=$ROOT/fuzz/dict/$t.dict")
  echo
  echo "== fuzz: $t for ${SECONDS_EACH}s ($(ls "$seeds" | wc -l) seeds)"
  rc=0
  # the outer timeout only guards against a stuck process; libFuzzer stops itself after
  # -max_total_time and reports slow inputs through -timeout
  timeout $((SECONDS_EACH + 4 * TIMEOUT + 60)) "$exe" "$run/corpus" "${dict[@]}" \
    -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -artifact_prefix="$run/artifacts/" -print_final_stats=1 >"$run/log" 2>&1 || rc=$?
  grep -E '^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+ +DONE' "$run/log" | sed 's/^/  /' || true
  found=$(find "$run/artifacts" -type f | sort)
  if [[ $rc -ne 0 || -n $found ]]; then
    failed+=("$t")
    echo "==== fuzz: FINDING in $t (exit $rc); the end of its log ($run/log):" >&2
    tail -n 60 "$run/log" >&2
    for f in $found; do
      echo "==== fuzz: reproducer $f" >&2
      echo "====   replay: $exe $f" >&2
    done
    [[ -n $found ]] || echo "==== fuzz: no reproducer file written (the process itself failed: see the log)" >&2
  fi
done

echo
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: FINDINGS in: ${failed[*]} (reproducers under $BUILD_DIR/fuzz-runs/<target>/artifacts/)" >&2
  exit 1
fi
echo "fuzz.sh: no findings ($TARGETS; ${SECONDS_EACH}s each)"
