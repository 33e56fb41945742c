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

from .._core.dispatch import tls, CPU_BIT, INFERENCE_BIT
from .._core.tensor import Tensor

INPLACE_MESSAGE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                   "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                   "more details.")
SAVE_MESSAGE = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
                "in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor "
                "and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


def _plan(op) -> tuple:
    """(positions of written arguments, per return: "input" (in-place / out=), "view" (aliases
    an input) or "new"), read once per op from its schema."""
    plan = op.__dict__.get("_inference_plan")
    if plan is None:
        schema = op.schema
        written = tuple(i for i, a in enumerate(schema.arguments) if a.is_write)
        kinds = tuple("input" if r.is_write else "view" if r.alias else "new" for r in schema.returns)
        plan = op._inference_plan = (written, kinds)
    return plan


def kernel(op, keys, *args):
    written, kinds = _plan(op)
    inside = tls.include & INFERENCE_BIT
    if not inside:
        for i in written:
            a = args[i] if i < len(args) else None
            if a.__class__ is Tensor or isinstance(a, Tensor):
                if a._keys & INFERENCE_BIT:
                    raise RuntimeError(INPLACE_MESSAGE)
            elif isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) and x._keys & INFERENCE_BIT for x in a):
                raise RuntimeError(INPLACE_MESSAGE)
    cpu = op.table[0]
    out = cpu(*args) if keys == CPU_BIT and cpu is not None else op.redispatch(keys, *args)  # (skip a lookup)
    if kinds == ("new",):  # most ops inside inference mode: one fresh tensor, an inference tensor
        if inside and out.__class__ is Tensor and not (args and out is args[0]):
            out._keys |= INFERENCE_BIT
        return out
    outs = out if isinstance(out, (tuple, list)) else (out,)
    base = next((a for a in args if isinstance(a, Tensor)), None)
    for kind, o in zip(kinds if len(kinds) == len(outs) else kinds * len(outs), outs):
        if kind == "input" or not isinstance(o, Tensor) or o is base:
            continue  # an in-place / out= result, or an input returned as is, keeps its kind
        if kind == "view" and base is not None:
            vc = o._version_counter
            if vc is not None and vc is base._version_counter:  # a view takes its base's kind
                if base._keys & INFERENCE_BIT:
                    o._keys |= INFERENCE_BIT
                continue
        if inside:  # a new tensor (or a view op's copy, as reshape may make) made in inference mode
            o._keys |= INFERENCE_BIT
    return out
