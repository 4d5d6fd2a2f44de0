"""Run by test_ewald_mpi.py under `mpirun -n K python3 mpi_ewald_check.py`: DistributedEwaldPlan
with mpi4py's COMM_WORLD against EwaldPlan on the gathered points (each rank computes the
reference: the points in rank order, as rank 0 gathers them for the tuner), for every kernel in
a non-cubic box, slabs along x, y and z, both exchanges, points dealt round robin (rank 0 also
all of them); a 1P channel (periodicity "1P", slabs along its axis); prints one line "OK <cases>"
on rank 0, or raises (a nonzero exit of mpirun)."""
import sys

import numpy as np
from mpi4py import MPI

import elliptica

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert "Open MPI" in MPI.Get_library_version(), MPI.Get_library_version()
L = (1.4, 1.0, 0.8)
n = 900
rng = np.random.default_rng(7)
x = rng.random((n, 3)) * L
q = rng.standard_normal(n)
f = rng.standard_normal((n, 3))
dq = rng.standard_normal((n, 3))
nu = rng.standard_normal((n, 3))
nu /= np.linalg.norm(nu, axis=1)[:, None]
cases = 0
for deal in ("round-robin", "rank0"):
    owner = np.arange(n) % size if deal == "round-robin" else np.zeros(n, dtype=int)
    order = np.concatenate([np.flatnonzero(owner == r) for r in range(size)])
    mine = np.flatnonzero(owner == rank)
    for kernel, kw in (("laplace", {"field": True}), ("stokeslet", {"pressure": True}), ("stresslet", {}),
                       ("stokes-combined", {})):
        dl = kernel in ("stresslet", "stokes-combined")
        strengths = {"laplace": q, "stokeslet": f, "stresslet": None, "stokes-combined": f}[kernel]
        opts = dict(box=L, tol=1e-8, threads=1, **kw)
        ref = elliptica.EwaldPlan(kernel, fft_planner="estimate", **opts)
        ref.set_points(x[order], normals=nu[order] if dl else None)
        r_ref = ref.evaluate(None if strengths is None else strengths[order], dipoles=dq[order] if dl else None)
        # slabs along z and y (vectors permuted with the axes), both exchanges
        dist = {"laplace": {}, "stokeslet": {"slab_axis": "z"}, "stresslet": {"slab_axis": 1, "exchange": "all-to-all"},
                "stokes-combined": {"exchange": "neighbour"} if size <= 3 else {}}[kernel]
        plan = elliptica.DistributedEwaldPlan(kernel, comm=comm, **opts, **dist)
        plan.set_points(x[mine], normals=nu[mine] if dl else None)
        r = plan.evaluate(None if strengths is None else strengths[mine], dipoles=dq[mine] if dl else None)
        pos = np.empty(n, dtype=int)
        pos[order] = np.arange(n)
        for name in ("potential", "velocity", "field", "pressure"):
            a, b = getattr(r, name), getattr(r_ref, name)
            assert (a is None) == (b is None), (kernel, name)
            if a is None:
                continue
            assert a.shape[0] == mine.size, (kernel, name, a.shape)
            err = np.abs(a - b[pos[mine]]).max() if mine.size else 0.0
            assert err <= 1e-13 * np.abs(b).max(), (kernel, name, deal, err, np.abs(b).max())
        assert plan.params["grid"] == r_ref.info.params["grid"], (plan.params["grid"], r_ref.info.params["grid"])
        st = plan.stats()
        assert st["ranks"] == size and comm.allreduce(st["points"]) == n, st
        axis = {"stokeslet": 2, "stresslet": 1}.get(kernel, 0)  # L: x is the longest side
        assert st["slab_axis"] == axis and comm.allreduce(st["planes"]) == plan.params["grid"][axis], st
        if dist.get("exchange") == "all-to-all":
            assert not any(st["neighbour_only"].values()), st
        elif size <= 3:
            assert all(st["neighbour_only"].values()), st
        cases += 1
# free axes (issue 31): a 1P channel of point forces with a net force, periodic along z, in slabs
# along its axis (the longest side), against EwaldPlan with the same periodicity
Lc = (0.5, 0.4, 2.0)
xc = rng.random((n, 3)) * Lc
owner = np.arange(n) % size
order = np.concatenate([np.flatnonzero(owner == r) for r in range(size)])
mine = np.flatnonzero(owner == rank)
ref = elliptica.EwaldPlan("stokeslet", box=Lc, periodicity="1P", tol=1e-8, threads=1, fft_planner="estimate")
r_ref = ref.evaluate(xc[order], f[order] + 0.3)
plan = elliptica.DistributedEwaldPlan("stokeslet", comm=comm, box=Lc, periodicity="1P", tol=1e-8, threads=1)
plan.set_points(xc[mine])
r = plan.evaluate(f[mine] + 0.3)
pos = np.empty(n, dtype=int)
pos[order] = np.arange(n)
err = np.abs(r.velocity - r_ref.velocity[pos[mine]]).max() if mine.size else 0.0
assert err <= 1e-13 * np.abs(r_ref.velocity).max(), ("1P", err)
assert plan.stats()["slab_axis"] == 2
cases += 1
# bad input on one rank only: every rank raises (the checks of the Python layer are agreed
# before the collective call; a rank raising alone left the others waiting in it)
plan = elliptica.DistributedEwaldPlan("laplace", comm=comm, box=L, threads=1)
last = size - 1
try:
    plan.set_points(x[:5, :2] if rank == last else x[:5])
    raise AssertionError("no error")
except elliptica.InvalidArgumentError as e:
    assert "sources" in str(e) and (last == 0 or f"rank {last}" in str(e)), str(e)
plan.set_points(x[:5])
try:
    plan.evaluate(q[:4] if rank == last else q[:5])
    raise AssertionError("no error")
except elliptica.InvalidArgumentError as e:
    assert "strengths" in str(e), str(e)
r = plan.evaluate(q[:5])  # still usable
assert r.potential.shape == (5,)
cases += 1
comm.Barrier()
if rank == 0:
    print(f"OK {cases}")
sys.stdout.flush()
