"""Python layer of the acoustic BEM: HelmholtzBEM(admittance=...), solve_radiation, the unit
helpers (acoustic_wavenumber, normal_velocity_data, admittance_from_impedance, spl_db,
sphere_rule, surface_power) and AcousticBEM.sweep, against closed forms written here with numpy /
scipy (the pulsating sphere, the impedance sphere series). Cost: about 6 s.
"""
import numpy as np
import pytest

import elliptica as el

C, RHO = el.MEDIUM_DEFAULTS["sound_speed"], el.MEDIUM_DEFAULTS["density"]


def test_defaults_come_from_cpp():
    assert C == 343.0 and RHO == 1.21 and el.MEDIUM_DEFAULTS["reference_pressure"] == 20e-6
    assert el.acoustic_wavenumber(343.0) == pytest.approx(2 * np.pi, rel=1e-14)
    assert el.spl_db(1.0) == pytest.approx(20 * np.log10(1 / (np.sqrt(2) * 20e-6)))
    assert el.spl_db(1.0, p_ref=1e-6) == pytest.approx(20 * np.log10(1 / (np.sqrt(2) * 1e-6)))
    assert el.admittance_from_impedance(RHO * C) == pytest.approx(1.0)
    g = el.normal_velocity_data([1.0, 2.0j], 100.0)
    np.testing.assert_allclose(g, 1j * 2 * np.pi * 100 * RHO * np.array([1.0, 2.0j]))
    d, w = el.sphere_rule(8)
    assert d.shape == (128, 3) and w.sum() == pytest.approx(4 * np.pi)
    assert w @ d[:, 2] ** 4 == pytest.approx(4 * np.pi / 5)


def test_pulsating_sphere_solve_radiation_and_power():
    mesh = el.icosphere(3)
    f, v = 54.6, 1e-3
    k = el.acoustic_wavenumber(f)
    plan = el.HelmholtzBEM(mesh, k, tol=1e-8)
    g = el.normal_velocity_data(np.full(plan.triangles.shape[0], v), f)
    sol = plan.solve_radiation(g)
    assert plan.setup["companion_built"] and not plan.setup["impedance"]
    np.testing.assert_allclose(sol.dudn, g)
    pinf_ref = 1j * 2 * np.pi * f * RHO * v * np.exp(-1j * k) / (1j * k - 1)
    pts = np.array([[0, 0, 2.0], [3.0, 1.0, 0.0]])
    r = np.linalg.norm(pts, axis=1)
    np.testing.assert_allclose(sol.scattered_field(pts), pinf_ref * np.exp(1j * k * r) / r, rtol=0.02)
    P = 2 * np.pi * RHO * C * v**2 * k**2 / (1 + k**2)
    assert plan.surface_power(sol, f) == pytest.approx(P, rel=0.03)  # measured 1.2e-2


def test_impedance_sphere_series():
    sp = pytest.importorskip("scipy.special")
    k, beta = 1.0, 0.6 - 0.3j
    plan = el.HelmholtzBEM(el.icosphere(3), k, admittance=beta, tol=1e-8)
    assert plan.setup["impedance"]
    sol = plan.solve((0, 0, 1))
    np.testing.assert_allclose(sol.dudn, -1j * k * beta * sol.u, rtol=1e-12)
    th = np.linspace(0, np.pi, 19)
    n = np.arange(30)[:, None]
    jn, yn = sp.spherical_jn(n, k), sp.spherical_yn(n, k)
    jp, yp = sp.spherical_jn(n, k, True), sp.spherical_yn(n, k, True)
    An = -(jp + 1j * beta * jn) / (jp + 1j * yp + 1j * beta * (jn + 1j * yn))
    ref = (-1j / k) * np.sum((2 * n + 1) * An * sp.eval_legendre(n, np.cos(th)[None, :]), axis=0)
    ff = plan.far_field(sol, np.column_stack([np.sin(th), 0 * th, np.cos(th)]))
    assert np.linalg.norm(ff - ref) < 0.04 * np.linalg.norm(ref)  # measured about 1.2e-2


