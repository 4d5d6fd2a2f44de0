#!/usr/bin/env python3
"""Bistatic cross-section plot of `elliptica bem` output.

Usage: bem_plots.py FAR_FIELD_CSV OUT_DIR [--incident dx,dy,dz]

Reads far_field.csv (columns theta,phi,x,y,z,re,im,abs,sigma; sigma = 4 pi |u_inf|^2) and writes
OUT_DIR/bistatic.png (atomically: temporary file + rename) with two panels:
  left:  sigma in dB (10 log10 sigma, length unit^2) against the scattering angle, i.e. the angle
         between the far-field direction and the incident propagation direction (0 = forward);
  right: sigma in dB over (phi, theta) of the direction (theta from +z, phi from +x).
"""
import argparse
import os
import sys
import tempfile

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("out")
    p.add_argument("--incident", default="0,0,1", help="incident propagation direction dx,dy,dz")
    a = p.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.tri import Triangulation

    data = np.loadtxt(a.csv, delimiter=",", skiprows=1, ndmin=2)
    if data.shape[1] != 9:
        sys.exit(f"{a.csv}: expected 9 columns (theta,phi,x,y,z,re,im,abs,sigma), got {data.shape[1]}")
    d = np.array([float(v) for v in a.incident.split(",")])
    d /= np.linalg.norm(d)
    theta, phi, xyz, sigma = data[:, 0], data[:, 1], data[:, 2:5], data[:, 8]
    scat = np.degrees(np.arccos(np.clip(xyz @ d, -1.0, 1.0)))
    db = 10 * np.log10(np.maximum(sigma, 1e-300))

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    order = np.argsort(scat)
    ax[0].plot(scat[order], db[order], ".", ms=3)
    ax[0].set_xlabel("scattering angle from incident direction (deg)")
    ax[0].set_ylabel(r"bistatic cross-section $4\pi|u_\infty|^2$ (dB)")
    ax[0].set_xlim(0, 180)
    ax[0].grid(True, alpha=0.3)
    ax[0].set_title("bistatic cross-section")
    if len(theta) >= 3:
        try:
            tri = Triangulation(np.degrees(phi), np.degrees(theta))
            cs = ax[1].tricontourf(tri, db, levels=30, cmap="viridis")
            fig.colorbar(cs, ax=ax[1], label="dB")
        except Exception:  # degenerate direction sets: scatter instead
            sc = ax[1].scatter(np.degrees(phi), np.degrees(theta), c=db, s=8)
            fig.colorbar(sc, ax=ax[1], label="dB")
    ax[1].set_xlabel(r"$\phi$ (deg)")
    ax[1].set_ylabel(r"$\theta$ (deg)")
    ax[1].invert_yaxis()
    ax[1].set_title("cross-section over directions")
    fig.tight_layout()
    os.makedirs(a.out, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bistatic.", suffix=".png", dir=a.out)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, format="png")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, os.path.join(a.out, "bistatic.png"))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
