"""Tests of `elliptica bem --frequency ...`: the acoustic BEM in physical units (Hz, m/s, kg/m^3,
Pa, dB): radiation by a prescribed surface velocity, scattering by an impedance surface,
field points (microphone file and plane-cut grid), the run folder (frequencies.csv, fNNNN/,
run.json, summary.json), --resume, plots, and the refusal of bad input (exit 2 invalid input,
3 file error, 1 usage).

References, independent of the library (numpy / scipy.special): the pulsating sphere
p(r) = i omega rho v a^2 e^{ik(r-a)} / ((ika - 1) r) and its power
P = 2 pi a^2 rho c v^2 (ka)^2 / (1 + (ka)^2) (Kinsler et al., Fundamentals of Acoustics, sec. 7.2);
the oscillating sphere p = i omega rho U cos(theta) h1(kr) / (k h1'(ka)); the impedance sphere
series A_n = -(j_n' + i beta j_n) / (h_n' + i beta h_n), beta = rho c / Z. The BEM (flat P0
elements) is O(h): the bounds are about 2x the errors measured on these meshes.
Cost: about 15 s.
"""
import json
import subprocess

import numpy as np
import pytest

USAGE, INVALID, IOERR = 1, 2, 3
C, RHO = 343.0, 1.21
HEADER = ("index,frequency_hz,k,ka,gmres_iterations,setup_seconds,solve_seconds,field_seconds,power_w,lw_db,"
          "ts_db,max_spl_1m_db")


def run(cli, *args, timeout=600):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def read_csv(path):
    with open(path) as f:
        header = f.readline().lstrip("# ").strip()
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def spl(p):
    return 20 * np.log10(np.abs(p) / (np.sqrt(2) * 20e-6))


