"""The MPI transport (CPU tensors): mpi4py's non-blocking operations on NumPy buffers.

Every method takes C-contiguous NumPy arrays (``collectives`` passes a tensor's own array when it
is contiguous, so the data is not copied) and returns a pending object whose ``test()`` drives
MPI's progress and says whether the operation finished. Data moves as raw bytes (``MPI.BYTE``)
wherever nothing is computed on it; reductions use MPI's predefined operations on the types MPI
knows. Types MPI cannot add (float16, bfloat16) reduce through a user-defined operation on
``itemsize``-byte elements that computes in NumPy; bool reduces as uint8 with MAX for SUM/MAX and
MIN for PRODUCT/MIN (logical or / and, as PyTorch's NCCL backend does).
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .c10d import ReduceOp, DistBackendError

_PREDEFINED = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
               ReduceOp.MAX: MPI.MAX}
_BOOL_OPS = {ReduceOp.SUM: MPI.MAX, ReduceOp.MAX: MPI.MAX, ReduceOp.PRODUCT: MPI.MIN, ReduceOp.MIN: MPI.MIN}
_NUMPY_OPS = {ReduceOp.SUM: np.add, ReduceOp.AVG: np.add, ReduceOp.PRODUCT: np.multiply, ReduceOp.MIN: np.minimum,
              ReduceOp.MAX: np.maximum}
# NumPy dtypes MPI reduces with its predefined operations, and their MPI types.
_MPI_TYPES = {np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T, np.dtype(np.int32): MPI.INT32_T,
              np.dtype(np.int64): MPI.INT64_T, np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.float32): MPI.FLOAT,
              np.dtype(np.float64): MPI.DOUBLE, np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX,
              np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX}
_user_ops: dict = {}                        # (numpy dtype, ReduceOp) -> (element datatype, MPI.Op)


def _user_op(dtype: np.dtype, op: ReduceOp):
    """An MPI datatype of one element of `dtype` and an MPI operation computing `op` in NumPy."""
    key = (dtype, op)
    if key not in _user_ops:
        element = MPI.BYTE.Create_contiguous(dtype.itemsize).Commit()
        ufunc = _NUMPY_OPS[op]

        def reduce_into(inbuf, inoutbuf, datatype):
            a = np.frombuffer(inbuf, dtype=dtype)
            b = np.frombuffer(inoutbuf, dtype=dtype)
            ufunc(a, b, out=b)
        _user_ops[key] = (element, MPI.Op.Create(reduce_into, commute=True))
    return _user_ops[key]


def _reduce_spec(arr: np.ndarray, op: ReduceOp):
    """[buffer, count, datatype] and the MPI op reducing `arr`'s elements by `op`."""
    flat = arr.reshape(-1)
    if arr.dtype == np.bool_:
        return [flat.view(np.uint8), MPI.UNSIGNED_CHAR], _BOOL_OPS[op]
    if arr.dtype in _MPI_TYPES:
        return [flat, _MPI_TYPES[arr.dtype]], _PREDEFINED[op]
    element, mpi_op = _user_op(arr.dtype, op)
    return [flat.view(np.uint8), element], mpi_op


