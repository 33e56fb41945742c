"""The collectives and point-to-point operations of ``torch.distributed``, on ember tensors.

Each function checks its arguments as PyTorch does, takes the tensor's own array as the buffer
when it is C-contiguous (no copy; otherwise a contiguous copy is sent and the result copied back),
starts the transport's non-blocking operation and returns a ``Work`` (``async_op=True``) or waits
for it with the group's timeout. Outputs are written in place, and their version counters are
bumped when the operation is issued, so autograd refuses a backward through a tensor a
collective overwrote. (PyTorch's c10d ops skip the bump; ember keeps the in-place rule.) Ranks
passed in (``src``, ``dst``) are global ranks; ``group_src`` / ``group_dst`` are group ranks. On a
rank outside `group` every operation does nothing and returns None.
"""
from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor
from .._core.dtype import bool_
from .c10d import ReduceOp, Work, GroupMember, _group, group_rank

__all__ = ["all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "reduce",
           "gather", "scatter", "barrier", "send", "recv", "isend", "irecv"]


def _check_tensor(t, param: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type Tensor\n"
                        f"             but got {type(t)} instead.")


def _check_list(tensors, param: str) -> None:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type List[Tensor]\n"
                        f"             but got {type(tensors)} instead.")


def _check_device(group, name: str, tensors) -> None:
    cuda = group.backend == "nccl"
    for t in tensors:
        if t.device.type != ("cuda" if cuda else "cpu"):
            raise RuntimeError(f"{name}: the {group.backend} backend takes {'CUDA' if cuda else 'CPU'} tensors, "
                               f"got a tensor on {t.device}")
        if cuda and t.get_device() != group.transport.device.id:
            raise RuntimeError(f"{name}: tensor on {t.device}, but this rank's NCCL communicator uses "
                               f"cuda:{group.transport.device.id} (one GPU per local rank: cuda:LOCAL_RANK)")


def _describe(name: str, *tensors) -> str:
    shapes = ", ".join(f"{str(t.dtype).replace('ember.', '')}{list(t.shape)}" for t in tensors if t is not None)
    return f"{name} on {shapes}" if shapes else name


def _buffer(t: Tensor, read_only: bool = False):
    """(contiguous array, copy-back or None): the tensor's own array when it is C-contiguous."""
    arr = t._data
    if arr.flags.c_contiguous:
        return arr, None
    buf = arr.copy()                          # C order, for NumPy and CuPy alike
    if read_only:
        return buf, None

    def copy_back():
        arr[...] = buf
    return buf, copy_back


def _empty_like(arr, shape):
    if isinstance(arr, np.ndarray):
        return np.empty(shape, arr.dtype)
    import cupy
    return cupy.empty(shape, arr.dtype)


def _run(group, name: str, start, finish, async_op: bool, describe, outputs=None):
    group.seq += 1
    work = Work(start(), finish, group, describe, outputs)
    if async_op:
        return work
    work.wait()
    return None


def _member(group) -> bool:
    return group is not GroupMember.NON_GROUP_MEMBER


def _reduce_op(op, name: str, tensor) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if tensor.is_complex() and op in (ReduceOp.MAX, ReduceOp.MIN):
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if tensor.dtype is bool_ and op is ReduceOp.AVG:
        raise RuntimeError(f"{name}: cannot use ReduceOp.AVG with boolean inputs")
    return op


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the group; every rank gets the result in place."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "all_reduce", [tensor])
    op = _reduce_op(op, "all_reduce", tensor)
    buf, copy_back = _buffer(tensor)
    tensor._bump_version()
    return _run(g, "all_reduce", lambda: g.transport.all_reduce(buf, op), copy_back, async_op,
                lambda: _describe(f"all_reduce({op})", tensor), [tensor])


def _root(g, src, group_src, what: str, name: str) -> int:
    if group_src is not None:
        if src is not None:
            raise ValueError(f"{name}: pass {what} or group_{what}, not both")
        if not isinstance(group_src, int) or not 0 <= group_src < g.size():
            raise ValueError(f"{name}: group_{what}={group_src!r} is not a rank of a group of {g.size()}")
        return group_src
    return group_rank(g, 0 if src is None else src, what)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy `tensor` of rank `src` into `tensor` on every rank."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "broadcast", [tensor])
    root = _root(g, src, group_src, "src", "broadcast")
    buf, copy_back = _buffer(tensor, read_only=g.transport.rank == root)
    if g.transport.rank != root:
        tensor._bump_version()
    return _run(g, "broadcast", lambda: g.transport.broadcast(buf, root), copy_back, async_op,
                lambda: _describe(f"broadcast(src={g.ranks[root]})", tensor), [tensor])


