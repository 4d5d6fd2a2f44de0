#!/usr/bin/env bash
# Builds elliptica and runs every test suite; fails (non-zero exit) on the first failure.
#   1. Release build (scripts/build.sh build) and its C++ tests (ctest)
#   2. pip install of the Python package, pytest on tests/python and tests/cli
#      (the CLI tests run build/apps/elliptica through $ELLIPTICA_CLI). The release build of step 1
#      also builds the Python module (-DELLIPTICA_BUILD_PYTHON=ON) and pip builds the wheel in that
#      same build folder with the same options, so the library is compiled once, not twice.
#   3. AddressSanitizer + UndefinedBehaviorSanitizer build of the C++ tests (build-asan/) and ctest
#   4. ThreadSanitizer build (clang++, LLVM's libomp + its Archer tool) of the test executables
#      labelled `parallel` (build-tsan/, target elliptica_parallel_tests) and ctest -L parallel
#   5. libFuzzer targets of every reader and validation path (scripts/fuzz.sh: clang build in
#      build-fuzz/, FUZZ_SECONDS per target, default 20; docs/fuzzing.md)
# Prints the time of each step and a final summary line.
# Environment: ELLIPTICA_JOBS (parallel compile jobs, default nproc), PYTHON (default python3),
#   ELLIPTICA_BUILD_DIR (default build), ELLIPTICA_ASAN_BUILD_DIR (default build-asan),
#   ELLIPTICA_PIP_TARGET=DIR installs the Python package into DIR (put first on PYTHONPATH for
#   pytest) instead of the interpreter's site-packages, ELLIPTICA_SKIP_ASAN=1 skips step 3 (for
#   quick local runs; ignored when CI=true), ELLIPTICA_TSAN_BUILD_DIR (default build-tsan),
#   ELLIPTICA_SKIP_TSAN=1 skips step 4 (likewise), ELLIPTICA_TSAN_EXCLUDE (ctest -E regex of the
#   step, see TSAN_EXCLUDE_DEFAULT), ELLIPTICA_SKIP_FUZZ=1 skips step 5 (likewise).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=${ELLIPTICA_JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
BUILD_DIR=${ELLIPTICA_BUILD_DIR:-$ROOT/build}
ASAN_DIR=${ELLIPTICA_ASAN_BUILD_DIR:-$ROOT/build-asan}
TSAN_DIR=${ELLIPTICA_TSAN_BUILD_DIR:-$ROOT/build-tsan}
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

run_ctest() {  # run_ctest BUILD_DIR LOG [CTEST_ARGS...]: ctest must find and pass at least one test
  local dir=$1 log=$2
  shift 2
  mkdir -p "$LOG_DIR"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$JOBS" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  if [[ $rc -ne 0 ]]; then return "$rc"; fi
  grep -q "tests passed" "$log" || { echo "ctest printed no result line" >&2; return 1; }
}

