"""Check a jit archive's program before anything is built from it.

The program is the object tree ``ember.load``'s reader built from the file (its tensors, floats,
dtypes and devices are checked there). `check_payload` walks the whole tree -- module tree,
schemas, graphs, nested blocks, values -- and refuses, with `Refused` naming the offending
module/method/node, anything that is not exactly what `ember.jit.save` writes or that names
something outside the closed language of ``ember.jit.ir.allowlist``. `ember.jit.load` runs it
before decoding (so a refused file builds no program and runs nothing); `ember.jit.save` runs it
on what it is about to write (so it never writes a file that load refuses).

Beyond the allowlist, what the graphs may do is checked here because it depends on the file:

- ``prim::GetAttr`` / ``prim::SetAttr`` read and write only the members the module tree declares
  (parameters, buffers, submodules, attributes, ``training``), and only on a value that is
  statically a module of the tree: the ``self`` of a method, or a submodule read from one. A
  module value may be used nowhere else (not as an argument, not in a container, not returned),
  so no other code ever receives a module, and GetAttr never runs on anything but a module.
- values name only nodes defined before them in their graph or in an enclosing one;
- ``prim::If`` / ``prim::Loop`` have the blocks, parameters and returns the executor expects;
- ``prim::RaiseException`` names a class of ``prim.RAISABLE``;
- every field has the type save writes and no field is unknown; a value holds only what save
  writes (the checkpoint format also carries NumPy arrays, bytes, complex numbers: never a value).
  File values are compared only once their type is known (a tensor or an array compared to a
  string raises instead of answering).

    check_payload(payload)    # None, or Refused("method 'forward' of module '' ...: ...")
"""
from __future__ import annotations

import functools

from ember._core.device import device
from ember._core.dtype import dtype
from ember._core.tensor import Tensor
from ember.fx import prim

from .ir import allowlist
from .ir.serialize import DECODERS, FORMAT_VERSION
from .ir.types import parse_type

_MAX_OUTPUTS = 1 << 16      # outputs of one multi-output node (save writes the real count)

# The records save writes: field -> the type of its value (`object`: checked where it is used).
_ARCHIVES = {"function": {"version": int, "kind": str, "name": str, "method": dict},
             "module": {"version": int, "kind": str, "module": dict}}
_MODULE = {"class": str, "training": bool, "parameters": dict, "buffers": dict, "non_persistent": list,
           "attributes": dict, "submodules": dict, "methods": dict}
_METHOD = {"schema": dict, "graph": dict}
_SCHEMA = {"name": str, "arguments": list, "return_type": str}
_ARGUMENT = {"name": str, "type": str}
_ATTRIBUTE = {"type": str, "value": object}
_GRAPH = {"nodes": list}
_NODE = {"id": object, "op": str, "name": str, "target": str, "args": list, "kwargs": list}
_NODE_OPTIONAL = {"type": str, "loc": list, "jit_name": str, "num_outputs": int, "output_of": int, "blocks": list}
_EXPECTED = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a bool"}
_PLAIN_VALUES = (bool, int, float, str, dtype, device)


class Refused(Exception):
    """What is wrong with the archive (load/save turn it into a RuntimeError naming the file)."""


def check_payload(payload) -> None:
    """Refuse (raise `Refused`) unless `payload` is a well-formed program of the closed language."""
    version = payload.get("version") if type(payload) is dict else None
    if type(version) is not int or version != FORMAT_VERSION:
        older = type(payload) is dict and "program" in payload   # format 1: {"program": JSON text, "tensors"}
        raise Refused(f"unsupported archive version {_shown(version)} (this ember reads {FORMAT_VERSION})"
                      + ("; it is an archive of format 1 (its program JSON text), which ember no longer reads"
                         if older else ""))
    kind = payload.get("kind")
    if type(kind) is not str or kind not in _ARCHIVES:
        raise Refused(f"unknown archive kind {_shown(kind)}")
    _record(payload, f"a {kind} archive", _ARCHIVES[kind])
    if kind == "function":
        _method(payload["method"], None, f"function {_text(payload['name'], 'the function name')!r}")
    else:
        _module(payload["module"], "")


