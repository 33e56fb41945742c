"""The fast path: a graph's plan as Python, written by ember.fx's code generator from the graph itself.

``ember.fx._codegen`` turns the graph (with its If/Loop blocks) into one function: values are
local variables, ``prim::If`` an ``if``/``else``, ``prim::Loop`` a ``for``/``while`` loop,
constants literals. This module adds the executor's one node-level hook (`emit_call`): what each
call node runs (`default_resolve`: a PrimOp's function, a callee's executor, a profile recorder...)
and, in optimised plans, direct operator calls.

`fast_resolve` is the resolver for optimised plans: where the node types say every argument is
a Tensor (or a number where the schema takes a Scalar / a wrapped number), a call of an ember
binding (``ember.tanh``, ``x.tanh()``, ``a + b``) becomes a `DirectOp`, which computes the
dispatch key set and calls the operator's kernel table itself — what the binding would do, minus
its argument parsing. The generated code inlines that (``_k = a._keys | b._keys; r = T[0](a, b)
if _k == 1 and not TLS.include else H.call(_k, a, b)``).

    fn = generate(graph, direct=True); fn(x, y); print(fn.__source__)
"""
from __future__ import annotations

import math
import operator

from ember.fx._codegen import CodegenOptions, _hashable, generate_python_code, load_function, snake_case
from ember.fx.graph import Graph
from ember.fx.node import Node

from ..ir import prim
from ..ir.types import FloatType, IntType, TensorType

# ---------------------------------------------------------------------------------------------
# direct operator calls
# ---------------------------------------------------------------------------------------------
_OPERATOR_OPS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
                 operator.matmul: "matmul", operator.neg: "neg"}


class DirectOp:
    """Call `handle` with positional kernel arguments; `tensor_positions` give the key set.

    Exactly what the generated binding does after parsing: ``keys == {CPU}`` and nothing in
    the TLS include set -> the CPU kernel; otherwise the dispatcher."""
    __slots__ = ("handle", "table", "tensor_positions", "defaults", "_plan_name", "tls")

    def __init__(self, handle, tensor_positions: tuple, defaults: tuple):
        from ember._core.dispatch import tls
        self.tls = tls
        self.handle = handle
        self.table = handle.table
        self.tensor_positions = tensor_positions
        self.defaults = defaults
        self._plan_name = handle.name

    def __call__(self, *args):
        keys = 0
        for p in self.tensor_positions:
            keys |= args[p]._keys
        args = args + self.defaults
        if keys == 1 and not self.tls.include:
            return self.table[0](*args)
        return self.handle.call(keys, *args)


def _is_number(a) -> bool:
    if hasattr(a, "op"):
        if a.op == "call_function" and getattr(a.target, "name", None) == "prim::Constant":
            a = a.args[0]
        else:
            return isinstance(a.type, (IntType, FloatType))
    return type(a) in (int, float) and not (type(a) is float and not math.isfinite(a))


def _is_tensor(a) -> bool:
    return hasattr(a, "op") and isinstance(a.type, TensorType)


def _match(schema, row, args):
    """(tensor positions, default tail) if `args` fit `schema` with simple types, else None."""
    if schema.is_mutable or len(schema.returns) != 1 or schema.returns[0].type != "Tensor" \
            or schema.returns[0].is_list:
        return None
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return None
    tensors = []
    for i, (s, a) in enumerate(zip(positional, args)):
        if s.is_list or s.optional:
            return None
        if s.type == "Tensor":
            if _is_tensor(a):
                tensors.append(i)
            elif not (i > 0 and row.numbers_as_tensors and _is_number(a)):
                return None
        elif s.type == "Scalar":
            if not _is_number(a):
                return None
        else:
            return None
    if not tensors:
        return None
    defaults = []
    for s in schema.arguments[len(args):]:
        d = s.default   # passed as the binding would after parsing it (int[] -> tuple, float -> float)
        if type(d) not in (int, float, bool, type(None)) or (s.is_list and d is not None):
            return None
        if s.type == "float" and d is not None:
            d = float(d)
        defaults.append(d)
    return tuple(tensors), tuple(defaults)


