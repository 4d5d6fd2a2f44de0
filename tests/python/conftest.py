"""Shared set-up of the Python package's tests."""
import os
import sys

# tests/common (sparse_problems.py: matrices shared by the Python and CLI tests) importable
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "common"))

from require_deps import pytest_runtest_makereport  # noqa: E402,F401  (CI: missing MPI / hypre fails)

# The built-in cost-model constants (src/ewald/calibrate.cpp): the same parameter choice on every
# machine, and no test run measures the machine or writes the per-machine cache (the tests of the
# calibration set their own environment). Set before the package is first used.
os.environ.setdefault("ELLIPTICA_EWALD_COSTS", "builtin")
# FFT plans as FFTW_ESTIMATE (ELLIPTICA_EWALD_FFT_WISDOM=off): no test measures FFTW plans or writes
# the per-machine wisdom cache, except those of the wisdom cache itself (their own subprocesses).
os.environ.setdefault("ELLIPTICA_EWALD_FFT_WISDOM", "off")
