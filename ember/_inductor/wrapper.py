"""The wrapper: an ember.fx GraphModule whose nodes check inputs, allocate buffers, launch the
compiled kernels and call extern ops (Inductor's wrapper `call(args)`; ember/fx/_codegen.py writes
its Python, as it does for every graph).

    def forward(self, arg0, arg1):
        check_inputs(arg0, arg1)                  # shapes, strides, dtypes: tuple compares, no loop over dims
        arg0_ptr = pointer(arg0)
        buf2 = alloc_buf2()                       # an output: a fresh array per call
        ember_k0(arg0_ptr, 140217..., buf2_ptr)   # an intermediate: a pool buffer, its address a constant
        ...
        return (wrap(buf2),)

Outputs are fresh tensors; intermediates read only by kernels live in a per-graph pool (reused
across calls: a fresh 40 MB array costs ~20 ms in page faults) and share memory when their
lifetimes do not overlap; buffers handed to extern ops are fresh too (an extern may return a view
of its argument). `pointer` is the one place that turns an array into an address (the launcher).
"""
from __future__ import annotations

import ctypes
import operator

import numpy as np

from .._core.tensor import AUTOGRAD_BIT, CPU_BIT, INFERENCE_BIT, Tensor, wrap as _wrap_array
from . import ir


_c_char, _addressof = ctypes.c_char, ctypes.addressof


class GuardMismatch(Exception):
    """An input's shape/strides/dtype differ from the specialisation (the caller recompiles)."""


def pointer(t) -> int:
    """The address of a tensor's first element: the launcher's per-call cost. Through the buffer
    protocol (~0.3 us) when the array is writable and contiguous, else `.ctypes.data` (~1.5 us)."""
    a = t._data
    try:
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def wrap(arr) -> Tensor:
    return _wrap_array(arr)


def keep_alive(*tensors):
    return None


def raise_if_error(rc, kernel_name):
    if rc:                                          # eager's exception for the lowest bit set
        from .codegen_c import KERNEL_ERRORS
        exc, message = KERNEL_ERRORS[rc & -rc]
        raise exc(message)
    return rc


def strided_view(t, shape, strides, offset):
    """A view of `t` (relative element offset) with the given element strides: copies nothing."""
    import ember
    return ember.ops.aten.as_strided.default(t, list(shape), list(strides), t.storage_offset() + offset)


class _Named:
    """A callable with a name for the generated code (fx names globals by __name__)."""

    def _name(self, name):
        self.__name__ = self.__qualname__ = name
        self.__module__ = None


class InputCheck(_Named):
    def __init__(self, specs):
        self.specs = specs           # per input: (shape, byte strides, numpy dtype)
        self._name("check_inputs")

    def __call__(self, *tensors):
        for t, (shape, strides, dtype) in zip(tensors, self.specs):
            a = t._data
            if a.shape != shape or a.strides != strides or a.dtype != dtype or type(a) is not np.ndarray:
                raise GuardMismatch()
            if t._keys != CPU_BIT and not _plain_enough(t._keys):
                raise GuardMismatch()


def _plain_enough(keys) -> bool:
    """A CPU tensor whose autograd recording is off here (the kernels record nothing)."""
    from ..autograd.grad_mode import is_grad_enabled
    return keys & ~(AUTOGRAD_BIT | INFERENCE_BIT) == CPU_BIT and not (keys & AUTOGRAD_BIT and is_grad_enabled())


class Alloc(_Named):
    def __init__(self, buf):
        self.shape, self.dtype = buf.shape, buf.dtype.np
        self.byte_strides = tuple(s * self.dtype.itemsize for s in buf.strides)
        self._name(f"alloc_{buf.name}")

    def __call__(self):
        arr = np.empty(self.shape, self.dtype)
        return wrap(arr)


class ExpectLayout(_Named):
    """An extern's result in the layout the kernels were compiled for (copied only if it differs)."""

    def __init__(self, buf):
        self.shape, self.strides = tuple(buf.shape), tuple(buf.strides)
        self._name(f"layout_{buf.name}")

    def __call__(self, t):
        if tuple(t.shape) == self.shape and (t.stride() == self.strides or t.numel() <= 1):
            return t
        import ember
        out = ember.empty_strided(self.shape, self.strides, dtype=t.dtype)
        out.copy_(t)
        return out


