"""Starting 2-rank MPI jobs from pytest: each test module runs its worker script once.

The jobs use the venv's ``mpiexec`` (the ``mpich`` wheel) and skip when mpi4py or mpiexec is
missing. Ranks inherit ``OMP_NUM_THREADS=1`` and this checkout on ``PYTHONPATH``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def mpiexec() -> str:
    pytest.importorskip("mpi4py")
    found = shutil.which(os.path.join(os.path.dirname(sys.executable), "mpiexec")) or shutil.which("mpiexec")
    if not found:
        pytest.skip("no mpiexec (install the 'distributed' extra)")
    return found


def env() -> dict:
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "EMBER_RUN_MONITOR"):
        e.pop(name, None)
    return e


def run(cmd, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env(), cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def run_worker(script: str, out_dir, n: int = 2, timeout: float = 240) -> list:
    """``mpiexec -n n python workers/<script> out_dir``; returns each rank's JSON results."""
    proc = run([mpiexec(), "-n", str(n), sys.executable, os.path.join(WORKERS, script), str(out_dir)], timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{script} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = []
    for r in range(n):
        with open(os.path.join(out_dir, f"rank{r}.json")) as f:
            results.append(json.load(f))
    return results


def launcher(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    mpiexec()
    return run([sys.executable, "-m", "ember.distributed.run", *args], timeout)
