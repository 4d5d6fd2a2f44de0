"""Tests of the `elliptica` command-line tool.

The binary is taken from the environment variable ELLIPTICA_CLI, else from PATH
(shutil.which("elliptica")); if neither gives one, every test fails with a message.
`ctest` sets ELLIPTICA_CLI to the freshly built binary.

Values are checked by the library's own tests; here we check the plumbing: shapes, formats,
headers, consistency between .npy and .csv, symmetry, and that bad input gives a non-zero exit
code, a message naming the problem, and no output file (an existing one stays unchanged).
"""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

SPC216 = Path(__file__).resolve().parents[2] / "examples" / "water" / "spc216.gro"

# Exit codes (include/elliptica/core/error.hpp): 1 usage (CLI11), 2 invalid input, 3 file error,
# 4 numerical failure.
USAGE, INVALID, IOERR, NUMERICAL = 1, 2, 3, 4


def run(cli, *args, timeout=300):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def random_system(n, seed=0, box=(1.0, 1.2, 0.9), ncomp=1, neutral=True):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * np.asarray(box)
    q = rng.standard_normal((n, ncomp)) if ncomp > 1 else rng.standard_normal(n)
    if neutral:
        q -= q.mean(axis=0)
    return x, q


def box_arg(box):
    return ",".join(repr(float(b)) for b in box)


def files_in(folder):
    return sorted(p.name for p in Path(folder).iterdir())


# --------------------------------------------------------------------------------------------
# Successful runs
# --------------------------------------------------------------------------------------------

def test_version(cli):
    r = run(cli, "--version")
    assert r.returncode == 0, r.stderr
    assert "elliptica" in r.stdout


def test_help_mentions_units(cli):
    r = run(cli, "ewald", "--help")
    assert r.returncode == 0
    assert "Units" in r.stdout and "--gro" in r.stdout and "--abs-tol" in r.stdout


def test_laplace_npy_and_csv_agree(cli, tmp_path):
    box = (1.0, 1.2, 0.9)
    x, q = random_system(40, seed=1, box=box)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q)
    np.savetxt(tmp_path / "x.csv", x, delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "q.txt", q, fmt="%.17g")
    out = tmp_path / "out"
    out.mkdir()
    common = ["ewald", "--kernel", "laplace", "--box", box_arg(box), "--tol", "1e-8"]

    r = run(cli, *common, "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy",
            "--out", out / "phi.npy")
    assert r.returncode == 0, r.stderr
    for stage in ("P2P", "P2G", "FFT", "CNV", "IFFT", "G2P"):
        assert stage in r.stdout
    assert "estimated RMS error" in r.stdout
    phi_npy = np.load(out / "phi.npy")
    assert phi_npy.shape == (40,) and phi_npy.dtype == np.float64
    assert np.all(np.isfinite(phi_npy))

    r = run(cli, *common, "--sources", tmp_path / "x.csv", "--strengths", tmp_path / "q.txt",
            "--out", out / "phi.csv", "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    text = (out / "phi.csv").read_text()
    assert text.splitlines()[0] == "# phi"
    phi_csv = np.loadtxt(out / "phi.csv", delimiter=",")
    assert phi_csv.shape == (40,)

    rms = np.sqrt(np.mean(phi_npy ** 2))
    assert np.max(np.abs(phi_npy - phi_csv)) <= 1e-12 * rms
    assert files_in(out) == ["phi.csv", "phi.npy"]  # no temporary files left


def test_laplace_field_and_targets(cli, tmp_path):
    box = (1.0, 1.0, 1.0)
    x, q = random_system(30, seed=2, box=box)
    t = np.random.default_rng(3).random((7, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q.reshape(-1, 1))  # (N,1) is accepted too
    np.save(tmp_path / "t.npy", t)
    r = run(cli, "ewald", "--kernel", "laplace", "--box", "1", "--tol", "1e-6", "--field",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy",
            "--targets", tmp_path / "t.npy", "--out", tmp_path / "f.csv")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "f.csv").read_text().splitlines()[0] == "# phi,Ex,Ey,Ez"
    f = np.loadtxt(tmp_path / "f.csv", delimiter=",")
    assert f.shape == (7, 4)
    r = run(cli, "ewald", "--box", "1", "--tol", "1e-6",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy",
            "--targets", tmp_path / "t.npy", "--out", tmp_path / "p.npy", "--quiet")
    assert r.returncode == 0, r.stderr
    p = np.load(tmp_path / "p.npy")
    assert p.shape == (7,)
    # Same potential with and without the field (relative tolerance 1e-6 on each).
    assert np.max(np.abs(p - f[:, 0])) <= 1e-5 * np.sqrt(np.mean(p ** 2))


def test_neutral_pair_opposite_signs(cli, tmp_path):
    x = np.array([[0.3, 0.5, 0.5], [0.7, 0.5, 0.5]])
    q = np.array([1.0, -1.0])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q)
    r = run(cli, "ewald", "--box", "1,1,1", "--tol", "1e-9", "--sources", tmp_path / "x.npy",
            "--strengths", tmp_path / "q.npy", "--out", tmp_path / "phi.npy")
    assert r.returncode == 0, r.stderr
    phi = np.load(tmp_path / "phi.npy")
    assert phi.shape == (2,)
    # The +1 charge sits in the potential of the -1 charge and vice versa; the configuration is
    # mapped onto itself by inversion through the box centre, so phi_0 = -phi_1 exactly.
    assert phi[0] < 0 < phi[1]
    assert abs(phi[0] + phi[1]) <= 1e-7 * abs(phi[0])


