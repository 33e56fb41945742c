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

from .ir.printer import ScriptGraph
from .ir.types import NO_DEFAULT, type_of_value

_CACHE: dict = {}   # python function -> ScriptFunction (recursive compilation reuses it)


class ScriptFunction:
    """A scripted function: ``.graph``, ``.code``, ``.schema``, ``.graph_for(*args)``, callable.

    `_graph` is the inlined fx graph the executor runs; `_graph_uninlined` keeps the
    prim::CallFunction nodes of calls to other scripted functions."""

    def __init__(self, fn, graph, schema, name=None):
        self._fn = fn
        self.name = self.__name__ = name or schema.name
        self.__qualname__ = getattr(fn, "__qualname__", self.name)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.schema = schema
        self._graph_uninlined = graph
        self._inlined = None
        self._executor = None
        self._declaration = None

    @property
    def _graph(self):
        if self._inlined is None:
            self._inlined = _inline(self._graph_uninlined)
        return self._inlined

    @property
    def graph(self) -> ScriptGraph:
        return ScriptGraph(self._graph)

    inlined_graph = graph

    @property
    def code(self) -> str:
        from .ir.code import format_code
        return format_code(self._graph, self.name)

    def _bind(self, args, kwargs) -> list:
        formals = self.schema.arguments
        if self._declaration is None:  # built once: a per-call string costs more than the run
            self._declaration = _declaration(self.schema)
        decl = self._declaration
        if len(args) > len(formals):
            raise RuntimeError(f"{self.name}() expected at most {len(formals)} argument(s) but received "
                               f"{len(args)} argument(s). Declaration: {decl}")
        values = list(args)
        names = [a.name for a in formals]
        for k in kwargs:
            if k not in names:
                raise RuntimeError(f"{self.name}() got an unexpected keyword argument '{k}'. Declaration: {decl}")
            if names.index(k) < len(args):
                raise RuntimeError(f"{self.name}() got multiple values for argument '{k}'. Declaration: {decl}")
        for a in formals[len(args):]:
            if a.name in kwargs:
                values.append(kwargs[a.name])
            elif a.default is not NO_DEFAULT:
                values.append(a.default)
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument '{a.name}'. Declaration: {decl}")
        for pos, (a, v) in enumerate(zip(formals, values)):
            if not _value_matches(v, a.type):
                from .frontend.builtins import py_type_str
                try:
                    found = py_type_str(type_of_value(v))
                except ValueError:
                    found = type(v).__name__
                raise RuntimeError(f"{self.name}() Expected a value of type '{py_type_str(a.type)}' for argument "
                                   f"'{a.name}' but instead found type '{found}'.\nPosition: {pos}\nValue: {v!r}\n"
                                   f"Declaration: {decl}")
        return values

    def __call__(self, *args, **kwargs):
        values = self._bind(args, kwargs)
        return self._run(values)

    def _run(self, values):
        if self._executor is None:
            from .executor import GraphExecutor
            self._executor = GraphExecutor(self._graph)
        return self._executor.run(*values)

    def graph_for(self, *args, **kwargs):
        """The optimised graph the executor runs for these inputs (printable)."""
        values = self._bind(args, kwargs)
        if self._executor is None:
            self._run(values)
        return ScriptGraph(self._executor.graph_for(*values))

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.name}>"

    def __deepcopy__(self, memo):
        return self   # graphs copied by passes keep pointing at the same compiled callee


def _declaration(schema) -> str:
    from .frontend.calls import signature_str
    return signature_str(schema)


def _value_matches(v, t) -> bool:
    from .ir.types import (AnyType, BoolType, DictType, FloatType, IntType, ListType, NoneType, NumberType,
                           OptionalType, TensorType, TupleType)
    import ember
    if isinstance(t, AnyType):
        return True
    if isinstance(t, OptionalType):
        return v is None or _value_matches(v, t.elem)
    if isinstance(t, TensorType):
        return isinstance(v, ember.Tensor)
    if isinstance(t, BoolType):
        return isinstance(v, bool)
    if isinstance(t, IntType):
        return isinstance(v, int) and not isinstance(v, bool)
    if isinstance(t, FloatType):
        return isinstance(v, (float, int)) and not isinstance(v, bool)
    if isinstance(t, NumberType):
        return isinstance(v, (int, float))
    if isinstance(t, NoneType):
        return v is None
    if isinstance(t, ListType):
        return isinstance(v, list) and all(_value_matches(x, t.elem) for x in v)
    if isinstance(t, TupleType):
        return isinstance(v, tuple) and len(v) == len(t.elems) and all(
            _value_matches(x, e) for x, e in zip(v, t.elems))
    if isinstance(t, DictType):
        return isinstance(v, dict) and all(_value_matches(k, t.key) and _value_matches(x, t.value)
                                           for k, x in v.items())
    try:
        return type_of_value(v) == t
    except ValueError:
        return False


def _inline(graph):
    """The graph with prim::CallFunction/CallMethod calls replaced by their callees' graphs."""
    try:
        from .passes import inline
    except ImportError:
        return graph
    from .ir import clone
    return inline(clone(graph))


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
        drop._ember_jit_ignore = True
        return drop

    def decorator(fn):
        if drop:
            fn._ember_jit_unused = True
        else:
            fn._ember_jit_ignore = True
        return fn
    return decorator


def unused(fn):
    """Script compiles calls to `fn` as raising an exception (the function body is not compiled)."""
    if isinstance(fn, property):
        fn.fget._ember_jit_unused = True
        return fn
    fn._ember_jit_unused = True
    return fn


def is_scripting() -> bool:
    """False in eager Python; the constant True inside a scripted function.

        if not ember.jit.is_scripting(): ...   # Python-only code, folded away by script
    """
    return False


is_scripting._ember_is_scripting = True


def annotate(the_type, the_value):
    """Give a value a type in script (``annotate(List[int], [])``); returns the value eagerly."""
    return the_value


annotate._ember_jit_annotate = True


def script_if_tracing(fn):
    """Script `fn` lazily, only when it is called while ember.jit.trace records; plain Python
    otherwise (so eager callers pay no compile cost)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ._recorder import is_recording
        if not is_recording():
            return fn(*args, **kwargs)
        return script(fn)(*args, **kwargs)
    wrapper.__original_fn = fn
    wrapper.__script_if_tracing_wrapper = True
    return wrapper
