"""Dead-code elimination: delete nodes whose values are never used and that have no side effects.

    >>> eliminate_dead_code(gm)       # PassResult(graph_module=gm, modified=True)
    # before: %a = aten::tanh(%x); %b = aten::relu(%x); return (%b)
    # after:  %b = aten::relu(%x); return (%b)

Kept even when unused: placeholders and the output; whatever purity.has_side_effects says
stays (in-place and ``out=`` calls, ``setitem``, list mutation, prints, random ops, which advance
the generator, call_module, prim::RaiseException / SetAttr, functions registered with
``ember.fx.has_side_effect``); and the builtins that raise on their values in eager (``l[i]``,
``d[k]``, ``a // b``, ``int(s)``) unless the value types rule that out: dropping an unused one
would turn eager's IndexError/KeyError/ZeroDivisionError into a silent success.

Blocks: unused outputs of a ``prim::If`` are dropped from both blocks; an unused loop-carried
value is dropped when nothing live in the body reads it (a liveness fixpoint, since ``c = c + 1``
keeps ``c`` alive only through itself); an If/Loop whose outputs are all unused and whose blocks
have no side effects is deleted. The graph is walked backwards, so a chain of nodes that only
feed each other goes in one sweep.
"""
from __future__ import annotations

import builtins
import operator

from .. import prim
from ..blocks import (block_params, block_returns, drop_outputs, num_outputs, output_getitems,
                      set_block_returns, walk)
from ..node import Node
from .jit_log import log_update
from .pass_manager import PassResult, finish
from .purity import has_side_effects, value_kind

NAME = "dead_code_elimination"      # EMBER_JIT_LOG_LEVEL=">>dead_code_elimination"


def eliminate_dead_code(gm, *, is_impure_node=None) -> PassResult:
    """Erase the dead nodes of `gm` (a GraphModule or a Graph, blocks included), in place.

    `is_impure_node(node) -> bool` replaces the side-effect test (``Graph.eliminate_dead_code``'s
    argument, as in torch.fx)."""
    graph = getattr(gm, "graph", gm)
    state = _Sweep(is_impure_node)
    state.block(graph)
    return finish(NAME, gm, state.changed)


class _Sweep:
    def __init__(self, is_impure_node):
        self.keep = is_impure_node or _must_stay
        self.changed = False

    def block(self, block) -> None:
        for node in reversed(block.nodes):
            if node.op in ("placeholder", "output"):
                continue
            if node.target is prim.If:
                self.prune_if(node)
            elif node.target is prim.Loop:
                self.prune_loop(node)
            else:
                for b in node.blocks:
                    self.block(b)
            if not node.users and not self.keep(node):
                log_update(NAME, f"removed {node.name}")
                block.erase_node(node)
                self.changed = True

    def drop_unused_getitems(self, node) -> dict:
        """Erase getitems of `node`'s outputs that nobody reads (they would keep outputs alive)."""
        for items in output_getitems(node).values():
            for item in items:
                if not item.users:
                    item.graph.erase_node(item)
                    self.changed = True
        return output_getitems(node)

    def prune_if(self, node) -> None:
        used = self.drop_unused_getitems(node)
        drop = {i for i in range(num_outputs(node)) if not used.get(i)}
        drop_outputs(node, drop)
        self.changed |= bool(drop)
        for b in node.blocks:
            self.block(b)

    def prune_loop(self, node) -> None:
        body = node.blocks[0]
        used = self.drop_unused_getitems(node)
        count = num_outputs(node)
        live = {i for i in range(count) if used.get(i)}
        params = block_params(body)[1:]
        rets = block_returns(body)
        while True:  # a carried value is live if its output is used or live code in the body reads it
            needed = _needed_in_body(body, [rets[0]] + [rets[1 + i] for i in live], self.keep)
            grown = {i for i in range(count) if i not in live and params[i] in needed}
            if not grown:
                break
            live |= grown
        dead = set(range(count)) - live
        if dead:
            # stop returning dead carried values (a literal holds no use), so the body's sweep can
            # delete their producers; nothing live reads their params (liveness above)
            set_block_returns(body, [rets[0]] + [rets[1 + i] if i in live else 0 for i in range(count)])
        self.block(body)
        if dead:
            if any(params[i].users for i in dead):   # cannot happen: liveness covers every reader
                raise RuntimeError(f"eliminate_dead_code: a dead carried value of {node.name} is still read")
            drop_outputs(node, dead)
            self.changed = True


_RAISING = {operator.getitem, operator.floordiv, operator.mod, operator.truediv, builtins.divmod,
            builtins.int, builtins.float}


def _kind(arg) -> str | None:
    if isinstance(arg, Node):
        return value_kind(arg)
    return "tensor" if hasattr(arg, "shape") else type(arg).__name__


def may_raise(node: Node) -> bool:
    """A builtin that raises on some values (index/key out of range, division by zero, int("x")),
    except where its argument kinds rule that out (a tuple at a constant index, a tensor divided)."""
    if node.op != "call_function" or node.target not in _RAISING:
        return False
    kinds = [_kind(a) for a in node.args]
    if node.target is operator.getitem:
        return not (kinds[0] == "tuple" and not isinstance(node.args[1], Node))
    if node.target in (builtins.int, builtins.float):
        return not all(k in ("int", "float", "bool", "tensor") for k in kinds)
    # division: a tensor operand gives inf/nan (or raises on its own as an op), numbers can raise
    return "tensor" not in kinds


def _must_stay(node: Node) -> bool:
    """Kept even when unused: side effects, or an exception eager would raise (also in blocks)."""
    if has_side_effects(node) or may_raise(node):
        return True
    return any(may_raise(n) for b in node.blocks for n in walk(b))


def _needed_in_body(body, roots: list, keep) -> set:
    """Nodes of `body` (and values from outside it) that the roots or any kept node depend on,
    including values read inside nested blocks of needed nodes."""
    needed: set = set()
    stack = [r for r in roots if isinstance(r, Node)]
    stack += [n for n in body.nodes if n.op not in ("placeholder", "output") and keep(n)]
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        stack.extend(n.all_input_nodes)
        for b in n.blocks:
            for inner in walk(b):
                stack.extend(inner.all_input_nodes)
    return needed
