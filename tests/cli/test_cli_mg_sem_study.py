"""`elliptica mg sem-study` (issue 14, seed 003 section 6): the --quick study's CSV, report,
progress and plots; --no-plots; bad flags; unwritable output folders."""
import csv
import os
import re

import pytest
from mg_cli import run  # noqa: E402

USAGE, INVALID, IOERR = 1, 2, 3
COLUMNS = ["eps", "kind", "base", "schedule", "cheb_order", "cycle", "pre", "post", "krylov", "iterations", "converged",
           "final_rel_residual", "setup_s", "cycle_setup_s", "solve_s", "time_per_iteration_s", "unknowns",
           "elements_per_axis", "order", "failure"]


@pytest.fixture(scope="module")
def quick(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("sem_study")
    r = run(cli, "mg", "sem-study", "--quick", "--threads", "2", "--out", out, timeout=300)
    return r, out


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_quick_csv(quick):
    r, out = quick
    assert r.returncode == 0, r.stderr
    rows = read_csv(out / "sem_study.csv")
    assert list(rows[0].keys()) == COLUMNS
    # --quick: eps 1, 0.05 x bases jacobi, asm, ras x kinds cheb1, opt4 x k = 1, 2 x 2 cycles
    assert len(rows) == 2 * 3 * 2 * 2 * 2
    assert {float(x["eps"]) for x in rows} == {1.0, 0.05}
    assert {x["base"] for x in rows} == {"jacobi", "asm", "ras"}
    assert {x["kind"] for x in rows} == {"cheb1", "opt4"}
    assert {x["cycle"] for x in rows} == {"symmetric", "one-sided"}
    for x in rows:
        k, pre, post = int(x["cheb_order"]), int(x["pre"]), int(x["post"])
        assert (pre, post) == ((k, k) if x["cycle"] == "symmetric" else (2 * k, 0))
        assert x["krylov"] == ("pcg" if x["cycle"] == "symmetric" and x["base"] != "ras" else "fgmres")
        assert x["schedule"] == "4,2,1"  # order 4: (4,2,1) for Jacobi (p, p-2, 1) and Schwarz (p, p/2, 1)
        assert x["unknowns"] == str(11 ** 3) and x["elements_per_axis"] == "3" and x["order"] == "4"
        assert x["failure"] == ""
        it, t = int(x["iterations"]), float(x["solve_s"])
        # Every run converges within the cap of 200 but plain ASM at eps = 0.05 with k = 1 (this
        # n = 3 mesh is not a Kershaw mesh of whole layers: its elements are the most distorted;
        # 173-200 iterations since the FDM lengths became the harmonic means over the GLL lines,
        # issue 33): recorded as not converged at the cap, not as a failure.
        if x["converged"] == "1":
            assert float(x["final_rel_residual"]) <= 1e-8
            assert 0 < it < 200
        else:
            assert x["base"] == "asm" and float(x["eps"]) == 0.05 and k == 1, x
            assert it == 200
        assert float(x["time_per_iteration_s"]) == pytest.approx(t / it, rel=1e-4)
        assert float(x["setup_s"]) >= float(x["cycle_setup_s"]) > 0


def test_quick_report_and_progress(quick):
    r, out = quick
    assert r.returncode == 0, r.stderr
    s = r.stdout
    assert "best solver per eps" in s
    for eps in ("1", "0.05"):
        assert re.search(rf"^  eps = {re.escape(eps)}$", s, re.M), s
    fastest = re.findall(r"^\s+fastest\s+(cheb1|opt4) (jacobi|asm|ras)\((\d+)\) (V|one-sided)\s+(pcg|fgmres)\s+(\d+) it"
                         r"\s+solve\s+([0-9.]+) s", s, re.M)
    assert len(fastest) == 2, s
    # the default (cheb1 asm(2) V) is in the quick study: its row and the comparison with it
    assert len(re.findall(r"^\s+default \(nekRS\)\s+cheb1 asm\(2\) V\s+pcg", s, re.M)) == 2, s
    for tag in ("[1]", "[2]", "[3]", "[4]"):
        lines = [ln for ln in s.splitlines() if ln.strip().startswith(tag)]
        assert len(lines) == 2, (tag, s)
        for ln in lines:
            assert ("HOLDS" in ln) or ("DIFFERS" in ln), ln
    assert (out / "sem_study_report.txt").read_text() in s
    # progress: one line per case and per run, with runs done / total
    assert "case eps = 0.05, base ras, schedule (4,2,1)" in r.stderr
    assert len(re.findall(r"^\[\d+/48\]", r.stderr, re.M)) == 48
    assert "[48/48]" in r.stderr


def test_quick_pngs(quick):
    r, out = quick
    assert r.returncode == 0, r.stderr
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) == 2 * 3 + 1, pngs  # one per (eps, base) + sem_best.png
    assert "sem_best.png" in pngs and "sem_eps0.05_ras.png" in pngs
    for p in out.glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob("*.tmp*"))


