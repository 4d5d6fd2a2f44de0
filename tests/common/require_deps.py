"""Skips that must fail in CI: the CI machine installs MPI, mpi4py and hypre
(scripts/install-deps.sh), so a test skipped there for want of one of them means the install or
the build lost it, and would otherwise pass unnoticed. With ELLIPTICA_REQUIRE_DEPS=1 (set by
.ci/run) a skip whose reason names such a dependency is reported as a failure. Imported by the
conftest.py of tests/python and tests/cli (pytest takes the hook from there)."""
import os

import pytest

# parts of the skip reasons of the tests that need MPI (tests/*/test_*ewald_mpi.py) or hypre
MISSING_DEPENDENCY = ("built without hypre", "built without MPI", "mpirun not found", "needs an MPI build")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not rep.skipped or os.environ.get("ELLIPTICA_REQUIRE_DEPS") != "1":
        return
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    if any(k in reason for k in MISSING_DEPENDENCY):
        rep.outcome = "failed"
        rep.longrepr = (f"ELLIPTICA_REQUIRE_DEPS=1 (CI): skipped for want of a dependency the CI machine installs: "
                        f"{reason}")
