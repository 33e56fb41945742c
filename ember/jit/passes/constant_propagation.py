"""ConstantPropagation: run nodes whose inputs are all constants at compile time.

A node is folded into a ``prim::Constant`` when every input is a constant, the op is pure and
deterministic (never random, in-place, printing or an opaque call), its result is not a fresh
mutable container (lists, dicts), and the value is constant-like (None, bool, int, float, str,
dtype, device, tuples of those, Tensors). A ``prim::If`` on a constant condition is replaced by
its taken block; a ``prim::Loop`` that runs zero times by its initial values. An op that raises
is left alone (the error happens at run time, as in eager).

Tensor results are folded like TorchScript does, with two guards against sharing one tensor
object across runs: nothing in the graph mutates tensors in place, and the folded tensor does not
escape (every user is a pure, non-view op, e.g. ``tanh(zeros(3))`` folds ``zeros(3)`` but a
returned ``zeros(3)`` is recomputed each run).

    # before: %a : int = prim::Constant[value=2](); %b : int = aten::mul(%a, %a)
    # after:  %b : int = prim::Constant[value=4]()
    graph = constant_propagation(graph)
"""
from __future__ import annotations

from ember.fx.graph import Graph
from ember.fx.node import Node, map_arg
from ember.jit.ir import inline_graph, prim, walk
from ember.jit.ir.types import observed_tensor_type

from ._util import (all_inputs_constant, constant_value, finish, make_constant_before, replace_outputs,
                    replace_value)
from .jit_log import log_update
from .purity import MutationInfo, is_constant, is_cse_safe

MAX_ROUNDS = 50

# users through which a tensor would escape or alias: views share storage with their input
VIEW_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "expand", "expand_as", "transpose", "t", "permute",
    "squeeze", "unsqueeze", "narrow", "select", "__getitem__", "getitem", "as_strided", "flatten",
    "unflatten", "contiguous", "detach", "alias", "to", "type", "type_as", "float", "double", "half",
    "int", "long", "bool", "bfloat16", "unbind", "split", "chunk", "tensor_split", "diagonal",
    "unfold", "movedim", "moveaxis", "swapaxes", "swapdims", "real", "imag", "view_as_real",
    "view_as_complex", "cpu", "cuda", "data", "numpy", "tolist", "T", "mT", "H",
    "ravel", "split_with_sizes", "hsplit", "vsplit", "dsplit", "align_as", "refine_names"})


def constant_propagation(graph: Graph) -> Graph:
    """Fold constant computations of `graph` and its blocks; returns the graph.

        g = constant_propagation(g)
    """
    for _ in range(MAX_ROUNDS):
        mutations = MutationInfo(graph)
        changed = False
        for node in list(walk(graph)):
            if node._erased:
                continue
            if node.target is prim.If and node.op == "call_function":
                changed |= _fold_if(node)
            elif node.target is prim.Loop and node.op == "call_function":
                changed |= _fold_loop(node)
            elif _foldable(node):
                changed |= _fold_node(node, mutations)
        if not changed:
            break
    return finish("constant_propagation", graph)


def _foldable(node: Node) -> bool:
    if node.op not in ("call_function", "call_method") or is_constant(node):
        return False
    if node.meta.get("output_of") is not None and not is_constant(node.args[0]):
        return False
    if not is_cse_safe(node) or not all_inputs_constant(node):
        return False
    if node.target in (prim.Uninitialized, prim.TypeCheck) or (prim.is_prim(node.target) and node.target.fn is None):
        return False
    return True


def _fold_node(node: Node, mutations: MutationInfo) -> bool:
    args = map_arg(node.args, lambda n: n.args[0])
    kwargs = map_arg(node.kwargs, lambda n: n.args[0])
    try:
        if node.op == "call_method":
            value = getattr(args[0], node.target)(*args[1:], **kwargs)
        else:
            value = node.target(*args, **kwargs)
    except Exception:  # leave the error to run time, as eager would raise it there
        return False
    if not _constant_like(value):
        return False
    if _holds_tensor(value) and (mutations.tensors or mutations.everything or _escapes(node)):
        return False
    type_ = node.type
    import ember
    if isinstance(value, ember.Tensor):
        if value.requires_grad:
            return False
        type_ = observed_tensor_type(value)
    const = make_constant_before(node, value, type_, meta_from=node)
    log_update("constant_propagation", f"folded {node.name} into a constant")
    replace_value(node, const)
    return True


def _constant_like(value) -> bool:
    import ember
    if value is None or isinstance(value, (bool, int, float, str, ember.dtype, ember.device, ember.Tensor)):
        return True
    if isinstance(value, tuple):   # includes ember.Size (immutable)
        return all(_constant_like(v) for v in value)
    return False


def _holds_tensor(value) -> bool:
    import ember
    if isinstance(value, ember.Tensor):
        return True
    return isinstance(value, tuple) and any(_holds_tensor(v) for v in value)


def _escapes(node: Node) -> bool:
    """The value may reach the caller or alias something longer-lived than one use."""
    for user in node.users:
        if user.op not in ("call_function", "call_method"):
            return True   # graph / block output
        if user.target in (prim.TupleConstruct, prim.ListConstruct, prim.DictConstruct, prim.If, prim.Loop,
                           prim.GetAttr, prim.SetAttr) or not is_cse_safe(user):
            return True
        name = user.target if isinstance(user.target, str) else getattr(user.target, "__name__", "")
        if name in VIEW_METHODS or name in ("getitem", "__getitem__"):
            return True
    return False


def _fold_if(node: Node) -> bool:
    ok, cond = constant_value(node.args[0])
    if not ok:
        return False
    block = node.blocks[0] if cond else node.blocks[1]
    log_update("constant_propagation", f"folded {node.name}: kept block{0 if cond else 1}")
    values = inline_graph(node.graph, node, block, [])
    _replace_multi(node, list(values))
    return True


def _fold_loop(node: Node) -> bool:
    ok_trip, trips = constant_value(node.args[0])
    ok_cond, cond = constant_value(node.args[1])
    if not ((ok_trip and isinstance(trips, int) and trips <= 0) or (ok_cond and not cond)):
        return False
    log_update("constant_propagation", f"removed {node.name}: it runs zero times")
    _replace_multi(node, list(node.args[2:]))
    return True


def _replace_multi(node: Node, values: list) -> None:
    fixed = []
    for v in values:
        if isinstance(v, Node):
            fixed.append(v)
        else:   # a literal block return: materialise it as a constant
            fixed.append(make_constant_before(node, v))
    replace_outputs(node, fixed)
    if not node.users:
        node.graph.erase_node(node)

