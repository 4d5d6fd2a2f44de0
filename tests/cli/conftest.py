"""Shared fixture of the CLI tests: the `elliptica` binary (ELLIPTICA_CLI, else PATH, else the build
tree's; tests/common/cli_path.py)."""
import os
import sys

# tests/common (sparse_problems.py: matrices shared by the Python and CLI tests) importable
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "common"))

from require_deps import pytest_runtest_makereport  # noqa: E402,F401  (CI: missing MPI / hypre fails)
from cli_path import cli_path  # noqa: E402

import pytest

# The built-in cost-model constants (src/ewald/calibrate.cpp): the same parameter choice on every
# machine, and no test run measures the machine or writes the per-machine cache (the tests of the
# calibration set their own environment).
os.environ.setdefault("ELLIPTICA_EWALD_COSTS", "builtin")
# FFT plans as FFTW_ESTIMATE: no CLI run measures FFTW plans (a measured plan changes the rounding
# of the transforms from run to run, so two runs compared to 1e-12 could differ), except the
# wisdom cache's own test (its environment).
os.environ.setdefault("ELLIPTICA_EWALD_FFT_WISDOM", "off")


@pytest.fixture(scope="session")
def cli():
    return cli_path()