pip_install() {
  # --no-build-isolation: build with the nanobind/scikit-build-core that install-deps.sh put into
  # this interpreter instead of downloading them again into a throw-away environment.
  # build-dir=$BUILD_DIR and the release build's options (tests, apps, bench as in its cache; its
  # CMake generator): scikit-build-core reconfigures that folder without changing a compile flag, finds
  # every target up to date (step 1 built the Python module too) and only installs the module.
  local extra=() gen
  if [[ -n $PIP_TARGET ]]; then
    extra=(--target "$PIP_TARGET" --upgrade --no-deps)
  fi
  gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt")
  [[ -n $gen ]] || { echo "no CMake generator in $BUILD_DIR/CMakeCache.txt (step 1 not run?)" >&2; return 1; }
  local opt defines=()
  for opt in ELLIPTICA_BUILD_TESTS ELLIPTICA_BUILD_APPS ELLIPTICA_BUILD_BENCH; do
    defines+=(-C "cmake.define.$opt=$(sed -n "s/^$opt:BOOL=//p" "$BUILD_DIR/CMakeCache.txt")")
  done
  CMAKE_GENERATOR="$gen" "$PYTHON" -m pip install --disable-pip-version-check --root-user-action=ignore \
    --no-build-isolation "${extra[@]}" -C "build-dir=$BUILD_DIR" "${defines[@]}" "$ROOT"
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

# AddressSanitizer + UBSan build: -O2 -g1 (line tables: file:line in the reports; full -g made
# this the longest CI step, its compile and the links of the per-file test executables).
# BUILD_SHARED_LIBS: the module libraries as shared objects, so that each of the ~45 test
# executables links against them instead of copying ~200 MB of instrumented objects (the sanitizer
# builds only; Release stays static).
asan_build() {
  cmake -S "$ROOT" -B "$ASAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DELLIPTICA_SANITIZE=ON -DELLIPTICA_BUILD_TESTS=ON -DELLIPTICA_BUILD_APPS=OFF -DBUILD_SHARED_LIBS=ON &&
  cmake --build "$ASAN_DIR" -j "$JOBS" --target elliptica_tests
}

# ThreadSanitizer build: clang++ (GCC's libgomp is not instrumented, TSan would report its
# barriers as races), so OpenMP is LLVM's libomp. Only the test executables declared PARALLEL in
# tests/CMakeLists.txt are built (target elliptica_parallel_tests) and run (ctest -L parallel).
# -O2 -gline-tables-only: file:line in the reports at a fraction of the compile time of -g. (-O1
# would halve the compile time of the heavy sources, but changes rounding enough that
# MultigridPlan.ThreadsAreLocal, which compares 1- and 2-thread solutions to 1e-10, fails.)
tsan_build() {
  cmake -S "$ROOT" -B "$TSAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="${TSAN_CC:-clang}" -DCMAKE_CXX_COMPILER="${TSAN_CXX:-clang++}" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
    -DELLIPTICA_TSAN=ON -DELLIPTICA_BUILD_TESTS=ON -DELLIPTICA_BUILD_APPS=OFF -DELLIPTICA_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=ON &&
  cmake --build "$TSAN_DIR" -j "$JOBS" --target elliptica_parallel_tests
}

# Archer (libarcher.so of libomp-14-dev) tells TSan about OpenMP's barriers, locks, reductions and
# tasks, which libomp implements in uninstrumented code; ignore_noninstrumented_modules drops
# reports whose accesses are in uninstrumented libraries (libomp itself, FFTW), as Archer asks.
# halt_on_error: the first race fails the test. No suppressions are needed. OMP_NUM_THREADS=2:
# every parallel region above its size threshold (core/parallel.hpp) runs on a team of two.
# Subset (to keep the step within ~8 minutes on 2 cores): ctest -E drops these GoogleTest cases,
# which run the same parallel code as the tests kept, only over more sizes or tolerances
# (ELLIPTICA_TSAN_EXCLUDE overrides the regex; set it to '^$' to run every parallel test):
#   - FmmHelmholtz.SphereSurfaceAllKernels / CubeAllKernels / SeparateSourcesWithOwners: accuracy
#     sweeps of the FMM (~60-100 s each under TSan); its passes stay covered by AutomaticTreeDepth,
#     FarFieldOnlyMatchesNonAdjacentPairs, ApplyIntoCallerStorage (threads 1 and 2) and test_bem_fmm;
#   - the Matrix/Ewald{Accuracy,Absolute,Field} instances of tolerance 1e-6, 1e-9, 1e-12: the
#     1e-3 instance of every kernel/distribution/target case is kept;
#   - Ifmm.TinyEpsilonInvertsTheFmmOperatorSoundHard and Ifmm.SolveManyEqualsSingleSolves (~47 s
#     each): the IFMM's parallel factorisation and solve stay covered by
#     Ifmm.ParallelAndSequentialGiveTheSamePreconditioner (threads 1 vs 2) and test_bem_plan;
#   - SemPoissonPlan.SchwarzSmoothersOnKershaw (53 s, one thread: no parallel code of its own); the
#     SEM Schwarz smoothers' parallel paths stay covered by SemSchwarz.ThreadsGiveTheSameResult.
# (ctest names of parameterised cases end in "  # GetParam() = ...": hence the ( .*)? there.)
TSAN_EXCLUDE_DEFAULT='^(FmmHelmholtz\.(SphereSurfaceAllKernels|CubeAllKernels|SeparateSourcesWithOwners)|Matrix/Ewald(Accuracy|Absolute|Field)\..*_eps1em(6|9|12)( .*)?|Ifmm\.(TinyEpsilonInvertsTheFmmOperatorSoundHard|SolveManyEqualsSingleSolves)|SemPoissonPlan\.SchwarzSmoothersOnKershaw)$'
tsan_ctest() {
  local archer=${ELLIPTICA_ARCHER_LIB:-/usr/lib/llvm-14/lib/libarcher.so}
  [[ -f $archer ]] || { echo "Archer $archer missing (Debian package libomp-14-dev)" >&2; return 1; }
  local -x OMP_TOOL_LIBRARIES=$archer OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
  local -x TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:ignore_noninstrumented_modules=1:second_deadlock_stack=1}
  run_ctest "$TSAN_DIR" "$LOG_DIR/ctest-tsan.log" -L parallel -E "${ELLIPTICA_TSAN_EXCLUDE:-$TSAN_EXCLUDE_DEFAULT}"
}

step "release build" bash "$ROOT/scripts/build.sh" "$BUILD_DIR" -DELLIPTICA_BUILD_PYTHON=ON \
  "-DPython_EXECUTABLE=$(command -v "$PYTHON")"
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

if [[ ${ELLIPTICA_SKIP_TSAN:-0} == 1 && ${CI:-} != true ]]; then
  echo "==== test.sh: thread sanitizer build skipped (ELLIPTICA_SKIP_TSAN=1)"
else
  step "tsan build" tsan_build
  step "ctest (tsan)" tsan_ctest
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
tsan=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$LOG_DIR/ctest-tsan.log" 2>/dev/null | grep -Eo '[0-9]+$' | sed 's/$/ tests/' || echo 'skipped')
echo "test.sh: ALL OK in $((SECONDS - T_START))s - ctest release: $release; pytest: ${pytest_line:-?}; ctest asan+ubsan: $asan; ctest tsan: $tsan"
