"""RAdam (rectified Adam): torch.optim.RAdam's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, ADAM_FAMILY_RULES, weight_decayed

__all__ = ["RAdam"]


def radam_update(param, grad, state, group) -> None:
    """Adam whose adaptive term is used only once the variance of its estimate is tractable
    (rho_t > 5), scaled by the rectification r_t; before that, momentum SGD on the bias-corrected m."""
    if not state:
        state["step"] = _step_counter()
        state["exp_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        state["exp_avg_sq"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    lr = group["lr"]
    beta1, beta2 = group["betas"]
    counter = state["step"]
    counter += 1
    t = counter.item()
    grad = weight_decayed(param, grad, group)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    correction2 = 1 - beta2 ** t
    corrected_avg = exp_avg / (1 - beta1 ** t)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * (beta2 ** t) / correction2
    if rho_t > 5.0:
        # the products in torch's order, so that results round identically
        adaptive = (correction2 ** 0.5) / exp_avg_sq.sqrt().add_(group["eps"])
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        param.add_(corrected_avg * lr * adaptive * rect, alpha=-1.0)
    else:
        param.add_(corrected_avg * lr, alpha=-1.0)


class RAdam(Optimizer):
    """Implements the RAdam algorithm (optionally with decoupled weight decay)."""

    KEYS = ("lr", "betas", "eps", "weight_decay", "maximize", "foreach", "capturable", "decoupled_weight_decay",
            "differentiable")
    RULES = ADAM_FAMILY_RULES + (
    )

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, radam_update, RuntimeError("RAdam does not support sparse gradients"))
