"""ember.jit.script for functions: compile Python source to the script IR and run it through the
graph executor (``ember/jit/frontend`` does the compiling).

    @ember.jit.script
    def f(x, n: int = 2):
        for _ in range(n):
            x = ember.tanh(x)
        return x
    f(ember.randn(3))        # runs the optimised graph
    print(f.graph)           # TorchScript-style IR
    print(f.code)            # Python-like source rebuilt from the IR

Also ``ignore`` / ``unused`` (leave a function to Python / make calling it raise), ``is_scripting``,
``annotate`` and ``script_if_tracing``. Modules are scripted by ``ember.jit.frontend.modules``
(``script`` dispatches there for ``nn.Module`` instances).
"""
from __future__ import annotations

import functools
import inspect

from ._callable import CompiledGraphCallable

_CACHE: dict = {}   # python function -> ScriptFunction (recursive compilation reuses it)


class ScriptFunction(CompiledGraphCallable):
    """A scripted function: ``.graph``, ``.code``, ``.schema``, ``.graph_for(*args)``, callable.

    `_graph` is the inlined fx graph the executor runs; `_graph_uninlined` keeps the
    prim::CallFunction nodes of calls to other scripted functions."""

    def __init__(self, fn, graph, schema, name=None):
        self._init_callable(name or schema.name, schema)
        self._fn = fn
        self.__qualname__ = getattr(fn, "__qualname__", self.name)
        self.__doc__ = getattr(fn, "__doc__", None)
        self._graph_uninlined = graph

    @property
    def _graph(self):
        return self.inlined_fx_graph

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.name}>"

    def __deepcopy__(self, memo):
        return self   # graphs copied by passes keep pointing at the same compiled callee


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a function (or, through ember.jit.frontend.modules, an nn.Module) to script.

        scripted = ember.jit.script(fn)     # a ScriptFunction
    """
    from ..nn.modules.module import Module
    if isinstance(obj, ScriptFunction):
        return obj
    if isinstance(obj, Module) or (isinstance(obj, type) and issubclass(obj, Module)):
        from .frontend import modules
        return modules.script_module(obj)
    if getattr(obj, "_ember_jit_script_module", False):
        return obj
    if not callable(obj) or not inspect.isfunction(inspect.unwrap(obj)):
        raise RuntimeError(f"ember.jit.script expects a function or an nn.Module, got {type(obj).__name__}")
    cached = _CACHE.get(obj)
    if cached is not None:
        return cached
    from .frontend.to_ir import compile_function
    graph, schema = compile_function(obj)
    sf = ScriptFunction(obj, graph, schema)
    functools.update_wrapper(sf, obj, assigned=("__module__", "__doc__"), updated=())
    _CACHE[obj] = sf
    return sf


def ignore(drop=False, **kwargs):
    """Leave a function to Python: script calls it as a Python function at run time (graphs that call
    it cannot be saved). ``ignore(drop=True)`` is ``unused``.

        @ember.jit.ignore
        def debug(x) -> None: print(x)
    """
    if callable(drop):
        drop._ember_jit_modifier = "ignore"
        return drop

    def decorator(fn):
        fn._ember_jit_modifier = "unused" if drop else "ignore"
        return fn
    return decorator


def unused(fn):
    """Script compiles calls to `fn` as raising an exception (the function body is not compiled)."""
    (fn.fget if isinstance(fn, property) else fn)._ember_jit_modifier = "unused"
    return fn


def is_scripting() -> bool:
    """False in eager Python; the constant True inside a scripted function.

        if not ember.jit.is_scripting(): ...   # Python-only code, folded away by script
    """
    return False


def annotate(the_type, the_value):
    """Give a value a type in script (``annotate(List[int], [])``); returns the value eagerly."""
    return the_value


def script_if_tracing(fn):
    """Script `fn` lazily, only when it is called while ember.jit.trace records; plain Python
    otherwise (so eager callers pay no compile cost)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ._tracing import is_recording
        if not is_recording():
            return fn(*args, **kwargs)
        return script(fn)(*args, **kwargs)
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper
