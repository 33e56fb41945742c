"""ember.library: define new operators from a schema and register kernels per dispatch key,
like ``torch.library`` (define, impl, register_fake, register_autograd, custom_op). A user-defined op goes through the same dispatcher as built-in ones
(profiler, tracer, autograd, meta), and is callable as ``ember.ops.<ns>.<name>``.

    lib = ember.library.Library("mylib", "DEF")
    lib.define("scale(Tensor x, float factor) -> Tensor")
    lib.impl("scale", lambda x, factor: x * factor, "CPU")
    ember.ops.mylib.scale(t, 2.0)

    @ember.library.custom_op("mylib::twice", mutates_args=())
    def twice(x: ember.Tensor) -> ember.Tensor:
        return x * 2
    @twice.register_fake
    def _(x):
        return ember.empty_like(x)
"""
from __future__ import annotations

import inspect
import typing

from ._core.dispatch import DispatchKey, register_fallback, FALLTHROUGH
from ._core.schema import parse_schema
from .ops import registry

_KEY_ALIASES = {
    "CPU": [DispatchKey.CPU], "CUDA": [DispatchKey.CUDA], "Meta": [DispatchKey.Meta],
    "Autograd": [DispatchKey.Autograd], "AutogradCPU": [DispatchKey.Autograd],
    "AutogradCUDA": [DispatchKey.Autograd], "Python": [DispatchKey.Python],
    "Profiler": [DispatchKey.Profiler], "Tracer": [DispatchKey.Tracer],
    "ADInplaceOrView": [DispatchKey.ADInplaceOrView], "Functionalize": [DispatchKey.Functionalize],
    "CompositeExplicitAutograd": [DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta],
}
_COMPOSITE = "CompositeImplicitAutograd"
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}


def _keys(dispatch_key: str):
    if dispatch_key == _COMPOSITE or dispatch_key == "":
        return None
    try:
        return _KEY_ALIASES[dispatch_key]
    except KeyError:
        raise ValueError(f"unknown dispatch key {dispatch_key!r}; expected one of "
                         f"{sorted(_KEY_ALIASES) + [_COMPOSITE]}") from None


def _find(ns: str, name: str):
    """The OperatorHandle for ``name`` or ``name.overload`` in namespace `ns`."""
    qual = name if "." in name else name + ""
    handle = registry.OPERATORS.get(f"{ns}::{qual}")
    if handle is None:
        raise RuntimeError(f"operator {ns}::{name} does not exist; define() it first")
    return handle


