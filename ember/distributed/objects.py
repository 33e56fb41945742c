"""``all_gather_object`` and ``broadcast_object_list``: picklable Python objects over the tensor
collectives, as PyTorch sends them (pickled into uint8 tensors, lengths first). Unpickling runs
code: use them only among the ranks of your own job, never for data from elsewhere.
"""
from __future__ import annotations

import pickle

import numpy as np

from .c10d import GroupMember, _group
from . import collectives

__all__ = ["all_gather_object", "broadcast_object_list"]


def _device(g) -> str:
    return f"cuda:{g.transport.device.id}" if g.backend == "nccl" else "cpu"


def _bytes_tensor(payload: bytes, length: int, device: str):
    from .. import from_numpy
    data = np.zeros(length, dtype=np.uint8)
    data[:len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    return from_numpy(data).to(device)


def _lengths(g, mine: int, device: str) -> list:
    from .. import tensor, zeros, int64
    everyone = zeros(g.size(), dtype=int64, device=device)
    collectives.all_gather_into_tensor(everyone, tensor([mine], dtype=int64, device=device), g)
    return everyone.tolist()


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` = rank r's `obj`, on every rank of the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    g = _group(group)
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries, the group {g.size()} ranks")
    device = _device(g)
    payload = pickle.dumps(obj)
    lengths = _lengths(g, len(payload), device)
    width = max(lengths)
    out = _bytes_tensor(b"", width * g.size(), device)
    collectives.all_gather_into_tensor(out, _bytes_tensor(payload, width, device), g)
    rows = out.cpu().numpy().reshape(g.size(), width)
    for r, n in enumerate(lengths):
        object_list[r] = pickle.loads(rows[r, :n].tobytes())


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Replace the entries of `object_list` on every rank with those of rank `src`."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    g = _group(group)
    root = collectives._root(g, src, group_src, "src", "broadcast_object_list")
    device = _device(g)
    payload = pickle.dumps(list(object_list)) if g.transport.rank == root else b""
    from .. import tensor, int64
    length = tensor([len(payload)], dtype=int64, device=device)
    collectives.broadcast(length, group=g, group_src=root)
    data = _bytes_tensor(payload, int(length.item()), device)
    collectives.broadcast(data, group=g, group_src=root)
    if g.transport.rank != root:
        received = pickle.loads(data.cpu().numpy().tobytes())
        if len(received) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {g.ranks[root]} sent {len(received)} objects, this rank's "
                             f"list holds {len(object_list)}")
        object_list[:] = received
