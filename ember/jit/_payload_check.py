"""Check a jit archive's program (its JSON payload) before anything is built from it.

`check_payload` walks the whole JSON tree -- module tree, schemas, graphs, nested blocks, values --
and refuses, with `Refused` naming the offending module/method/node, anything that is not exactly
what `ember.jit.save` writes or that names something outside the closed language of
``ember.jit.ir.allowlist``. `ember.jit.load` runs it before decoding (so a refused file builds no
objects and runs nothing); `ember.jit.save` runs it on what it is about to write (so it never
writes a file that load refuses).

Beyond the allowlist, what the graphs may do is checked here because it depends on the file:

- ``prim::GetAttr`` / ``prim::SetAttr`` read and write only the members the module tree declares
  (parameters, buffers, submodules, attributes, ``training``), and only on a value that is
  statically a module of the tree: the ``self`` of a method, or a submodule read from one. A
  module value may be used nowhere else (not as an argument, not in a container, not returned),
  so no other code ever receives a module, and GetAttr never runs on anything but a module.
- values name only nodes defined before them in their graph or in an enclosing one;
- ``prim::If`` / ``prim::Loop`` have the blocks, parameters and returns the executor expects;
- ``prim::RaiseException`` names a class of ``prim.RAISABLE``;
- every field has the JSON type save writes, and no field is unknown.

    check_payload(json.loads(text), tensors)    # None, or Refused("method 'forward' of module '' ...: ...")
"""
from __future__ import annotations

from ember.fx import prim

from .ir import allowlist
from .ir.serialize import DECODERS, FORMAT_VERSION
from .ir.types import parse_type

_MAX_OUTPUTS = 1 << 16      # outputs of one multi-output node (save writes the real count)

_TOP_KEYS = {"version", "kind", "name", "method", "module"}
_MODULE_KEYS = {"class", "training", "parameters", "buffers", "non_persistent", "attributes", "submodules",
                "methods"}
_NODE_KEYS = {"id", "op", "name", "target", "args", "kwargs", "type", "loc", "jit_name", "num_outputs",
              "output_of", "blocks"}


class Refused(Exception):
    """What is wrong with the archive (load/save turn it into a RuntimeError naming the file)."""


def check_payload(payload, tensors: list) -> None:
    """Refuse (raise `Refused`) unless `payload` is a well-formed program of the closed language
    over `tensors` (the archive's tensor list: ``ember.load``'s reader built and checked them)."""
    import ember
    _keys(payload, "the archive", {"version", "kind"}, _TOP_KEYS)
    if payload["version"] != FORMAT_VERSION or type(payload["version"]) is not int:
        raise Refused(f"unsupported archive version {_shown(payload['version'])} (this ember reads {FORMAT_VERSION})")
    for i, t in enumerate(tensors):
        if not isinstance(t, ember.Tensor):
            raise Refused(f"tensor list entry {i} is a {type(t).__name__}, expected a tensor")
    kind = payload["kind"]
    if kind == "function":
        _keys(payload, "a function archive", {"version", "kind", "name", "method"}, _TOP_KEYS - {"module"})
        name = _text(payload["name"], "the function name")
        _method(payload["method"], len(tensors), None, f"function {name!r}")
    elif kind == "module":
        _keys(payload, "a module archive", {"version", "kind", "module"}, _TOP_KEYS - {"name", "method"})
        _module(payload["module"], tensors, "")
    else:
        raise Refused(f"unknown archive kind {_shown(kind)}")


# ---------------------------------------------------------------------------------------------
# fields
# ---------------------------------------------------------------------------------------------
def _keys(data, what: str, required: set, allowed: set) -> None:
    if type(data) is not dict:
        raise Refused(f"{what} is a {type(data).__name__}, expected an object")
    missing = sorted(required - data.keys())
    if missing:
        raise Refused(f"{what} has no {_shown(missing[0])} field")
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise Refused(f"{what} has an unknown field {_shown(unknown[0])}")


def _typed(value, kind, what: str):
    if type(value) is not kind:
        raise Refused(f"{what} is a {type(value).__name__}, expected a {kind.__name__}")
    return value


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


