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
                    if getattr(builtins, name, None) is not orig:
                        # known by identity from now on, so code generated from the graph (which
                        # calls it under another global name) records it too when traced again
                        _wrapped_functions[id(orig)] = orig
        for name, value in list(g.items()):
            if getattr(value, "__fx_recording__", False) or name.startswith("__"):
                continue
            key = id(value)
            if key in _BY_ID and g.get(name) is value:
                self.set_item(g, name, _BY_ID[key])
            elif key in autowrap_ids or key in _wrapped_functions:
                self.set_item(g, name, _recording_wrapper(value))

    def patch_defining_modules(self):
        """Record wrap()ped functions also when called as `package.module.fn` (generated code
        names functions that way)."""
        for fn in list(_wrapped_functions.values()):
            module = sys.modules.get(getattr(fn, "__module__", None) or "")
            name = getattr(fn, "__name__", "")
            if module is not None and vars(module).get(name) is fn:
                self.set_item(vars(module), name, _recording_wrapper(fn))

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


# the checks stay one opaque call when generated code that contains them is traced again
_wrapped_functions.update({id(f): f for f in (_assert_is_none, _assert_equal)})
_CHECKS = {"none": _assert_is_none, "equal": _assert_equal}   # the originals, even while patched



# -- the Tracer ----------------------------------------------------------------------------------
_BASE_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), range)


