"""Inline: replace calls of scripted functions and methods by a copy of the callee's graph.

A ``prim::CallFunction(*inputs)`` or ``prim::CallMethod(module, name, *inputs)`` node whose
``meta["callee"]`` is a ScriptFunction / ScriptMethod (an object with ``._graph`` or
``.graph.fx_graph``) is replaced, recursively, by the callee's nodes (``ir.inline_graph``). A
CallMethod without a callee (an ``@ember.jit.ignore``d Python method) stays a call.

    # before:  %y : Tensor = prim::CallFunction(%x)        meta["callee"] = scripted helper
    # after:   %y : Tensor = aten::relu(%x)
    graph = inline(graph)
"""
from __future__ import annotations

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish
from ember.jit.ir import callee_graph, callee_name, clone, inline_graph, prim, walk

from ._util import make_constant_before, replace_value


def _inlinable(node: Node) -> bool:
    return (node.op == "call_function" and node.target in (prim.CallFunction, prim.CallMethod)
            and node.meta.get("callee") is not None and callee_graph(node.meta["callee"]) is not None)


def inline(graph: Graph) -> PassResult:
    """Inline every scripted call in `graph` (and its blocks), recursively, in place.
    A callee that (indirectly) calls itself raises RuntimeError naming it, as TorchScript
    rejects recursion. The callees' own graphs are not changed.

        inline(fn._graph)
    """
    return finish("inline", graph, _inline_all(graph, [], {}) > 0)


def _inline_all(graph: Graph, stack: list, done: dict) -> int:
    """Inline the calls of `graph`; `stack` holds the callee graphs being inlined (recursion
    check) and `done` caches each callee graph's fully inlined copy. Returns how many."""
    calls = [n for n in walk(graph) if _inlinable(n)]
    for call in calls:
        source = callee_graph(call.meta["callee"])
        if any(source is g for g in stack):
            raise RuntimeError(f"inline: {callee_name(call) or '?'} calls itself (recursive scripted functions "
                               f"are not supported)")
        flat = done.get(id(source))
        if flat is None:
            flat = clone(source)
            _inline_all(flat, stack + [source], done)
            done[id(source)] = flat
        _inline_call(call, flat)
    return len(calls)


def _inline_call(call: Node, callee: Graph) -> None:
    if call.target is prim.CallMethod:
        inputs = [call.args[0], *call.args[2:]]
    else:
        inputs = list(call.args)
    result = inline_graph(call.graph, call, callee, inputs)
    if isinstance(result, Node) and "jit_name" in call.meta and "jit_name" not in result.meta \
            and result not in inputs and result.graph is call.graph:
        result.meta["jit_name"] = call.meta["jit_name"]
    if not isinstance(result, Node) and call.users:
        result = make_constant_before(call, result, call.type, meta_from=call)
    log_update("inline", f"inlined {call.name}")
    replace_value(call, result)
