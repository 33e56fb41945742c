"""Backends: what turns a captured GraphModule into the callable a compiled frame calls.

A backend is ``backend(gm, example_inputs) -> callable``, like seed 003's ``my_compiler``.

    register_backend(my_compiler, name="mine")     # or @register_backend
    lookup_backend("eager")(gm, inputs)            # -> gm.forward
    list_backends()                                # ['inductor'] (debug backends hidden, as in torch)
    list_backends(exclude_tags=())                 # ['aot_eager', 'eager', 'inductor']

"inductor" compiles graphs whose inputs need no grad with the fuser (ember._inductor.compile_fx);
"aot_eager", and "inductor" for graphs that need autograd, run the graph through
``ember.fx.Interpreter`` (printing a one-time notice) until AOT autograd replaces them.
"""
from __future__ import annotations

import warnings

_BACKENDS: dict = {}      # name -> callable
_TAGS: dict = {}          # name -> tags
_NOTICED: set = set()


class InvalidBackend(RuntimeError):
    """A backend name that is not registered (torch._dynamo.exc.InvalidBackend)."""

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for available backends.")


def register_backend(compiler_fn=None, name: str | None = None, tags=()):
    """Register ``compiler_fn(gm, example_inputs) -> callable`` under `name` (default: its __name__).

        @register_backend
        def my_backend(gm, example_inputs):
            return gm.forward
    """
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend: compiler_fn must be callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise RuntimeError(f"register_backend: duplicate name: {name}")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def lookup_backend(compiler_fn):
    """A backend name or callable -> the callable ``(gm, example_inputs) -> callable``.

        lookup_backend("eager") is lookup_backend(lookup_backend("eager"))
    """
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise InvalidBackend(compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise TypeError(f"ember.compile: backend must be a name or a callable (gm, example_inputs) -> callable, "
                        f"got {type(compiler_fn).__name__}")
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """Registered backend names, sorted, without those tagged with any of `exclude_tags`."""
    excluded = set(exclude_tags or ())
    return sorted(name for name in _BACKENDS if not excluded.intersection(_TAGS.get(name, ())))


@register_backend(name="eager", tags=("debug",))
def eager(gm, example_inputs):
    """Run the captured GraphModule as it is."""
    return gm.forward


def _interpreter_backend(name):
    def backend(gm, example_inputs, **options):
        from . import config
        if name not in _NOTICED and config.verbose_backend_fallback:
            _NOTICED.add(name)
            warnings.warn(f"ember.compile: backend {name!r} is not built yet; graphs run through "
                          f"ember.fx.Interpreter (shown once)", UserWarning, stacklevel=2)
        from ..fx import Interpreter
        interpreter = Interpreter(gm)

        def run(*args):
            return interpreter.run(*args)
        return run
    backend.__name__ = name
    return backend


register_backend(_interpreter_backend("aot_eager"), name="aot_eager", tags=("debug",))
_inductor_interpreter = _interpreter_backend("inductor")


@register_backend(name="inductor")
def inductor(gm, example_inputs, **options):
    """The fuser (ember._inductor.compile_fx) for graphs where no input requires grad; graphs that
    need autograd run through the Interpreter until AOT autograd hands the fuser its fw/bw graphs."""
    from .._core.tensor import Tensor
    if any(isinstance(t, Tensor) and t.requires_grad for t in example_inputs):
        return _inductor_interpreter(gm, example_inputs, **options)
    from .._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs)
