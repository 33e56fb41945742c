"""What every "compiled graph you can call" shares: ``ScriptFunction`` (``_script.py``),
``ScriptMethod`` (``frontend/modules.py``) and the loaded functions and methods of
``_save_load.py``.

    values = bind_arguments(schema.arguments, args, kwargs, fail)   # also the compile-time binder
    value = check_argument("f", position, param, value, declaration)
    class ScriptFunction(CompiledGraphCallable): ...   # .graph/.code/.graph_for/__call__

Argument binding and checking follow TorchScript's (``createStackForSchema``): binding, then each
value's type, an int passing for a float (and a tuple for a list) converted as torch converts
them. The messages are torch's.
"""
from __future__ import annotations

from .ir.types import (NO_DEFAULT, AnyType, DictType, FloatType, ListType, OptionalType, TensorType, TupleType,
                       py_type_str, type_of_value)


def signature_str(sig) -> str:
    """``h(Tensor a, Tensor b) -> Tensor`` (TorchScript's schema form)."""
    args = ", ".join(f"{py_type_str(a.type)} {a.name}" + ("" if a.default is NO_DEFAULT else f"={a.default!r}")
                     for a in sig.arguments)
    return f"{sig.name}({args}) -> {py_type_str(sig.return_type)}"


# bind_arguments' failures: kind -> (TorchScript's wording at compile time, at run time)
ARGUMENT_ERRORS = {
    "too_many": ("Expected at most {n} arguments but found {found} positional arguments.",
                 "{fn}() expected at most {n} argument(s) but received {found} argument(s)."),
    "missing": ("Argument {arg} not provided.", "{fn}() is missing value for argument '{arg}'."),
    "unknown": ("Keyword argument {arg} unknown.", "{fn}() got an unexpected keyword argument '{arg}'."),
    "twice": ("Argument {arg} specified twice.", "{fn}() got multiple values for argument '{arg}'."),
}


def bind_arguments(params, args: tuple, kwargs: dict, fail, default=None) -> list:
    """`args` + `kwargs` + defaults (``default(param)``, else the default itself) as one value per
    parameter of `params`, in order. Otherwise ``raise fail(kind, **fields)`` for the first problem
    in TorchScript's order (at compile and at run time): "too_many" (`n`, `found`), "missing",
    then "unknown" or "twice" (`arg`)."""
    if len(args) > len(params):
        raise fail("too_many", n=len(params), found=len(args))
    values = list(args)
    used = 0
    for p in params[len(args):]:
        if p.name in kwargs:
            values.append(kwargs[p.name])
            used += 1
        elif p.default is not NO_DEFAULT:
            values.append(p.default if default is None else default(p))
        else:
            raise fail("missing", arg=p.name)
    if used != len(kwargs):  # a keyword that is no parameter, or one already given by position
        names = [p.name for p in params]
        for k in kwargs:
            if k not in names or names.index(k) < len(args):
                raise fail("unknown" if k not in names else "twice", arg=k)
    return values


def check_argument(name: str, position: int, param, value, declaration: str):
    """`value` as parameter `param` takes it (an int made a float where a float is expected, a
    tuple made a list where a list is); a RuntimeError like torch's ``Expected a value of type
    'Tensor' for argument 'x' but instead found type 'int'.`` otherwise."""
    expected = param.type
    if _matches(value, expected):
        if isinstance(value, int) and not isinstance(value, bool) and (
                isinstance(expected, FloatType)
                or (isinstance(expected, OptionalType) and isinstance(expected.elem, FloatType))):
            return float(value)
        if isinstance(value, tuple) and isinstance(expected, ListType):
            return list(value)
        return value
    try:
        found = py_type_str(type_of_value(value))
    except ValueError:
        found = type(value).__name__
    raise RuntimeError(f"{name}() Expected a value of type '{py_type_str(expected)}' for argument "
                       f"'{param.name}' but instead found type '{found}'.\nPosition: {position}\n"
                       f"Value: {value!r}\nDeclaration: {declaration}")


def _matches(v, t) -> bool:
    # structural for the containers (type_of_value cannot type [] or a tuple of Optionals exactly)
    if isinstance(t, TensorType):
        import ember
        return isinstance(v, ember.Tensor)
    if isinstance(t, AnyType):
        return True
    if isinstance(t, OptionalType):
        return v is None or _matches(v, t.elem)
    if isinstance(t, FloatType):
        return isinstance(v, (float, int)) and not isinstance(v, bool)
    if isinstance(t, ListType):
        return isinstance(v, (list, tuple)) and all(_matches(x, t.elem) for x in v)
    if isinstance(t, TupleType):
        return isinstance(v, tuple) and len(v) == len(t.elems) and all(_matches(x, e) for x, e in zip(v, t.elems))
    if isinstance(t, DictType):
        return isinstance(v, dict) and all(_matches(k, t.key) and _matches(x, t.value) for k, x in v.items())
    try:
        return type_of_value(v).is_subtype_of(t)
    except ValueError:
        return False