def average_in_place(buf: np.ndarray, n: int) -> None:
    """Divide a sum by the group size: true division for floating and complex types, division
    rounding toward zero for integers (as NCCL's ncclAvg does)."""
    if buf.dtype.kind in "iu":
        buf[...] = np.sign(buf) * (np.abs(buf) // n)
    else:
        buf /= np.asarray(n, dtype=buf.dtype)


def _bytes(arr: np.ndarray):
    return [arr.reshape(-1).view(np.uint8), MPI.BYTE]


class _Pending:
    """Requests in flight, and the buffers they use (kept alive until they finish)."""

    def __init__(self, requests, buffers, status=None, after=None) -> None:
        self.requests = requests
        self.buffers = buffers
        self.status = status
        self.after = after          # runs once on completion (the division of AVG)

    def test(self) -> bool:
        if self.requests is None:
            return True
        if self.status is not None:         # one receive: keep its status (the sender's rank)
            done = self.requests[0].Test(self.status)
        else:
            done = MPI.Request.Testall(self.requests)
        if done:
            self.requests = self.buffers = None
            after, self.after = self.after, None
            if after is not None:
                after()
        return done

    def abandon(self) -> bool:
        """Withdraw a timed-out operation: a receive is cancelled (True when MPI confirms it);
        collectives and sends cannot be, and only the references are dropped (False)."""
        requests, self.requests = self.requests, None
        if self.status is None or requests is None:
            return False
        requests[0].Cancel()
        requests[0].Wait(self.status)
        return self.status.Is_cancelled()


class MpiTransport:
    """One MPI communicator; `rank` is this process's rank in it."""

    def __init__(self, comm) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def close(self) -> None:
        if self.comm is not None and self.comm != MPI.COMM_NULL:
            self.comm.Free()
        self.comm = None

    def _live(self):
        if self.comm is None:
            raise DistBackendError("the process group was destroyed")
        return self.comm

    def split(self, color, key: int, timeout: float):
        """A communicator of the ranks that pass the same color (None: not a member). Every rank
        meets in a barrier with a deadline first, so a missing rank times out instead of hanging."""
        comm = self._live()
        from .c10d import Work, ProcessGroup
        probe = ProcessGroup(self, range(self.size), "mpi", _timedelta(timeout), "new_group")
        Work(_Pending([comm.Ibarrier()], None), None, probe, lambda: "new_group").wait()
        sub = comm.Split(MPI.UNDEFINED if color is None else color, key)
        return None if sub == MPI.COMM_NULL else MpiTransport(sub)

    def _average(self, buf: np.ndarray, op: ReduceOp):
        """AVG is a SUM followed by this division (MPI has no average)."""
        return None if op is not ReduceOp.AVG else (lambda: average_in_place(buf, self.size))

    def all_reduce(self, buf: np.ndarray, op: ReduceOp):
        spec, mpi_op = _reduce_spec(buf, op)
        request = self._live().Iallreduce(MPI.IN_PLACE, spec, mpi_op)
        return _Pending([request], buf, after=self._average(buf, op))

    def reduce(self, buf: np.ndarray, op: ReduceOp, root: int):
        spec, mpi_op = _reduce_spec(buf, op)
        if self.rank == root:
            return _Pending([self._live().Ireduce(MPI.IN_PLACE, spec, mpi_op, root)], buf,
                            after=self._average(buf, op))
        return _Pending([self._live().Ireduce(spec, None, mpi_op, root)], buf)

    def reduce_scatter(self, out: np.ndarray, inp: np.ndarray, op: ReduceOp):
        in_spec, mpi_op = _reduce_spec(inp, op)
        out_spec, _ = _reduce_spec(out, op)
        request = self._live().Ireduce_scatter_block(in_spec, out_spec, mpi_op)
        return _Pending([request], (out, inp), after=self._average(out, op))

    def broadcast(self, buf: np.ndarray, root: int):
        return _Pending([self._live().Ibcast(_bytes(buf), root)], buf)

    def all_gather(self, out: np.ndarray, inp: np.ndarray):
        return _Pending([self._live().Iallgather(_bytes(inp), _bytes(out))], (out, inp))

    def gather(self, out, inp: np.ndarray, root: int):
        recv = _bytes(out) if self.rank == root else None
        return _Pending([self._live().Igather(_bytes(inp), recv, root)], (out, inp))

    def scatter(self, out: np.ndarray, inp, root: int):
        send = _bytes(inp) if self.rank == root else None
        return _Pending([self._live().Iscatter(send, _bytes(out), root)], (out, inp))

    def barrier(self):
        return _Pending([self._live().Ibarrier()], None)

    def send(self, buf: np.ndarray, peer: int, tag: int):
        return _Pending([self._live().Isend(_bytes(buf), peer, tag)], buf)

    def recv(self, buf: np.ndarray, peer, tag: int):
        """`peer` None receives from any rank; the pending's ``source()`` names the sender."""
        status = MPI.Status()
        source = MPI.ANY_SOURCE if peer is None else peer
        pending = _Pending([self._live().Irecv(_bytes(buf), source, tag)], buf, status)
        pending.source = status.Get_source
        return pending


def _timedelta(seconds: float):
    import datetime
    return datetime.timedelta(seconds=seconds)
