"""The compile entry: ``ember.compile`` / ``optimize``, the per-code cache of guarded entries, ``disable``.

    @ember.compile(backend="eager")
    def f(a, b):
        return (a + b) * 2

CPython gives ember no frame hook (PEP 523 is C-only), so compiling a function wraps it: the wrapper
is generated with the function's own signature and runs, on every call,

    for check, compiled in entries:      # this function object's materialised cache entries
        if check(a, b):                  # ONE generated guard function per entry (guards.py)
            return compiled(a, b)        # the transformed code, as a function with f's closure
    return miss(a, b)                    # look at other functions' entries for the code, or capture

The cache itself is per code object (and backend): functions made from one code object (closures
made in a loop) share it; each function object keeps the entries it has used, built with its own
closure. Resume functions and functions called at a graph break are routed through the same entry
(`wrap_resume`), so they are compiled on their first call; functions only made at run time (a
closure rebuilt at a break, a resume function that needs the frame's cells) go through `route`,
which looks up the per-code cache without generating a wrapper. Past ``config.cache_size_limit`` entries a
code object runs eagerly on a miss, with one warning naming the failing guard.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import itertools
import sys
import threading
import traceback
import types
import warnings
import weakref

from ..nn import Module

from .. import _logging
from . import config
from .backends import lookup_backend
from .guards import build_check_fn, format_guards, signature_text
from .markers import disable, state as _state  # noqa: F401  (disable is public here too)


# ------------------------------------------------------------------------------------------------
# State

class _EntryList(list):
    """One function object's materialised entries: [(check, compiled_fn)]; weakly registered so
    reset() can empty every one in place."""
    __slots__ = ("__weakref__",)


class CacheEntry:
    """One compiled version of a code object: its guards' check and the transformed code."""
    __slots__ = ("check", "code", "f_globals", "result", "compile_id")

    def __init__(self, check, code, f_globals, result, compile_id):
        self.check, self.code, self.f_globals, self.result, self.compile_id = check, code, f_globals, result, compile_id

    def make_function(self, fn):
        """The transformed code as a function with `fn`'s globals, closure and defaults."""
        compiled = types.FunctionType(self.code, self.f_globals, fn.__name__, fn.__defaults__, fn.__closure__)
        compiled.__kwdefaults__ = fn.__kwdefaults__
        compiled.__qualname__ = fn.__qualname__
        return compiled


class CodeCache:
    """Every entry compiled for one (code object, compile options), most recent first."""
    __slots__ = ("code", "frame_id", "entries", "skip", "warned", "__weakref__")

    def __init__(self, code, frame_id):
        self.code, self.frame_id = code, frame_id
        self.entries: list = []
        self.skip = False          # capture gave nothing (or failed): always run the original
        self.warned = False


_caches: dict = {}                 # (code, options key) -> CodeCache
_entry_lists: dict = {}            # id -> weakref of every _EntryList handed to a wrapper
_frame_counter = [0]
_installed: dict = {}              # id(module globals) -> names ember put there (free to reuse after reset)
guard_failures: dict = {}          # code -> ["0/0: tensor 'a' size mismatch ...", ...] (as torch._dynamo.utils)
compile_observers: list = []       # callables(code, result_or_None, error_or_None): explain() listens here


def reset() -> None:
    """Forget every compiled entry (ember._dynamo.reset / ember.compiler.reset)."""
    _caches.clear()
    guard_failures.clear()
    for ref in list(_entry_lists.values()):
        entries = ref()
        if entries is not None:
            entries.clear()
    _frame_counter[0] = 0
    from .resume_execution import ResumeCodeCache
    ResumeCodeCache.clear()
    from .module_guards import forget_cached_inputs
    forget_cached_inputs()
    # names restart at __compiled_fn_0 as in a fresh process; names ember installed before may be
    # reused (see _install_globals)
    from . import bytecode_transformation
    if hasattr(bytecode_transformation, "_unique_id_counter"):
        bytecode_transformation._unique_id_counter = itertools.count()


def is_compiling() -> bool:
    """True while a frame is being captured on this thread."""
    return _state.compiling > 0


