"""Python dispatch modes: intercept every operator call at the dispatcher's Python key.

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)                      # e.g. aten::add.Tensor
            return func(*args, **(kwargs or {}))

    with Log():
        ember.add(a, b)

Entering a mode pushes it on a thread-local stack and adds the Python key to the thread's
include set; the key's boxed fallback hands the call to the innermost mode, with that mode
popped while it runs (so ``func(...)`` inside reaches the next mode or the kernel).
"""
from __future__ import annotations

import threading

from .._core.dispatch import DispatchKey, register_fallback, tls

_PYTHON_BIT = 1 << DispatchKey.Python


class _ModeStack(threading.local):
    def __init__(self):
        self.modes = []


_stack = _ModeStack()


def _sync_key():
    if _stack.modes:
        tls.include |= _PYTHON_BIT
    else:
        tls.include &= ~_PYTHON_BIT


class TorchDispatchMode:
    """Subclass and override ``__torch_dispatch__(self, func, types, args, kwargs)``."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError("TorchDispatchMode subclasses must implement __torch_dispatch__")

    def __enter__(self):
        _stack.modes.append(self)
        _sync_key()
        return self

    def __exit__(self, *exc):
        _stack.modes.remove(self)
        _sync_key()


def _get_current_dispatch_mode():
    return _stack.modes[-1] if _stack.modes else None


def _argument_dispatch(op, args):
    """The Python key came from an argument, not a mode: an object that is not a Tensor but answers
    dispatch keys (an fx Proxy) takes the call through its ``__ember_dispatch__(op, args, kwargs)``."""
    schema = op.schema
    positional = tuple(a for a, arg in zip(args, schema.arguments) if not arg.kwarg_only)
    kwargs = {arg.name: a for a, arg in zip(args, schema.arguments) if arg.kwarg_only}
    stack = list(reversed(args))   # the first argument that defines it, as PyTorch picks a subclass
    while stack:
        a = stack.pop()
        handler = getattr(type(a), "__ember_dispatch__", None)
        if handler is not None:
            return handler(op, positional, kwargs)
        if isinstance(a, (list, tuple)):
            stack.extend(reversed(a))
    raise RuntimeError(f"{op.name}: the Python dispatch key is set but no mode is active and no argument "
                       f"defines __ember_dispatch__")


def _python_key_fallback(op, key_set, *args):
    if not _stack.modes:
        return _argument_dispatch(op, args)
    mode = _stack.modes.pop()
    _sync_key()
    try:
        schema = op.schema
        positional = tuple(a for a, arg in zip(args, schema.arguments) if not arg.kwarg_only)
        kwargs = {arg.name: a for a, arg in zip(args, schema.arguments) if arg.kwarg_only}
        from .._core.tensor import Tensor
        types = tuple({type(a) for a in args if isinstance(a, Tensor)})
        return mode.__torch_dispatch__(op, types, positional, kwargs)
    finally:
        _stack.modes.append(mode)
        _sync_key()


register_fallback(DispatchKey.Python, _python_key_fallback)