def test_no_plots_and_selection(cli, tmp_path):
    out = tmp_path / "s" / "nested"
    r = run(cli, "mg", "sem-study", "--n", "2", "--order", "3", "--eps", "0.3", "--kinds", "cheb1opt", "--bases",
            "asm-weighted", "--cheb-orders", "3", "--cycles", "one-sided", "--coarse-solver", "direct", "--no-plots",
            "--out", out)
    assert r.returncode == 0, r.stderr
    rows = read_csv(out / "sem_study.csv")
    assert len(rows) == 1
    x = rows[0]
    assert (x["eps"], x["kind"], x["base"], x["schedule"], x["pre"], x["post"], x["krylov"]) == (
        "0.3", "cheb1opt", "asm-weighted", "3,1", "6", "0", "fgmres")
    assert not list(out.glob("*.png"))
    assert "plots written" not in r.stdout
    # the default is not in this study: said so
    assert "default (nekRS)" in r.stdout and "not in the study" in r.stdout


@pytest.mark.parametrize("flags,what", [
    (["--n", "1"], "--n"),
    (["--n", "x"], "--n"),
    (["--eps", "0"], "--eps"),
    (["--eps", "1,abc"], "--eps"),
    (["--eps", "1,,0.3"], "--eps"),
    (["--order", "11"], "--order"),
    (["--kinds", "cheb7"], "--kinds"),
    (["--bases", "sor"], "--bases"),
    (["--cheb-orders", "0"], "--cheb-orders"),
    (["--cheb-orders", "2.5"], "--cheb-orders"),
    (["--cycles", "w"], "--cycles"),
    (["--rtol", "2"], "--rtol"),
    (["--max-iter", "0"], "--max-iter"),
    (["--repeats", "0"], "--repeats"),
    (["--threads", "-1"], "--threads"),
    (["--coarse-solver", "lu"], "--coarse-solver"),
])
def test_bad_flags(cli, tmp_path, flags, what):
    out = tmp_path / "s"
    r = run(cli, "mg", "sem-study", "--quick", "--no-plots", "--out", out, *flags)
    # CLI11 refuses a non-integer for an int option (usage, 1); values out of range: invalid input, 2
    if flags[1] in ("x",):
        assert r.returncode == USAGE, r.stderr
    else:
        assert r.returncode == INVALID, (flags, r.returncode, r.stderr)
        assert what in r.stderr, r.stderr
    assert not out.exists()  # refused before anything is written


def test_unknown_flag_is_usage(cli, tmp_path):
    r = run(cli, "mg", "sem-study", "--quick", "--bogus", "--out", tmp_path / "s")
    assert r.returncode == USAGE


def test_unwritable_out(cli, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = run(cli, "mg", "sem-study", "--quick", "--no-plots", "--out", f)
    assert r.returncode == IOERR and "not a folder" in r.stderr, r.stderr
    r = run(cli, "mg", "sem-study", "--quick", "--no-plots", "--out", f / "sub")
    assert r.returncode == IOERR and "cannot create" in r.stderr, r.stderr
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            r = run(cli, "mg", "sem-study", "--quick", "--no-plots", "--out", ro)
            assert r.returncode == IOERR, r.stderr
            assert "[1/" not in r.stderr  # failed before the runs
            assert not list(ro.iterdir())
        finally:
            ro.chmod(0o755)
