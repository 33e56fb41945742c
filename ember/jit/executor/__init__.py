"""The graph executor for scripted functions (seed 001: GraphExecutor, ProfilingGraphExecutorImpl,
InterpreterStateImpl).

- ``codegen.generate(graph)``: the graph as one Python function, written by ember.fx's code
  generator (``if``/``for``/``while`` from the If/Loop blocks) with direct operator calls in
  optimised plans: the fast path;
- ``instructions.compile_graph(graph) -> Plan`` and ``interpreter.run_plan(plan, inputs)``: the
  graph as a flat instruction list over a register file and its run loop, seed 001's reference
  state machine (shown by ``get_debug_state``; runs with ``config.use_codegen = False``);
- ``GraphExecutor(graph)``: profiling runs, optimised plans specialised per input signature,
  bailout to the generic plan, the fusion hook.

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
