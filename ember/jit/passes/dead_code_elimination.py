"""EliminateDeadCode: delete nodes whose values are never used and that have no side effects.

Works through nested blocks: unused outputs of a ``prim::If`` are dropped from both blocks;
an unused loop-carried value is dropped when nothing live in the body reads it (a liveness
fixpoint, since ``c = c + 1`` keeps ``c`` alive only through itself); an If/Loop whose outputs
are all unused and whose blocks have no side effects is deleted. In-place ops, list mutation,
prints, ``prim::RaiseException``, ``prim::SetAttr`` and random ops always stay.

    # before: %a = aten::tanh(%x); %b = aten::relu(%x); return (%b)
    # after:  %b = aten::relu(%x); return (%b)
    graph = eliminate_dead_code(graph)
"""
from __future__ import annotations

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.jit.ir import block_returns, prim, set_block_returns

from ._util import drop_outputs, finish, num_outputs, output_getitems
from .jit_log import log_update
from .purity import has_side_effects


def eliminate_dead_code(graph: Graph) -> Graph:
    """Remove dead nodes from `graph` and all its blocks; returns the graph.

        g = eliminate_dead_code(g)
    """
    _dce_block(graph)
    return finish("dead_code_elimination", graph)


def _dce_block(block: Graph) -> None:
    for node in reversed(block.nodes):
        if node.op in ("placeholder", "output"):
            continue
        if node.blocks:
            _prune_control_flow(node)
        if not node.users and not has_side_effects(node):
            log_update("dead_code_elimination", f"removed {node.name}")
            block.erase_node(node)


def _prune_control_flow(node: Node) -> None:
    if node.target is prim.If:
        used = output_getitems(node)
        # getitems of unused outputs have no users: erase them so they do not keep outputs alive
        for i, items in used.items():
            for item in items:
                if not item.users:
                    item.graph.erase_node(item)
        used = output_getitems(node)
        drop = {i for i in range(num_outputs(node)) if not used.get(i)}
        drop_outputs(node, drop)
        for b in node.blocks:
            _dce_block(b)
    elif node.target is prim.Loop:
        _prune_loop(node)
    else:
        for b in node.blocks:
            _dce_block(b)


def _prune_loop(node: Node) -> None:
    body = node.blocks[0]
    for items in output_getitems(node).values():
        for item in items:
            if not item.users:
                item.graph.erase_node(item)
    count = num_outputs(node)
    used = output_getitems(node)
    live = {i for i in range(count) if used.get(i)}
    params = [n for n in body.nodes if n.op == "placeholder"][1:]
    rets = block_returns(body)
    while True:  # a carried value is live if its output is used or live code in the body reads it
        needed = _needed_in_body(body, [rets[0]] + [rets[1 + i] for i in live])
        grown = {i for i in range(count) if i not in live and params[i] in needed}
        if not grown:
            break
        live |= grown
    dead = set(range(count)) - live
    if dead:
        # stop returning dead carried values (a literal holds no use), so the body's DCE can
        # delete their producers; nothing live reads their params (liveness above)
        set_block_returns(body, [rets[0]] + [rets[1 + i] if i in live else 0 for i in range(count)])
    _dce_block(body)
    if dead:
        if any(params[i].users for i in dead):   # cannot happen: liveness covers every reader
            raise RuntimeError(f"eliminate_dead_code: a dead carried value of {node.name} is still read")
        drop_outputs(node, dead)


def _needed_in_body(body: Graph, roots: list) -> set:
    """Nodes of `body` (and values from outside it) that the roots or any side-effecting node
    depend on, including values read inside nested blocks of needed nodes."""
    needed: set = set()
    stack = [r for r in roots if isinstance(r, Node)]
    for n in body.nodes:
        if n.op not in ("placeholder", "output") and has_side_effects(n):
            stack.append(n)
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        stack.extend(n.all_input_nodes)
        for b in n.blocks:
            stack.extend(_free_inputs(b))
    return needed


def _free_inputs(block: Graph) -> list:
    from ember.jit.ir import walk
    out = []
    for n in walk(block):
        out.extend(n.all_input_nodes)
    return out
