"""Markers that the translator and the compile entry both read, in a leaf module: the thread's
capture state and the ``disable`` wrapper (whose code object the translator recognises to graph-break
on calls of disabled functions). The translator (symbolic_convert) imports this, never eval_frame.
"""
from __future__ import annotations

import functools
import threading


class _ThreadState(threading.local):
    disabled = 0          # > 0 inside ember.compiler.disable'd code: no new captures
    compiling = 0         # > 0 while compile_frame runs


state = _ThreadState()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run `fn` eagerly, never captured (also ``ember.compiler.disable``; decorator with or without ()).

    Calls reached from compiled code become graph breaks; inside `fn`, compiled functions reuse
    entries they already have but capture nothing new.

        @ember.compiler.disable
        def log_stats(x): print(x.mean())
    """
    if fn is None:
        return lambda f: disable(f, recursive=recursive, reason=reason)
    if getattr(fn, "_ember_dynamo_disable", False):
        return fn
    original = getattr(fn, "_ember_orig_fn", fn)

    @functools.wraps(original)
    def disabled(*args, **kwargs):
        state.disabled += 1
        try:
            return original(*args, **kwargs)
        finally:
            state.disabled -= 1
    disabled._ember_dynamo_disable = True
    disabled._ember_disable_reason = reason
    return disabled


DISABLED_WRAPPER_CODE = disable(lambda: None).__code__   # capture breaks on calls of this code
