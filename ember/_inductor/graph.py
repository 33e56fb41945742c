"""GraphLowering: an aten GraphModule -> buffers of loop IR (Inductor's graph.py).

    g = GraphLowering(aten_gm, example_inputs)
    g.run()
    g.nodes        # [ComputedBuffer | ExternCall] in program order
    g.outputs      # the output structure, leaves are ir.Values (or Python constants)

Each call_function node goes through `lowering.LOWERINGS` by its "name.overload"; an op without a
lowering, a lowering that declines (returns None), or any op touching a dtype the C code does not
compute becomes an extern call: its eager kernel runs inside the compiled graph. An op that writes
to its arguments raises NotLowerable (the whole graph then runs eagerly: a fused kernel may read an
input after the write would have happened).
"""
from __future__ import annotations

import math
import operator

from .._core.dispatch import OperatorHandle
from .._core.tensor import Tensor
from . import ir
from .lowering import EXTERN_LOWERINGS, LOWERINGS


def _fallback_random():
    from . import config
    return config.fallback_random


class NotLowerable(RuntimeError):
    """This graph cannot be compiled exactly; it runs eagerly."""


def _tree_map(fn, x):
    if isinstance(x, (tuple, list)):
        return type(x)(_tree_map(fn, v) for v in x)
    return fn(x)


def _names_other_device(device_kwarg, args) -> bool:
    """Does this call name a device other than cuda (x.to("cpu"), factories on the CPU)?"""
    from .._core.device import device as _device
    named = [device_kwarg] + [a for a in args if isinstance(a, (str, _device))]
    for d in named:
        if d is None:
            continue
        try:
            if _device(d).type != "cuda":
                return True
        except (TypeError, ValueError, RuntimeError):
            continue            # a string argument that is not a device (a reduction mode ...)
    return False


def _host_scalar(t, device) -> bool:
    """A 0-d tensor constant on the host of a graph whose kernels run on `device` (inlined by value)."""
    return isinstance(t, Tensor) and device != "cpu" and t.device.type == "cpu" and t.dim() == 0 and \
        t.dtype in ir.C_TYPES


def _output_read_inside(node) -> bool:
    """A graph output that other nodes read too (a residual stream AOT autograd saves for the
    backward): it is stored anyway, so it is stored where it is computed and its readers load it,
    rather than each reader computing it again from its inputs."""
    return len(node.users) > 1 and any(u.op == "output" for u in node.users)


# a computed value (more than a load and an op) that its readers broadcast at least this many times
# over is stored on the GPU: Triton recomputes an inlined value at each element of a row's loop (a
# loss gradient's per-row coefficient, ~15 ops, at each of 50257 columns), the stored one is one load
BROADCAST_RATIO = 64


def _broadcast_into_rows(node, value) -> bool:
    if value.cost < 3 or not value.shape:
        return False
    own, widest, todo = math.prod(value.shape), 0, [(u, 0) for u in node.users]
    while todo:                     # the readers, through their views (unsqueeze, expand, view)
        user, depth = todo.pop()
        val = user.meta.get("val") if user.op == "call_function" else None
        if isinstance(val, Tensor):
            widest = max(widest, val.numel())
            if depth < 3 and getattr(user.target, "name", "").split(".")[0] in _VIEWS:
                todo += [(u, depth + 1) for u in user.users]
    return widest >= BROADCAST_RATIO * max(own, 1)


_VIEWS = {"aten::unsqueeze", "aten::view", "aten::expand", "aten::reshape", "aten::permute", "aten::squeeze"}


def _constant_loader(value, dtype):
    return lambda index: ir.ops.constant(value, dtype)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