def inline_calls(graph):
    """A copy of `graph` with its prim::CallFunction/CallMethod calls (those with a callee)
    replaced by the callees' graphs."""
    from .ir import clone
    from .passes import inline
    graph = clone(graph)
    inline(graph)
    return graph


class CompiledGraphCallable:
    """A compiled graph you can call: ``.graph`` (inlined, printable), ``.inlined_graph``,
    ``.code``, ``.schema``, ``graph_for(*args)``.

    A subclass calls `_init_callable` and provides ``_graph`` (the graph the executor runs and
    ``.code`` prints) and ``_graph_uninlined`` (what ``.graph`` inlines; a subclass whose graph has
    no calls left sets ``_inlined`` instead). ``_receiver`` is what goes before the arguments (a
    method's module); ``_skip`` how many schema arguments it stands for."""

    _executor = None
    _inlined = None
    _declaration = None     # the schema as errors print it: built once, a per-call string costs more than the run
    _receiver = ()
    _skip = 0

    def _init_callable(self, name: str, schema) -> None:
        import ember
        self.name = self.__name__ = name
        self.schema = schema
        self._tensor_cls = ember.Tensor
        self._params = schema.arguments[self._skip:]
        # the number of arguments when every one is a Tensor (the fast call path), else -1
        self._tensor_arity = len(self._params) if all(type(p.type) is TensorType for p in self._params) else -1

    # -- inspection -----------------------------------------------------------------------------
    @property
    def inlined_fx_graph(self):
        """The fx Graph with every scripted call replaced by its callee's graph."""
        if self._inlined is None:
            self._inlined = inline_calls(self._graph_uninlined)
        return self._inlined

    @property
    def graph(self):
        """The inlined graph; ``str()`` prints it TorchScript-style."""
        from .ir.printer import ScriptGraph
        return ScriptGraph(self.inlined_fx_graph)

    inlined_graph = graph

    @property
    def code(self) -> str:
        """Python-like source rebuilt from the graph."""
        from .ir.code import format_code
        return format_code(self._graph, self.name)

    def graph_for(self, *args, **kwargs):
        """The optimised graph the executor runs for these inputs (printable)."""
        from .ir.printer import ScriptGraph
        inputs = self._inputs(args, kwargs)
        return ScriptGraph(self._get_executor().graph_for(*inputs))

    def get_debug_state(self) -> dict:
        """What the graph executor holds (torch's ``get_debug_state``): its plans by input
        signature (each prints its instruction list; ``plan.source`` is the generated Python),
        the optimised and profiled graphs, and run counters.

            fn(x); fn(x)
            print(next(iter(fn.get_debug_state()["plans"].values())))
        """
        return self._get_executor().debug_state()

    # -- running --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        executor = self._executor
        if executor is not None and not kwargs and len(args) == self._tensor_arity \
                and all(isinstance(a, self._tensor_cls) for a in args):
            return executor.run(*self._receiver, *args)  # fast path: all-Tensor signature
        return self._run(self._inputs(args, kwargs))

    def _get_executor(self):
        # created on the first call, so its profiling runs and per-signature plans persist across calls
        if self._executor is None:
            from .executor import GraphExecutor
            self._executor = GraphExecutor(self._graph)
        return self._executor

    def _run(self, inputs: list):
        return self._get_executor().run(*inputs)

    def _inputs(self, args, kwargs) -> list:
        """[*receiver, *arguments]: `args`/`kwargs` bound to the schema (defaults filled, types checked)."""
        decl = self._declaration
        if decl is None:
            decl = self._declaration = signature_str(self.schema)
        params = self._params

        def fail(kind, **fields):
            return RuntimeError(f"{ARGUMENT_ERRORS[kind][1].format(fn=self.name, **fields)} Declaration: {decl}")
        values = bind_arguments(params, args, kwargs, fail)
        for i, (p, v) in enumerate(zip(params, values)):
            values[i] = check_argument(self.name, i + self._skip, p, v, decl)
        receiver = self._receiver
        return [*receiver, *values] if receiver else values
