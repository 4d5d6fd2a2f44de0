#!/usr/bin/env python3
"""Plots of a frequency sweep of `elliptica bem --frequency ...` (its run folder).

Usage: bem_sweep_plots.py RUN_DIR

Reads RUN_DIR/run.json, RUN_DIR/frequencies.csv and the per-frequency folders fNNNN/ and writes
(atomically: temporary file + rename):
  sweep.png        sound power level Lw (dB re 1 pW: radiated power for radiation, scattered power
                   for scattering) against frequency; for a plane-wave scattering run also the
                   target strength TS (dB re 1 m^2), the monostatic (backscatter) curve
  monostatic.png   (a sweep of incident directions at each frequency) TS against the aspect
                   angle for up to 6 frequencies, and TS over (angle, frequency)
  directivity.png  polar plot of the SPL at 1 m (dB re 20 uPa, from the far field) over the x-z
                   plane cut (angle from +z towards +x) for up to 6 frequencies of the sweep
  fNNNN/field.png  for a grid of field points: the SPL (dB re 20 uPa) of the total pressure on
                   the plane cut, points inside the body masked
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bem_plots import save_png  # noqa: E402


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    run_dir = argv[0]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    t = np.loadtxt(os.path.join(run_dir, "frequencies.csv"), delimiter=",", skiprows=1, ndmin=2)
    if t.size == 0:
        sys.exit(f"{run_dir}/frequencies.csv: no finished frequency")
    t = t[np.argsort(t[:, 1])]
    idx, f, lw, ts = t[:, 0].astype(int), t[:, 1], t[:, 9], t[:, 10]

    scattering_plane = run["problem"] == "scattering" and np.isfinite(ts).any()
    fig, ax = plt.subplots(1, 2 if scattering_plane else 1, figsize=(11 if scattering_plane else 6, 4.2), squeeze=False)
    ax[0, 0].plot(f, lw, "o-", ms=3)
    ax[0, 0].set_xlabel("frequency (Hz)")
    ax[0, 0].set_ylabel(("radiated" if run["problem"] == "radiation" else "scattered") + " sound power level (dB re 1 pW)")
    ax[0, 0].grid(True, alpha=0.3)
    if scattering_plane:
        ax[0, 1].plot(f, ts, "o-", ms=3, color="C1")
        ax[0, 1].set_xlabel("frequency (Hz)")
        ax[0, 1].set_ylabel("target strength TS (dB re 1 m$^2$)")
        ax[0, 1].grid(True, alpha=0.3)
    body = run.get("labels", {}).get("mesh") or f"{run['elements']} elements"  # the CLI labels its mesh
    fig.suptitle(f"{body}: {run['problem']}, c = {run['sound_speed']} m/s, rho = {run['density']} kg/m$^3$")
    fig.tight_layout()
    save_png(fig, run_dir, "sweep.png")
    plt.close(fig)

    pick = np.unique(np.linspace(0, len(idx) - 1, min(6, len(idx))).round().astype(int))
    if int(run.get("monostatic", 0)) > 0:
        return monostatic_plots(run_dir, idx, f, pick, plt)
    fig = plt.figure(figsize=(6.5, 6))
    axp = fig.add_subplot(projection="polar")
    axp.set_theta_zero_location("N")
    axp.set_theta_direction(-1)
    top = -np.inf
    for p in pick:
        d = np.loadtxt(os.path.join(run_dir, f"f{idx[p]:04d}", "directivity.csv"), delimiter=",", skiprows=1, ndmin=2)
        ang = np.radians(np.append(d[:, 0], d[0, 0] + 360))
        spl = np.append(d[:, 6], d[0, 6])
        top = max(top, np.nanmax(spl))
        axp.plot(ang, spl, label=f"{f[p]:.6g} Hz")
    if np.isfinite(top):  # a 40 dB range below the loudest direction
        axp.set_rlim(top - 40, top + 3)
    axp.set_title("SPL at 1 m (dB re 20 uPa), x-z plane, angle from +z", fontsize=10)
    axp.legend(loc="lower left", fontsize=8, bbox_to_anchor=(-0.1, -0.12))
    save_png(fig, run_dir, "directivity.png")
    plt.close(fig)

    na, nb, plane = int(run.get("grid_na", 0)), int(run.get("grid_nb", 0)), run.get("grid_plane", "")
    if na >= 2 and nb >= 2:
        ia = 1 if plane == "yz" else 0
        ib = 1 if plane == "xy" else 2
        for i in idx:
            path = os.path.join(run_dir, f"f{i:04d}", "field_points.csv")
            if not os.path.exists(path):
                continue
            g = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
            A = g[:, ia].reshape(na, nb)
            B = g[:, ib].reshape(na, nb)
            spl = np.ma.masked_where(g[:, 7].reshape(na, nb) > 0, g[:, 6].reshape(na, nb))
            fig, axg = plt.subplots(figsize=(6.5, 5.2))
            m = axg.pcolormesh(A, B, spl, shading="auto", cmap="viridis")
            fig.colorbar(m, ax=axg, label="SPL (dB re 20 uPa)")
            axg.set_xlabel("xyz"[ia] + " (m)")
            axg.set_ylabel("xyz"[ib] + " (m)")
            axg.set_aspect("equal")
            axg.set_title(f"{t[idx == i, 1][0]:.6g} Hz, total pressure on the {plane} plane")
            save_png(fig, os.path.join(run_dir, f"f{i:04d}"), "field.png")
            plt.close(fig)
    return 0


def monostatic_plots(run_dir, idx, f, pick, plt):
    """monostatic.png: TS against the aspect angle (polar, up to 6 frequencies) and, for two or
    more frequencies, TS over (angle, frequency)."""
    curves = []
    for i in idx:
        with open(os.path.join(run_dir, f"f{i:04d}", "monostatic.csv")) as fh:
            header = fh.readline().lstrip("# ").strip().split(",")
        d = np.loadtxt(os.path.join(run_dir, f"f{i:04d}", "monostatic.csv"), delimiter=",", skiprows=1, ndmin=2)
        curves.append(d)
    angle = header[0] == "angle_deg"
    two = len(idx) >= 2
    fig = plt.figure(figsize=(12 if two else 6.5, 5.5))
    axp = fig.add_subplot(1, 2 if two else 1, 1, projection="polar" if angle else None)
    top = max(np.nanmax(c[:, 6]) for c in curves)
    for p in pick:
        c = curves[p]
        if angle:
            axp.plot(np.radians(c[:, 0]), c[:, 6], label=f"{f[p]:.6g} Hz")
        else:
            axp.plot(c[:, 0], c[:, 6], label=f"{f[p]:.6g} Hz")
    if angle:
        axp.set_theta_zero_location("N")
        axp.set_theta_direction(-1)
        axp.set_rlim(top - 40, top + 3)
        axp.set_title("target strength (dB re 1 m$^2$) against the sweep angle", fontsize=10)
    else:
        axp.set_xlabel("direction (row of the file)")
        axp.set_ylabel("TS (dB re 1 m$^2$)")
    axp.legend(loc="lower left", fontsize=8, bbox_to_anchor=(-0.1, -0.12))
    if two:
        axm = fig.add_subplot(1, 2, 2)
        ts = np.array([c[:, 6] for c in curves])
        m = axm.pcolormesh(curves[0][:, 0], f, ts, shading="auto", cmap="viridis", vmin=top - 40, vmax=top)
        fig.colorbar(m, ax=axm, label="TS (dB re 1 m$^2$)")
        axm.set_xlabel("sweep angle (deg)" if angle else "direction")
        axm.set_ylabel("frequency (Hz)")
    fig.tight_layout()
    save_png(fig, run_dir, "monostatic.png")
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
