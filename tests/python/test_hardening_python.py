"""Issue 9 through Python: values that used to crash the interpreter (a heap overflow from one
large coordinate, std::bad_alloc escaping an OpenMP region for an elongated box) now raise the
documented exceptions, and ResourceError is a MemoryError."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import elliptica

ROOT = Path(__file__).resolve().parents[2]
X = np.load(ROOT / "examples" / "water" / "positions.npy")
Q = np.load(ROOT / "examples" / "water" / "charges.npy")
L = 1.86206


def test_resource_error_is_a_memory_error():
    assert issubclass(elliptica.ResourceError, MemoryError)
    assert "ResourceError" in elliptica.__all__


def test_huge_coordinate_raises_and_the_interpreter_survives():
    # Run in a child: before the fix this was a SIGSEGV of the interpreter itself.
    code = (
        "import numpy as np, elliptica\n"
        f"x = np.load({str(ROOT / 'examples' / 'water' / 'positions.npy')!r}); "
        f"q = np.load({str(ROOT / 'examples' / 'water' / 'charges.npy')!r})\n"
        "x[11, 1] = 1e308\n"
        "try:\n"
        f"    elliptica.ewald('laplace', x, q, box={L})\n"
        "except elliptica.InvalidArgumentError as e:\n"
        "    print('refused:', e)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "point 11" in r.stdout


def test_wrapped_coordinates_give_identical_results():
    y = X.copy()
    y[:, 0] += 1e11 * L
    y[:, 2] -= 3e9 * L
    w = np.fmod(y, L)
    w[w < 0] += L
    a = elliptica.ewald("laplace", y, Q, box=L, tol=1e-6, threads=1).potential
    b = elliptica.ewald("laplace", w, Q, box=L, tol=1e-6, threads=1).potential
    assert np.array_equal(a, b)


def test_elongated_box_raises_resource_error():
    with pytest.raises(elliptica.ResourceError, match="aspect ratio"):
        elliptica.ewald("laplace", X, Q, box=(1e8, 1.0, 1.0))


def test_grid_override_above_the_cap_is_invalid():
    with pytest.raises(elliptica.InvalidArgumentError, match="grid override"):
        elliptica.ewald("laplace", X, Q, box=L, grid=(1024, 1024, 1024))


def test_tiny_and_huge_boxes_scale_exactly():
    # phi(s x; s L) = phi(x; L) / s for a power of two s: the plan computes in power-of-two units.
    a = elliptica.ewald("laplace", X, Q, box=L, tol=1e-8, threads=1).potential
    for s in (2.0 ** -300, 2.0 ** 300):
        b = elliptica.ewald("laplace", X * s, Q, box=L * s, tol=1e-8, threads=1).potential
        assert np.all(np.isfinite(b))
        assert np.sqrt(np.mean((b * s - a) ** 2) / np.mean(a ** 2)) < 1e-8


def test_text_first_row_in_another_notation_is_an_error(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("1.0D+00 2.0 3.0\n4 5 6\n")
    with pytest.raises(elliptica.FileError, match="Fortran"):
        elliptica.read_array(p)
