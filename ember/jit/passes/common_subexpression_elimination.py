"""EliminateCommonSubexpression: merge nodes that compute the same value.

Two nodes merge when they have the same opcode, target and arguments (constants compared with
their type: 1, 1.0 and True differ) and the first dominates the second: it comes earlier in the
same graph, or in a graph that encloses the second's block. Only pure, deterministic nodes with
immutable results qualify (never random ops, never fresh lists/dicts, never opaque calls), and
none that read or produce a value the graph may mutate in place (purity.MutationInfo: if any
tensor is written in place, tensor-valued nodes are left alone), and never two tensor values that
both leave the graph (the caller would get one object twice). A prim::SetGradEnabled (a
scripted ``with no_grad():``) is a barrier: nothing before it is reused after it.

    # before: %a = aten::mul(%x, %y); %b = aten::mul(%x, %y); %c = aten::add(%a, %b)
    # after:  %a = aten::mul(%x, %y); %c = aten::add(%a, %a)
    graph = eliminate_common_subexpression(graph)
"""
from __future__ import annotations

from collections import ChainMap

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.jit.ir import prim

from ._util import finish
from .jit_log import log_update
from .purity import MutationInfo, is_cse_safe, is_mutable_type, stays_private


def eliminate_common_subexpression(graph: Graph) -> Graph:
    """Merge equal pure computations of `graph` and its blocks; returns the graph.

        g = eliminate_common_subexpression(g)
    """
    _cse_block(graph, ChainMap(), MutationInfo(graph))
    return finish("common_subexpression_elimination", graph)


def _cse_block(block: Graph, seen: ChainMap, mutations: MutationInfo) -> None:
    for node in list(block.nodes):
        if node._erased:
            continue
        if node.op == "call_function" and node.target is prim.SetGradEnabled:
            # a grad-mode change is a barrier: the same op gives a value with or without autograd
            # history on either side of it, so nothing before it may stand in for what follows
            seen = ChainMap()
            continue
        for b in node.blocks:   # a block sees what dominates its parent node, not its siblings' values
            _cse_block(b, seen.new_child(), mutations)
        if not is_cse_safe(node) or mutations.touches_mutated(node):
            continue
        key = node_key(node)
        if key is None:
            continue
        earlier = seen.get(key)
        if earlier is not None and not earlier._erased and is_mutable_type(node.type) \
                and not stays_private(node) and not stays_private(earlier):
            continue   # both values leave the graph (or meet `is`): eager's are distinct objects
        if earlier is not None and not earlier._erased:
            log_update("common_subexpression_elimination", f"replaced {node.name} by {earlier.name}")
            node.replace_all_uses_with(earlier)
            block.erase_node(node)
        else:
            seen[key] = node


def node_key(node: Node):
    """A hashable description of what `node` computes (None if some argument cannot be hashed)."""
    try:
        key = (node.op, _target_key(node.target), _freeze(node.args), _freeze(node.kwargs), str(node.type))
        hash(key)
    except TypeError:
        return None
    return key


def _target_key(target):
    return target if isinstance(target, str) else ("id", id(target))


def _freeze(value):
    """Arguments as a hashable, type-tagged structure (nodes and tensors by identity)."""
    import ember
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, tuple):
        return ("tuple", type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _freeze(value.start), _freeze(value.stop), _freeze(value.step))
    if isinstance(value, ember.Tensor):
        return ("tensor", id(value))
    if isinstance(value, float):   # hex: -0.0 differs from 0.0, and nan equals nan
        return ("float", value.hex())
    return (type(value).__name__, value)
