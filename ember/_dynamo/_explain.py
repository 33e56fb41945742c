"""explain(fn)(*args): compile fn (and the frames its graph breaks create) and report what happened.

    out = ember._dynamo.explain(toy_example)(ember.randn(10), ember.randn(10))
    out.graph_count, out.graph_break_count      # 2, 1 for seed 003's toy_example
    print(out)                                  # Graph Count / Break Reasons / Ops per Graph / Out Guards

Like torch._dynamo.explain: a fresh compile with a recording backend, run once on the arguments.
"""
from __future__ import annotations

import dataclasses
import time
import traceback

from .guards import GUARD_KINDS


@dataclasses.dataclass
class GraphCompileReason:
    """One graph break: why, and where in the user's code (``user_stack``: FrameSummary list)."""
    reason: str
    user_stack: list
    source_line: str = ""


@dataclasses.dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list
    out_guards: list
    compile_times: str

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, br in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {br.reason}", "    User Stack:"]
            for fs in br.user_stack:
                lines.append(f"      <FrameSummary file {fs.filename}, line {fs.lineno} in {fs.name}>")
            if br.source_line:
                lines.append(f"        {br.source_line.strip()}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines += [f"    {_op_name(op)}" for op in ops]
        lines.append("Out Guards:")

        for i, g in enumerate(self.out_guards, 1):
            short = g.source.short_name() if g.source is not None else ""
            code = GUARD_KINDS[g.kind].describe(g.expected, g.source.name() if g.source is not None else short)
            lines += [f"  Guard {i}:", f"    Name: {g.name()!r}",
                      f"    Source: {_scope(g)}", f"    Create Function: {g.kind}",
                      f"    Code List: [{code!r}]"]
        lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"


def _op_name(op) -> str:
    name = getattr(op, "name", None)
    if isinstance(name, str) and "::" in name:
        return name
    return repr(op) if not isinstance(op, str) else op


def _scope(guard) -> str:
    from .source import GlobalSource, ModuleGlobalSource
    if guard.source is None:
        return "global"
    return "global" if isinstance(guard.source.root(), (GlobalSource, ModuleGlobalSource)) else "local"


def explain(fn, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs) -> ExplainOutput`` (the old ``explain(fn, *args)`` form also works)."""
    def inner(*args, **kwargs):
        from . import eval_frame
        from .testing import EagerAndRecordGraphs
        recorder = EagerAndRecordGraphs()
        results, times = [], []

        def observe(code, result, error):
            times.append((code.co_name, time.perf_counter()))
            results.append((code, result, error))

        eval_frame.compile_observers.append(observe)
        started = time.perf_counter()
        try:
            eval_frame.compile(fn, backend=recorder)(*args, **kwargs)
        finally:
            eval_frame.compile_observers.remove(observe)
        reasons, guards = [], []
        for code, result, error in results:
            found = list(result.break_reasons) if result is not None else []
            if error is not None and getattr(error, "reason", None):
                found.append(error.break_reason() if hasattr(error, "break_reason") else error)
            for br in found:
                stack = [traceback.FrameSummary(br.filename or code.co_filename, br.lineno or code.co_firstlineno,
                                                code.co_name, line=br.source_line or None)]
                reasons.append(GraphCompileReason(br.reason, stack, br.source_line))
            if result is not None:
                guards.extend(result.guards)
        ops = [[n.target for n in gm.graph.nodes if n.op == "call_function"] for gm in recorder.graphs]
        compile_times = ", ".join(f"{name}: {(t - started) * 1000:.1f} ms" for name, t in times)
        return ExplainOutput(list(recorder.graphs), len(recorder.graphs), len(reasons), reasons,
                             sum(len(o) for o in ops), ops, guards, compile_times)

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner

