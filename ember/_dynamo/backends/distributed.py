"""DDP's graph splitting: a captured graph cut at gradient-bucket boundaries, each piece compiled alone.

AOT autograd makes a compiled graph's backward ONE autograd node: every parameter's gradient
arrives when the whole backward has run, so DistributedDataParallel's reducer can start no bucket's
all-reduce before the end of backward. When dynamo captures a frame while a DDP module runs its
wrapped module (``DistributedDataParallel.forward`` marks it, see ``active_ddp_module``), the
backend is wrapped by ``DDPOptimizer`` (PyTorch's name for the same idea; ``config.optimize_ddp``
turns it off):

1. **Plan.** Walk the graph from its output back to its inputs, counting the bytes of the
   parameters (graph inputs that are the DDP module's parameters requiring grad) each node reads
   for the first time. When the current bucket holds at least its cap (the first one 1 MiB, the
   others ``bucket_cap_mb``, as the reducer's buckets) and a node reads a parameter not yet
   counted, a new bucket starts there. Backward runs the pieces in reverse, so the first bucket is
   the graph's tail: its gradients are ready first.
2. **Split.** Each bucket becomes a piece: a contiguous run of the graph's nodes (program order and
   topological order are kept), as its own GraphModule whose inputs are the graph inputs and
   earlier pieces' values it reads and whose outputs are the values later pieces or the graph's
   output read. A non-tensor value (a tuple from ``split``, a size) never crosses a cut: the pieces
   between its producer and its last reader are merged. A graph that switches grad mode inside is
   not split.
3. **Compile.** Each piece is compiled by the wrapped backend on its first call, with the real
   values reaching it (AOT autograd traces them on fake tensors: nothing is computed twice), so
   each piece's backward is its own autograd node and a bucket's hooks fire, and its all-reduce
   starts, while the earlier pieces' backward still runs.

Pieces and the reducer's buckets are both cut by parameter bytes in reverse order, the pieces by
where the graph reads a parameter, the reducer by registration order; when the two orders differ
(a parameter registered early but used late) a bucket waits for a later piece, which costs overlap,
never correctness. The plan is on the returned callable: ``compiled.ddp_pieces`` lists each
piece's parameter names, in forward order.
"""
from __future__ import annotations

from ...fx.node import map_arg

GRAD_MODE_SWITCHES = ("_set_grad_enabled", "_enter_inference_mode", "_exit_inference_mode")


def _is_tensor_value(node) -> bool:
    from ..._core.tensor import Tensor
    return isinstance(node.meta.get("val"), Tensor)


class DDPOptimizer:
    """``DDPOptimizer(bucket_bytes_cap, backend, params).compile_fn`` is a dynamo backend that cuts
    the graph where the gradient buckets of `params` (a DDP module's parameters) end."""

    def __init__(self, bucket_bytes_cap: int, backend_compile_fn, params, first_bucket_cap: int | None = None):
        from ...distributed.reducer import FIRST_BUCKET_BYTES
        self.bucket_bytes_cap = int(bucket_bytes_cap)
        self.first_bucket_cap = min(FIRST_BUCKET_BYTES if first_bucket_cap is None else first_bucket_cap,
                                    self.bucket_bytes_cap)
        self.backend_compile_fn = backend_compile_fn
        self.param_ids = {id(p) for p in params if p.requires_grad}

    # -- 1. plan ----------------------------------------------------------------------------------
    def plan(self, gm, example_inputs) -> list:
        """Lists of compute nodes, one per piece, in forward order."""
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        param_bytes = {n: v.numel() * v.element_size() for n, v in zip(placeholders, example_inputs)
                       if id(v) in self.param_ids}
        compute = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
        if any(getattr(n.target, "__name__", "") in GRAD_MODE_SWITCHES for n in compute):
            return [compute]
        buckets, size, counted = [[]], 0, set()
        for node in reversed(compute):
            new = [a for a in node.all_input_nodes if a in param_bytes and a not in counted]
            cap = self.first_bucket_cap if len(buckets) == 1 else self.bucket_bytes_cap
            if new and size >= cap:
                buckets.append([])
                size = 0
            for a in new:
                counted.add(a)
                size += param_bytes[a]
            buckets[-1].append(node)
        pieces = [list(reversed(b)) for b in reversed(buckets) if b]
        return self._merge_non_tensor_crossings(pieces)

    @staticmethod
    def _merge_non_tensor_crossings(pieces: list) -> list:
        """Merge the pieces between a non-tensor value's producer and its last reader."""
        while True:
            where = {n: i for i, piece in enumerate(pieces) for n in piece}
            for i, piece in enumerate(pieces):
                last = max((where.get(u, i) for n in piece if not _is_tensor_value(n) for u in n.users
                            if u.op != "output"), default=i)
                if last > i:
                    merged = [n for p in pieces[i:last + 1] for n in p]
                    pieces = pieces[:i] + [merged] + pieces[last + 1:]
                    break
            else:
                return pieces

    # -- 2. and 3. split and compile ----------------------------------------------------------------
    def compile_fn(self, gm, example_inputs):
        pieces = self.plan(gm, example_inputs)
        if len(pieces) <= 1:
            return self.backend_compile_fn(gm, example_inputs)
        return SplitGraph(gm, pieces, self.backend_compile_fn, example_inputs, self.param_ids)


