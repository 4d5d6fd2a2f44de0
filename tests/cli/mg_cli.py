"""Helpers of the `elliptica mg` CLI tests: run the binary, read a `name: value` line of its
report, and solve a scipy matrix through `mg solve --matrix`."""
import re
import subprocess

import numpy as np


def run(cli, *args, timeout=300):
    """Runs `cli args...` (each arg str()-ed); the CompletedProcess with text stdout / stderr."""
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def field(out, name):
    """The first word after `name:` at the start of a line of `out` (fails the test when absent)."""
    m = re.search(rf"^{re.escape(name)}:\s*(\S+)", out, re.M)
    assert m, f"no '{name}:' line in output:\n{out}"
    return m.group(1)


def solve(cli, tmp_path, A, b, *extra, name="x.npy"):
    """`mg solve --matrix A.mtx --rhs b.npy --out tmp_path/name -q *extra` with A written as Matrix
    Market and b as .npy into tmp_path; returns (CompletedProcess, path of the solution)."""
    import scipy.io as sio

    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / name
    r = run(cli, "mg", "solve", "--matrix", tmp_path / "A.mtx", "--rhs", tmp_path / "b.npy", "--out", out, "-q", *extra)
    return r, out
