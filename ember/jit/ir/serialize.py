"""Script graphs to JSON and back, with targets resolved through a whitelist (never eval/pickle).

A graph is ``{"nodes": [node, ...]}``; a node is
``{"id", "op", "name", "target", "args", "kwargs", "type", "loc", "jit_name", "num_outputs",
"output_of", "blocks": [graph, ...]}``. Ids count nodes in program order over the whole function
(blocks included), so a block's nodes can name values of the graphs around them.

Values inside args: JSON numbers/strings/bools/null and lists as themselves; the rest tagged:
``{"$node": id}``, ``{"$tuple": [...]}``, ``{"$dict": [[k, v], ...]}``, ``{"$float": "nan"}``,
``{"$dtype": "float32"}``, ``{"$device": "cpu"}``, ``{"$tensor": i}`` (i indexes the tensor table
that the caller stores as ``.npy`` files), ``{"$slice": [a, b, c]}``, ``{"$ellipsis": true}``.

Target names: ``prim::If`` (the prim table), ``aten::add.Tensor`` (ember's operator registry),
``operator.add``, ``math.sqrt``, ``builtins.len`` (fixed subsets), ``ember.tanh`` /
``ember.nn.functional.relu`` (ember's public namespaces, found by name), and for
``call_method`` nodes the method name, which must be a plain identifier not starting with ``_``.
Attribute names read by ``prim::GetAttr``/``getattr`` may not be dunders. Anything else raises
RuntimeError naming the target, on save and on load.
"""
from __future__ import annotations

import builtins
import math
import operator

from ember.fx.graph import Graph
from ember.fx.node import Node

from . import prim
from .types import parse_type

FORMAT_VERSION = 1

_OPERATOR_OK = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "not_", "lt", "le",
                "gt", "ge", "eq", "ne", "and_", "or_", "xor", "invert", "getitem", "setitem", "contains",
                "is_", "is_not", "matmul", "lshift", "rshift", "abs", "iadd", "isub", "imul", "itruediv",
                "truth"}
_BUILTINS_OK = {"len", "int", "float", "bool", "str", "min", "max", "abs", "getattr", "print", "round",
                "divmod", "sum", "any", "all", "list", "tuple", "isinstance", "range", "enumerate", "zip",
                "hash", "ord", "chr", "sorted", "reversed", "slice"}

# public functions that touch files or process-wide state: never called by a loaded graph
_PUBLIC_DENY = {"ember.load", "ember.save", "ember.set_default_dtype", "ember.set_printoptions",
                "ember.set_rng_state"}


# ---------------------------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------------------------
def _is_operator_handle(obj) -> bool:
    from ember._core.dispatch import OperatorHandle
    return isinstance(obj, OperatorHandle)


_public_by_name: dict | None = None


def _public_functions() -> dict:
    """"ember.tanh" -> ember.tanh for every public function of ember's user namespaces."""
    global _public_by_name
    if _public_by_name is None:
        from ember.ops.registry import public_functions
        _public_by_name = {name: fn for name, fn in public_functions().items() if name not in _PUBLIC_DENY}
    return _public_by_name


def target_name(target) -> str:
    """The saved name of a call_function target; RuntimeError if it cannot be loaded back."""
    if prim.is_prim(target):
        return target.name
    if _is_operator_handle(target):
        return target.name
    module, name = getattr(target, "__module__", None), getattr(target, "__name__", None)
    if module in ("_operator", "operator") and name in _OPERATOR_OK and getattr(operator, name) is target:
        return f"operator.{name}"
    if module == "math" and getattr(math, name, None) is target:
        return f"math.{name}"
    if module == "builtins" and name in _BUILTINS_OK and getattr(builtins, name) is target:
        return f"builtins.{name}"
    from ember.fx.node import _get_qualified_name
    try:
        qual = _get_qualified_name(target)
    except RuntimeError:
        qual = repr(target)
    if _public_functions().get(qual) is target:
        return qual
    raise RuntimeError(f"ember.jit.save: cannot save a call of {qual}: only ember's public functions, "
                       f"operators, prim ops and a subset of operator/math/builtins can be saved")


