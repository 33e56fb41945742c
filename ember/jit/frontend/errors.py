"""Compile errors of ``ember.jit.script``: the message quotes the source with carets under the
offending expression, like TorchScript's:

    Python builtin <built-in function open> is currently not supported in Torchscript:
      File "/path/x.py", line 5
    def f(x):
        return open(x)
               ~~~~ <--- HERE

``FrontendError`` (a RuntimeError, as torch raises for most compile errors) carries the message;
``NotSupportedError`` (a FrontendError) is raised for Python constructs script does not have
(``with``, ``try``, ``lambda``, ...), as torch.jit.frontend.NotSupportedError.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace


@dataclass
class SourceContext:
    """The source of one scripted function: the file, its dedented lines and where they start."""
    filename: str
    lines: list          # the function's source lines (dedented), no newlines
    first_line: int      # file line number of lines[0] (1-based)
    col_offset: int = 0  # columns removed by dedent

    def file_line(self, ast_lineno: int) -> int:
        """File line number of a line number of the parsed (dedented) source."""
        return ast_lineno + self.first_line - 1

    def loc(self, node) -> tuple:
        """``(filename, line, col)`` of an ast node, in file coordinates."""
        return (self.filename, self.file_line(getattr(node, "lineno", 1)),
                getattr(node, "col_offset", 0) + self.col_offset)

    def highlight(self, node, context_before: int = 1, context_after: int = 2) -> str:
        """The ``File "...", line N`` header, the lines around `node`, carets under it."""
        lineno = getattr(node, "lineno", None)
        if lineno is None or not self.lines:
            return f'  File "{self.filename}"\n'
        end_lineno = getattr(node, "end_lineno", lineno) or lineno
        col = getattr(node, "col_offset", 0) or 0
        end_col = getattr(node, "end_col_offset", None)
        out = [f'  File "{self.filename}", line {self.file_line(lineno)}']
        start = max(1, lineno - context_before)
        for i in range(start, lineno):
            out.append(self.lines[i - 1])
        for i in range(lineno, end_lineno + 1):
            if i > len(self.lines):
                break
            text = self.lines[i - 1]
            out.append(text)
            first = col if i == lineno else len(text) - len(text.lstrip())
            last = end_col if (i == end_lineno and end_col is not None) else len(text.rstrip())
            marks = " " * first + "~" * max(1, last - first)
            if i == end_lineno:
                marks += " <--- HERE"
            out.append(marks)
        for i in range(end_lineno + 1, min(len(self.lines), end_lineno + context_after) + 1):
            out.append(self.lines[i - 1])
        return "\n".join(out) + "\n"


class FrontendError(RuntimeError):
    """A script compile error: `what` plus the quoted source of the offending node.

        raise FrontendError(ctx, node, "undefined value y")
    """

    def __init__(self, ctx: SourceContext | None, node, what: str, used_at=None):
        self.what = what
        message = what
        if ctx is not None and node is not None:
            message = f"\n{what}:\n{ctx.highlight(node)}"
            if used_at is not None:
                message += f"and was used here:\n{ctx.highlight(used_at)}"
        self.msg = message
        super().__init__(message)


class NotSupportedError(FrontendError):
    """A Python construct script does not support (torch.jit.frontend.NotSupportedError)."""

    def __init__(self, ctx, node, what: str):
        super().__init__(ctx, node, what)
        # torch's NotSupportedError has no leading newline
        self.msg = self.msg.lstrip("\n")
        self.args = (self.msg,)


class UnsupportedNodeError(NotSupportedError):
    """A statement or expression kind script has no translation for (``try``, ``lambda``...)."""

    def __init__(self, ctx, node, offending=None):
        kind = type(node).__name__
        name, _, hint = _UNSUPPORTED.get(kind, (kind, None, None))
        super().__init__(ctx, offending if offending is not None else node,
                         f"{name} aren't supported" + (f" ({hint})" if hint else ""))


# ast class -> (what torch's "... aren't supported" calls it, the keyword torch puts the carets
# under -- under the first character when there is none --, what to do instead)
_UNSUPPORTED = {
    "Try": ("try blocks", "try", "raise exceptions with `raise`; handling them needs eager Python"),
    "TryStar": ("TryStar", None, None),
    "Lambda": ("Lambda", None, "use a named function defined at module level"),
    "Global": ("global variables", "global", "read module-level constants directly; they become constants"),
    "Nonlocal": ("nonlocal variables", "nonlocal", None),
    "Yield": ("Yield", None, None), "YieldFrom": ("Yield from", None, None), "Await": ("Await", None, None),
    "FunctionDef": ("function definitions", "def",
                    "define helper functions at module level; script compiles them when called"),
    "AsyncFunctionDef": ("async function definitions", "async def", None),
    "ClassDef": ("class definitions", "class", None),
    "With": ("with statements", "with", "script supports `with ember.no_grad()`, `ember.enable_grad()` and "
             "`ember.set_grad_enabled(flag)`; move other context managers outside the scripted function"),
    "AsyncWith": ("async with statements", "async with", None),
    "AsyncFor": ("async for loops", "async for", None),
    "Set": ("Set", None, "use a List or Dict"), "SetComp": ("Set comprehensions", None, "use a list comprehension"),
    "Starred": ("Starred expressions", None, "pass the elements explicitly"),
    "Import": ("import statements", "import", None), "ImportFrom": ("import statements", "from", None),
    "Delete": ("del statements", "del", None), "Match": ("Match", None, None),
    "NamedExpr": ("assignment expressions", None, None),
}


def keyword_span(s):
    """Where torch puts the carets for an unsupported statement: under its keyword (``try``,
    ``global``, ``def``), else under its first character."""
    keyword = _UNSUPPORTED.get(type(s).__name__, (None, None))[1]
    return SimpleNamespace(lineno=s.lineno, end_lineno=s.lineno, col_offset=s.col_offset,
                           end_col_offset=s.col_offset + (len(keyword) if keyword else 1))