class Library:
    """A set of registrations in one namespace: kind "DEF" (new ops), "IMPL" (kernels for ops
    defined elsewhere) or "FRAGMENT". ``_destroy()`` undoes every registration it made."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Library(): kind must be DEF, IMPL or FRAGMENT, got {kind!r}")
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._registrations = []   # (handle, key) to undo
        self._defined = []

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Declare an operator from a schema string; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError("define(): a Library of kind IMPL cannot define operators")
        parsed = parse_schema(schema)
        handle = registry._make_handle(parsed, self.ns)
        entry = registry.Op(schema)
        handle.entry = registry._binding(handle, parsed.name, entry)
        registry.ENTRIES[handle.name] = entry
        self._defined.append(handle)
        return parsed.name

    def impl(self, op_name, fn, dispatch_key: str = ""):
        """Register `fn` for `op_name` under `dispatch_key` ("CPU", "Meta", "Autograd", ...,
        or "CompositeImplicitAutograd": one kernel in ember ops for every backend)."""
        dispatch_key = dispatch_key or self.dispatch_key or _COMPOSITE
        handle = op_name if isinstance(op_name, registry.OperatorHandle) else _find(self.ns, op_name)
        keys = _keys(dispatch_key)
        if keys is None:
            handle.composite = fn
            handle._refresh()
            self._registrations.append((handle, None))
            return
        for key in keys:
            if key in handle.kernels and handle.kernels[key] is not FALLTHROUGH:
                raise RuntimeError(f"impl(): {handle.name} already has a kernel for {key.name}")
            handle.register(key, fn)
            self._registrations.append((handle, key))

    def fallback(self, fn, dispatch_key: str = ""):
        """A boxed kernel ``fn(op, key_set, *args)`` for every operator under one key."""
        keys = _keys(dispatch_key or self.dispatch_key)
        for key in keys:
            register_fallback(key, fn)
            self._registrations.append(("fallback", key))

    def _destroy(self):
        for handle, key in reversed(self._registrations):
            if handle == "fallback":
                register_fallback(key, None)
            elif key is None:
                handle.composite = None
                handle._refresh()
            else:
                handle.deregister(key)
        self._registrations.clear()
        for handle in self._defined:
            registry.OPERATORS.pop(handle.name, None)
            packet = registry._namespace_for(self.ns).__dict__.get(handle.schema.name)
            if packet is not None:
                packet._overloads.pop(handle.schema.overload_name or "default", None)
                if not packet._overloads:
                    delattr(registry._namespace_for(self.ns), handle.schema.name)
        self._defined.clear()


_libraries: dict = {}


def _lib(ns):
    if ns not in _libraries:
        _libraries[ns] = Library(ns, "FRAGMENT")
    return _libraries[ns]


def define(qualname: str, schema: str, *, lib=None, tags=()):
    """``define("mylib::foo", "(Tensor x) -> Tensor")``"""
    ns, name = qualname.split("::")
    (lib or _lib(ns)).define(name + schema)


def impl(qualname: str, types="CompositeImplicitAutograd", func=None, *, lib=None):
    """Register a kernel: ``impl("mylib::foo", "cpu", fn)`` or as a decorator."""
    ns, name = qualname.split("::")
    keys = [types] if isinstance(types, str) else list(types)

    def register(fn):
        for k in keys:
            (lib or _lib(ns)).impl(name, fn, _DEVICE_KEYS.get(k, k))
        return fn
    return register(func) if func is not None else register


def register_fake(qualname: str, func=None, *, lib=None):
    """Register the Meta (shape-only) kernel of an op, like ``torch.library.register_fake``."""
    return impl(qualname, "Meta", func, lib=lib)


_FORMULA_NAMES = ("grads", "results", "needs_grad")     # what the formula of register_autograd asks for


def register_autograd(op, backward, *, setup_context=None, lib=None):
    """Give an operator a derivative, like ``torch.library.register_autograd``: after the op ran,
    ``setup_context(ctx, inputs, output)`` saves what ``backward(ctx, *grads)`` needs; backward
    returns one gradient per input (None for non-Tensor inputs). It becomes the op's Autograd
    kernel (a derivative formula, ember/autograd/kernel.py), so it runs under the dispatcher, is
    recorded by AOT autograd like a built-in op's derivative, and double backward works when
    backward is written in ember ops."""
    from .autograd.function import FunctionCtx
    from .autograd.kernel import Formula, make_kernel
    qualname = op._qualname if isinstance(op, CustomOpDef) else op
    ns, name = qualname.split("::")
    handle = _find(ns, name)
    arguments = handle.schema.arguments
    names = [a.name for a in arguments]
    clash = sorted(set(names) & set(_FORMULA_NAMES))
    if clash:
        raise ValueError(f"register_autograd(): {qualname} has arguments named {clash}; rename them")
    single = len(handle.schema.returns) == 1

    def formula(**kw):
        ctx = FunctionCtx()
        needs = iter(kw["needs_grad"])
        ctx.needs_input_grad = tuple(next(needs) if a.type == "Tensor" else False for a in arguments)
        inputs = tuple(kw[n] for n in names)
        if setup_context is not None:
            setup_context(ctx, inputs, kw["results"][0] if single else tuple(kw["results"]))
        grads = backward(ctx, *kw["grads"])
        grads = tuple(grads) if isinstance(grads, (tuple, list)) and len(names) > 1 else (grads,)
        if len(grads) != len(names):
            raise RuntimeError(f"{qualname}: backward returned {len(grads)} gradients, expected {len(names)} "
                               "(one per input, None for non-Tensor inputs)")
        return tuple(g for g, a in zip(grads, arguments) if a.type == "Tensor")
    # the formula's parameter names say what the Autograd kernel passes it (all inputs and outputs)
    formula.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in (*_FORMULA_NAMES, *names)])
    kernel = make_kernel(handle, Formula(formula))
    (lib or _lib(ns)).impl(name, kernel, "Autograd")


_TYPE_NAMES = {"Tensor": "Tensor", "int": "int", "float": "float", "bool": "bool", "str": "str"}


def infer_schema(fn, mutates_args=()) -> str:
    """A schema from type annotations: ``def f(x: Tensor, n: int = 2) -> Tensor``."""
    from ._core.tensor import Tensor
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)

    def type_name(t, name):
        if t is Tensor:
            return "Tensor(a!)" if name in mutates_args else "Tensor"
        origin = typing.get_origin(t)
        if origin in (list, typing.List) and typing.get_args(t) and typing.get_args(t)[0] is Tensor:
            return "Tensor[]"
        if origin in (list, typing.List):
            return "int[]"
        if origin is typing.Union and type(None) in typing.get_args(t):
            inner = [a for a in typing.get_args(t) if a is not type(None)][0]
            return type_name(inner, name) + "?"
        if isinstance(t, type) and t.__name__ in _TYPE_NAMES:
            return _TYPE_NAMES[t.__name__]
        raise ValueError(f"infer_schema(): unsupported annotation {t!r} for '{name}'")

    args = []
    for p in sig.parameters.values():
        if p.name not in hints:
            raise ValueError(f"infer_schema(): parameter '{p.name}' needs a type annotation")
        s = f"{type_name(hints[p.name], p.name)} {p.name}"
        if p.default is not inspect.Parameter.empty:
            s += f"={p.default!r}"
        args.append(s)
    ret = hints.get("return")
    if ret is None or ret is type(None):
        rs = "()"
    elif typing.get_origin(ret) is tuple:
        rs = "(" + ", ".join(type_name(r, "") for r in typing.get_args(ret)) + ")"
    else:
        rs = type_name(ret, "")
    return f"({', '.join(args)}) -> {rs}"


class CustomOpDef:
    """What ``@custom_op`` returns: call it like the function; add kernels to it."""

    def __init__(self, qualname, fn, schema, device_types):
        self._qualname = qualname
        ns, name = qualname.split("::")
        define(qualname, schema)
        self._handle = _find(ns, name)
        keys = [device_types] if isinstance(device_types, str) else (device_types or ["cpu", "cuda"])
        for d in keys:
            impl(qualname, d, fn)
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def register_fake(self, fn):
        register_fake(self._qualname, fn)
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        register_autograd(self, backward, setup_context=setup_context)

    def register_kernel(self, device_types, fn=None):
        def register(f):
            impl(self._qualname, device_types, f)
            return f
        return register(fn) if fn is not None else register

    def __call__(self, *args, **kwargs):
        return self._handle(*args, **kwargs)


def custom_op(name, fn=None, *, mutates_args=(), device_types=None, schema=None):
    """Turn a Python function into an operator ``ember.ops.<ns>.<name>`` (see module docstring)."""
    if mutates_args == "unknown":
        raise ValueError("custom_op(): mutates_args must be declared (use () for none)")

    def wrap(f):
        return CustomOpDef(name, f, schema or infer_schema(f, mutates_args), device_types)
    return wrap(fn) if fn is not None else wrap
