"""ember.fx: the one graph IR every frontend produces and every backend consumes.

    gm = ember.fx.symbolic_trace(lambda x: ember.sigmoid(x).neg())
    gm.graph.print_tabular()      # the graph as a table
    print(gm.code)                # the Python that GraphModule generated from it
    gm(ember.randn(3))            # runs it

Names are loaded on first use (the table below says from where), so importing ember stays cheap.
"""
from __future__ import annotations

import importlib

_EXPORTS = {  # public name -> module (relative to ember.fx) that defines it
    "Node": ".node", "map_arg": ".node", "map_aggregate": ".node", "has_side_effect": ".node",
    "Graph": ".graph",
    "GraphModule": ".graph_module",
    "Proxy": ".proxy", "Attribute": ".proxy", "TraceError": ".proxy",
    "Tracer": "._symbolic_trace", "symbolic_trace": "._symbolic_trace", "wrap": "._symbolic_trace",
    "Interpreter": ".interpreter", "Transformer": ".interpreter",
    "replace_pattern": ".subgraph_rewriter",
}

__all__ = list(_EXPORTS)


def _lazy_exports(namespace: dict, exports: dict, submodules: tuple = ()):
    """A module ``__getattr__`` for the package whose globals are `namespace` (the one of ember.fx,
    ember.fx.passes, ember.jit and ember._dynamo): a name of `exports` (name -> the module, relative
    to the package, that defines it) is imported on first use and kept in `namespace`; a name of
    `submodules` imports that submodule; any other raises AttributeError.

        __getattr__ = _lazy_exports(globals(), {"Graph": ".graph"}, ("passes",))
    """
    package = namespace["__name__"]

    def __getattr__(name):
        if name in submodules:
            return importlib.import_module(f".{name}", package)
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        namespace[name] = getattr(importlib.import_module(module, package), name)
        return namespace[name]
    return __getattr__


__getattr__ = _lazy_exports(globals(), _EXPORTS, ("passes", "subgraph_rewriter", "interpreter", "node", "graph",
                                                   "graph_module", "proxy"))
