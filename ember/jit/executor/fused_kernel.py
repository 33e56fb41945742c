"""What a ``prim::FusionGroup`` node runs: its subgraph compiled by the one fuser.

`FusedKernel(subgraph, num_outputs, name)` turns the group's script graph into an ``ember.fx``
GraphModule (constants folded in as literals, tensors as inputs) and compiles it on its first call,
with the call's inputs as the example inputs, by ``ember._inductor.compile_fx`` -- the compiler
``ember.compile``'s "inductor" backend uses, so one code generator and one kernel cache serve both.
When the call records autograd (grad mode on and an input requires grad) it compiles through AOT
autograd instead (the "inductor" backend itself: forward and backward kernels; PyTorch's
DifferentiableGraph). Both compiled callables fall back to running the GraphModule eagerly for a
graph the fuser cannot compile or inputs of another look, so a FusionGroup never computes a
different value than its members would. ``describe()`` is what ``get_debug_state()`` shows.
"""
from __future__ import annotations

import numpy as np

from ember._core.dispatch import AUTOGRAD_BIT as _AUTOGRAD_BIT
from ember._core.dispatch import CPU_BIT as _CPU_BIT
from ember._core.dispatch import tls as _tls
from ember._core.tensor import wrap

from ..ir import prim

_PLAIN = _CPU_BIT | _AUTOGRAD_BIT     # a CPU tensor, recording autograd or not


class FusedKernel:
    __slots__ = ("subgraph", "num_outputs", "name", "module", "compiled", "calls", "fast")

    def __init__(self, subgraph, num_outputs: int, name: str):
        self.subgraph, self.num_outputs, self.name = subgraph, num_outputs, name
        self.module = None
        self.compiled = [None, None]      # [without autograd, recording autograd]
        self.calls = 0
        self.fast = self    # what plans call: after the first compile, fast_path()'s function when it has one

    def __call__(self, *inputs):
        keys = 0
        for t in inputs:
            keys |= t._keys
        if _tls.include or keys & ~_PLAIN:
            # a dispatch mode (profiler, tracer) or a tensor with other keys sees the ops one by one,
            # as DirectOp does (ember/jit/executor/codegen.py)
            if self.module is None:
                self.module = graph_module(self.subgraph)
            out = self.module(*inputs)
        else:
            records = bool(keys & _AUTOGRAD_BIT) and not (_tls.exclude & _AUTOGRAD_BIT)
            fn = self.compiled[records]
            if fn is None:
                fn = self._compile(inputs, records)
            self.calls += 1
            out = fn(*inputs)
        return out[0] if self.num_outputs == 1 else tuple(out)

    def _compile(self, inputs, records: bool):
        if self.module is None:
            self.module = graph_module(self.subgraph)
        if records:
            from ember._dynamo.backends import lookup_backend
            fn = lookup_backend("inductor")(self.module, list(inputs))
        else:
            from ember._inductor.compile_fx import compile_fx
            fn = compile_fx(self.module, list(inputs))
            self.fast = fast_path(self, getattr(fn, "current", None)) or self
        self.compiled[records] = fn
        return fn

    _plan_name = property(lambda self: f"prim::FusionGroup<{self.name}>")

    def describe(self) -> dict:
        """The group's subgraph, the GraphModule handed to the fuser, and per compiled variant the
        generated kernels' names and the wrapper code calling them."""
        variants = []
        for mode, fn in zip(("inference", "autograd"), self.compiled):
            for wrapper in _wrappers(fn):
                kernels = [n.name for n in wrapper.graph.nodes if n.op == "call_function" and
                           n.name.startswith("ember_k")] if wrapper is not None else []
                variants.append({"mode": mode, "kernels": kernels,
                                 "wrapper_code": wrapper.code if wrapper is not None else None})
        from ..ir.printer import format_graph
        return {"name": self.name, "subgraph": format_graph(self.subgraph), "calls": self.calls,
                "module_code": self.module.code if self.module is not None else None, "variants": variants}


