"""Scripting ``nn.Module``s: attribute typing, methods, submodules (TorchScript's recursive scripting).

    scripted = ember.jit.script(MyModule())     # -> RecursiveScriptModule (an ember.nn.Module)
    scripted(x)                                  # runs forward's graph through the GraphExecutor
    print(scripted.graph)                        # %self.1 : __torch__.MyModule, prim::GetAttr[name="w"](%self.1)

``script_module(m)`` builds a ``RecursiveScriptModule`` for `m` and its children. It SHARES the
original's parameters and buffers (scripting copies no weights, like torch); plain attributes are
copied (lists/dicts shallowly). The frontend asks each module's ``ModuleInfo`` what ``self.<name>``
is (``attribute`` -> ``AttrInfo``) and for its compiled methods (``method``). At run time a method's
graph gets the scripted module as input 0 and ``prim::GetAttr`` reads it, so ``scripted.eval()`` /
``scripted.n = 5`` are seen by the next call; what compiled code folded in cannot change (see
``RecursiveScriptModule.__setattr__``).

Choices where the spec leaves room (documented for the lead):
- Submodule methods compile when something calls them (torch compiles every child's forward), so an
  unused child whose forward is not scriptable does not stop scripting.
- A parameter or buffer that is None is typed ``NoneType``, as torch does (the brief said
  Optional[Tensor]; NoneType lets ``if self.bias is not None: y = y + self.bias`` compile,
  because the frontend folds the test, while Optional would need a local to refine).
- ``__constants__`` / ``Final`` attributes are constants (lists become tuples, as in torch).
- ``@ember.jit.unused`` methods compile to a body that raises, as torch does, so the module still
  scripts and saves; ember's own layers whose forward is outside the language get a stand-in
  (module_builtins.py).
"""
from __future__ import annotations

import copy
import inspect
import typing
from dataclasses import dataclass
from typing import Any

from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.module import Module

from .._callable import CompiledGraphCallable
from ..ir.types import (DictType, ListType, ModuleType, NoneType, TensorType, TupleType, from_annotation,
                        type_of_value)
from .module_builtins import (needs_check, script_forward_for, sequential_forward, traced_forward,
                              unused_method_builder)

__all__ = ["AttrInfo", "ModuleInfo", "ScriptModule", "RecursiveScriptModule", "script_module", "export"]


@dataclass
class AttrInfo:
    """What ``self.<name>`` is, for the frontend (see the module docstring)."""
    kind: str  # "parameter" | "buffer" | "attribute" | "constant" | "module" | "modulelist" | "method" | "ignored"
    type: Any
    value: Any = None
    module_info: Any = None
    items: list | None = None   # (name, AttrInfo) of a ModuleList's / Sequential's children
    method: Any = None


def export(fn):
    """Decorator: compile this method when its module is scripted (as torch.jit.export).

        class M(nn.Module):
            @ember.jit.export
            def predict(self, x): ...
    """
    fn._ember_jit_modifier = "export"
    return fn


def qualified_name_of(cls) -> str:
    """``__torch__.<this>``: ember's own classes by their full path (as torch prints
    ``__torch__.torch.nn.modules.linear.Linear``), user classes by their name (``__torch__.MyModule``,
    and the ``Module 'MyModule' has no attribute`` errors name the class as torch does)."""
    mod = getattr(cls, "__module__", "") or ""
    return f"{mod}.{cls.__name__}" if mod.startswith("ember.") else cls.__name__


# Module's own bookkeeping, never script attributes.
_INTERNAL = {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_forward_pre_hooks",
             "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
             "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
             "_load_state_dict_pre_hooks", "_version", "__annotations__"}