# ---------------------------------------------------------------------------------------------
# fields
# ---------------------------------------------------------------------------------------------
def _record(data, what: str, fields: dict, optional: dict | None = None) -> dict:
    """`data`, if it is an object with every field of `fields` and no field outside `fields` and
    `optional`, each of exactly the type there (so a bool is no int)."""
    if type(data) is not dict:
        raise Refused(f"{what} is a {type(data).__name__}, expected an object")
    missing = [name for name in fields if name not in data]
    if missing:
        raise Refused(f"{what} has no {missing[0]!r} field")
    allowed = fields | (optional or {})
    unknown = [key for key in data if key not in allowed]
    if unknown:
        raise Refused(f"{what} has an unknown field {_shown(unknown[0])}")
    for name, value in data.items():
        if allowed[name] is not object and type(value) is not allowed[name]:
            raise Refused(f"{what}: {name} is a {type(value).__name__}, expected {_EXPECTED[allowed[name]]}")
    return data


def _shown(value) -> str:
    """A value from the file as a message shows it: its repr (no control characters), cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(value, what: str) -> str:
    """A name or label the file gives (shown in messages and printed code): a printable string,
    so no control characters reach a terminal."""
    if not (isinstance(value, str) and value.isprintable()):
        raise Refused(f"{what} is not a printable string: {_shown(value)}")
    return value


def _type_text(text: str, what: str) -> None:
    try:
        parse_type(text)
    except (ValueError, RecursionError):
        raise Refused(f"{what} {_shown(text)} is not a type") from None


def _ref(value):
    """The node id a ``{"$node": id}`` value names, else None."""
    return value["$node"] if type(value) is dict and len(value) == 1 and type(value.get("$node")) is int else None


def _member_name(name, what: str, reserved: frozenset) -> str:
    if not (isinstance(name, str) and name.isascii() and (name.isidentifier() or name.isdigit())):
        raise Refused(f"{what} name {_shown(name)} is not an identifier")
    if name in reserved or (name.startswith("__") and name.endswith("__")):
        raise Refused(f"{what} name {name!r} is taken by ember.nn.Module's own attributes")
    return name


@functools.cache
def _reserved_names() -> frozenset:
    """Names a loaded module already has (its class's and a fresh instance's attributes)."""
    from ._save_load import LoadedScriptModule
    return frozenset(dir(LoadedScriptModule)) | frozenset(LoadedScriptModule("M").__dict__)


def _module(data, path: str) -> None:
    from ..nn.parameter import Parameter
    where = f"module {path or '<top>'!r}"
    _record(data, where, _MODULE)
    _text(data["class"], f"{where}: class")
    reserved = _reserved_names()
    seen: dict = {}
    for kind in ("parameters", "buffers", "attributes", "submodules", "methods"):
        for name, value in data[kind].items():
            # a loaded module's forward runs its saved "forward" method; every other name must be free
            _member_name(name, f"{where}: {kind[:-1]}", reserved - {"forward"} if kind == "methods" else reserved)
            if name in seen:
                raise Refused(f"{where}: {name!r} is both a {seen[name]} and a {kind[:-1]}")
            seen[name] = kind[:-1]
            if kind in ("parameters", "buffers") and value is not None:
                expected = Parameter if kind == "parameters" else Tensor
                if not isinstance(value, expected):
                    raise Refused(f"{where}: {kind[:-1]} {name!r} is a {type(value).__name__}, "
                                  f"not a {'parameter' if expected is Parameter else 'tensor'}")
            elif kind == "attributes":
                _record(value, f"{where}: attribute {name!r}", _ATTRIBUTE)
                _type_text(value["type"], f"{where}: attribute {name!r} type")
                _Graph(None, where).value(value["value"], None, f"attribute {name!r}", nodes=False)
            elif kind == "submodules":
                _module(value, f"{path}.{name}" if path else name)
    for name in data["non_persistent"]:
        if not isinstance(name, str) or name not in data["buffers"]:
            raise Refused(f"{where}: non-persistent buffer {_shown(name)} is not a buffer")
    for name, method in data["methods"].items():
        _method(method, data, f"method {name!r} of {where}")


def _method(data, module, where: str) -> None:
    _record(data, where, _METHOD)
    schema = _record(data["schema"], f"{where}: schema", _SCHEMA)
    _text(schema["name"], f"{where}: schema name")
    _type_text(schema["return_type"], f"{where}: return type")
    for i, arg in enumerate(schema["arguments"]):
        what = f"{where}: argument {i}"
        _record(arg, what, _ARGUMENT, {"default": object})
        if not arg["name"].isidentifier():
            raise Refused(f"{what} has a bad name {_shown(arg['name'])}")
        _type_text(arg["type"], f"{what} type")
        if "default" in arg:
            _Graph(None, where).value(arg["default"], None, f"the default of argument {arg['name']!r}", nodes=False)
    if module is not None and not schema["arguments"]:
        raise Refused(f"{where}: a method takes self first")
    inputs = sum(e["op"] == "placeholder" for e in _Graph(module, where).graph(data["graph"], None))
    if inputs != len(schema["arguments"]):
        raise Refused(f"{where}: the graph has {inputs} inputs but the schema {len(schema['arguments'])} arguments")


# ---------------------------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------------------------
class _Graph:
    """The checks of one method's graph: ids, scopes, module values, targets, blocks."""

    def __init__(self, module, where: str):
        self.module = module          # the module entry whose method this is (None: a function)
        self.where = where
        self.modules: dict = {}       # node id -> the module entry that value is
        self.nodes: dict = {}         # node id -> node entry, every node seen so far
        self.scope: set = set()       # ids visible at the current point

    def refuse(self, entry, problem: str):
        if entry is None:      # an attribute's value or an argument's default
            raise Refused(f"{self.where}: {problem}")
        raise Refused(f"{self.where}: node %{entry['name'][:80]} (id {str(entry['id'])[:20]}): {problem}")

    def graph(self, graph, parent) -> list:
        """Check one graph (a block when `parent` is its node entry); returns its node entries."""
        nodes = _record(graph, f"{self.where}: a graph", _GRAPH)["nodes"]
        if not nodes or _record(nodes[-1], f"{self.where}: a node", _NODE, _NODE_OPTIONAL)["op"] != "output":
            raise Refused(f"{self.where}: a graph must end with its output node")
        added = []
        seen_body = False
        for entry in nodes:
            _record(entry, f"{self.where}: a node", _NODE, _NODE_OPTIONAL)
            _text(entry["name"], f"{self.where}: name of node {str(entry['id'])[:20]}")
            ident = entry["id"]
            if type(ident) is not int or ident in self.nodes:
                self.refuse(entry, "node ids must be distinct integers")
            if entry["op"] == "placeholder":
                if seen_body:
                    self.refuse(entry, "inputs must come before the other nodes of their graph")
            else:
                seen_body = True
            if entry["op"] == "output" and entry is not nodes[-1]:
                self.refuse(entry, "a graph has one output node, at its end")
            if parent is None and self.module is not None and entry["op"] == "placeholder" and not added:
                self.modules[ident] = self.module      # self: the first input of a module's method
            self.node(entry)
            self.nodes[ident] = entry
            self.scope.add(ident)
            added.append(ident)
        if parent is not None:   # a block's values are not visible after it
            self.scope.difference_update(added)
        return nodes

    def node(self, entry) -> None:
        op, target, args, kwargs = entry["op"], entry["target"], entry["args"], entry["kwargs"]
        names = set()
        for pair in kwargs:
            if not (type(pair) is list and len(pair) == 2 and isinstance(pair[0], str) and pair[0].isascii()
                    and pair[0].isidentifier() and pair[0] not in names):
                self.refuse(entry, f"malformed keyword argument {_shown(pair)}")
            names.add(pair[0])
        self.meta(entry)
        blocks = entry.get("blocks", [])
        if op == "placeholder":
            if args or kwargs or blocks:
                self.refuse(entry, "an input node has a name and nothing else")
            return
        if op == "output":
            if target != "output" or len(args) != 1 or kwargs or blocks:
                self.refuse(entry, "an output node returns one value")
            self.value(args[0], entry, "the returned value")
            return
        if op == "call_method":
            if not allowlist.is_method_name(target):
                self.refuse(entry, f"method {_shown(target)} is not part of the loadable language (only Tensor "
                                   f"methods of the op table and list/dict/str methods are)")
            if not args:
                self.refuse(entry, f"call of method {_shown(target)} without a receiver")
            if target == "format":
                self.format_receiver(entry, args[0])
        elif op == "call_function":
            if allowlist.function_by_name(target) is None:
                self.refuse(entry, f"call_function target {_shown(target)} is not part of the loadable language "
                                   f"(operators, ember functions over them, prim ops, and a subset of "
                                   f"operator/math/builtins)")
            args = self.special(entry, target, args)
        else:
            self.refuse(entry, f"node kind {_shown(op)} is not allowed in a saved graph")
        for i, a in enumerate(args):
            self.value(a, entry, f"argument {i}")
        for k, v in kwargs:
            self.value(v, entry, f"keyword argument {k!r}")
        self.blocks(entry, target, blocks)

    def meta(self, entry) -> None:
        if "type" in entry:
            _type_text(entry["type"], f"{self.where}: type of node {entry['id']}")
        loc = entry.get("loc", ["", 0, 0])
        if not (len(loc) == 3 and isinstance(loc[0], str) and loc[0].isprintable()
                and type(loc[1]) is int and type(loc[2]) is int):
            self.refuse(entry, f"malformed source location {_shown(loc)}")
        _text(entry.get("jit_name", ""), f"{self.where}: jit_name of node {entry['id']}")
        if not 0 <= entry.get("num_outputs", 0) <= _MAX_OUTPUTS:
            self.refuse(entry, f"bad output count {entry['num_outputs']}")
        if "output_of" in entry:
            source = entry["output_of"]
            if source not in self.scope or not entry["args"] or _ref(entry["args"][0]) != source:
                self.refuse(entry, "output_of must name the multi-output node this node reads")

    def special(self, entry, target: str, args: list) -> list:
        """Checks of particular targets; returns the arguments left for the generic value check."""
        if target == "prim::Constant":
            if len(args) != 1 or entry["kwargs"]:
                self.refuse(entry, "prim::Constant holds exactly one value")
            self.value(args[0], entry, "the constant", nodes=False)
            return []
        if target in ("prim::GetAttr", "prim::SetAttr"):
            return self.attribute(entry, target, args)
        if target == "builtins.getattr":
            if len(args) not in (2, 3) or not allowlist.is_getattr_name(args[1]):
                self.refuse(entry, f"getattr may only read the Tensor attributes script knows, not "
                                   f"{_shown(args[1:2])}")
        if target == "prim::RaiseException":
            if len(args) != 2 or entry["kwargs"] or not isinstance(args[1], str) or args[1] not in prim.RAISABLE:
                self.refuse(entry, f"prim::RaiseException may only raise one of {sorted(prim.RAISABLE)}, "
                                   f"not {_shown(args[1:2])}")
        return args

    def attribute(self, entry, target: str, args: list) -> list:
        n = 2 if target == "prim::GetAttr" else 3
        if len(args) != n or entry["kwargs"]:
            self.refuse(entry, f"{target} takes {n} arguments")
        ident, name = _ref(args[0]), args[1]
        owner = self.modules.get(ident)
        if owner is None or ident not in self.scope:
            self.refuse(entry, f"{target} reads members of the module tree only; its receiver is not a module")
        settable = set(owner["parameters"]) | set(owner["buffers"]) | set(owner["attributes"])
        readable = settable | set(owner["submodules"]) | {"training"}
        if not isinstance(name, str) or name not in (readable if n == 2 else settable):
            self.refuse(entry, f"{target} of {_shown(name)}: the module declares no such "
                               f"{'member' if n == 2 else 'parameter, buffer or attribute'}")
        if n == 2 and name in owner["submodules"]:
            self.modules[entry["id"]] = owner["submodules"][name]
        return args[2:]

    def format_receiver(self, entry, receiver) -> None:
        text = receiver
        if _ref(receiver) is not None:
            source = self.nodes.get(_ref(receiver))
            text = source["args"][0] if source is not None and source["target"] == "prim::Constant" else None
        problem = allowlist.format_string_problem(text)
        if problem is not None:
            self.refuse(entry, f"str.format: {problem}")

    def blocks(self, entry, target: str, blocks: list) -> None:
        expected = {"prim::If": 2, "prim::Loop": 1}.get(target, 0)
        if len(blocks) != expected:
            self.refuse(entry, f"{target} has {len(blocks)} blocks, expected {expected}")
        if not blocks:
            return
        carried = len(entry["args"]) - 2 if target == "prim::Loop" else None
        if carried is not None and carried < 0:
            self.refuse(entry, "prim::Loop takes (max_trip_count, start_condition, *carried)")
        arity = set()
        for block in blocks:
            nodes = self.graph(block, entry)
            params = sum(1 for e in nodes if e["op"] == "placeholder")
            returns = nodes[-1]["args"][0]
            if type(returns) is not tuple:
                self.refuse(entry, "a block returns a tuple of values")
            if params != (0 if carried is None else carried + 1) or \
                    (carried is not None and len(returns) != carried + 1):
                self.refuse(entry, f"{target}'s block has {params} inputs and {len(returns)} results, "
                                   f"which do not match the node")
            arity.add(len(returns))
        outputs = carried if carried is not None else arity.pop()
        if (carried is None and arity) or entry.get("num_outputs", outputs) != outputs:
            self.refuse(entry, f"{target}'s blocks and output count disagree")

    # -- values -------------------------------------------------------------------------------
    def value(self, v, entry, what: str, nodes: bool = True) -> None:
        """A value of serialize's value grammar; `nodes`: whether it may name nodes. A module value
        is refused here: only GetAttr/SetAttr receive modules."""
        if v is None or type(v) in _PLAIN_VALUES or isinstance(v, Tensor):
            return
        if type(v) in (list, tuple):
            for x in v:
                self.value(x, entry, what, nodes)
            return
        if type(v) is not dict or len(v) != 1 or next(iter(v)) not in _VALUE_CHECKS:
            self.refuse(entry, f"{what}: malformed value {_shown(v)}")
        (tag, payload), = v.items()
        problem, children = _VALUE_CHECKS[tag](self, payload, nodes)
        if problem:
            self.refuse(entry, what + problem)
        for x in children:
            self.value(x, entry, what, nodes)

    def node_ref(self, ident, nodes: bool):
        if not nodes or type(ident) is not int or ident not in self.scope:
            return f" names value {_shown(ident)}, which is not defined before it in scope", ()
        return (" is a module; modules are only read by prim::GetAttr" if ident in self.modules else None), ()


# tag -> check(graph checker, payload, may name nodes) -> (problem or None, nested values to check);
# a problem is a message tail. One row per tag of serialize.DECODERS.
_VALUE_CHECKS = {
    "$node": _Graph.node_ref,
    "$dict": lambda g, p, nodes: _dict_items(p),
    "$slice": lambda g, p, nodes: (": malformed $slice", ()) if type(p) is not list or len(p) != 3 else (None, p),
    "$ellipsis": lambda g, p, nodes: (None if p is True else ": malformed $ellipsis", ()),
}
assert set(_VALUE_CHECKS) == set(DECODERS)


def _dict_items(items) -> tuple:
    if type(items) is not list:
        return ": malformed $dict", ()
    if any(type(i) is not list or len(i) != 2 or not _hashable(i[0]) for i in items):
        return ": a $dict item is a [hashable key, value] pair", ()
    return None, [x for item in items for x in item]


def _hashable(key) -> bool:
    """Whether a $dict key decodes to a hashable value (a $node's value is checked when it runs)."""
    if type(key) is tuple:
        return all(_hashable(k) for k in key)
    if type(key) is dict:   # a tag
        return len(key) == 1 and ("$node" in key or "$ellipsis" in key)
    return type(key) is not list
