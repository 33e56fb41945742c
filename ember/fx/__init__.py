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


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        if name in ("passes", "subgraph_rewriter", "interpreter", "node", "graph", "graph_module", "proxy"):
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module 'ember.fx' has no attribute '{name}'")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
