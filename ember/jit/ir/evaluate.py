"""A reference evaluator for script graphs: walks the nodes (and blocks) one by one.

It is the IR's meaning written as plainly as possible: the instruction interpreter of the graph
executor must agree with it, and tests use it as an oracle.

    evaluate(graph, [x, y])    # the graph's output value
"""
from __future__ import annotations

from typing import Any

from ember.fx.graph import Graph
from ember.fx.node import map_arg

from . import callee_graph, prim


def evaluate(graph: Graph, inputs: list, env: dict | None = None) -> Any:
    """Run `graph` on `inputs` (one per placeholder) and return what its output node returns."""
    env = {} if env is None else env
    params = [n for n in graph.nodes if n.op == "placeholder"]
    if len(params) != len(inputs):
        raise TypeError(f"evaluate: the graph takes {len(params)} inputs, got {len(inputs)}")
    env.update(zip(params, inputs))
    return _run_block_body(graph, env)


def _run_block_body(graph: Graph, env: dict) -> Any:
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return map_arg(node.args[0], lambda n: env[n])
        env[node] = _run_node(node, env)
    return None


def _run_block(block: Graph, env: dict, params: list) -> tuple:
    env.update(zip([n for n in block.nodes if n.op == "placeholder"], params))
    return tuple(_run_block_body(block, env))


def _run_node(node, env: dict) -> Any:
    args = map_arg(node.args, lambda n: env[n])
    kwargs = map_arg(node.kwargs, lambda n: env[n])
    target = node.target
    if node.op == "call_method":
        return getattr(args[0], target)(*args[1:], **kwargs)
    if node.op != "call_function":
        raise NotImplementedError(f"evaluate: {node.op} nodes are not part of the script IR")
    if target is prim.If:
        return _run_block(node.blocks[0] if args[0] else node.blocks[1], env, [])
    if target is prim.Loop:
        max_trips, cond, *carried = args
        i = 0
        while cond and i < max_trips:
            cond, *carried = _run_block(node.blocks[0], env, [i, *carried])
            i += 1
        return tuple(carried)
    if target is prim.CallFunction or (target is prim.CallMethod and "callee" in node.meta):
        inputs = [args[0], *args[2:]] if target is prim.CallMethod else list(args)   # args[1]: the method's name
        return evaluate(callee_graph(node.meta["callee"]), inputs)
    if target is prim.profile:
        return args[0]
    return target(*args, **kwargs)
