"""Compiled DistributedDataParallel over 2 MPI ranks (``workers/ddp_compiled_worker.py``, one
``mpiexec`` run): ``ember.compile`` inside and outside DDP, the captured graph cut at the gradient
buckets, against one process with the doubled batch (float64, 1e-10, every step); each piece
compiled once, no recompile across steps, buckets all-reduced while earlier pieces' backward runs."""
import os
import sys

import pytest

from mpi_jobs import run_worker

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "workers"))
import ddp_compiled_worker as worker  # noqa: E402


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_worker("ddp_compiled_worker.py", tmp_path_factory.mktemp("ddp_compiled"))


@pytest.mark.parametrize("name", worker.CHECK_NAMES)
def test_compiled_ddp(results, name):
    for rank, got in enumerate(results):
        assert got[name] == "ok", f"rank {rank}: {got[name]}"


def test_every_check_ran(results):
    for got in results:
        assert set(got) == set(worker.CHECK_NAMES)
