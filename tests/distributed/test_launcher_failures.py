"""The launcher and failures: a rank that dies makes the job end non-zero with that rank named
(well within 30 s); a rank that hangs makes the others' collective time out with an error naming
the rank, the collective and the shapes; a plain ``mpiexec`` run ends too; a clean run sets
torchrun's environment."""
import os
import sys
import textwrap

import pytest

from mpi_jobs import launcher, mpiexec, run


def script(tmp_path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


DIES = """
    import os, sys, time
    import ember, ember.distributed as dist
    dist.init_process_group("mpi")
    if dist.get_rank() == int(sys.argv[1]):
        time.sleep(0.5)
        os._exit(7)
    for _ in range(3):
        dist.all_reduce(ember.ones(4))
    time.sleep(60)          # the surviving rank would wait here: the launcher must stop it
"""


@pytest.mark.parametrize("dead", [0, 1])
def test_dead_rank_is_named_and_the_job_fails(tmp_path, dead):
    proc = launcher("--nproc-per-node", "2", "--grace", "1", script(tmp_path, DIES), str(dead), timeout=30)
    assert proc.returncode != 0
    assert f"rank {dead} failed first" in proc.stderr, proc.stderr
    assert "exited without finishing" in proc.stderr


def test_rank_raising_is_named_with_its_exception(tmp_path):
    body = """
        import ember.distributed as dist, time
        dist.init_process_group("mpi")
        if dist.get_rank() == 1:
            raise KeyError("no such shard")
        time.sleep(60)
    """
    proc = launcher("--nproc-per-node", "2", "--grace", "1", script(tmp_path, body), timeout=30)
    assert proc.returncode != 0
    assert "rank 1 failed first: KeyError: 'no such shard'" in proc.stderr, proc.stderr


HANGS = """
    import datetime, time
    import ember, ember.distributed as dist
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
    if dist.get_rank() == 1:
        time.sleep(60)
    dist.all_reduce(ember.ones(3, 5, dtype=ember.float64))
"""


def test_hung_rank_times_out_with_a_clear_error(tmp_path):
    proc = launcher("--nproc-per-node", "2", "--grace", "1", script(tmp_path, HANGS), timeout=30)
    assert proc.returncode != 0
    err = proc.stderr
    assert "rank 0 failed first: DistBackendError: [rank 0] all_reduce(ReduceOp.SUM) on float64[3, 5] timed out " \
           "after 2.0 s" in err, err


def test_hung_rank_under_plain_mpiexec_ends_the_job(tmp_path):
    proc = run([mpiexec(), "-n", "2", sys.executable, script(tmp_path, HANGS)], timeout=30)
    assert proc.returncode != 0
    assert "DistBackendError: [rank 0] all_reduce(ReduceOp.SUM) on float64[3, 5] timed out" in proc.stderr


def test_dead_rank_under_plain_mpiexec_ends_the_job(tmp_path):
    proc = run([mpiexec(), "-n", "2", sys.executable, script(tmp_path, DIES), "1"], timeout=30)
    assert proc.returncode != 0


def test_clean_run_sets_torchrun_environment(tmp_path):
    body = """
        import os, sys
        import ember.distributed as dist
        dist.init_process_group("gloo")      # served by MPI
        assert int(os.environ["RANK"]) == dist.get_rank() and int(os.environ["WORLD_SIZE"]) == 2
        with open(os.path.join(os.path.dirname(__file__), f"env{dist.get_rank()}"), "w") as f:
            print(os.environ["RANK"], os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"],
                  os.environ["LOCAL_WORLD_SIZE"], os.environ["MASTER_ADDR"], sys.argv[1:], file=f)
        dist.destroy_process_group()
    """
    proc = launcher("--nproc-per-node", "2", script(tmp_path, body), "--lr", "3", timeout=60)
    assert proc.returncode == 0, proc.stderr
    for r in range(2):
        assert (tmp_path / f"env{r}").read_text() == f"{r} {r} 2 2 127.0.0.1 ['--lr', '3']\n"
