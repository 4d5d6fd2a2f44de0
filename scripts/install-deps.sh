#!/usr/bin/env bash
# Installs everything elliptica needs to build, test and run its examples on a fresh Debian 12
# (bookworm) machine: the Debian packages (compiler, CMake, FFTW, CLI11, Eigen, GoogleTest,
# Google Benchmark, GROMACS data files, clang with libFuzzer, LLVM's OpenMP runtime with its
# ThreadSanitizer tool Archer) and the Python packages (into the default python3, which on the
# project machines is pyenv's 3.11). Idempotent: running it again changes nothing.
#
# Runs as root (as CI does) or, if not root, through sudo when sudo is available.
# Benchmark-only dependencies (FINUFFT) are in scripts/install-bench-deps.sh.
set -euo pipefail

DEBIAN_PACKAGES=(
  build-essential   # g++ (C++20), make
  cmake             # >= 3.25
  pkg-config        # finds FFTW
  libfftw3-dev      # FFTW 3 (double and float) with its OpenMP libraries libfftw3_omp, libfftw3f_omp
  libhwy-dev        # Google Highway: portable SIMD with runtime dispatch (AVX2 / AVX-512), ewald P2P
  libcli11-dev      # CLI11 command-line parser (header only)
  libeigen3-dev     # Eigen (header only)
  nlohmann-json3-dev  # JSON reader (header only): the ewald cost-constants cache
  googletest        # GoogleTest/GoogleMock sources
  libgtest-dev      # GoogleTest libraries + CMake config
  libbenchmark-dev  # Google Benchmark (bench/ only)
  gromacs-data      # /usr/share/gromacs/top/spc216.gro, source of examples/water
  clang             # clang++ for the libFuzzer targets (scripts/fuzz.sh)
  libclang-rt-14-dev # clang's libFuzzer and sanitizer runtimes
  libomp-dev        # OpenMP runtime for clang (libomp)
  libomp-14-dev     # libomp's Archer tool /usr/lib/llvm-14/lib/libarcher.so (ThreadSanitizer step of test.sh)
  llvm              # llvm-symbolizer: symbolised sanitizer stack traces
  libhypre-dev      # hypre's BoomerAMG (optional: multigrid/boomeramg.hpp; built with MPI)
  libopenmpi-dev    # MPI headers and libmpi: hypre, and the distributed Ewald sum (CMake's FindMPI)
  openmpi-bin       # mpirun: the MPI tests (test_ewald_mpi_np1..4) and distributed runs
  libfftw3-mpi-dev  # FFTW's MPI transforms (libfftw3_mpi, libfftw3f_mpi): the distributed Ewald FFTs
)

PYTHON_PACKAGES=(
  "numpy>=1.24"
  "scipy>=1.10"
  "pytest>=7"
  "nanobind>=2.0"
  "scikit-build-core>=0.10"
  "matplotlib>=3.6"
  "meshio>=5"         # an independent reader of the VTU files the CLI writes (tests/cli/test_cli_mg_sem.py)
  "mpi4py>=3.1"       # DistributedEwaldPlan's communicators; built from source against Debian's Open MPI (below)
)

PYTHON=${PYTHON:-python3}

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-deps.sh: must run as root (or with sudo available) to install Debian packages" >&2
  exit 1
fi

echo "== install-deps: Debian packages"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  "${DEBIAN_PACKAGES[@]}"

echo "== install-deps: Python packages for $("$PYTHON" --version 2>&1) ($(command -v "$PYTHON"))"
# pip as root would warn about the system site-packages; on the project machines python3 is a
# pyenv interpreter owned by root, so the warning does not apply.
# --no-binary mpi4py: compiled with Debian's mpicc, so that it uses the same Open MPI as elliptica
# (a binary wheel may bring or expect another MPI); about 1-2 minutes, once.
"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-binary mpi4py \
  "${PYTHON_PACKAGES[@]}"

echo "== install-deps: done"
