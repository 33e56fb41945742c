"""symbolic_trace: run a function or Module on Proxies and record what it does into a Graph.

    >>> def f(x):
    ...     return ember.sigmoid(x).neg()
    >>> gm = ember.fx.symbolic_trace(f)
    >>> print(gm.graph)        # placeholder x, call_function ember.sigmoid, call_method neg, output

How calls are seen. ember's bindings have no ``__torch_function__`` hook, so while a trace runs
the public callables of ember's namespaces (``ember``, ``ember.nn.functional``, ``ember.linalg``,
``ember.special``), the functions registered with ``wrap`` and the ember functions the traced
code imported by name (``from ember import sigmoid``) are swapped for thin wrappers: a call whose
arguments hold a Proxy records ``call_function`` with the *original* function as target (so
``node.target is ember.sigmoid``); any other call runs the original. ``Module.__call__`` and
``Module.__getattr__`` are swapped too, so leaf modules become ``call_module`` nodes and
parameters become ``get_attr`` nodes. The patch table is built once and applied/undone as two
dict updates; eager code outside a trace never sees a wrapper.
"""
from __future__ import annotations

import builtins
import inspect
import math
import os
import sys
import threading
import types

from .proxy import Proxy, ParameterProxy, format_frames, _EMBER_DIR
from .node import Node
from .graph import Graph
from .graph_module import GraphModule

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase"]

_FX_DIR = _EMBER_DIR + "fx" + os.sep
_MODULE_FILE = _EMBER_DIR + os.path.join("nn", "modules", "module.py")
_tls = threading.local()          # .tracers: the stack of Tracers running in this thread


class PHBase:
    """A concrete_args value that stays a placeholder (``concrete_args={"x": PH}``)."""

    def __repr__(self):
        return "PH"


PH = PHBase()


# -- the patch table ---------------------------------------------------------------------------
def _find_proxy(args, kwargs):
    """The first Proxy in (nested tuples/lists/dicts of) args and kwargs, or None."""
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            stack.extend(a.values())
        elif isinstance(a, slice):
            stack.extend((a.start, a.stop, a.step))
    return None


