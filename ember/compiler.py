"""ember.compiler: the public face of the compile stack (torch.compiler).

    ember.compiler.disable(fn)      # never compile fn (a graph break when called from compiled code)
    ember.compiler.reset()          # drop every compiled artefact
    ember.compiler.is_compiling()   # True while dynamo captures a frame
"""
from __future__ import annotations


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``@ember.compiler.disable`` / ``disable(fn)``: fn always runs eagerly; see eval_frame.disable."""
    from ._dynamo.eval_frame import disable as _disable
    return _disable(fn, recursive=recursive, reason=reason)


def reset() -> None:
    """Clear all compile caches (ember._dynamo.reset)."""
    from ._dynamo.eval_frame import reset as _reset
    _reset()


def is_compiling() -> bool:
    """True while a frame is being captured (code that behaves differently under capture can ask)."""
    from ._dynamo.eval_frame import is_compiling as _is_compiling
    return _is_compiling()


def is_dynamo_compiling() -> bool:
    """Same as is_compiling (torch has both names)."""
    return is_compiling()


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Registered backend names (see ember._dynamo.backends)."""
    from ._dynamo.backends import list_backends as _list
    return _list(exclude_tags)
