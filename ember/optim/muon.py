"""Muon (momentum orthogonalized by Newton-Schulz): torch.optim.Muon's single-tensor algorithm, for
2-D parameters only (use another optimizer for biases and norms, as torch's documentation says)."""
from __future__ import annotations

import math

import ember

from .optimizer import Optimizer, at_least_zero

__all__ = ["Muon"]

# torch's quintic Newton-Schulz coefficients and defaults
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5
EPS = 1e-7
_LR_ADJUSTMENTS = {   # (rows, cols) -> factor on lr
    None: lambda a, b: math.sqrt(max(1, a / b)),
    "original": lambda a, b: math.sqrt(max(1, a / b)),
    "match_rms_adamw": lambda a, b: 0.2 * math.sqrt(max(a, b)),
}


def orthogonalized(grad, coefficients, steps, eps):
    """The nearest semi-orthogonal matrix to grad (approximately U V^T of its SVD), by `steps` quintic
    Newton-Schulz iterations in bfloat16 on the wide orientation, as torch computes it."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = ember.addmm(x, ember.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def muon_update(param, grad, state, group) -> None:
    if grad.is_complex():
        raise RuntimeError("Muon does not support complex parameters")
    if "momentum_buffer" not in state:
        state["momentum_buffer"] = ember.zeros_like(grad, memory_format=ember.preserve_format)
    buf, momentum, lr = state["momentum_buffer"], group["momentum"], group["lr"]
    buf.lerp_(grad, 1 - momentum)
    update = grad.lerp(buf, momentum) if group["nesterov"] else buf
    update = orthogonalized(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
    rows, cols = param.shape[:2]
    param.mul_(1 - lr * group["weight_decay"])
    param.add_(update, alpha=-lr * _LR_ADJUSTMENTS[group["adjust_lr_fn"]](rows, cols))


class Muon(Optimizer):
    """Implements Muon: SGD with Nesterov momentum whose update is orthogonalized (2-D parameters only)."""

    KEYS = ("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn")
    RULES = (
        ("lr", at_least_zero, "Learning rate should be >= 0 but is: {}"),
        ("momentum", at_least_zero, "momentum should be >= 0 but is: {}"),
        ("weight_decay", at_least_zero, "weight decay should be >= 0 but is: {}"),
        ("adjust_lr_fn", lambda v: v in _LR_ADJUSTMENTS, "Adjust learning rate function {} is not supported"),
    )

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None) -> None:
        self._setup(params, locals())
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, muon_update, RuntimeError("Muon does not support sparse gradients"))
