"""Derivatives of conversions and copies (dtype/device changes, clone, contiguous, copy_)."""
from __future__ import annotations


FORMULAS = {
    "_to_copy": lambda grad, self_dtype_device: grad.to(*self_dtype_device),
    "clone": lambda grad: grad,
    "contiguous": lambda grad: grad,
    "copy_": lambda grad, src_shape: (grad.new_zeros(grad.shape), grad),
    "alias": lambda grad: grad,
}
# detach's result never needs a gradient
NONDIFFERENTIABLE = {"detach"}