def test_stokeslet(cli, tmp_path):
    box = (1.0, 1.0, 2.0)
    x, f = random_system(25, seed=4, box=box, ncomp=3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    args = ["ewald", "--kernel", "stokeslet", "--box", box_arg(box), "--tol", "1e-7",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "f.npy"]
    r = run(cli, *args, "--out", tmp_path / "u.csv")
    assert r.returncode == 0, r.stderr
    assert "viscosity" in r.stdout
    assert (tmp_path / "u.csv").read_text().splitlines()[0] == "# ux,uy,uz"
    u1 = np.loadtxt(tmp_path / "u.csv", delimiter=",")
    assert u1.shape == (25, 3)
    assert np.all(np.isfinite(u1))
    r = run(cli, *args, "--viscosity", "2", "--out", tmp_path / "u2.npy", "--quiet")
    assert r.returncode == 0, r.stderr
    u2 = np.load(tmp_path / "u2.npy")
    assert u2.shape == (25, 3)
    # u is proportional to 1/mu.
    assert np.max(np.abs(2 * u2 - u1)) <= 1e-6 * np.sqrt(np.mean(u1 ** 2))


def test_help_describes_content_detection(cli):
    r = run(cli, "ewald", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "content decides" in text and "magic string" in text
    assert "Fortran" in text and "column names" in text
    assert "[1,30]" in text and "1024" in text


def _phi(cli, tmp_path, sources, strengths, out, *extra):
    r = run(cli, "ewald", "--box", "1,1.2,0.9", "--tol", "1e-8", "--sources", sources,
            "--strengths", strengths, "--out", out, "--quiet", *extra)
    assert r.returncode == 0, r.stderr
    return np.load(out) if str(out).endswith(".npy") else np.loadtxt(out, delimiter=",")


def test_fortran_order_and_text_inputs_agree(cli, tmp_path):
    """np.save of a transposed array (Fortran order), a text file named .npy and a CSV file with
    a header line of column names give the same result as the plain C-ordered .npy input."""
    x, q = random_system(20, seed=11, box=(1.0, 1.2, 0.9))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q)
    ref = _phi(cli, tmp_path, tmp_path / "x.npy", tmp_path / "q.npy", tmp_path / "ref.npy")

    np.save(tmp_path / "xf.npy", np.ascontiguousarray(x.T).T)  # x.T of a C array: Fortran order
    assert b"'fortran_order': True" in (tmp_path / "xf.npy").read_bytes()[:128]
    f = _phi(cli, tmp_path, tmp_path / "xf.npy", tmp_path / "q.npy", tmp_path / "f.npy")
    assert np.array_equal(f, ref)  # the same input values give the same result bit for bit

    np.savetxt(tmp_path / "xt.npy", x, fmt="%.17g")  # text, misleadingly named .npy
    np.savetxt(tmp_path / "xh.csv", x, fmt="%.17g", delimiter=",", header="x,y,z", comments="")
    assert (tmp_path / "xh.csv").read_text().splitlines()[0] == "x,y,z"
    np.savetxt(tmp_path / "qh.txt", q, fmt="%.17g", header="charge", comments="")
    t = _phi(cli, tmp_path, tmp_path / "xt.npy", tmp_path / "q.npy", tmp_path / "t.npy")
    h = _phi(cli, tmp_path, tmp_path / "xh.csv", tmp_path / "qh.txt", tmp_path / "h.csv")
    assert np.array_equal(t, ref)  # 17 significant digits: exact
    assert np.array_equal(h, ref)  # CSV output also has 17 significant digits


@pytest.mark.parametrize("which", ["--sources", "--strengths", "--targets"])
@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink"])
def test_out_equal_to_input_is_refused(cli, tmp_path, which, spelling):
    _good_inputs(tmp_path)
    np.save(tmp_path / "t.npy", np.random.default_rng(8).random((5, 3)))
    files = {"--sources": tmp_path / "x.npy", "--strengths": tmp_path / "q.npy",
             "--targets": tmp_path / "t.npy"}
    victim = files[which]
    before = {k: v.read_bytes() for k, v in files.items()}
    (tmp_path / "sub").mkdir()
    if spelling == "same":
        out = victim
    elif spelling == "dotdot":
        out = tmp_path / "sub" / ".." / victim.name
    else:
        out = tmp_path / "sub" / "link.npy"
        out.symlink_to(victim)
    args = ["ewald", "--box", "1", "--tol", "1e-6"]
    for k, v in files.items():
        args += [k, v]
    r = run(cli, *args, "--out", out)
    assert r.returncode == INVALID, r.stderr
    assert r.stderr.startswith("elliptica: error: ")
    assert str(out) in r.stderr and str(victim) in r.stderr and which in r.stderr, r.stderr
    assert "overwrite" in r.stderr
    assert {k: v.read_bytes() for k, v in files.items()} == before
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == (["link.npy"] if spelling == "symlink" else [])
    assert "P2P" not in r.stdout  # refused before any work


def test_out_equal_to_gro_is_refused(cli, tmp_path):
    gro = tmp_path / "w.gro"
    shutil.copyfile(SPC216, gro)
    before = gro.read_bytes()
    r = run(cli, "ewald", "--gro", gro, "--charges", "OW=-0.82,HW=0.41", "--out", gro)
    assert r.returncode == INVALID, r.stderr
    assert "--gro" in r.stderr and str(gro) in r.stderr
    assert gro.read_bytes() == before
    assert files_in(tmp_path) == ["w.gro"]


def test_non_finite_result_is_a_numerical_error(cli, tmp_path):
    """Charges near the top of the double range give an infinite potential: exit code 4 (the
    library's NumericalError, or the CLI's own check), a message, and no output file."""
    x = np.array([[0.1, 0.1, 0.1], [0.1, 0.1, 0.1001], [0.6, 0.6, 0.6]])
    q = np.array([1.7e308, 1.7e308, -1.7e308])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "q.npy", q)
    (tmp_path / "out").mkdir()
    r = run(cli, "ewald", "--box", "1", "--tol", "1e-6", "--sources", tmp_path / "x.npy",
            "--strengths", tmp_path / "q.npy", "--out", tmp_path / "out" / "phi.npy")
    assert r.returncode == NUMERICAL, (r.returncode, r.stderr)
    assert r.stderr.startswith("elliptica: error: ")
    assert "finite" in r.stderr.lower()
    assert files_in(tmp_path / "out") == []


