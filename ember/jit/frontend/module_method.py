"""``ScriptMethod``: one compiled method of a scripted module (``forward``, helpers, exports).

    m = ember.jit.script(MyModule())
    m.forward.graph / m.helper.code      # via RecursiveScriptModule
    info.method("forward")(x)            # binds x, checks its type, runs the graph with the module as input 0

The graph comes from the frontend (``to_ir.compile_function(fn, self_info=info, name=...)``) or,
for a few builtin modules, from a builder (``module_builtins.sequential_forward``). Running goes
through ``ember.jit.executor.GraphExecutor`` (created on the first call, so its profiling runs
and per-signature plans persist across calls) with the scripted module object as input 0.
"""
from __future__ import annotations

from ..ir.types import NO_DEFAULT, FloatType, OptionalType, TensorType, type_of_value

# Attribute names the ignore/unused/export decorators may set (ours and A1's spellings).
_MODIFIER_ATTRS = ("_ember_jit_modifier", "_jit_modifier", "_ember_modifier", "_torchscript_modifier")


def modifier_of(fn) -> str | None:
    """"ignore", "unused", "export" or None: what a jit decorator marked `fn` as."""
    for attr in _MODIFIER_ATTRS:
        value = getattr(fn, attr, None)
        if value is not None:
            text = str(getattr(value, "name", value)).lower()
            for word in ("ignore", "unused", "export"):
                if word in text:
                    return word
    if getattr(fn, "_ember_jit_ignore", False) or getattr(fn, "__ember_jit_ignore__", False):
        return "ignore"
    if getattr(fn, "_ember_jit_unused", False) or getattr(fn, "__ember_jit_unused__", False):
        return "unused"
    return None


class ScriptMethod:
    """A compiled method of a scripted module: ``.graph`` (inlined, printable), ``.code``,
    ``.schema``, ``._graph`` (the un-inlined fx Graph), ``graph_for(*args)``; calling it runs it."""

    def __init__(self, owner, name: str, fn=None, builder=None):
        self.owner = owner          # the ModuleInfo
        self.name = self.__name__ = name
        self.original_fn = fn
        if builder is not None:
            graph, schema = builder(owner)
        else:
            from .to_ir import compile_function
            graph, schema = compile_function(fn, self_info=owner, name=name)
        self._graph = graph
        self.schema = schema
        self._inlined = None
        self._executor = None
        import ember
        self._tensor_cls = ember.Tensor
        params = schema.arguments[1:]
        # the number of arguments when every one is a Tensor (the fast call path), else -1
        self._tensor_arity = len(params) if all(type(p.type) is TensorType for p in params) else -1

    def __repr__(self):
        return f"<ScriptMethod {self.owner.qualified_name}.{self.name}>"

    # -- inspection -----------------------------------------------------------------------------
    @property
    def _graph_uninlined(self):
        return self._graph

    @property
    def inlined_fx_graph(self):
        """The fx Graph with every scripted call replaced by its callee's graph."""
        if self._inlined is None:
            self._inlined = inline_calls(self._graph)
        return self._inlined

    @property
    def graph(self):
        """The inlined graph; ``str()`` prints it TorchScript-style."""
        from ..ir.printer import ScriptGraph
        return ScriptGraph(self.inlined_fx_graph)

    inlined_graph = graph

    @property
    def code(self) -> str:
        """Python-like source rebuilt from the (un-inlined, like TorchScript) graph."""
        from ..ir.code import format_code
        return format_code(self._graph, self.name)

    def graph_for(self, *args, **kwargs):
        """The optimised graph the executor runs for these inputs (printable)."""
        from ..ir.printer import ScriptGraph
        inputs = self._inputs(args, kwargs)
        executor = self._get_executor()
        if executor is None:
            return self.graph
        return ScriptGraph(executor.graph_for(*inputs))

    # -- running --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        executor = self._executor
        if executor is not None and not kwargs and len(args) == self._tensor_arity \
                and all(isinstance(a, self._tensor_cls) for a in args):
            return executor.run(self.owner.scripted, *args)  # fast path: all-Tensor signature
        inputs = self._inputs(args, kwargs)
        executor = self._get_executor()
        if executor is None:
            from ..ir.evaluate import evaluate
            return evaluate(self.inlined_fx_graph, inputs)
        return executor.run(*inputs)

    def _get_executor(self):
        if self._executor is None:
            try:
                from ..executor import GraphExecutor
            except ImportError:
                return None
            self._executor = GraphExecutor(self._graph)
        return self._executor

    def _inputs(self, args, kwargs) -> list:
        """[module, *arguments]: `args`/`kwargs` bound to the schema (defaults filled, types checked)."""
        params = self.schema.arguments[1:]
        qual = f"{self.name}()"
        if len(args) > len(params):
            raise RuntimeError(f"{qual} expected at most {len(params)} argument(s) but received {len(args)} "
                               f"argument(s). Declaration: {self.schema}")
        values = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                values.append(kwargs.pop(p.name))
            elif p.default is not NO_DEFAULT:
                values.append(p.default)
            else:
                raise RuntimeError(f"{qual} is missing value for argument '{p.name}'. Declaration: {self.schema}")
        if kwargs:
            name = next(iter(kwargs))
            dup = any(p.name == name for p in params[:len(args)])
            raise RuntimeError(f"{qual} got multiple values for argument '{name}'" if dup else
                               f"{qual} got an unexpected keyword argument '{name}'")
        for i, (p, v) in enumerate(zip(params, values)):
            values[i] = check_argument(qual, p, v)
        return [self.owner.scripted, *values]


