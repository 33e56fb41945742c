"""RMSprop (optionally centered, with momentum): torch.optim.RMSprop's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["RMSprop"]


def rmsprop_update(param, grad, state, group) -> None:
    """Divide the gradient by sqrt of a moving average s of g*g (minus the squared moving mean of g
    when centered) plus eps; with momentum the quotient accumulates in a buffer first."""
    momentum, centered = group["momentum"], group["centered"]
    if not state:
        state["step"] = _step_counter()
        state["square_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        if momentum > 0:
            state["momentum_buffer"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        if centered:
            state["grad_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    alpha, lr = group["alpha"], group["lr"]
    state["step"] += 1
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    square_avg = state["square_avg"]
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if centered:
        mean = state["grad_avg"]
        mean.lerp_(grad, 1 - alpha)
        denom = square_avg.addcmul(mean, mean, value=-1).sqrt_()
    else:
        denom = square_avg.sqrt()
    denom.add_(group["eps"])
    if momentum > 0:
        buffer = state["momentum_buffer"]
        buffer.mul_(momentum).addcdiv_(grad, denom)
        param.add_(buffer, alpha=-lr)
    else:
        param.addcdiv_(grad, denom, value=-lr)


class RMSprop(Optimizer):
    """Implements RMSprop (optionally centered, with momentum and weight decay)."""

    KEYS = ("lr", "momentum", "alpha", "eps", "centered", "weight_decay", "capturable", "foreach", "maximize",
            "differentiable")
    RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("eps", at_least_zero, "Invalid epsilon value: {}"),
        ("momentum", at_least_zero, "Invalid momentum value: {}"),
        ("weight_decay", at_least_zero, "Invalid weight_decay value: {}"),
        ("alpha", at_least_zero, "Invalid alpha value: {}"),
    )

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, rmsprop_update, RuntimeError("RMSprop does not support sparse gradients"))
