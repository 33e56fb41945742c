"""ConstantPooling: one ``prim::Constant`` node per distinct value, at the start of the graph.

Constants are compared by type and value (1, 1.0 and True stay three constants; -0.0 and 0.0
differ; tensors only pool with themselves). Every constant, including those inside If/Loop
blocks, is hoisted to the top of the root graph, right after its inputs, so every block may
read it. List / dict constants are mutable in Python and stay where they are, unpooled.

    # before: %1 = prim::Constant[value=1](); ...; %5 = prim::Constant[value=1]()  (in a block)
    # after:  %1 = prim::Constant[value=1]() at the top; both uses read %1
    graph = constant_pooling(graph)
"""
from __future__ import annotations

from ember.fx.blocks import is_constant
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.common_subexpression_elimination import freeze as _freeze
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish
from ember.jit.ir import constant, root_graph, walk


def constant_pooling(graph: Graph) -> PassResult:
    """Pool and hoist the constants of `graph` (a root graph) and its blocks, in place.

        constant_pooling(g)
    """
    root = root_graph(graph)
    order = list(walk(root))
    inputs = [n for n in root.nodes if n.op == "placeholder"]
    anchor = inputs[-1] if inputs else None     # constants go right after the inputs
    pooled: dict = {}
    for node in list(walk(root)):
        if node._erased or not is_constant(node):
            continue
        key = _constant_key(node)
        if key is None:
            continue
        keeper = pooled.get(key)
        if keeper is None:
            keeper = _hoist(root, node, anchor)
            pooled[key] = keeper
            anchor = keeper
            continue
        log_update("constant_pooling", f"merged {node.name} into {keeper.name}")
        node.replace_all_uses_with(keeper)
        node.graph.erase_node(node)
    return finish("constant_pooling", graph, list(walk(root)) != order)


def _constant_key(node: Node):
    value = node.args[0]
    if isinstance(value, (list, dict, set)):
        return None
    try:
        key = (_freeze(value), str(node.type))
        hash(key)
    except TypeError:
        return None
    return key


def _hoist(root: Graph, node: Node, anchor: Node | None) -> Node:
    """Move `node` (a constant) right after `anchor` in the root graph (start when None)."""
    if node.graph is root:
        if anchor is None:
            first = next(iter(root.nodes), None)
            if first is not None and first is not node:
                first.prepend(node)
        elif anchor is not node:
            anchor.append(node)
        return node
    with root.inserting_after(anchor) if anchor is not None else root.inserting_before(None):
        new = constant(root, node.args[0], node.type)
    new.meta = dict(node.meta)
    node.replace_all_uses_with(new)
    node.graph.erase_node(node)
    return new