def _check_same(name: str, tensors, like, what: str = "tensor") -> None:
    for i, t in enumerate(tensors):
        if t.dtype != like.dtype:
            raise RuntimeError(f"{name}: invalid {what} type at index {i} (expected {like.dtype}, got {t.dtype})")
        if tuple(t.shape) != tuple(like.shape):
            raise RuntimeError(f"{name}: invalid {what} size at index {i} (expected {tuple(like.shape)}, got "
                               f"{tuple(t.shape)})")


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Every rank's `tensor` into ``tensor_list[rank]``, on every rank."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "all_gather", [tensor, *tensor_list])
    if len(tensor_list) != g.size():
        raise RuntimeError(f"all_gather: invalid output tensor list (expected length {g.size()}, got "
                           f"{len(tensor_list)})")
    _check_same("all_gather", tensor_list, tensor)
    inp, _ = _buffer(tensor, read_only=True)
    out = _empty_like(inp, (g.size(),) + inp.shape)
    for t in tensor_list:
        t._bump_version()

    def scatter_rows():
        for row, t in zip(out, tensor_list):
            t._data[...] = row
    return _run(g, "all_gather", lambda: g.transport.all_gather(out, inp), scatter_rows, async_op,
                lambda: _describe("all_gather", tensor))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's `input_tensor`, concatenated in rank order, into `output_tensor`."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "all_gather_into_tensor", [output_tensor, input_tensor])
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError(f"all_gather_into_tensor: invalid tensor type (output {output_tensor.dtype}, input "
                           f"{input_tensor.dtype}): the output must have the input's dtype")
    if output_tensor.numel() != g.size() * input_tensor.numel():
        raise RuntimeError(f"all_gather_into_tensor: output tensor size ({output_tensor.numel()}) must be equal to "
                         f"world_size ({g.size()}) times input tensor size ({input_tensor.numel()})")
    inp, _ = _buffer(input_tensor, read_only=True)
    out, copy_back = _buffer(output_tensor)
    output_tensor._bump_version()
    return _run(g, "all_gather_into_tensor", lambda: g.transport.all_gather(out, inp), copy_back, async_op,
                lambda: _describe("all_gather_into_tensor", output_tensor, input_tensor))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `input` (world size blocks of `output`'s size) over the group; rank r gets block r."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "reduce_scatter_tensor", [output, input])
    op = _reduce_op(op, "reduce_scatter_tensor", input)
    if output.dtype != input.dtype:
        raise RuntimeError(f"reduce_scatter_tensor: invalid tensor type (output {output.dtype}, input {input.dtype}): "
                           "the input must have the output's dtype")
    if input.numel() != g.size() * output.numel():
        raise RuntimeError(f"reduce_scatter_tensor: input tensor size ({input.numel()}) must be the same as output "
                         f"size ({output.numel()}) times world size ({g.size()})")
    inp, _ = _buffer(input, read_only=True)
    out, copy_back = _buffer(output)
    output._bump_version()
    return _run(g, "reduce_scatter_tensor", lambda: g.transport.reduce_scatter(out, inp, op), copy_back, async_op,
                lambda: _describe(f"reduce_scatter_tensor({op})", output, input))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False, group_dst=None):
    """Reduce `tensor` over the group into `tensor` on rank `dst` (other ranks' tensors are kept)."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "reduce", [tensor])
    op = _reduce_op(op, "reduce", tensor)
    root = _root(g, dst, group_dst, "dst", "reduce")
    is_root = g.transport.rank == root
    buf, copy_back = _buffer(tensor, read_only=not is_root)
    if is_root:
        tensor._bump_version()
    return _run(g, "reduce", lambda: g.transport.reduce(buf, op, root), copy_back, async_op,
                lambda: _describe(f"reduce({op}, dst={g.ranks[root]})", tensor))


def _check_root_list(g, name, arg, tensors, is_root, tensor):
    """gather's output list / scatter's input list: given on the root alone, one tensor a rank,
    each like `tensor` (PyTorch's errors and messages)."""
    side, kind = ("destination", "output") if name == "gather" else ("source", "input")
    if not is_root:
        if tensors:
            raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{side} ranks.")
        return
    if not tensors:
        raise ValueError(f"Argument ``{arg}`` must be specified on {side} rank.")
    _check_list(tensors, arg)
    if len(tensors) != g.size():
        raise RuntimeError(f"{name}: invalid {kind} tensor list (expected length {g.size()}, got {len(tensors)})")
    _check_same(name, tensors, tensor)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False, group_dst=None):
    """Every rank's `tensor` into ``gather_list`` on rank `dst`."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    root = _root(g, dst, group_dst, "dst", "gather")
    is_root = g.transport.rank == root
    _check_root_list(g, "gather", "gather_list", gather_list, is_root, tensor)
    _check_device(g, "gather", [tensor, *(gather_list or ())])
    inp, _ = _buffer(tensor, read_only=True)
    out = _empty_like(inp, (g.size(),) + inp.shape) if is_root else None
    finish = None
    if is_root:
        for t in gather_list:
            t._bump_version()

        def finish():
            for row, t in zip(out, gather_list):
                t._data[...] = row
    return _run(g, "gather", lambda: g.transport.gather(out, inp, root), finish, async_op,
                lambda: _describe(f"gather(dst={g.ranks[root]})", tensor))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False, group_src=None):
    """``scatter_list[r]`` of rank `src` into `tensor` on rank r."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    root = _root(g, src, group_src, "src", "scatter")
    is_root = g.transport.rank == root
    inp = None
    _check_root_list(g, "scatter", "scatter_list", scatter_list, is_root, tensor)
    if is_root:
        _check_device(g, "scatter", [tensor, *scatter_list])
        first = scatter_list[0]._data
        inp = _empty_like(first, (g.size(),) + first.shape)
        for row, t in zip(inp, scatter_list):
            row[...] = t._data
    _check_device(g, "scatter", [tensor])
    out, copy_back = _buffer(tensor)
    tensor._bump_version()
    return _run(g, "scatter", lambda: g.transport.scatter(out, inp, root), copy_back, async_op,
                lambda: _describe(f"scatter(src={g.ranks[root]})", tensor))


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group reaches the barrier (with the group's timeout)."""
    if not _member(group):
        return None
    g = _group(group)
    return _run(g, "barrier", g.transport.barrier, None, async_op, lambda: "barrier")


def _peer(g, rank, group_rank_, what: str, name: str) -> int:
    if rank is None and group_rank_ is None:
        raise ValueError(f"{name}: {what} must be given")
    peer = _root(g, rank, group_rank_, what, name)
    if peer == g.transport.rank:
        word = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {word} rank: {word} rank should not be the same as the rank of the current "
                         "process.")
    return peer


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Start sending `tensor` to rank `dst`; returns the Work."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "send", [tensor])
    peer = _peer(g, dst, group_dst, "dst", "send")
    buf, _ = _buffer(tensor, read_only=True)
    return _run(g, "send", lambda: g.transport.send(buf, peer, tag), None, True,
                lambda: _describe(f"send(dst={g.ranks[peer]}, tag={tag})", tensor))


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns the Work,
    whose ``result()`` after ``wait()`` is the sender's global rank."""
    _check_tensor(tensor, "tensor")
    if not _member(group):
        return None
    g = _group(group)
    _check_device(g, "recv", [tensor])
    peer = None if src is None and group_src is None else _peer(g, src, group_src, "src", "recv")
    buf, copy_back = _buffer(tensor)
    tensor._bump_version()
    g.seq += 1
    pending = g.transport.recv(buf, peer, tag)
    work = Work(pending, copy_back, g, lambda: _describe(f"recv(src={'any' if peer is None else g.ranks[peer]}, "
                                                         f"tag={tag})", tensor))

    def sender():
        return g.ranks[pending.source()] if work.is_completed() else None
    work.result = sender
    return work


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Receive into `tensor`; returns the sender's global rank (-1 outside `group`)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.result()