def test_pulsating_sphere_power_field_points_and_directivity(cli, tmp_path):
    mics = np.array([[0, 0, 2.0], [3.0, 0, 0], [1.0, 1.0, 1.0], [0.2, 0.1, 0.0]])  # the last inside
    np.savetxt(tmp_path / "mics.txt", mics)
    out = tmp_path / "run"
    v = 1e-3
    r = run(cli, "bem", "--mesh", "sphere:1,3", "--frequency", "27.3,109.2", "--problem", "radiation",
            "--velocity", f"uniform:{v}", "--field-points", tmp_path / "mics.txt", "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "frequency 2/2" in r.stderr  # progress per frequency
    header, t = read_csv(out / "frequencies.csv")
    assert header == HEADER and t.shape == (2, 12)
    for row in t:
        i, f, k = int(row[0]), row[1], row[2]
        assert k == pytest.approx(2 * np.pi * f / C, rel=1e-14)
        ka = k  # a = 1 m
        P = 2 * np.pi * RHO * C * v**2 * ka**2 / (1 + ka**2)
        assert row[8] == pytest.approx(P, rel=0.035)  # measured 1.7e-2, 1.4e-2
        assert row[9] == pytest.approx(10 * np.log10(row[8] / 1e-12), rel=1e-12)
        assert np.isnan(row[10])  # no target strength for radiation
        g = 1j * 2 * np.pi * f * RHO * v
        pinf = g * np.exp(-1j * ka) / (1j * ka - 1)
        assert row[11] == pytest.approx(spl(pinf), abs=0.3)  # dB: 0.3 dB = 3.5%
        _, fp = read_csv(out / f"f{i:04d}" / "field_points.csv")
        np.testing.assert_allclose(fp[:, :3], mics)
        assert list(fp[:, 7]) == [0, 0, 0, 1]
        rr = np.linalg.norm(mics[:3], axis=1)
        ref = pinf * np.exp(1j * k * rr) / rr
        p = fp[:3, 3] + 1j * fp[:3, 4]
        np.testing.assert_allclose(p, ref, rtol=0.03)
        np.testing.assert_allclose(fp[:3, 6], spl(p), rtol=1e-12)
        assert fp[3, 3] == 0 and np.isnan(fp[3, 6])  # inside: p 0, SPL NaN
        _, d = read_csv(out / f"f{i:04d}" / "directivity.csv")
        assert d.shape == (360, 8)
        np.testing.assert_allclose(d[:, 6], spl(pinf), atol=0.3)
        np.testing.assert_allclose(d[:, 7], 0, atol=0.1)  # a monopole: DI = 0 dB
        s = np.load(out / f"f{i:04d}" / "surface.npy")
        assert s.dtype == np.complex128 and s.shape == (1280,)
        assert (out / f"f{i:04d}" / "surface.vtu").exists()
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["problem"] == "radiation" and run_json["sound_speed"] == C
    summ = json.loads((out / "summary.json").read_text())
    assert summ["frequencies_computed"] == 2


def test_oscillating_sphere_is_a_dipole(cli, tmp_path):
    sp = pytest.importorskip("scipy.special")
    out = tmp_path / "dip"
    U, a, f = 0.01, 0.1, 1000.0
    r = run(cli, "bem", "--mesh", f"sphere:{a},3", "--frequency", f, "--problem", "radiation",
            "--velocity", f"translate:0,0,{U}", "--out", out, "--no-plots", "-q")
    assert r.returncode == 0, r.stderr
    k = 2 * np.pi * f / C
    h1 = lambda x: sp.spherical_jn(1, x) + 1j * sp.spherical_yn(1, x)  # noqa: E731
    h1p = sp.spherical_jn(1, k * a, True) + 1j * sp.spherical_yn(1, k * a, True)
    B = 1j * 2 * np.pi * f * RHO * U / (k * h1p)
    _, d = read_csv(out / "f0000" / "directivity.csv")
    th = np.radians(d[:, 0])
    pinf_ref = -B * np.cos(th) / k  # h1(x) ~ -e^{ix}/x
    pinf = d[:, 4] + 1j * d[:, 5]
    assert np.linalg.norm(pinf - pinf_ref) < 0.03 * np.linalg.norm(pinf_ref)  # measured 1.6e-2
    # directivity index of a dipole: 10 log10(3 cos^2) on the axis
    assert d[0, 7] == pytest.approx(10 * np.log10(3), abs=0.1)
    del h1


def test_impedance_sphere_scattering_and_grid(cli, tmp_path):
    sp = pytest.importorskip("scipy.special")
    out = tmp_path / "imp"
    Z = 415.03 + 200j
    f = 54.6
    r = run(cli, "bem", "--mesh", "sphere:1,3", "--frequency", f, "--impedance", f"{Z.real},{Z.imag}",
            "--incident", "plane:0,0,1", "--field-points", "grid:xz=0,-2.5,2.5,11,-2.5,2.5,9", "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    k = 2 * np.pi * f / C
    beta = RHO * C / Z
    n = np.arange(0, 30)
    jn, yn = sp.spherical_jn(n, k), sp.spherical_yn(n, k)
    jp, yp = sp.spherical_jn(n, k, True), sp.spherical_yn(n, k, True)
    An = -(jp + 1j * beta * jn) / (jp + 1j * yp + 1j * beta * (jn + 1j * yn))
    _, d = read_csv(out / "f0000" / "directivity.csv")
    ct = np.cos(np.radians(d[:, 0]))
    P = np.array([sp.eval_legendre(m, ct) for m in n])
    ref = (-1j / k) * ((2 * n + 1) * An) @ P
    pinf = d[:, 4] + 1j * d[:, 5]
    assert np.linalg.norm(pinf - ref) < 0.04 * np.linalg.norm(ref)  # measured about 1.2e-2 (k = 1)
    _, t = read_csv(out / "frequencies.csv")
    back = (-1j / k) * np.sum((2 * n + 1) * An * (-1.0) ** n)
    assert t[0, 10] == pytest.approx(20 * np.log10(abs(back)), abs=0.5)
    # the grid: 11 x 9 points on y = 0, total pressure, field.vtu, plots
    _, g = read_csv(out / "f0000" / "field_points.csv")
    assert g.shape == (99, 8)
    np.testing.assert_allclose(g[:, 1], 0)
    assert g[:, 7].sum() > 0  # some points inside the sphere
    far = np.hypot(g[:, 0], g[:, 2]) > 2.4
    assert np.all(np.abs(np.abs(g[far, 3] + 1j * g[far, 4]) - 1) < 0.6)  # 1 Pa incident + a weak scattered wave
    vtu = (out / "f0000" / "field.vtu").read_text()
    assert 'NumberOfPoints="99"' in vtu and 'NumberOfCells="80"' in vtu and "spl_db" in vtu
    for png in ("sweep.png", "directivity.png", "f0000/field.png"):
        assert (out / png).stat().st_size > 1000, png


def test_resume_continues_only_the_same_run(cli, tmp_path):
    out = tmp_path / "res"
    def args(v="uniform:1e-3"):
        return ["bem", "--mesh", "sphere:1,2", "--frequency", "30:90:30", "--problem", "radiation",
                "--velocity", v, "--out", out, "--no-plots", "-q"]
    base = args()
    r = run(cli, *base)
    assert r.returncode == 0, r.stderr
    _, t1 = read_csv(out / "frequencies.csv")
    assert t1.shape == (3, 12)
    # interrupted run: the last frequency's folder and row lost
    import shutil
    shutil.rmtree(out / "f0002")
    r = run(cli, *base)  # without --resume: refused, nothing touched
    assert r.returncode == INVALID and "--resume" in r.stderr
    r = run(cli, *base, "--resume")
    assert r.returncode == 0, r.stderr
    _, t2 = read_csv(out / "frequencies.csv")
    np.testing.assert_allclose(t2[:, [0, 1, 2, 8]], t1[:, [0, 1, 2, 8]], rtol=1e-12)
    summ = json.loads((out / "summary.json").read_text())
    assert summ["frequencies_computed"] == 1 and summ["frequencies_resumed"] == 2
    r = run(cli, *args("uniform:2e-3"), "--resume")
    assert r.returncode == INVALID and "other settings" in r.stderr


@pytest.mark.parametrize("args,code,msg", [
    (["--frequency", "100", "--k", "1"], USAGE, "Exactly 1"),
    (["--frequency", "0"], INVALID, "--frequency"),
    (["--frequency", "100:50:10"], INVALID, "FROM <= TO"),
    (["--frequency", "100", "--sound-speed", "-1"], INVALID, "sound speed"),
    (["--frequency", "100", "--problem", "radiation"], INVALID, "--velocity"),
    (["--frequency", "100", "--problem", "radiation", "--velocity", "uniform:1", "--bc", "dirichlet"], INVALID, "neumann"),
    (["--frequency", "100", "--problem", "vibration"], INVALID, "--problem"),
    (["--frequency", "100", "--impedance", "-5"], INVALID, "passive"),
    (["--frequency", "100", "--impedance", "0"], INVALID, "dirichlet"),
    (["--frequency", "100", "--problem", "radiation", "--velocity", "nofile.npy"], IOERR, "not found"),
    (["--frequency", "100", "--field-points", "grid:xq=0,-1,1,3,-1,1,3"], INVALID, "PLANE"),
    (["--frequency", "100", "--incident", "sweep:theta,0,90,3", "--problem", "radiation", "--velocity", "uniform:1"],
     INVALID, "scattering"),
    (["--frequency", "100", "--incident", "sweep:theta,0,90,3", "--field-points", "grid:xy=0,-2,2,3,-2,2,3"],
     INVALID, "--field-points"),
    (["--k", "1", "--impedance", "400"], INVALID, "--frequency"),
    (["--k", "1,-0.1"], INVALID, "Im k"),
    (["--k", "1", "--ground", "w=0"], INVALID, "AXIS"),
    (["--k", "1", "--ground", "z=0"], INVALID, "above the ground plane"),
    (["--k", "1", "--ground", "z=-2,hard"], INVALID, "rigid or soft"),
    (["--k", "1", "--ground", "z=-2", "--operator", "fmm", "--precond", "ifmm"], INVALID, "--precond ifmm"),
])
def test_bad_input(cli, tmp_path, args, code, msg):
    out = tmp_path / "bad"
    r = run(cli, "bem", "--mesh", "sphere:1,1", *args, "--out", out, "--no-plots", "-q")
    assert r.returncode == code, (r.returncode, r.stderr)
    assert msg in r.stderr
    assert not out.exists()


def test_velocity_file_rows_must_match_the_mesh(cli, tmp_path):
    # a complex128 .npy (as numpy.save writes it) equals the same values as re,im text columns
    v = np.exp(1j * np.linspace(0, 3, 80)) * 1e-3
    np.save(tmp_path / "v.npy", v)
    np.savetxt(tmp_path / "v2.txt", np.column_stack([v.real, v.imag]))
    outs = []
    for f in ("v.npy", "v2.txt"):
        r = run(cli, "bem", "--mesh", "sphere:1,1", "--frequency", "100", "--problem", "radiation",
                "--velocity", tmp_path / f, "--out", tmp_path / f"o_{f}", "--no-plots", "-q")
        assert r.returncode == 0, r.stderr
        outs.append(np.load(tmp_path / f"o_{f}" / "f0000" / "surface.npy"))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.save(tmp_path / "short.npy", v[:7])
    r = run(cli, "bem", "--mesh", "sphere:1,1", "--frequency", "100", "--problem", "radiation",
            "--velocity", tmp_path / "short.npy", "--out", tmp_path / "o_short", "--no-plots", "-q")
    assert r.returncode == INVALID and "80 values" in r.stderr
    np.savetxt(tmp_path / "v.txt", np.ones((7, 2)))
    r = run(cli, "bem", "--mesh", "sphere:1,1", "--frequency", "100", "--problem", "radiation",
            "--velocity", tmp_path / "v.txt", "--out", tmp_path / "o", "--no-plots", "-q")
    assert r.returncode == INVALID and "80 rows" in r.stderr


def test_complex_wavenumber(cli, tmp_path):
    out = tmp_path / "ck"
    r = run(cli, "bem", "--mesh", "sphere:1,2", "--k", "1,0.05", "--out", out, "--no-plots", "-q")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["k"] == 1 and s["k_im"] == 0.05


def test_ground_plane_monopole_and_image(cli, tmp_path):
    # a small pulsating sphere (a = 0.05 m) 0.5 m above a rigid ground z = -0.5: a monopole and its image
    # in phase (error: the O(h) BEM error, about 2%, and the sphere's scattering of the image
    # field, O((ka)^2 a / 2h))
    a, h, f, v = 0.05, 0.5, 109.2, 1e-3
    mics = np.array([[0, 0, 1.5], [1.0, 0, 0.2], [0.7, 0.7, -0.5], [0.0, 0.0, -0.8]])  # on the plane; below
    np.savetxt(tmp_path / "mics.txt", mics)
    out = tmp_path / "g"
    r = run(cli, "bem", "--mesh", f"sphere:{a},2", "--frequency", f, "--problem", "radiation",
            "--velocity", f"uniform:{v}", "--ground", "z=0", "--field-points", tmp_path / "mics.txt",
            "--out", out, "--no-plots", "-q")
    # the sphere is centred at the origin, crossing z = 0: refused; the ground goes to z = -h
    assert r.returncode == INVALID and "above the ground plane" in r.stderr
    r = run(cli, "bem", "--mesh", f"sphere:{a},2", "--frequency", f, "--problem", "radiation",
            "--velocity", f"uniform:{v}", "--ground", f"z={-h}", "--field-points", tmp_path / "mics.txt",
            "--out", out, "--no-plots", "-q")
    assert r.returncode == 0, r.stderr
    k = 2 * np.pi * f / C
    g = 1j * 2 * np.pi * f * RHO * v
    A = g * a * a * np.exp(-1j * k * a) / (1j * k * a - 1)
    _, fp = read_csv(out / "f0000" / "field_points.csv")
    assert list(fp[:, 7]) == [0, 0, 0, 1]  # the last point lies below the ground
    x = mics[:3]
    r1 = np.linalg.norm(x, axis=1)
    r2 = np.linalg.norm(x - np.array([0, 0, -2 * h]), axis=1)
    ref = A * (np.exp(1j * k * r1) / r1 + np.exp(1j * k * r2) / r2)
    np.testing.assert_allclose(fp[:3, 3] + 1j * fp[:3, 4], ref, rtol=0.04)
    _, d = read_csv(out / "f0000" / "directivity.csv")
    assert np.all(np.isnan(d[91:270, 6])) and np.all(np.isfinite(d[:90, 6]))  # no far field below the plane
    # power into the half space of a monopole and its in-phase image (distance 2h): the free
    # monopole's P0 (1 + sin(2kh) / (2kh)) (the pair radiates 2 P0 (1 + sinc) into all space)
    P0 = 2 * np.pi * a * a * RHO * C * v * v * (k * a) ** 2 / (1 + (k * a) ** 2)
    _, t = read_csv(out / "frequencies.csv")
    assert t[0, 8] == pytest.approx(P0 * (1 + np.sin(2 * k * h) / (2 * k * h)), rel=0.04)


def test_radiation_with_an_incident_wave(cli, tmp_path):
    # --incident with --problem radiation adds the incident field (one linear system): the
    # field is the sum of the radiation and the scattering runs
    base = ["bem", "--mesh", "sphere:1,2", "--frequency", "50", "--field-points", "grid:xz=0,-2,2,5,-2,2,5",
            "--no-plots", "-q", "--tol", "1e-10"]
    runs = {}
    for name, extra in (("both", ["--problem", "radiation", "--velocity", "uniform:1e-3", "--incident", "plane:1,0,0"]),
                        ("rad", ["--problem", "radiation", "--velocity", "uniform:1e-3"]),
                        ("sca", ["--incident", "plane:1,0,0"])):
        r = run(cli, *base, *extra, "--out", tmp_path / name)
        assert r.returncode == 0, r.stderr
        _, g = read_csv(tmp_path / name / "f0000" / "field_points.csv")
        runs[name] = g[:, 3] + 1j * g[:, 4]
    np.testing.assert_allclose(runs["both"], runs["rad"] + runs["sca"], rtol=1e-7, atol=1e-9)
    assert json.loads((tmp_path / "both" / "run.json").read_text())["incident"] == "plane:1,0,0"


def test_monostatic_sweep_at_every_frequency(cli, tmp_path):
    # a rigid sphere: the same TS for every direction, the Mie backscatter at each frequency
    sp = pytest.importorskip("scipy.special")
    out = tmp_path / "ms"
    r = run(cli, "bem", "--mesh", "sphere:1,3", "--frequency", "27.3,54.6", "--incident", "sweep:theta,0,180,5",
            "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    _, t = read_csv(out / "frequencies.csv")
    for row in t:
        i, k = int(row[0]), row[2]
        header, m = read_csv(out / f"f{i:04d}" / "monostatic.csv")
        assert header == "angle_deg,dx,dy,dz,re,im,ts_db,gmres_iterations"
        np.testing.assert_allclose(m[:, 0], [0, 45, 90, 135, 180])
        n = np.arange(30)
        an = -sp.spherical_jn(n, k, True) / (sp.spherical_jn(n, k, True) + 1j * sp.spherical_yn(n, k, True))
        back = (-1j / k) * np.sum((2 * n + 1) * an * (-1.0) ** n)
        np.testing.assert_allclose(m[:, 6], 20 * np.log10(abs(back)), atol=0.2)  # 0.2 dB: 2.3%
        assert row[10] == pytest.approx(m[:, 6].max())
    assert (out / "monostatic.png").stat().st_size > 1000


def test_impedance_per_element_file(cli, tmp_path):
    # one Z per element, all equal: the same result as the scalar --impedance
    z = np.tile([415.03, 200.0], (80, 1))
    np.savetxt(tmp_path / "z.txt", z)
    outs = []
    for spec, name in ((tmp_path / "z.txt", "file"), ("415.03,200", "scalar")):
        out = tmp_path / name
        r = run(cli, "bem", "--mesh", "sphere:1,1", "--frequency", "50", "--impedance", spec, "--out", out,
                "--no-plots", "-q", "--tol", "1e-10")
        assert r.returncode == 0, r.stderr
        outs.append(np.load(out / "f0000" / "surface.npy"))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)
    z[5, 0] = -1.0
    np.savetxt(tmp_path / "bad.txt", z)
    r = run(cli, "bem", "--mesh", "sphere:1,1", "--frequency", "50", "--impedance", tmp_path / "bad.txt",
            "--out", tmp_path / "b", "--no-plots", "-q")
    assert r.returncode == INVALID and "element 5" in r.stderr


def test_symmetry_half_model_from_a_mesh_file(cli, tmp_path):
    # the upper half of an octasphere written as an OBJ file, run with --symmetry z=0, against the
    # whole octasphere: the same directivity, power and field points
    import elliptica as el
    v, t = el.octasphere(3, 0.5)
    keep = np.all(v[t][:, :, 2] >= 0, axis=1)
    with open(tmp_path / "half.obj", "w") as f:
        for p in v:
            f.write(f"v {float(p[0])!r} {float(p[1])!r} {float(p[2])!r}\n")
        for tri in t[keep]:
            f.write(f"f {tri[0] + 1} {tri[1] + 1} {tri[2] + 1}\n")
    common = ["--frequency", "200", "--problem", "radiation", "--velocity", "translate:0.01,0,0",
              "--field-points", "grid:xz=0,-1.5,1.5,7,-1.5,1.5,7", "--no-plots", "-q", "--tol", "1e-10"]
    r = run(cli, "bem", "--mesh", "octasphere:0.5,3", *common, "--out", tmp_path / "whole")
    assert r.returncode == 0, r.stderr
    r = run(cli, "bem", "--mesh", tmp_path / "half.obj", "--symmetry", "z=0", *common, "--out", tmp_path / "half")
    assert r.returncode == 0, r.stderr
    _, tw = read_csv(tmp_path / "whole" / "frequencies.csv")
    _, th = read_csv(tmp_path / "half" / "frequencies.csv")
    assert th[0, 8] == pytest.approx(tw[0, 8], rel=1e-8)  # radiated power of the whole body
    _, dw = read_csv(tmp_path / "whole" / "f0000" / "directivity.csv")
    _, dh = read_csv(tmp_path / "half" / "f0000" / "directivity.csv")
    np.testing.assert_allclose(dh[:, 4:6], dw[:, 4:6], rtol=1e-7, atol=1e-9 * np.abs(dw[:, 4:6]).max())
    _, fw = read_csv(tmp_path / "whole" / "f0000" / "field_points.csv")
    _, fh = read_csv(tmp_path / "half" / "f0000" / "field_points.csv")
    np.testing.assert_array_equal(fh[:, 7], fw[:, 7])  # the same points inside the whole body
    np.testing.assert_allclose(fh[:, 3:5], fw[:, 3:5], rtol=1e-6, atol=1e-8 * np.abs(fw[:, 3:5]).max())
    r = run(cli, "bem", "--mesh", tmp_path / "half.obj", *common, "--out", tmp_path / "open")
    assert r.returncode == INVALID  # an open surface without --symmetry


def test_translate_velocity_on_an_inward_oriented_mesh(cli, tmp_path):
    # translate:U takes U.n with the outward normals: a file whose triangles face inward is oriented
    # first, so it radiates exactly as the generated (outward) mesh
    import elliptica as el
    v, t = el.octasphere(2, 0.5)
    with open(tmp_path / "inward.obj", "w") as f:
        for p in v:
            f.write(f"v {float(p[0])!r} {float(p[1])!r} {float(p[2])!r}\n")
        for tri in t:
            f.write(f"f {tri[0] + 1} {tri[2] + 1} {tri[1] + 1}\n")
    common = ["--frequency", "200", "--problem", "radiation", "--velocity", "translate:0,0,0.01", "--no-plots", "-q"]
    r = run(cli, "bem", "--mesh", "octasphere:0.5,2", *common, "--out", tmp_path / "gen")
    assert r.returncode == 0, r.stderr
    r = run(cli, "bem", "--mesh", tmp_path / "inward.obj", *common, "--out", tmp_path / "file")
    assert r.returncode == 0, r.stderr
    _, a = read_csv(tmp_path / "gen" / "f0000" / "directivity.csv")
    _, b = read_csv(tmp_path / "file" / "f0000" / "directivity.csv")
    # the far field itself (the power alone cannot tell the sign of the velocity)
    np.testing.assert_allclose(b[:, 4:6], a[:, 4:6], rtol=1e-8, atol=1e-10 * np.abs(a[:, 4:6]).max())


def test_frequency_range_decimal_steps_and_curved_mesh(cli, tmp_path):
    # FROM:TO:STEP with a decimal step gives the decimal frequencies (rounded to 12 digits, not
    # 0.30000000000000004), and a curved mesh runs through the sweep: the pulsating sphere's power
    # on 80 curved elements (measured 0.4% off at ka 0.5, flat 320 elements 2%)
    out = tmp_path / "run"
    r = run(cli, "bem", "--mesh", "sphere:1,1,curved", "--frequency", "27.1:27.3:0.1", "--problem", "radiation",
            "--velocity", "uniform:1e-3", "--field-points", "grid:xz=0,1.5,4,6,0.5,0.5,1", "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    # NA x 1: a line of 6 microphones along x at z = 0.5 (CSV, no map); the monopole's 1/r law
    fp = np.genfromtxt(out / "f0000" / "field_points.csv", delimiter=",", names=True)
    assert fp.shape == (6,) and not (out / "f0000" / "field.vtu").exists()
    with open(out / "frequencies.csv") as f:
        lines = f.read().splitlines()
    assert [ln.split(",")[1] for ln in lines[1:]] == ["27.1", "27.2", "27.3"]
    _, t = read_csv(out / "frequencies.csv")
    k = t[:, 2]
    P = 2 * np.pi * RHO * C * 1e-6 * k**2 / (1 + k**2)
    np.testing.assert_allclose(t[:, 8], P, rtol=0.01)
