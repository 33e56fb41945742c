"""What the jit's rewrites add to ``ember.fx.blocks`` (re-exported here): typed constants, and new
outputs of multi-output nodes (prim::If / prim::Loop) for LowerSimpleTuples.

    is_const, value = constant_value(arg)      # literal or prim::Constant node
    make_constant_before(node, 4)              # %c : int = prim::Constant[value=4]()
"""
from __future__ import annotations

from typing import Any

from ember.fx.blocks import (constant_value, drop_outputs, last_output_item, make_constant,  # noqa: F401
                             num_outputs, output_getitems, replace_outputs, replace_value)
from ember.fx.node import Node
from ember.jit.ir import block_returns, set_block_returns, unpack_outputs
from ember.jit.ir.types import type_of_value


def make_constant_before(before: Node, value: Any, type_=None, meta_from: Node | None = None) -> Node:
    """``ember.fx.blocks.make_constant`` typed by the value when no type is given."""
    if type_ is None:
        try:
            type_ = type_of_value(value)
        except ValueError:
            type_ = None
    return make_constant(before, value, type_, meta_from)


def add_outputs(node: Node, types: list, block_values: list) -> list:
    """Append outputs to an If node: block_values[b] lists the new returns of block b. Returns the
    new getitem nodes (placed after the node's existing getitems)."""
    for block, values in zip(node.blocks, block_values):
        set_block_returns(block, block_returns(block) + list(values))
    return unpack_outputs(node, types)


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
    return params, unpack_outputs(node, types)