def _matmul_2d(a, b):
    """ember.ops.cpu.linalg.matmul's hot path for inputs of these looks (2-D, one BLAS dtype):
    its `_mm2d` on the arrays and a fresh C-contiguous result, else None (any other matmul)."""
    from ember.ops.cpu import linalg
    (sa, _, da), (sb, _, db) = a, b
    if not (len(sa) == 2 == len(sb) and da is db and da in linalg._BLAS and sa[1] == sb[0]):
        return None
    return linalg._mm2d, contiguous_look((sa[0], sb[1]), da)


# Extern ops a fast path runs on the arrays: op name -> rule(look of each argument) giving (what to
# call on the arrays, the result's look), or None when those looks leave the op's CPU kernel hot path.
# A look is (shape, byte strides, numpy dtype). fuse_groups lets these ops join groups.
# "ember_matmul" is the fuser's own BLAS extern (_inductor/extern_blas.matmul): a 2-D product there is
# the same ndarray.dot.
ARRAY_EXTERNS = {"aten::matmul": _matmul_2d, "ember_matmul": _matmul_2d}


def fast_path(kernel: FusedKernel, wrapper):
    """What the compiled variant `wrapper` does, with its InputCheck as one guard in line (each
    input's exact array class/shape/strides/dtype, no other dispatch key, no dispatch mode) and
    `kernel`'s checked call when that fails: ~1 us instead of ~5 on tiny tensors (an RNN step).
    Between the guard and the return it works on arrays: kernels launch on them, ARRAY_EXTERNS run
    on them (the looks the guard pins prove which kernel path eager takes), outputs are wrapped last.
    None unless `wrapper` only checks and reads inputs, allocates outputs, launches kernels and
    calls such externs."""
    from functools import partial
    from ember._inductor.launch import launcher
    from ember._inductor.wrapper import Alloc, ExpectLayout, InputCheck
    nodes = list(wrapper.graph.nodes) if wrapper is not None else []
    params = [n.name for n in nodes if n.op == "placeholder"]
    env = {"_kernel": kernel, "_tls": _tls, "_nd": np.ndarray, "_empty": np.empty, "_wrap": wrap}
    guard, body = [f"({' | '.join(p + '._keys' for p in params)}) != {_CPU_BIT} or _tls.include"], []
    arrays, looks, tensors = {}, {}, {p: p for p in params}    # node name -> local of its array / look / tensor
    for i, n in enumerate(nodes):
        args, g, op = [getattr(a, "name", a) for a in n.args], f"_g{i}", getattr(n.target, "name", None)
        env[g] = n.target
        if isinstance(n.target, InputCheck) and args == params:
            for j, (p, look) in enumerate(zip(params, n.target.specs)):
                shape, strides, env[f"{g}_{j}"] = look
                guard.append(f"(_d{j} := {p}._data).__class__ is not _nd or _d{j}.shape != {shape!r} or "
                             f"_d{j}.strides != {strides!r} or _d{j}.dtype is not {g}_{j}")
                arrays[p], looks[p] = f"_d{j}", look
        elif n.target is getattr and args[1] == "_data" and args[0] in arrays:
            arrays[n.name] = arrays[args[0]]
        elif isinstance(n.target, Alloc):
            reuse = n.target.reuses      # a large output: the previous call's array when it is dead
            env[g] = n.target.array if reuse else n.target.dtype
            body.append(f"{n.name}_d = {g}()" if reuse else f"{n.name}_d = _empty({n.target.shape!r}, {g})")
            arrays[n.name], looks[n.name] = f"{n.name}_d", contiguous_look(n.target.shape, n.target.dtype)
        elif op in ARRAY_EXTERNS and not n.kwargs and all(a in looks for a in args) and \
                (found := ARRAY_EXTERNS[op](*(looks[a] for a in args))) is not None:
            env[g], looks[n.name] = found
            body.append(f"{n.name}_d = {g}({', '.join(arrays[a] for a in args)})")
            arrays[n.name] = f"{n.name}_d"
        elif isinstance(n.target, ExpectLayout) and args[0] in looks and _fits(looks[args[0]], n.target):
            arrays[n.name], looks[n.name] = arrays[args[0]], looks[args[0]]
        elif isinstance(n.target, partial) and n.target.func is launcher() and not n.kwargs and \
                all(a in arrays for a in args):      # arrays only (launch.py's convention)
            body.append(f"{g}({', '.join(arrays[a] for a in args)})")
        elif n.op == "output" and isinstance(n.args[0], tuple) and all(getattr(a, "name", None) in arrays
                                                                        for a in n.args[0]):
            for a in (a.name for a in n.args[0] if a.name not in tensors):
                body.append(f"{a} = _wrap({arrays[a]})")
                tensors[a] = a
            body.append(f"return {', '.join(tensors[a.name] for a in n.args[0])}" + ("," if len(n.args[0]) > 1 else ""))
        elif n.op != "placeholder":
            return None
    if not params or len(guard) != len(params) + 1:      # every input checked
        return None
    src = "\n    ".join([f"def fused({', '.join(params)}):", f"if {' or '.join(guard)}:",
                         f"    return _kernel({', '.join(params)})", "_kernel.calls += 1", *body])
    exec(compile(src, f"<ember.jit fusion group {kernel.name}>", "exec"), env)
    return env["fused"]


