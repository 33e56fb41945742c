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
  is an ``operator.getitem(node, i)`` node right after it (``outputs_of``), which printing folds
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
from typing import Any, Callable, Iterator

from ember.fx.graph import Graph
from ember.fx.node import Node

from . import prim
from .types import (AnyType, BoolType, ClassType, DeviceType, DictType, DTypeType, FloatType,  # noqa: F401
                    FunctionType, IntType, ListType, ModuleType, NoneType, NumberType, OptionalType,
                    ScriptType, StrType, TensorType, TupleType, from_annotation, parse_type, type_of_value)


def new_graph() -> Graph:
    """An empty graph for a scripted function."""
    return Graph()


def add_block(node: Node, param_types: list | None = None, param_names: list | None = None) -> Graph:
    """Append a new block to `node` with one placeholder per type; returns the block.

    Names share the root graph's namespace, so every node of a function has a unique name."""
    block = Graph()
    block.parent_node = node
    block._namespace = root_graph(node.graph)._namespace
    for i, t in enumerate(param_types or []):
        name = (param_names or [])[i] if param_names and i < len(param_names) else f"p{i}"
        block.placeholder(name, type_expr=t)
    node.blocks.append(block)
    return block


def root_graph(graph: Graph) -> Graph:
    """The outermost graph that (transitively) holds `graph`."""
    while graph.parent_node is not None:
        graph = graph.parent_node.graph
    return graph


def block_params(block: Graph) -> list:
    """The block's parameter nodes (its placeholders), in order."""
    return [n for n in block.nodes if n.op == "placeholder"]


def block_returns(block: Graph) -> list:
    """The values the block returns (its output node's tuple)."""
    out = output_node(block)
    return list(out.args[0]) if out is not None else []


def set_block_returns(block: Graph, values: list) -> Node:
    """Make the block return `values` (creating or updating its output node)."""
    out = output_node(block)
    if out is None:
        return block.output(tuple(values))
    out.args = (tuple(values),)
    return out


def output_node(graph: Graph) -> Node | None:
    """The graph's output node (None while it has none)."""
    for n in reversed(graph.nodes):
        if n.op == "output":
            return n
    return None


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
    """Give a multi-output node one ``operator.getitem`` node per output, right after it."""
    outputs = []
    anchor = node
    for i, t in enumerate(types):
        with node.graph.inserting_after(anchor):
            item = node.graph.call_function(operator.getitem, (node, i))
        item.type = t
        item.meta["output_of"] = node
        outputs.append(item)
        anchor = item
    node.type = TupleType(tuple(types))
    node.meta["num_outputs"] = len(types)
    return outputs


def outputs_of(node: Node) -> list:
    """The getitem nodes reading each output of a multi-output node, by index (None if unused)."""
    found: list = [None] * node.meta.get("num_outputs", 0)
    for user in node.users:
        if user.target is operator.getitem and user.args[0] is node and isinstance(user.args[1], int) \
                and user.args[1] < len(found):
            found[user.args[1]] = user
    return found


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


def walk(graph: Graph) -> Iterator[Node]:
    """Every node of `graph` and of its blocks, depth first in program order."""
    for node in list(graph.nodes):
        yield node
        for block in node.blocks:
            yield from walk(block)


def clone(graph: Graph, value_map: dict | None = None) -> Graph:
    """A deep copy of a graph and its blocks (types, meta and block structure kept).

    `value_map` (old node -> new node) is filled in; pass it pre-filled to remap free values."""
    value_map = {} if value_map is None else value_map
    new = Graph()
    _copy_into(graph, new, value_map)
    return new


def _copy_into(src: Graph, dst: Graph, value_map: dict, skip_placeholders: bool = False) -> Any:
    """Copy `src`'s nodes (and their blocks) into `dst` at its insert point, recording each copy
    in `value_map`. Stops at src's output node and returns its remapped value (None without one)."""
    for node in src.nodes:
        if node.op == "placeholder" and skip_placeholders:
            continue
        if node.op == "output" and skip_placeholders:
            return _remap(node.args[0], value_map)
        copy = dst.create_node(node.op, node.target,
                               _remap(node.args, value_map), _remap(node.kwargs, value_map),
                               name=None if skip_placeholders else node.name, type_expr=node.type)
        copy.meta = dict(node.meta)
        if "output_of" in copy.meta:
            copy.meta["output_of"] = value_map.get(node.meta["output_of"], node.meta["output_of"])
        value_map[node] = copy
        for block in node.blocks:
            new_block = Graph()
            new_block.parent_node = copy
            new_block._namespace = root_graph(dst)._namespace
            copy.blocks.append(new_block)
            _copy_into(block, new_block, value_map)
    return None


def _remap(a, value_map: dict):
    from ember.fx.node import map_arg
    return map_arg(a, lambda n: value_map.get(n, n))


def inline_graph(graph: Graph, before: Node, callee: Graph, inputs: list) -> Any:
    """Copy `callee`'s nodes into `graph` before `before`, reading `inputs` for its placeholders;
    returns the copied value of callee's output (the Inline pass's building block)."""
    value_map: dict = {}
    params = [n for n in callee.nodes if n.op == "placeholder"]
    if len(params) != len(inputs):
        raise RuntimeError(f"inline_graph: callee takes {len(params)} inputs, got {len(inputs)}")
    value_map.update(zip(params, inputs))
    with graph.inserting_before(before):
        return _copy_into(callee, graph, value_map, skip_placeholders=True)
