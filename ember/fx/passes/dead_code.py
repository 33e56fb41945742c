"""Dead-code elimination: remove nodes whose values nobody uses and that have no side effects.

    >>> result = eliminate_dead_code(gm)
    >>> result.modified        # True if some node was removed

Kept even when unused: placeholders and the output, nodes that write memory (in-place ops,
``out=`` calls, ``setitem``, ops with a mutable schema, functions registered with
``ember.fx.node.has_side_effect``) and random ops (they advance the RNG state, so removing one
changes every later random number; torch 2.13 keeps them too).
"""
from __future__ import annotations

from .op_properties import is_random, writes_memory
from .pass_manager import PassResult

__all__ = ["eliminate_dead_code", "is_removable"]


def is_removable(node) -> bool:
    """True if `node` may be erased once it has no users.

    >>> is_removable(g.call_method("add", (x, 1)))    # True
    >>> is_removable(g.call_method("add_", (x, 1)))   # False: writes to x
    """
    if node.op in ("placeholder", "output"):
        return False
    return not (writes_memory(node) or is_random(node))


def eliminate_dead_code(gm) -> PassResult:
    """Erase unused side-effect-free nodes of ``gm.graph`` (in place) and recompile `gm`.

    >>> eliminate_dead_code(gm)     # PassResult(graph_module=gm, modified=True)

    Walks the graph backwards, so a chain of nodes that only feed each other goes in one sweep.
    """
    graph = gm.graph
    removed = 0
    for node in reversed(list(graph.nodes)):
        if len(node.users) == 0 and is_removable(node):
            graph.erase_node(node)
            removed += 1
    if removed and hasattr(gm, "recompile"):
        gm.recompile()
    return PassResult(gm, removed > 0)