def test_acoustic_sweep_radiation_and_scattering():
    mesh = el.icosphere(2)
    a = el.AcousticBEM(mesh, tol=1e-8)
    f = np.array([27.3, 54.6])
    seen = []
    rec = a.sweep(f, velocity=1e-3, field_points=[[0, 0, 2.0]], directions=[[0, 0, 1.0]],
                  progress=lambda i, n, fi, r: seen.append((i, n, fi)))
    assert seen == [(0, 2, 27.3), (1, 2, 54.6)]
    k = rec.k
    P = 2 * np.pi * RHO * C * 1e-6 * k**2 / (1 + k**2)
    np.testing.assert_allclose(rec.power_w, P, rtol=0.06)  # 320 elements: O(h), measured 3.3e-2
    np.testing.assert_allclose(rec.lw_db, 10 * np.log10(rec.power_w / 1e-12))
    assert rec.field.shape == (2, 1) and rec.p_inf.shape == (2, 1)
    assert "power_w=ndarray((2,), float64)" in repr(rec) and "field=ndarray((2, 1), complex128)" in repr(rec)
    np.testing.assert_allclose(rec.spl_db, el.spl_db(rec.field))
    assert np.all(np.isnan(rec.ts_db))
    s = el.AcousticBEM(mesh, impedance=RHO * C, tol=1e-6).sweep([54.6], direction=(0, 0, 1))
    assert np.isfinite(s.ts_db[0]) and s.power_w[0] > 0


def test_bad_input():
    mesh = el.icosphere(1)
    with pytest.raises(el.InvalidArgumentError, match="passive"):
        el.HelmholtzBEM(mesh, 1.0, admittance=-1.0)
    with pytest.raises(el.InvalidArgumentError, match="neumann"):
        el.HelmholtzBEM(mesh, 1.0, bc="dirichlet", admittance=1.0)
    plan = el.HelmholtzBEM(mesh, 1.0, bc="dirichlet")
    with pytest.raises(el.InvalidArgumentError, match="neumann"):
        plan.solve_radiation(np.ones(80))
    plan = el.HelmholtzBEM(mesh, 1.0)
    with pytest.raises(el.InvalidArgumentError, match="80 elements"):
        plan.solve_radiation(np.ones(3))
    with pytest.raises(el.InvalidArgumentError):
        el.acoustic_wavenumber(-5.0)
    with pytest.raises(el.InvalidArgumentError):
        el.AcousticBEM(mesh).sweep([100.0])
    with pytest.raises(el.InvalidArgumentError, match="impedance"):
        el.AcousticBEM(mesh, admittance=1.0)


def test_ground_plane_equals_the_mirror_image_body():
    v, t = el.icosphere(2, 0.5)
    v = v + np.array([0.0, 0.0, 0.8])
    vm = v * np.array([1, 1, -1.0])
    both = (np.vstack([v, vm]), np.vstack([t, t[:, ::-1] + v.shape[0]]))
    k, d = 2.0, np.array([0.3, 0.0, -1.0])
    half = el.HelmholtzBEM((v, t), k, ground_plane=("z", 0.0, "rigid"), tol=1e-11)
    full = el.HelmholtzBEM(both, k, tol=1e-11)
    sh = half.solve(d)
    # the full-space problem with the incident wave and its reflection: solve_radiation's
    # incident plane wave plus a zero velocity cannot add two waves, so compare the radiation
    # by a pulsating body and its image instead, and the scattering through the far field
    g = np.full(t.shape[0], 1.0 + 0.5j)
    rh = half.solve_radiation(g)
    rf = full.solve_radiation(np.concatenate([g, g]))
    np.testing.assert_allclose(rh.u, rf.u[: t.shape[0]], rtol=1e-8, atol=1e-9 * np.abs(rf.u).max())
    pts = np.array([[0.2, 0.3, 1.6], [-1.0, 0.5, 0.3]])
    np.testing.assert_allclose(half.scattered_field(rh, pts), full.scattered_field(rf, pts), rtol=1e-6)
    assert np.all(np.isfinite(sh.u))
    with pytest.raises(el.InvalidArgumentError, match="below the ground plane"):
        half.scattered_field(sh, [[0.0, 0.0, -1.0]])
    with pytest.raises(el.InvalidArgumentError, match="ground_plane"):
        el.HelmholtzBEM((v, t), k, ground_plane=("w", 0.0))
    # the FMM operator over the body and its image: the dense solution, to the FMM tolerance
    fm = el.HelmholtzBEM((v, t), k, ground_plane=("z", 0.0, "rigid"), tol=1e-11, operator="fmm", fmm_tol=1e-7)
    assert fm.setup["operator"] == "fmm"
    np.testing.assert_allclose(fm.solve(d).u, sh.u, rtol=1e-5, atol=1e-5 * np.abs(sh.u).max())
    with pytest.raises(el.InvalidArgumentError, match="IFMM"):
        el.HelmholtzBEM((v, t), k, ground_plane=("z", 0.0), operator="fmm", precond="ifmm")