def _type_text(text, what: str) -> None:
    _typed(text, str, what)
    try:
        parse_type(text)
    except (ValueError, RecursionError):
        raise Refused(f"{what} {_shown(text)} is not a type") from None


def _dtype(name):
    import ember
    dt = getattr(ember, name, None) if isinstance(name, str) and name.isidentifier() else None
    return dt if isinstance(dt, ember.dtype) else None


def _member_name(name, what: str, reserved: frozenset) -> str:
    if not (isinstance(name, str) and name.isascii() and (name.isidentifier() or name.isdigit())):
        raise Refused(f"{what} name {_shown(name)} is not an identifier")
    if name in reserved or (name.startswith("__") and name.endswith("__")):
        raise Refused(f"{what} name {name!r} is taken by ember.nn.Module's own attributes")
    return name


def _parameter_class():
    from ..nn.parameter import Parameter
    return Parameter


_reserved: frozenset | None = None


def _reserved_names() -> frozenset:
    """Names a loaded module already has (its class's and a fresh instance's attributes)."""
    global _reserved
    if _reserved is None:
        from ._save_load import LoadedScriptModule
        _reserved = frozenset(dir(LoadedScriptModule)) | frozenset(LoadedScriptModule("M").__dict__)
    return _reserved


def _module(data, tensors: list, path: str) -> None:
    where = f"module {path or '<top>'!r}"
    _keys(data, where, _MODULE_KEYS, _MODULE_KEYS)
    _text(data["class"], f"{where}: class")
    _typed(data["training"], bool, f"{where}: training")
    reserved = _reserved_names()
    seen: dict = {}
    for kind in ("parameters", "buffers", "attributes", "submodules", "methods"):
        for name, value in _typed(data[kind], dict, f"{where}: {kind}").items():
            # a loaded module's forward runs its saved "forward" method; every other name must be free
            _member_name(name, f"{where}: {kind[:-1]}", reserved - {"forward"} if kind == "methods" else reserved)
            if name in seen:
                raise Refused(f"{where}: {name!r} is both a {seen[name]} and a {kind[:-1]}")
            seen[name] = kind[:-1]
            if kind in ("parameters", "buffers") and value is not None:
                if type(value) is not int or not 0 <= value < len(tensors):
                    raise Refused(f"{where}: {kind[:-1]} {name!r} refers to tensor {_shown(value)}, which the table lacks")
                if kind == "parameters" and not isinstance(tensors[value], _parameter_class()):
                    raise Refused(f"{where}: parameter {name!r} refers to tensor {value}, which is not a parameter")
            elif kind == "attributes":
                _keys(value, f"{where}: attribute {name!r}", {"type", "value"}, {"type", "value"})
                _type_text(value["type"], f"{where}: attribute {name!r} type")
                _Graph(len(tensors), {}, where).value(value["value"], set(), f"attribute {name!r}")
            elif kind == "submodules":
                _module(value, tensors, f"{path}.{name}" if path else name)
    for name in _typed(data["non_persistent"], list, f"{where}: non_persistent"):
        if not isinstance(name, str) or name not in data["buffers"]:
            raise Refused(f"{where}: non-persistent buffer {_shown(name)} is not a buffer")
    for name, method in data["methods"].items():
        _method(method, len(tensors), data, f"method {name!r} of {where}")


def _method(data, n_tensors: int, module, where: str) -> None:
    _keys(data, where, {"schema", "graph"}, {"schema", "graph"})
    schema = data["schema"]
    _keys(schema, f"{where}: schema", {"name", "arguments", "return_type"}, {"name", "arguments", "return_type"})
    _text(schema["name"], f"{where}: schema name")
    _type_text(schema["return_type"], f"{where}: return type")
    arguments = _typed(schema["arguments"], list, f"{where}: arguments")
    for i, arg in enumerate(arguments):
        what = f"{where}: argument {i}"
        _keys(arg, what, {"name", "type"}, {"name", "type", "default"})
        if not (isinstance(arg["name"], str) and arg["name"].isidentifier()):
            raise Refused(f"{what} has a bad name {_shown(arg['name'])}")
        _type_text(arg["type"], f"{what} type")
        if "default" in arg:
            _Graph(n_tensors, {}, where).value(arg["default"], set(), f"the default of argument {arg['name']!r}")
    if module is not None and not arguments:
        raise Refused(f"{where}: a method takes self first")
    _Graph(n_tensors, module, where).top(data["graph"], len(arguments))