class _Piece:
    """One piece: its GraphModule, the slots it reads and writes, compiled on its first call."""
    __slots__ = ("gm", "inputs", "outputs", "frees", "run", "backend", "params")

    def __init__(self, gm, inputs, outputs, backend, params):
        self.gm, self.inputs, self.outputs, self.backend, self.params = gm, inputs, outputs, backend, params
        self.frees = ()
        self.run = self._compile_then_run

    def _compile_then_run(self, *args):
        compiled = self.backend(self.gm, list(args))
        self.run = compiled if compiled is not None else self.gm.forward
        return self.run(*args)


class SplitGraph:
    """The callable dynamo gets instead of the backend's: runs the pieces in order, passing values
    through a list of slots (one per graph input and per value that crosses a cut)."""

    def __init__(self, gm, pieces, backend, example_inputs, param_ids):
        from ...fx import Graph, GraphModule
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        output_node = next(n for n in gm.graph.nodes if n.op == "output")
        slot = {n: i for i, n in enumerate(placeholders)}
        names = {n: n.name for n, v in zip(placeholders, example_inputs) if id(v) in param_ids}
        piece_of = {n: i for i, piece in enumerate(pieces) for n in piece}
        self.pieces = []
        for i, nodes in enumerate(pieces):
            graph, env, inputs = Graph(), {}, []

            def read(a, graph=graph, env=env, inputs=inputs):
                if a not in env:          # a graph input or an earlier piece's value
                    env[a] = graph.placeholder(a.name)
                    env[a].meta = dict(a.meta)
                    inputs.append(slot[a])
                return env[a]
            for n in nodes:
                map_arg((n.args, n.kwargs), read)
                env[n] = graph.node_copy(n, lambda a: env[a])
            crossing = [n for n in nodes if any(u.op == "output" or piece_of[u] > i for u in n.users)]
            for n in crossing:
                slot[n] = len(slot)
            graph.output(tuple(env[n] for n in crossing))
            params = [names[a] for a in env if a in names]
            self.pieces.append(_Piece(GraphModule({}, graph, lazy_recompile=True), tuple(inputs),
                                      tuple(slot[n] for n in crossing), backend, params))
        last_read = {}
        for i, piece in enumerate(self.pieces):
            for s in piece.inputs:
                last_read[s] = i
        returned = set()
        self.output = map_arg(output_node.args[0], lambda n: returned.add(slot[n]) or _SlotRef(slot[n]))
        for s, i in last_read.items():     # a crossing value is dropped after its last reader
            if s >= len(placeholders) and s not in returned:
                self.pieces[i].frees += (s,)
        self.n_inputs, self.n_slots = len(placeholders), len(slot)
        self.ddp_pieces = [p.params for p in self.pieces]

    def __call__(self, *args):
        slots = list(args)
        slots.extend([None] * (self.n_slots - self.n_inputs))
        for piece in self.pieces:
            values = piece.run(*[slots[s] for s in piece.inputs])
            for s in piece.frees:
                slots[s] = None
            for s, v in zip(piece.outputs, values):
                slots[s] = v
        return _fill(self.output, slots)


class _SlotRef:
    __slots__ = ("slot",)

    def __init__(self, slot: int):
        self.slot = slot


def _fill(structure, slots):
    if isinstance(structure, _SlotRef):
        return slots[structure.slot]
    if isinstance(structure, (tuple, list)):
        return type(structure)(_fill(s, slots) for s in structure)
    if isinstance(structure, dict):
        return {k: _fill(v, slots) for k, v in structure.items()}
    return structure
