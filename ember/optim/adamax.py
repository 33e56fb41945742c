"""Adamax (Adam with the infinity norm): torch.optim.Adamax's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, ADAM_FAMILY_RULES, weight_decayed

__all__ = ["Adamax"]


def adamax_update(param, grad, state, group) -> None:
    """A moving average m of g and a decaying running maximum u of |g| + eps:
    p -= lr / (1 - beta1^t) * m / u."""
    if not state:
        state["step"] = _step_counter()
        state["exp_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        state["exp_inf"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    beta1, beta2 = group["betas"]
    counter = state["step"]
    counter += 1
    grad = weight_decayed(param, grad, group)
    exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
    exp_avg.lerp_(grad, 1 - beta1)
    ember.maximum(exp_inf.mul_(beta2), grad.abs().add_(group["eps"]), out=exp_inf)
    param.addcdiv_(exp_avg, exp_inf, value=-(group["lr"] / (1 - beta1 ** counter.item())))


class Adamax(Optimizer):
    """Implements the Adamax algorithm (a variant of Adam based on the infinity norm)."""

    KEYS = ("lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable")
    RULES = ADAM_FAMILY_RULES + (
    )

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, adamax_update, RuntimeError("Adamax does not support sparse gradients"))
