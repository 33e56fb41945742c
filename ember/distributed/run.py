"""``python -m ember.distributed.run --nproc-per-node N script.py args``: torchrun's interface on
the installed MPI's ``mpiexec``.

It starts ``nnodes * nproc_per_node`` ranks with ``mpiexec`` (block placement: consecutive ranks
per host), each through ``ember.distributed._worker``, which sets RANK / LOCAL_RANK / WORLD_SIZE /
LOCAL_WORLD_SIZE / MASTER_ADDR / MASTER_PORT as torchrun does. Several hosts: pass a hostfile
(``--hostfile hosts`` with one host per line, ``host:slots`` for MPICH) and ``--nnodes``; start
the launcher on one host only (mpiexec starts the ranks on the others over ssh) and set
``--master-addr`` to an address of that host the others can reach.

Failures: every rank reports to a monitor this launcher listens on (MASTER_ADDR, a port of its
own; MASTER_PORT is left free for the script's own use, as torchrun's store port) when it starts
and how it ends. The first rank that raises, exits non-zero or disappears without
a report is the failed one: after a short grace period (for the other ranks' errors to arrive)
the launcher stops the whole job, prints which rank failed and why, and exits non-zero. MPICH's
own clean-up is turned off (``-disable-auto-cleanup``) so that the launcher, not a race between
dying processes, decides which rank failed first.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time

# mpiexec's spellings: (MPICH/Hydra, Open MPI)
_FLAGS = {"hydra": {"per_node": "-ppn", "hostfile": "-f", "env": "-genv", "extra": ["-disable-auto-cleanup"]},
          "openmpi": {"per_node": "--npernode", "hostfile": "--hostfile", "env": "-x", "extra": []}}


def _parser():
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run", description=__doc__.split("\n\n")[0],
                                allow_abbrev=False)
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks per host: a number, 'cpu' (one per core), 'gpu' (one per GPU) or 'auto'")
    p.add_argument("--nnodes", type=int, default=1, help="number of hosts (with --hostfile)")
    p.add_argument("--hostfile", default=None, help="mpiexec's host file (several hosts)")
    p.add_argument("--master-addr", "--master_addr", default=None,
                   help="address of this host the ranks reach it at (default 127.0.0.1 on one host)")
    p.add_argument("--master-port", "--master_port", type=int, default=0,
                   help="MASTER_PORT for the ranks (torch-style stores of the script; 0: a free port)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the one next to python)")
    p.add_argument("--grace", type=float, default=3.0,
                   help="seconds to let the other ranks report after the first failure before stopping them")
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _gpu_count() -> int:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except (ImportError, RuntimeError):     # no CuPy; no driver or device (CUDARuntimeError)
        return 0


def _nproc(value: str) -> int:
    if value in ("gpu", "auto"):
        gpus = _gpu_count()
        if gpus > 0 or value == "gpu":
            return gpus
        value = "cpu"
    if value == "cpu":
        return os.cpu_count() or 1
    return int(value)


def find_mpiexec(explicit=None) -> str:
    candidates = [explicit] if explicit else [os.path.join(os.path.dirname(sys.executable), "mpiexec"), "mpiexec"]
    for c in candidates:
        found = shutil.which(c)
        if found:
            return found
    raise SystemExit("ember.distributed.run: no mpiexec found; install the 'distributed' extra "
                     "(pip install 'ember[distributed]': mpi4py and the mpich wheel) or pass --mpiexec")


def _flavour(mpiexec: str) -> str:
    out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "hydra"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def mpiexec_command(args, mpiexec: str, monitor_address) -> list:
    flags = _FLAGS[_flavour(mpiexec)]
    per_node = _nproc(args.nproc_per_node)
    if per_node < 1 or args.nnodes < 1:
        raise SystemExit(f"ember.distributed.run: need at least one rank (nproc-per-node={per_node}, "
                         f"nnodes={args.nnodes})")
    cmd = [mpiexec, *flags["extra"], "-n", str(per_node * args.nnodes), flags["per_node"], str(per_node)]
    if args.hostfile:
        cmd += [flags["hostfile"], args.hostfile]
    env = {"MASTER_ADDR": monitor_address[0], "MASTER_PORT": str(args.master_port or _free_port()),
           "EMBER_RUN_MONITOR": f"{monitor_address[0]}:{monitor_address[1]}"}
    for name, value in env.items():
        cmd += [flags["env"], name, value] if flags["env"] == "-genv" else [flags["env"], f"{name}={value}"]
    target = ["-m", args.script] if args.module else [args.script]
    return cmd + [sys.executable, "-u", "-m", "ember.distributed._worker", *target, *args.script_args]


class Monitor:
    """Who started, who finished, and the first failure, from the ranks' reports."""

    def __init__(self, server) -> None:
        self.server = server
        self.selector = selectors.DefaultSelector()
        self.selector.register(server, selectors.EVENT_READ)
        self.rank_of = {}            # connection -> rank
        self.pending = {}            # connection -> bytes not yet a full line
        self.outcome = {}            # rank -> "ok" | message
        self.failure = None          # (rank, message) of the first failure
        self.failed_at = None
        self.stopping = False        # the launcher is ending the job: connections closing now are its doing

    def _fail(self, rank, message) -> None:
        self.outcome[rank] = message
        if self.failure is None:
            self.failure, self.failed_at = (rank, message), time.monotonic()

    def poll(self, timeout: float) -> None:
        for key, _ in self.selector.select(timeout):
            if key.fileobj is self.server:
                conn, _ = self.server.accept()
                self.selector.register(conn, selectors.EVENT_READ)
                self.pending[conn] = b""
                continue
            conn = key.fileobj
            data = conn.recv(65536)
            if data:
                self._lines(conn, data)
                continue
            self.selector.unregister(conn)
            conn.close()
            rank = self.rank_of.get(conn)
            if rank is None or rank in self.outcome:
                continue
            if self.stopping or self.failure is not None:   # taken down with the job (MPI_Abort, the launcher)
                self.outcome[rank] = "stopped"
            else:
                self._fail(rank, "exited without finishing its script and without an exception (killed by a "
                                 "signal, or os._exit)")

    def _lines(self, conn, data: bytes) -> None:
        buf = self.pending[conn] + data
        *lines, self.pending[conn] = buf.split(b"\n")
        for line in lines:
            word, _, rest = line.decode().partition(" ")
            if word == "start":
                self.rank_of[conn] = int(rest.split()[0])
            elif word == "ok":
                self.outcome[self.rank_of[conn]] = "ok"
            elif word == "error":
                self._fail(self.rank_of[conn], json.loads(rest))


