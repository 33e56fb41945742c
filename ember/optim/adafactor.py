"""Adafactor (Shazeer & Stern 2018, torch's variant): torch.optim.Adafactor's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["Adafactor"]


def adafactor_update(param, grad, state, group) -> None:
    """The second moment of a matrix gradient is kept factored, as a row mean and a column mean of g^2
    (their outer product over the mean row value estimates it); a vector's is kept whole. The update
    g / sqrt(v) is clipped to RMS d and scaled by max(eps2, RMS(param)) * min(lr, 1/sqrt(t))."""
    if grad.is_complex():
        raise RuntimeError("Adafactor does not support complex parameters")
    factored = grad.dim() > 1
    if not state:
        state["step"] = _step_counter()
        if factored:
            state["row_var"] = grad.new_zeros((*grad.shape[:-1], 1))
            state["col_var"] = grad.new_zeros((*grad.shape[:-2], 1, grad.shape[-1]))
        else:
            state["variance"] = ember.zeros_like(grad, memory_format=ember.preserve_format)
    eps1, eps2 = group["eps"]
    if eps1 is None:
        eps1 = ember.finfo(param.dtype).eps
    lr, decay = group["lr"], group["weight_decay"]
    counter = state["step"]
    counter += 1
    t = counter.item()
    one_minus_beta2 = t ** group["beta2_decay"]
    rho = min(lr, 1 / t ** 0.5)
    alpha = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * rho
    if decay != 0:
        param.mul_(1 - lr * decay)
    if factored:
        row_var, col_var = state["row_var"], state["col_var"]
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]), one_minus_beta2)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]), one_minus_beta2)
        estimate = row_var @ col_var
        estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    else:
        variance = state["variance"]
        variance.lerp_(grad * grad, one_minus_beta2)
        estimate = variance.clone()
    update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
    denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
    param.add_(update, alpha=-alpha / denom)


class Adafactor(Optimizer):
    """Implements the Adafactor algorithm (memory-light second moments for matrices)."""

    KEYS = ("lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize")
    RULES = (
        ("lr", at_least_zero, "Learning rate should be >= 0 but is: {}"),
        ("beta2_decay", lambda v: 0.0 >= v, "beta2_decay should be <= 0 but is: {}"),
        (("eps", 0), lambda v: v is None or 0.0 <= v, "epsilon1 should be >= 0 but is: {}"),
        (("eps", 1), at_least_zero, "epsilon2 should be >= 0 but is: {}"),
        ("d", lambda v: 1.0 <= v, "Clipping threshold d should be >= 1 but is: {}"),
        ("weight_decay", at_least_zero, "weight_decay should be >= 0 but is: {}"),
    )

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False) -> None:
        self._setup(params, locals())

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, adafactor_update, RuntimeError("Adafactor does not support sparse gradients"))
