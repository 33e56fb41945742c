"""The NCCL transport (CUDA tensors): ``cupy.cuda.nccl`` communicators, rendezvous over MPI.

Rank 0 makes the NCCL unique id and broadcasts it over the MPI communicator the launcher set up;
every rank then joins ``NcclCommunicator(world, id, rank)`` on the GPU of its local rank (one GPU
per local rank, as torchrun's convention; ``device_id`` overrides it). Operations run on a
communication stream that first waits for the current stream (so it sees the tensors' latest
values); an event recorded after the operation is what ``test()`` polls, and the current stream
waits for that event before the result is used. A timed-out operation aborts the communicator
(``ncclCommAbort``), which frees the GPU from the stuck kernel. Data moves as bytes where nothing is
computed; reductions use NCCL's types (bool as uint8 with max/min for or/and, complex as pairs of
reals for SUM/AVG). int16 cannot be reduced by NCCL and is refused, as in PyTorch.
"""
from __future__ import annotations

import os

import numpy as np

from .c10d import ReduceOp

_NCCL_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.AVG: 4}
_BOOL_OPS = {ReduceOp.SUM: 2, ReduceOp.MAX: 2, ReduceOp.PRODUCT: 3, ReduceOp.MIN: 3}
# ncclDataType_t values (stable across NCCL 2.x)
_NCCL_TYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6,
               "float32": 7, "float64": 8, "bfloat16": 9}
_UINT8 = 1


def _reduce_view(arr, op: ReduceOp):
    """(array NCCL reduces, its ncclDataType_t, its ncclRedOp_t) for `arr` reduced by `op`."""
    name = arr.dtype.name
    if name == "bool":
        return arr.view(np.uint8), _UINT8, _BOOL_OPS[op]
    if arr.dtype.kind == "c":
        if op not in (ReduceOp.SUM, ReduceOp.AVG):
            raise ValueError(f"the NCCL backend does not support {op} on complex tensors")
        real = arr.view(np.float32 if name == "complex64" else np.float64)
        return real, _NCCL_TYPES[real.dtype.name], _NCCL_OPS[op]
    if name not in _NCCL_TYPES:
        raise RuntimeError(f"Unsupported data type for NCCL process group: {name} (NCCL cannot reduce it)")
    return arr, _NCCL_TYPES[name], _NCCL_OPS[op]


class _Launched:
    """An operation queued on the communication stream; `test()` asks its event."""

    def __init__(self, transport, keep) -> None:
        import cupy
        self.transport = transport
        self.keep = keep                   # arrays in use until the operation finishes
        self.event = cupy.cuda.Event(disable_timing=True)
        self.event.record(transport.stream)

    def test(self) -> bool:
        import cupy
        if self.event is None:
            return True
        if not self.event.done:
            self.transport.comm.check_async_error()    # a peer's failure surfaces here, not as a hang
            return False
        cupy.cuda.get_current_stream().wait_event(self.event)
        self.event = self.keep = None
        return True

    def stream_wait(self) -> None:
        """The current stream waits for the operation's event; the host goes on (Work.wait_stream)."""
        import cupy
        if self.event is not None:
            cupy.cuda.get_current_stream().wait_event(self.event)

    def abandon(self) -> bool:
        """ncclCommAbort: the stuck kernel ends, and the communicator with it."""
        self.transport.comm.abort()
        return False


