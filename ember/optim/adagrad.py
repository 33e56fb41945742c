"""Adagrad (dense gradients): torch.optim.Adagrad's single-tensor algorithm."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _step_counter, at_least_zero

__all__ = ["Adagrad"]


def _fill_state(state, param, initial_accumulator_value) -> None:
    state["step"] = _step_counter()
    state["sum"] = ember.full_like(param, initial_accumulator_value, memory_format=ember.preserve_format)


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm. As in torch, the state (``step``, ``sum``) is created eagerly."""

    KEYS = ("lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "foreach", "maximize",
            "differentiable", "fused")
    RULES = (
        ("lr", at_least_zero, "Invalid learning rate: {}"),
        ("lr_decay", at_least_zero, "Invalid lr_decay value: {}"),
        ("weight_decay", at_least_zero, "Invalid weight_decay value: {}"),
        ("initial_accumulator_value", at_least_zero, "Invalid initial_accumulator_value value: {}"),
        ("eps", at_least_zero, "Invalid epsilon value: {}"),
    )

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None) -> None:
        self._setup(params, locals())
        for group in self.param_groups:
            for param in group["params"]:
                _fill_state(self.state[param], param, initial_accumulator_value)

    def share_memory(self) -> None:
        """A no-op in ember (one process); kept for API compatibility."""

    def _update(self, param, grad, state, group) -> None:
        """Accumulate g*g in ``sum`` and step by lr_t * g / (sqrt(sum) + eps), where the learning
        rate decays as lr_t = lr / (1 + (t - 1) * lr_decay)."""
        if not state:  # a param added by add_param_group after construction
            _fill_state(state, param, self.defaults["initial_accumulator_value"])
        counter = state["step"]
        counter += 1
        t = counter.item()
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        total = state["sum"]
        total.addcmul_(grad, grad, value=1)
        param.addcdiv_(grad, total.sqrt().add_(group["eps"]), value=-group["lr"] / (1 + (t - 1) * group["lr_decay"]))

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, self._update,
                               NotImplementedError("Adagrad with sparse gradients is not supported by ember"))
