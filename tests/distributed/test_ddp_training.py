"""DistributedDataParallel over 2 MPI ranks against one process with the doubled batch: the loss
and every weight after every step (float64, 1e-10), for an MLP and a CNN, several bucket sizes,
SGD with momentum and Adam, ``ember.compile`` inside and outside DDP; buckets reduced while
backward runs, ``no_sync``, unused parameters, rank 0's checkpoint, DistributedSampler
(``workers/ddp_worker.py``, one ``mpiexec`` run)."""
import os
import sys

import pytest

from mpi_jobs import run_worker

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "workers"))
import ddp_worker as worker  # noqa: E402


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_worker("ddp_worker.py", tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize("name", worker.CHECK_NAMES)
def test_ddp(results, name):
    for rank, got in enumerate(results):
        assert got[name] == "ok", f"rank {rank}: {got[name]}"