class ModuleInfo:
    """The frontend's view of one scripted module: typed attributes and compiled methods."""

    def __init__(self, module: Module, scripted: "RecursiveScriptModule"):
        self.module = module
        self.scripted = scripted
        self.qualified_name = qualified_name_of(type(module))
        traced_type = module.__dict__.get("_self_type") if _is_traced(module) else None
        if isinstance(traced_type, str):  # a traced module is typed as the class it traced
            path = traced_type.replace("__torch__.", "", 1)
            self.qualified_name = path if path.startswith("ember.") else path.rsplit(".", 1)[-1]
        self.type = ModuleType(self.qualified_name)
        self._attrs: dict = {}
        self._methods: dict = {}
        self._compiling: list = []
        self._failures: dict = {}

    def __repr__(self):
        return f"ModuleInfo({self.qualified_name})"

    # -- attributes -------------------------------------------------------------------------
    def attribute(self, name: str) -> AttrInfo | None:
        """What ``self.<name>`` is in script, or None (see ``missing_attribute_message``)."""
        if name not in self._attrs:
            self._attrs[name] = self._resolve(name)
        return self._attrs[name]

    def missing_attribute_message(self, name: str) -> str:
        """torch's message for an attribute script cannot see:
        ``Module 'X' has no attribute 'foo'`` plus why, when the Python module does have it."""
        msg = f"Module '{type(self.module).__name__}' has no attribute '{name}'"
        why = self._failures.get(name)
        return f"{msg} ({why})" if why else msg

    def _resolve(self, name: str) -> AttrInfo | None:
        m = self.module
        if name in m._parameters or name in m._buffers:
            kind = "parameter" if name in m._parameters else "buffer"
            value = self.scripted._parameters.get(name) if kind == "parameter" else self.scripted._buffers.get(name)
            # None is typed NoneType, as torch does: `if self.bias is not None:` then folds statically
            return AttrInfo(kind, TensorType() if value is not None else NoneType(), value)
        if name in m._modules:
            return self._module_attr(name)
        constants = _constants_of(type(m))
        annotations = _annotations_of(m)
        if name in constants:
            value = getattr(m, name)
            if isinstance(value, list):
                value = tuple(value)
            try:
                type_ = from_annotation(annotations[name], _globals_of(m)) if name in annotations \
                    and not _is_final(annotations[name]) else type_of_value(value)
            except ValueError as exc:
                raise TypeError(f"Module '{type(m).__name__}': constant '{name}' = {value!r} has no script "
                                f"type ({exc})") from None
            return AttrInfo("constant", type_, value)
        if name in m.__dict__ and name not in _INTERNAL:
            value = self.scripted.__dict__.get(name, m.__dict__[name])
            try:
                if name in annotations:
                    type_ = from_annotation(annotations[name], _globals_of(m))
                    _check_annotated(name, value, type_)
                else:
                    type_ = type_of_value(value)
            except ValueError as exc:
                self._failures[name] = (
                    f"This attribute exists on the Python module, but we failed to convert Python type: "
                    f"'{type(value).__name__}' to a TorchScript type. {exc}. "
                    + ("" if name in annotations else "Its type was inferred; try adding a type annotation for "
                       "the attribute."))
                return None
            return AttrInfo("attribute", type_, value)
        if name in annotations and name not in _INTERNAL:
            self._failures[name] = "it is annotated on the class but has no value on the instance"
            return None
        return self._method_attr(name)

    def _module_attr(self, name: str) -> AttrInfo:
        child = self.scripted._modules.get(name)
        if child is None:
            return AttrInfo("constant", type_of_value(None), None)
        info = child._info
        items = None
        if isinstance(info.module, (ModuleList, Sequential)):
            items = [(k, info.attribute(k)) for k in info.module._modules]
        kind = "modulelist" if isinstance(info.module, ModuleList) else "module"
        return AttrInfo(kind, info.type, child, module_info=info, items=items)

    def _method_attr(self, name: str) -> AttrInfo | None:
        cls = type(self.module)
        try:
            fn = inspect.getattr_static(cls, name)
        except AttributeError:
            return None
        if isinstance(fn, (staticmethod, classmethod, property)) or not inspect.isfunction(fn):
            if not name.startswith("__"):
                self._failures[name] = f"it is a {type(fn).__name__} of the class, which script does not support"
            return None
        if getattr(fn, "_ember_jit_modifier", None) == "ignore":
            return AttrInfo("ignored", None, fn, method=fn)
        if _defined_on_base(cls, name):
            self._failures[name] = f"'{name}' is a method of ember.nn.Module, which script does not support"
            return None
        method = self.method(name)
        return AttrInfo("method", None, method, method=method)

    # -- methods ----------------------------------------------------------------------------
    def method(self, name: str) -> ScriptMethod:
        """The ScriptMethod `name`, compiled on first use and cached (RuntimeError on recursion)."""
        if name in self._methods:
            return self._methods[name]
        if name in self._compiling:
            chain = " -> ".join(self._compiling + [name])
            raise RuntimeError(f"{self.qualified_name}: recursive method calls are not supported in script "
                               f"({chain})")
        self._compiling.append(name)
        try:
            method = self._compile(name)
        finally:
            self._compiling.pop()
        self._methods[name] = method
        return method

    def _compile(self, name: str) -> ScriptMethod:
        cls = type(self.module)
        if name == "forward":
            fn, builder = self._forward_source()
            why = needs_check(cls, fn) if (fn, builder) != (None, None) else "it does not define forward"
            if why is not None:
                from .errors import FrontendError
                raise FrontendError(None, None, f"cannot script module class '{qualified_name_of(cls)}': {why}")
            return ScriptMethod(self, name, fn=fn, builder=builder)
        fn = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(fn):
            raise AttributeError(self.missing_attribute_message(name))
        if getattr(fn, "_ember_jit_modifier", None) == "unused":  # compiled as a body that raises, like torch
            return ScriptMethod(self, name, fn=fn, builder=unused_method_builder(fn))
        return ScriptMethod(self, name, fn=fn)

    def _forward_source(self) -> tuple:
        """``(function, graph builder)`` forward compiles from, one of them None; (None, None) when
        the module has no forward (nor a builtin one from module_builtins)."""
        if isinstance(self.module, Sequential):
            return None, sequential_forward
        if _is_traced(self.module):
            return None, traced_forward
        fn = script_forward_for(type(self.module)) or getattr(type(self.module), "forward", None)
        return (None if getattr(fn, "__name__", "") == "_forward_unimplemented" else fn), None

    def has_forward(self) -> bool:
        return self._forward_source() != (None, None)

    def exported_names(self) -> list:
        """Names of the class's ``@ember.jit.export`` methods."""
        names = []
        for klass in reversed(type(self.module).__mro__):
            for key, value in vars(klass).items():
                if getattr(value, "_ember_jit_modifier", None) == "export" and inspect.isfunction(value) \
                        and key not in names:
                    names.append(key)
        return names


