"""Profiling support of the graph executor: what a profiling run records, and how the optimised
graph takes the observed types.

The profile nodes themselves are inserted, read (``specialize_types``) and removed by
``ember.jit.passes``; what a prim::profile node records when it runs is ``passes.record_profile``.
This module holds `keep_guaranteed_types(graph, inputs)`: keep observed types only where the
input signature guarantees them.
"""
from __future__ import annotations

from ember.fx.graph import Graph

from ..ir import block_params, block_returns, prim, walk
from ..ir.types import TensorType


_DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere", "repeat_interleave",
                   "nonzero_static", "bincount", "histc", "multinomial", "randperm", "index_select_bool"}
# In-place ops that change the shape / requires_grad of the tensor they mutate.
_RESHAPING_INPLACE = {"resize_", "resize_as_", "unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_",
                      "swapaxes_", "as_strided_", "set_", "requires_grad_", "detach_"}
# Non-tensor results that are functions of a tensor's type (so of the signature).
_META_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "is_contiguous", "is_floating_point",
                 "element_size", "get_device"}
_META_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout"}


def _name_of(node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", "") or ""


def keep_guaranteed_types(graph: Graph, inputs) -> Graph:
    """Drop specialised tensor types that the input signature does not guarantee.

    Plans are guarded by the inputs' signature only (see graph_executor), so a profiled type
    may stay on a value only if every run with that signature gives the value that type, as
    passes (peephole folding ``x.size(0)``) rely on it. A tensor's type is guaranteed when it is
    a tensor input, or made by an op whose output shape depends only on its arguments' types and
    values (not on tensor data) from guaranteed tensors and guaranteed non-tensor values
    (constants, ``x.size()``/``x.dim()``/``x.dtype``... of guaranteed tensors, arithmetic on
    those). A loop-carried value keeps its type when its initial value and the value every
    trip returns are guaranteed with that same type (an optimistic fixpoint); an If output when
    both branches give guaranteed values of its type. Module attributes, list/tuple elements and values of data-dependent ops fall back to the
    plain ``Tensor``; so does everything when the graph changes a tensor's shape in place.
    """
    loops = [n for n in walk(graph) if n.op == "call_function" and n.target is prim.Loop]
    assumed = {p for n in loops for p in block_params(n.blocks[0])[1:] if _specialised(p.type)}
    while True:   # optimistic fixpoint: a carried value keeps its type if every trip preserves it
        typed_ok = _guaranteed(graph, inputs, assumed)
        bad = set()
        for loop in loops:
            body = loop.blocks[0]
            rets = block_returns(body)[1:]
            for k, p in enumerate(block_params(body)[1:]):
                init = loop.args[2 + k] if 2 + k < len(loop.args) else None
                ret = rets[k] if k < len(rets) else None
                if p in assumed and not (init in typed_ok and ret in typed_ok and init.type == p.type == ret.type):
                    bad.add(p)
        if not bad:
            break
        assumed -= bad
    for node in walk(graph):
        if _specialised(node.type) and node not in typed_ok and node.op != "output":
            node.type = TensorType()
            if "val" in node.meta:        # the observation is not guaranteed either: kept aside for
                node.meta["observed_val"] = node.meta.pop("val")   # passes that check it at run time
    return graph


def _specialised(t) -> bool:
    return isinstance(t, TensorType) and (t.dtype is not None or t.sizes is not None)


def _guaranteed(graph: Graph, inputs, assumed: set) -> set:
    """The tensor values whose types the signature guarantees, if the `assumed` loop-carried
    parameters are."""
    import ember
    params = [n for n in graph.nodes if n.op == "placeholder"]
    typed_ok: set = {p for p, x in zip(params, inputs) if isinstance(x, ember.Tensor)} | assumed
    value_ok: set = set()                                                     # value guaranteed
    reshaping = any(n.op == "call_method" and n.target in _RESHAPING_INPLACE or _input_grad_mode(n)
                    for n in walk(graph))

    def ok(a) -> bool:
        if isinstance(a, (list, tuple)):
            return all(ok(x) for x in a)
        if isinstance(a, dict):
            return all(ok(x) for x in a.values())
        if isinstance(a, slice):
            return ok(a.start) and ok(a.stop) and ok(a.step)
        if not hasattr(a, "op"):
            return True
        return a in typed_ok if isinstance(a.type, TensorType) else a in value_ok

    for node in walk(graph):
        if node.op not in ("call_function", "call_method"):
            continue
        t = node.target
        if t is prim.Constant:
            value_ok.add(node)
            continue
        if isinstance(t, prim.PrimOp) and t not in (prim.ListConstruct, prim.TupleConstruct):
            continue
        source = node.meta.get("output_of")
        if source is not None:
            if getattr(source, "target", None) is prim.Loop and isinstance(node.args[1], int):
                carried = block_params(source.blocks[0])[1:]
                k = node.args[1]
                if k < len(carried) and carried[k] in typed_ok and carried[k].type == node.type:
                    typed_ok.add(node)
            elif getattr(source, "target", None) is prim.If and isinstance(node.args[1], int):
                k = node.args[1]   # both branches give a guaranteed value of the output's type
                rets = [block_returns(b) for b in source.blocks]
                if all(k < len(r) and r[k] in typed_ok and r[k].type == node.type for r in rets):
                    typed_ok.add(node)
            continue
        args = list(node.args) + list(node.kwargs.values())
        name = _name_of(node)
        if isinstance(node.type, TensorType):
            if name in _DATA_DEPENDENT or name.endswith("_"):
                continue
            if t is operator.getitem or name == "__getitem__":
                base, index = (node.args + (None, None))[:2]
                if not (hasattr(base, "op") and isinstance(base.type, TensorType) and base in typed_ok):
                    continue
                if hasattr(index, "op") and isinstance(index.type, IntType):
                    typed_ok.add(node)   # x[i]: drops dim 0 whatever i is
                    continue
                if _has_tensor(index):
                    continue             # boolean / integer tensor indexing: data dependent
            if ok(args):
                typed_ok.add(node)
        else:
            if node.op == "call_method" and name in _META_METHODS and args and ok(args):
                value_ok.add(node)
            elif t is getattr and len(node.args) == 2 and node.args[1] in _META_ATTRS and ok(node.args[0]):
                value_ok.add(node)
            elif (t in _PURE_SCALAR_FNS or t is prim.TupleConstruct or
                  (t is prim.ListConstruct and not _mutated(node))) and ok(args):
                value_ok.add(node)
    return set() if reshaping else typed_ok


_LIST_MUTATORS = {"append", "pop", "insert", "extend", "clear", "remove", "reverse", "sort", "__setitem__",
                  "__delitem__"}


def _mutated(list_node) -> bool:
    return any((u.op == "call_method" and u.target in _LIST_MUTATORS and u.args[0] is list_node) or
               (u.target is operator.setitem) for u in list_node.users)


def _input_grad_mode(node) -> bool:
    """A ``with set_grad_enabled(flag):`` whose flag is a runtime value: the signature (which
    has the input's type, not its value) then does not fix the requires_grad of what follows."""
    if node.op != "call_function" or node.target is not prim.SetGradEnabled:
        return False
    flag = node.args[0]
    return hasattr(flag, "op") and flag.target not in (prim.Constant, prim.IsGradEnabled)


def _has_tensor(a) -> bool:
    if isinstance(a, (list, tuple)):
        return any(_has_tensor(x) for x in a)
    return hasattr(a, "op") and isinstance(a.type, TensorType)


import builtins as _builtins  # noqa: E402
import operator  # noqa: E402

from ..ir.types import IntType  # noqa: E402

_PURE_SCALAR_FNS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod,
                    operator.neg, operator.getitem, operator.eq, operator.ne, operator.lt, operator.le,
                    operator.gt, operator.ge, operator.not_, _builtins.len, _builtins.int, _builtins.float,
                    _builtins.min, _builtins.max, _builtins.abs}