def test_gro_spc216(cli, tmp_path):
    assert SPC216.exists(), f"{SPC216} is missing from the repository"
    r = run(cli, "ewald", "--gro", SPC216, "--charges", "OW=-0.82,HW=0.41", "--tol", "1e-5",
            "--out", tmp_path / "phi.npy")
    assert r.returncode == 0, r.stderr
    assert "1.86206" in r.stdout
    phi = np.load(tmp_path / "phi.npy")
    assert phi.shape == (648,)
    # Oxygens (negative) sit in a positive potential of their own hydrogens, and vice versa.
    assert np.mean(phi[0::3]) > 0 and np.mean(phi[1::3]) < 0
    r = run(cli, "ewald", "--gro", SPC216, "--charges", "OW=-0.82", "--out", tmp_path / "x.npy")
    assert r.returncode == INVALID
    assert "HW1" in r.stderr and "--charges" in r.stderr
    assert not (tmp_path / "x.npy").exists()


# --------------------------------------------------------------------------------------------
# Bad input: non-zero exit, a message naming the problem, no output file
# --------------------------------------------------------------------------------------------

def _good_inputs(d, kernel="laplace"):
    x, q = random_system(12, seed=5, ncomp=3 if kernel == "stokeslet" else 1)
    np.save(d / "x.npy", x)
    np.save(d / "q.npy", q)
    return x, q


