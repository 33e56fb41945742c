"""The script IR: an ``ember.fx.Graph`` whose control-flow nodes hold nested blocks.

This is the one IR of the compiler stack (fx), with the few additions TorchScript's IR needs:

- ``node.blocks``: the nested graphs of a ``prim::If`` (two blocks) or ``prim::Loop`` (one).
  A block is an ``ember.fx.Graph`` with ``parent_node`` set; its ``placeholder`` nodes are the
  block's parameters and its ``output`` node returns a tuple of values. Nodes inside a block may
  read any value of the graphs that enclose it (SSA scoping, as in TorchScript).
- ``node.type``: every value's ScriptType (``ember.jit.ir.types``).
- ``node.meta["loc"] = (filename, line, col)``: the source location, and
  ``node.meta["jit_name"]``: the Python variable the value was assigned to (printing ``%c.1``).
- A node with several outputs (If, Loop, TupleUnpack, ListUnpack) has a tuple value; each output
  is an ``operator.getitem(node, i)`` node right after it (``output_getitems``), which printing folds
  into ``%a, %b = prim::If(...)``.
- The root graph's ``output`` node returns one value (several returns are a TupleConstruct).

    g = new_graph()
    x = g.placeholder("x", type_expr=TensorType())
    cond = constant(g, True)
    if_node, (y,) = add_if(g, cond, [TensorType()])
    then_block, else_block = if_node.blocks
    with then_block.inserting_before(None): ...   # or emit with call(then_block, ...)
    set_block_returns(then_block, [x]); set_block_returns(else_block, [x])
    g.output(y)
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ember.fx.graph import Graph
from ember.fx.node import Node

from ember.fx import prim  # the IR's own operators and block helpers live with the IR (ember.fx)
from ember.fx.passes import jit_log
from ember.fx.blocks import (add_block, block_params, block_returns, clone, inline_graph,  # noqa: F401
                             last_output_item, num_outputs, output_getitems, output_node, root_graph,
                             set_block_returns, walk)
from .types import (AnyType, BoolType, DeviceType, DictType, DTypeType, FloatType,  # noqa: F401
                    IntType, ListType, ModuleType, NoneType, NumberType, OptionalType,
                    ScriptType, StrType, TensorType, TupleType, from_annotation, parse_type, type_of_value)


def new_graph() -> Graph:
    """An empty graph for a scripted function."""
    return Graph()


def constant(graph: Graph, value: Any, type_: ScriptType | None = None, loc=None) -> Node:
    """A ``prim::Constant`` node holding `value`.

        two = constant(g, 2)   # %2 : int = prim::Constant[value=2]()
    """
    node = graph.call_function(prim.Constant, (value,))
    node.type = type_ if type_ is not None else type_of_value(value)
    if loc is not None:
        node.meta["loc"] = loc
    return node


def call(graph: Graph, target: Callable | str, args: tuple = (), kwargs: dict | None = None,
         type_: ScriptType | None = None, loc=None, name: str | None = None) -> Node:
    """A call node: ``call_method`` when `target` is a str (a Tensor/list method on args[0]),
    else ``call_function`` (an ember function, operator/math/builtins function or a PrimOp).

        call(g, ember.tanh, (x,), type_=TensorType())
        call(g, "view", (x, -1), type_=TensorType())
    """
    op = "call_method" if isinstance(target, str) else "call_function"
    node = graph.create_node(op, target, tuple(args), dict(kwargs or {}), name=name)
    node.type = type_
    if loc is not None:
        node.meta["loc"] = loc
    return node


def unpack_outputs(node: Node, types: list) -> list:
    """Give a multi-output node one ``operator.getitem`` node per output of `types`, after its
    existing ones (a new node has none); returns the new getitem nodes."""
    count = num_outputs(node)
    anchor = last_output_item(node)
    items = []
    for j, t in enumerate(types):
        with node.graph.inserting_after(anchor):
            anchor = node.graph.call_function(operator.getitem, (node, count + j))
        anchor.type = t
        anchor.meta["output_of"] = node
        items.append(anchor)
    elems = node.type.elems if isinstance(node.type, TupleType) else (None,) * count
    node.type = TupleType(tuple(elems) + tuple(types))
    node.meta["num_outputs"] = count + len(types)
    return items


def add_if(graph: Graph, cond: Node, output_types: list, loc=None) -> tuple:
    """A ``prim::If`` on `cond` with two empty blocks; returns (node, output nodes)."""
    node = call(graph, prim.If, (cond,), loc=loc)
    add_block(node)
    add_block(node)
    return node, unpack_outputs(node, output_types)


def add_loop(graph: Graph, max_trip_count: Node, start_cond: Node, carried: list, carried_types: list,
             loc=None) -> tuple:
    """A ``prim::Loop`` with its body block (params: i, *carried); returns (node, output nodes)."""
    node = call(graph, prim.Loop, (max_trip_count, start_cond, *carried), loc=loc)
    add_block(node, [IntType(), *carried_types], ["i"] + [f"c{i}" for i in range(len(carried_types))])
    return node, unpack_outputs(node, carried_types)


def callee_graph(callee) -> Graph | None:
    """The fx Graph of a callee object: a Graph, or ``._graph`` first (it may still hold calls,
    which are inlined in turn), else ``.graph.fx_graph`` / ``.graph`` / ``.fx_graph``."""
    if isinstance(callee, Graph):
        return callee
    for attr in ("_graph", "graph", "fx_graph"):
        g = getattr(callee, attr, None)
        g = getattr(g, "fx_graph", g)
        if isinstance(g, Graph):
            return g
    return None


def callee_name(node: Node) -> str | None:
    """The name of a call node's scripted callee (``meta["callee"]``), None when it has none."""
    callee = node.meta.get("callee")
    return getattr(callee, "name", None) or getattr(callee, "__name__", None)


def _print_graph(graph) -> str:
    from .printer import format_graph
    return format_graph(graph)


jit_log.set_graph_printer(_print_graph)   # EMBER_JIT_LOG_LEVEL prints graphs as TorchScript does
