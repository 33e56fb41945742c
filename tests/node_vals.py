"""Check a graph's per-node tensor fact, ``node.meta["val"]``, against the eager values of its nodes.

    values = eager_node_values(graph, inputs, root)   # every node's value, its ops run eagerly on inputs
    assert_vals_match(graph, values)                  # each tensor value's node carries a matching val

`eager_node_values` recomputes a straight-line graph of any frontend (fx, jit.trace, jit.script's
optimised graph, dynamo, make_fx) by calling each node's target on real tensors: the oracle is
eager ember, independent of how the frontend computed its vals (from real results, from meta
kernels or from profiling). Strides are compared where they are significant (dims of size > 1),
as PyTorch compares a meta result with a real one (torch._prims_common.check_significant_strides):
the stride of a size-1 dim is never used to address an element.
"""
from __future__ import annotations

import ember
from ember.fx import prim
from ember.fx.prim import PrimOp


def _load(value, env):
    if isinstance(value, ember.fx.Node):
        return env[value]
    if isinstance(value, (list, tuple)):
        return type(value)(_load(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _load(v, env) for k, v in value.items()}
    return value


def eager_node_values(graph, inputs, root=None) -> dict:
    """{node: its value} when `graph`'s ops run eagerly on `inputs` (attributes read from `root`)."""
    env, args = {}, iter(inputs)
    for node in graph.nodes:
        if node.op == "placeholder":
            env[node] = next(args)
        elif node.op == "get_attr":
            value = root
            for atom in node.target.split("."):
                value = getattr(value, atom)
            env[node] = value
        elif node.op == "call_function" and node.target is prim.profile:
            env[node] = env[node.args[0]]      # the profiling executor's observation point: the identity
        elif node.op == "call_function":
            target = node.target.fn if isinstance(node.target, PrimOp) else node.target
            env[node] = target(*_load(node.args, env), **_load(node.kwargs, env))
        elif node.op == "call_method":
            receiver, *rest = _load(node.args, env)
            env[node] = getattr(receiver, node.target)(*rest, **_load(node.kwargs, env))
        elif node.op == "call_module":
            env[node] = root.get_submodule(node.target)(*_load(node.args, env), **_load(node.kwargs, env))
    return env


def significant_strides(t) -> tuple:
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def _tensors(value) -> list:
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def assert_vals_match(graph, values: dict, nodes=None) -> int:
    """Every node (of `nodes`, default: all) whose value holds tensors has meta["val"]: meta
    tensors with the value's shape, dtype, significant strides and requires_grad. Returns how
    many tensors were checked."""
    checked = 0
    for node in graph.nodes if nodes is None else nodes:
        if node.op == "output" or node not in values:
            continue
        tensors = _tensors(values[node])
        if not tensors:
            continue
        assert "val" in node.meta, f"{node.format_node()}: no meta['val']"
        vals = _tensors(node.meta["val"])
        assert len(vals) == len(tensors), f"{node.name}: val {node.meta['val']!r} for {len(tensors)} tensors"
        for val, t in zip(vals, tensors):
            where = f"{node.format_node()}: val {tuple(val.shape)} {val.stride()} vs eager {tuple(t.shape)} {t.stride()}"
            assert val.device.type == "meta", where
            assert tuple(val.shape) == tuple(t.shape), where
            assert val.dtype == t.dtype, where
            assert significant_strides(val) == significant_strides(t), where
            assert val.requires_grad == t.requires_grad, where
            checked += 1
    return checked
