"""Shared fixture of the CLI tests: the `elliptica` binary (ELLIPTICA_CLI, else PATH)."""
import os
import shutil

import pytest


@pytest.fixture(scope="session")
def cli():
    exe = os.environ.get("ELLIPTICA_CLI") or shutil.which("elliptica")
    if not exe:
        pytest.fail("elliptica binary not found: set ELLIPTICA_CLI=/path/to/elliptica "
                    "(e.g. <build>/apps/elliptica) or put it on PATH")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        pytest.fail(f"ELLIPTICA_CLI={exe!r} is not an executable file")
    return exe
