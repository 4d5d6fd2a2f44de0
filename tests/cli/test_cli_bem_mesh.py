"""`elliptica bem --mesh FILE`: self-intersecting and nested surfaces are refused (exit 2) with the
offending elements / components named; disjoint bodies and bodies touching at a shared vertex are
accepted; --loop (the Loop limit surface of a flat control mesh) runs and is refused where it must
be. The meshes are written here (OBJ and ASCII STL) from a refined octahedron projected to
the sphere, so these tests depend on the command-line tool only.

The binary is taken from ELLIPTICA_CLI, else from PATH.
"""
import re
import subprocess

import numpy as np
import pytest

INVALID = 2


def run(cli, *args, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def sphere(refinements=1, radius=1.0, center=(0.0, 0.0, 0.0)):
    """Octahedron refined `refinements` times (each triangle split in 4), projected to the sphere:
    (V, 3) vertices, (8 * 4**refinements, 3) outward triangles."""
    v = [np.array(p, float) for p in [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]]
    t = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    for _ in range(refinements):
        mid = {}

        def m(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                p = v[a] + v[b]
                v.append(p / np.linalg.norm(p))
                mid[key] = len(v) - 1
            return mid[key]

        t = [tri for a, b, c in t for tri in ((a, m(a, b), m(c, a)), (b, m(b, c), m(a, b)),
                                               (c, m(c, a), m(b, c)), (m(a, b), m(b, c), m(c, a)))]
    return np.array(v) * radius + np.asarray(center, float), np.array(t, np.int64)


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
        for p in v:
            f.write("v %r %r %r\n" % tuple(map(float, p)))
        for a, b, c in t + 1:
            f.write(f"f {a} {b} {c}\n")
    return path


def write_stl(path, mesh):
    v, t = mesh
    with open(path, "w") as f:
        f.write("solid test\n")
        for tri in t:
            f.write("facet normal 0 0 0\nouter loop\n")
            for i in tri:
                f.write("vertex %r %r %r\n" % tuple(map(float, v[i])))
            f.write("endloop\nendfacet\n")
        f.write("endsolid test\n")
    return path


def bem(cli, mesh_file, out):
    return run(cli, "bem", "--mesh", mesh_file, "--k", "0.5", "--out", out, "--no-plots",
               "--far-field-points", "4", "--threads", "1")


def named_elements(stderr):
    m = re.search(r"elements (\d+) and (\d+)", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def test_two_overlapping_spheres_refused(cli, tmp_path):
    a = sphere(2)
    path = write_obj(tmp_path / "overlap.obj", join(a, sphere(2, 1.0, (1.0, 0.2, 0.1))))
    out = tmp_path / "out"
    r = bem(cli, path, out)
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert "two closed surfaces intersect" in r.stderr
    e, f = named_elements(r.stderr)
    assert e < len(a[1]) <= f  # one element of each sphere
    assert "component 0" in r.stderr and "component 1" in r.stderr
    assert not out.exists()


def test_vertex_pushed_through_refused(cli, tmp_path):
    v, t = sphere(2)
    v[4] = (0.0, 0.1, -1.3)  # the north pole (0, 0, 1) pushed through the south side
    r = bem(cli, write_obj(tmp_path / "pushed.obj", (v, t)), tmp_path / "out")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert "the surface intersects itself" in r.stderr
    e, f = named_elements(r.stderr)
    assert 4 in t[e] or 4 in t[f]  # a stretched element around the moved vertex is named


def test_sphere_inside_sphere_refused(cli, tmp_path):
    outer, inner = sphere(2, 2.0), sphere(1, 1.0, (0.2, 0.0, 0.0))
    for name, writer in [("nested.obj", write_obj), ("nested.stl", write_stl)]:
        r = bem(cli, writer(tmp_path / name, join(outer, inner)), tmp_path / "out")
        assert r.returncode == INVALID, (name, r.returncode, r.stderr)
        assert "nested surfaces" in r.stderr, r.stderr
        assert (f"component 1 (the closed surface containing element {len(outer[1])}) lies inside "
                "component 0 (the closed surface containing element 0)") in r.stderr, r.stderr
        assert "exterior scattering by solid bodies" in r.stderr


def box(lo, hi):
    """Axis-aligned box [lo, hi] as 12 triangles (vertex i has coordinate k from hi iff bit k of i)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    v = np.array([[hi[k] if i >> k & 1 else lo[k] for k in range(3)] for i in range(8)])
    t = np.array([(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4),
                  (2, 6, 3), (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)], np.int64)
    return v, t


def test_bodies_touching_at_a_point_refused(cli, tmp_path):
    # the corner (1/3, 1/3, 1/3) of the cube lies inside the face x + y + z = 1 of the
    # octahedron; the bodies have no other common point, and no common vertex
    third = 1.0 / 3.0
    mesh = join(sphere(0), box((third, third, third), (4 * third, 4 * third, 4 * third)))
    r = bem(cli, write_obj(tmp_path / "touch.obj", mesh), tmp_path / "o1")
    assert r.returncode == INVALID, (r.returncode, r.stderr)
    assert "two closed surfaces intersect" in r.stderr and "cross or touch" in r.stderr
    # moved a little away: accepted
    mesh = join(sphere(0), box((0.34, 0.34, 0.34), (1.34, 1.34, 1.34)))
    r = bem(cli, write_obj(tmp_path / "apart.obj", mesh), tmp_path / "o4")
    assert r.returncode == 0, r.stderr


def test_disjoint_and_vertex_touching_spheres_accepted(cli, tmp_path):
    r = bem(cli, write_obj(tmp_path / "two.obj", join(sphere(1), sphere(1, 1.0, (2.5, 0.0, 0.0)))), tmp_path / "o2")
    assert r.returncode == 0, r.stderr
    assert "components 2" in r.stdout
    # tip to tip: the vertex (1, 0, 0) is shared (merged), nothing else
    r = bem(cli, write_obj(tmp_path / "tips.obj", join(sphere(1), sphere(1, 1.0, (2.0, 0.0, 0.0)))), tmp_path / "o3")
    assert r.returncode == 0, r.stderr
    assert "components 2" in r.stdout and "merged duplicate vertices 1" in r.stdout


def test_loop_limit_surface(cli, tmp_path):
    # --loop N: the flat control mesh (an octahedron) replaced by its Loop limit surface at N
    # levels, curved 6-node elements; refused with --curve, --symmetry and on a curved mesh
    path = write_obj(tmp_path / "octahedron.obj", sphere(0))
    r = run(cli, "bem", "--mesh", path, "--loop", "1", "--k", "0.5", "--bc", "dirichlet", "--out", tmp_path / "o",
            "--no-plots", "--far-field-points", "4", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "Loop subdivision limit surface at 1 level (curved 6-node elements, 8 x 4^1)" in r.stdout, r.stdout
    assert "elements 32, vertices 18," in r.stdout, r.stdout
    for extra, message in [(["--curve"], "--loop and --curve exclude each other"),
                           (["--symmetry", "z=0"], "--loop with --symmetry"),
                           (["--crease", "30"], "--crease applies with --curve only")]:
        r = run(cli, "bem", "--mesh", path, "--loop", "1", *extra, "--k", "0.5", "--out", tmp_path / "x", "--no-plots")
        assert r.returncode == INVALID and message in r.stderr, (extra, r.returncode, r.stderr)
    r = run(cli, "bem", "--mesh", "sphere:1,0,curved", "--loop", "1", "--k", "0.5", "--out", tmp_path / "x", "--no-plots")
    assert r.returncode == INVALID and "--loop: the mesh already has curved 6-node elements" in r.stderr, r.stderr
    v, t = sphere(0)
    r = run(cli, "bem", "--mesh", write_obj(tmp_path / "open.obj", (v, t[:-1])), "--loop", "1", "--k", "0.5",
            "--out", tmp_path / "x", "--no-plots")
    assert r.returncode == INVALID and "not closed: edge (" in r.stderr, r.stderr
    r = run(cli, "bem", "--mesh", path, "--loop", "9", "--k", "0.5", "--out", tmp_path / "x", "--no-plots")
    assert r.returncode != 0 and "--loop" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()
