#!/usr/bin/env bash
# Builds the elliptica CLI and runs the spectral Ewald main job on the bundled real examples:
#   1. Laplace: the 216-molecule SPC water box from GROMACS (examples/water, 648 charges)
#   2. Stokeslet: a closed triangulated surface from CGAL's data set, sedimenting under its weight
#      in a periodic box (examples/stokes, 2904 point forces)
# Each run prints the chosen parameters, the error estimate and the per-stage timing table.
# Results go to out/: water_potential.npy (648,) from the .npy inputs, water_potential_gro.npy
# from the same box read straight from spc216.gro (--gro/--charges; must agree), cow_velocity.npy
# (2904,3).
# Usage: bash scripts/run-example.sh [TOL]     (relative RMS tolerance, default 1e-6)
# Environment: ELLIPTICA_JOBS (compile jobs), ELLIPTICA_BUILD_DIR (default build), PYTHON.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TOL=${1:-1e-6}
BUILD_DIR=${ELLIPTICA_BUILD_DIR:-$ROOT/build}
JOBS=${ELLIPTICA_JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
OUT="$ROOT/out"
CLI="$BUILD_DIR/apps/elliptica"

echo "== run-example: build the CLI in $BUILD_DIR"
t0=$SECONDS
# Same configuration as scripts/build.sh, so that test.sh can reuse this build directory.
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DELLIPTICA_BUILD_TESTS=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target elliptica_cli
echo "== run-example: built in $((SECONDS - t0))s"
mkdir -p "$OUT"

box_of() {  # "L1 L2 L3" -> "L1,L2,L3"
  local l1 l2 l3
  read -r l1 l2 l3 < "$1"
  echo "$l1,$l2,$l3"
}

echo
echo "== run-example 1/3: Laplace, SPC water (examples/water, see SOURCE.md), tol $TOL"
"$CLI" ewald --kernel laplace --box "$(box_of examples/water/box.txt)" --tol "$TOL" \
  --sources examples/water/positions.npy --strengths examples/water/charges.npy \
  --out "$OUT/water_potential.npy"

echo
echo "== run-example 2/3: the same water box read directly from the .gro file (--gro, --charges)"
"$CLI" ewald --kernel laplace --gro examples/water/spc216.gro --charges OW=-0.82,HW=0.41 \
  --tol "$TOL" --quiet --out "$OUT/water_potential_gro.npy"

echo
echo "== run-example 3/3: Stokeslet, sedimenting closed surface (examples/stokes, see SOURCE.md), tol $TOL"
"$CLI" ewald --kernel stokeslet --box "$(box_of examples/stokes/box.txt)" --tol "$TOL" \
  --viscosity 1 --sources examples/stokes/points.npy --strengths examples/stokes/forces.npy \
  --out "$OUT/cow_velocity.npy"

echo
echo "== run-example: results in $OUT"
"$PYTHON" - "$OUT" <<'PY'
import sys, numpy as np
out = sys.argv[1]
q = np.load("examples/water/charges.npy")
phi = np.load(f"{out}/water_potential.npy").reshape(-1)
# Gaussian units: phi in e/nm; e^2/(4 pi eps0) = 138.935458 kJ/mol nm.  U = 1/2 sum q phi
# (all pairs, intramolecular ones included, as the Ewald sum has no exclusions).
u = 0.5 * float(q @ phi) * 138.935458
# The three atoms of each molecule are consecutive and whole in spc216.gro: remove their mutual
# pairs (direct 1/r) to get the intermolecular Coulomb energy an MD code would report.
x = np.load("examples/water/positions.npy").reshape(-1, 3, 3)
qm = q.reshape(-1, 3)
intra = sum(float(np.sum(qm[:, i] * qm[:, j] / np.linalg.norm(x[:, i] - x[:, j], axis=1)))
            for i, j in ((0, 1), (0, 2), (1, 2))) * 138.935458
print(f"water: phi at O mean {phi[q < 0].mean():+.6f} e/nm, at H mean {phi[q > 0].mean():+.6f} e/nm")
print(f"water: Coulomb energy U = 1/2 sum q phi = {u:.3f} kJ/mol; without the intramolecular pairs"
      f" {(u - intra) / 216:.3f} kJ/mol per molecule")
phi_gro = np.load(f"{out}/water_potential_gro.npy").reshape(-1)
d = np.sqrt(np.mean((phi_gro - phi) ** 2) / np.mean(phi ** 2))
print(f"water: --gro input vs .npy input: relative RMS difference {d:.1e}")
f = np.load("examples/stokes/forces.npy")
v = np.load(f"{out}/cow_velocity.npy")
w = np.linalg.norm(f, axis=1)
print(f"stokes: net force {f.sum(0).round(12)}, force-weighted mean velocity "
      f"{(v * w[:, None]).sum(0) / w.sum()} (sedimentation velocity relative to the box's zero-mean flow),"
      f" spread of u_z over the surface {v[:, 2].std():.3e}")
PY
echo "== run-example: done"
