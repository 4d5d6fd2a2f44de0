"""`elliptica ewald --periodicity 0P` (issue 31): free-space laplace and stokeslet against direct
sums, the summary's periodicity fields, and refusals (exit 2, a message naming the problem, no
output written). Cost: about 2 s."""
import json
import subprocess
from pathlib import Path

import numpy as np

INVALID = 2


def run(cli, *args, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def system(d):
    r = np.random.default_rng(7)
    x = r.random((300, 3)) * [2.0, 1.0, 0.5] - 10.0
    q = r.random(300) - 0.2
    f = r.random((300, 3)) - 0.5
    for name, a in dict(x=x, q=q, f=f).items():
        np.save(d / f"{name}.npy", a)
    return x, q, f


def test_laplace_and_stokeslet_in_free_space(cli, tmp_path):
    x, q, f = system(tmp_path)
    rr = np.linalg.norm(x[:, None] - x[None], axis=2)
    np.fill_diagonal(rr, np.inf)
    r = run(cli, "ewald", "--periodicity", "0P", "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy",
            "--tol", "1e-9", "--out", tmp_path / "phi.npy", "--summary", tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    assert "free space (0P)" in r.stdout
    phi = np.load(tmp_path / "phi.npy")
    ref = (q[None] / rr).sum(1)
    assert np.sqrt(np.mean((phi - ref) ** 2) / np.mean(ref ** 2)) < 1e-9
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["periodicity"] == "0P" and s["periodic_axes"] == [False, False, False] and s["box"] is None
    assert s["params"]["truncation_radius"] > 0 and len(s["params"]["fft_box"]) == 3

    r = run(cli, "ewald", "--kernel", "stokeslet", "--periodicity", "none", "--viscosity", "3", "--sources",
            tmp_path / "x.npy", "--strengths", tmp_path / "f.npy", "--tol", "1e-7", "--out", tmp_path / "u.npy")
    assert r.returncode == 0, r.stderr
    u = np.load(tmp_path / "u.npy")
    d = x[:, None] - x[None]
    ref = (f[None] / rr[..., None]).sum(1) + (d * (np.einsum("mnk,nk->mn", d, f) / rr ** 3)[..., None]).sum(1)
    ref /= 8 * np.pi * 3
    assert np.sqrt(np.sum((u - ref) ** 2) / np.sum(ref ** 2)) < 1e-7


def test_refusals_write_nothing(cli, tmp_path):
    system(tmp_path)
    out = tmp_path / "out.npy"
    base = ["ewald", "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy", "--out", out]
    for extra, message in [(["--periodicity", "0P", "--box", "1"], "--box does not apply"),
                           (["--periodicity", "1P", "--box", "1", "--kernel", "stokeslet"], "laplace kernel only"),
                           (["--periodicity", "0P", "--kernel", "stokeslet", "--pressure"], "pressure is not implemented"),
                           (["--periodicity", "0P", "--grid", "32"], "grid override")]:
        r = run(cli, *base, *extra)
        assert r.returncode == INVALID, (extra, r.stderr)
        assert message in r.stderr, (extra, r.stderr)
        assert not out.exists()
    r = run(cli, *base, "--periodicity", "4P", "--box", "1")
    assert r.returncode != 0 and "unknown periodicity" in r.stderr
    assert not out.exists()
