"""DDP's gradient reducer: buckets of parameters whose gradients are all-reduced while backward runs.

Parameters are put in buckets in reverse registration order (roughly the order backward produces
their gradients): the first bucket holds up to 1 MiB, the others up to ``bucket_cap_mb``, one dtype
per bucket, as PyTorch's reducer does. A post-accumulate-grad hook on every parameter marks it
ready; when a bucket's last parameter is ready, its gradients are flattened, divided by the world
size and all-reduced with ``async_op=True`` — while backward continues with the rest of the graph.
Buckets start strictly in order (bucket i after bucket i-1) so every rank issues the same
collectives in the same order even when gradients arrive in another order. When the last bucket
has started, a callback queued on the autograd engine waits for every bucket at the end of backward
and copies the averaged gradients back into ``.grad``.

Each bucket goes through a communication hook ``hook(state, GradBucket) -> Future[Tensor]``: by
default ``default_hooks.allreduce_hook`` (divide by the world size, all-reduce), or the one given
to ``DistributedDataParallel.register_comm_hook``; the future's value is the bucket's reduced
gradients. A second backward through the same forward (``retain_graph=True``) is not reduced and
accumulates this rank's gradients locally, as PyTorch's reducer does (its hooks run only between a
forward and the end of the first backward).

Unused parameters: with ``find_unused_parameters=True`` the forward's outputs are traced through the
autograd graph and parameters not reached are marked ready when backward's first gradient arrives
(zeros in their bucket); a parameter no rank used keeps ``grad=None``, found by one more
all-reduce of a usage mask. Without it, a bucket that never fills leaves the reduction unfinished
and the next forward raises PyTorch's "Expected to have finished reduction in the prior
iteration" error naming the parameters. A forward that no backward follows is forgotten, as in
PyTorch.
"""
from __future__ import annotations

import importlib

import numpy as np

from .. import empty, no_grad, tensor, int32
from .._core.tensor import _make
from .c10d import ReduceOp, Work
from . import collectives
from .._core.tensor import Tensor
from .algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

FIRST_BUCKET_BYTES = 1024 * 1024


def make_buckets(params, cap_bytes: int):
    """Lists of parameter indices: reverse order, one dtype each, the first up to 1 MiB."""
    buckets, current, size, dtype = [], [], 0, None
    limit = min(FIRST_BUCKET_BYTES, cap_bytes)
    for i in reversed(range(len(params))):
        p = params[i]
        nbytes = p.numel() * p.element_size()
        if current and (p.dtype != dtype or size + nbytes > limit):
            buckets.append(current)
            current, size, limit = [], 0, cap_bytes
        current.append(i)
        size += nbytes
        dtype = p.dtype
    if current:
        buckets.append(current)
    return buckets


def reached_parameters(outputs) -> set:
    """ids of the leaf tensors the autograd graph of `outputs` accumulates into."""
    from .._core.tensor import Tensor
    roots, stack = [], [outputs]
    while stack:
        obj = stack.pop()
        if isinstance(obj, Tensor):
            if obj.grad_fn is not None:
                roots.append(obj.grad_fn)
            elif obj.requires_grad:
                roots.append(obj)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
    found, seen = set(), set()
    while roots:
        node = roots.pop()
        if isinstance(node, Tensor):
            found.add(id(node))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            found.add(id(variable))
        roots.extend(edge[0] for edge in node.next_functions if edge is not None and edge[0] is not None)
    return found


def _finished(work) -> bool:
    """Poll a bucket's Work (the built-in NCCL path) or its hook's Future once."""
    return work.is_completed() if isinstance(work, Work) else work.done()