class ScriptMethod(CompiledGraphCallable):
    """A compiled method of a scripted module: ``.graph`` (inlined, printable), ``.code``
    (from the un-inlined graph, like TorchScript), ``.schema``, ``._graph`` (the un-inlined fx
    Graph, which the executor runs), ``graph_for(*args)``; calling it runs it."""

    _skip = 1   # the module: passed as input 0, not by the caller

    def __init__(self, owner, name: str, fn=None, builder=None):
        self.owner = owner          # the ModuleInfo
        self.original_fn = fn
        if builder is not None:
            graph, schema = builder(owner)
        else:
            from .to_ir import compile_function
            graph, schema = compile_function(fn, self_info=owner, name=name)
        self._graph = graph
        self._init_callable(name, schema)

    def __repr__(self):
        return f"<ScriptMethod {self.owner.qualified_name}.{self.name}>"

    @property
    def _graph_uninlined(self):
        return self._graph

    @property
    def _receiver(self) -> tuple:
        return (self.owner.scripted,)


def _is_traced(module) -> bool:
    from .._trace import TopLevelTracedModule
    return isinstance(module, TopLevelTracedModule)


def _check_annotated(name: str, value, type_) -> None:
    """torch's ``Could not cast attribute 'n' to type int`` for a value that does not fit its annotation."""
    try:
        actual = type_of_value(value)
    except ValueError:
        return  # empty containers etc.: the annotation is what gives them a type
    if actual.is_subtype_of(type_):
        return
    if isinstance(actual, (ListType, DictType, TupleType)) and type(actual) is type(type_):
        return  # containers: element types are taken from the annotation (checked loosely)
    raise RuntimeError(f"Could not cast attribute '{name}' to type {type_}: the value {value!r} has type {actual}")


def _constants_of(cls) -> set:
    names = set()
    for klass in cls.__mro__:
        names.update(getattr(klass, "__constants__", ()) or ())
        for key, ann in vars(klass).get("__annotations__", {}).items():
            if _is_final(ann):
                names.add(key)
    return names


def _is_final(annotation) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith(("Final", "typing.Final", "ember.jit.Final"))
    return annotation is typing.Final or typing.get_origin(annotation) is typing.Final


def _globals_of(module) -> dict:
    """The namespace string annotations of `module`'s class are read in (its Python module)."""
    import sys
    mod = sys.modules.get(type(module).__module__)
    return dict(vars(mod)) if mod is not None else {}


def _annotations_of(module) -> dict:
    """Class-level annotations (most derived wins) plus the instance's ``__annotations__``."""
    result: dict = {}
    for klass in reversed(type(module).__mro__):
        if klass is Module or klass is object:
            continue
        result.update(vars(klass).get("__annotations__", {}))
    result.update(module.__dict__.get("__annotations__", {}))
    return result


