#!/usr/bin/env bash
# Builds elliptica and runs every test suite; fails (non-zero exit) on the first failure.
#   1. Release build (scripts/build.sh build) and its C++ tests (ctest)
#   2. pip install of the Python package, pytest on tests/python and tests/cli
#      (the CLI tests run build/apps/elliptica through $ELLIPTICA_CLI)
#   3. AddressSanitizer + UndefinedBehaviorSanitizer build of the C++ tests (build-asan/) and ctest
#   4. libFuzzer targets of every reader and validation path (scripts/fuzz.sh: clang build in
#      build-fuzz/, FUZZ_SECONDS per target, default 20; docs/fuzzing.md)
# Prints the time of each step and a final summary line.
# Environment: ELLIPTICA_JOBS (parallel compile jobs, default nproc), PYTHON (default python3),
#   ELLIPTICA_BUILD_DIR (default build), ELLIPTICA_ASAN_BUILD_DIR (default build-asan),
#   ELLIPTICA_PIP_TARGET=DIR installs the Python package into DIR (put first on PYTHONPATH for
#   pytest) instead of the interpreter's site-packages, ELLIPTICA_SKIP_ASAN=1 skips step 3 (for
#   quick local runs; ignored when CI=true), ELLIPTICA_SKIP_FUZZ=1 skips step 4 (likewise).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${ELLIPTICA_JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
BUILD_DIR=${ELLIPTICA_BUILD_DIR:-$ROOT/build}
ASAN_DIR=${ELLIPTICA_ASAN_BUILD_DIR:-$ROOT/build-asan}
PIP_TARGET=${ELLIPTICA_PIP_TARGET:-}
LOG_DIR="$BUILD_DIR/test-logs"
T_START=$SECONDS
declare -a TIMINGS=()
rm -rf "$LOG_DIR"

step() {  # step NAME COMMAND...: runs COMMAND, records its wall time, stops the script on failure
  local name=$1 t0=$SECONDS rc=0
  shift
  echo
  echo "==== test.sh: $name"
  "$@" || rc=$?
  TIMINGS+=("$(printf '%-28s %5ds' "$name" $((SECONDS - t0)))")
  if [[ $rc -ne 0 ]]; then
    echo "==== test.sh: FAILED at step '$name' (exit $rc) after $((SECONDS - T_START))s" >&2
    printf '  %s\n' "${TIMINGS[@]}" >&2
    exit "$rc"
  fi
}

run_ctest() {  # run_ctest BUILD_DIR LOG: ctest must find and pass at least one test
  local dir=$1 log=$2
  mkdir -p "$LOG_DIR"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$JOBS" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]]; then return "$rc"; fi
  grep -q "tests passed" "$log" || { echo "ctest printed no result line" >&2; return 1; }
}

pip_install() {
  # --no-build-isolation: build with the nanobind/scikit-build-core that install-deps.sh put into
  # this interpreter instead of downloading them again into a throw-away environment.
  local extra=()
  if [[ -n $PIP_TARGET ]]; then
    extra=(--target "$PIP_TARGET" --upgrade --no-deps -C "build-dir=$BUILD_DIR/pyskb")
  fi
  "$PYTHON" -m pip install --disable-pip-version-check --root-user-action=ignore \
    --no-build-isolation "${extra[@]}" "$ROOT"
}

run_pytest() {
  local dirs=() d rc=0
  for d in tests/python tests/cli; do
    if [[ -d $d ]]; then dirs+=("$d"); else echo "missing test folder $d" >&2; return 1; fi
  done
  mkdir -p "$LOG_DIR"
  ELLIPTICA_CLI="$BUILD_DIR/apps/elliptica" PYTHONPATH="${PIP_TARGET}${PIP_TARGET:+:}${PYTHONPATH:-}" \
    "$PYTHON" -m pytest -ra "${dirs[@]}" 2>&1 \
    | tee "$LOG_DIR/pytest.log" || rc=${PIPESTATUS[0]}
  if [[ $rc -eq 5 ]]; then
    echo "pytest collected no tests in ${dirs[*]}: that is a failure here" >&2
  fi
  return "$rc"
}

asan_build() {
  cmake -S "$ROOT" -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DELLIPTICA_SANITIZE=ON -DELLIPTICA_BUILD_TESTS=ON -DELLIPTICA_BUILD_APPS=OFF &&
  cmake --build "$ASAN_DIR" -j "$JOBS" --target elliptica_tests
}

step "release build" bash "$ROOT/scripts/build.sh" "$BUILD_DIR"
test -x "$BUILD_DIR/apps/elliptica" || { echo "CLI binary $BUILD_DIR/apps/elliptica missing" >&2; exit 1; }
step "ctest (release)" run_ctest "$BUILD_DIR" "$LOG_DIR/ctest-release.log"
step "pip install ." pip_install
step "pytest (python + cli)" run_pytest
if [[ ${ELLIPTICA_SKIP_ASAN:-0} == 1 && ${CI:-} != true ]]; then
  echo "==== test.sh: sanitizer build skipped (ELLIPTICA_SKIP_ASAN=1)"
else
  step "asan+ubsan build" asan_build
  # halt on the first UBSan report too; leak checking is on (ASan's default on Linux).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  step "ctest (asan+ubsan)" run_ctest "$ASAN_DIR" "$LOG_DIR/ctest-asan.log"
fi

if [[ ${ELLIPTICA_SKIP_FUZZ:-0} == 1 && ${CI:-} != true ]]; then
  echo "==== test.sh: fuzzing skipped (ELLIPTICA_SKIP_FUZZ=1)"
else
  step "fuzz (${FUZZ_SECONDS:-20}s per target)" env ELLIPTICA_JOBS="$JOBS" bash "$ROOT/scripts/fuzz.sh"
fi

echo
echo "==== test.sh: step times"
printf '  %s\n' "${TIMINGS[@]}"
release=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$LOG_DIR/ctest-release.log" | grep -Eo '[0-9]+$' | sed 's/$/ tests/' || echo '?')
pytest_line=$(grep -E '^=+ .*(passed|failed|error).* =+$' "$LOG_DIR/pytest.log" | tail -1 | tr -d '=' | sed 's/^ *//; s/ *$//' || true)
asan=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$LOG_DIR/ctest-asan.log" 2>/dev/null | grep -Eo '[0-9]+$' | sed 's/$/ tests/' || echo 'skipped')
echo "test.sh: ALL OK in $((SECONDS - T_START))s - ctest release: $release; pytest: ${pytest_line:-?}; ctest asan+ubsan: $asan"
