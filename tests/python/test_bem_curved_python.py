"""Python layer of the curved 6-node BEM elements: icosphere(order=2) / octasphere(order=2),
the (vertices, triangles, midside) mesh tuple in HelmholtzBEM, read_mesh of a Gmsh file with
6-node triangles, against the pulsating-sphere closed form written here with numpy (the far field
A = g a^2 e^{-ika} / (ika - 1)). Cost: about 2 s.
"""
import numpy as np
import pytest

import elliptica as el


def _pulsating_far_error(mesh, k):
    plan = el.HelmholtzBEM(mesh, k, tol=1e-10)
    sol = plan.solve_radiation(np.ones(plan.triangles.shape[0]))
    d = np.array([[0, 0, 1.0], [1.0, 0, 0], [0.6, 0.0, -0.8]])
    ref = np.exp(-1j * k) / (1j * k - 1)  # unit g, unit sphere
    return np.max(np.abs(sol.far_field(d) - ref)) / abs(ref)


def test_curved_meshes_and_their_accuracy():
    v, t, m = el.icosphere(2, 1.0, order=2)
    assert v.shape == (162, 3) and t.shape == (320, 3) and m.shape == (320, 3, 3)
    np.testing.assert_allclose(np.linalg.norm(m, axis=2), 1.0, rtol=1e-14)  # on the sphere
    assert len(el.icosphere(2)) == 2 and len(el.octasphere(1, order=2)) == 3
    # measured: curved 2.8e-4 against flat 9.9e-3 (320 elements, ka = 2); O(h^2) against O(h)
    ec, ef = _pulsating_far_error((v, t, m), 2.0), _pulsating_far_error(el.icosphere(2), 2.0)
    assert ec < 1e-3 and ec < ef / 10


def test_bad_curved_input():
    v, t, m = el.icosphere(1, order=2)
    with pytest.raises(el.InvalidArgumentError, match="midside must have shape"):
        el.HelmholtzBEM((v, t, m[:-1]), 1.0)
    with pytest.raises(el.InvalidArgumentError, match="mesh must be a file path"):
        el.HelmholtzBEM((v, t, m, m), 1.0)
    with pytest.raises(el.InvalidArgumentError, match="order must be 1"):
        el.icosphere(1, order=3)
    bad = m.copy()
    c = v[t[4]].mean(axis=0)
    bad[4, 1] = c - 3 * (bad[4, 1] - c)
    with pytest.raises(el.InvalidArgumentError, match="folded"):
        el.HelmholtzBEM((v, t, bad), 1.0)


def test_read_gmsh_six_node_triangles(tmp_path):
    v, t, m = el.octasphere(1, order=2)
    nodes = np.vstack([v, m.reshape(-1, 3)])
    p = tmp_path / "curved.msh"
    with open(p, "w") as f:
        f.write(f"$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n{len(nodes)}\n")
        for i, x in enumerate(nodes):
            f.write(f"{i + 1} {float(x[0])!r} {float(x[1])!r} {float(x[2])!r}\n")
        f.write(f"$EndNodes\n$Elements\n{len(t)}\n")
        for e, tri in enumerate(t):
            mid = len(v) + 3 * e + np.arange(3) + 1
            f.write(f"{e + 1} 9 2 0 1 " + " ".join(str(i) for i in list(tri + 1) + list(mid)) + "\n")
        f.write("$EndElements\n")
    v2, t2, m2 = el.read_mesh(p)
    np.testing.assert_array_equal(t2, t)
    np.testing.assert_array_equal(m2, m)
    plan = el.HelmholtzBEM(p, 1.0)
    assert plan.triangles.shape == (32, 3)


def test_curve_and_refine_mesh():
    flat = el.icosphere(2)
    v, t, m = el.curve_mesh(flat)
    assert m.shape == (320, 3, 3)
    # the PN-triangle midside nodes of a flat icosphere lie close to the sphere (measured 9.6e-4)
    assert np.max(np.abs(np.linalg.norm(m, axis=2) - 1)) < 2e-3
    ec, ef = _pulsating_far_error((v, t, m), 2.0), _pulsating_far_error(flat, 2.0)
    assert ec < ef / 5
    with pytest.raises(el.InvalidArgumentError, match="already curved"):
        el.curve_mesh((v, t, m))
    with pytest.raises(el.InvalidArgumentError, match="crease_degrees"):
        el.curve_mesh(flat, crease_degrees=0)
    r = el.refine_mesh((v, t, m))
    assert len(r) == 3 and r[1].shape == (1280, 3)
    rf = el.refine_mesh(flat)
    assert len(rf) == 2 and rf[1].shape == (1280, 3)