def resolve_target(name: str):
    """The callable a saved target name stands for, looked up only in the whitelist.

        resolve_target("aten::add.Tensor")   # ember.ops.aten.add.Tensor
        resolve_target("os.system")          # RuntimeError: unknown target
    """
    if not isinstance(name, str):
        raise RuntimeError(f"ember.jit.load: bad target {name!r}")
    if name.startswith("prim::"):
        try:
            return prim.by_name(name)
        except KeyError:
            pass
    elif "::" in name:
        from ember.ops.registry import OPERATORS
        if name in OPERATORS:
            return OPERATORS[name]
    else:
        head, _, attr = name.rpartition(".")
        if head == "operator" and attr in _OPERATOR_OK:
            return getattr(operator, attr)
        if head == "math" and not attr.startswith("_") and callable(getattr(math, attr, None)):
            return getattr(math, attr)
        if head == "builtins" and attr in _BUILTINS_OK:
            return getattr(builtins, attr)
        fn = _public_functions().get(name)
        if fn is not None:
            return fn
    raise RuntimeError(f"ember.jit.load: unknown target {name!r} in the saved graph: loading only resolves "
                       f"ember functions, operators, prim ops and operator/math/builtins functions")


def _check_method_name(name) -> str:
    if not (isinstance(name, str) and name.isidentifier() and not name.startswith("_")):
        raise RuntimeError(f"ember.jit.load: method name {name!r} is not allowed in a saved graph")
    return name


def _check_attr_name(name) -> str:
    if not isinstance(name, str) or (name.startswith("__") and name.endswith("__")) or \
            not (name.isidentifier() or name.isdigit()):
        raise RuntimeError(f"ember.jit.load: attribute name {name!r} is not allowed in a saved graph")
    return name


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


