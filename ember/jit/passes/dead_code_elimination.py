"""EliminateDeadCode: delete nodes whose values are never used and that have no side effects.

Works through nested blocks: unused outputs of a ``prim::If`` are dropped from both blocks;
an unused loop-carried value is dropped when nothing live in the body reads it (a liveness
fixpoint, since ``c = c + 1`` keeps ``c`` alive only through itself); an If/Loop whose outputs
are all unused and whose blocks have no side effects is deleted. In-place ops, list mutation,
prints, ``prim::RaiseException``, ``prim::SetAttr`` and random ops always stay, and so do the
builtins that raise on their values in eager (``l[i]``, ``d[k]``, ``a // b``, ``int(s)``): dropping
an unused one would turn eager's IndexError/KeyError/ZeroDivisionError into a silent success.

    # before: %a = aten::tanh(%x); %b = aten::relu(%x); return (%b)
    # after:  %b = aten::relu(%x); return (%b)
    graph = eliminate_dead_code(graph)
"""
from __future__ import annotations

import builtins
import operator

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.jit.ir import block_returns, prim, set_block_returns, walk
from ember.jit.ir.types import BoolType, FloatType, IntType, TensorType, TupleType

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
        if not node.users and not _must_stay(node):
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


_RAISING = {operator.getitem, operator.floordiv, operator.mod, operator.truediv, builtins.divmod,
            builtins.int, builtins.float}


def _may_raise(node: Node) -> bool:
    """A builtin that raises on some values (index/key out of range, division by zero, int("x")),
    except where its argument types rule that out (a tuple at a constant index, a tensor divided)."""
    if node.op != "call_function" or node.target not in _RAISING:
        return False
    args = [a.type if isinstance(a, Node) else a for a in node.args]
    if node.target is operator.getitem:
        return not (isinstance(args[0], TupleType) and not isinstance(node.args[1], Node))
    if node.target in (builtins.int, builtins.float):
        return not all(isinstance(t, (IntType, FloatType, BoolType, TensorType, int, float)) for t in args)
    # division: a tensor operand gives inf/nan (or raises on its own as an op), numbers can raise
    return not any(isinstance(t, TensorType) for t in args)


def _must_stay(node: Node) -> bool:
    """Kept even when unused: side effects, or an exception eager would raise (also in blocks)."""
    if has_side_effects(node) or _may_raise(node):
        return True
    return any(_may_raise(n) for b in node.blocks for n in walk(b))


def _needed_in_body(body: Graph, roots: list) -> set:
    """Nodes of `body` (and values from outside it) that the roots or any side-effecting node
    depend on, including values read inside nested blocks of needed nodes."""
    needed: set = set()
    stack = [r for r in roots if isinstance(r, Node)]
    for n in body.nodes:
        if n.op not in ("placeholder", "output") and _must_stay(n):
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