def check_argument(qual: str, param, value):
    """`value` for parameter `param` (int promoted to float where float is expected); a
    RuntimeError like torch's ``Expected a value of type 'Tensor' for argument 'x' ...`` otherwise."""
    expected = param.type
    if isinstance(expected, FloatType) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(expected, OptionalType) and isinstance(expected.elem, FloatType) \
            and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    from ..ir.types import DictType, ListType
    if isinstance(expected, ListType) and isinstance(value, (list, tuple)) and all(
            _fits(v, expected.elem) for v in value):
        return list(value)  # tuples pass for lists, as in torch
    if isinstance(expected, DictType) and isinstance(value, dict) and not value:
        return value
    try:
        actual = type_of_value(value)
    except ValueError:
        actual = None
    if actual is not None and actual.is_subtype_of(expected):
        return value
    if isinstance(expected, TensorType) or actual is None or not _loosely_ok(actual, expected):
        found = type(value).__name__ if actual is None else str(actual)
        raise RuntimeError(f"{qual} Expected a value of type '{expected}' for argument '{param.name}' but "
                           f"instead found type '{found}'.")
    return value


def _fits(value, expected) -> bool:
    """`value` can be an element of a list of `expected` (ints count as floats)."""
    if isinstance(expected, FloatType) and isinstance(value, int) and not isinstance(value, bool):
        return True
    try:
        return type_of_value(value).is_subtype_of(expected)
    except ValueError:
        return False


def _loosely_ok(actual, expected) -> bool:
    # types type_of_value cannot pin down exactly (tuples of mixed Optionals, Any) pass through
    from ..ir.types import AnyType, DictType, TupleType
    return isinstance(expected, (AnyType, TupleType, DictType)) and type(actual) is type(expected)


def inline_calls(graph):
    """A copy of `graph` with prim::CallMethod/CallFunction (those with a callee) inlined.

    Uses the Inline pass when it exists (ember.jit.passes.inline), else ir.inline_graph."""
    from .. import ir
    g = ir.clone(graph)
    try:
        from .. import passes
        inline = getattr(passes, "inline", None)
    except ImportError:
        inline = None
    if callable(inline):
        return inline(g)
    _inline_in_place(g)
    return g


def _inline_in_place(graph) -> None:
    from .. import ir
    from ..ir import prim
    for node in list(ir.walk(graph)):
        if node.target not in (prim.CallMethod, prim.CallFunction) or "callee" not in node.meta:
            continue
        callee = node.meta["callee"]
        sub = ir.clone(getattr(callee, "_graph", None))
        _inline_in_place(sub)
        inputs = [node.args[0], *node.args[2:]] if node.target is prim.CallMethod else list(node.args)
        result = ir.inline_graph(node.graph, node, sub, inputs)
        node.replace_all_uses_with(result)
        node.graph.erase_node(node)