def test_symmetry_half_model_equals_the_whole_body():
    v, t = el.octasphere(2, 0.7)
    keep = np.all(v[t][:, :, 2] >= 0, axis=1)
    k = 3.0
    whole = el.HelmholtzBEM((v, t), k, tol=1e-11)
    half = el.HelmholtzBEM((v, t[keep]), k, tol=1e-11, symmetry=[("z", 0.0, "symmetric")])
    assert half.triangles.shape[0] * 2 == whole.triangles.shape[0]
    gw = el.normal_velocity_data(whole.normals[:, 0], 100.0)  # translation along x: even in z
    gh = el.normal_velocity_data(half.normals[:, 0], 100.0)
    sw, sh = whole.solve_radiation(gw), half.solve_radiation(gh)
    # the whole body's solution on the half's elements, matched by centroid
    idx = [int(np.argmin(np.linalg.norm(whole.centroids - c, axis=1))) for c in half.centroids]
    np.testing.assert_allclose(sh.u, sw.u[idx], rtol=1e-8, atol=1e-10 * np.abs(sw.u).max())
    pts = np.array([[0.3, 0.4, 1.5], [-1.2, 0.8, -0.3]])
    np.testing.assert_allclose(half.scattered_field(sh, pts), whole.scattered_field(sw, pts), rtol=1e-6)
    assert half.surface_power(sh, 100.0) == pytest.approx(whole.surface_power(sw, 100.0), rel=1e-8)
    with pytest.raises(el.InvalidArgumentError, match="not symmetric"):
        half.solve((0, 0, 1))
    with pytest.raises(el.InvalidArgumentError, match="symmetry plane"):
        el.HelmholtzBEM((v, t[keep]), k, symmetry=[("z", 0.0, "even")])


def test_incident_field_at_points_with_ground():
    # HelmholtzBEM.incident_field: the plane wave / point source and its image in a pressure-release
    # ground z = 0.1 (C++ plane_wave_at / point_source_at), against the closed forms
    v, t = el.icosphere(1, 0.5)
    plan = el.HelmholtzBEM((v, t + 0 * t), 2.0, ground_plane=("z", -0.6, "soft"))
    x = np.array([[0.3, -1.2, 0.4], [2.0, 0.0, -0.5]])
    d = np.array([0.6, 0.0, -0.8])
    dr = d * [1, 1, -1]
    np.testing.assert_allclose(plan.incident_field(x, direction=d),
                               np.exp(2j * x @ d) - np.exp(2j * (x @ dr + 2 * 0.6 * 0.8)), rtol=1e-13)
    x0 = np.array([1.0, 1.0, 0.2])
    xi = np.array([1.0, 1.0, -1.4])
    r, ri = np.linalg.norm(x - x0, axis=1), np.linalg.norm(x - xi, axis=1)
    np.testing.assert_allclose(plan.incident_field(x, point_source=x0, amplitude=4 * np.pi),
                               np.exp(2j * r) / r - np.exp(2j * ri) / ri, rtol=1e-13)
    with pytest.raises(el.InvalidArgumentError, match="exactly one"):
        plan.incident_field(x)
    with pytest.raises(el.InvalidArgumentError, match="at the point source"):
        plan.incident_field(x0, point_source=x0)


