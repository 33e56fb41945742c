"""Common-subexpression elimination: a node that repeats an earlier computation reuses its value.

    >>> # a = x.sin(); b = x.sin(); out = a + b    ->    a = x.sin(); out = a + a
    >>> eliminate_common_subexpressions(gm).modified     # True

Two nodes are the same computation when op, target, args and kwargs are equal (arguments that
are nodes compare by identity, after earlier merges). Never merged:
- random ops (``rand``, ``dropout``, ``bernoulli``, ... or any op with a ``Generator`` argument):
  two draws are two different values;
- ops that write memory (in-place, ``out=``, side-effecting) and call_module nodes (a module may
  hold state, e.g. running statistics);
- computations separated by a write: every node that writes memory starts a new "epoch", and only
  nodes of the same epoch are merged (``a = x + 1; x.add_(1); b = x + 1`` keeps both). This is
  coarser than tracking which tensor (and which of its views) was written, and never wrong.
"""
from __future__ import annotations

from .op_properties import is_random, writes_memory
from .pass_manager import PassResult

__all__ = ["eliminate_common_subexpressions"]

_MERGEABLE_OPS = ("call_function", "call_method", "get_attr")


class _Unhashable(Exception):
    pass


def _freeze(value):
    """A hashable key for an argument; Nodes by identity, containers element-wise (with their type)."""
    from ..node import Node
    if isinstance(value, Node):
        return ("node", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _freeze(value.start), _freeze(value.stop), _freeze(value.step))
    if isinstance(value, (int, float, bool, str, type(None), complex)):
        # 1 == 1.0 == True hash alike but are different arguments: keep the type in the key
        return (type(value).__name__, value)
    if hasattr(value, "shape"):
        raise _Unhashable             # tensors (mutable, compared by value): do not merge
    try:
        hash(value)
    except TypeError:
        raise _Unhashable from None
    return (type(value).__qualname__, value)   # dtypes, devices, enums, functions


def _key(node, epoch):
    target = node.target
    try:
        hash(target)
    except TypeError:
        raise _Unhashable from None
    return (node.op, target, _freeze(node.args), _freeze(node.kwargs),
            0 if node.op == "get_attr" else epoch)


def eliminate_common_subexpressions(gm) -> PassResult:
    """Merge repeated pure computations of ``gm.graph`` (in place) and recompile `gm`.

    >>> eliminate_common_subexpressions(gm)     # PassResult(graph_module=gm, modified=...)

    The later duplicate's users are moved to the first node and the duplicate is erased.
    get_attr nodes with the same target merge regardless of writes (they name the same object).
    """
    graph = gm.graph
    seen: dict = {}
    epoch = 0
    merged = 0
    for node in list(graph.nodes):
        if node.op not in _MERGEABLE_OPS:
            if node.op != "placeholder" and writes_memory(node):
                epoch += 1
            continue
        if writes_memory(node):
            epoch += 1                 # values read after this may differ from those read before
            continue
        if is_random(node):
            continue
        try:
            key = _key(node, epoch)
            first = seen.get(key)
        except (_Unhashable, TypeError):
            continue
        if first is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(first)
        graph.erase_node(node)
        merged += 1
    if merged and hasattr(gm, "recompile"):
        gm.recompile()
    return PassResult(gm, merged > 0)
