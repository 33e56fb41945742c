"""Loop unrolling: replace a small ``prim::Loop`` with a constant trip count by copies of its body.

A loop is unrolled when its max trip count is a constant int ``n <= max_trip``, its start
condition is the constant True and its body returns the constant True as the next condition
(a plain ``for i in range(n)``): the body is copied n times, copy k reading ``i = k`` and the
carried values of copy k-1. Loops with a computed condition (``while``, ``break``) stay loops.
Inner loops of an unrolled loop are considered again on the copies.

    # before: %y = prim::Loop(%3, %true, %x)  block0(%i, %c): %d = aten::mul(%c, %c) -> (%true, %d)
    # after:  %d1 = aten::mul(%x, %x); %d2 = aten::mul(%d1, %d1); %d3 = aten::mul(%d2, %d2)
    graph = unroll_loops(graph, max_trip=8)
"""
from __future__ import annotations

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish, until_unchanged
from ember.jit.ir import block_returns, inline_graph, prim, walk

from ._util import constant_value, make_constant_before, replace_outputs

MAX_ROUNDS = 20


def unroll_loops(graph: Graph, max_trip: int = 8) -> PassResult:
    """Unroll every loop of `graph` (and its blocks) with a constant trip count <= `max_trip`.

        unroll_loops(g, max_trip=8)
    """
    def one_round() -> bool:
        loops = [n for n in walk(graph) if n.op == "call_function" and n.target is prim.Loop
                 and _trip_count(n, max_trip) is not None]
        for loop in loops:
            if not loop._erased:
                _unroll(loop, _trip_count(loop, max_trip))
        return bool(loops)
    return finish("loop_unrolling", graph, until_unchanged(one_round, MAX_ROUNDS))


def _trip_count(loop: Node, max_trip: int) -> int | None:
    ok, trips = constant_value(loop.args[0])
    if not ok or not isinstance(trips, int) or isinstance(trips, bool) or trips > max_trip:
        return None
    ok, start = constant_value(loop.args[1])
    if not ok or start is not True:
        return None
    ok, cond = constant_value(block_returns(loop.blocks[0])[0])
    if not ok or cond is not True:
        return None
    return max(trips, 0)


def _unroll(loop: Node, trips: int) -> None:
    body = loop.blocks[0]
    carried = list(loop.args[2:])
    for k in range(trips):
        i = make_constant_before(loop, k)
        results = inline_graph(loop.graph, loop, body, [i, *carried])
        carried = [r if isinstance(r, Node) else make_constant_before(loop, r) for r in list(results)[1:]]
    carried = [c if isinstance(c, Node) else make_constant_before(loop, c) for c in carried]
    log_update("loop_unrolling", f"unrolled {loop.name} ({trips} copies)")
    replace_outputs(loop, carried)
    if not loop.users:
        loop.graph.erase_node(loop)
