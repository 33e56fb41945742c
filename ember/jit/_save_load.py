"""ember.jit.save / ember.jit.load: a scripted or traced program as a zip file that runs without
its Python source, and whose loading cannot execute code from the file: a saved program is a closed
language (``ember.jit.ir.allowlist``), and load checks the whole program with ``_payload_check``
before building anything from it (save runs the same check).

    ember.jit.save(ember.jit.script(MyCell()), "cell.pt")
    cell = ember.jit.load("cell.pt")      # an ember.nn.Module: parameters(), state_dict(), .graph, .code
    cell(x, h)                            # runs the saved graph through the GraphExecutor

The file is in ``ember.save``'s format (``ember/serialization.py``: a JSON manifest, the tensors'
storages, a SHA-256 digest; nothing is unpickled) with its own magic number (``JIT_MAGIC``, so
neither loader takes the other's files). Its object is the program: the format version, the kind
and the module tree or the function, with graphs saved inlined (calls of scripted functions and
methods are replaced by their graphs) in the form of ``ember.jit.ir.serialize``. Tensors, dtypes,
devices, floats and tuples are written and read by ``ember.save``'s code: Parameters,
``requires_grad`` and shared storage round-trip as they do in a checkpoint.

What is saved:
- a script function (``._graph`` + ``.schema``): its graph, schema and name;
- a script module (any ``ember.nn.Module`` whose methods are script methods: a ``_methods`` dict
  name -> method with ``._graph``/``.schema``, or a ``forward`` with ``._graph``): the module tree
  (class name, training flag, parameters, buffers, submodules) with, per module, its methods and
  the non-tensor attributes its graphs read (``prim::GetAttr``);
- a traced function or module (``ember.jit.trace``): its fx graph turned into the script form
  (a module's ``get_attr`` nodes become ``prim::GetAttr`` chains from ``self``, tensor constants
  become ``prim::Constant`` nodes), so it loads as the same kinds of objects.
"""
from __future__ import annotations

import contextlib
import os

from .. import serialization
from .._checkpoint_reader import _Corrupt
from ._callable import CompiledGraphCallable
from ._payload_check import Refused, check_payload
from .ir import callee_graph, prim
from .ir import serialize as ser
from .ir.types import AnyType, Argument, ModuleType, NO_DEFAULT, Signature, TensorType, parse_type

# ---------------------------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------------------------
def save(m, f, _extra_files=None) -> None:
    """Save a scripted/traced function or module to `f` (a path or a writable binary file).

        ember.jit.save(ember.jit.script(fn), buffer)
    """
    if _extra_files:
        raise NotImplementedError("ember.jit.save: _extra_files is not supported")
    from ..nn.modules.module import Module
    from ._trace import script_form
    if isinstance(m, Module):
        payload = {"kind": "module", "module": _encode_module(m)}
    elif getattr(m, "graph_module", None) is not None:
        graph, schema = script_form(m.graph_module, name=getattr(m, "name", "forward"))
        payload = {"kind": "function", "name": schema.name, "method": _encode_method(graph, schema)}
    elif getattr(m, "_graph", None) is not None:
        payload = {"kind": "function", "name": getattr(m, "name", "fn"),
                   "method": _encode_method(_inlined(m), _schema_of(m, "fn"))}
    else:
        raise TypeError(f"ember.jit.save: expected a scripted or traced function or module, got {type(m).__name__}")
    payload["version"] = ser.FORMAT_VERSION
    try:   # what load would refuse is refused here, before anything is written
        check_payload(payload)
    except Refused as exc:
        raise RuntimeError(f"ember.jit.save: {exc}") from None
    serialization.write(payload, f, serialization.JIT_MAGIC)


def _schema_of(obj, default_name: str) -> Signature:
    schema = getattr(obj, "schema", None)
    if isinstance(schema, Signature):
        return schema
    graph = callee_graph(obj)
    args = tuple(Argument(n.target, n.type or TensorType()) for n in graph.nodes if n.op == "placeholder")
    return Signature(getattr(obj, "name", default_name), args, AnyType())


def _inlined(obj):
    from ._callable import inline_calls
    return inline_calls(callee_graph(obj))


def _encode_method(graph, schema: Signature) -> dict:
    args = []
    for a in schema.arguments:
        entry = {"name": a.name, "type": str(a.type)}
        if a.default is not NO_DEFAULT:
            entry["default"] = ser.encode_value(a.default)
        args.append(entry)
    return {"schema": {"name": schema.name, "arguments": args, "return_type": str(schema.return_type)},
            "graph": ser.encode_graph(graph)}


