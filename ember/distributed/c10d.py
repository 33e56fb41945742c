"""Process groups: the default group, ``new_group``, ranks, the work handle, timeouts.

A process group holds a *transport* (``_mpi_backend.MpiTransport`` for CPU tensors,
``_nccl_backend.NcclTransport`` for CUDA tensors) and the group's global ranks. Transports start
non-blocking operations and hand back a pending object with ``test()``; ``Work.wait`` polls it
against a deadline, so a collective whose peer died, hung or called another collective ends in
``DistBackendError`` naming this rank, the collective, its sequence number and the tensors instead
of hanging. After a timeout the communicator is in an unknown state (the peer may still join the
abandoned operation), so the process ends with ``MPI_Abort`` at exit, as PyTorch's watchdog tears a
process down after a collective timeout.
"""
from __future__ import annotations

import atexit
import datetime
import os
import sys
import time
from enum import Enum

__all__ = ["ReduceOp", "Work", "ProcessGroup", "GroupMember", "DistError", "DistBackendError",
           "init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_nccl_available", "get_rank", "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
           "default_pg_timeout"]

# PyTorch's defaults: 30 minutes for CPU backends, 10 minutes for NCCL.
default_pg_timeout = datetime.timedelta(minutes=30)
default_pg_nccl_timeout = datetime.timedelta(minutes=10)
# A backend name PyTorch programs use for CPU: ember serves it with MPI (there is no gloo here).
_CPU_BACKENDS = ("mpi", "gloo")