def _always(*args, **kwargs):
    return True


# ------------------------------------------------------------------------------------------------
# Options of one ember.compile call

class _CompileOptions:
    """Backend and flags shared by a compiled function, its resume functions and its callees."""

    def __init__(self, backend, fullgraph=False, options=None, backend_name=None, mode=None):
        self.backend = lookup_backend(backend)
        if options:
            backend_fn = self.backend
            self.backend = lambda gm, example_inputs: backend_fn(gm, example_inputs, **options)
        if mode == "reduce-overhead":      # each graph's compiled callable replayed from CUDA graphs
            self.backend = _replayed_from_cuda_graphs(self.backend, lookup_backend(backend))
        self.backend_name = backend_name if backend_name is not None else backend
        self.fullgraph = fullgraph
        self.key = (lookup_backend(backend), fullgraph, tuple(sorted((options or {}).items(), key=repr)), mode)

    def wrap_resume(self, fn):
        """`fn` routed through the compile entry (compiled on its first call) -- interfaces D3."""
        if getattr(fn, "_ember_dynamo_disable", False) or not isinstance(fn, types.FunctionType):
            return fn
        return _make_wrapper(fn, self)

    def route(self, fn):
        """A callable that runs `fn` through the compile entry on each call, without generating a
        wrapper: for functions made at run time (a closure rebuilt after a graph break, a new
        object on every call), which share the per-code cache with every other function of their code."""
        if getattr(fn, "_ember_dynamo_disable", False) or not isinstance(fn, types.FunctionType):
            return fn
        return functools.partial(_call_routed, fn, self)


def _replayed_from_cuda_graphs(backend, registered):
    def compile_then_cudagraphify(gm, example_inputs):
        from .backends.cudagraphs import aot_backend, cudagraphify
        from . import config           # an AOT backend: its forward and backward replayed (training too)
        aot = aot_backend(registered) if config.cudagraph_training else None
        if aot is not None:
            return aot(gm, example_inputs)
        compiled = backend(gm, example_inputs)
        return cudagraphify(gm.forward if compiled is None else compiled, gm)
    return compile_then_cudagraphify


def _call_routed(fn, opts, *args, **kwargs):
    if fn.__defaults__ or fn.__kwdefaults__:
        # entries' checks bind omitted arguments to the defaults of the function they were
        # captured from; this function object may have others (same code, made at run time)
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)      # the eager call raises it for the user
        bound.apply_defaults()
        args, kwargs = bound.args, bound.kwargs
    return _on_miss(fn, opts, [], *args, **kwargs)


def pick_target(routed, args, kwargs):
    """What calling `routed(*args, **kwargs)` would run, returned instead of run: code emitted at a
    graph break calls it itself, so no ember frame stands between the caller and the callee
    (warnings' stacklevel, logging's caller, inspect.stack() see the frames eager Python has)."""
    if isinstance(routed, types.MethodType):
        target = pick_target(routed.__func__, (routed.__self__, *args), kwargs)
        return types.MethodType(target, routed.__self__)
    pick = getattr(routed, "_ember_pick", None)
    if pick is not None:
        return pick(*args, **kwargs)
    if isinstance(routed, functools.partial) and routed.func is _call_routed and not routed.keywords:
        fn, opts = routed.args
        if fn.__defaults__ or fn.__kwdefaults__:
            try:
                bound = inspect.signature(fn).bind(*args, **kwargs)
            except TypeError:
                return fn           # the call raises it for the user
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        return _miss_target(fn, opts, [], args, kwargs)
    return routed


def _with_current_defaults(compiled, fn):
    # the caller passes the arguments as written: omitted ones must take fn's defaults as they are now
    compiled.__defaults__, compiled.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    return compiled


# ------------------------------------------------------------------------------------------------
# The per-function wrapper (the hot path)