def _script_methods(mod, compile_forward: bool = True) -> dict:
    """name -> script method object of a scripted (or loaded) module; {} for a plain module.

    A RecursiveScriptModule keeps its compiled methods in ``_info._methods`` (forward is compiled
    here if it was not yet, for the top module only: an unused submodule's forward may not be
    scriptable, as in TorchScript); a loaded module in ``_methods``."""
    info = mod.__dict__.get("_info")
    if info is not None and isinstance(getattr(info, "_methods", None), dict):
        has_forward = getattr(info, "has_forward", None)
        if compile_forward and has_forward is not None and has_forward():
            info.method("forward")
        return dict(info._methods)
    methods = mod.__dict__.get("_methods")
    if isinstance(methods, dict):
        return dict(methods)
    fwd = mod.__dict__.get("forward")
    if fwd is not None and getattr(fwd, "_graph", None) is not None:
        return {"forward": fwd}
    return {}


def _class_name(mod) -> str:
    info = mod.__dict__.get("_info")
    if isinstance(getattr(info, "qualified_name", None), str):
        return info.qualified_name
    value = mod.__dict__.get("original_name")
    if isinstance(value, str) and value:
        return value
    return f"{type(mod).__module__}.{type(mod).__qualname__}"


def _encode_module(mod, attributes: dict | None = None) -> dict:
    """`attributes`: id(module) -> {name: (type text, value)}, what the graphs of the module's
    ancestors read or write on it (None for the top module)."""
    from ..nn.modules.module import Module
    from ._trace import script_form
    top, attributes = attributes is None, {} if attributes is None else attributes
    graphs = {}
    if mod.__dict__.get("graph_module") is not None:   # a traced module: its forward only
        graphs["forward"] = script_form(mod.__dict__["graph_module"], mod, ModuleType(_class_name(mod)))
    else:
        for name, method in _script_methods(mod, compile_forward=top).items():
            graphs[name] = (_inlined(method), _schema_of(method, name))
    for graph, _ in graphs.values():
        _collect_attributes(graph, mod, attributes)
    return {
        "class": _class_name(mod), "training": bool(mod.training),
        "parameters": dict(mod._parameters), "buffers": dict(mod._buffers),
        "non_persistent": sorted(getattr(mod, "_non_persistent_buffers_set", ())),
        "attributes": {name: {"type": typ, "value": ser.encode_value(value)}
                       for name, (typ, value) in attributes.get(id(mod), {}).items()},
        "submodules": {n: _encode_module(c, attributes) for n, c in mod._modules.items() if isinstance(c, Module)},
        "methods": {n: _encode_method(g, s) for n, (g, s) in graphs.items()},
    }


def _collect_attributes(graph, mod, out: dict) -> None:
    """Add to `out` (see `_encode_module`) the non-tensor, non-module attributes a graph reads or
    writes on `mod` or a module read from it (GetAttr chains from ``self``): the members the saved
    modules declare, all a loaded graph may touch."""
    import ember
    from ..nn.modules.module import Module
    from .ir import walk
    owners: dict = {}     # node -> the module that is its value
    for node in walk(graph):
        if node.op == "placeholder" and isinstance(node.type, ModuleType) and node.graph.parent_node is None:
            owners[node] = mod
        if node.target not in (prim.GetAttr, prim.SetAttr) or node.args[0] not in owners:
            continue
        owner, name = owners[node.args[0]], node.args[1]
        value = getattr(owner, name)
        if isinstance(value, Module) and node.target is prim.GetAttr:
            owners[node] = value
        if isinstance(value, Module) or name in owner._parameters or name in owner._buffers or name == "training":
            continue   # submodules, parameters, buffers and the flag are saved with the module tree
        if callable(value) and not isinstance(value, ember.Tensor):
            raise RuntimeError(f"ember.jit.save: attribute {name!r} is a {type(value).__name__}; it cannot be saved")
        typ = node.type if node.target is prim.GetAttr else getattr(node.args[2], "type", None)
        known = out.setdefault(id(owner), {})
        if typ is not None or name not in known:
            known[name] = (str(typ) if typ is not None else "Any", value)


# ---------------------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------------------
def load(f, map_location=None, _extra_files=None):
    """Load what `save` wrote: a `LoadedScriptFunction` or a `LoadedScriptModule`.

        fn = ember.jit.load("fn.pt"); fn(x)

    The file is checked whole before anything is built from it: its format by ``ember.load``'s
    reader (``ember.serialization.read``), its program by ``_payload_check``. A file that is corrupt,
    foreign, or whose program names anything outside the closed language of
    ``ember.jit.ir.allowlist`` raises RuntimeError naming the file and what is wrong, and runs nothing.
    """
    if _extra_files:
        raise NotImplementedError("ember.jit.load: _extra_files is not supported")
    if map_location is not None and (callable(map_location) or isinstance(map_location, dict)):
        raise NotImplementedError("ember.jit.load: map_location must be a device or a device string")
    name = _source_name(f)
    try:
        with _opened(f) as fh:
            magic = serialization.JIT_MAGIC
            payload = serialization.read(fh, fh.read(len(magic)) or b"", map_location, True, magic)
        check_payload(payload)
        if payload["kind"] == "function":
            return LoadedScriptFunction(payload["name"], *_decode_method(payload["method"]))
        return _decode_module(payload["module"])
    except (Refused, _Corrupt) as exc:
        raise RuntimeError(f"ember.jit.load: {name}: {exc}") from None
    except RecursionError:
        raise RuntimeError(f"ember.jit.load: {name}: the archive is nested too deeply") from None


