"""``DistributedDataParallel``: one model replica per rank, gradients averaged during backward.

At construction the parameter shapes are checked to agree across ranks and rank 0's parameters and
buffers are broadcast to every rank. Each forward (with grad enabled, outside ``no_sync()``)
prepares the reducer (``ember/distributed/reducer.py``), which all-reduces gradient buckets while
backward runs and writes the averages into ``.grad`` when backward ends. Buffers (BatchNorm's
running statistics) are broadcast from rank 0 before every forward when ``broadcast_buffers``.
Checkpoint from rank 0: ``if dist.get_rank() == 0: ember.save(ddp.module.state_dict(), path)``.
``register_comm_hook`` replaces how each bucket is reduced (PyTorch's ``default_hooks``).

``gradient_as_bucket_view`` and ``static_graph`` are accepted and have no effect:
``gradient_as_bucket_view`` cannot save the copy here because ember's autograd accumulates
``.grad`` out of place (a new tensor each backward, so a grad that views a bucket would not stay
one); the gradients are the same either way (on NCCL without a hook the averaged ``.grad`` is a view
of this backward's bucket: no copy back, see reducer.finish). ``static_graph`` is an optimisation
hint in PyTorch (plus support for reentrant checkpointing, which ember's reducer does not need).
"""
from __future__ import annotations

import contextlib
import threading

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_running = threading.local()      # .ddp: the DDP module whose wrapped module runs now (this thread)


def active_ddp_module():
    """The DistributedDataParallel module whose wrapped module is running on this thread, or None:
    dynamo cuts what it captures then at the module's gradient buckets
    (ember/_dynamo/backends/distributed.py), as torch's DDPOptimizer does."""
    return getattr(_running, "ddp", None)


class DistributedDataParallel(Module):
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **unused) -> None:
        super().__init__()
        from ...distributed import c10d, reducer
        self.process_group = c10d._group(process_group)
        self.module = module
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        self.device_ids = device_ids
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._verify_same_model([p for _, p in named])
        self._broadcast_from_rank0(list(module.parameters()) + list(module.buffers()))
        self._join_enabled = False
        self.reducer = reducer.Reducer([p for _, p in named], [n for n, _ in named], self.process_group,
                                       self.bucket_bytes_cap, find_unused_parameters)

    def _verify_same_model(self, params) -> None:
        """Every rank must hold the same parameter shapes (PyTorch's
        ``_verify_param_shape_across_processes``): one all-gather of a signature."""
        from ... import tensor, zeros, int64
        from ...distributed import all_gather_into_tensor
        shapes = tuple(tuple(p.shape) for p in params)
        signature = tensor([len(params), hash(shapes) & ((1 << 62) - 1)], dtype=int64, device=params[0].device)
        everyone = zeros(2 * self.process_group.size(), dtype=int64, device=params[0].device)
        all_gather_into_tensor(everyone, signature, self.process_group)
        rows = everyone.view(-1, 2).tolist()
        for rank, row in enumerate(rows):
            if row != rows[0]:
                raise RuntimeError(f"DDP expects same model across all ranks, but rank {self.process_group.ranks[rank]}"
                                   f" has {row[0]} params (shape signature {row[1]}), while rank "
                                   f"{self.process_group.ranks[0]} has {rows[0][0]} params (shape signature "
                                   f"{rows[0][1]}).")

    def _broadcast_from_rank0(self, tensors) -> None:
        self._broadcast_from(tensors, 0)

    def _broadcast_from(self, tensors, group_rank: int) -> None:
        from ... import no_grad
        from ...distributed import broadcast
        with no_grad():
            works = [broadcast(t, src=self.process_group.ranks[group_rank], group=self.process_group, async_op=True)
                     for t in tensors]
        reducer = self.__dict__.get("reducer")      # none yet at construction: wait there
        for work in works:            # NCCL: in stream order, checked at the next forward
            reducer.defer(work) if reducer is not None else work.wait()

    def forward(self, *inputs, **kwargs):
        return self._forward_through(self.module, inputs, kwargs)

    def _ember_compile_inner(self, compile_module):
        """``ember.compile(ddp)``: DDP's own forward (buffer broadcasts, the reducer) runs eagerly
        around the compiled wrapped module, as torch's dynamo skips DDP's forward and compiles the
        module's; `compile_module(module)` compiles it with the options of that call."""
        compiled = compile_module(self.module)
        return lambda *inputs, **kwargs: self._forward_through(compiled, inputs, kwargs)

    def _forward_through(self, module, inputs, kwargs):
        from ...autograd import is_grad_enabled
        self.reducer.check_finished()
        self.reducer.settle()
        source = 0
        if self._join_enabled:          # tell ranks that ran out of data (join()) that this one trains on
            from ...distributed.algorithms.join import training_ranks
            source = training_ranks(self, True)[-1]
        if self.broadcast_buffers:
            self._broadcast_from(list(self.module.buffers()), source)
        previous, _running.ddp = getattr(_running, "ddp", None), self
        try:
            outputs = module(*inputs, **kwargs)
        finally:
            _running.ddp = previous
        if is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare(outputs)
        else:
            self.reducer.active = False
        return outputs

    def register_comm_hook(self, state: object, hook) -> None:
        """``hook(state, bucket)`` replaces the averaging all-reduce of each bucket: it gets a
        ``GradBucket`` and returns an ``ember.futures.Future`` of the bucket's reduced gradients
        (see ``ember.distributed.algorithms.ddp_comm_hooks.default_hooks``). Once per model."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        self.reducer.register_comm_hook(state, hook)

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """A context for uneven inputs: a rank whose data ran out shadows the others' collectives
        until every rank has left it (``ember/distributed/algorithms/join.py``)."""
        from ...distributed.algorithms.join import Join
        return Join(self, enable, divide_by_initial_world_size, throw_on_early_termination)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally; the first synchronised backward
        after it all-reduces the accumulated sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
