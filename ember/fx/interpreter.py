"""Interpreter and Transformer: run a Graph node by node, with one override point per opcode.

    >>> class NegSigmSwap(Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         if target == ember.sigmoid:
    ...             return ember.neg(*args, **kwargs)
    ...         return super().call_function(target, args, kwargs)
    >>> NegSigmSwap(gm).run(ember.randn(3, 4))

`Interpreter.run` walks ``graph.nodes`` in order; ``run_node`` looks up the node's argument
values in ``env`` (Node -> value) and calls the method named by ``node.op`` with
``(target, args, kwargs)``. Values are dropped from ``env`` right after their last use, so a
long graph does not keep every intermediate alive (what torch.fx does too).

`Transformer` is an Interpreter whose values are Proxies recording into a new Graph: overriding
``call_function`` and friends rewrites the graph, ``transform()`` returns the new GraphModule.
"""
from __future__ import annotations

import inspect

from .node import Node, map_arg

__all__ = ["Interpreter", "Transformer"]


def _last_uses(graph) -> dict:
    """user node -> the nodes whose last use (in execution order) is that user."""
    seen: set = set()
    last_uses: dict = {}
    for node in reversed(graph.nodes):
        for inp in node.all_input_nodes:
            if inp not in seen:
                seen.add(inp)
                last_uses.setdefault(node, []).append(inp)
    return last_uses


class Interpreter:
    """Runs `module.graph` (or `graph`) on concrete values, one overridable method per opcode.

    >>> Interpreter(gm).run(ember.ones(2))      # same as gm(ember.ones(2))

    Args:
        module: the Module whose attributes/submodules get_attr/call_module nodes read
            (usually the GraphModule that owns the graph).
        garbage_collect_values: drop each value from ``env`` after its last use.
        graph: interpret this graph instead of ``module.graph``.
    """

    def __init__(self, module, garbage_collect_values: bool = True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules()) if hasattr(module, "named_modules") else {}
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses = _last_uses(self.graph) if garbage_collect_values else {}

    # -- driving --------------------------------------------------------------------------
    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        """Run the graph on `args` (consumed by placeholders in order) and return the output value.

        >>> Interpreter(gm).run(x, y)

        `initial_env` pre-fills values for some nodes (those nodes are not run: partial evaluation).
        """
        self.env = initial_env if initial_env is not None else {}
        process_inputs = getattr(self.graph, "process_inputs", None)
        if enable_io_processing and process_inputs is not None:
            args = process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue                       # pre-populated by the caller
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    self._annotate(e, node)
                    if isinstance(e, KeyError):   # KeyError's str() quotes its message: re-raise readable
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                value = self.env[node]
                process_outputs = getattr(self.graph, "process_outputs", None)
                if enable_io_processing and process_outputs is not None:
                    return process_outputs(value)
                return value
        return None

    def _annotate(self, e: Exception, node) -> None:
        """Append which node failed (and the user's source line) to the exception message."""
        where = f"While executing {node.format_node()}"
        stack = node.meta.get("stack_trace") if isinstance(getattr(node, "meta", None), dict) else None
        if stack:
            where += f"\nOriginal traceback:\n{stack}"
        if e.args and isinstance(e.args[0], str):
            e.args = (f"{e.args[0]}\n\n{where}",) + e.args[1:]
        elif not e.args:
            e.args = (where,)

    def boxed_run(self, args_list: list):
        """Run with the boxed convention: `args_list` is cleared so inputs can be freed early.

        >>> Interpreter(gm).boxed_run([x, y])
        """
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                               f"but received {len(args_list)} ({detail})")
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node):
        """Run one node: fetch its argument values and call the method named by ``n.op``.

        >>> interp.run_node(node)   # e.g. -> self.call_function(node.target, args, kwargs)
        """
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per opcode ------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        """The next positional input (``*args`` placeholders take the rest; defaults come from args[0])."""
        if not isinstance(target, str):
            raise TypeError(f"Interpreter.placeholder: expected a str target, got {type(target).__name__}")
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as stop:
            if len(args) > 0:
                return args[0]             # the placeholder's default value
            raise RuntimeError(f"Expected positional argument for parameter {target}, "
                               f"but one was not passed in!") from stop

    def get_attr(self, target, args, kwargs):
        """The attribute `target` (a dotted path) of ``self.module``."""
        if not isinstance(target, str):
            raise TypeError(f"Interpreter.get_attr: expected a str target, got {type(target).__name__}")
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        """``target(*args, **kwargs)``."""
        if isinstance(target, str):
            raise TypeError("Interpreter.call_function: target should be a callable, not a string")
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        """``args[0].<target>(*args[1:], **kwargs)``."""
        if not isinstance(target, str):
            raise TypeError(f"Interpreter.call_method: expected a str target, got {type(target).__name__}")
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        """Call the submodule at path `target` of ``self.module``."""
        if not isinstance(target, str):
            raise TypeError(f"Interpreter.call_module: expected a str target, got {type(target).__name__}")
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        """The value the output node returns (its single argument)."""
        return args[0]

    # -- helpers --------------------------------------------------------------------------
    def fetch_attr(self, target: str):
        """Follow the dotted path `target` from ``self.module``.

        >>> Interpreter(gm).fetch_attr("layer.weight")
        """
        value = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        """``(args, kwargs)`` of `n` with every Node replaced by its value in ``env``."""
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise TypeError(f"Interpreter.fetch_args_kwargs_from_env: node {n} has args of type "
                            f"{type(n.args).__name__} and kwargs of type {type(n.kwargs).__name__}; "
                            f"expected a tuple and a dict")
        return args, kwargs

    def map_nodes_to_values(self, args, n: Node):
        """`args` (nested tuples/lists/dicts) with every Node replaced by its value in ``env``.

        `n` (the node the args belong to) only names the culprit in the error message.
        """
        def load(arg):
            if arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {arg}! "
                                   f"Run Graph.lint() to diagnose such issues")
            return self.env[arg]
        return map_arg(args, load)