def _source_name(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return str(getattr(f, "name", None) or type(f).__name__)


def _opened(f):
    """`f` opened for reading: a missing path or a directory raise ValueError, as ``torch.jit.load`` does."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise ValueError(f"ember.jit.load: The provided filename {path} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"ember.jit.load: The provided filename {path} is a directory")
        return open(path, "rb")
    if not hasattr(f, "read"):
        raise TypeError(f"ember.jit.load: expected a path or a binary file object, got {type(f).__name__}")
    return contextlib.nullcontext(f)


# decoding: the payload passed check_payload, so its fields have the types and names save writes
def _decode_method(data: dict) -> tuple:
    graph = ser.decode_graph(data["graph"])
    graph.lint()
    schema = data["schema"]
    args = tuple(Argument(a["name"], parse_type(a["type"]), ser.decode_value(a["default"]) if "default" in a
                          else NO_DEFAULT) for a in schema["arguments"])
    return graph, Signature(schema["name"], args, parse_type(schema["return_type"]))


def _decode_module(data: dict) -> "LoadedScriptModule":
    mod = LoadedScriptModule(data["class"])
    for name, tensor in data["parameters"].items():
        mod.register_parameter(name, tensor)
    for name, tensor in data["buffers"].items():
        mod.register_buffer(name, tensor, persistent=name not in data["non_persistent"])
    for name, sub in data["submodules"].items():
        mod.add_module(name, _decode_module(sub))
    for name, attr in data["attributes"].items():
        setattr(mod, name, ser.decode_value(attr["value"]))
    mod.training = data["training"]     # this module only: its submodules keep their own flags
    for name, method in data["methods"].items():
        mod._methods[name] = LoadedScriptMethod(mod, name, *_decode_method(method))
    return mod


# ---------------------------------------------------------------------------------------------
# loaded objects
# ---------------------------------------------------------------------------------------------
class _Loaded(CompiledGraphCallable):
    """Shared by loaded functions and methods: the saved graph is already inlined."""

    def _init_loaded(self, name: str, graph, schema: Signature) -> None:
        self._graph = self._inlined = graph
        self._init_callable(name, schema)

    def __call__(self, *args, **kwargs):
        # A saved program may set the grad mode (prim::SetGradEnabled); script pairs every set with
        # a restore, a file need not: whatever it does, the caller's mode is back when it returns.
        from ..autograd.grad_mode import _set_enabled, is_grad_enabled
        enabled = is_grad_enabled()
        try:
            return CompiledGraphCallable.__call__(self, *args, **kwargs)
        finally:
            if is_grad_enabled() != enabled:
                _set_enabled(enabled)


class LoadedScriptFunction(_Loaded):
    """A function loaded by `ember.jit.load`: callable, with ``.graph``, ``.code``, ``.schema``."""

    def __init__(self, name: str, graph, schema: Signature):
        self._init_loaded(name, graph, schema)

    def __repr__(self):
        return f"<ember.jit loaded ScriptFunction {self.name}>"


class LoadedScriptMethod(_Loaded):
    """A method of a loaded module; calling it passes the module as ``self``."""

    _skip = 1

    def __init__(self, owner, name: str, graph, schema: Signature):
        self.owner = owner
        self._init_loaded(name, graph, schema)

    @property
    def _receiver(self) -> tuple:
        return (self.owner,)


def _module_base():
    from .frontend.modules import ScriptModule   # a loaded module is an ember.jit.ScriptModule
    return ScriptModule


class LoadedScriptModule(_module_base()):
    """A module loaded by `ember.jit.load`: the saved parameters, buffers, attributes and
    submodules; ``forward`` (and every other saved method, as an attribute) runs its graph."""

    def __init__(self, original_name: str):
        super().__init__()
        self.__dict__["original_name"] = original_name
        self.__dict__["_methods"] = {}

    def __getattr__(self, name):
        methods = self.__dict__.get("_methods", {})
        if name in methods:
            return methods[name]
        return super().__getattr__(name)

    def _forward_method(self):
        method = self._methods.get("forward")
        if method is None:
            raise RuntimeError(f"ember.jit.load: module {self.original_name} was saved without a forward method")
        return method

    def forward(self, *args, **kwargs):
        return self._forward_method()(*args, **kwargs)
