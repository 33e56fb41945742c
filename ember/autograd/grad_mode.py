"""Grad modes: whether the Autograd dispatch key takes part in dispatch on this thread.

``no_grad`` adds Autograd to the thread-local exclude set, so ops skip the autograd kernel and
record nothing; ``enable_grad`` removes it again. Each works as a context manager and as a
decorator (with or without parentheses, like PyTorch's); ``set_grad_enabled(mode)`` also takes
effect when simply called. ``inference_mode`` disables grad and includes the Inference key on the thread: tensors made
inside are inference tensors (see ``ember/autograd/inference.py``).
"""
from __future__ import annotations

import functools
import inspect

from .._core.dispatch import tls, AUTOGRAD_BIT, INFERENCE_BIT


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad`` / ``set_grad_enabled(False)`` / ``inference_mode``."""
    return not tls.exclude & AUTOGRAD_BIT


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` on this thread."""
    return bool(tls.include & INFERENCE_BIT)


def _set_inference_mode_enabled(enabled: bool) -> None:
    """Enter or leave inference mode on this thread (without the grad-mode switch that
    ``inference_mode`` also makes)."""
    tls.include = (tls.include | INFERENCE_BIT) if enabled else (tls.include & ~INFERENCE_BIT)


def _set_enabled(enabled: bool) -> None:
    if enabled:
        tls.exclude &= ~AUTOGRAD_BIT
    else:
        tls.exclude |= AUTOGRAD_BIT


def _set_grad_enabled(mode: bool) -> None:
    """Switch grad mode on this thread (torch._C._set_grad_enabled): the call ember.compile records in
    a graph where a ``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` region begins or ends, so
    the switch happens when the graph runs."""
    _set_enabled(bool(mode))


def _enter_inference_mode(mode: bool):
    """Enter ``inference_mode(mode)``; returns the token ``_exit_inference_mode`` leaves it with (the
    pair of calls ember.compile records for an inference_mode block, as torch's)."""
    ctx = inference_mode(mode)
    ctx.__enter__()
    return ctx


def _exit_inference_mode(token) -> None:
    """Leave the inference_mode block `token` (from ``_enter_inference_mode``) was entered by."""
    token.__exit__(None, None, None)


def _wrap(fn, make_ctx):
    """`fn` run inside a fresh context manager (generators: around each step, as PyTorch)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            with make_ctx():
                gen = fn(*args, **kwargs)
            value = None
            while True:
                try:
                    with make_ctx():
                        item = gen.send(value)
                except StopIteration as stop:
                    return stop.value
                value = yield item
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with make_ctx():
            return fn(*args, **kwargs)
    return wrapper


class _GradModeBase:
    enabled = True

    def __new__(cls, orig_func=None):
        # `@no_grad` without parentheses: decorate directly.
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _set_enabled(self.prev)
        return False

    def __call__(self, fn):
        return _wrap(fn, self.clone)

    def clone(self):
        return type(self)()


class no_grad(_GradModeBase):
    """Ops inside record no autograd history (context manager or decorator)."""
    enabled = False


class enable_grad(_GradModeBase):
    """Re-enable recording inside ``no_grad`` (context manager or decorator)."""
    enabled = True


class set_grad_enabled(_GradModeBase):
    """``set_grad_enabled(False)`` behaves as ``no_grad``; as a plain call it sets the mode
    until changed (PyTorch sets it in the constructor, restored on exit)."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        self.enabled = mode
        self.prev = is_grad_enabled()
        _set_enabled(self.enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_enabled(self.prev)
        return False

    def __call__(self, fn):
        _set_enabled(self.prev)  # used as a decorator: the constructor must not change the mode
        return _wrap(fn, self.clone)

    def clone(self):
        return set_grad_enabled(self.enabled)


class inference_mode(_GradModeBase):
    """Disables grad like ``no_grad``; tensors made inside are inference tensors (no version
    counter, never saved for backward, not updated in place outside inference mode).
    ``inference_mode(False)`` enables grad and leaves inference mode (as PyTorch's does)."""

    def __new__(cls, mode=True):
        self = object.__new__(cls)
        if not isinstance(mode, bool) and callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode: bool = True):
        if not isinstance(mode, bool) and callable(mode):
            return
        self.mode = bool(mode)
        self.enabled = not self.mode

    def __enter__(self):
        self.prev_inference = is_inference_mode_enabled()
        _set_inference_mode_enabled(self.mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _set_inference_mode_enabled(self.prev_inference)
        return super().__exit__(*exc)

    def clone(self):
        return inference_mode(self.mode)
