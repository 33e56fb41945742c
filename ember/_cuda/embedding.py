"""The embedding on the GPU without a host sync: indices checked on the device
(`device_checks`: the IndexError is raised at the next synchronising point), and the weight
gradient as one scatter-add into zeros, without the composed formula's index_add and its host
bounds check (the forward checked these indices; autograd's version check says they are
unchanged)."""
from __future__ import annotations

import cupy
import cupyx
import numpy

from . import device_checks

_SCATTER_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def embedding(math_path):
    """The CUDA variant's ``embedding`` (`math_path`: the CPU kernel's source on CuPy)."""
    def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        W, idx = weight._data, indices._data
        if W.ndim != 2 or idx.dtype not in device_checks.INDEX_DTYPES:    # the CPU kernel's errors
            return math_path(weight, indices, padding_idx, scale_grad_by_freq, sparse)
        from .kernels import wrap_cuda
        device_checks.expect_in_range(idx, 0, W.shape[0], IndexError, "embedding(): index out of range in self")
        return wrap_cuda(W[idx])
    return embedding


def native_embedding(grad, weight_shape, indices, padding_idx):
    """The CUDA variant's ``native_embedding``: the dense weight gradient, or None (the composed
    formula) for other dtypes and shapes."""
    g, idx = grad._data, indices._data
    if len(weight_shape) != 2 or g.dtype not in _SCATTER_DTYPES or g.size != idx.size * weight_shape[1]:
        return None
    from .kernels import wrap_cuda
    g, idx = g.reshape(idx.size, weight_shape[1]), idx.reshape(-1)
    if padding_idx is not None and padding_idx >= 0:   # the padding row gets no gradient
        g = g * (idx != padding_idx)[:, None].astype(g.dtype)
    out = cupy.zeros(tuple(weight_shape), g.dtype)
    cupyx.scatter_add(out, idx, g)
    return wrap_cuda(out)
