"""Adadelta: torch.optim.Adadelta's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["Adadelta"]


def adadelta_update(param, grad, state, group) -> None:
    """Step by lr * sqrt(D + eps) / sqrt(S + eps) * g, where S and D are moving averages (factor
    rho) of g*g and of the squared steps themselves."""
    if not state:
        state["step"] = _step_counter()
        state["square_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        state["acc_delta"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    rho, eps = group["rho"], group["eps"]
    state["step"] += 1
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    param.add_(delta, alpha=-group["lr"])


class Adadelta(Optimizer):
    """Implements the Adadelta algorithm (with weight decay and maximize)."""

    KEYS = ("lr", "rho", "eps", "weight_decay", "maximize", "capturable", "foreach", "differentiable")
    RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("rho", lambda v: 0.0 <= v <= 1.0, "Invalid rho value: {}"),
        ("eps", at_least_zero, "Invalid epsilon value: {}"),
        ("weight_decay", at_least_zero, "Invalid weight_decay value: {}"),
    )

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, adadelta_update, RuntimeError("Adadelta does not support sparse gradients"))
