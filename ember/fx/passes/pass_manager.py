"""PassManager: run a list of graph passes in order, log the graph after each, say which changed it.

    >>> pm = PassManager([eliminate_common_subexpressions, eliminate_dead_code], log=print)
    >>> result = pm(gm)
    >>> result.modified, result.changed_passes     # True, ['eliminate_common_subexpressions', ...]

A pass is any callable ``pass(gm) -> PassResult | GraphModule | None``. The passes in this package
modify the GraphModule in place and return ``PassResult(gm, modified)``; for a pass that returns
something else, the manager finds out whether it changed the graph by comparing the graph's text.
The graph after each pass goes to `log` (any ``print``-like callable) and to the ``passes``
artifact of ember's logging (``EMBER_LOGS=passes``).
"""
from __future__ import annotations

import dataclasses
import os
import sys

__all__ = ["PassResult", "PassManagerResult", "PassManager"]


@dataclasses.dataclass
class PassResult:
    """What one pass returns: the (possibly new) GraphModule and whether the graph changed."""
    graph_module: object
    modified: bool


@dataclasses.dataclass
class PassManagerResult:
    """What PassManager returns: the final GraphModule, whether any pass changed it, and which did."""
    graph_module: object
    modified: bool
    changed_passes: list

    def __str__(self):
        changed = ", ".join(self.changed_passes) or "none"
        return f"PassManagerResult(modified={self.modified}, changed_passes=[{changed}])"


def finish(name: str, gm, modified: bool) -> PassResult:
    """The end of every pass of this package: log the graph after pass `name`
    (EMBER_JIT_LOG_LEVEL), recompile a changed GraphModule, and say what happened."""
    from .jit_log import log_graph
    log_graph(name, getattr(gm, "graph", gm))
    if modified and hasattr(gm, "recompile"):
        gm.recompile()
    return PassResult(gm, modified)


def until_unchanged(step, max_rounds: int) -> bool:
    """Run ``step() -> changed`` until a round changes nothing (at most `max_rounds` rounds: the
    rewrite passes' fixpoint); True if any round changed the graph."""
    changed = False
    for _ in range(max_rounds):
        if not step():
            break
        changed = True
    return changed


def pass_name(p) -> str:
    """A readable name for a pass: its function name, or its class name for callable objects."""
    return getattr(p, "__name__", None) or type(p).__name__


def _log_passes_artifact(text_fn) -> None:
    """Send a message to ember's logging artifact "passes" (EMBER_LOGS=passes)."""
    try:
        from ember import _logging
    except ImportError:
        _logging = None
    if _logging is not None and "passes" in getattr(_logging, "ARTIFACTS", ()):
        _logging.trace_log("passes", text_fn)
    elif "passes" in os.environ.get("EMBER_LOGS", "").replace(" ", "").split(","):
        print(text_fn(), file=sys.stderr)     # a logging module without the artifact: honour the variable


class PassManager:
    """Runs `passes` over a GraphModule, in order.

    >>> PassManager([eliminate_dead_code], log=print, run_checks_after_each_pass=True)(gm)

    Args:
        passes: callables ``gm -> PassResult | GraphModule | None``.
        log: called with the graph's text after each pass (e.g. ``print``); None: no log unless
            the ``passes`` logging artifact is on.
        run_checks_after_each_pass: run ``graph.lint()`` after every pass (a broken graph is
            reported with the name of the pass that broke it).
        steps: run the whole list up to this many times, stopping early when a round changes nothing.
    """

    def __init__(self, passes=None, *, log=None, run_checks_after_each_pass: bool = False, steps: int = 1):
        self.passes = list(passes or [])
        self.log = log
        self.run_checks_after_each_pass = run_checks_after_each_pass
        if steps < 1:
            raise ValueError(f"PassManager: steps must be >= 1, got {steps}")
        self.steps = steps

    def add_pass(self, p) -> None:
        """Append a pass to the list."""
        self.passes.append(p)

    def __call__(self, gm) -> PassManagerResult:
        """Run the passes on `gm`; returns PassManagerResult(graph_module, modified, changed_passes)."""
        changed: list = []
        for _ in range(self.steps):
            round_changed = False
            for p in self.passes:
                name = pass_name(p)
                before = str(gm.graph)
                result = p(gm)
                if isinstance(result, PassResult):
                    gm, modified = result.graph_module, result.modified
                else:
                    if result is not None:
                        gm = result
                    modified = str(gm.graph) != before
                if modified:
                    round_changed = True
                    if name not in changed:
                        changed.append(name)
                    if hasattr(gm, "recompile"):
                        gm.recompile()
                if self.run_checks_after_each_pass:
                    try:
                        gm.graph.lint()
                    except Exception as e:
                        raise RuntimeError(f"PassManager: the graph is malformed after pass {name}: {e}") from e
                self._emit(name, modified, gm)
            if not round_changed:
                break
        return PassManagerResult(gm, bool(changed), changed)

    def _emit(self, name, modified, gm) -> None:
        def text():
            state = "changed the graph" if modified else "left the graph unchanged"
            return f"[pass {name}] {state}\n{gm.graph}"
        if self.log is not None:
            self.log(text())
        _log_passes_artifact(text)

    def __repr__(self):
        return f"PassManager([{', '.join(pass_name(p) for p in self.passes)}])"
