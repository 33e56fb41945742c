"""Gradient clipping: clip_grad_norm_, clip_grad_value_ (torch/nn/utils/clip_grad.py)."""
from __future__ import annotations

import warnings

import numpy as np

from ..._core.tensor import Tensor, wrap
from ...autograd.grad_mode import no_grad


_FLOAT = (np.dtype(np.float32), np.dtype(np.float64))


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
    arrays = _plain_arrays(tensors)
    if arrays is not None:
        total_norm = wrap(_total_norm(arrays, norm_type))
    else:
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
    arrays = _plain_arrays(grads + [total_norm])
    if arrays is not None:        # the ops' float arithmetic in the gradients' dtype, in place
        total = arrays.pop()
        coef = np.minimum(total.dtype.type(max_norm) / (total + total.dtype.type(1e-6)), total.dtype.type(1))
        for g, a in zip(grads, arrays):
            np.multiply(a, coef, out=a)
            g._bump_version()
        return
    with no_grad():
        clip_coef = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(g.dtype))


def _plain_arrays(tensors):
    """The arrays of `tensors` when they are plain CPU float32/float64 tensors of one dtype and no
    dispatch mode or profiler is on (nobody could see the ops skipped), else None: torch's foreach
    path, where the per-gradient ops of the general path cost ~30 dispatches per clip."""
    from ...ops import native
    if not native.unobserved(tensors):
        return None
    arrays = [t._data for t in tensors]
    dtype = arrays[0].dtype if arrays else None
    if dtype not in _FLOAT or any(a.dtype is not dtype for a in arrays):
        return None
    return arrays


def _total_norm(arrays, norm_type):
    """vector_norm of the gradients' vector_norms, in the kernel's arithmetic (one pass each)."""
    from ...ops.cpu.linalg_decomp import _vector_norm
    norms = np.array([_vector_norm(np.abs(a.reshape(-1)), norm_type, 0, False) for a in arrays], arrays[0].dtype)
    return np.asarray(_vector_norm(norms, norm_type, 0, False), arrays[0].dtype)


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
