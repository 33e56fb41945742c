"""NAdam (Adam with Nesterov momentum): torch.optim.NAdam's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero, ADAM_FAMILY_RULES, weight_decayed

__all__ = ["NAdam"]


def nadam_update(param, grad, state, group) -> None:
    """Adam's moving averages with a momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * psi)):
    the step mixes the current gradient (weight (1 - mu_t) / (1 - prod mu)) with the average m
    (weight mu_{t+1} / (1 - prod mu up to t+1)), both over sqrt(v / (1 - beta2^t)) + eps."""
    if not state:
        state["step"] = _step_counter()
        state["mu_product"] = _step_counter(1.0)
        state["exp_avg"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        state["exp_avg_sq"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    lr, psi = group["lr"], group["momentum_decay"]
    beta1, beta2 = group["betas"]
    counter = state["step"]
    counter += 1
    t = counter.item()
    grad = weight_decayed(param, grad, group)
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
    mu_product = state["mu_product"]
    mu_product *= mu
    product = mu_product.item()
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = exp_avg_sq.div(1 - beta2 ** t).sqrt().add_(group["eps"])
    param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - product))
    param.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - product * mu_next))


class NAdam(Optimizer):
    """Implements the NAdam algorithm (optionally with decoupled weight decay, NAdamW)."""

    KEYS = ("lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize",
            "foreach", "capturable", "differentiable")
    RULES = ADAM_FAMILY_RULES + (
        ("momentum_decay", at_least_zero, "Invalid momentum_decay value: {}"),
    )

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, nadam_update, RuntimeError("NAdam does not support sparse gradients"))
