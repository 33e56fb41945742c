"""``ScriptMethod``: one compiled method of a scripted module (``forward``, helpers, exports).

    m = ember.jit.script(MyModule())
    m.forward.graph / m.helper.code      # via RecursiveScriptModule
    info.method("forward")(x)            # binds x, checks its type, runs the graph with the module as input 0

The graph comes from the frontend (``to_ir.compile_function(fn, self_info=info, name=...)``) or,
for a few builtin modules, from a builder (``module_builtins.sequential_forward``). Binding,
checking and running are ``ember.jit._callable.CompiledGraphCallable``'s, with the scripted module
object as input 0.
"""
from __future__ import annotations

from .._callable import CompiledGraphCallable


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
