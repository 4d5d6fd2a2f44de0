#!/usr/bin/env python3
"""Derive the stokeslet example inputs from the triangulated closed surface cow.off.

The surface (2904 vertices, 5804 triangles, closed, genus 0, outward oriented; from CGAL's data
set, see SOURCE.md) is taken as a rigid body sedimenting under gravity in a periodic array, one
body per box. Its surface carries a uniform traction whose total is the body's weight, lumped onto
the vertices: each vertex gets one third of the area of each triangle around it, and

    f_i = F_total * A_i / A_surface,   F_total = (0, 0, -1)   (force units, e.g. with mu = 1)

so the forces sum to F_total exactly. This is the classical point-force (stokeslet) discretisation
of a single-layer potential; the velocities it gives at the vertices are those of the whole
periodic suspension (zero mean fluid velocity over the box, the mean pressure gradient balancing
the weight).

Writes, next to this script (or into --out-dir):
  points.npy  (2904, 3) float64, vertex positions (the mesh's own length unit; the body is
              about 1.0 x 0.61 x 0.33 long, centred at the origin)
  forces.npy  (2904, 3) float64, point forces
  box.txt     one line "L1 L2 L3": the periodic box, 2.0 x 1.5 x 1.0 (non-cubic on purpose;
              about 1.6 % of it is inside the body)

Usage: python3 make_inputs.py [--off cow.off] [--out-dir DIR] [--box L1,L2,L3]
Only numpy is needed.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def read_off(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Returns (vertices (N,3), triangles (T,3) int) of an ASCII OFF file of triangles."""
    with open(path, encoding="ascii") as fh:
        tokens = " ".join(line.split("#", 1)[0] for line in fh).split()
    if not tokens or tokens[0] != "OFF":
        raise ValueError(f"{path}: not an OFF file (no 'OFF' header)")
    nv, nf = int(tokens[1]), int(tokens[2])
    i = 4
    need = i + 3 * nv + 4 * nf
    if len(tokens) < need:
        raise ValueError(f"{path}: truncated ({len(tokens)} tokens, expected at least {need})")
    verts = np.array(tokens[i:i + 3 * nv], dtype=np.float64).reshape(nv, 3)
    i += 3 * nv
    tris = np.empty((nf, 3), dtype=np.int64)
    for k in range(nf):
        if tokens[i] != "3":
            raise ValueError(f"{path}: face {k} is not a triangle")
        tris[k] = [int(t) for t in tokens[i + 1:i + 4]]
        i += 4
    if tris.min() < 0 or tris.max() >= nv:
        raise ValueError(f"{path}: face index out of range")
    return verts, tris


def check_closed(tris: np.ndarray) -> None:
    """Every directed edge appears once and its reverse once: closed and consistently oriented."""
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    directed = {tuple(x) for x in e.tolist()}
    if len(directed) != len(e) or any((b, a) not in directed for a, b in directed):
        raise ValueError("surface is not closed and consistently oriented")


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--off", default=os.path.join(here, "cow.off"))
    ap.add_argument("--out-dir", default=here)
    ap.add_argument("--box", default="2.0,1.5,1.0")
    args = ap.parse_args(argv)

    verts, tris = read_off(args.off)
    check_closed(tris)
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    cross = np.cross(b - a, c - a)
    tri_area = 0.5 * np.linalg.norm(cross, axis=1)
    volume = np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0
    if volume <= 0:
        raise ValueError("surface is oriented inward (negative enclosed volume)")
    vert_area = np.zeros(len(verts))
    for k in range(3):
        np.add.at(vert_area, tris[:, k], tri_area / 3.0)
    if np.any(vert_area <= 0):
        raise ValueError("a vertex belongs to no triangle")
    total_force = np.array([0.0, 0.0, -1.0])
    forces = np.outer(vert_area / vert_area.sum(), total_force)

    box = np.array([float(v) for v in args.box.split(",")])
    extent = verts.max(0) - verts.min(0)
    if box.shape != (3,) or np.any(extent >= box):
        raise ValueError(f"box {box} must be larger than the body ({extent})")

    os.makedirs(args.out_dir, exist_ok=True)
    np.save(os.path.join(args.out_dir, "points.npy"), np.ascontiguousarray(verts))
    np.save(os.path.join(args.out_dir, "forces.npy"), np.ascontiguousarray(forces))
    with open(os.path.join(args.out_dir, "box.txt"), "w", encoding="ascii") as fh:
        fh.write(" ".join(f"{v:g}" for v in box) + "\n")
    print(f"{len(verts)} vertices, {len(tris)} triangles, area {tri_area.sum():.4f}, "
          f"volume {volume:.4f}, extent {np.round(extent, 3)}, box {box}, "
          f"net force {forces.sum(0)} -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
