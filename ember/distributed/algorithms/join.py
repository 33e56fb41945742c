"""``DistributedDataParallel.join()``: training on uneven inputs (PyTorch's ``Join`` for DDP).

Inside the context every DDP forward first all-gathers a flag (1: this rank still trains). A rank
whose data ran out leaves the ``with`` body and *shadows* the others: each round it gathers a 0,
and while some rank is still training it issues the collectives of one training iteration with
nothing to contribute — the buffer broadcast, one all-reduce per gradient bucket through the
model's communication hook on a zero bucket, the unused-parameter mask — so the others' collectives
find a partner. Gradients stay divided by the initial world size (PyTorch's default
``divide_by_initial_world_size=True``). Buffers are broadcast from the highest rank still training
(rank 0 may have left). When every rank has joined, the parameters and buffers of the last rank to
join (the highest such rank) are broadcast, since the others skipped the last optimizer steps.
"""
from __future__ import annotations

from ..c10d import ReduceOp
from .. import collectives

__all__ = ["Join"]


def training_ranks(ddp, training: bool) -> list:
    """Group ranks that are still training, from one all-gather of a flag."""
    from ... import zeros, tensor, int32
    g, device = ddp.process_group, ddp.reducer.params[0].device
    flags = zeros(g.size(), dtype=int32, device=device)
    collectives.all_gather_into_tensor(flags, tensor([1 if training else 0], dtype=int32, device=device), g)
    return [r for r, f in enumerate(flags.tolist()) if f]


class Join:
    def __init__(self, ddp, enable: bool = True, divide_by_initial_world_size: bool = True,
                 throw_on_early_termination: bool = False) -> None:
        if not divide_by_initial_world_size or throw_on_early_termination:
            raise NotImplementedError("DistributedDataParallel.join: only divide_by_initial_world_size=True and "
                                      "throw_on_early_termination=False are supported by ember")
        self.ddp, self.enable = ddp, enable

    def __enter__(self):
        self.ddp._join_enabled = self.enable
        return self

    def __exit__(self, kind, value, traceback):
        ddp = self.ddp
        ddp._join_enabled = False
        if not self.enable or kind is not None:
            return None                 # an error: leave it to surface (the others time out)
        is_last = True
        while True:
            ranks = training_ranks(ddp, False)
            if not ranks:
                break
            is_last = False
            shadow_iteration(ddp, ranks[-1])
        self.sync_final_model(is_last)
        return None

    def sync_final_model(self, is_last: bool) -> None:
        from ... import tensor, int64
        g = self.ddp.process_group
        choice = tensor([g.rank() if is_last else -1], dtype=int64, device=self.ddp.reducer.params[0].device)
        collectives.all_reduce(choice, ReduceOp.MAX, g)
        self.ddp._broadcast_from(list(self.ddp.module.parameters()) + list(self.ddp.module.buffers()),
                                 int(choice.item()))


def shadow_iteration(ddp, src: int) -> None:
    """The collectives of one forward and backward, contributing zeros."""
    from ... import zeros, no_grad, int32
    from ..reducer import GradBucket
    if ddp.broadcast_buffers:
        ddp._broadcast_from(list(ddp.module.buffers()), src)
    red = ddp.reducer
    futures = []
    with no_grad():
        for b, members in enumerate(red.buckets):
            params = [red.params[i] for i in members]
            flat = zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
            state, hook = red.comm_hook
            futures.append(hook(state, GradBucket(b, b == len(red.buckets) - 1, flat, params)))
    if red.find_unused:
        collectives.all_reduce(zeros(len(red.params), dtype=int32, device=red.params[0].device), ReduceOp.MAX,
                               red.group)
    for f in futures:
        f.wait()