class Tracer:
    """Records a function or Module into a Graph by running it on Proxies (see module docstring).

    Override points (as in torch.fx): ``create_node``, ``create_proxy``, ``create_arg``,
    ``is_leaf_module``, ``call_module``, ``getattr``, ``path_of_module``.

    >>> graph = Tracer().trace(my_module)          # a Graph; GraphModule(my_module, graph) runs it
    """

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self.autowrap_ids = {id(v) for m in autowrap_modules for k, v in vars(m).items()
                             if not k.startswith("_") and callable(v)}
        self.autowrap_ids.update(id(f) for f in autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = True
        self.record_stack_traces = True
        self.root = None
        self.graph = None

    # -- nodes and proxies ---------------------------------------------------------------------
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """Append one node to the graph being built (arguments already converted by create_arg)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """Record `target(*args, **kwargs)` as a node of opcode `kind` and return its Proxy."""
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            stack = self._user_stack()
            if stack:
                node.meta["stack_trace"] = stack
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def _user_stack(self) -> str:
        """The user's frames between trace() and this op, outermost first, without ember.fx's own
        frames and Module.__call__ (PyTorch's stack_trace text)."""
        frames, f, stop = [], sys._getframe(2), getattr(self, "_trace_frame", None)
        while f is not None and f is not stop:
            fn = f.f_code.co_filename
            if not (fn.startswith(_FX_DIR) or fn == _MODULE_FILE):
                frames.append(f)
            f = f.f_back
        return format_frames(reversed(frames))

    def create_arg(self, a):
        """Turn a value used as an argument into what a node stores: Proxies become their nodes,
        containers are converted element-wise, parameters/buffers/submodules of the root and
        other tensors become get_attr nodes, plain Python constants stay as they are."""
        from .. import Tensor, dtype, device
        from ..nn.parameter import Parameter
        from ..nn.modules.module import Module
        from .._core.dispatch import OperatorHandle
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node) or isinstance(a, _BASE_TYPES) or isinstance(a, (dtype, device, OperatorHandle)):
            return a
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):      # a namedtuple built outside the trace: rebuild it in the graph
                return self.create_node("call_function", type(a), tuple(self.create_arg(x) for x in a), {})
            return tuple(self.create_arg(x) for x in a)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(k, (Proxy, Node)):
                    raise RuntimeError(f"symbolic_trace: dictionary keys cannot be traced values, got key {k!r}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if p is a:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("symbolic_trace: a Parameter used in the traced code is not a member of the root module")
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:           # a tensor made during tracing (or a global): store it on root
                qualname = self._fresh_qualname("_tensor_constant")
                setattr(self.root, qualname, a)
                self.tensor_attrs[id(a)] = qualname
                self._keep_alive.append(a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            return self.create_node("get_attr", self.path_of_module(a), (), {})
        if isinstance(a, (types.FunctionType, types.BuiltinFunctionType, type)):
            return a
        raise NotImplementedError(f"symbolic_trace: cannot use a value of type {type(a).__name__} as a "
                                  f"node argument ({a!r})")

    def _fresh_qualname(self, prefix):
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    # -- modules ---------------------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """ember.nn's own modules are recorded as call_module (except the containers, traced
        through); user-defined modules are traced through."""
        from ..nn import Sequential, ModuleList, ModuleDict
        return (type(m).__module__ or "").startswith("ember.nn") and not isinstance(
            m, (Sequential, ModuleList, ModuleDict))

    def path_of_module(self, mod) -> str:
        """The qualified name of submodule `mod` in the root ("layers.0")."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError(f"symbolic_trace: module {type(mod).__name__} is not installed as a submodule "
                            f"of the traced root")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A call of submodule `m`: one call_module node for a leaf, else trace into `forward`."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            self._patcher.patch_globals(getattr(type(m).forward, "__globals__", {}), self.autowrap_ids)
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """`module.attr` during tracing: parameters (and buffers) become get_attr Proxies, once each."""
        from .. import Tensor
        from ..nn.parameter import Parameter
        if isinstance(attr_val, Parameter):
            for name, p in self.root.named_parameters():
                if p is attr_val:
                    return self._attr_proxy(name, attr_val, parameter_proxy_cache, True)
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            for name, b in self.root.named_buffers():
                if b is attr_val:
                    return self._attr_proxy(name, attr_val, parameter_proxy_cache, False)
        return attr_val

    def _attr_proxy(self, name, value, cache, is_param):
        if name not in cache:
            factory = None
            if is_param and self.param_shapes_constant:
                factory = lambda node: ParameterProxy(self, node, name, value)  # noqa: E731
            cache[name] = self.create_proxy("get_attr", name, (), {}, proxy_factory_fn=factory)
        return cache[name]

    # -- the trace -------------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """Run `root` (Module or function) on Proxies and return the recorded Graph."""
        from ..nn.modules.module import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            is_module = True
        else:
            self.root = Module()
            fn = root
            is_module = False
        self.graph = Graph(tracer_cls=type(self))
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self.tensor_attrs = {}
        self._keep_alive = []
        for mod_name, mod in self.root.named_modules():
            for k, v in vars(mod).items():
                if _is_tensor(v):
                    self.tensor_attrs[id(v)] = f"{mod_name}.{k}" if mod_name else k
        self._trace_frame = sys._getframe()
        self._patcher = _Patcher()
        tracer = self
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        param_cache = {}

        def module_call(mod, *args, **kwargs):
            if _current_tracer() is not tracer:
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, name):
            value = orig_getattr(mod, name)
            if _current_tracer() is not tracer:
                return value
            return tracer.getattr(name, value, param_cache)

        stack = _tls.__dict__.setdefault("tracers", [])
        _apply_table()
        stack.append(self)
        try:
            self._patcher.set_class_attr(Module, "__call__", module_call)
            self._patcher.set_class_attr(Module, "__getattr__", module_getattr)
            self._patcher.patch_defining_modules()
            self._patcher.patch_globals(fn.__globals__, self.autowrap_ids)
            args = self._placeholders(fn, is_module, concrete_args)
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return"))
        finally:
            stack.pop()
            self._patcher.restore()
            _undo_table()
            self._trace_frame = None
        return self.graph

    def _placeholders(self, fn, is_module, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        args = []
        if is_module:
            params = params[1:]
            args.append(self.root)
        concrete_args = dict(concrete_args or {})
        checks = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(f"symbolic_trace: *args/**kwargs parameters ({p}) are not supported")
            if p.kind is p.KEYWORD_ONLY:
                raise NotImplementedError(f"symbolic_trace: keyword-only parameters ({p.name}) are not supported")
            default = () if p.default is p.empty else (p.default,)
            type_expr = p.annotation if p.annotation is not p.empty else None
            if p.name not in concrete_args:
                args.append(self.create_proxy("placeholder", p.name, default, {}, type_expr=type_expr))
                continue
            value = concrete_args.pop(p.name)
            ph = self.create_proxy("placeholder", f"{p.name}_1", default, {}, type_expr=type_expr)
            if isinstance(value, PHBase):
                args.append(ph)
                continue
            msg = f"{p.name} has been specialized to have value {value!r} but got another value"
            if value is None:
                checks.append((_CHECKS["none"], (ph, msg)))
            elif isinstance(value, (bool, int, float, str)):
                checks.append((_CHECKS["equal"], (ph, value, msg)))
            args.append(value)
        # the checks follow all placeholders, as in the code generated from the graph
        for check, check_args in checks:
            self.create_proxy("call_function", check, check_args, {})
        if concrete_args:
            raise TypeError(f"symbolic_trace: concrete_args names {sorted(concrete_args)} that are not "
                            f"parameters of {getattr(fn, '__qualname__', fn)}")
        return args


def _is_tensor(v) -> bool:
    from .. import Tensor
    return isinstance(v, Tensor)


def _current_tracer():
    stack = getattr(_tls, "tracers", None)
    return stack[-1] if stack else None
