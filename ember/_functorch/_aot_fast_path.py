"""The steady-state call of an AOT-compiled program: what runs on every call once it is compiled.

A compiled program is looked up by its *key*, ``(grad mode, spec_of(arg) for each argument)``
(aot_autograd._Cached). Building that key allocates a tuple per argument on every call (a few us at
small sizes, more than the kernels of a 1e4-element graph). Instead each compiled graph keeps a
*matcher*: one generated function comparing the same fields, unrolled, against the key's values as
constants, allocating nothing:

    match = spec_matcher(key)        # key = (grad_mode, spec, spec, ...)
    match([x, w])                    # True exactly when _Cached.key([x, w]) == key

The grad-mode switches around a compiled call (``no_grad`` for an inference graph or the backward,
``enable_grad`` for a training forward) are made here by setting the thread's dispatch exclude set
directly, skipped where the call is already in that mode (a context manager object per call costs
~1.5 us).
"""
from __future__ import annotations

from .._core.dispatch import AUTOGRAD_BIT, tls


def spec_matcher(key: tuple):
    """``match(args) -> bool``: whether `args` (a list or tuple) has exactly the key `key`
    (``(is_grad_enabled(),) + tuple(spec_of(a) for a in args)``, tensor_spec.spec_of's fields)."""
    grad_mode, specs = key[0], key[1:]
    env = {"___tls": tls, "___AUTOGRAD": AUTOGRAD_BIT}
    names = [f"a{i}" for i in range(len(specs))]
    lines = [f"def ___match(args):",
             f"    if len(args) != {len(specs)} or (not ___tls.exclude & ___AUTOGRAD) is not {bool(grad_mode)}:",
             f"        return False"]
    if specs:
        lines.append(f"    {', '.join(names)}, = args")
    for i, (cls, keys, dtype, shape, strides) in enumerate(specs):
        env.update({f"C{i}": cls, f"K{i}": keys, f"T{i}": dtype, f"S{i}": shape, f"R{i}": strides})
        # the class first: anything but the expected tensor class fails before its slots are read
        lines += [f"    if a{i}.__class__ is not C{i} or a{i}._keys != K{i}:",
                  f"        return False",
                  f"    d = a{i}._data",
                  f"    if d.shape != S{i} or d.strides != R{i} or d.dtype != T{i}:",
                  f"        return False"]
    lines.append("    return True")
    namespace = dict(env)
    exec(compile("\n".join(lines) + "\n", "<ember aot spec matcher>", "exec"), namespace)
    return namespace["___match"]


def call_with_grad_mode(enabled: bool, fn, args):
    """``fn(*args)`` with grad mode `enabled` on this thread, restored afterwards (as
    ``set_grad_enabled(enabled)`` would, without the context manager object)."""
    before = tls.exclude
    after = before & ~AUTOGRAD_BIT if enabled else before | AUTOGRAD_BIT
    if after == before:
        return fn(*args)
    tls.exclude = after
    try:
        return fn(*args)
    finally:      # only the grad bit goes back, as no_grad's exit does
        tls.exclude = (tls.exclude & ~AUTOGRAD_BIT) | (before & AUTOGRAD_BIT)
