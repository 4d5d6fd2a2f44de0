"""Python layer of the Loop subdivision limit surface (loop_surface, C++
bem::loop_subdivision_surface): shapes, the limit positions of level 1 are those of level 2 (corners
kept, midside nodes = the new corners), refine_mesh's triangles, bad input. Cost: well under a
second.
"""
import numpy as np
import pytest

import elliptica as el


def _octahedron():
    v = np.array([(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], float)
    t = np.array([(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)])
    return v, t


def test_shapes_and_limit_positions():
    v1, t1, m1 = el.loop_surface(_octahedron(), levels=1)
    v2, t2, m2 = el.loop_surface(_octahedron(), levels=2)
    # V, E, T = 6, 12, 8 -> 18, 48, 32 -> 66, ..., 128
    assert v1.shape == (18, 3) and t1.shape == (32, 3) and m1.shape == (32, 3, 3)
    assert v2.shape == (66, 3) and t2.shape == (128, 3) and m2.shape == (128, 3, 3)
    assert v1.dtype == np.float64 and t1.dtype == np.int64
    np.testing.assert_allclose(v2[:18], v1, rtol=0, atol=1e-14)       # corners: the same limit points
    np.testing.assert_allclose(v2[t2[3::4]], m1, rtol=0, atol=1e-14)  # midside nodes: level 2's new corners
    np.testing.assert_array_equal(el.refine_mesh((v1, t1, m1))[1], t2)
    # the limit surface lies well inside so coarse a control mesh: valence 4, beta = 31/256, chi =
    # 31/220, so a vertex goes to (1 - 4 chi) = 24/55 of its radius (its neighbours sum to 0)
    np.testing.assert_allclose(np.linalg.norm(v1[:6], axis=1), 24 / 55, rtol=1e-14)
    # level 0: the control triangles, curved
    v0, t0, m0 = el.loop_surface(_octahedron(), levels=0)
    np.testing.assert_array_equal(t0, _octahedron()[1])
    assert m0.shape == (8, 3, 3)


def test_control_is_validated_and_oriented():
    v, t = _octahedron()
    vi, ti, mi = el.loop_surface((v, t[:, ::-1]), levels=1)  # inward: oriented outward first
    a, b, c = vi[ti[:, 0]], vi[ti[:, 1]], vi[ti[:, 2]]
    assert np.einsum("ij,ij->i", a, np.cross(b, c)).sum() > 0


def test_bad_input():
    v, t = _octahedron()
    with pytest.raises(el.InvalidArgumentError, match=r"not closed: edge \("):
        el.loop_surface((v, t[:-1]), levels=1)
    with pytest.raises(el.InvalidArgumentError, match="already curved"):
        el.loop_surface(el.loop_surface((v, t), levels=0))
    with pytest.raises(el.InvalidArgumentError, match=r"levels must be in \[0, 8\], got 9"):
        el.loop_surface((v, t), levels=9)
    with pytest.raises(el.InvalidArgumentError, match=r"levels must be in \[0, 8\], got -1"):
        el.loop_surface((v, t), levels=-1)
    with pytest.raises(el.InvalidArgumentError, match="levels must be an integer"):
        el.loop_surface((v, t), levels=1.5)
    with pytest.raises(el.InvalidArgumentError, match="would give 1342177280 elements"):
        el.loop_surface(el.icosphere(5), levels=8)
