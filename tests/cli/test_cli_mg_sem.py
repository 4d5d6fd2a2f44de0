"""`elliptica mg sem` (issue 14): the spectral-element Poisson problem with p-multigrid-preconditioned
Krylov solves on box, Kershaw and Gmsh meshes; the output set (solution.npy, nodes.npy, solution.vtu
parsed back here, summary.json); the error against u = sin(pi x) sin(pi y) sin(pi z) falling
spectrally with p; every refusal with its exit code and message, and nothing written on failure.
"""
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mg_cli import run, field

INVALID, FILE_ERROR, NOTCONV = 2, 3, 5


def sem(cli, out, *args):
    return run(cli, "mg", "sem", "--out", out, "-q", *args)


def read_vtu(path):
    """(points (n, 3), connectivity (c, 8), types (c,), u (n,)) of a VTU file with one appended raw
    section and UInt64 headers (the format write_sem_vtu documents), parsed without VTK."""
    data = path.read_bytes()
    marker = b'<AppendedData encoding="raw">'
    at = data.index(marker)
    raw = data[data.index(b"_", at + len(marker)) + 1:]
    root = ET.fromstring(data[:at].decode() + "</VTKFile>")
    assert root.get("type") == "UnstructuredGrid" and root.get("header_type") == "UInt64"
    piece = root.find("UnstructuredGrid/Piece")
    arrays = {a.get("Name"): a for a in root.iter("DataArray")}
    dtypes = {"Float64": "<f8", "Int64": "<i8", "UInt8": "u1"}

    def get(name):
        a = arrays[name]
        off = int(a.get("offset"))
        nbytes = int(np.frombuffer(raw[off:off + 8], "<u8")[0])
        return np.frombuffer(raw[off + 8:off + 8 + nbytes], dtypes[a.get("type")])

    n, c = int(piece.get("NumberOfPoints")), int(piece.get("NumberOfCells"))
    pts, conn, offs, types, u = get("Points"), get("connectivity"), get("offsets"), get("types"), get("u")
    assert pts.size == 3 * n and u.size == n and types.size == c and conn.size == 8 * c
    assert np.array_equal(offs, 8 * np.arange(1, c + 1))
    return pts.reshape(n, 3), conn.reshape(c, 8), types, u