def decode_value(data, tensors: list, nodes: dict | None = None):
    """The inverse of `encode_value` (`tensors`: the loaded tensor list, `nodes`: id -> Node)."""
    import ember
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_value(v, tensors, nodes) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise RuntimeError(f"ember.jit.load: malformed value {data!r}")
    (tag, payload), = data.items()
    if tag == "$node":
        if nodes is None or payload not in nodes:
            raise RuntimeError(f"ember.jit.load: reference to unknown value {payload!r}")
        return nodes[payload]
    if tag == "$tuple":
        return tuple(decode_value(v, tensors, nodes) for v in payload)
    if tag == "$dict":
        return {decode_value(k, tensors, nodes): decode_value(v, tensors, nodes) for k, v in payload}
    if tag == "$float":
        if payload not in ("nan", "inf", "-inf"):
            raise RuntimeError(f"ember.jit.load: malformed float {payload!r}")
        return float(payload)
    if tag == "$tensor":
        if not isinstance(payload, int) or not 0 <= payload < len(tensors):
            raise RuntimeError(f"ember.jit.load: reference to unknown tensor {payload!r}")
        return tensors[payload]
    if tag == "$dtype":
        dt = getattr(ember, str(payload), None) if str(payload).isidentifier() else None
        if not isinstance(dt, ember.dtype):
            raise RuntimeError(f"ember.jit.load: unknown dtype {payload!r}")
        return dt
    if tag == "$device":
        return ember.device(str(payload))
    if tag == "$slice":
        return slice(*(decode_value(v, tensors, nodes) for v in payload))
    if tag == "$ellipsis":
        return Ellipsis
    raise RuntimeError(f"ember.jit.load: unknown value tag {tag!r}")


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
            entry["target"] = target_name(node.target)
            if node.target is prim.CallFunction:
                raise RuntimeError("ember.jit.save: prim::CallFunction must be inlined before saving")
            if node.target is prim.CallMethod:
                raise RuntimeError(f"ember.jit.save: cannot save the call of method {node.args[1]!r}: "
                                   f"methods must be inlined (an @ember.jit.ignore'd method cannot be saved)")
        else:
            entry["target"] = node.target
        entry["args"] = encode_value(list(node.args), tensors, ids)
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
    """Rebuild a graph from `encode_graph`'s JSON, resolving targets through the whitelist."""
    from . import root_graph
    nodes = {} if nodes is None else nodes
    graph = Graph()
    if parent is not None:
        graph.parent_node = parent
        graph._namespace = root_graph(parent.graph)._namespace
    for entry in _field(data, "nodes", list):
        op = entry.get("op")
        if op not in ("placeholder", "call_function", "call_method", "output"):
            raise RuntimeError(f"ember.jit.load: node kind {op!r} is not allowed in a saved graph")
        raw_target = entry.get("target")
        if op == "call_function":
            target = resolve_target(raw_target)
            if target in (prim.CallMethod, prim.CallFunction):
                raise RuntimeError(f"ember.jit.load: {raw_target} is not allowed in a saved graph")
        elif op == "call_method":
            target = _check_method_name(raw_target)
        elif op == "placeholder":
            target = raw_target if isinstance(raw_target, str) and raw_target.isidentifier() else "arg"
        else:
            target = "output"
        args = decode_value(entry.get("args", []), tensors, nodes)
        kwargs = {k: decode_value(v, tensors, nodes) for k, v in entry.get("kwargs", [])}
        if not isinstance(args, list) or not all(isinstance(k, str) and k.isidentifier() for k in kwargs):
            raise RuntimeError(f"ember.jit.load: malformed arguments of node {entry.get('name')!r}")
        if op == "call_function" and target in (prim.GetAttr, prim.SetAttr) or \
                (op == "call_function" and target is builtins.getattr):
            if len(args) < 2:
                raise RuntimeError(f"ember.jit.load: {raw_target} needs an attribute name")
            _check_attr_name(args[1])
        name = entry.get("name")
        name = name if isinstance(name, str) and name.isidentifier() else None
        node = graph.create_node(op, target, tuple(args), kwargs, name=name)
        if "type" in entry:
            node.type = parse_type(str(entry["type"]))
        if "loc" in entry:
            node.meta["loc"] = tuple(entry["loc"])
        if isinstance(entry.get("jit_name"), str):
            node.meta["jit_name"] = entry["jit_name"]
        if isinstance(entry.get("num_outputs"), int):
            node.meta["num_outputs"] = entry["num_outputs"]
        if entry.get("output_of") in nodes:
            node.meta["output_of"] = nodes[entry["output_of"]]
        nodes[entry.get("id")] = node
        for block in entry.get("blocks", []):
            node.blocks.append(decode_graph(block, tensors, nodes, parent=node))
    return graph


def _field(data, key, kind):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind):
        raise RuntimeError(f"ember.jit.load: malformed file: {key!r} missing or not a {kind.__name__}")
    return value


# ---------------------------------------------------------------------------------------------
# inlining calls before saving (the saved program has no Python callees)
# ---------------------------------------------------------------------------------------------
def _callee_graph(callee) -> Graph:
    for attr in ("_graph", "graph"):
        g = getattr(callee, attr, None)
        g = getattr(g, "fx_graph", g)
        if isinstance(g, Graph):
            return g
    raise RuntimeError(f"ember.jit.save: cannot find the graph of callee {callee!r}")


def inline_calls(graph: Graph, depth: int = 0) -> Graph:
    """Replace every prim::CallFunction / CallMethod that has a ``meta["callee"]`` by a copy of
    the callee's graph (recursively); mutates and returns `graph` (pass a clone)."""
    from . import inline_graph, walk
    if depth > 64:
        raise RuntimeError("ember.jit.save: calls nest more than 64 deep (recursion?)")
    changed = True
    while changed:
        changed = False
        for node in list(walk(graph)):
            if node.target not in (prim.CallFunction, prim.CallMethod) or "callee" not in node.meta:
                continue
            callee = inline_calls(_clone(_callee_graph(node.meta["callee"])), depth + 1)
            inputs = list(node.args) if node.target is prim.CallFunction else [node.args[0], *node.args[2:]]
            result = inline_graph(node.graph, node, callee, inputs)
            node.replace_all_uses_with(result)
            node.graph.erase_node(node)
            changed = True
            break
    return graph


def _clone(graph: Graph) -> Graph:
    from . import clone
    return clone(graph)
