"""Where the `elliptica` command-line binary is, for the tests that run it (tests/cli and the
Python tests that compare with the CLI): $ELLIPTICA_CLI, else `elliptica` on PATH, else the
build tree's apps/elliptica (<repo>/build/apps/elliptica). Not found is a test failure, not a skip:
the CLI is part of every build the tests run against."""
import os
import shutil

import pytest

_REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))


def cli_path():
    """The path of the `elliptica` binary (see the module docstring); pytest.fail when there is none
    or it is not an executable file."""
    exe = os.environ.get("ELLIPTICA_CLI") or shutil.which("elliptica")
    if not exe:
        built = os.path.join(_REPO, "build", "apps", "elliptica")
        if os.path.isfile(built):
            exe = built
    if not exe:
        pytest.fail("elliptica binary not found: set ELLIPTICA_CLI=/path/to/elliptica "
                    "(e.g. <build>/apps/elliptica) or put it on PATH")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        pytest.fail(f"ELLIPTICA_CLI={exe!r} is not an executable file")
    return exe
