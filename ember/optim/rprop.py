"""Rprop (resilient backpropagation): torch.optim.Rprop's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["Rprop"]


def rprop_update(param, grad, state, group) -> None:
    """Each element has its own step size, grown by etaplus while the gradient keeps its sign and
    shrunk by etaminus when it flips (then that element's gradient counts as zero for this step
    and the next); the parameter moves by -sign(g) * step size."""
    if not state:
        state["step"] = _step_counter()
        state["prev"] = ember.zeros_like(param, memory_format=ember.preserve_format)
        state["step_size"] = ember.full_like(grad, group["lr"])
    etaminus, etaplus = group["etas"]
    smallest, largest = group["step_sizes"]
    state["step"] += 1
    prev, step_size = state["prev"], state["step_size"]
    agreement = grad.mul(prev).sign()
    factor = ember.where(agreement.gt(0), etaplus, ember.where(agreement.lt(0), etaminus, 1.0)).to(grad.dtype)
    step_size.mul_(factor).clamp_(smallest, largest)
    grad = ember.where(agreement.lt(0), ember.zeros_like(grad), grad)
    param.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm."""

    KEYS = ("lr", "etas", "step_sizes", "foreach", "maximize", "differentiable", "capturable")
    RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("etas", lambda etas: 0.0 < etas[0] < 1.0 < etas[1], "Invalid eta values: {0[0]}, {0[1]}"),
    )

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, rprop_update, RuntimeError("Rprop does not support sparse gradients"))
