"""Inference tensors, as PyTorch's ``inference_mode`` makes them.

Inside ``inference_mode`` every new tensor is an *inference tensor* (its key set has the
Inference key): it has no version counter (``_version`` raises), autograd never saves it for
backward, and outside inference mode it cannot be updated in place nor be made to require
grad. A view keeps the kind of its base: a view of a normal tensor made inside inference mode
is a normal tensor (in-place updates through it bump the base's version, as always), a view of
an inference tensor made anywhere is an inference tensor.

The Inference key's kernel (a global fallback: every op) does both jobs. It runs for an op when
inference mode is on (the key is in the TLS include set) or when an argument is an inference
tensor, so ops on normal tensors outside inference mode never reach it.
"""
from __future__ import annotations

from .._core.dispatch import tls, INFERENCE_BIT
from .._core.tensor import Tensor

INPLACE_MESSAGE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                   "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                   "more details.")
SAVE_MESSAGE = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
                "in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor "
                "and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def _written(op) -> tuple:
    """Positions of the arguments the op writes (``Tensor(a!)``), read once per op."""
    w = op.__dict__.get("_written_args")
    if w is None:
        w = op._written_args = tuple(i for i, a in enumerate(op.schema.arguments) if a.is_write)
    return w


def kernel(op, keys, *args):
    inside = tls.include & INFERENCE_BIT
    if not inside:
        for i in _written(op):
            a = args[i] if i < len(args) else None
            if a.__class__ is Tensor or isinstance(a, Tensor):
                if a._keys & INFERENCE_BIT:
                    raise RuntimeError(INPLACE_MESSAGE)
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) and x._keys & INFERENCE_BIT for x in a):
                raise RuntimeError(INPLACE_MESSAGE)
    out = op.redispatch(keys, *args)
    inputs = [a for a in args if isinstance(a, Tensor)]
    base = inputs[0] if inputs else None
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if not isinstance(o, Tensor) or any(o is a for a in inputs):
            continue  # an in-place / out= result, or an input returned as is, keeps its kind
        vc = o._version_counter
        if vc is not None and base is not None and vc is base._version_counter:
            if base._keys & INFERENCE_BIT:  # a view takes its base's kind
                o._keys |= INFERENCE_BIT
        elif inside:
            o._keys |= INFERENCE_BIT
    return out
