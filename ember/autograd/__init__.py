"""ember.autograd: reverse-mode automatic differentiation as a dispatch key.

The Autograd kernel of an op records a node and redispatches below itself (kernel.py); the
engine runs the nodes backwards (engine.py); formulas live next to the op table
(ember/ops/derivatives/). ``no_grad`` and friends exclude the key on the current thread.
"""
from __future__ import annotations

from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,  # noqa: F401
                        is_inference_mode_enabled)
from .engine import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, BackwardCFunction, once_differentiable  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
from .graph import Node  # noqa: F401
from . import graph  # noqa: F401


def _install() -> None:
    """Register the Autograd kernels for every op, and autograd's Tensor methods."""
    from .._core.dispatch import DispatchKey, register_fallback
    from ..ops.registry import OPERATORS
    from ..ops.derivatives import collect
    from . import inference, kernel, tensor_methods
    formulas, nondiff = collect()
    kernel.install(OPERATORS, formulas, nondiff)
    register_fallback(DispatchKey.Inference, inference.kernel)
    tensor_methods.install()
