"""Script graphs to JSON and back, with targets resolved through a whitelist (never eval/pickle).

A graph is ``{"nodes": [node, ...]}``; a node is
``{"id", "op", "name", "target", "args", "kwargs", "type", "loc", "jit_name", "num_outputs",
"output_of", "blocks": [graph, ...]}``. Ids count nodes in program order over the whole function
(blocks included), so a block's nodes can name values of the graphs around them.

Values inside args: JSON numbers/strings/bools/null and lists as themselves; the rest tagged:
``{"$node": id}``, ``{"$tuple": [...]}``, ``{"$dict": [[k, v], ...]}``, ``{"$float": "nan"}``,
``{"$dtype": "float32"}``, ``{"$device": "cpu"}``, ``{"$tensor": i}`` (i indexes the tensor list
the caller stores beside the program), ``{"$slice": [a, b, c]}``, ``{"$ellipsis": true}``.

Target names: ``prim::If`` (the prim table), ``aten::add.Tensor`` (ember's operator registry),
``operator.add``, ``math.sqrt``, ``builtins.len``, ``ember.tanh`` / ``ember.nn.functional.relu``,
and for ``call_method`` nodes the method name: what ``ember.jit.ir.allowlist`` admits, which is
the whole language a saved program may use. Anything else raises RuntimeError naming the target,
on save and on load.
"""
from __future__ import annotations

import math

from ember.fx.graph import Graph
from ember.fx.node import Node

from ember.fx import prim

from . import allowlist
from .types import parse_type

FORMAT_VERSION = 1


# ---------------------------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------
class TensorTable:
    """The tensors a saved file holds (graph constants, parameters, buffers), each stored once."""

    def __init__(self, tensors: list | None = None):
        self.tensors: list = list(tensors or [])
        self._ids: dict = {}

    def add(self, t) -> int:
        key = id(t)
        if key not in self._ids:
            self._ids[key] = len(self.tensors)
            self.tensors.append(t)
        return self._ids[key]


def encode_value(value, tensors: TensorTable, ids: dict | None = None):
    """A Python value of a graph argument / attribute as JSON (see the module docstring)."""
    import ember
    if isinstance(value, Node):
        if ids is None or value not in ids:
            raise RuntimeError(f"ember.jit.save: value {value.name} is read before it is defined")
        return {"$node": ids[value]}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, ember.Tensor):
        return {"$tensor": tensors.add(value)}
    if isinstance(value, ember.dtype):
        return {"$dtype": value.name}
    if isinstance(value, ember.device):
        return {"$device": str(value)}
    if isinstance(value, list):
        return [encode_value(v, tensors, ids) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v, tensors, ids) for v in value]}
    if isinstance(value, dict):
        return {"$dict": [[encode_value(k, tensors, ids), encode_value(v, tensors, ids)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"$slice": [encode_value(v, tensors, ids) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    raise RuntimeError(f"ember.jit.save: cannot save a value of type {type(value).__name__}: {value!r}")


# tag -> decoder(payload, decode) where decode(value) decodes a nested value; the tags are also
# what ember.jit._payload_check admits (it checks every payload before load decodes it)
DECODERS = {
    "$node": lambda p, decode, nodes, tensors: nodes[p],
    "$tuple": lambda p, decode, nodes, tensors: tuple(decode(v) for v in p),
    "$dict": lambda p, decode, nodes, tensors: {decode(k): decode(v) for k, v in p},
    "$float": lambda p, decode, nodes, tensors: float(p),
    "$tensor": lambda p, decode, nodes, tensors: tensors[p],
    "$dtype": lambda p, decode, nodes, tensors: getattr(__import__("ember"), p),
    "$device": lambda p, decode, nodes, tensors: __import__("ember").device(p),
    "$slice": lambda p, decode, nodes, tensors: slice(*(decode(v) for v in p)),
    "$ellipsis": lambda p, decode, nodes, tensors: Ellipsis,
}


def decode_value(data, tensors: list, nodes: dict | None = None):
    """The inverse of `encode_value` (`tensors`: the loaded tensor list, `nodes`: id -> Node), for
    a value that passed ``check_payload`` (which refuses unknown tags, dangling ids and the like)."""
    if isinstance(data, list):
        return [decode_value(v, tensors, nodes) for v in data]
    if not isinstance(data, dict):
        return data
    (tag, payload), = data.items()
    return DECODERS[tag](payload, lambda v: decode_value(v, tensors, nodes), nodes, tensors)


# ---------------------------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------------------------
def encode_graph(graph: Graph, tensors: TensorTable, ids: dict | None = None) -> dict:
    """A graph (and its blocks) as JSON; `ids` (Node -> int) is shared with the enclosing graphs."""
    ids = {} if ids is None else ids
    nodes = []
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            raise RuntimeError(f"ember.jit.save: {node.op} node {node.name} cannot be saved in a script graph")
        entry = {"id": len(ids), "op": node.op, "name": node.name}
        if node.op == "call_function":
            if node.target is prim.CallFunction:
                raise RuntimeError("ember.jit.save: prim::CallFunction must be inlined before saving")
            if node.target is prim.CallMethod:
                raise RuntimeError(f"ember.jit.save: cannot save the call of method {node.args[1]!r}: "
                                   f"methods must be inlined (an @ember.jit.ignore'd method cannot be saved)")
            entry["target"] = target_name(node.target)
        else:
            entry["target"] = node.target
        args = list(node.args)
        if node.target is prim.RaiseException and len(args) > 1 and args[1] not in prim.RAISABLE:
            args[1] = "RuntimeError"    # what running it raises for any other class (prim._raise)
        entry["args"] = encode_value(args, tensors, ids)
        entry["kwargs"] = encode_value(dict(node.kwargs), tensors, ids)["$dict"]
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
            entry["blocks"] = [encode_graph(b, tensors, ids) for b in node.blocks]
        nodes.append(entry)
    return {"nodes": nodes}


def decode_graph(data: dict, tensors: list, nodes: dict | None = None, *, parent: Node | None = None) -> Graph:
    """Rebuild a graph from `encode_graph`'s JSON that passed ``check_payload``: its targets are
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
        args = decode_value(entry["args"], tensors, nodes)
        kwargs = {k: decode_value(v, tensors, nodes) for k, v in entry["kwargs"]}
        name = entry["name"] if entry["name"].isidentifier() else None
        node = graph.create_node(op, target, tuple(args), kwargs, name=name)
        if "type" in entry:
            node.type = parse_type(entry["type"])
        for key in ("loc", "jit_name", "num_outputs"):
            if key in entry:
                node.meta[key] = tuple(entry[key]) if key == "loc" else entry[key]
        if "output_of" in entry:
            node.meta["output_of"] = nodes[entry["output_of"]]
        nodes[entry["id"]] = node
        for block in entry.get("blocks", []):
            node.blocks.append(decode_graph(block, tensors, nodes, parent=node))
    return graph
