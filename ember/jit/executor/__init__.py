"""The graph executor for scripted functions (seed 001: GraphExecutor, ProfilingGraphExecutorImpl,
InterpreterStateImpl): ``graph_executor`` (profiling runs, plans per input signature, bailouts),
``codegen`` (a plan as Python written by ember.fx's code generator: the fast path), and
``instructions`` + ``interpreter`` (a flat instruction list and its run loop: seed 001's reference
state machine, run with ``config.use_codegen = False`` and shown by ``get_debug_state``).

    run_graph(graph, [x, y])                # one unoptimised run
    ex = GraphExecutor(graph); ex.run(x, y)
"""
from __future__ import annotations

from . import config  # noqa: F401
from .graph_executor import (GraphExecutor, clear_fusion_passes, register_fusion_pass,  # noqa: F401
                             run_graph)
from .instructions import Plan, compile_graph  # noqa: F401
from .interpreter import run_plan  # noqa: F401

__all__ = ["GraphExecutor", "run_graph", "register_fusion_pass", "clear_fusion_passes", "compile_graph",
           "run_plan", "Plan", "config"]