class DistError(RuntimeError):
    """Raised when a distributed operation fails (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """Raised when a backend operation fails or times out (``torch.distributed.DistBackendError``)."""


class ReduceOp(Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4

    def __str__(self) -> str:
        return f"ReduceOp.{self.name}"


class _NonMember:
    """``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` returns on ranks outside the group."""

    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = _NonMember()


class ProcessGroup:
    """A set of ranks sharing a communicator. ``ranks`` are global ranks, in group-rank order."""

    def __init__(self, transport, ranks, backend: str, timeout: datetime.timedelta, name: str) -> None:
        self.transport = transport
        self.ranks = list(ranks)
        self.backend = backend
        self.timeout = timeout
        self.name = name
        self.seq = 0            # collectives issued on this group (same on every rank when programs agree)

    def rank(self) -> int:
        return self.transport.rank

    def size(self) -> int:
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"ProcessGroup(name={self.name!r}, backend={self.backend!r}, ranks={self.ranks})"


class _State:
    world: ProcessGroup | None = None
    groups: list = []
    timed_out: bool = False     # a collective timed out: abort at exit (see module docstring)


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    try:
        from cupy.cuda import nccl
    except ImportError:
        return False
    return bool(nccl.available)


def is_initialized() -> bool:
    return _State.world is not None


def _world() -> ProcessGroup:
    if _State.world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _State.world


def _group(group) -> ProcessGroup:
    return _world() if group is None else group


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")


def _env_int(name: str):
    value = os.environ.get(name)
    return None if value in (None, "") else int(value)


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the default process group. Ranks come from MPI (``mpiexec`` or ``ember.distributed.run``
    start the processes); `rank` / `world_size` / ``RANK`` / ``WORLD_SIZE``, when given, must agree.
    ``backend``: ``"mpi"`` (CPU tensors; ``"gloo"`` is accepted and served by MPI) or ``"nccl"``
    (CUDA tensors; the NCCL unique id is broadcast over MPI). `init_method` and `store` are not
    needed for this rendezvous and must be left out."""
    if _State.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = (backend or "mpi").lower()
    if backend not in _CPU_BACKENDS + ("nccl",):
        raise ValueError(f"init_process_group: unknown backend {backend!r}; ember offers 'mpi' (CPU; 'gloo' is "
                         "served by it) and 'nccl' (CUDA)")
    if store is not None or (init_method not in (None, "env://")):
        raise ValueError("init_process_group: the rendezvous goes through MPI; init_method (other than 'env://') "
                         "and store are not supported")
    if timeout is None:
        timeout = default_pg_nccl_timeout if backend == "nccl" else default_pg_timeout
    _seconds(timeout)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    for what, given in (("rank", rank), ("world_size", world_size), ("RANK", _env_int("RANK")),
                        ("WORLD_SIZE", _env_int("WORLD_SIZE"))):
        actual = comm.Get_rank() if what.lower() == "rank" else comm.Get_size()
        if given not in (None, -1) and given != actual:
            raise ValueError(f"init_process_group: {what}={given} but MPI started this process as rank "
                             f"{comm.Get_rank()} of {comm.Get_size()}")
    dup = comm.Dup()
    try:
        transport = _make_transport(backend, dup, device_id)
    except BaseException:
        dup.Free()
        raise
    _State.world = ProcessGroup(transport, range(comm.Get_size()), backend, timeout, group_name or "default_pg")
    _State.groups = [_State.world]
    GroupMember.WORLD = _State.world
    if comm.Get_size() > 1:
        _abort_on_uncaught_exception()


def _make_transport(backend: str, comm, device_id):
    if backend == "nccl":
        from ._nccl_backend import NcclTransport
        return NcclTransport(comm, device_id)
    from ._mpi_backend import MpiTransport
    return MpiTransport(comm)


_hooks_installed = False


def _abort_on_uncaught_exception() -> None:
    """An uncaught exception on one rank must not leave the others waiting in a collective, nor
    this process in ``MPI_Finalize`` (which waits for them): report it, then ``MPI_Abort``."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous = sys.excepthook

    def abort_after_report(kind, value, tb):
        previous(kind, value, tb)
        _abort(1)
    sys.excepthook = abort_after_report
    atexit.register(lambda: _abort(1) if _State.timed_out else None)


def _abort(code: int) -> None:
    from mpi4py import MPI
    sys.stdout.flush()
    sys.stderr.flush()
    # mpiexec's proxies forward this process's stderr asynchronously and MPI_Abort kills them: on a
    # loaded machine the report was cut mid-traceback (its last line, the error, lost). A moment first.
    time.sleep(0.5)
    MPI.COMM_WORLD.Abort(code)


def destroy_process_group(group=None) -> None:
    """Release `group` (all groups when None, ending the default group)."""
    if group is None or group is _State.world:
        _world()
        for g in _State.groups:
            if not _State.timed_out:
                g.transport.close()
        _State.world, _State.groups = None, []
        GroupMember.WORLD = None
        return
    if group in _State.groups:
        _State.groups.remove(group)
        group.transport.close()


def _not_member(group) -> bool:
    return group is GroupMember.NON_GROUP_MEMBER


def get_rank(group=None) -> int:
    """This process's rank in `group` (-1 outside it)."""
    if _not_member(group):
        return -1
    return _group(group).rank()


def get_world_size(group=None) -> int:
    if _not_member(group):
        return -1
    return _group(group).size()


def get_backend(group=None) -> str:
    if _not_member(group):
        raise ValueError("Invalid process group specified")
    return _group(group).backend


def get_process_group_ranks(group) -> list:
    return list(_group(group).ranks)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization: bool = False,
              group_desc=None, device_id=None):
    """A group of the given global ranks; every rank of the world must call it (as in PyTorch).
    Ranks outside the group get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world()
    members = sorted(set(range(world.size()) if ranks is None else ranks))
    for r in members:
        if not isinstance(r, int) or not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r!r} is not a rank of the default group (world size {world.size()})")
    backend = (backend or world.backend).lower()
    if (backend == "nccl") != (world.backend == "nccl"):
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's {world.backend!r}")
    timeout = world.timeout if timeout is None else timeout
    _seconds(timeout)
    me = world.rank()
    sub = world.transport.split(color=0 if me in members else None, key=me, timeout=_seconds(world.timeout))
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(sub, members, world.backend, timeout, group_desc or f"group_{len(_State.groups)}")
    _State.groups.append(group)
    return group


def group_rank(group: ProcessGroup, global_rank, what: str) -> int:
    """The group rank of `global_rank`, checked (PyTorch's collectives take global ranks)."""
    if not isinstance(global_rank, int) or isinstance(global_rank, bool):
        raise TypeError(f"{what} must be an int rank, got {type(global_rank).__name__}")
    if global_rank not in group.ranks:
        if group is _State.world:       # PyTorch's backends refuse it (RuntimeError); new groups raise ValueError
            raise RuntimeError(f"{what}: invalid root rank: {global_rank} (world size {group.size()})")
        raise ValueError(f"Global rank {global_rank} is not part of group {group.name} (ranks {group.ranks})")
    return group.ranks.index(global_rank)


class Work:
    """The handle of a started operation (``async_op=True``). ``wait()`` blocks until it finishes or
    the group's timeout passes (``DistBackendError``); ``is_completed()`` polls once."""

    def __init__(self, pending, finish, group: ProcessGroup, describe, result=None) -> None:
        self._pending = pending
        self._finish = finish           # runs once after completion: copy back, average, ...
        self._group = group
        self._describe = describe       # () -> "all_reduce of float32[4, 3]" for error messages
        self._deadline = time.monotonic() + _seconds(group.timeout)
        self._seq = group.seq
        self._done = False
        self._result = result

    def _complete(self) -> None:
        self._done = True
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()

    def is_completed(self) -> bool:
        if not self._done and self._pending.test():
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        deadline = self._deadline if timeout is None else time.monotonic() + _seconds(timeout)
        polls = 0
        while not self._pending.test():
            polls += 1
            if polls > 64:      # spin a little (small messages finish at once), then yield the core
                if time.monotonic() > deadline:
                    self._timed_out(deadline)
                time.sleep(min(1e-3, 1e-6 * polls))
        self._complete()
        return True

    def wait_stream(self) -> bool:
        """NCCL: the current CUDA stream waits for the operation and the host does not (what
        torch's ``Work.wait`` does for CUDA collectives); True when done so. The host-side
        completion, with its timeout, is still owed: ``wait()`` later (DDP does at its next
        forward). False (nothing done) for MPI, whose operations progress only inside host calls,
        and for an operation that copies its result back on the host."""
        stream_wait = getattr(self._pending, "stream_wait", None)
        if self._done or self._finish is not None or stream_wait is None:
            return False
        stream_wait()
        return True

    def _timed_out(self, deadline) -> None:
        cancelled = self._pending.abandon()     # only a receive can be withdrawn cleanly
        if not cancelled:
            _State.timed_out = True
        g = self._group
        raise DistBackendError(
            f"[rank {get_rank()}] {self._describe()} timed out after {_seconds(g.timeout):.1f} s "
            f"(operation #{self._seq} on process group {g.name!r}, backend {g.backend}, ranks {g.ranks}): "
            "another rank of the group did not join it; it may have died, hung, or called a different operation."
            + ("" if cancelled else " The process will abort at exit."))

    def result(self):
        return self._result

    def get_future(self):
        """An ``ember.futures.Future`` whose value is ``result()`` once this work completes."""
        from ..futures import Future
        return Future(work=self)


class _Done:
    """A pending operation that is already complete (world size 1, empty tensors)."""

    def test(self) -> bool:
        return True

    def abandon(self) -> bool:
        return True


DONE = _Done()
