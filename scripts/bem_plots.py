#!/usr/bin/env python3
"""Bistatic cross-section plot of `elliptica bem` output, or the target-strength plot of a
monostatic sweep.

Usage: bem_plots.py FAR_FIELD_CSV OUT_DIR [--incident dx,dy,dz]
       bem_plots.py MONOSTATIC_CSV OUT_DIR

A CSV whose header names a ts_db column is a monostatic sweep (monostatic.csv: index,
[angle_deg,] dx, dy, dz, re, im, sigma, ts_db, gmres_iterations, solve_seconds; ts_db =
10 log10(sigma / (4 pi)) = 20 log10 |u_inf(-d)|, dB re 1 length unit^2): it writes
OUT_DIR/monostatic.png, a polar plot of TS against the sweep angle (left) and TS against the angle
on linear axes (right); without an angle_deg column (directions from a file) TS against the row
index. Otherwise:

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

    with open(a.csv) as f:
        columns = [c.strip() for c in f.readline().lstrip("#").strip().split(",")]
    if "ts_db" in columns:
        return monostatic_plot(a.csv, a.out, columns, plt)

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
    save_png(fig, a.out, "bistatic.png")
    return 0


def save_png(fig, out, name):
    """Writes fig to out/name atomically (temporary file + rename, mode 0666 & ~umask)."""
    os.makedirs(out, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.splitext(name)[0] + ".", suffix=".png", dir=out)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, format="png")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, os.path.join(out, name))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def monostatic_plot(csv, out, columns, plt):
    """OUT/monostatic.png from monostatic.csv (module docstring)."""
    data = np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2)
    if data.shape[1] != len(columns) or "index" not in columns:
        sys.exit(f"{csv}: expected the columns of monostatic.csv, got {data.shape[1]} values for header {columns}")
    ts = data[:, columns.index("ts_db")]
    finite = np.isfinite(ts)
    if "angle_deg" in columns:
        ang = data[:, columns.index("angle_deg")]
        xlabel = "incidence angle (deg): propagation direction d of the sweep"
    else:
        ang = None
        xlabel = "direction (row of the incident file)"
    fig = plt.figure(figsize=(11, 4.6))
    if ang is not None:
        axp = fig.add_subplot(1, 2, 1, projection="polar")
        axp.plot(np.radians(ang[finite]), ts[finite], ".-", ms=4)
        if finite.any():
            lo, hi = ts[finite].min(), ts[finite].max()
            pad = max(1.0, 0.1 * (hi - lo))
            axp.set_rlim(lo - pad, hi + pad)
        axp.set_theta_zero_location("N")
        axp.set_theta_direction(-1)
        axp.set_title("target strength TS (dB re 1 unit$^2$)", pad=14)
        ax = fig.add_subplot(1, 2, 2)
        ax.plot(ang, ts, ".-", ms=4)
    else:
        ax = fig.add_subplot(1, 1, 1)
        ax.plot(data[:, columns.index("index")], ts, ".-", ms=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"TS $= 20\log_{10}|u_\infty(-d)|$ (dB)")
    ax.grid(True, alpha=0.3)
    ax.set_title("monostatic target strength")
    fig.tight_layout()
    save_png(fig, out, "monostatic.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