def case_nan_coordinate(d):
    x, _ = _good_inputs(d)
    x[3, 1] = np.nan
    np.save(d / "x.npy", x)
    return [], INVALID, ["sources", "nan"]


def case_inf_strength(d):
    _, q = _good_inputs(d)
    q[2] = np.inf
    np.save(d / "q.npy", q)
    return [], INVALID, ["strengths", "inf"]


def case_sources_two_columns(d):
    x, _ = _good_inputs(d)
    np.save(d / "x.npy", x[:, :2])
    return [], INVALID, ["sources", "(N,3)"]


def case_strengths_length_mismatch(d):
    _, q = _good_inputs(d)
    np.save(d / "q.npy", q[:-1])
    return [], INVALID, ["mismatch", "strengths"]


def case_stokeslet_scalar_strengths(d):
    _good_inputs(d)
    return ["--kernel", "stokeslet"], INVALID, ["strengths", "(N,3)"]


def case_targets_two_columns(d):
    _good_inputs(d)
    np.save(d / "t.npy", np.zeros((4, 2)))
    return ["--targets", d / "t.npy"], INVALID, ["targets", "(N,3)"]


def case_box_zero(d):
    _good_inputs(d)
    return ["--box", "1,0,1"], INVALID, ["box", "positive"]


def case_box_negative(d):
    _good_inputs(d)
    return ["--box=-1,1,1"], INVALID, ["box", "positive"]


def case_box_two_values(d):
    _good_inputs(d)
    return ["--box", "1,1"], INVALID, ["box"]


def case_tol_zero(d):
    _good_inputs(d)
    return ["--tol", "0"], INVALID, ["tol"]


def case_tol_one(d):
    _good_inputs(d)
    return ["--tol", "1"], INVALID, ["tol"]


def case_tol_two(d):
    _good_inputs(d)
    return ["--tol", "2"], INVALID, ["tol"]


def case_negative_viscosity(d):
    _good_inputs(d, "stokeslet")
    return ["--kernel", "stokeslet", "--viscosity=-1"], INVALID, ["viscosity"]


def case_empty_sources_text(d):
    _good_inputs(d)
    (d / "x.txt").write_text("")
    return ["--sources", d / "x.txt"], INVALID, ["sources", "no points"]


def case_empty_sources_npy(d):
    _good_inputs(d)
    np.save(d / "x.npy", np.zeros((0, 3)))
    return [], INVALID, ["sources", "no points"]


def case_zero_byte_npy(d):
    # No magic string, so read as (empty) text whatever the name: no points.
    _good_inputs(d)
    (d / "x.npy").write_bytes(b"")
    return [], INVALID, ["x.npy", "no points"]


def case_missing_file(d):
    _good_inputs(d)
    return ["--sources", d / "nonexistent.npy"], IOERR, ["nonexistent.npy", "no such file"]


def case_unreadable_directory(d):
    _good_inputs(d)
    (d / "adir.npy").mkdir()
    return ["--strengths", d / "adir.npy"], IOERR, ["adir.npy", "directory"]


def case_truncated_npy(d):
    _good_inputs(d)
    data = (d / "x.npy").read_bytes()
    (d / "x.npy").write_bytes(data[:-20])
    return [], IOERR, ["x.npy", "truncated"]


def case_garbage_npy(d):
    _good_inputs(d)
    (d / "x.npy").write_bytes(b"1 2 3\n4 5 6\nthis is not numpy\n")
    return [], IOERR, ["x.npy:3", "ragged", "does not start with the .npy magic string"]


