"""Constant folding: compute at pass time what does not depend on the inputs.

    >>> fold_constants(gm)        # PassResult(graph_module=gm, modified=True)
    # GraphModule: w2 = self.w.t() * 2; out = x @ w2  ->  out = x @ self._folded_constant_0
    # script graph: %a : int = prim::Constant[value=2](); %b : int = aten::mul(%a, %a)
    #               ->  %b : int = prim::Constant[value=4]()

A node is constant when it is a ``prim::Constant``, a get_attr of an attribute nothing in the
graph may write (GraphModules only: the pass reads the module's attributes), or a call that
purity.is_cse_safe accepts (never random, nondeterministic, in-place, printing, call_module or a
fresh list/dict) whose inputs are all constant (a call with no inputs, like ``ember.ones(3)``,
included). Constants are computed once; an op that raises is left alone (the error happens at run
time, as in eager). Each constant read by a non-constant node is replaced, for a GraphModule, by
the literal itself (None, bool, int, float, str) or a get_attr of a new attribute
``_folded_constant_<n>`` (tensors); for a bare Graph (the script IR) by a ``prim::Constant``
(None, bool, int, float, str, dtype, device, tensors and tuples of those). Constant nodes that
nobody reads any more are erased. A ``prim::If`` on a constant condition is replaced by its taken
block, a ``prim::Loop`` that runs zero times by its initial values.

A folded tensor is one object shared by every run, so it is folded only when that cannot show:
it does not require grad, nothing in the graph may write it (purity.MutationInfo), and it does not
escape (every reader is a pure computation that makes a new value: not a view, a container, a
call or the output; ``tanh(zeros(3))`` folds ``zeros(3)``, a returned ``zeros(3)`` stays).
"""
from __future__ import annotations

import dataclasses

from .. import prim
from ..blocks import (constant_value, inline_graph, is_constant, make_constant, output_getitems, replace_outputs,
                      walk)
from ..node import Node, map_arg
from .jit_log import log_update
from .pass_manager import PassResult, finish, until_unchanged
from .purity import MutationInfo, is_cse_safe, properties

NAME = "constant_propagation"
MAX_ROUNDS = 50
_LITERALS = (type(None), bool, int, float, str)


def fold_constants(gm) -> PassResult:
    """Fold the constant computations of `gm` (a GraphModule or a Graph, blocks included), in place."""
    graph = getattr(gm, "graph", gm)
    module = gm if graph is not gm else None

    def one_round() -> bool:
        changed = _fold_values(graph, module, MutationInfo(graph))
        for node in list(walk(graph)):
            if node._erased:
                continue
            if node.target is prim.If:
                changed |= _fold_if(node)
            elif node.target is prim.Loop:
                changed |= _fold_loop(node)
        return changed
    return finish(NAME, gm, until_unchanged(one_round, MAX_ROUNDS))


def constant_nodes(gm) -> list:
    """The nodes of `gm` whose values do not depend on the inputs, in program order."""
    graph = getattr(gm, "graph", gm)
    return list(_constants(graph, gm if graph is not gm else None, MutationInfo(graph)))


def _constants(graph, module, mutations) -> dict:
    """Constant node -> its value, in program order."""
    env: dict = {}
    for node in walk(graph):
        if node._erased:
            continue
        if is_constant(node):
            env[node] = node.args[0]
        elif node.op == "get_attr":
            if module is not None and not mutations.may_be_mutated(node):
                env[node] = _fetch(module, node.target)
        elif _foldable(node) and all(n in env for n in node.all_input_nodes):
            args = map_arg(node.args, env.__getitem__)
            kwargs = map_arg(node.kwargs, env.__getitem__)
            try:
                env[node] = (getattr(args[0], node.target)(*args[1:], **kwargs) if node.op == "call_method"
                             else node.target(*args, **kwargs))
            except Exception:  # noqa: BLE001 - the op raises when the program runs, as in eager
                continue
    return env


def _foldable(node: Node) -> bool:
    if not is_cse_safe(node) or (prim.is_prim(node.target) and node.target.fn is None):
        return False
    if node.target in (prim.Uninitialized, prim.TypeCheck):
        return False
    return not (node.meta.get("output_of") is not None and not is_constant(node.args[0]))


def _fetch(module, target: str):
    value = module
    for atom in target.split("."):
        value = getattr(value, atom)
    return value


