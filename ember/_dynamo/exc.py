"""Errors raised while capturing a frame, and the record of a graph break.

    try:
        ...
    except Unsupported as e:
        print(e.reason, e.source_line)     # "call to print", "    print(x)"
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class GraphBreakReason:
    """Why and where capture stopped: ``GraphBreakReason("call to print", "/x.py", 9, "print(a)")``."""
    reason: str
    filename: str = ""
    lineno: int = 0
    source_line: str = ""

    def __str__(self):
        return f"{self.reason} ({self.filename}:{self.lineno}: {self.source_line.strip()})"


class Unsupported(RuntimeError):
    """Something the translator cannot put in a graph (a graph break, or a whole-frame fallback).

    ``reason`` says what (e.g. "data-dependent branch on a tensor"); ``filename``/``lineno``/``source_line``
    say where in the user's code, filled in by the translator when it knows the instruction.
    """

    def __init__(self, reason: str, *, filename: str = "", lineno: int = 0, source_line: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line
        self.can_break = True   # False: no graph break possible (e.g. inside a loop or try): run the frame eagerly

    def set_location(self, filename: str, lineno: int, source_line: str) -> None:
        """Record the user's line once (the innermost frame that saw the error wins)."""
        if not self.filename:
            self.filename, self.lineno, self.source_line = filename, lineno, source_line

    def break_reason(self) -> GraphBreakReason:
        return GraphBreakReason(self.reason, self.filename, self.lineno, self.source_line)

    def __str__(self):
        if self.filename:
            return f"{self.reason}\n  File \"{self.filename}\", line {self.lineno}\n    {self.source_line.strip()}"
        return self.reason


class SkipFrame(Unsupported):
    """Give up on this frame without a graph break: run it eagerly (e.g. a break inside a loop)."""


def unimplemented(reason: str):
    """Raise Unsupported(reason): ``unimplemented("call to print")``."""
    raise Unsupported(reason)