# ---------------------------------------------------------------------------------------------
# graphs
# ---------------------------------------------------------------------------------------------
class _Graph:
    """The checks of one method's graph: ids, scopes, module values, targets, blocks."""

    def __init__(self, n_tensors: int, module, where: str):
        self.n_tensors = n_tensors
        self.module = module          # the module entry whose method this is (None: a function)
        self.where = where
        self.modules: dict = {}       # node id -> the module entry that value is
        self.nodes: dict = {}         # node id -> node entry, every node seen so far
        self.scope: set = set()       # ids visible at the current point

    def refuse(self, entry, problem: str):
        name = entry.get("name") if isinstance(entry, dict) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        shown = name if isinstance(name, str) and name.isprintable() and len(name) <= 80 else repr(name)[:80]
        raise Refused(f"{self.where}: node %{shown} (id {str(ident)[:20]}): {problem}")

    def top(self, graph, n_arguments: int) -> None:
        nodes = self.graph(graph, None)
        placeholders = [e for e in nodes if e["op"] == "placeholder"]
        if len(placeholders) != n_arguments:
            raise Refused(f"{self.where}: the graph has {len(placeholders)} inputs but the schema "
                          f"{n_arguments} arguments")

    def graph(self, graph, parent) -> list:
        """Check one graph (a block when `parent` is its node entry); returns its node entries."""
        _keys(graph, f"{self.where}: a graph", {"nodes"}, {"nodes"})
        nodes = _typed(graph["nodes"], list, f"{self.where}: graph nodes")
        if not nodes or not isinstance(nodes[-1], dict) or nodes[-1].get("op") != "output":
            raise Refused(f"{self.where}: a graph must end with its output node")
        added = []
        seen_body = False
        for entry in nodes:
            _keys(entry, f"{self.where}: a node", {"id", "op", "name", "target", "args", "kwargs"}, _NODE_KEYS)
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
        op, target = entry["op"], entry["target"]
        args = _typed(entry["args"], list, f"{self.where}: args of node {entry['id']}")
        kwargs = _typed(entry["kwargs"], list, f"{self.where}: kwargs of node {entry['id']}")
        names = set()
        for pair in kwargs:
            if not (type(pair) is list and len(pair) == 2 and isinstance(pair[0], str) and pair[0].isascii()
                    and pair[0].isidentifier() and pair[0] not in names):
                self.refuse(entry, f"malformed keyword argument {_shown(pair)}")
            names.add(pair[0])
        _text(entry["name"], f"{self.where}: name of node {entry['id']}")
        self.meta(entry)
        blocks = entry.get("blocks", [])
        if op == "placeholder":
            if not isinstance(target, str) or args or kwargs or blocks:
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
        self.blocks(entry, target, _typed(blocks, list, f"{self.where}: blocks of node {entry['id']}"))

    def meta(self, entry) -> None:
        if "type" in entry:
            _type_text(entry["type"], f"{self.where}: type of node {entry['id']}")
        loc = entry.get("loc", ["", 0, 0])
        if not (type(loc) is list and len(loc) == 3 and isinstance(loc[0], str) and loc[0].isprintable()
                and type(loc[1]) is int and type(loc[2]) is int):
            self.refuse(entry, f"malformed source location {str(loc)[:80]}")
        _text(entry.get("jit_name", ""), f"{self.where}: jit_name of node {entry['id']}")
        count = entry.get("num_outputs", 0)
        if type(count) is not int or not 0 <= count <= _MAX_OUTPUTS:
            self.refuse(entry, f"bad output count {_shown(count)}")
        if "output_of" in entry:
            source = entry["output_of"]
            if type(source) is not int or source not in self.scope or entry["args"][:1] != [{"$node": source}]:
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
        ref, name = args[0], args[1]
        ident = ref.get("$node") if type(ref) is dict and len(ref) == 1 else None
        owner = self.modules.get(ident) if type(ident) is int else None
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
        if type(receiver) is dict and len(receiver) == 1 and type(receiver.get("$node")) is int:
            source = self.nodes.get(receiver["$node"])
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
            if not (type(returns) is dict and type(returns.get("$tuple")) is list):
                self.refuse(entry, "a block returns a tuple of values")
            if params != (0 if carried is None else carried + 1) or \
                    (carried is not None and len(returns["$tuple"]) != carried + 1):
                self.refuse(entry, f"{target}'s block has {params} inputs and {len(returns['$tuple'])} results, "
                                   f"which do not match the node")
            arity.add(len(returns["$tuple"]))
        outputs = carried if carried is not None else arity.pop()
        if (carried is None and arity) or entry.get("num_outputs", outputs) != outputs:
            self.refuse(entry, f"{target}'s blocks and output count disagree")

    # -- values -------------------------------------------------------------------------------
    def value(self, v, entry, what: str, nodes: bool = True) -> None:
        """A value of the JSON value grammar (serialize's module docstring); `nodes`: whether it may
        name nodes. A module value is refused here: only GetAttr/SetAttr receive modules."""
        if v is None or type(v) in (bool, int, str, float):
            return
        if type(v) is list:
            for x in v:
                self.value(x, entry, what, nodes)
            return
        if type(v) is not dict or len(v) != 1 or next(iter(v)) not in _VALUE_CHECKS:
            self.refuse(entry, f"{what}: malformed value {str(v)[:80]}")
        (tag, payload), = v.items()
        problem, children = _VALUE_CHECKS[tag](self, payload, nodes)
        if problem:
            self.refuse(entry, what + problem.format(_shown(payload)))
        for x in children:
            self.value(x, entry, what, nodes)

    def node_ref(self, ident, nodes: bool):
        if not nodes or type(ident) is not int or ident not in self.scope:
            return " names value {}, which is not defined before it in scope", ()
        return (" is a module; modules are only read by prim::GetAttr" if ident in self.modules else None), ()