def _defined_on_base(cls, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass is Module
    return False


# ---------------------------------------------------------------------------------------------
# the scripted module objects
# ---------------------------------------------------------------------------------------------
class _ForwardView:
    """A read-only view of one property of the compiled forward (see ScriptModule)."""

    def __init__(self, attr: str, doc: str):
        self.attr, self.__doc__ = attr, doc

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj._forward_method(), self.attr)


class ScriptModule(Module):
    """Public base of scripted modules (``isinstance(m, ember.jit.ScriptModule)``): scripted ones
    (RecursiveScriptModule) and loaded ones (``ember.jit.load``), which show their forward's
    graph, code and schema; a subclass says where its forward is (`_forward_method`)."""

    # Non-data descriptors, so a user attribute of the same name (a GNN's ``self.graph``) wins,
    # both for Python access and for prim::GetAttr at run time.
    graph = _ForwardView("graph", "forward's graph (inlined; TorchScript-style when printed)")
    inlined_graph = _ForwardView("graph", "forward's graph (inlined)")
    code = _ForwardView("code", "forward's code, rebuilt from the IR")
    schema = _ForwardView("schema", "forward's Signature")

    def _forward_method(self):
        raise NotImplementedError

    def graph_for(self, *args, **kwargs):
        """forward's optimised graph for these inputs."""
        return self._forward_method().graph_for(*args, **kwargs)

    def _get_name(self) -> str:
        return "RecursiveScriptModule"

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


class RecursiveScriptModule(ScriptModule):
    """A scripted nn.Module: the original's parameters/buffers (shared), scripted children, typed
    attributes and compiled methods. ``forward`` runs the compiled graph through the executor."""

    @property
    def forward(self):
        """The compiled forward (a ScriptMethod, bound to this module: call it, or read ``.graph``)."""
        return self._info.method("forward")

    def _forward_method(self):
        return self._info.method("forward")

    def save(self, path_or_buffer, **kwargs):
        """``ember.jit.save(self, path_or_buffer)``."""
        import ember.jit
        return ember.jit.save(self, path_or_buffer, **kwargs)

    def __getattr__(self, name):
        try:
            return Module.__getattr__(self, name)
        except AttributeError:
            pass
        info = self.__dict__.get("_info")
        if info is not None and not name.startswith("__"):
            if name in info._methods:
                return info._methods[name]
            attr = info.attribute(name) if name != "forward" else None
            if attr is not None and attr.kind == "method":
                return attr.method
            if attr is not None and attr.kind == "ignored":
                return attr.method.__get__(self, type(self))
        raise AttributeError(f"'RecursiveScriptModule' object has no attribute '{name}'")

    def __dir__(self):
        info = self.__dict__.get("_info")
        return super().__dir__() + (list(info._methods) if info is not None else [])

    def __setattr__(self, name, value):
        # compiled code folded constants and None-typed attributes (`if self.bias is not None`);
        # a new value there would be silently ignored, so refuse it as torch does
        info = self.__dict__.get("_info")
        attr = info._attrs.get(name) if info is not None else None
        if attr is not None:
            refused = _folded_change(attr, value)
            if refused == "constant":
                raise AttributeError(f"cannot set constant '{name}' of scripted module "
                                     f"'{info.qualified_name}': compiled code uses its value {attr.value!r}")
            if refused == "None":
                raise TypeError(f"cannot set attribute '{name}' of scripted module '{info.qualified_name}' to a "
                                f"'{type(value).__name__}': it was None when scripted (type NoneType) and compiled "
                                f"code assumes it stays None")
            if refused == "tuple":
                raise TypeError(f"cannot set attribute '{name}' of scripted module '{info.qualified_name}' to "
                                f"{value!r}: compiled code assumes a tuple of {len(attr.type.elems)} elements")
            if attr.kind in ("module", "modulelist") and value is not attr.value:
                why = _swap_mismatch(attr.module_info, value)
                if why is not None:
                    raise TypeError(f"cannot replace submodule '{name}' of scripted module "
                                    f"'{info.qualified_name}' with this '{type(value).__name__}': compiled code "
                                    f"inlined the '{type(attr.module_info.module).__name__}' it had when "
                                    f"scripted ({why})")
        super().__setattr__(name, value)

    def __deepcopy__(self, memo):
        """A deep copy, scripted again: graphs are rebuilt for the copy (they name their module),
        tensors and attributes are copied from this scripted module's current state."""
        # (path, scripted module, its original) down the tree: the scripted tree mirrors the
        # original's, so a path names the matching module of the copy too
        pairs = [(path, sub, sub._info.module) for path, sub in self.named_modules() if "_info" in sub.__dict__]
        for _, scripted, orig in pairs:  # the copy starts from the scripted side's tensors
            for store in ("_parameters", "_buffers"):
                for name, t in getattr(scripted, store).items():
                    old = getattr(orig, store).get(name)
                    if old is not None and t is not None and id(old) not in memo:
                        memo[id(old)] = copy.deepcopy(t, memo)
        clone = copy.deepcopy(self._info.module, memo)
        for path, scripted, _ in pairs:
            new = clone.get_submodule(path)
            for key, value in scripted.__dict__.items():
                if key in new.__dict__ and key not in _INTERNAL and key not in ("_info", "original_name"):
                    new.__dict__[key] = copy.deepcopy(value, memo)
        return script_module(clone)

    def __getstate__(self):
        raise TypeError("a RecursiveScriptModule cannot be pickled; use ember.jit.save / ember.jit.load")