class GraphLowering:
    def __init__(self, gm, example_inputs, device="cpu", triton=False):
        self.gm, self.example_inputs = gm, list(example_inputs)
        self.device = device            # where the graph's tensors live: "cpu" or "cuda"
        self.triton = triton            # kernels by codegen_triton (else codegen_c)
        self.host_buffers = set()       # constants on another device than the graph's
        self.nodes = []                 # ComputedBuffer | ExternCall, in order
        self.inputs = []                # InputBuffer, by position (constants appended after)
        self.constants = {}             # InputBuffer name -> the tensor (get_attr)
        self.constant_targets = {}      # InputBuffer name -> the get_attr target it reads
        self.env = {}
        self.outputs = None
        self.current_key = None
        self._counter = 0
        self._realized = {}             # id(Pointwise) -> (it, its BufferValue)
        self.zero_padded = {}           # (buffer name, padded row length) -> BufferValue (lowering_cublas)

    def new_name(self, prefix="buf"):
        self._counter += 1
        return f"{prefix}{self._counter - 1}"

    # -- what lowerings call ---------------------------------------------------------------------
    def realize(self, value):
        """A BufferValue for `value` (a Pointwise becomes a ComputedBuffer, once: a value that is both
        an extern's argument and a graph output, GELU's output before a linear that the backward
        saves, is computed by one kernel, not two)."""
        if isinstance(value, ir.BufferValue):
            return value
        done = self._realized.get(id(value))
        if done is not None and done[0] is value:
            return done[1]
        buf = ir.ComputedBuffer(self.new_name(), value.shape, value.dtype,
                                ir.PointwiseBody(value.shape, value.make_loader()))
        self.nodes.append(buf)
        self._realized[id(value)] = (value, ir.BufferValue(buf))   # the value is kept: its id stays its own
        return self._realized[id(value)][1]

    def reduction(self, body, dtype):
        buf = ir.ComputedBuffer(self.new_name(), body.ranges, dtype, body)
        self.nodes.append(buf)
        return ir.BufferValue(buf)

    def extern(self, op, args, kwargs, meta):
        def arg(a):
            permuted = getattr(a, "permute_of", None)
            if permuted is not None:
                # a permuted value (a weight gradient's grad.t()): its source is realized once and
                # the extern reads it through permuted strides (BLAS takes transposes as they are),
                # rather than a second kernel writing the values again in transposed order
                base, dims = permuted
                whole = arg(base)
                return ir.BufferValue(whole.buffer, a.shape, tuple(whole.strides[d] for d in dims), whole.offset)
            return self.realize(a) if isinstance(a, ir.Value) else a
        call = ir.ExternCall(self.new_name("extern"), op, _tree_map(arg, list(args)),
                             {k: _tree_map(arg, v) for k, v in kwargs.items()})
        self.nodes.append(call)
        call.returns_tuple = isinstance(meta, (tuple, list))
        if call.returns_tuple and any(isinstance(m, (tuple, list)) for m in meta):
            raise NotLowerable(f"{getattr(op, 'name', op)} returns nested sequences")

        def out(m):
            if not isinstance(m, Tensor):
                raise NotLowerable(f"{getattr(op, 'name', op)} returns a {type(m).__name__}")
            buf = ir.ExternBuffer(f"{call.name}_{len(call.outputs)}", m.shape, m.dtype, m.stride(),
                                  call, len(call.outputs))
            call.outputs.append(buf)
            return ir.BufferValue(buf)
        return _tree_map(out, meta)

    # -- the interpreter -------------------------------------------------------------------------
    def run(self):
        position = 0
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                t = self.example_inputs[position]
                if not isinstance(t, Tensor):
                    raise NotLowerable(f"input {node.name} is a {type(t).__name__}, not a tensor")
                buf = ir.InputBuffer(f"arg{position}", t.shape, t.dtype, t.stride(), position)
                self.inputs.append(buf)
                self.env[node] = ir.BufferValue(buf)
                position += 1
            elif node.op == "get_attr":
                t = getattr(self.gm, node.target)
                if _host_scalar(t, self.device):
                    # a 0-d host constant of a device graph (a Python number a derivative formula
                    # wrapped): its value is inlined; as a host buffer every op reading it would be
                    # an eager extern (graph_key keys the value)
                    self.env[node] = ir.Pointwise((), t.dtype, _constant_loader(t.item(), t.dtype))
                    continue
                buf = ir.InputBuffer(self.new_name("const"), t.shape, t.dtype, t.stride(), None)
                if getattr(t, "device", None) is not None and t.device.type != self.device:
                    self.host_buffers.add(buf.name)     # only extern ops may read it (x.to("cuda"))
                self.constants[buf.name] = t
                self.constant_targets[buf.name] = node.target
                self.env[node] = ir.BufferValue(buf)
            elif node.op == "call_function":
                self.env[node] = self.call_function(node)
            elif node.op == "output":
                self.outputs = _tree_map(self._lookup, node.args[0])
            else:
                raise NotLowerable(f"node {node.name}: op {node.op} in an aten graph")
        return self

    def _lookup(self, a):
        from ..fx import Node
        return self.env[a] if isinstance(a, Node) else a

    def call_function(self, node):
        target = node.target
        args = _tree_map(self._lookup, list(node.args))
        kwargs = {k: _tree_map(self._lookup, v) for k, v in node.kwargs.items()}
        if target is operator.getitem:
            return args[0][args[1]]
        if not isinstance(target, OperatorHandle):
            raise NotLowerable(f"node {node.name}: {target} is not an aten operator")
        from ..ops import properties
        props = properties.of_op(target)
        if props.mutates:
            raise NotLowerable(f"node {node.name}: {target.name} writes to its arguments")
        meta = node.meta.get("val")
        key = target.name.split("::", 1)[1]
        key = key if "." in key else key + ".default"       # "aten::sigmoid" is sigmoid.default
        self.current_key = key
        lower = LOWERINGS.get(key) or EXTERN_LOWERINGS.get(key)
        values = [v for v in _leaves([args, list(kwargs.values())]) if isinstance(v, ir.Value)]
        metas = list(_leaves(meta)) if meta is not None else []
        if self.device == "cuda" and _names_other_device(kwargs.get("device"), args):
            raise NotLowerable(f"node {node.name}: {target.name} moves data off the GPU")
        # random ops on the GPU run their eager kernels (codegen_triton has no Philox of codegen_c's)
        on_host = any(isinstance(v, ir.BufferValue) and v.buffer.name in self.host_buffers for v in values)
        computable = all(isinstance(m, Tensor) and m.dtype in ir.C_TYPES for m in metas) and metas and \
            all(v.dtype in ir.C_TYPES for v in values) and not on_host and \
            not (props.is_random and (_fallback_random() or self.triton))
        result = lower(self, meta, *args, **kwargs) if lower is not None and computable else None
        if result is None:
            result = self.extern(target, args, kwargs, meta)
            if on_host and str(kwargs.get("device", "")).split(":")[0] != self.device:
                # an eager op on a host constant gives host tensors, unless it moves them here
                self.host_buffers |= {v.buffer.name for v in _leaves(result) if isinstance(v, ir.BufferValue)}
            return result
        if isinstance(result, ir.Pointwise) and (result.should_realize(len(node.users)) or _output_read_inside(node)
                                                 or (self.triton and _broadcast_into_rows(node, result))):
            result = self.realize(result)
        return result