def _stop(proc) -> None:
    """End mpiexec and the ranks it started (it forwards SIGTERM to them); then its whole session."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def launch(args) -> int:
    mpiexec = find_mpiexec(args.mpiexec)
    host = args.master_addr or ("127.0.0.1" if args.nnodes == 1 else socket.gethostname())
    bind = "127.0.0.1" if host in ("127.0.0.1", "localhost") else ""
    server = socket.create_server((bind, 0))
    server.setblocking(False)
    monitor = Monitor(server)
    cmd = mpiexec_command(args, mpiexec, (host, server.getsockname()[1]))
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        while proc.poll() is None:
            monitor.poll(0.1)
            if monitor.failure is not None and time.monotonic() - monitor.failed_at > args.grace:
                monitor.stopping = True
                _stop(proc)
        monitor.poll(0)
    except KeyboardInterrupt:
        monitor.stopping = True
        _stop(proc)
        raise
    finally:
        server.close()
    return _summary(monitor, proc.returncode, _nproc(args.nproc_per_node) * args.nnodes)


def _summary(monitor, returncode: int, world_size: int) -> int:
    if monitor.failure is None and returncode == 0:
        return 0
    say = lambda text: print(f"ember.distributed.run: {text}", file=sys.stderr)  # noqa: E731
    if monitor.failure is not None:
        rank, message = monitor.failure
        say(f"rank {rank} failed first: {message}")
    else:
        say(f"mpiexec exited with status {returncode}")
    for r in range(world_size):
        outcome = monitor.outcome.get(r)
        if monitor.failure is not None and r == monitor.failure[0]:
            continue
        if outcome in (None, "stopped"):
            say(f"rank {r}: stopped with the job (it had not finished)")
        elif outcome != "ok":
            say(f"rank {r} failed too: {outcome}")
    return returncode if returncode not in (0, None) else 1


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