class GradBucket:
    """What a communication hook sees of one bucket: its flattened gradients (``buffer()``, not yet
    averaged), its position, and its parameters with their gradients as views of the buffer."""

    def __init__(self, index: int, is_last: bool, buffer, params) -> None:
        self._index, self._is_last, self._buffer, self._params = index, is_last, buffer, params

    def index(self) -> int:
        return self._index

    def is_last(self) -> bool:
        return self._is_last

    def buffer(self):
        return self._buffer

    def set_buffer(self, buffer) -> None:
        self._buffer = buffer

    def parameters(self) -> list:
        return list(self._params)

    def gradients(self) -> list:
        views, offset = [], 0
        for p in self._params:
            views.append(self._buffer[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        return views


class Reducer:
    def __init__(self, params, names, group, bucket_cap_bytes: int, find_unused: bool) -> None:
        self.params, self.names, self.group = params, names, group
        self.find_unused = find_unused
        self.buckets = make_buckets(params, bucket_cap_bytes)
        self.bucket_of = {i: b for b, members in enumerate(self.buckets) for i in members}
        self.active = False            # hooks reduce only after a forward that prepared this backward
        self.expecting = False         # a backward began reducing and has not finished (PyTorch's
        self.used = []                 # require_finalize); used: the parameters the forward reached
        self.comm_hook, self.custom_hook = (group, allreduce_hook), False   # (state, hook(state, bucket))
        from .c10d import _group
        self._needs_progress = _group(group).backend != "nccl"
        # NCCL: the averaged buckets are used in stream order, the host does not wait for them
        # (torch's Work.wait on CUDA); their completion and timeout are checked at the next forward
        self._stream_ordered = not self._needs_progress
        self.owed = []                 # works whose host-side completion is checked by settle()
        self.handles = [p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(params)]

    def _hook(self, index: int):
        def mark_ready(param):
            if not self.active:
                return
            if not self.expecting:      # the first gradient of this backward: unused ones are ready too
                self.expecting = True
                for i, used in enumerate(self.used):
                    if not used:
                        self._mark_ready(i)
            self._mark_ready(index)
        return mark_ready

    def prepare(self, outputs) -> None:
        """Called at the end of a forward that will be followed by a synchronised backward."""
        self.check_finished()
        self.ready = [False] * len(self.params)
        self.missing = [len(b) for b in self.buckets]
        self.works = [None] * len(self.buckets)
        self.flats = [None] * len(self.buckets)
        self.next_bucket = self.polled = 0
        self.used = [True] * len(self.params)
        self.active, self.expecting = True, False
        if self.find_unused:
            reached = reached_parameters(outputs)
            self.used = [id(p) in reached for p in self.params]

    def check_finished(self) -> None:
        if not self.expecting:
            return
        late = [i for i, r in enumerate(self.ready) if not r]
        from .c10d import get_rank
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
            "participate in calculating loss.\nParameter indices which did not receive grad for rank "
            f"{get_rank()}: {' '.join(map(str, late))}\nParameters which did not receive grad for rank "
            f"{get_rank()}: {', '.join(self.names[i] for i in late)}")

    def _mark_ready(self, index: int) -> None:
        if self.ready[index]:
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter {self.names[index]} (index "
                               f"{index}) got its gradient twice in one backward; use no_sync() for several "
                               "backward passes per step, or static_graph=True is not supported")
        self.ready[index] = True
        self.missing[self.bucket_of[index]] -= 1
        # MPI progresses only inside MPI calls: poll the oldest unfinished bucket(s). NCCL needs no
        # polling, and a poll per gradient per bucket costs milliseconds a step on a GPT.
        while self.polled < self.next_bucket and self._needs_progress and _finished(self.works[self.polled]):
            self.polled += 1
        while self.next_bucket < len(self.buckets) and self.missing[self.next_bucket] == 0:
            self._launch(self.next_bucket)
            self.next_bucket += 1
            if self.next_bucket == len(self.buckets):
                from ..autograd.engine import queue_callback
                queue_callback(self.finish)

    def _pack(self, b: int):
        """The bucket's gradients in one new flat tensor: one allocation and one concatenate of the
        arrays (an ember op per gradient costs tens of microseconds of host time on a GPU: a reshape
        each was ~150 ops a GPT-2 step)."""
        params = [self.params[i] for i in self.buckets[b]]
        with no_grad():
            flat = empty(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
        xp = np if isinstance(flat._data, np.ndarray) else importlib.import_module("cupy")
        arrays = [p.grad._data.reshape(-1) if self.used[i] and p.grad is not None
                  else xp.zeros(p.numel(), flat._data.dtype) for i, p in zip(self.buckets[b], params)]
        xp.concatenate(arrays, out=flat._data)
        return flat

    def _launch(self, b: int) -> None:
        flat = self._pack(b)
        self.flats[b] = flat
        if self._stream_ordered and not self.custom_hook:    # allreduce_hook, keeping the Work itself
            flat.div_(self.group.size())
            self.works[b] = collectives.all_reduce(flat, group=self.group, async_op=True)
            return
        bucket = GradBucket(b, b == len(self.buckets) - 1, flat, [self.params[i] for i in self.buckets[b]])
        state, hook = self.comm_hook
        self.works[b] = hook(state, bucket)

    def register_comm_hook(self, state, hook) -> None:
        if self.custom_hook:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.comm_hook, self.custom_hook = (state, hook), True

    def settle(self) -> None:
        """Complete on the host what was left to the stream (raises the collective's timeout error
        when a peer never joined): at the start of the next forward."""
        owed, self.owed = self.owed, []
        for work in owed:
            work.wait()

    def defer(self, work) -> None:
        """Stream-order `work` where the backend can (NCCL), else wait for it now."""
        if work.wait_stream():
            self.owed.append(work)
        else:
            work.wait()

    def _reduced(self, b: int):
        """The bucket's averaged gradients: the value of the future its hook returned."""
        if isinstance(self.works[b], Work):           # the built-in NCCL path (_launch)
            self.defer(self.works[b])
            return self.flats[b]
        value = self.works[b].wait()
        flat = self.flats[b]
        if not isinstance(value, Tensor) or value.numel() != flat.numel():
            raise RuntimeError(f"DDP communication hook: the future of bucket {b} must hold a Tensor of "
                               f"{flat.numel()} elements (the bucket's buffer), got "
                               + (f"a Tensor of shape {tuple(value.shape)}" if isinstance(value, Tensor)
                                  else type(value).__name__))
        return value.reshape(-1)

    def finish(self) -> None:
        """End of backward: wait for every bucket, then write the averaged gradients (none are
        written when a bucket's hook fails; the reducer is ready for the next forward either way)."""
        try:
            used_anywhere = None
            if self.find_unused:
                mask = tensor([1 if u else 0 for u in self.used], dtype=int32, device=self.params[0].device)
                collectives.all_reduce(mask, ReduceOp.MAX, self.group)
                used_anywhere = mask.tolist()
            own = [isinstance(w, Work) for w in self.works]      # the built-in path's fresh buffers
            reduced = [self._reduced(b) for b in range(len(self.buckets))]
        finally:
            self.works = self.flats = None
            self.active = self.expecting = False
        # the built-in path's buffer is this backward's own: each .grad becomes a view of it, made at
        # the array level (no copy, no ember op; ember's autograd makes a new .grad tensor every
        # backward anyway); a hook's value may be its own state, so it is copied
        with no_grad():
            for b, members in enumerate(self.buckets):
                params = [self.params[i] for i in members]
                value = reduced[b] if own[b] else reduced[b].to(params[0].dtype)
                offset = 0
                for i, p in zip(members, params):
                    n = p.numel()
                    offset += n
                    if used_anywhere is not None and not used_anywhere[i]:
                        continue
                    if own[b]:
                        p.grad = _make(value._data[offset - n:offset].reshape(p.shape), value._keys)
                    elif p.grad is None:
                        p.grad = value[offset - n:offset].view(p.shape).clone()
                    else:
                        p.grad.copy_(value[offset - n:offset].view(p.shape))

    def remove_hooks(self) -> None:
        for h in self.handles:
            h.remove()
