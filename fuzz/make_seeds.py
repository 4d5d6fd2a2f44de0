#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ (docs/fuzzing.md).

Small valid and near-valid inputs: the bundled test meshes (tests/data/bem), a few atoms of the
bundled water box (examples/water/spc216.gro), and hand-made .npy, text, Matrix Market, Gmsh
binary, STL binary, mesh-validation and Ewald-problem inputs written here (standard library only,
so that it runs anywhere). Deterministic: running it again rewrites the same files. Files named
crash-* / regress-* (reproducers of fixed findings) are left alone.

Usage: python3 fuzz/make_seeds.py
"""
import math
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def put(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# --------------------------------------------------------------------------------------------
# array: .npy and text tables
# --------------------------------------------------------------------------------------------

def npy(descr, shape, values, fortran=False, version=(1, 0), fmt=None):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", "".join(f"{s}," for s in shape) if len(shape) == 1
        else ", ".join(str(s) for s in shape))
    hlen_size = 2 if version[0] == 1 else 4
    pre = 6 + 2 + hlen_size
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    out = b"\x93NUMPY" + bytes(version)
    out += struct.pack("<H" if hlen_size == 2 else "<I", len(header)) + header.encode("latin1")
    out += struct.pack("<" + (fmt or descr[-2:].replace("f8", "d").replace("f4", "f").replace("i4", "i")
                              .replace("i8", "q")) * len(values), *values)
    return out


def array_seeds():
    put("array", "c_f8_3x3.npy", npy("<f8", (3, 3), [0.5, 1.0, -2.0, 3.25, 1e-300, 4.0, -0.0, 7.0, 1e300]))
    put("array", "f_f4_2x3.npy", npy("<f4", (2, 3), [1, 2, 3, 4, 5, 6], fortran=True))
    put("array", "i4_1d.npy", npy("<i4", (4,), [1, -2, 3, 2147483647]))
    put("array", "i8_2x1.npy", npy("<i8", (2, 1), [-(2 ** 62), 5]))
    put("array", "v2_f8.npy", npy("<f8", (1, 3), [1.0, 2.0, 3.0], version=(2, 0)))
    put("array", "v3_f8.npy", npy("<f8", (2,), [1.0, 2.0], version=(3, 0)))
    put("array", "be_f8.npy", npy(">f8", (1,), [1.0], fmt="d"))           # big-endian: refused
    put("array", "truncated.npy", npy("<f8", (2, 2), [1.0, 2.0, 3.0, 4.0])[:-5])
    put("array", "table.txt", "# positions\nx y z\n0.1 0.2 0.3\n1e-3 -4.5 6E2\n")
    put("array", "table.csv", "1,2,3\n4,5,6\n7,8,9\n")
    put("array", "column.txt", "1.5\n-2.5\n# comment\n3.5\n")
    put("array", "ragged.txt", "1 2 3\n4 5\n")
    put("array", "minus.txt", "\u22121.5 2 3\n".encode("utf-8"))


# --------------------------------------------------------------------------------------------
# gro
# --------------------------------------------------------------------------------------------

def gro_seeds():
    lines = (ROOT / "examples" / "water" / "spc216.gro").read_text().splitlines()
    atoms = lines[2:8]
    put("gro", "water2.gro", "\n".join([lines[0], "    6", *atoms, lines[-1]]) + "\n")
    put("gro", "triclinic.gro", "\n".join(["tri", "    3", *atoms[:3],
                                           "   1.0 1.0 1.0 0.0 0.0 0.1 0.0 0.0 0.0"]) + "\n")
    put("gro", "velocities.gro", "v\n    1\n    1SOL     OW    1   0.230   0.628   0.113  0.1 -0.2  0.3\n"
                                 "   2.0   2.0   2.0\n")
    put("gro", "short.gro", "\n".join([lines[0], "    6", *atoms[:4]]) + "\n")


# --------------------------------------------------------------------------------------------
# mtx
# --------------------------------------------------------------------------------------------

def mtx_seeds():
    put("mtx", "general.mtx", "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 4\n"
                              "1 1 2.0\n2 2 -1e-3\n3 1 4.5\n1 3 1e300\n")
    put("mtx", "symmetric.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 4\n2 1 -1\n3 3 2\n")
    put("mtx", "skew.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n")
    put("mtx", "pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 2\n2 3\n")
    put("mtx", "integer.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n2 2 2\n1 1 7\n2 2 -3\n")
    put("mtx", "array.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n")
    put("mtx", "complex.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n")
    put("mtx", "short.mtx", "%%MatrixMarket matrix coordinate real general\n4 4 3\n1 1 1\n")


# --------------------------------------------------------------------------------------------
# mesh: first byte chooses the format ('m' .msh, 'o' .obj, 's' .stl, 'f' .off)
# --------------------------------------------------------------------------------------------

# octahedron with non-contiguous node tags (as tests/test_bem_mesh.cpp)
OCTA_TAGS = [1000, 7, 101, 3, 55, 42]
OCTA_XYZ = [(0, 0, 1), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1)]
OCTA_TRIS = [(101, 55, 1000), (7, 1000, 55), (101, 1000, 3), (7, 3, 1000),
             (101, 42, 55), (7, 55, 42), (101, 3, 42), (7, 42, 3)]


def msh22_binary(big_endian=False):
    e = ">" if big_endian else "<"
    b = b"$MeshFormat\n2.2 1 8\n" + struct.pack(e + "i", 1) + b"\n$EndMeshFormat\n"
    b += b"$Nodes\n%d\n" % len(OCTA_TAGS)
    for t, x in zip(OCTA_TAGS, OCTA_XYZ):
        b += struct.pack(e + "i3d", t, *x)
    b += b"\n$EndNodes\n$Elements\n%d\n" % (len(OCTA_TRIS) + 1)
    b += struct.pack(e + "3i", 15, 1, 2) + struct.pack(e + "4i", 1, 0, 1, OCTA_TAGS[0])  # a point
    b += struct.pack(e + "3i", 2, len(OCTA_TRIS), 2)
    for i, tri in enumerate(OCTA_TRIS):
        b += struct.pack(e + "6i", i + 2, 1, 1, *tri)
    return b + b"\n$EndElements\n"


def msh41_binary(dsize=8, big_endian=False):
    e = ">" if big_endian else "<"
    z = "Q" if dsize == 8 else "I"
    b = b"$MeshFormat\n4.1 1 %d\n" % dsize + struct.pack(e + "i", 1) + b"\n$EndMeshFormat\n"
    b += b"$Entities\n" + struct.pack(e + 4 * z, 0, 0, 1, 0) + struct.pack(e + "i6d", 1, -1, -1, -1, 1, 1, 1)
    b += struct.pack(e + 2 * z, 0, 0) + b"\n$EndEntities\n"
    b += b"$Nodes\n" + struct.pack(e + 4 * z, 1, len(OCTA_TAGS), 3, 1000)
    b += struct.pack(e + "3i" + z, 2, 1, 0, len(OCTA_TAGS))
    b += struct.pack(e + len(OCTA_TAGS) * z, *OCTA_TAGS)
    for x in OCTA_XYZ:
        b += struct.pack(e + "3d", *x)
    b += b"\n$EndNodes\n$Elements\n" + struct.pack(e + 4 * z, 1, len(OCTA_TRIS), 1, len(OCTA_TRIS))
    b += struct.pack(e + "3i" + z, 2, 1, 2, len(OCTA_TRIS))
    for i, tri in enumerate(OCTA_TRIS):
        b += struct.pack(e + 4 * z, i + 1, *tri)
    return b + b"\n$EndElements\n"


def stl_binary():
    xyz = dict(zip(OCTA_TAGS, OCTA_XYZ))
    b = b"solid but binary".ljust(80, b" ") + struct.pack("<I", len(OCTA_TRIS))
    for tri in OCTA_TRIS:
        b += struct.pack("<3f", 0, 0, 0)
        for t in tri:
            b += struct.pack("<3f", *xyz[t])
        b += struct.pack("<H", 0)
    return b


def mesh_seeds():
    data = ROOT / "tests" / "data" / "bem"
    put("mesh", "v22_ascii.msh", b"m" + (data / "octahedron_v22.msh").read_bytes())
    put("mesh", "v41_ascii.msh", b"m" + (data / "octahedron_v41.msh").read_bytes())
    put("mesh", "v22_binary.msh", b"m" + msh22_binary())
    put("mesh", "v22_binary_be.msh", b"m" + msh22_binary(big_endian=True))
    put("mesh", "v41_binary8.msh", b"m" + msh41_binary(8))
    put("mesh", "v41_binary4_be.msh", b"m" + msh41_binary(4, big_endian=True))
    put("mesh", "cube_quads.obj", b"o" + (data / "cube_quads.obj").read_bytes())
    put("mesh", "ascii.stl", b"s" + (data / "octahedron_ascii.stl").read_bytes())
    put("mesh", "binary.stl", b"s" + stl_binary())
    put("mesh", "octahedron.off", b"f" + off_octahedron())
    put("mesh", "curved_v22.msh", b"m" + msh22_curved_octahedron())


def off_octahedron():
    """The octahedron as plain OFF (0-based faces, a comment, a quad-free face list)."""
    xyz = [(0, 0, 1), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1)]
    tri = [(2, 4, 0), (1, 0, 4), (2, 0, 3), (1, 3, 0), (2, 5, 4), (1, 4, 5), (2, 3, 5), (1, 5, 3)]
    lines = ["OFF", "# octahedron", "6 8 12"] + [f"{x} {y} {z}" for x, y, z in xyz]
    lines += [f"3 {a} {b} {c}" for a, b, c in tri]
    return ("\n".join(lines) + "\n").encode()


def msh22_curved_octahedron():
    """The octahedron with 6-node triangles (type 9), midside nodes on the unit sphere."""
    xyz = [(0, 0, 1), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1)]
    tri = [(2, 4, 0), (1, 0, 4), (2, 0, 3), (1, 3, 0), (2, 5, 4), (1, 4, 5), (2, 3, 5), (1, 5, 3)]
    nodes = list(xyz)
    mid = {}
    els = []
    for t in tri:
        ms = []
        for a, b in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0])):
            key = (min(a, b), max(a, b))
            if key not in mid:
                p = [xyz[a][i] + xyz[b][i] for i in range(3)]
                n = sum(c * c for c in p) ** 0.5
                nodes.append(tuple(c / n for c in p))
                mid[key] = len(nodes) - 1
            ms.append(mid[key])
        els.append(list(t) + ms)
    lines = ["$MeshFormat", "2.2 0 8", "$EndMeshFormat", "$Nodes", str(len(nodes))]
    lines += [f"{i + 1} {x!r} {y!r} {z!r}" for i, (x, y, z) in enumerate(nodes)]
    lines += ["$EndNodes", "$Elements", str(len(els))]
    lines += [f"{e + 1} 9 2 0 1 " + " ".join(str(i + 1) for i in el) for e, el in enumerate(els)]
    lines += ["$EndElements"]
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------------------------
# mesh_validate: see the decoding in fuzz/fuzz_mesh_validate.cpp
# --------------------------------------------------------------------------------------------

def encode_mesh(vertices, triangles, scale_byte=64):
    b = bytes([(len(vertices) - 1) % 64, (len(triangles) - 1) % 128, scale_byte])
    for v in vertices:
        for x in v:
            g = x * 16 + 120
            if g == int(g) and 0 <= g < 0xF0:
                b += bytes([int(g)])
            else:
                b += b"\xf0" + struct.pack("<d", x)
    for t in triangles:
        b += bytes(t)
    return b


def box(lo, hi, off=0):
    v = [tuple(hi[k] if i >> k & 1 else lo[k] for k in range(3)) for i in range(8)]
    t = [(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4),
         (2, 6, 3), (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)]
    return v, [tuple(i + off for i in tri) for tri in t]


def mesh_validate_seeds():
    octa_v = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
    octa_t = [(0, 2, 4), (1, 4, 2), (0, 4, 3), (1, 3, 4), (0, 5, 2), (1, 2, 5), (0, 3, 5), (1, 5, 3)]
    put("mesh_validate", "octahedron", encode_mesh(octa_v, octa_t))
    put("mesh_validate", "octahedron_flipped", encode_mesh(octa_v, [(a, c, b) for a, b, c in octa_t[:3]] + octa_t[3:]))
    pushed = list(octa_v)
    pushed[4] = (1.5, 1.5, -1.25)  # the apex pushed through: self-intersecting
    put("mesh_validate", "octahedron_pushed", encode_mesh(pushed, octa_t))
    v1, t1 = box((0, 0, 0), (1, 1, 1))
    v2, t2 = box((0.25, 0.25, 0.25), (0.75, 0.75, 0.75), 8)
    put("mesh_validate", "nested_boxes", encode_mesh(v1 + v2, t1 + t2))
    v3, t3 = box((1, 0.5, 0.25), (2, 1.5, 1.25), 8)
    put("mesh_validate", "touching_boxes", encode_mesh(v1 + v3, t1 + t3))
    v4, t4 = box((1, 1, 1), (2, 2, 2), 8)
    put("mesh_validate", "corner_boxes", encode_mesh(v1 + v4, t1 + t4))  # one shared vertex
    put("mesh_validate", "open", encode_mesh(octa_v, octa_t[:-1]))
    # icosahedron: irrational coordinates (raw doubles)
    p = (1 + math.sqrt(5)) / 2
    ico = [(0, s1, s2 * p) for s1 in (-1, 1) for s2 in (-1, 1)] + \
          [(s1, s2 * p, 0) for s1 in (-1, 1) for s2 in (-1, 1)] + \
          [(s2 * p, 0, s1) for s1 in (-1, 1) for s2 in (-1, 1)]
    edge = 2.0
    faces = [(i, j, k) for i in range(12) for j in range(i + 1, 12) for k in range(j + 1, 12)
             if all(abs(math.dist(ico[a], ico[b]) - edge) < 1e-9 for a, b in ((i, j), (j, k), (i, k)))]
    put("mesh_validate", "icosahedron", encode_mesh(ico, faces))


# --------------------------------------------------------------------------------------------
# ewald: see the decoding in fuzz/fuzz_ewald.cpp
# --------------------------------------------------------------------------------------------

def ewald_seeds():
    # flags (0x40 with flags2 0x08: automatic grid), flags2, tolerance index, box base index, 3 box exponent
    # bytes (3 -> 2^0), [overrides], number of sources, ...
    laplace = bytes([0x40, 8, 2, 0, 3, 3, 3, 4])  # 5 sources, relative 1e-3, unit box
    pts = bytes([10, 200, 30, 100, 40, 220, 180, 5, 90, 60, 60, 60, 150, 120, 15])
    charges = bytes([124 + 31, 124 - 31, 124 + 62, 124 - 31, 124 - 31])
    put("ewald", "laplace", laplace + pts + charges)
    put("ewald", "laplace_field_targets", bytes([4 | 8, 0, 0, 1, 3, 3, 3, 20, 20, 20, 2]) + pts[:9] + charges[:3]
        + bytes([3]) + pts[:12])
    # the stokeslet with its automatic parameters takes ~0.7 s per execution here: grid given
    stokes = bytes([1, 0, 3, 0, 3, 3, 3, 16, 16, 16, 2]) + pts[:9] + bytes(124 + i for i in range(-4, 5))
    put("ewald", "stokeslet", stokes)
    put("ewald", "overrides", bytes([0xB0, 3, 2, 0, 3, 3, 3]) + bytes([20, 4, 8, 8, 8, 5, 10, 12, 1]) + pts[:6]
        + charges[:2])
    put("ewald", "grid_override", bytes([0, 0, 2, 0, 3, 3, 3, 14, 14, 14, 2]) + pts[:6] + charges[:2])
    put("ewald", "stokeslet_grid_override", bytes([1 | 4, 4, 3, 1, 3, 2, 4, 200, 16, 16, 18, 1]) + pts[:6]
        + bytes(124 + i for i in range(-3, 3)))
    raw = bytes([0xF8]) + struct.pack("<d", 1e11) + bytes([0xF8]) + struct.pack("<d", -3.7e9) + bytes([7])
    put("ewald", "far_images", bytes([0x40 | 2, 8, 0, 1, 3, 2, 4, 1]) + raw + bytes([0xE0, 0xF7, 0xEC]) + charges[:2])
    put("ewald", "invalid_box", bytes([0x40, 8, 2, 7, 3, 3, 3, 0, 1, 2, 3, 150]))


if __name__ == "__main__":
    array_seeds()
    gro_seeds()
    mtx_seeds()
    mesh_seeds()
    mesh_validate_seeds()
    ewald_seeds()
    for d in sorted(CORPUS.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")