def contiguous_look(shape, dtype) -> tuple:
    """The look of a fresh C-contiguous array: (shape, byte strides, dtype)."""
    return tuple(shape), np.empty(shape, dtype).strides, dtype


def look_of(t) -> tuple:
    """The look of tensor `t` (a meta tensor too): (shape, byte strides, numpy dtype)."""
    dtype = t._data.dtype
    return tuple(t.shape), tuple(s * dtype.itemsize for s in t.stride()), dtype


def _fits(look, layout) -> bool:
    """An array of `look` passes ExpectLayout `layout` unchanged (same shape; same element strides
    unless it has at most one element)."""
    shape, strides, dtype = look
    return tuple(shape) == layout.shape and (tuple(s // dtype.itemsize for s in strides) == layout.strides
                                              or int(np.prod(shape)) <= 1)


def _wrappers(fn) -> list:
    """The compiled wrapper GraphModules behind a compile_fx or AOT-compiled callable (None for a
    variant that runs eagerly)."""
    if fn is None:
        return []
    if hasattr(fn, "variants"):                     # compile_fx's CompiledFunction
        return list(fn.variants.values())
    cached = getattr(fn, "compiled", None)          # AOT autograd's run(): its graphs per input spec
    found = []
    for graph in getattr(cached, "graphs", {}).values():
        found += _wrappers(getattr(graph, "forward", None))
    return found


def graph_module(subgraph):
    """An ``ember.fx.GraphModule`` computing `subgraph` (a FusionGroup's script graph): its tensor
    placeholders are the inputs, constants and constant lists become literal arguments, and it
    returns a tuple of the outputs."""
    from ember.fx import Graph, GraphModule
    from ember.fx.node import map_arg
    g, env = Graph(), {}
    value = env.__getitem__
    for node in subgraph.nodes:
        if node.op == "placeholder":
            env[node] = g.placeholder(node.name)
        elif node.op == "output":
            result = node.args[0]
            g.output(tuple(map_arg(result, value)) if isinstance(result, tuple) else (map_arg(result, value),))
        elif node.target is prim.Constant:
            env[node] = node.args[0]
        elif node.target in (prim.ListConstruct, prim.TupleConstruct):
            items = [map_arg(a, value) for a in node.args]
            env[node] = list(items) if node.target is prim.ListConstruct else tuple(items)
        else:
            env[node] = g.create_node(node.op, node.target, map_arg(node.args, value),
                                      map_arg(node.kwargs, value), name=node.name)
    return GraphModule({}, g)
