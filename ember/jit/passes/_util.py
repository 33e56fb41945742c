"""Small helpers the graph passes share: constant values, replacing values, and editing the
outputs of multi-output nodes (prim::If / prim::Loop).

    is_const, value = constant_value(arg)      # literal or prim::Constant node
    replace_value(node, new_value)             # users read new_value, node erased
"""
from __future__ import annotations

import operator
from typing import Any

from ember.fx.blocks import (drop_outputs, last_output_item, num_outputs, output_getitems,  # noqa: F401
                             replace_outputs, replace_value)
from ember.fx.node import Node
from ember.fx.passes.purity import is_constant
from ember.jit.ir import TupleType, block_returns, constant, set_block_returns
from ember.jit.ir.types import type_of_value

def constant_value(arg) -> tuple:
    """(True, value) if `arg` is a literal (not a Node) or a prim::Constant node, else (False, None)."""
    if isinstance(arg, Node):
        if is_constant(arg):
            return True, arg.args[0]
        return False, None
    return True, arg


def all_inputs_constant(node: Node) -> bool:
    """Every Node this node reads is a prim::Constant."""
    return all(is_constant(n) for n in node.all_input_nodes)


def make_constant_before(before: Node, value: Any, type_=None, meta_from: Node | None = None) -> Node:
    """A prim::Constant holding `value`, inserted just before `before` (in its graph)."""
    graph = before.graph
    if type_ is None:
        try:
            type_ = type_of_value(value)
        except ValueError:
            type_ = None
    with graph.inserting_before(before):
        node = constant(graph, value, type_)
    if meta_from is not None:
        for key in ("loc", "jit_name"):
            if key in meta_from.meta:
                node.meta[key] = meta_from.meta[key]
    return node


def add_outputs(node: Node, types: list, block_values: list) -> list:
    """Append outputs to an If node: block_values[b] lists the new returns of block b. Returns the
    new getitem nodes (placed after the node's existing getitems)."""
    count = num_outputs(node)
    for block, values in zip(node.blocks, block_values):
        set_block_returns(block, block_returns(block) + list(values))
    return _append_output_items(node, count, types)


def add_loop_carried(node: Node, inits: list, types: list, returns: list) -> tuple:
    """Append carried values to a Loop: initial values, types and the body's next values.
    Returns (new body params, new output getitem nodes)."""
    body = node.blocks[0]
    count = num_outputs(node)
    anchor = [n for n in body.nodes if n.op == "placeholder"][-1]
    params = []
    for j, t in enumerate(types):
        with body.inserting_after(anchor):
            p = body.placeholder(f"c{count + j}", type_expr=t)
        params.append(p)
        anchor = p
    node.args = tuple(node.args) + tuple(inits)
    set_block_returns(body, block_returns(body) + list(returns))
    return params, _append_output_items(node, count, types)


def _append_output_items(node: Node, count: int, types: list) -> list:
    """Add outputs `count`, `count + 1`, ... of `types` to a multi-output node (its type and
    ``num_outputs``); return their getitem nodes, placed after its existing ones."""
    anchor = last_output_item(node)
    items = []
    for j, t in enumerate(types):
        with node.graph.inserting_after(anchor):
            item = node.graph.call_function(operator.getitem, (node, count + j))
        item.type = t
        item.meta["output_of"] = node
        items.append(item)
        anchor = item
    elems = node.type.elems if isinstance(node.type, TupleType) else (None,) * count
    node.type = TupleType(tuple(elems) + tuple(types))
    node.meta["num_outputs"] = count + len(types)
    return items