def write_box_msh(path, n=2, inverted=False, tets=False):
    """A Gmsh 2.2 file of the unit cube split into n^3 hexahedra (Gmsh corner order), or into
    tetrahedra (tets=True: 5 per cube) ; inverted=True swaps the top and bottom faces of the first
    hexahedron (negative Jacobian)."""
    h = 1.0 / n
    tag = lambda i, j, k: 1 + i + (n + 1) * (j + (n + 1) * k)  # noqa: E731
    lines = ["$MeshFormat", "2.2 0 8", "$EndMeshFormat", "$Nodes", str((n + 1) ** 3)]
    for k in range(n + 1):
        for j in range(n + 1):
            for i in range(n + 1):
                lines.append(f"{tag(i, j, k)} {i * h} {j * h} {k * h}")
    lines.append("$EndNodes")
    elems = []
    for k in range(n):
        for j in range(n):
            for i in range(n):
                c = [tag(i, j, k), tag(i + 1, j, k), tag(i + 1, j + 1, k), tag(i, j + 1, k),
                     tag(i, j, k + 1), tag(i + 1, j, k + 1), tag(i + 1, j + 1, k + 1), tag(i, j + 1, k + 1)]
                if tets:
                    for t in ((0, 1, 3, 4), (1, 2, 3, 6), (1, 4, 5, 6), (3, 4, 6, 7), (1, 3, 4, 6)):
                        elems.append((4, [c[q] for q in t]))
                else:
                    if inverted and not elems:
                        c = c[4:] + c[:4]
                    elems.append((5, c))
    lines += ["$Elements", str(len(elems))]
    lines += [f"{e + 1} {t} 2 1 1 " + " ".join(map(str, c)) for e, (t, c) in enumerate(elems)]
    lines.append("$EndElements")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def box_run(cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("sem") / "box"
    r = sem(cli, out, "--mesh", "box:3,3,3", "--order", 4, "--coarse-solver", "direct", "--manufactured")
    assert r.returncode == 0, r.stderr
    return r, out


def test_box_converges_and_writes_the_set(box_run):
    r, out = box_run
    assert field(r.stdout, "converged") == "yes"
    its = int(field(r.stdout, "iterations"))
    assert 1 <= its <= 20
    s = json.loads((out / "summary.json").read_text())
    assert s["mesh"] == "box:3,3,3" and s["elements"] == 27 and s["order"] == 4
    assert s["schedule"] == [4, 2, 1] and s["smoother"] == "opt4" and s["base"] == "asm-weighted"
    assert s["schwarz_precision"] == "fp32"
    assert s["krylov"] == "pcg" and s["coarse_solver"] == "direct" and s["converged"] is True
    assert s["iterations"] == its and len(s["residual_history"]) == its + 1 and s["residual_history"][0] == 1
    assert s["final_relative_residual"] <= 1e-8
    assert s["unknowns"] == 11 ** 3 and s["nodes"] == 13 ** 3  # (3 p - 1)^3 free of (3 p + 1)^3
    assert s["level_sizes"] == [11 ** 3, 5 ** 3, 2 ** 3]
    assert s["setup_seconds"] > 0 and s["solve_seconds"] > 0
    assert "version" in s and "git" in s
    u = np.load(out / "solution.npy")
    X = np.load(out / "nodes.npy")
    assert u.shape == (s["nodes"],) and X.shape == (s["nodes"], 3)
    assert np.all(u[s["unknowns"]:] == 0)  # Dirichlet nodes last
    bd = (np.min(X, axis=1) < 1e-14) | (np.max(X, axis=1) > 1 - 1e-14)
    assert np.array_equal(np.flatnonzero(bd), np.arange(s["unknowns"], s["nodes"]))
    pts, conn, types, uv = read_vtu(out / "solution.vtu")
    assert np.array_equal(uv, u) and np.array_equal(pts, X)
    assert conn.shape == (27 * 4 ** 3, 8) and np.all(types == 12)
    # error against sin sin sin, recomputed here from the nodes (max norm)
    exact = np.sin(np.pi * X[:, 0]) * np.sin(np.pi * X[:, 1]) * np.sin(np.pi * X[:, 2])
    assert s["error_max"] == pytest.approx(np.max(np.abs(u - exact)), rel=1e-9)
    assert s["error_max"] < 1e-3 and s["error_l2"] < s["error_max"]
    assert "error max:" in r.stdout


def test_kershaw_converges(cli, tmp_path):
    out = tmp_path / "k"
    r = sem(cli, out, "--mesh", "kershaw:6,0.3", "--order", 3, "--coarse-solver", "direct", "--manufactured",
            "--krylov", "fgmres", "--base", "ras", "--schedule", "3,1", "--order-per-level", 2)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["converged"] and s["iterations"] <= 60 and s["base"] == "ras" and s["krylov"] == "fgmres"
    assert s["level_pre"] == [2] and s["level_post"] == [2]
    assert s["elements"] == 216 and s["error_l2"] < 1e-2


def test_chebyshev_order_tuning(cli, tmp_path):
    # kershaw:3,0.05 at order 3: the set-up raises the Chebyshev order from 2 (53 PCG iterations)
    # until the order-3 problem from a random b takes at most 30; --tune-iterations 0 keeps 2
    runs = {}
    for t in (30, 0):
        out = tmp_path / f"t{t}"
        r = sem(cli, out, "--mesh", "kershaw:3,0.05", "--order", 3, "--coarse-solver", "direct",
                "--tune-iterations", t, "--threads", 1)
        assert r.returncode == 0, r.stderr
        runs[t] = (r, json.loads((out / "summary.json").read_text()))
    r, s = runs[30]
    assert s["tune_iterations"] == 30 and s["requested_pre"] == 2 and s["requested_post"] == 2
    t = s["tuning"]
    assert len(t) >= 2 and t[0]["order"] == 2 and t[0]["iterations"] > 30
    assert t[-1]["converged"] and t[-1]["iterations"] <= 30
    assert s["pre"] == s["post"] == t[-1]["order"] > 2 and s["level_pre"] == [s["pre"]]
    assert "chebyshev order tuning" in r.stdout and f"chose order {s['pre']}" in r.stdout
    r0, s0 = runs[0]
    assert s0["tuning"] == [] and s0["pre"] == 2 and "chebyshev order tuning" not in r0.stdout
    assert 3 * s["iterations"] < 2 * s0["iterations"]  # 24 against 53 here


def test_element_local_solves(cli, tmp_path):
    # --schwarz-element-max-order: exact local solves on the elements' own nodes (issue 33). On
    # kershaw:3,0.05 at order 3, (2,2): the FDM's 53 PCG iterations against 9 (measured)
    runs = {}
    for q in (0, 3):
        out = tmp_path / f"q{q}"
        r = sem(cli, out, "--mesh", "kershaw:3,0.05", "--order", 3, "--coarse-solver", "direct",
                "--tune-iterations", 0, "--threads", 1, "--schwarz-element-max-order", q)
        assert r.returncode == 0, r.stderr
        runs[q] = (r, json.loads((out / "summary.json").read_text()))
    (r0, s0), (r3, s3) = runs[0], runs[3]
    assert s0["schwarz_element_max_order"] == 0 and s3["schwarz_element_max_order"] == 3
    assert "element local solves at orders <= 3" in r3.stdout and "element local solves" not in r0.stdout
    assert 3 * s3["iterations"] <= s0["iterations"], (s0["iterations"], s3["iterations"])


def test_error_falls_spectrally_with_p(cli, tmp_path):
    errs = []
    for p in (2, 3, 4, 5):
        out = tmp_path / f"p{p}"
        r = sem(cli, out, "--mesh", "box:2,2,2", "--order", p, "--coarse-solver", "direct", "--manufactured",
                "--rtol", 1e-12)
        assert r.returncode == 0, r.stderr
        errs.append(json.loads((out / "summary.json").read_text())["error_l2"])
    # h = 1/2: the error falls by a growing factor with each order (spectral convergence)
    ratios = [errs[i] / errs[i + 1] for i in range(3)]
    assert all(q > 3 for q in ratios), errs
    assert errs[-1] < 1e-4, errs


def test_gmsh_file_matches_the_box(cli, tmp_path):
    msh = write_box_msh(tmp_path / "cube.msh", n=2)
    r1 = sem(cli, tmp_path / "g", "--mesh", msh, "--order", 3, "--coarse-solver", "direct", "--manufactured")
    r2 = sem(cli, tmp_path / "b", "--mesh", "box:2,2,2", "--order", 3, "--coarse-solver", "direct", "--manufactured")
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    s1 = json.loads((tmp_path / "g" / "summary.json").read_text())
    s2 = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s1["unknowns"] == s2["unknowns"] and abs(s1["iterations"] - s2["iterations"]) <= 1
    assert s1["error_max"] == pytest.approx(s2["error_max"], rel=1e-6)


def test_boomeramg_coarse_solve(cli, tmp_path):
    out = tmp_path / "amg"
    r = sem(cli, out, "--mesh", "box:4,4,4", "--order", 3, "--coarse-solver", "boomeramg",
            "--boomeramg-coarse-size", 5)
    if r.returncode == INVALID and "built without hypre" in r.stderr:
        pytest.skip("elliptica was built without hypre")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["coarse_solver"] == "boomeramg" and s["boomeramg"]["relax"] == "chebyshev" and s["converged"]


@pytest.mark.parametrize("args,code,needle", [
    (["--mesh", "box:3,3,3", "--order", 7, "--schedule", "7,5,5,1"], INVALID, "must decrease strictly"),
    (["--mesh", "box:3,3,3", "--order", 7, "--schedule", "7,5,3"], INVALID, "must end at order 1"),
    (["--mesh", "box:3,3,3", "--order", 7, "--schedule", "5,3,1"], INVALID, "must start at the discretisation order"),
    (["--mesh", "box:3,3,3", "--order", 7, "--schedule", "7,x,1"], INVALID, "--schedule: 'x' is not an integer"),
    (["--mesh", "box:3,3,3", "--base", "ras"], INVALID, "--base ras (restricted additive Schwarz) is not symmetric"),
    (["--mesh", "box:3,3,3", "--pre", 2, "--post", 0], INVALID, "--krylov pcg needs a symmetric V-cycle: --pre 2"),
    (["--mesh", "box:3,3,3", "--order", 11], INVALID, "--order must be in [2, 10]"),
    (["--mesh", "box:3,3,3", "--smoother", "cheb9"], INVALID, "--smoother: expected"),
    (["--mesh", "box:3,3,3", "--krylov", "cg"], INVALID, "--krylov: expected pcg, fgmres or gmres"),
    (["--mesh", "box:3,3,3", "--base", "ilu"], INVALID, "--base: expected jacobi, asm, asm-weighted or ras"),
    (["--mesh", "box:3,3,3", "--coarse-solver", "lu"], INVALID, "--coarse-solver: expected boomeramg or direct"),
    (["--mesh", "box:3,3,3", "--order", 5, "--order-per-level", "2,2,2"], INVALID, "--order-per-level: give one"),
    (["--mesh", "box:3,3,3", "--rtol", 2], INVALID, "--rtol must satisfy 0 < rtol < 1"),
    (["--mesh", "box:3,3,3", "--tune-iterations", -1], INVALID, "--tune-iterations must be in [0, 1000]"),
    (["--mesh", "box:3,3,3", "--tune-iterations", 1001], INVALID, "--tune-iterations must be in [0, 1000]"),
    (["--mesh", "box:3,3,3", "--schwarz-element-max-order", -1], INVALID,
     "--schwarz-element-max-order must be in [0, 10]"),
    (["--mesh", "box:3,3,3", "--schwarz-element-max-order", 11], INVALID,
     "--schwarz-element-max-order must be in [0, 10]"),
    (["--mesh", "box:3,3,3", "--coarse-solver", "direct", "--boomeramg-pmax", 2], INVALID,
     "--boomeramg-pmax applies only to --coarse-solver boomeramg"),
    (["--mesh", "box:0,3,3"], INVALID, "mesh spec 'box:0,3,3': NX must be in [1, 100000], got 0"),
    (["--mesh", "box:3,3,3x"], INVALID, "NZ '3x' is not an integer"),
    (["--mesh", "kershaw:6,0"], INVALID, "EPS must be in (0, 1]"),
    (["--mesh", "kershaw:6"], INVALID, "expected kershaw:N,EPS"),
    (["--mesh", "box:1,1,1", "--order", 2], INVALID, "no free node"),
    (["--mesh", "box:2,2,2:1.5,1,1", "--order", 2, "--manufactured"], INVALID, "only on a mesh of the unit cube"),
    (["--mesh", "nonexistent.msh"], FILE_ERROR, "nonexistent.msh"),
    (["--mesh", "box:3,3,3", "--order", 3, "--max-iter", 1, "--coarse-solver", "direct"], NOTCONV,
     "did not reach the relative residual"),
])
def test_refusals(cli, tmp_path, args, code, needle):
    out = tmp_path / "never"
    r = sem(cli, out, *args)
    assert r.returncode == code, (r.returncode, r.stderr)
    assert needle in r.stderr, r.stderr
    assert not out.exists()  # nothing written, not even the folder


def test_refusals_keep_an_existing_folder_untouched(cli, tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "summary.json").write_text("old")
    r = sem(cli, out, "--mesh", "box:3,3,3", "--order", 3, "--max-iter", 1, "--coarse-solver", "direct")
    assert r.returncode == NOTCONV
    assert (out / "summary.json").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # no temporaries left


def test_tet_mesh_refused(cli, tmp_path):
    msh = write_box_msh(tmp_path / "tets.msh", n=2, tets=True)
    r = sem(cli, tmp_path / "never", "--mesh", msh, "--order", 2)
    assert r.returncode == INVALID, r.stderr
    assert "not a hexahedral mesh" in r.stderr and "tets.msh" in r.stderr
    assert not (tmp_path / "never").exists()


def test_inverted_element_refused(cli, tmp_path):
    msh = write_box_msh(tmp_path / "inv.msh", n=2, inverted=True)
    r = sem(cli, tmp_path / "never", "--mesh", msh, "--order", 2)
    assert r.returncode == INVALID, r.stderr
    assert "inverted" in r.stderr and re.search(r"element 0\b", r.stderr), r.stderr
    assert not (tmp_path / "never").exists()


def test_malformed_mesh_file(cli, tmp_path):
    bad = tmp_path / "bad.msh"
    bad.write_text("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0\n")
    r = sem(cli, tmp_path / "never", "--mesh", bad)
    assert r.returncode == FILE_ERROR, r.stderr
    assert "bad.msh" in r.stderr


def test_help_lists_the_flags(cli):
    r = run(cli, "mg", "sem", "--help")
    assert r.returncode == 0
    for flag in ("--mesh", "--order", "--schedule", "--smoother", "--base", "--order-per-level", "--pre", "--post",
                 "--krylov", "--rtol", "--max-iter", "--coarse-solver", "--threads", "--out", "--manufactured",
                 "--tune-iterations", "--schwarz-element-max-order"):
        assert flag in r.stdout, flag


def test_vtu_reads_with_meshio(box_run):
    meshio = pytest.importorskip("meshio")
    _, out = box_run
    m = meshio.read(out / "solution.vtu")
    assert [c.type for c in m.cells] == ["hexahedron"] and m.cells[0].data.shape == (27 * 4 ** 3, 8)
    assert np.array_equal(m.points, np.load(out / "nodes.npy"))
    assert np.array_equal(np.ravel(m.point_data["u"]), np.load(out / "solution.npy"))


@pytest.mark.parametrize("krylov", ["gmres", "fgmres"])
def test_threads_give_the_same_solve(cli, tmp_path, krylov):
    runs = []
    for t in (1, 2):
        out = tmp_path / f"t{t}"
        r = sem(cli, out, "--mesh", "kershaw:3,0.5", "--order", 3, "--coarse-solver", "direct", "--krylov", krylov,
                "--post", 0, "--pre", 2, "--threads", t)
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        assert s["threads"] == t and s["threads_used"] == t and s["krylov"] == krylov and s["level_post"] == [0]
        runs.append((s["iterations"], np.load(out / "solution.npy")))
    assert runs[0][0] == runs[1][0]
    assert np.allclose(runs[0][1], runs[1][1], rtol=0, atol=1e-12 * np.abs(runs[0][1]).max())
