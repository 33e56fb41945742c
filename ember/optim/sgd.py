"""Stochastic gradient descent, optionally with (Nesterov) momentum: torch.optim.SGD's algorithm."""
from __future__ import annotations

import numpy as np

from ember._core.dispatch import AUTOGRAD_BIT, CPU_BIT, tls
from ember.ops import native

from .optimizer import Optimizer, not_below_zero

__all__ = ["SGD"]


def sgd_update(param, grad, state, group) -> None:
    """p -= lr * d, where d is the (weight-decayed) gradient, or its momentum buffer
    b = momentum * b + (1 - dampening) * g (b starts as the first g), or g + momentum * b (Nesterov)."""
    decay, momentum = group["weight_decay"], group["momentum"]
    if decay != 0:
        grad = grad.add(param, alpha=decay)
    if momentum != 0:
        buffer = state.get("momentum_buffer")
        if buffer is None:
            buffer = state["momentum_buffer"] = grad.detach().clone()
        elif not group["nesterov"] and _native_step(param, grad, buffer, momentum, 1 - group["dampening"], group["lr"]):
            return
        else:
            buffer.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
        grad = grad.add(buffer, alpha=momentum) if group["nesterov"] else buffer
    param.add_(grad, alpha=-group["lr"])


_NUMBERS = (float, int)


def _native_step(param, grad, buffer, momentum, keep, lr) -> bool:
    """The momentum update and the parameter's as one C loop (ember/ops/native.py), bit-equal to the
    three in-place ops, when param, gradient and buffer are plain C-contiguous CPU float32/float64
    arrays of one shape that do not overlap and the hyper-parameters are numbers; False otherwise
    (nothing written). Weight decay was applied to `grad` by the caller; Nesterov runs the ops.
    Written out test by test: it runs per parameter per step (~1 us of checks)."""
    if tls.include & ~native.PROFILER_BIT or momentum.__class__ not in _NUMBERS or keep.__class__ not in _NUMBERS \
            or lr.__class__ not in _NUMBERS or (param._keys | grad._keys | buffer._keys) & ~AUTOGRAD_BIT != CPU_BIT:
        return False
    p, g, b = param._data, grad._data, buffer._data
    if p.__class__ is not np.ndarray or g.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return False
    dtype, shape = p.dtype, p.shape
    if g.dtype is not dtype or b.dtype is not dtype or g.shape != shape or b.shape != shape:
        return False
    pf, gf, bf = p.flags, g.flags, b.flags
    if not (pf.c_contiguous and gf.c_contiguous and bf.c_contiguous and pf.writeable and bf.writeable) \
            or np.may_share_memory(b, g) or np.may_share_memory(b, p) or np.may_share_memory(p, g):
        return False
    fn = native.kernel("sgd_momentum_step", dtype)
    if fn is None:
        return False
    fn(p, g, b, p.size, int(keep != 1), float(momentum), float(keep), -float(lr))
    buffer._bump_version()          # as mul_ and add_ did
    buffer._bump_version()
    param._bump_version()
    return True


def sgd_fused(pairs, group, state_of, negate):
    """fused=True: every parameter whose momentum buffer exists, in one generated kernel (the
    first step, which creates the buffers, and SGD without momentum run the for-loop update)."""
    if group["momentum"] == 0:
        return pairs
    ready = [(p, g, state_of[p]["momentum_buffer"]) for p, g in pairs
             if state_of.get(p, {}).get("momentum_buffer") is not None]
    if not ready:
        return pairs
    from .._inductor import fused_optim
    if not fused_optim.sgd(*zip(*ready), group, negate):
        return pairs
    done = {id(p) for p, _, _ in ready}
    return [(p, g) for p, g in pairs if id(p) not in done]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum and Nesterov momentum)."""

    KEYS = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable",
            "fused")
    RULES = (
        ("lr", not_below_zero, "Invalid learning rate: {}"),
        ("momentum", not_below_zero, "Invalid momentum value: {}"),
        ("weight_decay", not_below_zero, "Invalid weight_decay value: {}"),
        (None, lambda o: not o["nesterov"] or (o["momentum"] > 0 and o["dampening"] == 0),
         "Nesterov momentum requires a momentum and zero dampening"),
    )

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None) -> None:
        self._setup(params, locals())

    fused_update = staticmethod(sgd_fused)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, sgd_update)
