"""Profiling nodes: ``prim::profile(value)`` marks where the profiling executor records what a
tensor looked like; after profiling, the observations specialise the graph's types.

- ``insert_profile_nodes(graph)``: after every tensor-typed value (root inputs, block parameters,
  tensor-producing nodes; multi-output nodes after their getitem group) a ``prim::profile`` node
  reads it, and every other use reads the profile node instead. Each value is profiled once.
- The executor runs a profile node as the identity and records what the tensor looked like as
  ``node.meta["val"]``, a meta tensor (``record_profile``); a value seen with two different
  looks is recorded as ``None``: unknown, the unshaped ``Tensor``.
- ``specialize_types(graph, inputs=())``: the observations onto the values and their profile
  nodes: the value's ``meta["val"]``, and its ``node.type``, the TensorType derived from that val
  (``observed_type``; profile nodes stay, so the passes that follow see dtypes and sizes); the
  graph's tensor inputs take the look of `inputs` (the executor's plan inputs).
- ``remove_profile_nodes(graph)``: each profile node is replaced by its input, and the
  observation (when there is one) becomes the input's ``meta["val"]`` and ``node.type``.
- ``keep_guaranteed_types(graph, inputs)``: then keep observed types only where the input
  signature (the plan's guard) guarantees them.

    g = insert_profile_nodes(g)     # %x.2 : Tensor = prim::profile(%x.1)
    ...run...                       # profile.meta["val"]: a meta tensor of shape (2, 3)
    g = remove_profile_nodes(g)     # %x.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)
"""
from __future__ import annotations

import builtins
import operator

from ember._core.tensor import Tensor
from ember._core.tensor_spec import meta_like, spec_of
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish
from ember.jit.ir import block_params, block_returns, call, prim, walk
from ember.jit.ir.types import IntType, TensorType, observed_tensor_type

from ._util import last_output_item


def _is_profile(node: Node) -> bool:
    return node.op == "call_function" and node.target is prim.profile


def insert_profile_nodes(graph: Graph) -> PassResult:
    """Add a prim::profile node after each tensor value of `graph` and its blocks, in place.

        insert_profile_nodes(g)
    """
    changed = False
    for node in list(walk(graph)):
        if node._erased or node.op == "output" or _is_profile(node) or not isinstance(node.type, TensorType):
            continue
        if any(_is_profile(u) for u in node.users):
            continue   # already profiled
        if node.op == "call_function" and node.target is prim.Constant:
            continue   # constants are what they are: nothing to observe
        if node.meta.get("num_outputs") is not None:
            continue   # the tuple of a multi-output node: its getitems are profiled instead
        graph_of = node.graph
        if node.op == "placeholder":
            anchor = [n for n in graph_of.nodes if n.op == "placeholder"][-1]
        elif node.meta.get("output_of") is not None:
            anchor = last_output_item(node.meta["output_of"])
        else:
            anchor = node
        users = list(node.users)
        with graph_of.inserting_after(anchor):
            prof = call(graph_of, prim.profile, (node,), type_=node.type)
        for user in users:
            user.replace_input_with(node, prof)
        changed = True
    return finish("profiling", graph, changed)


def merge_observed(old, new):
    """Combine two observations (meta tensors; None: unknown): equal looks stay, differing ones
    become None (the unshaped ``Tensor``)."""
    if old is None or spec_of(old) != spec_of(new):
        return None
    return old


def record_profile(node: Node, value) -> None:
    """What the executor does when a profile node runs: observe `value` if it is a tensor."""
    if isinstance(value, Tensor):
        seen = meta_like(value)
        node.meta["val"] = merge_observed(node.meta["val"], seen) if "val" in node.meta else seen


def observed_type(node: Node) -> TensorType | None:
    """The TensorType of what `node` observed (derived from its meta["val"]), None if nothing
    or conflicting things were seen."""
    val = node.meta.get("val")
    return observed_tensor_type(val) if isinstance(val, Tensor) else None


def specialize_types(graph: Graph, inputs=()) -> PassResult:
    """Give each profiled value (and its profile node) the observed tensor type, keeping the
    profile nodes; passes then see dtypes and sizes. `inputs`, when given, are the values the
    executor builds a plan for: the graph's tensor inputs take their types.

        specialize_types(g)   # %x.1 : Float(2, 3, ...); %3 : Float(2, 3, ...) = prim::profile(%x.1)
    """
    import ember
    changed = False
    params = [n for n in graph.nodes if n.op == "placeholder"]
    for p, x in zip(params, inputs):
        if isinstance(x, ember.Tensor) and (p.type is None or isinstance(p.type, TensorType)):
            seen = observed_tensor_type(x)
            changed |= p.type != seen
            p.type = seen
            p.meta["val"] = meta_like(x)
    for node in list(walk(graph)):
        if node._erased or not _is_profile(node):
            continue
        seen, value = observed_type(node), node.args[0]
        if seen is not None and isinstance(value, Node) and isinstance(value.type, TensorType):
            changed |= value.type != seen or node.type != seen
            value.type = seen
            node.type = seen
            value.meta["val"] = node.meta["val"]
    return finish("profiling", graph, changed)


def remove_profile_nodes(graph: Graph) -> PassResult:
    """Replace every prim::profile by its input, specialising the input's type to what was
    observed (left generic when nothing or conflicting things were seen), in place.

        remove_profile_nodes(g)
    """
    changed = False
    for node in list(walk(graph)):
        if node._erased or not _is_profile(node):
            continue
        value = node.args[0]
        seen = observed_type(node)
        if isinstance(value, Node) and seen is not None and isinstance(value.type, TensorType):
            value.type = seen
            value.meta["val"] = node.meta["val"]
            log_update("profiling", f"specialised {value.name} to {seen}")
        node.replace_all_uses_with(value)
        node.graph.erase_node(node)
        changed = True
    return finish("profiling", graph, changed)


# keep_guaranteed_types: results whose shape depends on tensor data, not on the signature
_DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere", "repeat_interleave",
                   "nonzero_static", "bincount", "histc", "multinomial", "randperm", "index_select_bool"}
# In-place ops that change the shape / requires_grad of the tensor they mutate.
_RESHAPING_INPLACE = {"resize_", "resize_as_", "unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_",
                      "swapaxes_", "as_strided_", "set_", "requires_grad_", "detach_"}
# Non-tensor results that are functions of a tensor's type (so of the signature).
_META_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "is_contiguous", "is_floating_point",
                 "element_size", "get_device"}
_META_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout"}
_PURE_SCALAR_FNS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod,
                    operator.neg, operator.getitem, operator.eq, operator.ne, operator.lt, operator.le,
                    operator.gt, operator.ge, operator.not_, builtins.len, builtins.int, builtins.float,
                    builtins.min, builtins.max, builtins.abs}
_LIST_MUTATORS = {"append", "pop", "insert", "extend", "clear", "remove", "reverse", "sort", "__setitem__",
                  "__delitem__"}


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
        name = t if isinstance(t, str) else getattr(t, "__name__", "") or ""
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