def _fold_values(graph, module, mutations) -> bool:
    env = _constants(graph, module, mutations)
    changed = False
    had_users = {n for n in env if n.users}
    runtime: set = set()       # constants that stay computations (their value may not be shared)
    chosen = []
    for node in reversed(env):             # readers before what they read
        if node.op == "get_attr" or is_constant(node):
            continue                           # already as folded as it gets
        readers = [u for u in node.users if u not in env or u in runtime]
        if not readers:
            continue
        if _foldable_value(node, env[node], mutations, module):
            chosen.append((node, readers))
        else:
            runtime.add(node)                  # then its constant inputs are read at run time
    for node, readers in reversed(chosen):
        new = _materialise(node, env[node], module)
        log_update(NAME, f"folded {node.name} into a constant")
        for user in readers:
            user._update_args_kwargs(*map_arg((user.args, user.kwargs), lambda n: new if n is node else n))
        changed = True
    for node in reversed(list(env)):   # constants nobody reads any more; dead ones are DCE's business
        if node in had_users and not node.users and not node._erased:
            node.graph.erase_node(node)
            changed = True
    return changed


def _holds_tensor(value) -> bool:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return True
    return isinstance(value, tuple) and any(_holds_tensor(v) for v in value)


def _constant_like(value) -> bool:
    import ember
    if isinstance(value, (*_LITERALS, ember.dtype, ember.device, ember.Tensor)):
        return True
    return isinstance(value, tuple) and all(_constant_like(v) for v in value)   # ember.Size too


def _foldable_value(node: Node, value, mutations: MutationInfo, module) -> bool:
    import ember
    if module is not None:                     # a GraphModule holds literals inline and tensors as attributes
        if not isinstance(value, (*_LITERALS, ember.Tensor)):
            return False
    elif not _constant_like(value):
        return False
    if not _holds_tensor(value):
        return True
    if any(getattr(t, "requires_grad", False) for t in (value if isinstance(value, tuple) else (value,))):
        return False
    return not mutations.may_be_mutated(node) and not _escapes(node)


_CONTAINERS = (prim.TupleConstruct, prim.ListConstruct, prim.DictConstruct, prim.If, prim.Loop, prim.GetAttr,
               prim.SetAttr)


def _escapes(node: Node) -> bool:
    """The value may reach the caller or alias something longer-lived than one use."""
    for user in node.users:
        if user.op not in ("call_function", "call_method") or user.target in _CONTAINERS:
            return True                        # graph / block output, containers
        if not is_cse_safe(user) or properties(user).aliases_args:
            return True                        # a call that may keep it, or a view of it
    return False


def _materialise(node: Node, value, module):
    """What readers of `node` read instead: a literal, a get_attr or a prim::Constant node."""
    graph = node.graph
    if module is not None:
        if isinstance(value, _LITERALS):
            return value
        i = 0
        while hasattr(module, f"_folded_constant_{i}"):
            i += 1
        name = f"_folded_constant_{i}"
        setattr(module, name, value)
        with graph.inserting_before(node):
            attr = graph.get_attr(name)
        attr.meta.update(node.meta)
        return attr
    return make_constant(node, value, _constant_type(node, value), meta_from=node)


def _constant_type(node: Node, value):
    """`node`'s type; a tensor's is refined with what the value shows (dtype, sizes)."""
    t = node.type
    if getattr(t, "kind", None) == "tensor" and hasattr(value, "shape"):
        return dataclasses.replace(t, dtype=value.dtype, sizes=tuple(value.shape), requires_grad=False)
    return t


def _fold_if(node: Node) -> bool:
    ok, cond = constant_value(node.args[0])
    if not ok:
        return False
    block = node.blocks[0] if cond else node.blocks[1]
    log_update(NAME, f"folded {node.name}: kept block{0 if cond else 1}")
    _replace_multi(node, list(inline_graph(node.graph, node, block, [])))
    return True


def _fold_loop(node: Node) -> bool:
    ok_trip, trips = constant_value(node.args[0])
    ok_cond, cond = constant_value(node.args[1])
    if not ((ok_trip and isinstance(trips, int) and trips <= 0) or (ok_cond and not cond)):
        return False
    log_update(NAME, f"removed {node.name}: it runs zero times")
    _replace_multi(node, list(node.args[2:]))
    return True


def _replace_multi(node: Node, values: list) -> None:
    items = output_getitems(node)
    fixed = []
    for i, v in enumerate(values):   # a literal block return becomes a constant of that output's type
        typed = items.get(i, [None])[0]
        fixed.append(v if isinstance(v, Node) else make_constant(node, v, getattr(typed, "type", None)))
    replace_outputs(node, fixed)
    if not node.users:
        node.graph.erase_node(node)
