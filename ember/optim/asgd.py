"""ASGD (averaged SGD): torch.optim.ASGD's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["ASGD"]


def asgd_update(param, grad, state, group) -> None:
    """SGD with decay term lambd and a learning rate eta_t = lr / (1 + lambd * lr * t)^alpha, plus a
    running average ``ax`` of the iterates that starts averaging after step t0 (mu = 1 / max(1, t - t0))."""
    if not state:
        state["step"] = _step_counter()
        state["eta"] = _step_counter(group["lr"])
        state["mu"] = _step_counter(1.0)
        state["ax"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    lr, lambd = group["lr"], group["lambd"]
    counter, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
    counter += 1
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    eta_value = eta.item()
    param.mul_(1 - lambd * eta_value)
    param.add_(grad, alpha=-eta_value)
    if mu.item() != 1:
        ax.add_(param.sub(ax).mul_(mu))
    else:
        ax.copy_(param)
    t = counter.item()
    eta.fill_(lr / ((1 + lambd * lr * t) ** group["alpha"]))
    mu.fill_(1 / max(1, t - group["t0"]))


class ASGD(Optimizer):
    """Implements averaged stochastic gradient descent."""

    KEYS = ("lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable")
    RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("weight_decay", at_least_zero, "Invalid weight_decay value: {}"),
    )

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, asgd_update, RuntimeError("ASGD does not support sparse gradients"))
