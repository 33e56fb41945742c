"""Common-subexpression elimination: a node that repeats an earlier computation reuses its value.

    >>> eliminate_common_subexpressions(gm)      # PassResult(graph_module=gm, modified=True)
    # before: %a = aten::mul(%x, %y); %b = aten::mul(%x, %y); %c = aten::add(%a, %b)
    # after:  %a = aten::mul(%x, %y); %c = aten::add(%a, %a)

Two nodes are the same computation when opcode, target, arguments (constants compared with their
type: 1, 1.0 and True differ; nodes by identity, after earlier merges) and type are equal, and
the first dominates the second: it comes earlier in the same graph, or in a graph that encloses
the second's block. Never merged:
- what purity.is_cse_safe rejects: random ops, nondeterministic ones (``empty``, reads of grad
  mode), ops that write memory or have other effects, call_module, fresh lists/dicts, If/Loop;
- a value that may be written in place (purity.MutationInfo: it, or something sharing its memory,
  is written somewhere): the write would change both;
- computations that read a value written in between: each write starts a new epoch, and a node
  that reads a possibly-written value only matches nodes of its own epoch (a loop body that
  writes starts a new one, so the first trip's reads never stand for the next trip's);
- across a grad-mode switch (``with no_grad():``, ``prim::SetGradEnabled``): the same op gives a
  value with or without autograd history on either side of it;
- two values that both leave the graph (returned, put in a container, compared by ``is``): eager
  gives the caller two objects, so mutating one must not change the other.
get_attr nodes with the same target merge (they name the same object).
"""
from __future__ import annotations

from collections import ChainMap

from .. import prim
from ..blocks import walk
from ..node import Node
from .jit_log import log_update
from .pass_manager import PassResult, finish
from .purity import (MutationInfo, is_cse_safe, is_grad_mode_switch, is_mutable_value, mutated_inputs,
                     properties, stays_private)

NAME = "common_subexpression_elimination"


def eliminate_common_subexpressions(gm) -> PassResult:
    """Merge the repeated pure computations of `gm` (a GraphModule or a Graph, blocks included), in place."""
    graph = getattr(gm, "graph", gm)
    sweep = _Sweep(MutationInfo(graph))
    sweep.block(graph, ChainMap())
    return finish(NAME, gm, sweep.merged > 0)


def _writes(node: Node) -> bool:
    if node.op == "call_module":
        return True
    return bool(mutated_inputs(node)) or (node.op in ("call_function", "call_method")
                                          and "*" in properties(node).mutates)


class _Sweep:
    def __init__(self, mutations: MutationInfo):
        self.mutations = mutations
        self.epoch = 0
        self.merged = 0

    def block(self, block, seen: ChainMap) -> bool:
        """CSE one block; True if it switched grad mode (then its parent must forget too)."""
        switched = False
        for node in list(block.nodes):
            if node._erased:
                continue
            if is_grad_mode_switch(node):
                seen, switched = ChainMap(), True    # nothing before it stands in for what follows
                continue
            if node.blocks:
                inner_writes = any(_writes(n) for b in node.blocks for n in walk(b))
                if inner_writes and node.target is prim.Loop:
                    self.epoch += 1                  # the body re-reads what its last trip wrote
                inner_switch = False
                for b in node.blocks:   # a block sees what dominates its parent node, not its siblings' values
                    inner_switch |= self.block(b, seen.new_child())
                self.epoch += inner_writes
                if inner_switch:
                    seen, switched = ChainMap(), True
                continue
            if _writes(node):
                self.epoch += 1
                continue
            self.visit(node, seen)
        return switched

    def visit(self, node: Node, seen: ChainMap) -> None:
        if node.op == "get_attr":
            key = ("get_attr", node.target)
        elif not is_cse_safe(node) or self.mutations.may_be_mutated(node):
            return
        else:
            reads_written = any(self.mutations.may_be_mutated(n) for n in node.all_input_nodes)
            key = node_key(node, self.epoch if reads_written else None)
            if key is None:
                return
        earlier = seen.get(key)
        if earlier is None or earlier._erased:
            seen[key] = node
            return
        if node.op != "get_attr" and is_mutable_value(node) and not stays_private(node) \
                and not stays_private(earlier):
            return   # both values leave the graph (or meet `is`): eager's are distinct objects
        log_update(NAME, f"replaced {node.name} by {earlier.name}")
        node.replace_all_uses_with(earlier)
        node.graph.erase_node(node)
        self.merged += 1


def node_key(node: Node, *extra):
    """A hashable description of what `node` computes (None if some argument cannot be hashed)."""
    try:
        key = (node.op, _target_key(node.target), freeze(node.args), freeze(node.kwargs), str(node.type), *extra)
        hash(key)
    except TypeError:
        return None
    return key


def _target_key(target):
    return target if isinstance(target, str) else ("id", id(target))


def freeze(value):
    """Arguments as a hashable, type-tagged structure (nodes and tensors by identity; floats by
    their bits, so -0.0 differs from 0.0 and nan equals nan); TypeError if some part is unhashable."""
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, tuple):
        return ("tuple", type(value).__name__, tuple(freeze(v) for v in value))
    if isinstance(value, list):
        return ("list", tuple(freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", freeze(value.start), freeze(value.stop), freeze(value.step))
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("tensor", id(value))
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)
