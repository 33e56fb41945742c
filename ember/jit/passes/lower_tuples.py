"""LowerSimpleTuples: read tuple elements straight from the ``prim::TupleConstruct`` that built them.

- ``operator.getitem(t, i)`` / ``prim::TupleIndex(t, i)`` with a constant int index, where t is a
  TupleConstruct, becomes the i-th construct argument.
- ``prim::TupleUnpack(t)`` of a TupleConstruct: each output reads the construct's argument.
- Through ``prim::If``: an If output of tuple type that both blocks build with a TupleConstruct
  is split into one If output per element; the tuple is rebuilt after the If (a TupleConstruct
  that DCE removes when only its elements are read).
- Through ``prim::Loop``: a carried tuple whose initial value and next value are both
  TupleConstructs becomes one carried value per element; the body and the code after the loop
  read a TupleConstruct of those (the old carried tuple is left unused, for DCE to drop).

    # before: %t = prim::TupleConstruct(%a, %b); %x = prim::TupleIndex(%t, %1)
    # after:  uses of %x read %b
    graph = lower_simple_tuples(graph)
"""
from __future__ import annotations

import operator

from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish, until_unchanged
from ember.jit.ir import block_returns, call, output_node, prim, walk
from ember.jit.ir.types import TupleType

from ._util import (add_loop_carried, add_outputs, constant_value, last_output_item, make_constant_before,
                    num_outputs, output_getitems, replace_outputs, replace_value)

MAX_ROUNDS = 20


def lower_simple_tuples(graph: Graph) -> PassResult:
    """Forward tuple elements past their TupleConstruct in `graph` and its blocks, in place.

        lower_simple_tuples(g)
    """
    def one_round() -> bool:
        changed = False
        for node in list(walk(graph)):
            if node._erased or node.op != "call_function":
                continue
            if node.target is prim.If:
                changed |= _split_if_tuples(node)
            elif node.target is prim.Loop:
                changed |= _split_loop_tuples(node)
            elif node.target in (operator.getitem, prim.TupleIndex):
                changed |= _lower_index(node)
            elif node.target is prim.TupleUnpack:
                changed |= _lower_unpack(node)
        return changed
    return finish("lower_tuples", graph, until_unchanged(one_round, MAX_ROUNDS))


def _construct(value) -> Node | None:
    if isinstance(value, Node) and value.op == "call_function" and value.target is prim.TupleConstruct:
        return value
    return None


def _lower_index(node: Node) -> bool:
    if len(node.args) != 2 or node.kwargs or node.meta.get("output_of") is not None:
        return False
    tup = _construct(node.args[0])
    ok, index = constant_value(node.args[1])
    if tup is None or not ok or not isinstance(index, int) or isinstance(index, bool):
        return False
    if not -len(tup.args) <= index < len(tup.args):
        return False   # the out-of-range error stays for run time
    log_update("lower_tuples", f"{node.name} reads {tup.name}[{index}] directly")
    replace_value(node, _materialise(tup.args[index], node))
    return True


def _lower_unpack(node: Node) -> bool:
    tup = _construct(node.args[0])
    if tup is None:
        return False
    items = output_getitems(node)
    if any(i >= len(tup.args) for i in items):
        return False
    log_update("lower_tuples", f"{node.name} unpacked from {tup.name} directly")
    replace_outputs(node, [_materialise(v, node) for v in tup.args])
    if not node.users:
        node.graph.erase_node(node)
    return True


def _materialise(value, before: Node):
    return value if isinstance(value, Node) else make_constant_before(before, value)


def _split_if_tuples(node: Node) -> bool:
    changed = False
    for i in range(num_outputs(node)):
        items = output_getitems(node).get(i)
        if not items:
            continue
        if not any(_is_indexed(item) for item in items):
            continue   # nobody reads single elements: splitting would not help
        builds = [_construct(block_returns(b)[i]) for b in node.blocks]
        if any(b is None for b in builds) or len({len(b.args) for b in builds}) != 1:
            continue
        out_type = node.type.elems[i] if isinstance(node.type, TupleType) else None
        width = len(builds[0].args)
        elem_types = list(out_type.elems) if isinstance(out_type, TupleType) and len(out_type.elems) == width \
            else [a.type if isinstance(a, Node) else None for a in builds[0].args]
        values = [[a if isinstance(a, Node) else _materialise(a, output_node(blk)) for a in b.args]
                  for blk, b in zip(node.blocks, builds)]
        _rebuild_output(node, items, add_outputs(node, elem_types, values), out_type)
        log_update("lower_tuples", f"split tuple output {i} of {node.name}")
        changed = True
    return changed


def _split_loop_tuples(node: Node) -> bool:
    body = node.blocks[0]
    changed = False
    for i in range(num_outputs(node)):
        params = [n for n in body.nodes if n.op == "placeholder"][1:]
        init, nxt = _construct(node.args[2 + i]), _construct(block_returns(body)[1 + i])
        param = params[i]
        items = output_getitems(node).get(i, [])
        if init is None or nxt is None or len(init.args) != len(nxt.args) or nxt is param:
            continue
        if not (param.users and _is_indexed(param)) and not any(_is_indexed(it) and it.users for it in items):
            continue   # nobody reads single elements: splitting would not help
        width = len(init.args)
        t = param.type
        types = list(t.elems) if isinstance(t, TupleType) and len(t.elems) == width else \
            [a.type if isinstance(a, Node) else None for a in init.args]
        out = output_node(body)
        inits = [_materialise(a, node) for a in init.args]
        nexts = [_materialise(a, out) for a in nxt.args]
        new_params, new_items = add_loop_carried(node, inits, types, nexts)
        if param.users:
            first = next(n for n in body.nodes if n.op != "placeholder")
            with body.inserting_before(first):
                inside = call(body, prim.TupleConstruct, tuple(new_params), type_=t)
            for user in list(param.users):
                if user is not inside and user.op != "output":
                    user.replace_input_with(param, inside)
        if items:
            _rebuild_output(node, items, new_items, t)
        log_update("lower_tuples", f"split carried tuple {i} of {node.name}")
        changed = True
    return changed


def _rebuild_output(node: Node, items: list, new_items: list, type_) -> None:
    """The uses of `items` (getitems of a tuple output of `node`, now split into the outputs
    `new_items`) read a tuple rebuilt from the new outputs instead."""
    with node.graph.inserting_after(last_output_item(node)):
        rebuilt = call(node.graph, prim.TupleConstruct, tuple(new_items), type_=type_)
    for item in items:
        if "jit_name" in item.meta:
            rebuilt.meta["jit_name"] = item.meta["jit_name"]
        replace_value(item, rebuilt)


def _is_indexed(value: Node) -> bool:
    return any(u.op == "call_function" and u.target in (operator.getitem, prim.TupleIndex, prim.TupleUnpack)
               for u in value.users)
