"""SparseAdam: torch.optim.SparseAdam's construction checks and its refusal of dense gradients.

torch's SparseAdam updates only the rows a sparse gradient touches (``nn.Embedding(sparse=True)``).
ember's autograd produces dense gradients only (``Embedding(sparse=True)`` raises, and a parameter's
``grad`` must be a dense tensor), so every gradient SparseAdam can meet here is dense, and it raises
torch's error for those: use Adam instead.
"""
from __future__ import annotations

from .optimizer import Optimizer, in_unit_interval

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for sparse gradients (see the module docstring: ember has none, so a step raises)."""

    KEYS = ("lr", "betas", "eps", "maximize")
    RULES = (
        ("lr", lambda v: 0.0 < v, "Invalid learning rate: {}"),
        ("eps", lambda v: 0.0 < v, "Invalid epsilon value: {}"),
        (("betas", 0), in_unit_interval, "Invalid beta parameter at index 0: {}"),
        (("betas", 1), in_unit_interval, "Invalid beta parameter at index 1: {}"),
    )

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False) -> None:
        self._setup(params, locals())
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             f"parameters")

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        def dense_gradient(param, grad, state, group):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return self._step_with(closure, dense_gradient)
