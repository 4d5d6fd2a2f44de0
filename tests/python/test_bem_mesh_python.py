"""Python API: HelmholtzBEM refuses self-intersecting and nested surfaces (InvalidArgumentError,
a ValueError, naming the elements / components), given as arrays or as a mesh file read by
read_mesh; disjoint bodies are accepted."""
import re

import numpy as np
import pytest

import elliptica


def sphere(refinements=1, radius=1.0, center=(0.0, 0.0, 0.0)):
    v, t = elliptica.icosphere(refinements, radius)
    return v + np.asarray(center, float), t


def join(*meshes):
    vs, ts, off = [], [], 0
    for v, t in meshes:
        vs.append(v)
        ts.append(t + off)
        off += len(v)
    return np.vstack(vs), np.vstack(ts)


def write_obj(path, mesh):
    v, t = mesh
    with open(path, "w") as f:
        f.writelines("v %r %r %r\n" % tuple(map(float, p)) for p in v)
        f.writelines(f"f {a} {b} {c}\n" for a, b, c in t + 1)
    return path


def refused(mesh):
    with pytest.raises(elliptica.InvalidArgumentError) as info:
        elliptica.HelmholtzBEM(mesh, 0.5)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_overlapping_spheres_named(tmp_path):
    a = sphere(2)
    mesh = join(a, sphere(2, 1.0, (1.0, 0.1, 0.0)))
    for m in [mesh, write_obj(tmp_path / "o.obj", mesh)]:
        msg = refused(m)
        assert "two closed surfaces intersect" in msg
        e, f = map(int, re.search(r"elements (\d+) and (\d+)", msg).groups())
        assert e < len(a[1]) <= f
    # read_mesh itself only reads: the arrays come back as written
    v, t = elliptica.read_mesh(tmp_path / "o.obj")
    np.testing.assert_array_equal(t, mesh[1])


def test_vertex_pushed_through_named():
    v, t = sphere(2)
    v = v.copy()
    v[0] = -1.3 * v[0]
    msg = refused((v, t))
    assert "the surface intersects itself" in msg
    e, f = map(int, re.search(r"elements (\d+) and (\d+)", msg).groups())
    assert 0 in t[e] or 0 in t[f]


def test_nested_refused():
    outer, inner = sphere(2, 3.0), sphere(1, 1.0)
    msg = refused(join(inner, outer))
    assert "nested surfaces" in msg
    assert ("component 0 (the closed surface containing element 0) lies inside component 1 "
            f"(the closed surface containing element {len(inner[1])})") in msg
    assert "solid bodies" in msg


def test_disjoint_accepted():
    plan = elliptica.HelmholtzBEM(join(sphere(1), sphere(1, 1.0, (3.0, 0.0, 0.0))), 0.5)
    assert plan.report["components"] == 2