def _swap_mismatch(old_info: ModuleInfo, new) -> str | None:
    """Why module `new` cannot stand in for the scripted child `old_info` describes (its class
    differs, or an attribute compiled code folded -- a constant, a None -- differs), or None."""
    new_info = new.__dict__.get("_info") if isinstance(new, RecursiveScriptModule) else None
    new_cls = type(new_info.module) if new_info is not None else type(new)
    if new_cls is not type(old_info.module):
        return "a different class"
    for name, attr in old_info._attrs.items():
        if attr is None:
            continue
        value = getattr(new, name, None)
        if attr.kind in ("module", "modulelist"):
            why = None if value is attr.value else (
                _swap_mismatch(attr.module_info, value) if value is not None else "it is None")
            if why is not None:
                return f"submodule '{name}': {why}"
        elif _folded_change(attr, value) is not None:
            return f"'{name}' differs from the value compiled in"
    return None


def _folded_change(attr: AttrInfo, value) -> str | None:
    """What setting an attribute to `value` would change that compiled code folded in, so would
    silently ignore: "constant" (another value), "None" (a value for a None), "tuple" (another
    length: loops over it were unrolled), or None when nothing."""
    if attr.kind == "constant" and not (value is attr.value or _same_constant(value, attr.value)):
        return "constant"
    if isinstance(attr.type, NoneType) and value is not None:
        return "None"
    if isinstance(attr.type, TupleType) and not (isinstance(value, tuple) and len(value) == len(attr.type.elems)):
        return "tuple"
    return None


def _same_constant(a, b) -> bool:
    """A constant re-set to an equal value (a list for a tuple-typed constant too)."""
    if isinstance(a, list):
        a = tuple(a)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # e.g. a Tensor comparison: not the same constant
        return False


def _build(module: Module, memo: dict) -> RecursiveScriptModule:
    if id(module) in memo:
        return memo[id(module)]
    scripted = RecursiveScriptModule.__new__(RecursiveScriptModule)
    Module.__init__(scripted)
    memo[id(module)] = scripted
    d = scripted.__dict__
    for name, value in module.__dict__.items():
        if name in _INTERNAL or name in ("training",):
            continue
        d[name] = copy.copy(value) if isinstance(value, (list, dict)) else value
    d["training"] = module.training
    d["original_name"] = module.__dict__.get("original_name", type(module).__name__)
    scripted._parameters.update(module._parameters)
    scripted._buffers.update(module._buffers)
    scripted._non_persistent_buffers_set.update(module._non_persistent_buffers_set)
    for name, child in module._modules.items():
        scripted._modules[name] = None if child is None else (
            child if isinstance(child, ScriptModule) else _build(child, memo))
    d["_info"] = ModuleInfo(module, scripted)
    return scripted


def script_module(module: Module) -> RecursiveScriptModule:
    """Script `module` recursively (what ``ember.jit.script`` does for an nn.Module).

    Compiles ``forward`` (when defined) and ``@ember.jit.export`` methods now, so errors show at
    scripting time; methods they call and submodules' methods compile as they are reached."""
    if isinstance(module, ScriptModule):
        return module
    if isinstance(module, type):
        raise TypeError(f"ember.jit.script: pass an instance of {module.__name__}, not the class itself")
    if not isinstance(module, Module):
        raise TypeError(f"script_module: expected an ember.nn.Module, got {type(module).__name__}")
    scripted = _build(module, {})
    info = scripted._info
    if info.has_forward():
        info.method("forward")
    for name in info.exported_names():
        info.method(name)
    return scripted
