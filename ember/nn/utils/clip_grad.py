"""Gradient clipping: clip_grad_norm_, clip_grad_value_ (torch/nn/utils/clip_grad.py)."""
from __future__ import annotations

import warnings

from ..._core.tensor import Tensor
from ...autograd.grad_mode import no_grad


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The `norm_type`-norm of the norms of `tensors` (as if they were concatenated)."""
    from ... import tensor, stack, linalg
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    else:
        tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    with no_grad():
        norms = [linalg.vector_norm(g, norm_type) for g in tensors]
        total_norm = linalg.vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and (bool(total_norm.isnan()) or bool(total_norm.isinf())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale gradients by min(1, max_norm / (total_norm + 1e-6)) in place."""
    from ... import clamp
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        clip_coef = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Rescale the gradients of `parameters` so that their total norm is at most `max_norm`.
    Returns the total norm before clipping (a 0-d tensor)."""
    if not isinstance(parameters, Tensor):
        parameters = list(parameters)
    grads = _grads(parameters)
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of `parameters` to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
