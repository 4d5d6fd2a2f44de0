"""`elliptica ewald --periodicity 0P / 2P / 1P` (issue 31): free-space laplace, stokeslet and
stresslet against direct sums, 2P and 1P laplace against the Madelung constants of the square monolayer and the
chain, the summary's periodicity fields, and refusals (exit 2, a message naming the problem, no
output written). Cost: about 4 s."""
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


def test_stresslet_in_free_space(cli, tmp_path):
    x, _, f = system(tmp_path)
    r = np.random.default_rng(8)
    nu = r.normal(size=x.shape)
    nu /= np.linalg.norm(nu, axis=1)[:, None]
    np.save(tmp_path / "nu.npy", nu)
    r = run(cli, "ewald", "--kernel", "stresslet", "--periodicity", "0P", "--sources", tmp_path / "x.npy",
            "--dipoles", tmp_path / "f.npy", "--normals", tmp_path / "nu.npy", "--tol", "1e-8", "--out",
            tmp_path / "u.npy", "--summary", tmp_path / "s.json")
    assert r.returncode == 0, r.stderr
    d = x[:, None] - x[None]
    r2 = (d ** 2).sum(2)
    np.fill_diagonal(r2, np.inf)
    ref = (-6 * d * ((np.einsum("mnk,nk->mn", d, f) * np.einsum("mnk,nk->mn", d, nu)) / r2 ** 2.5)[..., None]).sum(1)
    ref /= 8 * np.pi
    u = np.load(tmp_path / "u.npy")
    assert np.sqrt(np.sum((u - ref) ** 2) / np.sum(ref ** 2)) < 1e-8
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["periodicity"] == "0P" and s["kernel"] == "stresslet"


def test_doubly_and_singly_periodic(cli, tmp_path):
    # 2P: the rock-salt (100) monolayer, phi = -M2 q / a, M2 = 1.6155426267128247 (Zucker 1974)
    a = 0.4
    np.save(tmp_path / "x2.npy", np.array([[0, 0, 0], [a, 0, 0], [0, a, 0], [a, a, 0]], float))
    np.save(tmp_path / "q2.npy", np.array([1.0, -1.0, -1.0, 1.0]))
    r = run(cli, "ewald", "--periodicity", "2P", "--box", f"{2 * a},{2 * a},1", "--sources", tmp_path / "x2.npy",
            "--strengths", tmp_path / "q2.npy", "--tol", "1e-11", "--abs-tol", "--out", tmp_path / "p2.npy",
            "--summary", tmp_path / "s2.json")
    assert r.returncode == 0, r.stderr
    assert "periodicity 2P: periods x = 0.8, y = 0.8" in r.stdout
    assert np.allclose(np.load(tmp_path / "p2.npy"), -1.6155426267128247 * np.array([1, -1, -1, 1]) / a, rtol=0,
                       atol=1e-10)
    s = json.loads((tmp_path / "s2.json").read_text())
    assert s["periodicity"] == "2P" and s["periodic_axes"] == [True, True, False]
    assert s["box"] == [2 * a, 2 * a, None] and s["params"]["truncation_radius"] > 0
    # 1P along x (axis letter): the alternating chain, phi = -2 ln 2 q / a
    np.save(tmp_path / "x1.npy", np.array([[0.0, 0.1, 0.2], [a, 0.1, 0.2]]))
    np.save(tmp_path / "q1.npy", np.array([1.0, -1.0]))
    r = run(cli, "ewald", "--periodicity", "x", "--box", f"{2 * a},1,1", "--sources", tmp_path / "x1.npy",
            "--strengths", tmp_path / "q1.npy", "--tol", "1e-11", "--abs-tol", "--out", tmp_path / "p1.npy",
            "--summary", tmp_path / "s1.json")
    assert r.returncode == 0, r.stderr
    assert np.allclose(np.load(tmp_path / "p1.npy"), -2 * np.log(2) * np.array([1, -1]) / a, rtol=0, atol=1e-10)
    s = json.loads((tmp_path / "s1.json").read_text())
    assert s["periodicity"] == "x"
    assert s["periodic_axes"] == [True, False, False] and s["box"] == [2 * a, None, None]


def test_refusals_write_nothing(cli, tmp_path):
    system(tmp_path)
    out = tmp_path / "out.npy"
    base = ["ewald", "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy", "--out", out]
    for extra, message in [(["--periodicity", "0P", "--box", "1"], "--box does not apply"),
                           (["--periodicity", "1P", "--box", "1", "--grid", "32"], "grid override"),
                           (["--periodicity", "0P", "--grid", "32"], "grid override")]:
        r = run(cli, *base, *extra)
        assert r.returncode == INVALID, (extra, r.stderr)
        assert message in r.stderr, (extra, r.stderr)
        assert not out.exists()
    r = run(cli, *base, "--periodicity", "4P", "--box", "1")
    assert r.returncode != 0 and "unknown periodicity" in r.stderr
    assert not out.exists()