# tag -> check(graph checker, payload, may name nodes) -> (problem or None, nested values to check);
# a problem is a message tail, "{}" standing for the payload. One row per tag of serialize.DECODERS.
_VALUE_CHECKS = {
    "$node": _Graph.node_ref,
    "$tuple": lambda g, p, nodes: (": malformed $tuple", ()) if type(p) is not list else (None, p),
    "$slice": lambda g, p, nodes: (": malformed $slice", ()) if type(p) is not list or len(p) != 3 else (None, p),
    "$dict": lambda g, p, nodes: _dict_items(p),
    "$float": lambda g, p, nodes: (None if p in ("nan", "inf", "-inf") else ": malformed float {}", ()),
    "$dtype": lambda g, p, nodes: (None if _dtype(p) is not None else ": unknown dtype {}", ()),
    "$device": lambda g, p, nodes: (None if _device_ok(p) else ": bad device {}", ()),
    "$tensor": lambda g, p, nodes: (None if type(p) is int and 0 <= p < g.n_tensors
                                    else " refers to tensor {}, which the table lacks", ()),
    "$ellipsis": lambda g, p, nodes: (None if p is True else ": malformed $ellipsis", ()),
}
assert set(_VALUE_CHECKS) == set(DECODERS)


def _dict_items(items) -> tuple:
    if type(items) is not list:
        return ": malformed $dict", ()
    if any(type(i) is not list or len(i) != 2 or not _hashable(i[0]) for i in items):
        return ": a $dict item is a [hashable key, value] pair", ()
    return None, [x for item in items for x in item]


def _device_ok(text) -> bool:
    import ember
    try:
        return isinstance(text, str) and ember.device(text) is not None
    except (RuntimeError, TypeError, ValueError):
        return False


def _hashable(key) -> bool:
    """Whether a $dict key decodes to a hashable value (a $node's value is checked when it runs)."""
    if type(key) is list:
        return False
    if type(key) is dict and len(key) == 1:
        (tag, payload), = key.items()
        if tag == "$tuple":
            return type(payload) is list and all(_hashable(k) for k in payload)
        return tag not in ("$dict", "$slice")
    return True
