"""Test helpers (torch._dynamo.testing): backends that count and record what they are handed.

    cnt = CompileCounter()
    f = ember.compile(fn, backend=cnt)
    f(x); cnt.frame_count, cnt.op_count     # graphs compiled, call nodes in them

    rec = EagerAndRecordGraphs()
    ember.compile(fn, backend=rec)(x); rec.graphs[0].print_readable()
"""
from __future__ import annotations

import re

from .backends import lookup_backend


def _count_ops(gm) -> int:
    return sum(1 for node in gm.graph.nodes if "call" in node.op)


class CompileCounter:
    """Backend that counts graphs (frame_count) and call nodes (op_count), then runs gm.forward."""

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += _count_ops(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0


class CompileCounterWithBackend:
    """Like CompileCounter, then hands the graph to `backend` (a name or callable); keeps the graphs."""

    def __init__(self, backend):
        self.frame_count = 0
        self.op_count = 0
        self.backend = backend
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += _count_ops(gm)
        self.graphs.append(gm)
        return lookup_backend(self.backend)(gm, example_inputs)

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs.clear()


class EagerAndRecordGraphs:
    """Backend that keeps every GraphModule it is handed (``graphs``) and runs it as is."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def normalize_gm(gm_str: str) -> str:
    """A printed GraphModule with comments and trailing blanks removed (stable across paths/versions).

        normalize_gm(gm.print_readable(print_output=False))
    """
    lines = []
    for line in gm_str.splitlines():
        line = re.sub(r"\s+#.*$", "", line).rstrip()
        if line.strip().startswith("#") or not line.strip():
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"