def _make_wrapper(fn: types.FunctionType, opts: _CompileOptions):
    code = fn.__code__
    entries = _EntryList()
    key = id(entries)
    _entry_lists[key] = weakref.ref(entries, lambda _, key=key: _entry_lists.pop(key, None))
    miss = functools.partial(_on_miss, fn, opts, entries)
    # Omitted arguments are bound to a marker and read from `fn` on each call, so defaults
    # rebound (fn.__defaults__ = ...) or mutated in place (fn.__kwdefaults__[k] = v) after
    # compiling are the ones guarded and used, as in an eager call.
    defaults = (_OMITTED,) * len(fn.__defaults__ or ())
    kwdefaults = dict.fromkeys(fn.__kwdefaults__ or {}, _OMITTED)
    params, call = signature_text(code, defaults, kwdefaults)
    npos = code.co_argcount
    fill = "".join(f"    if {name} is ___O: {name} = ___dflt(___fn0, {name!r}, {i - npos})\n"
                   for i, name in enumerate(code.co_varnames[:npos]) if i >= npos - len(defaults))
    fill += "".join(f"    if {name} is ___O: {name} = ___dflt(___fn0, {name!r}, None)\n" for name in kwdefaults)
    check_call = ", ".join(filter(None, [call, "___closure=___cl" if code.co_freevars else ""]))
    if code.co_freevars and code.co_flags & 0x08:   # **kwargs must come last
        head, _, tail = call.rpartition(", **")
        check_call = (f"{head}, ___closure=___cl, **{tail}" if head else f"___closure=___cl, {call}")
    src = (f"def {_safe_name(fn.__name__)}({params}):\n"
           f"{fill}"
           f"    for ___check, ___fn in ___entries:\n"
           f"        if ___check({check_call}):\n"
           f"            return ___fn({call})\n"
           f"    return ___miss({call})\n")
    # the same dispatch, returning the function to call (pick_target) instead of calling it
    fresh = "___fresh(___fn, ___fn0)" if defaults or kwdefaults else "___fn"
    pick_src = (f"def ___pick({params}):\n"
                f"{fill}"
                f"    for ___check, ___fn in ___entries:\n"
                f"        if ___check({check_call}):\n"
                f"            return {fresh}\n"
                f"    return ___miss_target(___fn0, ___opts, ___entries, ({_positional(call)}), {_keywords(call)})\n")
    namespace = {"___entries": entries, "___miss": miss, "___d": defaults, "___kd": kwdefaults,
                 "___cl": fn.__closure__, "___O": _OMITTED, "___dflt": _default_of, "___fn0": fn,
                 "___fresh": _with_current_defaults, "___miss_target": _miss_target, "___opts": opts}
    filename = f"<ember.compile wrapper of {fn.__qualname__}>"
    exec(builtins.compile(src, filename, "exec"), namespace)
    exec(builtins.compile(pick_src, filename, "exec"), namespace)
    wrapper = namespace[_safe_name(fn.__name__)]
    wrapper._ember_pick = namespace["___pick"]
    functools.update_wrapper(wrapper, fn)
    wrapper._ember_orig_fn = fn
    wrapper._ember_entries = entries
    wrapper._ember_compile_options = opts
    return wrapper


class _Omitted:
    """The wrapper's default for every parameter that has one: "not passed, read fn's default"."""
    __slots__ = ()

    def __repr__(self):
        return "<default>"


_OMITTED = _Omitted()


def _default_of(fn, name, index):
    """`fn`'s current default for parameter `name` (positional: `index` counts from the end of
    __defaults__; keyword-only: None), raising the TypeError an eager call raises when it has none."""
    try:
        return fn.__kwdefaults__[name] if index is None else fn.__defaults__[index]
    except (TypeError, KeyError, IndexError):
        raise TypeError(f"{fn.__name__}() missing 1 required argument: {name!r}") from None


def _positional(call: str) -> str:
    """The positional part of a call text ("a, b, *args") as a tuple expression body."""
    parts = [p for p in call.split(", ") if p and "=" not in p and not p.startswith("**")]
    return "".join(f"{p}, " for p in parts)


def _keywords(call: str) -> str:
    """The keyword part of a call text ("k=k, **kw") as a dict expression."""
    items = [p for p in call.split(", ") if "=" in p]
    rest = [p for p in call.split(", ") if p.startswith("**")]
    return "{" + ", ".join([f"{p.split('=')[0]!r}: {p.split('=')[1]}" for p in items] + rest) + "}"


