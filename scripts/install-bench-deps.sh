#!/usr/bin/env bash
# Extra dependencies of the benchmarks in bench/ (not needed to build, test or run the examples):
#   - Debian: libbenchmark-dev (Google Benchmark, for bench/ewald_micro; optional) and util-linux
#     (lscpu, for the machine description in the results); time (/usr/bin/time -v: the peak resident
#     set of each run of bench/ifmm_study.py);
#     and python3-petsc4py (PETSc 3.18 with OpenMPI, the multigrid peer in bench/mg/run_peers.py,
#     run under Debian's /usr/bin/python3: PyPI's petsc4py ships only sources that compile all of
#     PETSc, which takes far longer than the benchmark); libdeal.ii-dev (deal.II 9.4, the matrix-free
#     SEM operator and multigrid peer of bench/sem/run_dealii_peer.py, built separately from
#     bench/sem/dealii; large: pulls Trilinos, PETSc, OpenCASCADE);
#   - PyPI:   finufft (the non-uniform FFT the far field is compared against), pyamg (the
#             algebraic multigrid peer), fmm3dpy (FMM3D, the Helmholtz FMM peer; its wheel is
#             serial; also the spectral Ewald peer of bench/ewald_issue12_fmm3d.py), openmm (the PME
#             peer of bench/ewald_issue12_openmm.py), bempp-cl (the Galerkin BEM peer; numba), gmsh (the submarine body of
#             bench/bodies/submarine.py), matplotlib (plots), numpy, scipy.
# Run scripts/install-deps.sh first (compiler, CMake, FFTW, ...). Idempotent.
set -euo pipefail

PYTHON=${PYTHON:-python3}

need=()
dpkg -s libbenchmark-dev >/dev/null 2>&1 || need+=(libbenchmark-dev)
command -v lscpu >/dev/null 2>&1 || need+=(util-linux)
[ -x /usr/bin/time ] || need+=(time)
dpkg -s python3-petsc4py >/dev/null 2>&1 || need+=(python3-petsc4py)
dpkg -s libdeal.ii-dev >/dev/null 2>&1 || need+=(libdeal.ii-dev)
if ((${#need[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
fi

"$PYTHON" -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  "finufft>=2.2" "pyamg>=5.0" "matplotlib>=3.5" "numpy>=1.24" "scipy>=1.10" \
  "fmm3dpy>=1.0" "openmm>=8.0" "bempp-cl>=0.4" "gmsh>=4.11"

echo "== install-bench-deps: done ($("$PYTHON" -c 'import importlib.metadata as m; print(", ".join(p + " " + m.version(p) for p in ("finufft", "pyamg", "matplotlib", "fmm3dpy", "openmm", "bempp-cl", "gmsh")))'))"