def case_binary_junk_npy(d):
    _good_inputs(d)
    (d / "x.npy").write_bytes(b"\x93NUMPZ\x01\x00\x76\x00junk\x00\x01")
    return [], IOERR, ["x.npy:1", "non-numeric", "magic string"]


def case_second_header_line(d):
    _good_inputs(d)
    (d / "x.csv").write_text("x,y,z\nu,v,w\n0.1,0.2,0.3\n")
    return ["--sources", d / "x.csv"], IOERR, ["x.csv:2", "'u'"]


def case_value_overflow(d):
    _good_inputs(d)
    (d / "x.csv").write_text("x,y,z\n0.1,0.2,0.3\n0.4,1e400,0.6\n")
    return ["--sources", d / "x.csv"], IOERR, ["x.csv:3", "1e400", "out of the double range"]


def case_threads_too_many(d):
    _good_inputs(d)
    return ["--threads", "100000"], INVALID, ["--threads", "1024"]


def case_threads_negative(d):
    _good_inputs(d)
    return ["--threads=-1"], INVALID, ["--threads", "1024"]


def case_degree_negative(d):
    _good_inputs(d)
    return ["--degree=-1"], INVALID, ["--degree", "[1,30]"]


def case_degree_zero(d):
    _good_inputs(d)
    return ["--degree", "0"], INVALID, ["--degree", "[1,30]"]


def case_degree_too_large(d):
    _good_inputs(d)
    return ["--degree", "31"], INVALID, ["--degree", "[1,30]"]


def case_tol_tiny_negative(d):
    # %g formatting: the message shows the value, not "-0.000000".
    _good_inputs(d)
    return ["--tol=-1e-09"], INVALID, ["tol", "-1e-09"]


def case_ragged_text(d):
    _good_inputs(d)
    (d / "x.txt").write_text("0.1 0.2 0.3\n0.4 0.5\n")
    return ["--sources", d / "x.txt"], IOERR, ["x.txt:2", "ragged"]


def case_non_numeric_text(d):
    _good_inputs(d)
    (d / "q.csv").write_text("1.0\n-1.0\nabc\n")
    return ["--strengths", d / "q.csv"], IOERR, ["q.csv:3", "abc"]


def case_output_folder_missing(d):
    _good_inputs(d)
    return ["--out", d / "no" / "such" / "folder.npy"], IOERR, ["does not exist"]


def case_unknown_kernel(d):
    _good_inputs(d)
    return ["--kernel", "coulomb"], USAGE, ["kernel"]


def case_field_with_stokeslet(d):
    _good_inputs(d, "stokeslet")
    return ["--kernel", "stokeslet", "--field"], INVALID, ["field"]


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


@pytest.mark.parametrize("preexisting", [False, True], ids=["no-old-output", "old-output-kept"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(cli, tmp_path, case, preexisting):
    extra, code, keywords = CASES[case](tmp_path)
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    out = outdir / "result.npy"
    if preexisting:
        out.write_bytes(b"precious old result")
    args = ["ewald", "--kernel", "laplace", "--box", "1,1,1", "--tol", "1e-6",
            "--sources", tmp_path / "x.npy", "--strengths", tmp_path / "q.npy", "--out", out]
    merged = _merge(args, extra)
    r = run(cli, *merged)
    assert r.returncode != 0, f"expected failure, got 0; stdout:\n{r.stdout}"
    assert r.returncode == code, f"exit code {r.returncode}, expected {code}; stderr:\n{r.stderr}"
    err = r.stderr.lower()
    for k in keywords:
        assert k.lower() in err, f"{k!r} not in stderr:\n{r.stderr}"
    if code != USAGE:
        assert r.stderr.startswith("elliptica: error: "), r.stderr
    if preexisting:
        assert out.read_bytes() == b"precious old result"
        assert files_in(outdir) == ["result.npy"]
    else:
        assert files_in(outdir) == []


def _merge(base, extra):
    """Replaces options of `base` that `extra` sets (so each option is given once)."""
    extra = [str(e) for e in extra]
    keys = {e.split("=")[0] for e in extra if e.startswith("--")}
    out, skip = [], False
    for i, a in enumerate(base):
        if skip:
            skip = False
            continue
        if isinstance(a, str) and a.startswith("--") and a in keys:
            skip = i + 1 < len(base) and not str(base[i + 1]).startswith("--")
            continue
        out.append(a)
    return out + extra