def _recording_wrapper(orig):
    """`orig`, except that a call with a Proxy in its arguments records call_function(orig)."""
    def wrapper(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__qualname__ = getattr(orig, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper.__wrapped__ = orig
    wrapper.__fx_recording__ = True
    return wrapper


# Public ember callables that must run (not be recorded) even on Proxies, or take no tensors.
_NOT_RECORDED = frozenset({
    "is_tensor", "save", "load", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "set_default_dtype", "get_default_dtype", "set_printoptions", "get_printoptions", "printoptions",
    "is_grad_enabled", "set_grad_enabled", "no_grad", "enable_grad", "inference_mode",
    "is_inference_mode_enabled", "promote_types", "can_cast", "finfo", "iinfo", "compile",
})
_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")
_TABLE = None      # [(namespace dict, name, original, wrapper)], built on first trace
_BY_ID = None      # id(original) -> wrapper, to patch names imported into user globals
_active = 0        # how many traces (any thread) have the table applied
_lock = threading.Lock()


def _patch_table():
    global _TABLE, _BY_ID
    if _TABLE is None:
        table, by_id = [], {}
        for ns_name in _NAMESPACES:
            ns = sys.modules.get(ns_name)
            if ns is None:
                continue
            d = vars(ns)
            for name, value in list(d.items()):
                if (name.startswith("_") or name in _NOT_RECORDED or isinstance(value, type)
                        or not isinstance(value, (types.FunctionType, types.BuiltinFunctionType))):
                    continue
                wrapper = by_id.get(id(value)) or _recording_wrapper(value)
                by_id[id(value)] = wrapper
                table.append((d, name, value, wrapper))
        _TABLE, _BY_ID = table, by_id
    return _TABLE


def _apply_table():
    global _active
    with _lock:
        if _active == 0:
            for d, name, _orig, wrapper in _patch_table():
                d[name] = wrapper
        _active += 1


def _undo_table():
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            for d, name, orig, _wrapper in _TABLE:
                d[name] = orig


# wrap(): (id(globals), name) -> globals dict whose `name` is recorded as one opaque call
_wrapped_globals: dict = {}
_wrapped_functions: dict = {}     # id(fn) -> fn, for wrap(fn) found under another name


def wrap(fn_or_name):
    """Keep a module-level function opaque: calls to it on Proxies record one call_function node.

    Call at module scope, with the function or its name (also usable as a decorator):

        @ember.fx.wrap
        def clamp_rows(x):            # has data-dependent control flow inside
            ...
        ember.fx.wrap("len")          # record len(proxy) instead of failing
    """
    if isinstance(fn_or_name, str):
        name = fn_or_name
    elif callable(fn_or_name):
        name = fn_or_name.__name__
        _wrapped_functions[id(fn_or_name)] = fn_or_name
    else:
        raise TypeError(f"wrap(): expected a function or the name of a global function, got "
                        f"{type(fn_or_name).__name__}")
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap(): must be called at the top level of a module")
    _wrapped_globals[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


class _Patcher:
    """Swaps dict entries / class attributes for the duration of a trace and restores them all."""

    _MISSING = object()

    def __init__(self):
        self.saved = []             # (dict-like target, name, previous value or _MISSING, is_class)
        self.seen_globals = set()

    def set_item(self, d, name, value):
        self.saved.append((d, name, d.get(name, self._MISSING), False))
        d[name] = value

    def set_class_attr(self, cls, name, value):
        self.saved.append((cls, name, cls.__dict__.get(name, self._MISSING), True))
        setattr(cls, name, value)

    def patch_globals(self, g, autowrap_ids):
        """Record calls through names in the globals dict `g`: wrap()ped names, ember functions
        imported by name and autowrap functions (math.*)."""
        if id(g) in self.seen_globals:
            return
        self.seen_globals.add(id(g))
        for (gid, name), d in list(_wrapped_globals.items()):
            if gid == id(g):
                orig = g.get(name) or getattr(builtins, name, None)
                if orig is not None and not getattr(orig, "__fx_recording__", False):
                    self.set_item(g, name, _recording_wrapper(orig))
        for name, value in list(g.items()):
            if getattr(value, "__fx_recording__", False) or name.startswith("__"):
                continue
            try:
                key = id(value)
            except Exception:   # pragma: no cover
                continue
            if key in _BY_ID and g.get(name) is value:
                self.set_item(g, name, _BY_ID[key])
            elif key in autowrap_ids or key in _wrapped_functions:
                self.set_item(g, name, _recording_wrapper(value))

    def restore(self):
        for target, name, old, is_class in reversed(self.saved):
            if is_class:
                if old is self._MISSING:
                    delattr(target, name)
                else:
                    setattr(target, name, old)
            elif old is self._MISSING:
                target.pop(name, None)
            else:
                target[name] = old
        self.saved.clear()


def symbolic_trace(root, concrete_args=None):
    """Trace `root` (an ember.nn.Module or a function) into a GraphModule.

    `concrete_args` ({name: value}) specialises arguments: the value is used while tracing (so
    Python control flow on it traces), the argument stays in the signature, and for None / numbers
    a check that later calls pass the same value is recorded. ``PH`` keeps an argument symbolic.

    >>> gm = symbolic_trace(lambda x, flag: x * 2 if flag else x, concrete_args={"flag": True})
    >>> gm(ember.ones(2), True)        # tensor([2., 2.])
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if _is_module(root) else getattr(root, "__name__", "GraphModule")
    if not name.isidentifier():        # lambdas: "<lambda>"
        name = "GraphModule"
    return GraphModule(tracer.root, graph, name)


def _is_module(obj) -> bool:
    from ..nn.modules.module import Module
    return isinstance(obj, Module)


def _assert_is_none(value, msg):
    """Recorded for a concrete_args entry specialised to None: later calls must pass None too."""
    if value is not None:
        raise AssertionError(msg)


def _assert_equal(value, expected, msg):
    """Recorded for a concrete_args entry specialised to a number/str/bool: later calls must match."""
    if value != expected:
        raise AssertionError(msg)