class Transformer(Interpreter):
    """An Interpreter that runs on Proxies, so the calls it makes are recorded into a new graph.

    >>> class NegSigmSwapXformer(Transformer):
    ...     def call_function(self, target, args, kwargs):
    ...         if target is ember.sigmoid:
    ...             return ember.neg(*args, **kwargs)
    ...         return super().call_function(target, args, kwargs)
    >>> new_gm = NegSigmSwapXformer(gm).transform()

    While ``transform()`` runs, ember's public functions record when given a Proxy (the same
    patch symbolic_trace uses), so overrides can call ``ember.neg(proxy)`` or ``proxy.sigmoid()``;
    ``run_node`` hands call_function overrides the patched name, so ``target is ember.sigmoid``
    still holds, and the recorded targets are the original functions.
    call_module nodes stay call_module nodes (submodules are leaves).
    """

    def __init__(self, module):
        super().__init__(module)
        from .graph import Graph
        from .proxy import GraphAppendingTracer
        self.new_graph = Graph()
        codegen = getattr(module.graph, "_codegen", None)
        if codegen is not None and hasattr(self.new_graph, "set_codegen"):
            self.new_graph.set_codegen(codegen)
        self.tracer = GraphAppendingTracer(self.new_graph)
        self.tracer.root = module

    def _proxy(self, node):
        from .proxy import Proxy
        return Proxy(node, self.tracer)

    def placeholder(self, target, args, kwargs):
        """A new placeholder (same name and default) in the new graph."""
        default = next(iter(args)) if args else inspect.Signature.empty
        return self._proxy(self.new_graph.placeholder(target, default_value=default))

    def get_attr(self, target, args, kwargs):
        """A get_attr node in the new graph (reading the same attribute of the root module)."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def run_node(self, n):
        """Like Interpreter.run_node, but a call_function target is handed to the override as the
        name it has while transform() runs, so ``target is ember.sigmoid`` holds there too."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        target = n.target
        if n.op == "call_function":
            from . import _symbolic_trace
            by_id = getattr(_symbolic_trace, "_BY_ID", None) or {}
            target = by_id.get(id(target), target)
        return getattr(self, n.op)(target, args, kwargs)

    def call_function(self, target, args, kwargs):
        """Record ``call_function(target)`` in the new graph (the original function, not its wrapper)."""
        if getattr(target, "__fx_recording__", False):
            target = target.__wrapped__
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        """Record ``call_method(target)`` in the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        """Record ``call_module(target)`` in the new graph (the submodule is not traced into)."""
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self):
        """Run the graph symbolically and return a GraphModule over the recorded graph.

        >>> new_gm = Transformer(gm).transform()     # an identical copy of gm
        """
        from .graph_module import GraphModule
        from .proxy import Proxy
        patch = _recording_patch()
        with patch:
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip(a):
                return a.node if isinstance(a, Proxy) else a
            from .node import map_aggregate
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)


class _recording_patch:
    """Context manager: ember's public functions record calls on Proxies (symbolic_trace's patch)."""

    def __enter__(self):
        from . import _symbolic_trace
        self._trace = _symbolic_trace
        _symbolic_trace._apply_table()
        return self

    def __exit__(self, *exc):
        self._trace._undo_table()
        return False