def _safe_name(name: str) -> str:
    return name if name.isidentifier() and not name.startswith("___") else "compiled_fn"


def _cache_for(fn, opts) -> CodeCache:
    key = (fn.__code__, opts.key)
    cache = _caches.get(key)
    if cache is None:
        cache = _caches[key] = CodeCache(fn.__code__, _frame_counter[0])
        _frame_counter[0] += 1
    return cache


def _on_miss(fn, opts, entries, *args, **kwargs):
    """No materialised entry matched: reuse another function object's entry, or capture anew."""
    return _miss_target(fn, opts, entries, args, kwargs)(*args, **kwargs)


def _miss_target(fn, opts, entries, args, kwargs):
    """The function a missed call runs: another function object's entry (materialised for `fn`), a
    new capture's, or `fn` itself (eager)."""
    if _state.disabled:
        return fn
    cache = _cache_for(fn, opts)
    if cache.skip:
        entries.append((_always, fn))
        return fn
    closure_kw = {"___closure": fn.__closure__} if fn.__code__.co_freevars else {}
    for entry in cache.entries:
        if entry.check.fn(*args, **kwargs, **closure_kw):
            compiled = entry.make_function(fn)
            entries.insert(0, (entry.check.fn, compiled))
            return compiled
    reasons = [f"{cache.frame_id}/{e.compile_id}: {e.check.failure_reason(*args, **kwargs, **closure_kw)}"
               for e in cache.entries]
    guard_failures.setdefault(fn.__code__, []).extend(reasons)
    if len(cache.entries) >= config.limit():
        if not cache.warned:
            cache.warned = True
            code = fn.__code__
            warnings.warn(f"ember._dynamo hit config.cache_size_limit ({config.limit()})\n"
                          f"   function: {code.co_name!r} ({code.co_filename}:{code.co_firstlineno})\n"
                          f"   last reason: {reasons[0]}\n"
                          f'To log all recompilation reasons, use EMBER_LOGS="recompiles".', UserWarning,
                          stacklevel=4)
        return fn
    if reasons:
        code = fn.__code__
        _logging.trace_log("recompiles", lambda: (
            f"Recompiling function {code.co_name} in {code.co_filename}:{code.co_firstlineno}\n"
            f"    triggered by the following guard failure(s):\n" + "\n".join(f"    - {r}" for r in reasons)))
    entry = _capture(fn, opts, cache, args, kwargs)
    if entry is None:
        return fn
    compiled = entry.make_function(fn)
    entries.insert(0, (entry.check.fn, compiled))
    return compiled


def _capture(fn, opts, cache, args, kwargs):
    """Run the translator on this call's arguments; returns the new CacheEntry or None (eager)."""
    from . import convert_frame
    code = fn.__code__
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return None     # the eager call raises the same TypeError for the user
    bound.apply_defaults()
    f_locals = dict(bound.arguments)
    _state.compiling += 1
    try:
        result = convert_frame.compile_frame(code, fn.__globals__, f_locals, fn.__closure__, _backend_for(opts),
                                             fullgraph=opts.fullgraph, wrap_resume=opts.wrap_resume)
    except Exception as e:   # noqa: BLE001 - capture must never break the user's program
        _notify(code, None, e)
        if opts.fullgraph or not config.suppress_errors or _fuser_strict():
            raise
        cache.skip = True
        _warn_capture_error(code, e)
        return None
    finally:
        _state.compiling -= 1
    _notify(code, result, None)
    if result is None:
        cache.skip = True
        return None
    _install_globals(fn.__globals__, result)
    check = build_check_fn(result.guards, code, fn.__globals__, fn.__closure__,
                           defaults=fn.__defaults__, kwdefaults=fn.__kwdefaults__)
    entry = CacheEntry(check, result.code, fn.__globals__, result, len(cache.entries))
    cache.entries.insert(0, entry)
    _logging.trace_log("guards", lambda: format_guards(result.guards))
    return entry