def _direct(ns: str, name: str, args):
    from ember.ops import registry
    for schema, binding in registry._OVERLOADS_BY_NAME.get((ns, name), ()):
        handle = registry.op_of(binding)
        if handle is None or handle.table[0] is None:
            continue
        found = _match(schema, handle.row, args)
        if found is not None:
            return DirectOp(handle, *found)
        if len(args) <= sum(1 for a in schema.arguments if not a.kwarg_only):
            return None   # the binding's resolver would pick this overload: do not guess
    return None


def fast_resolve(node):
    """The callable a call node of an optimised plan runs (a DirectOp where exact)."""
    import ember
    from ember.ops import registry
    if node.op == "call_function" and not node.kwargs:
        t = node.target
        name = _OPERATOR_OPS.get(t) if _hashable(t) else None
        if name is not None and _is_tensor(node.args[0]):
            method = getattr(ember.Tensor, name, None)
            dunder = getattr(ember.Tensor, "__" + ("truediv" if name == "div" else name) + "__", None)
            # `a + b` runs Tensor.__add__, which is the `add` method binding (and `a / b` the
            # rounding-mode switch of `div`): then the method's overloads decide the operator.
            if dunder is not None and (dunder is method or (name == "div" and _is_binding(dunder))):
                op = _direct("Tensor", name, node.args)
                if op is not None:
                    return op
        entry = registry.exported_as(t)
        if entry is not None and _is_binding(t):
            op = _direct(entry[0], entry[1], node.args)
            if op is not None:
                return op
    return default_resolve(node)


def _is_binding(fn) -> bool:
    """True for the functions that only parse arguments by a schema and call the operator
    (``registry.ops_of``); hand-written Python functions (``F.relu``) are called as they are."""
    from ember.ops import registry
    return bool(registry.ops_of(fn))


def resolve_method(node):
    """A DirectOp for a Tensor method call node, or None."""
    import ember
    from ember.ops import registry
    if node.kwargs or not node.args or not _is_tensor(node.args[0]):
        return None
    name = node.target
    method = registry.METHODS.get(name)
    if method is None or getattr(ember.Tensor, name, None) is not method or not _is_binding(method):
        return None
    return _direct("Tensor", name, node.args)


# ---------------------------------------------------------------------------------------------
# what a call node runs (generated plans and the reference interpreter alike)
# ---------------------------------------------------------------------------------------------
def default_resolve(node: Node):
    """The callable a call_function node runs: its target, a PrimOp's fn, or a runner for the
    prim ops the executor implements (CallFunction/CallMethod with a callee, profile, FusionGroup)."""
    t = node.target
    if isinstance(t, prim.PrimOp):
        if t is prim.CallFunction or (t is prim.CallMethod and node.meta.get("callee") is not None):
            return _callee_runner(node)
        if t is prim.profile:
            return _profile_recorder(node)
        if t is prim.FusionGroup:   # the fusion pass's compiled kernel, else the subgraph interpreted
            return node.meta.get("kernel") or _subgraph_runner(node.meta["subgraph"])
        if t is prim.TypeCheck:
            return _type_checker(node.meta["vals"])
        if t.fn is None:
            raise NotImplementedError(f"executor: {t.name} is not supported here (%{node.name})")
        return t.fn
    return t


def _callee_runner(node: Node):
    callee = node.meta["callee"]
    is_method = node.target is prim.CallMethod

    def run(*args):
        from .graph_executor import executor_of
        inputs = (args[0], *args[2:]) if is_method else args
        return executor_of(callee).run(*inputs)
    run._plan_name = f"{node.target.name}<{getattr(callee, 'name', callee)}>"
    return run


def _profile_recorder(node: Node):
    from ..passes.profiling import record_profile

    def record(value):
        record_profile(node, value)
        return value
    record._plan_name = f"prim::profile<%{node.name}>"
    return record


def _subgraph_runner(subgraph: Graph):
    run = generate(subgraph)
    run._plan_name = "prim::FusionGroup"
    return run


def _type_checker(vals):
    """True when every tensor has the look of its profiled meta tensor in `vals` (the fusion pass's
    checks): dtype, shape, strides, requires_grad and a CPU device."""
    from ember._core.tensor import Tensor
    looks = [(v._data.dtype, tuple(v.shape), v.stride(), v.requires_grad) for v in vals]

    def check(*tensors):
        return all(isinstance(t, Tensor) and t._data.dtype == dtype and t._data.shape == shape and t.stride() ==
                   strides and t.requires_grad == requires_grad and t.device.type == "cpu"
                   for t, (dtype, shape, strides, requires_grad) in zip(tensors, looks))
    check._plan_name = "prim::TypeCheck"
    return check