class Pool:
    """Intermediate buffers for one compiled graph, allocated once; buffers whose lifetimes do not
    overlap share one block (first fit over the schedule's order)."""

    def __init__(self):
        self.blocks = []           # [nbytes, free_from_step]
        self.placement = {}        # buffer name -> block index

    def place(self, name, nbytes, first_step, last_step):
        for i, (size, free_from) in enumerate(self.blocks):
            if free_from <= first_step and size >= nbytes:
                self.blocks[i][1] = last_step + 1
                self.placement[name] = i
                return
        self.blocks.append([nbytes, last_step + 1])
        self.placement[name] = len(self.blocks) - 1

    def materialize(self):
        self.arrays = [np.empty(max(size, 1) + 64, np.uint8) for size, _ in self.blocks]
        return {name: int(self.arrays[i].ctypes.data + (-self.arrays[i].ctypes.data) % 64)
                for name, i in self.placement.items()}


def build_wrapper(graph_lowering, groups, kernels, kept_names, output_names):
    """The wrapper GraphModule and its pool. kernels: {group id: (ctypes fn, [buffers], checks_errors)}."""
    from ..fx import Graph, GraphModule
    g = graph_lowering
    graph = Graph()
    placeholders = [graph.placeholder(b.name) for b in g.inputs]
    specs = tuple((tuple(b.shape), g.example_inputs[b.position]._data.strides, b.dtype.np) for b in g.inputs)
    graph.call_function(InputCheck(specs), tuple(placeholders))
    tensors = {b.name: p for b, p in zip(g.inputs, placeholders)}
    module_attrs = {}
    for name, t in g.constants.items():
        module_attrs[name] = t
        tensors[name] = graph.get_attr(name)
    pointers = {}

    def ptr(name):
        if name not in pointers:
            pointers[name] = graph.call_function(pointer, (tensors[name],))
        return pointers[name]

    # lifetimes of pool buffers: first and last step that touches them
    steps = {}
    for step, node in enumerate(groups):
        if id(node) in kernels:
            for b in kernels[id(node)][1]:
                lo, _ = steps.get(b.name, (step, step))
                steps[b.name] = (lo, step)
    pool = Pool()
    pooled = [n for n, (lo, hi) in steps.items() if n not in kept_names and n not in tensors
              and not n.startswith(("arg", "const", "extern"))]
    sizes = {b.name: b for node in groups if id(node) in kernels for b in kernels[id(node)][1]}
    for name in pooled:
        b = sizes[name]
        pool.place(name, b.numel * b.dtype.np.itemsize, *steps[name])
    addresses = pool.materialize()

    def tensor_of(value):
        buf = value.buffer
        if buf.name not in tensors:
            tensors[buf.name] = graph.call_function(Alloc(buf), ())
        node = tensors[buf.name]
        if value.is_whole_buffer():
            return node
        return graph.call_function(strided_view, (node, value.shape, value.strides, value.offset))

    def extern_arg(a):
        if isinstance(a, ir.Value):
            return tensor_of(a)
        if isinstance(a, (list, tuple)):
            return type(a)(extern_arg(v) for v in a)
        return a

    for node in groups:
        if isinstance(node, ir.ExternCall):
            args = tuple(extern_arg(a) for a in node.args)
            kwargs = {k: extern_arg(v) for k, v in node.kwargs.items()}
            res = graph.call_function(node.op, args, kwargs)
            for b in node.outputs:
                t = graph.call_function(operator.getitem, (res, b.output_index)) if node.returns_tuple else res
                tensors[b.name] = graph.call_function(ExpectLayout(b), (t,))
            continue
        fn, bufs, checks = kernels[id(node)]
        args = []
        for b in bufs:
            if b.name in addresses:
                args.append(addresses[b.name])
            else:
                if b.name not in tensors:
                    tensors[b.name] = graph.call_function(Alloc(b), ())
                args.append(ptr(b.name))
        rc = graph.call_function(fn, tuple(args))
        # the generated code drops a tensor after its last use: its pointer's; keep each array a
        # kernel reads alive until the kernel has run
        held = tuple(tensors[b.name] for b in bufs if b.name not in addresses and tensors[b.name].op != "placeholder")
        if held:
            graph.call_function(keep_alive, held)
        if checks:
            graph.call_function(raise_if_error, (rc, fn.__name__))

    def out(v):
        if isinstance(v, (list, tuple)):
            return type(v)(out(x) for x in v)
        if isinstance(v, ir.Value):
            return tensor_of(v)
        return v
    graph.output(out(g.outputs))
    gm = GraphModule(module_attrs, graph)
    return gm, pool
