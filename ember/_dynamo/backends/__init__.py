"""Backends: what turns a captured GraphModule into the callable a compiled frame calls.

A backend is ``backend(gm, example_inputs) -> callable``, like seed 003's ``my_compiler``.

    register_backend(my_compiler, name="mine")     # or @register_backend
    lookup_backend("eager")(gm, inputs)            # -> gm.forward
    list_backends()                                # ['inductor'] (debug backends hidden, as in torch)
    list_backends(exclude_tags=())                 # ['aot_eager', 'eager', 'inductor']

"aot_eager" is AOT autograd with compilers that return the graphs as they are
(``aot_autograd(fw_compiler=nop, bw_compiler=nop)``, see common.py and ember/_functorch/aot_autograd.py).
"inductor" is AOT autograd with the fuser as both compilers
(``aot_autograd(fw_compiler=compile_fx, bw_compiler=compile_fx)``, ember/_inductor/compile_fx.py).
"""
from __future__ import annotations


_BACKENDS: dict = {}      # name -> callable
_TAGS: dict = {}          # name -> tags


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


@register_backend(name="aot_eager", tags=("debug",))
def aot_eager(gm, example_inputs, **options):
    """AOT autograd (joint graph, default partition) with compilers that run the graphs as they are."""
    from .common import aot_autograd, nop
    return aot_autograd(fw_compiler=nop, bw_compiler=nop)(gm, example_inputs, **options)


@register_backend(name="inductor")
def inductor(gm, example_inputs, **options):
    """AOT autograd with the fuser (ember._inductor.compile_fx) compiling the forward and the backward."""
    from .common import aot_autograd
    from ..._inductor.compile_fx import compile_fx
    return aot_autograd(fw_compiler=compile_fx, bw_compiler=compile_fx)(gm, example_inputs, **options)
