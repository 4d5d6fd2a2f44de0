"""elliptica.ewald_calibrate / ewald_cost_constants: the cost model's constants measured on this
machine (one thread, about a second), returned as a dict, written to the per-machine cache.
No assertion on timings (shared machines): only that the constants are finite and positive."""
import json
import math

import pytest

import elliptica

VARIANTS = {"laplace", "laplace-field", "stokeslet", "stokeslet-pressure", "stresslet", "stokes-combined"}
SCALARS = ["p2p_cell", "p2p_column", "spread", "interp", "window_row", "grid_pass", "fft", "cnv_mode",
           "cnv_component", "window_eval"]


def check_constants(c, precision):
    assert c["precision"] == precision
    for k in SCALARS:
        assert math.isfinite(c[k]) and c[k] > 0, k
    for k in ("p2p_check", "p2p_pair", "p2g_scale", "g2p_scale"):
        assert set(c[k]) == VARIANTS
        assert all(math.isfinite(v) and v > 0 for v in c[k].values()), k
    for k in ("p2g_scale", "g2p_scale"):  # clamped to [0.5, 4]
        assert all(0.5 <= v <= 4.0 for v in c[k].values()), (k, c[k])
    assert math.isfinite(c["fft_growth"]) and c["fft_growth"] >= 0


def test_calibrate_returns_constants_and_writes_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ELLIPTICA_CACHE_DIR", str(tmp_path))
    c = elliptica.ewald_calibrate("single")
    check_constants(c, "single")
    assert c["source"] == "measured" and c["measure_seconds"] > 0 and c["measured_at"]
    assert c["cpu"] and c["simd_target"] and c["version"] == elliptica.__version__
    cache = tmp_path / "ewald_costs.json"
    assert c["file"] == str(cache)
    js = json.loads(cache.read_text())
    assert js["format"] == "elliptica-ewald-costs"
    assert [e["precision"] for e in js["entries"]] == ["single"]
    assert js["entries"][0]["p2p_pair"] == c["p2p_pair"]


def test_calibrate_without_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ELLIPTICA_CACHE_DIR", str(tmp_path / "c"))
    c = elliptica.ewald_calibrate(elliptica.Precision.double, write_cache=False)
    check_constants(c, "double")
    assert c["file"] is None
    assert not (tmp_path / "c").exists()


def test_cost_constants_in_use():
    # the test harness runs with ELLIPTICA_EWALD_COSTS=builtin (conftest.py) unless overridden
    c = elliptica.ewald_cost_constants("double")
    check_constants(c, "double")
    assert c["source"] in {"builtin", "cache", "measured", "file"}


def test_bad_precision():
    with pytest.raises(elliptica.InvalidArgumentError):
        elliptica.ewald_calibrate("quad")
    with pytest.raises(elliptica.InvalidArgumentError):
        elliptica.ewald_cost_constants(3)
