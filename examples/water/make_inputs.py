#!/usr/bin/env python3
"""Derive the Laplace example inputs from the GROMACS SPC water box spc216.gro.

Writes, next to this script (or into --out-dir):
  positions.npy  (648, 3) float64, atom positions in nm, as in the .gro file (not wrapped;
                 the Ewald sum wraps points into the box itself)
  charges.npy    (648,)   float64, SPC partial charges in units of e: OW -0.82, HW1/HW2 +0.41
                 (Berendsen et al. 1981), so the box is neutral
  box.txt        one line "L1 L2 L3", the rectangular box edge lengths in nm

Usage: python3 make_inputs.py [--gro spc216.gro] [--out-dir DIR]
Only numpy is needed. The .gro format: a title line, the number of atoms, one fixed-column line
per atom (residue number and name, atom name, atom number: 5 characters each, then x y z in nm
in columns of equal width, optionally velocities), and a last line with the box vectors.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

SPC_CHARGES = {"OW": -0.82, "HW1": 0.41, "HW2": 0.41}


def read_gro(path: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Returns (atom names, positions (N,3) in nm, box (3,) in nm) of a rectangular-box .gro file."""
    with open(path, encoding="ascii") as fh:
        lines = fh.read().splitlines()
    if len(lines) < 3:
        raise ValueError(f"{path}: too short for a .gro file")
    try:
        n = int(lines[1].strip())
    except ValueError as exc:
        raise ValueError(f"{path}: line 2 must be the number of atoms") from exc
    if len(lines) < n + 3:
        raise ValueError(f"{path}: expected {n} atom lines and a box line, file is truncated")
    first = lines[2]
    # Coordinate columns start at 20; their width is the distance between two decimal points.
    p1 = first.index(".", 20)
    p2 = first.index(".", p1 + 1)
    width = p2 - p1
    names, pos = [], np.empty((n, 3))
    for i, line in enumerate(lines[2:2 + n]):
        names.append(line[10:15].strip())
        try:
            pos[i] = [float(line[20 + k * width:20 + (k + 1) * width]) for k in range(3)]
        except ValueError as exc:
            raise ValueError(f"{path}: bad coordinates on line {i + 3}: {line!r}") from exc
    box_vals = [float(v) for v in lines[2 + n].split()]
    if len(box_vals) == 9 and any(box_vals[3:]):
        raise ValueError(f"{path}: triclinic box, only rectangular boxes are supported")
    if len(box_vals) not in (3, 9):
        raise ValueError(f"{path}: box line must have 3 (or 9) numbers")
    return names, pos, np.array(box_vals[:3])


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gro", default=os.path.join(here, "spc216.gro"))
    ap.add_argument("--out-dir", default=here)
    args = ap.parse_args(argv)

    names, pos, box = read_gro(args.gro)
    unknown = sorted(set(names) - SPC_CHARGES.keys())
    if unknown:
        print(f"error: atom names without an SPC charge: {unknown}", file=sys.stderr)
        return 1
    q = np.array([SPC_CHARGES[a] for a in names])
    if abs(q.sum()) > 1e-9:
        print(f"error: total charge {q.sum():g} is not zero", file=sys.stderr)
        return 1

    os.makedirs(args.out_dir, exist_ok=True)
    np.save(os.path.join(args.out_dir, "positions.npy"), np.ascontiguousarray(pos, dtype=np.float64))
    np.save(os.path.join(args.out_dir, "charges.npy"), q.astype(np.float64))
    with open(os.path.join(args.out_dir, "box.txt"), "w", encoding="ascii") as fh:
        fh.write(" ".join(f"{v:.5f}" for v in box) + "\n")
    print(f"{len(names)} atoms ({names.count('OW')} waters), box {box} nm, total charge {q.sum():+.1e} e"
          f" -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