# ---------------------------------------------------------------------------------------------
# code generation: ember.fx's generator with the executor's call hook
# ---------------------------------------------------------------------------------------------
def generate(graph, *, direct: bool = False):
    """A Python function running `graph` (inputs positionally, one per graph placeholder); its
    source is ``fn.__source__``. `direct`: calls become direct operator calls where the types
    prove that is what the binding would do (`fast_resolve`; optimised plans)."""
    resolve = fast_resolve if direct else default_resolve

    def emit_call(node, ctx):
        if direct and node.op == "call_function" and (lines := _int_getitem(node, ctx)) is not None:
            return lines
        if node.op == "call_method":
            fn = resolve_method(node) if direct else None
            return None if fn is None else _direct_call(node, fn, ctx)
        fn = resolve(node)
        if isinstance(fn, DirectOp):
            return _direct_call(node, fn, ctx)
        if fn is node.target and not isinstance(fn, prim.PrimOp):
            return None      # fx's own text: `a + b`, `xs[i]`, `ember.cat([a, b])`
        hint = node.target.__name__ if isinstance(node.target, prim.PrimOp) else getattr(fn, "__name__", "call")
        name = ctx.add_global("_" + snake_case(hint).strip("_"), fn)
        fast = ".fast" if node.target is prim.FusionGroup and hasattr(fn, "fast") else ""   # fused_kernel.py
        return [f"{node.name} = {name}{fast}({ctx.args(node.args, node.kwargs)})"]

    from .interpreter import annotate
    options = CodegenOptions(fn_name="ember_jit_plan", positional_inputs=True, free_values=False,
                             embed_objects=True, emit_call=emit_call, on_error=annotate)
    code = generate_python_code(graph, options=options)
    fn = load_function(code, f"<ember.jit plan {id(graph):x}>")
    fn.__source__ = code.src.lstrip("\n")
    return fn


def _int_getitem(node, ctx) -> list | None:
    """``x[i]``, x a Tensor and i an int by the types: ``tensor_indexing.getitem``'s CPU path in line
    (a view of the array sharing x's version counter); other keys, a dispatch mode, a subclass, a
    bool, an index NumPy rejects (out of bounds, 0-d: eager raises its own error) call ``x[i]``."""
    import ember
    from ember._core.dispatch import tls
    from ember._core.tensor import Tensor, wrap
    from ember.ops.tensor_indexing import getitem
    i = node.args[1] if node.target is operator.getitem and len(node.args) == 2 and not node.kwargs else None
    if not ((type(i) is int or hasattr(i, "op") and isinstance(i.type, IntType)) and _is_tensor(node.args[0])
            and ember.Tensor.__getitem__ is getitem):
        return None
    x, i, r = ctx.repr(node.args[0]), ctx.repr(i), node.name
    tensor, wrap, tls = ctx.add_global("_Tensor", Tensor), ctx.add_global("_wrap", wrap), ctx.add_global("TLS", tls)
    is_int = f" and {i}.__class__ is int" if i.isidentifier() else ""     # a bool is an int too
    return [f"if {x}._keys == 1 and {x}.__class__ is {tensor}{is_int} and not {tls}.include:", "    try:",
            f"        {r} = {wrap}({x}._data[{i}, ...])", "    except IndexError:", f"        {r} = {x}[{i}]",
            f"    {r}._version_counter = {x}._shared_version_counter()", "else:", f"    {r} = {x}[{i}]"]


def _direct_call(node, fn: DirectOp, ctx) -> list:
    from ember._core.dispatch import tls
    ops = [ctx.repr(a) for a in node.args] + [ctx.repr(d) for d in fn.defaults]
    keys = " | ".join(f"{ops[p]}._keys" for p in fn.tensor_positions)
    k, table, handle = ctx.temp("_k"), ctx.add_global("_table", fn.table), ctx.add_global("_op", fn.handle)
    args = ", ".join(ops)
    return [f"{k} = {keys}", f"{node.name} = {table}[0]({args}) if {k} == 1 and not "
                             f"{ctx.add_global('TLS', tls)}.include else {handle}.call({k}, {args})"]
