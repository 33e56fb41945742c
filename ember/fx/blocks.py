"""Blocks: the nested graphs a control-flow node holds (jit.script's ``prim::If`` and ``prim::Loop``).

A block is an ``ember.fx.Graph`` with ``parent_node`` set, kept in ``node.blocks``; its
``placeholder`` nodes are the block's parameters and its ``output`` node returns a tuple of
values. Nodes inside a block may read any value of the graphs that enclose it (SSA scoping, as in
TorchScript). A node with several outputs (If, Loop, TupleUnpack, ListUnpack) has a tuple value;
each output is an ``operator.getitem(node, i)`` node right after it, marked
``meta["output_of"] = node``, and ``meta["num_outputs"]`` counts them.

These helpers are what every pass needs to walk and edit such graphs, and the ``prim::Constant``
nodes that hold their literals; building them with typed values is ``ember.jit.ir``'s job
(``add_if``, ``add_loop``, ``constant``).

    for node in walk(graph): ...                 # every node, blocks included, in program order
    block_returns(body); set_block_returns(body, [cond, x])
    replace_value(node, other)                   # users read `other`, node erased
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any, Iterator

from . import prim
from .graph import Graph
from .node import Node, map_arg


def add_block(node: Node, param_types: list | None = None, param_names: list | None = None) -> Graph:
    """Append a new block to `node` with one placeholder per type; returns the block.

    Names share the root graph's namespace, so every node of a function has a unique name."""
    block = Graph()
    block.parent_node = node
    block._namespace = root_graph(node.graph)._namespace
    for i, t in enumerate(param_types or []):
        name = (param_names or [])[i] if param_names and i < len(param_names) else f"p{i}"
        block.placeholder(name, type_expr=t)
    node.blocks.append(block)
    return block


def root_graph(graph: Graph) -> Graph:
    """The outermost graph that (transitively) holds `graph`."""
    while graph.parent_node is not None:
        graph = graph.parent_node.graph
    return graph


def block_params(block: Graph) -> list:
    """The block's parameter nodes (its placeholders), in order."""
    return [n for n in block.nodes if n.op == "placeholder"]


def block_returns(block: Graph) -> list:
    """The values the block returns (its output node's tuple)."""
    out = output_node(block)
    return list(out.args[0]) if out is not None else []


def set_block_returns(block: Graph, values: list) -> Node:
    """Make the block return `values` (creating or updating its output node)."""
    out = output_node(block)
    if out is None:
        return block.output(tuple(values))
    out.args = (tuple(values),)
    return out


def output_node(graph: Graph) -> Node | None:
    """The graph's output node (None while it has none)."""
    for n in reversed(graph.nodes):
        if n.op == "output":
            return n
    return None


def walk(graph: Graph) -> Iterator[Node]:
    """Every node of `graph` and of its blocks, depth first in program order."""
    for node in list(graph.nodes):
        yield node
        for block in node.blocks:
            yield from walk(block)


def clone(graph: Graph, value_map: dict | None = None) -> Graph:
    """A deep copy of a graph and its blocks (types, meta and block structure kept).

    `value_map` (old node -> new node) is filled in; pass it pre-filled to remap free values."""
    value_map = {} if value_map is None else value_map
    new = Graph()
    _copy_into(graph, new, value_map)
    return new


def _copy_into(src: Graph, dst: Graph, value_map: dict, skip_placeholders: bool = False) -> Any:
    """Copy `src`'s nodes (and their blocks) into `dst` at its insert point, recording each copy
    in `value_map`. Stops at src's output node and returns its remapped value (None without one)."""
    for node in src.nodes:
        if node.op == "placeholder" and skip_placeholders:
            continue
        if node.op == "output" and skip_placeholders:
            return _remap(node.args[0], value_map)
        copy = dst.create_node(node.op, node.target,
                               _remap(node.args, value_map), _remap(node.kwargs, value_map),
                               name=None if skip_placeholders else node.name, type_expr=node.type)
        copy.meta = dict(node.meta)
        if "output_of" in copy.meta:
            copy.meta["output_of"] = value_map.get(node.meta["output_of"], node.meta["output_of"])
        value_map[node] = copy
        for block in node.blocks:
            new_block = Graph()
            new_block.parent_node = copy
            new_block._namespace = root_graph(dst)._namespace
            copy.blocks.append(new_block)
            _copy_into(block, new_block, value_map)
    return None


def _remap(a, value_map: dict):
    return map_arg(a, lambda n: value_map.get(n, n))


def inline_graph(graph: Graph, before: Node, callee: Graph, inputs: list) -> Any:
    """Copy `callee`'s nodes into `graph` before `before`, reading `inputs` for its placeholders;
    returns the copied value of callee's output (the Inline pass's building block)."""
    value_map: dict = {}
    params = [n for n in callee.nodes if n.op == "placeholder"]
    if len(params) != len(inputs):
        raise RuntimeError(f"inline_graph: callee takes {len(params)} inputs, got {len(inputs)}")
    value_map.update(zip(params, inputs))
    with graph.inserting_before(before):
        return _copy_into(callee, graph, value_map, skip_placeholders=True)


# -- constants ---------------------------------------------------------------------------------
def is_constant(node) -> bool:
    """True for a ``prim::Constant`` node."""
    return isinstance(node, Node) and node.op == "call_function" and node.target is prim.Constant


def constant_value(arg) -> tuple:
    """(True, value) if `arg` is a literal (not a Node) or a prim::Constant node, else (False, None)."""
    if isinstance(arg, Node):
        return (True, arg.args[0]) if is_constant(arg) else (False, None)
    return True, arg


def make_constant(before: Node, value, type_=None, meta_from: Node | None = None) -> Node:
    """A ``prim::Constant`` holding `value` of type `type_`, inserted just before `before` (in its
    graph), with the source location and variable name of `meta_from`."""
    with before.graph.inserting_before(before):
        const = before.graph.call_function(prim.Constant, (value,))
    const.type = type_
    for key in ("loc", "jit_name"):
        if meta_from is not None and key in meta_from.meta:
            const.meta[key] = meta_from.meta[key]
    return const


# -- multi-output nodes ------------------------------------------------------------------------
def output_getitems(node: Node) -> dict:
    """The getitem nodes reading outputs of a multi-output node: index -> list of nodes."""
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
    elems = getattr(node.type, "elems", None)     # a tuple type
    return len(elems) if elems is not None else 0


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
        params = block_params(body)
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
    if getattr(node.type, "elems", None) is not None:    # the tuple type of the outputs, without the dropped
        node.type = dataclasses.replace(node.type, elems=tuple(node.type.elems[i] for i in keep))
    node.meta["num_outputs"] = len(keep)


def last_output_item(node: Node) -> Node:
    """The last getitem node of the group right after a multi-output node (or the node itself)."""
    anchor = node
    while anchor.next.op == "call_function" and anchor.next.meta.get("output_of") is node:
        anchor = anchor.next
    return anchor
