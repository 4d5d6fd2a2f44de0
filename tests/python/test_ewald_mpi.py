"""elliptica.DistributedEwaldPlan with mpi4py (issue 30): `mpirun -n 1/3 python3
mpi_ewald_check.py` (every kernel, two ways of dealing the points, against EwaldPlan to 1e-13),
and the plan's refusals. Skipped without mpi4py, mpirun or an MPI build. Cost: about 10 s."""
import os
import shutil
import subprocess
import sys

import pytest

import elliptica

HERE = os.path.dirname(os.path.abspath(__file__))


def _have_mpi4py():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


needs_mpi = pytest.mark.skipif(not (elliptica.mpi_available() and _have_mpi4py() and shutil.which("mpirun")),
                               reason="needs an MPI build of elliptica, mpi4py and mpirun")


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 3])
def test_distributed_plan_equals_ewald_plan(ranks):
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_mpi_yield_when_idle="1", ELLIPTICA_EWALD_FFT_WISDOM="off")
    r = subprocess.run([shutil.which("mpirun"), "-n", str(ranks), "--allow-run-as-root", "--oversubscribe",
                        sys.executable, os.path.join(HERE, "mpi_ewald_check.py")],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK 10" in r.stdout, r.stdout + r.stderr  # 2 deals x 4 kernels, the 1P channel, bad input


def test_refusals():
    if not elliptica.mpi_available():
        with pytest.raises(elliptica.InvalidArgumentError, match="without"):
            elliptica.DistributedEwaldPlan("laplace", comm=object())
        return
    with pytest.raises(elliptica.InvalidArgumentError, match="communicator"):
        elliptica.DistributedEwaldPlan("laplace", comm=object())
    with pytest.raises(TypeError):
        elliptica.DistributedEwaldPlan("laplace")  # comm is required
    for bad in ({"slab_axis": 3}, {"slab_axis": "w"}, {"slab_axis": 1.0}, {"slab_axis": True},
                {"exchange": "neighbor"}):
        with pytest.raises(elliptica.InvalidArgumentError, match=next(iter(bad))):
            elliptica.DistributedEwaldPlan("laplace", comm=_Comm(), **bad)


class _Comm:
    """A one-rank stand-in: the keywords are checked (and agreed by allgather) before the plan is made."""

    def py2f(self):
        raise AssertionError("used")

    def allgather(self, x):
        return [x]