def _backend_for(opts):
    """The options' backend, or, for a frame captured while a DistributedDataParallel module runs
    its wrapped module, that backend cut at the module's gradient buckets (backends/distributed.py)."""
    ddp_module = sys.modules.get("ember.nn.parallel.distributed")     # never imported here
    ddp = ddp_module.active_ddp_module() if ddp_module is not None and config.optimize_ddp else None
    if ddp is None:
        return opts.backend
    from .backends.distributed import DDPOptimizer
    return DDPOptimizer(ddp.bucket_bytes_cap, opts.backend, ddp.reducer.params).compile_fn


def _install_globals(f_globals: dict, result) -> None:
    """Add the result's new globals to the module. A name already there for another object (another
    compiler -- torch.compile -- installed `__compiled_fn_3` in the same module) is renamed in the
    transformed code's co_names instead of being overwritten."""
    renames = {}
    mine = _installed.setdefault(id(f_globals), set())
    for name, value in result.new_globals.items():
        if name in f_globals and f_globals[name] is not value and name not in mine:
            fresh, i = f"{name}_ember", 0
            while fresh in f_globals:
                i += 1
                fresh = f"{name}_ember{i}"
            renames[name] = fresh
    if renames:
        result.code = result.code.replace(co_names=tuple(renames.get(n, n) for n in result.code.co_names))
        result.new_globals = {renames.get(k, k): v for k, v in result.new_globals.items()}
    f_globals.update(result.new_globals)
    mine.update(result.new_globals)


def _notify(code, result, error):
    for observer in list(compile_observers):
        observer(code, result, error)


def _fuser_strict() -> bool:
    """ember._inductor.config.strict: the fuser's fallbacks are errors, so its error is not
    turned into an eager run here either."""
    from .._inductor import config as fuser_config
    return fuser_config.strict


def _warn_capture_error(code, e):
    reason = getattr(e, "reason", None) or f"{type(e).__name__}: {e}"
    where = ""
    if getattr(e, "filename", None):
        where = f"\n  at {e.filename}:{e.lineno}"
        if getattr(e, "source_line", None):
            where += f"\n    {e.source_line.strip()}"
    detail = "\n" + "".join(traceback.format_exception(e)) if config.verbose else ""
    warnings.warn(f"ember.compile: could not capture {code.co_name} ({code.co_filename}:{code.co_firstlineno}), "
                  f"running it eagerly: {reason}{where}{detail}", UserWarning, stacklevel=5)


# ------------------------------------------------------------------------------------------------
# Public entry points

def _compile_callable(target, opts):
    if getattr(target, "_ember_dynamo_disable", False):
        return target
    if isinstance(target, Module):
        return OptimizedModule(target, opts)
    if isinstance(target, types.MethodType) and isinstance(target.__func__, types.FunctionType):
        return types.MethodType(_make_wrapper(target.__func__, opts), target.__self__)
    if isinstance(target, types.FunctionType):
        if hasattr(target, "_ember_orig_fn"):           # compiling twice: recompile the original
            target = target._ember_orig_fn
        return _make_wrapper(target, opts)
    if callable(target) and isinstance(getattr(type(target), "__call__", None), types.FunctionType):
        call = _ClassMethodRoute(target, "__call__", opts)
        return functools.wraps(type(target).__call__)(lambda *a, **k: call(*a, **k))
    raise RuntimeError(f"ember.compile: expected a function, a method or an nn.Module, got "
                       f"{type(target).__name__}")