class NcclTransport:
    def __init__(self, mpi_comm, device_id=None) -> None:
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise RuntimeError("init_process_group(backend='nccl') needs CuPy with NCCL (pip install "
                               "'ember[gpu]')") from e
        if not nccl.available:
            raise RuntimeError("init_process_group(backend='nccl'): CuPy finds no NCCL library; install the NCCL "
                               "wheel CuPy asks for (e.g. nvidia-nccl-cu13)")
        self.nccl, self.mpi = nccl, mpi_comm
        self.rank, self.size = mpi_comm.Get_rank(), mpi_comm.Get_size()
        if device_id is None:
            local = os.environ.get("LOCAL_RANK")
            if local is None:
                from mpi4py import MPI
                local = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
            device_id = int(local) % cupy.cuda.runtime.getDeviceCount()
        self.device = cupy.cuda.Device(getattr(device_id, "index", device_id) or 0)
        self.device.use()
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        unique_id = mpi_comm.bcast(unique_id, root=0)
        self.comm = nccl.NcclCommunicator(self.size, unique_id, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def close(self) -> None:
        if self.comm is not None:
            self.comm.destroy()
            self.mpi.Free()
        self.comm = None

    def split(self, color, key: int, timeout: float):
        from mpi4py import MPI
        sub = self.mpi.Split(MPI.UNDEFINED if color is None else color, key)
        return None if sub == MPI.COMM_NULL else NcclTransport(sub, self.device.id)

    def _start(self):
        """The communication stream waits for the work queued so far on the current stream."""
        import cupy
        ready = cupy.cuda.Event(disable_timing=True)
        ready.record(cupy.cuda.get_current_stream())
        self.stream.wait_event(ready)
        return self.stream.ptr

    def all_reduce(self, buf, op: ReduceOp):
        view, dtype, nccl_op = _reduce_view(buf, op)
        self.comm.allReduce(view.data.ptr, view.data.ptr, view.size, dtype, nccl_op, self._start())
        return _Launched(self, buf)

    def reduce(self, buf, op: ReduceOp, root: int):
        view, dtype, nccl_op = _reduce_view(buf, op)
        self.comm.reduce(view.data.ptr, view.data.ptr, view.size, dtype, nccl_op, root, self._start())
        return _Launched(self, buf)

    def reduce_scatter(self, out, inp, op: ReduceOp):
        in_view, dtype, nccl_op = _reduce_view(inp, op)
        out_view, _, _ = _reduce_view(out, op)
        self.comm.reduceScatter(in_view.data.ptr, out_view.data.ptr, out_view.size, dtype, nccl_op, self._start())
        return _Launched(self, (out, inp))

    def broadcast(self, buf, root: int):
        self.comm.broadcast(buf.data.ptr, buf.data.ptr, buf.nbytes, _UINT8, root, self._start())
        return _Launched(self, buf)

    def all_gather(self, out, inp):
        self.comm.allGather(inp.data.ptr, out.data.ptr, inp.nbytes, _UINT8, self._start())
        return _Launched(self, (out, inp))

    def _exchange(self, rows, mine, root: int, to_root: bool):
        """gather (`to_root`) or scatter as grouped sends and receives with the root."""
        stream = self._start()
        self.nccl.groupStart()
        if self.rank == root:
            for r, row in enumerate(rows):
                if r == root:
                    continue
                if to_root:
                    self.comm.recv(row.data.ptr, row.nbytes, _UINT8, r, stream)
                else:
                    self.comm.send(row.data.ptr, row.nbytes, _UINT8, r, stream)
        elif to_root:
            self.comm.send(mine.data.ptr, mine.nbytes, _UINT8, root, stream)
        else:
            self.comm.recv(mine.data.ptr, mine.nbytes, _UINT8, root, stream)
        self.nccl.groupEnd()
        if self.rank == root:
            with self.stream:
                if to_root:
                    rows[root][...] = mine
                else:
                    mine[...] = rows[root]
        return _Launched(self, (rows, mine))

    def gather(self, out, inp, root: int):
        return self._exchange(out, inp, root, to_root=True)

    def scatter(self, out, inp, root: int):
        return self._exchange(inp, out, root, to_root=False)

    def barrier(self):
        import cupy
        token = cupy.zeros(1, dtype=cupy.float32)
        return self.all_reduce(token, ReduceOp.SUM)

    def send(self, buf, peer: int, tag: int):
        self.comm.send(buf.data.ptr, buf.nbytes, _UINT8, peer, self._start())
        return _Launched(self, buf)

    def recv(self, buf, peer, tag: int):
        if peer is None:
            raise RuntimeError("recv from any source is not supported by the NCCL backend; pass src")
        self.comm.recv(buf.data.ptr, buf.nbytes, _UINT8, peer, self._start())
        pending = _Launched(self, buf)
        pending.source = lambda: peer
        return pending