def test_acoustic_bem_checks_option_names_at_construction():
    with pytest.raises(el.InvalidArgumentError, match="unknown HelmholtzBEM option.*tolerance"):
        el.AcousticBEM(el.icosphere(1), tolerance=1e-6)
    with pytest.raises(el.InvalidArgumentError, match="mesh must be"):
        el.AcousticBEM(42)


def test_sweep_run_folder_resume_matches_the_cli_format(tmp_path):
    # the run folder of AcousticBEM.sweep(out=...) is the CLI's (bem::AcousticSweep writes both):
    # an interrupted sweep resumes, reading the finished frequencies back bit-identical
    mesh = el.icosphere(1, order=2)
    a = el.AcousticBEM(mesh, tol=1e-8)
    f = [27.3, 54.6, 81.9]
    out = tmp_path / "run"
    kw = dict(velocity=1e-3, directions=[[0, 0, 1.0], [1, 0, 0]], field_points=[[0, 0, 2.0], [0, 0, 0.1]],
              out=out, keep_surface=True)
    r1 = a.sweep(f, **kw)
    assert not r1.resumed.any() and r1.surface.shape == (3, 80) and r1.field[:, 1].tolist() == [0, 0, 0]
    header = (out / "frequencies.csv").read_text().splitlines()[0].lstrip("# ")
    assert header.startswith("index,frequency_hz,k,ka,gmres_iterations") and header.endswith("max_spl_1m_db")
    for name in ("run.json", "summary.json", "f0000/surface.npy", "f0001/directivity.csv", "f0002/field_points.csv"):
        assert (out / name).exists(), name
    np.testing.assert_array_equal(np.load(out / "f0001" / "surface.npy"), r1.surface[1])
    with pytest.raises(el.InvalidArgumentError, match="resume"):
        a.sweep(f, **kw)
    import shutil
    shutil.rmtree(out / "f0002")
    seen = []
    r2 = a.sweep(f, resume=True, progress=lambda i, n, fi, row: seen.append(i), **kw)
    assert seen == [2] and r2.resumed.tolist() == [True, True, False]
    for key in ("p_inf", "field", "surface", "power_w", "iterations", "k"):
        np.testing.assert_array_equal(getattr(r2, key), getattr(r1, key), err_msg=key)
    with pytest.raises(el.InvalidArgumentError, match="other settings"):
        a.sweep(f, resume=True, **dict(kw, velocity=2e-3))
    with pytest.raises(el.InvalidArgumentError, match="needs the run folder"):
        a.sweep(f, velocity=1e-3, resume=True)


def test_sweep_monostatic_and_progress_errors(tmp_path):
    mesh = el.icosphere(2)
    a = el.AcousticBEM(mesh, tol=1e-6)
    d = [[0, 0, 1.0], [1, 0, 0], [0, 1, 0]]
    r = a.sweep([54.6, 70.0], monostatic=d)
    assert r.backscatter.shape == (2, 3) and r.monostatic_ts_db.shape == (2, 3)
    np.testing.assert_allclose(r.monostatic_ts_db, 20 * np.log10(np.abs(r.backscatter)), rtol=1e-12)
    np.testing.assert_allclose(r.ts_db, r.monostatic_ts_db.max(axis=1))
    # a sphere: the same backscatter from every direction, to the discretisation (320 flat elements)
    np.testing.assert_allclose(np.abs(r.backscatter), np.broadcast_to(np.abs(r.backscatter[:, :1]), (2, 3)), rtol=0.02)

    def stop(i, n, fi, row):
        if i == 1:
            raise KeyboardInterrupt
    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt):
        a.sweep([54.6, 70.0, 80.0], direction=(0, 0, 1), out=out, progress=stop)
    # the frequencies finished before the interruption are kept, and a resume completes the sweep
    done = np.loadtxt(out / "frequencies.csv", delimiter=",", skiprows=1, ndmin=2)
    assert done.shape[0] == 2
    r = a.sweep([54.6, 70.0, 80.0], direction=(0, 0, 1), out=out, resume=True)
    assert r.resumed.tolist() == [True, True, False]