def compile(fn_or_module=None, *, backend="inductor", fullgraph: bool = False, dynamic=None, mode=None,
            options=None, disable: bool = False):
    """Compile a function or Module (also a decorator, with or without arguments).

        f = ember.compile(f, backend="eager")
        @ember.compile
        def g(x): ...
        @ember.compile(fullgraph=True)
        def h(x): ...
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, reduce-overhead, "
                           f"max-autotune, max-autotune-no-cudagraphs")
    if dynamic:
        raise NotImplementedError("ember.compile: dynamic=True (symbolic shapes) is not supported; "
                                  "shapes are specialised (dynamic=None or False)")
    if fn_or_module is None:
        return lambda fn: compile(fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                  options=options, disable=disable)
    if disable:
        return fn_or_module
    opts = _CompileOptions(backend, fullgraph, options, mode=mode)
    return _compile_callable(fn_or_module, opts)


class _OptimizeContext:
    """What ``optimize(backend)`` returns: call it on a function or Module to compile it."""

    def __init__(self, opts):
        self._opts = opts

    def __call__(self, fn):
        if self._opts is None:
            return fn
        return _compile_callable(fn, self._opts)


def optimize(backend="inductor", *, nopython: bool = False, disable: bool = False, dynamic=None):
    """``@ember._dynamo.optimize(my_compiler)`` as in seed 003; nopython=True is fullgraph=True.

        @ember._dynamo.optimize("eager")
        def f(x): ...
    """
    if dynamic:
        raise NotImplementedError("ember._dynamo.optimize: dynamic=True (symbolic shapes) is not supported")
    return _OptimizeContext(None if disable else _CompileOptions(backend, nopython))


# ------------------------------------------------------------------------------------------------
# Modules

class _ClassMethodRoute:
    """Calls ``type(obj).<name>(obj, ...)`` compiled, looking the function up on every call: a
    class whose method (``forward``, ``__call__``) is replaced after compiling runs the new one, as
    calling the object eagerly would. Each function gets its own wrapper, made on its first call."""

    __slots__ = ("obj", "name", "opts", "wrappers")

    def __init__(self, obj, name, opts):
        self.obj, self.name, self.opts = obj, name, opts
        self.wrappers: dict = {}      # function -> compile-entry wrapper of it

    def __call__(self, *args, **kwargs):
        fn = getattr(type(self.obj), self.name)
        wrapper = self.wrappers.get(fn)
        if wrapper is None:
            if not isinstance(fn, types.FunctionType):   # e.g. a staticmethod or a C function: as eager
                return getattr(self.obj, self.name)(*args, **kwargs)
            wrapper = self.wrappers[fn] = _make_wrapper(fn, self.opts)
        return wrapper(self.obj, *args, **kwargs)


class OptimizedModule(Module):
    """A compiled Module: ``forward`` runs the compiled ``type(mod).forward`` bound to the module.

    ``_orig_mod`` is the original (a child, so parameters and state_dict keys carry the
    ``_orig_mod.`` prefix, as in torch); other attributes read through to it. The class's
    ``forward`` (and ``__call__``, when the class overrides Module's) is looked up on every call,
    so replacing it after compiling runs the new one, as calling the module eagerly does.

        cm = ember.compile(model, backend="eager")
        cm(x); cm._orig_mod is model; cm.weight is model.weight
    """

    def __init__(self, mod, opts):
        super().__init__()
        self._orig_mod = mod
        if not isinstance(type(mod).forward, types.FunctionType):
            raise RuntimeError(f"ember.compile: {type(mod).__name__}.forward is not a Python function")
        object.__setattr__(self, "_ember_compile_options", opts)
        object.__setattr__(self, "_compiled_forward", _ClassMethodRoute(mod, "forward", opts))
        if hasattr(type(mod), "_ember_compile_inner"):   # a wrapper (DDP) that runs eagerly around its
            object.__setattr__(self, "_compiled_forward",  # compiled module, as torch's skipfiles do
                               mod._ember_compile_inner(lambda inner: _compile_callable(inner, opts)))
        object.__setattr__(self, "_compiled_call", _ClassMethodRoute(mod, "__call__", opts))
        object.__setattr__(self, "training", mod.training)

    def forward(self, *args, **kwargs):
        mod = self._orig_mod
        if type(mod).__call__ is not Module.__call__:    # the class's own __call__ is what eager runs
            return self._compiled_call(*args, **kwargs)
        if mod._forward_hooks or mod._forward_pre_hooks or "forward" in mod.__dict__:
            return mod(*args, **kwargs)   # hooks / an instance forward: run as eager does (uncompiled)
        return self._compiled_forward(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            orig = self.__dict__.get("_modules", {}).get("_orig_mod")
            if orig is None:
                raise
            return getattr(orig, name)

    def train(self, mode: bool = True):
        self._orig_mod.train(mode)
        object.__setattr__(self, "training", mode)
        return self
