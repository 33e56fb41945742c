"""Script graphs as values of an ``ember.save`` object tree and back, with targets resolved through
a whitelist (never eval/pickle).

A graph is ``{"nodes": [node, ...]}``; a node is
``{"id", "op", "name", "target", "args", "kwargs", "type", "loc", "jit_name", "num_outputs",
"output_of", "blocks": [graph, ...]}``. Ids count nodes in program order over the whole function
(blocks included), so a block's nodes can name values of the graphs around them.

Values inside args are what the checkpoint format holds itself -- None, bools, ints, floats,
strings, dtypes, devices, tensors, lists and tuples -- and, as one-key dicts, what it does not:
``{"$node": id}``, ``{"$dict": [[k, v], ...]}`` (so a dict among the values is always a tag),
``{"$slice": [a, b, c]}``, ``{"$ellipsis": True}``.

Target names: ``prim::If`` (the prim table), ``aten::add.Tensor`` (ember's operator registry),
``operator.add``, ``math.sqrt``, ``builtins.len``, ``ember.tanh`` / ``ember.nn.functional.relu``,
and for ``call_method`` nodes the method name: what ``ember.jit.ir.allowlist`` admits, which is
the whole language a saved program may use. Anything else raises RuntimeError naming the target,
on save and on load.
"""
from __future__ import annotations

from ember.fx.graph import Graph
from ember.fx.node import Node

from ember.fx import prim

from . import allowlist
from .types import parse_type

FORMAT_VERSION = 2    # 1: the program as JSON text beside a tensor list, its values tagged ($tuple, $float...)


def target_name(target) -> str:
    """The saved name of a call_function target; RuntimeError if a saved program may not call it."""
    name = allowlist.saved_name(target)
    if name is not None:
        return name
    from ember.fx.node import _get_qualified_name
    try:
        qual = _get_qualified_name(target)
    except RuntimeError:
        qual = repr(target)
    raise RuntimeError(f"ember.jit.save: cannot save a call of {qual}: a saved program may only call operators "
                       f"of the op table and ember's functions over them, prim ops, and a subset of "
                       f"operator/math/builtins (see ember.jit.ir.allowlist)")


def encode_value(value, ids: dict | None = None):
    """A Python value of a graph argument / attribute as saved (see the module docstring)."""
    import ember
    if isinstance(value, Node):
        if ids is None or value not in ids:
            raise RuntimeError(f"ember.jit.save: value {value.name} is read before it is defined")
        return {"$node": ids[value]}
    if value is None or isinstance(value, (bool, ember.Tensor, ember.dtype, ember.device)):
        return value
    for plain in (int, float, str):     # a subclass (an IntEnum...) is saved as its plain value
        if isinstance(value, plain):
            return plain(value)
    if isinstance(value, (list, tuple)):
        return (list if isinstance(value, list) else tuple)(encode_value(v, ids) for v in value)
    if isinstance(value, dict):
        return {"$dict": [[encode_value(k, ids), encode_value(v, ids)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"$slice": [encode_value(v, ids) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    raise RuntimeError(f"ember.jit.save: cannot save a value of type {type(value).__name__}: {value!r}")


# tag -> decoder(payload, decode, nodes) where decode(value) decodes a nested value; the tags are
# also what ember.jit._payload_check admits (it checks every payload before load decodes it)
DECODERS = {
    "$node": lambda p, decode, nodes: nodes[p],
    "$dict": lambda p, decode, nodes: {decode(k): decode(v) for k, v in p},
    "$slice": lambda p, decode, nodes: slice(*(decode(v) for v in p)),
    "$ellipsis": lambda p, decode, nodes: Ellipsis,
}


def decode_value(data, nodes: dict | None = None):
    """The inverse of `encode_value` (`nodes`: id -> Node), for a value that passed ``check_payload``
    (which refuses unknown tags, dangling ids and the like)."""
    if type(data) in (list, tuple):
        return type(data)(decode_value(v, nodes) for v in data)
    if type(data) is not dict:
        return data
    (tag, payload), = data.items()
    return DECODERS[tag](payload, lambda v: decode_value(v, nodes), nodes)


def encode_graph(graph: Graph, ids: dict | None = None) -> dict:
    """A graph (and its blocks) as saved; `ids` (Node -> int) is shared with the enclosing graphs."""
    ids = {} if ids is None else ids
    nodes = []
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            raise RuntimeError(f"ember.jit.save: {node.op} node {node.name} cannot be saved in a script graph")
        entry = {"id": len(ids), "op": node.op, "name": node.name, "target": node.target}
        if node.op == "call_function":
            if node.target is prim.CallFunction:
                raise RuntimeError("ember.jit.save: prim::CallFunction must be inlined before saving")
            if node.target is prim.CallMethod:
                raise RuntimeError(f"ember.jit.save: cannot save the call of method {node.args[1]!r}: "
                                   f"methods must be inlined (an @ember.jit.ignore'd method cannot be saved)")
            entry["target"] = target_name(node.target)
        args = list(node.args)
        if node.target is prim.RaiseException and len(args) > 1 and args[1] not in prim.RAISABLE:
            args[1] = "RuntimeError"    # what running it raises for any other class (prim._raise)
        entry["args"] = encode_value(args, ids)
        entry["kwargs"] = [[k, encode_value(v, ids)] for k, v in node.kwargs.items()]
        if node.type is not None:
            entry["type"] = str(node.type)
        loc = node.meta.get("loc")
        if loc is None and node.meta.get("jit_loc") is not None:
            loc = (node.meta["jit_loc"][0], node.meta["jit_loc"][1], 0)
        if loc is not None:
            entry["loc"] = [str(loc[0]), int(loc[1]), int(loc[2]) if len(loc) > 2 else 0]
        for key in ("jit_name", "num_outputs"):
            if key in node.meta:
                entry[key] = node.meta[key]
        if "output_of" in node.meta and node.meta["output_of"] in ids:
            entry["output_of"] = ids[node.meta["output_of"]]
        ids[node] = entry["id"]
        if node.blocks:
            entry["blocks"] = [encode_graph(b, ids) for b in node.blocks]
        nodes.append(entry)
    return {"nodes": nodes}


def decode_graph(data: dict, nodes: dict | None = None, *, parent: Node | None = None) -> Graph:
    """Rebuild a graph from `encode_graph`'s output that passed ``check_payload``: its targets are
    names of the allowlist (looked up there, never imported), its values well formed."""
    from . import root_graph
    nodes = {} if nodes is None else nodes
    graph = Graph()
    if parent is not None:
        graph.parent_node = parent
        graph._namespace = root_graph(parent.graph)._namespace
    for entry in data["nodes"]:
        op, target = entry["op"], entry["target"]
        if op == "call_function":
            target = allowlist.function_by_name(target)
        elif op == "placeholder" and not target.isidentifier():
            target = "arg"
        kwargs = {k: decode_value(v, nodes) for k, v in entry["kwargs"]}
        name = entry["name"] if entry["name"].isidentifier() else None
        node = graph.create_node(op, target, tuple(decode_value(entry["args"], nodes)), kwargs, name=name)
        if "type" in entry:
            node.type = parse_type(entry["type"])
        for key in ("loc", "jit_name", "num_outputs"):
            if key in entry:
                node.meta[key] = tuple(entry[key]) if key == "loc" else entry[key]
        if "output_of" in entry:
            node.meta["output_of"] = nodes[entry["output_of"]]
        nodes[entry["id"]] = node
        for block in entry.get("blocks", []):
            node.blocks.append(decode_graph(block, nodes, parent=node))
    return graph
