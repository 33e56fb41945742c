"""Adam/AdamW's update of one CUDA parameter as one kernel: weight decay, both moving averages
and the step, where the single-tensor algorithm (ember/optim/adam.py) launches about fifteen
(lerp alone is several). The arithmetic is that algorithm's, in its order and dtype, so that
float32 results round as PyTorch's do (lerp's weight-below-one-half form, addcmul's and
addcdiv's left-to-right products)."""
from __future__ import annotations

import cupy
import numpy

_ADAM = cupy.ElementwiseKernel(
    "T grad, T decay_factor, T l2, T one_minus_beta1, T beta2, T one_minus_beta2, T neg_step, T bias2_sqrt, T eps",
    "T param, T exp_avg, T exp_avg_sq",
    """
    T g = l2 == (T)0 ? grad : grad + l2 * param;
    param = param * decay_factor;
    exp_avg = exp_avg + one_minus_beta1 * (g - exp_avg);
    exp_avg_sq = exp_avg_sq * beta2 + one_minus_beta2 * g * g;
    param = param + neg_step * exp_avg / (sqrt(exp_avg_sq) / bias2_sqrt + eps);
    """, "ember_adam_step")
_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def adam_step(param, grad, exp_avg, exp_avg_sq, group, t) -> bool:
    """Update in place and return True; False (nothing touched) where the kernel does not apply:
    AMSGrad, dtypes other than float32/64, or operands that differ in dtype or shape."""
    p, g, m, v = param._data, grad._data, exp_avg._data, exp_avg_sq._data
    if group["amsgrad"] or p.dtype not in _FLOATS or not (p.dtype == g.dtype == m.dtype == v.dtype) \
            or not (p.shape == g.shape == m.shape == v.shape) or not all(isinstance(a, cupy.ndarray) for a in (g, m, v)):
        return False
    lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    decoupled = bool(group.get("decoupled_weight_decay"))
    s = p.dtype.type
    _ADAM(g, s(1 - lr * decay if decoupled and decay else 1), s(0 if decoupled else decay), s(1 - beta1), s(beta2),
          s(1 - beta2), s(-(lr / (1 - beta1 ** t))), s((1 - beta2 ** t) ** 0.5), s(eps), p, m, v)
    for tensor in (param, exp_avg, exp_avg_sq):
        tensor._bump_version()
    return True
