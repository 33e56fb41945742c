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

    g = insert_profile_nodes(g)     # %x.2 : Tensor = prim::profile(%x.1)
    ...run...                       # profile.meta["val"]: a meta tensor of shape (2, 3)
    g = remove_profile_nodes(g)     # %x.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)
"""
from __future__ import annotations

from ember._core.tensor import Tensor
from ember._core.tensor_spec import meta_like, spec_of
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish
from ember.jit.ir import call, prim, walk
from ember.jit.ir.types import TensorType, observed_tensor_type

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
