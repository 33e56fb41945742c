"""What ``ember.distributed.run`` starts on every rank: ``python -m ember.distributed._worker
[-m] target args...``.

It sets torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK) from
the MPI launcher's (Hydra's ``PMI_*``/``MPI_LOCAL*``, Open MPI's ``OMPI_COMM_WORLD_*``), tells the
launcher's monitor that the rank started, runs the script as ``__main__``, and reports how it
ended: ``ok``, or ``error`` with the exception. A rank that ends without a report (killed, or
``os._exit``) is noticed by the monitor when its connection closes. After an error the rank
calls ``MPI_Abort`` (or exits), so no rank is left waiting for it.
"""
from __future__ import annotations

import json
import os
import runpy
import socket
import sys
import traceback

# (torchrun's variable, the launchers' variables that hold it)
_ENV = (("RANK", ("PMI_RANK", "OMPI_COMM_WORLD_RANK")), ("WORLD_SIZE", ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")),
        ("LOCAL_RANK", ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")),
        ("LOCAL_WORLD_SIZE", ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")))


def set_torchrun_env() -> int:
    for name, sources in _ENV:
        value = next((os.environ[s] for s in sources if s in os.environ), "1" if "SIZE" in name else "0")
        os.environ[name] = value
    rank, local_size = int(os.environ["RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    os.environ["GROUP_RANK"] = str(rank // max(local_size, 1))
    os.environ["ROLE_RANK"], os.environ["ROLE_WORLD_SIZE"] = os.environ["RANK"], os.environ["WORLD_SIZE"]
    return rank


def _connect(rank: int):
    address = os.environ.get("EMBER_RUN_MONITOR")
    if not address:
        return None
    host, port = address.rsplit(":", 1)
    monitor = socket.create_connection((host, int(port)), timeout=30)
    monitor.sendall(f"start {rank} {os.getpid()}\n".encode())
    return monitor


def _report(monitor, line: str) -> None:
    if monitor is not None:
        monitor.sendall((line + "\n").encode())
        monitor.close()


def _abort(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.COMM_WORLD.Abort(code)
    os._exit(code)


def main(argv) -> None:
    as_module = bool(argv) and argv[0] == "-m"
    if as_module:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: python -m ember.distributed._worker [-m] script args...")
    rank = set_torchrun_env()
    monitor = _connect(rank)
    sys.argv = list(argv)
    try:
        if as_module:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        if stop.code in (None, 0):
            _report(monitor, "ok")
            return
        _report(monitor, "error " + json.dumps(f"exited with status {stop.code}"))
        _abort(stop.code if isinstance(stop.code, int) else 1)
    except BaseException as exc:  # report any exception, KeyboardInterrupt included, then abort the job
        traceback.print_exc()
        _report(monitor, "error " + json.dumps(f"{type(exc).__name__}: {exc}"))
        _abort(1)
    _report(monitor, "ok")


if __name__ == "__main__":
    main(sys.argv[1:])
