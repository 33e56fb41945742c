"""The graph executor for scripted functions (seed 001: GraphExecutor, ProfilingGraphExecutorImpl,
InterpreterStateImpl).

- ``instructions.compile_graph(graph) -> Plan``: the graph (with nested If/Loop blocks) as a flat
  instruction list over a register file;
- ``interpreter.run_plan(plan, inputs)``: the reference run loop; ``codegen.generate(plan)``:
  the same instructions as one generated Python function (the fast path);
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
