"""EMBER_JIT_LOG_LEVEL: print graphs after passes (PyTorch's PYTORCH_JIT_LOG_LEVEL).

Every graph pass logs here (the fx pass set and the jit's own passes); the graph prints as
TorchScript text once ember.jit has installed its printer (``set_graph_printer``), else as fx's.

The variable is a colon-separated list of pass names (each pass file's stem, e.g.
``dead_code_elimination``; a ``.py`` / ``.cpp`` suffix is ignored). Leading ``>`` raise the
verbosity for that pass: ``name`` = GRAPH_DUMP (the graph after the pass), ``>name`` =
GRAPH_UPDATE (plus what the pass changed), ``>>name`` = GRAPH_DEBUG (everything). A more
verbose level includes the less verbose ones.

    EMBER_JIT_LOG_LEVEL=">>dead_code_elimination" python prog.py
    # stderr: [DUMP dead_code_elimination.py] graph(%x.1 : Tensor): ...

Each line of a message is prefixed with ``[LEVEL <pass>.py] `` as PyTorch prefixes its lines.
"""
from __future__ import annotations

import functools
import os
import sys

GRAPH_DUMP, GRAPH_UPDATE, GRAPH_DEBUG = 0, 1, 2
_LEVEL_TAGS = {GRAPH_DUMP: "DUMP", GRAPH_UPDATE: "UPDATE", GRAPH_DEBUG: "DEBUG"}
ENV_VAR = "EMBER_JIT_LOG_LEVEL"


@functools.lru_cache(maxsize=16)
def parse_log_levels(spec: str | None) -> dict:
    """``">>a:b:>c"`` -> {"a": GRAPH_DEBUG, "b": GRAPH_DUMP, "c": GRAPH_UPDATE} (cached: do not
    mutate the result).

        parse_log_levels(">>dead_code_elimination")   # {'dead_code_elimination': 2}
    """
    levels: dict = {}
    for entry in (spec or "").split(":"):
        entry = entry.strip()
        if not entry:
            continue
        arrows = len(entry) - len(entry.lstrip(">"))
        name = _stem(entry.lstrip(">").strip())
        if name:
            levels[name] = max(levels.get(name, -1), min(arrows, GRAPH_DEBUG))
    return levels


def _stem(name: str) -> str:
    name = os.path.basename(name)
    for ext in (".py", ".cpp"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def is_enabled(pass_name: str, level: int = GRAPH_DUMP) -> bool:
    """True if EMBER_JIT_LOG_LEVEL (read now) asks for `level` or more for `pass_name`."""
    wanted = parse_log_levels(os.environ.get(ENV_VAR)).get(_stem(pass_name))
    return wanted is not None and wanted >= level


_printer = str


def set_graph_printer(printer) -> None:
    """Print logged graphs with `printer(graph) -> str` (ember.jit installs its TorchScript printer)."""
    global _printer
    _printer = printer


def format_graph(graph) -> str:
    """The graph as the installed printer writes it (fx's ``str`` by default)."""
    return _printer(graph)


def log(pass_name: str, message: str, level: int = GRAPH_DUMP) -> None:
    """Print `message` to stderr, each line prefixed ``[DUMP pass.py] ``, if enabled."""
    if not is_enabled(pass_name, level):
        return
    prefix = f"[{_LEVEL_TAGS[level]} {_stem(pass_name)}.py] "
    text = "\n".join(prefix + line for line in str(message).splitlines())
    print(text, file=sys.stderr)


def log_graph(pass_name: str, graph, level: int = GRAPH_DUMP) -> None:
    """Print `graph` after pass `pass_name` (GRAPH_DUMP) when EMBER_JIT_LOG_LEVEL enables it.

        log_graph("dead_code_elimination", graph)
    """
    if is_enabled(pass_name, level):
        log(pass_name, f"After {_stem(pass_name)}:\n{format_graph(graph)}", level)


def log_update(pass_name: str, message: str) -> None:
    """A GRAPH_UPDATE line (``>pass``): what the pass changed."""
    log(pass_name, message, GRAPH_UPDATE)
