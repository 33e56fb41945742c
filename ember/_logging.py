"""Compiler logs by artifact, like TORCH_LOGS / torch._logging.set_logs.

    EMBER_LOGS="graph_code,graph,guards,bytecode,recompiles,graph_breaks" python prog.py
    ember._logging.set_logs(graph=True, guards=True)     # the same from Python
    trace_log("guards", lambda: format_guards(gs))        # producers: text built only when enabled

Artifacts: graph (print_tabular under "__compiled_fn_0 <eval_with_key>.1"), graph_code (the
GraphModule's Python), bytecode (ORIGINAL/MODIFIED BYTECODE), guards (seed 003's GUARDS: block),
recompiles, graph_breaks, output_code, aot_joint_graph (AOT autograd's joint graph), aot_graphs
(its forward, backward and inference graphs, and why a graph runs eagerly), cudagraphs (why
mode="reduce-overhead" runs a graph without CUDA graphs), autotuning (the Triton tuner's timings and
pick), dynamo (everything above). Text goes to sys.stderr as it is
at the time of the call (so pytest's capsys sees it).
"""
from __future__ import annotations

import os
import sys

ARTIFACTS = ("graph", "graph_code", "bytecode", "guards", "recompiles", "graph_breaks", "output_code",
             "recompiles_verbose", "passes", "aot_graphs", "aot_joint_graph", "schedule", "fusion", "cudagraphs", "autotuning", "dynamo")
# passes: ember.fx.passes.PassManager; aot_graphs / aot_joint_graph: ember._functorch.aot_autograd;
# schedule / fusion: the fuser (ember/_inductor/scheduler.py)

_enabled: set = set()


def _parse(spec: str) -> set:
    names = set()
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        name = part.lstrip("+-")
        if name not in ARTIFACTS:
            raise ValueError(f"EMBER_LOGS: unknown artifact {name!r}; known: {', '.join(ARTIFACTS)}")
        if part.startswith("-"):
            names.discard(name)
        else:
            names.add(name)
    if "dynamo" in names:
        names.update(ARTIFACTS)
    return names


def set_logs(**artifacts) -> None:
    """Turn artifacts on or off: ``set_logs(graph_code=True, guards=True)``; ``set_logs()`` turns all off
    and then applies $EMBER_LOGS again (as torch's set_logs resets to TORCH_LOGS' settings)."""
    unknown = [name for name in artifacts if name not in ARTIFACTS]
    if unknown:
        raise ValueError(f"set_logs: unknown artifact(s) {unknown}; known: {', '.join(ARTIFACTS)}")
    _enabled.clear()
    _enabled.update(_parse(os.environ.get("EMBER_LOGS", "")))
    for name, on in artifacts.items():
        if name == "dynamo":
            (_enabled.update if on else _enabled.difference_update)(ARTIFACTS)
        elif on:
            _enabled.add(name)
        else:
            _enabled.discard(name)


def enabled(artifact: str) -> bool:
    """Whether `artifact` is being logged."""
    return artifact in _enabled


def trace_log(artifact: str, text_fn) -> None:
    """Write ``text_fn()`` (a callable, so nothing is formatted when the artifact is off; a str also
    works) to stderr if `artifact` is on."""
    if artifact not in _enabled:
        return
    text = text_fn() if callable(text_fn) else str(text_fn)
    sys.stderr.write(text.rstrip("\n") + "\n\n")


def format_graph_table(name: str, gm) -> str:
    """Seed 003's graph block: ``__compiled_fn_0 <eval_with_key>.1`` then the print_tabular table."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        gm.graph.print_tabular()
    key = getattr(gm, "_eval_key", None) or getattr(getattr(gm, "forward", None), "__module__", None) or ""
    return f"{name} {key}".rstrip() + "\n" + buf.getvalue()


class lazy_logger:  # noqa: N801 - used like logging.getLogger
    """``logging.getLogger(name)`` made on first use: logging costs 5-10 ms to import, which a warm
    start of the compiler (it logs nothing) does not pay. ``log = lazy_logger("ember.x"); log.warning(...)``"""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, attr):
        import logging
        return getattr(logging.getLogger(self.name), attr)

try:
    _enabled.update(_parse(os.environ.get("EMBER_LOGS", "")))
except ValueError as e:  # a typo in the environment must not break `import ember`
    sys.stderr.write(f"ember: ignoring EMBER_LOGS: {e}\n")
