#!/usr/bin/env bash
# Configures and builds elliptica (library, CLI, GoogleTest suite) in Release mode.
# Usage: bash scripts/build.sh [BUILD_DIR] [extra CMake arguments...]
#   BUILD_DIR defaults to build/ in the repository root. Parallel jobs: $ELLIPTICA_JOBS or nproc.
#   Example: bash scripts/build.sh build-native -DELLIPTICA_NATIVE=ON
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
shift || true
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
JOBS=${ELLIPTICA_JOBS:-$(nproc)}

echo "== build: configure $BUILD_DIR (Release)"
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DELLIPTICA_BUILD_TESTS=ON "$@"
echo "== build: compile with $JOBS jobs"
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "== build: done ($BUILD_DIR)"
