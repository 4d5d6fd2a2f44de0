"""`elliptica ewald calibrate`: measures the cost model's constants, writes the per-machine cache
and --output, prints them as JSON; a constants file given by ELLIPTICA_EWALD_COSTS is used by a
plan and reported in its --summary (`cost_model`). `elliptica ewald` still requires --out.
No assertion on timings (shared machines)."""
import json
import os
import subprocess

import numpy as np

USAGE = 1
VARIANTS = {"laplace", "laplace-field", "stokeslet", "stokeslet-pressure", "stresslet", "stokes-combined"}


def run(cli, *args, env=None, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def test_calibrate_writes_cache_output_and_prints(cli, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "costs.json"
    r = run(cli, "ewald", "calibrate", "--precision", "single", "--output", out,
            env={"ELLIPTICA_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["cache"] == str(cache / "ewald_costs.json")
    [e] = js["entries"]
    assert e["precision"] == "single" and e["source"] == "measured" and e["file"] == js["cache"]
    assert set(e["p2p_pair"]) == VARIANTS and all(v > 0 for v in e["p2p_pair"].values())
    for k in ("p2g_scale", "g2p_scale"):
        assert set(e[k]) == VARIANTS and all(0.5 <= v <= 4.0 for v in e[k].values()), (k, e[k])
    assert all(e[k] > 0 for k in ("p2p_cell", "spread", "interp", "fft", "cnv_mode", "grid_pass", "window_eval"))
    f = json.loads(out.read_text())
    assert f["format"] == "elliptica-ewald-costs" and [x["precision"] for x in f["entries"]] == ["single"]
    c = json.loads((cache / "ewald_costs.json").read_text())
    assert c["entries"][0]["p2p_pair"] == e["p2p_pair"]
    assert sorted(p.name for p in cache.iterdir()) == ["ewald_costs.json"]  # no temporary left

    # the file as the constants of a run, reported in the summary
    rng = np.random.default_rng(3)
    np.save(tmp_path / "x.npy", rng.random((40, 3)))
    q = rng.uniform(-1, 1, 40)
    np.save(tmp_path / "q.npy", q - q.mean())
    r = run(cli, "ewald", "--kernel", "laplace", "--box", "1", "--tol", "1e-5", "--precision", "single",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy", "--summary", tmp_path / "s.json",
            "--out", tmp_path / "phi.npy", env={"ELLIPTICA_EWALD_COSTS": str(out)})
    assert r.returncode == 0, r.stderr
    assert "cost model: file constants" in r.stdout
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["cost_model"]["source"] == "file" and s["cost_model"]["file"] == str(out)
    assert s["cost_model"]["p2p_pair"] == e["p2p_pair"]


def test_calibrate_no_cache_both_precisions_quiet(cli, tmp_path):
    cache = tmp_path / "cache"
    r = run(cli, "ewald", "calibrate", "--no-cache", "-q", env={"ELLIPTICA_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert not cache.exists()


def test_calibrate_usage_errors(cli, tmp_path):
    r = run(cli, "ewald", "calibrate", "--precision", "quad")
    assert r.returncode == USAGE
    # an unwritable --output fails before the measurement, with a file error
    r = run(cli, "ewald", "calibrate", "--output", tmp_path / "no" / "such" / "dir.json", "--no-cache")
    assert r.returncode == 3 and "no" in r.stderr


def test_ewald_still_requires_out(cli, tmp_path):
    np.save(tmp_path / "x.npy", np.random.default_rng(1).random((5, 3)))
    np.save(tmp_path / "q.npy", np.ones(5))
    r = run(cli, "ewald", "--kernel", "laplace", "--box", "1", "--sources", tmp_path / "x.npy",
            "--strengths", tmp_path / "q.npy")
    assert r.returncode == USAGE
    assert "--out" in r.stderr
