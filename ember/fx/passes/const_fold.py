"""Constant folding: compute once, at pass time, the nodes that depend only on constants.

    >>> # w2 = self.w.t() * 2; out = x @ w2     ->    out = x @ self._folded_constant_0
    >>> fold_constants(gm).modified     # True

A node is constant when it is a get_attr, or a call_function/call_method all of whose input
nodes are constant (a node with no inputs, like ``ember.ones(3)``, is constant too). Never
constant: placeholders (inputs change between calls), random ops, ops that write memory,
call_module nodes (a module may hold state), and get_attr of an attribute that some node of the
graph writes to (directly or through a constant chain), since its value changes from call to call.

The constant nodes are run once; each one whose value is used by a non-constant node is replaced
by a get_attr of a new attribute ``_folded_constant_<n>`` holding the value (tensors) or by the
literal itself (None, bool, int, float, str). Constant nodes left without users are erased.
"""
from __future__ import annotations

from .dead_code import is_removable
from .op_properties import is_random, writes_memory
from .pass_manager import PassResult

__all__ = ["fold_constants", "constant_nodes"]

_LITERAL_TYPES = (type(None), bool, int, float, str)
_FOLDABLE_OPS = ("call_function", "call_method")


def _written_roots(graph) -> set:
    """get_attr targets that some memory-writing node reads through a chain of non-input nodes."""
    written = set()
    for node in graph.nodes:
        if node.op == "output" or not writes_memory(node):
            continue
        stack, seen = list(node.all_input_nodes), set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n.op == "get_attr":
                written.add(n.target)
            elif n.op in _FOLDABLE_OPS:
                stack.extend(n.all_input_nodes)
    return written


def constant_nodes(graph) -> list:
    """The nodes of `graph` whose value does not depend on the inputs, in graph order.

    >>> constant_nodes(gm.graph)     # [w, t, mul]
    """
    written = _written_roots(graph)
    constant: dict = {}
    for node in graph.nodes:
        if node.op == "get_attr":
            ok = node.target not in written
        elif node.op in _FOLDABLE_OPS:
            ok = (all(inp in constant for inp in node.all_input_nodes)
                  and not writes_memory(node) and not is_random(node))
        else:
            ok = False
        if ok:
            constant[node] = None
    return list(constant)


def _foldable_value(value) -> bool:
    return isinstance(value, _LITERAL_TYPES) or hasattr(value, "shape") and hasattr(value, "dtype")


def _new_attr_name(gm) -> str:
    i = 0
    while hasattr(gm, f"_folded_constant_{i}"):
        i += 1
    return f"_folded_constant_{i}"


def fold_constants(gm) -> PassResult:
    """Replace constant subexpressions of ``gm.graph`` by their values (in place); recompile `gm`.

    >>> fold_constants(gm)     # PassResult(graph_module=gm, modified=True)
    """
    from ..interpreter import Interpreter
    graph = gm.graph
    constant = constant_nodes(graph)
    if not constant:
        return PassResult(gm, False)
    # Run just the constant nodes (pre-filling nothing: they read no inputs).
    interp = Interpreter(gm, garbage_collect_values=False)
    env = interp.env = {}
    for node in constant:
        env[node] = interp.run_node(node)
    constant_set = set(constant)
    had_users = {n for n in constant if n.users}
    modified = False
    for node in constant:
        if node.op == "get_attr":
            continue                           # already as folded as it gets
        outside_users = [u for u in node.users if u not in constant_set]
        if not outside_users:
            continue
        value = env[node]
        if not _foldable_value(value):
            continue                           # e.g. a tuple of tensors: its getitem users fold instead
        if isinstance(value, _LITERAL_TYPES):
            for user in outside_users:
                _replace_with_literal(user, node, value)
        else:
            name = _new_attr_name(gm)
            setattr(gm, name, value)
            with graph.inserting_before(node):
                attr = graph.get_attr(name)
            attr.meta.update(node.meta)
            for user in outside_users:
                user.replace_input_with(node, attr)
        modified = True
    # Constant nodes nobody reads any more (get_attr of the originals included) go; nodes that
    # were dead before the pass are left for dead-code elimination.
    for node in reversed(constant):
        if node in had_users and len(node.users) == 0 and is_removable(node):
            graph.erase_node(node)
            modified = True
    if modified and hasattr(gm, "recompile"):
        gm.recompile()
    return PassResult(gm, modified)


def _replace_with_literal(user, node, value) -> None:
    """Put `value` where `user` reads `node` (nested containers included)."""
    from ..node import map_arg
    user.args = map_arg(user.args, lambda n: value if n is node else n)
    user.kwargs = map_arg(user.kwargs, lambda n: value if n is node else n)
