"""Every collective on every dtype over 2 MPI ranks, checked against NumPy on each rank (one
``mpiexec`` run, ``workers/collectives_worker.py``); refused calls raise PyTorch's exception types."""
import os
import sys
import warnings

import pytest

from mpi_jobs import run_worker

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "workers"))
import collectives_worker as worker  # noqa: E402


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_worker("collectives_worker.py", tmp_path_factory.mktemp("collectives"))


@pytest.mark.parametrize("name", worker.CHECK_NAMES + list(worker.MISC_NAMES))
def test_against_numpy_on_every_rank(results, name):
    for rank, got in enumerate(results):
        assert got[name] == "ok", f"rank {rank}: {got[name]}"


def test_every_check_ran(results):
    for got in results:
        assert set(worker.CHECK_NAMES) | set(worker.MISC_NAMES) <= set(got)


@pytest.fixture(scope="module")
def torch_refusals():
    """The exception type torch (gloo, one process) raises for each of the bad calls."""
    import torch
    import torch.distributed as tdist
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdist.init_process_group("gloo", store=tdist.HashStore(), rank=0, world_size=1)
        try:
            for name, call in worker.BAD_CALLS.items():
                try:
                    call(torch, tdist, 1)
                    out[name] = "no error"
                except Exception as e:
                    out[name] = type(e).__name__
        finally:
            tdist.destroy_process_group()
    return out


@pytest.mark.parametrize("name", sorted(worker.BAD_CALLS))
def test_refused_like_torch(results, torch_refusals, name):
    for got in results:
        assert got["bad:" + name].split(":")[0] == torch_refusals[name], got["bad:" + name]


@pytest.mark.parametrize("name, words", [
    ("all_gather_wrong_shape", ("all_gather", "(2,)", "(3,)")),
    ("all_gather_into_tensor_wrong_size", ("all_gather_into_tensor", "world_size (2)")),
    ("reduce_scatter_tensor_wrong_size", ("reduce_scatter_tensor", "(5)")),
    ("all_reduce_complex_max", ("all_reduce", "MAX", "complex")),
])
def test_refusals_name_the_op_and_what_was_expected(results, name, words):
    for got in results:
        for w in words:
            assert w in got["bad:" + name]


def test_nccl_without_a_gpu_is_refused_clearly(results):
    for got in results:
        kind, _, message = got["nccl_without_gpu"].partition(": ")
        assert kind in ("RuntimeError", "AssertionError") and ("NCCL" in message or "CUDA" in message), message
