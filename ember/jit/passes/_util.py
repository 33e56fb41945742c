"""Small helpers the graph passes share: constant values, replacing values, and editing the
outputs of multi-output nodes (prim::If / prim::Loop).

    is_const, value = constant_value(arg)      # literal or prim::Constant node
    replace_value(node, new_value)             # users read new_value, node erased
"""
from __future__ import annotations

import operator
from typing import Any

from ember.fx.node import Node, map_arg
from ember.jit.ir import TupleType, block_returns, constant, set_block_returns
from ember.jit.ir import prim
from ember.jit.ir.types import type_of_value

from .purity import is_constant

_MISSING = object()


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


def replace_value(node: Node, new_value) -> None:
    """Make every user of `node` read `new_value` (a Node or a literal) and erase `node`."""
    if isinstance(new_value, Node):
        if new_value is not node:
            node.replace_all_uses_with(new_value)
    else:
        swap = lambda n: new_value if n is node else n  # noqa: E731
        for user in list(node.users):
            user._update_args_kwargs(map_arg(user.args, swap), map_arg(user.kwargs, swap))
    if not node.users:
        node.graph.erase_node(node)


def output_getitems(node: Node) -> list:
    """All getitem nodes reading outputs of a multi-output node (index -> list of nodes)."""
    found: dict = {}
    for user in node.users:
        if user.op == "call_function" and user.target is operator.getitem and user.args[0] is node \
                and isinstance(user.args[1], int):
            found.setdefault(user.args[1], []).append(user)
    return found


def num_outputs(node: Node) -> int:
    """How many outputs a multi-output node has."""
    if "num_outputs" in node.meta:
        return node.meta["num_outputs"]
    if isinstance(node.type, TupleType):
        return len(node.type.elems)
    return 0


def replace_outputs(node: Node, values: list) -> None:
    """Make the readers of each output i of `node` read values[i]; erases the getitem nodes."""
    for i, items in output_getitems(node).items():
        for item in items:
            replace_value(item, values[i])


def drop_outputs(node: Node, drop: set) -> None:
    """Remove outputs (indices in `drop`, all unused) of an If/Loop: from the node's type, its
    getitem indices and its blocks' returns. For a Loop this also drops the carried input and the
    body's parameter (which must be unused)."""
    if not drop:
        return
    count = num_outputs(node)
    keep = [i for i in range(count) if i not in drop]
    items = output_getitems(node)
    if node.target is prim.Loop:
        body = node.blocks[0]
        params = [n for n in body.nodes if n.op == "placeholder"]
        rets = block_returns(body)
        set_block_returns(body, [rets[0]] + [rets[1 + i] for i in keep])
        for i in sorted(drop, reverse=True):
            body.erase_node(params[1 + i])
        args = list(node.args)
        node.args = tuple(args[:2] + [args[2 + i] for i in keep])
    else:
        for block in node.blocks:
            rets = block_returns(block)
            set_block_returns(block, [rets[i] for i in keep])
    for new_i, old_i in enumerate(keep):
        for item in items.get(old_i, []):
            item.update_arg(1, new_i)
    elems = node.type.elems if isinstance(node.type, TupleType) else (None,) * count
    node.type = TupleType(tuple(elems[i] for i in keep))
    node.meta["num_outputs"] = len(keep)


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


def last_output_item(node: Node) -> Node:
    """The last getitem node of the group right after a multi-output node (or the node itself)."""
    anchor = node
    while anchor.next.op == "call_function" and anchor.next.meta.get("output_of") is node:
        anchor = anchor.next
    return anchor


def finish(name: str, graph):
    """Log the graph after pass `name` (EMBER_JIT_LOG_LEVEL) and return it."""
    from .jit_log import log_graph
    log_graph(name, graph)
    return graph
